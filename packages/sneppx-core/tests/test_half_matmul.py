"""float16/bfloat16 matrix products (matmul, @, bmm, linear) and their gradients against float64
NumPy products of the same rounded inputs.

The products accumulate in float32 and round once to the operands' dtype, so each element of the
result is within half a unit in the last place of the dtype of the exact product (2**-8 relative
for bfloat16, 2**-11 for float16, or half the subnormal spacing) plus a float32 accumulation error of a few K * 2**-24 of the
sum of |products|. A product accumulated in the half dtype itself, or from operands rounded
differently, misses this bound on the elements whose terms cancel.
"""

from __future__ import annotations

import numpy as np
import pytest
import sneppx_core as sx
import sneppx_core.functional as F

# dtype, half a unit in the last place relative to the value, and absolute (half the subnormal spacing)
DTYPES = {"bfloat16": (sx.bfloat16, 2.0 ** -8, 2.0 ** -134), "float16": (sx.float16, 2.0 ** -11, 2.0 ** -25)}


def round_to(a, name: str) -> np.ndarray:
    """float64 values of ``a`` rounded to nearest-even in bfloat16 or float16 (NumPy only)."""
    a = np.asarray(a, dtype=np.float64)
    if name == "float16":
        return a.astype(np.float16).astype(np.float64)
    u = a.astype(np.float32).view(np.uint32)
    u = (u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) & np.uint32(0xFFFF0000)
    return u.view(np.float32).astype(np.float64)


def half_tensor(a: np.ndarray, name: str, requires_grad: bool = False):
    """A tensor of the given half dtype holding ``a`` (already rounded: the conversion is exact)."""
    t = sx.from_numpy(np.ascontiguousarray(a, dtype=np.float32)).to(DTYPES[name][0])
    return t.requires_grad_() if requires_grad else t


def inputs(rng, shape, name):
    return round_to(rng.standard_normal(shape), name)


def check(got, want, scale, k, name):
    """Every element within the rounding of the dtype plus the float32 accumulation error."""
    dtype, half_ulp, tiny = DTYPES[name]
    assert got.dtype == dtype
    g = got.float().numpy().astype(np.float64)
    assert g.shape == want.shape
    bound = half_ulp * np.abs(want) * (1 + 1e-6) + (k + 4) * 2.0 ** -23 * scale + tiny
    bad = np.abs(g - want) > bound
    assert not bad.any(), f"{int(bad.sum())} elements off, worst excess {float((np.abs(g - want) - bound).max()):.3g}"


@pytest.mark.parametrize("name", list(DTYPES))
@pytest.mark.parametrize("k,n", [(1, 5), (3, 1030), (17, 2049), (64, 4099), (512, 1536), (2048, 513), (4097, 7)])
def test_one_row_and_one_column_products(threads, name, k, n):
    # x (1, k) times W stored (k, n) (rows streamed) and times W^T of a (n, k) matrix (a dot per
    # row), linear with a bias, a strided x, a batch, and the one-column forms W^T x and W x.
    rng = np.random.default_rng(k * n)
    x, w, b = inputs(rng, k, name), inputs(rng, (k, n), name), inputs(rng, n, name)
    want, scale = x @ w, np.abs(x) @ np.abs(w)
    xs, ws, wt = half_tensor(x, name), half_tensor(w, name), half_tensor(w.T, name)
    check(xs.unsqueeze(0) @ ws, want[None], scale[None], k, name)
    check(xs.unsqueeze(0) @ wt.t(), want[None], scale[None], k, name)
    check(F.linear(xs.reshape(1, 1, k), wt, half_tensor(b, name)), (want + b)[None, None],
          (scale + np.abs(b))[None, None], k, name)
    check(F.linear(xs, wt), want, scale, k, name)
    strided = half_tensor(np.stack([x, -x], 1), name)[:, 0]
    check(strided.unsqueeze(0) @ ws, want[None], scale[None], k, name)
    batch = half_tensor(np.stack([x, 2 * x]), name).unsqueeze(1)
    check(batch @ ws, np.stack([want, 2 * want])[:, None], np.stack([scale, 2 * scale])[:, None], k, name)
    check(wt @ xs.unsqueeze(1), want[:, None], scale[:, None], k, name)
    check(ws.t() @ xs.unsqueeze(1), want[:, None], scale[:, None], k, name)
    check(xs @ ws, want, scale, k, name)


@pytest.mark.parametrize("name", list(DTYPES))
@pytest.mark.parametrize("m,k,n", [(2, 3, 4), (8, 512, 1536), (33, 300, 257), (300, 600, 129), (129, 1, 300),
                                   (3, 1000, 2)])
def test_products_of_several_rows_in_every_layout(threads, name, m, k, n):
    rng = np.random.default_rng(m * k + n)
    for ta in (False, True):
        for tb in (False, True):
            a, b = inputs(rng, (m, k), name), inputs(rng, (k, n), name)
            at = half_tensor(a.T, name).t() if ta else half_tensor(a, name)
            bt = half_tensor(b.T, name).t() if tb else half_tensor(b, name)
            check(at @ bt, a @ b, np.abs(a) @ np.abs(b), k, name)
    # views with no unit stride: every other element of wider matrices
    a, b = inputs(rng, (m, 2 * k), name), inputs(rng, (k, 2 * n), name)
    got = half_tensor(a, name)[:, ::2] @ half_tensor(b, name)[:, 1::2]
    a, b = a[:, ::2], b[:, 1::2]
    check(got, a @ b, np.abs(a) @ np.abs(b), k, name)
    # linear over a 3-D input with a bias
    x, w, bias = inputs(rng, (2, m, k), name), inputs(rng, (n, k), name), inputs(rng, n, name)
    check(F.linear(half_tensor(x, name), half_tensor(w, name), half_tensor(bias, name)), x @ w.T + bias,
          np.abs(x) @ np.abs(w.T) + np.abs(bias), k, name)


