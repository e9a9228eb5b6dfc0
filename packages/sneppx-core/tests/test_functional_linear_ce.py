"""linear_cross_entropy: plain and chunked, against a NumPy loop written from the definition (float64), float64
finite-difference gradients, errors, and parity with PyTorch (values and gradients)."""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import numpy as np
import pytest
import sneppx_core as sx
import sneppx_core.functional as F
from sneppx_core.testing import gradcheck

RNG = np.random.default_rng(53)
CHUNK8 = SimpleNamespace(batch_chunk_size=8, chunking_method=None)
AUTO = SimpleNamespace(batch_chunk_size=None, chunking_method="auto")


def np_linear_ce(x, w, y, b=None, cw=None, reduction="mean", ignore_index=-100, smoothing=0.0):
    """Class-index targets: loss_n = (1 - e)(-w_y lp_y) + e / C (-sum_c w_c lp_c), lp = log softmax(x W^T + b)."""
    c = w.shape[0]
    cw = np.ones(c) if cw is None else cw
    losses, den = [], 0.0
    for n in range(x.shape[0]):
        z = w @ x[n] + (0 if b is None else b)
        lp = z - z.max() - np.log(np.exp(z - z.max()).sum())
        if y[n] == ignore_index:
            losses.append(0.0)
            continue
        losses.append((1 - smoothing) * -cw[y[n]] * lp[y[n]] + smoothing / c * -(cw * lp).sum())
        den += cw[y[n]]
    losses = np.array(losses)
    return {"none": losses, "sum": losses.sum(), "mean": losses.sum() / den}[reduction]


def data(n=29, d=6, c=13):
    x, w, b = RNG.standard_normal((n, d)), RNG.standard_normal((c, d)), RNG.standard_normal(c)
    y = RNG.integers(0, c, n)
    y[[2, 7]] = -100
    return x, w, b, y, RNG.random(c) + 0.5


def quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("options", [None, CHUNK8, AUTO], ids=["plain", "chunk8", "auto"])
def test_matches_the_definition(reduction, options):
    x, w, b, y, cw = data()
    got = quiet(F.linear_cross_entropy, sx.tensor(x), sx.tensor(w), sx.tensor(y), linear_bias=sx.tensor(b),
                weight=sx.tensor(cw), reduction=reduction, options=options)
    np.testing.assert_allclose(got.numpy(), np_linear_ce(x, w, y, b, cw, reduction), rtol=1e-12, atol=1e-12)


def test_label_smoothing_unbatched_and_k_dims():
    x, w, b, y, cw = data()
    got = F.linear_cross_entropy(sx.tensor(x), sx.tensor(w), sx.tensor(y), weight=sx.tensor(cw), label_smoothing=0.2)
    np.testing.assert_allclose(got.numpy(), np_linear_ce(x, w, y, None, cw, smoothing=0.2), rtol=1e-12)
    one = F.linear_cross_entropy(sx.tensor(x[0]), sx.tensor(w), sx.tensor(y[0]), options=CHUNK8)
    np.testing.assert_allclose(one.numpy(), np_linear_ce(x[:1], w, y[:1]), rtol=1e-12)
    wk = RNG.standard_normal((5, 3, 6))  # C = 5 classes at each of 3 positions
    yk = RNG.integers(0, 5, (29, 3))
    got = F.linear_cross_entropy(sx.tensor(x), sx.tensor(wk), sx.tensor(yk), reduction="sum")
    ref = sum(np_linear_ce(x, wk[:, j], yk[:, j], reduction="sum") for j in range(3))
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("options", [None, CHUNK8], ids=["plain", "chunk8"])
def test_gradients_match_finite_differences(reduction, options):
    x, w, b, y, cw = data(n=11, d=4, c=7)
    y[y == -100] = 3
    y[5] = -100
    ts = [sx.tensor(a, requires_grad=True) for a in (x, w, b)]
    fn = lambda xx, ww, bb: F.linear_cross_entropy(xx, ww, sx.tensor(y), linear_bias=bb,  # noqa: E731
                                                   weight=sx.tensor(cw), reduction=reduction, options=options)
    assert gradcheck(fn, ts)


