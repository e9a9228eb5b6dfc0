"""Loss functions of ``sneppx_core.functional`` (fused C++ kernels, PyTorch signatures).

Every loss takes ``reduction`` = "mean" | "sum" | "none" (``kl_div`` also "batchmean"); the
deprecated ``size_average`` / ``reduce`` arguments are accepted and mapped as PyTorch does.
"""

from __future__ import annotations

from ._backend import _C

_nn = _C._nn


def _reduction(size_average, reduce, reduction):
    """PyTorch's mapping of the legacy flags onto ``reduction``."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return ("mean" if size_average else "sum") if reduce else "none"


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """Cross entropy between logits and class indices or class probabilities.

    Logits are (C,), (N, C) or (N, C, d1, ...); class-index targets have the logits' shape without C
    (a 0-d target for (C,) logits); probability targets have the logits' shape. With
    lp = log_softmax(x) over C, class weights w (default 1) and smoothing e:

    * class index y: loss = (1 - e) * (-w_y lp_y) + e / C * (-sum_c w_c lp_c); rows with
      y == ignore_index give 0. "mean" divides the sum by sum of w_y over the non-ignored rows.
    * probabilities p: loss = -sum_c w_c ((1 - e) p_c + e / C) lp_c; "mean" divides by the row count.

    Fused: the forward reads the logits once (row max, then sum of exponentials) and keeps only the
    per-row log-sum-exp; the backward writes dx = g * (softmax * A - B) directly, so no softmax of the
    logits is ever stored. Finite for logits of any finite magnitude.
    """
    return _nn.cross_entropy(input, target, weight, int(ignore_index), _reduction(size_average, reduce, reduction),
                             float(label_smoothing))


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """Negative log-likelihood of class indices: loss = -w_y * input[y] per row (input: log-probabilities).

    Shapes as in ``cross_entropy`` with class-index targets; "mean" divides by the summed target weights.
    """
    return _nn.nll_loss(input, target, weight, int(ignore_index), _reduction(size_average, reduce, reduction))


def _pointwise(kind, op, input, target, extra, weight, reduction, beta=0.0):
    for name, t in (("input", input), ("target", target)):
        if not isinstance(t, _C.Tensor):
            raise TypeError(f"[{op}] {name} must be a Tensor, got {type(t).__name__}")
    return _nn.pointwise_loss(kind, input, target, extra, weight, reduction, float(beta), op)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error: l = (x - t)^2 elementwise (times ``weight`` when given), then reduced."""
    return _pointwise("mse", "mse_loss", input, target, None, weight, _reduction(size_average, reduce, reduction))


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Mean absolute error: l = |x - t| elementwise, then reduced (gradient sign(x - t), 0 at ties)."""
    return _pointwise("l1", "l1_loss", input, target, None, None, _reduction(size_average, reduce, reduction))


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """Smooth L1: l = 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (d = x - t; beta=0 is L1)."""
    return _pointwise("smooth_l1", "smooth_l1_loss", input, target, None, None,
                      _reduction(size_average, reduce, reduction), beta)


def huber_loss(input, target, reduction="mean", delta=1.0):
    """Huber: l = 0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta) (d = x - t)."""
    return _pointwise("huber", "huber_loss", input, target, None, None, reduction, delta)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Binary cross entropy of probabilities x in [0, 1]: l = -w (t log x + (1 - t) log(1 - x)).

    Each log is clamped at -100 (as PyTorch does) so that x = 0 or 1 gives a finite loss.
    """
    return _pointwise("bce", "binary_cross_entropy", input, target, None, weight,
                      _reduction(size_average, reduce, reduction))


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    """Binary cross entropy on logits, computed stably.

    l = w ((1 - t) x + (1 + (pw - 1) t) log(1 + exp(-x))) with pos_weight pw (broadcast along the
    last dim, default 1); log(1 + exp(-x)) = max(-x, 0) + log1p(exp(-|x|)).
    """
    return _pointwise("bce_logits", "binary_cross_entropy_with_logits", input, target, pos_weight, weight,
                      _reduction(size_average, reduce, reduction))


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """Kullback-Leibler divergence with ``input`` = log q: l = t (log t - input), 0 where t = 0, NaN where
    t < 0 (PyTorch's xlogy(t, t) - t input; the target's gradient log t + 1 - input is NaN at t = 0).

    ``log_target=True`` takes target = log t: l = exp(target) (target - input). "batchmean" divides
    the sum by input.size(0) (the mathematically correct KL); "mean" divides by the element count.
    """
    return _pointwise("kl_div_log" if log_target else "kl_div", "kl_div", input, target, None, None,
                      _reduction(size_average, reduce, reduction))
