"""What the profiler times: while a profile records, the public functions of ``sneppx_core``, its
``functional``, ``linalg`` and ``special`` modules and the Tensor's methods and operators are replaced by timing
wrappers (in every public module of the packages that holds them), and put back when it stops. Calls are timed
where Python calls the library (``x + y``, ``F.gelu(x)``, ``loss.backward()``), nested calls as children;
the compiled core's inner steps (backward's per-op kernels) are not seen one by one."""

from __future__ import annotations

import sys
import threading
import time
import types

from ._C_face import Tensor
from ._profiler_events import EventList, FunctionEvent

_MODULES = ("sneppx_core", "sneppx_core.functional", "sneppx_core.linalg", "sneppx_core.special")
# not operations: state, factories from Python data, introspection, the profiler itself
_SKIP = {"is_tensor", "is_storage", "is_grad_enabled", "manual_seed", "seed", "initial_seed", "save", "load",
         "compile", "typename", "set_default_dtype", "get_default_dtype", "require_core", "set_printoptions",
         "no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "use_deterministic_algorithms"}
_SKIP_METHODS = {"dim", "ndimension", "size", "stride", "numel", "nelement", "element_size", "storage_offset",
                 "data_ptr", "get_device", "untyped_storage", "storage", "requires_grad_", "retain_grad",
                 "register_hook", "tolist", "numpy", "type", "is_contiguous", "is_floating_point", "is_complex",
                 "is_shared", "is_pinned", "is_set_to", "is_signed", "is_inference", "is_nonzero", "is_same_size"}
_OPERATORS = {"add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor", "lshift",
              "rshift"}
_DUNDERS = ({f"__{o}__" for o in _OPERATORS} | {f"__r{o}__" for o in _OPERATORS} | {f"__i{o}__" for o in _OPERATORS}
            | {"__neg__", "__abs__", "__invert__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__",
               "__getitem__", "__setitem__"})


def _op_name(name: str) -> str:
    """``sneppx::<op>`` for a function or method name (``__radd__`` -> add, ``__iadd__`` -> add_)."""
    if name in _DUNDERS:
        core = name.strip("_")
        if core[1:] in _OPERATORS and core[0] in "ri":
            core = core[1:] + ("_" if name.startswith("__i") else "")
        name = core
    return f"sneppx::{name}"


def _shapes(args) -> list:
    out = []
    for a in args:
        if isinstance(a, Tensor):
            out.append(list(a.shape))
        elif isinstance(a, (list, tuple)) and a and all(isinstance(e, Tensor) for e in a):
            out.append([list(e.shape) for e in a])
        else:
            out.append([])
    return out


def _nbytes(out) -> int:
    if isinstance(out, Tensor):
        return out.numel() * out.element_size()
    if isinstance(out, (list, tuple)):
        return sum(_nbytes(o) for o in out)
    return 0


class Recorder:
    """The events of one recording: ``begin``/``end`` nest per thread."""

    def __init__(self, record_shapes: bool = False, profile_memory: bool = False, with_stack: bool = False) -> None:
        self.record_shapes, self.profile_memory, self.with_stack = record_shapes, profile_memory, with_stack
        self.events: list = []
        self.stacks: dict = {}
        self.t0 = time.perf_counter_ns()
        self.wall_t0_us = time.time_ns() / 1e3

    def begin(self, name: str, args=(), user: bool = False) -> FunctionEvent:
        tid = threading.get_ident()
        stack = self.stacks.setdefault(tid, [])
        py_stack = _py_stack() if self.with_stack else None
        e = FunctionEvent(len(self.events), name, tid, (time.perf_counter_ns() - self.t0) / 1e3,
                          _shapes(args) if self.record_shapes else None, py_stack, is_user_annotation=user)
        if stack:
            e.cpu_parent = stack[-1]
            stack[-1].cpu_children.append(e)
        stack.append(e)
        self.events.append(e)
        return e

    def end(self, e: FunctionEvent, out=None) -> None:
        e.end_us = (time.perf_counter_ns() - self.t0) / 1e3
        if self.profile_memory:
            e.cpu_memory_usage = _nbytes(out)
        stack = self.stacks.get(e.thread, [])
        if e in stack:  # ranges closed out of order (a record_function left open) close their inner ones too
            while stack and stack.pop() is not e:
                pass

    def event_list(self) -> EventList:
        return EventList(self.events, profile_memory=self.profile_memory, record_shapes=self.record_shapes,
                         with_stack=self.with_stack)


def _py_stack(limit: int = 8) -> list:
    frames, f = [], sys._getframe(2)
    while f is not None and len(frames) < limit:
        if not f.f_code.co_filename.endswith(("_profiler_hooks.py", "profiler.py")):
            frames.append(f"{f.f_code.co_filename}({f.f_lineno}): {f.f_code.co_name}")
        f = f.f_back
    return frames


_INSTANCEMETHOD = type(vars(Tensor)["__add__"])  # how the binding stores a compiled method
ACTIVE: list = [None]  # the Recorder of the running profile, or None
_installed: list = []  # (namespace, name, what was there, the wrapper), to put back


def _timed(name: str, fn):
    def wrapper(*args, **kwargs):  # calls through __wrapped__, which utils.wrapping.put_back may re-point
        rec = ACTIVE[0]
        if rec is None:
            return wrapper.__wrapped__(*args, **kwargs)
        e = rec.begin(name, args)
        out = None
        try:
            out = wrapper.__wrapped__(*args, **kwargs)
            return out
        finally:
            rec.end(e, out)
    for attr in ("__name__", "__doc__"):
        try:
            setattr(wrapper, attr, getattr(fn, attr))
        except (AttributeError, TypeError):
            pass
    wrapper.__qualname__ = getattr(fn, "__name__", name)
    wrapper.__wrapped__ = fn
    return wrapper


def install() -> None:
    """Puts the timing wrappers in place (once; ``uninstall`` takes them away)."""
    if _installed:
        return
    from .utils import wrapping  # (utils imports autograd, which imports the profiler)

    found = wrapping.public_functions(_MODULES, _SKIP)
    _installed.extend(wrapping.replace_everywhere(
        {key: (fn, _timed(_op_name(path.rsplit(".", 1)[1]), fn)) for key, (fn, path) in found.items()}))
    names = [name for name, raw in vars(Tensor).items()
             if not (name in _SKIP_METHODS or name.startswith("is_") or (name.startswith("_") and name not in _DUNDERS))
             and isinstance(raw, (types.FunctionType, _INSTANCEMETHOD))]  # not properties, static methods, ...
    _installed.extend(wrapping.replace_methods(Tensor, names, lambda name, method: _timed(_op_name(name), method)))


def uninstall() -> None:
    """Puts back what ``install`` replaced (where nothing else replaced it since)."""
    from .utils import wrapping

    wrapping.put_back(_installed)
