"""The Fisher-Snedecor (F) distribution."""

from __future__ import annotations

import numbers

import sneppx_core as sx

from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .utils import broadcast_all


class FisherSnedecor(Distribution):
    """The F distribution with ``df1`` and ``df2`` degrees of freedom."""

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)
        both_numbers = isinstance(df1, numbers.Number) and isinstance(df2, numbers.Number)
        super().__init__(() if both_numbers else tuple(self.df1.shape), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """A new FisherSnedecor with both dfs expanded to ``batch_shape``."""
        return self._expand_params(FisherSnedecor, batch_shape, _instance, ("df1", "df2", "_gamma1", "_gamma2"))

    @property
    def mean(self):
        """``df2 / (df2 - 2)``, NaN where ``df2 <= 2``."""
        df2 = sx.where(self.df2 <= 2, float("nan"), self.df2)
        return df2 / (df2 - 2)

    @property
    def mode(self):
        """``(df1 - 2) / df1 * df2 / (df2 + 2)``, NaN where ``df1 <= 2``."""
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return sx.where(self.df1 <= 2, float("nan"), mode)

    @property
    def variance(self):
        """``2 df2^2 (df1 + df2 - 2) / (df1 (df2 - 2)^2 (df2 - 4))``, NaN where ``df2 <= 4``."""
        df2 = sx.where(self.df2 <= 4, float("nan"), self.df2)
        return 2 * df2.pow(2) * (self.df1 + df2 - 2) / (self.df1 * (df2 - 2).pow(2) * (df2 - 4))

    def rsample(self, sample_shape=()):
        """The ratio of two scaled gamma draws (clamped to the dtype's ``tiny``): differentiable in both dfs."""
        shape = self._extended_shape(sample_shape)
        x1 = self._gamma1.rsample(sample_shape).view(shape)
        x2 = self._gamma2.rsample(sample_shape).view(shape)
        tiny = sx.finfo(x2.dtype).tiny
        return (x1 / x2.clamp(min=tiny)).clamp(min=tiny)

    def log_prob(self, value):
        """The log density of the F distribution at ``value``."""
        if self._validate_args:
            self._validate_sample(value)
        ct1, ct2, ct3 = self.df1 * 0.5, self.df2 * 0.5, self.df1 / self.df2
        t1 = (ct1 + ct2).lgamma() - ct1.lgamma() - ct2.lgamma()
        t2 = ct1 * ct3.log() + (ct1 - 1) * sx.log(value)
        t3 = (ct1 + ct2) * sx.log1p(ct3 * value)
        return t1 + t2 - t3


__all__ = ["FisherSnedecor"]
