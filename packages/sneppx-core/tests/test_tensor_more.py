"""The wider Tensor API (elementwise aliases and compositions, reductions, shape and index helpers,
small linear algebra): values and gradients against PyTorch, and against NumPy without it."""

from __future__ import annotations

import numpy as np
import pytest
import sneppx_core as sx
from sneppx_core.testing import gradcheck

RNG = np.random.default_rng(5)


def _u(*shape, lo=-0.9, hi=0.9):
    return RNG.uniform(lo, hi, shape)


# name -> (function of (lib, *tensors), input arrays builder); every input is float64 and differentiated
CASES = {
    "log10": (lambda L, a: a.log10(), lambda: [_u(3, 4, lo=0.1, hi=3)]),
    "exp2": (lambda L, a: L.exp2(a), lambda: [_u(3, 4)]),
    "sinh_cosh_tan": (lambda L, a: a.sinh() + L.cosh(a) * a.tan(), lambda: [_u(3, 4)]),
    "inverse_trig": (lambda L, a: a.asin() + L.acos(a) * 2 + a.atan() * 3 + L.arctan(a * 5), lambda: [_u(3, 4)]),
    "inverse_hyperbolic": (lambda L, a: a.asinh() + L.atanh(a) + (a.abs() + 1.5).acosh(), lambda: [_u(3, 4)]),
    "erfc_sinc_logit": (lambda L, a: a.erfc() + L.sinc(a) + (a.abs() * 0.5 + 0.2).logit(), lambda: [_u(3, 4)]),
    "hypot_logaddexp": (lambda L, a, b: L.hypot(a, b) + a.logaddexp(b * 30) + L.logaddexp2(a, b),
                        lambda: [_u(3, 4), _u(3, 4)]),
    "xlogy_fmod": (lambda L, a, b: L.xlogy(a, b.abs() + 0.1) + a.fmod(b.abs() + 0.3) + (a * 3).frac(),
                   lambda: [_u(3, 4), _u(3, 4)]),
    "aliases": (lambda L, a, b: a.multiply(b) - L.divide(a, b + 2) + a.subtract(b).negative() + a.absolute()
                + a.true_divide(3), lambda: [_u(3, 4), _u(3, 4)]),
    "deg_rad": (lambda L, a: a.deg2rad() + L.rad2deg(a), lambda: [_u(5)]),
    "float_power": (lambda L, a: a.abs().float_power(1.5), lambda: [_u(5)]),
    "nansum_nanmean": (lambda L, a: L.nansum(a.log(), 1) + a.log().nanmean(), lambda: [_u(3, 4)]),
    "cummax": (lambda L, a: a.cummax(1).values + L.cummin(a, 0).values, lambda: [_u(3, 5)]),
    "median": (lambda L, a: a.median(1).values * 2 + a.median(), lambda: [_u(3, 5)]),
    "kthvalue": (lambda L, a: L.kthvalue(a, 2, 0, keepdim=True).values, lambda: [_u(4, 3)]),
    "quantile": (lambda L, a: L.quantile(a, L.tensor([0.1, 0.5, 0.8], dtype=L.float64), dim=1)
                 + a.quantile(0.3), lambda: [_u(3, 6)]),
    "tile": (lambda L, a: a.tile((2, 1, 3)), lambda: [_u(2, 3)]),
    "repeat_interleave": (lambda L, a: a.repeat_interleave(L.tensor([1, 0, 3]), dim=1)
                          + L.repeat_interleave(a, 2).sum(), lambda: [_u(2, 3)]),
    "take_along_dim": (lambda L, a: L.take_along_dim(a, L.tensor([[0], [2]]), 1) + a.take(L.tensor([[5, 0]])),
                       lambda: [_u(2, 3)]),
    "tensor_split": (lambda L, a: L.cat([p * (i + 1) for i, p in enumerate(a.tensor_split(3, dim=1))], 1)
                     + L.cat(L.tensor_split(a, [1, 4], dim=1), 1), lambda: [_u(2, 7)]),
    "flip_rot": (lambda L, a: a.fliplr() + L.flipud(a) + a.rot90(1, (0, 1)) + L.rot90(a, 3) + a.rot90(2),
                 lambda: [_u(3, 3)]),
    "diagonal": (lambda L, a: a.diagonal(1, 0, 2) * 2, lambda: [_u(3, 2, 4)]),
    "diag_trace": (lambda L, a: L.diag(a.diag(-1), 1) + a.trace() + L.diag(a), lambda: [_u(3, 3)]),
    "movedim": (lambda L, a: a.movedim([0, 1], [2, 0]) + L.moveaxis(a, 0, -1),
                lambda: [_u(2, 3, 4)]),
    "inner_mv": (lambda L, a, v: L.inner(a, a) + a.mv(v).unsqueeze(0) + L.addmv(v, a, v, beta=0.5).unsqueeze(1)
                 + a.addr(v, v, alpha=2), lambda: [_u(3, 3), _u(3)]),
    "index_put": (lambda L, a, v: a.index_put((L.tensor([0, 2, 0]),), v.unsqueeze(1) * L.ones(3, 4, dtype=L.float64),
                                              accumulate=True) + a.index_put((L.tensor([1]), L.tensor([3])), v[0]),
                  lambda: [_u(3, 4), _u(3)]),
    "inverse_det": (lambda L, a: a.inverse() * L.det(a) + a.logdet() + L.slogdet(a)[1],
                    lambda: [np.eye(3) * 2 + _u(3, 3) * 0.3]),
}


