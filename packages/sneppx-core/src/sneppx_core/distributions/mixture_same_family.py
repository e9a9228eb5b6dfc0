"""``MixtureSameFamily``: a mixture whose components are one batched distribution."""

from __future__ import annotations

import sneppx_core as sx

from . import constraints
from .categorical import Categorical
from .distribution import Distribution


class MixtureSameFamily(Distribution):
    """A batch of mixtures: ``mixture_distribution`` (a :class:`Categorical` over ``k`` components) picks a
    component of ``component_distribution``, whose rightmost batch dim (of size ``k``) indexes them.

    ``MixtureSameFamily(Categorical(probs), Normal(locs, scales))`` is a Gaussian mixture; with
    ``Independent(Normal(locs, scales), 1)`` components it is a mixture of diagonal multivariate normals.
    """

    arg_constraints: dict = {}
    has_rsample = False

    def __init__(self, mixture_distribution, component_distribution, validate_args=None):
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError("The Mixture distribution needs to be an instance of "
                             "sneppx_core.distributions.Categorical")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("The Component distribution needs to be an instance of "
                             "sneppx_core.distributions.Distribution")
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        mdbs = tuple(mixture_distribution.batch_shape)
        cbs = tuple(component_distribution.batch_shape)
        if not cbs:
            raise ValueError("MixtureSameFamily: component_distribution needs a batch dim indexing the components")
        cdbs = cbs[:-1]
        for size1, size2 in zip(reversed(mdbs), reversed(cdbs)):
            if size1 != 1 and size2 != 1 and size1 != size2:
                raise ValueError(f"`mixture_distribution.batch_shape` ({mdbs}) is not compatible with "
                                 f"`component_distribution.batch_shape`({cdbs})")
        km, kc = mixture_distribution.logits.shape[-1], cbs[-1]
        if km != kc:
            raise ValueError(f"`mixture_distribution component` ({km}) does not equal "
                             f"`component_distribution.batch_shape[-1]` ({kc})")
        self._num_component = km
        event_shape = tuple(component_distribution.event_shape)
        self._event_ndims = len(event_shape)
        super().__init__(batch_shape=cdbs, event_shape=event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """A copy with both the mixture and the components expanded to ``batch_shape``."""
        batch_shape = tuple(batch_shape)
        new = self._get_checked_instance(MixtureSameFamily, _instance)
        new._component_distribution = self._component_distribution.expand(batch_shape + (self._num_component,))
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        new._num_component = self._num_component
        new._event_ndims = self._event_ndims
        super(MixtureSameFamily, new).__init__(batch_shape=batch_shape,
                                               event_shape=new._component_distribution.event_shape,
                                               validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property
    def support(self):
        """The component support, checked per component."""
        return constraints.MixtureSameFamilyConstraint(self._component_distribution.support)

    @property
    def mixture_distribution(self):
        """The :class:`Categorical` over the components."""
        return self._mixture_distribution

    @property
    def component_distribution(self):
        """The batched component distribution."""
        return self._component_distribution

    @property
    def mean(self):
        """``sum_k p_k mean_k``."""
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        return (probs * self.component_distribution.mean).sum(-1 - self._event_ndims)

    @property
    def variance(self):
        """The law of total variance: ``sum_k p_k var_k + sum_k p_k (mean_k - mean)^2``."""
        probs = self._pad_mixture_dimensions(self.mixture_distribution.probs)
        dim = -1 - self._event_ndims
        mean_cond_var = (probs * self.component_distribution.variance).sum(dim)
        var_cond_mean = (probs * (self.component_distribution.mean - self._pad(self.mean)).pow(2.0)).sum(dim)
        return mean_cond_var + var_cond_mean

    def cdf(self, x):
        """``sum_k p_k cdf_k(x)``."""
        cdf_x = self.component_distribution.cdf(self._pad(x))
        return (cdf_x * self.mixture_distribution.probs).sum(-1)

    def log_prob(self, x):
        """``logsumexp_k(log p_k + log_prob_k(x))``."""
        if self._validate_args:
            self._validate_sample(x)
        log_prob_x = self.component_distribution.log_prob(self._pad(x))  # sample + batch + (k,)
        log_mix_prob = sx.log_softmax(self.mixture_distribution.logits, dim=-1)
        return sx.logsumexp(log_prob_x + log_mix_prob, dim=-1)

    def sample(self, sample_shape=()):
        """A component index from the mixture, then that component's draw (no gradient)."""
        sample_shape = (sample_shape,) if isinstance(sample_shape, int) else tuple(sample_shape)
        with sx.no_grad():
            gather_dim = len(sample_shape) + len(self.batch_shape)
            es = self.event_shape
            mix_sample = self.mixture_distribution.sample(sample_shape)
            mix_batch = tuple(self.mixture_distribution.batch_shape)
            # a mixture batched more narrowly than the components picks for all of them (PyTorch raises here)
            mix_sample = mix_sample.reshape(sample_shape + (1,) * (len(self.batch_shape) - len(mix_batch)) + mix_batch)
            mix_shape = sample_shape + tuple(self.batch_shape)
            comp_samples = self.component_distribution.sample(sample_shape)
            index = mix_sample.expand(mix_shape).reshape(mix_shape + (1,) * (len(es) + 1))
            index = index.expand(mix_shape + (1,) + es)
            return comp_samples.gather(gather_dim, index).squeeze(gather_dim)

    def _pad(self, x):
        return x.unsqueeze(-1 - self._event_ndims)

    def _pad_mixture_dimensions(self, x):
        dist_batch_ndims = len(self.batch_shape)
        cat_batch_ndims = len(self.mixture_distribution.batch_shape)
        pad_ndims = 0 if cat_batch_ndims == 1 else dist_batch_ndims - cat_batch_ndims
        xs = tuple(x.shape)
        return x.reshape(xs[:-1] + (1,) * pad_ndims + xs[-1:] + (1,) * self._event_ndims)

    def __repr__(self):
        return f"MixtureSameFamily(\n  {self.mixture_distribution},\n  {self.component_distribution})"


__all__ = ["MixtureSameFamily"]
