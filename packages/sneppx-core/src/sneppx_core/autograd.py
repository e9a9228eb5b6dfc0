"""Autograd entry points beyond ``Tensor.backward``: ``grad`` and the grad-mode switches."""

from __future__ import annotations

from ._backend import _C
from ._C_face import Tensor
from ._grad_mode import enable_grad, no_grad, set_grad_enabled  # noqa: F401


def _as_list(x):
    if x is None:
        return None
    return [x] if isinstance(x, Tensor) else list(x)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=False):
    """Gradients of ``outputs`` with respect to ``inputs``, without touching any ``.grad``.

    ``grad_outputs`` seeds each output (required for non-scalar outputs). With ``create_graph=True``
    the result is itself differentiable, which gives higher-order derivatives.
    """
    outs, ins = _as_list(outputs), _as_list(inputs)
    res = _C._grad(outs, ins, _as_list(grad_outputs), retain_graph, create_graph, allow_unused)
    return tuple(res)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False):
    """Runs ``t.backward(g)`` for each output and seed."""
    ts = _as_list(tensors)
    gs = _as_list(grad_tensors) or [None] * len(ts)
    for i, (t, g) in enumerate(zip(ts, gs)):
        keep = retain_graph if i == len(ts) - 1 else True
        t.backward(g, retain_graph=keep, create_graph=create_graph)


__all__ = ["grad", "backward", "no_grad", "enable_grad", "set_grad_enabled"]
