"""Encoder and decoder layers with ``torch.nn``'s signatures, submodule names and state_dict keys:
``TransformerEncoderLayer``, ``TransformerEncoder``, ``TransformerDecoderLayer``,
``TransformerDecoder``.

Post-norm (default): ``x = norm1(x + sa(x)); x = norm2(x + ff(x))``; with ``norm_first``:
``x = x + sa(norm1(x)); x = x + ff(norm2(x))``, where ``ff(x) = linear2(dropout(act(linear1(x))))``.
The decoder layer adds cross-attention over ``memory`` (``multihead_attn``, ``norm2``) before
the feed-forward block (``norm3``).
"""

from __future__ import annotations

import copy

import sneppx_core as sx
import sneppx_core.functional as F

from . import init
from .attention import MultiheadAttention
from .containers import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm

_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


def _activation(activation, layer):
    if isinstance(activation, str):
        if activation not in _ACTIVATIONS:
            raise ValueError(f"[{layer}] activation should be relu/gelu, not {activation!r}")
        return _ACTIVATIONS[activation]
    if not callable(activation):
        raise TypeError(f"[{layer}] activation must be 'relu', 'gelu' or a callable, got {activation!r}")
    return activation


class _FeedForward(Module):
    """Shared constructor pieces: feed-forward sublayer, first norm pair and dropouts."""

    def _build(self, layer, d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first,
               norm_first, bias, kw, norms):
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **kw)
        if norms == 3:
            self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                     batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        for i in range(1, norms + 1):
            setattr(self, f"norm{i}", LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        for i in range(1, norms + 1):
            setattr(self, f"dropout{i}", Dropout(dropout))
        self.activation = _activation(activation, layer)
        self.batch_first = batch_first

    def _ff_block(self, x, dropout):
        return dropout(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoderLayer(_FeedForward, record_config=True):
    """Self-attention then a feed-forward network, each with a residual connection and LayerNorm,
    as ``torch.nn.TransformerEncoderLayer`` (the same arguments, defaults and parameter names).

    Args:
        d_model: model width; nhead: attention heads; dim_feedforward: hidden width of the MLP.
        dropout: after attention weights, inside the MLP and on both residual branches.
        activation: "relu", "gelu" or a callable. layer_norm_eps: LayerNorm epsilon.
        batch_first: inputs (N, S, E) instead of (S, N, E). norm_first: pre-norm instead of post-norm.
        bias: biases in the linear layers and LayerNorms.
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation="relu", layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None):
        super().__init__()
        self._build("TransformerEncoderLayer", d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                    batch_first, norm_first, bias, {"device": device, "dtype": dtype}, 2)

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal: bool = False):
        """Encodes ``src`` (S, N, E) ((N, S, E) with ``batch_first``; (S, E) unbatched). ``src_mask``
        (S, S) and ``src_key_padding_mask`` (N, S) are bool (True = masked) or additive float."""
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x), self.dropout2)
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x, self.dropout2))

    def _sa_block(self, x, mask, padding, is_causal):
        out = self.self_attn(x, x, x, attn_mask=mask, key_padding_mask=padding, need_weights=False,
                             is_causal=is_causal)[0]
        return self.dropout1(out)


class TransformerDecoderLayer(_FeedForward, record_config=True):
    """Self-attention, cross-attention over ``memory``, then a feed-forward network, each with a
    residual connection and LayerNorm, as ``torch.nn.TransformerDecoderLayer`` (arguments as
    :class:`TransformerEncoderLayer`)."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation="relu", layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None):
        super().__init__()
        self._build("TransformerDecoderLayer", d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                    batch_first, norm_first, bias, {"device": device, "dtype": dtype}, 3)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal: bool = False, memory_is_causal: bool = False):
        """Decodes ``tgt`` (T, N, E) attending to ``memory`` (S, N, E) (batch first with
        ``batch_first``). Masks as :meth:`TransformerEncoderLayer.forward`: ``tgt_mask`` (T, T),
        ``memory_mask`` (T, S), padding masks (N, T) and (N, S)."""
        x = tgt
        sa = lambda y: self.dropout1(self.self_attn(
            y, y, y, attn_mask=tgt_mask, key_padding_mask=tgt_key_padding_mask, need_weights=False,
            is_causal=tgt_is_causal)[0])
        mha = lambda y: self.dropout2(self.multihead_attn(
            y, memory, memory, attn_mask=memory_mask, key_padding_mask=memory_key_padding_mask,
            need_weights=False, is_causal=memory_is_causal)[0])
        if self.norm_first:
            x = x + sa(self.norm1(x))
            x = x + mha(self.norm2(x))
            return x + self._ff_block(self.norm3(x), self.dropout3)
        x = self.norm1(x + sa(x))
        x = self.norm2(x + mha(x))
        return self.norm3(x + self._ff_block(x, self.dropout3))


def _clones(layer, n: int, owner: str) -> ModuleList:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"[{owner}] num_layers must be an int >= 1, got {n!r}")
    return ModuleList([copy.deepcopy(layer) for _ in range(n)])


