"""Kernel paths of reductions and indexing against NumPy: reductions read in place from strided
inputs (several or non-last dims, transposed and sliced inputs, wider result dtypes), long rows
reduced in segments, and the indexing ops that run in parallel over lines along one dim (gather,
scatter, scatter_add, index_select, index_add) or select by a boolean mask."""

from __future__ import annotations

import numpy as np
import pytest
import sneppx_core as sx

RNG = np.random.default_rng(17)


def _layouts(a):
    """The same values as a contiguous, a transposed and a sliced (stepped) tensor."""
    t = sx.from_numpy(np.ascontiguousarray(np.moveaxis(a, 0, -1))).movedim(-1, 0)
    big = np.zeros((a.shape[0] * 2,) + a.shape[1:], a.dtype)
    big[::2] = a
    return {"contiguous": sx.from_numpy(a.copy()), "transposed": t, "sliced": sx.from_numpy(big)[::2]}


def _check(got, want, dtype, scale=None):
    """|got - want| <= tol * (|want| + scale), scale being the sum of the magnitudes that went into
    each result (sums that cancel are only as exact as their terms are large)."""
    tol = {np.float16: 2e-3, np.float32: 2e-6, np.float64: 1e-12}.get(dtype, 0)
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    bound = tol * (np.abs(want) + (0 if scale is None else scale))
    assert got.shape == want.shape
    assert np.all((np.abs(got - want) <= bound) | (np.isnan(got) & np.isnan(want))), np.max(np.abs(got - want) - bound)


@pytest.mark.parametrize("shape,dims", [((13, 37, 129), (0, 2)), ((13, 37, 129), (0, -1)), ((5, 6, 7, 9), (1, 3)),
                                        ((5, 6, 7, 9), (0, 2)), ((31, 1, 40), (0,)), ((40, 33), (0,)),
                                        ((3, 300, 4), (-3, -1)), ((2, 3, 4, 5), (0, 1, 3))], ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.float16])
def test_strided_reductions(threads, shape, dims, layout, dtype):
    a = (RNG.standard_normal(shape) * 3).astype(dtype)
    x = _layouts(a)[layout]
    ax = tuple(d % len(shape) for d in dims)
    ref = a.astype(np.float64)
    for keep in (False, True):
        mag = np.abs(ref).sum(ax, keepdims=keep)
        _check(x.sum(dim=dims, keepdim=keep).numpy(), ref.sum(ax, keepdims=keep), dtype, mag)
        _check(x.amax(dim=dims, keepdim=keep).numpy(), ref.max(ax, keepdims=keep), dtype)
        _check(x.amin(dim=dims, keepdim=keep).numpy(), ref.min(ax, keepdims=keep), dtype)
        if np.issubdtype(dtype, np.floating):
            _check(x.mean(dim=dims, keepdim=keep).numpy(), ref.mean(ax, keepdims=keep), dtype, mag / (ref.size / mag.size))
            _check(x.norm(dim=dims, keepdim=keep).numpy(), np.sqrt((ref * ref).sum(ax, keepdims=keep)), dtype)
    assert x.sum(dim=dims).dtype == (x.dtype if np.issubdtype(dtype, np.floating) else sx.int64)


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.bool_, np.uint8])
def test_sum_into_a_wider_dtype(threads, layout, dtype):
    if np.issubdtype(dtype, np.floating):
        a = (RNG.standard_normal((70, 45, 3)) * 100).astype(dtype)
    else:
        a = RNG.integers(0 if dtype in (np.uint8, np.bool_) else -1000, 2 if dtype == np.bool_ else 200, (70, 45, 3)).astype(dtype)
    x = _layouts(a)[layout]
    ref = a.astype(np.float64)
    for d in (0, 1, 2, (0, 2), None):
        got = sx.sum(x, dim=d, dtype=sx.float64)
        assert got.dtype == sx.float64
        np.testing.assert_allclose(got.numpy(), ref.sum(d), rtol=1e-13, atol=1e-9)
    if not np.issubdtype(dtype, np.floating):
        got = x.sum(dim=(0, 2))
        assert got.dtype == sx.int64
        np.testing.assert_array_equal(got.numpy(), a.astype(np.int64).sum((0, 2)))
    got = x.mean(dim=1, dtype=sx.float64) if np.issubdtype(dtype, np.floating) else None
    if got is not None:
        np.testing.assert_allclose(got.numpy(), ref.mean(1), rtol=1e-13, atol=1e-9)


@pytest.mark.parametrize("shape", [(0,), (7,), (8,), (2039,), (3, 70001), (1, 300000), (222, 296), (4, 0), (5, 3, 17)])
def test_bool_sums_count_in_place(threads, shape):
    """Sums of a contiguous bool tensor over its trailing dims count the true bytes without widening
    them (eight at a time, rows longer than one block split into blocks): all, the last dim and the
    last two, into int64 and into a float dtype (norm(p=0)), count_nonzero, and bytes other than 0 and 1
    read as true; against NumPy."""
    rng = np.random.default_rng(sum(shape) + len(shape))
    a = rng.standard_normal(shape).astype(np.float32)
    a[a < 0.4] = 0
    nz = a != 0
    b = sx.tensor(a) != 0
    assert b.sum().dtype == sx.int64 and b.sum().item() == nz.sum()
    assert sx.count_nonzero(sx.tensor(a)).item() == np.count_nonzero(a)
    assert sx.tensor(a).norm(0).item() == np.count_nonzero(a) and sx.tensor(a).norm(0).dtype == sx.float32
    if len(shape) >= 1:
        np.testing.assert_array_equal(b.sum(-1).numpy(), nz.sum(-1))
        np.testing.assert_array_equal(b.sum(-1, dtype=sx.float32).numpy(), nz.sum(-1).astype(np.float32))
    if len(shape) >= 2:
        np.testing.assert_array_equal(b.sum((-2, -1)).numpy(), nz.sum((-2, -1)))
    raw = rng.integers(0, 4, size=int(np.prod(shape)), dtype=np.uint8)  # bool bytes of 2 and 3 count as true
    np.testing.assert_array_equal(sx.from_numpy(raw.view(np.bool_).reshape(shape)).sum().item(), np.count_nonzero(raw))


