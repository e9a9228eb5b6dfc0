"""Large inputs: the threaded and vectorised kernel paths (which small op-table cases never reach)
against NumPy, in several layouts, and identical results for 1 and 2 threads."""

from __future__ import annotations

import numpy as np
import pytest
import sneppx_core as sx

from opcheck import make_input, rng_for, to_np

SHAPE = (600, 500)  # 300k elements: above the kernels' parallel grain
LAYOUTS = ["contiguous", "transposed", "sliced", "broadcast"]


def _erf(a):
    import math

    return np.vectorize(math.erf, otypes=[np.float64])(a)


UNARY = [
    ("exp", np.exp, "normal"), ("log", np.log, "positive"), ("sqrt", np.sqrt, "positive"), ("tanh", np.tanh, "normal"),
    ("sigmoid", lambda a: 1 / (1 + np.exp(-a)), "normal"), ("relu", lambda a: np.maximum(a, 0), "normal"),
    ("gelu", lambda a: 0.5 * a * (1 + _erf(a / np.sqrt(2))), "normal"), ("abs", np.abs, "normal"),
    ("neg", np.negative, "normal"), ("sin", np.sin, "normal"), ("reciprocal", np.reciprocal, "positive"),
]


def _values(rng, shape, domain):
    return rng.uniform(0.5, 2, shape) if domain == "positive" else rng.standard_normal(shape) * 3


@pytest.mark.parametrize("name,ref,domain", UNARY, ids=[u[0] for u in UNARY])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_large_unary(name, ref, domain, dtype, layout):
    rng = rng_for("large", name, dtype, layout)
    x = make_input(_values(rng, SHAPE, domain), dtype, layout)
    a = to_np(x).astype(np.float64)
    out = getattr(sx, name)(x)
    tol = 3e-6 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(to_np(out), ref(a), rtol=tol, atol=tol)


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "maximum", "lt", "pow"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "float16"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_large_binary(op, dtype, layout, threads):
    if op in ("pow",) and dtype.startswith("int"):
        pytest.skip("integer pow of large random values overflows")
    rng = rng_for("large", op, dtype, layout)
    a = rng.uniform(0.5, 4, SHAPE)
    b = rng.uniform(0.5, 2, SHAPE[1:])  # broadcast along rows
    if dtype.startswith("int"):
        a, b = np.round(a * 10), np.round(b * 3)
    x, y = make_input(a, dtype, layout), sx.tensor(b, dtype=dtype)
    an, bn = to_np(x).astype(np.float64), to_np(y).astype(np.float64)
    out = getattr(sx, op)(x, y)
    ref = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "maximum": np.maximum,
           "lt": np.less, "pow": np.power}[op](an, bn)
    tol = {"float32": 2e-6, "float64": 1e-12, "float16": 2e-3}.get(dtype, 0 if op != "div" else 2e-6)
    np.testing.assert_allclose(to_np(out).astype(np.float64), ref, rtol=tol, atol=tol)


REDUCTIONS = [
    ("sum_all", lambda x: x.sum(), lambda a: a.sum()), ("sum_0", lambda x: x.sum(0), lambda a: a.sum(0)),
    ("sum_1_keep", lambda x: x.sum(1, keepdim=True), lambda a: a.sum(1, keepdims=True)),
    ("mean_0", lambda x: x.mean(0), lambda a: a.mean(0)), ("var_1", lambda x: x.var(1), lambda a: a.var(1, ddof=1)),
    ("amax_all", lambda x: x.amax(), lambda a: a.max()), ("amin_0", lambda x: x.amin(0), lambda a: a.min(0)),
    ("max_1_values", lambda x: x.max(1).values, lambda a: a.max(1)),
    ("argmax_0", lambda x: x.argmax(0), lambda a: a.argmax(0)), ("argmin_all", lambda x: x.argmin(), lambda a: a.argmin()),
    ("logsumexp_1", lambda x: x.logsumexp(1), lambda a: np.log(np.exp(a).sum(1))),
    ("norm_all", lambda x: x.norm(), lambda a: np.sqrt((a * a).sum())),
    ("cumsum_0", lambda x: x.cumsum(0), lambda a: a.cumsum(0)), ("cumsum_1", lambda x: x.cumsum(1), lambda a: a.cumsum(1)),
    ("prod_1", lambda x: (x * 0.01 + 1).prod(1), lambda a: (a * 0.01 + 1).prod(1)),
]


