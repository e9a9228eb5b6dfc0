"""EmbeddingBag, RReLU, AlphaDropout, FeatureAlphaDropout and Dropout3d: NumPy references, training and eval
modes, gradients, errors, reprs, and parity with torch.nn."""

import math

import numpy as np
import pytest
import sneppx_core as sx
import sneppx_core.functional as F

import sneppx_nn as nn
from conftest import tensor, to_np

SELU_SAT = 1.0507009873554805 * 1.6732632423543772


def ids(a):
    return tensor(np.asarray(a), dtype=sx.int64)


def bag_ref(input, weight, offsets=None, **kw):
    """The layer's reference: sneppx_core.functional.embedding_bag (tested against NumPy loops in sneppx-core)."""
    return to_np(F.embedding_bag(ids(input), sx.tensor(weight, dtype=sx.float64),
                                 None if offsets is None else ids(offsets), **kw))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_forward_and_padding_gradient(rng, mode):
    bag = nn.EmbeddingBag(7, 3, mode=mode, padding_idx=-1, dtype=sx.float64)
    w = to_np(bag.weight)
    assert bag.padding_idx == 6 and np.all(w[6] == 0) and w[:6].std() > 0.3
    x, offs = np.array([1, 6, 2, 2, 0, 5, 6, 3]), [0, 2, 2, 5]
    out = bag(ids(x), ids(offs))
    np.testing.assert_allclose(to_np(out), bag_ref(x, w, offs, mode=mode, padding_idx=6), rtol=1e-12)
    out.sum().backward()
    g = to_np(bag.weight.grad)
    assert np.all(g[6] == 0) and np.all(g[4] == 0) and np.any(g[1] != 0)
    x2 = rng.integers(0, 7, (4, 3))
    np.testing.assert_allclose(to_np(bag(ids(x2))), bag_ref(x2, w, mode=mode, padding_idx=6), rtol=1e-12)


def test_embedding_bag_per_sample_weights_and_include_last_offset(rng):
    bag = nn.EmbeddingBag(5, 2, mode="sum", include_last_offset=True, dtype=sx.float64)
    x, psw = np.array([4, 0, 3, 3, 1]), rng.standard_normal(5)
    p = tensor(psw, requires_grad=True, dtype=sx.float64)
    out = bag(ids(x), ids([0, 1, 5]), per_sample_weights=p)
    w = to_np(bag.weight)
    want = bag_ref(x, w, [0, 1, 5], mode="sum", include_last_offset=True,
                   per_sample_weights=sx.tensor(psw, dtype=sx.float64))
    np.testing.assert_allclose(to_np(out), want, rtol=1e-12)
    out.sum().backward()
    np.testing.assert_allclose(to_np(p.grad), w[x].sum(1), rtol=1e-12)


def test_embedding_bag_from_pretrained_and_errors():
    table = tensor(np.arange(6.0).reshape(3, 2))
    frozen = nn.EmbeddingBag.from_pretrained(table)
    assert not frozen.weight.requires_grad and frozen.mode == "mean"
    np.testing.assert_allclose(to_np(frozen(ids([[0, 2]]))), [[2.0, 3.0]])
    trained = nn.EmbeddingBag.from_pretrained(table, freeze=False, mode="max", padding_idx=1)
    assert trained.weight.requires_grad and trained.padding_idx == 1
    np.testing.assert_array_equal(to_np(trained.weight), np.arange(6.0).reshape(3, 2))  # the row is kept as given
    assert list(trained.state_dict()) == ["weight"]
    with pytest.raises(ValueError, match=r"\[EmbeddingBag.from_pretrained\].*\(6,\)"):
        nn.EmbeddingBag.from_pretrained(tensor(np.arange(6.0)))
    with pytest.raises(ValueError, match=r"\[EmbeddingBag\] mode .*'min'"):
        nn.EmbeddingBag(3, 2, mode="min")
    with pytest.raises(ValueError, match=r"\[EmbeddingBag\] padding_idx 3 is out of range"):
        nn.EmbeddingBag(3, 2, padding_idx=3)
    with pytest.raises(ValueError, match=r"\[EmbeddingBag\] _weight must have shape \(4, 2\)"):
        nn.EmbeddingBag(4, 2, _weight=table)
    with pytest.raises(NotImplementedError, match=r"\[EmbeddingBag\] sparse"):
        nn.EmbeddingBag(3, 2, sparse=True)
    with pytest.raises(ValueError, match=r"\[embedding_bag\] 1-D input needs offsets"):
        frozen(ids([0, 1]))


def test_rrelu_layer_modes(rng):
    layer = nn.RReLU(0.1, 0.4)
    x = rng.standard_normal(3000)
    x[x == 0] = 1.0
    slope = to_np(layer(tensor(x, dtype=sx.float64)))[x < 0] / x[x < 0]
    assert slope.min() >= 0.1 and slope.max() <= 0.4 and slope.std() > 0.05
    layer.eval()
    np.testing.assert_allclose(to_np(layer(tensor(x, dtype=sx.float64))), np.where(x > 0, x, 0.25 * x), rtol=1e-15)


