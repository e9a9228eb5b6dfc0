"""``linear_cross_entropy``: the cross entropy of ``linear(input, weight)`` logits, for ``sneppx_core.functional``.

Without ``options`` it is literally ``cross_entropy(linear(input, w, b), target, ...)``. With ``options`` (an object
with ``batch_chunk_size`` and ``chunking_method``, such as ``sneppx_nn.LinearCrossEntropyOptions``) and a
"mean"/"sum" reduction of class-index targets, the rows are processed in chunks so that the (N, C) logits never
exist at once: each chunk's logits give its share of the loss and, when a gradient is needed, of the gradients
dL/dinput, dL/dweight and dL/dbias (dL/dlogits = w_y (softmax - onehot_y) / denominator), all on detached tensors.
The result is ``_surrogate.attach(loss, s, ...)``, i.e. ``loss + (s - s.detach())``, with s = sum(input *
G_input) + sum(weight * G_weight) + sum(bias * G_bias): its value is the loss and its first-order gradients are
the precomputed ones. The precomputed gradients are constants, so differentiating them again would be silently
wrong: double backward (a backward pass with create_graph=True) raises RuntimeError instead, through the hook
that ``_surrogate`` puts on s, as the fused kernels do. Other cases fall back to the unchunked composition with a
warning.
"""

from __future__ import annotations

import math
import warnings

from ._backend import _C
from ._C_face import float32, float64
from ._functional_losses import cross_entropy
from ._ops import cat
from ._surrogate import attach

_FIRST_ORDER_HINT = (
    "The chunked path (options given) computes the gradients in the forward pass and supports first-order "
    "gradients only. Without options the loss is the fused cross_entropy, also first-order only; for higher-order "
    "gradients compose it from differentiable ops, e.g. z.logsumexp(1) - z.gather(1, target.unsqueeze(1)).squeeze(1) "
    "with z = linear(input, linear_weight, linear_bias)")


