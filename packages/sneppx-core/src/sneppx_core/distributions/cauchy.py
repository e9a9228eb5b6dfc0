"""The Cauchy (Lorentz) distribution."""

from __future__ import annotations

import math
import numbers

import sneppx_core as sx

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all


class Cauchy(Distribution):
    """The Cauchy distribution with median ``loc`` and half width at half maximum ``scale``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        both_numbers = isinstance(loc, numbers.Number) and isinstance(scale, numbers.Number)
        super().__init__(() if both_numbers else tuple(self.loc.shape), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """A new Cauchy with ``loc``/``scale`` expanded to ``batch_shape``."""
        return self._expand_params(Cauchy, batch_shape, _instance, ("loc", "scale"))

    @property
    def mean(self):
        """NaN: the Cauchy distribution has no mean."""
        return sx.full(self._extended_shape(), float("nan"), dtype=self.loc.dtype, device=self.loc.device)

    @property
    def mode(self):
        """``loc``."""
        return self.loc

    @property
    def variance(self):
        """``inf``: the Cauchy distribution has no finite variance."""
        return sx.full(self._extended_shape(), float("inf"), dtype=self.loc.dtype, device=self.loc.device)

    def rsample(self, sample_shape=()):
        """``loc + scale * eps`` with standard Cauchy ``eps``: differentiable in ``loc`` and ``scale``."""
        shape = self._extended_shape(sample_shape)
        eps = self.loc.new_empty(shape).cauchy_()
        return self.loc + eps * self.scale

    def log_prob(self, value):
        """``-log(pi scale (1 + z^2))`` with ``z = (value - loc) / scale``."""
        if self._validate_args:
            self._validate_sample(value)
        return -math.log(math.pi) - self.scale.log() - (((value - self.loc) / self.scale) ** 2).log1p()

    def cdf(self, value):
        """``atan(z) / pi + 1/2``."""
        if self._validate_args:
            self._validate_sample(value)
        return sx.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value):
        """``loc + scale tan(pi (p - 1/2))``."""
        return sx.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self):
        """``log(4 pi scale)``."""
        return math.log(4 * math.pi) + self.scale.log()


__all__ = ["Cauchy"]