@pytest.mark.parametrize("cls", [nn.AlphaDropout, nn.FeatureAlphaDropout])
def test_alpha_dropout_layers(rng, cls):
    p = 0.3
    layer = cls(p)
    x = tensor(rng.standard_normal((64, 8, 5)), dtype=sx.float64)
    y, xs = to_np(layer(x)), to_np(x)
    a = 1 / math.sqrt((SELU_SAT ** 2 * p + 1) * (1 - p))
    dropped = np.isclose(y, a * (p - 1) * SELU_SAT, atol=1e-12)
    np.testing.assert_allclose(y[~dropped], a * xs[~dropped] + a * SELU_SAT * p, rtol=1e-12)
    if cls is nn.FeatureAlphaDropout:  # whole (n, c) channels
        assert np.all(dropped.all(-1) | ~dropped.any(-1))
        dropped = dropped[..., 0]
    assert abs(dropped.mean() - p) < 5 * math.sqrt(p * (1 - p) / dropped.size)
    layer.eval()
    assert layer(x) is x


@pytest.mark.parametrize("shape", [(6, 5, 2, 3, 4), (40, 2, 3, 4)])
def test_dropout3d_layer(rng, shape):
    layer = nn.Dropout3d(0.5)
    x = tensor(rng.uniform(1, 2, shape), dtype=sx.float64)
    y = to_np(layer(x)).reshape(-1, 24)
    assert np.all((y == 0).all(1) | (y != 0).all(1)) and (y == 0).all(1).any()
    np.testing.assert_allclose(y[y[:, 0] != 0], 2 * to_np(x).reshape(-1, 24)[y[:, 0] != 0], rtol=1e-12)
    layer.eval()
    assert layer(x) is x


REPRS = [
    (lambda m: m.EmbeddingBag(10, 3), "EmbeddingBag(10, 3, mode='mean')"),
    (lambda m: m.EmbeddingBag(10, 3, max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True, mode="sum",
                              padding_idx=-2),
     "EmbeddingBag(10, 3, max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True, mode='sum', padding_idx=8)"),
    (lambda m: m.RReLU(), "RReLU(lower=0.125, upper=0.3333333333333333)"),
    (lambda m: m.RReLU(0.1, 0.3, True), "RReLU(lower=0.1, upper=0.3, inplace=True)"),
    (lambda m: m.AlphaDropout(0.2), "AlphaDropout(p=0.2, inplace=False)"),
    (lambda m: m.FeatureAlphaDropout(), "FeatureAlphaDropout(p=0.5, inplace=False)"),
    (lambda m: m.Dropout3d(0.1, True), "Dropout3d(p=0.1, inplace=True)"),
]


@pytest.mark.parametrize("make,text", REPRS)
def test_reprs(make, text):
    assert repr(make(nn)) == text


@pytest.mark.parity
@pytest.mark.parametrize("make,text", REPRS)
def test_parity_reprs(make, text):
    torch = pytest.importorskip("torch")
    assert repr(make(nn)) == repr(make(torch.nn))


@pytest.mark.parity
@pytest.mark.parametrize("kw", [dict(mode="sum", padding_idx=2), dict(mode="mean", padding_idx=0),
                                dict(mode="max", include_last_offset=True), dict(mode="sum", max_norm=1.0)])
def test_parity_embedding_bag_layer(rng, kw):
    torch = pytest.importorskip("torch")
    ours, theirs = nn.EmbeddingBag(6, 4, dtype=sx.float64, **kw), torch.nn.EmbeddingBag(6, 4, **kw).double()
    theirs.load_state_dict({"weight": torch.from_numpy(to_np(ours.weight))})
    x, offs = np.array([3, 0, 2, 2, 5, 1, 0, 4]), np.array([0, 3, 3, 6])
    out_s, out_t = ours(ids(x), ids(offs)), theirs(torch.from_numpy(x), torch.from_numpy(offs))
    np.testing.assert_allclose(to_np(out_s), out_t.detach().numpy(), rtol=1e-12)
    r = rng.standard_normal(tuple(out_t.shape))
    (out_s * tensor(r, dtype=sx.float64)).sum().backward()
    (out_t * torch.from_numpy(r)).sum().backward()
    np.testing.assert_allclose(to_np(ours.weight.grad), theirs.weight.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(to_np(ours.weight), theirs.weight.detach().numpy(), rtol=1e-12)


@pytest.mark.parity
def test_parity_eval_modes(rng):
    torch = pytest.importorskip("torch")
    x = rng.standard_normal((2, 3, 2, 2, 2))
    for name, args in [("RReLU", (0.05, 0.2)), ("AlphaDropout", (0.4,)), ("FeatureAlphaDropout", (0.4,)),
                       ("Dropout3d", (0.4,))]:
        ours, theirs = getattr(nn, name)(*args).eval(), getattr(torch.nn, name)(*args).eval()
        np.testing.assert_allclose(to_np(ours(tensor(x, dtype=sx.float64))), theirs(torch.from_numpy(x)).numpy(),
                                   rtol=1e-15, err_msg=name)
