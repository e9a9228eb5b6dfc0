"""In-place shape changes, sum_to_size, the *_scatter family, put, index_reduce, nanmedian,
nanquantile, mode, renorm, matrix_power, the real forms of the complex helpers and Tensor.new:
against NumPy references (loops or NumPy functions), float64 finite differences, in-place identity,
errors, and parity with PyTorch (values, index conventions and gradients)."""

from __future__ import annotations

import collections
import math
import warnings

import numpy as np
import pytest
import sneppx_core as sx
from sneppx_core.testing import gradcheck

RNG = np.random.default_rng(11)
NAN = float("nan")
TOP_LEVEL = ["narrow_copy", "unsafe_chunk", "unsafe_split", "unsafe_split_with_sizes", "select_scatter",
             "slice_scatter", "diagonal_scatter", "put", "index_reduce", "nanmedian", "nanquantile", "mode", "renorm",
             "matrix_power", "conj", "conj_physical", "conj_physical_", "resolve_conj", "resolve_neg", "is_conj",
             "is_neg", "isreal", "angle", "hardshrink", "prelu"]
METHOD_ONLY = ["squeeze_", "unsqueeze_", "transpose_", "swapaxes_", "swapdims_", "sum_to_size", "put_",
               "index_reduce_", "renorm_", "new"]


def _t(a, **kw):
    return sx.tensor(np.asarray(a), **kw)


def test_names_are_installed_with_docstrings():
    for name in TOP_LEVEL + METHOD_ONLY:
        assert getattr(sx.Tensor, name).__doc__, name
    for name in TOP_LEVEL:
        assert name in sx.__all__ and getattr(sx, name).__doc__, name
    for name in METHOD_ONLY:
        assert not hasattr(sx, name), name


# ---- in-place shape changes -------------------------------------------------------------------------

@pytest.mark.parametrize("op, args, ref", [
    ("squeeze_", (), lambda a: np.squeeze(a)),
    ("squeeze_", (1,), lambda a: np.squeeze(a, 1)),
    ("squeeze_", ((1, 3),), lambda a: np.squeeze(a, (1, 3))),
    ("squeeze_", (0,), lambda a: a),
    ("unsqueeze_", (-1,), lambda a: np.expand_dims(a, -1)),
    ("transpose_", (0, 2), lambda a: np.swapaxes(a, 0, 2)),
    ("swapaxes_", (-1, 1), lambda a: np.swapaxes(a, -1, 1)),
    ("swapdims_", (3, 0), lambda a: np.swapaxes(a, 3, 0)),
])
def test_inplace_shape_changes_keep_the_object_and_memory(op, args, ref):
    a = RNG.standard_normal((2, 1, 3, 1))
    base = _t(a)
    x = base[:]  # a view: the in-place change must keep sharing base's memory
    out = getattr(x, op)(*args)
    assert out is x and x.shape == ref(a).shape
    np.testing.assert_array_equal(x.numpy(), ref(a))
    x.mul_(2.0)
    np.testing.assert_array_equal(base.numpy(), a * 2)


def test_inplace_shape_change_moves_the_version_so_saved_tensors_raise():
    w = sx.randn(3, 3, dtype=sx.float64, requires_grad=True)
    x = sx.randn(3, 3, dtype=sx.float64)
    v0 = x._version
    y = (w * x).sum()  # saves x
    x.transpose_(0, 1)
    assert x._version > v0
    with pytest.raises(RuntimeError, match="modified by an in-place|version|in-place"):
        y.backward()


def test_inplace_shape_change_autograd():
    w = sx.randn(3, 3, dtype=sx.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"\[transpose_\] a leaf tensor that requires grad"):
        w.transpose_(0, 1)
    with pytest.raises(RuntimeError, match=r"\[unsqueeze_\] a leaf tensor that requires grad"):
        w.unsqueeze_(0)
    assert w.shape == (3, 3)
    with sx.no_grad():  # allowed, as in PyTorch; the leaf keeps requires_grad
        w.unsqueeze_(0)
    assert w.shape == (1, 3, 3) and w.requires_grad and w.is_leaf
    # A tensor inside a graph keeps its history through the change.
    a = RNG.standard_normal((2, 1, 3))
    seed = RNG.standard_normal((3, 2))

    def f(leaf):
        y = leaf * 3.0
        y.squeeze_(1).transpose_(0, 1)
        return y

    assert gradcheck(f, [_t(a)])
    leaf = _t(a, requires_grad=True)
    y = f(leaf)
    (y * _t(seed)).sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), 3.0 * seed.T[:, None, :])