class TransformerEncoder(Module):
    """A stack of ``num_layers`` copies of ``encoder_layer`` (``layers.0``, ``layers.1``, ...) and
    an optional final ``norm``, as ``torch.nn.TransformerEncoder``. ``enable_nested_tensor`` and
    ``mask_check`` are accepted; padded positions are computed like the others (PyTorch's nested
    fast path, taken in eval mode, returns zeros there instead)."""

    def __init__(self, encoder_layer, num_layers: int, norm=None, enable_nested_tensor: bool = True,
                 mask_check: bool = True):
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers, "TransformerEncoder")
        self.num_layers, self.norm = num_layers, norm

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        """Runs every layer on ``src`` with the same masks, then ``norm``."""
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask, is_causal=bool(is_causal))
        return self.norm(x) if self.norm is not None else x


class TransformerDecoder(Module):
    """A stack of ``num_layers`` copies of ``decoder_layer`` and an optional final ``norm``, as
    ``torch.nn.TransformerDecoder``."""

    def __init__(self, decoder_layer, num_layers: int, norm=None):
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers, "TransformerDecoder")
        self.num_layers, self.norm = num_layers, norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal: bool = False):
        """Runs every layer on ``tgt`` against ``memory`` with the same masks, then ``norm``."""
        x = tgt
        for layer in self.layers:
            x = layer(x, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                      tgt_key_padding_mask=tgt_key_padding_mask, memory_key_padding_mask=memory_key_padding_mask,
                      tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal)
        return self.norm(x) if self.norm is not None else x


# ----- torch.nn.Transformer's encoder-decoder (what sneppx_nn.Transformer builds when called as PyTorch's) -----
def build_encoder_decoder(module: Module, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                          num_decoder_layers: int = 6, dim_feedforward: int = 2048, dropout: float = 0.1,
                          activation="relu", custom_encoder=None, custom_decoder=None, layer_norm_eps: float = 1e-5,
                          batch_first: bool = False, norm_first: bool = False, bias: bool = True, device=None,
                          dtype=None) -> None:
    """Gives ``module`` ``torch.nn.Transformer``'s ``encoder`` and ``decoder`` (stacks of layers with a final
    LayerNorm, or the custom ones), its attributes (``d_model``, ``nhead``, ``batch_first``) and its
    initialisation (Xavier-uniform for every matrix)."""
    kw = {"device": device, "dtype": dtype}
    layer_args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first, norm_first, bias)
    module.encoder = custom_encoder if custom_encoder is not None else TransformerEncoder(
        TransformerEncoderLayer(*layer_args, **kw), num_encoder_layers,
        LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
    module.decoder = custom_decoder if custom_decoder is not None else TransformerDecoder(
        TransformerDecoderLayer(*layer_args, **kw), num_decoder_layers,
        LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
    module.d_model, module.nhead, module.batch_first = d_model, nhead, batch_first
    reset_encoder_decoder(module)


def reset_encoder_decoder(module: Module) -> None:
    """``torch.nn.Transformer``'s initialisation: Xavier-uniform for every parameter of two or more dims."""
    for p in module.parameters():
        if p.dim() > 1:
            init.xavier_uniform_(p)


def encoder_decoder_forward(module: Module, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                            src_key_padding_mask=None, tgt_key_padding_mask=None, memory_key_padding_mask=None,
                            src_is_causal=None, tgt_is_causal=None, memory_is_causal: bool = False):
    """``torch.nn.Transformer.forward``: encodes ``src`` and decodes ``tgt`` against it."""
    batched = src.dim() == 3
    if batched and src.shape[0 if module.batch_first else 1] != tgt.shape[0 if module.batch_first else 1]:
        raise RuntimeError(f"[Transformer] the batch number of src and tgt must be equal, got shapes "
                           f"{tuple(src.shape)} and {tuple(tgt.shape)}")
    if src.shape[-1] != module.d_model or tgt.shape[-1] != module.d_model:
        raise RuntimeError(f"[Transformer] the feature number of src and tgt must be equal to d_model "
                           f"({module.d_model}), got shapes {tuple(src.shape)} and {tuple(tgt.shape)}")
    memory = module.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal)
    return module.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                          tgt_key_padding_mask=tgt_key_padding_mask, memory_key_padding_mask=memory_key_padding_mask,
                          tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)


def square_subsequent_mask(sz: int, device=None, dtype=None):
    """A (sz, sz) float mask: 0 on and below the diagonal, -inf above (PyTorch's
    ``Transformer.generate_square_subsequent_mask``)."""
    return sx.triu(sx.full((sz, sz), float("-inf"), dtype=dtype or sx.float32, device=device), diagonal=1)
