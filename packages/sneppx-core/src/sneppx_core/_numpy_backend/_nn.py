"""Forward kernels of ``functional`` in the NumPy backend (softmax, norms, linear, embedding, dropout,
gated units, attention and the classification losses); the fused optimizer steps need the C backend."""

from __future__ import annotations

import builtins

import numpy as np

from ._core import BOOL, compute_type, describe, needs_tape, norm_dim, unsupported
from ._factory import _rng
from ._tensor import need_tensor, view, wrap


def _float_input(t, op):
    need_tensor(t, op)
    if not t._dt.is_floating_point:
        raise TypeError(f"[{op}] expected input to be a floating tensor, got {describe(t)}")
    return t._a.astype(compute_type(t._dt), copy=False)


def _softmax_array(x, axis):
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    e = np.exp(x - m)
    return e / np.sum(e, axis=axis, keepdims=True)


def softmax(input, dim, log):
    """softmax (or log_softmax with ``log``) along ``dim``."""
    x = _float_input(input, "log_softmax" if log else "softmax")
    if x.ndim == 0:
        return wrap(np.zeros((), x.dtype) if log else np.ones((), x.dtype), input._dt)
    d = norm_dim(dim, x.ndim, "log_softmax" if log else "softmax")
    with np.errstate(all="ignore"):
        if log:
            m = np.max(x, axis=d, keepdims=True)
            m = np.where(np.isfinite(m), m, 0)
            out = x - m - np.log(np.sum(np.exp(x - m), axis=d, keepdims=True))
        else:
            out = _softmax_array(x, d)
    return wrap(out, input._dt)


def _trailing(input, shape, op):
    k = len(shape)
    if tuple(input._a.shape[input._a.ndim - k:]) != tuple(shape) or k > input._a.ndim:
        raise RuntimeError(f"[{op}] normalized_shape {tuple(shape)} does not match the trailing dims of "
                           f"{tuple(input.shape)}")
    return tuple(range(input._a.ndim - k, input._a.ndim))


def layer_norm(input, normalized_shape, weight, bias, eps):
    """(x - mean) / sqrt(var + eps) * weight + bias over the trailing dims."""
    x = _float_input(input, "layer_norm")
    ax = _trailing(input, normalized_shape, "layer_norm")
    mean = np.mean(x, axis=ax, keepdims=True)
    xc = x - mean
    var = np.mean(xc * xc, axis=ax, keepdims=True)
    y = xc / np.sqrt(var + np.asarray(eps, x.dtype))
    if weight is not None:
        y = y * weight._a.astype(x.dtype, copy=False)
    if bias is not None:
        y = y + bias._a.astype(x.dtype, copy=False)
    return wrap(y, input._dt)


def rms_norm(input, normalized_shape, weight, eps):
    """x / sqrt(mean(x^2) + eps) * weight over the trailing dims (eps: the dtype's epsilon when None)."""
    x = _float_input(input, "rms_norm")
    ax = _trailing(input, normalized_shape, "rms_norm")
    if eps is None:
        eps = {"bfloat16": 0.0078125, "float16": float(np.finfo(np.float16).eps)}.get(
            input._dt.name, float(np.finfo(x.dtype).eps))
    y = x / np.sqrt(np.mean(x * x, axis=ax, keepdims=True) + np.asarray(eps, x.dtype))
    if weight is not None:
        y = y * weight._a.astype(x.dtype, copy=False)
    return wrap(y, input._dt)


def linear(input, weight, bias):
    """x @ weight.T + bias."""
    x = _float_input(input, "linear")
    w = _float_input(weight, "linear")
    if input._dt is not weight._dt or bias is not None and bias._dt is not input._dt:
        raise TypeError(f"[linear] input and weight must have the same dtype, got {input._dt.name} and "
                        f"{weight._dt.name}" + ("" if bias is None else f" (bias {bias._dt.name})"))
    if w.ndim not in (1, 2) or x.ndim == 0 or x.shape[-1] != w.shape[-1]:
        raise RuntimeError(f"[linear] input {tuple(input.shape)} and weight {tuple(weight.shape)} do not fit "
                           "(weight must be (out_features, in_features))")
    dt = input._dt
    ct = compute_type(dt)
    y = np.matmul(x.astype(ct, copy=False), w.astype(ct, copy=False).T)
    if bias is not None:
        y = y + bias._a.astype(ct, copy=False)
    return wrap(y, dt)