def test_inplace_shape_change_errors_leave_the_tensor_alone():
    x = sx.zeros(2, 3)
    with pytest.raises(IndexError, match="squeeze"):
        x.squeeze_(4)
    with pytest.raises(IndexError, match="transpose"):
        x.transpose_(0, 5)
    assert x.shape == (2, 3)


# ---- sum_to_size, copies and splits -----------------------------------------------------------------

def _sum_to_size_ref(a, size):
    lead = a.ndim - len(size)
    out = a.sum(tuple(range(lead))) if lead else a
    for i, s in enumerate(size):
        if s == 1 and out.shape[i] != 1:
            out = out.sum(i, keepdims=True)
    return out


@pytest.mark.parametrize("size", [(3, 4), (1, 4), (3, 1), (4,), (1,), (1, 1), (2, 3, 4), (1, 3, 1)])
def test_sum_to_size(size):
    a = RNG.standard_normal((2, 3, 4))
    out = _t(a).sum_to_size(*size)
    assert out.shape == size
    np.testing.assert_allclose(out.numpy(), _sum_to_size_ref(a, size), rtol=1e-12)
    np.testing.assert_allclose(_t(a).sum_to_size(list(size)).numpy(), _sum_to_size_ref(a, size), rtol=1e-12)
    assert gradcheck(lambda x: x.sum_to_size(size), [_t(a)])


def test_sum_to_size_errors():
    x = sx.zeros(2, 3)
    with pytest.raises(ValueError, match=r"\[sum_to_size\] size \(2,\) is not expandable.*\(2, 3\).*float32"):
        x.sum_to_size(2)
    with pytest.raises(ValueError, match="not expandable"):
        x.sum_to_size(1, 2, 3)
    with pytest.raises(TypeError, match="sum_to_size"):
        x.sum_to_size()


def test_narrow_copy_and_unsafe_splits():
    a = RNG.standard_normal((3, 5))
    x = _t(a)
    c = sx.narrow_copy(x, 1, -3, 2)
    np.testing.assert_array_equal(c.numpy(), a[:, 2:4])
    c.fill_(0.0)
    np.testing.assert_array_equal(x.numpy(), a)  # a copy, not a view
    np.testing.assert_array_equal(x.narrow_copy(0, sx.tensor(1), 2).numpy(), a[1:3])
    assert gradcheck(lambda t: t.narrow_copy(1, 1, 3), [x])
    with pytest.raises(IndexError, match="narrow"):
        x.narrow_copy(1, 4, 2)
    cases = [(sx.unsafe_split(x, 2, 1), np.split(a, [2, 4], 1)), (x.unsafe_chunk(3, 1), np.split(a, [2, 4], 1)),
             (x.unsafe_split_with_sizes([1, 4], 1), np.split(a, [1], 1))]
    for parts, ref in cases:
        assert len(parts) == len(ref)
        for p, r in zip(parts, ref):
            np.testing.assert_array_equal(p.numpy(), r)
    with pytest.raises(ValueError, match="split"):
        sx.unsafe_split_with_sizes(x, [1, 1], 1)


# ---- scatters ---------------------------------------------------------------------------------------

def _scatter_ref(a, src, where):
    out = a.copy()
    out[where] = src
    return out


SCATTERS = [  # name, function of (lib, input, src), NumPy reference of (input, src), input shape, src shape
    ("select", lambda L, x, s: L.select_scatter(x, s, 1, -2), lambda a, s: _scatter_ref(a, s, (slice(None), 2)),
     (3, 4, 5), (3, 5)),
    ("slice_step", lambda L, x, s: L.slice_scatter(x, s, 1, 1, None, 2),
     lambda a, s: _scatter_ref(a, s, (slice(None), slice(1, None, 2))), (3, 4), (3, 2)),
    ("slice_neg", lambda L, x, s: L.slice_scatter(x, s, 0, -2), lambda a, s: _scatter_ref(a, s, slice(-2, None)),
     (3, 4), (2, 4)),
    ("slice_clamped", lambda L, x, s: x.slice_scatter(s, dim=1, start=-9, end=9), lambda a, s: s, (3, 4), (3, 4)),
    ("diagonal", lambda L, x, s: L.diagonal_scatter(x, s, 1),
     lambda a, s: _scatter_ref(a, s, (np.arange(3), np.arange(1, 4))), (3, 4), (3,)),
    ("diagonal_swapped", lambda L, x, s: x.diagonal_scatter(s, -1, 1, 0),
     lambda a, s: _scatter_ref(a, s, (np.arange(3), np.arange(1, 4))), (3, 4), (3,)),
    ("diagonal_low", lambda L, x, s: x.diagonal_scatter(s, -2),
     lambda a, s: _scatter_ref(a, s, ([2], [0])), (3, 4), (1,)),
    ("diagonal_3d", lambda L, x, s: L.diagonal_scatter(x, s, 0, 0, 2),
     lambda a, s: _scatter_ref(a, s.T, (np.arange(2), slice(None), np.arange(2))), (2, 3, 4), (3, 2)),
]


