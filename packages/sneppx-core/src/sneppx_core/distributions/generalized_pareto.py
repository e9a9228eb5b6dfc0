"""The generalized Pareto distribution."""

from __future__ import annotations

import numbers

import sneppx_core as sx

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all


class GeneralizedPareto(Distribution):
    """The generalized Pareto distribution with location ``loc``, scale ``scale`` and shape ``concentration``.

    ``concentration = 0`` is the exponential distribution shifted by ``loc``; ``concentration = -1`` a uniform one;
    ``concentration > 0`` with ``loc = scale / concentration`` a Pareto one.
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        all_numbers = all(isinstance(p, numbers.Number) for p in (loc, scale, concentration))
        super().__init__(() if all_numbers else tuple(self.loc.shape), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """A new GeneralizedPareto with all parameters expanded to ``batch_shape``."""
        return self._expand_params(GeneralizedPareto, batch_shape, _instance, ("loc", "scale", "concentration"))

    def rsample(self, sample_shape=()):
        """``icdf(u)`` with ``u`` uniform on [0, 1): differentiable in all three parameters."""
        shape = self._extended_shape(sample_shape)
        return self.icdf(sx.rand(shape, dtype=self.loc.dtype, device=self.loc.device))

    def _safe_concentration(self):
        """(``concentration == 0`` within isclose's tolerance, the concentration with 1 put at those places)."""
        eq_zero = sx.isclose(self.concentration, sx.zeros_like(self.concentration))
        return eq_zero, sx.where(eq_zero, sx.ones_like(self.concentration), self.concentration)

    def log_prob(self, value):
        """``-log(scale) - (1 + 1/xi) log1p(xi z)`` (``-log(scale) - z`` for ``xi = 0``), ``z = (x - loc) / scale``."""
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe_conc = self._safe_concentration()
        y = 1 / safe_conc + sx.ones_like(z)
        where_nonzero = sx.where(y == 0, y, y * sx.log1p(safe_conc * z))
        return -self.scale.log() - sx.where(eq_zero, z, where_nonzero)

    def log_survival_function(self, value):
        """``log(1 - cdf(value))``."""
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe_conc = self._safe_concentration()
        return sx.where(eq_zero, -z, -sx.log1p(safe_conc * z) / safe_conc)

    def log_cdf(self, value):
        """``log(cdf(value))``."""
        return sx.log1p(-sx.exp(self.log_survival_function(value)))

    def cdf(self, value):
        """``exp(log_cdf(value))``."""
        return sx.exp(self.log_cdf(value))

    def icdf(self, value):
        """``loc + scale / xi * expm1(-xi log1p(-p))`` (``loc - scale log1p(-p)`` for ``xi = 0``)."""
        eq_zero, safe_conc = self._safe_concentration()
        logu = sx.log1p(-value)
        where_nonzero = self.loc + self.scale / safe_conc * sx.expm1(-safe_conc * logu)
        return sx.where(eq_zero, self.loc - self.scale * logu, where_nonzero)

    def _z(self, x):
        return (x - self.loc) / self.scale

    @property
    def mean(self):
        """``loc + scale / (1 - concentration)``, NaN where ``concentration >= 1``."""
        valid = self.concentration < 1
        safe_conc = sx.where(valid, self.concentration, 0.5)
        return sx.where(valid, self.loc + self.scale / (1 - safe_conc), float("nan"))

    @property
    def variance(self):
        """``scale^2 / ((1 - concentration)^2 (1 - 2 concentration))``, NaN where ``concentration >= 1/2``."""
        valid = self.concentration < 0.5
        safe_conc = sx.where(valid, self.concentration, 0.25)
        return sx.where(valid, self.scale**2 / ((1 - safe_conc) ** 2 * (1 - 2 * safe_conc)), float("nan"))

    def entropy(self):
        """``log(scale) + concentration + 1``."""
        return sx.broadcast_to(sx.log(self.scale) + self.concentration + 1, self._batch_shape)

    @property
    def mode(self):
        """``loc``."""
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        """``[loc, inf)``, or ``[loc, loc - scale / concentration]`` for a negative concentration."""
        lower = self.loc
        upper = sx.where(self.concentration < 0, lower - self.scale / self.concentration, float("inf"))
        return constraints.interval(lower, upper)


__all__ = ["GeneralizedPareto"]
