"""HuberLoss, MarginRankingLoss, CosineEmbeddingLoss, TripletMarginLoss, PoissonNLLLoss and
GaussianNLLLoss: PyTorch parity (values and gradients) and NumPy references."""

import numpy as np
import pytest
import sneppx_core as sx

import sneppx_nn as nn

RNG = np.random.default_rng(2)


def _pm1(*shape):
    return np.where(RNG.random(shape) < 0.5, -1.0, 1.0)


CASES = [
    ("HuberLoss", {"delta": 0.7}, lambda: [RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))], [0]),
    ("MarginRankingLoss", {"margin": 0.2}, lambda: [RNG.standard_normal(6), RNG.standard_normal(6), _pm1(6)], [0, 1]),
    ("CosineEmbeddingLoss", {"margin": 0.1}, lambda: [RNG.standard_normal((5, 4)), RNG.standard_normal((5, 4)),
                                                       _pm1(5)], [0, 1]),
    ("CosineEmbeddingLoss", {}, lambda: [RNG.standard_normal(4), RNG.standard_normal(4), np.array(-1.0)], [0, 1]),
    ("TripletMarginLoss", {}, lambda: [RNG.standard_normal((5, 3)) for _ in range(3)], [0, 1, 2]),
    ("TripletMarginLoss", {"p": 1.0, "swap": True, "margin": 2.0},
     lambda: [RNG.standard_normal((5, 3)) for _ in range(3)], [0, 1, 2]),
    ("PoissonNLLLoss", {}, lambda: [RNG.standard_normal((3, 4)), RNG.poisson(2.0, (3, 4)).astype(float)], [0]),
    ("PoissonNLLLoss", {"log_input": False, "full": True},
     lambda: [RNG.random((3, 4)) + 0.5, RNG.poisson(3.0, (3, 4)).astype(float)], [0]),
    ("GaussianNLLLoss", {}, lambda: [RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3)),
                                     RNG.random((4, 3)) + 0.1], [0, 2]),
    ("GaussianNLLLoss", {"full": True, "eps": 0.05}, lambda: [RNG.standard_normal((4, 3)),
                                                             RNG.standard_normal((4, 3)), RNG.random(4) * 0.1],
     [0, 2]),
    ("GaussianNLLLoss", {}, lambda: [RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3)),
                                     RNG.random((4, 1)) + 0.1], [0, 2]),
]


@pytest.mark.parity
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name,kw,make,diff", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_losses_match_torch(name, kw, make, diff, reduction):
    torch = pytest.importorskip("torch")
    arrays = make()
    ts = [torch.tensor(a, requires_grad=i in diff) for i, a in enumerate(arrays)]
    ss = [sx.tensor(a, requires_grad=i in diff) for i, a in enumerate(arrays)]
    t_out = getattr(torch.nn, name)(reduction=reduction, **kw)(*ts)
    s_out = getattr(nn, name)(reduction=reduction, **kw)(*ss)
    np.testing.assert_allclose(s_out.detach().numpy(), t_out.detach().numpy(), rtol=1e-10, atol=1e-12)
    w = RNG.standard_normal(tuple(t_out.shape))
    (t_out * torch.tensor(w)).sum().backward()
    (s_out * sx.tensor(w)).sum().backward()
    for i in diff:
        np.testing.assert_allclose(ss[i].grad.numpy(), ts[i].grad.numpy(), rtol=1e-9, atol=1e-12)


def test_values_against_numpy():
    x1, x2, y = RNG.standard_normal((5, 4)), RNG.standard_normal((5, 4)), _pm1(5)
    cos = (x1 * x2).sum(1) / np.sqrt(((x1 ** 2).sum(1) + 1e-12) * ((x2 ** 2).sum(1) + 1e-12))
    want = np.where(y == 1, 1 - cos, np.maximum(cos - 0.3, 0)).mean()
    got = nn.CosineEmbeddingLoss(margin=0.3)(sx.tensor(x1), sx.tensor(x2), sx.tensor(y)).item()
    assert got == pytest.approx(want, rel=1e-12)
    mu, t, var = RNG.standard_normal(6), RNG.standard_normal(6), RNG.random(6) + 0.2
    want = (0.5 * (np.log(var) + (mu - t) ** 2 / var)).sum()
    got = nn.GaussianNLLLoss(reduction="sum")(sx.tensor(mu), sx.tensor(t), sx.tensor(var)).item()
    assert got == pytest.approx(want, rel=1e-12)


def test_bad_inputs():
    with pytest.raises(ValueError, match=r"\[margin_ranking_loss\] shapes must match"):
        nn.MarginRankingLoss()(sx.zeros(3), sx.zeros(4), sx.ones(3))
    with pytest.raises(ValueError, match=r"\[gaussian_nll_loss\] var of shape \(2,\)"):
        nn.GaussianNLLLoss()(sx.zeros(4, 3), sx.zeros(4, 3), sx.ones(2))
    with pytest.raises(ValueError, match="negative"):
        nn.GaussianNLLLoss()(sx.zeros(3), sx.zeros(3), -sx.ones(3))
    with pytest.raises(ValueError, match="reduction"):
        nn.HuberLoss(reduction="avg")
