"""The library's functions taking Proxies: PyTorch's functions check their arguments for ``__torch_function__``;
SneppX's compiled functions take tensors only, so importing fx replaces each public function of ``sneppx_core``,
its ``functional``, ``linalg``, ``special`` and ``fft`` modules and ``sneppx_nn.functional`` with a wrapper that
records a ``call_function`` node when an argument is a Proxy and calls the function otherwise (from then on, one
Python call more per call, and a scan of the arguments for Python functions: about 0.1 and 0.25 microseconds).
The wrapper is the module attribute, so ``node.target == sneppx_core.add`` holds for code that looks the function
up after importing fx. A function imported by name before fx (``from sneppx_core import relu``) stays unwrapped.
"""

from __future__ import annotations

import functools
import sys
import types

from sneppx_core.utils import wrapping

from .proxy import Proxy

# where the functions are defined (replace_everywhere then reaches sneppx_nn.functional, the meta-package, ...)
_MODULES = ("sneppx_core", "sneppx_core.functional", "sneppx_core.linalg", "sneppx_core.special", "sneppx_core.fft")
# state, factories from data and predicates on Python objects: never recorded (PyTorch's are not overridable)
_KEEP = {"is_tensor", "is_storage", "is_grad_enabled", "is_inference_mode_enabled", "is_autocast_enabled",
         "manual_seed", "seed", "initial_seed", "save", "load", "compile", "typename", "from_numpy", "from_dlpack",
         "use_deterministic_algorithms", "are_deterministic_algorithms_enabled", "require_core", "vmap", "grad",
         "tensor", "as_tensor", "asarray", "device", "dtype", "Size", "empty_like_state", "no_grad", "enable_grad",
         "inference_mode", "set_grad_enabled", "autocast", "get_default_dtype", "set_default_dtype"}

_SCAN = (Proxy, list, tuple)
WRAPPED: dict = {}  # wrapper -> the function it wraps
_WRAPPER_OF: dict = {}  # id(function) -> its wrapper
PATHS: dict = {}  # wrapper -> "module.name" for generated code


def has_proxy(args, kwargs) -> bool:
    """Whether a Proxy is among ``args``/``kwargs`` or one level inside a list or tuple of them."""
    for a in args:
        if isinstance(a, _SCAN) and (isinstance(a, Proxy) or any(isinstance(e, Proxy) for e in a)):
            return True
    if kwargs:
        return has_proxy(kwargs.values(), None)
    return False


def tracer_of(args, kwargs):
    """The tracer of the first Proxy among ``args``/``kwargs`` (as ``has_proxy`` looks for them)."""
    return next(e.tracer for a in (*args, *kwargs.values())
                for e in (a if isinstance(a, (list, tuple)) else (a,)) if isinstance(e, Proxy))


def checked_first(fn, target=None):
    """``fn`` that, when an argument is a Proxy, records a ``call_function`` node of ``target`` (by default this
    wrapper) instead of running; the check comes first, as a Python function might run part way on a Proxy
    (recording nodes) before failing."""
    def wrapper(*args, **kwargs):
        if has_proxy(args, kwargs):
            return tracer_of(args, kwargs).create_proxy("call_function", wrapper if target is None else target,
                                                        args, kwargs)
        return fn(*args, **kwargs)
    return functools.update_wrapper(wrapper, fn)


def _wrap(fn):
    if not isinstance(fn, types.BuiltinFunctionType):
        return checked_first(fn)

    # a compiled function takes no Proxy: it is called first and, if it refuses an argument that is one, the call
    # is recorded (no cost but the call through this wrapper when no Proxy is given)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (TypeError, ValueError, RuntimeError, NotImplementedError):
            if not has_proxy(args, kwargs):
                raise
        return tracer_of(args, kwargs).create_proxy("call_function", wrapper, args, kwargs)
    functools.update_wrapper(wrapper, fn)
    wrapper.__qualname__ = fn.__name__  # a compiled function's own is the binding library's record name
    return wrapper


def patch_library() -> None:
    """Puts the Proxy-taking wrappers in the library's modules (those imported so far; run again after more), and
    in every other public module of the packages that holds one of the wrapped functions (a sibling package or
    the meta-package re-exporting it), so that a name is the same object wherever it is reached."""
    wrappers = {}
    for key, (fn, path) in wrapping.public_functions(_MODULES, _KEEP).items():
        if fn in WRAPPED:  # one of ours, put there by an earlier call
            continue
        wrapper = _WRAPPER_OF.get(key)
        if wrapper is None:
            wrapper = _WRAPPER_OF[key] = _wrap(fn)
            WRAPPED[wrapper] = fn
        PATHS.setdefault(wrapper, path)
        wrappers[key] = (fn, wrapper)
    wrapping.replace_everywhere(wrappers)
    ops = getattr(sys.modules["sneppx_core"], "ops", None)
    if ops is not None:  # torch.ops.profiler's calls, which fx-aware profiling code records
        for name, obj in list(vars(ops.profiler).items()):
            if isinstance(obj, types.FunctionType) and obj not in WRAPPED:
                wrapper = _WRAPPER_OF.setdefault(id(obj), _wrap(obj))
                WRAPPED[wrapper] = obj
                PATHS.setdefault(wrapper, f"sneppx_core.ops.profiler.{name}")
                setattr(ops.profiler, name, wrapper)