def test_any_all_of_bool_rows_count_in_place():
    """any and all (and amax, amin of bool) over trailing dims count each row's true bytes: one true
    or one false byte anywhere in a long row (first, last, mid-block) decides it; against NumPy."""
    rng = np.random.default_rng(7)
    for shape in [(3, 4), (5, 1000), (2, 70000), (200001,), (4, 3, 333)]:
        for fill, odd in ((False, True), (True, False)):
            a = np.full(shape, fill)
            flat = a.reshape(-1)
            rows = flat.reshape(-1, shape[-1])
            for r in range(rows.shape[0]):  # one odd value per row, at a different place in each
                rows[r, [0, shape[-1] - 1, rng.integers(shape[-1])][r % 3]] = odd
            b = sx.from_numpy(a)
            assert bool(b.any()) == a.any() and bool(b.all()) == a.all()
            np.testing.assert_array_equal(b.any(-1).numpy(), a.any(-1))
            np.testing.assert_array_equal(b.all(-1, keepdim=True).numpy(), a.all(-1, keepdims=True))
            np.testing.assert_array_equal(b.amax(-1).numpy(), a.max(-1))
            np.testing.assert_array_equal(b.amin(-1).numpy(), a.min(-1))
            if len(shape) >= 2:
                np.testing.assert_array_equal(b.all((-2, -1)).numpy(), a.all((-2, -1)))
    x = sx.tensor(np.array([[1.0, 0.0], [2.0, 3.0]], np.float32))  # floats go through the bool path too
    assert x.all(1).numpy().tolist() == [False, True] and x.any().item() is True


def at_thread_counts(fn, counts=(1, 2, 3)) -> list:
    """``fn()`` run on the pool at each thread count of ``counts`` (the count restored afterwards)."""
    n0 = sx.get_num_threads()
    try:
        out = []
        for t in counts:
            sx.set_num_threads(t)
            out.append(fn())
        return out
    finally:
        sx.set_num_threads(n0)


@pytest.mark.parametrize("n", [32769, 60000, 65712, 131072, 131073, 300001])
def test_long_row_reductions_split_by_shape_not_threads(n):
    """A few rows of over 32K elements reduce in two halves (up to 128K) or 64K segments, in parallel:
    every thread count gives the same bits, close to the float64 result; var without autograd (the
    squares summed as read) equals var with it."""
    rng = np.random.default_rng(n)
    a = (rng.standard_normal((2, n)) + 3).astype(np.float32)
    x = sx.from_numpy(a)
    got = at_thread_counts(lambda: [r.numpy() for r in (x.sum(1), x.mean(1), x.amax(1), x.norm(dim=1), x[0].sum(),
                                                        x.var(1))])
    for g in got[1:]:
        for u, v in zip(got[0], g):
            np.testing.assert_array_equal(u, v)
    ref = a.astype(np.float64)
    s, m, mx, nrm, s0, var = got[0]
    np.testing.assert_allclose(s, ref.sum(1), rtol=1e-6)
    np.testing.assert_allclose(m, ref.mean(1), rtol=1e-6)
    np.testing.assert_array_equal(mx, a.max(1))
    np.testing.assert_allclose(nrm, np.sqrt((ref * ref).sum(1)), rtol=1e-6)
    np.testing.assert_allclose(s0, ref[0].sum(), rtol=1e-6)
    np.testing.assert_allclose(var, ref.var(1, ddof=1), rtol=1e-5)
    xg = sx.from_numpy(a).requires_grad_()
    np.testing.assert_allclose(xg.var(1).detach().numpy(), var, rtol=1e-6)


def test_strided_float32_sum_is_accurate_and_thread_independent():
    a = np.full((100, 16, 500), np.e, np.float32)
    a[:, 1::2] = RNG.standard_normal((100, 8, 500))
    x = sx.from_numpy(a)
    got = at_thread_counts(lambda: x.sum(dim=(0, 2)).numpy())
    assert all(np.array_equal(got[0], g) for g in got)
    ref = a.astype(np.float64)
    assert np.all(np.abs(got[0] - ref.sum((0, 2))) <= 1e-7 * np.abs(ref).sum((0, 2)))


@pytest.mark.parametrize("n", [8, 9, 15, 130, 255, 1030])
@pytest.mark.parametrize("layout", ["rows", "dims 0 and 2"])
def test_float32_rows_sum_alike_in_any_grouping(n, layout):
    # Short rows (and rows up to 1023, 64 rows or more) are summed eight at a time: every row's sum must match
    # NumPy's at any thread count (the last group of a chunk is padded), and a short row's sum must
    # equal the sum of that row alone.
    a = (RNG.standard_normal((5, 13, n)) * 10).astype(np.float32)
    x = sx.from_numpy(a)
    dims, ax = ((-1,), (2,)) if layout == "rows" else ((0, 2), (0, 2))
    got = at_thread_counts(lambda: [x.sum(dim=dims).numpy(), x.mean(dim=dims, keepdim=True).numpy(),
                                    x.norm(dim=dims).numpy()])
    for g in got[1:]:
        assert all(np.array_equal(u, v) for u, v in zip(got[0], g))
    ref = a.astype(np.float64)
    mag = np.abs(ref).sum(ax)
    _check(got[0][0], ref.sum(ax), np.float32, mag)
    _check(got[0][1], ref.mean(ax, keepdims=True), np.float32, np.abs(ref).mean(ax, keepdims=True))
    _check(got[0][2], np.sqrt((ref * ref).sum(ax)), np.float32)
    if layout == "rows" and n < 256:
        for i, j in ((0, 0), (1, 7), (4, 12)):
            assert x[i, j:j + 1].sum(-1).numpy()[0] == got[0][0][i, j]


@pytest.mark.parametrize("n", [1023, 1024, 1025, 1184, 2047, 2560, 4096 + 300])
@pytest.mark.parametrize("rows", [5, 70])
def test_long_float32_rows_sum_in_wide_blocks(n, rows):
    # Rows of 1024 or more are summed one at a time in wide blocks (1024 elements on AVX-512, 512 on
    # AVX2: eight vectors whose lanes add 8 elements each, added as a tree in float, then in double):
    # close to float64 (within 10 roundings of the terms' magnitude) with large terms beside small ones,
    # the same bits at any thread count, and each row's sum that of the row alone, for few rows and many
    # (shorter rows are summed eight at a time where there are 64 or more).
    a = (RNG.standard_normal((rows, n)) * 10).astype(np.float32)
    a[:, ::7] += 3000
    a[1, :] = np.float32(np.e)
    x = sx.from_numpy(a)
    got = at_thread_counts(lambda: [x.sum(-1).numpy(), x.mean(-1).numpy(), x.norm(dim=-1).numpy()])
    for g in got[1:]:
        assert all(np.array_equal(u, v) for u, v in zip(got[0], g))
    ref = a.astype(np.float64)
    mag = np.abs(ref).sum(1)
    assert np.all(np.abs(got[0][0] - ref.sum(1)) <= 6e-7 * mag + 1e-7 * np.abs(ref.sum(1)))
    assert np.all(np.abs(got[0][1] - ref.mean(1)) <= 6e-7 * mag / n + 1e-7 * np.abs(ref.mean(1)))
    _check(got[0][2], np.sqrt((ref * ref).sum(1)), np.float32)
    for i in (0, 1, rows - 1) if n >= 1024 else ():
        assert x[i].sum().numpy() == got[0][0][i]
        assert x[i:i + 1].sum(-1).numpy()[0] == got[0][0][i]