def _run(lib, name, arrays):
    ts = [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in arrays]
    return ts, CASES[name][0](lib, *ts)


@pytest.mark.parity
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(torch, name):
    arrays = CASES[name][1]()
    ts, out = _run(sx, name, arrays)
    tts, tout = _run(torch, name, arrays)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-10, atol=1e-12)
    w = RNG.standard_normal(tuple(tout.shape))
    (out * sx.tensor(w)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    for a, b in zip(ts, tts):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-8, atol=1e-10, err_msg=name)


def test_against_numpy():
    a = RNG.standard_normal((4, 5))
    x = sx.tensor(a)
    np.testing.assert_allclose(x.abs().log10().numpy(), np.log10(np.abs(a)), rtol=1e-12)
    np.testing.assert_allclose(sx.hypot(x, x * 2).numpy(), np.hypot(a, 2 * a), rtol=1e-12)
    np.testing.assert_allclose(x.cummax(1).values.numpy(), np.maximum.accumulate(a, 1))
    np.testing.assert_allclose(x.quantile(0.25).item(), np.quantile(a, 0.25), rtol=1e-12)
    np.testing.assert_allclose(x.tile((2, 2)).numpy(), np.tile(a, (2, 2)))
    np.testing.assert_allclose(x.diagonal(1).numpy(), np.diagonal(a, 1))
    np.testing.assert_allclose(x.rot90().numpy(), np.rot90(a))
    m = np.eye(3) + RNG.standard_normal((3, 3)) * 0.2
    np.testing.assert_allclose(sx.tensor(m).inverse().numpy(), np.linalg.inv(m), rtol=1e-10)
    assert sx.tensor(m).det().item() == pytest.approx(np.linalg.det(m), rel=1e-12)


def test_predicates_and_counts():
    x = sx.tensor([[0.0, 1.5, float("nan")], [2.0, 0.0, 1.5]])
    assert sx.count_nonzero(x).item() == 4 and x.count_nonzero(1).tolist() == [2, 2]
    assert sx.isclose(x, x + 1e-9).tolist() == [[True, True, False], [True, True, True]]
    assert sx.isclose(x, x, equal_nan=True).all().item() and not sx.allclose(x, x)
    assert sx.equal(sx.ones(2), sx.ones(2)) and not sx.equal(sx.ones(2), sx.ones(3))
    assert x.aminmax(dim=1).min.tolist()[1] == 0.0
    assert sx.tensor([3, 1, 3, 2]).unique().tolist() == [1, 2, 3]
    vals, inv, counts = sx.unique(sx.tensor([3, 1, 3]), return_inverse=True, return_counts=True)
    assert (vals.tolist(), inv.tolist(), counts.tolist()) == ([1, 3], [1, 0, 1], [1, 2])
    assert sx.tensor([1, 1, 2, 1]).unique_consecutive().tolist() == [1, 2, 1]
    assert sx.bincount(sx.tensor([0, 2, 2]), minlength=4).tolist() == [1, 0, 2, 0]
    assert sx.signbit(sx.tensor([-0.0, 1.0, -2.0])).tolist() == [True, False, True]
    y = sx.zeros(2, 3)
    assert y.is_signed() and not y.is_complex() and y.itemsize == 4 and y.nbytes == 24 and not y.is_pinned()
    assert y.ravel().shape == (6,) and y.is_same_size(sx.ones(2, 3)) and sx.tensor([2]).is_nonzero()
    with pytest.raises(RuntimeError, match="pin_memory"):
        y.pin_memory()
    z = sx.tensor([0.5, 0.25])
    z.log10_()
    np.testing.assert_allclose(z.numpy(), np.log10([0.5, 0.25]), rtol=1e-6)
    with pytest.raises(ValueError, match=r"\[quantile\] q must be in \[0, 1\]"):
        z.quantile(1.5)
    with pytest.raises(IndexError, match=r"\[kthvalue\] k=5"):
        z.kthvalue(5)


