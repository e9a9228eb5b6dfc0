"""The two-parameter Weibull distribution."""

from __future__ import annotations

import sneppx_core as sx

from . import constraints
from .exponential import Exponential
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .utils import broadcast_all, euler_constant


def _weibull_transforms(scale, concentration_reciprocal):
    return [PowerTransform(exponent=concentration_reciprocal), AffineTransform(loc=0, scale=scale)]


class Weibull(TransformedDistribution):
    """The Weibull distribution with ``scale`` (lambda) and ``concentration`` (k): ``scale * E^(1/k)`` for
    ``E ~ Exponential(1)``."""

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale, concentration, validate_args=None):
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base_dist = Exponential(sx.ones_like(self.scale), validate_args=validate_args)
        super().__init__(base_dist, _weibull_transforms(self.scale, self.concentration_reciprocal),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """A copy with the batch expanded to ``batch_shape``."""
        new = self._get_checked_instance(Weibull, _instance)
        batch_shape = tuple(batch_shape)
        new.scale, new.concentration = self.scale.expand(batch_shape), self.concentration.expand(batch_shape)
        new.concentration_reciprocal = new.concentration.reciprocal()
        base_dist = self.base_dist.expand(batch_shape)
        super(Weibull, new).__init__(base_dist, _weibull_transforms(new.scale, new.concentration_reciprocal),
                                     validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        """``scale * Gamma(1 + 1/k)``."""
        return self.scale * sx.exp(sx.lgamma(1 + self.concentration_reciprocal))

    @property
    def mode(self):
        """``scale ((k - 1) / k)^(1/k)`` (NaN for ``k < 1``, as in PyTorch)."""
        return self.scale * ((self.concentration - 1) / self.concentration) ** self.concentration.reciprocal()

    @property
    def variance(self):
        """``scale^2 (Gamma(1 + 2/k) - Gamma(1 + 1/k)^2)``."""
        return self.scale.pow(2) * (sx.exp(sx.lgamma(1 + 2 * self.concentration_reciprocal))
                                    - sx.exp(2 * sx.lgamma(1 + self.concentration_reciprocal)))

    def entropy(self):
        """``euler_constant (1 - 1/k) + log(scale / k) + 1``."""
        return (euler_constant * (1 - self.concentration_reciprocal)
                + sx.log(self.scale * self.concentration_reciprocal) + 1)


__all__ = ["Weibull"]
