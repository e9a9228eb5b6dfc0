"""Loss modules over the fused loss functions of ``sneppx_core.functional``.

Every loss takes ``reduction``: "none" (per-element losses), "mean" (default) or "sum"; "mean"
and "sum" return 0-d tensors. Class weights (``weight``, ``pos_weight``) are buffers, so they
appear in ``state_dict`` and follow ``to``.
"""

from __future__ import annotations

import warnings

from sneppx_core import Tensor
import sneppx_core.functional as F

from .module import Module

_REDUCTIONS = ("none", "mean", "sum")


class _Loss(Module, record_config=True):
    """Base class: validates and stores ``reduction``."""

    _reductions = _REDUCTIONS

    def __init__(self, reduction: str = "mean"):
        super().__init__()
        if reduction not in self._reductions:
            raise ValueError(f"[{type(self).__name__}] reduction must be one of {self._reductions}, got {reduction!r}")
        self.reduction = reduction

    def extra_repr(self) -> str:
        return "" if self.reduction == "mean" else f"reduction={self.reduction!r}"


def _legacy_reduction(module, size_average, reduce, reduction: str) -> str:
    """The reduction chosen by PyTorch's deprecated ``size_average``/``reduce`` constructor flags: when either is
    given (None counts as true), ``reduce=False`` gives "none", else ``size_average=False`` "sum", else "mean",
    with a DeprecationWarning at the constructor's caller; ``reduction`` when both are None."""
    if size_average is None and reduce is None:
        return reduction
    keep_mean, keep_reduce = size_average is None or size_average, reduce is None or reduce
    reduction = "mean" if keep_mean and keep_reduce else "sum" if keep_reduce else "none"
    warnings.warn(f"[{type(module).__name__}] size_average and reduce are deprecated, use reduction={reduction!r}",
                  DeprecationWarning, stacklevel=4)  # this helper, the loss's __init__, its config recorder
    return reduction


def _weight_buffer(module: Module, name: str, weight) -> None:
    if weight is not None and not isinstance(weight, Tensor):
        raise TypeError(f"[{type(module).__name__}] {name} must be a Tensor or None, got {type(weight).__name__}")
    module.register_buffer(name, weight)


class MSELoss(_Loss):
    """Mean squared error: l_i = (x_i - y_i)^2."""

    def forward(self, input, target):
        """Reduced (input - target)^2."""
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """Mean absolute error: l_i = |x_i - y_i|."""

    def forward(self, input, target):
        """Reduced |input - target|."""
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Huber-like loss: l_i = 0.5 d^2 / beta if |d| < beta else |d| - 0.5 beta, d = x_i - y_i."""

    def __init__(self, reduction: str = "mean", beta: float = 1.0):
        super().__init__(reduction)
        if beta < 0:
            raise ValueError(f"[SmoothL1Loss] beta must be >= 0, got {beta}")
        self.beta = beta

    def forward(self, input, target):
        """Reduced smooth-L1 of input - target."""
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class CrossEntropyLoss(_Loss):
    """Cross entropy of logits against class indices (or class probabilities):

        l_n = -w_{y_n} log softmax(x_n)_{y_n}

    with ``label_smoothing`` e mixing the target with the uniform distribution (1 - e) y + e / C.
    ``reduction="mean"`` divides by the sum of the weights of the non-ignored targets; targets
    equal to ``ignore_index`` contribute nothing. Input (N, C) or (N, C, d1, ...), or (C,).
    """

    def __init__(self, weight=None, ignore_index: int = -100, reduction: str = "mean", label_smoothing: float = 0.0):
        super().__init__(reduction)
        if not 0.0 <= label_smoothing <= 1.0:
            raise ValueError(f"[CrossEntropyLoss] label_smoothing must be in [0, 1], got {label_smoothing}")
        _weight_buffer(self, "weight", weight)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input, target):
        """cross_entropy(input, target)."""
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class NLLLoss(_Loss):
    """Negative log-likelihood of log-probabilities: l_n = -w_{y_n} x_{n, y_n} (mean: weighted)."""

    def __init__(self, weight=None, ignore_index: int = -100, reduction: str = "mean"):
        super().__init__(reduction)
        _weight_buffer(self, "weight", weight)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        """nll_loss(input, target)."""
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class NLLLoss2d(NLLLoss):
    """PyTorch's deprecated alias of :class:`NLLLoss` (which handles (N, C, H, W) input itself), with its
    constructor: ``NLLLoss2d(weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean")``.
    The legacy ``size_average``/``reduce`` flags, when given, choose the reduction as in PyTorch (both true or
    None: "mean"; only ``reduce``: "sum"; ``reduce=False``: "none") with a DeprecationWarning."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None, reduction: str = "mean"):
        super().__init__(weight, ignore_index, _legacy_reduction(self, size_average, reduce, reduction))


class BCELoss(_Loss):
    """Binary cross entropy of probabilities: l_i = -w_i (y_i log x_i + (1 - y_i) log(1 - x_i))
    (logs clamped at -100, as in PyTorch)."""

    def __init__(self, weight=None, reduction: str = "mean"):
        super().__init__(reduction)
        _weight_buffer(self, "weight", weight)

    def forward(self, input, target):
        """binary_cross_entropy(input, target)."""
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Sigmoid plus binary cross entropy in one stable step:
    l_i = -w_i (p y_i log sigmoid(x_i) + (1 - y_i) log(1 - sigmoid(x_i))), p = ``pos_weight``."""

    def __init__(self, weight=None, reduction: str = "mean", pos_weight=None):
        super().__init__(reduction)
        _weight_buffer(self, "weight", weight)
        _weight_buffer(self, "pos_weight", pos_weight)

    def forward(self, input, target):
        """binary_cross_entropy_with_logits(input, target)."""
        return F.binary_cross_entropy_with_logits(input, target, weight=self.weight, reduction=self.reduction,
                                                  pos_weight=self.pos_weight)


class KLDivLoss(_Loss):
    """Kullback-Leibler divergence with log-probability input: l_i = y_i (log y_i - x_i)
    (``log_target``: target given as log y). ``reduction="batchmean"`` divides the sum by the
    batch size, which is the mathematical KL divergence."""

    _reductions = _REDUCTIONS + ("batchmean",)

    def __init__(self, reduction: str = "mean", log_target: bool = False):
        super().__init__(reduction)
        self.log_target = log_target

    def forward(self, input, target):
        """kl_div(input, target)."""
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)
