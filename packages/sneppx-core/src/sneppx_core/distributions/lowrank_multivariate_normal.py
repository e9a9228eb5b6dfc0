"""The multivariate normal distribution with a low-rank-plus-diagonal covariance."""

from __future__ import annotations

import math

import sneppx_core as sx

from . import constraints
from .distribution import Distribution
from .multivariate_normal import _batch_mahalanobis, _batch_mv
from .utils import _standard_normal, lazy_property


def _add_identity(K):
    """``K + I`` for a batch of square matrices."""
    return K + sx.eye(K.shape[-1], dtype=K.dtype, device=K.device)


def _batch_capacitance_tril(W, D):
    """The lower Cholesky factor of the capacitance ``I + W^T D^-1 W`` (``D`` a batch of diagonals)."""
    return sx.linalg.cholesky(_add_identity(sx.matmul(W.mT / D.unsqueeze(-2), W)))


def _batch_lowrank_logdet(W, D, capacitance_tril):
    """``log det(W W^T + D) = log det(C) + log det(D)`` (matrix determinant lemma)."""
    return 2 * capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1) + D.log().sum(-1)


def _batch_lowrank_mahalanobis(W, D, x, capacitance_tril):
    """``x^T (W W^T + D)^-1 x`` by the Woodbury identity: ``x^T D^-1 x - |L_C^-1 W^T D^-1 x|^2``."""
    Wt_Dinv_x = _batch_mv(W.mT / D.unsqueeze(-2), x)
    return (x.pow(2) / D).sum(-1) - _batch_mahalanobis(capacitance_tril, Wt_Dinv_x)


class LowRankMultivariateNormal(Distribution):
    """The normal distribution over vectors with mean ``loc`` and covariance
    ``cov_factor @ cov_factor.T + diag(cov_diag)``; ``cov_factor`` is ``event x rank``. Densities go through
    the small ``rank x rank`` capacitance matrix (Woodbury identity, matrix determinant lemma)."""

    arg_constraints = {"loc": constraints.real_vector, "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if not all(isinstance(t, sx.Tensor) for t in (loc, cov_factor, cov_diag)):
            raise TypeError("LowRankMultivariateNormal: loc, cov_factor and cov_diag must be Tensors")
        if loc.ndim < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = tuple(loc.shape[-1:])
        if cov_factor.ndim < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional leading batch dimensions")
        if tuple(cov_factor.shape[-2:-1]) != event_shape:
            raise ValueError(f"cov_factor must be a batch of matrices with shape {event_shape[0]} x m")
        if tuple(cov_diag.shape[-1:]) != event_shape:
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape}")
        try:
            loc_, self.cov_factor, cov_diag_ = sx.broadcast_tensors(loc.unsqueeze(-1), cov_factor,
                                                                    cov_diag.unsqueeze(-1))
        except (RuntimeError, ValueError) as e:
            raise ValueError(f"Incompatible batch shapes: loc {tuple(loc.shape)}, cov_factor "
                             f"{tuple(cov_factor.shape)}, cov_diag {tuple(cov_diag.shape)}") from e
        self.loc, self.cov_diag = loc_[..., 0], cov_diag_[..., 0]
        self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag = cov_factor, cov_diag
        super().__init__(tuple(self.loc.shape[:-1]), event_shape, validate_args=validate_args)
        self._capacitance_tril = _batch_capacitance_tril(cov_factor, cov_diag)

    def expand(self, batch_shape, _instance=None):
        """A new distribution with batch dims expanded to ``batch_shape`` (parameters are expanded views)."""
        new = self._get_checked_instance(LowRankMultivariateNormal, _instance)
        loc_shape = tuple(batch_shape) + self.event_shape
        new.loc, new.cov_diag = self.loc.expand(loc_shape), self.cov_diag.expand(loc_shape)
        new.cov_factor = self.cov_factor.expand(loc_shape + tuple(self.cov_factor.shape[-1:]))
        for name in ("_unbroadcasted_cov_factor", "_unbroadcasted_cov_diag", "_capacitance_tril"):
            setattr(new, name, getattr(self, name))
        super(LowRankMultivariateNormal, new).__init__(tuple(batch_shape), self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        """``loc``."""
        return self.loc

    @property
    def mode(self):
        """``loc``."""
        return self.loc

    @lazy_property
    def variance(self):
        """``sum_k W_ik^2 + D_i``, the diagonal of the covariance."""
        return (self._unbroadcasted_cov_factor.pow(2).sum(-1) + self._unbroadcasted_cov_diag).expand(
            self._batch_shape + self._event_shape)

    @lazy_property
    def scale_tril(self):
        """The lower Cholesky factor of the covariance, as ``D^1/2 chol(I + D^-1/2 W W^T D^-1/2)`` (whose
        eigenvalues are at least 1, so the factorisation is well conditioned)."""
        sqrt_d = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        scaled_w = self._unbroadcasted_cov_factor / sqrt_d
        tril = sqrt_d * sx.linalg.cholesky(_add_identity(sx.matmul(scaled_w, scaled_w.mT)))
        return tril.expand(self._batch_shape + self._event_shape * 2)

    @lazy_property
    def covariance_matrix(self):
        """``W W^T + diag(D)``."""
        W = self._unbroadcasted_cov_factor
        cov = sx.matmul(W, W.mT) + sx.diag_embed(self._unbroadcasted_cov_diag)
        return cov.expand(self._batch_shape + self._event_shape * 2)

    @lazy_property
    def precision_matrix(self):
        """``D^-1 - D^-1 W C^-1 W^T D^-1`` (Woodbury), ``C`` the capacitance."""
        Wt_Dinv = self._unbroadcasted_cov_factor.mT / self._unbroadcasted_cov_diag.unsqueeze(-2)
        A = sx.linalg.solve_triangular(self._capacitance_tril, Wt_Dinv, upper=False)
        precision = sx.diag_embed(self._unbroadcasted_cov_diag.reciprocal()) - A.mT @ A
        return precision.expand(self._batch_shape + self._event_shape * 2)

    def rsample(self, sample_shape=()):
        """``loc + W eps_W + sqrt(D) eps_D`` with standard normal noise: differentiable in all parameters."""
        shape = self._extended_shape(sample_shape)
        dtype, device = self.loc.dtype, self.loc.device
        eps_w = _standard_normal(shape[:-1] + tuple(self.cov_factor.shape[-1:]), dtype=dtype, device=device)
        eps_d = _standard_normal(shape, dtype=dtype, device=device)
        return (self.loc + _batch_mv(self._unbroadcasted_cov_factor, eps_w)
                + self._unbroadcasted_cov_diag.sqrt() * eps_d)

    def _log_det(self):
        return _batch_lowrank_logdet(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag,
                                     self._capacitance_tril)

    def log_prob(self, value):
        """Through the capacitance (Woodbury, determinant lemma)."""
        if self._validate_args:
            self._validate_sample(value)
        maha = _batch_lowrank_mahalanobis(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag,
                                          value - self.loc, self._capacitance_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + self._log_det() + maha)

    def entropy(self):
        """``(n (1 + log 2 pi) + log det Sigma) / 2``."""
        H = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._log_det())
        return H.expand(self._batch_shape)


__all__ = ["LowRankMultivariateNormal"]
