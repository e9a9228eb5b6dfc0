"""More ``torch.nn`` losses: HuberLoss, MarginRankingLoss, CosineEmbeddingLoss, TripletMarginLoss (and with a
distance function), HingeEmbeddingLoss, SoftMarginLoss, MultiLabelSoftMarginLoss, MultiMarginLoss,
MultiLabelMarginLoss, PoissonNLLLoss, GaussianNLLLoss and CTCLoss (maths in ``sneppx_core.functional``).

Those that take PyTorch's deprecated ``size_average``/``reduce`` flags let them choose the reduction as PyTorch
does (see ``loss._legacy_reduction``), with a DeprecationWarning."""

from __future__ import annotations

import sneppx_core.functional as F

from .loss import _legacy_reduction, _Loss, _weight_buffer


class HuberLoss(_Loss):
    """``0.5 (x - y)^2`` where ``|x - y| < delta``, else ``delta (|x - y| - 0.5 delta)``."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        super().__init__(reduction)
        self.delta = delta

    def forward(self, input, target):
        """The loss of ``input`` against ``target`` (same shape)."""
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class MarginRankingLoss(_Loss):
    """``max(0, -y (x1 - x2) + margin)`` for targets ``y`` of 1 or -1."""

    def __init__(self, margin: float = 0.0, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(_legacy_reduction(self, size_average, reduce, reduction))
        self.margin = margin

    def forward(self, input1, input2, target):
        """The loss for the pairs ``(input1, input2)`` ranked by ``target``."""
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class CosineEmbeddingLoss(_Loss):
    """``1 - cos(x1, x2)`` for ``y = 1`` and ``max(0, cos(x1, x2) - margin)`` for ``y = -1``."""

    def __init__(self, margin: float = 0.0, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(_legacy_reduction(self, size_average, reduce, reduction))
        self.margin = margin

    def forward(self, input1, input2, target):
        """The loss of the pairs of rows of ``input1`` and ``input2``."""
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """``max(d(a, p) - d(a, n) + margin, 0)`` with the p-norm distance ``d`` (``swap``: the
    negative distance is the smaller of ``d(a, n)`` and ``d(p, n)``)."""

    def __init__(self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6, swap: bool = False,
                 size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(_legacy_reduction(self, size_average, reduce, reduction))
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor, positive, negative):
        """The loss of the triplets (rows of ``anchor``, ``positive``, ``negative``)."""
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p, eps=self.eps,
                                     swap=self.swap, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """TripletMarginLoss with ``distance_function(x, y)`` (default the pairwise 2-norm distance)."""

    def __init__(self, *, distance_function=None, margin: float = 1.0, swap: bool = False, reduction: str = "mean"):
        super().__init__(reduction)
        self.distance_function, self.margin, self.swap = distance_function, margin, swap

    def forward(self, anchor, positive, negative):
        """The loss of the triplets (rows of ``anchor``, ``positive``, ``negative``)."""
        return F.triplet_margin_with_distance_loss(anchor, positive, negative, distance_function=self.distance_function,
                                                   margin=self.margin, swap=self.swap, reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    """``x`` where ``y == 1`` and ``max(0, margin - x)`` where ``y == -1``."""

    def __init__(self, margin: float = 1.0, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(_legacy_reduction(self, size_average, reduce, reduction))
        self.margin = margin

    def forward(self, input, target):
        """The loss of ``input`` (distances) for targets of 1 or -1."""
        return F.hinge_embedding_loss(input, target, margin=self.margin, reduction=self.reduction)


class SoftMarginLoss(_Loss):
    """``log(1 + exp(-y x))`` for targets ``y`` of 1 or -1."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(_legacy_reduction(self, size_average, reduce, reduction))

    def forward(self, input, target):
        """The loss of ``input`` for targets of 1 or -1."""
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_Loss):
    """Binary cross-entropy of sigmoid(x) per class (times ``weight``), averaged over the classes."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(_legacy_reduction(self, size_average, reduce, reduction))
        _weight_buffer(self, "weight", weight)

    def forward(self, input, target):
        """The loss of (N, C) logits for 0/1 targets."""
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight, reduction=self.reduction)


class MultiMarginLoss(_Loss):
    """Multi-class hinge loss: ``sum over i != y of max(0, margin - x[y] + x[i]) ** p / C`` (times ``weight[y]``)."""

    def __init__(self, p: int = 1, margin: float = 1.0, weight=None, size_average=None, reduce=None,
                 reduction: str = "mean"):
        super().__init__(_legacy_reduction(self, size_average, reduce, reduction))
        if p not in (1, 2):
            raise ValueError(f"[MultiMarginLoss] p must be 1 or 2, got {p}")
        self.p, self.margin = p, margin
        _weight_buffer(self, "weight", weight)

    def forward(self, input, target):
        """The loss of (N, C) scores for class targets."""
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin, weight=self.weight,
                                   reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    """Multi-label hinge loss between each listed target class and each other class, averaged over the classes."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(_legacy_reduction(self, size_average, reduce, reduction))

    def forward(self, input, target):
        """The loss of (N, C) scores for target rows of class indices ending at their first -1."""
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class PoissonNLLLoss(_Loss):
    """Poisson negative log-likelihood: ``exp(x) - y x`` (``log_input``) or ``x - y log(x + eps)``,
    plus Stirling's term with ``full``."""

    def __init__(self, log_input: bool = True, full: bool = False, size_average=None, eps: float = 1e-8,
                 reduce=None, reduction: str = "mean"):
        super().__init__(_legacy_reduction(self, size_average, reduce, reduction))
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input, target):
        """The loss of predictions ``log_input`` against counts ``target``."""
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full, eps=self.eps,
                                  reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """Gaussian negative log-likelihood ``(log(var) + (x - y)^2 / var) / 2`` (``var`` clamped to
    at least ``eps``; ``full`` adds ``log(2 pi) / 2``)."""

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean"):
        super().__init__(reduction)
        self.full, self.eps = full, eps

    def forward(self, input, target, var):
        """The loss of means ``input`` with variances ``var`` against ``target``."""
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps, reduction=self.reduction)


class CTCLoss(_Loss):
    """Connectionist temporal classification loss (see ``sneppx_core.functional.ctc_loss``)."""

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False):
        super().__init__(reduction)
        self.blank, self.zero_infinity = blank, zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        """The loss of ``log_probs`` (T, N, C) against ``targets`` with the given lengths."""
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=self.blank,
                          reduction=self.reduction, zero_infinity=self.zero_infinity)
