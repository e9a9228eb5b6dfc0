"""The Gumbel (type-I extreme value) distribution."""

from __future__ import annotations

import math
import numbers

import sneppx_core as sx

from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform
from .uniform import Uniform
from .utils import broadcast_all, euler_constant


class Gumbel(TransformedDistribution):
    """The Gumbel distribution with location ``loc`` and scale ``scale``: ``loc - scale log(-log U)`` for
    ``U`` uniform on (0, 1)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        finfo = sx.finfo(self.loc.dtype)
        if isinstance(loc, numbers.Number) and isinstance(scale, numbers.Number):
            base_dist = Uniform(finfo.tiny, 1 - finfo.eps, validate_args=validate_args)
        else:
            base_dist = Uniform(sx.full_like(self.loc, finfo.tiny), sx.full_like(self.loc, 1 - finfo.eps),
                                validate_args=validate_args)
        transforms = [ExpTransform().inv, AffineTransform(loc=0, scale=-sx.ones_like(self.scale)),
                      ExpTransform().inv, AffineTransform(loc=loc, scale=-self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """A copy with the batch expanded to ``batch_shape``."""
        new = self._get_checked_instance(Gumbel, _instance)
        new.loc, new.scale = self.loc.expand(batch_shape), self.scale.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    def log_prob(self, value):
        """``z - exp(z) - log scale`` with ``z = (loc - value) / scale``."""
        if self._validate_args:
            self._validate_sample(value)
        y = (self.loc - value) / self.scale
        return (y - y.exp()) - self.scale.log()

    @property
    def mean(self):
        """``loc + scale * euler_constant``."""
        return self.loc + self.scale * euler_constant

    @property
    def mode(self):
        """``loc``."""
        return self.loc

    @property
    def stddev(self):
        """``scale * pi / sqrt(6)``."""
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self):
        """``(scale * pi)^2 / 6``."""
        return self.stddev.pow(2)

    def entropy(self):
        """``log scale + 1 + euler_constant``."""
        return self.scale.log() + (1 + euler_constant)


__all__ = ["Gumbel"]
