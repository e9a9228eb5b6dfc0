"""sneppx_core.distributions' base: Distribution (validation, expand, shapes), constraints, utils, Normal,
Bernoulli, Categorical, Independent and MixtureSameFamily, against NumPy/math formulas, sample moments,
finite differences and (parity) torch.distributions."""

import math

import numpy as np
import pytest
import sneppx_core as sx
from sneppx_core.distributions import (Bernoulli, Categorical, Distribution, ExponentialFamily, Independent,
                                       MixtureSameFamily, Normal, constraints)
from sneppx_core.distributions import utils as dutils
from sneppx_core.testing import gradcheck

RNG = np.random.default_rng(12)


def t64(a, grad=False):
    return sx.tensor(np.asarray(a, np.float64), requires_grad=grad)


def close(a, b, rtol=1e-12, atol=0.0):
    np.testing.assert_allclose(np.asarray(a.detach().numpy() if isinstance(a, sx.Tensor) else a),
                               np.asarray(b), rtol=rtol, atol=atol)


def normal_logpdf(x, loc, scale):
    return -((x - loc) ** 2) / (2 * scale ** 2) - np.log(scale) - 0.5 * np.log(2 * np.pi)


@pytest.fixture
def validation_default():
    """Restores Distribution's default argument validation after the test."""
    old = Distribution._validate_args
    yield
    Distribution.set_default_validate_args(old)


# Distribution: validation, expand, shapes


def test_validation_of_parameters_and_values(validation_default):
    with pytest.raises(ValueError, match="scale"):
        Normal(t64([0.0, 1.0]), t64([1.0, 0.0]))
    with pytest.raises(ValueError, match="probs"):
        Bernoulli(probs=t64(1.5))
    with pytest.raises(ValueError, match="Simplex"):
        Categorical(probs=t64([-0.5, 1.5]))
    with pytest.raises(ValueError, match="support"):
        Normal(0.0, 1.0).log_prob(sx.tensor(float("nan")))
    with pytest.raises(ValueError, match="support"):
        Bernoulli(probs=t64(0.3)).log_prob(t64(0.5))
    with pytest.raises(ValueError, match="support"):
        Categorical(probs=t64([0.3, 0.7])).log_prob(sx.tensor(2))
    with pytest.raises(ValueError, match="must be a Tensor"):
        Normal(0.0, 1.0).log_prob(0.5)
    with pytest.raises(ValueError, match="broadcastable"):
        Normal(t64([0.0, 1.0]), 1.0).log_prob(t64([0.0, 1.0, 2.0]))
    with pytest.raises(ValueError, match="must be specified"):
        Categorical()
    with pytest.raises(ValueError, match="must be specified"):
        Bernoulli(probs=t64([0.5]), logits=t64([0.0]))
    with pytest.raises(ValueError, match="one-dimensional"):
        Categorical(logits=t64(1.0))
    with pytest.raises(NotImplementedError, match="rsample"):
        Categorical(logits=sx.zeros(3)).rsample()
    # validate_args=False turns the checks off for one distribution
    d = Normal(t64([0.0, 1.0]), t64([1.0, 0.0]), validate_args=False)
    assert d.batch_shape == (2,)
    assert np.isfinite(Bernoulli(probs=t64(0.3), validate_args=False).log_prob(t64(0.5)).item())
    # set_default_validate_args turns them off for distributions made afterwards
    Distribution.set_default_validate_args(False)
    Normal(t64([0.0]), t64([-1.0]))
    Normal(0.0, 1.0).log_prob(sx.tensor(float("nan")))
    Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        Normal(t64([0.0]), t64([-1.0]))
    with pytest.raises(ValueError):
        Distribution.set_default_validate_args(3)


def test_base_class_defaults():
    d = Distribution((2,), (3,), validate_args=False)
    assert d.batch_shape == (2,) and d.event_shape == (3,) and d._extended_shape((4,)) == (4, 2, 3)
    for name in ("mean", "mode", "variance"):
        with pytest.raises(NotImplementedError):
            getattr(d, name)
    for fn in (d.rsample, d.entropy, d.enumerate_support, lambda: d.log_prob(sx.zeros(3)),
               lambda: d.cdf(sx.zeros(3)), lambda: d.icdf(sx.zeros(3)), lambda: d.expand((2,))):
        with pytest.raises(NotImplementedError):
            fn()
    with pytest.warns(UserWarning, match="arg_constraints"):
        Distribution((), validate_args=True)
    with pytest.warns(UserWarning):
        s = Normal(t64([1.0]), t64([2.0])).sample_n(3)
    assert s.shape == (3, 1)
    assert Normal(0.0, 1.0).perplexity().item() == pytest.approx(math.exp(0.5 + 0.5 * math.log(2 * math.pi)))


