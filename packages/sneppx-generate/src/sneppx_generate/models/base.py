"""Pieces shared by the model families: the KV cache, rotary tables, attention and the LM protocol."""

from __future__ import annotations

import math

import numpy as np
import sneppx_core as sx
import sneppx_core.functional as F


class KVCache:
    """Keys and values of every layer in preallocated tensors ``keys[l]``, ``values[l]`` of shape
    (B, H_kv, max_len, head_dim). ``update`` writes new positions in place and returns views of all
    cached positions; the model advances ``length`` after its last layer."""

    def __init__(self, n_layers, batch_size, n_kv_heads, head_dim, max_len, dtype, device="cpu"):
        if batch_size <= 0 or max_len <= 0:
            raise ValueError(f"[KVCache] batch_size and max_len must be positive, got {batch_size}, {max_len}")
        shape = (batch_size, n_kv_heads, max_len, head_dim)
        self.keys = [sx.zeros(shape, dtype=dtype, device=device) for _ in range(n_layers)]
        self.values = [sx.zeros(shape, dtype=dtype, device=device) for _ in range(n_layers)]
        self.batch_size, self.max_len, self.length = batch_size, max_len, 0

    def update(self, layer: int, k, v):
        """Stores ``k``, ``v`` (B, H_kv, T, d) at positions [length, length + T); returns positions [0, length + T)."""
        start, end = self.length, self.length + k.shape[2]
        if end > self.max_len:
            raise ValueError(f"[KVCache] {end} positions exceed the cache's max_len {self.max_len}")
        keys, values = self.keys[layer], self.values[layer]
        keys[:, :, start:end] = k
        values[:, :, start:end] = v
        return keys[:, :, :end], values[:, :, :end]

    def __repr__(self):
        return f"KVCache(layers={len(self.keys)}, batch_size={self.batch_size}, length={self.length}, " \
               f"max_len={self.max_len})"


def rope_inv_freq(head_dim: int, theta: float, scaling=None) -> np.ndarray:
    """Rotary frequencies theta^(-2i/d), i < d/2, in float64, adjusted by ``scaling``.

    ``scaling`` is a config's ``rope_scaling``/``rope_parameters`` dict or None. "default" keeps
    the frequencies, "linear" divides them by ``factor``, "llama3" divides the low frequencies by
    ``factor`` (wavelength > original_max_position_embeddings / low_freq_factor), keeps the high
    ones (wavelength < original / high_freq_factor) and blends linearly in between.
    """
    inv = 1.0 / theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    kind = (scaling or {}).get("rope_type", (scaling or {}).get("type", "default"))
    if kind == "default":
        return inv
    if kind == "linear":
        return inv / float(scaling["factor"])
    if kind == "llama3":
        factor, low, high = (float(scaling[k]) for k in ("factor", "low_freq_factor", "high_freq_factor"))
        old = float(scaling["original_max_position_embeddings"])
        wavelen = 2 * math.pi / inv
        scaled = np.where(wavelen > old / low, inv / factor, inv)
        smooth = (old / wavelen - low) / (high - low)
        blended = (1 - smooth) * scaled / factor + smooth * scaled
        medium = (wavelen >= old / high) & (wavelen <= old / low)
        return np.where(medium, blended, scaled)
    raise NotImplementedError(f"[load_model] rope scaling type {kind!r} is not supported "
                              "(supported: default, linear, llama3)")


def rope_tables(max_len: int, inv_freq: np.ndarray, dtype):
    """(cos, sin) tables of shape (max_len, head_dim): angle(p, i) = p * inv_freq[i], both halves
    of the head share the frequencies (the rotate-half layout of Llama and GPT-NeoX)."""
    angles = np.outer(np.arange(max_len, dtype=np.float64), inv_freq)
    angles = np.concatenate([angles, angles], axis=1)
    to = lambda a: sx.Tensor.from_numpy(a.astype(np.float32)).to(dtype)  # noqa: E731
    return to(np.cos(angles)), to(np.sin(angles))


