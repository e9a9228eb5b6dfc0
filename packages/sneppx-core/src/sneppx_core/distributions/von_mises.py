"""The von Mises (circular normal) distribution."""

from __future__ import annotations

import math

import sneppx_core as sx

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, lazy_property


def _log_bessel_i0(x):
    """``log I0(x)`` for ``x > 0``, from the exponentially scaled ``i0e`` (accurate for large ``x`` too)."""
    return sx.log(sx.special.i0e(x)) + x


def _rejection_sample(loc, concentration, proposal_r, shape):
    """Best and Fisher's (1979) rejection sampler of von Mises angles, in float64 from SneppX's generator;
    ``loc``, ``concentration`` and ``proposal_r`` are float64 tensors broadcastable to ``shape``."""
    kappa = concentration.expand(shape).reshape(-1)
    r = proposal_r.expand(shape).reshape(-1)
    x = sx.zeros(kappa.shape, dtype=sx.float64, device=kappa.device)
    pending = sx.arange(kappa.numel(), device=kappa.device)
    while pending.numel():
        u1, u2, u3 = sx.rand((3, pending.numel()), dtype=sx.float64, device=kappa.device).unbind()
        rp = r[pending]
        z = sx.cos(math.pi * u1)
        f = (1 + rp * z) / (rp + z)
        c = kappa[pending] * (rp - f)
        accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
        x[pending[accept]] = ((u3 - 0.5).sign() * f.acos())[accept]
        pending = pending[~accept]
    return (x.reshape(shape) + math.pi + loc) % (2 * math.pi) - math.pi


class VonMises(Distribution):
    """A circular von Mises distribution of angles, with mean direction ``loc`` (radians) and ``concentration``.

    ``loc`` and values may be any real numbers (angles modulo 2 pi); samples lie in [-pi, pi).
    """

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(tuple(self.loc.shape), (), validate_args)

    def expand(self, batch_shape, _instance=None):
        """A new VonMises with ``loc``/``concentration`` expanded to ``batch_shape``."""
        return self._expand_params(VonMises, batch_shape, _instance, ("loc", "concentration"))

    def log_prob(self, value):
        """``concentration cos(value - loc) - log(2 pi I0(concentration))``."""
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.concentration * sx.cos(value - self.loc)
        return log_prob - math.log(2 * math.pi) - _log_bessel_i0(self.concentration)

    @lazy_property
    def _proposal_r(self):
        kappa = self.concentration.to(sx.float64)
        tau = 1 + (1 + 4 * kappa**2).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
        return sx.where(kappa < 1e-5, 1 / kappa + kappa, (1 + rho**2) / (2 * rho))

    def sample(self, sample_shape=()):
        """Draws by Best and Fisher's rejection method, always in float64 (it can hang in single precision for
        tiny concentrations), returned in ``loc``'s dtype."""
        shape = self._extended_shape(sample_shape)
        with sx.no_grad():
            x = _rejection_sample(self.loc.to(sx.float64), self.concentration.to(sx.float64), self._proposal_r,
                                  shape)
            return x.to(self.loc.dtype)

    @property
    def mean(self):
        """The circular mean: ``loc``."""
        return self.loc

    @property
    def mode(self):
        """``loc``."""
        return self.loc

    @lazy_property
    def variance(self):
        """The circular variance: ``1 - I1(concentration) / I0(concentration)``."""
        return 1 - sx.special.i1e(self.concentration) / sx.special.i0e(self.concentration)


__all__ = ["VonMises"]