def test_expand_and_sample_shapes():
    loc, scale = t64(RNG.standard_normal(3)), t64(RNG.uniform(0.5, 2, 3))
    n = Normal(loc, scale).expand((4, 3))
    assert n.batch_shape == (4, 3) and n.loc.shape == (4, 3) and n.sample((2,)).shape == (2, 4, 3)
    assert n.sample(5).shape == (5, 4, 3) and n.rsample((2, 1)).shape == (2, 1, 4, 3)
    close(n.log_prob(t64(0.0)), np.broadcast_to(normal_logpdf(0.0, loc.numpy(), scale.numpy()), (4, 3)))
    assert Normal(0.0, 1.0).batch_shape == () and Normal(0.0, 1.0).sample().shape == ()
    assert Normal(0.0, t64([1.0, 2.0])).batch_shape == (2,)
    with pytest.raises(ValueError):
        Normal(loc, scale).expand((2,))  # not broadcastable
    b = Bernoulli(logits=t64([0.1, -0.2])).expand((5, 2))
    assert b.batch_shape == (5, 2) and b.logits.shape == (5, 2) and b.sample((3,)).shape == (3, 5, 2)
    c = Categorical(logits=t64(np.zeros((2, 4)))).expand((3, 2))
    assert c.batch_shape == (3, 2) and c.param_shape == (3, 2, 4) and c.sample((6,)).shape == (6, 3, 2)
    assert c.enumerate_support().shape == (4, 3, 2) and c.enumerate_support(False).shape == (4, 1, 1)
    assert c._validate_args == Categorical(logits=t64(np.zeros(4)))._validate_args

    class MyNormal(Normal):  # a custom __init__ must come with its own expand
        def __init__(self, loc):
            super().__init__(loc, 1.0)

    with pytest.raises(NotImplementedError, match="custom"):
        MyNormal(t64([0.0])).expand((2, 1))


# constraints


def _check(constraint, values, want, dtype=sx.float64):
    got = constraint.check(sx.tensor(np.asarray(values), dtype=dtype))
    np.testing.assert_array_equal(got.numpy(), np.asarray(want))


def test_scalar_constraints():
    c = constraints
    _check(c.boolean, [0.0, 1.0, 0.5, -1.0], [True, True, False, False])
    _check(c.nonnegative_integer, [0.0, 3.0, -1.0, 1.5], [True, True, False, False])
    _check(c.positive_integer, [1.0, 3.0, 0.0, 2.5], [True, True, False, False])
    _check(c.integer_interval(2, 4), [2.0, 4.0, 5.0, 3.5], [True, True, False, False])
    _check(c.real, [0.0, -1e300, math.inf, math.nan], [True, True, True, False])
    _check(c.positive, [1e-300, 2.0, 0.0, -1.0], [True, True, False, False])
    _check(c.nonnegative, [0.0, 2.0, -1e-300], [True, True, False])
    _check(c.greater_than(1.0), [1.5, 1.0], [True, False])
    _check(c.greater_than_eq(1.0), [1.0, 0.5], [True, False])
    _check(c.less_than(1.0), [0.5, 1.0], [True, False])
    _check(c.unit_interval, [0.0, 1.0, 1.5, -0.1], [True, True, False, False])
    _check(c.interval(-1.0, 2.0), [-1.0, 2.0, 2.1], [True, True, False])
    _check(c.half_open_interval(0.0, 1.0), [0.0, 0.5, 1.0], [True, True, False])
    assert c.boolean.is_discrete and c.nonnegative_integer.is_discrete and not c.real.is_discrete
    assert c.real.event_dim == 0 and repr(c.positive) == "GreaterThan(lower_bound=0.0)"


