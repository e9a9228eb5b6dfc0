"""One-pass paths against NumPy: add and sub with alpha (out of place and in place, with the bits
of a multiply followed by an add), one_hot's direct kernel, dot products of fixed blocks added in
order, one-column matrix products, and unbind / select views (shared memory, gradients)."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
import sneppx_core as sx
import sneppx_core.functional as F


def _rand(shape, dtype, seed=0):
    """Values that depend only on the arguments (not on which tests ran before)."""
    rng = np.random.default_rng(zlib.crc32(repr((shape, np.dtype(dtype).str, seed)).encode()))
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-50 if np.dtype(dtype).kind == "i" else 0, 50, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _two_step(a, b, alpha, subtract):
    """a + alpha * b with each step rounded in the dtype (NumPy's float16 math rounds every op)."""
    w = np.asarray(alpha).astype(b.dtype)
    p = (b * w).astype(b.dtype)
    return (a - p if subtract else a + p).astype(np.result_type(a, b))


CASES = [((40, 33), (40, 33)), ((40, 33), (33,)), ((1, 33), (40, 33)), ((5, 6), ()), ((), (5, 6)),
         ((3, 4, 70000), (3, 4, 70000))]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32, np.int64])
@pytest.mark.parametrize("shapes", CASES, ids=str)
@pytest.mark.parametrize("subtract", [False, True])
def test_add_sub_alpha_bits(threads, dtype, shapes, subtract):
    a, b = _rand(shapes[0], dtype), _rand(shapes[1], dtype, 1)
    alpha = 3 if np.dtype(dtype).kind == "i" else 0.1
    fn = sx.sub if subtract else sx.add
    got = fn(sx.from_numpy(a), sx.from_numpy(b), alpha=alpha).numpy()
    np.testing.assert_array_equal(got, _two_step(a, b, alpha, subtract))
    assert got.dtype == np.result_type(a, b)


def test_add_alpha_bfloat16_matches_two_ops():
    a, b = sx.randn(300, 7).to(sx.bfloat16), sx.randn(300, 7).to(sx.bfloat16)
    got = sx.add(a, b, alpha=0.3).float().numpy()
    want = sx.add(a, sx.mul(b, 0.3)).float().numpy()
    np.testing.assert_array_equal(got, want)


def test_add_alpha_strided_operands():
    a = _rand((30, 40), np.float32)
    b = _rand((40, 30), np.float32)
    got = sx.add(sx.from_numpy(a)[:, ::2], sx.from_numpy(b).t()[:, 1::2], alpha=-2.5).numpy()
    np.testing.assert_array_equal(got, _two_step(a[:, ::2], b.T[:, 1::2], -2.5, False))


@pytest.mark.parametrize("a_dt,b_dt,alpha", [(np.int32, np.int32, 2.5), (np.int64, np.float32, 2),
                                             (np.float32, np.float64, 0.5), (np.float64, np.float32, 0.5),
                                             (np.int32, np.int64, 3), (np.uint8, np.uint8, True)])
def test_add_alpha_promotion_as_two_ops(a_dt, b_dt, alpha):
    a, b = sx.from_numpy(_rand((4, 5), a_dt)), sx.from_numpy(_rand((4, 5), b_dt, 1))
    got = sx.add(a, b, alpha=alpha)
    want = sx.add(a, sx.mul(b, alpha))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_sub_alpha_of_bools_raises():
    with pytest.raises(TypeError, match=r"\[sub\]"):
        sx.sub(sx.ones(3, dtype=sx.bool), sx.ones(3, dtype=sx.bool), alpha=True)


