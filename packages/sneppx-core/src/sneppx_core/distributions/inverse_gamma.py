"""The inverse-gamma distribution: the reciprocal of a gamma variable."""

from __future__ import annotations

import sneppx_core as sx

from . import constraints
from .gamma import Gamma
from .transformed_distribution import TransformedDistribution
from .transforms import PowerTransform


class InverseGamma(TransformedDistribution):
    """``Y = 1 / X`` with ``X ~ Gamma(concentration, rate)``; density
    ``rate^a / Gamma(a) y^(-a-1) exp(-rate / y)`` with ``a = concentration``."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        base_dist = Gamma(concentration, rate, validate_args=validate_args)
        neg_one = -base_dist.rate.new_ones(())
        super().__init__(base_dist, PowerTransform(neg_one), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """A copy with the batch expanded to ``batch_shape``."""
        return super().expand(batch_shape, _instance=self._get_checked_instance(InverseGamma, _instance))

    @property
    def concentration(self):
        """The gamma's concentration (shape, alpha)."""
        return self.base_dist.concentration

    @property
    def rate(self):
        """The gamma's rate (the inverse gamma's scale, beta)."""
        return self.base_dist.rate

    @property
    def mean(self):
        """``rate / (concentration - 1)`` (infinite for ``concentration <= 1``)."""
        return sx.where(self.concentration > 1, self.rate / (self.concentration - 1), float("inf"))

    @property
    def mode(self):
        """``rate / (concentration + 1)``."""
        return self.rate / (self.concentration + 1)

    @property
    def variance(self):
        """``rate^2 / ((concentration - 1)^2 (concentration - 2))`` (infinite for ``concentration <= 2``)."""
        result = self.rate.square() / ((self.concentration - 1).square() * (self.concentration - 2))
        return sx.where(self.concentration > 2, result, float("inf"))

    def entropy(self):
        """``a + log rate + lgamma(a) - (1 + a) digamma(a)`` with ``a = concentration``."""
        return (self.concentration + self.rate.log() + self.concentration.lgamma()
                - (1 + self.concentration) * self.concentration.digamma())


__all__ = ["InverseGamma"]