def test_vector_and_matrix_constraints():
    c = constraints
    _check(c.real_vector, [[0.0, 1.0], [0.0, math.nan]], [True, False])
    assert c.real_vector.event_dim == 1 and c.independent(c.positive, 2).event_dim == 2
    _check(c.independent(c.positive, 1), [[1.0, 2.0], [2.0, -2.0]], [True, False])
    with pytest.raises(ValueError, match="dim"):
        c.independent(c.positive, 2).check(sx.ones(3, dtype=sx.float64))
    _check(c.one_hot, [[0.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 0.0]], [True, False, False])
    _check(c.simplex, [[0.25, 0.75], [0.5, 0.6], [-0.5, 1.5]], [True, False, False])
    _check(c.multinomial(3), [[1.0, 2.0], [2.0, 2.0], [-1.0, 1.0]], [True, False, False])
    assert c.one_hot.event_dim == 1 and c.one_hot.is_discrete and c.simplex.event_dim == 1
    lower, full = [[1.0, 0.0], [0.6, 0.8]], [[1.0, 1.0], [0.0, 1.0]]
    _check(c.lower_triangular, [lower, full, [[-1.0, 0.0], [2.0, 0.0]]], [True, False, True])
    _check(c.lower_cholesky, [lower, full, [[-1.0, 0.0], [2.0, 1.0]]], [True, False, False])
    _check(c.corr_cholesky, [lower, [[1.0, 0.0], [0.6, 0.9]], full], [True, False, False])
    _check(c.square, np.zeros((3, 2, 2)), [True] * 3)
    _check(c.square, np.zeros((2, 3)), False)
    _check(c.symmetric, [[[1.0, 2.0], [2.0, 1.0]], [[1.0, 2.0], [3.0, 1.0]]], [True, False])
    _check(c.positive_definite, [[[2.0, 1.0], [1.0, 2.0]], [[1.0, 1.0], [1.0, 1.0]], [[1.0, 2.0], [2.0, 1.0]]],
           [True, False, False])
    _check(c.positive_semidefinite, [[[2.0, 1.0], [1.0, 2.0]], [[1.0, 1.0], [1.0, 1.0]], [[1.0, 2.0], [2.0, 1.0]]],
           [True, True, False])
    assert c.lower_cholesky.event_dim == 2 and c.positive_definite.event_dim == 2
    cat = c.cat([c.positive, c.real], 0, [2, 1])
    _check(cat, [1.0, -1.0, -1.0], [True, False, True])
    with pytest.raises(ValueError):
        c.cat([c.positive, c.real], 0, [1])
    _check(c.stack([c.positive, c.real], 1), [[1.0, -1.0], [-1.0, -1.0]], [[True, True], [False, True]])
    assert not cat.is_discrete and c.stack([c.boolean, c.real]).is_discrete


def test_dependent_constraints():
    c = constraints
    assert c.is_dependent(c.dependent) and not c.is_dependent(c.real)
    with pytest.raises(ValueError, match="dependent"):
        c.dependent.check(sx.zeros(1))
    with pytest.raises(NotImplementedError):
        c.dependent.event_dim
    d = c.dependent(is_discrete=True, event_dim=1)
    assert d.is_discrete and d.event_dim == 1 and c.is_dependent(d)

    class Thing:
        @c.dependent_property(is_discrete=False, event_dim=0)
        def support(self):
            return c.interval(0.0, self.high)

        high = 2.0

    assert Thing().support.upper_bound == 2.0 and c.is_dependent(Thing.support) and Thing.support.event_dim == 0
    assert c.is_dependent(Categorical.support) and Categorical(logits=sx.zeros(3)).support.upper_bound == 2


# utils


def test_utils():
    a, b = dutils.broadcast_all(1.5, t64([[0.0], [1.0]]))
    assert a.shape == b.shape == (2, 1) and a.dtype == sx.float64 and a[1, 0].item() == 1.5
    x, y = dutils.broadcast_all(1, 2)
    assert x.dtype == sx.get_default_dtype() and x.shape == () and y.item() == 2.0
    with pytest.raises(ValueError, match="numbers.Number or Tensor"):
        dutils.broadcast_all(t64(1.0), "a")
    logits = RNG.standard_normal((2, 4))
    probs = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    close(dutils.logits_to_probs(t64(logits)), probs)
    close(dutils.logits_to_probs(t64(logits), is_binary=True), 1 / (1 + np.exp(-logits)))
    close(dutils.probs_to_logits(t64(probs)), np.log(probs))
    p = RNG.uniform(0.05, 0.95, 5)
    close(dutils.probs_to_logits(t64(p), is_binary=True), np.log(p / (1 - p)))
    eps = np.finfo(np.float64).eps
    close(dutils.clamp_probs(t64([0.0, 0.5, 1.0])), [eps, 0.5, 1 - eps], rtol=0)
    assert np.isfinite(dutils.probs_to_logits(t64([0.0, 1.0]), is_binary=True).numpy()).all()
    for n, diag in ((4, 0), (3, -1), (3, 1), (1, 0)):
        m = np.tril(RNG.standard_normal((2, n, n)), diag)
        vec = dutils.tril_matrix_to_vec(t64(m), diag)
        rows, cols = np.tril_indices(n, diag)
        close(vec, m[:, rows, cols])
        close(dutils.vec_to_tril_matrix(vec, diag), m)
    with pytest.raises(ValueError):
        dutils.vec_to_tril_matrix(t64(np.zeros(4)))
    assert dutils.euler_constant == pytest.approx(0.5772156649015329, rel=1e-15)