@pytest.mark.parametrize("name,f,ref", REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
def test_large_reductions(name, f, ref, dtype, layout, threads):
    rng = rng_for("large", name, dtype, layout)
    x = make_input(rng.standard_normal(SHAPE), dtype, layout)
    a = to_np(x).astype(np.float64)
    out, expected = to_np(f(x)), ref(a)
    if name.startswith("arg"):
        np.testing.assert_array_equal(out, expected)
        return
    scale = np.abs(a).sum() if name.startswith(("sum", "cumsum", "mean")) else 1.0
    tol = 1e-5 if dtype == "float32" else 1e-11
    atol = tol * scale / (a.shape[0] if name in ("mean_0",) else 1)
    np.testing.assert_allclose(out, expected, rtol=tol, atol=atol)


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8", "bool"])
def test_large_integer_reductions(dtype, threads):
    rng = rng_for("large-int", dtype)
    a = rng.integers(0, 2 if dtype == "bool" else 50, SHAPE)
    x = sx.tensor(a, dtype=dtype)
    a = to_np(x).astype(np.int64)
    assert x.sum().item() == a.sum()
    np.testing.assert_array_equal(to_np(x.sum(0)), a.sum(0))
    np.testing.assert_array_equal(to_np(x.T.sum(1)), a.sum(0))
    np.testing.assert_array_equal(to_np(x.cumsum(1)), a.cumsum(1))
    np.testing.assert_array_equal(to_np(x.amax(1)).astype(np.int64), a.max(1))
    np.testing.assert_array_equal(to_np(x.any(0)), a.any(0))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "float16", "bfloat16"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
def test_large_matmul(dtype, layout, threads):
    rng = rng_for("large-mm", dtype, layout)
    a, b = rng.standard_normal((96, 200)), rng.standard_normal((200, 72))
    if dtype == "int64":
        a, b = np.round(a * 3), np.round(b * 3)
    x, y = make_input(a, dtype, layout), make_input(b, dtype, layout)
    out = to_np(x @ y).astype(np.float64)
    ref = to_np(x).astype(np.float64) @ to_np(y).astype(np.float64)
    tol = {"float32": 1e-4, "float64": 1e-10, "int64": 0, "float16": 3e-2, "bfloat16": 0.3}[dtype]
    np.testing.assert_allclose(out, ref, rtol=tol, atol=tol * np.abs(ref).max())
    bx = make_input(rng.standard_normal((4, 48, 64)), dtype, layout)
    by = make_input(rng.standard_normal((64, 40)), dtype, layout)
    bref = to_np(bx).astype(np.float64) @ to_np(by).astype(np.float64)
    np.testing.assert_allclose(to_np(bx @ by).astype(np.float64), bref, rtol=max(tol, 1e-10),
                               atol=max(tol, 1e-10) * np.abs(bref).max())


def test_large_sort_topk_gather():
    rng = rng_for("large-sort")
    a = rng.permutation(200_000).reshape(400, 500).astype(np.float32)
    x = sx.tensor(a)
    v, i = x.sort(dim=1)
    np.testing.assert_array_equal(to_np(v), np.sort(a, 1))
    np.testing.assert_array_equal(to_np(i), np.argsort(a, 1))
    tv, ti = x.topk(5, dim=0)
    np.testing.assert_array_equal(to_np(tv), -np.sort(-a, 0)[:5])
    idx = rng.integers(0, 500, (400, 300))
    np.testing.assert_array_equal(to_np(x.gather(1, sx.tensor(idx))), np.take_along_axis(a, idx, 1))


def test_thread_count_does_not_change_results():
    rng = rng_for("threads")
    a = rng.standard_normal((700, 600)).astype(np.float32)
    results = []
    n0 = sx.get_num_threads()
    try:
        for n in (1, 2):
            sx.set_num_threads(n)
            x = sx.tensor(a)
            results.append([to_np(f) for f in (x.exp(), x.T.tanh(), x * 3 + 1, x.sum(1), x.amax(0), x.cumsum(0),
                                              x[::2, 1::3].sigmoid())])
    finally:
        sx.set_num_threads(n0)
    for r1, r2 in zip(*results):
        np.testing.assert_array_equal(r1, r2)


def test_large_backward():
    rng = rng_for("large-bw")
    a = rng.standard_normal((300, 400))
    x = sx.tensor(a, requires_grad=True, dtype=sx.float64)
    ((x.tanh() * x).sum(1) ** 2).mean().backward()
    t = np.tanh(a)
    row = (t * a).sum(1, keepdims=True)
    np.testing.assert_allclose(to_np(x.grad), 2 * row * ((1 - t**2) * a + t) / a.shape[0], rtol=1e-10)
