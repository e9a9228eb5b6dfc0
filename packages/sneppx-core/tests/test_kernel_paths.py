"""The specialised kernel paths against NumPy: long sums split into segments, sums of squares (norm)
and means in one pass, vectorised arg-extremes over rows, cumsum over interleaved rows, transposing
copies by tiles (ragged edges included), copies of whole rows under permuted outer dims, matrix
products split over the thread pool (and with a transposed B whose rows lie 4 KiB apart), and
one-row / one-column matrix products in every operand layout; copies of short rows, of rows into
shifted views (roll, cat), of flipped rows, of rows that repeat one source element and of one value
broadcast over the whole result; the one-pass
lerp; the reuse order of the block cache; integer powers by squaring; float16 / bfloat16 binary
ops, which compute on blocks widened to float, on every operand layout; and index_select / index_add of many
short rows along dim 0."""

from __future__ import annotations

import os

import numpy as np
import pytest
import sneppx_core as sx
import sneppx_core.functional as F


@pytest.mark.parametrize("n", [1, 7, 255, 256, 257, 1000, 131_073, 300_001])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sum_and_norm_of_long_rows(threads, n, dtype):
    a = np.random.default_rng(n).standard_normal((2, n)).astype(dtype)
    ref = a.astype(np.float64)
    tol = 1e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(sx.from_numpy(a).sum(1).numpy(), ref.sum(1), rtol=tol, atol=tol * np.abs(ref).sum())
    np.testing.assert_allclose(float(sx.from_numpy(a).sum()), ref.sum(), rtol=tol, atol=tol * np.abs(ref).sum())
    np.testing.assert_allclose(sx.from_numpy(a).norm(dim=1).numpy(), np.sqrt((ref * ref).sum(1)), rtol=tol)
    np.testing.assert_allclose(float(sx.from_numpy(a).norm()), np.sqrt((ref * ref).sum()), rtol=tol)
    np.testing.assert_allclose(sx.from_numpy(a).mean(1).numpy(), ref.mean(1), rtol=tol, atol=tol)


def test_long_sum_does_not_depend_on_thread_count():
    a = np.random.default_rng(0).standard_normal(3_000_001).astype(np.float32)
    n0 = sx.get_num_threads()
    try:
        got = set()
        for n in (1, 2, 3):
            sx.set_num_threads(n)
            got.add(float(sx.from_numpy(a).sum()))
    finally:
        sx.set_num_threads(n0)
    assert len(got) == 1
    assert abs(got.pop() - a.astype(np.float64).sum()) <= 1e-6 * np.abs(a).sum()


def test_norm_and_mean_other_dims_and_dtypes():
    a = np.random.default_rng(1).standard_normal((30, 70, 5))
    for d in [0, 1, 2, (0, 2)]:
        np.testing.assert_allclose(sx.from_numpy(a.astype(np.float32)).norm(dim=d).numpy(),
                                   np.sqrt((a * a).sum(axis=d)), rtol=1e-6)
        np.testing.assert_allclose(sx.from_numpy(a.astype(np.float32)).mean(dim=d).numpy(), a.mean(axis=d),
                                   rtol=1e-5, atol=1e-6)
    h = a.astype(np.float16)
    np.testing.assert_allclose(float(sx.from_numpy(h).norm()), np.sqrt((h.astype(np.float64) ** 2).sum()), rtol=2e-3)
    assert np.isnan(float(sx.zeros(0, 3).mean()))
    assert np.isnan(sx.zeros(0, 3).mean(0).numpy()).all()
    assert float(sx.zeros(0, 3).norm()) == 0.0
    x = sx.from_numpy(a.astype(np.float32)).requires_grad_()
    x.norm().backward()  # the graph path
    np.testing.assert_allclose(x.grad.numpy(), a / np.sqrt((a * a).sum()), rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 5, 8, 9, 33, 1024])
def test_arg_extremes_over_rows(threads, dtype, n):
    rng = np.random.default_rng(n)
    a = rng.standard_normal((300, n)).astype(dtype)
    a[3, n // 2] = np.nan
    a[5, -1] = np.nan
    a[5, 0] = np.nan
    a[7, :] = -np.inf
    a[8, :] = 0.0
    a[8, n // 3] = -0.0
    a[9, :] = 1.0
    a[10, :] = np.inf
    a[11] = np.round(a[11])  # ties
    x = sx.from_numpy(a)
    np.testing.assert_array_equal(x.argmax(dim=1).numpy(), np.argmax(a, 1))
    np.testing.assert_array_equal(x.argmin(dim=1).numpy(), np.argmin(a, 1))
    v, i = x.max(dim=1)
    np.testing.assert_array_equal(i.numpy(), np.argmax(a, 1))
    np.testing.assert_array_equal(v.numpy(), a[np.arange(300), np.argmax(a, 1)])
    v, i = x.min(dim=1)
    np.testing.assert_array_equal(i.numpy(), np.argmin(a, 1))
    np.testing.assert_array_equal(v.numpy(), a[np.arange(300), np.argmin(a, 1)])


@pytest.mark.parametrize("shape,dim", [((1024, 1024), 1), ((7, 1000), 1), ((9, 1), 1), ((300, 70), 0), ((4, 100, 130), 1),
                                       ((78, 1100), 0), ((3, 20, 1030), 1), ((3, 7, 5), 2)])
def test_cumsum_accumulates_float32_in_double(threads, shape, dim):
    a = np.random.default_rng(2).standard_normal(shape).astype(np.float32) * 5
    want = np.cumsum(a.astype(np.float64), axis=dim).astype(np.float32)
    np.testing.assert_array_equal(sx.from_numpy(a).cumsum(dim).numpy(), want)
    i = (a * 10).astype(np.int64)
    np.testing.assert_array_equal(sx.from_numpy(i).cumsum(dim).numpy(), np.cumsum(i, axis=dim))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.float16, np.uint8, np.bool_])
@pytest.mark.parametrize("shape,perm", [((1024, 1024), (1, 0)), ((37, 45), (1, 0)), ((33, 70), (1, 0)),
                                        ((3, 40, 50), (0, 2, 1)), ((3, 40, 50), (2, 1, 0)), ((100, 33, 9), (2, 0, 1)),
                                        ((40, 24), (1, 0)), ((8, 8), (1, 0)), ((9, 130), (1, 0)), ((1000, 31), (1, 0)),
                                        ((5, 12, 10), (0, 2, 1)), ((7, 9), (1, 0))])
def test_transposing_copies(threads, dtype, shape, perm):
    a = (np.random.default_rng(3).standard_normal(shape) * 10).astype(dtype)
    got = sx.from_numpy(a).permute(*perm).contiguous().numpy()
    np.testing.assert_array_equal(got, np.ascontiguousarray(a.transpose(perm)))


def _busy_threads() -> int:
    """Threads of this process, other than the calling one, that are running or runnable."""
    import os
    import threading

    me, busy = threading.get_native_id(), 0
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        busy += int(tid) != me and state == "R"
    return busy


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux's /proc")
def test_matmul_leaves_no_threads_polling():
    """After a product no thread keeps polling for work: BLAS runs inside the pool, which parks quickly.

    A threaded BLAS keeps its workers polling for about 0.1 s after each call, which starves the
    pool's own workers (and any other library's) on a small machine. Thread states, unlike CPU
    time, do not depend on how busy the machine is.
    """
    import time

    n0 = sx.get_num_threads()
    sx.set_num_threads(2)
    try:
        a = sx.randn(256, 256)
        for _ in range(5):
            a @ a
        time.sleep(0.03)
        busy = []
        for _ in range(10):
            busy.append(_busy_threads())
            time.sleep(0.003)
    finally:
        sx.set_num_threads(n0)
    assert sum(busy) == 0, f"threads still running 30-60 ms after a matmul: {busy}"


@pytest.mark.parametrize("shape", [(300, 200, 17), (17, 200, 300), (513, 129, 257), (5, 1000, 999)])
def test_matmul_split_over_the_pool_matches_numpy(threads, shape):
    """Products large enough to be split into bands (rows or columns), every transpose layout."""
    m, k, n = shape
    rng = np.random.default_rng(m + n)
    for ta in (False, True):
        for tb in (False, True):
            A = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
            B = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
            a, b = sx.tensor(A), sx.tensor(B)
            got = ((a.t() if ta else a) @ (b.t() if tb else b)).numpy()
            want = (A.T if ta else A).astype(np.float64) @ (B.T if tb else B)
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3 * np.abs(want).max())
    A = rng.standard_normal((6, m, k)).astype(np.float32)
    B = rng.standard_normal((6, k, n)).astype(np.float32)
    got = (sx.tensor(A) @ sx.tensor(B)).numpy()
    np.testing.assert_allclose(got, A.astype(np.float64) @ B, rtol=1e-4, atol=1e-3 * np.abs(A @ B).max())


@pytest.mark.parametrize("m,n,k", [(128, 96, 1024), (256, 65, 2048), (300, 130, 512), (64, 256, 1024), (200, 3, 1024)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matmul_with_transposed_rows_4k_apart(threads, m, n, k, dtype):
    """x @ W^T where W's rows lie a multiple of 4 KiB apart (copied to longer rows before BLAS):
    the same bits as W stored with longer rows, which BLAS takes as it is, and NumPy's product."""
    rng = np.random.default_rng(m + k)
    A = rng.standard_normal((m, k)).astype(dtype)
    B = rng.standard_normal((n, k)).astype(dtype)
    a = sx.tensor(A)
    got = (a @ sx.tensor(B).t()).numpy()
    wide = sx.zeros(n, k + 3, dtype=a.dtype)[:, 1:k + 1]
    wide.copy_(sx.tensor(B))
    np.testing.assert_array_equal(got, (a @ wide.t()).numpy())
    want = A.astype(np.float64) @ B.T.astype(np.float64)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())
    half = sx.tensor(np.ascontiguousarray(np.concatenate([B, B], 1)))[:, :k]  # rows 2k apart
    np.testing.assert_array_equal((a @ half.t()).numpy(), got)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.bool_])
