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


def test_margin_losses_against_numpy():
    """The hinge-type losses against their definitions written with NumPy loops."""
    x, y = RNG.standard_normal((4, 5)), _pm1(20).reshape(4, 5)
    got = nn.HingeEmbeddingLoss(margin=0.8)(sx.tensor(x), sx.tensor(y)).item()
    assert got == pytest.approx(np.where(y == 1, x, np.maximum(0, 0.8 - x)).mean(), rel=1e-12)
    got = nn.SoftMarginLoss(reduction="sum")(sx.tensor(x), sx.tensor(y)).item()
    assert got == pytest.approx(np.log1p(np.exp(-y * x)).sum(), rel=1e-12)
    cls, w = np.array([4, 0, 2, 2]), RNG.random(5)
    want = [sum(w[c] * max(0, 0.5 - x[n, c] + x[n, i]) ** 2 for i in range(5) if i != c) / 5 for n, c in enumerate(cls)]
    got = nn.MultiMarginLoss(p=2, margin=0.5, weight=sx.tensor(w), reduction="none")(sx.tensor(x), sx.tensor(cls))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    targets = np.array([[3, 1, -1, 4, 4], [0, 1, 2, 3, 4], [-1, 2, 2, 2, 2], [2, 2, -1, 0, 0]])
    want = []
    for n in range(4):
        listed = list(targets[n, :list(targets[n]).index(-1)] if -1 in targets[n] else targets[n])
        want.append(sum(max(0, 1 - (x[n, j] - x[n, i])) for j in listed for i in range(5) if i not in listed) / 5)
    got = nn.MultiLabelMarginLoss(reduction="none")(sx.tensor(x), sx.tensor(targets))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    with pytest.raises(ValueError, match=r"\[multi_margin_loss\] targets must lie in \[0, 5\)"):
        nn.MultiMarginLoss()(sx.tensor(x), sx.tensor(np.array([5, 0, 0, 0])))


def test_bad_inputs():
    with pytest.raises(ValueError, match=r"\[margin_ranking_loss\] shapes must match"):
        nn.MarginRankingLoss()(sx.zeros(3), sx.zeros(4), sx.ones(3))
    with pytest.raises(ValueError, match=r"\[gaussian_nll_loss\] var of shape \(2,\)"):
        nn.GaussianNLLLoss()(sx.zeros(4, 3), sx.zeros(4, 3), sx.ones(2))
    with pytest.raises(ValueError, match="negative"):
        nn.GaussianNLLLoss()(sx.zeros(3), sx.zeros(3), -sx.ones(3))
    with pytest.raises(ValueError, match="reduction"):
        nn.HuberLoss(reduction="avg")


@pytest.mark.parity
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("concatenated", [False, True])
def test_ctc_loss_matches_torch(reduction, concatenated):
    torch = pytest.importorskip("torch")
    T, N, C, S = 12, 3, 6, 4
    x = RNG.standard_normal((T, N, C))
    targets = RNG.integers(1, C, (N, S))
    targets[0, 1] = targets[0, 2]  # a repeated label needs a blank between
    in_len, tg_len = [12, 9, 10], [4, 2, 3]
    flat = np.concatenate([targets[n, :k] for n, k in enumerate(tg_len)])
    tgt = flat if concatenated else targets
    tx, sxx = torch.tensor(x, requires_grad=True), sx.tensor(x, requires_grad=True)
    t_loss = torch.nn.CTCLoss(reduction=reduction)(tx.log_softmax(2), torch.tensor(tgt), in_len, tg_len)
    s_loss = nn.CTCLoss(reduction=reduction)(sx.log_softmax(sxx, 2), sx.tensor(tgt), in_len, sx.tensor(tg_len))
    np.testing.assert_allclose(s_loss.detach().numpy(), t_loss.detach().numpy(), rtol=1e-10)
    t_loss.sum().backward()
    s_loss.sum().backward()
    np.testing.assert_allclose(sxx.grad.numpy(), tx.grad.numpy(), rtol=1e-8, atol=1e-12)


def test_ctc_loss_small_case_by_enumeration():
    # T = 2, one label "1": alignments (1, 1), (1, blank), (blank, 1)
    p = np.array([[0.2, 0.8], [0.6, 0.4]])  # p[t, c]
    lp = sx.tensor(np.log(p)[:, None, :])
    want = -np.log(p[0, 1] * p[1, 1] + p[0, 1] * p[1, 0] + p[0, 0] * p[1, 1])
    got = sx.functional.ctc_loss(lp, sx.tensor([[1]]), [2], [1], reduction="sum").item()
    assert got == pytest.approx(want, rel=1e-12)
    # "1 1" needs three steps: impossible in two
    impossible = sx.functional.ctc_loss(lp, sx.tensor([[1, 1]]), [2], [2], reduction="none")
    assert impossible.tolist() == [float("inf")]
    zeroed = nn.CTCLoss(reduction="sum", zero_infinity=True)(lp, sx.tensor([[1, 1]]), [2], [2])
    assert zeroed.item() == 0.0