def test_inplace_comparisons_and_index_put_():
    x = sx.tensor([1.0, 2.0, 3.0])
    x.gt_(1.5)
    assert x.tolist() == [0.0, 1.0, 1.0] and x.dtype == sx.float32
    y = sx.tensor([[True, False], [False, False]])
    y.logical_or_(sx.tensor([[False, False], [True, False]]))
    assert y.tolist() == [[True, False], [True, False]]
    z = sx.zeros(2, 3)
    z.index_put_((sx.tensor([0, 1, 0]), sx.tensor([2, 0, 2])), sx.tensor([1.0, 2.0, 3.0]), accumulate=True)
    assert z.tolist() == [[0.0, 0.0, 4.0], [2.0, 0.0, 0.0]]
    z.index_put_((sx.tensor([1]),), sx.tensor(9.0))
    assert z.tolist() == [[0.0, 0.0, 4.0], [9.0, 9.0, 9.0]]
    w = sx.tensor([7, 8, 9])
    w.remainder_(4)
    assert w.tolist() == [3, 0, 1]


@pytest.mark.parity
@pytest.mark.parametrize("name,fn,make", [
    ("fmax_fmin", lambda L, a, b: L.fmax(a, b) + a.fmin(b), lambda: [_u(3, 4), _u(3, 4)]),
    ("copysign", lambda L, a, b: a.copysign(b), lambda: [_u(3, 4), _u(3, 4)]),
    ("diag_embed", lambda L, a: L.diag_embed(a, 1) + 0, lambda: [_u(2, 3)]),
    ("diag_embed_dims", lambda L, a: a.diag_embed(0, 0, 2) + 0, lambda: [_u(2, 3)]),
    ("diagflat", lambda L, a: a.diagflat(-1) + 0, lambda: [_u(2, 2)]),
    ("addbmm", lambda L, c, a, b: c.addbmm(a, b, beta=0.5), lambda: [_u(3, 4), _u(2, 3, 5), _u(2, 5, 4)]),
    ("splits", lambda L, a: L.cat([p * (i + 1) for i, p in enumerate(a.hsplit(2))], 1) + L.cat(a.vsplit([1]), 0),
     lambda: [_u(4, 6)]),
    ("msort", lambda L, a: a.msort() + L.cat(a.split_with_sizes([1, 3], 0), 0), lambda: [_u(4, 3)]),
])
def test_more_functions_match_torch(torch, name, fn, make):
    arrays = make()
    ts = [sx.tensor(a, requires_grad=True) for a in arrays]
    tts = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, tout = fn(sx, *ts), fn(torch, *tts)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-12)
    w = RNG.standard_normal(tuple(tout.shape))
    (out * sx.tensor(w)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    for a, b in zip(ts, tts):
        if a.grad is None:  # no path from this input: PyTorch reports zeros
            assert not np.any(b.grad.numpy())
            continue
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_random_fills_have_the_right_distribution():
    sx.manual_seed(0)
    n = 200_000
    b = sx.zeros(n).bernoulli_(0.3)
    assert set(np.unique(b.numpy()).tolist()) == {0.0, 1.0} and abs(b.mean().item() - 0.3) < 0.01
    e = sx.zeros(n, dtype=sx.float64).exponential_(2.0)
    assert abs(e.mean().item() - 0.5) < 0.01 and e.min().item() >= 0
    g = sx.zeros(n).geometric_(0.25)
    assert abs(g.mean().item() - 4.0) < 0.05 and g.min().item() >= 1
    r = sx.zeros(n, dtype=sx.int64).random_(3, 7)
    assert set(np.unique(r.numpy()).tolist()) == {3, 4, 5, 6}
    ln = sx.zeros(n, dtype=sx.float64).log_normal_(0.0, 0.5)
    assert abs(np.log(ln.numpy()).std() - 0.5) < 0.01
    c = sx.zeros(n, dtype=sx.float64).cauchy_(1.0, 2.0)
    assert abs(np.median(c.numpy()) - 1.0) < 0.05
    sx.manual_seed(1)
    a = sx.zeros(5).exponential_()
    sx.manual_seed(1)
    assert a.tolist() == sx.zeros(5).exponential_().tolist()
    assert sx.isposinf(sx.tensor([float("inf"), 1.0])).tolist() == [True, False]
    assert sx.heaviside(sx.tensor([-1.0, 0.0, 2.0]), sx.tensor(0.5)).tolist() == [0.0, 0.5, 1.0]
    assert sx.argwhere(sx.tensor([[0, 1], [1, 0]])).tolist() == [[0, 1], [1, 0]]
    with pytest.raises(ValueError, match=r"\[hsplit\] dim 1 of size 3 cannot be split into 2"):
        sx.zeros(2, 3).hsplit(2)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "int32", "uint8", "bool"])
