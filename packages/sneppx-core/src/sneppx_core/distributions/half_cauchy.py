"""The half-Cauchy distribution: ``|X|`` for a centred Cauchy ``X``."""

from __future__ import annotations

import math

import sneppx_core as sx

from .cauchy import Cauchy
from .half_normal import _FoldedAtZero
from .transforms import AbsTransform


class HalfCauchy(_FoldedAtZero):
    """``|X|`` with ``X ~ Cauchy(0, scale)``."""

    def __init__(self, scale, validate_args=None):
        super().__init__(Cauchy(0, scale, validate_args=False), AbsTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """A copy with the batch expanded to ``batch_shape``."""
        return super().expand(batch_shape, _instance=self._get_checked_instance(HalfCauchy, _instance))

    @property
    def mean(self):
        """Infinite."""
        return sx.full(self._extended_shape(), math.inf, dtype=self.scale.dtype, device=self.scale.device)

    @property
    def variance(self):
        """The Cauchy's variance (infinite)."""
        return self.base_dist.variance


__all__ = ["HalfCauchy"]
