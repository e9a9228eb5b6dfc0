"""``Parameter``: the tensor type a ``Module`` registers as a learnable weight."""

from __future__ import annotations

import contextvars

import sneppx_core as sx
from sneppx_core import Tensor

# Set by ``Module.from_checkpoint`` while it builds a module: called with each new Parameter's
# data before the copy, it raises when the checkpoint cannot hold that many values.
_PARAMETER_CHECK: contextvars.ContextVar = contextvars.ContextVar("sneppx_nn_parameter_check", default=None)


class Parameter(Tensor):
    """A leaf tensor that a ``Module`` registers as a parameter when assigned to an attribute.

    Args:
        data: a Tensor (its values are copied, detached from any graph), array-like data, or
            ``None`` for an empty float32 tensor.
        requires_grad: whether autograd accumulates a gradient into ``.grad`` (default True).

    ``Parameter(t)`` is a new leaf holding a copy of ``t``'s values, with the same dtype and
    device. Results of operations on a Parameter are plain Tensors.
    """

    def __new__(cls, data=None, requires_grad=True):  # noqa: D102  (pybind11 needs the bare instance)
        return Tensor.__new__(cls)

    def __init__(self, data=None, requires_grad=True):
        if data is None:
            data = sx.empty(0)
        check = _PARAMETER_CHECK.get()
        if check is not None and isinstance(data, Tensor):
            check(data)
        if isinstance(data, Tensor):
            Tensor.__init__(self, data.detach(), dtype=data.dtype, device=data.device)
        else:
            Tensor.__init__(self, data)
        if requires_grad:
            self.requires_grad_(True)

    def __repr__(self):
        return "Parameter containing:\n" + Tensor.__repr__(self)

    __str__ = __repr__

    def __reduce__(self):
        """Pickles as the underlying tensor plus the ``requires_grad`` flag."""
        return (_rebuild_parameter, (self.detach(), self.requires_grad))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        out = Parameter(self.detach(), self.requires_grad)
        memo[id(self)] = out
        return out


def _rebuild_parameter(data, requires_grad):
    # over data's own memory, not a copy: a parameter received in shared memory stays shared
    p = Parameter(sx.empty(0, dtype=data.dtype, device=data.device), requires_grad)
    with sx.no_grad():
        p.set_(data)
    return p


def is_parameter(obj) -> bool:
    """True if ``obj`` is a :class:`Parameter`."""
    return isinstance(obj, Parameter)
