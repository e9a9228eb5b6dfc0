"""The multinomial distribution."""

from __future__ import annotations

import math

import sneppx_core as sx

from . import constraints
from .binomial import Binomial
from .categorical import Categorical
from .distribution import Distribution
from .utils import broadcast_all


class Multinomial(Distribution):
    """Counts of ``total_count`` (an int) draws among the categories of the last dim of ``probs`` (normalised
    to sum to 1) or of ``logits`` (normalised log-probabilities); ``log_prob`` takes the count from the value,
    so any ``total_count`` serves there."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        batch_shape = self._categorical.batch_shape
        super().__init__(batch_shape, self._categorical.param_shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """A new distribution with batch dims expanded to ``batch_shape`` (parameters are expanded views)."""
        new = self._expand_params(Multinomial, batch_shape, _instance, ("_categorical",))
        new.total_count = self.total_count
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        """``multinomial(total_count)``: counts summing to at most ``total_count``."""
        return constraints.multinomial(self.total_count)

    @property
    def logits(self):
        """The normalised log-probabilities of the categories."""
        return self._categorical.logits

    @property
    def probs(self):
        """The normalised probabilities of the categories."""
        return self._categorical.probs

    @property
    def param_shape(self):
        """The shape of the parameter tensor."""
        return self._categorical.param_shape

    @property
    def mean(self):
        """``total_count * probs``."""
        return self.probs * self.total_count

    @property
    def variance(self):
        """``total_count * probs * (1 - probs)``."""
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        """``total_count`` categorical draws per sample, counted per category."""
        sample_shape = (sample_shape,) if isinstance(sample_shape, int) else tuple(sample_shape)
        shape = self._extended_shape(sample_shape)
        with sx.no_grad():
            draws = self._categorical.sample((self.total_count,) + sample_shape)  # (n,) + shape[:-1]
            draws = draws.permute(*range(1, draws.ndim), 0)
            counts = sx.zeros(shape, dtype=draws.dtype, device=draws.device)
            counts.scatter_add_(-1, draws, sx.ones_like(draws))
            return counts.to(self.probs.dtype)

    def log_prob(self, value):
        """``log n! - sum log x_i! + sum x_i log p_i`` with ``n`` the value's total."""
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        logits = sx.where((value == 0) & (logits == float("-inf")), 0.0, logits)  # 0 * log 0 counts as 0
        log_coef = sx.lgamma(value.sum(-1) + 1) - sx.lgamma(value + 1).sum(-1)
        return log_coef + (logits * value).sum(-1)

    def entropy(self):
        """``n H(probs) - log n! + sum_i E[log x_i!]``, the last from each category's binomial marginal."""
        n = self.total_count
        binomial = Binomial(n, probs=self.probs, validate_args=False)
        support = binomial.enumerate_support(expand=False)[1:]
        weighted = sx.exp(binomial.log_prob(support)) * sx.lgamma(support + 1)
        return n * self._categorical.entropy() - math.lgamma(n + 1) + weighted.sum(0).sum(-1)


__all__ = ["Multinomial"]
