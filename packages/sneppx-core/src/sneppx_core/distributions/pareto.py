"""The Pareto (type I) distribution."""

from __future__ import annotations

from . import constraints
from .exponential import Exponential
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform
from .utils import broadcast_all


class Pareto(TransformedDistribution):
    """The Pareto distribution with minimum ``scale`` and shape ``alpha``: ``scale * exp(E)`` for
    ``E ~ Exponential(alpha)``."""

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}

    def __init__(self, scale, alpha, validate_args=None):
        self.scale, self.alpha = broadcast_all(scale, alpha)
        base_dist = Exponential(self.alpha, validate_args=validate_args)
        super().__init__(base_dist, [ExpTransform(), AffineTransform(loc=0, scale=self.scale)],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """A copy with the batch expanded to ``batch_shape``."""
        new = self._get_checked_instance(Pareto, _instance)
        new.scale, new.alpha = self.scale.expand(batch_shape), self.alpha.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        """``alpha scale / (alpha - 1)`` (infinite for ``alpha <= 1``)."""
        a = self.alpha.clamp(min=1)
        return a * self.scale / (a - 1)

    @property
    def mode(self):
        """``scale``."""
        return self.scale

    @property
    def variance(self):
        """``scale^2 alpha / ((alpha - 1)^2 (alpha - 2))`` (infinite for ``alpha <= 2``)."""
        a = self.alpha.clamp(min=2)
        return self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        """``[scale, inf)``."""
        return constraints.greater_than_eq(self.scale)

    def entropy(self):
        """``log(scale / alpha) + 1 + 1 / alpha``."""
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())


__all__ = ["Pareto"]