@pytest.mark.parametrize("name, fn, ref, shape, src_shape", SCATTERS, ids=[s[0] for s in SCATTERS])
def test_scatters(name, fn, ref, shape, src_shape):
    a, s = RNG.standard_normal(shape), RNG.standard_normal(src_shape)
    np.testing.assert_array_equal(fn(sx, _t(a), _t(s)).numpy(), ref(a, s))
    np.testing.assert_array_equal(fn(sx, _t(a.T).T, _t(s)).numpy(), ref(a, s))  # a non-contiguous input
    assert gradcheck(lambda x, y: fn(sx, x, y), [_t(a), _t(s)])
    only_src = _t(s, requires_grad=True)  # the input takes no part in autograd
    fn(sx, _t(a), only_src).sum().backward()
    np.testing.assert_array_equal(only_src.grad.numpy(), np.ones(src_shape))


def test_scatter_errors_name_op_shapes_and_dtypes():
    x = sx.zeros(2, 3)
    with pytest.raises(ValueError, match=r"\[select_scatter\] src of shape \(2,\) and dtype float32.*\(3,\).*\(2, 3\)"):
        sx.select_scatter(x, sx.ones(2), 0, 0)
    with pytest.raises(IndexError, match=r"\[select_scatter\] index 2 is out of range"):
        sx.select_scatter(x, sx.ones(3), 0, 2)
    with pytest.raises(ValueError, match=r"\[slice_scatter\] step must be positive"):
        sx.slice_scatter(x, sx.ones(2, 3), 1, step=0)
    with pytest.raises(ValueError, match=r"\[slice_scatter\] src of shape \(2, 2\)"):
        sx.slice_scatter(x, sx.ones(2, 2), 1, -5)
    with pytest.raises(ValueError, match=r"\[diagonal_scatter\] src of shape \(3,\).*\(2,\)"):
        sx.diagonal_scatter(x, sx.ones(3))
    with pytest.raises(ValueError, match=r"\[diagonal_scatter\] needs an input with at least 2 dims"):
        sx.diagonal_scatter(sx.ones(3), sx.ones(3))


# ---- put, index_reduce ------------------------------------------------------------------------------

def test_put_against_numpy():
    a = RNG.standard_normal((3, 4))
    idx = np.array([[5, -1], [0, 7]])
    src = RNG.standard_normal((2, 2))
    ref = a.copy()
    np.put(ref, idx, src)
    np.testing.assert_array_equal(_t(a).put(_t(idx), _t(src)).numpy(), ref)
    ref = a.copy()
    np.add.at(ref.reshape(-1), np.array([1, 1, 11, -12]), np.array([1.0, 2.0, 3.0, 4.0]))
    got = sx.put(_t(a), sx.tensor([1, 1, 11, -12]), sx.tensor([1.0, 2.0, 3.0, 4.0], dtype=sx.float64), accumulate=True)
    np.testing.assert_array_equal(got.numpy(), ref)
    x = _t(a.T)  # non-contiguous: positions in row-major order of its own shape
    ref = a.T.copy()
    np.put(ref, [2, 9], [7.0, 8.0])
    y = x.put_(sx.tensor([2, 9]), sx.tensor([7.0, 8.0], dtype=sx.float64))
    assert y is x
    np.testing.assert_array_equal(x.numpy(), ref)
    assert gradcheck(lambda t, s: t.put(sx.tensor([0, 5, 5]), s, accumulate=True), [_t(a), _t([1.0, 2.0, 3.0])])
    assert gradcheck(lambda t, s: sx.put(t, sx.tensor([3, 1]), s), [_t(a), _t([1.0, 2.0])])


def test_put_errors():
    x = sx.zeros(2, 3)
    with pytest.raises(IndexError, match=r"\[put\] index values 0..6 are out of range.*\(2, 3\).*6 elements"):
        x.put(sx.tensor([0, 6]), sx.ones(2))
    with pytest.raises(ValueError, match=r"\[put\].*source shape \(2,\) and dtype int64"):
        x.put(sx.tensor([0, 1]), sx.tensor([1, 2]))
    with pytest.raises(ValueError, match=r"\[put\].*index shape \(2,\) and dtype float32"):
        x.put(sx.tensor([0.0, 1.0]), sx.ones(2))
    with pytest.raises(ValueError, match=r"\[put\].*one element per index"):
        x.put(sx.tensor([0, 1]), sx.ones(3))
    w = sx.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        w.put_(sx.tensor([0]), sx.ones(1))