@pytest.mark.parametrize("shape,perm", [((8, 256, 8, 64), (0, 2, 1, 3)), ((3, 5, 7, 16), (2, 0, 1, 3)),
                                        ((40, 33, 17), (1, 0, 2)), ((2, 3, 4, 5, 20), (4, 3, 0, 1, 2)),
                                        # parallel chunks that start and end inside a run of rows
                                        ((6, 1000, 3, 16), (0, 2, 1, 3)), ((5, 1001, 3, 24), (2, 0, 1, 3))])
def test_copies_of_whole_rows(threads, dtype, shape, perm):
    a = (np.random.default_rng(4).standard_normal(shape) * 10).astype(dtype)
    got = sx.from_numpy(a).permute(*perm).contiguous().numpy()
    np.testing.assert_array_equal(got, np.ascontiguousarray(a.transpose(perm)))
    # into a strided destination: every other row of a larger buffer
    dst = sx.zeros(*((2,) + a.transpose(perm).shape), dtype=sx.from_numpy(a).dtype)
    dst[1].copy_(sx.from_numpy(a).permute(*perm))
    np.testing.assert_array_equal(dst[1].numpy(), np.ascontiguousarray(a.transpose(perm)))
    assert not dst[0].numpy().any()


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.float16, np.bool_, np.uint8])
@pytest.mark.parametrize("shape,k,transposed", [((513, 684), 3, False), ((40, 30), 2, True), ((7, 9, 33), 4, False),
                                                ((100, 21), 5, True), ((9, 200), 17, False), ((3, 1000), 3, True)])
def test_copies_of_a_source_broadcast_along_the_last_dim(threads, dtype, shape, k, transposed):
    a = (np.random.default_rng(6).standard_normal(shape) * 10).astype(dtype)
    x = sx.from_numpy(np.ascontiguousarray(a.T)).t() if transposed else sx.from_numpy(a)
    got = x.unsqueeze(-1).expand(*shape, k).contiguous().numpy()  # each element repeated k times in a row
    np.testing.assert_array_equal(got, np.repeat(a[..., None], k, -1))
    np.testing.assert_array_equal(x.repeat_interleave(k, dim=-1).numpy(), np.repeat(a, k, -1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int8, np.float16, np.bool_, np.complex64])
@pytest.mark.parametrize("shape", [(5,), (37, 1001), (8, 256, 8, 64)])
def test_copies_of_one_value_broadcast_everywhere(threads, dtype, shape):
    """expand of a 0-d or all-ones tensor (the gradient of sum) made contiguous: dims of stride 0 only, a fill."""
    v = np.array(3 - 2j if dtype == np.complex64 else 3, dtype)
    got = sx.from_numpy(v).expand(*shape).contiguous()
    assert got.is_contiguous() and got.dtype == sx.from_numpy(v).dtype
    np.testing.assert_array_equal(got.numpy(), np.full(shape, v))
    one = sx.from_numpy(v.reshape((1,) * len(shape))).expand(*shape)
    out = sx.zeros(*shape, dtype=one.dtype)
    out.copy_(one)  # into an existing tensor too
    np.testing.assert_array_equal(out.numpy(), np.full(shape, v))


@pytest.mark.parametrize("m,k,n", [(7, 20000, 5), (64, 8192, 288), (64, 300, 1000), (1000, 300, 64), (33, 70, 45)])
@pytest.mark.parametrize("trans", [(False, False), (True, False), (False, True), (True, True)])
def test_matrix_products_split_over_the_pool(threads, m, k, n, trans):
    """Long-K products (cut into K slices), wide and tall ones (cut along N or M) and small ones against
    NumPy float64, with either operand transposed."""
    rng = np.random.default_rng(m + k + n)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    sa = sx.from_numpy(np.ascontiguousarray(a.T)).t() if trans[0] else sx.from_numpy(a)
    sb = sx.from_numpy(np.ascontiguousarray(b.T)).t() if trans[1] else sx.from_numpy(b)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose((sa @ sb).numpy(), ref, rtol=1e-4, atol=1e-4 * np.sqrt(k))


def test_long_k_products_do_not_depend_on_thread_count():
    rng = np.random.default_rng(9)
    a, b = rng.standard_normal((16, 30000)).astype(np.float32), rng.standard_normal((30000, 24)).astype(np.float32)
    n0 = sx.get_num_threads()
    try:
        outs = []
        for n in (1, 2, 3):
            sx.set_num_threads(n)
            outs.append((sx.from_numpy(a) @ sx.from_numpy(b)).numpy())
    finally:
        sx.set_num_threads(n0)
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(outs[0], outs[2])


@pytest.mark.parametrize("batch, m, k, n", [(2, 130, 120, 150), (6, 130, 120, 150), (5, 8, 9000, 12), (7, 3, 4, 5)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batched_products_side_by_side_or_split(batch, m, k, n, dtype):
    """Batches of products run one per thread (4 or more products) or one after the other split over the
    pool (fewer): both against NumPy float64; the side-by-side ones with the same bits at 1, 2 and 3
    threads (a product split along M or N may round differently, as BLAS blocks the pieces differently)."""
    rng = np.random.default_rng(batch * m)
    a, b = rng.standard_normal((batch, m, k)).astype(dtype), rng.standard_normal((batch, k, n)).astype(dtype)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    n0, outs = sx.get_num_threads(), []
    try:
        for t in (1, 2, 3):
            sx.set_num_threads(t)
            outs.append((sx.from_numpy(a) @ sx.from_numpy(b)).numpy())
    finally:
        sx.set_num_threads(n0)
    for out in outs:
        np.testing.assert_allclose(out, ref, rtol=tol, atol=tol * np.sqrt(k))
    if batch >= 4:
        np.testing.assert_array_equal(outs[0], outs[1])
        np.testing.assert_array_equal(outs[0], outs[2])


@pytest.mark.parametrize("n", [1, 7, 8, 9, 130, 255, 257])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sums_of_many_short_rows(threads, n, dtype):
    a = np.random.default_rng(n).standard_normal((40, 50, n)).astype(dtype)
    ref = a.astype(np.float64)
    tol = 1e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(sx.from_numpy(a).sum(-1, keepdim=True).numpy(), ref.sum(-1, keepdims=True), rtol=tol,
                               atol=tol * np.abs(ref).sum(-1, keepdims=True).max())
    np.testing.assert_allclose(sx.from_numpy(a).norm(dim=-1).numpy(), np.sqrt((ref * ref).sum(-1)), rtol=tol)
    np.testing.assert_allclose(sx.from_numpy(a).mean(-1).numpy(), ref.mean(-1), rtol=tol, atol=tol)


BOUND_SHAPES = [((300, 400), (400,), (300, 1)), ((300, 400), (300, 400), (300, 400)), ((300, 400), (300, 1), (400,)),
                ((300, 400), (), (1, 400)), ((1, 400), (300, 1), (300, 400))]


@pytest.mark.parametrize("shape,other", [((3000, 16), (3000, 1)), ((40, 128, 13), (128, 1)), ((7, 5, 2000), (5, 1)),
                                         ((5000, 9), (9,)), ((3, 4, 5000), (4, 5000)), ((70000,), ())], ids=str)
@pytest.mark.parametrize("thread_count", [1, 2, 3])
def test_binary_ops_over_batches_of_short_rows(shape, other, thread_count):
    # rows handed to the kernel in batches along the second-to-last dim, chunks of the thread pool starting
    # and ending mid-row and mid-batch; operands broadcast, permuted and written in place
    rng = np.random.default_rng(len(shape))
    a, b = rng.standard_normal(shape).astype(np.float32), rng.standard_normal(other).astype(np.float32)
    n0 = sx.get_num_threads()
    sx.set_num_threads(thread_count)
    try:
        x, y = sx.from_numpy(a), sx.from_numpy(b)
        np.testing.assert_array_equal((x + y).numpy(), a + b)
        np.testing.assert_array_equal((y - x).numpy(), b - a)
        np.testing.assert_array_equal(sx.maximum(x, y).numpy(), np.maximum(a, b))
        np.testing.assert_array_equal((x < y).numpy(), a < b)
        np.testing.assert_array_equal(sx.add(x, y, alpha=0.5).numpy(), a + np.float32(0.5) * b)
        t, at = (x.transpose(0, 1), a.swapaxes(0, 1)) if a.ndim >= 2 else (x[::3], a[::3])  # strided views
        np.testing.assert_array_equal((t * 2.0).numpy(), at * 2)
        np.testing.assert_array_equal(t.neg().numpy(), -at)
        sl, asl = x[..., 1:], a[..., 1:]  # rows contiguous, a gap between them: unary rows in batches
        np.testing.assert_array_equal(sl.relu().numpy(), np.maximum(asl, 0))
        yc, bc = (y[..., :1], b[..., :1]) if b.ndim else (y, b)
        np.testing.assert_array_equal((sl - yc).numpy(), asl - bc)
        np.testing.assert_allclose(sl.exp().numpy(), np.exp(asl.astype(np.float64)), rtol=2e-6)
        np.testing.assert_array_equal(sl.to(sx.float64).numpy(), asl.astype(np.float64))
        z = x.clone()
        z += y
        np.testing.assert_array_equal(z.numpy(), a + b)
    finally:
        sx.set_num_threads(n0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.uint8])
@pytest.mark.parametrize("width", [1, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 127, 128, 129])
def test_binary_ops_on_short_rows_of_every_dtype(dtype, width):
    # rows shorter than 128 elements run in chunks of two vectors of results (8 int64 / float64, 16
    # float32 / int32, 64 bools) and a tail: both inputs along the row, a column against rows and rows
    # against a column, in place too; uint8 products and differences wrap as in NumPy
    rng = np.random.default_rng(width)
    a, b = ((rng.standard_normal((37, width)) * 50).astype(dtype) for _ in range(2))
    c = (rng.standard_normal((37, 1)) * 50).astype(dtype)
    x, y, z = sx.from_numpy(a), sx.from_numpy(c), sx.from_numpy(b)
    for p, q, pa, qa in ((x, z, a, b), (x, y, a, c), (y, x, c, a)):
        np.testing.assert_array_equal((p * q).numpy(), pa * qa)
        np.testing.assert_array_equal((p - q).numpy(), pa - qa)
        np.testing.assert_array_equal((p < q).numpy(), pa < qa)
    w = x.clone()
    w *= y
    np.testing.assert_array_equal(w.numpy(), a * c)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_maximum_minimum_propagate_nan_from_either_side(threads, dtype):
    # every pair of special values, long enough for the vector loop and its tail, contiguous and against a scalar
    v = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -2.0, 3.5], dtype)
    a, b = np.repeat(v, len(v)), np.tile(v, len(v))
    for mine, ref in ((sx.maximum, np.maximum), (sx.minimum, np.minimum)):
        np.testing.assert_array_equal(mine(sx.tensor(a), sx.tensor(b)).numpy(), ref(a, b))
        for s in v:
            col = np.full_like(a, s)
            np.testing.assert_array_equal(mine(sx.tensor(a), sx.tensor(col[:1]).reshape(())).numpy(), ref(a, col))
            np.testing.assert_array_equal(mine(sx.tensor(col[:1]).reshape(()), sx.tensor(a)).numpy(), ref(col, a))


