"""sneppx_core.distributions against NumPy formulas, sample frequencies, finite differences and torch."""

import math

import numpy as np
import pytest
import sneppx_core as sx
from sneppx_core.distributions import Bernoulli, Categorical, Normal
from sneppx_core.testing import gradcheck

RNG = np.random.default_rng(12)


def t64(a, grad=False):
    return sx.tensor(np.asarray(a, np.float64), requires_grad=grad)


def test_categorical_log_prob_entropy_and_shapes():
    logits = RNG.standard_normal((3, 5))
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    for dist in (Categorical(logits=t64(logits)), Categorical(probs=t64(np.exp(logits) * 2.5))):
        v = np.array([4, 0, 2])
        np.testing.assert_allclose(dist.log_prob(sx.tensor(v)).numpy(), logp[np.arange(3), v], rtol=1e-12)
        np.testing.assert_allclose(dist.entropy().numpy(), -(np.exp(logp) * logp).sum(-1), rtol=1e-12)
        assert dist.batch_shape == (3,) and dist.sample().shape == (3,) and dist.sample((4, 2)).shape == (4, 2, 3)
        assert dist.log_prob(sx.tensor(np.array([[1], [2]]))).shape == (2, 3)  # broadcast against the batch
        np.testing.assert_array_equal(dist.mode.numpy(), logits.argmax(-1))
    # a zero probability: entropy counts 0 log 0 as 0, its log_prob is very negative, it is never drawn
    dist = Categorical(probs=sx.tensor([0.0, 0.25, 0.75], dtype=sx.float64))
    assert dist.entropy().item() == pytest.approx(-(0.25 * math.log(0.25) + 0.75 * math.log(0.75)), rel=1e-12)
    assert dist.log_prob(sx.tensor(0)).item() < -30
    sx.manual_seed(3)
    counts = np.bincount(dist.sample((40000,)).numpy(), minlength=3) / 40000
    np.testing.assert_allclose(counts, [0, 0.25, 0.75], atol=0.012)  # 5 standard errors
    gradcheck(lambda lg: Categorical(logits=lg).log_prob(sx.tensor(np.array([1, 3, 0]))), [t64(logits, True)])
    gradcheck(lambda lg: Categorical(logits=lg).entropy(), [t64(logits, True)])


def test_bernoulli_and_normal():
    p = RNG.uniform(0.05, 0.95, (2, 3))
    v = (RNG.random((2, 3)) > 0.5).astype(np.float64)
    for dist in (Bernoulli(probs=t64(p)), Bernoulli(logits=t64(np.log(p / (1 - p))))):
        np.testing.assert_allclose(dist.log_prob(t64(v)).numpy(), v * np.log(p) + (1 - v) * np.log1p(-p), rtol=1e-10)
        np.testing.assert_allclose(dist.entropy().numpy(), -(p * np.log(p) + (1 - p) * np.log1p(-p)), rtol=1e-10)
    sx.manual_seed(4)
    draws = Bernoulli(probs=t64(p)).sample((20000,)).numpy()
    assert draws.shape == (20000, 2, 3) and set(np.unique(draws)) <= {0.0, 1.0}
    np.testing.assert_allclose(draws.mean(0), p, atol=0.02)
    loc, scale, x = RNG.standard_normal(4), RNG.uniform(0.5, 2, 4), RNG.standard_normal(4)
    dist = Normal(t64(loc), t64(scale))
    want = -((x - loc) ** 2) / (2 * scale ** 2) - np.log(scale) - 0.5 * np.log(2 * np.pi)
    np.testing.assert_allclose(dist.log_prob(t64(x)).numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(dist.entropy().numpy(), 0.5 + 0.5 * np.log(2 * np.pi) + np.log(scale), rtol=1e-12)
    sx.manual_seed(5)
    s = Normal(t64(loc), t64(scale)).sample((50000,)).numpy()
    assert (np.abs(s.mean(0) - loc) < 5 * scale / np.sqrt(50000)).all()  # 5 standard errors
    np.testing.assert_allclose(s.std(0), scale, rtol=0.03)
    gradcheck(lambda m, sd: Normal(m, sd).log_prob(t64(x)), [t64(loc, True), t64(scale, True)])
    m, sd = t64(loc, True), t64(scale, True)
    r = Normal(m, sd).rsample((3,))
    r.sum().backward()
    np.testing.assert_allclose(m.grad.numpy(), np.full(4, 3.0))  # d(loc + scale eps)/d loc, three samples
    assert Normal(0.0, t64(scale)).batch_shape == (4,) and not Normal(m, sd).sample().requires_grad


def test_errors():
    with pytest.raises(ValueError, match="exactly one of probs and logits"):
        Categorical()
    with pytest.raises(ValueError, match="exactly one of probs and logits"):
        Bernoulli(probs=sx.tensor([0.5]), logits=sx.tensor([0.0]))
    with pytest.raises(NotImplementedError, match="rsample"):
        Categorical(logits=sx.zeros(3)).rsample()


@pytest.mark.parity
def test_matches_torch():
    torch = pytest.importorskip("torch")
    td = torch.distributions
    logits, v = RNG.standard_normal((4, 6)), np.array([5, 0, 3, 3])
    ours, theirs = Categorical(logits=t64(logits)), td.Categorical(logits=torch.tensor(logits))
    np.testing.assert_allclose(ours.log_prob(sx.tensor(v)).numpy(), theirs.log_prob(torch.tensor(v)).numpy(),
                               rtol=1e-12)
    np.testing.assert_allclose(ours.entropy().numpy(), theirs.entropy().numpy(), rtol=1e-12)
    np.testing.assert_allclose(ours.probs.numpy(), theirs.probs.numpy(), rtol=1e-12)
    p, b = RNG.uniform(0.1, 0.9, 5), (RNG.random(5) > 0.5) * 1.0
    np.testing.assert_allclose(Bernoulli(probs=t64(p)).log_prob(t64(b)).numpy(),
                               td.Bernoulli(probs=torch.tensor(p)).log_prob(torch.tensor(b)).numpy(), rtol=1e-10)
    loc, scale, x = RNG.standard_normal(3), RNG.uniform(0.5, 2, 3), RNG.standard_normal(3)
    np.testing.assert_allclose(Normal(t64(loc), t64(scale)).log_prob(t64(x)).numpy(),
                               td.Normal(torch.tensor(loc), torch.tensor(scale)).log_prob(torch.tensor(x)).numpy(),
                               rtol=1e-12)