def embedding(input, weight, padding_idx, scale_grad_by_freq):
    """Rows of ``weight`` picked by the integer ids in ``input``."""
    need_tensor(input, "embedding")
    need_tensor(weight, "embedding")
    if input._dt.is_floating_point or input._dt is BOOL:
        raise TypeError(f"[embedding] ids must be an integer tensor, got {input._dt.name}")
    if weight._a.ndim != 2:
        raise RuntimeError(f"[embedding] weight must be 2-D (num_embeddings, dim), got {tuple(weight.shape)}")
    ids = input._a.astype(np.int64, copy=False)
    n = weight._a.shape[0]
    if ids.size and (ids.min() < 0 or ids.max() >= n):
        bad = ids[(ids < 0) | (ids >= n)].flat[0]
        raise IndexError(f"[embedding] id {bad} is out of range for a table of {n} rows")
    return view(weight._a[ids], weight._dt)


def dropout(input, p, training, generator):
    """Inverted dropout; the input itself when not training or p == 0."""
    need_tensor(input, "dropout")
    if not 0 <= p <= 1:
        raise ValueError(f"[dropout] p must be between 0 and 1, got {p}")
    if not training or p == 0:
        return input
    x = _float_input(input, "dropout")
    if p == 1:
        return wrap(np.zeros_like(x), input._dt)
    keep = _rng(generator).random(x.shape) >= p
    return wrap(np.where(keep, x / (1 - p), 0), input._dt)


def glu(input, dim, swiglu):
    """a * sigmoid(b) (or silu(a) * b with ``swiglu``) for the halves (a, b) of ``input`` along ``dim``."""
    x = _float_input(input, "swiglu" if swiglu else "glu")
    d = builtins.int(dim) % builtins.max(x.ndim, 1)
    if x.shape[d] % 2:
        raise RuntimeError(f"[glu] dim {dim} of shape {tuple(input.shape)} must have an even size")
    a, b = np.split(x, 2, axis=d)
    return wrap(_gate(a, b, swiglu), input._dt)


def _gate(a, b, swiglu):
    with np.errstate(over="ignore"):
        if swiglu:
            return a / (1 + np.exp(-a)) * b
        return a / (1 + np.exp(-b))


def gated(input, other, swiglu):
    """silu(input) * other (swiglu) or input * sigmoid(other)."""
    a = _float_input(input, "swiglu")
    b = _float_input(other, "swiglu")
    if a.shape != b.shape:
        raise RuntimeError(f"[swiglu] shapes {tuple(input.shape)} and {tuple(other.shape)} differ")
    return wrap(_gate(a, b, swiglu), input._dt)


def scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, generator):
    """softmax(q k^T * scale + mask) v; the causal mask is aligned to the end (query i sees keys
    j <= i + T_k - T_q); rows that see no key give zeros."""
    q = _float_input(query, "scaled_dot_product_attention")
    k = _float_input(key, "scaled_dot_product_attention")
    v = _float_input(value, "scaled_dot_product_attention")
    if not query._dt is key._dt is value._dt:
        raise TypeError(f"[scaled_dot_product_attention] query, key and value must share a dtype, got "
                        f"{query._dt.name}, {key._dt.name} and {value._dt.name}")
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2 or q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise RuntimeError(f"[scaled_dot_product_attention] shapes q {tuple(query.shape)}, k {tuple(key.shape)}, "
                           f"v {tuple(value.shape)} do not fit (..., T, D)")
    if enable_gqa and q.ndim >= 3 and k.ndim >= 3 and k.shape[-3] != q.shape[-3]:
        if q.shape[-3] % k.shape[-3]:
            raise RuntimeError(f"[scaled_dot_product_attention] {q.shape[-3]} query heads are not a multiple of "
                               f"{k.shape[-3]} key/value heads")
        rep = q.shape[-3] // k.shape[-3]
        k, v = np.repeat(k, rep, axis=-3), np.repeat(v, rep, axis=-3)
    ct = q.dtype
    tq, tk = q.shape[-2], k.shape[-2]
    s = ct.type(1.0 / np.sqrt(q.shape[-1]) if scale is None else scale)
    scores = np.matmul(q, np.swapaxes(k.astype(ct, copy=False), -1, -2)) * s
    allowed = None
    if is_causal:
        allowed = np.arange(tk)[None, :] <= np.arange(tq)[:, None] + (tk - tq)
    if attn_mask is not None:
        need_tensor(attn_mask, "scaled_dot_product_attention")
        if attn_mask._dt is BOOL:
            allowed = attn_mask._a if allowed is None else np.logical_and(allowed, attn_mask._a)
        else:
            scores = scores + attn_mask._a.astype(ct, copy=False)
    if allowed is not None:
        scores = np.where(allowed, scores, -np.inf)
    with np.errstate(all="ignore"):
        m = np.max(scores, axis=-1, keepdims=True)
        empty = ~np.isfinite(m)
        e = np.exp(scores - np.where(empty, 0, m))
        w = e / np.sum(e, axis=-1, keepdims=True)
        w = np.where(empty, 0, w)
    if dropout_p > 0:
        keep = _rng(generator).random(w.shape) >= dropout_p
        w = np.where(keep, w / (1 - dropout_p), 0)
    out = np.matmul(w.astype(ct, copy=False), v.astype(ct, copy=False))
    return wrap(out, query._dt)