def test_lazy_property():
    calls = []

    class Thing:
        @dutils.lazy_property
        def value(self):
            calls.append(1)
            return 2 * self.x

        x = 3

    thing = Thing()
    assert thing.value == 6 and thing.value == 6 and len(calls) == 1 and "value" in thing.__dict__
    assert isinstance(Thing.value, dutils.lazy_property) and isinstance(Thing.value, property)
    # under no_grad, the lazily computed value still carries gradient (as in PyTorch)
    logits = t64([0.3, -0.2], grad=True)
    with sx.no_grad():
        probs = Bernoulli(logits=logits).probs
    assert probs.requires_grad


# Normal, Bernoulli, Categorical


def test_normal_values_gradients_and_samples():
    loc, scale, x = RNG.standard_normal(4), RNG.uniform(0.5, 2, 4), RNG.standard_normal(4)
    dist = Normal(t64(loc), t64(scale))
    close(dist.log_prob(t64(x)), normal_logpdf(x, loc, scale))
    close(dist.cdf(t64(x)), [0.5 * math.erfc(-(xi - m) / (s * math.sqrt(2))) for xi, m, s in zip(x, loc, scale)],
          rtol=1e-10)
    u = RNG.uniform(0.05, 0.95, 4)
    close(dist.cdf(dist.icdf(t64(u))), u, rtol=1e-10)
    close(dist.entropy(), 0.5 + 0.5 * np.log(2 * np.pi) + np.log(scale))
    close(ExponentialFamily.entropy(dist), 0.5 + 0.5 * np.log(2 * np.pi) + np.log(scale), rtol=1e-10)
    close(dist.mean, loc)
    close(dist.mode, loc)
    close(dist.variance, scale ** 2)
    close(dist.stddev, scale)
    sx.manual_seed(5)
    s = Normal(t64(loc), t64(scale)).sample((40000,)).numpy()
    assert s.shape == (40000, 4) and (np.abs(s.mean(0) - loc) < 5 * scale / np.sqrt(40000)).all()
    assert (np.abs(s.var(0) - scale ** 2) < 5 * scale ** 2 * np.sqrt(2 / 40000)).all()
    gradcheck(lambda m, sd: Normal(m, sd).log_prob(t64(x)), [t64(loc, True), t64(scale, True)])
    gradcheck(lambda m, sd: Normal(m, sd).cdf(t64(x)), [t64(loc, True), t64(scale, True)])
    gradcheck(lambda sd: Normal(0.0, sd).entropy(), [t64(scale, True)])
    m, sd = t64(loc, True), t64(scale, True)
    sx.manual_seed(7)
    r = Normal(m, sd).rsample((3,))
    r.sum().backward()
    close(m.grad, np.full(4, 3.0))  # d(loc + scale eps)/d loc, three samples
    close(sd.grad, ((r.detach().numpy() - loc) / scale).sum(0), rtol=1e-10)  # eps = (r - loc) / scale
    assert not Normal(m, sd).sample().requires_grad and Normal.has_rsample


def test_bernoulli_values_gradients_and_samples():
    p = RNG.uniform(0.05, 0.95, (2, 3))
    v = (RNG.random((2, 3)) > 0.5).astype(np.float64)
    entropy = -(p * np.log(p) + (1 - p) * np.log1p(-p))
    for dist in (Bernoulli(probs=t64(p)), Bernoulli(logits=t64(np.log(p / (1 - p))))):
        close(dist.log_prob(t64(v)), v * np.log(p) + (1 - v) * np.log1p(-p), rtol=1e-10)
        close(dist.entropy(), entropy, rtol=1e-10)
        close(ExponentialFamily.entropy(dist), entropy, rtol=1e-10)
        close(dist.mean, p, rtol=1e-10)
        close(dist.variance, p * (1 - p), rtol=1e-10)
        assert dist.param_shape == (2, 3)
    mode = Bernoulli(probs=t64([0.2, 0.5, 0.9])).mode.numpy()
    assert mode[0] == 0 and np.isnan(mode[1]) and mode[2] == 1
    enum = Bernoulli(probs=t64(p)).enumerate_support()
    assert enum.shape == (2, 2, 3) and (enum.numpy()[0] == 0).all() and (enum.numpy()[1] == 1).all()
    assert Bernoulli(probs=t64(p)).enumerate_support(expand=False).shape == (2, 1, 1)
    sx.manual_seed(4)
    draws = Bernoulli(probs=t64(p)).sample((20000,)).numpy()
    assert draws.shape == (20000, 2, 3) and set(np.unique(draws)) <= {0.0, 1.0}
    assert (np.abs(draws.mean(0) - p) < 5 * np.sqrt(p * (1 - p) / 20000)).all()
    gradcheck(lambda lg: Bernoulli(logits=lg).log_prob(t64(v)), [t64(np.log(p / (1 - p)), True)])
    gradcheck(lambda pr: Bernoulli(probs=pr).log_prob(t64(v)), [t64(p, True)])
    gradcheck(lambda pr: Bernoulli(probs=pr).entropy(), [t64(p, True)])


