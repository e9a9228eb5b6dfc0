"""Losses of ``sneppx_core.functional`` composed from differentiable core ops (PyTorch signatures):
margin_ranking_loss, cosine_embedding_loss, triplet_margin_loss (and with a distance function),
hinge_embedding_loss, soft_margin_loss, multilabel_soft_margin_loss, multi_margin_loss,
multilabel_margin_loss, pairwise_distance, cosine_similarity, poisson_nll_loss, gaussian_nll_loss and ctc_loss."""

from __future__ import annotations

import math

import numpy as np

from ._backend import _C
from ._C_face import Tensor
from ._factories import arange, full_like
from ._functional_losses import _reduction


def _reduce(loss, reduction, op):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"[{op}] reduction must be 'none', 'mean' or 'sum', got {reduction!r}")


def _same_shape(op, **tensors):
    shapes = {k: tuple(v.shape) for k, v in tensors.items() if isinstance(v, Tensor)}
    if len(shapes) < len(tensors):
        bad = [k for k, v in tensors.items() if not isinstance(v, Tensor)]
        raise TypeError(f"[{op}] {', '.join(bad)} must be Tensors")
    if len(set(shapes.values())) > 1:
        raise ValueError(f"[{op}] shapes must match, got " + ", ".join(f"{k} {s}" for k, s in shapes.items()))


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """``max(0, -y (x1 - x2) + margin)`` with ``y`` = 1 or -1 (which input should rank higher)."""
    _same_shape("margin_ranking_loss", input1=input1, input2=input2, target=target)
    loss = _C.clamp(-target * (input1 - input2) + margin, 0.0, None)
    return _reduce(loss, _reduction(size_average, reduce, reduction), "margin_ranking_loss")


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """``1 - cos(x1, x2)`` where ``y == 1`` and ``max(0, cos(x1, x2) - margin)`` where ``y == -1``,
    with ``cos = x1.x2 / sqrt((|x1|^2 + 1e-12)(|x2|^2 + 1e-12))`` over the last dim."""
    _same_shape("cosine_embedding_loss", input1=input1, input2=input2)
    if input1.ndim not in (1, 2) or tuple(target.shape) != tuple(input1.shape[:-1]):
        raise ValueError(f"[cosine_embedding_loss] expected inputs (N, D) or (D,) and target (N,) or (), got "
                         f"{tuple(input1.shape)} and {tuple(target.shape)}")
    eps = 1e-12
    cos = (input1 * input2).sum(-1) / _C.sqrt(((input1 * input1).sum(-1) + eps) * ((input2 * input2).sum(-1) + eps))
    loss = _C.where(target == 1, 1 - cos, 0.0) + _C.where(target == -1, _C.clamp(cos - margin, 0.0, None), 0.0)
    return _reduce(loss, _reduction(size_average, reduce, reduction), "cosine_embedding_loss")


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """``||x1 - x2 + eps||_p`` over the last dim."""
    d = _C.abs(x1 - x2 + eps)
    if p == math.inf:
        return _C.amax(d, [-1], keepdim)
    return (d ** p).sum(-1, keepdim) ** (1.0 / p)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """``x1.x2 / max(|x1| |x2|, eps)`` along ``dim``."""
    n1 = _C.sqrt((x1 * x1).sum(dim))
    n2 = _C.sqrt((x2 * x2).sum(dim))
    return (x1 * x2).sum(dim) / _C.clamp(n1 * n2, eps, None)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """``max(d(a, p) - d(a, n) + margin, 0)`` with ``d`` = :func:`pairwise_distance`; with ``swap``
    the negative distance is ``min(d(a, n), d(p, n))``."""
    if not (anchor.ndim == positive.ndim == negative.ndim) or anchor.ndim not in (1, 2):
        raise ValueError(f"[triplet_margin_loss] expected anchor, positive and negative all (N, D) or (D,), got "
                         f"{tuple(anchor.shape)}, {tuple(positive.shape)} and {tuple(negative.shape)}")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = _C.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    loss = _C.clamp(margin + d_pos - d_neg, 0.0, None)
    return _reduce(loss, _reduction(size_average, reduce, reduction), "triplet_margin_loss")


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False,
                                      reduction="mean"):
    """:func:`triplet_margin_loss` with ``d = distance_function`` (default :func:`pairwise_distance`)."""
    d = distance_function if distance_function is not None else pairwise_distance
    d_pos, d_neg = d(anchor, positive), d(anchor, negative)
    if swap:
        d_neg = _C.minimum(d_neg, d(positive, negative))
    loss = _C.clamp(margin + d_pos - d_neg, 0.0, None)
    return _reduce(loss, reduction, "triplet_margin_with_distance_loss")


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """``x`` where ``y == 1`` and ``max(0, margin - x)`` where ``y == -1`` (both where y is neither)."""
    _same_shape("hinge_embedding_loss", input=input, target=target)
    loss = _C.where(target != 1, _C.clamp(margin - input, 0.0, None), 0.0) + _C.where(target != -1, input, 0.0)
    return _reduce(loss, _reduction(size_average, reduce, reduction), "hinge_embedding_loss")


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """``log(1 + exp(-y x))`` for targets ``y`` of 1 or -1."""
    _same_shape("soft_margin_loss", input=input, target=target)
    loss = _C.softplus(-target * input, 1.0, 20.0)
    return _reduce(loss, _reduction(size_average, reduce, reduction), "soft_margin_loss")


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """``-(y log sigmoid(x) + (1 - y) log sigmoid(-x))`` (times ``weight``) averaged over the classes (last dim)
    of (N, C) or (C,) input, for 0/1 targets."""
    _same_shape("multilabel_soft_margin_loss", input=input, target=target)
    loss = -(target * _C.logsigmoid(input) + (1 - target) * _C.logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(-1) / input.shape[-1]
    return _reduce(loss, _reduction(size_average, reduce, reduction), "multilabel_soft_margin_loss")


def _class_rows(op, input, target):
    # (N, C) input with a batch dim, (N,) or (N, C) target, and whether the batch dim was added.
    if input.ndim not in (1, 2):
        raise ValueError(f"[{op}] expected (N, C) or (C,) input, got shape {tuple(input.shape)}")
    if input.ndim == 1:
        return input.unsqueeze(0), target.reshape((1, -1)), True
    return input, target, False


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction="mean"):
    """``sum over i != y of max(0, margin - x[y] + x[i]) ** p / C`` (times ``weight[y]``) per sample of (N, C)
    or (C,) input with class targets ``y``; p is 1 or 2."""
    if p not in (1, 2):
        raise ValueError(f"[multi_margin_loss] p must be 1 or 2, got {p}")
    x, y, added = _class_rows("multi_margin_loss", input, target)
    n, c = x.shape
    y = y.reshape((n, 1))
    if y.numel() and (int(y.min()) < 0 or int(y.max()) >= c):
        raise ValueError(f"[multi_margin_loss] targets must lie in [0, {c}), got [{int(y.min())}, {int(y.max())}]")
    m = _C.clamp(margin - x.gather(1, y) + x, 0.0, None)
    m = m * m if p == 2 else m
    if weight is not None:
        m = m * weight.gather(0, y.reshape((-1,))).reshape((n, 1))
    loss = _C.where(arange(c, device=x.device) == y, 0.0, m).sum(1) / c
    return _reduce(loss.squeeze(0) if added else loss, _reduction(size_average, reduce, reduction), "multi_margin_loss")


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """``sum over targets j and non-targets i of max(0, 1 - (x[j] - x[i])) / C`` per sample of (N, C) or (C,)
    input; each row of ``target`` lists class indices up to its first -1."""
    x, y, added = _class_rows("multilabel_margin_loss", input, target)
    n, c = x.shape
    if tuple(y.shape) != (n, c):
        raise ValueError(f"[multilabel_margin_loss] target {tuple(target.shape)} must have the shape of input "
                         f"{tuple(input.shape)}")
    ids = y.cpu().numpy()
    count = np.zeros((n, c))  # how often each class is listed before the row's first -1
    for r in range(n):
        for j in ids[r]:
            if j < 0:
                break
            if j >= c:
                raise ValueError(f"[multilabel_margin_loss] target {j} is not a class of {c}")
            count[r, j] += 1
    is_target = Tensor(count > 0).to(x.device)
    count_t = Tensor(count).to(x.device, x.dtype)
    hinge = _C.clamp(1 - x.unsqueeze(2) + x.unsqueeze(1), 0.0, None)  # [r, j, i]: 1 - (x[j] - x[i])
    loss = (hinge * count_t.unsqueeze(2)).masked_fill(is_target.unsqueeze(1), 0.0).sum((1, 2)) / c
    return _reduce(loss.squeeze(0) if added else loss, _reduction(size_average, reduce, reduction),
                   "multilabel_margin_loss")


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """Poisson negative log-likelihood: ``exp(x) - y x`` (``log_input``) or ``x - y log(x + eps)``;
    ``full`` adds Stirling's ``y log y - y + log(2 pi y) / 2`` where ``y > 1``."""
    loss = _C.exp(input) - target * input if log_input else input - target * _C.log(input + eps)
    if full:
        # not detached, as in PyTorch: the target gets the term's gradient log(y) + 1 / (2 y) where y > 1,
        # and 0 * (that gradient) elsewhere, which is NaN at y <= 0 as there
        stirling = target * _C.log(target) - target + 0.5 * _C.log(2 * math.pi * target)
        loss = loss + _C.where(target <= 1, 0.0, stirling)
    return _reduce(loss, _reduction(size_average, reduce, reduction), "poisson_nll_loss")


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """Gaussian negative log-likelihood ``(log(var) + (x - y)^2 / var) / 2`` (+ ``log(2 pi) / 2`` with
    ``full``). ``var`` has the input's shape, or lacks its last dim, or has 1 there; it is clamped
    to at least ``eps`` without changing its gradient, as in PyTorch."""
    if isinstance(var, (int, float)):
        var = full_like(input, float(var))
    if var.ndim == input.ndim - 1 and tuple(var.shape) == tuple(input.shape[:-1]):
        var = var.unsqueeze(-1)
    elif var.ndim != input.ndim or any(v not in (i, 1) for v, i in zip(var.shape, input.shape)):
        raise ValueError(f"[gaussian_nll_loss] var of shape {tuple(var.shape)} does not fit input "
                         f"{tuple(input.shape)}")
    if _C.any(var < 0).item():
        raise ValueError("[gaussian_nll_loss] var has negative entries")
    v = var.detach()
    var = var + (_C.clamp(v, eps, None) - v)  # the clamp changes the value, not the gradient
    loss = 0.5 * (_C.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction, "gaussian_nll_loss")