@pytest.mark.parametrize("shapes", BOUND_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.float16])
def test_clamp_with_tensor_bounds(threads, shapes, dtype):
    rng = np.random.default_rng(0)
    x, lo, hi = (rng.uniform(-3, 3, s).astype(dtype) for s in shapes)
    ref = np.minimum(np.maximum(x, lo), hi)
    got = sx.clamp(sx.tensor(x), sx.tensor(lo), sx.tensor(hi))
    np.testing.assert_array_equal(got.numpy(), ref)
    np.testing.assert_array_equal(sx.clamp(sx.tensor(x), min=sx.tensor(lo)).numpy(), np.maximum(x, lo))
    np.testing.assert_array_equal(sx.clamp(sx.tensor(x), max=sx.tensor(hi)).numpy(), np.minimum(x, hi))


def test_clamp_tensor_bounds_nan_rules_and_gradient():
    x = np.array([np.nan, -2.0, 0.5, 2.0, 1.0], dtype=np.float32)
    lo = np.array([0.0, np.nan, 0.0, 0.0, 1.0], dtype=np.float32)
    hi = np.array([1.0, 1.0, np.nan, 1.0, 1.0], dtype=np.float32)
    got = sx.clamp(sx.tensor(x), sx.tensor(lo), sx.tensor(hi)).numpy()
    np.testing.assert_array_equal(got, [np.nan, np.nan, np.nan, 1.0, 1.0])  # NaN x or NaN bound: NaN
    t = sx.tensor(np.array([-2.0, 0.5, 2.0, 1.0]), requires_grad=True)
    lt = sx.tensor(np.array([0.0, 0.0, 0.0, 1.0]), requires_grad=True)
    sx.clamp(t, lt, sx.tensor(np.ones(4))).sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), [0.0, 1.0, 0.0, 1.0])  # at a tie x keeps the gradient
    np.testing.assert_array_equal(lt.grad.numpy(), [1.0, 0.0, 0.0, 0.0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_clamp_tensor_bounds_nan_in_long_rows(threads, dtype):
    # rows long enough for the max/min loop; a NaN bound in its vector body or its tail sends the row back
    # to the exact rule, and the other rows (and a NaN x) must come out the same
    rng = np.random.default_rng(1)
    x = rng.uniform(-3, 3, (37, 133)).astype(dtype)
    x[4, 17] = x[9, 132] = np.nan
    lo = rng.uniform(-2, 0, 133).astype(dtype)
    hi = rng.uniform(0, 2, (37, 1)).astype(dtype)
    lo_nan, hi_nan = lo.copy(), hi.copy()
    lo_nan[[5, 130]] = np.nan
    hi_nan[3] = np.nan
    for l, h in ((lo, hi), (lo_nan, hi), (lo, hi_nan), (lo_nan, hi_nan), (np.broadcast_to(lo_nan, x.shape).copy(), hi)):
        got = sx.clamp(sx.tensor(x), sx.tensor(l), sx.tensor(h)).numpy()
        np.testing.assert_array_equal(got, np.minimum(np.maximum(x, l), h))
        np.testing.assert_array_equal(sx.clamp(sx.tensor(x), min=sx.tensor(l)).numpy(), np.maximum(x, l))
        np.testing.assert_array_equal(sx.clamp(sx.tensor(x), max=sx.tensor(h)).numpy(), np.minimum(x, h))


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.int8])
def test_clamp_scalar_bounds_integer_and_inverted(threads, dtype):
    x = np.random.default_rng(0).integers(-100, 100, (500, 300)).astype(dtype)
    np.testing.assert_array_equal(sx.tensor(x).clamp(-7, 9).numpy(), np.clip(x, -7, 9))
    # min above max: every element becomes max (min(max(x, lo), hi))
    np.testing.assert_array_equal(sx.tensor(x).clamp(5, 2).numpy(), np.minimum(np.maximum(x, 5), 2))


@pytest.mark.parametrize("k", [-1000, -301, -5, -1, 0, 1, 3, 399, 401, 10**15])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int16, np.bool_])
def test_tril_triu_rows(threads, k, dtype):
    a = np.random.default_rng(0).standard_normal((3, 300, 400)) > 0 if dtype == np.bool_ else \
        np.random.default_rng(0).standard_normal((3, 300, 400)).astype(dtype) * 10
    np.testing.assert_array_equal(sx.tensor(a).tril(k).numpy(), np.tril(a, k))
    np.testing.assert_array_equal(sx.tensor(a).triu(k).numpy(), np.triu(a, k))
    view = sx.tensor(a).transpose(1, 2)  # a strided input
    np.testing.assert_array_equal(sx.tril(view, k).numpy(), np.tril(a.transpose(0, 2, 1), k))


def test_tril_gradient_is_the_mask():
    t = sx.tensor(np.ones((4, 5)), requires_grad=True)
    (sx.tril(t, 1) * sx.tensor(np.arange(20.0).reshape(4, 5))).sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), np.tril(np.arange(20.0).reshape(4, 5), 1))


def _close(got, want, scale, dtype):
    """|got - want| within a few roundings of the sum of |products| (``scale``) at every element."""
    assert got.shape == want.shape
    err = float((np.abs(got - want) / scale).max())
    assert err <= (2e-6 if dtype == np.float32 else 1e-13), f"error {err:.3g} of the sum of |products|"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k,n", [(1, 5), (3, 1030), (17, 2049), (64, 4099), (512, 1536), (2048, 513), (4097, 7)])
def test_one_row_and_one_column_products(threads, dtype, k, n):
    # x (1, k) times W: W stored (k, n) (rows streamed, k split across tasks when large), W^T of a
    # (n, k) matrix (a dot per column), through linear (bias accumulated into the output), with x
    # a strided view, over a batch, and the one-column forms W^T x and W x.
    rng = np.random.default_rng(k * n)
    x, w, b = rng.standard_normal(k), rng.standard_normal((k, n)), rng.standard_normal(n)
    want, scale = x @ w, np.abs(x) @ np.abs(w) + 1
    xs, ws = sx.from_numpy(x.astype(dtype)), sx.from_numpy(w.astype(dtype))
    wt = sx.from_numpy(np.ascontiguousarray(w.T).astype(dtype))
    _close((xs.unsqueeze(0) @ ws).numpy()[0], want, scale, dtype)
    _close((xs.unsqueeze(0) @ wt.t()).numpy()[0], want, scale, dtype)
    _close(F.linear(xs.reshape(1, 1, k), wt, sx.from_numpy(b.astype(dtype))).numpy()[0, 0],
           want + b, scale, dtype)
    strided = sx.from_numpy(np.stack([x, -x], 1).astype(dtype))[:, 0]
    _close((strided.unsqueeze(0) @ ws).numpy()[0], want, scale, dtype)
    batch = sx.from_numpy(np.stack([x, 2 * x]).astype(dtype)).unsqueeze(1)
    _close((batch @ ws).numpy()[:, 0], np.stack([want, 2 * want]), 2 * scale, dtype)
    _close((wt @ xs.unsqueeze(1)).numpy()[:, 0], want, scale, dtype)
    _close((ws.t() @ xs.unsqueeze(1)).numpy()[:, 0], want, scale, dtype)


def test_one_row_product_does_not_depend_on_thread_count():
    rng = np.random.default_rng(5)
    x = sx.from_numpy(rng.standard_normal((1, 2048)).astype(np.float32))
    w = sx.from_numpy(rng.standard_normal((2048, 1536)).astype(np.float32))
    n0 = sx.get_num_threads()
    try:
        outs = []
        for n in (1, 2, 3):
            sx.set_num_threads(n)
            outs.append((x @ w).numpy())
    finally:
        sx.set_num_threads(n0)
    for o in outs[1:]:
        np.testing.assert_array_equal(o, outs[0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,k,n", [(2, 1024, 4096), (3, 4099, 1025), (4, 128, 384), (5, 13, 257), (6, 300, 301),
                                   (7, 1, 256), (8, 129, 513), (8, 7, 1000)])