@pytest.mark.parametrize("subtract", [False, True])
@pytest.mark.parametrize("shapes", [((4, 5), (4, 5)), ((4, 5), (5,)), ((1, 5), (4, 1)), ((4, 5), ())], ids=str)
def test_add_sub_alpha_gradients(subtract, shapes):
    a0, b0 = _rand(shapes[0], np.float64), _rand(shapes[1], np.float64, 1)
    a, b = sx.from_numpy(a0).requires_grad_(), sx.from_numpy(b0).requires_grad_()
    out = (sx.sub if subtract else sx.add)(a, b, alpha=0.7)
    g0 = _rand(tuple(out.shape), np.float64, 2)
    (out * sx.from_numpy(g0)).sum().backward()

    def sum_to(g, shape):
        while g.ndim > len(shape):
            g = g.sum(0)
        return g.sum(axis=tuple(i for i, s in enumerate(shape) if s == 1), keepdims=True).reshape(shape)

    tol = 1e-13 * np.abs(g0).sum()
    np.testing.assert_allclose(a.grad.numpy(), sum_to(g0, a0.shape), rtol=1e-12, atol=tol)
    np.testing.assert_allclose(b.grad.numpy(), (-0.7 if subtract else 0.7) * sum_to(g0, b0.shape), rtol=1e-12, atol=tol)
    # second order through the recorded vjp
    a2 = sx.from_numpy(a0).requires_grad_()
    (ga,) = sx.autograd.grad((sx.add(a2, a2 * a2, alpha=0.5)).sum(), a2, create_graph=True)
    (gga,) = sx.autograd.grad(ga.sum(), a2)
    np.testing.assert_allclose(gga.numpy(), np.ones_like(a0), rtol=1e-12)


@pytest.mark.parametrize("subtract", [False, True])
def test_inplace_alpha_direct_and_views(subtract):
    a, b = _rand((20, 30), np.float32), _rand((20, 30), np.float32, 1)
    name = "sub_" if subtract else "add_"
    x = sx.from_numpy(a.copy())
    ptr = x.data_ptr()
    assert getattr(x, name)(sx.from_numpy(b), alpha=0.3) is x
    assert x.data_ptr() == ptr
    np.testing.assert_array_equal(x.numpy(), _two_step(a, b, 0.3, subtract))
    # into a strided view, with b broadcast
    x = sx.from_numpy(a.copy())
    getattr(x[:, ::3], name)(sx.from_numpy(b[0, :10]), alpha=2)
    want = a.copy()
    want[:, ::3] = _two_step(a[:, ::3], b[0, :10], 2, subtract)
    np.testing.assert_array_equal(x.numpy(), want)
    # b is x itself, and b overlaps x: computed from the old values
    x = sx.from_numpy(a.copy())
    getattr(x, name)(x, alpha=3)
    np.testing.assert_array_equal(x.numpy(), _two_step(a, a, 3, subtract))
    x = sx.from_numpy(a.copy())
    getattr(x[1:], name)(x[:-1], alpha=3)
    want = a.copy()
    want[1:] = _two_step(a[1:], a[:-1], 3, subtract)
    np.testing.assert_array_equal(x.numpy(), want)


def test_inplace_alpha_dtype_rules_and_autograd():
    x = sx.arange(6, dtype=sx.int64)
    x.add_(sx.ones(6, dtype=sx.int64), alpha=4)
    assert x.tolist() == [4, 5, 6, 7, 8, 9]
    with pytest.raises(TypeError):
        x.add_(sx.ones(6, dtype=sx.int64), alpha=0.5)
    leaf = sx.ones(3).requires_grad_()
    with pytest.raises(RuntimeError, match="leaf"):
        leaf.add_(sx.ones(3), alpha=2)
    w = sx.ones(3).requires_grad_()
    b = sx.full((3,), 2.0).requires_grad_()
    y = w * 1.0
    y.sub_(b, alpha=0.25)
    (y * sx.tensor([1.0, 2.0, 3.0])).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [1, 2, 3])
    np.testing.assert_allclose(b.grad.numpy(), [-0.25, -0.5, -0.75])
    with sx.no_grad():
        leaf.add_(sx.ones(3), alpha=2)
    np.testing.assert_array_equal(leaf.detach().numpy(), [3, 3, 3])


@pytest.mark.parity
def test_add_sub_alpha_parity(torch):
    a, b = _rand((6, 7), np.float32), _rand((7,), np.float32)
    for name in ("add", "sub"):
        ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
        sa, sb = sx.from_numpy(a).requires_grad_(), sx.from_numpy(b).requires_grad_()
        tout, sout = getattr(torch, name)(ta, tb, alpha=1.7), getattr(sx, name)(sa, sb, alpha=1.7)
        np.testing.assert_allclose(sout.detach().numpy(), tout.detach().numpy(), rtol=1e-6, atol=1e-6)
        g = _rand((6, 7), np.float32, 2)
        tout.backward(torch.tensor(g))
        sout.backward(sx.from_numpy(g))
        np.testing.assert_allclose(sa.grad.numpy(), ta.grad.numpy(), rtol=1e-6)
        # b's gradient sums six rows: rounding is relative to the sum of their magnitudes
        np.testing.assert_allclose(sb.grad.numpy(), tb.grad.numpy(), rtol=0, atol=1e-6 * 1.7 * np.abs(g).sum(0).max())


