"""The closed-form KL divergences ``kl_divergence`` knows, registered for the pairs ``torch.distributions.kl``
registers.

This module needs the family classes, so the package imports it last (``kl`` itself is imported before the
families). Pairs whose supports do not nest (e.g. ``Normal`` against ``Uniform``) give ``inf``.
"""

from __future__ import annotations

import math

import sneppx_core as sx

from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .continuous_bernoulli import ContinuousBernoulli
from .dirichlet import Dirichlet
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .gamma import Gamma
from .geometric import Geometric
from .gumbel import Gumbel
from .half_normal import HalfNormal
from .independent import Independent
from .kl import _add_kl_info, kl_divergence, register_kl
from .laplace import Laplace
from .lowrank_multivariate_normal import LowRankMultivariateNormal, _batch_lowrank_logdet, _batch_lowrank_mahalanobis
from .multivariate_normal import MultivariateNormal, _batch_mahalanobis
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .pareto import Pareto
from .poisson import Poisson
from .transformed_distribution import TransformedDistribution
from .uniform import Uniform
from .utils import _sum_rightmost
from .utils import euler_constant as _EULER

_INF = math.inf
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _infinite_like(tensor):
    """A tensor of ``inf`` like ``tensor``: the KL of a pair whose supports do not nest."""
    return sx.full_like(tensor, _INF)


def _inf_where(mask, result):
    """``result`` with ``inf`` where ``mask`` holds (broadcast together)."""
    return sx.where(mask, _INF, result)


def _x_log_x(tensor):
    """``x log x``, 0 at 0."""
    return sx.special.xlogy(tensor, tensor)


def _batch_trace_XXT(bmat):
    """``trace(X X^T)`` over the last two dims: the sum of the squared entries."""
    return bmat.pow(2).sum((-2, -1))


def _discrete_terms(weight, log_ratio, q_zero, p_zero):
    """``weight * log_ratio`` with ``inf`` where q has no mass and 0 where p has none."""
    return sx.where(p_zero, 0.0, _inf_where(q_zero, weight * log_ratio))


def _kl_to_continuous_bernoulli(p, q):
    """``-H(p) - E_p[log q(x)]`` for a ContinuousBernoulli q: ``log q(x) = x logit + log(1 - probs) + log C``."""
    return -p.entropy() - p.mean * q.logits - sx.log1p(-q.probs) - q._cont_bern_log_norm()


def _kl_to_normal(p, q, mean, second_moment):
    """``-H(p) + log(sqrt(2 pi) scale_q) + E_p[(x - loc_q)^2] / (2 scale_q^2)`` given ``E_p[x]``, ``E_p[x^2]``."""
    var_q = q.scale.pow(2)
    return (-p.entropy() + 0.5 * (var_q * 2 * math.pi).log()
            + (0.5 * second_moment - q.loc * mean + 0.5 * q.loc.pow(2)) / var_q)


def _check_event_shapes(p, q, names):
    if p.event_shape != q.event_shape:
        raise ValueError(f"KL-divergence between two {names} with different event shapes cannot be computed")