@pytest.mark.parametrize("shape", [(20, 41, 130), (3, 50, 9), (7, 300, 17)], ids=str)
def test_sums_over_dims_0_and_2_split_over_threads(shape):
    # Over dims 0 and 2 each thread's chunk of outputs (here not a multiple of 8) takes its rows as
    # one list, row position by row position, eight rows at a time: the groups span row positions,
    # yet every output's bits must be the same at any thread count and match NumPy.
    a = (RNG.standard_normal(shape) * 10).astype(np.float32)
    a[:, ::3] += 1000  # large terms beside small ones: a changed order of additions shows in the bits
    x = sx.from_numpy(a)
    got = at_thread_counts(lambda: [x.sum(dim=(0, 2)).numpy(), x.mean(dim=(0, -1), keepdim=True).numpy(),
                                    x.norm(dim=(0, 2)).numpy(), x.amax(dim=(0, 2)).numpy()], counts=(1, 2, 3, 4))
    for g in got[1:]:
        assert all(np.array_equal(u, v) for u, v in zip(got[0], g))
    ref = a.astype(np.float64)
    mag = np.abs(ref).sum((0, 2))
    _check(got[0][0], ref.sum((0, 2)), np.float32, mag)
    _check(got[0][1], ref.mean((0, 2), keepdims=True), np.float32, np.abs(ref).mean((0, 2), keepdims=True))
    _check(got[0][2], np.sqrt((ref * ref).sum((0, 2))), np.float32)
    assert np.array_equal(got[0][3], a.max((0, 2)))
    for j in (0, 1, shape[1] - 1):  # an output alone: its rows summed one by one
        assert x[:, j:j + 1].sum(dim=(0, 2)).numpy()[0] == got[0][0][j]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,dim", [((7, 9, 300), 1), ((40, 5), 0), ((3, 600, 2), 2), ((6, 11, 3), 0)], ids=str)
def test_max_min_along_a_column_dim_ties_and_nans(threads, dtype, shape, dim):
    # Columns side by side (a dim that is not the last): the first extreme wins ties, the first NaN wins.
    a = RNG.integers(0, 4, shape).astype(dtype)
    a[RNG.random(shape) < 0.02] = np.nan
    a[RNG.random(shape) < 0.05] = -np.inf
    x = sx.from_numpy(a)
    nan = np.isnan(a)
    for name, pick in (("max", np.argmax), ("min", np.argmin)):
        filled = np.where(nan, -np.inf if name == "max" else np.inf, a)
        want_i = np.where(nan.any(dim), nan.argmax(dim), pick(filled, dim))
        vals, idx = getattr(x, name)(dim=dim)
        np.testing.assert_array_equal(idx.numpy(), want_i)
        np.testing.assert_array_equal(vals.numpy(), np.take_along_axis(a, np.expand_dims(want_i, dim), dim).squeeze(dim))
        np.testing.assert_array_equal(getattr(x, "arg" + name)(dim=dim).numpy(), want_i)


def test_strided_extremes_propagate_nan_and_empty_sums():
    a = RNG.standard_normal((6, 5, 40)).astype(np.float32)
    a[2, 3, 17] = np.nan
    for f, r in ((sx.amax, np.max), (sx.amin, np.min)):
        np.testing.assert_array_equal(f(sx.from_numpy(a), (0, 2)).numpy(), r(a, (0, 2)))
    z = sx.zeros(0, 4, 3)
    np.testing.assert_array_equal(z.sum(dim=(0, 2)).numpy(), np.zeros(4))
    assert np.isnan(z.mean(dim=(0, 2)).numpy()).all()
    np.testing.assert_array_equal(sx.sum(z, dim=(0, 2), dtype=sx.float64).numpy(), np.zeros(4))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [5, 31, 64, 157, 70_001])