_UNREACHABLE = -1.0e5  # log-probability of states no alignment reaches (finite, so gradients stay finite)


def _logsumexp3(a, b, c):
    m = _C.maximum(_C.maximum(a, b), c).detach()
    return m + _C.log(_C.exp(a - m) + _C.exp(b - m) + _C.exp(c - m))


def _shift(x, k):
    pad = x.detach().narrow(1, 0, k) * 0 + _UNREACHABLE
    return _C.cat([pad, x.narrow(1, 0, x.shape[1] - k)], 1)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """Connectionist temporal classification loss: ``-log`` of the total probability of every
    alignment of ``targets`` to ``log_probs`` (T, N, C) (log-softmax output), blanks in between.

    ``targets`` is (N, S) padded or the 1-d concatenation of all targets; lengths are sequences or
    1-d tensors. "mean" divides each loss by its target length, then averages over the batch.
    Computed by the forward (alpha) recursion over the extended label sequence with core ops, so
    the gradient comes from autograd. Impossible alignments give inf (0 with ``zero_infinity``).
    """
    if log_probs.ndim != 3:
        raise ValueError(f"[ctc_loss] log_probs must be (T, N, C), got shape {tuple(log_probs.shape)}")
    T, N, C = log_probs.shape
    in_len = [int(v) for v in (input_lengths.tolist() if isinstance(input_lengths, Tensor) else input_lengths)]
    tg_len = [int(v) for v in (target_lengths.tolist() if isinstance(target_lengths, Tensor) else target_lengths)]
    if len(in_len) != N or len(tg_len) != N or max(in_len) > T:
        raise ValueError(f"[ctc_loss] need {N} input lengths <= {T} and {N} target lengths, got {in_len} and {tg_len}")
    flat = np.asarray(targets.tolist(), dtype=np.int64)
    S = max(max(tg_len), 1)
    labels = np.full((N, S), blank, np.int64)
    start = 0
    for n, k in enumerate(tg_len):  # padded (N, S) rows or the concatenated 1-d form
        labels[n, :k] = flat[n, :k] if flat.ndim == 2 else flat[start:start + k]
        start += k
    ext = np.full((N, 2 * S + 1), blank, np.int64)
    ext[:, 1::2] = labels
    skip = np.zeros_like(ext, dtype=bool)
    skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
    ext_t = Tensor(ext)
    lp = log_probs.gather(2, ext_t.unsqueeze(0).broadcast_to((T, N, 2 * S + 1)))
    skip_t = Tensor(skip)
    first = np.full((N, 2 * S + 1), False)
    first[:, :2] = True
    alpha = _C.where(Tensor(first), lp.select(0, 0), _UNREACHABLE)
    steps = Tensor(np.arange(T)[:, None] < np.asarray(in_len)[None, :])  # (T, N): still inside the input
    for t in range(1, T):
        new = _logsumexp3(alpha, _shift(alpha, 1), _C.where(skip_t, _shift(alpha, 2), _UNREACHABLE)) + lp.select(0, t)
        alpha = _C.where(steps.select(0, t).unsqueeze(1), new, alpha)
    ends = Tensor(np.stack([2 * np.asarray(tg_len), np.maximum(2 * np.asarray(tg_len) - 1, 0)], 1))
    last = alpha.gather(1, ends)
    last_b, last_l = last.select(1, 0), last.select(1, 1)
    total = _C.where(Tensor(np.asarray(tg_len) > 0), _logsumexp3(last_b, last_l, last_b * 0 + _UNREACHABLE), last_b)
    loss = -total
    impossible = loss.detach() > -_UNREACHABLE / 2
    loss = _C.where(impossible, 0.0 if zero_infinity else math.inf, loss)
    if reduction == "mean":
        return (loss / Tensor(np.maximum(np.asarray(tg_len), 1)).to(loss.dtype)).mean()
    return _reduce(loss, reduction, "ctc_loss")


__all__ = ["ctc_loss", "margin_ranking_loss", "cosine_embedding_loss", "pairwise_distance", "cosine_similarity",
           "triplet_margin_loss", "triplet_margin_with_distance_loss", "hinge_embedding_loss", "soft_margin_loss",
           "multilabel_soft_margin_loss", "multi_margin_loss", "multilabel_margin_loss", "poisson_nll_loss",
           "gaussian_nll_loss"]
