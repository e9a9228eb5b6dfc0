"""``multi_head_attention_forward`` (``torch.nn.functional``'s signature) for ``sneppx_core.functional``.

A composition: the input projections are ``linear`` calls, the masks become one additive float mask, and the
attention is ``scaled_dot_product_attention`` (the tiled kernel) when no weights are asked for, or an explicit
softmax(q k^T / sqrt(d) + mask) v when they are, as PyTorch computes it.
"""

from __future__ import annotations

import math

from ._backend import _C
from ._C_face import bool_
from ._factories import zeros
from ._ops import cat

_OP = "multi_head_attention_forward"


def _additive(mask, name, dtype):
    """A bool mask (True = leave out) as 0/-inf in ``dtype``; a float mask as it is; None stays None."""
    if mask is None:
        return None
    if mask.dtype == bool_:
        return zeros(tuple(mask.shape), dtype=dtype, device=mask.device).masked_fill(mask, float("-inf"))
    if not mask.is_floating_point():
        raise TypeError(f"[{_OP}] only bool and floating masks are supported, got {name} of dtype {mask.dtype}")
    return mask


def _pad_key(mask):
    """One more key column that every query may attend to (bias_k/bias_v and zero attention)."""
    if mask is None:
        return None
    return cat([mask, zeros(tuple(mask.shape[:-1]) + (1,), dtype=mask.dtype, device=mask.device)], -1)


def _batched(query, key, value, key_padding_mask, attn_mask, num_heads):
    """Whether the inputs are batched (L, N, E) or unbatched (L, E), with PyTorch's shape rules."""
    shapes = f"query {tuple(query.shape)}, key {tuple(key.shape)}, value {tuple(value.shape)}"
    if query.ndim not in (2, 3) or key.ndim != query.ndim or value.ndim != query.ndim:
        raise ValueError(f"[{_OP}] query, key and value must all be 3-D (L, N, E) or 2-D (L, E), got {shapes}")
    batched = query.ndim == 3
    if key_padding_mask is not None and key_padding_mask.ndim != query.ndim - 1:
        raise ValueError(f"[{_OP}] key_padding_mask must be {query.ndim - 1}-D for {shapes}, got "
                         f"{tuple(key_padding_mask.shape)}")
    if attn_mask is not None and attn_mask.ndim not in (2, 3):
        raise ValueError(f"[{_OP}] attn_mask must be 2-D or 3-D, got {tuple(attn_mask.shape)}")
    if not batched and attn_mask is not None and attn_mask.ndim == 3 and attn_mask.shape[0] != num_heads:
        raise ValueError(f"[{_OP}] a 3-D attn_mask of unbatched input must be (num_heads={num_heads}, L, S), got "
                         f"{tuple(attn_mask.shape)}")
    return batched


def _project(query, key, value, in_proj_weight, in_proj_bias, separate, q_w, k_w, v_w):
    """q, k, v = query W_q^T + b_q, key W_k^T + b_k, value W_v^T + b_v."""
    lin = _C._nn.linear
    if not separate:
        if in_proj_weight is None:
            raise ValueError(f"[{_OP}] use_separate_proj_weight is False but in_proj_weight is None")
        q_w, k_w, v_w = in_proj_weight.chunk(3, 0)
    elif q_w is None or k_w is None or v_w is None:
        raise ValueError(f"[{_OP}] use_separate_proj_weight is True but q/k/v_proj_weight is None")
    bs = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3, 0)
    return lin(query, q_w, bs[0]), lin(key, k_w, bs[1]), lin(value, v_w, bs[2])


def _heads(t, static, bh, head_dim, name):
    """(S, N, E) -> (N * H, S, d), or ``static`` (N * H, S, d) in its place."""
    if static is None:
        return t.reshape((t.shape[0], bh, head_dim)).transpose(0, 1)
    if static.ndim != 3 or static.shape[0] != bh or static.shape[2] != head_dim:
        raise ValueError(f"[{_OP}] {name} must be (N * num_heads={bh}, S, head_dim={head_dim}), got "
                         f"{tuple(static.shape)}")
    return static


def _mask(attn_mask, key_padding_mask, bsz, num_heads, tgt_len, src_len, dtype):
    """The additive (1 or N * H, L, S) mask of ``attn_mask`` and ``key_padding_mask``, or None."""
    mask = _additive(attn_mask, "attn_mask", dtype)
    if mask is not None:
        want = (tgt_len, src_len) if mask.ndim == 2 else (bsz * num_heads, tgt_len, src_len)
        if tuple(mask.shape) != want:
            raise ValueError(f"[{_OP}] the {mask.ndim}-D attn_mask must have shape {want}, got {tuple(mask.shape)}")
        mask = mask.unsqueeze(0) if mask.ndim == 2 else mask
    kpm = _additive(key_padding_mask, "key_padding_mask", dtype)
    if kpm is not None:
        if tuple(kpm.shape) != (bsz, src_len):
            raise ValueError(f"[{_OP}] key_padding_mask must have shape {(bsz, src_len)}, got {tuple(kpm.shape)}")
        kpm = kpm.reshape((bsz, 1, 1, src_len)).expand((bsz, num_heads, 1, src_len))
        kpm = kpm.reshape((bsz * num_heads, 1, src_len))
        mask = kpm if mask is None else mask + kpm
    return mask