def test_categorical_values_gradients_and_samples():
    logits = RNG.standard_normal((3, 5))
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    for dist in (Categorical(logits=t64(logits)), Categorical(probs=t64(np.exp(logits) * 2.5))):
        v = np.array([4, 0, 2])
        close(dist.log_prob(sx.tensor(v)), logp[np.arange(3), v])
        close(dist.entropy(), -(np.exp(logp) * logp).sum(-1))
        close(dist.probs, np.exp(logp))
        close(dist.logits, logp)
        assert dist.batch_shape == (3,) and dist.sample().shape == (3,) and dist.sample((4, 2)).shape == (4, 2, 3)
        assert dist.log_prob(sx.tensor(np.array([[1], [2]]))).shape == (2, 3)  # broadcast against the batch
        np.testing.assert_array_equal(dist.mode.numpy(), logits.argmax(-1))
        assert np.isnan(dist.mean.numpy()).all() and np.isnan(dist.variance.numpy()).all()
        np.testing.assert_array_equal(dist.enumerate_support().numpy(), np.repeat(np.arange(5)[:, None], 3, 1))
    # a zero probability: entropy counts 0 log 0 as 0, its log_prob is very negative, it is never drawn
    dist = Categorical(probs=t64([0.0, 0.25, 0.75]))
    assert dist.entropy().item() == pytest.approx(-(0.25 * math.log(0.25) + 0.75 * math.log(0.75)), rel=1e-12)
    assert dist.log_prob(sx.tensor(0)).item() < -30
    sx.manual_seed(3)
    counts = np.bincount(dist.sample((40000,)).numpy(), minlength=3) / 40000
    np.testing.assert_allclose(counts, [0, 0.25, 0.75], atol=0.012)  # 5 standard errors
    gradcheck(lambda lg: Categorical(logits=lg).log_prob(sx.tensor(np.array([1, 3, 0]))), [t64(logits, True)])
    gradcheck(lambda lg: Categorical(logits=lg).entropy(), [t64(logits, True)])
    gradcheck(lambda pr: Categorical(probs=pr).log_prob(sx.tensor(np.array([1, 3, 0]))),
              [t64(np.exp(logits), True)])


# Independent and MixtureSameFamily


def test_independent():
    loc, scale = RNG.standard_normal((2, 3, 4)), RNG.uniform(0.5, 2, (2, 3, 4))
    base = Normal(t64(loc), t64(scale))
    ind = Independent(base, 2)
    assert ind.batch_shape == (2,) and ind.event_shape == (3, 4) and ind.has_rsample
    assert not ind.has_enumerate_support and ind.support.event_dim == 2
    x = RNG.standard_normal((5, 2, 3, 4))
    close(ind.log_prob(t64(x)), normal_logpdf(x, loc, scale).sum((-2, -1)))
    close(ind.entropy(), (0.5 + 0.5 * np.log(2 * np.pi) + np.log(scale)).sum((-2, -1)))
    close(ind.mean, loc)
    close(ind.variance, scale ** 2)
    assert ind.sample((3,)).shape == (3, 2, 3, 4) and ind.rsample().shape == (2, 3, 4)
    e = ind.expand((5, 2))
    assert e.batch_shape == (5, 2) and e.event_shape == (3, 4) and e.base_dist.batch_shape == (5, 2, 3, 4)
    assert repr(Independent(Normal(t64([0.0]), t64([1.0])), 1)).startswith("Independent(Normal(")
    with pytest.raises(ValueError, match="reinterpreted_batch_ndims"):
        Independent(base, 4)
    with pytest.raises(ValueError):  # support of the whole event
        ind.log_prob(t64(np.full((2, 3, 4), np.nan)))
    with pytest.raises(NotImplementedError, match="cartesian"):
        Independent(Bernoulli(probs=t64([0.3, 0.6])), 1).enumerate_support()
    b0 = Independent(Bernoulli(probs=t64([0.3, 0.6])), 0)
    assert b0.has_enumerate_support and b0.enumerate_support().shape == (2, 2)
    gradcheck(lambda m, sd: Independent(Normal(m, sd), 1).log_prob(t64(x[0, 0])),
              [t64(loc[0], True), t64(scale[0], True)])