def _index_reduce_ref(a, dim, index, src, reduce, include_self):
    out = np.moveaxis(a.copy(), dim, 0)
    s = np.moveaxis(src, dim, 0)
    groups = collections.defaultdict(list)
    for i, j in enumerate(index):
        groups[j].append(s[i])
    fn = {"prod": np.prod, "mean": np.mean, "amax": np.max, "amin": np.min}[reduce]
    for j, rows in groups.items():
        vals = ([out[j]] if include_self else []) + rows
        r = fn(np.stack(vals), axis=0)
        if reduce == "mean" and out.dtype.kind == "i":
            r = np.floor_divide(np.sum(np.stack(vals), axis=0), len(vals))
        out[j] = r
    return np.moveaxis(out, 0, dim)


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_reduce_against_loops(reduce, include_self, dim):
    a = RNG.uniform(0.5, 2.0, (4, 3, 5))
    n = a.shape[dim]
    index = np.array([n - 1, 0, n - 1, 1, n - 1])
    shape = list(a.shape)
    shape[dim] = len(index)
    src = RNG.uniform(0.5, 2.0, shape)
    got = _t(a).index_reduce(dim, _t(index), _t(src), reduce, include_self=include_self)
    np.testing.assert_allclose(got.numpy(), _index_reduce_ref(a, dim, index, src, reduce, include_self), rtol=1e-12)
    assert gradcheck(lambda x, s: sx.index_reduce(x, dim, _t(index), s, reduce, include_self=include_self),
                     [_t(a), _t(src)])


def test_index_reduce_integers_inplace_and_errors():
    a = np.array([[-8, 3], [5, 6]])
    src = np.array([[-3, 2], [2, 2], [7, 7]])
    for include_self in (True, False):
        got = _t(a).index_reduce(0, sx.tensor([0, 0, 1]), _t(src), "mean", include_self=include_self)
        assert got.dtype == sx.int64
        np.testing.assert_array_equal(got.numpy(), _index_reduce_ref(a, 0, [0, 0, 1], src, "mean", include_self))
    x = sx.ones(2, 3)
    assert x.index_reduce_(1, sx.tensor([2]), sx.full((2, 1), 4.0), "prod") is x
    assert x.tolist() == [[1.0, 1.0, 4.0], [1.0, 1.0, 4.0]]
    with pytest.raises(ValueError, match=r"\[index_reduce\] reduce must be prod, mean, amax or amin, got 'sum'"):
        x.index_reduce(0, sx.tensor([0]), sx.ones(1, 3), "sum")
    with pytest.raises(IndexError, match=r"\[index_reduce\] index values 0..5 are out of range for dim 0 of size 2"):
        x.index_reduce(0, sx.tensor([0, 5]), sx.ones(2, 3), "amax")
    with pytest.raises(ValueError, match=r"\[index_reduce\] source of shape \(2, 3\) must have shape \(1, 3\)"):
        x.index_reduce(0, sx.tensor([0]), sx.ones(2, 3), "amax")
    with pytest.raises(TypeError, match=r"\[index_reduce\] source dtype.*float64"):
        x.index_reduce(0, sx.tensor([0]), sx.ones(1, 3, dtype=sx.float64), "amax")


# ---- nanmedian, nanquantile, mode -------------------------------------------------------------------

def _with_nans(shape, frac=0.3, ties=True):
    a = RNG.integers(0, 4, shape).astype(np.float64) if ties else RNG.standard_normal(shape)
    a[RNG.random(shape) < frac] = np.nan
    return a


