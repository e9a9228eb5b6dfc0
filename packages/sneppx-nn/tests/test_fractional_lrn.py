"""FractionalMaxPool2d/3d, CrossMapLRN2d and NLLLoss2d: against NumPy written from the definitions (float64),
finite-difference gradients, errors, a small CNN trained with fractional pooling, and parity with torch.nn."""

import warnings

import numpy as np
import pytest
import sneppx_core as sx
import sneppx_core.functional as F

import sneppx_nn as nn
from conftest import numeric_grad, to_np


def np_cross_map_lrn(x, size, alpha, beta, k):
    """The legacy recurrence, run literally: s_0 = sum of the first p squares; each next channel adds the square
    p - 1 ahead and, past channel p, drops the square p behind (so channel 0 is never dropped)."""
    c, p = x.shape[1], int((size - 1) / 2 + 1)
    sq = x ** 2
    s = np.zeros_like(x)
    s[:, 0] = sq[:, :min(p, c)].sum(1)
    for ch in range(1, c):
        s[:, ch] = s[:, ch - 1]
        if ch < c - p + 1:
            s[:, ch] += sq[:, ch + p - 1]
        if ch > p:
            s[:, ch] -= sq[:, ch - p]
    return x * (k + alpha / size * s) ** -beta


@pytest.mark.parametrize("size,c", [(1, 4), (2, 6), (3, 7), (4, 9), (5, 12), (5, 3), (7, 4)])
def test_cross_map_lrn_matches_the_recurrence(rng, size, c):
    x = rng.standard_normal((2, c, 3, 4))
    got = nn.CrossMapLRN2d(size, alpha=0.3, beta=0.75, k=2.0)(sx.tensor(x))
    np.testing.assert_allclose(to_np(got), np_cross_map_lrn(x, size, 0.3, 0.75, 2.0), rtol=1e-12)


def test_cross_map_lrn_gradient_and_errors(rng):
    m = nn.CrossMapLRN2d(3, alpha=0.5, beta=0.6, k=1.0)
    x = rng.standard_normal((2, 6, 2, 3))
    seed = rng.standard_normal(x.shape)
    xt = sx.tensor(x, requires_grad=True)
    (m(xt) * sx.tensor(seed)).sum().backward()
    ref = numeric_grad(lambda a: float((np_cross_map_lrn(a, 3, 0.5, 0.6, 1.0) * seed).sum()), x.copy())
    np.testing.assert_allclose(to_np(xt.grad), ref, rtol=1e-6, atol=1e-8)
    with pytest.raises(ValueError, match=r"CrossMapLRN2d.*\(6, 2, 3\).*float64"):
        m(sx.tensor(x[0]))
    assert repr(m) == "CrossMapLRN2d(3, alpha=0.5, beta=0.6, k=1.0)"


def test_nll_loss_2d_is_nll_loss_with_the_legacy_constructor(rng):
    logp = np.log(rng.dirichlet(np.ones(4), (2, 3, 5))).transpose(0, 3, 1, 2)
    y = rng.integers(0, 4, (2, 3, 5))
    w = sx.tensor(rng.random(4))
    args = (sx.tensor(logp), sx.tensor(y))
    assert isinstance(nn.NLLLoss2d(), nn.NLLLoss)
    np.testing.assert_allclose(to_np(nn.NLLLoss2d(w)(*args)), to_np(nn.NLLLoss(w)(*args)), rtol=1e-12)
    with pytest.warns(DeprecationWarning, match="reduction='sum'"):
        summed = nn.NLLLoss2d(None, False, 2)
    assert summed.reduction == "sum" and summed.ignore_index == 2
    with pytest.warns(DeprecationWarning):
        assert nn.NLLLoss2d(reduce=False).reduction == "none"
    np.testing.assert_allclose(to_np(summed(*args)), to_np(nn.NLLLoss(ignore_index=2, reduction="sum")(*args)))


def test_fractional_pool_modules(rng):
    x = sx.tensor(rng.standard_normal((2, 3, 11, 10)))
    u = sx.tensor(rng.random((2, 3, 2)))
    m = nn.FractionalMaxPool2d(3, output_ratio=(0.5, 0.6), return_indices=True, _random_samples=u)
    y, i = m(x)
    ry, ri = F.fractional_max_pool2d(x, 3, output_size=(5, 6), return_indices=True, _random_samples=u)
    np.testing.assert_array_equal(to_np(y), to_np(ry))
    np.testing.assert_array_equal(to_np(i), to_np(ri))
    assert "_random_samples" in m.state_dict()
    free = nn.FractionalMaxPool2d((2, 3), output_size=4)
    assert "_random_samples" not in free.state_dict() and tuple(free(x).shape) == (2, 3, 4, 4)
    v = sx.tensor(rng.standard_normal((3, 7, 8, 9)))
    assert tuple(nn.FractionalMaxPool3d(2, output_size=(3, 4, 5))(v).shape) == (3, 3, 4, 5)
    with pytest.raises(ValueError, match="either an output size"):
        nn.FractionalMaxPool2d(2)
    with pytest.raises(ValueError, match="only one of"):
        nn.FractionalMaxPool3d(2, output_size=3, output_ratio=0.5)
    with pytest.raises(ValueError, match=r"FractionalMaxPool2d.*between 0 and 1"):
        nn.FractionalMaxPool2d(2, output_ratio=1.5)


