"""functional.embedding_bag, pdist, rrelu, alpha_dropout, feature_alpha_dropout, dropout3d and gumbel_softmax
against NumPy loops, statistics of their random draws, finite differences, errors and PyTorch."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sneppx_core as sx
import sneppx_core.functional as F
from sneppx_core.testing import gradcheck

RNG = np.random.default_rng(5)
SELU_SAT = 1.0507009873554805 * 1.6732632423543772  # SELU's negative saturation value is -SELU_SAT

IDS = np.array([3, 0, 5, 5, 1, 2, 0, 4, 3, 1])
OFFSETS = [0, 3, 3, 7]  # bag 1 is empty
LAST_OFFSETS = [0, 3, 3, 7, 9]  # include_last_offset: as in PyTorch, the last bag still runs to the end


@pytest.fixture(autouse=True)
def _seeded():
    """The random ops draw from the default generator: a fixed seed keeps each test's draws the same."""
    sx.manual_seed(2024)


def t64(a, requires_grad=False):
    return sx.tensor(np.asarray(a, dtype=np.float64), dtype=sx.float64, requires_grad=requires_grad)


def ids_t(a):
    return sx.tensor(np.asarray(a, dtype=np.int64))


def bag_ref(ids, w, bounds, mode, psw=None, pad=None):
    """Each bag by a loop: the rows of its ids other than ``pad``, weighted, summed/averaged/maxed."""
    out = np.zeros((len(bounds) - 1, w.shape[1]))
    for b in range(len(bounds) - 1):
        rows = [w[ids[j]] * (1.0 if psw is None else psw[j]) for j in range(bounds[b], bounds[b + 1])
                if ids[j] != pad]
        if rows:
            out[b] = {"sum": np.sum, "mean": np.mean, "max": np.max}[mode](rows, axis=0)
    return out


def pdist_ref(x, p):
    out = []
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            d = np.abs(x[i] - x[j])
            out.append(np.count_nonzero(d) if p == 0 else d.max() if p == math.inf else (d ** p).sum() ** (1 / p))
    return np.array(out)


# ---------------------------------------------------------------- embedding_bag

@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("pad", [None, 5, -1])
@pytest.mark.parametrize("last", [False, True])
def test_embedding_bag_against_loops(mode, pad, last):
    w = RNG.standard_normal((6, 4))
    offs = LAST_OFFSETS if last else OFFSETS
    bounds = (offs[:-1] if last else offs) + [len(IDS)]
    got = F.embedding_bag(ids_t(IDS), t64(w), ids_t(offs), mode=mode, include_last_offset=last, padding_idx=pad)
    want = bag_ref(IDS, w, bounds, mode, pad=None if pad is None else pad % 6)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    assert np.all(got.numpy()[1] == 0)  # the empty bag


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_two_dim_input_and_default_mean(mode):
    w, ids = RNG.standard_normal((7, 3)), RNG.integers(0, 7, (4, 5))
    got = F.embedding_bag(ids_t(ids), t64(w), mode=mode, padding_idx=2)
    np.testing.assert_allclose(got.numpy(), bag_ref(ids.ravel(), w, range(0, 21, 5), mode, pad=2), atol=1e-12)
    np.testing.assert_allclose(F.embedding_bag(ids_t(ids), t64(w)).numpy(), w[ids].mean(1), atol=1e-12)


def test_embedding_bag_per_sample_weights_and_all_padding_bags():
    w, psw = RNG.standard_normal((6, 4)), RNG.standard_normal(len(IDS))
    got = F.embedding_bag(ids_t(IDS), t64(w), ids_t(OFFSETS), mode="sum", per_sample_weights=t64(psw), padding_idx=0)
    np.testing.assert_allclose(got.numpy(), bag_ref(IDS, w, OFFSETS + [10], "sum", psw, pad=0), atol=1e-12)
    ids = np.array([[2, 2], [2, 1]])  # bag 0 is padding only: zeros, and mean counts one id in bag 1
    for mode in ("sum", "mean", "max"):
        got = F.embedding_bag(ids_t(ids), t64(w), mode=mode, padding_idx=2).numpy()
        np.testing.assert_array_equal(got, np.stack([np.zeros(4), w[1]]))