@pytest.mark.parametrize("shape,dim", [((1000,), 0), ((5, 1), 1), ((6, 33), 1), ((6, 33), 0), ((4, 9, 5), 1),
                                       ((4, 9, 5), -1), ((3, 0, 2), 2)], ids=str)
def test_kthvalue_and_median_are_the_stable_sorts_kth(threads, shape, dim, dtype):
    """kthvalue (a selection) gives the k-th element of a stable sort along dim: ties by position, NaN
    largest, on contiguous and transposed inputs; median is the lower middle one."""
    a = RNG.integers(0, 4, shape).astype(dtype) if dtype != "bool" else RNG.random(shape) < 0.5
    if dtype.startswith("float") and a.size > 4:
        a.flat[RNG.choice(a.size, 3, replace=False)] = np.nan
    n = a.shape[dim]
    # the values are 0-3, so NaN as +inf sorts last, ties by position
    order = np.argsort(np.where(np.isnan(a), np.inf, a) if dtype.startswith("float") else a, axis=dim, kind="stable")
    for k in sorted({1, (n + 1) // 2, n}) if n else []:
        want_i = np.take(order, [k - 1], axis=dim)
        for x in (sx.tensor(a), sx.tensor(np.ascontiguousarray(np.moveaxis(a, dim, -1))).movedim(-1, dim)):
            v, i = sx.kthvalue(x, k, dim, keepdim=True)
            np.testing.assert_array_equal(i.numpy(), want_i)
            np.testing.assert_array_equal(v.numpy(), np.take_along_axis(a, want_i, dim))
            v2, i2 = x.kthvalue(k, dim)
            np.testing.assert_array_equal(i2.numpy(), want_i.squeeze(dim))
    if n:  # median: the lower middle one, or the first NaN of a slice holding one (PyTorch's median)
        want = np.take(order, (n + 1) // 2 - 1, axis=dim)
        if dtype.startswith("float"):
            nan = np.isnan(a)
            want = np.where(nan.any(dim), nan.argmax(dim), want)
        m, mi = sx.tensor(a).median(dim)
        np.testing.assert_array_equal(mi.numpy(), want)
        np.testing.assert_array_equal(m.numpy(), np.take_along_axis(a, np.expand_dims(want, dim), dim).squeeze(dim))
        if a.size:
            whole = sx.tensor(a).median().item()
            assert np.isnan(whole) if np.isnan(a).any() else whole == np.sort(a.reshape(-1))[(a.size + 1) // 2 - 1]


def test_kthvalue_gradient_and_errors():
    a = RNG.permutation(24).reshape(4, 6).astype(np.float64) / 7  # distinct: the k-th is one element
    gradcheck(lambda x: sx.kthvalue(x, 3, 1).values * 2, [sx.tensor(a, requires_grad=True)])
    gradcheck(lambda x: x.t().median(0).values, [sx.tensor(a, requires_grad=True)])
    assert sx.kthvalue(sx.tensor(2.5), 1).values.item() == 2.5
    with pytest.raises(IndexError, match=r"\[kthvalue\] k=0"):
        sx.kthvalue(sx.ones(3), 0)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "int32", "uint8", "bool"])
@pytest.mark.parametrize("shape", [(0,), (1,), (7,), (640,), (3, 50, 4)], ids=str)
def test_unique_against_numpy(shape, dtype):
    """Sorted distinct values, each element's position among them and the counts, against NumPy; NaNs are
    never equal (each its own element after every number, as in PyTorch)."""
    a = RNG.integers(0, 9, shape).astype(dtype) if dtype != "bool" else RNG.random(shape) < 0.5
    if dtype.startswith("float") and a.size > 3:
        a.flat[[1, a.size - 1]] = np.nan
    vals, inv, counts = sx.unique(sx.tensor(a), return_inverse=True, return_counts=True)
    nums = a[~np.isnan(a)] if dtype.startswith("float") else a.reshape(-1)
    want, want_inv, want_counts = np.unique(nums, return_inverse=True, return_counts=True)
    nans = a.size - nums.size
    np.testing.assert_array_equal(vals.numpy(), np.concatenate([want, np.full(nans, np.nan, want.dtype)]))
    np.testing.assert_array_equal(counts.numpy(), np.concatenate([want_counts, np.ones(nans, np.int64)]))
    assert inv.shape == a.shape and inv.dtype == sx.int64 and vals.dtype == sx.tensor(a).dtype
    flat_inv = inv.numpy().reshape(-1)
    keep = ~np.isnan(a.reshape(-1)) if dtype.startswith("float") else np.ones(a.size, bool)
    np.testing.assert_array_equal(flat_inv[keep], want_inv.reshape(-1))
    assert sorted(flat_inv[~keep].tolist()) == list(range(want.size, want.size + nans))
    np.testing.assert_array_equal(sx.tensor(a).unique().numpy(), vals.numpy())


@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (5, 3), (1, 6), (0, 3)], ids=str)
def test_trace_var_mean_std_mean(shape):
    a = RNG.standard_normal(shape)
    x = sx.tensor(a, requires_grad=True)
    tr = x.trace()
    np.testing.assert_allclose(tr.item(), np.trace(a), rtol=1e-12)
    tr.backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.eye(*shape))
    assert sx.trace(sx.tensor(np.arange(12).reshape(3, 4))).item() == 0 + 5 + 10
    with pytest.raises(ValueError, match="trace"):
        sx.trace(sx.ones(2, 2, 2))
    if a.size > 1:
        v, m = sx.var_mean(x, 1 if shape[1] > 1 else 0)
        ax = 1 if shape[1] > 1 else 0
        np.testing.assert_allclose(v.detach().numpy(), a.var(ax, ddof=1), rtol=1e-12)
        np.testing.assert_allclose(m.detach().numpy(), a.mean(ax), rtol=1e-12)
        s, m = sx.std_mean(x, correction=0, keepdim=True)
        np.testing.assert_allclose(s.detach().numpy(), np.full((1, 1), a.std()), rtol=1e-12)
        np.testing.assert_allclose(m.detach().numpy(), np.full((1, 1), a.mean()), rtol=1e-12)
        v, _ = sx.var_mean(x, None, False)
        np.testing.assert_allclose(v.item(), a.var(), rtol=1e-12)


