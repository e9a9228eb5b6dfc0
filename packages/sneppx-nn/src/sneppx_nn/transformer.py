"""``Transformer``: a decoder-only causal language model with a preallocated KV cache, or, when called with
``torch.nn.Transformer``'s arguments, PyTorch's encoder-decoder."""

from __future__ import annotations

import math

import sneppx_core as sx
import sneppx_core.functional as F

from . import init
from .attention import causal_mask
from .block import TransformerBlock, make_norm, rope_tables
from .containers import ModuleList
from .dropout import Dropout
from .embedding import Embedding
from .linear import Linear
from .module import Module
from .transformer_layers import build_encoder_decoder, encoder_decoder_forward, reset_encoder_decoder
from .transformer_layers import square_subsequent_mask

# keywords only one of the two constructors takes (torch.nn.Transformer's, the language model's)
_TORCH_ONLY = {"nhead", "num_encoder_layers", "num_decoder_layers", "dim_feedforward", "custom_encoder",
               "custom_decoder", "layer_norm_eps", "batch_first", "norm_first"}
_LM_ONLY = {"vocab_size", "n_heads", "n_layers", "d_ff", "max_seq_len", "norm", "positional", "tie_weights"}


def _is_encoder_decoder(args: tuple, kwargs: dict) -> bool:
    """Whether a ``Transformer(...)`` call is ``torch.nn.Transformer``'s: a keyword only PyTorch's takes, or fewer
    than the language model's four required arguments and none of its keywords."""
    if _TORCH_ONLY & kwargs.keys():
        return True
    if _LM_ONLY & kwargs.keys():
        return False
    return len(args) + ("d_model" in kwargs) < 4


class KVCache:
    """Keys and values of every layer for up to ``max_len`` positions, in preallocated tensors
    (``keys[l]`` and ``values[l]`` of shape (B, H, max_len, d)).

    ``update`` writes the new positions into slices in place (under ``no_grad``: the cache is for
    inference) and returns views of all cached positions; the model advances ``length`` once all
    layers have seen a step, so a step of T new tokens costs O(T * length), not a full recompute.
    """

    def __init__(self, n_layers: int, batch_size: int, n_heads: int, head_dim: int, max_len: int,
                 dtype=sx.float32, device="cpu"):
        if batch_size <= 0 or max_len <= 0:
            raise ValueError(f"[KVCache] batch_size and max_len must be positive, got {batch_size}, {max_len}")
        shape = (batch_size, n_heads, max_len, head_dim)
        self.keys = [sx.zeros(shape, dtype=dtype, device=device) for _ in range(n_layers)]
        self.values = [sx.zeros(shape, dtype=dtype, device=device) for _ in range(n_layers)]
        self.batch_size, self.max_len, self.length = batch_size, max_len, 0

    def update(self, layer: int, k, v):
        """Stores ``k``, ``v`` (B, H, T, d) at positions [length, length + T) of ``layer``; returns
        the keys and values of positions [0, length + T)."""
        start, end = self.length, self.length + k.shape[2]
        if end > self.max_len:
            raise ValueError(f"[KVCache] {end} positions exceed the cache's max_len {self.max_len}")
        keys, values = self.keys[layer], self.values[layer]
        with sx.no_grad():
            keys[:, :, start:end] = k
            values[:, :, start:end] = v
        return keys[:, :, :end], values[:, :, :end]

    def reset(self) -> None:
        """Forgets every cached position (the buffers are reused)."""
        self.length = 0

    def __repr__(self):
        return f"KVCache(layers={len(self.keys)}, batch_size={self.batch_size}, length={self.length}, " \
               f"max_len={self.max_len})"