# Pairs of one family


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    """``p log(p/q) + (1-p) log((1-p)/(1-q))``."""
    softplus = sx.functional.softplus
    ones = _discrete_terms(p.probs, softplus(-q.logits) - softplus(-p.logits), q.probs == 0, p.probs == 0)
    zeros = _discrete_terms(1 - p.probs, softplus(q.logits) - softplus(p.logits), q.probs == 1, p.probs == 1)
    return ones + zeros


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    """The log Beta-function ratio plus digamma terms."""
    a_p, b_p, a_q, b_q = p.concentration1, p.concentration0, q.concentration1, q.concentration0
    total_p, total_q = a_p + b_p, a_q + b_q
    log_norms = (a_q.lgamma() + b_q.lgamma() - total_q.lgamma()) - (a_p.lgamma() + b_p.lgamma() - total_p.lgamma())
    return (log_norms + (a_p - a_q) * a_p.digamma() + (b_p - b_q) * b_p.digamma()
            + (total_q - total_p) * total_p.digamma())


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    """``n [p log(p/q) + (1-p) log((1-p)/(1-q))]`` for equal counts; ``inf`` where p's count is larger."""
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count is not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + sx.log1p(-p.probs) - sx.log1p(-q.probs))
    return _inf_where(p.total_count > q.total_count, kl)


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    """``sum_k p_k (log p_k - log q_k)``, ``inf`` where q_k = 0 < p_k."""
    return _discrete_terms(p.probs, p.logits - q.logits, q.probs == 0, p.probs == 0).sum(-1)


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli_continuous_bernoulli(p, q):
    """``E_p[x] (logit p - logit q)`` plus the log normalisers."""
    return (p.mean * (p.logits - q.logits) + p._cont_bern_log_norm() + sx.log1p(-p.probs)
            - q._cont_bern_log_norm() - sx.log1p(-q.probs))


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    """The log multivariate-Beta ratio plus digamma terms."""
    total_p, total_q = p.concentration.sum(-1), q.concentration.sum(-1)
    log_norms = total_p.lgamma() - total_q.lgamma() - (p.concentration.lgamma() - q.concentration.lgamma()).sum(-1)
    e_log_x = p.concentration.digamma() - total_p.digamma().unsqueeze(-1)
    return log_norms + ((p.concentration - q.concentration) * e_log_x).sum(-1)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    """``r - log r - 1`` with ``r = rate_q / rate_p``."""
    ratio = q.rate / p.rate
    return ratio - ratio.log() - 1


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    """The Bregman divergence of the log normaliser, its gradient by autograd (same family only). As in PyTorch,
    p's natural parameters enter detached, so the result carries gradient to q's parameters only (the gradient
    of the log normaliser is therefore taken without a graph)."""
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential families cannot be "
                                  "computed using Bregman divergences")
    p_nparams = [theta.detach().requires_grad_() for theta in p._natural_params]
    q_nparams = q._natural_params
    with sx.enable_grad():
        lg_normal = p._log_normalizer(*p_nparams)
        gradients = sx.autograd.grad(lg_normal.sum(), p_nparams)
    result = q._log_normalizer(*q_nparams) - lg_normal
    for p_theta, q_theta, grad in zip(p_nparams, q_nparams, gradients):
        result = result - _sum_rightmost((q_theta - p_theta) * grad, len(q.event_shape))
    return result


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    """Closed form in the concentrations and rates."""
    a_p, a_q = p.concentration, q.concentration
    return (a_q * (p.rate / q.rate).log() + a_q.lgamma() - a_p.lgamma() + (a_p - a_q) * a_p.digamma()
            + (q.rate - p.rate) * (a_p / p.rate))


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    """Closed form with ``E_p[exp(-(x - loc_q) / scale_q)] = exp((loc_q - loc_p) / scale_q) Gamma(1 + s)``."""
    s = p.scale / q.scale
    shift = (q.loc - p.loc) / q.scale
    return -s.log() - shift + s * _EULER + sx.exp(shift + (1 + s).lgamma()) - (1 + _EULER)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    """``-H(p) - E_p[log q(x)]``."""
    return -p.entropy() - sx.log1p(-q.probs) / p.probs - q.logits


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    """That of the underlying zero-mean normals."""
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    """Closed form (Gil, 2011)."""
    ratio = p.scale / q.scale
    gap = (p.loc - q.loc).abs()
    return -ratio.log() + gap / q.scale + ratio * sx.exp(-gap / p.scale) - 1


def _lowrank_inverse_factor(q):
    """``A`` with ``inv(cov_q) = inv(D_q) - A^T A`` for a low-rank q."""
    wt_dinv = q._unbroadcasted_cov_factor.mT / q._unbroadcasted_cov_diag.unsqueeze(-2)
    return sx.linalg.solve_triangular(q._capacitance_tril, wt_dinv, upper=False)


def _lowrank_logdet(d):
    return _batch_lowrank_logdet(d._unbroadcasted_cov_factor, d._unbroadcasted_cov_diag, d._capacitance_tril)


def _lowrank_mahalanobis_term(p, q):
    """``(loc_q - loc_p)^T inv(cov_q) (loc_q - loc_p)`` for a low-rank q."""
    return _batch_lowrank_mahalanobis(q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag, q.loc - p.loc,
                                      q._capacitance_tril)


