"""The LKJ distribution over lower Cholesky factors of correlation matrices."""

from __future__ import annotations

import math

import sneppx_core as sx

from . import constraints
from .beta import Beta
from .distribution import Distribution
from .utils import broadcast_all


class LKJCholesky(Distribution):
    """Lower Cholesky factors ``L`` of ``dim x dim`` correlation matrices ``M = L L^T``, with density of ``M``
    proportional to ``det(M)^(concentration - 1)`` (uniform over correlation matrices at 1). Sampled by the
    onion method (Lewandowski, Kurowicka and Joe, 2009)."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if not isinstance(dim, int) or dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        super().__init__(tuple(self.concentration.shape), (dim, dim), validate_args)
        # row i takes the squared norm of its part below the diagonal from Beta(i/2, concentration + (dim-1-i)/2)
        # (row 0, with no such part, from Beta(1/2, concentration + (dim-1)/2), which is then unused)
        half_i = sx.arange(dim, dtype=self.concentration.dtype, device=self.concentration.device) / 2
        conc1 = sx.where(half_i > 0, half_i, 0.5)
        self._beta = Beta(conc1, self.concentration.unsqueeze(-1) + (dim - 1) / 2 - half_i)

    def expand(self, batch_shape, _instance=None):
        """A new distribution with batch dims expanded to ``batch_shape`` (parameters are expanded views)."""
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = tuple(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(batch_shape + (self.dim,))
        super(LKJCholesky, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=()):
        """Row ``i``: ``sqrt(y_i)`` times a uniform direction in its first ``i`` coordinates, ``y_i`` a Beta
        draw, and the diagonal entry that makes the row a unit vector."""
        with sx.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            normal = sx.randn(self._extended_shape(sample_shape), dtype=y.dtype, device=y.device).tril(-1)
            norm = normal.norm(dim=-1, keepdim=True)
            direction = normal / sx.where(norm > 0, norm, 1.0)  # row 0 has no entries below the diagonal
            w = y.sqrt() * direction
            diag = (1 - w.pow(2).sum(-1)).clamp(min=sx.finfo(w.dtype).tiny).sqrt()
            return w + sx.diag_embed(diag)

    def log_prob(self, value):
        """``sum_i (2 (concentration - 1) + dim - i) log L_ii`` (rows ``i = 2..dim``) less the log normaliser
        of LKJ (2009, p. 1999)."""
        if self._validate_args:
            self._validate_sample(value)
        diag = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = sx.arange(2, self.dim + 1, dtype=self.concentration.dtype, device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized = (order * diag.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        log_norm = 0.5 * dm1 * math.log(math.pi) + sx.mvlgamma(alpha - 0.5, p=dm1) - sx.lgamma(alpha) * dm1
        return unnormalized - log_norm


__all__ = ["LKJCholesky"]
