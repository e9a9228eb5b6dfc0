"""Continuous distributions (Uniform ... ContinuousBernoulli) and the gamma/Dirichlet samplers' implicit gradients:
closed forms in NumPy/math, Gauss-Legendre quadrature, float64 finite differences, Monte Carlo identities within
5 standard errors, and (marked parity) torch.distributions."""

import math

import numpy as np
import pytest

import sneppx_core as sx
import sneppx_core.distributions as D
from sneppx_core.autograd import gradcheck
from sneppx_core.distributions.dirichlet import _beta_sample_grad, _Dirichlet_backward, _sample_dirichlet
from sneppx_core.distributions.gamma import _gamma_sample_grad, _standard_gamma

pytestmark = pytest.mark.skipif(not sx._HAS_C_BACKEND, reason="the NumPy backend has no backward pass")
RNG = np.random.default_rng(2024)
EULER = 0.5772156649015329


def t64(a, grad=False):
    return sx.tensor(np.asarray(a, np.float64), requires_grad=grad)


def npy(t):
    return np.asarray(t.detach().numpy())


def digamma_ref(x):
    """Digamma by upward recurrence to x >= 10 and the asymptotic series (independent of sx.digamma)."""
    x = np.array(x, np.float64)
    acc = np.zeros_like(x)
    while (x < 10).any():
        acc -= np.where(x < 10, 1 / x, 0)
        x = np.where(x < 10, x + 1, x)
    x2 = 1 / (x * x)
    series = x2 * (1 / 12 - x2 * (1 / 120 - x2 * (1 / 252 - x2 * (1 / 240 - x2 * (1 / 132)))))
    return acc + np.log(x) - 0.5 / x - series


lgamma = np.vectorize(math.lgamma)


def lbeta(a, b):
    return lgamma(a) + lgamma(b) - lgamma(a + b)


def quad01(f, n=80):
    """Gauss-Legendre quadrature of ``f`` (vectorised over its argument's last axis) on [0, 1]."""
    nodes, weights = np.polynomial.legendre.leggauss(n)
    return (f((nodes + 1) / 2) * weights).sum(-1) / 2


def assert_moments(draws, mean, var):
    """Sample mean and variance (along axis 0) within 5 standard errors of the true ones."""
    n = draws.shape[0]
    m, v = draws.mean(0), draws.var(0)
    m4 = ((draws - m) ** 4).mean(0)
    assert (np.abs(m - mean) <= 5 * np.sqrt(var / n)).all(), (m, mean)
    assert (np.abs(v - var) <= 5 * np.sqrt(np.maximum(m4 - v**2, 0) / n)).all(), (v, var)


def assert_mc_mean(values, want):
    """Monte Carlo mean of ``values`` (axis 0) within 5 standard errors of ``want``."""
    n = values.shape[0]
    assert (np.abs(values.mean(0) - want) <= 5 * values.std(0) / np.sqrt(n) + 1e-12).all(), (values.mean(0), want)


# ---------------------------------------------------------------------------------------------------------------
# _standard_gamma and its implicit gradient


def _gamma_quantile(alpha, u):
    """x with P(alpha, x) = u, by bisection in log x on sx.special.gammainc (float64, 1-D arrays)."""
    lo, hi = np.full(alpha.shape, -700.0), np.log(alpha + 50 * np.sqrt(alpha) + 50)
    for _ in range(120):
        mid = (lo + hi) / 2
        with np.errstate(divide="ignore"):  # gammainc evaluates an unused log1p(-1) branch at tiny x
            below = npy(sx.special.gammainc(t64(alpha), t64(np.exp(mid)))) < u
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return np.exp((lo + hi) / 2)


def test_standard_gamma_grad_matches_inverse_cdf_differences():
    # the implicit gradient is d/dalpha of the inverse-CDF sampling map at a fixed uniform u
    alpha = np.repeat([0.3, 1.0, 4.5, 60.0], 3)
    u = np.tile([0.1, 0.5, 0.93], 4)
    h = 1e-5 * alpha
    fd = (_gamma_quantile(alpha + h, u) - _gamma_quantile(alpha - h, u)) / (2 * h)
    x = _gamma_quantile(alpha, u)
    np.testing.assert_allclose(_gamma_sample_grad(alpha, x), fd, rtol=1e-7)
    # alpha = 1: x = -log(1 - u) and dx/dalpha = log x + gamma + e^x E1(x), E1 by its power series
    x = np.array([0.05, 0.4, 1.3])
    k = np.arange(1, 60)[:, None]
    fact = np.array([[float(math.factorial(j))] for j in range(1, 60)])
    e1 = -EULER - np.log(x) - np.sum((-x) ** k / (k * fact), 0)
    np.testing.assert_allclose(_gamma_sample_grad(np.ones(3), x), np.log(x) + EULER + np.exp(x) * e1, rtol=1e-13)


def test_standard_gamma_grad_against_mpmath():
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 30
    cases = [(1e-3, 1e-200), (0.05, 1e-9), (0.5, 0.3), (0.7, 4.0), (2.0, 0.5), (2.0, 7.0), (7.5, 7.0), (30.0, 41.0),
             (1e3, 960.0), (3e4, 30100.0), (2e5, 199000.0), (2e6, 2.0015e6),
             # the series past the mean, up to its end at a + 1 + sqrt(a + 1), and the continued fraction after
             (1e-3, 1.9), (1e-3, 2.0006), (0.5, 2.72), (0.5, 2.73), (50.0, 58.1), (50.0, 58.2)]
    for a, x in cases:
        am, xm = mp.mpf(a), mp.mpf(x)
        dp = mp.diff(lambda s: -mp.gammainc(s, xm, mp.inf, regularized=True), am)  # converges for large a
        want = float(-dp * mp.gamma(am) / (xm ** (am - 1) * mp.exp(-xm)))
        got = _gamma_sample_grad(np.array([a]), np.array([x]))[0]
        assert abs(got - want) <= 5e-12 * abs(want), (a, x, got, want)