def _tril_logdet(d):
    """``log det cov`` from the Cholesky factor."""
    return 2 * d._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrankmultivariatenormal_lowrankmultivariatenormal(p, q):
    """Gaussian KL with ``trace(inv(cov_q) cov_p)`` expanded through the low-rank structure."""
    _check_event_shapes(p, q, "Low Rank Multivariate Normals")
    a = _lowrank_inverse_factor(q)
    trace = ((p._unbroadcasted_cov_diag / q._unbroadcasted_cov_diag).sum(-1)
             + _batch_trace_XXT(p._unbroadcasted_cov_factor * q._unbroadcasted_cov_diag.rsqrt().unsqueeze(-1))
             - _batch_trace_XXT(a * p._unbroadcasted_cov_diag.sqrt().unsqueeze(-2))
             - _batch_trace_XXT(a.matmul(p._unbroadcasted_cov_factor)))
    logdet = _lowrank_logdet(q) - _lowrank_logdet(p)
    return 0.5 * (logdet + trace + _lowrank_mahalanobis_term(p, q) - p.event_shape[0])


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_multivariatenormal_lowrankmultivariatenormal(p, q):
    """Gaussian KL of a full-covariance p from a low-rank q."""
    _check_event_shapes(p, q, "(Low Rank) Multivariate Normals")
    a = _lowrank_inverse_factor(q)
    p_tril = p._unbroadcasted_scale_tril
    trace = (_batch_trace_XXT(p_tril * q._unbroadcasted_cov_diag.rsqrt().unsqueeze(-1))
             - _batch_trace_XXT(a.matmul(p_tril)))
    logdet = _lowrank_logdet(q) - _tril_logdet(p)
    return 0.5 * (logdet + trace + _lowrank_mahalanobis_term(p, q) - p.event_shape[0])


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrankmultivariatenormal_multivariatenormal(p, q):
    """Gaussian KL of a low-rank p from a full-covariance q."""
    _check_event_shapes(p, q, "(Low Rank) Multivariate Normals")
    n = p.event_shape[0]
    batch = sx.broadcast_shapes(tuple(q._unbroadcasted_scale_tril.shape[:-2]),
                                tuple(p._unbroadcasted_cov_factor.shape[:-2]))
    q_tril = q._unbroadcasted_scale_tril.expand(batch + (n, n))
    p_factor = p._unbroadcasted_cov_factor.expand(batch + tuple(p._unbroadcasted_cov_factor.shape[-2:]))
    p_diag = sx.diag_embed(p._unbroadcasted_cov_diag.sqrt()).expand(batch + (n, n))
    trace = (_batch_trace_XXT(sx.linalg.solve_triangular(q_tril, p_factor, upper=False))
             + _batch_trace_XXT(sx.linalg.solve_triangular(q_tril, p_diag, upper=False)))
    logdet = _tril_logdet(q) - _lowrank_logdet(p)
    return 0.5 * (logdet + trace + _batch_mahalanobis(q._unbroadcasted_scale_tril, q.loc - p.loc) - n)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_multivariatenormal_multivariatenormal(p, q):
    """``(log det S_q - log det S_p + tr(inv(S_q) S_p) + m^T inv(S_q) m - n) / 2`` via Cholesky factors."""
    _check_event_shapes(p, q, "Multivariate Normals")
    n = p.event_shape[0]
    batch = sx.broadcast_shapes(tuple(q._unbroadcasted_scale_tril.shape[:-2]),
                                tuple(p._unbroadcasted_scale_tril.shape[:-2]))
    q_tril = q._unbroadcasted_scale_tril.expand(batch + (n, n))
    p_tril = p._unbroadcasted_scale_tril.expand(batch + (n, n))
    trace = _batch_trace_XXT(sx.linalg.solve_triangular(q_tril, p_tril, upper=False))
    mahalanobis = _batch_mahalanobis(q._unbroadcasted_scale_tril, q.loc - p.loc)
    return 0.5 * (_tril_logdet(q) - _tril_logdet(p) + trace + mahalanobis - n)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    """``(r + d^2 - 1 - log r) / 2`` with ``r = (scale_p / scale_q)^2``, ``d = (loc_p - loc_q) / scale_q``."""
    var_ratio = (p.scale / q.scale).pow(2)
    gap = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + gap - 1 - var_ratio.log())


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p, q):
    """That of the underlying categoricals."""
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    """Closed form (Gil, 2011); ``inf`` where p's support starts below q's."""
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * (p.scale / q.scale).log() - alpha_ratio.log() + alpha_ratio - 1
    return _inf_where(p.support.lower_bound < q.support.lower_bound, result)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    """``rate_p log(rate_p / rate_q) - rate_p + rate_q``."""
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    """That of the base distributions, when both push them through the same transforms."""
    if p.transforms != q.transforms or p.event_shape != q.event_shape:
        raise NotImplementedError
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    """``log(width_q / width_p)``, ``inf`` unless p's interval lies inside q's."""
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return _inf_where((q.low > p.low) | (q.high < p.high), result)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    """The base KL summed over the reinterpreted dims (which must agree)."""
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    return _sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    """``log(((s_p + s_q)^2 + (l_p - l_q)^2) / (4 s_p s_q))`` (Chyzak and Nielsen, 2019)."""
    return (((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)) / (4 * p.scale * q.scale)).log()


