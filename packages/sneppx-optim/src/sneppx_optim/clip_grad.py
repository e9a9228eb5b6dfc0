"""Gradient clipping by total norm and by value (``torch.nn.utils.clip_grad_*``)."""

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
            raise TypeError(f"{fn}: parameters must be Tensors, got {type(p).__name__}")
        if p.grad is not None:
            grads.append(p.grad)
    return grads


def _norm_type(norm_type) -> float:
    if isinstance(norm_type, str) and norm_type.lower() == "inf":
        return math.inf
    if isinstance(norm_type, bool) or not isinstance(norm_type, Real) or math.isnan(norm_type) or norm_type < 0:
        raise ValueError(f"clip_grad_norm_: norm_type must be a number >= 0 or 'inf', got {norm_type!r}")
    return float(norm_type)


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False):
    r"""Scales the gradients of ``parameters`` in place so that their total norm is at most ``max_norm``.

    The total norm is that of all gradients concatenated into one vector,
    ``||g||_q = (sum_i |g_i|^q)^(1/q)`` (the largest ``|g_i|`` for ``q = inf``). Gradients are
    multiplied by ``min(1, max_norm / (||g||_q + 1e-6))``. Parameters without a gradient are skipped.

    Args:
        parameters: a Tensor or an iterable of Tensors.
        max_norm: the largest total norm allowed (>= 0).
        norm_type: the order ``q`` of the norm (a number >= 0, or ``inf`` / ``"inf"``).
        error_if_nonfinite: raise ``RuntimeError`` if the total norm is NaN or infinite.

    Returns:
        The total norm before clipping, as a 0-d float32 Tensor.
    """
    q = _norm_type(norm_type)
    if isinstance(max_norm, bool) or not isinstance(max_norm, Real) or not max_norm >= 0:
        raise ValueError(f"clip_grad_norm_: max_norm must be a number >= 0, got {max_norm!r}")
    grads = _grads(parameters, "clip_grad_norm_")
    if not grads:
        return sx.zeros(())
    with sx.no_grad():
        # A complex gradient counts |g_i| (its pairs' 2-norm is the same for q = 2) and is scaled as its pairs.
        pairs = [sx.view_as_real(g) if g.is_complex() else g for g in grads]
        normed = pairs if q == 2 else [g.abs() if g.is_complex() else g for g in grads]
        total = F.total_norm(normed, norm_type=q)
        value = total.item()
        if not math.isfinite(value):
            if error_if_nonfinite:
                raise RuntimeError(f"clip_grad_norm_: the total norm of order {q} of the gradients is {value}, "
                                   "so they cannot be clipped; pass error_if_nonfinite=False to scale anyway")
        coef = float(max_norm) / (value + 1e-6)
        if not coef >= 1.0:
            F.scale_(pairs, coef)
    return total


def clip_grad_value_(parameters, clip_value: float) -> None:
    """Clamps every gradient of ``parameters`` into ``[-clip_value, clip_value]`` in place.

    Args:
        parameters: a Tensor or an iterable of Tensors (those without a gradient are skipped).
        clip_value: the largest absolute value allowed (>= 0).
    """
    if isinstance(clip_value, bool) or not isinstance(clip_value, Real) or not clip_value >= 0:
        raise ValueError(f"clip_grad_value_: clip_value must be a number >= 0, got {clip_value!r}")
    with sx.no_grad():
        for g in _grads(parameters, "clip_grad_value_"):
            g.clamp_(-float(clip_value), float(clip_value))