def test_standard_gamma_samples_and_gradient_in_expectation():
    sx.manual_seed(11)
    alpha = np.array([0.05, 0.5, 1.0, 3.7, 250.0])
    conc = t64(alpha, True)
    x = _standard_gamma(conc.expand(40000, 5))
    assert x.shape == (40000, 5) and x.dtype == sx.float64
    assert_moments(npy(x), alpha, alpha)
    # E[dx/dalpha] = dE[x]/dalpha = 1 and E[d(x^2)/dalpha] = d(alpha^2 + alpha)/dalpha = 2 alpha + 1, per sample
    (g1,) = sx.autograd.grad(x.sum(), conc, retain_graph=True)
    per_sample = _gamma_sample_grad(np.broadcast_to(alpha, (40000, 5)), npy(x))
    np.testing.assert_allclose(npy(g1), per_sample.sum(0), rtol=1e-12)
    assert_mc_mean(per_sample, np.ones(5))
    assert_mc_mean(2 * npy(x) * per_sample, 2 * alpha + 1)
    # repeatable, float32, shapes, the tiny clamp, NaN for invalid concentrations, type errors
    sx.manual_seed(5)
    a = _standard_gamma(t64([[0.5, 2.0]]))
    sx.manual_seed(5)
    assert np.array_equal(npy(a), npy(_standard_gamma(t64([[0.5, 2.0]]))))
    small = _standard_gamma(sx.full((50,), 1e-3))
    assert small.dtype == sx.float32 and (npy(small) >= np.finfo(np.float32).tiny).all()
    odd = npy(_standard_gamma(t64([float("nan"), -1.0, float("inf"), 0.0])))
    assert np.isnan(odd[:2]).all() and odd[2] == np.inf and odd[3] == np.finfo(np.float64).tiny
    assert _standard_gamma(t64(2.0)).shape == ()
    with pytest.raises(TypeError, match="_standard_gamma"):
        _standard_gamma(sx.tensor([1, 2]))


# ---------------------------------------------------------------------------------------------------------------
# Dirichlet / Beta sampling and gradients


def test_beta_sample_grad_against_mpmath():
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 30
    for a, b, x in [(0.3, 0.3, 0.02), (0.3, 0.3, 0.9), (1.0, 1.0, 0.4), (2.0, 5.0, 0.1), (5.0, 2.0, 0.85),
                    (30.0, 3.0, 0.93), (0.05, 50.0, 1e-30), (400.0, 300.0, 0.58)]:
        am, bm, xm = mp.mpf(a), mp.mpf(b), mp.mpf(x)
        di = mp.diff(lambda s: mp.betainc(s, bm, 0, xm, regularized=True), am)
        want = float(-di * mp.beta(am, bm) / (xm ** (am - 1) * (1 - xm) ** (bm - 1)) / (1 - xm))
        got = _beta_sample_grad(np.array([x]), np.array([a]), np.array([a + b]))[0]
        assert abs(got - want) <= 1e-12 * abs(want), (a, b, x, got, want)


def test_beta_sample_grad_closed_forms():
    # Beta(a, 1): I = x^a, so -(dI/da) / pdf / (1 - x) = -x log(x) / (a (1 - x)) (both continued-fraction branches)
    x = np.array([1e-6, 0.2, 0.7, 0.999])
    np.testing.assert_allclose(_beta_sample_grad(x, np.full(4, 2.5), np.full(4, 3.5)),
                               -x * np.log(x) / (2.5 * (1 - x)), rtol=1e-13)
    assert _beta_sample_grad(np.array([0.0, 1.0]), np.array([2.0, 3.0]), np.array([4.0, 3.0])).tolist() == [0, 0]


def test_dirichlet_and_beta_rsample_gradients_in_expectation():
    sx.manual_seed(7)
    a = np.array([0.4, 1.5, 3.0])
    conc = t64(a, True)
    x = D.Dirichlet(conc).rsample((30000,))
    assert x.shape == (30000, 3)
    np.testing.assert_allclose(npy(x).sum(-1), 1, rtol=1e-14)
    a0 = a.sum()
    assert_moments(npy(x), a / a0, a * (a0 - a) / (a0**2 * (a0 + 1)))
    # E[dx_i/dalpha_j] = d mean_i / d alpha_j = (delta_ij a0 - a_i) / a0^2, from the per-sample Jacobian rows
    for i in range(3):
        go = sx.zeros((30000, 3), dtype=sx.float64)
        go[:, i] = 1.0
        per_sample = npy(_Dirichlet_backward(x.detach(), conc.detach().expand(30000, 3), go))
        assert_mc_mean(per_sample, ((i == np.arange(3)) * a0 - a[i]) / a0**2)
    c1, c0 = t64(0.7, True), t64(2.5, True)
    beta = D.Beta(c1, c0).rsample((30000,))
    g1, g0 = (npy(g) for g in sx.autograd.grad(beta.sum(), (c1, c0)))
    se = 5 * 0.3 / math.sqrt(30000)  # dx/dalpha is bounded by about 0.3 here
    assert abs(g1 / 30000 - 2.5 / 3.2**2) < se and abs(g0 / 30000 + 0.7 / 3.2**2) < se
    # tiny concentrations do not give 0/0: the draws lie on the simplex, clamped to the dtype's tiny
    tiny = _sample_dirichlet(sx.full((4, 3), 1e-3))
    assert np.isfinite(npy(tiny)).all() and (npy(tiny) >= np.finfo(np.float32).tiny).all()
    np.testing.assert_allclose(npy(tiny).sum(-1), 1, rtol=1e-6)


# ---------------------------------------------------------------------------------------------------------------
# log_prob / cdf / icdf / entropy / moments against closed forms


