"""``MultiheadAttention`` (``torch.nn.MultiheadAttention``'s parameters, defaults and masks); also the place of
``torch.nn.attention`` (``SDPBackend``, ``sdpa_kernel``), which ``import torch.nn.attention`` reaches here."""

from __future__ import annotations

import contextlib
import enum
import math

import sneppx_core as sx
import sneppx_core.functional as F

from . import init
from .linear import Linear
from .module import Module
from .parameter import Parameter

_NEG_INF = float("-inf")


def additive_mask(mask, dtype, name: str):
    """A float mask to add to attention scores: a bool ``mask`` (True = masked out) becomes
    -inf/0; a float mask is returned in ``dtype``; None stays None."""
    if mask is None:
        return None
    if mask.dtype == sx.bool_:
        return sx.zeros(tuple(mask.shape), dtype=dtype, device=mask.device).masked_fill(mask, _NEG_INF)
    if not mask.is_floating_point():
        raise TypeError(f"[MultiheadAttention] {name} must be bool or floating point, got {mask.dtype!r}")
    return mask.to(dtype)


def causal_mask(q_len: int, k_len: int, dtype, device="cpu", offset: int = 0):
    """Additive (q_len, k_len) mask: query i may attend to keys j <= i + offset."""
    rows = sx.arange(q_len, device=device).unsqueeze(1) + offset
    cols = sx.arange(k_len, device=device).unsqueeze(0)
    return sx.zeros((q_len, k_len), dtype=dtype, device=device).masked_fill(cols > rows, _NEG_INF)


def merge_masks(attn_mask, key_padding_mask, is_causal: bool, shape: tuple, dtype, device):
    """Combines MultiheadAttention masks into one additive mask for scores of ``shape`` (B, H, L, S).

    ``attn_mask``: (L, S) or (B*H, L, S); ``key_padding_mask``: (B, S); bool masks mark positions
    to leave out; ``is_causal`` lets query i see keys j <= i. Returns ``(mask or None, is_causal)``:
    a lone causal request with L == S is passed on as ``is_causal`` so the attention kernel can
    skip the mask.
    """
    b, h, L, S = shape
    mask = additive_mask(attn_mask, dtype, "attn_mask")
    if mask is not None:
        if tuple(mask.shape) == (b * h, L, S):
            mask = mask.reshape((b, h, L, S))
        elif tuple(mask.shape) != (L, S):
            raise ValueError(f"[MultiheadAttention] attn_mask must have shape {(L, S)} or {(b * h, L, S)}, "
                             f"got {tuple(attn_mask.shape)}")
    kpm = additive_mask(key_padding_mask, dtype, "key_padding_mask")
    if kpm is not None:
        if tuple(kpm.shape) != (b, S):
            raise ValueError(f"[MultiheadAttention] key_padding_mask must have shape {(b, S)}, "
                             f"got {tuple(key_padding_mask.shape)}")
        kpm = kpm.reshape((b, 1, 1, S))
        mask = kpm if mask is None else mask + kpm
    if is_causal and mask is None and L == S:
        return None, True
    if is_causal:  # PyTorch's convention: query i sees keys j <= i (top-left aligned)
        causal = causal_mask(L, S, dtype, device)
        mask = causal if mask is None else mask + causal
    return mask, False


def _pad_column(mask):
    """Appends one unmasked key column to a mask (for bias_k/bias_v and zero attention)."""
    if mask is None:
        return None
    zeros = sx.zeros(tuple(mask.shape[:-1]) + (1,), dtype=mask.dtype, device=mask.device)
    return sx.cat([mask, zeros], -1)


