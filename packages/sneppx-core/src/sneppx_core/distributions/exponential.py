"""The exponential distribution."""

from __future__ import annotations

import numbers

import sneppx_core as sx

from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all


class Exponential(ExponentialFamily):
    """The exponential distribution with ``rate`` (1 / scale)."""

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def mean(self):
        """``1 / rate``."""
        return self.rate.reciprocal()

    @property
    def mode(self):
        """0."""
        return sx.zeros_like(self.rate)

    @property
    def stddev(self):
        """``1 / rate``."""
        return self.rate.reciprocal()

    @property
    def variance(self):
        """``rate^-2``."""
        return self.rate.pow(-2)

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(() if isinstance(rate, numbers.Number) else tuple(self.rate.shape),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """A new Exponential with ``rate`` expanded to ``batch_shape``."""
        return self._expand_params(Exponential, batch_shape, _instance, ("rate",))

    def rsample(self, sample_shape=()):
        """``e / rate`` with standard exponential ``e``: differentiable in ``rate``."""
        shape = self._extended_shape(sample_shape)
        return self.rate.new_empty(shape).exponential_() / self.rate

    def log_prob(self, value):
        """``log(rate) - rate * value``."""
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value):
        """``1 - exp(-rate * value)``."""
        if self._validate_args:
            self._validate_sample(value)
        return 1 - sx.exp(-self.rate * value)

    def icdf(self, value):
        """``-log1p(-p) / rate``."""
        return -sx.log1p(-value) / self.rate

    def entropy(self):
        """``1 - log(rate)``."""
        return 1.0 - sx.log(self.rate)

    @property
    def _natural_params(self):
        return (-self.rate,)

    def _log_normalizer(self, x):
        return -sx.log(-x)


__all__ = ["Exponential"]
