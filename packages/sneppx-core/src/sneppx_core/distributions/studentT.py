"""Student's t-distribution."""

from __future__ import annotations

import math

import sneppx_core as sx

from . import constraints
from .chi2 import Chi2
from .distribution import Distribution
from .utils import _standard_normal, broadcast_all


class StudentT(Distribution):
    """Student's t-distribution with ``df`` degrees of freedom, location ``loc`` and scale ``scale``."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    @property
    def mean(self):
        """``loc``, NaN where ``df <= 1``."""
        return sx.where(self.df <= 1, float("nan"), self.loc)

    @property
    def mode(self):
        """``loc``."""
        return self.loc

    @property
    def variance(self):
        """``scale^2 df / (df - 2)`` for ``df > 2``, ``inf`` for ``1 < df <= 2``, NaN for ``df <= 1``."""
        safe_df = sx.where(self.df > 2, self.df, 3.0)
        heavy = sx.where(self.df > 1, float("inf"), sx.full_like(self.df, float("nan")))
        return sx.where(self.df > 2, self.scale.pow(2) * safe_df / (safe_df - 2), heavy)

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(tuple(self.df.shape), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """A new StudentT with all parameters expanded to ``batch_shape``."""
        return self._expand_params(StudentT, batch_shape, _instance, ("df", "loc", "scale", "_chi2"))

    def rsample(self, sample_shape=()):
        """``loc + scale * X / sqrt(Z / df)``, ``X`` standard normal, ``Z`` chi-squared (``df``): differentiable
        in all three parameters (implicitly in ``df``)."""
        shape = self._extended_shape(sample_shape)
        x = _standard_normal(shape, dtype=self.df.dtype, device=self.df.device)
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * (x * sx.rsqrt(z / self.df))

    def log_prob(self, value):
        """The log density of ``loc + scale * T``, ``T`` a standard t variable with ``df`` degrees of freedom."""
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi) + sx.lgamma(0.5 * self.df)
             - sx.lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * sx.log1p(y**2.0 / self.df) - z

    def entropy(self):
        """The differential entropy (in closed form, with digamma and the log beta function)."""
        lbeta = sx.lgamma(0.5 * self.df) + math.lgamma(0.5) - sx.lgamma(0.5 * (self.df + 1))
        return (self.scale.log() + 0.5 * (self.df + 1) * (sx.digamma(0.5 * (self.df + 1)) - sx.digamma(0.5 * self.df))
                + 0.5 * self.df.log() + lbeta)


__all__ = ["StudentT"]