def test_few_row_products_in_register_blocks(threads, dtype, m, k, n):
    """x (m, k) @ W^T with W stored (n, k), m = 2..8 (linear at a small decoding batch): blocks of
    rows x columns of vector accumulators, odd last columns and K tails; with a bias (accumulated
    into the output), with x a strided view, and the same bits at 1 and 2 threads."""
    rng = np.random.default_rng(m * k + n)
    x, w, b = rng.standard_normal((m, k)), rng.standard_normal((n, k)), rng.standard_normal(n)
    want, scale = x @ w.T, np.abs(x) @ np.abs(w).T + 1
    xs, ws = sx.from_numpy(x.astype(dtype)), sx.from_numpy(w.astype(dtype))
    got = F.linear(xs, ws).numpy()
    _close(got, want, scale, dtype)
    _close(F.linear(xs, ws, sx.from_numpy(b.astype(dtype))).numpy(), want + b, scale, dtype)
    wide = sx.from_numpy(np.concatenate([x, -x], 1).astype(dtype))[:, :k]  # rows k apart, stride 2k
    _close((wide @ ws.t()).numpy(), want, scale, dtype)
    n0 = sx.get_num_threads()
    try:
        sx.set_num_threads(1 if n0 > 1 else 2)
        np.testing.assert_array_equal(F.linear(xs, ws).numpy(), got)
    finally:
        sx.set_num_threads(n0)


COPY_DTYPES = [np.float32, np.float64, np.int8, np.int16, np.float16, np.bool_]


def _values(shape, dtype, seed=0):
    a = np.random.default_rng(seed).standard_normal(shape) * 50
    return (a > 0) if dtype == np.bool_ else a.astype(dtype)


@pytest.mark.parametrize("dtype", COPY_DTYPES)
@pytest.mark.parametrize("shape,perm", [((4, 9, 3, 16), (0, 2, 1, 3)), ((5, 7, 33), (1, 0, 2)), ((6, 5, 100), (1, 0, 2)),
                                        ((3, 4, 257), (1, 0, 2)), ((2, 3, 1030), (1, 0, 2))])
def test_copies_of_short_and_long_rows(threads, dtype, shape, perm):
    """Rows of 16 to a few hundred bytes (inline vector moves with a ragged tail) and rows past 1 KiB."""
    a = _values(shape, dtype)
    got = sx.tensor(a).permute(*perm).contiguous().numpy()
    np.testing.assert_array_equal(got, np.ascontiguousarray(a.transpose(perm)))
    # from a sliced source into a sliced destination (rows start at odd addresses)
    src = sx.tensor(a)[..., 1:]
    dst = sx.zeros(*(a.transpose(perm).shape[:-1] + (shape[-1],)), dtype=src.dtype)  # one spare column
    dst[..., :-1].copy_(src.permute(*perm))
    np.testing.assert_array_equal(dst[..., :-1].numpy(), np.ascontiguousarray(a[..., 1:].transpose(perm)))
    assert not dst[..., -1].numpy().any()


@pytest.mark.parametrize("dtype", COPY_DTYPES)
@pytest.mark.parametrize("shape,shift,dim", [((300, 1184), 1, 1), ((300, 1184), -3, 1), ((40, 5000), 7, 1),
                                             ((300, 1184), 1, 0), ((300, 1184), 5, None), ((1, 100003), 64, None)])
def test_roll_copies_rows_into_shifted_views(threads, dtype, shape, shift, dim):
    """Rolls copy long rows whose destination lies a few bytes above the source (copied backward)."""
    a = _values(shape, dtype, 1)
    got = sx.tensor(a).roll(shift, dim) if dim is not None else sx.roll(sx.tensor(a), shift)
    np.testing.assert_array_equal(got.numpy(), np.roll(a, shift, dim))
    t = sx.tensor(a).t()  # a transposed source
    got = t.roll(shift, 0 if dim is None else dim)
    np.testing.assert_array_equal(got.numpy(), np.roll(a.T, shift, 0 if dim is None else dim))


@pytest.mark.parametrize("dtype", COPY_DTYPES)
@pytest.mark.parametrize("n", [1, 7, 64, 1185])
def test_cat_into_shifted_views(threads, dtype, n):
    a, b = _values((50, n), dtype, 2), _values((50, 3), dtype, 3)
    for y in (b, _values((3, n), dtype, 5)):  # in front of a along dim 1, then along dim 0
        d = 1 if y is b else 0
        got = sx.cat([sx.tensor(y), sx.tensor(a)], d).numpy()
        np.testing.assert_array_equal(got, np.concatenate([y, a], d))
    got = sx.stack([sx.tensor(a), sx.tensor(a[::-1].copy())]).numpy()
    np.testing.assert_array_equal(got, np.stack([a, a[::-1]]))


@pytest.mark.parametrize("dtype", COPY_DTYPES)
def test_large_cat_of_views(threads, dtype):
    """Outputs past one grain: inputs dense from the cat dim on (narrow views too) are copied block by
    block, many rows split over threads, few long rows (cat along dim 0) in pieces; inputs whose leading
    dims do not collapse into one stride take the general copy."""
    a, b = _values((70, 600), dtype, 30), _values((6, 20, 600), dtype, 31)
    x, y, f = sx.tensor(a), sx.tensor(b), sx.tensor(a).reshape(-1)
    cases = [([x[:, 5:], x[:, :5]], 1, [a[:, 5:], a[:, :5]]), ([x[10:], x[:10]], 0, [a[10:], a[:10]]),
             ([f[7:], f[:7]], 0, [a.reshape(-1)[7:], a.reshape(-1)[:7]]),
             ([x[:3].reshape(3, 2, 300)[:, 1], x[3:6].reshape(3, 2, 300)[:, 0], x[:3]], 1,
              [a[:3].reshape(3, 2, 300)[:, 1], a[3:6].reshape(3, 2, 300)[:, 0], a[:3]]),
             ([y[:, :10, 100:], y[:, 10:, :100]], 2, [b[:, :10, 100:], b[:, 10:, :100]]),
             ([x, x.flip(0), x.t().t()], -1, [a, a[::-1], a])]
    for xs, d, arrays in cases:
        np.testing.assert_array_equal(sx.cat(xs, d).numpy(), np.concatenate(arrays, d))
    np.testing.assert_array_equal(sx.stack([x, x.flip(1), x], -1).numpy(), np.stack([a, a[:, ::-1], a], -1))


@pytest.mark.parametrize("dtype", [np.float32, np.int8])
def test_roll_every_small_shift(threads, dtype):
    """Shifts of 1 to 80 elements put the destination 1 to 320 bytes above the source: copied forward a
    block ahead, backward, or by memcpy, by the distance modulo 4 KiB."""
    a = _values((40, 1200), dtype, 32)
    for s in range(1, 81, 3):
        np.testing.assert_array_equal(sx.tensor(a).roll(s, 1).numpy(), np.roll(a, s, 1))
        np.testing.assert_array_equal(sx.roll(sx.tensor(a), -s).numpy(), np.roll(a, -s))


@pytest.mark.parametrize("dtype", COPY_DTYPES)
@pytest.mark.parametrize("shapes,d", [([(6, 9, 1), (6, 9, 12)], -1), ([(2, 3, 4), (2, 5, 4), (2, 1, 4)], 1),
                                      ([(3, 4), (1, 4), (0, 4)], 0), ([(5,), (7,)], 0), ([(4, 0), (4, 3)], 1)])
def test_small_cat_of_contiguous_inputs(threads, dtype, shapes, d):
    """Small outputs from contiguous inputs take the direct block copy; other layouts the general one."""
    arrays = [_values(s, dtype, 10 + i) for i, s in enumerate(shapes)]
    want = np.concatenate(arrays, d)
    np.testing.assert_array_equal(sx.cat([sx.tensor(a) for a in arrays], d).numpy(), want)
    # a legacy empty input, a transposed input, a sliced input: same result
    with_empty = [sx.tensor(arrays[0]), sx.tensor(np.zeros(0, arrays[0].dtype)), *map(sx.tensor, arrays[1:])]
    np.testing.assert_array_equal(sx.cat(with_empty, d).numpy(), want)
    t = sx.tensor(np.ascontiguousarray(np.swapaxes(arrays[-1], 0, -1))).transpose(0, -1)
    np.testing.assert_array_equal(sx.cat([*map(sx.tensor, arrays[:-1]), t], d).numpy(), want)


@pytest.mark.parametrize("dtype", COPY_DTYPES)
@pytest.mark.parametrize("width", [1, 2, 4])
def test_small_cat_of_short_blocks(threads, dtype, width):
    """Blocks of 1 to 16 bytes per input and row (stack along the last dim, cat of narrow last dims)
    take fixed-size moves; longer ones the general run copy."""
    arrays = [_values((5, 7, width), dtype, 20 + i) for i in range(3)]
    np.testing.assert_array_equal(sx.cat([sx.tensor(a) for a in arrays], -1).numpy(), np.concatenate(arrays, -1))
    flat = [a[..., 0] for a in arrays]
    np.testing.assert_array_equal(sx.stack([sx.tensor(a) for a in flat], -1).numpy(), np.stack(flat, -1))


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float64, np.int64])
@pytest.mark.parametrize("count", [2, 3, 4, 5])
@pytest.mark.parametrize("n", [1, 5, 16, 33, 1001, 40000])
def test_stack_last_interleaves(threads, dtype, count, n):
    """Stacking 2-4 inputs of 4- or 8-byte elements along the last dim interleaves them a vector of
    each at a time (the rest of a row element by element; AVX2 builds 2 or 4 inputs); 5 inputs, and
    inputs whose rows are not adjacent, take the block moves. Every bit pattern moves unchanged."""
    bits = np.random.default_rng(n + count).integers(0, 2**63, (count, n), dtype=np.int64)
    arrays = [np.ascontiguousarray(b.view(np.uint32)[: 2 * n : 2] if np.dtype(dtype).itemsize == 4 else b).view(dtype)
              for b in bits]
    want = np.stack(arrays, -1)
    got = sx.stack([sx.from_numpy(a) for a in arrays], -1).numpy()
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
    two_d = [a.reshape(1, n) for a in arrays]  # rows of the last dim: a cat of (1, n, 1) blocks
    got = sx.cat([sx.from_numpy(a).unsqueeze(-1) for a in two_d], -1).numpy()
    np.testing.assert_array_equal(got.view(np.uint8), np.stack(two_d, -1).view(np.uint8))
    sliced = [sx.from_numpy(np.repeat(a, 2))[::2] for a in arrays]  # every other element: not adjacent
    np.testing.assert_array_equal(sx.stack(sliced, -1).numpy().view(np.uint8), want.view(np.uint8))


