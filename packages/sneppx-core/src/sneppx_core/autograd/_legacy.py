"""Legacy and engine-tuning names of ``torch.autograd``: ``set_multithreading_enabled``,
``enforce_grad_layout_policy``, the deprecated ``variable(...)`` and ``NestedIOFunction``.

The two switches are thread-local flags with PyTorch's protocol: the constructor sets the flag at once, a
``with`` block restores the previous value on exit, and as a decorator the switch applies only while the
decorated function runs. Neither changes what SneppX computes:

* SneppX's backward pass always runs on the calling thread (there are no per-device worker threads), which
  is what ``set_multithreading_enabled(False)`` asks of PyTorch;
* SneppX's engine does not apply PyTorch's gradient layout contract: an accumulated ``.grad`` is row-major
  contiguous whatever the parameter's strides, with the flag on or off, and no layout warning is ever given.

The flags stay readable through ``is_multithreading_enabled()`` and ``is_grad_layout_enforcement_enabled()``
of this module (PyTorch keeps them in ``torch._C``).
"""

from __future__ import annotations

import functools
import threading

from .._C_face import Tensor
from .function import Function

_FLAGS = threading.local()


def is_multithreading_enabled():
    """The flag ``set_multithreading_enabled`` sets (True unless switched off in this thread)."""
    return getattr(_FLAGS, "multithreading", True)


def is_grad_layout_enforcement_enabled():
    """The flag ``enforce_grad_layout_policy`` sets (True unless switched off in this thread)."""
    return getattr(_FLAGS, "grad_layout", True)


class _FlagSwitch:
    """A thread-local flag switch used as PyTorch's ``_DecoratorContextManager`` subclasses are: set on
    construction, restored on leaving a ``with`` block; as a decorator, set only during each call."""

    _flag = ""

    def __init__(self, mode):
        if not isinstance(mode, bool):
            raise TypeError(f"[{type(self).__name__}] mode must be a bool, got {type(mode).__name__}")
        self.prev = getattr(_FLAGS, self._flag, True)
        setattr(_FLAGS, self._flag, mode)
        self.mode = mode

    def __enter__(self):
        return None

    def __exit__(self, exc_type, exc_value, traceback):
        setattr(_FLAGS, self._flag, self.prev)

    def __call__(self, fn):
        setattr(_FLAGS, self._flag, self.prev)  # decorating: undo the switch made by the constructor

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)

        return wrapper

    def clone(self):
        """A new switch with the same mode (setting the flag again)."""
        return type(self)(self.mode)


class set_multithreading_enabled(_FlagSwitch):
    """Context manager / decorator switching multithreaded backward on (``mode=True``) or off in this thread.

    SneppX always runs the backward pass on the calling thread, so the flag (readable through
    ``sneppx_core.autograd._legacy.is_multithreading_enabled()``) changes nothing observable.
    """

    _flag = "multithreading"


class enforce_grad_layout_policy(_FlagSwitch):
    """Context manager / decorator switching PyTorch's gradient layout contract on (``enable=True``) or off.

    SneppX's engine never applies that contract (accumulated gradients are row-major contiguous and no layout
    warning is given), so the flag changes nothing observable; it is kept and readable as in PyTorch.
    """

    _flag = "grad_layout"

    def __init__(self, enable=True):
        super().__init__(enable)


def variable(*args, **kwargs):
    """Removed legacy constructor: raises RuntimeError, as PyTorch's ``torch.autograd.variable(...)``."""
    raise RuntimeError("torch.autograd.variable(...) is deprecated, use torch.tensor(...) instead")


# ---------------------------------------------------------------- NestedIOFunction
def _nesting_error(obj, accepted):
    return ValueError(f"[NestedIOFunction] Auto nesting doesn't know how to process an input object of type "
                      f"{type(obj).__name__}. Accepted types: {accepted}, or lists/tuples of them")


def _flatten(obj, keep_none=False):
    """The tensors in a nesting of lists, tuples and dicts (and the Nones, with ``keep_none``), in order."""
    if isinstance(obj, Tensor) or (keep_none and obj is None):
        yield obj
    elif obj is None:
        return
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _flatten(o, keep_none)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from _flatten(o, keep_none)
    else:
        raise _nesting_error(obj, "Tensors or None" if keep_none else "Tensors")


