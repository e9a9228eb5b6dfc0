"""The half-normal distribution: ``|X|`` for a centred normal ``X``."""

from __future__ import annotations

import math

import sneppx_core as sx

from . import constraints
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import AbsTransform


class _FoldedAtZero(TransformedDistribution):
    """Shared by HalfNormal and HalfCauchy: ``|X|`` for ``X`` symmetric about 0 with a ``scale``, so the
    density, cdf and entropy follow from the base's by a factor of 2."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    @property
    def scale(self):
        """The scale of the symmetric base distribution."""
        return self.base_dist.scale

    @property
    def mode(self):
        """Zero."""
        return sx.zeros_like(self.scale)

    def log_prob(self, value):
        """The base log-density plus ``log 2`` at ``value >= 0`` (``-inf`` below 0)."""
        if self._validate_args:
            self._validate_sample(value)
        value = sx.as_tensor(value, dtype=self.scale.dtype, device=self.scale.device)
        return sx.where(value >= 0, self.base_dist.log_prob(value) + math.log(2), float("-inf"))

    def cdf(self, value):
        """``2 F(value) - 1`` with ``F`` the base cdf."""
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        """The base icdf at ``(prob + 1) / 2``."""
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        """The base entropy less ``log 2``."""
        return self.base_dist.entropy() - math.log(2)


class HalfNormal(_FoldedAtZero):
    """``|X|`` with ``X ~ Normal(0, scale)``."""

    def __init__(self, scale, validate_args=None):
        super().__init__(Normal(0, scale, validate_args=False), AbsTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """A copy with the batch expanded to ``batch_shape``."""
        return super().expand(batch_shape, _instance=self._get_checked_instance(HalfNormal, _instance))

    @property
    def mean(self):
        """``scale sqrt(2 / pi)``."""
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self):
        """``scale^2 (1 - 2 / pi)``."""
        return self.scale.pow(2) * (1 - 2 / math.pi)


__all__ = ["HalfNormal"]
