"""The Poisson distribution."""

from __future__ import annotations

import numbers

import sneppx_core as sx

from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all


class Poisson(ExponentialFamily):
    """Counts with mass ``rate^k e^(-rate) / k!`` for ``k = 0, 1, ...``."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(() if isinstance(rate, numbers.Number) else tuple(self.rate.shape),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """A new distribution with batch dims expanded to ``batch_shape`` (parameters are expanded views)."""
        return self._expand_params(Poisson, batch_shape, _instance, ("rate",))

    @property
    def mean(self):
        """``rate``."""
        return self.rate

    @property
    def mode(self):
        """``floor(rate)``."""
        return self.rate.floor()

    @property
    def variance(self):
        """``rate``."""
        return self.rate

    def sample(self, sample_shape=()):
        """Poisson draws from SneppX's generator."""
        with sx.no_grad():
            return sx.poisson(self.rate.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value):
        """``k log(rate) - rate - log k!``."""
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return sx.xlogy(value, rate) - rate - sx.lgamma(value + 1)

    @property
    def _natural_params(self):
        return (sx.log(self.rate),)

    def _log_normalizer(self, x):
        return sx.exp(x)


__all__ = ["Poisson"]