def _unflatten(flat, proto):
    """``flat`` (a sequence) poured into the nesting of lists and tuples ``proto``."""

    def fill(items, p):
        if not isinstance(p, (list, tuple)):
            return items[0], items[1:]
        res = []
        for e in p:
            if e is None:
                res.append(None)
            else:
                value, items = fill(items, e)
                res.append(value)
        return type(p)(res), items

    return fill(tuple(flat), proto)[0]


def _detached(obj):
    """``obj`` with each tensor replaced by its ``detach()`` (PyTorch's ``.data``)."""
    if isinstance(obj, Tensor):
        return obj.detach()
    if obj is None:
        return None
    if isinstance(obj, (list, tuple)):
        items = [_detached(o) for o in obj]
        return type(obj)(*items) if hasattr(obj, "_fields") else type(obj)(items)
    if isinstance(obj, dict):
        return {k: _detached(v) for k, v in obj.items()}
    raise _nesting_error(obj, "Tensors")


class _NestedApply(Function):
    """Runs a NestedIOFunction instance (the first argument) on its flattened tensor inputs."""

    @staticmethod
    def forward(ctx, owner, *flat_inputs):
        owner._ctx, ctx._owner = ctx, owner
        result = owner.forward_extended(*_detached(owner._nested_input))
        del owner._nested_input
        owner._nested_output = result
        if owner._to_save_nested is not None:
            ctx.save_for_backward(*_flatten(owner._to_save_nested))
        return tuple(_flatten(result))

    @staticmethod
    def backward(ctx, *grads):
        owner = ctx._owner
        result = owner.backward_extended(*_unflatten(grads, owner._nested_output))
        return (None, *_flatten(result, keep_none=True))


@functools.cache
def _apply_class(cls):
    """A ``_NestedApply`` subclass named after ``cls`` (so its nodes are ``<cls>Backward``)."""
    return type(cls.__name__, (_NestedApply,), {})


class NestedIOFunction(Function):
    """Legacy instance-style custom function (as ``torch.autograd.NestedIOFunction``): subclasses define
    ``forward_extended(self, *inputs)`` and ``backward_extended(self, *grad_outputs)``, whose arguments and
    results may be nested lists/tuples of tensors, and call an instance: ``MyFn()(x, (y, z))``.

    ``save_for_backward``/``saved_tensors``, ``mark_dirty`` and ``mark_non_differentiable`` are instance
    methods taking nestings. Use :class:`Function` for new code. (PyTorch 2.13 keeps this class but calling an
    instance fails there with AttributeError; here it works as documented.)
    """

    _to_save_nested = None

    def __call__(self, *input):
        """Runs ``forward_extended`` on ``input`` and records ``backward_extended`` for the backward pass."""
        flat = tuple(_flatten(input))
        self._nested_input = input
        self._to_save_nested = None
        out = _apply_class(type(self)).apply(self, *flat)
        return _unflatten(out if isinstance(out, tuple) else (out,), self._nested_output)

    def forward_extended(self, *input):
        """User-defined forward on the (nested) inputs, with tensors detached."""
        raise NotImplementedError

    def backward_extended(self, *grad_output):
        """User-defined backward: one gradient (or None) per tensor of the inputs, in the inputs' nesting."""
        raise NotImplementedError

    def save_for_backward(self, *args):
        """Keeps (nested) tensors for ``backward_extended``; call it from ``forward_extended``."""
        self._to_save_nested = args

    @property
    def saved_tensors(self):
        """The nesting given to ``save_for_backward``, checked against in-place changes since."""
        return _unflatten(self._ctx.saved_tensors, self._to_save_nested)

    @property
    def needs_input_grad(self):
        """Whether each flattened tensor input requires grad."""
        return self._ctx.needs_input_grad[1:]

    def mark_dirty(self, *args, **kwargs):
        """Declares the (nested) inputs that ``forward_extended`` modified in place and returns."""
        self._ctx.mark_dirty(*_flatten((args, kwargs)))

    def mark_non_differentiable(self, *args, **kwargs):
        """Declares (nested) outputs that get no gradient."""
        self._ctx.mark_non_differentiable(*_flatten((args, kwargs)))


__all__ = ["NestedIOFunction", "enforce_grad_layout_policy", "set_multithreading_enabled", "variable"]