def test_uniform_laplace_cauchy_exponential_closed_forms():
    lo, hi = np.array([-1.0, 0.5]), np.array([2.0, 0.75])
    v, p = np.array([0.3, 0.6]), np.array([0.2, 0.9])
    d = D.Uniform(t64(lo), t64(hi))
    np.testing.assert_allclose(npy(d.log_prob(t64(v))), -np.log(hi - lo), rtol=1e-14)
    np.testing.assert_allclose(npy(d.cdf(t64(v))), (v - lo) / (hi - lo), rtol=1e-14)
    np.testing.assert_allclose(npy(d.icdf(t64(p))), lo + p * (hi - lo), rtol=1e-14)
    np.testing.assert_allclose(npy(d.entropy()), np.log(hi - lo), rtol=1e-14)
    np.testing.assert_allclose(npy(d.variance), (hi - lo) ** 2 / 12, rtol=1e-14)
    np.testing.assert_allclose(npy(d.stddev), (hi - lo) / np.sqrt(12), rtol=1e-14)
    assert np.isnan(npy(d.mode)).all() and npy(D.Uniform(0.0, 1.0, validate_args=False).log_prob(t64(1.0))) == -np.inf
    loc, scale, v = np.array([0.0, -1.0, 2.0]), np.array([2.0, 0.5, 1.5]), np.array([0.7, -3.0, 2.0])
    z = (v - loc) / scale
    d = D.Laplace(t64(loc), t64(scale))
    np.testing.assert_allclose(npy(d.log_prob(t64(v))), -np.log(2 * scale) - np.abs(z), rtol=1e-14)
    np.testing.assert_allclose(npy(d.cdf(t64(v))), np.where(z < 0, 0.5 * np.exp(z), 1 - 0.5 * np.exp(-z)), rtol=1e-14)
    pq = np.array([0.1, 0.5, 0.8])
    want = loc + scale * np.where(pq < 0.5, np.log(2 * pq), -np.log(2 * (1 - pq)))
    np.testing.assert_allclose(npy(d.icdf(t64(pq))), want, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(npy(d.entropy()), 1 + np.log(2 * scale), rtol=1e-14)
    np.testing.assert_allclose(npy(d.variance), 2 * scale**2, rtol=1e-14)
    d = D.Cauchy(t64(loc), t64(scale))
    np.testing.assert_allclose(npy(d.log_prob(t64(v))), -np.log(np.pi * scale * (1 + z**2)), rtol=1e-14)
    np.testing.assert_allclose(npy(d.cdf(t64(v))), np.arctan(z) / np.pi + 0.5, rtol=1e-14)
    np.testing.assert_allclose(npy(d.icdf(t64(pq))), loc + scale * np.tan(np.pi * (pq - 0.5)), rtol=1e-14,
                               atol=1e-15)
    np.testing.assert_allclose(npy(d.entropy()), np.log(4 * np.pi * scale), rtol=1e-14)
    assert np.isnan(npy(d.mean)).all() and np.isinf(npy(d.variance)).all()
    rate = np.array([0.5, 3.0, 1.0])
    d = D.Exponential(t64(rate))
    v = np.array([0.2, 1.0, 4.0])
    np.testing.assert_allclose(npy(d.log_prob(t64(v))), np.log(rate) - rate * v, rtol=1e-14)
    np.testing.assert_allclose(npy(d.cdf(t64(v))), -np.expm1(-rate * v), rtol=1e-14)
    np.testing.assert_allclose(npy(d.icdf(t64(pq))), -np.log1p(-pq) / rate, rtol=1e-14)
    np.testing.assert_allclose(npy(d.entropy()), 1 - np.log(rate), rtol=1e-14)
    np.testing.assert_allclose(npy(d.variance), rate**-2.0, rtol=1e-14)
    # ExponentialFamily's Bregman entropy (autograd of the log normaliser) agrees with the closed form
    np.testing.assert_allclose(npy(D.ExponentialFamily.entropy(d)), 1 - np.log(rate), rtol=1e-12)


def test_gamma_chi2_closed_forms():
    conc, rate = np.array([1.0, 2.0, 5.0, 0.4]), np.array([0.5, 2.0, 1.3, 3.0])
    v = np.array([0.7, 1.1, 3.0, 0.05])
    d = D.Gamma(t64(conc), t64(rate))
    want = conc * np.log(rate) + (conc - 1) * np.log(v) - rate * v - lgamma(conc)
    np.testing.assert_allclose(npy(d.log_prob(t64(v))), want, rtol=1e-13)
    y = rate[:3] * v[:3]  # integer shapes: P(k, y) = 1 - e^-y sum_{j<k} y^j / j!
    cdf = [1 - math.exp(-yy) * sum(yy**j / math.factorial(j) for j in range(int(k))) for k, yy in zip(conc, y)]
    np.testing.assert_allclose(npy(d.cdf(t64(v)))[:3], cdf, rtol=1e-13)
    ent = conc - np.log(rate) + lgamma(conc) + (1 - conc) * digamma_ref(conc)
    np.testing.assert_allclose(npy(d.entropy()), ent, rtol=1e-13)
    np.testing.assert_allclose(npy(D.ExponentialFamily.entropy(d)), ent, rtol=1e-12)
    np.testing.assert_allclose(npy(d.mode), np.maximum(conc - 1, 0) / rate, rtol=1e-14)
    np.testing.assert_allclose(npy(d.variance), conc / rate**2, rtol=1e-14)
    assert float(D.Gamma(2.0, 1.0).cdf(t64(1.0)).item()) == pytest.approx(1 - 2 / math.e, rel=1e-13)
    df = np.array([1.0, 3.0, 10.0])
    d = D.Chi2(t64(df))
    assert isinstance(d, D.Gamma) and isinstance(d, D.ExponentialFamily)
    v = np.array([0.3, 2.0, 12.0])
    want = (df / 2 - 1) * np.log(v) - v / 2 - df / 2 * np.log(2) - lgamma(df / 2)
    np.testing.assert_allclose(npy(d.log_prob(t64(v))), want, rtol=1e-13)
    np.testing.assert_allclose(npy(d.df), df, rtol=1e-15)
    np.testing.assert_allclose(npy(d.mean), df, rtol=1e-15)
    np.testing.assert_allclose(npy(d.variance), 2 * df, rtol=1e-15)
    e = d.expand((2, 3))
    assert type(e) is D.Chi2 and e.batch_shape == (2, 3) and np.allclose(npy(e.df), df)


def test_beta_dirichlet_closed_forms():
    a, b = np.array([0.7, 2.0, 5.0]), np.array([2.0, 3.5, 1.2])
    v = np.array([0.3, 0.5, 0.95])
    d = D.Beta(t64(a), t64(b))
    want = (a - 1) * np.log(v) + (b - 1) * np.log1p(-v) - lbeta(a, b)
    np.testing.assert_allclose(npy(d.log_prob(t64(v))), want, rtol=1e-13)
    ent = lbeta(a, b) - (a - 1) * digamma_ref(a) - (b - 1) * digamma_ref(b) + (a + b - 2) * digamma_ref(a + b)
    np.testing.assert_allclose(npy(d.entropy()), ent, rtol=1e-12)
    np.testing.assert_allclose(npy(d.mean), a / (a + b), rtol=1e-14)
    np.testing.assert_allclose(npy(d.variance), a * b / ((a + b) ** 2 * (a + b + 1)), rtol=1e-14)
    np.testing.assert_allclose(npy(d.mode)[1:], ((a - 1) / (a + b - 2))[1:], rtol=1e-14)
    np.testing.assert_allclose(npy(d.concentration1), a) and np.testing.assert_allclose(npy(d.concentration0), b)
    s = D.Beta(2.0, 3.0)
    assert s.batch_shape == () and s.concentration1.dtype == sx.float32 and s.sample((4,)).shape == (4,)
    alpha = np.array([[0.7, 2.0, 3.0], [1.5, 1.5, 4.0]])
    x = np.array([[0.2, 0.3, 0.5], [0.1, 0.6, 0.3]])
    d = D.Dirichlet(t64(alpha))
    a0 = alpha.sum(-1)
    want = ((alpha - 1) * np.log(x)).sum(-1) + lgamma(a0) - lgamma(alpha).sum(-1)
    np.testing.assert_allclose(npy(d.log_prob(t64(x))), want, rtol=1e-13)
    ent = (lgamma(alpha).sum(-1) - lgamma(a0) + (a0 - 3) * digamma_ref(a0)
           - ((alpha - 1) * digamma_ref(alpha)).sum(-1))
    np.testing.assert_allclose(npy(d.entropy()), ent, rtol=1e-12)
    np.testing.assert_allclose(npy(d.mean), alpha / a0[:, None], rtol=1e-14)
    np.testing.assert_allclose(npy(d.variance), alpha * (a0[:, None] - alpha) / (a0[:, None] ** 2 * (a0[:, None] + 1)),
                               rtol=1e-14)
    mode = npy(D.Dirichlet(t64([[2.0, 3.0, 5.0], [0.5, 0.3, 0.9], [0.5, 2.0, 3.0]])).mode)
    np.testing.assert_allclose(mode, [[1 / 7, 2 / 7, 4 / 7], [1, 0, 0], [0, 1 / 3, 2 / 3]], rtol=1e-14)
    assert d.batch_shape == (2,) and d.event_shape == (3,) and d.sample((5,)).shape == (5, 2, 3)
    e = d.expand((4, 2))
    assert e.batch_shape == (4, 2) and e.rsample().shape == (4, 2, 3)


def test_student_t_fisher_snedecor_closed_forms():
    df, loc, scale = np.array([0.8, 1.5, 3.0, 7.0]), np.array([0.0, 1.0, -2.0, 0.5]), np.array([1.0, 2.0, 0.5, 3.0])
    v = np.array([0.3, -1.0, 4.0, 0.5])
    d = D.StudentT(t64(df), t64(loc), t64(scale))
    z = (v - loc) / scale
    want = (lgamma((df + 1) / 2) - lgamma(df / 2) - 0.5 * np.log(df * np.pi) - np.log(scale)
            - (df + 1) / 2 * np.log1p(z**2 / df))
    np.testing.assert_allclose(npy(d.log_prob(t64(v))), want, rtol=1e-13)
    ent = ((df + 1) / 2 * (digamma_ref((df + 1) / 2) - digamma_ref(df / 2)) + 0.5 * np.log(df)
           + lbeta(df / 2, 0.5) + np.log(scale))
    np.testing.assert_allclose(npy(d.entropy()), ent, rtol=1e-12)
    mean, var = npy(d.mean), npy(d.variance)
    assert np.isnan(mean[0]) and np.allclose(mean[1:], loc[1:])
    assert np.isnan(var[0]) and var[1] == np.inf and np.allclose(var[2:], (scale**2 * df / (df - 2))[2:], rtol=1e-14)
    assert D.StudentT(3.0).batch_shape == () and D.StudentT(t64(df)).expand((2, 4)).rsample().shape == (2, 4)
    d1, d2 = np.array([1.0, 3.0, 8.0]), np.array([2.0, 4.0, 12.0])
    d = D.FisherSnedecor(t64(d1), t64(d2))
    v = np.array([0.4, 1.0, 2.5])
    want = (0.5 * (d1 * np.log(d1 * v) + d2 * np.log(d2) - (d1 + d2) * np.log(d1 * v + d2)) - np.log(v)
            - lbeta(d1 / 2, d2 / 2))
    np.testing.assert_allclose(npy(d.log_prob(t64(v))), want, rtol=1e-13)
    mean, mode, var = npy(d.mean), npy(d.mode), npy(d.variance)
    assert np.isnan(mean[0]) and np.allclose(mean[1:], d2[1:] / (d2[1:] - 2), rtol=1e-14)
    assert np.isnan(mode[0]) and np.allclose(mode[1:], ((d1 - 2) / d1 * d2 / (d2 + 2))[1:], rtol=1e-14)
    want = 2 * 144 * (8 + 12 - 2) / (8 * 10**2 * 8)
    assert np.isnan(var[:2]).all() and np.allclose(var[2], want, rtol=1e-14)
    with pytest.raises(NotImplementedError):
        d.entropy()


def _bessel_i1(k):
    return sum((k / 2) ** (2 * j + 1) / (math.factorial(j) * math.factorial(j + 1)) for j in range(60))


def test_von_mises_closed_forms_and_samples():
    loc, kappa = np.array([0.5, 3.0, -2.0]), np.array([2.0, 0.1, 25.0])
    v = np.array([0.3, -3.0, 10.0])
    d = D.VonMises(t64(loc), t64(kappa))
    want = kappa * np.cos(v - loc) - np.log(2 * np.pi * np.i0(kappa))
    np.testing.assert_allclose(npy(d.log_prob(t64(v))), want, rtol=1e-13)
    np.testing.assert_allclose(npy(d.variance), 1 - np.array([_bessel_i1(k) for k in kappa]) / np.i0(kappa),
                               rtol=1e-12)
    assert not d.has_rsample and np.array_equal(npy(d.mean), loc)
    with pytest.raises(NotImplementedError):
        d.rsample()
    sx.manual_seed(3)
    s = npy(d.sample((40000,)))
    assert s.shape == (40000, 3) and (s >= -np.pi).all() and (s < np.pi).all()
    # circular moments: E[cos(x - loc)] = I1/I0, E[sin(x - loc)] = 0; per-sample bounded by 1
    r = np.array([_bessel_i1(k) for k in kappa]) / np.i0(kappa)
    assert_mc_mean(np.cos(s - loc), r)
    assert_mc_mean(np.sin(s - loc), np.zeros(3))
    f32 = D.VonMises(sx.tensor([0.0]), sx.tensor([1e-6]))
    assert f32.sample((3,)).dtype == sx.float32 and f32.expand((2, 1)).batch_shape == (2, 1)


def test_generalized_pareto_closed_forms():
    loc, scale, xi = np.array([0.0, 1.0, -1.0]), np.array([2.0, 0.5, 1.5]), np.array([0.3, 0.0, -0.4])
    v = np.array([1.0, 1.7, 1.2])
    d = D.GeneralizedPareto(t64(loc), t64(scale), t64(xi))
    z = (v - loc) / scale
    safe = np.where(xi == 0, 1.0, xi)
    lp = np.where(xi == 0, -np.log(scale) - z, -np.log(scale) - (1 + 1 / safe) * np.log1p(safe * z))
    np.testing.assert_allclose(npy(d.log_prob(t64(v))), lp, rtol=1e-13)
    cdf = np.where(xi == 0, -np.expm1(-z), 1 - (1 + safe * z) ** (-1 / safe))
    np.testing.assert_allclose(npy(d.cdf(t64(v))), cdf, rtol=1e-13)
    p = np.array([0.1, 0.5, 0.99])
    icdf = np.where(xi == 0, loc - scale * np.log1p(-p), loc + scale / safe * ((1 - p) ** -safe - 1))
    np.testing.assert_allclose(npy(d.icdf(t64(p))), icdf, rtol=1e-13)
    np.testing.assert_allclose(npy(d.entropy()), np.log(scale) + xi + 1, rtol=1e-14)
    np.testing.assert_allclose(npy(d.mean), loc + scale / (1 - xi), rtol=1e-14)
    np.testing.assert_allclose(npy(d.variance), scale**2 / ((1 - xi) ** 2 * (1 - 2 * xi)), rtol=1e-14)
    heavy = D.GeneralizedPareto(0.0, 1.0, t64([0.7, 1.2]))
    assert np.isnan(npy(heavy.variance)).all() and np.isnan(npy(heavy.mean)[1])
    support = d.support
    assert np.array_equal(npy(support.upper_bound), [np.inf, np.inf, -1 + 1.5 / 0.4])
    with pytest.raises(ValueError, match="support"):
        d.log_prob(t64([1.0, 1.7, 3.0]))  # above loc - scale / xi for xi < 0


def test_continuous_bernoulli_against_quadrature():
    lam = np.array([0.1, 0.4, 0.4995, 0.5, 0.8, 0.97])
    def dens(x):  # normalised by quadrature, no closed form of the constant needed
        un = lam[:, None] ** x * (1 - lam[:, None]) ** (1 - x)
        return un / quad01(lambda y: lam[:, None] ** y * (1 - lam[:, None]) ** (1 - y))[:, None]

    d = D.ContinuousBernoulli(probs=t64(lam))
    for v in (0.3, 0.77):
        np.testing.assert_allclose(npy(d.log_prob(t64(np.full(6, v)))), np.log(dens(np.array(v))[:, 0]), rtol=1e-11)
        cdf = quad01(lambda y: dens(v * y)) * v
        cdf[2] = v  # within lims = (0.499, 0.501) of 1/2, the cdf (and icdf) is the identity, as in PyTorch
        np.testing.assert_allclose(npy(d.cdf(t64(np.full(6, v)))), cdf, rtol=1e-10)
    mean = quad01(lambda y: y * dens(y))
    np.testing.assert_allclose(npy(d.mean), mean, rtol=1e-10)
    np.testing.assert_allclose(npy(d.variance), quad01(lambda y: (y - mean[:, None]) ** 2 * dens(y)), rtol=1e-9)
    np.testing.assert_allclose(npy(d.entropy()), -quad01(lambda y: dens(y) * np.log(dens(y))), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(npy(D.ExponentialFamily.entropy(d)), npy(d.entropy()), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(npy(d.cdf(d.icdf(t64(np.full(6, 0.35))))), 0.35, rtol=1e-12)
    by_logits = D.ContinuousBernoulli(logits=t64(np.log(lam / (1 - lam))))
    np.testing.assert_allclose(npy(by_logits.log_prob(t64(np.full(6, 0.3)))), npy(d.log_prob(t64(np.full(6, 0.3)))),
                               rtol=1e-12)
    with pytest.raises(NotImplementedError):
        d.mode
    with pytest.raises(ValueError, match="probs has invalid values"):
        D.ContinuousBernoulli(probs=t64([1.5]), validate_args=True)
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        D.ContinuousBernoulli()


# ---------------------------------------------------------------------------------------------------------------
# gradients (finite differences), samples, shapes, validation


GRAD_CASES = [  # (class, parameter arrays, value array)
    (D.Uniform, ([-1.0, 0.2], [2.0, 0.9]), [0.5, 0.4]),
    (D.Laplace, ([0.0, -1.0], [2.0, 0.5]), [0.7, 0.3]),
    (D.Cauchy, ([0.0, -1.0], [2.0, 0.5]), [0.7, 0.3]),
    (D.Exponential, ([0.5, 3.0],), [0.7, 0.3]),
    (D.Gamma, ([0.7, 3.0], [1.5, 0.4]), [0.7, 2.3]),
    (D.Chi2, ([0.7, 3.0],), [0.7, 2.3]),
    (D.Beta, ([0.7, 3.0], [1.5, 0.4]), [0.3, 0.8]),
    (D.StudentT, ([0.7, 3.0], [0.2, -1.0], [1.5, 0.4]), [0.3, 0.8]),
    (D.VonMises, ([0.7, 3.0], [1.5, 0.4]), [0.3, 0.8]),
    (D.FisherSnedecor, ([0.7, 3.0], [1.5, 6.0]), [0.3, 0.8]),
    (D.GeneralizedPareto, ([0.1, -1.0], [1.5, 0.4], [0.3, -0.2]), [0.3, 0.8]),
    (D.ContinuousBernoulli, ([0.2, 0.7],), [0.3, 0.8]),
]


@pytest.mark.parametrize("cls, params, value", GRAD_CASES, ids=[c[0].__name__ for c in GRAD_CASES])
def test_log_prob_and_entropy_gradcheck(cls, params, value):
    inputs = [t64(p, True) for p in params]
    gradcheck(lambda *ps: cls(*ps).log_prob(t64(value)), inputs)
    try:
        cls(*inputs).entropy()
    except NotImplementedError:
        return
    gradcheck(lambda *ps: cls(*ps).entropy(), inputs)


def test_dirichlet_log_prob_entropy_and_icdf_gradcheck():
    alpha = t64([[0.7, 2.0, 3.0], [1.5, 1.5, 4.0]], True)
    gradcheck(lambda a: D.Dirichlet(a).log_prob(t64([0.2, 0.3, 0.5])), [alpha])
    gradcheck(lambda a: D.Dirichlet(a).entropy(), [alpha])
    u = t64([0.2, 0.7])
    gradcheck(lambda p: D.ContinuousBernoulli(probs=p).icdf(u), [t64([0.2, 0.9], True)])
    gradcheck(lambda lo, sc, xi: D.GeneralizedPareto(lo, sc, xi).icdf(u),
              [t64([0.1, -1.0], True), t64([1.5, 0.4], True), t64([0.3, -0.2], True)])


def test_samples_moments_and_pathwise_gradients():
    sx.manual_seed(21)
    n = 40000
    cases = [
        (D.Uniform(t64([-1.0, 0.5]), t64([2.0, 0.75])), [0.5, 0.625], [0.75, 0.25**2 / 12]),
        (D.Laplace(t64([0.0, 3.0]), t64([1.0, 0.2])), [0.0, 3.0], [2.0, 0.08]),
        (D.Exponential(t64([0.5, 4.0])), [2.0, 0.25], [4.0, 1 / 16]),
        (D.Gamma(t64([0.3, 9.0]), t64([2.0, 0.5])), [0.15, 18.0], [0.075, 36.0]),
        (D.Chi2(t64([1.0, 6.0])), [1.0, 6.0], [2.0, 12.0]),
        (D.Beta(t64([0.5, 4.0]), t64([0.5, 2.0])), [0.5, 4 / 6], [1 / 8, 8 / (36 * 7)]),
        (D.StudentT(t64([9.0, 12.0]), t64([1.0, -2.0]), t64([2.0, 0.5])), [1.0, -2.0], [4 * 9 / 7, 0.25 * 1.2]),
        (D.FisherSnedecor(t64([6.0, 10.0]), t64([14.0, 20.0])), [14 / 12, 20 / 18],
         [2 * 196 * 18 / (6 * 144 * 10), 2 * 400 * 28 / (10 * 18**2 * 16)]),
        (D.GeneralizedPareto(t64([0.0, 1.0]), t64([1.0, 2.0]), t64([0.1, -0.5])), [1 / 0.9, 1 + 2 / 1.5],
         [1 / (0.81 * 0.8), 4 / (2.25 * 2)]),
    ]
    for dist, mean, var in cases:
        s = dist.sample((n, 3))
        assert s.shape == (n, 3, 2) and not s.requires_grad
        assert_moments(npy(s).reshape(-1, 2)[:n], np.array(mean), np.array(var))
    cb = D.ContinuousBernoulli(probs=t64([0.2, 0.5]))
    assert_moments(npy(cb.sample((n,))), npy(cb.mean), npy(cb.variance))
    cauchy = npy(D.Cauchy(t64([1.0]), t64([2.0])).sample((n,)))[:, 0]
    assert abs(np.median(cauchy) - 1.0) < 5 * np.pi * 2 / (2 * np.sqrt(n))  # the median's standard error
    # pathwise gradients: location-scale draws and E[d x / d theta] = d E[x] / d theta
    loc, scale = t64([0.5, -1.0], True), t64([2.0, 0.3], True)
    for cls in (D.Laplace, D.Cauchy):
        x = cls(loc, scale).rsample((1000,))
        g_loc, g_scale = sx.autograd.grad(x.sum(), (loc, scale))
        np.testing.assert_allclose(npy(g_loc), 1000.0)
        np.testing.assert_allclose(npy(g_scale), ((npy(x) - npy(loc)) / npy(scale)).sum(0), rtol=1e-10)
    lo, hi = t64([0.0, 1.0], True), t64([1.0, 4.0], True)
    x = D.Uniform(lo, hi).rsample((1000,))
    g_lo, g_hi = sx.autograd.grad(x.sum(), (lo, hi))
    frac = (npy(x) - npy(lo)) / (npy(hi) - npy(lo))
    np.testing.assert_allclose(npy(g_lo), (1 - frac).sum(0), rtol=1e-10)
    np.testing.assert_allclose(npy(g_hi), frac.sum(0), rtol=1e-10)
    rate = t64([0.5, 3.0], True)
    x = D.Exponential(rate).rsample((1000,))
    np.testing.assert_allclose(npy(sx.autograd.grad(x.sum(), rate)[0]), (-npy(x) / npy(rate)).sum(0), rtol=1e-10)
    conc, rate = t64([0.6, 4.0], True), t64([2.0, 0.5], True)
    x = D.Gamma(conc, rate).rsample((n,))
    gc, gr = sx.autograd.grad(x.sum(), (conc, rate))
    np.testing.assert_allclose(npy(gr), (-npy(x) / npy(rate)).sum(0), rtol=1e-10)
    assert np.all(np.abs(npy(gc) / n - 1 / npy(rate)) < 5 * 2.0 / np.sqrt(n))  # E[dx/dalpha] = 1 / rate
    df = t64([3.0, 8.0], True)
    x = D.Chi2(df).rsample((n,))
    per = _gamma_sample_grad(npy(df) / 2, npy(x) / 2)  # dx/ddf = (1/2) * 2 * d(x/2)/d(df/2)
    np.testing.assert_allclose(npy(sx.autograd.grad(x.sum(), df)[0]), per.sum(0), rtol=1e-10)
    assert_mc_mean(per, np.ones(2))
    df, sc = t64([10.0], True), t64([1.5], True)
    x = D.StudentT(df, 0.0, sc).rsample((n,))
    g_df, g_sc = sx.autograd.grad((x * x).sum(), (df, sc))  # E[x^2] = sc^2 df / (df - 2)
    assert abs(npy(g_sc)[0] / n - 2 * 1.5 * 10 / 8) < 0.15 and abs(npy(g_df)[0] / n + 2.25 * 2 / 64) < 0.03
    d1, d2 = t64([6.0], True), t64([12.0], True)
    x = D.FisherSnedecor(d1, d2).rsample((n,))
    g1, g2 = sx.autograd.grad(x.sum(), (d1, d2))  # E[x] = d2 / (d2 - 2)
    assert abs(npy(g1)[0] / n) < 0.02 and abs(npy(g2)[0] / n + 2 / 100) < 0.01


def test_shapes_expand_flags_and_validation():
    assert D.Gamma(2.0, 1.0).batch_shape == () and D.Gamma(2.0, 1.0).sample((3, 2)).shape == (3, 2)
    assert D.Gamma(t64([1.0, 2.0]), 1.0).batch_shape == (2,)
    g = D.Gamma(t64([1.0, 2.0]), t64([1.0, 3.0])).expand((4, 2))
    assert g.batch_shape == (4, 2) and g.rsample((5,)).shape == (5, 4, 2) and g.concentration.shape == (4, 2)
    for d in (D.Uniform(0.0, t64([1.0, 2.0])), D.Laplace(0.0, t64([1.0, 2.0])), D.Cauchy(0.0, t64([1.0, 2.0])),
              D.Exponential(t64([1.0, 2.0])), D.Beta(t64([1.0, 2.0]), 1.0), D.FisherSnedecor(t64([1.0, 2.0]), 3.0),
              D.GeneralizedPareto(0.0, 1.0, t64([0.1, 0.2])), D.ContinuousBernoulli(t64([0.1, 0.2])),
              D.VonMises(0.0, t64([1.0, 2.0])), D.StudentT(t64([1.0, 2.0]))):
        e = d.expand((3, 2))
        assert type(e) is type(d) and e.batch_shape == (3, 2) and e.sample((2,)).shape == (2, 3, 2)
        assert e._validate_args == d._validate_args
        assert d.sample().shape == (2,) and d.log_prob(d.sample()).shape == (2,)
    exp_family = (D.Exponential, D.Gamma, D.Chi2, D.Beta, D.Dirichlet, D.ContinuousBernoulli)
    assert all(issubclass(c, D.ExponentialFamily) for c in exp_family)
    assert not any(issubclass(c, D.ExponentialFamily) for c in (D.Uniform, D.Laplace, D.StudentT, D.VonMises))
    assert all(c.has_rsample for c in exp_family + (D.Uniform, D.Laplace, D.Cauchy, D.StudentT, D.FisherSnedecor,
                                                    D.GeneralizedPareto))
    assert not D.VonMises.has_rsample and not D.Gamma.has_enumerate_support
    with pytest.raises(ValueError, match="concentration"):
        D.Gamma(t64([-1.0]), 1.0)
    with pytest.raises(ValueError, match="low"):
        D.Uniform(2.0, 1.0)
    with pytest.raises(ValueError, match="at least one-dimensional"):
        D.Dirichlet(t64(1.0))
    with pytest.raises(ValueError, match="concentration"):
        D.Dirichlet(t64([1.0, -0.5]))
    with pytest.raises(ValueError, match="df"):
        D.Chi2(t64([0.0]))
    with pytest.raises(ValueError, match="support"):
        D.Exponential(t64([1.0])).log_prob(t64([-1.0]))
    with pytest.raises(ValueError, match="support"):
        D.Beta(2.0, 2.0).log_prob(t64(1.5))
    with pytest.raises(ValueError, match="support"):
        D.Dirichlet(t64([1.0, 2.0])).log_prob(t64([0.3, 0.3]))
    with pytest.raises(ValueError, match="scale"):
        D.StudentT(3.0, 0.0, -1.0)
    with pytest.raises(ValueError, match="Tensor"):
        D.Gamma("a", 1.0)
    assert D.Gamma(t64([-1.0]), 1.0, validate_args=False).batch_shape == (1,)
    assert D.Gamma(2.0, 1.0).log_prob(0.5).item() == pytest.approx(math.log(0.5) - 0.5, rel=1e-6)


# ---------------------------------------------------------------------------------------------------------------
# parity with torch.distributions


PARITY_CASES = GRAD_CASES + [
    (D.Dirichlet, ([[0.7, 2.0, 3.0], [0.5, 0.3, 0.9]],), [[0.2, 0.3, 0.5], [0.1, 0.6, 0.3]]),
    (D.ContinuousBernoulli, ([0.4995, 0.5004],), [0.3, 0.8]),
]


@pytest.mark.parity
@pytest.mark.parametrize("cls, params, value", PARITY_CASES, ids=[c[0].__name__ for c in PARITY_CASES])
def test_matches_torch(torch, cls, params, value):
    tcls = getattr(torch.distributions, cls.__name__)
    rtol = 2e-7 if cls is D.VonMises else 1e-10  # PyTorch's VonMises uses polynomial Bessel approximations
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)  # PyTorch's GeneralizedPareto compares with a default-dtype zero
    try:
        ours_p = [t64(p, True) for p in params]
        theirs_p = [torch.tensor(np.asarray(p, np.float64), requires_grad=True) for p in params]
        ours, theirs = cls(*ours_p), tcls(*theirs_p)
        assert ours.batch_shape == tuple(theirs.batch_shape) and ours.event_shape == tuple(theirs.event_shape)
        checked = 0
        for name in ("log_prob", "cdf", "icdf", "entropy", "mean", "variance", "mode", "stddev"):
            arg = [0.2, 0.7] if name == "icdf" else value
            results = []
            for dist, mk in ((ours, t64), (theirs, lambda a: torch.tensor(np.asarray(a, np.float64)))):
                try:
                    attr = getattr(dist, name)
                    results.append(attr(mk(arg)) if name in ("log_prob", "cdf", "icdf") else
                                   attr() if name == "entropy" else attr)
                except NotImplementedError:
                    results.append(None)
            a, b = results
            assert (a is None) == (b is None), name
            if a is None:
                continue
            np.testing.assert_allclose(npy(a), b.detach().numpy(), rtol=rtol, atol=1e-300, err_msg=name)
            checked += 1
            if name in ("log_prob", "entropy", "icdf") and a.requires_grad:
                ga = sx.autograd.grad(a.sum(), ours_p, allow_unused=True, retain_graph=True)
                gb = torch.autograd.grad(b.sum(), theirs_p, allow_unused=True, retain_graph=True)
                grtol = max(rtol, 1e-8 if name == "entropy" else 1e-10)  # torch's trigamma errs by ~5e-10
                for x, y in zip(ga, gb):
                    if y is not None:
                        np.testing.assert_allclose(npy(x), y.numpy(), rtol=grtol, atol=1e-12, err_msg=name)
        assert checked >= 4
        assert ours.support.is_discrete == theirs.support.is_discrete
        assert ours.has_rsample == theirs.has_rsample
        assert sorted(ours.arg_constraints) == sorted(theirs.arg_constraints)
    finally:
        torch.set_default_dtype(old)


@pytest.mark.parity
def test_sampler_gradients_match_torch(torch):
    # PyTorch approximates these gradients (to about 1e-3 relative at worst); ours are accurate to ~1e-12
    alpha = np.array([0.05, 0.5, 0.9, 1.0, 2.5, 6.0, 9.0, 30.0, 400.0])
    u = np.array([0.03, 0.4, 0.8])
    x = _gamma_quantile(np.repeat(alpha, 3), np.tile(u, len(alpha)))
    want = torch._standard_gamma_grad(torch.tensor(np.repeat(alpha, 3)), torch.tensor(x)).numpy()
    np.testing.assert_allclose(_gamma_sample_grad(np.repeat(alpha, 3), x), want, rtol=2e-3)
    conc = np.array([[0.4, 1.5, 3.0], [7.0, 8.0, 0.2], [20.0, 30.0, 10.0]])
    sx.manual_seed(1)
    xs = _sample_dirichlet(t64(conc).expand(50, 3, 3))
    go = RNG.standard_normal((50, 3, 3))
    ours = npy(_Dirichlet_backward(xs, t64(conc).expand(50, 3, 3), t64(go)))
    from torch.distributions.dirichlet import _Dirichlet_backward as torch_backward

    theirs = torch_backward(torch.tensor(npy(xs)), torch.tensor(conc).expand(50, 3, 3), torch.tensor(go)).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=3e-3, atol=3e-3 * np.abs(theirs).max())


def test_sample_grad_kernels_check_their_arguments():
    """The compiled gradient kernels take float64 CPU tensors of one shape and say which argument is wrong."""
    from sneppx_core._backend import _C

    a = sx.tensor([1.5, 2.0], dtype=sx.float64)
    with pytest.raises(TypeError, match=r"_standard_gamma_grad\] alpha must be a float64 CPU tensor"):
        _C._standard_gamma_grad(a.float(), a)
    with pytest.raises(ValueError, match=r"_standard_gamma_grad\] x has shape"):
        _C._standard_gamma_grad(a, sx.ones(3, dtype=sx.float64))
    with pytest.raises(TypeError, match=r"_beta_sample_grad\] total must be a float64 CPU tensor"):
        _C._beta_sample_grad(a * 0.2, a, a.float())
    # strided (non-contiguous) inputs give the contiguous result
    wide = sx.tensor([[1.5, 9.0], [2.0, 9.0]], dtype=sx.float64)
    x = sx.tensor([0.7, 1.9], dtype=sx.float64)
    same = _C._standard_gamma_grad(a, x).numpy()
    np.testing.assert_array_equal(_C._standard_gamma_grad(wide[:, 0], x).numpy(), same)
    # outside the domain: NaN, and 0 for an underflowed draw
    got = _C._standard_gamma_grad(sx.tensor([-1.0, 2.0, float("nan")], dtype=sx.float64),
                                  sx.tensor([1.0, 0.0, 1.0], dtype=sx.float64)).numpy()
    assert np.isnan(got[0]) and got[1] == 0.0 and np.isnan(got[2])


def test_gamma_draws_do_not_depend_on_the_thread_count():
    """Each element's tries use counters of its own, so the draws are the same at 1 and 2 threads and repeat
    from the seed; tiny concentrations give finite logs (no underflow) and the domain's edges follow the rules."""
    from sneppx_core._backend import _C

    alpha = sx.tensor(np.concatenate([RNG.uniform(0.01, 5, 997), [1e-300, 0.0, np.inf, -1.0, np.nan]]),
                      dtype=sx.float64)
    before = sx.get_num_threads()
    try:
        draws = []
        for threads in (1, 2):
            sx.set_num_threads(threads)
            sx.manual_seed(11)
            draws.append(_C._log_standard_gamma(alpha).numpy())
    finally:
        sx.set_num_threads(before)
    np.testing.assert_array_equal(draws[0], draws[1])
    logs = draws[0]
    assert np.isfinite(logs[:998]).all() and logs[998] == -np.inf and logs[999] == np.inf
    assert np.isnan(logs[1000]) and np.isnan(logs[1001])
    with pytest.raises(TypeError, match=r"_log_standard_gamma\] alpha must be a float64 CPU tensor"):
        _C._log_standard_gamma(alpha.float())


def _threads(n, fn):
    """``fn()`` run with ``n`` threads (the previous count restored)."""
    before = sx.get_num_threads()
    try:
        sx.set_num_threads(n)
        return fn()
    finally:
        sx.set_num_threads(before)


@pytest.mark.parametrize("dtype, rtol", [(sx.float32, 1e-6), (sx.float64, 1e-13)])
def test_compiled_gamma_sampler_and_its_node(dtype, rtol):
    """``_C._standard_gamma`` (what ``_standard_gamma`` runs for float32/float64 CPU tensors) draws what the float64
    log sampler draws on the same counters, and its node's gradient is the float64 kernel's at the draws (to the
    dtype's precision: float32 gradients stop their sums at 2^-40); an expanded concentration sums its gradient."""
    from sneppx_core._backend import _C
    from sneppx_core.distributions.gamma import _StandardGamma

    alpha = np.concatenate([RNG.uniform(0.05, 8, 300), [1e-3, 0.5, 30.0, 900.0, 2e5]])
    conc = sx.tensor(alpha, dtype=dtype, requires_grad=True)
    a64 = npy(conc).astype(np.float64)
    draw = lambda: (sx.manual_seed(21), _C._standard_gamma(conc))[1]  # noqa: E731
    x = _threads(1, draw)
    assert x.dtype == dtype and x.grad_fn is not None
    np.testing.assert_array_equal(npy(x), npy(_threads(2, draw)))
    sx.manual_seed(21)
    logs = npy(_C._log_standard_gamma(sx.tensor(a64)))
    tiny = np.finfo(npy(x).dtype).tiny
    np.testing.assert_allclose(npy(x), np.maximum(np.exp(logs), tiny).astype(npy(x).dtype), rtol=2e-7)
    go = RNG.standard_normal(alpha.shape)
    (g,) = sx.autograd.grad((x * sx.tensor(go, dtype=dtype)).sum(), conc)
    want = go * _gamma_sample_grad(a64, npy(x).astype(np.float64))
    np.testing.assert_allclose(npy(g), want, rtol=rtol, atol=1e-30)
    # the autograd.Function kept for other devices and dtypes computes the same draws and gradients
    sx.manual_seed(21)
    y = _StandardGamma.apply(conc)
    np.testing.assert_allclose(npy(y), npy(x), rtol=2e-7 if dtype == sx.float32 else 1e-15)
    (gy,) = sx.autograd.grad(y.sum(), conc)
    np.testing.assert_allclose(npy(gy), _gamma_sample_grad(a64, npy(y).astype(np.float64)), rtol=rtol, atol=1e-30)
    c = sx.tensor([1.5, 4.0], dtype=dtype, requires_grad=True)
    xe = _standard_gamma(c.expand(1000, 2))
    (ge,) = sx.autograd.grad(xe.sum(), c)
    want = _gamma_sample_grad(np.broadcast_to([1.5, 4.0], (1000, 2)), npy(xe).astype(np.float64)).sum(0)
    np.testing.assert_allclose(npy(ge), want, rtol=1e-5 if dtype == sx.float32 else 1e-12)


def test_compiled_dirichlet_sampler_and_its_node():
    """``_C._sample_dirichlet``: normalised gammas of the same counters as the log sampler, the same at 1 and 2
    threads, and a node whose gradient is PyTorch's formula over the float64 Beta-marginal kernel."""
    from sneppx_core._backend import _C

    conc = t64(RNG.uniform(0.2, 5, (40, 4)), True)
    draw = lambda: (sx.manual_seed(8), _C._sample_dirichlet(conc))[1]  # noqa: E731
    x = _threads(1, draw)
    np.testing.assert_array_equal(npy(x), npy(_threads(2, draw)))
    sx.manual_seed(8)
    logs = npy(_C._log_standard_gamma(conc.detach().reshape(-1))).reshape(40, 4)
    want = np.exp(logs - logs.max(-1, keepdims=True))
    np.testing.assert_allclose(npy(x), want / want.sum(-1, keepdims=True), rtol=1e-14)
    go = t64(RNG.standard_normal((40, 4)))
    (g,) = sx.autograd.grad((x * go).sum(), conc)
    np.testing.assert_allclose(npy(g), npy(_Dirichlet_backward(x.detach(), conc.detach(), go)), rtol=1e-12)
    c32 = sx.tensor([0.7, 2.0, 3.5], dtype=sx.float32, requires_grad=True)
    x32 = D.Dirichlet(c32).rsample((500,))
    (g32,) = sx.autograd.grad(x32[..., 0].sum(), c32)
    go32 = np.zeros((500, 3))
    go32[:, 0] = 1
    ref = _Dirichlet_backward(t64(npy(x32)), t64(npy(c32)).expand(500, 3), t64(go32))
    np.testing.assert_allclose(npy(g32), npy(ref).sum(0), rtol=1e-5)
    with pytest.raises(ValueError, match="_sample_dirichlet"):
        _C._sample_dirichlet(t64(2.0))
    with pytest.raises(TypeError, match="_sample_dirichlet"):
        _C._sample_dirichlet(sx.ones(3, dtype=sx.int64))
    assert _C._sample_dirichlet(sx.ones((2, 0))).shape == (2, 0)


def test_compiled_samplers_are_first_order():
    """create_graph=True gives the first gradient; differentiating that gradient raises (as PyTorch's
    ``_standard_gamma_grad`` and ``_dirichlet_grad`` have no derivative)."""
    for sample in (lambda c: _standard_gamma(c), lambda c: D.Dirichlet(c).rsample()):
        conc = t64([0.8, 2.5], True)
        (g,) = sx.autograd.grad((sample(conc) ** 2).sum(), conc, create_graph=True)
        assert g.requires_grad
        with pytest.raises(RuntimeError, match="first order"):
            g.sum().backward()
