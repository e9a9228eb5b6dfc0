"""Count, one-hot and matrix distributions (Binomial, Multinomial, Geometric, NegativeBinomial, Poisson,
OneHotCategorical, MultivariateNormal, LowRankMultivariateNormal, Wishart, LKJCholesky) against closed forms
in NumPy/math, finite differences, sample moments, and (marked parity) torch.distributions."""

import itertools
import math

import numpy as np
import pytest
import sneppx_core as sx
from sneppx_core.distributions import (Binomial, Geometric, LKJCholesky, LowRankMultivariateNormal, Multinomial,
                                       MultivariateNormal, NegativeBinomial, OneHotCategorical,
                                       OneHotCategoricalStraightThrough, Poisson, Wishart)
from sneppx_core.testing import gradcheck

RNG = np.random.default_rng(2024)
lgam = np.vectorize(math.lgamma)


def t64(a, grad=False):
    return sx.tensor(np.asarray(a, np.float64), requires_grad=grad)


def close(ours, want, rtol=1e-10, atol=0.0):
    np.testing.assert_allclose(np.asarray(ours.detach().numpy() if isinstance(ours, sx.Tensor) else ours),
                               want, rtol=rtol, atol=atol)


def within_se(draws, mean, var, k=5.0):
    """The sample mean of ``draws`` (first axis) is within ``k`` standard errors of ``mean``."""
    se = np.sqrt(np.asarray(var) / draws.shape[0])
    assert (np.abs(draws.mean(0) - mean) <= k * se + 1e-12).all(), (draws.mean(0), mean, se)


def digamma(x):
    """Digamma in float64 by recurrence and the asymptotic series (for the closed forms)."""
    x, acc = np.asarray(x, np.float64).copy(), 0.0
    while (x < 6).any():
        acc = acc - np.where(x < 6, 1 / x, 0.0)
        x = np.where(x < 6, x + 1, x)
    x2 = 1 / (x * x)
    return acc + np.log(x) - 0.5 / x - x2 * (1 / 12 - x2 * (1 / 120 - x2 * (1 / 252 - x2 / 240)))


