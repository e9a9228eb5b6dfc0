"""The Laplace (double exponential) distribution."""

from __future__ import annotations

import numbers

import sneppx_core as sx

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all


class Laplace(Distribution):
    """The Laplace distribution with location ``loc`` and scale ``scale`` (broadcast together)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    @property
    def mean(self):
        """``loc``."""
        return self.loc

    @property
    def mode(self):
        """``loc``."""
        return self.loc

    @property
    def variance(self):
        """``2 scale^2``."""
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        """``sqrt(2) scale``."""
        return (2**0.5) * self.scale

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        both_numbers = isinstance(loc, numbers.Number) and isinstance(scale, numbers.Number)
        super().__init__(() if both_numbers else tuple(self.loc.shape), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """A new Laplace with ``loc``/``scale`` expanded to ``batch_shape``."""
        return self._expand_params(Laplace, batch_shape, _instance, ("loc", "scale"))

    def rsample(self, sample_shape=()):
        """``loc - scale * sign(u) * log1p(-|u|)`` with ``u`` uniform on ``[eps - 1, 1)``."""
        shape = self._extended_shape(sample_shape)
        eps = sx.finfo(self.loc.dtype).eps
        u = sx.rand(shape, dtype=self.loc.dtype, device=self.loc.device) * (2 - eps) + (eps - 1)
        return self.loc - self.scale * u.sign() * sx.log1p(-u.abs())

    def log_prob(self, value):
        """``-log(2 scale) - |value - loc| / scale``."""
        if self._validate_args:
            self._validate_sample(value)
        return -sx.log(2 * self.scale) - sx.abs(value - self.loc) / self.scale

    def cdf(self, value):
        """``1/2 - 1/2 sign(z) expm1(-|z|)`` with ``z = (value - loc) / scale``."""
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 - 0.5 * (value - self.loc).sign() * sx.expm1(-(value - self.loc).abs() / self.scale)

    def icdf(self, value):
        """``loc - scale sign(p - 1/2) log1p(-2 |p - 1/2|)``."""
        term = value - 0.5
        return self.loc - self.scale * term.sign() * sx.log1p(-2 * term.abs())

    def entropy(self):
        """``1 + log(2 scale)``."""
        return 1 + sx.log(2 * self.scale)


__all__ = ["Laplace"]