def test_embedding_bag_empty_cases():
    w = t64(RNG.standard_normal((4, 3)))
    assert F.embedding_bag(ids_t([0, 1]), w, ids_t([]), mode="sum").shape == (0, 3)
    assert F.embedding_bag(ids_t([0, 1]), w, ids_t([0]), include_last_offset=True).shape == (0, 3)
    np.testing.assert_array_equal(F.embedding_bag(ids_t([]), w, ids_t([0, 0])).numpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(F.embedding_bag(ids_t(np.zeros((2, 0))), w, mode="max").numpy(), np.zeros((2, 3)))
    assert F.embedding_bag(ids_t(np.zeros((0, 4))), w).shape == (0, 3)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("last", [False, True])
def test_embedding_bag_gradients(mode, last):
    ids, offs = ids_t(IDS), ids_t(LAST_OFFSETS if last else OFFSETS)
    w = t64(RNG.standard_normal((6, 4)), True)
    gradcheck(lambda w: F.embedding_bag(ids, w, offs, mode=mode, include_last_offset=last, padding_idx=3), [w])
    if mode == "sum":
        s = t64(RNG.standard_normal(len(IDS)), True)
        gradcheck(lambda w, s: F.embedding_bag(ids, w, offs, mode="sum", per_sample_weights=s, padding_idx=3), [w, s])


def test_embedding_bag_padding_row_gets_no_gradient_and_int32_ids():
    w = t64(RNG.standard_normal((6, 4)), True)
    ids = sx.tensor(IDS.astype(np.int32), dtype=sx.int32)
    F.embedding_bag(ids, w, sx.tensor(OFFSETS, dtype=sx.int32), mode="sum", padding_idx=5).sum().backward()
    counts = np.bincount(IDS, minlength=6).astype(float)
    counts[5] = 0
    np.testing.assert_array_equal(w.grad.numpy(), np.repeat(counts[:, None], 4, 1))


def test_embedding_bag_scale_grad_by_freq_divides_by_each_ids_count():
    w = t64(RNG.standard_normal((6, 4)), True)
    F.embedding_bag(ids_t(IDS), w, ids_t(OFFSETS), mode="sum", scale_grad_by_freq=True).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.repeat((np.bincount(IDS, minlength=6) > 0)[:, None], 4, 1))