class MultiheadAttention(Module, record_config=True):
    """Multi-head attention:

        head_i = softmax(Q W_q^i (K W_k^i)^T / sqrt(d) + mask) V W_v^i,   out = concat(head_i) W_o

    Args:
        embed_dim: model width E (split across ``num_heads`` heads of d = E / num_heads).
        num_heads: number of heads.
        dropout: dropout probability on the attention weights (training only).
        bias: biases on the input and output projections.
        add_bias_kv: learn a key and a value appended to the key/value sequences.
        add_zero_attn: append a zero key and value.
        kdim, vdim: key and value widths (default E; when they differ the projections are separate).
        batch_first: inputs (B, L, E) instead of (L, B, E).

    Parameters follow PyTorch's names (``in_proj_weight`` (3E, E), ``in_proj_bias`` (3E,), or
    ``q_proj_weight``/``k_proj_weight``/``v_proj_weight``; ``out_proj.weight``/``out_proj.bias``),
    and initialisation (Xavier-uniform input projections, zero biases), so weights move between
    the two through ``state_dict``.
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim=None, vdim=None,
                 batch_first: bool = False, device=None, dtype=None):
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0 or embed_dim % num_heads:
            raise ValueError(f"[MultiheadAttention] embed_dim ({embed_dim}) must be a positive multiple of "
                             f"num_heads ({num_heads})")
        self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
        self.kdim, self.vdim = kdim or embed_dim, vdim or embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.dropout, self.batch_first, self.add_zero_attn = dropout, batch_first, add_zero_attn
        kw = {"dtype": dtype, "device": device}
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(sx.empty((3 * embed_dim, embed_dim), **kw))
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.register_parameter("in_proj_weight", None)
            self.q_proj_weight = Parameter(sx.empty((embed_dim, embed_dim), **kw))
            self.k_proj_weight = Parameter(sx.empty((embed_dim, self.kdim), **kw))
            self.v_proj_weight = Parameter(sx.empty((embed_dim, self.vdim), **kw))
        self.in_proj_bias = Parameter(sx.empty((3 * embed_dim,), **kw)) if bias else None
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, **kw)
        self.bias_k = Parameter(sx.empty((1, 1, embed_dim), **kw)) if add_bias_kv else None
        self.bias_v = Parameter(sx.empty((1, 1, embed_dim), **kw)) if add_bias_kv else None
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        for w in (self.in_proj_weight, self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
            if w is not None:
                init.xavier_uniform_(w)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)
        for b in (self.bias_k, self.bias_v):
            if b is not None:
                init.xavier_normal_(b)

    def project_heads(self, query, key, value, self_attention: bool = False):
        """Input projections split into heads: (B, L, E) inputs -> q (B, H, L, d), k, v (B, H, S, d)."""
        bias = self.in_proj_bias
        if self._qkv_same_embed_dim and self_attention:
            q, k, v = F.linear(query, self.in_proj_weight, bias).chunk(3, -1)
        else:
            ws = self.in_proj_weight.chunk(3, 0) if self._qkv_same_embed_dim else \
                (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
            bs = bias.chunk(3, 0) if bias is not None else (None, None, None)
            q, k, v = (F.linear(x, w, b) for x, w, b in zip((query, key, value), ws, bs))
        if self.bias_k is not None:
            b = k.shape[0]
            k = sx.cat([k, self.bias_k.expand((b, 1, self.embed_dim))], 1)
            v = sx.cat([v, self.bias_v.expand((b, 1, self.embed_dim))], 1)
        return tuple(self._split(t) for t in (q, k, v))

    def _split(self, t):
        b, n, _ = t.shape
        return t.reshape((b, n, self.num_heads, self.head_dim)).transpose(1, 2)

    def merge_heads(self, out):
        """(B, H, L, d) attention output -> concat over heads -> ``out_proj``: (B, L, E)."""
        b, _, n, _ = out.shape
        return self.out_proj(out.transpose(1, 2).reshape((b, n, self.embed_dim)))

    def _check(self, query, key, value):
        batched = query.ndim == 3
        if query.ndim not in (2, 3) or key.ndim != query.ndim or value.ndim != query.ndim:
            raise ValueError(f"[MultiheadAttention] query, key and value must all be 2-D (unbatched) or 3-D, got "
                             f"{tuple(query.shape)}, {tuple(key.shape)}, {tuple(value.shape)}")
        dims = (query.shape[-1], key.shape[-1], value.shape[-1])
        if dims != (self.embed_dim, self.kdim, self.vdim) or key.shape[:-1] != value.shape[:-1]:
            raise ValueError(f"[MultiheadAttention] expected widths (E={self.embed_dim}, kdim={self.kdim}, "
                             f"vdim={self.vdim}) and matching key/value lengths, got {tuple(query.shape)}, "
                             f"{tuple(key.shape)}, {tuple(value.shape)}")
        return batched

    def forward(self, query, key, value, key_padding_mask=None, need_weights: bool = True, attn_mask=None,
                average_attn_weights: bool = True, is_causal: bool = False):
        """Attention of ``query`` over ``key``/``value``; returns ``(output, weights or None)``.

        Shapes: query (L, B, E) (``batch_first``: (B, L, E); unbatched: (L, E)), key (S, B, kdim),
        value (S, B, vdim). ``key_padding_mask`` (B, S) and ``attn_mask`` (L, S) or (B*H, L, S):
        bool (True = leave out) or float (added to the scores). ``is_causal`` adds a causal mask
        (PyTorch requires ``attn_mask`` alongside it; here it is optional). ``weights`` is
        (B, L, S) averaged over heads, or (B, H, L, S) without ``average_attn_weights``.
        """
        self_attention = query is key and key is value
        batched = self._check(query, key, value)
        if not batched:
            query, key, value = (t.unsqueeze(0) for t in (query, key, value))
            key_padding_mask = None if key_padding_mask is None else key_padding_mask.unsqueeze(0)
        elif not self.batch_first:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        q, k, v = self.project_heads(query, key, value, self_attention)
        b, h, L, S = q.shape[0], self.num_heads, q.shape[2], key.shape[1]
        mask, causal = merge_masks(attn_mask, key_padding_mask, is_causal, (b, h, L, S), q.dtype, q.device)
        mask, causal = self._extend(mask, causal, L, S, q)
        if self.add_zero_attn:
            zeros = sx.zeros((b, h, 1, self.head_dim), dtype=q.dtype, device=q.device)
            k, v = sx.cat([k, zeros], 2), sx.cat([v, zeros], 2)
            mask = _pad_column(mask)
        out, weights = self._attend(q, k, v, mask, causal, need_weights)
        out = self.merge_heads(out)
        if not batched:
            out = out.squeeze(0)
        elif not self.batch_first:
            out = out.transpose(0, 1)
        if weights is not None:
            weights = weights.mean(1) if average_attn_weights else weights
            weights = weights if batched else weights.squeeze(0)
        return out, weights

    def _extend(self, mask, causal, L, S, q):
        """Pads the mask for the key columns appended by bias_k/bias_v and zero attention."""
        if (self.bias_k is not None or self.add_zero_attn) and causal:
            mask, causal = causal_mask(L, S, q.dtype, q.device), False
        if self.bias_k is not None:
            mask = _pad_column(mask)
        return mask, causal

    def _attend(self, q, k, v, mask, causal, need_weights):
        p = self.dropout if self.training else 0.0
        if not need_weights:
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p, is_causal=causal), None
        if causal:
            mask = causal_mask(q.shape[2], k.shape[2], q.dtype, q.device)
        scores = (q * (1.0 / math.sqrt(self.head_dim))) @ k.transpose(-2, -1)
        if mask is not None:
            scores = scores + mask
        weights = F.softmax(scores, -1)
        if p > 0.0:
            weights = F.dropout(weights, p, True)
        return weights @ v, weights

    def extra_repr(self) -> str:
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, batch_first={self.batch_first}"


class SDPBackend(enum.Enum):
    """``torch.nn.attention.SDPBackend``: the attention kernels PyTorch can choose between."""
    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority: bool = False):
    """``torch.nn.attention.sdpa_kernel``: PyTorch's choice of attention kernels for the block. Accepted
    (``backends`` is checked); SneppX's ``scaled_dot_product_attention`` keeps choosing its own kernel, which
    gives the same result up to rounding."""
    chosen = [backends] if isinstance(backends, SDPBackend) else list(backends)
    if not chosen or not all(isinstance(b, SDPBackend) for b in chosen):
        raise ValueError(f"[sdpa_kernel] expected one or more SDPBackend values, got {backends!r}")
    yield
