"""The logistic-normal distribution: a normal pushed onto the simplex by stick-breaking."""

from __future__ import annotations

from . import constraints
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import StickBreakingTransform


class LogisticNormal(TransformedDistribution):
    """``StickBreakingTransform`` of ``Normal(loc, scale)`` over the last dim: a K-vector of normals gives a
    point on the (K+1)-simplex (a scalar ``loc``/``scale`` is read as a 1-vector)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        base_dist = Normal(loc, scale, validate_args=validate_args)
        if not base_dist.batch_shape:
            base_dist = base_dist.expand([1])
        super().__init__(base_dist, StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """A copy with the batch expanded to ``batch_shape``."""
        return super().expand(batch_shape, _instance=self._get_checked_instance(LogisticNormal, _instance))

    @property
    def loc(self):
        """The mean of the base normal."""
        return self.base_dist.base_dist.loc

    @property
    def scale(self):
        """The standard deviation of the base normal."""
        return self.base_dist.base_dist.scale


__all__ = ["LogisticNormal"]
