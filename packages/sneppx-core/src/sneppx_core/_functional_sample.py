"""More of ``torch.nn.functional`` for ``sneppx_core.functional``, composed of core ops: ``embedding_bag``
(sums, means or maxes of bags of embedding rows), ``pdist``, and the random ``rrelu``, ``alpha_dropout``,
``feature_alpha_dropout``, ``dropout3d`` and ``gumbel_softmax``; all differentiable through what they are
built from. The random ones draw from the default generator (``sneppx_core.manual_seed``).
"""

from __future__ import annotations

import math
import warnings

from ._backend import _C
from ._C_face import int32, int64
from ._factories import arange, empty_like, ones, rand, rand_like, tensor, zeros, zeros_like
from ._functional_composed import _act, _channel_dropout, _feature_mask_shape, _probability
from ._grad_mode import no_grad
from ._tensor_extra import triu_indices

_SELU_SATURATION = 1.7580993408473766  # selu(x) tends to -scale * alpha = -1.7581 as x -> -inf


def _describe(t):
    return f"{t.dtype.name} tensor of shape {tuple(t.shape)}"


def _floating(input, op, name="input"):
    if not input.is_floating_point():
        raise TypeError(f"[{op}] {name} must be a floating tensor, got {_describe(input)}")


def _bag_bounds(input, offsets, include_last_offset):
    """The boundaries of the B bags as B + 1 ints (bag b is ids[bounds[b]:bounds[b + 1]])."""
    op, n = "embedding_bag", input.numel()
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError(f"[{op}] offsets must be None for 2-D input of shape {tuple(input.shape)} (each row is "
                             f"a bag), got {_describe(offsets)}")
        return list(range(0, n + 1, input.shape[1])) if input.shape[1] else [0] * (input.shape[0] + 1)
    if input.ndim != 1:
        raise ValueError(f"[{op}] input must be 1-D (with offsets) or 2-D (bags of equal length), got shape "
                         f"{tuple(input.shape)}")
    if offsets is None or offsets.ndim != 1 or offsets.dtype not in (int32, int64):
        got = "None" if offsets is None else _describe(offsets)
        raise ValueError(f"[{op}] 1-D input needs offsets, a 1-D int32/int64 tensor of bag starts, got {got}")
    offs = [int(v) for v in offsets.tolist()]
    if include_last_offset and not offs:
        raise ValueError(f"[{op}] include_last_offset needs at least one offset, got offsets of shape (0,)")
    if offs and (offs[0] != 0 or offs != sorted(offs) or offs[-1] > n):
        shown = ", ".join(map(str, offs[:8])) + (", ..." if len(offs) > 8 else "")
        raise ValueError(f"[{op}] offsets must start at 0, never decrease and not exceed the input's length {n}, "
                         f"got [{shown}]")
    if include_last_offset:  # as in PyTorch, the last offset is checked but the last bag runs to the end
        offs = offs[:-1]
    return offs + [n] if offs else [0]


def _renorm_rows(weight, ids, max_norm, norm_type):
    """Scales the rows of ``weight`` that ``ids`` picks and whose norm exceeds ``max_norm`` down to norm
    ``max_norm`` (times ``max_norm / (norm + 1e-7)``), in place and unrecorded, as PyTorch does."""
    with no_grad():
        rows = weight.index_select(0, ids)
        norms = _C.norm(rows, float(norm_type), -1, True)
        weight[ids] = rows * _C.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)