def test_small_cat_promotes_and_records_gradients():
    a, b = sx.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3), requires_grad=True), sx.arange(4).reshape(2, 2)
    c = sx.cat([a, b], 1)
    assert c.dtype == sx.float32
    np.testing.assert_array_equal(c.detach().numpy(), np.concatenate([a.detach().numpy(), b.numpy()], 1))
    w = np.arange(12.0, dtype=np.float32).reshape(2, 6)
    (sx.cat([a, a * 2], 1) * sx.tensor(w)).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), w[:, :3] + 2 * w[:, 3:])


@pytest.mark.parametrize("dtype", COPY_DTYPES)
@pytest.mark.parametrize("dims", [(1,), (0,), (0, 1), (-1, 0)])
def test_flip_rows(threads, dtype, dims):
    a = _values((37, 1001), dtype, 4)
    np.testing.assert_array_equal(sx.tensor(a).flip(dims).numpy(), np.flip(a, dims))
    # a transposed and a sliced source
    np.testing.assert_array_equal(sx.tensor(a).t().flip(dims).numpy(), np.flip(a.T, dims))
    np.testing.assert_array_equal(sx.tensor(a)[:, 3::2].flip(dims).numpy(), np.flip(a[:, 3::2], dims))


def test_flip_of_a_flipped_view_and_gradient():
    a = np.arange(24.0).reshape(2, 3, 4)
    x = sx.tensor(a, requires_grad=True)
    y = x.flip((2,)).flip((2, 0))
    np.testing.assert_array_equal(y.detach().numpy(), a[::-1])
    g = np.random.default_rng(0).standard_normal((2, 3, 4))
    y.backward(sx.tensor(g))
    np.testing.assert_array_equal(x.grad.numpy(), g[::-1])


LERP_SHAPES = [((300, 401), (300, 401), ()), ((300, 401), (300, 401), (300, 401)), ((300, 1), (401,), (300, 401)),
               ((300, 401), (1, 401), (300, 1)), ((7,), (7,), (7,))]


@pytest.mark.parametrize("shapes", LERP_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_lerp_in_one_pass(threads, shapes, dtype):
    rng = np.random.default_rng(5)
    a, b = (rng.standard_normal(s) * 4 for s in shapes[:2])
    w = rng.uniform(-0.5, 1.5, shapes[2])
    a, b, w = a.astype(dtype), b.astype(dtype), w.astype(dtype)
    ref = a.astype(np.float64) + w.astype(np.float64) * (b.astype(np.float64) - a.astype(np.float64))
    got = sx.lerp(sx.from_numpy(a), sx.from_numpy(b), sx.from_numpy(w)).numpy()
    assert got.dtype == dtype and got.shape == ref.shape
    tol = {np.float32: 1e-6, np.float64: 1e-14, np.float16: 1e-3}[dtype]
    scale = np.abs(a).max() + np.abs(b).max()
    np.testing.assert_allclose(got, ref, rtol=tol, atol=4 * tol * scale)
    if any(len(sh) == 1 for sh in shapes):
        return
    # transposed operands
    got = sx.lerp(sx.from_numpy(a).t(), sx.from_numpy(b).t(), sx.from_numpy(w).t()).numpy()
    np.testing.assert_allclose(got, ref.T, rtol=tol, atol=4 * tol * scale)


def test_lerp_scalar_weight_bfloat16_and_end_points():
    a = np.random.default_rng(6).standard_normal((50, 70)).astype(np.float32)
    b = np.random.default_rng(7).standard_normal((50, 70)).astype(np.float32)
    np.testing.assert_allclose(sx.from_numpy(a).lerp(sx.from_numpy(b), 0.3).numpy(), a + 0.3 * (b - a), rtol=1e-6,
                               atol=1e-6)
    # the end points are exact: w = 0 gives a, w = 1 gives b
    np.testing.assert_array_equal(sx.lerp(sx.from_numpy(a), sx.from_numpy(b), 0.0).numpy(), a)
    np.testing.assert_array_equal(sx.lerp(sx.from_numpy(a), sx.from_numpy(b), 1.0).numpy(), b)
    ab, bb = sx.from_numpy(a).to(sx.bfloat16), sx.from_numpy(b).to(sx.bfloat16)
    got = sx.lerp(ab, bb, 0.75).to(sx.float32).numpy()
    ra, rb = ab.to(sx.float32).numpy().astype(np.float64), bb.to(sx.float32).numpy().astype(np.float64)
    np.testing.assert_allclose(got, ra + 0.75 * (rb - ra), rtol=1e-2, atol=1e-2)
    x = sx.from_numpy(a.copy())
    x.lerp_(sx.from_numpy(b), 0.25)
    np.testing.assert_allclose(x.numpy(), a + 0.25 * (b - a), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("n", [7, 256, 1001])
def test_float16_clamp_and_lerp_in_widened_blocks(threads, n):
    # float16 clamp (scalar bounds, tensor bounds broadcast along and across rows, NaN in x and in a
    # bound) and lerp (scalar and tensor weight, in place) on rows longer and shorter than a block,
    # against NumPy in float32 rounded to float16
    rng = np.random.default_rng(n)
    a, b = (rng.standard_normal((5, n)) * 2).astype(np.float16), rng.standard_normal((5, n)).astype(np.float16)
    a[1, ::5] = np.nan
    lo = (-np.abs(rng.standard_normal(n))).astype(np.float16)
    hi = np.abs(rng.standard_normal((5, 1))).astype(np.float16)
    lo[3] = np.nan
    x, f = sx.from_numpy(a), a.astype(np.float32)
    np.testing.assert_array_equal(x.clamp(-1.5, 0.75).numpy(), np.clip(f, -1.5, 0.75).astype(np.float16))
    np.testing.assert_array_equal(x.clamp(min=0.25).numpy(), np.maximum(f, 0.25).astype(np.float16))
    np.testing.assert_array_equal(x.clamp(max=0.25).numpy(), np.minimum(f, 0.25).astype(np.float16))
    want = np.where((f < lo) | np.isnan(lo), lo, f)
    want = np.where((want > hi) | np.isnan(hi), hi, want).astype(np.float16)
    np.testing.assert_array_equal(x.clamp(sx.from_numpy(lo), sx.from_numpy(hi)).numpy(), want)
    af, bf, w = a.astype(np.float32), b.astype(np.float32), rng.random((5, n)).astype(np.float16)
    # (a number weight becomes a tensor of the inputs' dtype: 0.3 is float16's 0.2998)
    for weight, wf in ((0.3, np.float32(np.float16(0.3))), (sx.from_numpy(w), w.astype(np.float32))):
        d = bf - af
        ref = np.where(np.abs(wf) < 0.5, af + wf * d, bf - d * (1 - wf)).astype(np.float16)
        got = sx.lerp(x, sx.from_numpy(b), weight).numpy()
        np.testing.assert_allclose(got.astype(np.float32), ref.astype(np.float32), rtol=2**-10, atol=2**-14)
        y = sx.from_numpy(a.copy())
        y.lerp_(sx.from_numpy(b), weight)
        np.testing.assert_array_equal(y.numpy(), got)


def test_lerp_gradient_with_tensor_weight():
    rng = np.random.default_rng(8)
    a, b, w = rng.standard_normal((4, 5)), rng.standard_normal((4, 5)), rng.uniform(0, 1, (5,))
    ta, tb, tw = (sx.tensor(v, requires_grad=True) for v in (a, b, w))
    g = rng.standard_normal((4, 5))
    sx.lerp(ta, tb, tw).backward(sx.tensor(g))
    np.testing.assert_allclose(ta.grad.numpy(), g * (1 - w), rtol=1e-12)
    np.testing.assert_allclose(tb.grad.numpy(), g * w, rtol=1e-12)
    np.testing.assert_allclose(tw.grad.numpy(), (g * (b - a)).sum(0), rtol=1e-12)


def test_block_cache_hands_back_the_block_freed_last():
    """Freed blocks of one size come back latest first, so a loop that makes and drops a result of
    that size keeps reusing the block still in cache instead of cycling through every cached one."""
    blocks = [sx.empty(1 << 18) for _ in range(4)]  # 1 MiB each: cached when freed
    ptrs = [t.data_ptr() for t in blocks]
    while blocks:
        blocks.pop(0)  # freed first to last
    seen = set()
    for _ in range(6):
        y = sx.empty(1 << 18)
        seen.add(y.data_ptr())
        del y
    assert seen == {ptrs[-1]}


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int64, np.uint8, np.bool_])
def test_where_in_every_operand_layout(threads, dtype):
    # Contiguous operands, a scalar on either side (or both), broadcast rows and a transposed mask
    # (the generic strided loop): each against NumPy, bit for bit.
    rng = np.random.default_rng(5)
    cond = rng.random((37, 300)) < 0.5
    a, b, row = ((rng.standard_normal(sh) * 50 + 60).astype(dtype) for sh in ((37, 300), (37, 300), (1, 300)))
    s = np.array(3, dtype)
    for c, x, y in ((cond, a, b), (cond, a, s), (cond, s, b), (cond, s, s), (cond, row, b),
                    (np.ascontiguousarray(cond.T).T, a, b)):
        got = sx.where(sx.from_numpy(np.asarray(c)), sx.from_numpy(np.asarray(x)), sx.from_numpy(np.asarray(y)))
        np.testing.assert_array_equal(got.numpy(), np.where(c, x, y))


