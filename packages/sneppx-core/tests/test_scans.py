"""cumprod, logcumsumexp, cummax and cummin: forward against NumPy, gradients against float64 central
differences (zeros in cumprod's input included), second-order gradients of logcumsumexp, dtypes and
layouts; cummax/cummin's ties and NaNs also against PyTorch (``pytest -m parity``)."""

from __future__ import annotations

import numpy as np
import pytest
import sneppx_core as sx
from ops_reduce import running_extremes
from sneppx_core.testing import gradcheck

RNG = np.random.default_rng(31)


def t(a, dtype=sx.float64, requires_grad=False):
    return sx.tensor(np.asarray(a, dtype=np.float64), dtype=dtype, requires_grad=requires_grad)


@pytest.mark.parametrize("shape,dim", [((7,), 0), ((3, 5), 1), ((3, 5), 0), ((2, 3, 4), 1), ((2, 3, 4), -1),
                                       ((40, 1000), 1)])
def test_forward_matches_numpy(shape, dim):
    a = RNG.uniform(0.5, 1.5, shape) * RNG.choice([-1.0, 1.0], shape)
    np.testing.assert_allclose(sx.cumprod(t(a), dim).numpy(), np.cumprod(a, dim), rtol=1e-12)
    np.testing.assert_allclose(sx.logcumsumexp(t(a * 30), dim).numpy(), np.logaddexp.accumulate(a * 30, dim),
                               rtol=1e-12)
    f = t(a, sx.float32)
    np.testing.assert_allclose(sx.cumprod(f, dim).numpy(), np.cumprod(a.astype(np.float32), dim), rtol=1e-5)
    np.testing.assert_allclose(sx.logcumsumexp(f, dim).numpy(), np.logaddexp.accumulate(a, dim), rtol=1e-5,
                               atol=1e-6)


def test_dtypes_and_special_values():
    ints = sx.tensor(np.array([[1, 2, -3], [4, 0, 5]]), dtype=sx.int32)
    out = sx.cumprod(ints, 1)
    assert out.dtype == sx.int64 and out.tolist() == [[1, 2, -6], [4, 0, 0]]
    assert sx.cumprod(sx.tensor([True, True, False]), 0).tolist() == [1, 1, 0]
    assert sx.cumprod(sx.tensor([1.5, 2.0]), 0, dtype=sx.float64).dtype == sx.float64
    big = sx.cumprod(sx.tensor(np.full(3, 2**40), dtype=sx.int64), 0)  # wraps around as int64 arithmetic does
    assert big.tolist() == [2**40, 0, 0]
    inf = float("inf")
    v = sx.logcumsumexp(sx.tensor([-inf, -inf, 0.0, inf, inf, 1.0]), 0).tolist()
    assert v[:2] == [-inf, -inf] and v[2] == 0.0 and v[3:] == [inf, inf, inf]
    assert np.isnan(sx.logcumsumexp(sx.tensor([0.0, float("nan"), 1.0]), 0).numpy()[1:]).all()
    h = sx.logcumsumexp(t([0.5, 1.0, 2.0], sx.bfloat16), 0)
    assert h.dtype == sx.bfloat16
    np.testing.assert_allclose(h.to(sx.float64).numpy(), np.logaddexp.accumulate([0.5, 1.0, 2.0]), rtol=1e-2)
    with pytest.raises(TypeError, match="logcumsumexp.*floating"):
        sx.logcumsumexp(sx.tensor([1, 2]), 0)
    with pytest.raises(IndexError, match="cumprod"):
        sx.cumprod(t([1.0, 2.0]), 1)


def test_zero_dim_and_empty():
    x = t(1.5, requires_grad=True)
    assert sx.cumprod(x, 0).item() == 1.5 and sx.logcumsumexp(x, -1).item() == 1.5
    (sx.cumprod(x, 0) + sx.logcumsumexp(x, 0)).backward()
    assert x.grad.item() == 2.0
    e = t(np.zeros((0, 3)), requires_grad=True)
    assert sx.cumprod(e, 0).shape == (0, 3) and sx.logcumsumexp(e, 1).shape == (0, 3)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gradients(dim):
    a = RNG.standard_normal((4, 5))
    gradcheck(lambda x: sx.cumprod(x, dim), [t(a, requires_grad=True)])
    gradcheck(lambda x: sx.logcumsumexp(x, dim), [t(a * 3, requires_grad=True)])


def test_cumprod_gradient_with_zeros_and_non_contiguous_input():
    a = np.array([[2.0, 0.0, 3.0, 0.0, 4.0], [0.0, 1.5, -2.0, 0.5, 1.0], [1.0, 2.0, 0.0, 3.0, 0.0]])
    gradcheck(lambda x: sx.cumprod(x, 1), [t(a, requires_grad=True)])
    gradcheck(lambda x: sx.cumprod(x.t(), 0), [t(a, requires_grad=True)])
    x = t(a, sx.float32, requires_grad=True)
    sx.cumprod(x, 1).sum().backward()
    x64 = t(a, requires_grad=True)
    sx.cumprod(x64, 1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), x64.grad.numpy(), rtol=1e-6)


