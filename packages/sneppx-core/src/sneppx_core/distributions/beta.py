"""The beta distribution, as the first coordinate of a two-component Dirichlet (as PyTorch computes it)."""

from __future__ import annotations

import numbers

import sneppx_core as sx

from . import constraints
from .dirichlet import Dirichlet
from .exp_family import ExponentialFamily
from .utils import broadcast_all


class Beta(ExponentialFamily):
    """The beta distribution on [0, 1] with ``concentration1`` (alpha) and ``concentration0`` (beta)."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        if isinstance(concentration1, numbers.Number) and isinstance(concentration0, numbers.Number):
            both = sx.tensor([float(concentration1), float(concentration0)], dtype=sx.get_default_dtype())
        else:
            concentration1, concentration0 = broadcast_all(concentration1, concentration0)
            both = sx.stack([concentration1, concentration0], -1)
        self._dirichlet = Dirichlet(both, validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """A new Beta with both concentrations expanded to ``batch_shape``."""
        return self._expand_params(Beta, batch_shape, _instance, ("_dirichlet",))

    @property
    def mean(self):
        """``alpha / (alpha + beta)``."""
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        """``(alpha - 1) / (alpha + beta - 2)`` (a vertex when both < 1)."""
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self):
        """``alpha beta / ((alpha + beta)^2 (alpha + beta + 1))``."""
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        """The first coordinate of a Dirichlet draw: differentiable in both concentrations (implicitly)."""
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value):
        """The two-component Dirichlet's log density at ``(value, 1 - value)``."""
        if self._validate_args:
            self._validate_sample(value)
        heads_tails = sx.stack([value, 1.0 - value], -1)
        return self._dirichlet.log_prob(heads_tails)

    def entropy(self):
        """The two-component Dirichlet's entropy."""
        return self._dirichlet.entropy()

    @property
    def concentration1(self):
        """The first concentration (alpha)."""
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self):
        """The second concentration (beta)."""
        return self._dirichlet.concentration[..., 1]

    @property
    def _natural_params(self):
        return (self.concentration1, self.concentration0)

    def _log_normalizer(self, x, y):
        return sx.lgamma(x) + sx.lgamma(y) - sx.lgamma(x + y)


__all__ = ["Beta"]
