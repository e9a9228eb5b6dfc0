"""The Kumaraswamy distribution on the unit interval."""

from __future__ import annotations

import sneppx_core as sx

from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .uniform import Uniform
from .utils import broadcast_all, euler_constant


def _moments(a, b, n):
    """The ``n``-th moment ``b B(1 + n/a, b)`` of a Kumaraswamy(a, b)."""
    arg1 = 1 + n / a
    return b * sx.exp(sx.lgamma(arg1) + sx.lgamma(b) - sx.lgamma(arg1 + b))


class Kumaraswamy(TransformedDistribution):
    """The Kumaraswamy distribution with ``concentration1`` (a) and ``concentration0`` (b), density
    ``a b x^(a-1) (1 - x^a)^(b-1)``: ``(1 - U^(1/b))^(1/a)`` for ``U`` uniform on (0, 1)."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base_dist = Uniform(sx.full_like(self.concentration0, 0), sx.full_like(self.concentration0, 1),
                            validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration0.reciprocal()),
                      AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """A copy with the batch expanded to ``batch_shape``."""
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(batch_shape)
        new.concentration0 = self.concentration0.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        """``b B(1 + 1/a, b)``."""
        return _moments(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        """``((a - 1) / (a b - 1))^(1/a)``; NaN where ``a < 1`` or ``b < 1`` (no interior mode)."""
        a, b = self.concentration1, self.concentration0
        log_mode = ((a - 1).log() - (a * b - 1).log()) / a
        return sx.where((a < 1) | (b < 1), float("nan"), log_mode).exp()

    @property
    def variance(self):
        """The second moment less the squared mean."""
        return _moments(self.concentration1, self.concentration0, 2) - sx.pow(self.mean, 2)

    def entropy(self):
        """``(1 - 1/b) + (1 - 1/a) H_b - log a - log b`` with ``H_b = digamma(b + 1) + euler_constant``."""
        t1 = 1 - self.concentration1.reciprocal()
        t0 = 1 - self.concentration0.reciprocal()
        h0 = sx.digamma(self.concentration0 + 1) + euler_constant
        return t0 + t1 * h0 - sx.log(self.concentration1) - sx.log(self.concentration0)


__all__ = ["Kumaraswamy"]