def _nanmedian_ref(row):
    """Lower median of the non-NaN values and the position of that element in a stable sort."""
    order = np.argsort(row, kind="stable")  # NaN last
    m = int(np.sum(~np.isnan(row)))
    i = order[max((m - 1) // 2, 0)]
    return row[i], i


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_nanmedian_against_loops(dim):
    a = _with_nans((5, 7))
    a[1] = np.nan  # an all-NaN slice
    values, indices = sx.nanmedian(_t(a), dim)
    moved = np.moveaxis(a, dim, -1)
    ref = [_nanmedian_ref(r) for r in moved]
    np.testing.assert_array_equal(values.numpy(), np.array([v for v, _ in ref]))
    np.testing.assert_array_equal(indices.numpy(), np.array([i for _, i in ref]))
    kv, ki = _t(a).nanmedian(dim, keepdim=True)
    assert kv.shape == tuple(np.expand_dims(values.numpy(), dim).shape) and ki.dtype == sx.int64
    odd = moved[np.sum(~np.isnan(moved), -1) % 2 == 1]  # where the lower median is NumPy's median
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal([_nanmedian_ref(r)[0] for r in odd], np.nanmedian(odd, -1))


def test_nanmedian_all_elements_and_gradient():
    a = _with_nans((4, 5), ties=False)
    assert sx.nanmedian(_t(a)).item() == _nanmedian_ref(a.reshape(-1))[0]
    assert math.isnan(sx.tensor([NAN, NAN]).nanmedian().item())
    assert sx.tensor([3, 1, 2]).nanmedian().item() == 2
    b = RNG.standard_normal((4, 5))
    b[0, 1] = b[2, 3] = np.nan
    assert gradcheck(lambda x: x.nanmedian(1).values, [_t(b)])
    assert gradcheck(lambda x: sx.nanmedian(x), [_t(b)])
    with pytest.raises(IndexError, match=r"\[nanmedian\] cannot reduce over dim 1 of size 0"):
        sx.zeros(2, 0).nanmedian(1)


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_nanquantile_against_numpy(interpolation):
    a = _with_nans((4, 9), ties=False)
    q = [0.0, 0.3, 0.5, 0.75, 1.0]
    got = sx.nanquantile(_t(a), _t(q), dim=1, interpolation=interpolation)
    with warnings.catch_warnings():  # an all-NaN row warns in NumPy
        warnings.simplefilter("ignore", RuntimeWarning)
        ref = np.nanquantile(a, q, axis=1, method=interpolation)
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-12)
    one = _t(a).nanquantile(0.4, dim=0, keepdim=True, interpolation=interpolation)
    np.testing.assert_allclose(one.numpy(), np.nanquantile(a, 0.4, axis=0, keepdims=True, method=interpolation),
                               rtol=1e-12)
    flat = sx.nanquantile(_t(a), 0.6, interpolation=interpolation)
    assert flat.shape == () and flat.item() == pytest.approx(np.nanquantile(a, 0.6, method=interpolation), rel=1e-12)


def test_nanquantile_nan_slices_shapes_gradient_and_errors():
    a = np.array([[NAN, NAN, NAN], [1.0, NAN, 3.0]])
    got = sx.nanquantile(_t(a), 0.5, dim=1)
    assert math.isnan(got[0].item()) and got[1].item() == 2.0
    assert sx.nanquantile(_t(a), _t([0.5]), keepdim=True).shape == (1, 1, 1)
    b = RNG.standard_normal((3, 6))
    b[1, 2] = np.nan
    assert gradcheck(lambda x: sx.nanquantile(x, sx.tensor([0.2, 0.9], dtype=sx.float64), dim=1), [_t(b)])
    with pytest.raises(ValueError, match=r"\[nanquantile\] q must be"):
        sx.nanquantile(_t(b), 1.5)
    with pytest.raises(TypeError, match=r"\[nanquantile\] expects a floating input, got shape \(2,\) and dtype int64"):
        sx.nanquantile(sx.tensor([1, 2]), 0.5)
    with pytest.raises(ValueError, match=r"\[nanquantile\] interpolation"):
        sx.nanquantile(_t(b), 0.5, interpolation="cubic")


def _mode_ref(row):
    counts = collections.Counter(row.tolist())
    best = max(counts.values())
    value = min(v for v, c in counts.items() if c == best)
    return value, max(i for i, v in enumerate(row.tolist()) if v == value)


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.float32])
@pytest.mark.parametrize("dim", [0, -1])
def test_mode_against_loops(dtype, dim):
    a = RNG.integers(-2, 3, (6, 40)).astype(dtype)
    values, indices = sx.mode(_t(a), dim)
    moved = np.moveaxis(a, dim, -1)
    ref = [_mode_ref(r) for r in moved]
    np.testing.assert_array_equal(values.numpy(), np.array([v for v, _ in ref], dtype=dtype))
    np.testing.assert_array_equal(indices.numpy(), np.array([i for _, i in ref]))
    assert _t(a).mode(dim, keepdim=True).values.shape == np.expand_dims(values.numpy(), dim).shape


def test_mode_special_cases_and_gradient():
    assert sx.tensor([NAN, NAN, 1.0]).mode().values.item() == 1.0  # each NaN is a distinct value
    assert math.isnan(sx.tensor([NAN, NAN]).mode().values.item())
    v, i = sx.tensor(5.0).mode()
    assert v.item() == 5.0 and i.item() == 0 and v.shape == ()
    assert sx.tensor([1.0, 2.0], dtype=sx.bfloat16).mode().values.dtype == sx.bfloat16
    b = np.array([[1.0, 2.0, 2.5, 0.5], [3.0, 3.5, 1.0, 1.5]])  # distinct values: a repeated one has no derivative
    assert gradcheck(lambda x: x.mode(1).values, [_t(b)])
    with pytest.raises(IndexError, match=r"\[mode\] cannot reduce over dim 0 of size 0"):
        sx.zeros(0).mode()


