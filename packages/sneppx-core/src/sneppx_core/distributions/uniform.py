"""The continuous uniform distribution on ``[low, high)``."""

from __future__ import annotations

import numbers

import sneppx_core as sx

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all


class Uniform(Distribution):
    """Uniform draws from the half-open interval ``[low, high)`` (broadcast together)."""

    has_rsample = True

    @property
    def arg_constraints(self):
        """``low < high``: each bounded by the other."""
        return {"low": constraints.less_than(self.high), "high": constraints.greater_than(self.low)}

    @property
    def mean(self):
        """``(low + high) / 2``."""
        return (self.high + self.low) / 2

    @property
    def mode(self):
        """NaN: every point of the interval is a mode."""
        return float("nan") * self.high

    @property
    def stddev(self):
        """``(high - low) / sqrt(12)``."""
        return (self.high - self.low) / 12**0.5

    @property
    def variance(self):
        """``(high - low)^2 / 12``."""
        return (self.high - self.low).pow(2) / 12

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = broadcast_all(low, high)
        both_numbers = isinstance(low, numbers.Number) and isinstance(high, numbers.Number)
        super().__init__(() if both_numbers else tuple(self.low.shape), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """A new Uniform with ``low``/``high`` expanded to ``batch_shape``."""
        return self._expand_params(Uniform, batch_shape, _instance, ("low", "high"))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        """The interval ``[low, high]``."""
        return constraints.interval(self.low, self.high)

    def rsample(self, sample_shape=()):
        """``low + u * (high - low)`` with ``u`` uniform on [0, 1): differentiable in ``low`` and ``high``."""
        shape = self._extended_shape(sample_shape)
        rand = sx.rand(shape, dtype=self.low.dtype, device=self.low.device)
        return self.low + rand * (self.high - self.low)

    def log_prob(self, value):
        """``-log(high - low)`` on ``[low, high)``, ``-inf`` outside."""
        if self._validate_args:
            self._validate_sample(value)
        lb = self.low.le(value).type_as(self.low)
        ub = self.high.gt(value).type_as(self.low)
        return sx.log(lb.mul(ub)) - sx.log(self.high - self.low)

    def cdf(self, value):
        """``(value - low) / (high - low)``, clamped to [0, 1]."""
        if self._validate_args:
            self._validate_sample(value)
        result = (value - self.low) / (self.high - self.low)
        return result.clamp(min=0, max=1)

    def icdf(self, value):
        """``low + value * (high - low)``."""
        return value * (self.high - self.low) + self.low

    def entropy(self):
        """``log(high - low)``."""
        return sx.log(self.high - self.low)


__all__ = ["Uniform"]