def test_where_takes_any_nonzero_mask_byte_as_true():
    # a bool array viewed from bytes other than 0 and 1 (NumPy treats them as True)
    raw = np.array([0, 1, 2, 255, 128, 0, 7, 64] * 9, np.uint8)
    cond = raw.view(np.bool_)
    a, b = np.arange(72, dtype=np.float32), -np.ones(72, np.float32)
    got = sx.where(sx.from_numpy(cond), sx.from_numpy(a), sx.from_numpy(b))
    np.testing.assert_array_equal(got.numpy(), np.where(raw != 0, a, b))


BOOL_TARGETS = [np.float32, np.float64, np.float16, np.int64, np.int32, np.int16, np.int8, np.uint8]


@pytest.mark.parametrize("n", [1, 63, 64, 1000, 100_003])
def test_bool_conversions_and_logical_not(threads, n):
    # bool tensors are read as bytes (the vector loop and its tail, and a strided view): conversions to
    # every dtype, logical_not, all, a float32 times a mask, each against NumPy
    m = np.random.default_rng(n).random(n) < 0.5
    for t, a in ((sx.from_numpy(m), m), (sx.from_numpy(m)[::3], m[::3])):
        for dt in BOOL_TARGETS:
            got = t.to(getattr(sx, np.dtype(dt).name))
            np.testing.assert_array_equal(got.numpy(), a.astype(dt))
        np.testing.assert_array_equal(sx.logical_not(t).numpy(), ~a)
        np.testing.assert_array_equal((~t).numpy(), ~a)
        assert bool(t.all()) == bool(a.all()) and bool((t | ~t).all())
        x = np.arange(a.size, dtype=np.float32) - 7
        np.testing.assert_array_equal((sx.from_numpy(x) * t).numpy(), x * a)


def test_bool_bytes_other_than_one_read_as_true():
    # a bool array viewed from bytes other than 0 and 1: every nonzero byte converts to 1 and negates
    # to False, as in NumPy's comparisons with zero
    raw = np.array([0, 1, 2, 255, 128, 0, 7, 64] * 9, np.uint8)
    t, want = sx.from_numpy(raw.view(np.bool_)), raw != 0
    for dt in BOOL_TARGETS:
        np.testing.assert_array_equal(t.to(getattr(sx, np.dtype(dt).name)).numpy(), want.astype(dt))
    np.testing.assert_array_equal(sx.logical_not(t).numpy(), ~want)
    assert not bool(t.all()) and bool(t[1:5].all())


BOOL_BINARY = {"maximum": (sx.maximum, np.maximum), "minimum": (sx.minimum, np.minimum),
               "add": (lambda a, b: a + b, np.logical_or), "mul": (lambda a, b: a * b, np.logical_and),
               "eq": (lambda a, b: a == b, np.equal), "ne": (lambda a, b: a != b, np.not_equal),
               "lt": (lambda a, b: a < b, np.less), "le": (lambda a, b: a <= b, np.less_equal),
               "gt": (lambda a, b: a > b, np.greater), "ge": (lambda a, b: a >= b, np.greater_equal)}


@pytest.mark.parametrize("name", sorted(BOOL_BINARY))
def test_binary_ops_of_bool_tensors(threads, name):
    # computed on bools: contiguous, a broadcast row, a scalar and a transposed operand, and masks viewed
    # from bytes other than 0 and 1 (true), each against NumPy on the truth values
    ours, ref = BOOL_BINARY[name]
    rng = np.random.default_rng(3)
    raw = rng.integers(0, 4, (37, 300)).astype(np.uint8) * rng.integers(0, 2, (37, 300)).astype(np.uint8)
    a, b, row = raw.view(np.bool_), rng.random((37, 300)) < 0.5, rng.random((1, 300)) < 0.5
    two = np.array(2, np.uint8).view(np.bool_)  # a scalar true held as the byte 2
    for x, y in ((a, b), (b, a), (a, row), (a, np.array(True)), (np.array(False), b), (np.ascontiguousarray(b.T).T, a),
                 (two, b), (b, two), (two, row)):
        got = ours(sx.from_numpy(np.asarray(x)), sx.from_numpy(np.asarray(y)))
        assert got.dtype == sx.bool
        np.testing.assert_array_equal(got.numpy().view(np.uint8), ref(np.asarray(x) != 0, np.asarray(y) != 0))


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.int32, np.int64, np.bool_])
def test_integer_and_bool_extremes_and_all_any_over_dims(threads, dtype):
    # max / min (amax, amin, max(dim)) in the element type, all and any, over every dim and all dims,
    # against NumPy; values at the type's limits
    rng = np.random.default_rng(4)
    if dtype == np.bool_:
        a = rng.random((9, 70, 130)) < 0.5
    else:
        info = np.iinfo(dtype)
        a = rng.integers(info.min, info.max, (9, 70, 130), endpoint=True).astype(dtype)
        a[0, 0, :3] = [info.min, info.max, 0]
    x = sx.from_numpy(a)
    for dim in (None, 0, 1, 2, (0, 2)):
        np.testing.assert_array_equal(x.amax(dim=dim).numpy() if dim is not None else x.max().numpy(), a.max(axis=dim))
        np.testing.assert_array_equal(x.amin(dim=dim).numpy() if dim is not None else x.min().numpy(), a.min(axis=dim))
        np.testing.assert_array_equal(x.all(dim=dim).numpy() if dim is not None else x.all().numpy(), a.all(axis=dim))
        np.testing.assert_array_equal(x.any(dim=dim).numpy() if dim is not None else x.any().numpy(), a.any(axis=dim))
    z = np.zeros((3, 0, 4), dtype)
    np.testing.assert_array_equal(sx.from_numpy(z).all(dim=1).numpy(), np.ones((3, 4), bool))
    np.testing.assert_array_equal(sx.from_numpy(z).any(dim=1).numpy(), np.zeros((3, 4), bool))


@pytest.mark.parametrize("src", [np.uint8, np.int8, np.int16, np.int32, np.int64])
@pytest.mark.parametrize("dst", [np.float32, np.float64])
def test_integer_to_float_conversions(threads, src, dst):
    # every value of the 8- and 16-bit types, and values around float32's rounding steps for the wider
    # ones (2**24 + 1 rounds to even, the extremes), contiguous and strided, against NumPy
    info = np.iinfo(src)
    if info.bits <= 16:
        v = np.arange(info.min, info.max + 1, dtype=np.int64)
    else:
        edges = [info.min, info.min + 1, info.max - 1, info.max, 2**24 + 1, 2**24 + 3, -(2**24) - 1, 2**31 - 65]
        v = np.concatenate([np.array(edges, np.int64), np.random.default_rng(1).integers(info.min, info.max, 5000)])
    v = np.tile(v.astype(src), 3)
    for t, a in ((sx.from_numpy(v), v), (sx.from_numpy(v)[::5], v[::5])):
        np.testing.assert_array_equal(t.to(getattr(sx, np.dtype(dst).name)).numpy(), a.astype(dst))


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_powers_wrap_and_take_negative_exponents(threads, dtype):
    # blocks whose largest exponent differs (0 only, small, past the bit width), products that wrap
    # as in two's complement, and negative exponents (1, -1 and 0 results)
    rng = np.random.default_rng(7)
    bits = np.dtype(dtype).itemsize * 8
    a = rng.integers(-7, 8, 5000).astype(dtype)
    b = rng.integers(-3, 12, 5000).astype(dtype)
    b[:256] = 0
    b[1000:1300] = rng.integers(0, 3 * bits, 300)
    ref = []
    for x, y in zip(a.tolist(), b.tolist()):
        v = pow(x, y) if y >= 0 else (1 if x == 1 else ((-1 if y % 2 else 1) if x == -1 else 0))
        v %= 1 << bits
        ref.append(v - (1 << bits) if v >= 1 << (bits - 1) else v)
    got = (sx.from_numpy(a) ** sx.from_numpy(b)).numpy()
    np.testing.assert_array_equal(got, np.array(ref, dtype=dtype))
    np.testing.assert_array_equal((2 ** sx.from_numpy(np.abs(b[:2000]))).numpy(),
                                  np.array([pow(2, int(y)) % (1 << bits) for y in np.abs(b[:2000])], dtype=np.uint64).astype(dtype))


@pytest.mark.parametrize("shape,dim", [((1024, 1024), 0), ((37, 200), 0), ((5, 104, 130), 1), ((3, 40, 97), (1,)),
                                       ((70, 3, 31), 0), ((17, 64), 0), ((6, 40, 70), (0, 2))])
@pytest.mark.parametrize("op", ["sum", "mean", "sumsq"])
def test_column_sums_in_register_blocks(threads, shape, dim, op):
    """Sums over leading or middle dims: blocks of 64 and 32 columns in registers, then the rest."""
    a = np.random.default_rng(7).standard_normal(shape).astype(np.float32) * 10
    x = sx.tensor(a)
    if op == "sumsq":
        got, want = (x * x).sum(dim=dim).numpy(), np.sum(a.astype(np.float64) ** 2, axis=dim)
    else:
        got, want = getattr(x, op)(dim=dim).numpy(), getattr(np, op)(a.astype(np.float64), axis=dim)
    scale = np.sum(np.abs(a.astype(np.float64)) ** (2 if op == "sumsq" else 1), axis=dim)
    np.testing.assert_allclose(got, want, rtol=0, atol=float(np.max(scale)) * 2e-7)
    # a transposed view of the same values reads the strided path (another order of additions)
    t = sx.tensor(np.ascontiguousarray(np.swapaxes(a, 0, -1))).transpose(0, -1)
    got_t = (t * t).sum(dim=dim) if op == "sumsq" else getattr(t, op)(dim=dim)
    np.testing.assert_allclose(got_t.numpy(), want, rtol=0, atol=float(np.max(scale)) * 2e-7)


