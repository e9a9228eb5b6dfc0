"""The multivariate normal distribution, and the batched Cholesky helpers its relatives share."""

from __future__ import annotations

import math

import sneppx_core as sx

from . import constraints
from .distribution import Distribution
from .utils import _standard_normal, lazy_property

_MATRIX_NAMES = ("covariance_matrix", "precision_matrix", "scale_tril")


def _batch_mv(bmat, bvec):
    """Matrix-vector products of batches of matrices and vectors whose batch shapes broadcast."""
    return sx.matmul(bmat, bvec.unsqueeze(-1)).squeeze(-1)


def _batch_mahalanobis(bL, bx):
    """``x^T (L L^T)^-1 x`` for lower-triangular ``L`` (batch ``B``) and vectors ``x`` (batch ``S + B``,
    ``B`` broadcastable): one triangular solve per ``L``, the extra leading dims of ``x`` moved to columns."""
    n = bx.shape[-1]
    shape = sx.broadcast_shapes(tuple(bx.shape[:-1]), tuple(bL.shape[:-2]))
    lead = shape[: len(shape) - (bL.ndim - 2)]
    rhs = bx.expand(shape + (n,)).reshape((math.prod(lead),) + shape[len(lead):] + (n,))
    rhs = rhs.permute(*range(1, rhs.ndim), 0)  # batch..., n, m
    squares = sx.linalg.solve_triangular(bL, rhs, upper=False).pow(2).sum(-2)  # batch..., m
    return squares.permute(squares.ndim - 1, *range(squares.ndim - 1)).reshape(shape)


def _precision_to_scale_tril(P):
    """The lower Cholesky factor of ``P^-1``, without inverting ``P``: with ``J`` the reversal permutation,
    ``J chol(J P J) J`` is an upper ``U`` with ``P = U U^T``, so ``P^-1 = L L^T`` for ``L = U^-T``."""
    upper_t = sx.flip(sx.linalg.cholesky(sx.flip(P, (-2, -1))), (-2, -1)).mT
    eye = sx.eye(P.shape[-1], dtype=P.dtype, device=P.device)
    return sx.linalg.solve_triangular(upper_t, eye, upper=False)


def _one_matrix(covariance_matrix, precision_matrix, scale_tril, what):
    """``(name, matrix)`` of the one of the three given (ValueError unless exactly one is, or when it has
    fewer than two dims)."""
    given = [(n, m) for n, m in zip(_MATRIX_NAMES, (covariance_matrix, precision_matrix, scale_tril))
             if m is not None]
    if len(given) != 1:
        raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
    name, matrix = given[0]
    if not isinstance(matrix, sx.Tensor):
        raise TypeError(f"{what}: {name} must be a Tensor, not {type(matrix).__name__}")
    if matrix.ndim < 2 or matrix.shape[-1] != matrix.shape[-2]:
        raise ValueError(f"{what}: {name} must be a batch of square matrices (at least two-dimensional, with "
                         f"optional leading batch dimensions), got shape {tuple(matrix.shape)}")
    return name, matrix


def _to_scale_tril(name, matrix):
    """The lower Cholesky factor of the covariance that ``matrix`` (one of ``_MATRIX_NAMES``) describes."""
    if name == "scale_tril":
        return matrix
    if name == "covariance_matrix":
        return sx.linalg.cholesky(matrix)
    return _precision_to_scale_tril(matrix)


def _expand_matrices(dist, new, cov_shape):
    """Copies the unbroadcast factor and the matrices ``dist`` holds, expanded to ``cov_shape``, onto ``new``."""
    new._unbroadcasted_scale_tril = dist._unbroadcasted_scale_tril
    for name in _MATRIX_NAMES:
        if name in dist.__dict__:
            setattr(new, name, getattr(dist, name).expand(cov_shape))


def _half_log_det(scale_tril):
    """``log det(L L^T) / 2`` for a lower Cholesky factor ``L``: the sum of the logs of its diagonal."""
    return scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)


class MultivariateNormal(Distribution):
    """The normal distribution over vectors with mean ``loc`` and a covariance given by exactly one of
    ``covariance_matrix``, ``precision_matrix`` (both positive definite) or ``scale_tril`` (its lower Cholesky
    factor, the most efficient: everything is computed from that factor). Batch dims broadcast."""

    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        if not isinstance(loc, sx.Tensor):
            raise TypeError(f"MultivariateNormal: loc must be a Tensor, not {type(loc).__name__}")
        if loc.ndim < 1:
            raise ValueError("loc must be at least one-dimensional.")
        name, matrix = _one_matrix(covariance_matrix, precision_matrix, scale_tril, "MultivariateNormal")
        if matrix.shape[-1] != loc.shape[-1]:
            raise ValueError(f"MultivariateNormal: {name} of shape {tuple(matrix.shape)} does not match loc of "
                             f"shape {tuple(loc.shape)}")
        batch_shape = sx.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1]))
        setattr(self, name, matrix.expand(batch_shape + (-1, -1)))
        self.loc = loc.expand(batch_shape + (-1,))
        super().__init__(batch_shape, tuple(loc.shape[-1:]), validate_args=validate_args)
        self._unbroadcasted_scale_tril = _to_scale_tril(name, matrix)

    def expand(self, batch_shape, _instance=None):
        """A new distribution with batch dims expanded to ``batch_shape`` (parameters are expanded views)."""
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = tuple(batch_shape)
        new.loc = self.loc.expand(batch_shape + self.event_shape)
        _expand_matrices(self, new, batch_shape + self.event_shape * 2)
        super(MultivariateNormal, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def scale_tril(self):
        """The lower Cholesky factor of the covariance."""
        return self._unbroadcasted_scale_tril.expand(self._batch_shape + self._event_shape * 2)

    @lazy_property
    def covariance_matrix(self):
        """``L L^T``."""
        L = self._unbroadcasted_scale_tril
        return sx.matmul(L, L.mT).expand(self._batch_shape + self._event_shape * 2)

    @lazy_property
    def precision_matrix(self):
        """``(L L^T)^-1`` from the factor."""
        return sx.cholesky_inverse(self._unbroadcasted_scale_tril).expand(self._batch_shape + self._event_shape * 2)

    @property
    def mean(self):
        """``loc``."""
        return self.loc

    @property
    def mode(self):
        """``loc``."""
        return self.loc

    @property
    def variance(self):
        """The diagonal of the covariance."""
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(self._batch_shape + self._event_shape)

    def rsample(self, sample_shape=()):
        """``loc + L eps`` with standard normal ``eps``: differentiable in ``loc`` and the factor ``L``."""
        eps = _standard_normal(self._extended_shape(sample_shape), dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def log_prob(self, value):
        """Through the factor: one triangular solve and the log of its diagonal."""
        if self._validate_args:
            self._validate_sample(value)
        maha = _batch_mahalanobis(self._unbroadcasted_scale_tril, value - self.loc)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + maha) - _half_log_det(
            self._unbroadcasted_scale_tril)

    def entropy(self):
        """``(n (1 + log 2 pi) + log det Sigma) / 2``."""
        H = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + _half_log_det(self._unbroadcasted_scale_tril)
        return H.expand(self._batch_shape)


__all__ = ["MultivariateNormal"]