def _check_bag_args(input, weight, mode, sparse, scale_grad_by_freq, per_sample_weights, padding_idx):
    """Raises for bad arguments of :func:`embedding_bag`; returns ``padding_idx`` made non-negative."""
    op = "embedding_bag"
    if input.dtype not in (int32, int64):
        raise TypeError(f"[{op}] input must hold int32/int64 ids, got {_describe(input)}")
    _floating(weight, op, "weight")
    if weight.ndim != 2:
        raise ValueError(f"[{op}] weight must be 2-D (num_embeddings, dim), got shape {tuple(weight.shape)}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"[{op}] mode has to be one of sum, mean or max, got {mode!r}")
    if mode == "max" and (scale_grad_by_freq or sparse):
        raise ValueError(f"[{op}] max mode does not support scale_grad_by_freq or sparse")
    if sparse:
        raise NotImplementedError(f"[{op}] sparse gradients are not supported; use sparse=False")
    if per_sample_weights is not None:
        if tuple(per_sample_weights.shape) != tuple(input.shape) or per_sample_weights.dtype != weight.dtype:
            raise ValueError(f"[{op}] per_sample_weights must be shaped like input {tuple(input.shape)} with the "
                             f"dtype of weight ({weight.dtype.name}), got {_describe(per_sample_weights)}")
        if mode != "sum":
            raise NotImplementedError(f"[{op}] per_sample_weights is only supported for mode='sum', got {mode!r}")
    num = weight.shape[0]
    if padding_idx is None:
        return None
    if not -num <= padding_idx < num:
        raise ValueError(f"[{op}] padding_idx must be within -{num}..{num - 1} for {num} embeddings, got {padding_idx}")
    return padding_idx + num if padding_idx < 0 else padding_idx


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Sums, means or maxes (``mode``) of bags of rows of ``weight`` (num_embeddings, dim): (B, dim).

    Bags: the rows of 2-D (B, N) ``input``, or for 1-D ``input`` the runs starting at each of the B
    ``offsets`` (the first 0), the last one running to the end of ``input``. With ``include_last_offset``
    there are B + 1 offsets, the last one normally the input's length (as in PyTorch, a smaller one does
    not shorten the last bag). Empty bags give zeros. Ids equal to ``padding_idx`` are left out of their
    bag (and out of mean's count) and their row gets no gradient. ``per_sample_weights`` (shaped like
    ``input``, mode "sum" only) multiplies each row before the sum. ``max_norm`` first renormalises the
    rows that ``input`` picks, in place. ``scale_grad_by_freq`` divides each row's gradient by its id's
    count in ``input``. Computed as a lookup followed by ``index_add`` (sum, mean) or ``scatter_reduce``
    "amax" (max; rows tied for a maximum share its gradient), so gradients reach ``weight`` and
    ``per_sample_weights``.
    """
    if not weight.is_floating_point() and input.is_floating_point():  # the old argument order
        warnings.warn("[embedding_bag] the argument order is (input, weight, ...); (weight, input, ...) is deprecated",
                      stacklevel=2)
        input, weight = weight, input
    padding_idx = _check_bag_args(input, weight, mode, sparse, scale_grad_by_freq, per_sample_weights, padding_idx)
    bounds = _bag_bounds(input, offsets, include_last_offset)
    (num, dim), ids, n, b = weight.shape, input.reshape((-1,)), input.numel(), len(bounds) - 1
    if n and not 0 <= int(ids.min()) <= int(ids.max()) < num:
        raise IndexError(f"[embedding_bag] ids must lie in 0..{num - 1} for a table of {num} rows, got ids from "
                         f"{int(ids.min())} to {int(ids.max())}")
    if max_norm is not None:
        _renorm_rows(weight, ids, max_norm, norm_type)
    lengths = [hi - lo for lo, hi in zip(bounds, bounds[1:])] + [n - bounds[-1]]
    bag = _C.repeat_interleave(arange(b + 1, device=ids.device), tensor(lengths, device=ids.device))
    if padding_idx is not None:  # padding ids go to the extra bag b (with any ids in no bag), dropped at the end
        bag = bag.masked_fill(ids == padding_idx, b)
    rows = _C._nn.embedding(ids, weight, None, bool(scale_grad_by_freq))
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.reshape((-1, 1))
    like = dict(dtype=weight.dtype, device=weight.device)
    if mode == "max":
        return zeros((b + 1, dim), **like).scatter_reduce(0, bag.unsqueeze(1).expand((n, dim)), rows, "amax",
                                                          include_self=False)[:b]
    out = zeros((b + 1, dim), **like).index_add(0, bag, rows)[:b]
    if mode == "sum":
        return out
    count = zeros((b + 1,), **like).index_add(0, bag, ones((n,), **like))[:b]
    return out / _C.clamp(count, 1, None).unsqueeze(1)


def pdist(input, p=2):
    """The p-norm distances between the rows of (N, M) ``input``, pairs (i, j) with i < j in row order:
    shape (N (N - 1) / 2,), the upper triangle of ``cdist(input, input, p)``.

    p = 0 counts the differing coordinates, p = inf takes the largest difference (a gradient shared by
    tied coordinates); other p >= 0 give (sum |x_i - x_j|^p)^(1/p), whose gradient is zero where a
    coordinate's difference or the distance is zero (as PyTorch's).
    """
    if input.ndim != 2:
        raise ValueError(f"[pdist] input must be 2-D (N, M), got shape {tuple(input.shape)}")
    _floating(input, "pdist")
    p = float(p)
    if not p >= 0:
        raise ValueError(f"[pdist] p must be non-negative, got {p}")
    i, j = triu_indices(input.shape[0], input.shape[0], 1, device=input.device)
    a = _C.abs(input.index_select(0, i) - input.index_select(0, j))
    if p == 0:
        return _C.where(a == 0, a, 1.0).sum(-1)
    if p == math.inf:
        return _C.amax(a, -1, False)
    zero = a == 0  # the double where keeps the gradient finite (zero) at zero differences
    s = _C.where(zero, 0.0, _C.where(zero, 1.0, a) ** p).sum(-1)
    zero = s == 0
    return _C.where(zero, 0.0, _C.where(zero, 1.0, s) ** (1.0 / p))


def _rrelu(input, lower, upper, training):
    if lower > upper:
        raise ValueError(f"[rrelu] lower {lower} must not exceed upper {upper}")
    _floating(input, "rrelu")
    if not training:
        return _C.leaky_relu(input, (lower + upper) / 2.0)
    slope = rand_like(input) * (upper - lower) + lower
    return input * _C.where(input > 0, 1.0, slope)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomized leaky ReLU: x where x > 0, else a * x.

    In training each element draws its own slope a from uniform(lower, upper) (its gradient is that
    slope); otherwise a = (lower + upper) / 2, i.e. ``leaky_relu(x, (lower + upper) / 2)``.
    """
    return _act(input, _rrelu(input, float(lower), float(upper), training), inplace)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    """In-place :func:`rrelu`."""
    return input.copy_(_rrelu(input, float(lower), float(upper), training))