def test_cnn_with_fractional_pooling_trains(rng):
    """A torch-style program: two conv blocks with fractional pooling learn to tell two textures apart."""
    sx.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.FractionalMaxPool2d(2, output_ratio=0.7),
                        nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(), nn.FractionalMaxPool2d(2, output_size=4),
                        nn.Flatten(), nn.Linear(128, 2))
    stripes = np.tile(np.array([1.0, -1.0] * 6), (12, 1))
    x = np.concatenate([stripes + 0.3 * rng.standard_normal((16, 12, 12)),
                        stripes.T + 0.3 * rng.standard_normal((16, 12, 12))])[:, None].astype(np.float32)
    y = np.array([0] * 16 + [1] * 16)
    params = list(net.parameters())
    losses = []
    for _ in range(25):
        loss = nn.CrossEntropyLoss()(net(sx.tensor(x)), sx.tensor(y))
        for p in params:
            p.grad = None
        loss.backward()
        with sx.no_grad():
            for p in params:
                p.sub_(p.grad * 0.1)
        losses.append(float(loss.item()))
    assert losses[-1] < 0.5 * losses[0], losses


@pytest.mark.parity
def test_fractional_pool_modules_match_torch(rng):
    torch = pytest.importorskip("torch")
    x = rng.standard_normal((2, 3, 13, 12))
    u = rng.random((2, 3, 2))
    tm = torch.nn.FractionalMaxPool2d((3, 2), output_ratio=0.6, return_indices=True,
                                      _random_samples=torch.tensor(u))
    m = nn.FractionalMaxPool2d((3, 2), output_ratio=0.6, return_indices=True, _random_samples=sx.tensor(u))
    (ty, ti), (y, i) = tm(torch.tensor(x)), m(sx.tensor(x))
    np.testing.assert_array_equal(to_np(y), ty.numpy())
    np.testing.assert_array_equal(to_np(i), ti.numpy())
    v, w = rng.standard_normal((2, 2, 9, 8, 10)), rng.random((2, 2, 3))
    t3 = torch.nn.FractionalMaxPool3d(2, output_size=(4, 5, 6), _random_samples=torch.tensor(w))
    s3 = nn.FractionalMaxPool3d(2, output_size=(4, 5, 6), _random_samples=sx.tensor(w))
    np.testing.assert_array_equal(to_np(s3(sx.tensor(v))), t3(torch.tensor(v)).numpy())


@pytest.mark.parity
@pytest.mark.parametrize("size,c", [(1, 4), (2, 6), (3, 7), (4, 9), (5, 12), (6, 3)])
def test_cross_map_lrn_matches_torch(rng, size, c):
    torch = pytest.importorskip("torch")
    x = rng.standard_normal((2, c, 3, 4))
    tx, sxx = torch.tensor(x, requires_grad=True), sx.tensor(x, requires_grad=True)
    ty = torch.nn.CrossMapLRN2d(size, alpha=0.3, beta=0.75, k=2.0)(tx)
    y = nn.CrossMapLRN2d(size, alpha=0.3, beta=0.75, k=2.0)(sxx)
    np.testing.assert_allclose(to_np(y), ty.detach().numpy(), rtol=1e-12)
    if 2 * int((size - 1) / 2 + 1) - 1 >= 2 * c - 1:  # the window covers every channel: the gradients agree too
        ty.sum().backward()
        y.sum().backward()
        np.testing.assert_allclose(to_np(sxx.grad), tx.grad.numpy(), rtol=1e-10)


@pytest.mark.parity
def test_nll_loss_2d_matches_torch(rng):
    torch = pytest.importorskip("torch")
    logp = np.log(rng.dirichlet(np.ones(4), (2, 3, 5))).transpose(0, 3, 1, 2)
    y = rng.integers(0, 4, (2, 3, 5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = torch.nn.NLLLoss2d(None, True, 1, False)(torch.tensor(logp), torch.tensor(y))
        s = nn.NLLLoss2d(None, True, 1, False)(sx.tensor(logp), sx.tensor(y))
    np.testing.assert_allclose(to_np(s), t.numpy(), rtol=1e-12)
