"""Autograd entry points beyond ``Tensor.backward``: ``grad``, ``backward``, custom differentiable
operations (``Function``), ``functional`` (jacobian, hessian, vjp, ...), ``gradcheck``, anomaly detection,
the legacy ``Variable`` and the grad-mode switches."""

from __future__ import annotations

from .._backend import _C
from .._C_face import Tensor
from .._grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled  # noqa: F401
from . import anomaly_mode, function, functional, graph, profiler  # noqa: F401
from ._legacy import NestedIOFunction, enforce_grad_layout_policy, set_multithreading_enabled
from .anomaly_mode import detect_anomaly, set_detect_anomaly
from .function import Function
from .gradcheck import GradcheckError, gradcheck, gradgradcheck


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


class _VariableMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor)


class Variable(metaclass=_VariableMeta):
    """The legacy wrapper: ``Variable(t, requires_grad=False)`` is a new leaf tensor sharing ``t``'s data,
    and every tensor is an instance of ``Variable``, as in PyTorch."""

    def __new__(cls, data=None, requires_grad=False, volatile=False):
        if data is None:
            return Tensor([], requires_grad=requires_grad)
        if not isinstance(data, Tensor):
            raise TypeError(f"[Variable] Variable data has to be a tensor, but got {type(data).__name__}")
        return data.detach().requires_grad_(requires_grad)


# After Variable: the module sneppx_core.autograd.variable imports it. The deprecated function then shadows the
# module's name on the package, as in PyTorch.
from . import variable as _variable_module  # noqa: E402,F401
from ._legacy import variable  # noqa: E402

variable.Variable = Variable  # as torch.autograd.variable.Variable


__all__ = ["grad", "backward", "no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "Function",
           "Variable", "detect_anomaly", "set_detect_anomaly", "function", "functional", "anomaly_mode", "graph",
           "profiler", "gradcheck",
           "gradgradcheck", "GradcheckError", "NestedIOFunction", "enforce_grad_layout_policy",
           "set_multithreading_enabled", "variable"]
