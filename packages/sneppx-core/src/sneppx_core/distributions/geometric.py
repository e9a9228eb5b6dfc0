"""The geometric distribution."""

from __future__ import annotations

import numbers

import sneppx_core as sx

from . import constraints
from .binomial import _one_param
from .distribution import Distribution
from .utils import _BinaryProbs, broadcast_all


class Geometric(_BinaryProbs, Distribution):
    """The number of failures before the first success in Bernoulli trials of success probability ``probs``
    (in (0, 1]) or ``sigmoid(logits)``: ``P(k) = (1 - p)^k p`` for ``k = 0, 1, ...``; pass exactly one."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        name, param = _one_param(probs, logits)
        (value,) = broadcast_all(param)
        setattr(self, name, value)
        super().__init__(() if isinstance(param, numbers.Number) else tuple(value.shape), validate_args=validate_args)
        if self._validate_args and probs is not None and not bool((self.probs > 0).all()):
            raise ValueError(f"Expected parameter probs ({type(value).__name__} of shape {tuple(value.shape)}) of "
                             f"distribution {self!r} to be positive but found invalid values:\n"
                             f"{value[~(value > 0)]}")

    def expand(self, batch_shape, _instance=None):
        """A new distribution with batch dims expanded to ``batch_shape`` (parameters are expanded views)."""
        return self._expand_params(Geometric, batch_shape, _instance, ("probs", "logits"))

    @property
    def mean(self):
        """``1 / probs - 1``."""
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        """0."""
        return sx.zeros_like(self.probs)

    @property
    def variance(self):
        """``(1 / probs - 1) / probs``."""
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape=()):
        """``floor(log(u) / log(1 - p))`` for ``u`` uniform on ``[tiny, 1)``."""
        shape = self._extended_shape(sample_shape)
        with sx.no_grad():
            u = sx.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
            u = u.clamp(min=sx.finfo(self.probs.dtype).tiny)
            return (u.log() / sx.log1p(-self.probs)).floor()

    def log_prob(self, value):
        """``k log(1 - p) + log p``."""
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        probs = sx.where((probs == 1) & (value == 0), 0.0, probs)  # 0 * log(0) counts as 0
        return value * sx.log1p(-probs) + self.probs.log()

    def entropy(self):
        """``H(Bernoulli(p)) / p``."""
        return sx.functional.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none") / self.probs


__all__ = ["Geometric"]