def test_row_extremes_find_nan_where_sums_overflow_or_cancel(threads, dtype, n):
    """Float rows' max/min record NaNs on the side (by running sums on the AVX-512 build): +inf with -inf,
    and sums past the largest float, are not NaN (the exact scan finds none); a NaN anywhere (vector
    part or ragged end) is."""
    big = np.finfo(dtype).max
    base = RNG.standard_normal((4, n)).astype(dtype)
    base[0, :: max(1, n // 5)] = big  # sums overflow to inf, no NaN
    base[1, 0], base[1, n - 1] = np.inf, -np.inf  # inf + -inf is NaN in the sums, no NaN in the row
    base[2, 1::2] = -big  # both overflows: the lanes' sums hold inf and -inf
    base[2, ::2] = big
    for pos in (0, n // 2, n - 1):
        a = base.copy()
        a[3] = base[3]
        a[3, pos] = np.nan
        x = sx.from_numpy(a)
        for f, r in ((x.amax, np.max), (x.amin, np.min)):
            np.testing.assert_array_equal(f(dim=1).numpy(), r(a, axis=1))
        for k in range(4):
            np.testing.assert_array_equal(float(x[k].amax()), np.max(a[k]))
            np.testing.assert_array_equal(float(x[k].amin()), np.min(a[k]))


@pytest.mark.parametrize("n", [3, 8, 13, 130, 255])
def test_short_float_rows_extremes_eight_at_a_time(threads, n):
    # Short float32 rows take their max/min eight rows at a time (over the last dim, and over dims 0 and 2):
    # a NaN in one row of a group, or infinities whose sums cancel, leave the other rows' results exact.
    a = RNG.standard_normal((3, 37, n)).astype(np.float32)
    a[1, 9, n // 2] = np.nan  # one row of a middle group
    a[2, 20, 0], a[2, 20, -1] = np.inf, -np.inf  # no NaN, but a NaN sum when n > 1
    a[0, 36, :] = -3e38  # the padded last group's row: sums overflow
    x = sx.from_numpy(a)
    for f, r in ((x.amax, np.max), (x.amin, np.min)):
        np.testing.assert_array_equal(f(dim=-1).numpy(), r(a, axis=-1))
        np.testing.assert_array_equal(f(dim=(0, 2)).numpy(), r(a, axis=(0, 2)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_long_rows_of_products_and_extremes(threads, dtype):
    # Factors whose products are exact in every order: the segments must cover the row exactly once.
    a = np.ones(400_003, dtype)
    pos = RNG.permutation(400_003)
    if dtype == np.int64:
        a[pos[:101]], a[pos[101:131]], want = -1, 3, -(3**30)
    else:
        a[pos[:101]], a[pos[101:200]], want = 2, 0.5, 4.0
    a[pos[-1]], want = 7, want * 7  # also the largest value
    ref = a.astype(np.float64)
    assert sx.from_numpy(a).prod().item() == want
    assert float(sx.from_numpy(a).amax()) == ref.max() and float(sx.from_numpy(a).amin()) == ref.min()
    if dtype != np.int64:
        b = a.copy()
        b[300_000] = np.nan
        assert np.isnan(float(sx.from_numpy(b).amax())) and np.isnan(float(sx.from_numpy(b).prod()))
    z = a.copy()
    z[123_456] = 0
    assert float(sx.from_numpy(z).prod()) == 0


@pytest.mark.parametrize("n", [1, 5, 31, 32, 33, 47, 64, 157, 296])
def test_float32_row_products_through_the_subnormal_range(threads, n):
    """Rows whose products fall below the float normals (the lanes combine in double, rounded once):
    against float64, within the lanes' float rounding and one subnormal step; integer and extreme rows
    of the same ragged lengths exactly."""
    rows = 24
    scale = np.exp(np.linspace(-110, -60, rows))[:, None] ** (1 / n)  # row products e^-110 .. e^-60
    a = (scale * RNG.uniform(0.8, 1.25, (rows, n)) * RNG.choice([-1, 1], (rows, n))).astype(np.float32)
    ref = np.prod(a.astype(np.float64), axis=1)
    ours = sx.tensor(a).prod(dim=1).numpy().astype(np.float64)
    np.testing.assert_allclose(ours, ref, rtol=(n + 2) * 6e-8, atol=1.5e-45)
    assert (ours[np.abs(ref) > 2e-45] != 0).all()  # no row flushed to zero early
    i = RNG.integers(-3, 4, (rows, n))
    assert sx.tensor(i).prod(dim=1).tolist() == [int(v) for v in np.prod(i, axis=1)]  # wraps alike
    assert sx.tensor(i.astype(np.int32)).amax(dim=1).tolist() == i.max(axis=1).tolist()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_logsumexp_kernel_special_rows_and_columns(threads, dtype):
    """The fused logsumexp along rows and down columns (and over a permuted block): rows of -inf,
    +inf, NaN and huge values as PyTorch gives them, an empty reduction -inf, the rest against float64."""
    inf, nan = np.inf, np.nan
    special = np.array([[1.0, 2.0, 3.0], [-inf, -inf, -inf], [inf, 1.0, 2.0], [nan, 1.0, inf], [-inf, 0.0, 1.0],
                        [1e30, 1e30, -1e30]])
    want = [3.40760596444438, -inf, inf, nan, 1.31326168751822, 1e30 + np.log(2.0)]
    a = RNG.standard_normal((40, 37)) * 30
    a[:6, :3] = special
    with np.errstate(all="ignore"):
        m = np.where(np.isfinite(a.max(axis=1)), a.max(axis=1), 0)
        ref = np.where(np.isfinite(a.max(axis=1)), np.log(np.exp(a - m[:, None]).sum(axis=1)) + m, a.max(axis=1))
    ref[:6] = want
    x = sx.tensor(special.astype(dtype))  # the special rows alone, then inside wider rows
    rtol = 2e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(sx.logsumexp(x, dim=1).numpy(), want, rtol=rtol)
    rows = a.copy()
    rows[:6, 3:] = -inf  # the special rows keep their results
    for t, d in [(sx.tensor(rows.astype(dtype)), 1), (sx.tensor(np.ascontiguousarray(rows.T).astype(dtype)), 0),
                 (sx.tensor(rows.T.astype(dtype)).T, 1)]:
        np.testing.assert_allclose(sx.logsumexp(t, dim=d).numpy(), ref, rtol=rtol)
    assert sx.logsumexp(sx.zeros(0, 3, dtype=dtype), dim=0).tolist() == [-inf] * 3
    big = RNG.standard_normal((3, 50, 7)).astype(dtype)
    np.testing.assert_allclose(sx.logsumexp(sx.tensor(big), dim=(0, 2), keepdim=True).numpy(),
                               np.log(np.exp(big.astype(np.float64)).sum(axis=(0, 2), keepdims=True)), rtol=rtol)


@pytest.mark.parametrize("op", ["add", "set", "amax"])
def test_scatter_lines_with_repeats_negatives_and_ragged_ends(threads, op):
    """The last-dim scatter line, one element after the other with the next line prefetched: repeated
    and negative indices (and ragged ends) against NumPy, applied in order; a bad index anywhere leaves
    x as it was."""
    rows, size = 9, 12
    for cnt in (1, 3, 4, 7, 8, 13, 31):
        idx = RNG.integers(-size, size, (rows, cnt))
        idx[0, :4] = 5  # a group of four equal indices
        src = RNG.standard_normal((rows, cnt)).astype(np.float32)
        x = RNG.standard_normal((rows, size)).astype(np.float32)
        want = x.copy()
        for r in range(rows):
            for m in range(cnt):
                i = idx[r, m] % size
                want[r, i] = want[r, i] + src[r, m] if op == "add" else (
                    src[r, m] if op == "set" else max(want[r, i], src[r, m]))
        t = sx.tensor(x)
        if op == "add":
            t.scatter_add_(1, sx.tensor(idx), sx.tensor(src))
        elif op == "set":
            t.scatter_(1, sx.tensor(idx), sx.tensor(src))
        else:
            t.scatter_reduce_(1, sx.tensor(idx), sx.tensor(src), "amax")
        np.testing.assert_array_equal(t.numpy(), want)
        bad = idx.copy()
        bad[rows - 1, cnt - 1] = size
        u = sx.tensor(x)
        with pytest.raises(IndexError):
            u.scatter_add_(1, sx.tensor(bad), sx.tensor(src))
        np.testing.assert_array_equal(u.numpy(), x)


def test_strided_sum_gradient():
    x = sx.from_numpy(RNG.standard_normal((4, 5, 6)).astype(np.float32)).requires_grad_()
    (x.transpose(0, 2).sum(dim=(0, 2)) * sx.arange(5)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.broadcast_to(np.arange(5.0)[None, :, None], (4, 5, 6)))


# ---------------------------------------------------------------- indexing along one dim

def _scatter_ref(a, d, idx, src, add):
    """A row-major serial loop: duplicates add up, or the last write wins."""
    out = a.copy()
    for pos in np.ndindex(*idx.shape):
        dst = list(pos)
        dst[d] = idx[pos]
        if add:
            out[tuple(dst)] += src[pos]
        else:
            out[tuple(dst)] = src[pos]
    return out


@pytest.mark.parametrize("shape,d", [((7, 9), 1), ((7, 9), 0), ((7, 9), -1), ((3, 4, 5), 1), ((3, 4, 5), -3)], ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.float16])
def test_gather_scatter_lines(threads, shape, d, dtype):
    a = (RNG.standard_normal(shape) * 10).astype(dtype)
    ishape = tuple(max(1, s - 1) for s in shape)
    ishape = ishape[:d % len(shape)] + (shape[d] + 3,) + ishape[d % len(shape) + 1:]
    idx = RNG.integers(-shape[d], shape[d], ishape)  # duplicates and negative indices
    src = (RNG.standard_normal(tuple(s + 1 for s in ishape)) * 10).astype(dtype)
    part = src[tuple(slice(0, s) for s in ishape)]
    wrapped = idx % shape[d]
    dd = d % len(shape)
    corner = a[tuple(slice(None) if k == dd else slice(0, n) for k, n in enumerate(ishape))]
    for name, x in _layouts(a).items():
        np.testing.assert_array_equal(sx.gather(x, d, sx.from_numpy(idx)).numpy(),
                                      np.take_along_axis(corner, wrapped, dd), err_msg=name)
    wide = np.float32 if dtype == np.float16 else dtype  # float16 sums accumulate in float32, rounded once
    added = _scatter_ref(a.astype(wide), d % len(shape), wrapped, part.astype(wide), True).astype(dtype)
    for name, s in _layouts(src).items():  # the reference adds in the same order
        got = sx.from_numpy(a).scatter_add(d, sx.from_numpy(idx), s).numpy()
        np.testing.assert_array_equal(got, added, err_msg=name)
        got = sx.scatter(sx.from_numpy(a), d, sx.from_numpy(idx), s).numpy()
        np.testing.assert_array_equal(got, _scatter_ref(a, d % len(shape), wrapped, part, False), err_msg=name)


def test_scatter_falls_back_when_lines_do_not_merge():
    a = RNG.standard_normal((4, 5, 6, 7))
    idx = RNG.integers(0, 5, (4, 8, 6, 7))
    src = sx.from_numpy(RNG.standard_normal((4, 8, 7, 6))).transpose(2, 3)  # tail dims do not merge
    got = sx.from_numpy(a).scatter_add(1, sx.from_numpy(idx), src).numpy()
    np.testing.assert_allclose(got, _scatter_ref(a, 1, idx, src.numpy(), True), rtol=1e-12)


def _scatter_flat(a, d, idx, src, add):
    """A vectorised row-major serial scatter: with idx's positions in row-major order, np.add.at adds
    in that order (in a's dtype), and of repeated targets the last write wins."""
    pos = list(np.indices(idx.shape))
    pos[d] = idx
    dest = np.ravel_multi_index(tuple(pos), a.shape).ravel()
    out = a.copy().ravel()
    if add:
        np.add.at(out, dest, src.ravel())
    else:
        last = dest.size - 1 - np.unique(dest[::-1], return_index=True)[1]
        out[dest[last]] = src.ravel()[last]
    return out.reshape(a.shape)


def _index_like(shape, d, shrink, low, high):
    """Indices in [low, high) of shape ``shape`` but 3 longer along d, and shorter by ``shrink``
    elsewhere (with d = 0 of a 3-D x, x's dims after d then no longer merge into one)."""
    ishape = tuple(s + 3 if k == d else max(1, s - shrink) for k, s in enumerate(shape))
    return RNG.integers(low, high, ishape)


@pytest.mark.parametrize("shape,d", [((64, 1100), 1), ((1100, 64), 0), ((24, 30, 50), 0), ((24, 30, 50), 1),
                                     ((24, 30, 50), 2), ((3, 20000), -1), ((70000,), 0)], ids=str)
@pytest.mark.parametrize("shrink", [0, 1])
def test_gather_scatter_past_one_chunk_every_dim(threads, shape, d, shrink):
    """Sizes that split across threads, along every dim, with transposed and sliced operands,
    negative and repeated indices; scatter_add in float32 adds in the order of k at any thread count."""
    dd = d % len(shape)
    n = shape[dd]
    a = RNG.standard_normal(shape).astype(np.float32)
    idx = _index_like(shape, dd, shrink, -n, n)
    src = (RNG.standard_normal(idx.shape) * 4).astype(np.float32)
    wrapped = idx % n
    corner = a[tuple(slice(None) if k == dd else slice(0, m) for k, m in enumerate(idx.shape))]
    padded = np.zeros((idx.shape[0] * 2,) + idx.shape[1:], np.int64)
    padded[::2] = idx
    ti = sx.from_numpy(padded)[::2]  # a strided index
    want_add, want_set = _scatter_flat(a, dd, wrapped, src, True), _scatter_flat(a, dd, wrapped, src, False)
    want_fill = _scatter_flat(a, dd, wrapped, np.full(idx.shape, 2.5, np.float32), False)
    for name, x in _layouts(a).items():
        np.testing.assert_array_equal(sx.gather(x, d, ti).numpy(), np.take_along_axis(corner, wrapped, dd), err_msg=name)
        np.testing.assert_array_equal(x.scatter_add(d, ti, sx.from_numpy(src)).numpy(), want_add, err_msg=name)
        np.testing.assert_array_equal(x.scatter(d, ti, sx.from_numpy(src)).numpy(), want_set, err_msg=name)
        np.testing.assert_array_equal(x.scatter(d, ti, 2.5).numpy(), want_fill, err_msg=name)
    for name, s in _layouts(src).items():
        np.testing.assert_array_equal(sx.from_numpy(a).scatter_add(d, ti, s).numpy(), want_add, err_msg=name)
        np.testing.assert_array_equal(sx.scatter(sx.from_numpy(a), d, ti, s).numpy(), want_set, err_msg=name)


_BAD_INDEX_OPS = [("gather", lambda x, d, i, s: x.gather(d, i)), ("scatter", lambda x, d, i, s: x.scatter(d, i, s)),
                  ("scatter", lambda x, d, i, s: x.scatter(d, i, 1.0)),
                  ("scatter_add", lambda x, d, i, s: x.scatter_add(d, i, s)),
                  (r"scatter_reduce\(amax\)", lambda x, d, i, s: sx.scatter_reduce(x, d, i, s, "amax"))]


@pytest.mark.parametrize("d", [0, 1, 2, -1])
@pytest.mark.parametrize("shrink", [0, 1])
@pytest.mark.parametrize("at", ["first", "middle", "last"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gather_scatter_index_out_of_range(threads, d, shrink, at, dtype):
    shape = (30, 40, 50)
    dd = d % 3
    n = shape[dd]
    a = RNG.standard_normal(shape).astype(dtype)
    for bad in (n, -n - 1, 2**40, -(2**62)):
        idx = _index_like(shape, dd, shrink, -n, n)
        flat = idx.reshape(-1)
        flat[{"first": 0, "middle": flat.size // 2, "last": flat.size - 1}[at]] = bad
        ti, src = sx.from_numpy(idx), sx.from_numpy(RNG.standard_normal(idx.shape).astype(dtype))
        for op, fn in _BAD_INDEX_OPS:
            with pytest.raises(IndexError, match=rf"^\[{op}\] index {bad} is out of bounds for dimension {dd} "
                                                 rf"with size {n}$"):
                fn(sx.from_numpy(a), d, ti, src)
        x = sx.from_numpy(a.copy())
        with pytest.raises(IndexError, match=rf"\[scatter_\] index {bad} is out"):
            x.scatter_(d, ti, src)
        np.testing.assert_array_equal(x.numpy(), a)  # a failed in-place scatter leaves its input alone


def test_gather_scatter_index_dtypes_and_empty():
    a = RNG.standard_normal((4, 6))
    idx = RNG.integers(0, 6, (4, 5))
    want = np.take_along_axis(a, idx, 1)
    for dt in (np.int32, np.uint8):
        np.testing.assert_array_equal(sx.from_numpy(a).gather(1, sx.from_numpy(idx.astype(dt))).numpy(), want)
    with pytest.raises(IndexError, match=r"\[gather\] index 6 is out of bounds for dimension 1 with size 6"):
        sx.from_numpy(a).gather(1, sx.from_numpy(np.full((1, 1), 6, np.int32)))
    assert sx.from_numpy(a).gather(1, sx.zeros(4, 0, dtype=sx.int64)).shape == (4, 0)
    np.testing.assert_array_equal(sx.from_numpy(a).scatter_add(0, sx.zeros(0, 6, dtype=sx.int64),
                                                                sx.zeros(0, 6, dtype=sx.float64)).numpy(), a)
    with pytest.raises(IndexError, match=r"\[gather\] index 0 is out of bounds for dimension 1 with size 0"):
        sx.zeros(4, 0).gather(1, sx.zeros(4, 1, dtype=sx.int64))


@pytest.mark.parametrize("d", [0, 1, 2])
def test_gather_scatter_gradients_every_dim(d):
    from sneppx_core.testing import gradcheck

    shape = (3, 4, 5)
    idx = sx.from_numpy(_index_like(shape, d, 1, -shape[d], shape[d]))
    perm = np.stack([RNG.permutation(shape[d]) for _ in range(int(np.prod(shape)) // shape[d])])  # distinct targets
    uniq = sx.from_numpy(np.moveaxis(perm.reshape(tuple(s for k, s in enumerate(shape) if k != d) + (shape[d],)), -1, d))
    xt = sx.from_numpy(RNG.standard_normal(shape[::-1])).requires_grad_()  # read transposed: not contiguous
    s = sx.from_numpy(RNG.standard_normal(tuple(m + 1 for m in idx.shape))).requires_grad_()
    su = sx.from_numpy(RNG.standard_normal(shape)).requires_grad_()
    assert gradcheck(lambda x: x.permute(2, 1, 0).gather(d, idx), [xt])
    assert gradcheck(lambda x, v: x.permute(2, 1, 0).scatter_add(d, idx, v), [xt, s])
    assert gradcheck(lambda x, v: x.permute(2, 1, 0).scatter(d, uniq, v), [xt, su])
    assert gradcheck(lambda x: x.permute(2, 1, 0).scatter(d, uniq, 2.0), [xt])


@pytest.mark.parametrize("shape,d", [((7, 9), 1), ((7, 9), 0), ((3, 4, 5), -2), ((6,), 0)], ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32, np.bool_, np.float16])
def test_index_select_and_index_add(threads, shape, d, dtype):
    a = (RNG.standard_normal(shape) * 10).astype(dtype)
    n = shape[d]
    idx = RNG.integers(-n, n, 2 * n + 1)
    for name, x in _layouts(a).items():
        np.testing.assert_array_equal(sx.index_select(x, d, sx.from_numpy(idx)).numpy(), np.take(a, idx, d), err_msg=name)
    if dtype == np.bool_:
        return
    sshape = list(shape)
    sshape[d] = len(idx)
    src = (RNG.standard_normal(sshape) * 10).astype(dtype)
    alpha = 3 if dtype in (np.int32, np.int64) else 0.5
    want, mag = a.astype(np.float64), np.abs(a.astype(np.float64))
    at = (slice(None),) * (d % len(shape)) + (idx,)
    np.add.at(want, at, alpha * src.astype(np.float64))
    np.add.at(mag, at, np.abs(alpha * src.astype(np.float64)))
    for name, s in _layouts(src).items():
        _check(sx.from_numpy(a).index_add(d, sx.from_numpy(idx), s, alpha=alpha).numpy(), want, dtype, mag)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.float16])
def test_index_add_into_strided_rows(threads, dtype):
    """index_add_ along the last dim (one element per index) into transposed and sliced tensors, with
    repeated and negative indices, against np.add.at."""
    a = (RNG.standard_normal((40, 33)) * 10).astype(dtype)
    idx = RNG.integers(-40, 40, 97)
    src = (RNG.standard_normal((33, 97)) * 10).astype(dtype)
    want, mag = a.T.astype(np.float64), np.abs(a.T.astype(np.float64))
    np.add.at(want, (slice(None), idx), src.astype(np.float64))
    np.add.at(mag, (slice(None), idx), np.abs(src.astype(np.float64)))
    x = sx.from_numpy(a.copy()).t()  # (33, 40) with strides (1, 33)
    x.index_add_(1, sx.from_numpy(idx), sx.from_numpy(src))
    _check(x.numpy(), want, dtype, mag)
    big = np.zeros((66, 81), dtype)
    big[::2, 1::2] = a.T
    base = sx.from_numpy(big)
    y = base[::2, 1::2]
    y.index_add_(-1, sx.from_numpy(idx), sx.from_numpy(src))
    _check(y.numpy(), want, dtype, mag)
    rest = base.numpy().copy()
    rest[::2, 1::2] = 0
    assert not rest.any()  # nothing written between the view's elements


def test_index_select_and_index_add_gradients():
    a = RNG.standard_normal((5, 6))
    idx = np.array([4, 0, 4, -1, 2])
    x = sx.from_numpy(a).requires_grad_()
    w = RNG.standard_normal((5, 5))
    (x.index_select(1, sx.from_numpy(idx)) * sx.from_numpy(w)).sum().backward()
    want = np.zeros((5, 6))
    np.add.at(want, (slice(None), idx), w)
    np.testing.assert_allclose(x.grad.numpy(), want)
    x = sx.from_numpy(a).requires_grad_()
    s = sx.from_numpy(RNG.standard_normal((5, 5))).requires_grad_()
    (x.index_add(1, sx.from_numpy(idx), s, alpha=2.0) * sx.from_numpy(np.arange(30.0).reshape(5, 6))).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.arange(30.0).reshape(5, 6))
    np.testing.assert_allclose(s.grad.numpy(), 2 * np.arange(30.0).reshape(5, 6)[:, idx])
    assert sx.index_select(sx.tensor(3.0), 0, sx.tensor([0])).shape == ()


@pytest.mark.parametrize("shape,k", [((37, 29), 2), ((37, 29), 1), ((200, 300), 2), ((7, 5, 6), 2), ((3, 4, 5), 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.bool_, np.float16])
def test_boolean_mask_selection(threads, shape, k, dtype):
    a = (RNG.standard_normal(shape) * 10).astype(dtype)
    for p in (0.0, 0.3, 1.0):
        m = RNG.random(shape[:k]) < p
        for name, x in _layouts(a).items():
            np.testing.assert_array_equal(x[sx.from_numpy(m)].numpy(), a[m], err_msg=name)


def test_boolean_mask_selection_large_and_gradient():
    a = RNG.standard_normal(100_003).astype(np.float32)
    m = RNG.random(100_003) < 0.5
    m[-5:] = True
    np.testing.assert_array_equal(sx.from_numpy(a)[sx.from_numpy(m)].numpy(), a[m])
    x = sx.from_numpy(RNG.standard_normal((4, 3, 2))).requires_grad_()
    m = RNG.random((4, 3)) < 0.5
    y = x[sx.from_numpy(m)]
    (y * sx.from_numpy(np.arange(y.numel(), dtype=np.float64).reshape(y.shape))).sum().backward()
    want = np.zeros((4, 3, 2))
    want[m] = np.arange(y.numel()).reshape(y.shape)
    np.testing.assert_allclose(x.grad.numpy(), want)
    with pytest.raises(IndexError, match=r"\[index\].*mask of shape \(3"):
        sx.zeros(4, 3)[sx.from_numpy(np.ones(3, bool))]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape", [(7,), (100_003,), (3, 0, 4), (5, 7), (3, 40_000), (40_000, 3), (70, 3, 200),
                                   (2, 3, 4, 2900)], ids=str)
@pytest.mark.parametrize("density", [0.0, 0.02, 0.5, 1.0])
def test_nonzero_coordinates_over_chunks(threads, shape, density):
    # The true elements' coordinates in row-major order, written chunk by chunk (chunks of 32768
    # elements that start and end inside rows of the last dim), as NumPy's argwhere lists them.
    a = RNG.random(shape) < density
    if a.size:
        a.reshape(-1)[[0, -1]] = density > 0  # the first and last element on or off with the rest
    n0 = sx.get_num_threads()
    sx.set_num_threads(threads)
    try:
        for x in (sx.from_numpy(a), sx.from_numpy(a.astype(np.float32) * 3)):
            got = sx.nonzero(x)
            assert got.dtype == sx.int64 and got.shape == (int(a.sum()), a.ndim)
            np.testing.assert_array_equal(got.numpy(), np.argwhere(a))
        np.testing.assert_array_equal(sx.argwhere(sx.from_numpy(a)).numpy(), np.argwhere(a))
    finally:
        sx.set_num_threads(n0)
    assert sx.nonzero(sx.tensor(True)).shape == (1, 0) and sx.nonzero(sx.tensor(0.0)).shape == (0, 0)


@pytest.mark.parametrize("dtype", [np.uint8, np.bool_, np.int32])
def test_short_integer_rows_sum_exactly(dtype):
    for n in range(1, 41):
        a = (np.arange(n) % (2 if dtype == np.bool_ else 97)).astype(dtype)
        x = sx.from_numpy(np.broadcast_to(a, (3, n)).copy())
        assert x.sum().item() == 3 * a.astype(np.int64).sum()
        np.testing.assert_array_equal(x.sum(1).numpy(), np.full(3, a.astype(np.int64).sum()))
        assert sx.sum(x.t(), dim=(0, 1), dtype=sx.float64).item() == 3 * a.astype(np.float64).sum()


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int32, np.int64, np.uint8, np.bool_])
@pytest.mark.parametrize("descending", [False, True])
def test_sorts_and_topk_with_ties_over_long_rows(threads, dtype, descending):
    # rows of several 64-element blocks with many ties (and NaN, -0.0 for floats): sorts of values of at
    # most 32 bits pack key and position into one word; top-k of a few skips blocks above its k-th best
    rows, n = 9, 300
    if dtype == np.bool_:
        a = RNG.random((rows, n)) < 0.5
    elif np.issubdtype(dtype, np.integer):
        a = RNG.integers(0, 6, (rows, n)).astype(dtype)
    else:
        a = RNG.integers(-3, 4, (rows, n)).astype(dtype)
        a[:, ::17] = np.nan
        a[:, 5::23] = -0.0
    key = np.where(np.isnan(a), np.inf, a).astype(np.float64) if a.dtype.kind == "f" else a.astype(np.int64)
    order = np.argsort(-key if descending else key, axis=1, kind="stable")
    if a.dtype.kind == "f" and descending:  # NaN first, then the values high to low, ties in position order
        order = np.argsort(np.where(np.isnan(a), -np.inf, -a.astype(np.float64)), axis=1, kind="stable")
    x = sx.from_numpy(a)
    v, i = x.sort(dim=1, stable=True, descending=descending)
    np.testing.assert_array_equal(i.numpy(), order)
    np.testing.assert_array_equal(v.numpy(), np.take_along_axis(a, order, 1))
    for k in (1, 3, 16, 17, 149, 150, 299):  # up to 16: one pass; 17 to 149: partial sort; from n / 2: radix
        v, i = x.topk(k, dim=1, largest=descending)
        np.testing.assert_array_equal(i.numpy(), order[:, :k], err_msg=f"k={k}")
        np.testing.assert_array_equal(v.numpy(), np.take_along_axis(a, order[:, :k], 1))


def _stable_order(a, axis, descending):
    """NumPy's stable order along `axis`, NaN sorting as the largest value."""
    if a.dtype.kind == "f":
        key = np.where(np.isnan(a), np.inf, a.astype(np.float64))
    else:
        key = a.astype(np.int64)
    return np.argsort(-key if descending else key, axis=axis, kind="stable")


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int64, np.uint8, np.bool_])
def test_sorts_and_topk_along_strided_dims(threads, dtype):
    """Sorts and top-k along a dim that is not the last read the rows where they lie, a group of
    neighbouring rows at a time: inner sizes below, at and above a group (16), a last group cut short,
    rows long enough to shrink the group, inputs that are views, and the gradient scattered back."""
    rng = np.random.default_rng(7)
    shapes = [((40, 24), 0), ((3, 30, 7), 1), ((2, 300, 37), 1), ((5000, 13), 0), ((4, 5, 16, 3), 2), ((1, 9, 1), 1)]
    for shape, dim in shapes:
        if dtype == np.bool_:
            a = rng.random(shape) < 0.5
        else:
            a = rng.integers(0, 7, shape).astype(dtype)
            if a.dtype.kind == "f":
                a.reshape(-1)[::13] = np.nan
        x = sx.from_numpy(a)
        n = shape[dim]
        for descending in (False, True):
            order = _stable_order(a, dim, descending)
            v, i = x.sort(dim=dim, descending=descending, stable=True)
            np.testing.assert_array_equal(i.numpy(), order, err_msg=f"{shape} {dim}")
            np.testing.assert_array_equal(v.numpy(), np.take_along_axis(a, order, dim))
            for k in sorted({1, 2, min(17, n), n // 2 + 1, n}):
                v, i = sx.topk(x, k, dim=dim, largest=descending)
                want = np.take(order, np.arange(k), axis=dim)
                np.testing.assert_array_equal(i.numpy(), want, err_msg=f"{shape} {dim} k={k}")
                np.testing.assert_array_equal(v.numpy(), np.take_along_axis(a, want, dim))
    a = rng.standard_normal((24, 40)).astype(np.float32)
    for view, ref in ((sx.from_numpy(a).t(), a.T), (sx.from_numpy(a)[:, ::3], a[:, ::3])):
        for dim in (0, 1):  # a view whose moved dim is contiguous, and one that is not
            order = _stable_order(ref, dim, False)
            v, i = view.sort(dim=dim)
            np.testing.assert_array_equal(i.numpy(), order)
            np.testing.assert_array_equal(v.numpy(), np.take_along_axis(ref, order, dim))
    g = rng.standard_normal((3, 30, 7))
    x = sx.from_numpy(g).requires_grad_()
    w = rng.standard_normal((3, 4, 7))
    (sx.topk(x, 4, dim=1)[0] * sx.from_numpy(w)).sum().backward()
    want = np.zeros_like(g)
    np.put_along_axis(want, np.argsort(-g, axis=1, kind="stable")[:, :4], w, 1)
    np.testing.assert_allclose(x.grad.numpy(), want)


@pytest.mark.parametrize("n", [127, 128, 129, 1000])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16])
def test_radix_sorted_rows_of_spread_values(threads, n, dtype):
    """Rows of at least 128 values of at most 32 bits are radix sorted by key byte: values whose keys
    differ in every byte (signs, magnitudes from 1e-30 to 1e30, infinities), with repeats, against
    NumPy's stable argsort, both directions; argsort and sort's values agree with it."""
    rng = np.random.default_rng(n)
    if dtype == np.int32:
        a = rng.integers(-2**31, 2**31 - 1, (5, n), dtype=np.int64).astype(np.int32)
    else:
        a = (rng.choice([-1, 1], (5, n)) * 10.0 ** rng.uniform(-30, 30, (5, n))).astype(np.float32)
        a[:, ::7] = np.inf
        a[:, 3::11] = -np.inf
        with np.errstate(over="ignore"):  # float16: the large magnitudes become infinities
            a = a.astype(dtype)
    a[:, 1::5] = a[:, :1]  # repeats of each row's first value
    x = sx.from_numpy(a)
    for descending in (False, True):
        key = -a.astype(np.float64) if descending else a.astype(np.float64)
        order = np.argsort(key, axis=1, kind="stable")
        v, i = x.sort(dim=1, stable=True, descending=descending)
        np.testing.assert_array_equal(i.numpy(), order)
        np.testing.assert_array_equal(v.numpy(), np.take_along_axis(a, order, 1))
        np.testing.assert_array_equal(x.argsort(dim=1, stable=True, descending=descending).numpy(), order)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_column_products_and_extremes_in_blocks_of_columns(dtype):
    """prod, amax and amin down the outer dim of (n, inner) and the middle dim of (outer, n, inner):
    whole blocks of 64 float columns keep their accumulators in registers, the rest (and integer
    columns) in memory, and the pool shares columns out in such blocks. Against NumPy (NaN propagating, in a block column and in a tail
    column), the same bits at 1, 2 and 3 threads."""
    before = sx.get_num_threads()
    rng = np.random.default_rng(11)
    try:
        for shape, dim in (((888, 130), 0), ((40, 64), 0), ((3, 25, 200), 1), ((2, 9, 1184), 1), ((50, 63), 0)):
            if dtype == np.int32:
                a = rng.integers(-3, 4, shape).astype(dtype)
            else:
                a = rng.uniform(0.6, 1.6, shape).astype(dtype)
                a[(slice(None),) * dim + (shape[dim] // 2, 5)] = np.nan  # a column of the first block
                a[(slice(None),) * dim + (1, -1)] = np.nan  # the last column (a tail, or a block)
            x = sx.from_numpy(a)
            for name, ref in (("prod", np.prod), ("amax", np.max), ("amin", np.min)):
                got = {}
                for threads in (1, 2, 3):
                    sx.set_num_threads(threads)
                    got[threads] = getattr(x, name)(dim).numpy()
                want = ref(a.astype(np.float64) if dtype != np.int32 else a, axis=dim)
                if name == "prod" and dtype == np.int32:
                    want = np.prod(a.astype(np.int64), axis=dim).astype(np.int32)
                np.testing.assert_allclose(got[1], want, rtol=1e-5 if dtype == np.float32 else 1e-12, err_msg=name)
                assert np.array_equal(got[1], got[2], equal_nan=True) and np.array_equal(got[1], got[3], equal_nan=True)
    finally:
        sx.set_num_threads(before)


@pytest.mark.parametrize("mean", [False, True])
def test_column_sums_every_block_width_and_thread_count(mean):
    """Sums down a middle dim (outer, n, inner) for inner widths that take every register block (64,
    32, 16 and 8 columns) and the scalar tail, with chunks of the thread pool starting mid-row: the
    float64 reference within float32 rounding, and the same bits at 1 and 2 threads."""
    before = sx.get_num_threads()
    try:
        for inner in (1, 7, 8, 9, 15, 16, 23, 24, 31, 40, 57, 63, 65, 88, 130):
            a = RNG.standard_normal((13, 37, inner)).astype(np.float32)
            x = sx.from_numpy(a)
            got = {}
            for threads in (1, 2):
                sx.set_num_threads(threads)
                got[threads] = (x.mean(dim=1) if mean else x.sum(dim=1)).numpy()
            ref = a.astype(np.float64).mean(axis=1) if mean else a.astype(np.float64).sum(axis=1)
            scale = np.abs(a.astype(np.float64)).sum(axis=1) / (37 if mean else 1)
            _check(got[1], ref, np.float32, scale)
            assert np.array_equal(got[1], got[2]), inner
    finally:
        sx.set_num_threads(before)