@pytest.mark.parametrize("n, k", [(0, 1), (7, 3), (5000, 40)])
def test_bincount_weights_and_dtypes(n, k):
    i = RNG.integers(0, k, n)
    w = RNG.standard_normal(n)
    x = sx.tensor(i)
    np.testing.assert_array_equal(sx.bincount(x, minlength=k + 2).numpy(), np.bincount(i, minlength=k + 2))
    for dtype, want in [(sx.float32, sx.float32), (sx.float64, sx.float64), (sx.float16, sx.float64),
                        (sx.int64, sx.float64)]:
        ww = sx.tensor(w).to(dtype)
        got = sx.bincount(x.to(sx.int32), ww, minlength=3)
        assert got.dtype == want
        ref = np.bincount(i, ww.to(sx.float64).numpy(), minlength=3)
        np.testing.assert_allclose(got.numpy(), ref, rtol=1e-5, atol=1e-4)
    with pytest.raises(ValueError, match=r"\[bincount\] expects non-negative values, got -2"):
        sx.bincount(sx.tensor([1, -2]), sx.tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"\[bincount\] weights of shape \(1,\)"):
        sx.bincount(sx.tensor([1, 2]), sx.tensor([1.0]))


@pytest.mark.parity
def test_bincount_dtypes_match_pytorch(torch):
    i = RNG.integers(0, 9, 50)
    for dt in ("float32", "float64", "float16", "int64"):
        w = RNG.standard_normal(50).astype(dt)
        got = sx.bincount(sx.tensor(i), sx.tensor(w))
        want = torch.bincount(torch.tensor(i), torch.tensor(w))
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-3)
