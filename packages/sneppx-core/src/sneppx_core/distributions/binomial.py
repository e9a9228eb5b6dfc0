"""The binomial distribution, and the probs/logits helpers shared by the other count distributions."""

from __future__ import annotations

import sneppx_core as sx

from . import constraints
from .distribution import Distribution
from .utils import _BinaryProbs, broadcast_all


def _one_param(probs, logits):
    """``("probs", probs)`` or ``("logits", logits)``: the one given; ValueError unless exactly one is."""
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    return ("probs", probs) if probs is not None else ("logits", logits)


def _set_count_and_param(dist, total_count, probs, logits):
    """Broadcasts ``total_count`` with the given one of ``probs``/``logits`` and stores both on ``dist``
    (``total_count`` in the parameter's dtype, the parameter also as ``dist._param``); returns its shape."""
    name, param = _one_param(probs, logits)
    count, param = broadcast_all(total_count, param)
    dist.total_count = count.to(param.dtype)
    setattr(dist, name, param)
    dist._param = param
    return tuple(param.shape)


def _common_count(total_count, what):
    """The one value of a homogeneous ``total_count`` as an int; NotImplementedError when it varies."""
    top = int(total_count.max())
    if not bool(total_count.min() == top):
        raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
    return top


class Binomial(_BinaryProbs, Distribution):
    """The number of successes in ``total_count`` (an int or a tensor, broadcast with the other parameter)
    Bernoulli trials of success probability ``probs`` (or ``sigmoid(logits)``): pass exactly one of them."""

    arg_constraints = {"total_count": constraints.nonnegative_integer, "probs": constraints.unit_interval,
                       "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        batch_shape = _set_count_and_param(self, total_count, probs, logits)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """A new distribution with batch dims expanded to ``batch_shape`` (parameters are expanded views)."""
        return self._expand_params(Binomial, batch_shape, _instance, ("total_count", "probs", "logits"))

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        """``integer_interval(0, total_count)``."""
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        """``total_count * probs``."""
        return self.total_count * self.probs

    @property
    def mode(self):
        """``floor((total_count + 1) probs)``, at most ``total_count``."""
        return sx.minimum(((self.total_count + 1) * self.probs).floor(), self.total_count)

    @property
    def variance(self):
        """``total_count * probs * (1 - probs)``."""
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        """Binomial draws from SneppX's generator."""
        shape = self._extended_shape(sample_shape)
        with sx.no_grad():
            return sx.binomial(self.total_count.expand(shape), self.probs.expand(shape))

    def log_prob(self, value):
        """``log C(n, k) + k logits - n log(1 + e^logits)``, stable for large ``|logits|``."""
        if self._validate_args:
            self._validate_sample(value)
        n, logits = self.total_count, self.logits
        # n * log(1 + e^logits), split so that neither part overflows; its gradient at logits = 0 is n / 2
        log_norm = n * (0.5 * (logits + logits.abs()) + sx.log1p(sx.exp(-logits.abs())))
        log_binom = sx.lgamma(n + 1) - sx.lgamma(value + 1) - sx.lgamma(n - value + 1)
        return log_binom + value * logits - log_norm

    def entropy(self):
        """By summing over the support (a common ``total_count`` only)."""
        _common_count(self.total_count, "entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(sx.exp(log_prob) * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        """``0 .. total_count`` along a new leading dim (a common ``total_count`` only)."""
        n = _common_count(self.total_count, "enumerate_support")
        values = sx.arange(n + 1, dtype=self._param.dtype, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + self._batch_shape) if expand else values


__all__ = ["Binomial"]