def _gmm(logits, loc, scale, event=False):
    comp = Normal(t64(loc), t64(scale))
    return MixtureSameFamily(Categorical(logits=t64(logits)), Independent(comp, 1) if event else comp)


def test_mixture_same_family_values():
    logits, loc, scale = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4)), RNG.uniform(0.5, 2, (3, 4))
    w = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    gmm = _gmm(logits, loc, scale)
    assert gmm.batch_shape == (3,) and gmm.event_shape == () and not gmm.has_rsample
    x = RNG.standard_normal((5, 3))
    want = np.log((w * np.exp(normal_logpdf(x[..., None], loc, scale))).sum(-1))
    close(gmm.log_prob(t64(x)), want, rtol=1e-10)
    cdfs = np.vectorize(lambda z: 0.5 * math.erfc(-z / math.sqrt(2)))((x[..., None] - loc) / scale)
    close(gmm.cdf(t64(x)), (w * cdfs).sum(-1), rtol=1e-10)
    mean = (w * loc).sum(-1)
    close(gmm.mean, mean, rtol=1e-10)
    close(gmm.variance, (w * (scale ** 2 + loc ** 2)).sum(-1) - mean ** 2, rtol=1e-9)
    gradcheck(lambda lg, m, sd: MixtureSameFamily(Categorical(logits=lg), Normal(m, sd)).log_prob(t64(x)),
              [t64(logits, True), t64(loc, True), t64(scale, True)])
    # events of two dims, the mixture broadcast over a batch of components
    loc2, scale2 = RNG.standard_normal((2, 3, 2)), RNG.uniform(0.5, 2, (2, 3, 2))
    gmm2 = _gmm(RNG.standard_normal(3), loc2, scale2, event=True)
    assert gmm2.batch_shape == (2,) and gmm2.event_shape == (2,) and gmm2.mean.shape == (2, 2)
    assert gmm2.log_prob(t64(np.zeros((4, 2, 2)))).shape == (4, 2) and gmm2.sample((5,)).shape == (5, 2, 2)
    e = gmm.expand((2, 3))
    assert e.batch_shape == (2, 3) and e.component_distribution.batch_shape == (2, 3, 4)
    close(e.log_prob(t64(x[0])), np.broadcast_to(want[0], (2, 3)), rtol=1e-10)
    assert isinstance(gmm.mixture_distribution, Categorical) and isinstance(gmm.component_distribution, Normal)
    assert repr(gmm).startswith("MixtureSameFamily(")


def test_mixture_same_family_sample_and_checks():
    logits, loc, scale = np.log([0.2, 0.8]), np.array([-3.0, 2.0]), np.array([0.5, 1.0])
    gmm = _gmm(logits, loc, scale)
    sx.manual_seed(11)
    s = gmm.sample((40000,)).numpy()
    mean, var = 0.2 * -3 + 0.8 * 2, 0.2 * (0.25 + 9) + 0.8 * (1 + 4) - (0.2 * -3 + 0.8 * 2) ** 2
    assert s.shape == (40000,) and abs(s.mean() - mean) < 5 * math.sqrt(var / 40000)
    assert abs((s < -0.5).mean() - 0.2) < 5 * math.sqrt(0.16 / 40000)  # the components barely overlap
    bern = MixtureSameFamily(Categorical(logits=t64([0.0, 0.0])), Bernoulli(probs=t64([0.2, 0.9])))
    with pytest.raises(ValueError, match="support"):
        bern.log_prob(t64(0.5))
    assert bern.support.is_discrete and bern.support.event_dim == 0
    with pytest.raises(ValueError, match="Categorical"):
        MixtureSameFamily(Normal(0.0, 1.0), Normal(t64([0.0]), t64([1.0])))
    with pytest.raises(ValueError, match="Distribution"):
        MixtureSameFamily(Categorical(logits=t64([0.0])), "normal")
    with pytest.raises(ValueError, match="does not equal"):
        _gmm(np.zeros(3), np.zeros(4), np.ones(4))
    with pytest.raises(ValueError, match="not compatible"):
        _gmm(np.zeros((3, 4)), np.zeros((2, 4)), np.ones((2, 4)))