# Pairs of different families


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    """``-H(p) - E_p[log q(x)]`` (``log 1! = log 0! = 0``)."""
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)


@register_kl(Beta, ContinuousBernoulli)
def _kl_beta_continuous_bernoulli(p, q):
    """``-H(p) - E_p[log q(x)]``."""
    return _kl_to_continuous_bernoulli(p, q)


@register_kl(Beta, Pareto)
@register_kl(ContinuousBernoulli, Pareto)
@register_kl(Exponential, Beta)
@register_kl(Exponential, ContinuousBernoulli)
@register_kl(Exponential, Pareto)
@register_kl(Exponential, Uniform)
@register_kl(Gamma, Beta)
@register_kl(Gamma, ContinuousBernoulli)
@register_kl(Gamma, Pareto)
@register_kl(Gamma, Uniform)
@register_kl(Gumbel, Beta)
@register_kl(Gumbel, ContinuousBernoulli)
@register_kl(Gumbel, Exponential)
@register_kl(Gumbel, Gamma)
@register_kl(Gumbel, Pareto)
@register_kl(Gumbel, Uniform)
@register_kl(Laplace, Beta)
@register_kl(Laplace, ContinuousBernoulli)
@register_kl(Laplace, Exponential)
@register_kl(Laplace, Gamma)
@register_kl(Laplace, Pareto)
@register_kl(Laplace, Uniform)
@register_kl(Normal, Beta)
@register_kl(Normal, ContinuousBernoulli)
@register_kl(Normal, Exponential)
@register_kl(Normal, Gamma)
@register_kl(Normal, Pareto)
@register_kl(Normal, Uniform)
@register_kl(Pareto, Beta)
@register_kl(Pareto, ContinuousBernoulli)
@register_kl(Pareto, Uniform)
@register_kl(Poisson, Bernoulli)
@register_kl(Poisson, Binomial)
def _kl_infinity(p, q):
    """``inf``: p puts mass where q has none."""
    return _infinite_like(p.mean)


@register_kl(Beta, Exponential)
def _kl_beta_exponential(p, q):
    """``-H(p) - log rate + rate E_p[x]``."""
    return -p.entropy() - q.rate.log() + q.rate * (p.concentration1 / (p.concentration1 + p.concentration0))


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p, q):
    """``-H(p) - E_p[log q(x)]`` with ``E_p[log x] = digamma(a) - digamma(a + b)``."""
    total = p.concentration1 + p.concentration0
    e_log_x = p.concentration1.digamma() - total.digamma()
    return (-p.entropy() + q.concentration.lgamma() - q.concentration * q.rate.log()
            - (q.concentration - 1) * e_log_x + q.rate * p.concentration1 / total)


@register_kl(Beta, Normal)
def _kl_beta_normal(p, q):
    """``-H(p) - E_p[log q(x)]`` from the Beta's first two moments."""
    total = p.concentration1 + p.concentration0
    mean = p.concentration1 / total
    second_moment = mean * (1 - mean) / (total + 1) + mean.pow(2)
    return _kl_to_normal(p, q, mean, second_moment)


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p, q):
    """``-H(p) + log(width_q)``, ``inf`` unless ``[0, 1]`` lies inside q's interval."""
    result = -p.entropy() + (q.high - q.low).log()
    return _inf_where((q.low > p.support.lower_bound) | (q.high < p.support.upper_bound), result)


@register_kl(ContinuousBernoulli, Exponential)
def _kl_continuous_bernoulli_exponential(p, q):
    """``-H(p) - log rate + rate E_p[x]``."""
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(ContinuousBernoulli, Normal)
def _kl_continuous_bernoulli_normal(p, q):
    """``-H(p) - E_p[log q(x)]`` from p's mean and variance."""
    return _kl_to_normal(p, q, p.mean, p.variance + p.mean.pow(2))


