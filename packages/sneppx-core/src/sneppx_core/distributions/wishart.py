"""The Wishart distribution over positive-definite matrices."""

from __future__ import annotations

import math
import numbers
import warnings

import sneppx_core as sx

from . import constraints
from .exp_family import ExponentialFamily
from .gamma import _standard_gamma
from .multivariate_normal import _expand_matrices, _half_log_det, _one_matrix, _to_scale_tril
from .utils import lazy_property, vec_to_tril_matrix

_LOG_2 = math.log(2)


def _mvdigamma(x, p):
    """The multivariate digamma function: ``sum_{i<p} digamma(x - i/2)``."""
    if not bool(x.gt((p - 1) / 2).all()):
        raise ValueError("Wrong domain for multivariate digamma function.")
    half_steps = sx.arange(p, dtype=x.dtype, device=x.device) / 2
    return sx.digamma(x.unsqueeze(-1) - half_steps).sum(-1)


class Wishart(ExponentialFamily):
    """The distribution of ``X = sum_k x_k x_k^T`` over ``df`` (a real above ``p - 1``) normal vectors of
    covariance ``Sigma``, given by exactly one of ``covariance_matrix``, ``precision_matrix`` or ``scale_tril``
    (its lower Cholesky factor). Samples use the Bartlett decomposition and are differentiable in ``df`` and
    the factor."""

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self):
        """Constraints of the parameters; ``df`` must exceed ``p - 1``."""
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        name, param = _one_matrix(covariance_matrix, precision_matrix, scale_tril, "Wishart")
        if isinstance(df, numbers.Number):
            batch_shape = tuple(param.shape[:-2])
            self.df = sx.tensor(float(df), dtype=param.dtype, device=param.device)
        elif isinstance(df, sx.Tensor):
            batch_shape = sx.broadcast_shapes(tuple(param.shape[:-2]), tuple(df.shape))
            self.df = df.expand(batch_shape)
        else:
            raise TypeError(f"Wishart: df must be a number or a Tensor, not {type(df).__name__}")
        p = param.shape[-1]
        if bool(self.df.le(p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        setattr(self, name, param.expand(batch_shape + (-1, -1)))
        if bool(self.df.lt(p).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur for ndim - 1 < df "
                          "< ndim.", stacklevel=2)
        super().__init__(batch_shape, tuple(param.shape[-2:]), validate_args=validate_args)
        self._unbroadcasted_scale_tril = _to_scale_tril(name, param)

    def expand(self, batch_shape, _instance=None):
        """A new distribution with batch dims expanded to ``batch_shape`` (parameters are expanded views)."""
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = tuple(batch_shape)
        cov_shape = batch_shape + self.event_shape
        _expand_matrices(self, new, cov_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(batch_shape)
        super(Wishart, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def scale_tril(self):
        """The lower Cholesky factor of the scale matrix."""
        return self._unbroadcasted_scale_tril.expand(self._batch_shape + self._event_shape)

    @lazy_property
    def covariance_matrix(self):
        """``L L^T``."""
        L = self._unbroadcasted_scale_tril
        return (L @ L.mT).expand(self._batch_shape + self._event_shape)

    @lazy_property
    def precision_matrix(self):
        """``(L L^T)^-1`` from the factor."""
        L = self._unbroadcasted_scale_tril
        eye = sx.eye(self._event_shape[-1], dtype=L.dtype, device=L.device)
        return sx.cholesky_solve(eye, L).expand(self._batch_shape + self._event_shape)

    def _df_matrix(self):
        return self.df.view(self._batch_shape + (1, 1))

    @property
    def mean(self):
        """``df * Sigma``."""
        return self._df_matrix() * self.covariance_matrix

    @property
    def mode(self):
        """``(df - p - 1) Sigma``; NaN where ``df <= p + 1``."""
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = sx.where(factor <= 0, float("nan"), factor)
        return factor.view(self._batch_shape + (1, 1)) * self.covariance_matrix

    @property
    def variance(self):
        """``df (Sigma_ij^2 + Sigma_ii Sigma_jj)`` elementwise."""
        V = self.covariance_matrix
        diag = V.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix() * (V.pow(2) + diag.unsqueeze(-1) * diag.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape):
        """``(L A)(L A)^T`` with ``A`` lower triangular: ``A_ii = sqrt(chi2(df - i))``, ``A_ij ~ N(0, 1)``."""
        p, L = self._event_shape[-1], self._unbroadcasted_scale_tril
        shape = tuple(sample_shape) + self._batch_shape
        chi2_df = self.df.unsqueeze(-1) - sx.arange(p, dtype=L.dtype, device=L.device)
        chi2 = 2 * _standard_gamma(0.5 * chi2_df.expand(shape + (p,)))
        diag = chi2.sqrt().clamp(min=sx.finfo(L.dtype).eps)
        below = sx.randn(shape + (p * (p - 1) // 2,), dtype=L.dtype, device=L.device)
        chol = L @ (sx.diag_embed(diag) + vec_to_tril_matrix(below, diag=-1))
        return chol @ chol.mT

    def rsample(self, sample_shape=(), max_try_correction=None):
        """A Bartlett-decomposition sample, differentiable in ``df`` and the factor. Samples that come out
        singular (not positive definite, possible for ``df`` near ``p - 1``) are drawn again up to
        ``max_try_correction`` (default 10) times, with a warning; some may stay singular."""
        max_try_correction = 10 if max_try_correction is None else max_try_correction
        sample_shape = (sample_shape,) if isinstance(sample_shape, int) else tuple(sample_shape)
        sample = self._bartlett_sampling(sample_shape)
        singular = ~self.support.check(sample)
        if bool(singular.any()):
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(max_try_correction):
                sample = sx.where(singular[..., None, None], self._bartlett_sampling(sample_shape), sample)
                singular = ~self.support.check(sample)
                if not bool(singular.any()):
                    break
        return sample

    def log_prob(self, value):
        """The Wishart log density, the trace term by a Cholesky solve."""
        if self._validate_args:
            self._validate_sample(value)
        nu, p, L = self.df, self._event_shape[-1], self._unbroadcasted_scale_tril
        trace = sx.cholesky_solve(value, L).diagonal(dim1=-2, dim2=-1).sum(-1)
        return (-nu * (p * _LOG_2 / 2 + _half_log_det(L)) - sx.mvlgamma(nu / 2, p=p)
                + (nu - p - 1) / 2 * sx.linalg.slogdet(value).logabsdet - trace / 2)

    def entropy(self):
        """Closed form, with the multivariate log-gamma and digamma functions."""
        nu, p = self.df, self._event_shape[-1]
        return ((p + 1) * (p * _LOG_2 / 2 + _half_log_det(self._unbroadcasted_scale_tril))
                + sx.mvlgamma(nu / 2, p=p) - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p=p) + nu * p / 2)

    @property
    def _natural_params(self):
        return -self.precision_matrix / 2, (self.df - self._event_shape[-1] - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        return ((y + (p + 1) / 2) * (-sx.linalg.slogdet(-2 * x).logabsdet + _LOG_2 * p)
                + sx.mvlgamma(y + (p + 1) / 2, p=p))


__all__ = ["Wishart"]