def _alpha_dropout(input, p, training, inplace, feature, op):
    _probability(p, op)
    if not training or p == 0.0 or input.numel() == 0:
        return input
    _floating(input, op)
    shape = _feature_mask_shape(input, 2, op) if feature else tuple(input.shape)
    if p == 1.0:
        return _act(input, input * 0.0, inplace)
    keep = (rand(shape, dtype=input.dtype, device=input.device) < 1.0 - p).to(input.dtype)
    a = 1.0 / math.sqrt((_SELU_SATURATION ** 2 * p + 1.0) * (1.0 - p))
    out = (input * keep + (keep - 1.0) * _SELU_SATURATION) * a + _SELU_SATURATION * a * p
    return _act(input, out, inplace)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout for SELU networks: in training each element is set with probability ``p`` to SELU's
    saturation value -alpha' (alpha' = 1.7581), and then every element goes through the affine map
    a x + b with a = ((1 - p)(1 + p alpha'^2))^(-1/2) and b = a alpha' p, which keeps zero mean and
    unit variance. Identity (the input itself) when not training or ``p`` is 0; zeros when ``p`` is 1.
    """
    return _alpha_dropout(input, p, training, inplace, False, "alpha_dropout")


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """:func:`alpha_dropout` of whole channels: every element of channel (n, c) of (N, C, *) input is
    masked together."""
    return _alpha_dropout(input, p, training, inplace, True, "feature_alpha_dropout")


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zeroes whole channels of (N, C, D, H, W) or (C, D, H, W) input with probability p, scaling the rest
    by 1 / (1 - p). As in PyTorch, other ranks warn (UserWarning) and are read as unbatched (a mask per index
    of dim 0)."""
    return _channel_dropout(input, p, training, inplace, 3, "dropout3d")


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """A sample of the Gumbel-softmax distribution: softmax((logits + g) / tau) along ``dim`` with g
    standard Gumbel noise (-log of an exponential draw).

    ``hard=True`` returns the one-hot vector of the sample's argmax, differentiated as the soft sample
    (straight-through: y_hard - y_soft.detach() + y_soft). ``eps`` is deprecated and unused.
    """
    if eps != 1e-10:
        warnings.warn("[gumbel_softmax] eps is deprecated and has no effect", stacklevel=2)
    _floating(logits, "gumbel_softmax", "logits")
    if not -max(logits.ndim, 1) <= dim < max(logits.ndim, 1):
        raise IndexError(f"[gumbel_softmax] dim {dim} is out of range for logits of shape {tuple(logits.shape)}")
    gumbels = -empty_like(logits).exponential_().log()
    y = _C._nn.softmax((logits + gumbels) / tau, dim, False)
    if not hard:
        return y
    y_hard = zeros_like(logits).scatter(dim, y.argmax(dim, keepdim=True), 1.0)
    return y_hard - y.detach() + y


__all__ = [
    "embedding_bag", "pdist", "rrelu", "rrelu_", "alpha_dropout", "feature_alpha_dropout", "dropout3d",
    "gumbel_softmax",
]