@register_kl(ContinuousBernoulli, Uniform)
def _kl_continuous_bernoulli_uniform(p, q):
    """``-H(p) + log(width_q)``, ``inf`` unless ``[0, 1]`` lies inside q's interval (PyTorch also gives ``inf``
    when an end of q's interval is exactly 0 or 1)."""
    result = -p.entropy() + (q.high - q.low).log()
    return _inf_where((q.low > p.support.lower_bound) | (q.high < p.support.upper_bound), result)


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p, q):
    """Closed form in rate_p and q's concentration and rate."""
    ratio = q.rate / p.rate
    a = q.concentration
    return -a * ratio.log() + ratio + a.lgamma() + a * _EULER - (1 + _EULER)


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p, q):
    """Closed form in ``rate_p * scale_q`` and ``loc_q / scale_q``."""
    prod = p.rate * q.scale
    shift = q.loc / q.scale
    return prod.log() - 1 - shift + sx.exp(shift) * prod / (prod + 1) + prod.reciprocal()


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p, q):
    """``-H(p) - E_p[log q(x)]`` (``E x = 1/rate``, ``E x^2 = 2/rate^2``)."""
    var_q = q.scale.pow(2)
    rate_sq = p.rate.pow(2)
    return (0.5 * (rate_sq * var_q * 2 * math.pi).log() - 1
            + (rate_sq.reciprocal() - q.loc / p.rate + 0.5 * q.loc.pow(2)) / var_q)


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p, q):
    """``-H(p) - log rate_q + rate_q E_p[x]``."""
    return -p.entropy() - q.rate.log() + q.rate * p.concentration / p.rate


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p, q):
    """Closed form via the Gamma's moment generating function."""
    a = p.concentration
    prod = p.rate * q.scale
    shift = q.loc / q.scale
    return ((a - 1) * a.digamma() - a.lgamma() - a + prod.log() + a / prod
            + sx.exp(shift) * (1 + prod.reciprocal()).pow(-a) - shift)


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p, q):
    """``-H(p) - E_p[log q(x)]`` from the Gamma's moments."""
    a = p.concentration
    var_q = q.scale.pow(2)
    rate_sq = p.rate.pow(2)
    t1 = 0.5 * (rate_sq * var_q * 2 * math.pi).log() - a - a.lgamma()
    moments = 0.5 * (a.pow(2) + a) / rate_sq - q.loc * a / p.rate + 0.5 * q.loc.pow(2)
    return t1 + (a - 1) * a.digamma() + moments / var_q


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p, q):
    """``-H(p) - E_p[log q(x)]`` (Gumbel mean ``loc + scale * gamma``, variance ``(pi scale)^2 / 6``)."""
    ratio = p.scale / q.scale
    t1 = (ratio / math.sqrt(2 * math.pi)).log()
    t2 = (math.pi * ratio * 0.5).pow(2) / 3
    t3 = ((p.loc + p.scale * _EULER - q.loc) / q.scale).pow(2) * 0.5
    return -t1 + t2 + t3 - (_EULER + 1)


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p, q):
    """``-H(p) - E_p[log q(x)]`` (Laplace variance ``2 scale^2``)."""
    var_q = q.scale.pow(2)
    ratio_sq = p.scale.pow(2) / var_q
    t1 = 0.5 * (2 * ratio_sq / math.pi).log()
    return -t1 + ratio_sq + (0.5 * p.loc.pow(2) - p.loc * q.loc + 0.5 * q.loc.pow(2)) / var_q - 1


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p, q):
    """``-H(p) - E_p[log q(x)]`` via the normal's moment generating function."""
    mean_ratio = p.loc / q.scale
    var_ratio = (p.scale / q.scale).pow(2)
    shift = q.loc / q.scale
    return (-0.5 * var_ratio.log() + mean_ratio - shift + sx.exp(-mean_ratio + 0.5 * var_ratio + shift)
            - 0.5 * (1 + math.log(2 * math.pi)))


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p, q):
    """``-H(p) - E_p[log q(x)]`` with ``E_p|x - loc_q|`` of a folded normal."""
    gap = p.loc - q.loc
    z = gap / p.scale
    abs_moment = math.sqrt(2 / math.pi) * p.scale * sx.exp(-0.5 * z.pow(2)) + gap * sx.erf(math.sqrt(0.5) * z)
    return -(p.scale / q.scale).log() + abs_moment / q.scale - 0.5 * (1 + math.log(0.5 * math.pi))


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p, q):
    """Closed form; ``inf`` where ``alpha <= 1`` (p has no mean)."""
    prod = p.scale * q.rate
    result = (p.alpha / prod).log() - p.alpha.reciprocal() + p.alpha * prod / (p.alpha - 1) - 1
    return _inf_where(p.alpha <= 1, result)


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p, q):
    """Closed form; ``inf`` where ``alpha <= 1``."""
    e_log_x = p.scale.log() + p.alpha.reciprocal()
    result = (p.alpha.log() - e_log_x + q.concentration.lgamma() - q.concentration * q.rate.log()
              + (1 - q.concentration) * e_log_x + q.rate * p.alpha * p.scale / (p.alpha - 1) - 1)
    return _inf_where(p.alpha <= 1, result)


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p, q):
    """Closed form; ``inf`` where ``alpha <= 2`` (p has no variance)."""
    two_var_q = 2 * q.scale.pow(2)
    c = p.scale / (p.alpha - 1)
    t1 = (math.sqrt(2 * math.pi) * q.scale * p.alpha / p.scale).log()
    t3 = p.alpha * c.pow(2) / (p.alpha - 2)
    t4 = (p.alpha * c - q.loc).pow(2)
    result = t1 - p.alpha.reciprocal() + (t3 + t4) / two_var_q - 1
    return _inf_where(p.alpha <= 2, result)