def _reduce(loss, weight_sum, reduction, op):
    if reduction == "none":
        return loss
    if reduction == "sum":
        return np.sum(loss)
    if reduction == "mean":
        return np.sum(loss) / weight_sum
    raise ValueError(f"[{op}] reduction must be 'none', 'mean' or 'sum', got {reduction!r}")


def nll_loss(input, target, weight, ignore_index, reduction, label_smoothing=0.0):
    """-input[target] per row of log-probabilities (N, C) or (N, C, d...), weighted and reduced."""
    return _class_loss("nll_loss", input, target, weight, ignore_index, reduction, 0.0, log=False)


def cross_entropy(input, target, weight, ignore_index, reduction, label_smoothing):
    """nll_loss of log_softmax(input) over dim 1 (class indices; ``label_smoothing`` mixes in uniform targets)."""
    return _class_loss("cross_entropy", input, target, weight, ignore_index, reduction, label_smoothing, log=True)


def _class_loss(op, input, target, weight, ignore_index, reduction, smoothing, log):
    x = _float_input(input, op)
    need_tensor(target, op)
    if target._dt.is_floating_point:
        unsupported(f"{op} with probability targets")
    if x.ndim == 1:
        x = x[None]
        t = target._a.reshape(1)
    else:
        t = target._a
    x = np.moveaxis(x, 1, -1)  # (N, d..., C)
    c = x.shape[-1]
    if t.shape != x.shape[:-1]:
        raise RuntimeError(f"[{op}] target shape {tuple(target.shape)} does not fit input {tuple(input.shape)}")
    if log:
        m = np.max(x, axis=-1, keepdims=True)
        x = x - m - np.log(np.sum(np.exp(x - m), axis=-1, keepdims=True))
    ignore = t == ignore_index
    safe = np.where(ignore, 0, t).astype(np.int64)
    if safe.size and (safe.min() < 0 or safe.max() >= c):
        raise IndexError(f"[{op}] target {safe[(safe < 0) | (safe >= c)].flat[0]} is out of range for {c} classes")
    w = np.ones(c, x.dtype) if weight is None else weight._a.astype(x.dtype, copy=False)
    picked = np.take_along_axis(x, safe[..., None], -1)[..., 0]
    wt = np.where(ignore, 0, w[safe])
    loss = -picked * wt
    if smoothing:
        smooth = -np.sum(x * w, axis=-1) / c
        loss = (1 - smoothing) * loss + smoothing * np.where(ignore, 0, smooth)
    out = _reduce(loss, np.sum(wt), reduction, op)
    return wrap(out.reshape(()) if input._a.ndim == 1 and reduction == "none" else out, input._dt)


def pointwise_loss(kind, input, target, extra, weight, reduction, beta, op):
    """Not in the NumPy backend (the C backend's fused regression losses)."""
    unsupported(op or kind)


def _training(name):
    def step(*args, **kwargs):
        needs_tape(name)

    step.__name__ = name
    step.__doc__ = f"Needs the C backend ({name} is a fused training kernel)."
    return step


sgd_step, adam_step, lion_step, lamb_step = (_training(n) for n in ("sgd_step", "adam_step", "lion_step",
                                                                     "lamb_step"))
scale_, total_norm = _training("scale_"), _training("total_norm")
