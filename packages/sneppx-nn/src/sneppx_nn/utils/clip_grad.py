"""Gradient clipping, as ``torch.nn.utils.clip_grad_norm_`` and ``clip_grad_value_``."""

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


__all__ = ["clip_grad_norm_", "clip_grad_value_"]