def test_normal_draws_follow_the_standard_normal(threads):
    # Box-Muller's vector loop (its own log and cosine): the empirical CDF of 2^20 draws against
    # Phi (Kolmogorov-Smirnov distance well under the 1e-3 level's 1.63 / sqrt(n)), moments, tails
    # beyond 4.5 sigma, and float32 draws that are the float64 ones rounded.
    import math

    g = sx.Generator().manual_seed(1234)
    z = sx.randn(1 << 20, dtype=sx.float64, generator=g).numpy()
    n = z.size
    s = np.sort(z)
    phi = 0.5 * (1 + np.vectorize(math.erf)(s / math.sqrt(2)))
    ks = max(np.max(np.arange(1, n + 1) / n - phi), np.max(phi - np.arange(n) / n))
    assert ks < 1.63 / math.sqrt(n), ks
    assert abs(z.mean()) < 5 / math.sqrt(n) and abs(z.std() - 1) < 5 / math.sqrt(2 * n)
    assert 0 < np.sum(np.abs(z) > 4.5) < 21  # 7.1 expected per 2^20 draws: the tails are there
    g32 = sx.Generator().manual_seed(1234)
    np.testing.assert_array_equal(sx.randn(1 << 20, generator=g32).numpy(), z.astype(np.float32))
    t = sx.empty(4096, dtype=sx.float64).normal_(3.0, 0.5, generator=sx.Generator().manual_seed(1234))
    np.testing.assert_allclose(t.numpy(), 3.0 + 0.5 * z[:4096], rtol=1e-15, atol=1e-15)


def test_float16_conversions_match_numpy_bit_for_bit(threads):
    # every half bit pattern to float32 and back, and float32 values around every half rounding
    # boundary (ties to even, subnormals, overflow to inf), contiguous (the vector loop and its
    # tail) and strided; NaNs stay NaN
    halves = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    f32 = sx.from_numpy(halves).float().numpy()
    nan = np.isnan(halves)
    np.testing.assert_array_equal(f32[~nan], halves[~nan].astype(np.float32))
    assert np.isnan(f32[nan]).all()
    fin = halves[np.isfinite(halves)].astype(np.float32)
    mids = np.concatenate([fin, (fin[:-1] + fin[1:]) / 2, np.nextafter(fin, np.float32(np.inf)),
                           np.nextafter(fin, -np.float32(np.inf)), [65520.0, -65520.0, 65519.996, 1e-8, -3e-8],
                           [np.inf, -np.inf, np.nan]]).astype(np.float32)
    for t, x in ((sx.from_numpy(mids), mids), (sx.from_numpy(mids)[::3], mids[::3])):
        got = t.half().numpy()
        with np.errstate(over="ignore"):
            want = x.astype(np.float16)
        bad = np.isnan(want)
        np.testing.assert_array_equal(got[~bad].view(np.uint16), want[~bad].view(np.uint16))
        assert np.isnan(got[bad]).all()


def _bf16_bits(x):
    """float32 -> bfloat16 bits in NumPy: round to nearest even on the top 16 bits, NaN kept NaN (quiet)."""
    u = x.view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(x), ((u >> 16) | 0x40).astype(np.uint16), rounded)


def test_bfloat16_conversions_match_the_rounding_rule_bit_for_bit(threads):
    # every bfloat16 bit pattern to float32 (exact: the top half) and float32 values around every
    # bfloat16 rounding boundary (ties to even, subnormals, overflow to inf, NaN payloads), contiguous
    # (the vector loop, the fused loops and their tails) and strided
    pats = np.arange(1 << 16, dtype=np.uint32)
    f32 = (pats << 16).view(np.float32)
    back = sx.from_numpy(f32).to(sx.bfloat16).float().numpy()
    nan = np.isnan(f32)
    np.testing.assert_array_equal(back[~nan].view(np.uint32), (pats << 16)[~nan])
    np.testing.assert_array_equal(back[nan].view(np.uint32), (pats << 16)[nan] | 0x400000)  # made quiet
    lo = (pats << 16).astype(np.uint32)
    near = np.concatenate([lo, lo | 0x7FFF, lo | 0x8000, lo | 0x8001, lo | 0x0001]).view(np.float32)
    for t, x in ((sx.from_numpy(near), near), (sx.from_numpy(near)[::3], near[::3])):
        got = t.to(sx.bfloat16).float().numpy().view(np.uint32) >> 16
        np.testing.assert_array_equal(got.astype(np.uint16), _bf16_bits(np.ascontiguousarray(x)))
    # the fused elementwise loops round the same way (a + 0 is exact in float)
    sb = sx.from_numpy(f32).to(sx.bfloat16)
    np.testing.assert_array_equal((sb + 0.0).float().numpy().view(np.uint32) >> 16,
                                  _bf16_bits(f32 + np.float32(0)).astype(np.uint32))


def _half_bits(t):
    """The float16 / bfloat16 elements' bit patterns as uint16."""
    if t.dtype == sx.float16:
        return t.numpy().view(np.uint16)
    return (t.float().numpy().view(np.uint32) >> 16).astype(np.uint16)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_neg_and_abs_move_only_the_sign_bit(threads, dtype):
    # every bit pattern of the dtype, NaNs and subnormals included: neg flips the sign bit and abs clears
    # it, contiguous, strided, transposed and in place
    pats = np.arange(1 << 16, dtype=np.uint32)
    if dtype == "float16":
        x = sx.from_numpy(pats.astype(np.uint16).view(np.float16))
    else:
        x = sx.from_numpy((pats << 16).view(np.float32)).to(sx.bfloat16)
    for v in (x, x[::3], x.reshape(256, 256).t()):
        b = _half_bits(v.contiguous())
        np.testing.assert_array_equal(_half_bits(-v), b ^ 0x8000)
        np.testing.assert_array_equal(_half_bits(v.abs()), b & 0x7FFF)
        z = v.clone()
        z.neg_()
        np.testing.assert_array_equal(_half_bits(z), b ^ 0x8000)
    w = x.reshape(256, 256).t().contiguous().t()  # in place on a transposed view
    b = _half_bits(w.contiguous())
    w.abs_()
    np.testing.assert_array_equal(_half_bits(w.contiguous()), b & 0x7FFF)


@pytest.mark.parametrize("m,k,n", [(16, 16, 48), (17, 129, 49), (23, 128, 64), (40, 300, 65), (90, 120, 150),
                                   (64, 320, 79), (31, 257, 100), (128, 64, 129), (16, 16, 16), (33, 40, 17),
                                   (40, 300, 32), (100, 64, 47), (16, 1000, 33), (40, 130, 256), (20, 700, 100),
                                   (800, 200, 70), (390, 520, 64)])
