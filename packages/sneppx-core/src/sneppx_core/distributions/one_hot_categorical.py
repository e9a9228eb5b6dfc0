"""The one-hot categorical distribution, and its straight-through reparameterised variant."""

from __future__ import annotations

import sneppx_core as sx

from . import constraints
from .categorical import Categorical
from .distribution import Distribution


class OneHotCategorical(Distribution):
    """One-hot vectors over the categories of the last dim of ``probs`` or ``logits`` (normalised as in
    :class:`Categorical`); the event is that last dim."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        batch_shape = self._categorical.batch_shape
        super().__init__(batch_shape, self._categorical.param_shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """A new distribution with batch dims expanded to ``batch_shape`` (parameters are expanded views)."""
        return self._expand_params(OneHotCategorical, batch_shape, _instance, ("_categorical",))

    @property
    def _param(self):
        return self._categorical._param

    @property
    def probs(self):
        """The normalised probabilities of the categories."""
        return self._categorical.probs

    @property
    def logits(self):
        """The normalised log-probabilities of the categories."""
        return self._categorical.logits

    @property
    def param_shape(self):
        """The shape of the parameter tensor."""
        return self._categorical.param_shape

    @property
    def mean(self):
        """``probs``."""
        return self._categorical.probs

    @property
    def mode(self):
        """The one-hot vector of the most probable category."""
        probs = self._categorical.probs
        return sx.functional.one_hot(probs.argmax(-1), num_classes=probs.shape[-1]).to(probs.dtype)

    @property
    def variance(self):
        """``probs * (1 - probs)``."""
        return self._categorical.probs * (1 - self._categorical.probs)

    def sample(self, sample_shape=()):
        """One-hot vectors of categorical draws."""
        indices = self._categorical.sample(sample_shape)
        return sx.functional.one_hot(indices, self._categorical._num_events).to(self._categorical.probs.dtype)

    def log_prob(self, value):
        """The log-probability of the category that is hot."""
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.max(-1)[1])

    def entropy(self):
        """The entropy of the categorical distribution."""
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        """The ``n`` one-hot vectors along a new leading dim."""
        n = self.event_shape[0]
        values = sx.eye(n, dtype=self._param.dtype, device=self._param.device)
        values = values.view((n,) + (1,) * len(self.batch_shape) + (n,))
        return values.expand((n,) + self.batch_shape + (n,)) if expand else values


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """:class:`OneHotCategorical` with the straight-through gradient estimator (Bengio et al., 2013):
    ``rsample`` returns one-hot samples whose gradient is that of ``probs``."""

    has_rsample = True

    def rsample(self, sample_shape=()):
        """A one-hot sample plus ``probs - probs.detach()`` (zero in value, the identity in gradient)."""
        samples = self.sample(sample_shape)
        probs = self._categorical.probs
        return samples + (probs - probs.detach())


__all__ = ["OneHotCategorical", "OneHotCategoricalStraightThrough"]
