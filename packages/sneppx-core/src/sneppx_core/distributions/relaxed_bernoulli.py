"""The relaxed (concrete) Bernoulli distribution and its logit."""

from __future__ import annotations

import numbers

import sneppx_core as sx

from . import constraints
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import SigmoidTransform
from .utils import _BinaryProbs, broadcast_all, clamp_probs


def _as_temperature(temperature, like):
    """``temperature`` as a tensor of ``like``'s dtype when it is a Python number."""
    if isinstance(temperature, numbers.Number):
        return sx.tensor(float(temperature), dtype=like.dtype, device=like.device)
    if not isinstance(temperature, sx.Tensor):
        raise TypeError(f"temperature must be a Tensor or a number, got {type(temperature).__name__}")
    return temperature


class LogitRelaxedBernoulli(_BinaryProbs, Distribution):
    """The logit of a :class:`RelaxedBernoulli` (Maddison et al., 2017): ``(logit(u) + logits) / temperature``
    with ``u`` uniform; pass ``temperature`` and exactly one of ``probs`` and ``logits``."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = isinstance(probs, numbers.Number)
            (self.probs,) = broadcast_all(probs)
        else:
            is_scalar = isinstance(logits, numbers.Number)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        self.temperature = _as_temperature(temperature, self._param)
        super().__init__(() if is_scalar else tuple(self._param.shape), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """A copy with the parameter expanded to ``batch_shape``."""
        new = self._expand_params(LogitRelaxedBernoulli, batch_shape, _instance, ("probs", "logits"))
        new.temperature = self.temperature
        return new

    def rsample(self, sample_shape=()):
        """``(logit(u) + logit(probs)) / temperature`` with ``u ~ Uniform(0, 1)`` (both clamped away from
        0 and 1)."""
        shape = self._extended_shape(sample_shape)
        probs = clamp_probs(self.probs.expand(shape))
        uniforms = clamp_probs(sx.rand(shape, dtype=probs.dtype, device=probs.device))
        return (uniforms.log() - (-uniforms).log1p() + probs.log() - (-probs).log1p()) / self.temperature

    def log_prob(self, value):
        """``log t + d - 2 log(1 + exp(d))`` with ``d = logits - t value``."""
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value.mul(self.temperature)
        return self.temperature.log() + diff - 2 * diff.exp().log1p()


class RelaxedBernoulli(TransformedDistribution):
    """A continuous relaxation of ``Bernoulli`` on (0, 1): the sigmoid of a :class:`LogitRelaxedBernoulli`;
    reparameterisable. Pass ``temperature`` and exactly one of ``probs`` and ``logits``."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base_dist = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base_dist, SigmoidTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """A copy with the batch expanded to ``batch_shape``."""
        return super().expand(batch_shape, _instance=self._get_checked_instance(RelaxedBernoulli, _instance))

    @property
    def temperature(self):
        """The relaxation temperature."""
        return self.base_dist.temperature

    @property
    def logits(self):
        """The log-odds of 1."""
        return self.base_dist.logits

    @property
    def probs(self):
        """The probability of 1."""
        return self.base_dist.probs


__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli"]