def _uniform_e_log_x(p, width):
    """``E_p[log x]`` for a uniform p on ``[low, high]``, ``low >= 0``: ``(h log h - l log l - w) / w``."""
    return (_x_log_x(p.high) - _x_log_x(p.low) - width) / width


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p, q):
    """``-log(width) - E_p[log q(x)]``; ``inf`` unless p's interval lies in ``[0, 1]``."""
    width = p.high - p.low
    neg_e_log_1mx = (_x_log_x(1 - p.high) - _x_log_x(1 - p.low) + width) / width
    log_beta = q.concentration1.lgamma() + q.concentration0.lgamma() - (q.concentration1 + q.concentration0).lgamma()
    result = (-width.log() - (q.concentration1 - 1) * _uniform_e_log_x(p, width)
              + (q.concentration0 - 1) * neg_e_log_1mx + log_beta)
    return _inf_where((p.high > q.support.upper_bound) | (p.low < q.support.lower_bound), result)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_continuous_bernoulli(p, q):
    """``-H(p) - E_p[log q(x)]``, ``inf`` unless p's interval lies in ``[0, 1]`` (PyTorch also gives ``inf``
    when an end of p's interval is exactly 0 or 1)."""
    result = _kl_to_continuous_bernoulli(p, q)
    return _inf_where((p.high > q.support.upper_bound) | (p.low < q.support.lower_bound), result)


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p, q):
    """``rate * midpoint - log(width * rate)``; ``inf`` where p reaches below 0."""
    result = q.rate * (p.high + p.low) / 2 - ((p.high - p.low) * q.rate).log()
    return _inf_where(p.low < q.support.lower_bound, result)


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p, q):
    """``-log(width) - E_p[log q(x)]``; ``inf`` where p reaches below 0."""
    width = p.high - p.low
    result = (-width.log() + q.concentration.lgamma() - q.concentration * q.rate.log()
              + (1 - q.concentration) * _uniform_e_log_x(p, width) + q.rate * (p.high + p.low) / 2)
    return _inf_where(p.low < q.support.lower_bound, result)


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p, q):
    """``-log(width) - E_p[log q(x)]`` in closed form."""
    c = q.scale / (p.high - p.low)
    z_high = (p.high - q.loc) / q.scale
    z_low = (p.low - q.loc) / q.scale
    return c.log() + 0.5 * (z_high + z_low) - c * (sx.exp(-z_high) - sx.exp(-z_low))


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p, q):
    """``log(sqrt(2 pi) scale_q / width) + (width^2 / 12 + (mid - loc_q)^2) / (2 scale_q^2)``."""
    width = p.high - p.low
    t1 = (math.sqrt(math.pi * 2) * q.scale / width).log()
    return t1 + 0.5 * (width.pow(2) / 12 + ((p.high + p.low - 2 * q.loc) / 2).pow(2)) / q.scale.pow(2)


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p, q):
    """``(alpha + 1) E_p[log x] - log(alpha scale^alpha width)``; ``inf`` where p starts below q's scale."""
    width = p.high - p.low
    result = _uniform_e_log_x(p, width) * (q.alpha + 1) - (q.alpha * q.scale.pow(q.alpha) * width).log()
    return _inf_where(p.low < q.support.lower_bound, result)


_add_kl_info()

__all__: list = []
