"""The log-normal distribution: ``exp`` of a normal."""

from __future__ import annotations

from . import constraints
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform


class LogNormal(TransformedDistribution):
    """``Y = exp(X)`` with ``X ~ Normal(loc, scale)``: ``loc`` and ``scale`` are the mean and standard
    deviation of ``log Y``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        super().__init__(Normal(loc, scale, validate_args=validate_args), ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """A copy with the batch expanded to ``batch_shape``."""
        return super().expand(batch_shape, _instance=self._get_checked_instance(LogNormal, _instance))

    @property
    def loc(self):
        """The mean of ``log Y``."""
        return self.base_dist.loc

    @property
    def scale(self):
        """The standard deviation of ``log Y``."""
        return self.base_dist.scale

    @property
    def mean(self):
        """``exp(loc + scale^2 / 2)``."""
        return (self.loc + self.scale.pow(2) / 2).exp()

    @property
    def mode(self):
        """``exp(loc - scale^2)``."""
        return (self.loc - self.scale.square()).exp()

    @property
    def variance(self):
        """``(exp(scale^2) - 1) exp(2 loc + scale^2)``."""
        scale_sq = self.scale.pow(2)
        return scale_sq.expm1() * (2 * self.loc + scale_sq).exp()

    def entropy(self):
        """The normal's entropy plus ``loc``."""
        return self.base_dist.entropy() + self.loc


__all__ = ["LogNormal"]
