"""``Embedding``: a lookup table of learned vectors; ``EmbeddingBag``: sums, means or maxes of bags of them."""

from __future__ import annotations

import sneppx_core as sx
import sneppx_core.functional as F

from . import init
from .module import Module
from .parameter import Parameter


def _padding_idx(padding_idx, num_embeddings: int, op: str):
    if padding_idx is None:
        return None
    if not -num_embeddings <= padding_idx < num_embeddings:
        raise ValueError(f"[{op}] padding_idx {padding_idx} is out of range for num_embeddings={num_embeddings}")
    return padding_idx + num_embeddings if padding_idx < 0 else padding_idx


def _init_table(module, op, num_embeddings, embedding_dim, padding_idx, _weight, freeze, device, dtype):
    """Checks the sizes and sets the table's attributes and ``weight`` (N(0, 1) unless ``_weight`` is given)."""
    for name, v in (("num_embeddings", num_embeddings), ("embedding_dim", embedding_dim)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"[{op}] {name} must be a non-negative int, got {v!r}")
    module.num_embeddings, module.embedding_dim = num_embeddings, embedding_dim
    module.padding_idx = _padding_idx(padding_idx, num_embeddings, op)
    if _weight is None:
        module.weight = Parameter(sx.empty((num_embeddings, embedding_dim), dtype=dtype, device=device),
                                  requires_grad=not freeze)
        module.reset_parameters()
    else:
        if tuple(_weight.shape) != (num_embeddings, embedding_dim):
            raise ValueError(f"[{op}] _weight must have shape {(num_embeddings, embedding_dim)}, "
                             f"got {tuple(_weight.shape)}")
        module.weight = Parameter(_weight, requires_grad=not freeze)


class Embedding(Module, record_config=True):
    """Maps integer ids to rows of ``weight`` (num_embeddings, embedding_dim): ``y = weight[ids]``.

    Args:
        num_embeddings, embedding_dim: table size.
        padding_idx: a row that starts at zero and receives no gradient.
        max_norm, norm_type: rows looked up are renormalised in place to norm at most ``max_norm``.
        scale_grad_by_freq: scale gradients by the inverse frequency of each id in the batch.
        sparse: sparse gradients are not supported (NotImplementedError).

    ``weight`` is initialised from N(0, 1), as in PyTorch.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx=None, max_norm=None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False,
                 _weight=None, _freeze: bool = False, device=None, dtype=None):
        super().__init__()
        if sparse:
            raise NotImplementedError("[Embedding] sparse gradients are not supported; use sparse=False")
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        _init_table(self, "Embedding", num_embeddings, embedding_dim, padding_idx, _weight, _freeze, device, dtype)

    def reset_parameters(self) -> None:
        """Re-draws the table from N(0, 1) and zeroes the padding row."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with sx.no_grad():
                self.weight[self.padding_idx].fill_(0.0)

    def forward(self, input):
        """``weight[input]``: output shape ``input.shape + (embedding_dim,)``."""
        if self.max_norm is not None:
            self._renorm(input)
        if not self.scale_grad_by_freq:
            return F.embedding(input, self.weight, self.padding_idx)
        return F.embedding(input, self.weight, self.padding_idx, scale_grad_by_freq=True)

    def _renorm(self, input) -> None:
        """Scales the looked-up rows whose ``norm_type``-norm exceeds ``max_norm`` down to
        ``max_norm / (norm + 1e-7)`` times themselves, in place (as PyTorch does)."""
        with sx.no_grad():
            ids = input.reshape((-1,)).long()
            rows = self.weight[ids]
            norms = rows.norm(self.norm_type, -1, True)
            scale = sx.where(norms > self.max_norm, self.max_norm / (norms + 1e-7), sx.ones_like(norms))
            self.weight[ids] = rows * scale

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, padding_idx=None, max_norm=None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False):
        """An Embedding holding a copy of the 2-D tensor ``embeddings`` (frozen by default)."""
        if embeddings.ndim != 2:
            raise ValueError(f"[Embedding.from_pretrained] embeddings must be 2-D, got shape {tuple(embeddings.shape)}")
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
                   _weight=embeddings, _freeze=freeze)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq:
            s += ", scale_grad_by_freq=True"
        return s


class EmbeddingBag(Module, record_config=True):
    """Sums, means or maxes (``mode``) of bags of rows of ``weight`` (num_embeddings, embedding_dim):
    ``forward(input, offsets=None, per_sample_weights=None)`` gives (B, embedding_dim).

    Bags are the rows of 2-D (B, N) ``input``, or for 1-D ``input`` the runs starting at each of the B
    ``offsets`` (B + 1 offsets with ``include_last_offset``). Empty bags give zeros; ids equal to
    ``padding_idx`` are left out (the padding row starts at zero and gets no gradient);
    ``per_sample_weights`` (mode "sum") scales each row. ``max_norm``/``norm_type`` renormalise the
    looked-up rows in place, ``scale_grad_by_freq`` divides each row's gradient by its id's count;
    ``sparse=True`` is not supported (NotImplementedError). See ``sneppx_core.functional.embedding_bag``.
    ``weight`` is initialised from N(0, 1), as in PyTorch.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm=None, norm_type: float = 2.0,
                 scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False, _weight=None,
                 include_last_offset: bool = False, padding_idx=None, device=None, dtype=None):
        super().__init__()
        if mode not in ("sum", "mean", "max"):
            raise ValueError(f"[EmbeddingBag] mode has to be one of sum, mean or max, got {mode!r}")
        if sparse:
            raise NotImplementedError("[EmbeddingBag] sparse gradients are not supported; use sparse=False")
        self.max_norm, self.norm_type, self.scale_grad_by_freq = max_norm, norm_type, scale_grad_by_freq
        self.mode, self.sparse, self.include_last_offset = mode, sparse, include_last_offset
        _init_table(self, "EmbeddingBag", num_embeddings, embedding_dim, padding_idx, _weight, False, device, dtype)

    reset_parameters = Embedding.reset_parameters

    def forward(self, input, offsets=None, per_sample_weights=None):
        """``embedding_bag(input, weight, offsets, ...)``: one row of ``embedding_dim`` values per bag."""
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type, self.scale_grad_by_freq,
                               self.mode, self.sparse, per_sample_weights, self.include_last_offset, self.padding_idx)

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, max_norm=None, norm_type: float = 2.0,
                        scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                        include_last_offset: bool = False, padding_idx=None):
        """An EmbeddingBag holding the 2-D tensor ``embeddings`` as its weight (frozen by default)."""
        if embeddings.ndim != 2:
            raise ValueError(f"[EmbeddingBag.from_pretrained] embeddings must be 2-D, got shape "
                             f"{tuple(embeddings.shape)}")
        rows, cols = embeddings.shape
        bag = cls(rows, cols, max_norm, norm_type, scale_grad_by_freq, mode, sparse, embeddings, include_last_offset,
                  padding_idx)
        bag.weight.requires_grad_(not freeze)
        return bag

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm!r}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type!r}"
        if self.scale_grad_by_freq:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq!r}"
        s += f", mode={self.mode!r}"
        return s + ("" if self.padding_idx is None else f", padding_idx={self.padding_idx!r}")