@pytest.mark.parametrize("shape,classes", [((), 4), ((0,), 3), ((7,), 7), ((30, 40), 6), ((3000,), 100),
                                           ((363, 48), -1)], ids=str)
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8])
def test_one_hot_matches_eye(threads, shape, classes, dtype):
    n = classes if classes > 0 else 9
    idx = np.random.default_rng(n).integers(0, n, size=shape).astype(dtype)
    got = F.one_hot(sx.from_numpy(idx), classes)
    k = classes if classes >= 0 else (int(idx.max()) + 1 if idx.size else 0)
    assert got.dtype == sx.int64 and tuple(got.shape) == shape + (k,)
    np.testing.assert_array_equal(got.numpy(), np.eye(k, dtype=np.int64)[idx])


@pytest.mark.parametrize("bad,classes,named", [(-1, 5, -1), (5, 5, 5), (9, 5, 9), (-3, -1, -3), (2, 0, 2)])
def test_one_hot_out_of_range(threads, bad, classes, named):
    idx = np.zeros(50_000, dtype=np.int64)
    idx[31_234] = bad
    with pytest.raises(IndexError, match=rf"\[one_hot\] class {named} is out of range"):
        F.one_hot(sx.from_numpy(idx), classes)


@pytest.mark.parametrize("n", [0, 1, 7, 31, 32, 33, 129, 16383, 16384, 16385, 100_003, 1_048_575])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dot_lengths(threads, n, dtype):
    a, b = _rand((n,), dtype), _rand((n,), dtype, 1)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    mag = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    tol = 1e-6 if dtype == np.float32 else 1e-14
    got = sx.dot(sx.from_numpy(a), sx.from_numpy(b))
    assert got.shape == () and got.dtype == sx.from_numpy(a).dtype
    assert abs(float(got) - ref) <= tol * mag + 1e-30
    assert float(sx.matmul(sx.from_numpy(a), sx.from_numpy(b))) == float(got)


def test_dot_does_not_depend_on_thread_count():
    a, b = _rand((1_000_003,), np.float32), _rand((1_000_003,), np.float32, 1)
    n0 = sx.get_num_threads()
    try:
        got = set()
        for t in (1, 2, 3):
            sx.set_num_threads(t)
            got.add(float(sx.dot(sx.from_numpy(a), sx.from_numpy(b))))
    finally:
        sx.set_num_threads(n0)
    assert len(got) == 1


def test_dot_strided_and_other_dtypes():
    a = _rand((3001,), np.float32)
    b = _rand((6002,), np.float32)
    got = float(sx.dot(sx.from_numpy(a), sx.from_numpy(b)[::2]))
    assert abs(got - a.astype(np.float64) @ b[::2].astype(np.float64)) <= 1e-6 * (np.abs(a) @ np.abs(b[::2]))
    for dt in (np.int32, np.int64):
        x, y = _rand((1000,), dt), _rand((1000,), dt, 1)
        r = sx.dot(sx.from_numpy(x), sx.from_numpy(y))
        assert int(r) == int(x.astype(np.int64) @ y.astype(np.int64))
    h, k = _rand((500,), np.float16), _rand((500,), np.float16, 1)
    r = sx.dot(sx.from_numpy(h), sx.from_numpy(k))
    assert r.dtype == sx.float16
    assert abs(float(r) - h.astype(np.float64) @ k.astype(np.float64)) <= 2e-3 * (np.abs(h) @ np.abs(k)).astype(np.float64)