# parity with torch.distributions


def _tt(torch, a):
    return torch.tensor(np.asarray(a, np.float64))


def _grads_match(torch, ours_fn, theirs_fn, arrays, rtol=1e-10):
    ours_in = [t64(a, True) for a in arrays]
    theirs_in = [_tt(torch, a).requires_grad_() for a in arrays]
    ours, theirs = ours_fn(*ours_in), theirs_fn(*theirs_in)
    close(ours, theirs.detach().numpy(), rtol=rtol)
    ours.sum().backward()
    theirs.sum().backward()
    for a, b in zip(ours_in, theirs_in):
        want = np.zeros(a.shape) if b.grad is None else b.grad.numpy()  # torch leaves unused inputs' grad None
        close(np.zeros(a.shape) if a.grad is None else a.grad, want, rtol=rtol, atol=1e-14)


@pytest.mark.parity
def test_normal_matches_torch(torch):
    td = torch.distributions
    loc, scale, x, u = RNG.standard_normal(3), RNG.uniform(0.5, 2, 3), RNG.standard_normal(3), RNG.random(3)
    ours, theirs = Normal(t64(loc), t64(scale)), td.Normal(_tt(torch, loc), _tt(torch, scale))
    for name in ("mean", "mode", "variance", "stddev"):
        close(getattr(ours, name), getattr(theirs, name).numpy())
    close(ours.entropy(), theirs.entropy().numpy())
    close(ours.cdf(t64(x)), theirs.cdf(_tt(torch, x)).numpy())
    close(ours.icdf(t64(u)), theirs.icdf(_tt(torch, u)).numpy(), rtol=1e-10)
    close(ExponentialFamily.entropy(ours), td.ExponentialFamily.entropy(theirs).detach().numpy(), rtol=1e-10)
    _grads_match(torch, lambda m, s: Normal(m, s).log_prob(t64(x)),
                 lambda m, s: td.Normal(m, s).log_prob(_tt(torch, x)), [loc, scale])
    _grads_match(torch, lambda m, s: Normal(m, s).cdf(t64(x)),
                 lambda m, s: td.Normal(m, s).cdf(_tt(torch, x)), [loc, scale])
    _grads_match(torch, lambda s: Normal(0.0, s).entropy(), lambda s: td.Normal(0.0, s).entropy(), [scale])
    assert ours.support.check(t64(x)).all() and td.Normal.arg_constraints.keys() == Normal.arg_constraints.keys()


@pytest.mark.parity
def test_bernoulli_matches_torch(torch):
    td = torch.distributions
    p, b = RNG.uniform(0.1, 0.9, 5), (RNG.random(5) > 0.5) * 1.0
    lg = np.log(p / (1 - p))
    for kw in ("probs", "logits"):
        arg = p if kw == "probs" else lg
        ours, theirs = Bernoulli(**{kw: t64(arg)}), td.Bernoulli(**{kw: _tt(torch, arg)})
        close(ours.log_prob(t64(b)), theirs.log_prob(_tt(torch, b)).numpy(), rtol=1e-10)
        close(ours.entropy(), theirs.entropy().numpy(), rtol=1e-10)
        for name in ("mean", "variance", "probs", "logits"):
            close(getattr(ours, name), getattr(theirs, name).detach().numpy(), rtol=1e-10)
        _grads_match(torch, lambda a, kw=kw: Bernoulli(**{kw: a}).log_prob(t64(b)),
                     lambda a, kw=kw: td.Bernoulli(**{kw: a}).log_prob(_tt(torch, b)), [arg])
        _grads_match(torch, lambda a, kw=kw: Bernoulli(**{kw: a}).entropy(),
                     lambda a, kw=kw: td.Bernoulli(**{kw: a}).entropy(), [arg])
    probs = [0.2, 0.5, 0.9]
    np.testing.assert_array_equal(Bernoulli(probs=t64(probs)).mode.numpy(),
                                  td.Bernoulli(probs=_tt(torch, probs)).mode.numpy())
    np.testing.assert_array_equal(Bernoulli(probs=t64(probs)).enumerate_support().numpy(),
                                  td.Bernoulli(probs=_tt(torch, probs)).enumerate_support().numpy())
    close(ExponentialFamily.entropy(Bernoulli(probs=t64(p))),
          td.ExponentialFamily.entropy(td.Bernoulli(probs=_tt(torch, p))).detach().numpy(), rtol=1e-10)