@pytest.mark.parametrize("trans_a, trans_b", [(False, False), (True, False), (False, True), (True, True)])
def test_float32_products_read_in_place(threads, m, k, n, trans_a, trans_b):
    """The sizes that the AVX-512 build's direct kernel takes (cpu/gemm_direct.cpp): rows in chunks of
    384 with a short last one (800 rows), K past 512 for up to 256 rows (390 rows cut in two at 2
    threads), blocks of 6 rows
    with a short last one, panels of 64 columns with a last one of 1-63 (its last vector masked; narrow
    products of 16-47 columns are that panel alone),
    K in passes of 128 with a short last one, A transposed or a row-strided slice, B stored
    transposed (packed in 16 x 16 tiles, short ones at both edges) or row-strided (rows 512 apart:
    copied into panels), beta = 1 through
    the K blocks of a lowered BLAS limit: against NumPy float64. On the AVX2 build the same sizes go
    to BLAS."""
    rng = np.random.default_rng(m * k + n)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    tol = dict(rtol=1e-4, atol=1e-4 * np.sqrt(k))
    sa = sx.from_numpy(np.ascontiguousarray(a.T)).t() if trans_a else sx.from_numpy(a)
    sb = sx.from_numpy(np.ascontiguousarray(b.T)).t() if trans_b else sx.from_numpy(b)
    np.testing.assert_allclose((sa @ sb).numpy(), ref, **tol)
    wide_bt = sx.from_numpy(np.pad(np.ascontiguousarray(b.T), ((0, 0), (0, 7))))[:, :k].t()  # (N, K), row stride k + 7
    np.testing.assert_allclose((sa @ wide_bt).numpy(), ref, **tol)
    wide_a = sx.from_numpy(np.pad(a, ((0, 0), (0, 5))))[:, :k]  # row stride k + 5
    wide_b = sx.from_numpy(np.pad(b, ((0, 0), (0, 3))))[:, :n]
    np.testing.assert_allclose((wide_a @ wide_b).numpy(), ref, **tol)
    b512 = sx.from_numpy(np.pad(b, ((0, 0), (0, 512 - n))))[:, :n]  # row stride 512: B's panels copied first
    np.testing.assert_allclose((sa @ b512).numpy(), ref, **tol)
    old = sx._C._blas_int_limit()
    sx._C._set_blas_int_limit(max(16, k // 3 + 1))  # K in three blocks, the later ones with beta = 1
    try:
        np.testing.assert_allclose((sa @ sb).numpy(), ref, **tol)
    finally:
        sx._C._set_blas_int_limit(old)


def test_float32_products_read_in_place_propagate_nan_and_inf():
    """NaN and inf in A or B reach exactly the outputs that IEEE arithmetic gives them (as BLAS): the
    output's old contents (a reused block) are never read."""
    a, b = np.ones((20, 40), np.float32), np.ones((40, 70), np.float32)  # within gemm_direct_fits
    a[3, 5], b[7, 66], a[11, 7] = np.nan, np.inf, 0.0
    for rnd in range(4):  # results land in blocks freed by the previous round; B stored transposed in two
        sb = sx.from_numpy(np.ascontiguousarray(b.T)).t() if rnd % 2 else sx.from_numpy(b)
        got = (sx.from_numpy(a) @ sb).numpy()
        with np.errstate(invalid="ignore"):
            want = a.astype(np.float64) @ b.astype(np.float64)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
        np.testing.assert_allclose(got[np.isfinite(want)], want[np.isfinite(want)], rtol=1e-6)


# float16 / bfloat16 binary ops compute in float on blocks widened into buffers: every operand layout
# (same shape, a row or a column broadcast, a Python scalar, a transposed view, in place) gives the result
# of contiguous operands, which is the float32 op on the widened operands rounded once (pow and atan2 use
# other float formulas than float32's: within one rounding step of it); for the correctly rounded ops that
# is NumPy's float32 result.
HALF_BINARY_EXACT = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
                     "maximum": np.maximum, "minimum": np.minimum, "eq": np.equal, "lt": np.less,
                     "ge": np.greater_equal, "ne": np.not_equal}
HALF_BINARY_OTHER = ["remainder", "floor_divide", "fmod", "pow", "atan2"]


def _half_operands(dtype):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((37, 1030)).astype(np.float32) * 4
    b = rng.standard_normal((37, 1030)).astype(np.float32) * 4
    a[0, :6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 65504.0]
    b[0, :6] = [np.nan, 1.0, np.inf, 2.0, 0.0, 2.0]
    b[1] = a[1]  # equal elements for the comparisons
    sa, sb = sx.from_numpy(a).to(dtype), sx.from_numpy(b).to(dtype)
    return sa, sb, sa.float().numpy(), sb.float().numpy()  # the last two: the values the dtype holds


def _as_float(t):
    return t.numpy() if t.dtype == sx.bool else t.float().numpy()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", list(HALF_BINARY_EXACT) + HALF_BINARY_OTHER)
def test_half_type_binary_ops_on_every_layout_are_the_float_op_rounded(threads, name, dtype):
    dt = getattr(sx, dtype)
    sa, sb, a, b = _half_operands(dt)
    fn = getattr(sx, name)

    def want(x, y):  # contiguous operands of the same values
        return _as_float(fn(sx.from_numpy(np.ascontiguousarray(x)).to(dt), sx.from_numpy(np.ascontiguousarray(y)).to(dt)))

    full = fn(sa, sb)
    assert full.dtype == (sx.bool if name in ("eq", "lt", "ge", "ne") else dt)
    f32 = fn(sa.float(), sb.float())
    f32 = _as_float(f32 if f32.dtype == sx.bool else f32.to(dt))
    if name in ("pow", "atan2"):
        step = 2.0 ** -10 if dtype == "float16" else 2.0 ** -7
        np.testing.assert_allclose(_as_float(full), f32, rtol=step, atol=0)
    else:
        np.testing.assert_array_equal(_as_float(full), f32)
    if name in HALF_BINARY_EXACT and dtype == "float16":  # NumPy's float32 op, rounded
        with np.errstate(all="ignore"):
            ref = HALF_BINARY_EXACT[name](a, b)
        np.testing.assert_array_equal(_as_float(full), ref if ref.dtype == bool else ref.astype(np.float16))
    np.testing.assert_array_equal(_as_float(fn(sa, sb[3:4])), want(a, np.broadcast_to(b[3:4], a.shape)))
    np.testing.assert_array_equal(_as_float(fn(sa, sb[:, 7:8])), want(a, np.broadcast_to(b[:, 7:8], a.shape)))
    np.testing.assert_array_equal(_as_float(fn(sa[:, 7:8], sb)), want(np.broadcast_to(a[:, 7:8], b.shape), b))
    np.testing.assert_array_equal(_as_float(fn(sa.t(), sb.t())), _as_float(full).T)
    np.testing.assert_array_equal(_as_float(fn(sa, sb.t().contiguous().t())), _as_float(full))
    np.testing.assert_array_equal(_as_float(fn(sa, 1.5)), want(a, np.full_like(a, 1.5)))
    both = fn(sa[2:3, 5:6].expand(37, 1030), sb[4:5, 3:4].expand(37, 1030))  # a scalar on both sides
    np.testing.assert_array_equal(_as_float(both), want(np.broadcast_to(a[2:3, 5:6], a.shape),
                                                        np.broadcast_to(b[4:5, 3:4], a.shape)))
    if full.dtype == dt and hasattr(sa, name + "_"):
        z = sa.clone()
        getattr(z, name + "_")(sb)
        np.testing.assert_array_equal(_as_float(z), _as_float(full))
        w = sa.t().contiguous().t()  # in place on a strided view
        getattr(w, name + "_")(sb)
        np.testing.assert_array_equal(_as_float(w), _as_float(full))


@pytest.mark.parametrize("w", [8, 9, 13, 71, 130])
def test_column_sums_with_a_ragged_end_keep_their_order_of_additions(threads, w):
    """Sums down the middle dim take the columns in register blocks, the last (ragged) block overlapping
    the one before it; every column keeps the order of additions of the plain loop (float32 partials of
    16 rows, added in double, rounded once), emulated here in NumPy, bit for bit: contiguous (the
    outer/inner path) and as a strided view (the reduce-in-place path)."""
    rng = np.random.default_rng(w)
    wide = rng.standard_normal((3, 37, w + 5)).astype(np.float32) * 10
    a = np.ascontiguousarray(wide[:, :, :w])
    total = np.zeros((3, w))
    for i in range(0, 37, 16):  # cumsum adds in order
        total += np.cumsum(a[:, i:i + 16], axis=1, dtype=np.float32)[:, -1].astype(np.float64)
    for op, scale in (("sum", 1.0), ("mean", 1.0 / 37)):
        want = (total * scale).astype(np.float32)
        np.testing.assert_array_equal(getattr(sx.from_numpy(a), op)(dim=1).numpy(), want)
        np.testing.assert_array_equal(getattr(sx.from_numpy(wide)[:, :, :w], op)(dim=1).numpy(), want)


def test_float_erf_and_gelu_accuracy(threads):
    # float32 erf (a rational function of x on [-4, 4], +-1 beyond): within 4e-7 of math.erf absolutely
    # and relatively (so tiny arguments keep their digits: erf(x) ~ 2x / sqrt(pi)), both signs, both
    # sides of the clamp, NaN and infinities; gelu and its gradient through it, against float64.
    import math

    edges = [1e-30, -1e-20, 1e-8, 3e-4, 3.999, 4.0, 4.001]
    a = np.concatenate([np.linspace(-6, 6, 200001), edges]).astype(np.float32)
    want = np.vectorize(math.erf, otypes=[np.float64])(a.astype(np.float64))
    got = sx.tensor(a).erf().numpy().astype(np.float64)
    err = np.abs(got - want)
    assert err.max() < 4e-7, (err.max(), a[err.argmax()])
    nz = want != 0
    assert (err[nz] / np.abs(want[nz])).max() < 4e-7
    special = sx.tensor(np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], np.float32)).erf().numpy()
    assert np.isnan(special[0]) and special[1] == 1 and special[2] == -1
    assert special[3] == 0 and not np.signbit(special[3]) and special[4] == 0 and np.signbit(special[4])
    import sneppx_core.functional as F

    x = sx.tensor(a[::7], requires_grad=True)
    y = F.gelu(x)
    y.sum().backward()
    v = a[::7].astype(np.float64)
    cdf = 0.5 * (1 + np.vectorize(math.erf, otypes=[np.float64])(v / math.sqrt(2)))
    np.testing.assert_allclose(y.detach().numpy(), v * cdf, rtol=0, atol=4e-7 * np.abs(v).max())
    pdf = np.exp(-0.5 * v * v) / math.sqrt(2 * math.pi)
    np.testing.assert_allclose(x.grad.numpy(), cdf + v * pdf, rtol=0, atol=2e-6)


@pytest.mark.parametrize("rows, width, n", [(300, 16, 19551), (5, 3, 40_000), (2000, 1, 70_000), (64, 1023, 64),
                                            (7, 2, 10)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.bool_])
def test_index_select_and_index_add_of_many_short_rows(threads, rows, width, n, dtype):
    """Along dim 0, index_select copies whole rows per thread and index_add gives each thread a range of the
    output's rows (each adding its rows' sources in index order): same results as NumPy, the same bits at any
    thread count, negative indices and duplicates included."""
    rng = np.random.default_rng(rows * width + n)
    x = (rng.standard_normal((rows, width)) * 4).astype(dtype)
    idx = rng.integers(-rows, rows, n)
    idx[: min(n, 5)] = rows - 1  # duplicates of one row
    src = (rng.standard_normal((n, width)) * 4).astype(dtype)
    np.testing.assert_array_equal(sx.from_numpy(x).index_select(0, sx.tensor(idx)).numpy(), x[idx])
    got = sx.from_numpy(x).index_add(0, sx.tensor(idx), sx.from_numpy(src)).numpy()
    if dtype == np.bool_:
        want = x.copy()
        np.logical_or.at(want, idx % rows, src)
        np.testing.assert_array_equal(got, want)
        return
    want = x.astype(np.float64)
    for k in range(n):  # in index order, as the kernel adds
        want[idx[k] % rows] = (want[idx[k] % rows].astype(dtype) + src[k]).astype(np.float64)
    np.testing.assert_array_equal(got, want.astype(dtype))
    alpha = sx.from_numpy(x).index_add(0, sx.tensor(idx), sx.from_numpy(src), alpha=2).numpy()
    np.testing.assert_allclose(alpha.astype(np.float64), x + 2 * _scatter_sum(src, idx % rows, rows), rtol=1e-5,
                               atol=1e-3)


def _scatter_sum(src, rows_of, rows):
    out = np.zeros((rows, src.shape[1]))
    np.add.at(out, rows_of, src.astype(np.float64))
    return out