def apply_rope(x, cos, sin):
    """x * cos + rotate_half(x) * sin with rotate_half(x) = (-x2, x1) on each head vector of x (B, H, T, d)."""
    x1, x2 = x.chunk(2, -1)
    return x * cos + sx.cat([-x2, x1], -1) * sin


def split_heads(x, n_heads: int, head_dim: int):
    """(B, T, n_heads * head_dim) -> (B, n_heads, T, head_dim)."""
    b, t = x.shape[0], x.shape[1]
    return x.reshape((b, t, n_heads, head_dim)).transpose(1, 2)


def merge_heads(x):
    """(B, H, T, d) -> (B, T, H * d)."""
    b, h, t, d = x.shape
    return x.transpose(1, 2).reshape((b, t, h * d))


class Step:
    """What every layer of one forward call shares: the new tokens' positions and attention masks.

    ``start``: tokens already cached; ``t``: new tokens. Without padding (``attention_mask`` None
    or all ones) positions are ``start .. start + t - 1`` and attention is plainly causal. With
    padding, ``positions`` (B, T) count only real tokens and ``keep`` (B, 1, 1, S) marks the real
    keys, so a left-padded row computes what it would alone.
    """

    def __init__(self, start: int, t: int, attention_mask=None, device="cpu"):
        self.start, self.t, self.positions, self.keep, self.device = start, t, None, None, device
        if attention_mask is not None and not bool(attention_mask.to(sx.bool_).all().item()):
            keep = attention_mask.to(sx.bool_)
            self.positions = (attention_mask.to(sx.int64).cumsum(-1) - 1).clamp(0, None)[:, start:start + t]
            self.keep = keep.unsqueeze(1).unsqueeze(1)

    def position_ids(self):
        """(B, T) position ids with padding, else a 1-D range."""
        if self.positions is not None:
            return self.positions
        return sx.arange(self.start, self.start + self.t, device=self.device)

    def rope(self, cos, sin):
        """The rows of the (max_len, d) rotary tables for the new tokens, broadcastable to (B, H, T, d)."""
        if self.positions is None:
            return cos[self.start:self.start + self.t], sin[self.start:self.start + self.t]
        return cos[self.positions].unsqueeze(1), sin[self.positions].unsqueeze(1)

    def attend(self, q, k, v, window=None):
        """Causal attention of the new queries q (B, H, T, d) over all cached k, v (B, H_kv, S, d).

        Query i sits at position S - T + i and sees keys j <= that position; with ``window``, only
        keys within the last ``window`` positions (sliding-window attention); with padding, only
        real keys (and itself, so no row is empty).
        """
        t, s = q.shape[2], k.shape[2]
        gqa = k.shape[1] != q.shape[1]
        sliding = window is not None and s > window
        if self.keep is None and not sliding:
            return F.scaled_dot_product_attention(q, k, v, is_causal=t > 1, enable_gqa=gqa)
        rows = sx.arange(t, device=self.device).unsqueeze(1) + (s - t)
        cols = sx.arange(s, device=self.device).unsqueeze(0)
        allowed = cols <= rows
        if sliding:
            allowed = allowed.logical_and(cols > rows - window)
        if self.keep is not None:
            allowed = allowed.logical_and(self.keep).logical_or(cols == rows)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, enable_gqa=gqa)


