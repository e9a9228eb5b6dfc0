"""The continuous Bernoulli distribution (Loaiza-Ganem and Cunningham, NeurIPS 2019)."""

from __future__ import annotations

import math
import numbers

import sneppx_core as sx

from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits


class ContinuousBernoulli(ExponentialFamily):
    """The continuous Bernoulli distribution on [0, 1], with ``probs`` in (0, 1) or real ``logits`` (not both).

    The density is proportional to ``probs^x (1 - probs)^(1 - x)``; ``probs`` is not a probability (nor ``logits``
    log-odds). Near ``probs = 0.5`` (within ``lims``) Taylor expansions replace the unstable closed forms.
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = isinstance(probs, numbers.Number)
            (self.probs,) = broadcast_all(probs)
            if validate_args is not None and not bool(self.arg_constraints["probs"].check(self.probs).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(self.probs)
        else:
            is_scalar = isinstance(logits, numbers.Number)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        self._lims = lims
        super().__init__(() if is_scalar else tuple(self._param.shape), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """A new ContinuousBernoulli with its parameter expanded to ``batch_shape``."""
        new = self._expand_params(ContinuousBernoulli, batch_shape, _instance, ("probs", "logits"))
        new._lims = self._lims
        return new

    def _outside_unstable_region(self):
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self):
        """``probs``, with ``lims[0]`` put where it lies within ``lims`` (so the closed forms stay finite there)."""
        return sx.where(self._outside_unstable_region(), self.probs, self._lims[0] * sx.ones_like(self.probs))

    def _stable(self, closed_form, taylor):
        """``closed_form`` outside ``lims``; near ``probs = 1/2``, where it is 0/0, the Taylor expansion."""
        return sx.where(self._outside_unstable_region(), closed_form, taylor)

    def _cut_log_ratio(self):
        """``(cut, log((1 - cut) / cut))`` for the cut probs."""
        cut = self._cut_probs()
        return cut, sx.log1p(-cut) - sx.log(cut)

    def _cont_bern_log_norm(self):
        """The log normalising constant ``log(2 atanh(1 - 2p) / (1 - 2p))`` as a function of ``p = probs``."""
        cut, log_ratio = self._cut_log_ratio()
        below_half = cut <= 0.5
        # log|1 - 2 cut| with log1p below 1/2, where 1 - 2 cut loses digits for tiny cut
        log_gap = sx.where(below_half, sx.log1p(-2.0 * sx.where(below_half, cut, 0.0)),
                           sx.log(2.0 * sx.where(cut >= 0.5, cut, 1.0) - 1.0))
        d2 = sx.pow(self.probs - 0.5, 2)
        return self._stable(sx.log(sx.abs(log_ratio)) - log_gap, math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * d2) * d2)

    @property
    def mean(self):
        """The mean (a Taylor expansion near ``probs = 1/2``)."""
        cut, log_ratio = self._cut_log_ratio()
        d = self.probs - 0.5
        return self._stable(cut / (2.0 * cut - 1.0) + 1.0 / log_ratio, 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * d * d) * d)

    @property
    def stddev(self):
        """The square root of the variance."""
        return sx.sqrt(self.variance)

    @property
    def variance(self):
        """The variance (a Taylor expansion near ``probs = 1/2``)."""
        cut, log_ratio = self._cut_log_ratio()
        closed = cut * (cut - 1.0) / sx.pow(1.0 - 2.0 * cut, 2) + 1.0 / sx.pow(log_ratio, 2)
        d2 = sx.pow(self.probs - 0.5, 2)
        return self._stable(closed, 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * d2) * d2)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self):
        """The shape of the parameter tensor."""
        return tuple(self._param.shape)

    def sample(self, sample_shape=()):
        """``icdf(u)`` with ``u`` uniform on [0, 1), without gradient."""
        shape = self._extended_shape(sample_shape)
        u = sx.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        with sx.no_grad():
            return self.icdf(u)

    def rsample(self, sample_shape=()):
        """``icdf(u)`` with ``u`` uniform on [0, 1): differentiable in the parameter."""
        shape = self._extended_shape(sample_shape)
        u = sx.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        return self.icdf(u)

    def log_prob(self, value):
        """``value log(probs) + (1 - value) log(1 - probs)`` plus the log normalising constant."""
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return (-sx.functional.binary_cross_entropy_with_logits(logits, value, reduction="none")
                + self._cont_bern_log_norm())

    def cdf(self, value):
        """The closed-form CDF (the identity within ``lims`` of ``probs = 1/2``, as in PyTorch)."""
        if self._validate_args:
            self._validate_sample(value)
        cut = self._cut_probs()
        closed = (sx.pow(cut, value) * sx.pow(1.0 - cut, 1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        inside = self._stable(closed, value)
        return sx.where(value <= 0.0, sx.zeros_like(value), sx.where(value >= 1.0, sx.ones_like(value), inside))

    def icdf(self, value):
        """The closed-form inverse CDF (the identity within ``lims`` of ``probs = 1/2``)."""
        cut, log_ratio = self._cut_log_ratio()
        return self._stable((sx.log1p(-cut) - sx.log1p(-cut + value * (2.0 * cut - 1.0))) / log_ratio, value)

    def entropy(self):
        """The differential entropy."""
        log_probs0 = sx.log1p(-self.probs)
        log_probs1 = sx.log(self.probs)
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        """The log normalising constant as a function of the natural parameter (the logits)."""
        out_unst_reg = (x <= self._lims[0] - 0.5) | (x > self._lims[1] - 0.5)
        cut_nat_params = sx.where(out_unst_reg, x, (self._lims[0] - 0.5) * sx.ones_like(x))
        log_norm = sx.log(sx.abs(sx.special.expm1(cut_nat_params))) - sx.log(sx.abs(cut_nat_params))
        taylor = 0.5 * x + sx.pow(x, 2) / 24.0 - sx.pow(x, 4) / 2880.0
        return sx.where(out_unst_reg, log_norm, taylor)


__all__ = ["ContinuousBernoulli"]
