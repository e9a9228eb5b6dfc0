"""First-order gradient surrogates, shared by the ops that compute their value outside autograd.

Such an op (a LAPACK call on the host, or a loss whose gradients are computed in its forward pass) gets
its gradient from a *surrogate*: a tensor ``s`` of differentiable core ops whose first differential at the
inputs is the op's, with the other factors (the op's outputs, inverses, precomputed gradients) detached
constants. ``attach(value, s, op)`` returns ``value + (s - s.detach())``: the same value, with the
gradient of ``s``. That gradient is exact to first order only: differentiating it again would treat the
detached factors as constants and give a wrong second derivative without notice. So ``first_order``
puts a hook on ``s`` that raises RuntimeError, naming ``op``, when the backward pass through ``s`` runs
in grad mode, which it does exactly under ``create_graph=True`` (as in PyTorch). First-order backward
passes, repeated or not, are unchanged.
"""

from __future__ import annotations

from ._backend import NAME, _C


def first_order(s, op, hint=""):
    """``s - s.detach()`` (zero, with the gradient of ``s``), where a backward pass through ``s`` with
    ``create_graph=True`` raises RuntimeError naming ``op``, followed by ``hint`` when given."""
    if NAME == "c" and s.requires_grad:  # the NumPy backend has no backward pass to guard

        def hook(grad):
            if _C.is_grad_enabled():
                raise RuntimeError(
                    f"[{op}] second-order gradients (create_graph=True) are not supported: its value is computed "
                    "outside autograd and its gradient is a first-order formula, so differentiating that gradient "
                    "again would silently give a wrong result" + (f". {hint}" if hint else ""))

        s.register_hook(hook)
    return s - s.detach()


def attach(value, s, op, hint=""):
    """``value`` with the gradient of the surrogate ``s``, first order only (see ``first_order``)."""
    return value + first_order(s, op, hint)