def _chunk_rows(options, n, in_features, num_classes):
    """Rows per chunk: ``batch_chunk_size``, or the "aspect_ratio[:k]" rule (each chunk's logits about the size
    of the whole input, divided by k; "auto" means "aspect_ratio:2")."""
    size = getattr(options, "batch_chunk_size", None)
    method = getattr(options, "chunking_method", "auto")
    if method == "auto":
        method = None if size is not None else "aspect_ratio:2"
    if method is None:
        return max(1, min(int(size or n), n))
    name, _, factor = str(method).partition(":")
    if name != "aspect_ratio" or (factor and not factor.isdigit()):
        raise ValueError(f"[linear_cross_entropy] unknown chunking_method {method!r}")
    target = -(-n // -(-num_classes // in_features))
    rows = (1 << (target - 1).bit_length()) // int(factor or 1)
    return max(1, min(rows, n))


def _chunked(input, linear_weight, target, linear_bias, weight, reduction, ignore_index, rows):
    """The chunked "mean"/"sum" loss of 2-D input with precomputed gradients (see the module docstring)."""
    x, w, b = input.detach(), linear_weight.detach(), None if linear_bias is None else linear_bias.detach()
    valid = target != ignore_index
    safe = target.masked_fill(~valid, 0)
    tw = valid.to(x.dtype) if weight is None else weight.detach().index_select(0, safe) * valid.to(x.dtype)
    denom = tw.sum() if reduction == "mean" else None
    want = [t is not None and t.requires_grad for t in (input, linear_weight, linear_bias)]
    total, g_in, g_w, g_b = 0.0, [], None, None
    for start in range(0, x.shape[0], rows):
        xs, ys, ws = x[start:start + rows], safe[start:start + rows], tw[start:start + rows]
        logits = xs @ w.t() if b is None else xs @ w.t() + b
        logits = logits if logits.dtype in (float32, float64) else logits.float()  # half precision: in float32
        lse = logits.logsumexp(1)
        picked = logits.gather(1, ys.unsqueeze(1)).squeeze(1)
        total = total + ((lse - picked) * ws).sum()
        if any(want):
            dz = logits.softmax(1) - _C.one_hot(ys, logits.shape[1]).to(logits.dtype)
            dz = (dz * ws.unsqueeze(1) if denom is None else dz * (ws / denom).unsqueeze(1)).to(x.dtype)
            g_in.append(dz @ w)
            g_w = dz.t() @ xs if g_w is None else g_w + dz.t() @ xs
            g_b = dz.sum(0) if g_b is None else g_b + dz.sum(0)
    loss = (total if denom is None else total / denom).to(x.dtype)
    grads = (cat(g_in, 0) if g_in else None, g_w, g_b)
    link = [(t * g).sum() for t, g, on in zip((input, linear_weight, linear_bias), grads, want) if on]
    if not link:
        return loss
    return attach(loss, sum(link[1:], link[0]), "linear_cross_entropy", _FIRST_ORDER_HINT)


def _check(input, linear_weight, linear_bias):
    op = "linear_cross_entropy"
    if input.ndim not in (1, 2) or linear_weight.ndim < 2 or input.shape[-1] != linear_weight.shape[-1]:
        raise ValueError(f"[{op}] expected input (in_features,) or (N, in_features) and linear_weight "
                         f"(C, ..., in_features) with the same in_features, got {tuple(input.shape)} and "
                         f"{tuple(linear_weight.shape)}")
    if input.dtype != linear_weight.dtype:
        raise TypeError(f"[{op}] input and linear_weight must have one dtype, got {input.dtype} and "
                        f"{linear_weight.dtype}")
    out_features = tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (linear_weight.shape[0],) + out_features:
        raise ValueError(f"[{op}] expected linear_bias of shape {(linear_weight.shape[0],) + out_features}, got "
                         f"{tuple(linear_bias.shape)}")
    if out_features and input.ndim == 1:
        raise ValueError(f"[{op}] a K-dimensional linear_weight {tuple(linear_weight.shape)} needs batched input "
                         f"(N, in_features), got {tuple(input.shape)}")
    return out_features


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None, reduction="mean",
                         ignore_index=None, label_smoothing=0.0, options=None):
    """Cross entropy of the logits ``linear(input, linear_weight, linear_bias)`` against ``target``.

    Equal to ``cross_entropy(linear(input, W, b).reshape(N, C, d1, ...), target, weight=weight,
    reduction=reduction, ignore_index=ignore_index, label_smoothing=label_smoothing)``. ``input`` is
    (in_features,) or (N, in_features); ``linear_weight`` is (C, in_features) or (C, d1, ..., dK, in_features)
    for a K-dimensional loss (batched input only); ``linear_bias`` has shape (C, d1, ..., dK). ``target`` holds
    class indices, or class probabilities of the logits' shape (then ``ignore_index`` must be None).
    ``ignore_index=None`` means -100.

    ``options`` (e.g. ``sneppx_nn.LinearCrossEntropyOptions``) processes the rows in chunks, so the (N, C)
    logits never exist at once, for "mean" and "sum" over class indices without label smoothing or K dims;
    it computes the gradients during the forward pass, so it supports first-order gradients only: a backward
    pass with ``create_graph=True`` raises RuntimeError (as the fused ``cross_entropy`` of the plain path does).
    Other cases use the plain composition, with a warning when ``options`` was given.
    """
    out_features = _check(input, linear_weight, linear_bias)
    c = linear_weight.shape[0]
    logits_shape = tuple(input.shape[:-1]) + (c,) + out_features
    if tuple(target.shape) == logits_shape and target.is_floating_point() and ignore_index is not None:
        raise ValueError("[linear_cross_entropy] ignore_index cannot be specified when target contains "
                         "probabilities")
    ignore_index = -100 if ignore_index is None else int(ignore_index)
    if options is not None:
        if reduction in ("mean", "sum") and label_smoothing == 0.0 and not out_features \
                and not target.is_floating_point():
            x = input if input.ndim == 2 else input.unsqueeze(0)
            y = target if input.ndim == 2 else target.reshape((1,))
            rows = _chunk_rows(options, x.shape[0], x.shape[1], c)
            return _chunked(x, linear_weight, y, linear_bias, weight, reduction, ignore_index, rows)
        warnings.warn("[linear_cross_entropy] options ignored: chunking needs reduction 'mean' or 'sum', class-index "
                      f"targets, label_smoothing 0 and no K dims; got reduction={reduction!r}, label_smoothing="
                      f"{label_smoothing}, target dtype {target.dtype}, out_features {out_features}", stacklevel=2)
    flat_w = linear_weight.reshape((c * math.prod(out_features), linear_weight.shape[-1]))
    flat_b = None if linear_bias is None else linear_bias.reshape((-1,))
    logits = _C._nn.linear(input, flat_w, flat_b).reshape(logits_shape)
    return cross_entropy(logits, target, weight=weight, reduction=reduction, ignore_index=ignore_index,
                         label_smoothing=label_smoothing)


__all__ = ["linear_cross_entropy"]