@pytest.mark.parametrize("name", list(DTYPES))
def test_batched_and_broadcast_products(threads, name):
    rng = np.random.default_rng(3)
    a, b = inputs(rng, (4, 3, 5, 70), name), inputs(rng, (3, 70, 9), name)
    check(half_tensor(a, name) @ half_tensor(b, name), a @ b, np.abs(a) @ np.abs(b), 70, name)
    a, b = inputs(rng, (6, 40, 300), name), inputs(rng, (6, 300, 260), name)
    check(sx.bmm(half_tensor(a, name), half_tensor(b, name)), a @ b, np.abs(a) @ np.abs(b), 300, name)
    # (batch, 1, k) rows against a transposed batch of weights
    x, w = inputs(rng, (5, 1, 64), name), inputs(rng, (5, 33, 64), name)
    wt = w.transpose(0, 2, 1)
    check(half_tensor(x, name) @ half_tensor(w, name).transpose(1, 2), x @ wt, np.abs(x) @ np.abs(wt), 64, name)


@pytest.mark.parametrize("name", list(DTYPES))
def test_empty_inner_dimension(name):
    dtype = DTYPES[name][0]
    out = sx.zeros(3, 0, dtype=dtype) @ sx.zeros(0, 4, dtype=dtype)
    assert out.dtype == dtype and out.shape == (3, 4) and not out.float().numpy().any()
    b = inputs(np.random.default_rng(0), 4, name)
    got = F.linear(sx.zeros(2, 0, dtype=dtype), sx.zeros(4, 0, dtype=dtype), half_tensor(b, name))
    np.testing.assert_array_equal(got.float().numpy(), np.broadcast_to(b, (2, 4)))


def test_float16_subnormal_and_infinite_operands(threads):
    # weights in float16's subnormal range and an infinity go through the vector conversion
    rng = np.random.default_rng(1)
    w = round_to(rng.standard_normal((64, 40)) * 1e-6, "float16")
    assert (np.abs(w) < 2.0 ** -14).mean() > 0.5  # mostly subnormal
    x = round_to(rng.standard_normal((3, 64)) * 1000, "float16")
    check(half_tensor(x, "float16") @ half_tensor(w, "float16"), x @ w, np.abs(x) @ np.abs(w), 64, "float16")
    check(half_tensor(x[:1], "float16") @ half_tensor(w, "float16"), x[:1] @ w, np.abs(x[:1]) @ np.abs(w), 64,
          "float16")
    w[5, 7] = np.inf
    got = (half_tensor(x[:1], "float16") @ half_tensor(w, "float16")).float().numpy()
    with np.errstate(invalid="ignore"):
        want = x[:1] @ w
    assert np.isinf(got[0, 7]) and np.sign(got[0, 7]) == np.sign(want[0, 7])
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(want))


@pytest.mark.parametrize("name", list(DTYPES))
@pytest.mark.parametrize("m,k,n", [(1, 300, 200), (7, 130, 90), (600, 40, 3)])
def test_gradients_of_matmul_and_linear(name, m, k, n):
    rng = np.random.default_rng(m + k + n)
    x, w, b, g = (inputs(rng, s, name) for s in ((m, k), (k, n), n, (m, n)))
    xs, ws, bs = half_tensor(x, name, True), half_tensor(w, name, True), half_tensor(b, name, True)
    (xs @ ws).backward(half_tensor(g, name))
    check(xs.grad, g @ w.T, np.abs(g) @ np.abs(w.T), n, name)
    check(ws.grad, x.T @ g, np.abs(x.T) @ np.abs(g), m, name)
    xs.grad = ws.grad = None
    wt = half_tensor(w.T, name, True)  # linear's weight is (out, in)
    F.linear(xs, wt, bs).backward(half_tensor(g, name))
    check(xs.grad, g @ w.T, np.abs(g) @ np.abs(w.T), n, name)
    check(wt.grad, g.T @ x, np.abs(g.T) @ np.abs(x), m, name)
    check(bs.grad, g.sum(0), np.abs(g).sum(0), m, name)


def test_half_products_do_not_depend_on_thread_count():
    rng = np.random.default_rng(5)
    x = half_tensor(inputs(rng, (1, 2048), "bfloat16"), "bfloat16")
    xm = half_tensor(inputs(rng, (70, 2048), "bfloat16"), "bfloat16")
    w = half_tensor(inputs(rng, (2048, 1536), "bfloat16"), "bfloat16")
    n0 = sx.get_num_threads()
    try:
        outs = []
        for n in (1, 2, 3):
            sx.set_num_threads(n)
            outs.append([(x @ w).float().numpy(), (x @ w.t().contiguous().t()).float().numpy(),
                         (xm @ w).float().numpy()])
    finally:
        sx.set_num_threads(n0)
    for other in outs[1:]:
        for a, b in zip(outs[0], other):
            np.testing.assert_array_equal(a, b)