class Transformer(Module, record_config=True):
    """Decoder-only causal language model (GPT-style): token embedding (+ learned positions),
    ``n_layers`` pre-norm causal :class:`TransformerBlock` layers, a final norm and a language-model
    head tied to the token embedding (``tie_weights``).

    Called with ``torch.nn.Transformer``'s arguments (``Transformer(d_model=512, nhead=8, ...)``, no
    arguments, or any keyword only PyTorch's takes: ``nhead``, ``num_encoder_layers``, ``dim_feedforward``,
    ``batch_first``, ...), it is PyTorch's encoder-decoder instead: ``encoder`` and ``decoder`` stacks with
    PyTorch's state-dict keys and initialisation, ``forward(src, tgt, src_mask=None, tgt_mask=None, ...)``,
    and ``generate_square_subsequent_mask``; subclasses of ``nn.Transformer`` written for PyTorch work. Four
    positional arguments and no keyword are read as the language model's.

    Args:
        vocab_size, d_model, n_heads, n_layers: sizes.
        d_ff: MLP width (default 4 * d_model).
        max_seq_len: longest sequence (size of the position table / rotary tables).
        dropout: dropout after the embeddings and inside every block.
        norm: "layernorm" or "rmsnorm".
        positional: "learned" (a position embedding) or "rope" (rotary embeddings on q and k).
        tie_weights: output projection = token embedding (no ``lm_head`` parameter).
        activation, bias: passed to each block.

    ``forward(ids, cache=None, attention_mask=None)`` maps int ids (B, T) to logits (B, T, V). It
    follows the generation protocol: ``new_cache(batch_size, max_len)`` returns a :class:`KVCache`
    and later calls feed only the new tokens. ``attention_mask`` (B, T_total) of 1/0 covers cached
    and new tokens; keys at 0 are masked and positions count only tokens at 1 (left padding).
    Weights start from N(0, 0.02), residual projections from N(0, 0.02 / sqrt(2 n_layers)).
    """

    def __init__(self, *args, **kwargs):
        super().__init__()
        self.encoder_decoder = _is_encoder_decoder(args, kwargs)
        if self.encoder_decoder:
            build_encoder_decoder(self, *args, **kwargs)
        else:
            self._language_model(*args, **kwargs)

    def _language_model(self, vocab_size: int, d_model: int, n_heads: int, n_layers: int, d_ff=None,
                        max_seq_len: int = 1024, dropout: float = 0.0, norm: str = "layernorm",
                        positional: str = "learned", tie_weights: bool = True, activation: str = "gelu",
                        bias: bool = True, device=None, dtype=None) -> None:
        if positional not in ("learned", "rope"):
            raise ValueError(f"[Transformer] positional must be 'learned' or 'rope', got {positional!r}")
        if d_model % n_heads:
            raise ValueError(f"[Transformer] d_model ({d_model}) must be a multiple of n_heads ({n_heads})")
        kw = {"device": device, "dtype": dtype}
        self.vocab_size, self.d_model, self.n_heads, self.n_layers = vocab_size, d_model, n_heads, n_layers
        self.max_seq_len, self.positional, self.tie_weights = max_seq_len, positional, tie_weights
        self.tok_emb = Embedding(vocab_size, d_model, **kw)
        self.pos_emb = Embedding(max_seq_len, d_model, **kw) if positional == "learned" else None
        self.drop = Dropout(dropout)
        self.blocks = ModuleList(TransformerBlock(d_model, n_heads, d_ff, dropout, activation, norm, True, True, bias,
                                                  **kw) for _ in range(n_layers))
        self.norm_f = make_norm(norm, d_model, 1e-5, bias, **kw)
        self.lm_head = None if tie_weights else Linear(d_model, vocab_size, bias=False, **kw)
        if positional == "rope":
            w = self.tok_emb.weight
            cos, sin = rope_tables(max_seq_len, d_model // n_heads)
            self.register_buffer("rope_cos", cos.to(w.device, w.dtype), persistent=False)
            self.register_buffer("rope_sin", sin.to(w.device, w.dtype), persistent=False)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """GPT-2 initialisation: N(0, 0.02) weights, zero biases, unit norms, residual projections
        (attention output, second MLP layer) scaled by 1 / sqrt(2 n_layers); the encoder-decoder's is
        PyTorch's (Xavier-uniform matrices)."""
        if self.encoder_decoder:
            return reset_encoder_decoder(self)
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                init.zeros_(p)
            elif ".norm" in name or name.startswith("norm_f"):
                init.ones_(p)
            else:
                resid = name.endswith("out_proj.weight") or name.endswith("linear2.weight")
                init.normal_(p, 0.0, 0.02 / math.sqrt(2 * max(self.n_layers, 1)) if resid else 0.02)

    @property
    def device(self):
        """The device of the parameters."""
        return next(iter(self.parameters())).device

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None):
        """A (sz, sz) causal mask for the encoder-decoder: 0 on and below the diagonal, -inf above."""
        return square_subsequent_mask(sz, device, dtype)

    def new_cache(self, batch_size: int, max_len: int) -> KVCache:
        """An empty :class:`KVCache` for ``batch_size`` sequences of up to ``max_len`` tokens."""
        if self.encoder_decoder:
            raise TypeError("[Transformer.new_cache] only the language model has a KV cache, not the "
                            "encoder-decoder")
        if max_len > self.max_seq_len:
            raise ValueError(f"[Transformer.new_cache] max_len {max_len} exceeds max_seq_len {self.max_seq_len}")
        w = self.tok_emb.weight
        return KVCache(self.n_layers, batch_size, self.n_heads, self.d_model // self.n_heads, max_len,
                       w.dtype, w.device)

    def _check(self, ids, cache, attention_mask) -> int:
        if ids.ndim != 2 or ids.dtype not in (sx.int64, sx.int32):
            raise ValueError(f"[Transformer] ids must be an int64 tensor (B, T), got shape {tuple(ids.shape)} "
                             f"and dtype {ids.dtype!r}")
        b, t = ids.shape
        start = 0 if cache is None else cache.length
        if cache is not None and b != cache.batch_size:
            raise ValueError(f"[Transformer] batch size {b} does not match the cache's {cache.batch_size}")
        if start + t > self.max_seq_len:
            raise ValueError(f"[Transformer] {start + t} positions exceed max_seq_len {self.max_seq_len}")
        if attention_mask is not None and tuple(attention_mask.shape) != (b, start + t):
            raise ValueError(f"[Transformer] attention_mask must have shape {(b, start + t)} (cached + new tokens), "
                             f"got {tuple(attention_mask.shape)}")
        return start

    def _mask(self, t: int, start: int, attention_mask, dtype, device):
        """(additive mask or None, is_causal) for T new queries over start + T keys."""
        if attention_mask is None:
            if start == 0:
                return None, True
            return (None if t == 1 else causal_mask(t, start + t, dtype, device, offset=start)), False
        keep = attention_mask.to(sx.bool_).unsqueeze(1).unsqueeze(1)  # (B, 1, 1, S)
        rows = sx.arange(t, device=device).unsqueeze(1) + start
        cols = sx.arange(start + t, device=device).unsqueeze(0)
        allowed = (cols <= rows).logical_and(keep).logical_or(cols == rows)  # own position: no empty rows
        zeros = sx.zeros(tuple(allowed.shape), dtype=dtype, device=device)
        return zeros.masked_fill(allowed.logical_not(), float("-inf")), False

    def _positions(self, t: int, start: int, attention_mask):
        """Position ids (B, T) counted over unmasked tokens, or None for start .. start + T - 1."""
        if attention_mask is None:
            return None
        pos = attention_mask.to(sx.int64).cumsum(-1) - 1
        return pos[:, start:start + t].clamp(0, None)

    def forward(self, *args, **kwargs):
        """The language model: ``forward(ids, cache=None, attention_mask=None)``, logits (B, T, V) for token ids
        (B, T) (see the class docstring for ``cache`` and ``attention_mask``). The encoder-decoder:
        ``forward(src, tgt, src_mask=None, tgt_mask=None, memory_mask=None, src_key_padding_mask=None,
        tgt_key_padding_mask=None, memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
        memory_is_causal=False)``, as ``torch.nn.Transformer``'s."""
        if self.encoder_decoder:
            return encoder_decoder_forward(self, *args, **kwargs)
        return self._logits(*args, **kwargs)

    def _logits(self, ids, cache=None, attention_mask=None):
        start = self._check(ids, cache, attention_mask)
        t = ids.shape[1]
        x = self.tok_emb(ids)
        pos = self._positions(t, start, attention_mask)
        rope = None
        if self.positional == "learned":
            pos_ids = sx.arange(start, start + t, device=ids.device) if pos is None else pos
            x = x + self.pos_emb(pos_ids)
        elif pos is None:
            rope = (self.rope_cos[start:start + t], self.rope_sin[start:start + t])
        else:
            rope = (self.rope_cos[pos].unsqueeze(1), self.rope_sin[pos].unsqueeze(1))
        x = self.drop(x)
        mask, causal = self._mask(t, start, attention_mask, x.dtype, x.device)
        for i, block in enumerate(self.blocks):
            x = block.forward_with(x, mask, causal, rope, cache, i)
        if cache is not None:
            cache.length = start + t
        x = self.norm_f(x)
        return F.linear(x, self.tok_emb.weight) if self.lm_head is None else self.lm_head(x)

    @classmethod
    def from_pretrained(cls, folder, dtype=None) -> "Transformer":
        """A Transformer with the weights of a pretrained model folder, ready to fine-tune.

        ``folder`` is a Hugging Face folder of a GPT-2 model (``config.json`` and safetensors
        weights, sharded or not) or a folder/file written by ``save_checkpoint``. Families the
        architecture cannot express (Llama, Mistral, Qwen: gated MLPs, grouped-query attention)
        raise ValueError. ``dtype`` sets the parameters' dtype (float32 by default). A model
        saved back with ``save_checkpoint`` loads in ``sneppx_generate.load_model``.
        """
        from .pretrained import from_pretrained

        return from_pretrained(cls, folder, dtype)

    def extra_repr(self) -> str:
        if self.encoder_decoder:
            return ""
        return f"vocab_size={self.vocab_size}, max_seq_len={self.max_seq_len}, positional={self.positional!r}"