def _attend(q, k, v, mask, dropout_p, need_weights, bsz, num_heads):
    """(N * H, L, d) attention output and the (N, H, L, S) weights (None without ``need_weights``)."""
    if not need_weights:
        shape4 = lambda t: t.reshape((bsz, num_heads) + tuple(t.shape[1:]))  # noqa: E731
        m = None if mask is None else (mask.unsqueeze(0) if mask.shape[0] == 1 else shape4(mask))
        out = _C._nn.scaled_dot_product_attention(shape4(q), shape4(k), shape4(v), m, float(dropout_p), False,
                                                  None, False, None)
        return out.reshape(tuple(q.shape[:2]) + (v.shape[-1],)), None
    scores = (q * math.sqrt(1.0 / q.shape[-1])) @ k.transpose(-2, -1)
    if mask is not None:
        scores = scores + mask
    weights = _C._nn.softmax(scores, -1, False)
    if dropout_p > 0.0:
        weights = _C._nn.dropout(weights, float(dropout_p), True, None)
    return weights @ v, weights.reshape((bsz, num_heads) + tuple(weights.shape[1:]))


def _extend(k, v, mask, bias_k, bias_v, static_k, static_v, bsz):
    """Appends the learned key/value ``bias_k``/``bias_v`` (1, 1, E) to the (S, N, E) keys and values."""
    if (bias_k is None) != (bias_v is None):
        raise ValueError(f"[{_OP}] bias_k and bias_v must be given together")
    if bias_k is None:
        return k, v, mask
    if static_k is not None or static_v is not None:
        raise ValueError(f"[{_OP}] bias_k/bias_v cannot be added to static_k/static_v")
    k, v = cat([k, bias_k.repeat(1, bsz, 1)], 0), cat([v, bias_v.repeat(1, bsz, 1)], 0)
    return k, v, _pad_key(mask)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """Multi-head attention of (L, N, E) ``query`` over (S, N, E_k) ``key`` and (S, N, E_v) ``value`` (or
    unbatched (L, E), (S, E_k), (S, E_v)), as ``torch.nn.functional.multi_head_attention_forward``:

        q, k, v = query W_q^T + b_q, key W_k^T + b_k, value W_v^T + b_v      (``in_proj_weight`` (3E, E) split
                  in three, or ``q/k/v_proj_weight`` with ``use_separate_proj_weight``; ``in_proj_bias`` (3E,))
        head_h = softmax(q_h k_h^T / sqrt(d) + mask) v_h,  d = E / num_heads
        out = concat_h(head_h) W_o^T + b_o

    ``bias_k``/``bias_v`` (1, 1, E) append a learned key and value; ``add_zero_attn`` a zero key and value;
    ``static_k``/``static_v`` (N * num_heads, S, d) replace the projected keys/values. ``attn_mask`` is (L, S) or
    (N * num_heads, L, S), ``key_padding_mask`` (N, S): bool (True = leave out) or float (added to the scores).
    ``is_causal`` is only a hint that ``attn_mask`` is causal (which is then required and used). Dropout on
    the weights applies when ``training``. Returns ``(output (L, N, E), weights)``: weights (N, L, S) averaged
    over heads, (N, num_heads, L, S) without ``average_attn_weights``, or None without ``need_weights``.
    """
    batched = _batched(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        key_padding_mask = None if key_padding_mask is None else key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    if embed_dim != embed_dim_to_check or num_heads <= 0 or embed_dim % num_heads:
        raise ValueError(f"[{_OP}] expected embedding dimension {embed_dim_to_check} divisible by num_heads "
                         f"{num_heads}, got query {tuple(query.shape)}")
    if is_causal and attn_mask is None:
        raise ValueError(f"[{_OP}] is_causal is a hint and needs the causal attn_mask")
    if key.shape[:2] != value.shape[:2] or key.shape[1] != bsz:
        raise ValueError(f"[{_OP}] key {tuple(key.shape)} and value {tuple(value.shape)} must share the sequence "
                         f"and batch dims of query {tuple(query.shape)}")
    q, k, v = _project(query, key, value, in_proj_weight, in_proj_bias, use_separate_proj_weight, q_proj_weight,
                       k_proj_weight, v_proj_weight)
    bh, head_dim = bsz * num_heads, embed_dim // num_heads
    src_len = key.shape[0] if static_k is None else static_k.shape[1]
    mask = _mask(attn_mask, key_padding_mask, bsz, num_heads, tgt_len, src_len, q.dtype)
    k, v, mask = _extend(k, v, mask, bias_k, bias_v, static_k, static_v, bsz)
    q = q.reshape((tgt_len, bh, head_dim)).transpose(0, 1)
    k, v = _heads(k, static_k, bh, head_dim, "static_k"), _heads(v, static_v, bh, head_dim, "static_v")
    if add_zero_attn:
        k = cat([k, zeros((bh, 1, head_dim), dtype=k.dtype, device=k.device)], 1)
        v = cat([v, zeros((bh, 1, v.shape[2]), dtype=v.dtype, device=v.device)], 1)
        mask = _pad_key(mask)
    out, weights = _attend(q, k, v, mask, dropout_p if training else 0.0, need_weights, bsz, num_heads)
    out = _C._nn.linear(out.transpose(0, 1).reshape((tgt_len * bsz, embed_dim)), out_proj_weight, out_proj_bias)
    out = out.reshape((tgt_len, bsz, out.shape[-1]))
    if weights is not None and average_attn_weights:
        weights = weights.mean(1)
    if not batched:
        out, weights = out.squeeze(1), None if weights is None else weights.squeeze(0)
    return out, weights


__all__ = ["multi_head_attention_forward"]
