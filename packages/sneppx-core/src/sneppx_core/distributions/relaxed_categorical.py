"""The relaxed one-hot categorical (concrete / Gumbel-softmax) distribution and its log."""

from __future__ import annotations

import sneppx_core as sx

from . import constraints
from .categorical import Categorical
from .distribution import Distribution
from .relaxed_bernoulli import _as_temperature
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform
from .utils import broadcast_all, clamp_probs


class ExpRelaxedCategorical(Distribution):
    """The log of a :class:`RelaxedOneHotCategorical` point (Maddison et al., 2017): a log-softmax of
    ``(logits + Gumbel noise) / temperature``; pass ``temperature`` and exactly one of ``probs`` and
    ``logits`` (over the last dim)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector  # the true support is a submanifold of this
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        self.temperature = _as_temperature(temperature, self._categorical._param)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """A copy with the batch expanded to ``batch_shape``."""
        new = self._expand_params(ExpRelaxedCategorical, batch_shape, _instance, ("_categorical",))
        new.temperature = self.temperature
        return new

    @property
    def param_shape(self):
        """The shape of the parameter tensor."""
        return self._categorical.param_shape

    @property
    def logits(self):
        """The normalised log-probabilities of the categories."""
        return self._categorical.logits

    @property
    def probs(self):
        """The probabilities of the categories."""
        return self._categorical.probs

    def rsample(self, sample_shape=()):
        """``log_softmax((logits + g) / temperature)`` with ``g`` standard Gumbel noise."""
        shape = self._extended_shape(sample_shape)
        uniforms = clamp_probs(sx.rand(shape, dtype=self.logits.dtype, device=self.logits.device))
        gumbels = -((-(uniforms.log())).log())
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, value):
        """The concrete log-density of the log-simplex point ``value``."""
        k = self._categorical._num_events
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        log_scale = sx.full_like(self.temperature, float(k)).lgamma() - self.temperature.log().mul(-(k - 1))
        score = logits - value.mul(self.temperature)
        score = (score - score.logsumexp(dim=-1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(TransformedDistribution):
    """A continuous relaxation of ``OneHotCategorical`` on the simplex: ``exp`` of an
    :class:`ExpRelaxedCategorical`; reparameterisable (the Gumbel-softmax trick)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base_dist = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base_dist, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """A copy with the batch expanded to ``batch_shape``."""
        return super().expand(batch_shape,
                              _instance=self._get_checked_instance(RelaxedOneHotCategorical, _instance))

    @property
    def temperature(self):
        """The relaxation temperature."""
        return self.base_dist.temperature

    @property
    def logits(self):
        """The normalised log-probabilities of the categories."""
        return self.base_dist.logits

    @property
    def probs(self):
        """The probabilities of the categories."""
        return self.base_dist.probs


__all__ = ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"]