def spd(n, batch=()):
    a = RNG.standard_normal(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def mvlgamma(a, p):
    return p * (p - 1) / 4 * math.log(math.pi) + sum(math.lgamma(a - j / 2) for j in range(p))


# ---------------------------------------------------------------------------------------------- counts


def test_binomial():
    n, p = np.array([[5.0], [12.0]]), RNG.uniform(0.05, 0.95, (2, 3))
    k = np.array([[0.0, 3.0, 5.0], [12.0, 7.0, 1.0]])
    want = lgam(n + 1) - lgam(k + 1) - lgam(n - k + 1) + k * np.log(p) + (n - k) * np.log1p(-p)
    for d in (Binomial(t64(n), t64(p)), Binomial(t64(n), logits=t64(np.log(p / (1 - p))))):
        assert d.batch_shape == (2, 3) and d.event_shape == ()
        close(d.log_prob(t64(k)), want)
        close(d.mean, n * p)
        close(d.variance, n * p * (1 - p))
        close(d.mode, np.minimum(np.floor((n + 1) * p), n))
        with pytest.raises(NotImplementedError, match="Inhomogeneous"):
            d.entropy()
    d = Binomial(6, t64(p[0]))  # an int total_count
    ks = np.arange(7.0)[:, None]
    pmf = np.exp(lgam(7) - lgam(ks + 1) - lgam(7 - ks) + ks * np.log(p[0]) + (6 - ks) * np.log1p(-p[0]))
    close(d.entropy(), -(pmf * np.log(pmf)).sum(0))
    assert d.enumerate_support().shape == (7, 3) and d.enumerate_support(False).shape == (7, 1)
    close(d.enumerate_support()[:, 2], np.arange(7.0))
    assert Binomial(10, 0.3).batch_shape == () and Binomial(sx.tensor([4, 7]), t64([0.2, 0.5])).total_count.dtype \
        == sx.float64
    sx.manual_seed(11)
    draws = d.sample((4000,)).numpy()
    assert draws.shape == (4000, 3) and set(np.unique(draws)) <= set(range(7))
    within_se(draws, 6 * p[0], 6 * p[0] * (1 - p[0]))
    assert d.expand((4, 3)).sample().shape == (4, 3)
    gradcheck(lambda lg: Binomial(t64(n), logits=lg).log_prob(t64(k)), [t64(np.log(p / (1 - p)), True)])
    gradcheck(lambda q: Binomial(6, probs=q).entropy(), [t64(p[0], True)])
    with pytest.raises(ValueError, match="total_count"):
        Binomial(t64([2.5]), t64([0.5]))
    with pytest.raises(ValueError, match="probs"):
        Binomial(3, t64([1.5]))
    with pytest.raises(ValueError, match="support"):
        Binomial(3, t64([0.5])).log_prob(t64([4.0]))
    with pytest.raises(ValueError, match="not both"):
        Binomial(3)


def test_multinomial():
    probs = RNG.uniform(0.1, 1, (2, 3))
    p = probs / probs.sum(-1, keepdims=True)
    x = np.array([[2.0, 0.0, 3.0], [1.0, 1.0, 3.0]])
    want = lgam(6) - lgam(x + 1).sum(-1) + (x * np.log(p)).sum(-1)
    for d in (Multinomial(5, t64(probs)), Multinomial(5, logits=t64(np.log(probs) + 1.3))):
        assert d.batch_shape == (2,) and d.event_shape == (3,)
        close(d.log_prob(t64(x)), want)
        close(d.mean, 5 * p)
        close(d.variance, 5 * p * (1 - p))
        # entropy against the sum over every count vector with total 5
        vecs = np.array([v for v in itertools.product(range(6), repeat=3) if sum(v) == 5], np.float64)
        lp = lgam(6) - lgam(vecs + 1).sum(-1)[:, None] + (vecs[:, None, :] * np.log(p)).sum(-1)
        close(d.entropy(), -(np.exp(lp) * lp).sum(0))
        close(d.expand((4, 2)).entropy(), np.broadcast_to(-(np.exp(lp) * lp).sum(0), (4, 2)))
    # log_prob takes the count from the value (the support check, on by default, holds it to total_count)
    close(Multinomial(probs=t64(probs), validate_args=False).log_prob(t64(x)), want)
    with pytest.raises(NotImplementedError, match="inhomogeneous"):
        Multinomial(sx.tensor([5]), t64(probs))
    with pytest.raises(ValueError, match="support"):
        Multinomial(5, t64(probs)).log_prob(t64([[7.0, 0.0, 0.0]]))
    sx.manual_seed(12)
    draws = Multinomial(20, t64(probs)).sample((3000,)).numpy()
    assert draws.shape == (3000, 2, 3) and (draws.sum(-1) == 20).all()
    within_se(draws, 20 * p, 20 * p * (1 - p))
    assert Multinomial(0, t64(probs)).sample((2,)).sum() == 0
    gradcheck(lambda lg: Multinomial(5, logits=lg).log_prob(t64(x)), [t64(np.log(probs), True)])
    gradcheck(lambda lg: Multinomial(4, logits=lg).entropy(), [t64(np.log(probs), True)])


def test_geometric():
    p = RNG.uniform(0.1, 0.9, 4)
    k = np.array([0.0, 1.0, 4.0, 9.0])
    for d in (Geometric(t64(p)), Geometric(logits=t64(np.log(p / (1 - p))))):
        close(d.log_prob(t64(k)), k * np.log1p(-p) + np.log(p))
        close(d.entropy(), -((1 - p) * np.log1p(-p) + p * np.log(p)) / p)
        close(d.mean, 1 / p - 1)
        close(d.variance, (1 - p) / p**2)
        close(d.mode, np.zeros(4))
    assert Geometric(t64([1.0])).log_prob(t64([0.0])).item() == 0.0
    with pytest.raises(ValueError, match="positive"):
        Geometric(t64([0.0, 0.5]))
    with pytest.raises(ValueError, match="probs"):
        Geometric(t64([1.5]))
    sx.manual_seed(13)
    draws = Geometric(t64(p)).sample((20000,)).numpy()
    assert draws.shape == (20000, 4) and (draws >= 0).all() and (draws % 1 == 0).all()
    within_se(draws, 1 / p - 1, (1 - p) / p**2)
    assert Geometric(0.5).sample((2, 3)).shape == (2, 3)
    gradcheck(lambda q: Geometric(q).log_prob(t64(k)), [t64(p, True)])
    gradcheck(lambda q: Geometric(q).entropy(), [t64(p, True)])


def test_negative_binomial():
    n, p = RNG.uniform(0.5, 6, 4), RNG.uniform(0.1, 0.8, 4)
    k = np.array([0.0, 2.0, 5.0, 11.0])
    want = lgam(n + k) - lgam(k + 1) - lgam(n) + n * np.log1p(-p) + k * np.log(p)
    for d in (NegativeBinomial(t64(n), t64(p)), NegativeBinomial(t64(n), logits=t64(np.log(p / (1 - p))))):
        close(d.log_prob(t64(k)), want)
        close(d.mean, n * p / (1 - p))
        close(d.variance, n * p / (1 - p) ** 2)
        close(d.mode, np.maximum(np.floor((n - 1) * p / (1 - p)), 0))
    assert NegativeBinomial(t64([0.0]), t64([0.5])).log_prob(t64([0.0])).item() == 0.0
    with pytest.raises(ValueError, match="probs"):
        NegativeBinomial(t64([2.0]), t64([1.0]))
    with pytest.raises(ValueError, match="total_count"):
        NegativeBinomial(t64([-1.0]), t64([0.5]))
    sx.manual_seed(14)
    draws = NegativeBinomial(t64(n), t64(p)).sample((20000,)).numpy()
    assert draws.shape == (20000, 4) and (draws % 1 == 0).all()
    within_se(draws, n * p / (1 - p), n * p / (1 - p) ** 2)
    gradcheck(lambda c, lg: NegativeBinomial(c, logits=lg).log_prob(t64(k)),
              [t64(n, True), t64(np.log(p / (1 - p)), True)])


def test_poisson():
    rate, k = RNG.uniform(0.5, 8, 5), np.array([0.0, 1.0, 3.0, 7.0, 12.0])
    d = Poisson(t64(rate))
    close(d.log_prob(t64(k)), k * np.log(rate) - rate - lgam(k + 1))
    close(d.mean, rate)
    close(d.variance, rate)
    close(d.mode, np.floor(rate))
    assert Poisson(t64([0.0])).log_prob(t64([0.0])).item() == 0.0 and Poisson(2.0).batch_shape == ()
    with pytest.raises(NotImplementedError):
        d.entropy()  # as in PyTorch: Poisson gives no _mean_carrier_measure
    with pytest.raises(ValueError, match="rate"):
        Poisson(t64([-1.0]))
    with pytest.raises(ValueError, match="support"):
        d.log_prob(t64([0.5] * 5))
    sx.manual_seed(15)
    draws = d.sample((20000,)).numpy()
    assert draws.shape == (20000, 5)
    within_se(draws, rate, rate)
    assert d.expand((2, 5)).log_prob(t64(k)).shape == (2, 5)
    gradcheck(lambda r: Poisson(r).log_prob(t64(k)), [t64(rate, True)])


def test_one_hot_categorical():
    logits = RNG.standard_normal((2, 4))
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    p = np.exp(logp)
    v = np.eye(4)[[3, 1]]
    for d in (OneHotCategorical(logits=t64(logits)), OneHotCategorical(probs=t64(p * 3))):
        assert d.batch_shape == (2,) and d.event_shape == (4,)
        close(d.log_prob(t64(v)), logp[[0, 1], [3, 1]])
        close(d.entropy(), -(p * logp).sum(-1))
        close(d.mean, p)
        close(d.variance, p * (1 - p))
        close(d.mode, np.eye(4)[p.argmax(-1)])
        sup = d.enumerate_support()
        assert sup.shape == (4, 2, 4) and d.enumerate_support(False).shape == (4, 1, 4)
        close(sup[:, 0], np.eye(4))
    with pytest.raises(ValueError, match="support"):
        OneHotCategorical(logits=t64(logits)).log_prob(t64([[1.0, 1.0, 0.0, 0.0]]))
    sx.manual_seed(16)
    draws = OneHotCategorical(logits=t64(logits)).sample((8000,)).numpy()
    assert draws.shape == (8000, 2, 4) and (draws.sum(-1) == 1).all()
    within_se(draws, p, p * (1 - p))
    lg = t64(logits, True)
    st = OneHotCategoricalStraightThrough(logits=lg)
    assert st.has_rsample and not OneHotCategorical.has_rsample
    r = st.rsample((3,))
    assert ((r.detach().numpy() == 0) | (r.detach().numpy() == 1)).all()
    w = RNG.standard_normal(4)
    (r * t64(w)).sum().backward()
    jac = np.einsum("bi,ij->bij", p, np.eye(4)) - np.einsum("bi,bj->bij", p, p)  # d softmax / d logits
    close(lg.grad, 3 * np.einsum("i,bij->bj", w, jac))


# ---------------------------------------------------------------------------------------------- Gaussians


def mvn_logpdf(x, loc, cov):
    diff = x - loc
    sol = np.linalg.solve(cov, diff[..., None])[..., 0]
    return -0.5 * ((diff * sol).sum(-1) + loc.shape[-1] * np.log(2 * np.pi) + np.linalg.slogdet(cov)[1])


def test_multivariate_normal():
    cov = spd(3, (2,))
    L = np.linalg.cholesky(cov)
    loc = RNG.standard_normal((2, 3))
    x = RNG.standard_normal((4, 2, 3))
    dists = [MultivariateNormal(t64(loc), covariance_matrix=t64(cov)),
             MultivariateNormal(t64(loc), precision_matrix=t64(np.linalg.inv(cov))),
             MultivariateNormal(t64(loc), scale_tril=t64(L))]
    for d in dists:
        assert d.batch_shape == (2,) and d.event_shape == (3,)
        close(d.log_prob(t64(x)), mvn_logpdf(x, loc, cov))
        close(d.entropy(), 0.5 * (3 * (1 + np.log(2 * np.pi)) + np.linalg.slogdet(cov)[1]))
        close(d.scale_tril, L)
        close(d.covariance_matrix, cov)
        close(d.precision_matrix, np.linalg.inv(cov), rtol=1e-9)
        close(d.variance, np.diagonal(cov, axis1=-2, axis2=-1))
        close(d.mean, loc)
        close(d.mode, loc)
    # one covariance, batched means; values broadcast against the batch
    d = MultivariateNormal(t64(loc), covariance_matrix=t64(cov[0]))
    close(d.log_prob(t64(x[:, :1])), mvn_logpdf(x[:, :1], loc, cov[0]))
    e = d.expand((5, 2))
    assert e.batch_shape == (5, 2) and e.rsample((3,)).shape == (3, 5, 2, 3)
    close(e.log_prob(t64(x[0])), np.broadcast_to(mvn_logpdf(x[0], loc, cov[0]), (5, 2)))
    sx.manual_seed(17)
    s = MultivariateNormal(t64(loc[0]), covariance_matrix=t64(cov[0])).sample((20000,)).numpy()
    assert s.shape == (20000, 3)
    within_se(s, loc[0], np.diag(cov[0]))
    np.testing.assert_allclose(np.cov(s.T), cov[0], atol=0.1 * np.abs(cov[0]).max())
    # rsample: loc + L eps, differentiable in loc and the factor (same noise for every evaluation)

    def rs(m, tril):
        sx.manual_seed(5)
        return MultivariateNormal(m, scale_tril=tril.tril()).rsample((2,))

    gradcheck(rs, [t64(loc, True), t64(L, True)])
    gradcheck(lambda m, c: MultivariateNormal(m, covariance_matrix=(c + c.mT) / 2).log_prob(t64(x)),
              [t64(loc, True), t64(cov, True)])
    gradcheck(lambda c: MultivariateNormal(t64(loc), precision_matrix=(c + c.mT) / 2).entropy(), [t64(cov, True)])
    with pytest.raises(ValueError, match="Exactly one"):
        MultivariateNormal(t64(loc), covariance_matrix=t64(cov), scale_tril=t64(L))
    with pytest.raises(ValueError, match="Exactly one"):
        MultivariateNormal(t64(loc))
    with pytest.raises(ValueError, match="one-dimensional"):
        MultivariateNormal(t64(1.0), covariance_matrix=t64(cov))
    with pytest.raises(ValueError, match="covariance_matrix"):
        MultivariateNormal(t64(loc), covariance_matrix=t64(-cov))
    with pytest.raises(ValueError, match="scale_tril"):
        MultivariateNormal(t64(loc), scale_tril=t64(np.swapaxes(L, -1, -2)))
    with pytest.raises(ValueError, match="does not match"):
        MultivariateNormal(t64(loc), covariance_matrix=t64(spd(2)))


def test_lowrank_multivariate_normal():
    W, D = RNG.standard_normal((2, 4, 2)), RNG.uniform(0.5, 2, (2, 4))
    loc, x = RNG.standard_normal(4), RNG.standard_normal((3, 2, 4))
    cov = W @ np.swapaxes(W, -1, -2) + np.einsum("bi,ij->bij", D, np.eye(4))
    d = LowRankMultivariateNormal(t64(loc), t64(W), t64(D))
    assert d.batch_shape == (2,) and d.event_shape == (4,)
    close(d.log_prob(t64(x)), mvn_logpdf(x, loc, cov))
    close(d.entropy(), 0.5 * (4 * (1 + np.log(2 * np.pi)) + np.linalg.slogdet(cov)[1]))
    close(d.covariance_matrix, cov)
    close(d.precision_matrix, np.linalg.inv(cov), rtol=1e-9)
    close(d.scale_tril, np.linalg.cholesky(cov))
    close(d.variance, np.diagonal(cov, axis1=-2, axis2=-1))
    close(d.mean, np.broadcast_to(loc, (2, 4)))
    e = d.expand((3, 2))
    assert e.batch_shape == (3, 2) and e.sample((5,)).shape == (5, 3, 2, 4)
    sx.manual_seed(18)
    s = LowRankMultivariateNormal(t64(loc), t64(W[0]), t64(D[0])).sample((20000,)).numpy()
    within_se(s, loc, np.diag(cov[0]))
    np.testing.assert_allclose(np.cov(s.T), cov[0], atol=0.1 * np.abs(cov[0]).max())

    def rs(m, w, dg):
        sx.manual_seed(6)
        return LowRankMultivariateNormal(m, w, dg).rsample((2,))

    gradcheck(rs, [t64(loc, True), t64(W, True), t64(D, True)])
    gradcheck(lambda w, dg: LowRankMultivariateNormal(t64(loc), w, dg).log_prob(t64(x)), [t64(W, True), t64(D, True)])
    with pytest.raises(ValueError, match="cov_diag"):
        LowRankMultivariateNormal(t64(loc), t64(W), t64(-D))
    with pytest.raises(ValueError, match="cov_factor must be a batch"):
        LowRankMultivariateNormal(t64(loc), t64(W[..., :3, :]), t64(D))
    with pytest.raises(ValueError, match="Incompatible batch shapes"):
        LowRankMultivariateNormal(t64(np.zeros((3, 4))), t64(W), t64(D))


# ---------------------------------------------------------------------------------------------- matrices


def wishart_logpdf(X, df, cov):
    p = cov.shape[-1]
    return ((df - p - 1) / 2 * np.linalg.slogdet(X)[1] - np.trace(np.linalg.solve(cov, X), axis1=-2, axis2=-1) / 2
            - df * p / 2 * math.log(2) - df / 2 * np.linalg.slogdet(cov)[1]
            - np.array([mvlgamma(v / 2, p) for v in np.broadcast_to(df, np.shape(X)[:-2])]))


def test_wishart():
    cov, df = spd(3, (2,)), np.array([4.5, 7.0])
    X = spd(3, (2,)) / 3
    L = np.linalg.cholesky(cov)
    for kw in ({"covariance_matrix": t64(cov)}, {"precision_matrix": t64(np.linalg.inv(cov))},
               {"scale_tril": t64(L)}):
        d = Wishart(t64(df), **kw)
        assert d.batch_shape == (2,) and d.event_shape == (3, 3)
        close(d.log_prob(t64(X)), wishart_logpdf(X, df, cov), rtol=1e-9)
        ent = ((3 + 1) / 2 * np.linalg.slogdet(cov)[1] + 3 * 4 / 2 * math.log(2)
               + np.array([mvlgamma(v / 2, 3) for v in df])
               - (df - 4) / 2 * np.array([digamma(v / 2 - np.arange(3) / 2).sum() for v in df]) + df * 3 / 2)
        close(d.entropy(), ent, rtol=1e-9)
        close(d.mean, df[:, None, None] * cov)
        diag = np.diagonal(cov, axis1=-2, axis2=-1)
        close(d.variance, df[:, None, None] * (cov**2 + diag[..., :, None] * diag[..., None, :]))
        close(d.mode, (df - 4)[:, None, None] * cov)
        close(d.covariance_matrix, cov)
        close(d.precision_matrix, np.linalg.inv(cov), rtol=1e-9)
        close(d.scale_tril, L)
    d = Wishart(3.5, covariance_matrix=t64(cov[0]))
    assert np.isnan(d.mode.numpy()).all() and d.batch_shape == ()
    assert Wishart(t64(df), scale_tril=t64(L[0])).batch_shape == (2,)
    with pytest.warns(UserWarning, match="Low df"):
        Wishart(2.5, covariance_matrix=t64(cov[0]))
    with pytest.raises(ValueError, match="df"):
        Wishart(2.0, covariance_matrix=t64(cov[0]))
    with pytest.raises(ValueError, match="Exactly one"):
        Wishart(5.0)
    with pytest.raises(ValueError, match="support"):
        d.log_prob(t64(-np.eye(3)))
    # samples: E X = df Sigma, Var X_ij = df (S_ij^2 + S_ii S_jj)
    sx.manual_seed(19)
    s = Wishart(t64(df), covariance_matrix=t64(cov)).sample((4000,)).numpy()
    assert s.shape == (4000, 2, 3, 3) and (np.linalg.eigvalsh(s) > 0).all()
    within_se(s, df[:, None, None] * cov, df[:, None, None] * (cov**2 + diag[..., :, None] * diag[..., None, :]))
    # rsample: finite differences in the factor (the same noise each time); in df, the mean gradient of tr X

    def rs(tril):
        sx.manual_seed(7)
        return Wishart(t64(df), scale_tril=tril.tril()).rsample((2,))

    gradcheck(rs, [t64(L, True)])
    nu = t64(df, True)
    sx.manual_seed(8)
    draws = Wishart(nu, covariance_matrix=t64(cov)).rsample((3000,))
    draws.diagonal(dim1=-2, dim2=-1).sum().backward()
    close(nu.grad / 3000, np.trace(cov, axis1=-2, axis2=-1), rtol=0.1)
    gradcheck(lambda v, tril: Wishart(v, scale_tril=tril.tril()).log_prob(t64(X)), [t64(df, True), t64(L, True)])
    gradcheck(lambda v, tril: Wishart(v, scale_tril=tril.tril()).entropy(), [t64(df, True), t64(L, True)])


def lkj_log_norm(d, eta):
    """log c_d of Lewandowski, Kurowicka and Joe (2009): the integral of det(R)^(eta - 1) over correlations."""
    out = 0.0
    for k in range(1, d):
        a = eta + (d - k - 1) / 2
        out += (2 * eta - 2 + d - k) * (d - k) * math.log(2) + (d - k) * (2 * math.lgamma(a) - math.lgamma(2 * a))
    return out


def random_corr_cholesky(d, batch):
    a = RNG.standard_normal(batch + (d, d + 2))
    cov = a @ np.swapaxes(a, -1, -2)
    sd = np.sqrt(np.diagonal(cov, axis1=-2, axis2=-1))
    return np.linalg.cholesky(cov / sd[..., :, None] / sd[..., None, :])


def test_lkj_cholesky():
    for d in (2, 3, 5):
        eta = RNG.uniform(0.3, 3, 2)
        Lv = random_corr_cholesky(d, (2,))
        diag = np.diagonal(Lv, axis1=-2, axis2=-1)
        # density of R = L L^T, times the Jacobian prod_i L_ii^(d - i) (i = 1..d) of L -> R
        want = ((eta[:, None] - 1) * 2 * np.log(diag) + (d - np.arange(1, d + 1)) * np.log(diag)).sum(-1)
        want -= np.array([lkj_log_norm(d, e) for e in eta])
        dist = LKJCholesky(d, t64(eta))
        assert dist.batch_shape == (2,) and dist.event_shape == (d, d)
        close(dist.log_prob(t64(Lv)), want, rtol=1e-9)
        gradcheck(lambda c: LKJCholesky(d, c).log_prob(t64(Lv)), [t64(eta, True)])
    # dim 2: the density of L_10 = r integrates to 1
    r = np.linspace(-1, 1, 200001)[1:-1]
    Lv = np.zeros((r.size, 2, 2))
    Lv[:, 0, 0], Lv[:, 1, 0], Lv[:, 1, 1] = 1, r, np.sqrt(1 - r**2)
    dens = np.exp(LKJCholesky(2, 2.5).log_prob(t64(Lv)).numpy())
    assert abs(dens.sum() * (r[1] - r[0]) - 1) < 1e-4
    # samples: unit rows, and every correlation has E r^2 = 1 / (2 eta + d - 1)
    sx.manual_seed(20)
    for d, eta in ((3, 1.0), (4, 0.5)):
        s = LKJCholesky(d, eta).sample((6000,)).numpy()
        assert s.shape == (6000, d, d) and np.allclose((s**2).sum(-1), 1) and np.allclose(np.triu(s, 1), 0)
        rows, cols = np.tril_indices(d, -1)
        r2 = (s @ np.swapaxes(s, -1, -2))[:, rows, cols] ** 2
        a = eta - 1 + d / 2  # r = 2 b - 1 with b ~ Beta(a, a)
        e2, e4 = 1 / (2 * a + 1), 3 / ((2 * a + 1) * (2 * a + 3))
        within_se(r2, np.full(rows.size, e2), np.full(rows.size, e4 - e2**2))
    assert LKJCholesky(3, t64([1.0, 2.0])).expand((4, 2)).sample((5,)).shape == (5, 4, 2, 3, 3)
    with pytest.raises(ValueError, match="dim"):
        LKJCholesky(1)
    with pytest.raises(ValueError, match="concentration"):
        LKJCholesky(3, t64([-1.0]))
    with pytest.raises(ValueError, match="support"):
        LKJCholesky(3).log_prob(t64(np.eye(3) * 2))


# ---------------------------------------------------------------------------------------------- parity


def _parity(ours, theirs, torch, attrs=("mean", "variance", "mode"), value=None, rtol=1e-10):
    for attr in attrs:
        close(getattr(ours, attr), getattr(theirs, attr).numpy(), rtol=rtol)
    if value is not None:
        close(ours.log_prob(t64(value)), theirs.log_prob(torch.tensor(value)).numpy(), rtol=rtol)


def _grad_parity(ours_fn, theirs_fn, params, torch, rtol=1e-9):
    """Gradients of ``fn(*params).sum()`` agree between sneppx and torch."""
    ours = [t64(p, True) for p in params]
    theirs = [torch.tensor(p, requires_grad=True) for p in params]
    ours_fn(*ours).sum().backward()
    theirs_fn(*theirs).sum().backward()
    for o, t in zip(ours, theirs):
        close(o.grad, t.grad.numpy(), rtol=rtol, atol=1e-12)


@pytest.mark.parity
def test_counts_match_torch(torch):
    td = torch.distributions
    T = torch.tensor
    n, p = np.array([[3.0], [9.0]]), RNG.uniform(0.05, 0.95, (2, 3))
    k = np.array([[0.0, 2.0, 3.0], [9.0, 4.0, 1.0]])
    lg = np.log(p / (1 - p))
    _parity(Binomial(t64(n), t64(p)), td.Binomial(T(n), T(p)), torch, value=k)
    _parity(Binomial(t64(n), logits=t64(lg)), td.Binomial(T(n), logits=T(lg)), torch, value=k)
    ours, theirs = Binomial(5, t64(p)), td.Binomial(5, T(p))
    close(ours.entropy(), theirs.entropy().numpy(), rtol=1e-10)
    close(ours.enumerate_support(), theirs.enumerate_support().numpy())
    _grad_parity(lambda q: Binomial(t64(n), logits=q).log_prob(t64(k)),
                 lambda q: td.Binomial(T(n), logits=q).log_prob(T(k)), [lg], torch)
    _grad_parity(lambda q: Binomial(5, probs=q).entropy(), lambda q: td.Binomial(5, probs=q).entropy(), [p], torch)
    _grad_parity(lambda q: Binomial(5, logits=q).log_prob(t64(np.zeros(3))),  # logits = 0: the kink of max(0, x)
                 lambda q: td.Binomial(5, logits=q).log_prob(T(np.zeros(3))), [np.array([0.0, 1.0, -2.0])], torch)

    x = np.array([[2.0, 0.0, 3.0], [1.0, 1.0, 3.0]])
    _parity(Multinomial(5, t64(p)), td.Multinomial(5, T(p)), torch, ("mean", "variance"), x)
    # torch takes lgamma(n + 1) of an int64 tensor, in float32: within 1e-7
    close(Multinomial(5, logits=t64(lg)).entropy(), td.Multinomial(5, logits=T(lg)).entropy().numpy(), rtol=1e-7)
    _grad_parity(lambda q: Multinomial(5, logits=q).entropy(), lambda q: td.Multinomial(5, logits=q).entropy(),
                 [lg], torch)

    q = RNG.uniform(0.1, 0.9, 4)
    kk = np.array([0.0, 1.0, 4.0, 9.0])
    for ours, theirs in ((Geometric(t64(q)), td.Geometric(T(q))),
                         (Geometric(logits=t64(q - 0.5)), td.Geometric(logits=T(q - 0.5)))):
        _parity(ours, theirs, torch, value=kk)
        close(ours.entropy(), theirs.entropy().numpy())
    _grad_parity(lambda a: Geometric(a).entropy(), lambda a: td.Geometric(a).entropy(), [q], torch)

    c = RNG.uniform(0.5, 5, 4)
    _parity(NegativeBinomial(t64(c), t64(q)), td.NegativeBinomial(T(c), T(q)), torch, value=kk)
    _parity(NegativeBinomial(t64(c), logits=t64(q)), td.NegativeBinomial(T(c), logits=T(q)), torch, value=kk)
    _grad_parity(lambda a, b: NegativeBinomial(a, logits=b).log_prob(t64(kk)),
                 lambda a, b: td.NegativeBinomial(a, logits=b).log_prob(T(kk)), [c, q], torch)

    rate = RNG.uniform(0.5, 8, 4)
    _parity(Poisson(t64(rate)), td.Poisson(T(rate)), torch, value=kk)
    _grad_parity(lambda r: Poisson(r).log_prob(t64(kk)), lambda r: td.Poisson(r).log_prob(T(kk)), [rate], torch)

    logits = RNG.standard_normal((2, 4))
    v = np.eye(4)[[3, 1]]
    ours, theirs = OneHotCategorical(logits=t64(logits)), td.OneHotCategorical(logits=T(logits))
    _parity(ours, theirs, torch, value=v)
    close(ours.entropy(), theirs.entropy().numpy())
    close(ours.enumerate_support(), theirs.enumerate_support().numpy())
    _grad_parity(lambda a: OneHotCategorical(logits=a).entropy(), lambda a: td.OneHotCategorical(logits=a).entropy(),
                 [logits], torch)


@pytest.mark.parity
def test_gaussians_match_torch(torch, monkeypatch):
    import torch.distributions.lowrank_multivariate_normal as tlr
    import torch.distributions.multivariate_normal as tmvn

    td, T = torch.distributions, torch.tensor
    cov, loc, x = spd(3, (2,)), RNG.standard_normal(3), RNG.standard_normal((4, 2, 3))
    for kw, m in (("covariance_matrix", cov), ("precision_matrix", np.linalg.inv(cov)),
                  ("scale_tril", np.linalg.cholesky(cov))):
        ours, theirs = MultivariateNormal(t64(loc), **{kw: t64(m)}), td.MultivariateNormal(T(loc), **{kw: T(m)})
        _parity(ours, theirs, torch, value=x, rtol=1e-9)
        for attr in ("entropy", "scale_tril", "covariance_matrix", "precision_matrix"):
            got = getattr(ours, attr)
            close(got() if callable(got) else got, (getattr(theirs, attr)() if attr == "entropy"
                                                    else getattr(theirs, attr)).numpy(), rtol=1e-9)
    L = np.linalg.cholesky(cov)
    _grad_parity(lambda a, b: MultivariateNormal(a, scale_tril=b).log_prob(t64(x)),
                 lambda a, b: td.MultivariateNormal(a, scale_tril=b).log_prob(T(x)), [loc, L], torch)
    _grad_parity(lambda b: MultivariateNormal(t64(loc), precision_matrix=b).log_prob(t64(x)),
                 lambda b: td.MultivariateNormal(T(loc), precision_matrix=b).log_prob(T(x)), [cov], torch)
    # rsample with the same noise: torch's draws replaced by ours
    noise = []

    def same_noise(shape, dtype, device):
        return T(noise.pop(0))

    monkeypatch.setattr(tmvn, "_standard_normal", same_noise)
    sx.manual_seed(9)
    noise.append(sx.randn((5, 2, 3), dtype=sx.float64).numpy())
    sx.manual_seed(9)
    _grad_parity(lambda a, b: MultivariateNormal(a, scale_tril=b).rsample((5,)) ** 2,
                 lambda a, b: td.MultivariateNormal(a, scale_tril=b).rsample((5,)) ** 2, [loc, L], torch)

    W, D = RNG.standard_normal((2, 3, 2)), RNG.uniform(0.5, 2, (2, 3))
    ours, theirs = LowRankMultivariateNormal(t64(loc), t64(W), t64(D)), td.LowRankMultivariateNormal(T(loc), T(W), T(D))
    _parity(ours, theirs, torch, value=x, rtol=1e-9)
    for attr in ("scale_tril", "covariance_matrix", "precision_matrix"):
        close(getattr(ours, attr), getattr(theirs, attr).numpy(), rtol=1e-9)
    close(ours.entropy(), theirs.entropy().numpy())
    _grad_parity(lambda a, b, c: LowRankMultivariateNormal(a, b, c).log_prob(t64(x)),
                 lambda a, b, c: td.LowRankMultivariateNormal(a, b, c).log_prob(T(x)), [loc, W, D], torch)
    monkeypatch.setattr(tlr, "_standard_normal", same_noise)
    sx.manual_seed(10)
    noise.extend([sx.randn((4, 2, 2), dtype=sx.float64).numpy(), sx.randn((4, 2, 3), dtype=sx.float64).numpy()])
    sx.manual_seed(10)
    _grad_parity(lambda a, b, c: LowRankMultivariateNormal(a, b, c).rsample((4,)) ** 2,
                 lambda a, b, c: td.LowRankMultivariateNormal(a, b, c).rsample((4,)) ** 2, [loc, W, D], torch)


@pytest.mark.parity
def test_matrices_match_torch(torch):
    td, T = torch.distributions, torch.tensor
    cov, df, X = spd(3, (2,)), np.array([4.5, 7.0]), spd(3, (2,)) / 3
    for kw, m in (("covariance_matrix", cov), ("precision_matrix", np.linalg.inv(cov)),
                  ("scale_tril", np.linalg.cholesky(cov))):
        ours, theirs = Wishart(t64(df), **{kw: t64(m)}), td.Wishart(T(df), **{kw: T(m)})
        _parity(ours, theirs, torch, value=X, rtol=1e-9)
        close(ours.entropy(), theirs.entropy().numpy(), rtol=1e-9)
    L = np.linalg.cholesky(cov)
    # through b.tril(): torch's cholesky_solve backward also gives the (unread) upper triangle a gradient
    _grad_parity(lambda a, b: Wishart(a, scale_tril=b.tril()).log_prob(t64(X)),
                 lambda a, b: td.Wishart(a, scale_tril=b.tril()).log_prob(T(X)), [df, L], torch)
    _grad_parity(lambda a, b: Wishart(a, scale_tril=b).entropy(),
                 lambda a, b: td.Wishart(a, scale_tril=b).entropy(), [df, L], torch)
    for d in (2, 4):
        eta, Lv = RNG.uniform(0.3, 3, 3), random_corr_cholesky(d, (3,))
        close(LKJCholesky(d, t64(eta)).log_prob(t64(Lv)), td.LKJCholesky(d, T(eta)).log_prob(T(Lv)).numpy(), rtol=1e-9)
        _grad_parity(lambda c: LKJCholesky(d, c).log_prob(t64(Lv)), lambda c: td.LKJCholesky(d, c).log_prob(T(Lv)),
                     [eta], torch)
