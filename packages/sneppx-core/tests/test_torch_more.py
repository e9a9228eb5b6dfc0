"""Top-level PyTorch functions composed in Python (``_torch_more``, ``_torch_more_num``): values against NumPy
formulas, float64 finite-difference gradients, statistics of the samplers, errors and PyTorch parity."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import sneppx_core as sx
from opcheck import matches_torch
from sneppx_core.testing import gradcheck

RNG = np.random.default_rng(7)
np_trapz = getattr(np, "trapezoid", None) or getattr(np, "trapz")


def _t(a, grad=False, dtype=None):
    return sx.tensor(np.asarray(a), dtype=dtype, requires_grad=grad)


def _f64(*shape, grad=True):
    return sx.tensor(RNG.standard_normal(shape), dtype=sx.float64, requires_grad=grad)


def _close(t, ref, **kw):
    np.testing.assert_allclose(t.detach().numpy() if isinstance(t, sx.Tensor) else t, ref, **kw)


# ---------------------------------------------------------------- conversion
def test_as_tensor_shares_and_converts():
    a = np.arange(6.0).reshape(2, 3)
    t = sx.as_tensor(a)
    a[0, 0] = 9
    assert t.dtype == sx.float64 and t.numpy()[0, 0] == 9
    x = sx.ones(3)
    assert sx.as_tensor(x) is x
    assert sx.as_tensor(x, dtype=sx.float64).dtype == sx.float64
    assert sx.as_tensor([1, 2]).dtype == sx.int64 and sx.as_tensor([1.0]).dtype == sx.float32


def test_asarray_copy_modes():
    a = np.arange(3.0)
    shared, copied = sx.asarray(a), sx.asarray(a, copy=True)
    a[1] = 7
    assert shared.numpy()[1] == 7 and copied.numpy()[1] == 1
    with pytest.raises(ValueError, match="asarray"):
        sx.asarray([1, 2], copy=False)
    with pytest.raises(ValueError, match="asarray"):
        sx.asarray(a, dtype=sx.float32, copy=False)
    x = sx.ones(2)
    assert sx.asarray(x) is x and sx.asarray(x, requires_grad=True).requires_grad
    y = sx.ones(2, requires_grad=True) * 2
    assert sx.asarray(y, copy=True).requires_grad and not sx.asarray(y, requires_grad=False).requires_grad


def test_scalar_tensor():
    t = sx.scalar_tensor(3)
    assert t.shape == () and t.dtype == sx.float32 and t.item() == 3.0
    assert sx.scalar_tensor(2, dtype=sx.int64).dtype == sx.int64
    with pytest.raises(TypeError, match="scalar_tensor"):
        sx.scalar_tensor("x")


# ---------------------------------------------------------------- grids and stacking
@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid_matches_numpy(indexing):
    a, b, c = np.arange(3.0), np.arange(4.0) * 2, np.array([5.0, 6.0])
    outs = sx.meshgrid(_t(a), _t(b), _t(c), indexing=indexing)
    for o, r in zip(outs, np.meshgrid(a, b, c, indexing=indexing)):
        _close(o, r)
    assert len(sx.meshgrid([_t(a), _t(b)])) == 2


def test_meshgrid_grad():
    a, b = _f64(3), _f64(4)
    assert gradcheck(lambda x, y: sx.meshgrid(x, y, indexing="xy")[0] * sx.meshgrid(x, y)[1].T, (a, b))


def test_atleast_nd():
    s, v, m = sx.tensor(1.0), sx.ones(3), sx.ones(2, 3)
    assert sx.atleast_1d(s).shape == (1,) and sx.atleast_2d(v).shape == (1, 3)
    assert [t.shape for t in sx.atleast_3d(s, v, m)] == [(1, 1, 1), (1, 3, 1), (2, 3, 1)]
    assert [t.shape for t in sx.atleast_3d(s, v, m)] == [np.atleast_3d(np.ones(x.shape)).shape for x in (s, v, m)]
    assert isinstance(sx.atleast_2d([v]), tuple)


def test_broadcast_tensors_and_shapes():
    assert sx.broadcast_shapes((2, 1), 3, (1,)) == (2, 3) == np.broadcast_shapes((2, 1), (3,), (1,))
    assert sx.broadcast_shapes() == ()
    a, b = sx.broadcast_tensors(sx.ones(2, 1), sx.arange(3.0))
    assert a.shape == b.shape == (2, 3)
    _close(b, np.broadcast_to(np.arange(3.0), (2, 3)))
    with pytest.raises(ValueError, match="broadcast_shapes"):
        sx.broadcast_shapes((2,), (3,))
    with pytest.raises(ValueError, match="non-negative"):
        sx.broadcast_shapes((-1,))


def test_stacks_match_numpy():
    arrs = [RNG.standard_normal(3), RNG.standard_normal(3)]
    mats = [RNG.standard_normal((2, 3)), RNG.standard_normal((4, 3))]
    _close(sx.hstack([_t(a) for a in arrs]), np.hstack(arrs))
    _close(sx.vstack([_t(a) for a in arrs]), np.vstack(arrs))
    _close(sx.row_stack([_t(a) for a in mats]), np.vstack(mats))
    _close(sx.dstack([_t(a) for a in arrs]), np.dstack(arrs))
    _close(sx.column_stack([_t(a) for a in arrs] + [_t(np.ones((3, 2)))]), np.column_stack(arrs + [np.ones((3, 2))]))
    _close(sx.concatenate([_t(a) for a in mats], axis=0), np.concatenate(mats))
    _close(sx.hstack([_t(np.ones((2, 1))), _t(np.zeros((2, 2)))]), np.hstack([np.ones((2, 1)), np.zeros((2, 2))]))
    assert sx.hstack([sx.ones(2), sx.ones(2, dtype=sx.int64)]).dtype == sx.float32
    with pytest.raises(ValueError, match="hstack"):
        sx.hstack([])


def test_stacks_grad():
    a, b = _f64(3), _f64(3)
    assert gradcheck(lambda x, y: sx.column_stack([x, y]) * sx.dstack([x, y])[0], (a, b))
    assert gradcheck(lambda x, y: sx.vstack([x, y]).sum(0) * sx.hstack([x, y])[:3], (a, b))


def _block_diag_ref(*arrs):
    arrs = [np.atleast_2d(a) for a in arrs]
    out = np.zeros((sum(a.shape[0] for a in arrs), sum(a.shape[1] for a in arrs)))
    r = c = 0
    for a in arrs:
        out[r:r + a.shape[0], c:c + a.shape[1]] = a
        r, c = r + a.shape[0], c + a.shape[1]
    return out


def test_block_diag():
    blocks = [RNG.standard_normal((2, 3)), np.array(4.0), RNG.standard_normal(2), np.zeros((0, 2))]
    _close(sx.block_diag(*[_t(b) for b in blocks]), _block_diag_ref(*blocks))
    assert sx.block_diag().shape == (1, 0)
    assert sx.block_diag(sx.ones(1, 1, dtype=sx.int64), sx.ones(1, 1, dtype=sx.float64)).dtype == sx.float64
    assert gradcheck(lambda x, y: sx.block_diag(x, y), (_f64(2, 2), _f64(3)))
    with pytest.raises(ValueError, match="block_diag"):
        sx.block_diag(sx.ones(1, 1, 1))


def test_cartesian_prod_and_combinations():
    a, b = np.array([1, 2, 3]), np.array([4, 5])
    _close(sx.cartesian_prod(_t(a), _t(b)), np.array(list(itertools.product(a, b))))
    x = np.array([1.0, 2.0, 3.0, 4.0])
    _close(sx.combinations(_t(x), 3), np.array(list(itertools.combinations(x, 3))))
    rep = np.array(list(itertools.combinations_with_replacement(x, 2)))
    _close(sx.combinations(_t(x), 2, with_replacement=True), rep)
    assert sx.combinations(_t(x), 0).shape == (0,) and sx.combinations(_t(x[:2]), 3).shape == (0, 3)
    assert gradcheck(lambda t: sx.combinations(t, 2) * sx.cartesian_prod(t, t)[:6], (_f64(4),))
    with pytest.raises(ValueError, match="combinations"):
        sx.combinations(sx.ones(2, 2))


# ---------------------------------------------------------------- products and distances
@pytest.mark.parametrize("sa,sb", [((2, 3), (4, 5)), ((3,), (2, 2)), ((2, 1, 3), (3, 2)), ((), (3,))])
def test_kron(sa, sb):
    a, b = RNG.standard_normal(sa), RNG.standard_normal(sb)
    _close(sx.kron(_t(a), _t(b)), np.kron(a, b), rtol=1e-12)
    _close(_t(a).kron(_t(b)), np.kron(a, b), rtol=1e-12)
    assert gradcheck(sx.kron, (_f64(*sa), _f64(*sb)))


@pytest.mark.parametrize("dims", [2, 1, 0, ([1, 0], [0, 2]), ([2], [1])])
def test_tensordot(dims):
    a, b = RNG.standard_normal((3, 4, 5)), RNG.standard_normal((4, 5, 3)) if dims == 2 else None
    if dims == 1:
        b = RNG.standard_normal((5, 2))
    elif dims == 0:
        b = RNG.standard_normal((2,))
    elif dims == ([1, 0], [0, 2]):
        b = RNG.standard_normal((4, 2, 3))
    elif dims == ([2], [1]):
        b = RNG.standard_normal((2, 5))
    _close(sx.tensordot(_t(a), _t(b), dims=dims), np.tensordot(a, b, axes=dims), rtol=1e-12)
    assert gradcheck(lambda x, y: sx.tensordot(x, y, dims=dims), (_t(a, True), _t(b, True)))
    with pytest.raises(ValueError, match="tensordot"):
        sx.tensordot(_t(a), _t(b), dims=([0], [0])) if b.shape[0] != 3 else sx.tensordot(_t(a), _t(b), dims=7)


def test_cross():
    a, b = RNG.standard_normal((4, 3)), RNG.standard_normal((1, 3))
    _close(sx.cross(_t(a), _t(b), dim=1), np.cross(a, b), rtol=1e-12)
    _close(_t(a.T).cross(_t(b.T)), np.cross(a, b).T, rtol=1e-12)  # dim=None: first dim of size 3
    assert gradcheck(lambda x, y: sx.cross(x, y, dim=-1), (_f64(2, 3), _f64(2, 3)))
    with pytest.raises(ValueError, match="cross"):
        sx.cross(sx.ones(2, 2), sx.ones(2, 2))


def _cdist_ref(x, y, p):
    d = np.abs(x[..., :, None, :] - y[..., None, :, :])
    if p == 0:
        return (d != 0).sum(-1).astype(float)
    if np.isinf(p):
        return d.max(-1)
    return (d ** p).sum(-1) ** (1 / p)


@pytest.mark.parametrize("p", [0.0, 1.0, 1.5, 2.0, 3.0, math.inf])
@pytest.mark.parametrize("mode", ["use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                                  "donot_use_mm_for_euclid_dist"])
def test_cdist(p, mode):
    x, y = RNG.standard_normal((2, 4, 3)), RNG.standard_normal((5, 3))
    _close(sx.cdist(_t(x), _t(y), p=p, compute_mode=mode), _cdist_ref(x, y[None], p), rtol=1e-9, atol=1e-12)
    if p > 0:
        assert gradcheck(lambda a, b: sx.cdist(a, b, p=p, compute_mode=mode), (_f64(3, 2), _f64(4, 2)))


def test_cdist_zero_distance_grad_is_finite():
    x = sx.tensor([[1.0, 2.0]], dtype=sx.float64, requires_grad=True)
    sx.cdist(x, x.detach()).sum().backward()
    assert np.all(np.isfinite(x.grad.numpy()))
    with pytest.raises(ValueError, match="cdist"):
        sx.cdist(sx.ones(2, 3), sx.ones(2, 4))
    with pytest.raises(ValueError, match="p must be"):
        sx.cdist(sx.ones(2, 3), sx.ones(2, 3), p=-1)


# ---------------------------------------------------------------- statistics and integration
def test_cov_corrcoef_match_numpy():
    x = RNG.standard_normal((3, 6))
    fw, aw = np.array([1, 2, 1, 3, 1, 2]), RNG.random(6) + 0.1
    _close(sx.cov(_t(x)), np.cov(x), rtol=1e-12)
    _close(_t(x).cov(correction=0), np.cov(x, ddof=0), rtol=1e-12)
    _close(sx.cov(_t(x), fweights=_t(fw), aweights=_t(aw)), np.cov(x, fweights=fw, aweights=aw), rtol=1e-12)
    _close(sx.cov(_t(x), aweights=_t(aw), correction=0), np.cov(x, aweights=aw, ddof=0), rtol=1e-12)
    _close(sx.cov(_t(x[0])), np.cov(x[0]), rtol=1e-12)
    _close(sx.corrcoef(_t(x)), np.corrcoef(x), rtol=1e-12)
    assert sx.cov(_t([1, 2, 4])).dtype == sx.float32
    assert gradcheck(lambda a, w: sx.cov(a, aweights=w), (_f64(2, 5), _t(RNG.random(5) + 0.5, True)))
    assert gradcheck(lambda a: a.corrcoef(), (_f64(3, 5),))


def test_cov_errors():
    with pytest.raises(ValueError, match="cov"):
        sx.cov(sx.ones(2, 2, 2))
    with pytest.raises(TypeError, match="fweights"):
        sx.cov(sx.ones(2, 3), fweights=sx.ones(3))
    with pytest.raises(ValueError, match="aweights"):
        sx.cov(sx.ones(2, 3), aweights=sx.ones(4))


def test_trapezoid_family():
    y, x = RNG.standard_normal((3, 5)), np.sort(RNG.standard_normal(5))
    _close(sx.trapezoid(_t(y)), np_trapz(y), rtol=1e-12)
    _close(sx.trapz(_t(y), _t(x)), np_trapz(y, x), rtol=1e-12)
    _close(sx.trapezoid(_t(y), dx=0.5, dim=0), np_trapz(y, dx=0.5, axis=0), rtol=1e-12)
    x2 = np.cumsum(RNG.random((3, 5)), 1)
    _close(sx.trapezoid(_t(y), _t(x2)), np_trapz(y, x2), rtol=1e-12)
    ref = np.stack([np_trapz(y[:, :k + 2], x[:k + 2]) for k in range(4)], -1)
    _close(sx.cumulative_trapezoid(_t(y), _t(x)), ref, rtol=1e-12)
    _close(sx.cumulative_trapezoid(_t(y), dx=2.0, dim=0), 2 * np.cumsum((y[1:] + y[:-1]) / 2, 0), rtol=1e-12)
    assert sx.trapezoid(_t([1, 2, 4])).dtype == sx.float32 and sx.trapezoid(sx.ones(2, 0)).shape == (2,)
    assert gradcheck(lambda a, b: sx.trapezoid(a, b), (_f64(2, 4), _f64(4)))
    assert gradcheck(lambda a: sx.cumulative_trapezoid(a, dx=0.3, dim=0), (_f64(4, 2),))
    with pytest.raises(ValueError, match="trapezoid"):
        sx.trapezoid(sx.ones(2, 4), sx.ones(3))


def test_vander():
    x = np.array([1.0, 2.0, -3.0, 0.5])
    _close(sx.vander(_t(x)), np.vander(x), rtol=1e-12)
    _close(sx.vander(_t(x), N=3, increasing=True), np.vander(x, 3, increasing=True), rtol=1e-12)
    assert sx.vander(_t([1, 2], dtype=sx.int32)).dtype == sx.int64
    assert sx.vander(_t(x), N=0).shape == (4, 0)
    assert gradcheck(lambda a: sx.vander(a, N=4), (_t([0.0, 1.5, -0.7], True),))


def test_rsub():
    a = RNG.standard_normal((2, 3))
    _close(sx.rsub(_t(a), 5.0, alpha=2), 5.0 - 2 * a)
    _close(sx.rsub(_t(a), _t(a[0])), a[0] - a)


# ---------------------------------------------------------------- search and counting
@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_and_bucketize(right):
    seq = np.sort(RNG.integers(0, 10, 12)).astype(float)
    vals = np.concatenate([RNG.integers(-1, 12, 20).astype(float), [np.nan]])
    side = "right" if right else "left"
    ref = np.searchsorted(seq, vals, side=side)
    _close(sx.searchsorted(_t(seq), _t(vals), right=right), ref)
    _close(sx.searchsorted(_t(seq), _t(vals), side=side), ref)
    _close(sx.bucketize(_t(vals[:-1]), _t(seq), right=right), np.digitize(vals[:-1], seq, right=not right))
    perm = RNG.permutation(12)
    _close(sx.searchsorted(_t(seq[perm]), _t(vals), side=side, sorter=_t(np.argsort(seq[perm], kind="stable"))), ref)
    seq2, vals2 = np.sort(RNG.standard_normal((3, 6)), 1), RNG.standard_normal((3, 4))
    _close(sx.searchsorted(_t(seq2), _t(vals2), right=right),
           np.stack([np.searchsorted(s, v, side=side) for s, v in zip(seq2, vals2)]))
    assert sx.searchsorted(_t(seq), _t(vals), out_int32=True).dtype == sx.int32
    assert sx.bucketize(3.0, _t(seq)).shape == ()


def test_search_errors():
    with pytest.raises(ValueError, match="contradict"):
        sx.searchsorted(sx.arange(3.0), sx.ones(1), right=True, side="left")
    with pytest.raises(ValueError, match="searchsorted"):
        sx.searchsorted(sx.ones(2, 3), sx.ones(3, 3))
    with pytest.raises(ValueError, match="bucketize"):
        sx.bucketize(sx.ones(2), sx.ones(2, 2))


@pytest.mark.parametrize("invert", [False, True])
def test_isin(invert):
    e, t = RNG.integers(0, 10, (3, 4)), RNG.integers(0, 10, 5)
    _close(sx.isin(_t(e), _t(t), invert=invert), np.isin(e, t, invert=invert))
    _close(sx.isin(_t(e), 3, invert=invert), np.isin(e, 3, invert=invert))
    assert sx.isin(4, _t(t)).item() == (4 in t)
    assert not sx.isin(_t([np.nan]), _t([np.nan])).item()
    with pytest.raises(TypeError, match="isin"):
        sx.isin(1, 2)


def test_unravel_index():
    idx = RNG.integers(0, 60, 7)
    for a, b in zip(sx.unravel_index(_t(idx), (3, 4, 5)), np.unravel_index(idx, (3, 4, 5))):
        _close(a, b)
        assert a.dtype == sx.int64
    assert [t.item() for t in sx.unravel_index(_t(-1), (2, 3))] == [1, 2]
    with pytest.raises(ValueError, match="out of range"):
        sx.unravel_index(_t([6]), (2, 3))
    with pytest.raises(TypeError, match="integers"):
        sx.unravel_index(_t([1.0]), (2, 3))


def test_histc():
    x = RNG.standard_normal(200)
    ref, _ = np.histogram(x, bins=7, range=(-1.0, 1.5))
    _close(sx.histc(_t(x), bins=7, min=-1.0, max=1.5), ref)
    ref, _ = np.histogram(x, bins=10)
    _close(_t(x).histc(bins=10), ref)
    _close(sx.histc(_t([1.0, 2, 1, np.nan, 3]), bins=4, min=0, max=3), [0, 2, 1, 1])
    _close(sx.histc(_t([2.0, 2.0]), bins=2), [0, 2])  # empty range: [1, 3]
    assert sx.histc(sx.ones(3, dtype=sx.float64)).dtype == sx.float64
    with pytest.raises(TypeError, match="histc"):
        sx.histc(_t([1, 2]))
    with pytest.raises(ValueError, match="histc"):
        sx.histc(sx.ones(3), min=2, max=1)


def test_logspace():
    _close(sx.logspace(-1, 2, 7, dtype=sx.float64), np.logspace(-1, 2, 7), rtol=1e-14)
    _close(sx.logspace(0, 3, 4, base=2.0), np.logspace(0, 3, 4, base=2.0), rtol=1e-6)
    assert sx.logspace(0, 2, 3, dtype=sx.int64).tolist() == [1, 10, 100] and sx.logspace(0, 1, 0).shape == (0,)


# ---------------------------------------------------------------- windows
def _sym_windows(m):
    k = np.arange(m)
    i0 = np.i0
    return {"hann_window": np.hanning(m), "hamming_window": np.hamming(m), "blackman_window": np.blackman(m),
            "bartlett_window": np.bartlett(m), "kaiser_window": np.kaiser(m, 12.0) if m > 1 else np.ones(m),
            "k": k, "i0": i0}


@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
                                  "kaiser_window"])
@pytest.mark.parametrize("n", [0, 1, 2, 7, 16])
def test_windows(name, n):
    fn = getattr(sx, name)
    _close(fn(n, periodic=False, dtype=sx.float64), _sym_windows(n)[name], atol=1e-12)
    _close(fn(n, dtype=sx.float64), _sym_windows(n + 1)[name][:n] if n > 1 else np.ones(n), atol=1e-12)
    assert fn(n).dtype == sx.float32
    with pytest.raises(TypeError, match=name):
        fn(4, dtype=sx.int64)
    with pytest.raises(ValueError, match=name):
        fn(-1)


def test_kaiser_beta():
    _close(sx.kaiser_window(9, periodic=False, beta=3.5, dtype=sx.float64), np.kaiser(9, 3.5), rtol=1e-12)


# ---------------------------------------------------------------- sampling
def _z(sample, mean, var):
    n = sample.size
    return abs(sample.mean() - mean) / math.sqrt(var / n)


def test_normal_overloads_statistics():
    sx.manual_seed(0)
    s = sx.normal(2.0, 3.0, size=(20000,), dtype=sx.float64).numpy()
    assert _z(s, 2.0, 9.0) < 5 and abs(s.var() - 9.0) < 5 * 9.0 * math.sqrt(2 / s.size)
    m = sx.tensor([[-1.0], [4.0]], dtype=sx.float64)
    out = sx.normal(m, sx.tensor([0.5, 2.0, 1.0], dtype=sx.float64))
    assert out.shape == (2, 3) and out.dtype == sx.float64
    many = sx.normal(sx.zeros(20000, 1, dtype=sx.float64), sx.tensor([0.5, 2.0], dtype=sx.float64)).numpy()
    assert many.shape == (20000, 2) and all(_z(many[:, j], 0.0, s * s) < 5 for j, s in enumerate([0.5, 2.0]))
    assert abs(many[:, 1].std() - 2.0) < 5 * 2.0 / math.sqrt(2 * 20000)
    big = sx.normal(sx.full((20000,), 1.5), 0.5).numpy()
    assert _z(big, 1.5, 0.25) < 5
    big = sx.normal(-1.0, sx.full((20000,), 2.0)).numpy()
    assert _z(big, -1.0, 4.0) < 5
    with pytest.raises(ValueError, match="std"):
        sx.normal(sx.zeros(2), -1.0)
    with pytest.raises(TypeError, match="size"):
        sx.normal(0.0, 1.0)
    with pytest.raises(TypeError, match="floating"):
        sx.normal(sx.zeros(2, dtype=sx.int64), 1.0)


def test_normal_gradient_is_zero_and_linked():
    m = sx.zeros(3, dtype=sx.float64, requires_grad=True)
    out = sx.normal(m, 1.0)
    assert out.requires_grad
    out.sum().backward()
    assert not np.any(m.grad.numpy())


@pytest.mark.parametrize("rate", [0.0, 0.7, 4.0, 9.9, 10.0, 35.0, 1000.0])
def test_poisson_statistics(rate):
    sx.manual_seed(1)
    s = sx.poisson(sx.full((20000,), rate, dtype=sx.float64)).numpy()
    assert np.all(s == np.round(s)) and np.all(s >= 0)
    if rate == 0:
        assert not np.any(s)
    else:
        assert _z(s, rate, rate) < 5 and abs(s.var() - rate) < 5 * rate * math.sqrt(2 / s.size + 1 / (rate * s.size))


def test_poisson_errors_and_dtype():
    assert sx.poisson(sx.ones(3)).dtype == sx.float32
    with pytest.raises(ValueError, match="poisson"):
        sx.poisson(sx.tensor([-1.0]))
    with pytest.raises(TypeError, match="poisson"):
        sx.poisson(sx.ones(2, dtype=sx.int64))


@pytest.mark.parametrize("n,p", [(0, 0.3), (5, 0.0), (5, 1.0), (10, 0.3), (40, 0.2), (100, 0.5), (1000, 0.9),
                                 (7, 0.95)])
def test_binomial_statistics(n, p):
    sx.manual_seed(2)
    s = sx.binomial(sx.full((20000,), float(n), dtype=sx.float64), sx.tensor(p, dtype=sx.float64)).numpy()
    assert s.shape == (20000,) and np.all((s >= 0) & (s <= n)) and np.all(s == np.round(s))
    var = n * p * (1 - p)
    if var == 0:
        assert np.all(s == n * p)
    else:
        assert _z(s, n * p, var) < 5 and abs(s.var() - var) < 5 * var * math.sqrt(2 / s.size) + 0.05


def test_binomial_errors():
    with pytest.raises(ValueError, match="prob"):
        sx.binomial(sx.ones(2), sx.full((2,), 1.5))
    with pytest.raises(ValueError, match="count"):
        sx.binomial(sx.full((2,), -1.0), sx.full((2,), 0.5))


@pytest.mark.parametrize("draw", [
    lambda: sx.normal(sx.zeros(5), 1.0), lambda: sx.normal(0.0, 1.0, (5,)), lambda: sx.poisson(sx.full((5,), 30.0)),
    lambda: sx.poisson(sx.full((5,), 3.0)), lambda: sx.binomial(sx.full((5,), 50.0), sx.full((5,), 0.4)),
    lambda: sx.binomial(sx.full((5,), 5.0), sx.full((5,), 0.4))])
def test_sampling_reproducible_under_manual_seed(draw):
    sx.manual_seed(123)
    a = draw().numpy()
    sx.manual_seed(123)
    b = draw().numpy()
    c = draw().numpy()
    assert np.array_equal(a, b) and not np.array_equal(b, c)


def test_rng_state_roundtrip():
    sx.manual_seed(42)
    assert sx.initial_seed() == 42
    sx.rand(5)
    state = sx.get_rng_state()
    assert state.dtype == sx.uint8 and state.shape == (16,)
    a = sx.randn(4).numpy()
    sx.rand(3)
    sx.set_rng_state(state)
    assert np.array_equal(sx.randn(4).numpy(), a) and sx.initial_seed() == 42
    with pytest.raises(ValueError, match="set_rng_state"):
        sx.set_rng_state(sx.ones(16))
    with pytest.raises(TypeError, match="set_rng_state"):
        sx.set_rng_state([1, 2])


def test_public_names_documented():
    names = ["as_tensor", "asarray", "meshgrid", "atleast_1d", "atleast_2d", "atleast_3d", "broadcast_tensors",
             "broadcast_shapes", "block_diag", "cartesian_prod", "combinations", "column_stack", "hstack", "vstack",
             "dstack", "row_stack", "concatenate", "cdist", "cross", "kron", "tensordot", "cov", "corrcoef",
             "bucketize", "searchsorted", "isin", "unravel_index", "vander", "trapezoid", "trapz",
             "cumulative_trapezoid", "logspace", "rsub", "scalar_tensor", "histc", "normal", "poisson", "binomial",
             "hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window", "initial_seed",
             "get_rng_state", "set_rng_state"]
    for n in names:
        assert n in sx.__all__ and getattr(sx, n).__doc__, n
    for n in ["cross", "kron", "cov", "corrcoef", "histc"]:
        assert getattr(sx.Tensor, n).__doc__, n
    assert not hasattr(sx.Tensor, "isin") and not hasattr(sx.Tensor, "tensordot")


# ---------------------------------------------------------------- parity with PyTorch
PARITY = {
    "meshgrid_xy": (lambda L, a, b: L.meshgrid(a, b, indexing="xy")[0] * L.meshgrid(a, b, indexing="xy")[1],
                    [(3,), (4,)]),
    "broadcast_tensors": (lambda L, a, b: L.broadcast_tensors(a, b)[0] * L.broadcast_tensors(a, b)[1], [(2, 1), (3,)]),
    "block_diag": (lambda L, a, b, c: L.block_diag(a, b, c), [(2, 3), (), (2,)]),
    "cartesian_prod": (lambda L, a, b: L.cartesian_prod(a, b), [(3,), (2,)]),
    "combinations": (lambda L, a: L.combinations(a, 3), [(5,)]),
    "combinations_rep": (lambda L, a: L.combinations(a, 2, with_replacement=True), [(3,)]),
    "column_stack": (lambda L, a, b: L.column_stack([a, b]), [(3,), (3, 2)]),
    "hstack": (lambda L, a, b: L.hstack([a, b]), [(2, 3), (2, 1)]),
    "vstack": (lambda L, a, b: L.vstack([a, b]), [(3,), (2, 3)]),
    "dstack": (lambda L, a, b: L.dstack([a, b]), [(2, 3), (2, 3)]),
    "atleast_3d": (lambda L, a: L.atleast_3d(a), [(4,)]),
    "cdist": (lambda L, a, b: L.cdist(a, b), [(2, 4, 3), (5, 3)]),
    "cdist_mm": (lambda L, a, b: L.cdist(a, b), [(30, 3), (28, 3)]),
    "cdist_p1": (lambda L, a, b: L.cdist(a, b, p=1), [(4, 3), (5, 3)]),
    "cdist_p3": (lambda L, a, b: L.cdist(a, b, p=3), [(4, 3), (5, 3)]),
    "cdist_inf": (lambda L, a, b: L.cdist(a, b, p=float("inf")), [(4, 3), (5, 3)]),
    "cross": (lambda L, a, b: L.cross(a, b, dim=0), [(3, 4), (3, 4)]),
    "kron": (lambda L, a, b: a.kron(b), [(2, 3), (3, 1, 2)]),
    "tensordot": (lambda L, a, b: L.tensordot(a, b, dims=([0, 2], [2, 0])), [(3, 4, 5), (5, 2, 3)]),
    "cov": (lambda L, a: a.cov(correction=0), [(3, 5)]),
    "cov_weights": (lambda L, a, w: L.cov(a, fweights=L.tensor([1, 2, 3, 1]), aweights=w.exp()), [(2, 4), (4,)]),
    "corrcoef": (lambda L, a: L.corrcoef(a), [(3, 6)]),
    "trapezoid": (lambda L, y, x: L.trapezoid(y, x, dim=0), [(4, 3), (4,)]),
    "trapz_dx": (lambda L, y: L.trapz(y, dx=0.25), [(2, 5)]),
    "cumulative_trapezoid": (lambda L, y, x: L.cumulative_trapezoid(y, x), [(3, 4), (3, 4)]),
    "rsub": (lambda L, a, b: L.rsub(a, b, alpha=3), [(2, 3), (3,)]),
}


@pytest.mark.parity
@pytest.mark.parametrize("name", sorted(PARITY))
def test_parity_values_and_grads(torch, name):
    fn, shapes = PARITY[name]
    matches_torch(torch, fn, [RNG.standard_normal(s) for s in shapes], RNG.standard_normal, rtol=1e-9, atol=1e-11,
                  grad_rtol=1e-7, grad_atol=1e-9, name=name)


PARITY_NOGRAD = {
    "searchsorted": lambda L: L.searchsorted(L.tensor([1.0, 2, 2, 5]), L.tensor([[0.0, 2, 3], [5, 6, float("nan")]])),
    "searchsorted_right": lambda L: L.searchsorted(L.tensor([[1, 3, 5], [2, 4, 6]]), L.tensor([[3], [4]]),
                                                   side="right", out_int32=True),
    "bucketize": lambda L: L.bucketize(L.tensor([0.5, 1, 2.5, 9]), L.tensor([1.0, 2, 3]), right=True),
    "isin": lambda L: L.isin(L.tensor([[1, 2], [3, 4]]), L.tensor([2, 4, 7]), invert=True),
    "unravel_index": lambda L: L.stack(L.unravel_index(L.tensor([0, 7, 11, -1]), (3, 4))),
    "histc": lambda L: L.histc(L.tensor([0.1, 0.5, 0.5, 1.0, 2.0, -3.0]), bins=5, min=0.0, max=1.0),
    "histc_auto": lambda L: L.histc(L.tensor([0.1, 0.5, 0.5, 1.0, 2.0, -3.0], dtype=L.float64), bins=3),
    "logspace": lambda L: L.logspace(-2, 3, 11, base=3.0, dtype=L.float64),
    "logspace_int": lambda L: L.logspace(0, 3, 4, dtype=L.int64),
    "scalar_tensor": lambda L: L.scalar_tensor(7),
    "vander_int": lambda L: L.vander(L.tensor([1, 2, 3], dtype=L.int32)),
    "trapezoid_int": lambda L: L.trapezoid(L.tensor([1, 2, 4])),
    "cov_int": lambda L: L.cov(L.tensor([[1, 2, 4], [0, 1, 1]])),
    "cross_default_dim": lambda L: L.cross(L.arange(9.0).reshape(3, 3), L.ones(3, 3)),
    "hann": lambda L: L.hann_window(10, dtype=L.float64),
    "hamming": lambda L: L.hamming_window(9, periodic=False, alpha=0.5, beta=0.4, dtype=L.float64),
    "blackman": lambda L: L.blackman_window(12, dtype=L.float64),
    "bartlett": lambda L: L.bartlett_window(7, dtype=L.float64),
    "kaiser": lambda L: L.kaiser_window(11, True, 8.0, dtype=L.float64),
    "vander": lambda L: L.vander(L.tensor([0.5, -2.0, 3.0], dtype=L.float64), N=4, increasing=True),
    "kaiser_sym": lambda L: L.kaiser_window(6, periodic=False, dtype=L.float64),
    "window_f32": lambda L: L.hann_window(8),
    "combinations_empty": lambda L: L.combinations(L.arange(2), 3),
    "block_diag_empty": lambda L: L.block_diag(),
}


@pytest.mark.parity
@pytest.mark.parametrize("name", sorted(PARITY_NOGRAD))
def test_parity_no_grad(torch, name):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = PARITY_NOGRAD[name](sx), PARITY_NOGRAD[name](torch)
    assert tuple(ours.shape) == tuple(theirs.shape), name
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1], name
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-7, err_msg=name)


@pytest.mark.parity
def test_parity_broadcast_shapes_and_meshgrid_default(torch):
    assert sx.broadcast_shapes((5, 1, 3), (4, 1), 1) == tuple(torch.broadcast_shapes((5, 1, 3), (4, 1), 1))
    a = np.arange(3.0)
    np.testing.assert_array_equal(sx.meshgrid(sx.tensor(a), sx.tensor(a[:2]))[1].numpy(),
                                  torch.meshgrid(torch.tensor(a), torch.tensor(a[:2]), indexing="ij")[1].numpy())