def test_logcumsumexp_second_order():
    a = RNG.standard_normal((3, 4))
    w = t(RNG.standard_normal((3, 4)))

    def first(x):  # the gradient, itself differentiable (finite differences call this without a graph)
        with sx.enable_grad():
            x = x if x.requires_grad else x.detach().requires_grad_()
            (g,) = sx.autograd.grad((sx.logcumsumexp(x, 1) * w).sum(), [x], create_graph=True)
        return g

    gradcheck(first, [t(a, requires_grad=True)])


def test_cumprod_second_order_raises():
    x = t(RNG.standard_normal(4), requires_grad=True)
    with pytest.raises(RuntimeError, match="cumprod.*create_graph"):
        sx.autograd.grad(sx.cumprod(x, 0).sum(), [x], create_graph=True)


def _with_ties_and_nans(shape, dtype):
    a = RNG.integers(-3, 4, shape).astype(np.float64)  # few values: many ties
    if np.dtype(dtype).kind == "f":
        a[RNG.random(shape) < 0.05] = np.nan
        a[RNG.random(shape) < 0.05] = -0.0
    return a


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape,dim", [((9,), 0), ((5, 300), 1), ((300, 5), 0), ((70, 31), 0), ((70, 32), 0),
                                       ((40, 75), 0), ((3, 50, 40), 1), ((4, 6, 7), -1), ((2, 0, 3), 1)], ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8", "bool"])
def test_cummax_cummin_ties_and_nans(threads, shape, dim, dtype):
    a = _with_ties_and_nans(shape, np.float32 if "float" in dtype else np.int64)
    if dtype == "uint8":
        a = np.abs(np.nan_to_num(a))
    if dtype == "bool":
        a = a > 0
    n0 = sx.get_num_threads()
    sx.set_num_threads(threads)
    try:
        x = sx.tensor(a).to(getattr(sx, dtype))
        for is_max, fn in ((True, sx.cummax), (False, sx.cummin)):
            for src in (x, x.transpose(0, -1).contiguous().transpose(0, -1)):  # contiguous and strided
                v, i = fn(src, dim)
                ref = x.to(sx.float64).numpy() if dtype in ("float16", "bfloat16") else x.numpy()
                rv, ri = running_extremes(ref, dim, is_max)
                assert v.dtype == x.dtype and i.dtype == sx.int64 and v.shape == x.shape == i.shape
                got = v.to(sx.float64).numpy() if dtype in ("float16", "bfloat16") else v.numpy()
                np.testing.assert_array_equal(got, rv.astype(got.dtype))
                np.testing.assert_array_equal(i.numpy(), ri)
    finally:
        sx.set_num_threads(n0)


def test_cummax_cummin_gradient_zero_dim_and_empty():
    a = RNG.permutation(20).reshape(4, 5) * 0.37  # distinct values: a tie would have no derivative
    for dim in (0, 1, -1):
        gradcheck(lambda x: sx.cummax(x, dim).values, [t(a, requires_grad=True)])
        gradcheck(lambda x: sx.cummin(x.t(), dim).values, [t(a, requires_grad=True)])
    x = t([1.0, 3.0, 2.0, 3.0], requires_grad=True)
    sx.cummax(x, 0).values.sum().backward()  # each output's gradient goes to the element it came from
    assert x.grad.tolist() == [1.0, 2.0, 0.0, 1.0]
    s = t(2.5, requires_grad=True)
    v, i = sx.cummin(s, 0)
    assert v.shape == () and i.shape == () and i.item() == 0 and v.item() == 2.5
    v.backward()
    assert s.grad.item() == 1.0
    e = sx.cummax(t(np.zeros((0, 3))), 1)
    assert e.values.shape == (0, 3) and e.indices.dtype == sx.int64
    with pytest.raises(IndexError, match="cummax"):
        sx.cummax(t([1.0, 2.0]), 1)


@pytest.mark.parity
@pytest.mark.parametrize("dim", [0, 1])
def test_cummax_cummin_match_pytorch(dim):
    torch = pytest.importorskip("torch")
    a = _with_ties_and_nans((40, 37), np.float32).astype(np.float32)
    for name in ("cummax", "cummin"):
        v, i = getattr(sx, name)(sx.tensor(a), dim)
        tv, ti = getattr(torch, name)(torch.tensor(a), dim)
        np.testing.assert_array_equal(v.numpy(), tv.numpy())
        np.testing.assert_array_equal(i.numpy(), ti.numpy())
    ints = RNG.integers(0, 3, (30, 20))
    v, i = sx.cummin(sx.tensor(ints), dim)
    tv, ti = torch.cummin(torch.tensor(ints), dim)
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
