"""``torch.library``: custom operators written in Python. ``@custom_op("mylib::name", mutates_args=())`` turns a
function of tensors into an operator (also reachable as ``ops.mylib.name``); ``register_autograd`` gives it a
backward (``setup_context(ctx, inputs, output)`` and ``backward(ctx, *grads)``, as for an autograd ``Function``),
``register_kernel`` a per-device implementation, ``register_fake`` its shape function (kept: SneppX has no fake
tensors or compiler to use it). Without a registered backward, reaching the operator in a backward pass raises,
as in PyTorch. Registration from schema strings (``Library``, ``define``, ``impl``) is not supported."""

from __future__ import annotations

import functools

from ._C_face import Tensor
from .autograd.function import Function

_OPS: dict = {}  # namespace -> {name: CustomOpDef}


def _device_type(args) -> str:
    for a in args:
        if isinstance(a, Tensor):
            return str(a.device).split(":")[0]
        if isinstance(a, (list, tuple)):
            for e in a:
                if isinstance(e, Tensor):
                    return str(e.device).split(":")[0]
    return "cpu"


class CustomOpDef:
    """A custom operator (what ``custom_op`` returns): call it like the function it wraps."""

    def __init__(self, namespace: str, name: str, fn, mutates_args, device_types) -> None:
        self._namespace, self._name, self._init_fn = namespace, name, fn
        self._mutates_args = mutates_args
        self._kernels: dict = {}
        for d in ([device_types] if isinstance(device_types, str) else device_types or ()):
            self._kernels[d] = fn
        self._fake = None
        self._backward = self._setup_context = None
        self._function = self._make_function()
        functools.update_wrapper(self, fn)

    def _impl(self, *args, **kwargs):
        fn = self._kernels.get(_device_type(args), self._init_fn if not self._kernels else None)
        if fn is None:
            raise NotImplementedError(f"[{self._namespace}::{self._name}] no kernel registered for device type "
                                      f"{_device_type(args)!r} (registered: {sorted(self._kernels)})")
        return fn(*args, **kwargs)

    def _make_function(self) -> type:
        op = self

        class _Op(Function):
            @staticmethod
            def forward(*args, **kwargs):
                return op._impl(*args, **kwargs)

            @staticmethod
            def setup_context(ctx, inputs, output):
                if op._setup_context is not None:
                    op._setup_context(ctx, inputs, output)

            @staticmethod
            def backward(ctx, *grads):
                if op._backward is None:
                    raise RuntimeError(f"[{op._namespace}::{op._name}] this custom op has no autograd formula: "
                                       "register one with register_autograd")
                return op._backward(ctx, *grads)

        _Op.__name__ = _Op.__qualname__ = f"{self._name}_op"
        return _Op

    def __call__(self, *args, **kwargs):
        return self._function.apply(*args, **kwargs)

    def register_kernel(self, device_types, fn=None):
        """Uses ``fn`` for tensors on these device types (a decorator without ``fn``)."""
        def register(f):
            for d in [device_types] if isinstance(device_types, str) else device_types:
                self._kernels[d] = f
            return f
        return register if fn is None else register(fn)

    def register_fake(self, fn):
        """Keeps ``fn``, the operator's shape function (PyTorch's compiler uses it; SneppX has none)."""
        self._fake = fn
        return fn

    def register_autograd(self, backward, /, *, setup_context=None) -> None:
        """Makes the operator differentiable: ``setup_context(ctx, inputs, output)`` saves what ``backward(ctx,
        *grads)`` needs; backward returns one gradient (or None) per positional input."""
        self._backward, self._setup_context = backward, setup_context

    @property
    def default(self) -> "CustomOpDef":
        """The operator itself (PyTorch's ``ops.ns.name.default`` overload)."""
        return self

    def __repr__(self) -> str:
        return f"<CustomOpDef({self._namespace}::{self._name})>"


def _split(qualname: str) -> tuple:
    namespace, sep, name = qualname.partition("::")
    if not sep or not namespace.isidentifier() or not name.isidentifier():
        raise ValueError(f"[library] an operator's name must be 'namespace::name', got {qualname!r}")
    return namespace, name


def custom_op(name: str, fn=None, /, *, mutates_args, device_types=None, schema=None):
    """Turns ``fn`` into the custom operator ``name`` ("namespace::op"); a decorator without ``fn``.
    ``mutates_args`` ("unknown" or the names of the arguments written in place) is required, as in PyTorch."""
    namespace, op_name = _split(name)

    def make(f) -> CustomOpDef:
        op = CustomOpDef(namespace, op_name, f, mutates_args, device_types)
        _OPS.setdefault(namespace, {})[op_name] = op
        return op
    return make if fn is None else make(fn)


def _op(op) -> CustomOpDef:
    if isinstance(op, CustomOpDef):
        return op
    namespace, name = _split(op)
    found = _OPS.get(namespace, {}).get(name)
    if found is None:
        raise ValueError(f"[library] no custom op {op!r} (define it with custom_op first)")
    return found


def register_fake(op, fn=None, /, *, lib=None, _stacklevel: int = 1):
    """``op.register_fake`` for an operator or its name (a decorator without ``fn``)."""
    return _op(op).register_fake if fn is None else _op(op).register_fake(fn)


def register_autograd(op, backward, /, *, setup_context=None, lib=None) -> None:
    """``op.register_autograd`` for an operator or its name."""
    _op(op).register_autograd(backward, setup_context=setup_context)


def register_kernel(op, device_types, func=None, /, *, lib=None):
    """``op.register_kernel`` for an operator or its name."""
    return _op(op).register_kernel(device_types, func)


class Library:
    """PyTorch's schema-string registration (``Library("ns", "DEF")``): not supported; use ``custom_op``."""

    def __init__(self, ns: str, kind: str, dispatch_key: str = "") -> None:
        raise NotImplementedError("[library.Library] operators defined from schema strings are not supported: "
                                  "define them with torch.library.custom_op")


def namespace(name: str):
    """The custom ops of ``name`` (``ops.<name>``), or None."""
    ops = _OPS.get(name)
    if ops is None:
        return None
    import types
    return types.SimpleNamespace(**ops)


__all__ = ["CustomOpDef", "Library", "custom_op", "register_autograd", "register_fake", "register_kernel"]
