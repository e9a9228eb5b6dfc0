"""The specialised kernel paths against NumPy: long sums split into segments, sums of squares
(norm) and means in one pass, vectorised arg-extremes over rows, cumsum over interleaved rows,
transposing copies by tiles (ragged edges included), and one-row / one-column matrix products
in every operand layout."""

from __future__ import annotations

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
                                       ((3, 7, 5), 2)])
def test_cumsum_accumulates_float32_in_double(threads, shape, dim):
    a = np.random.default_rng(2).standard_normal(shape).astype(np.float32) * 5
    want = np.cumsum(a.astype(np.float64), axis=dim).astype(np.float32)
    np.testing.assert_array_equal(sx.from_numpy(a).cumsum(dim).numpy(), want)
    i = (a * 10).astype(np.int64)
    np.testing.assert_array_equal(sx.from_numpy(i).cumsum(dim).numpy(), np.cumsum(i, axis=dim))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.float16, np.uint8, np.bool_])
@pytest.mark.parametrize("shape,perm", [((1024, 1024), (1, 0)), ((37, 45), (1, 0)), ((33, 70), (1, 0)),
                                        ((3, 40, 50), (0, 2, 1)), ((3, 40, 50), (2, 1, 0)), ((100, 33, 9), (2, 0, 1))])
def test_transposing_copies(threads, dtype, shape, perm):
    a = (np.random.default_rng(3).standard_normal(shape) * 10).astype(dtype)
    got = sx.from_numpy(a).permute(*perm).contiguous().numpy()
    np.testing.assert_array_equal(got, np.ascontiguousarray(a.transpose(perm)))


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
