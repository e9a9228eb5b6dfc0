"""Gradient clipping, as ``torch.nn.utils.clip_grad_norm_``, ``clip_grad_value_``, ``get_total_norm`` and
``clip_grads_with_norm_``."""

from __future__ import annotations

import math
from numbers import Real

import sneppx_core as sx
import sneppx_core.functional as F


def _grads(parameters, fn: str) -> list:
    if isinstance(parameters, sx.Tensor):
        parameters = [parameters]
    grads = []
    for p in parameters:
        if not isinstance(p, sx.Tensor):
            raise TypeError(f"[{fn}] parameters must be Tensors, got {type(p).__name__}")
        if p.grad is not None:
            grads.append(p.grad)
    return grads


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach=None):
    r"""Scales the gradients in place so that their total norm is at most ``max_norm``.

    The total norm is that of all gradients concatenated, ``||g||_q = (sum_i |g_i|^q)^(1/q)`` (the
    largest ``|g_i|`` for ``q = inf``); gradients are multiplied by
    ``min(1, max_norm / (||g||_q + 1e-6))``. Returns the total norm before clipping (0-d tensor).
    ``error_if_nonfinite`` raises RuntimeError on a NaN or infinite norm; ``foreach`` is accepted.
    """
    q = math.inf if isinstance(norm_type, str) and norm_type.lower() == "inf" else norm_type
    if isinstance(q, bool) or not isinstance(q, Real) or not q >= 0:
        raise ValueError(f"[clip_grad_norm_] norm_type must be a number >= 0 or 'inf', got {norm_type!r}")
    if isinstance(max_norm, bool) or not isinstance(max_norm, Real) or not max_norm >= 0:
        raise ValueError(f"[clip_grad_norm_] max_norm must be a number >= 0, got {max_norm!r}")
    grads = _grads(parameters, "clip_grad_norm_")
    if not grads:
        return sx.zeros(())
    with sx.no_grad():
        total = F.total_norm(grads, norm_type=float(q))
        value = total.item()
        if not math.isfinite(value) and error_if_nonfinite:
            raise RuntimeError(f"[clip_grad_norm_] the total norm of order {q} of the gradients is {value}, so they "
                               "cannot be clipped; pass error_if_nonfinite=False to scale anyway")
        coef = float(max_norm) / (value + 1e-6)
        if not coef >= 1.0:
            F.scale_(grads, coef)
    return total


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamps every gradient into ``[-clip_value, clip_value]`` in place."""
    if isinstance(clip_value, bool) or not isinstance(clip_value, Real) or not clip_value >= 0:
        raise ValueError(f"[clip_grad_value_] clip_value must be a number >= 0, got {clip_value!r}")
    with sx.no_grad():
        for g in _grads(parameters, "clip_grad_value_"):
            g.clamp_(-float(clip_value), float(clip_value))


def _norm_order(norm_type, fn: str) -> float:
    q = math.inf if isinstance(norm_type, str) and norm_type.lower() == "inf" else norm_type
    if isinstance(q, bool) or not isinstance(q, Real) or not q >= 0:
        raise ValueError(f"[{fn}] norm_type must be a number >= 0 or 'inf', got {norm_type!r}")
    return float(q)


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False, foreach=None):
    r"""The norm of all ``tensors`` (a Tensor or an iterable of them) taken together as one vector:
    ``(sum_i |t_i|^q)^(1/q)``, the largest ``|t_i|`` for ``q = inf``; a 0-d tensor, 0 for no tensors.
    It is computed as the q-norm of the per-tensor q-norms, so for ``q = 0`` it counts the tensors that
    are not all zero, as in PyTorch.
    Computed without gradient. ``error_if_nonfinite`` raises RuntimeError on a NaN or infinite norm;
    ``foreach`` is accepted. Pass ``[p.grad for p in params]`` to get the gradients' norm."""
    q = _norm_order(norm_type, "get_total_norm")
    tensors = [tensors] if isinstance(tensors, sx.Tensor) else list(tensors)
    for t in tensors:
        if not isinstance(t, sx.Tensor):
            raise TypeError(f"[get_total_norm] expected Tensors, got {type(t).__name__}")
    if not tensors:
        return sx.tensor(0.0)
    with sx.no_grad():  # the norm of the per-tensor norms, in their promoted dtype, as PyTorch computes it
        device = tensors[0].device
        total = sx.linalg.vector_norm(sx.stack([sx.linalg.vector_norm(t.detach(), q).to(device) for t in tensors]), q)
    if error_if_nonfinite and not math.isfinite(total.item()):
        raise RuntimeError(f"[get_total_norm] the total norm of order {q} of the tensors is {total.item()}; pass "
                           "error_if_nonfinite=False to allow it")
    return total


def clip_grads_with_norm_(parameters, max_norm: float, total_norm, foreach=None) -> None:
    """Scales the gradients of ``parameters`` in place by ``min(1, max_norm / (total_norm + 1e-6))``, with
    ``total_norm`` computed beforehand (for example by :func:`get_total_norm` of the gradients, perhaps
    reduced across processes). ``clip_grad_norm_`` is ``get_total_norm`` followed by this."""
    if isinstance(max_norm, bool) or not isinstance(max_norm, Real):
        raise ValueError(f"[clip_grads_with_norm_] max_norm must be a number, got {max_norm!r}")
    is_tensor = isinstance(total_norm, sx.Tensor)
    if not (isinstance(total_norm, Real) or (is_tensor and total_norm.numel() == 1)):
        got = f"shape {tuple(total_norm.shape)}" if is_tensor else type(total_norm).__name__
        raise TypeError(f"[clip_grads_with_norm_] total_norm must be a number or a one-element Tensor, got {got}")
    grads = _grads(parameters, "clip_grads_with_norm_")
    if not grads:
        return
    norm = total_norm.item() if is_tensor else float(total_norm)
    with sx.no_grad():
        F.scale_(grads, min(float(max_norm) / (norm + 1e-6), 1.0))  # a NaN norm gives NaN, as in PyTorch


__all__ = ["clip_grad_norm_", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]