def test_dot_errors_and_gradients():
    with pytest.raises(ValueError, match=r"\[dot\].*\(2,\).*\(3,\)"):
        sx.dot(sx.ones(2), sx.ones(3))
    with pytest.raises(ValueError, match=r"\[dot\]"):
        sx.dot(sx.ones(2, 2), sx.ones(2))
    with pytest.raises(TypeError, match=r"\[dot\].*float32.*float64"):
        sx.dot(sx.ones(2), sx.ones(2, dtype=sx.float64))
    with pytest.raises(TypeError, match=r"\[dot\]"):
        sx.dot(sx.ones(2, dtype=sx.bool), sx.ones(2, dtype=sx.bool))
    a0, b0 = _rand((40_000,), np.float64), _rand((40_000,), np.float64, 1)
    a, b = sx.from_numpy(a0).requires_grad_(), sx.from_numpy(b0).requires_grad_()
    (sx.dot(a, b) * 3.0).backward()
    np.testing.assert_array_equal(a.grad.numpy(), 3.0 * b0)
    np.testing.assert_array_equal(b.grad.numpy(), 3.0 * a0)
    # finite differences of the second order: d/da (dot(a, a)) = 2a
    x = sx.from_numpy(a0[:50].copy()).requires_grad_()
    (g,) = sx.autograd.grad(sx.dot(x, x), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), 2 * a0[:50], rtol=1e-12)
    (gg,) = sx.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), np.full(50, 2.0))


@pytest.mark.parametrize("m,k", [(1, 5), (3, 33), (200, 1000), (5, 70_001)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matrix_vector_products(threads, m, k, dtype):
    a, x = _rand((m, k), dtype), _rand((k,), dtype)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    ref = a.astype(np.float64) @ x.astype(np.float64)
    mag = np.abs(a.astype(np.float64)) @ np.abs(x.astype(np.float64))
    got = sx.mv(sx.from_numpy(a), sx.from_numpy(x)).numpy() if hasattr(sx, "mv") else \
        sx.matmul(sx.from_numpy(a), sx.from_numpy(x)).numpy()
    assert np.all(np.abs(got - ref) <= tol * mag)
    y = _rand((m,), dtype, 1)
    got = sx.matmul(sx.from_numpy(y), sx.from_numpy(a)).numpy()
    ref = y.astype(np.float64) @ a.astype(np.float64)
    assert np.all(np.abs(got - ref) <= tol * (np.abs(y.astype(np.float64)) @ np.abs(a.astype(np.float64))))


@pytest.mark.parity
def test_dot_parity(torch):
    a, b = _rand((100_001,), np.float32), _rand((100_001,), np.float32, 1)
    np.testing.assert_allclose(float(sx.dot(sx.from_numpy(a), sx.from_numpy(b))),
                               float(torch.dot(torch.tensor(a), torch.tensor(b))), rtol=1e-4)


@pytest.mark.parametrize("dim", [0, 1, -1, 2])
def test_unbind_views(dim):
    a = _rand((4, 5, 6), np.float32)
    x = sx.from_numpy(a.copy())
    parts = x.unbind(dim)
    assert isinstance(parts, tuple) and len(parts) == a.shape[dim]
    for i, p in enumerate(parts):
        np.testing.assert_array_equal(p.numpy(), np.take(a, i, axis=dim))
        assert p.data_ptr() == x.select(dim, i).data_ptr()
    parts[1].fill_(7.0)
    assert (np.take(x.numpy(), 1, axis=dim) == 7.0).all()
    with pytest.raises(IndexError, match=r"\[unbind\]"):
        sx.tensor(1.0).unbind(0)
    with pytest.raises(IndexError):
        x.unbind(3)


def test_unbind_and_select_gradients():
    a0 = _rand((3, 4), np.float64)
    w = _rand((4, 3), np.float64)
    x = sx.from_numpy(a0).requires_grad_()
    rows = x.t().unbind(0)
    loss = sum((r * sx.from_numpy(w[i])).sum() for i, r in enumerate(rows) if i != 2)
    loss.backward()
    want = w.T.copy()
    want[:, 2] = 0
    np.testing.assert_array_equal(x.grad.numpy(), want)
    x.grad = None
    (x.select(1, -1) * 2.0).sum().backward()
    want = np.zeros_like(a0)
    want[:, -1] = 2.0
    np.testing.assert_array_equal(x.grad.numpy(), want)
    # second order through select's vjp
    y = sx.from_numpy(a0).requires_grad_()
    (g,) = sx.autograd.grad((y[1] ** 2).sum(), y, create_graph=True)
    (gg,) = sx.autograd.grad(g.sum(), y)
    want = np.zeros_like(a0)
    want[1] = 2.0
    np.testing.assert_allclose(gg.numpy(), want)
    with sx.no_grad():
        assert not x.unbind(0)[0].requires_grad
    assert not sx.from_numpy(a0).unbind(0)[0].requires_grad