def test_chunk_size_rule():
    got = []
    opt = SimpleNamespace(batch_chunk_size=None, chunking_method="aspect_ratio")
    x, w, _, y, _ = data(n=100, d=4, c=40)  # ceil(100 / ceil(40 / 4)) = 10 -> next power of two 16
    from sneppx_core._functional_linear_ce import _chunk_rows
    got.append(_chunk_rows(opt, 100, 4, 40))
    got.append(_chunk_rows(AUTO, 100, 4, 40))
    assert got == [16, 8]
    a = F.linear_cross_entropy(sx.tensor(x), sx.tensor(w), sx.tensor(y), options=opt)
    np.testing.assert_allclose(a.numpy(), np_linear_ce(x, w, y), rtol=1e-12)


def test_options_fall_back_with_a_warning_and_errors():
    x, w, b, y, cw = data()
    with pytest.warns(UserWarning, match="options ignored"):
        F.linear_cross_entropy(sx.tensor(x), sx.tensor(w), sx.tensor(y), reduction="none", options=CHUNK8)
    with pytest.raises(ValueError, match=r"linear_cross_entropy.*\(29, 6\).*\(13, 5\)"):
        F.linear_cross_entropy(sx.tensor(x), sx.tensor(w[:, :5]), sx.tensor(y))
    with pytest.raises(TypeError, match=r"linear_cross_entropy.*float32.*float64"):
        F.linear_cross_entropy(sx.tensor(x, dtype=sx.float32), sx.tensor(w), sx.tensor(y))
    with pytest.raises(ValueError, match=r"linear_cross_entropy.*linear_bias.*\(13,\).*\(12,\)"):
        F.linear_cross_entropy(sx.tensor(x), sx.tensor(w), sx.tensor(y), linear_bias=sx.tensor(b[:12]))
    p = sx.tensor(RNG.random((29, 13)))
    with pytest.raises(ValueError, match="ignore_index"):
        F.linear_cross_entropy(sx.tensor(x), sx.tensor(w), p, ignore_index=0)


@pytest.mark.parity
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("options", [None, CHUNK8], ids=["plain", "chunk8"])
def test_matches_torch(torch, reduction, options):
    x, w, b, y, cw = data()
    tt = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    ts = [sx.tensor(a, requires_grad=True) for a in (x, w, b)]
    tl = torch.nn.functional.linear_cross_entropy(tt[0], tt[1], torch.tensor(y), linear_bias=tt[2],
                                                  weight=torch.tensor(cw), reduction=reduction)
    sl = quiet(F.linear_cross_entropy, ts[0], ts[1], sx.tensor(y), linear_bias=ts[2], weight=sx.tensor(cw),
               reduction=reduction, options=options)
    np.testing.assert_allclose(sl.detach().numpy(), tl.detach().numpy(), rtol=1e-12, atol=1e-13)
    seed = RNG.standard_normal(tuple(tl.shape))
    (tl * torch.tensor(seed)).sum().backward()
    (sl * sx.tensor(seed)).sum().backward()
    for a, t in zip(ts, tt):
        np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parity
def test_probability_targets_match_torch(torch):
    x, w, b, _, _ = data()
    p = RNG.random((29, 13))
    p /= p.sum(1, keepdims=True)
    tl = torch.nn.functional.linear_cross_entropy(torch.tensor(x), torch.tensor(w), torch.tensor(p),
                                                  label_smoothing=0.1)
    sl = F.linear_cross_entropy(sx.tensor(x), sx.tensor(w), sx.tensor(p), label_smoothing=0.1)
    np.testing.assert_allclose(sl.numpy(), tl.numpy(), rtol=1e-12)
