"""The negative binomial distribution."""

from __future__ import annotations

import sneppx_core as sx

from . import constraints
from .binomial import _set_count_and_param
from .distribution import Distribution
from .gamma import _standard_gamma
from .utils import _BinaryProbs


class NegativeBinomial(_BinaryProbs, Distribution):
    """The number of successes before ``total_count`` (a non-negative real) failures in Bernoulli trials of
    success probability ``probs`` (in [0, 1)) or ``sigmoid(logits)``: pass exactly one of them."""

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0), "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        batch_shape = _set_count_and_param(self, total_count, probs, logits)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """A new distribution with batch dims expanded to ``batch_shape`` (parameters are expanded views)."""
        return self._expand_params(NegativeBinomial, batch_shape, _instance, ("total_count", "probs", "logits"))

    @property
    def mean(self):
        """``total_count * probs / (1 - probs)``."""
        return self.total_count * sx.exp(self.logits)

    @property
    def mode(self):
        """``floor((total_count - 1) probs / (1 - probs))``, at least 0."""
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        """``mean / (1 - probs)``."""
        return self.mean / sx.sigmoid(-self.logits)

    def sample(self, sample_shape=()):
        """A Poisson draw whose rate is Gamma(``total_count``, ``exp(-logits)``) (the gamma-Poisson mixture)."""
        shape = self._extended_shape(sample_shape)
        with sx.no_grad():
            gamma = _standard_gamma(self.total_count.expand(shape)) * sx.exp(self.logits).expand(shape)
            return sx.poisson(gamma)

    def log_prob(self, value):
        """``log Gamma(n + k) - log Gamma(n) - log k! + n log(1 - p) + k log p``."""
        if self._validate_args:
            self._validate_sample(value)
        n, logits = self.total_count, self.logits
        log_unnormalized = n * sx.functional.logsigmoid(-logits) + value * sx.functional.logsigmoid(logits)
        log_normalization = sx.lgamma(1.0 + value) + sx.lgamma(n) - sx.lgamma(n + value)
        # n = value = 0 has probability 1, though lgamma(0) is infinite
        log_normalization = log_normalization.masked_fill(n + value == 0.0, 0.0)
        return log_unnormalized - log_normalization


__all__ = ["NegativeBinomial"]