# ---- renorm, matrix_power ---------------------------------------------------------------------------

def _renorm_ref(a, p, dim, maxnorm):
    out = np.moveaxis(a.copy(), dim, 0)
    for i in range(out.shape[0]):
        n = np.linalg.norm(out[i].reshape(-1), ord=p)
        if n > maxnorm:
            out[i] *= maxnorm / (n + 1e-7)
    return np.moveaxis(out, 0, dim)


@pytest.mark.parametrize("p", [1, 2, 3.5, float("inf")])
@pytest.mark.parametrize("dim", [0, 2])
def test_renorm_against_loops(p, dim):
    a = RNG.standard_normal((3, 4, 2))
    a[(slice(None),) * dim + (0,)] = 0.0  # a zero slice: kept, with a finite gradient
    got = sx.renorm(_t(a), p, dim, 1.5)
    np.testing.assert_allclose(got.numpy(), _renorm_ref(a, p, dim, 1.5), rtol=1e-12)
    if p != float("inf"):
        assert gradcheck(lambda x: x.renorm(p, dim, 1.5), [_t(a)])
    x = _t(a)
    assert x.renorm_(p, dim, 1.5) is x
    np.testing.assert_allclose(x.numpy(), _renorm_ref(a, p, dim, 1.5), rtol=1e-12)


def test_renorm_errors():
    with pytest.raises(ValueError, match=r"\[renorm\] needs an input with at least 2 dims, got shape \(3,\)"):
        sx.renorm(sx.ones(3), 2, 0, 1)
    with pytest.raises(ValueError, match=r"\[renorm\] needs p > 0"):
        sx.renorm(sx.ones(2, 3), 0, 0, 1)
    with pytest.raises(ValueError, match=r"maxnorm >= 0"):
        sx.renorm(sx.ones(2, 3), 2, 0, -1)
    with pytest.raises(TypeError, match=r"\[renorm\] expects a floating input, got shape \(2, 3\) and dtype int64"):
        sx.renorm(sx.ones(2, 3, dtype=sx.int64), 2, 0, 1)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 8, -1, -3])
def test_matrix_power_against_numpy(n):
    a = np.eye(3) + RNG.standard_normal((2, 3, 3)) * 0.3
    got = sx.matrix_power(_t(a), n)
    np.testing.assert_allclose(got.numpy(), np.linalg.matrix_power(a, n), rtol=1e-9, atol=1e-12)
    assert got.shape == a.shape
    if n != 0:
        assert gradcheck(lambda x: x.matrix_power(n), [_t(a)])
    leaf = _t(a, requires_grad=True)
    leaf.matrix_power(0).sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), np.zeros_like(a))


def test_matrix_power_integers_and_errors():
    m = np.array([[1, 1], [1, 0]])
    assert sx.matrix_power(_t(m), 10).tolist() == np.linalg.matrix_power(m, 10).tolist()
    x = _t(m)
    assert x.matrix_power(1) is not x and sx.matrix_power(x, 0).dtype == sx.int64
    with pytest.raises(TypeError, match=r"\[matrix_power\] a negative power needs a floating input"):
        sx.matrix_power(x, -1)
    with pytest.raises(ValueError, match=r"\[matrix_power\] expects a square matrix.*\(2, 3\) and dtype float32"):
        sx.matrix_power(sx.ones(2, 3), 2)
    with pytest.raises(TypeError, match=r"\[matrix_power\] n must be an int, got float"):
        sx.matrix_power(sx.ones(2, 2), 1.5)


# ---- complex helpers on real tensors, activations, new ----------------------------------------------

def test_real_forms_of_the_complex_helpers():
    x = sx.tensor([-1.5, 0.0, -0.0, 2.0, NAN, -float("inf"), float("inf")])
    for fn in (sx.conj, sx.conj_physical, sx.resolve_conj, sx.resolve_neg, sx.conj_physical_):
        assert fn(x) is x
    assert x.conj() is x and x.conj_physical_() is x and not x.is_conj() and not sx.is_neg(x)
    assert sx.isreal(x).dtype == sx.bool_ and sx.isreal(x).all().item() and sx.isreal(x).shape == (7,)
    a = x.numpy()
    ref = np.where(np.isnan(a), np.nan, np.where(a < 0, np.pi, 0.0))  # -0.0 gives 0, as PyTorch (NumPy: pi)
    np.testing.assert_allclose(sx.angle(x).numpy(), ref.astype(np.float32))
    np.testing.assert_allclose(sx.tensor([-2, 3]).angle().numpy(), np.angle([-2.0, 3.0]).astype(np.float32))
    assert sx.tensor([-2, 3]).angle().dtype == sx.float32
    leaf = sx.tensor([-1.0, 2.0, float("inf")], requires_grad=True)
    leaf.angle().sum().backward()
    assert leaf.grad.tolist() == [0.0, 0.0, 0.0]