def test_embedding_bag_max_norm_renormalises_picked_rows_in_place():
    w0 = RNG.standard_normal((6, 4)) * 3
    w = t64(w0)
    got = F.embedding_bag(ids_t([0, 2, 4]), w, ids_t([0, 1]), mode="sum", max_norm=1.5)
    want = w0.copy()
    for k in (0, 2, 4):
        norm = np.linalg.norm(w0[k])
        if norm > 1.5:
            want[k] = w0[k] * 1.5 / (norm + 1e-7)
    np.testing.assert_allclose(w.numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(got.numpy(), [want[0], want[2] + want[4]], rtol=1e-12)


def test_embedding_bag_old_argument_order_warns():
    w = RNG.standard_normal((4, 3))
    with pytest.warns(UserWarning, match="embedding_bag"):
        got = F.embedding_bag(t64(w), ids_t([[1, 2]]))
    np.testing.assert_allclose(got.numpy(), [w[1:3].mean(0)])


W = sx.ones(5, 3)
EB_ERRORS = [
    (lambda: F.embedding_bag(sx.ones(4), W, ids_t([0])), TypeError, r"\[embedding_bag\] input .*float32.*\(4,\)"),
    (lambda: F.embedding_bag(ids_t([1]), sx.ones(5, 3, dtype=sx.int64), ids_t([0])), TypeError,
     r"\[embedding_bag\] weight .*int64.*\(5, 3\)"),
    (lambda: F.embedding_bag(ids_t([1]), sx.ones(5), ids_t([0])), ValueError, r"weight must be 2-D.*\(5,\)"),
    (lambda: F.embedding_bag(ids_t([[1]]), W, ids_t([0])), ValueError, r"offsets must be None for 2-D.*\(1, 1\)"),
    (lambda: F.embedding_bag(ids_t([1, 2]), W), ValueError, r"\[embedding_bag\] 1-D input needs offsets.*None"),
    (lambda: F.embedding_bag(ids_t([1, 2]), W, sx.zeros(1)), ValueError, r"offsets.*float32.*\(1,\)"),
    (lambda: F.embedding_bag(ids_t([[[1]]]), W), ValueError, r"1-D .* or 2-D.*\(1, 1, 1\)"),
    (lambda: F.embedding_bag(ids_t([1, 2]), W, ids_t([1])), ValueError, r"start at 0.*length 2, got \[1\]"),
    (lambda: F.embedding_bag(ids_t([1, 2]), W, ids_t([0, 2, 1])), ValueError, r"never decrease.*\[0, 2, 1\]"),
    (lambda: F.embedding_bag(ids_t([1, 2]), W, ids_t([0, 3])), ValueError, r"exceed the input's length 2"),
    (lambda: F.embedding_bag(ids_t([1, 2]), W, ids_t([]), include_last_offset=True), ValueError,
     r"include_last_offset needs at least one offset"),
    (lambda: F.embedding_bag(ids_t([1, 5]), W, ids_t([0])), IndexError, r"0\.\.4 for a table of 5 rows.*1 to 5"),
    (lambda: F.embedding_bag(ids_t([-1, 2]), W, ids_t([0])), IndexError, r"\[embedding_bag\] ids .* -1 to 2"),
    (lambda: F.embedding_bag(ids_t([1]), W, ids_t([0]), mode="min"), ValueError, r"one of sum, mean or max.*'min'"),
    (lambda: F.embedding_bag(ids_t([1]), W, ids_t([0]), mode="max", scale_grad_by_freq=True), ValueError,
     r"max mode does not support"),
    (lambda: F.embedding_bag(ids_t([1]), W, ids_t([0]), sparse=True), NotImplementedError, r"sparse"),
    (lambda: F.embedding_bag(ids_t([1, 2]), W, ids_t([0]), mode="sum", per_sample_weights=sx.ones(3)), ValueError,
     r"per_sample_weights must be shaped like input \(2,\).*float32 tensor of shape \(3,\)"),
    (lambda: F.embedding_bag(ids_t([1]), W, ids_t([0]), mode="sum", per_sample_weights=sx.ones(1, dtype=sx.float64)),
     ValueError, r"dtype of weight \(float32\), got float64"),
    (lambda: F.embedding_bag(ids_t([1]), W, ids_t([0]), per_sample_weights=sx.ones(1)), NotImplementedError,
     r"only supported for mode='sum', got 'mean'"),
    (lambda: F.embedding_bag(ids_t([1]), W, ids_t([0]), padding_idx=5), ValueError, r"padding_idx .*-5\.\.4.*got 5"),
]


@pytest.mark.parametrize("call,exc,pattern", EB_ERRORS)
def test_embedding_bag_errors(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()


# ---------------------------------------------------------------- pdist

@pytest.mark.parametrize("p", [0, 0.5, 1, 1.5, 2, 3, math.inf])
def test_pdist_against_loops(p):
    x = RNG.standard_normal((6, 4))
    x[4] = x[1]  # a zero distance
    x[5, 2] = x[0, 2]  # a zero coordinate difference
    np.testing.assert_allclose(F.pdist(t64(x), p).numpy(), pdist_ref(x, p), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("p", [0.7, 1, 2, 3, math.inf])
def test_pdist_gradients(p):
    gradcheck(lambda x: F.pdist(x, p), [t64(RNG.standard_normal((5, 3)), True)])


@pytest.mark.parametrize("p", [0, 0.5, 1, 2, 3, math.inf])
def test_pdist_gradient_is_zero_at_equal_rows(p):
    x = t64([[1.0, 2.0], [1.0, 2.0]], True)
    F.pdist(x, p).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((2, 2)))


@pytest.mark.parametrize("p", [2, 3])
def test_pdist_gradient_is_zero_where_the_distance_underflows(p):
    x = t64([[0.0, 2.0], [1e-200, 2.0]], True)  # |d|^p underflows to 0: distance 0, gradient 0 (as PyTorch)
    F.pdist(x, p).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((2, 2)))


def test_pdist_shapes_and_errors():
    assert F.pdist(sx.ones(1, 3)).shape == (0,) and F.pdist(sx.ones(0, 3)).shape == (0,)
    np.testing.assert_array_equal(F.pdist(sx.ones(3, 0)).numpy(), np.zeros(3))
    with pytest.raises(ValueError, match=r"\[pdist\] input must be 2-D.*\(2, 3, 1\)"):
        F.pdist(sx.ones(2, 3, 1))
    with pytest.raises(TypeError, match=r"\[pdist\].*int64 tensor of shape \(2, 3\)"):
        F.pdist(sx.ones(2, 3, dtype=sx.int64))
    with pytest.raises(ValueError, match=r"\[pdist\] p must be non-negative, got -1"):
        F.pdist(sx.ones(2, 3), -1)


# ---------------------------------------------------------------- rrelu

def test_rrelu_eval_is_leaky_relu_at_the_mean_slope():
    x = RNG.standard_normal(50)
    want = np.where(x > 0, x, x * (0.1 + 0.3) / 2)
    np.testing.assert_allclose(F.rrelu(t64(x), 0.1, 0.3).numpy(), want, rtol=1e-15)
    np.testing.assert_allclose(F.rrelu(t64(x)).numpy(), np.where(x > 0, x, x * (1 / 8 + 1 / 3) / 2), rtol=1e-15)


def test_rrelu_training_slopes_and_gradient():
    x = t64(np.concatenate([-RNG.uniform(0.5, 2, 4000), RNG.uniform(0.5, 2, 100), [0.0]]), True)
    sx.manual_seed(3)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    y.backward(sx.ones_like(y))
    xs, ys, g = x.detach().numpy(), y.detach().numpy(), x.grad.numpy()
    neg = xs < 0
    slope = ys[neg] / xs[neg]
    assert slope.min() >= 0.1 and slope.max() <= 0.3 and len(np.unique(slope)) > 3900
    assert abs(slope.mean() - 0.2) < 5 * (0.2 / math.sqrt(12)) / math.sqrt(slope.size)  # uniform's mean
    np.testing.assert_allclose(g[neg], slope, rtol=1e-12)
    np.testing.assert_array_equal(ys[xs > 0], xs[xs > 0])
    np.testing.assert_array_equal(g[xs > 0], 1.0)
    assert 0.1 <= g[-1] <= 0.3  # slope at 0, as PyTorch's
    sx.manual_seed(3)
    np.testing.assert_array_equal(F.rrelu(x.detach(), 0.1, 0.3, training=True).numpy(), ys)


def test_rrelu_inplace_and_errors():
    x = t64([-1.0, 2.0])
    assert F.rrelu_(x, 0.2, 0.4) is x and x.numpy().tolist() == [-0.30000000000000004, 2.0]
    y = t64([-2.0, 1.0])
    assert F.rrelu(y, 0.2, 0.2, training=True, inplace=True) is y and y.numpy().tolist() == [-0.4, 1.0]
    with pytest.raises(ValueError, match=r"\[rrelu\] lower 0.5 must not exceed upper 0.1"):
        F.rrelu(sx.ones(3), 0.5, 0.1)
    with pytest.raises(TypeError, match=r"\[rrelu\].*int64 tensor of shape \(3,\)"):
        F.rrelu(sx.ones(3, dtype=sx.int64), training=True)


# ---------------------------------------------------------------- alpha dropouts

def _affine(p):
    a = 1 / math.sqrt((SELU_SAT ** 2 * p + 1) * (1 - p))
    return a, SELU_SAT * a * p


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_alpha_dropout_exact_values_gradient_and_rate(p):
    x = t64(RNG.standard_normal(20000), True)
    y = F.alpha_dropout(x, p, training=True)
    y.backward(sx.ones_like(y))
    a, b = _affine(p)
    xs, ys, g = x.detach().numpy(), y.detach().numpy(), x.grad.numpy()
    kept = np.isclose(ys, a * xs + b, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ys[~kept], -a * SELU_SAT + b, rtol=1e-12)
    np.testing.assert_array_equal(g, np.where(kept, a, 0.0))
    assert abs((~kept).mean() - p) < 5 * math.sqrt(p * (1 - p) / xs.size)


@pytest.mark.parametrize("p", [0.2, 0.5])
def test_alpha_dropout_keeps_selu_mean_and_variance(p):
    x = F.selu(t64(RNG.standard_normal(400000)))
    y = F.alpha_dropout(x, p, training=True).numpy()
    n, var = y.size, y.var()
    assert abs(y.mean()) < 5 * math.sqrt(var / n)
    assert abs(var - 1) < 5 * math.sqrt((((y - y.mean()) ** 4).mean() - var ** 2) / n)


def test_alpha_dropouts_identity_zeros_inplace_and_errors():
    x = sx.randn(4, 3)
    for f in (F.alpha_dropout, F.feature_alpha_dropout):
        assert f(x) is x and f(x, 0.5, training=False) is x and f(x, 0.0, training=True) is x
        assert not np.any(f(x, 1.0, training=True).numpy())
        with pytest.raises(ValueError, match=r"\[" + f.__name__ + r"\] dropout probability .* got 1.5"):
            f(x, 1.5)
        with pytest.raises(TypeError, match=r"int64 tensor of shape \(3,\)"):
            f(sx.ones(3, dtype=sx.int64), 0.5, True)
    y = x.clone()
    assert F.alpha_dropout(y, 0.5, True, inplace=True) is y and not np.allclose(y.numpy(), x.numpy())
    with pytest.raises(RuntimeError, match=r"\[feature_alpha_dropout\] Feature dropout requires .*\(3,\)"):
        F.feature_alpha_dropout(sx.ones(3), 0.5, True)


def test_feature_alpha_dropout_masks_whole_channels():
    p = 0.4
    x = t64(RNG.standard_normal((300, 10, 2, 3)))
    y = F.feature_alpha_dropout(x, p, training=True).numpy()
    a, b = _affine(p)
    dropped = np.all(np.isclose(y, -a * SELU_SAT + b, atol=1e-12), axis=(2, 3))
    kept = np.all(np.isclose(y, a * x.numpy() + b, atol=1e-12), axis=(2, 3))
    assert np.all(dropped ^ kept)
    assert abs(dropped.mean() - p) < 5 * math.sqrt(p * (1 - p) / dropped.size)


# ---------------------------------------------------------------- dropout3d

@pytest.mark.parametrize("shape", [(40, 8, 2, 3, 2), (50, 2, 3, 2)])
def test_dropout3d_zeroes_whole_channels(shape):
    p = 0.3
    x = t64(RNG.uniform(1, 2, shape), True)
    y = F.dropout3d(x, p)
    y.backward(sx.ones_like(y))
    ys = y.detach().numpy().reshape(shape[0] * shape[1] if len(shape) == 5 else shape[0], -1)
    xs = x.detach().numpy().reshape(ys.shape)
    dropped = np.all(ys == 0, axis=1)
    np.testing.assert_allclose(ys[~dropped], xs[~dropped] / (1 - p), rtol=1e-12)
    want_grad = np.where(dropped[:, None], 0.0, np.full(ys.shape, 1 / (1 - p)))
    np.testing.assert_allclose(x.grad.numpy().reshape(ys.shape), want_grad)
    assert abs(dropped.mean() - p) < 5 * math.sqrt(p * (1 - p) / dropped.size)


def test_dropout3d_eval_inplace_and_errors():
    x = sx.randn(2, 3, 2, 2, 2)
    assert F.dropout3d(x, training=False) is x and not np.any(F.dropout3d(x, 1.0).numpy())
    y = sx.ones(2, 3, 2, 2, 2)
    assert F.dropout3d(y, 0.5, inplace=True) is y
    with pytest.warns(UserWarning, match=r"dropout3d: Received a 3-D input to dropout3d, which is deprecated"):
        F.dropout3d(sx.ones(2, 3, 4))  # as in PyTorch: read as unbatched (C, D, H), with a warning
    with pytest.raises(ValueError, match=r"\[dropout3d\] dropout probability .* got -0.1"):
        F.dropout3d(x, -0.1)


# ---------------------------------------------------------------- gumbel_softmax

def test_gumbel_softmax_rows_sum_to_one_and_dim():
    logits = t64(RNG.standard_normal((5, 4, 3)))
    for dim in (-1, 0, 1):
        y = F.gumbel_softmax(logits, tau=0.7, dim=dim).numpy()
        assert np.all(y > 0)
        np.testing.assert_allclose(y.sum(dim), 1.0, rtol=1e-12)
    logs = []
    for tau in (0.5, 2.0):  # the same noise g at two temperatures: tau log y = logits + g + a constant per row
        sx.manual_seed(7)
        logs.append(tau * np.log(F.gumbel_softmax(logits, tau=tau).numpy()))
    diff = logs[0] - logs[1]
    np.testing.assert_allclose(diff, np.broadcast_to(diff[..., :1], diff.shape), rtol=1e-9, atol=1e-9)


def test_gumbel_softmax_hard_is_one_hot_with_the_soft_gradient():
    logits = RNG.standard_normal((6, 5))
    seed_w = sx.tensor(RNG.standard_normal((6, 5)))
    grads = []
    for hard in (False, True):
        x = t64(logits, True)
        sx.manual_seed(11)
        y = F.gumbel_softmax(x, tau=0.5, hard=hard)
        (y * seed_w.double()).sum().backward()
        grads.append((y.detach().numpy(), x.grad.numpy()))
    (soft, g_soft), (hard, g_hard) = grads
    np.testing.assert_array_equal(hard, np.eye(5)[soft.argmax(-1)])
    np.testing.assert_allclose(g_hard, g_soft, rtol=1e-12, atol=1e-15)


def test_gumbel_softmax_argmax_frequencies_follow_softmax():
    logits = np.array([1.0, 0.0, -1.0, 0.5, 2.0])
    n = 40000
    y = F.gumbel_softmax(t64(np.tile(logits, (n, 1))), tau=0.3, hard=True).numpy()
    freq, p = y.mean(0), np.exp(logits) / np.exp(logits).sum()
    assert np.all(y.sum(-1) == 1)
    assert np.all(np.abs(freq - p) < 5 * np.sqrt(p * (1 - p) / n)), (freq, p)


def test_gumbel_softmax_errors_and_eps_warning():
    with pytest.raises(TypeError, match=r"\[gumbel_softmax\] logits .*int64 tensor of shape \(2, 3\)"):
        F.gumbel_softmax(sx.ones(2, 3, dtype=sx.int64))
    with pytest.raises(IndexError, match=r"\[gumbel_softmax\] dim 2 is out of range.*\(2, 3\)"):
        F.gumbel_softmax(sx.ones(2, 3), dim=2)
    with pytest.warns(UserWarning, match="eps is deprecated"):
        F.gumbel_softmax(sx.ones(2, 3), eps=1e-5)


def test_names_exported():
    for name in ("embedding_bag", "rrelu", "rrelu_", "alpha_dropout", "feature_alpha_dropout", "dropout3d",
                 "gumbel_softmax", "pdist"):
        assert name in F.__all__ and getattr(F, name).__doc__


# ---------------------------------------------------------------- parity with PyTorch

def _torch_bag(torch, ids, w, offs, psw, **kw):
    return torch.nn.functional.embedding_bag(torch.tensor(ids), w, None if offs is None else torch.tensor(offs),
                                             per_sample_weights=psw, **kw)


@pytest.mark.parity
@pytest.mark.parametrize("mode,weighted", [("sum", False), ("sum", True), ("mean", False), ("max", False)])
@pytest.mark.parametrize("pad", [None, 3])
@pytest.mark.parametrize("offs,last", [(OFFSETS, False), (LAST_OFFSETS, True), (None, False)])
def test_parity_embedding_bag(torch, mode, weighted, pad, offs, last):
    ids = IDS.reshape(2, 5) if offs is None else IDS
    w0, psw0, seed = RNG.standard_normal((6, 4)), RNG.standard_normal(ids.shape), RNG.standard_normal((4, 4))
    kw = dict(mode=mode, include_last_offset=last, padding_idx=pad)
    w, tw = t64(w0, True), torch.tensor(w0, requires_grad=True)
    psw, tpsw = (t64(psw0, True), torch.tensor(psw0, requires_grad=True)) if weighted else (None, None)
    got = F.embedding_bag(ids_t(ids), w, None if offs is None else ids_t(offs), per_sample_weights=psw, **kw)
    want = _torch_bag(torch, ids, tw, offs, tpsw, **kw)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12, atol=1e-14)
    g = seed[:want.shape[0]]
    (got * t64(g)).sum().backward()
    (want * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-12, atol=1e-14)
    if weighted:
        np.testing.assert_allclose(psw.grad.numpy(), tpsw.grad.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parity
def test_parity_embedding_bag_max_norm(torch):
    w0 = RNG.standard_normal((6, 4)) * 2
    w, tw = t64(w0), torch.tensor(w0)
    got = F.embedding_bag(ids_t(IDS), w, ids_t(OFFSETS), max_norm=1.2, norm_type=3.0, padding_idx=2)
    want = _torch_bag(torch, IDS, tw, OFFSETS, None, max_norm=1.2, norm_type=3.0, padding_idx=2)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    np.testing.assert_allclose(w.numpy(), tw.numpy(), rtol=1e-12)


@pytest.mark.parity
@pytest.mark.parametrize("p", [0, 0.5, 1, 2, 3.5, math.inf])
def test_parity_pdist(torch, p):
    x0 = RNG.standard_normal((7, 4))
    x0[5] = x0[2]
    x0[6, 1] = x0[0, 1]
    x, tx = t64(x0, True), torch.tensor(x0, requires_grad=True)
    got, want = F.pdist(x, p), torch.nn.functional.pdist(tx, p)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12, atol=1e-12)
    g = RNG.standard_normal(want.shape)
    (got * t64(g)).sum().backward()
    (want * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parity
def test_parity_rrelu_eval_and_alpha_dropout_constants(torch):
    x0 = RNG.standard_normal((3, 4, 5))
    x, tx = t64(x0, True), torch.tensor(x0, requires_grad=True)
    got, want = F.rrelu(x, 0.05, 0.4), torch.nn.functional.rrelu(tx, 0.05, 0.4)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-15)
    got.sum().backward()
    want.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())
    for name in ("alpha_dropout", "feature_alpha_dropout"):
        np.testing.assert_array_equal(getattr(F, name)(t64(x0), 0.3).numpy(),
                                      getattr(torch.nn.functional, name)(torch.tensor(x0), 0.3).numpy())
        for p in (0.2, 0.5):  # the two values alpha dropout gives ones: kept and dropped
            got = np.unique(getattr(F, name)(t64(np.ones((200, 3, 2))), p, True).numpy())
            want = np.unique(getattr(torch.nn.functional, name)(torch.ones(200, 3, 2, dtype=torch.float64), p,
                                                                 True).numpy())
            np.testing.assert_allclose(got, want, rtol=1e-14)
    np.testing.assert_array_equal(F.dropout3d(t64(x0[None, None]), 0.5, training=False).numpy(),
                                  torch.nn.functional.dropout3d(torch.tensor(x0[None, None]), 0.5, False).numpy())
