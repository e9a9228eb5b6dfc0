"""``TransformerBlock``: a pre-norm (or post-norm) self-attention + MLP layer, and rotary embeddings."""

from __future__ import annotations

import functools

import numpy as np
import sneppx_core as sx
import sneppx_core.functional as F

from .attention import MultiheadAttention, merge_masks
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm, RMSNorm

ACTIVATIONS = {
    "gelu": F.gelu,
    "gelu_tanh": functools.partial(F.gelu, approximate="tanh"),
    "relu": F.relu,
    "silu": F.silu,
}


def make_norm(norm: str, d_model: int, eps: float, bias: bool, **kw) -> Module:
    """``LayerNorm`` for "layernorm", ``RMSNorm`` for "rmsnorm"."""
    if norm == "layernorm":
        return LayerNorm(d_model, eps=eps, bias=bias, **kw)
    if norm == "rmsnorm":
        return RMSNorm(d_model, eps=eps, **kw)
    raise ValueError(f"[TransformerBlock] norm must be 'layernorm' or 'rmsnorm', got {norm!r}")


def rope_tables(max_len: int, head_dim: int, base: float = 10000.0):
    """Rotary-embedding tables (cos, sin), each (max_len, head_dim): angle(p, i) = p * base^(-2i/d)
    for the i-th of the d/2 frequencies, repeated for both halves of the head."""
    if head_dim % 2:
        raise ValueError(f"[rope] head dimension must be even for rotary embeddings, got {head_dim}")
    inv_freq = base ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    angles = np.outer(np.arange(max_len, dtype=np.float64), inv_freq)
    angles = np.concatenate([angles, angles], axis=1)
    return sx.Tensor(np.cos(angles).astype(np.float32)), sx.Tensor(np.sin(angles).astype(np.float32))


def apply_rope(x, cos, sin):
    """Rotates pairs (x_i, x_{i+d/2}) of each head vector by its position's angles:
    x * cos + rotate_half(x) * sin with rotate_half(x) = (-x2, x1). ``x`` is (B, H, T, d); ``cos``
    and ``sin`` broadcast to it ((T, d) or (B, 1, T, d))."""
    x1, x2 = x.chunk(2, -1)
    return x * cos + sx.cat([-x2, x1], -1) * sin


class TransformerBlock(Module, record_config=True):
    """One Transformer encoder layer on (B, T, C) inputs, the counterpart of
    ``torch.nn.TransformerEncoderLayer(batch_first=True)`` with the same state_dict keys.

    norm_first (pre-norm):  x = x + SA(norm1(x));  x = x + FF(norm2(x))
    otherwise (post-norm):  x = norm1(x + SA(x));  x = norm2(x + FF(x))
    with SA multi-head self-attention and FF(x) = linear2(dropout(act(linear1(x)))).

    Args:
        d_model, n_heads: width and number of heads.
        d_ff: hidden width of FF (default 4 * d_model).
        dropout: on attention weights, inside FF and on both residual branches.
        activation: "gelu", "gelu_tanh", "relu" or "silu".
        norm: "layernorm" or "rmsnorm".
        norm_first: pre-norm (default) or post-norm.
        causal: apply a causal mask by default.
        bias: biases in the linear layers and LayerNorms.
        eps: normalisation epsilon.
    """

    def __init__(self, d_model: int, n_heads: int, d_ff=None, dropout: float = 0.0, activation: str = "gelu",
                 norm: str = "layernorm", norm_first: bool = True, causal: bool = False, bias: bool = True,
                 eps: float = 1e-5, device=None, dtype=None):
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"[TransformerBlock] activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
        kw = {"device": device, "dtype": dtype}
        d_ff = 4 * d_model if d_ff is None else d_ff
        self.d_model, self.n_heads, self.d_ff = d_model, n_heads, d_ff
        self.activation, self.norm_first, self.causal = activation, norm_first, causal
        self.self_attn = MultiheadAttention(d_model, n_heads, dropout=dropout, bias=bias, batch_first=True, **kw)
        self.linear1 = Linear(d_model, d_ff, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(d_ff, d_model, bias=bias, **kw)
        self.norm1 = make_norm(norm, d_model, eps, bias, **kw)
        self.norm2 = make_norm(norm, d_model, eps, bias, **kw)
        self.dropout1, self.dropout2 = Dropout(dropout), Dropout(dropout)

    def forward(self, x, attn_mask=None, key_padding_mask=None, is_causal=None):
        """Applies the layer to ``x`` (B, T, C).

        ``attn_mask`` (T, T) or (B*H, T, T) and ``key_padding_mask`` (B, T) follow
        MultiheadAttention (bool True = leave out, float = added). ``is_causal`` overrides the
        ``causal`` set at construction.
        """
        if x.ndim != 3 or x.shape[-1] != self.d_model:
            raise ValueError(f"[TransformerBlock] expected input (B, T, {self.d_model}), got shape {tuple(x.shape)}")
        b, t = x.shape[0], x.shape[1]
        causal = self.causal if is_causal is None else is_causal
        mask, causal = merge_masks(attn_mask, key_padding_mask, causal, (b, self.n_heads, t, t), x.dtype, x.device)
        return self.forward_with(x, mask, causal)

    def forward_with(self, x, mask=None, is_causal: bool = False, rope=None, cache=None, layer: int = 0):
        """The layer with a ready additive ``mask`` (broadcastable to (B, H, T, S)), rotary tables
        ``rope = (cos, sin)`` and a KV cache (``cache.update(layer, k, v)`` returns the keys and
        values of every cached position): what ``Transformer`` calls."""
        if self.norm_first:
            x = x + self._sa(self.norm1(x), mask, is_causal, rope, cache, layer)
            return x + self._ff(self.norm2(x))
        x = self.norm1(x + self._sa(x, mask, is_causal, rope, cache, layer))
        return self.norm2(x + self._ff(x))

    def _sa(self, x, mask, is_causal, rope, cache, layer):
        attn = self.self_attn
        q, k, v = attn.project_heads(x, x, x, True)
        if rope is not None:
            q, k = apply_rope(q, *rope), apply_rope(k, *rope)
        if cache is not None:
            k, v = cache.update(layer, k, v)
        p = attn.dropout if self.training else 0.0
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p, is_causal=is_causal)
        return self.dropout1(attn.merge_heads(out))

    def _ff(self, x):
        return self.dropout2(self.linear2(self.dropout(ACTIVATIONS[self.activation](self.linear1(x)))))

    def extra_repr(self) -> str:
        return f"activation={self.activation!r}, norm_first={self.norm_first}, causal={self.causal}"
