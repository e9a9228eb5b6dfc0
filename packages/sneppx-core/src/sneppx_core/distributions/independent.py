"""``Independent``: some batch dims of a distribution read as event dims."""

from __future__ import annotations

from . import constraints
from .distribution import Distribution
from .utils import _sum_rightmost


class Independent(Distribution):
    """``base_distribution`` with its rightmost ``reinterpreted_batch_ndims`` batch dims moved into the event:
    ``log_prob`` and ``entropy`` sum over them. ``Independent(Normal(loc, scale), 1)`` is a diagonal normal
    with the shapes of a ``MultivariateNormal``."""

    arg_constraints: dict = {}

    def __init__(self, base_distribution, reinterpreted_batch_ndims, validate_args=None):
        ndims = len(base_distribution.batch_shape)
        if reinterpreted_batch_ndims > ndims:
            raise ValueError("Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), "
                             f"actual {reinterpreted_batch_ndims} vs {ndims}")
        shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        split = len(shape) - reinterpreted_batch_ndims - len(base_distribution.event_shape)
        self.base_dist = base_distribution
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        super().__init__(shape[:split], shape[split:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """A copy whose base distribution is expanded to ``batch_shape`` plus the reinterpreted dims."""
        new = self._get_checked_instance(Independent, _instance)
        batch_shape = tuple(batch_shape)
        new.base_dist = self.base_dist.expand(batch_shape + self.event_shape[: self.reinterpreted_batch_ndims])
        new.reinterpreted_batch_ndims = self.reinterpreted_batch_ndims
        super(Independent, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def has_rsample(self):
        """Whether the base distribution has ``rsample``."""
        return self.base_dist.has_rsample

    @property
    def has_enumerate_support(self):
        """The base distribution's, when no dims are reinterpreted (no cartesian products)."""
        return self.reinterpreted_batch_ndims == 0 and self.base_dist.has_enumerate_support

    @constraints.dependent_property
    def support(self):
        """The base support, made ``independent`` over the reinterpreted dims."""
        result = self.base_dist.support
        if self.reinterpreted_batch_ndims:
            result = constraints.independent(result, self.reinterpreted_batch_ndims)
        return result

    @property
    def mean(self):
        """The base distribution's mean."""
        return self.base_dist.mean

    @property
    def mode(self):
        """The base distribution's mode."""
        return self.base_dist.mode

    @property
    def variance(self):
        """The base distribution's variance."""
        return self.base_dist.variance

    def sample(self, sample_shape=()):
        """A sample of the base distribution (same shape)."""
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=()):
        """A reparameterised sample of the base distribution."""
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value):
        """The base ``log_prob`` summed over the reinterpreted dims."""
        return _sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self):
        """The base entropy summed over the reinterpreted dims."""
        return _sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def enumerate_support(self, expand=True):
        """The base support; NotImplementedError when dims are reinterpreted (a cartesian product)."""
        if self.reinterpreted_batch_ndims > 0:
            raise NotImplementedError("Enumeration over cartesian product is not implemented")
        return self.base_dist.enumerate_support(expand=expand)

    def __repr__(self):
        return f"{self.__class__.__name__}({self.base_dist}, {self.reinterpreted_batch_ndims})"


__all__ = ["Independent"]