@pytest.mark.parity
def test_categorical_matches_torch(torch):
    td = torch.distributions
    logits, v = RNG.standard_normal((4, 6)), np.array([5, 0, 3, 3])
    probs = np.exp(logits)
    for kw, arg in (("logits", logits), ("probs", probs)):
        ours, theirs = Categorical(**{kw: t64(arg)}), td.Categorical(**{kw: _tt(torch, arg)})
        close(ours.log_prob(sx.tensor(v)), theirs.log_prob(torch.tensor(v)).numpy())
        close(ours.entropy(), theirs.entropy().numpy())
        close(ours.probs, theirs.probs.numpy())
        close(ours.logits, theirs.logits.numpy())
        np.testing.assert_array_equal(ours.mode.numpy(), theirs.mode.numpy())
        np.testing.assert_array_equal(ours.enumerate_support().numpy(), theirs.enumerate_support().numpy())
        np.testing.assert_array_equal(ours.enumerate_support(False).numpy(), theirs.enumerate_support(False).numpy())
        _grads_match(torch, lambda a, kw=kw: Categorical(**{kw: a}).log_prob(sx.tensor(v)),
                     lambda a, kw=kw: td.Categorical(**{kw: a}).log_prob(torch.tensor(v)), [arg])
        _grads_match(torch, lambda a, kw=kw: Categorical(**{kw: a}).entropy(),
                     lambda a, kw=kw: td.Categorical(**{kw: a}).entropy(), [arg])


@pytest.mark.parity
def test_utils_match_torch(torch):
    tu = torch.distributions.utils
    p = RNG.uniform(0.0, 1.0, 6)
    for binary in (False, True):
        close(dutils.probs_to_logits(t64(p), binary), tu.probs_to_logits(_tt(torch, p), binary).numpy())
        close(dutils.logits_to_probs(t64(p), binary), tu.logits_to_probs(_tt(torch, p), binary).numpy())
    close(dutils.clamp_probs(t64([0.0, 1.0, 0.3])), tu.clamp_probs(_tt(torch, [0.0, 1.0, 0.3])).numpy(), rtol=0)
    for m, diag in ((6, 0), (3, -1), (8, 1)):
        vec = RNG.standard_normal(m)
        close(dutils.vec_to_tril_matrix(t64(vec), diag), tu.vec_to_tril_matrix(_tt(torch, vec), diag).numpy())


@pytest.mark.parity
def test_independent_and_mixture_match_torch(torch):
    td = torch.distributions
    logits, loc, scale = RNG.standard_normal((3, 5)), RNG.standard_normal((3, 5, 2)), RNG.uniform(0.5, 2, (3, 5, 2))
    x = RNG.standard_normal((4, 3, 2))

    def ours_fn(lg, m, s):
        return MixtureSameFamily(Categorical(logits=lg), Independent(Normal(m, s), 1))

    def theirs_fn(lg, m, s):
        return td.MixtureSameFamily(td.Categorical(logits=lg), td.Independent(td.Normal(m, s), 1))

    ours, theirs = ours_fn(t64(logits), t64(loc), t64(scale)), theirs_fn(*(_tt(torch, a) for a in (logits, loc, scale)))
    close(ours.mean, theirs.mean.numpy(), rtol=1e-10)
    close(ours.variance, theirs.variance.numpy(), rtol=1e-10)
    assert ours.batch_shape == tuple(theirs.batch_shape) and ours.event_shape == tuple(theirs.event_shape)
    _grads_match(torch, lambda lg, m, s: ours_fn(lg, m, s).log_prob(t64(x)),
                 lambda lg, m, s: theirs_fn(lg, m, s).log_prob(_tt(torch, x)), [logits, loc, scale])
    _grads_match(torch, lambda m, s: Independent(Normal(m, s), 2).entropy(),
                 lambda m, s: td.Independent(td.Normal(m, s), 2).entropy(), [loc, scale])
    xs = RNG.standard_normal((2, 3))
    _grads_match(torch, lambda lg, m, s: MixtureSameFamily(Categorical(logits=lg), Normal(m, s)).cdf(t64(xs)),
                 lambda lg, m, s: td.MixtureSameFamily(td.Categorical(logits=lg), td.Normal(m, s)).cdf(_tt(torch, xs)),
                 [logits, loc[..., 0], scale[..., 0]])