def test_hardshrink_and_prelu_methods():
    a = RNG.standard_normal((2, 3, 4))
    np.testing.assert_array_equal(_t(a).hardshrink(0.7).numpy(), np.where(np.abs(a) > 0.7, a, 0.0))
    np.testing.assert_array_equal(sx.hardshrink(_t(a)).numpy(), np.where(np.abs(a) > 0.5, a, 0.0))
    w = np.array([0.1, 0.2, 0.3])
    np.testing.assert_allclose(_t(a).prelu(_t(w)).numpy(), np.where(a > 0, a, w[None, :, None] * a), rtol=1e-12)
    assert gradcheck(lambda x, y: sx.prelu(x, y), [_t(a), _t(w)])


def test_legacy_new():
    x = sx.ones(2, dtype=sx.float64)
    assert x.new().shape == (0,) and x.new().dtype == sx.float64
    assert x.new(2, 3).shape == (2, 3) and x.new((4, 1)).shape == (4, 1) and x.new(x.shape).shape == (2,)
    d = x.new([[1, 2], [3, 4]])
    assert d.dtype == sx.float64 and d.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert x.new(np.array([5, 6])).tolist() == [5.0, 6.0]
    other = sx.zeros(3, dtype=sx.float64)
    alias = x.new(other)
    alias.fill_(7.0)
    assert other.tolist() == [7.0, 7.0, 7.0]
    with pytest.raises(TypeError, match=r"\[new\] expected a tensor of dtype float64, got shape \(2,\) and dtype int"):
        x.new(sx.tensor([1, 2]))
    with pytest.raises(TypeError, match=r"\[new\] expected sizes"):
        x.new(2.5)
    with pytest.raises(TypeError, match="dtype"):
        x.new(2, dtype=sx.float32)


# ---- parity with PyTorch ----------------------------------------------------------------------------

def _pair(torch, a, grad=True):
    return sx.tensor(a, requires_grad=grad), torch.tensor(a, requires_grad=grad)


def _same(got, want, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=rtol, atol=atol)


PARITY = {
    "sum_to_size": (lambda L, x: x.sum_to_size(1, 4), (3, 4)),
    "narrow_copy": (lambda L, x: L.narrow_copy(x, 1, 1, 2), (3, 4)),
    "unsafe_split": (lambda L, x: L.cat([p * (i + 1) for i, p in enumerate(L.unsafe_split(x, 3, 1))], 1), (2, 7)),
    "select_scatter": (lambda L, x: L.select_scatter(x, x[:, 0] * 2, 1, 2), (3, 4)),
    "slice_scatter": (lambda L, x: L.slice_scatter(x, x[:, :2] ** 2, 1, 0, 4, 2), (3, 4)),
    "diagonal_scatter": (lambda L, x: L.diagonal_scatter(x, x[0, :3] * 3, -1), (4, 3)),
    "put": (lambda L, x: L.put(x, L.tensor([0, 5, 5, -1]), x[0] * 2, accumulate=True), (3, 4)),
    "index_reduce_prod": (lambda L, x: x.index_reduce(0, L.tensor([2, 0, 2]), x * 2, "prod"), (3, 4)),
    "index_reduce_mean": (lambda L, x: x.index_reduce(1, L.tensor([1, 1, 0, 3]), x.exp(), "mean",
                                                      include_self=False), (3, 4)),
    "index_reduce_amax": (lambda L, x: x.index_reduce(0, L.tensor([1, 1, 0]), x * 1.5 - 0.2, "amax"), (3, 4)),
    "index_reduce_amin": (lambda L, x: L.index_reduce(x, 1, L.tensor([3, 0, 0, 3]), x.flip(1) * 1.3 + 0.1, "amin",
                                                      include_self=False), (3, 4)),
    "nanmedian": (lambda L, x: x.nanmedian(1).values + L.nanmedian(x), (3, 6)),
    "nanquantile": (lambda L, x: L.nanquantile(x, L.tensor([0.1, 0.5, 0.9], dtype=L.float64), dim=0), (5, 3)),
    "nanquantile_nearest": (lambda L, x: x.nanquantile(0.35, dim=1, interpolation="nearest"), (3, 6)),
    "mode": (lambda L, x: L.mode((x * 2).round(), 1).values, (3, 6)),
    "renorm": (lambda L, x: L.renorm(x, 2, 1, 1.0) + x.renorm(1.5, 0, 0.8), (3, 4)),
    "matrix_power": (lambda L, x: L.matrix_power(x + L.eye(3, dtype=L.float64), 5)
                     + x.matrix_power(3) + (x + 2 * L.eye(3, dtype=L.float64)).matrix_power(-2), (3, 3)),
    "angle_conj": (lambda L, x: L.angle(x) + x.conj() * 2 + L.conj_physical(x) + x.resolve_conj() + L.resolve_neg(x),
                   (3, 4)),
    "hardshrink_prelu": (lambda L, x: x.hardshrink(0.3) + L.prelu(x, L.tensor([0.2, 0.4, 0.1], dtype=L.float64)),
                         (2, 3, 4)),
}