class CausalLM:
    """Base of the loaded models: the generation protocol over a stack of layers.

    Subclasses set ``n_layers``, ``n_kv_heads``, ``head_dim``, ``max_positions`` and ``dtype`` and
    implement ``embed(ids, step)``, ``layer(i, x, cache, step)`` and ``head(x)`` (``step``: a
    :class:`Step`). ``model(ids, cache=None, attention_mask=None, logits_to_keep=0)`` returns
    logits (B, T, V) of int ids (B, T); ``new_cache`` gives a :class:`KVCache` after which each call
    feeds only new tokens; ``attention_mask`` (B, cached + new tokens) of 1/0 marks padding;
    ``logits_to_keep`` n > 0 keeps the last n positions. Runs under ``no_grad``.
    """

    model_type = "?"
    config: dict
    generation_defaults: dict
    device = "cpu"

    def new_cache(self, batch_size: int, max_len: int) -> KVCache:
        """An empty cache for ``batch_size`` sequences of up to ``max_len`` tokens."""
        if max_len > self.max_positions:
            raise ValueError(f"[{self.model_type}] max_len {max_len} exceeds the model's "
                             f"{self.max_positions} positions")
        return KVCache(self.n_layers, batch_size, self.n_kv_heads, self.head_dim, max_len, self.dtype, self.device)

    def to(self, device):
        """Moves every weight (and the rotary tables) to ``device`` (``"cuda"`` in a CUDA build); weights
        shared between places (a tied head) stay shared. Returns the model."""
        moved = {}

        def move(v):
            if isinstance(v, sx.Tensor):
                if id(v) not in moved:
                    moved[id(v)] = v.to(device)
                return moved[id(v)]
            if isinstance(v, (list, tuple)):
                return type(v)(move(x) for x in v)
            if isinstance(v, dict):
                return {k: move(x) for k, x in v.items()}
            return v

        for name, value in list(vars(self).items()):
            if name not in ("config", "generation_defaults", "weights_source"):
                setattr(self, name, move(value))
        self.device = str(sx.device(device))
        return self

    def __call__(self, input_ids, cache=None, attention_mask=None, logits_to_keep=0):
        """Same as ``forward``."""
        return self.forward(input_ids, cache, attention_mask, logits_to_keep)

    def forward(self, input_ids, cache=None, attention_mask=None, logits_to_keep=0):
        """Logits (B, T, V) for ``input_ids`` (B, T), after the ``cache.length`` cached tokens.

        ``logits_to_keep`` n > 0 returns only the last n positions' logits (B, n, V), so the
        language-model head skips the rest; 0 keeps all.
        """
        if not isinstance(logits_to_keep, int) or logits_to_keep < 0:
            raise ValueError(f"[{self.model_type}] logits_to_keep must be an int >= 0, got {logits_to_keep!r}")
        if not isinstance(input_ids, sx.Tensor) or input_ids.ndim != 2 or input_ids.dtype not in (sx.int64, sx.int32):
            shape = tuple(getattr(input_ids, "shape", ()))
            raise ValueError(f"[{self.model_type}] input_ids must be an int64 Tensor (B, T), got "
                             f"{type(input_ids).__name__} of shape {shape}")
        (b, t), start = input_ids.shape, 0 if cache is None else cache.length
        if cache is not None and b != cache.batch_size:
            raise ValueError(f"[{self.model_type}] batch size {b} does not match the cache's {cache.batch_size}")
        if start + t > self.max_positions:
            raise ValueError(f"[{self.model_type}] {start + t} positions exceed the model's {self.max_positions}")
        if attention_mask is not None and tuple(attention_mask.shape) != (b, start + t):
            raise ValueError(f"[{self.model_type}] attention_mask must have shape {(b, start + t)} (cached + new "
                             f"tokens), got {tuple(attention_mask.shape)}")
        with sx.no_grad():
            step = Step(start, t, attention_mask, self.device)
            x = self.embed(input_ids, step)
            for i in range(self.n_layers):
                x = self.layer(i, x, cache, step)
            if cache is not None:
                cache.length = start + t
            if 0 < logits_to_keep < t:
                x = x[:, t - logits_to_keep:]
            return self.head(x)

    def __repr__(self):
        return f"{type(self).__name__}(model_type={self.model_type!r}, layers={self.n_layers}, dtype={self.dtype})"