@pytest.mark.parity
@pytest.mark.parametrize("name", sorted(PARITY))
def test_values_and_gradients_match_torch(name):
    torch = pytest.importorskip("torch")
    fn, shape = PARITY[name]
    a = RNG.standard_normal(shape)
    if name.startswith("nan"):
        a[0, 1] = a[2, 2] = np.nan
    x, tx = _pair(torch, a)
    out, tout = fn(sx, x), fn(torch, tx)
    _same(out, tout)
    w = RNG.standard_normal(tuple(tout.shape))
    (out * sx.tensor(w)).nansum().backward() if name.startswith("nan") else (out * sx.tensor(w)).sum().backward()
    (tout * torch.tensor(w)).nansum().backward()
    _same(x.grad, tx.grad, rtol=1e-8, atol=1e-10)


@pytest.mark.parity
def test_index_conventions_match_torch():
    torch = pytest.importorskip("torch")
    for n in (1, 2, 5, 16, 33, 200):
        a = _with_nans((8, n), frac=0.25)  # ties and NaNs
        v, i = sx.nanmedian(_t(a), 1)
        tv, ti = torch.nanmedian(torch.tensor(a), 1)
        np.testing.assert_array_equal(v.numpy(), tv.numpy())
        np.testing.assert_array_equal(i.numpy(), ti.numpy())
        b = RNG.integers(0, 4, (8, n)).astype(np.float64)
        v, i = _t(b).mode(1)
        tv, ti = torch.tensor(b).mode(1)
        np.testing.assert_array_equal(v.numpy(), tv.numpy())
        if n <= 16:  # the last occurrence, as PyTorch's CPU mode up to 16 elements
            np.testing.assert_array_equal(i.numpy(), ti.numpy())
        np.testing.assert_array_equal(np.take_along_axis(b, i.numpy()[:, None], 1)[:, 0], v.numpy())
    a = _with_nans((3, 5, 4))
    for q, interp in [(0.5, "linear"), (0.3, "lower"), (0.7, "higher"), (0.5, "midpoint"), (0.5, "nearest")]:
        got = sx.nanquantile(_t(a), q, dim=1, keepdim=True, interpolation=interp)
        want = torch.nanquantile(torch.tensor(a), q, dim=1, keepdim=True, interpolation=interp)
        _same(got, want)
    ints = RNG.integers(-9, 9, (3, 4))
    src = RNG.integers(-9, 9, (3, 4))
    for inc in (True, False):
        got = _t(ints).index_reduce(0, sx.tensor([0, 0, 2]), _t(src), "mean", include_self=inc)
        want = torch.tensor(ints).index_reduce(0, torch.tensor([0, 0, 2]), torch.tensor(src), "mean", include_self=inc)
        np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parity
def test_inplace_shape_changes_match_torch():
    torch = pytest.importorskip("torch")
    a = RNG.standard_normal((2, 1, 3))
    seed = RNG.standard_normal((3, 1, 2))
    outs = []
    for L in (sx, torch):
        leaf = L.tensor(a, requires_grad=True)
        y = leaf * 2.0
        assert y.squeeze_(1) is y and y.unsqueeze_(0) is y
        y.transpose_(0, 2).swapaxes_(1, 2).swapdims_(0, 1)
        (y * L.tensor(seed.transpose(1, 0, 2).copy())).sum().backward()
        outs.append((tuple(y.shape), y.detach().numpy().copy(), leaf.grad.numpy().copy()))
    assert outs[0][0] == outs[1][0]
    np.testing.assert_array_equal(outs[0][1], outs[1][1])
    np.testing.assert_array_equal(outs[0][2], outs[1][2])
    t = torch.tensor(a)
    assert tuple(t.new(t.shape).shape) == sx.tensor(a).new(sx.tensor(a).shape).shape
    assert tuple(torch.ones(2).new([1, 2]).tolist()) == tuple(sx.ones(2).new([1, 2]).tolist())
