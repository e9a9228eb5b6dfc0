"""nan_to_num, nansum, nanmean, signbit, frac and copysign: values against NumPy in every floating
dtype (NaN, infinities and signed zeros included), gradients, and PyTorch (``pytest -m parity``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import sneppx_core as sx
from sneppx_core.testing import gradcheck

RNG = np.random.default_rng(43)
FLOATS = [(sx.float32, np.float32), (sx.float64, np.float64), (sx.float16, np.float16), (sx.bfloat16, None)]
BF16_MAX = 3.3895313892515355e38


def special(shape, nan=0.2, inf=0.1):
    a = RNG.standard_normal(shape) * 10
    a[RNG.random(shape) < nan] = np.nan
    a[RNG.random(shape) < inf] = np.inf
    a[RNG.random(shape) < inf] = -np.inf
    return a


def stored(t):
    return t.float().numpy().astype(np.float64) if t.dtype == sx.bfloat16 else t.numpy().astype(np.float64)


@pytest.mark.parametrize("dtype,np_dtype", FLOATS)
def test_nan_to_num_defaults_and_bounds(dtype, np_dtype, threads):
    a = special((37, 29))
    x = sx.tensor(a, dtype=dtype)
    v = stored(x)  # the values as stored in dtype
    top = BF16_MAX if np_dtype is None else float(np.finfo(np_dtype).max)
    want = np.where(np.isnan(v), 0.0, np.where(v == np.inf, top, np.where(v == -np.inf, -top, v)))
    out = sx.nan_to_num(x)
    assert out.dtype == dtype and np.array_equal(stored(out), want)
    want = np.where(np.isnan(v), 2.5, np.where(v == np.inf, 100.0, np.where(v == -np.inf, -100.0, v)))
    assert np.array_equal(stored(x.nan_to_num(nan=2.5, posinf=100.0, neginf=-100.0)), want)
    want = np.where(np.isnan(v), -1.0, np.where(v == np.inf, 4.0, np.where(v == -np.inf, -6.0, v)))
    assert np.array_equal(stored(x.nan_to_num(-1.0, 4.0, -6.0)), want)  # uneven bounds
    assert np.array_equal(stored(x.t().nan_to_num(-1.0, 4.0, -6.0).t()), want)  # from a strided view
    want = np.where(np.isnan(v), 0.0, np.where(v == np.inf, 7.0, np.where(v == -np.inf, -top, v)))
    assert np.array_equal(stored(x.nan_to_num(posinf=7.0)), want)  # neginf defaults to the lowest value
    y = x.t()  # a strided view, written in place
    y.nan_to_num_(nan=1.0)
    assert not np.isnan(stored(x)).any()


def test_nan_to_num_integers_gradient_and_in_place():
    ints = sx.tensor([1, -2, 3])
    assert sx.nan_to_num(ints).tolist() == [1, -2, 3] and sx.nan_to_num(ints) is not ints
    x = sx.tensor([1.0, np.nan, np.inf, -np.inf, -2.0], dtype=sx.float64, requires_grad=True)
    (sx.nan_to_num(x) * sx.tensor([1.0, 2, 3, 4, 5], dtype=sx.float64)).sum().backward()
    assert x.grad.tolist() == [1.0, 0.0, 0.0, 0.0, 5.0]  # the gradient flows where x is finite
    x = sx.tensor([np.nan, -np.inf, np.inf, 2.0], dtype=sx.float64, requires_grad=True)
    out = sx.nan_to_num(x, 0.0, 1.0, -3.0)  # uneven, recorded: the same values as without autograd
    assert out.tolist() == sx.nan_to_num(x.detach(), 0.0, 1.0, -3.0).tolist() == [0.0, -3.0, 1.0, 2.0]
    out.sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0, 1.0]
    gradcheck(lambda t: sx.nan_to_num(t) ** 2, [sx.tensor(RNG.standard_normal(6), requires_grad=True)])


@pytest.mark.parametrize("dtype,np_dtype", FLOATS)
@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1)])
def test_nansum_nanmean(dtype, np_dtype, dim, threads):
    tol = {sx.float16: 2e-2, sx.bfloat16: 5e-2}.get(dtype, 1e-5)
    for nan in (0.0, 0.05):  # no NaN (one pass) and some, with a row and a column all NaN
        a = special((30, 17), nan=nan, inf=0.0)
        if nan:
            a[4, :] = np.nan
            a[:, 3] = np.nan
        x = sx.tensor(a, dtype=dtype)
        v = stored(x)
        for keepdim in (False, True):
            if dim is None and keepdim:
                continue
            s = sx.nansum(x, dim, keepdim)
            m = x.nanmean(dim, keepdim)
            assert s.dtype == dtype and m.dtype == dtype
            with warnings.catch_warnings():  # NumPy warns of the all-NaN slices
                warnings.simplefilter("ignore", RuntimeWarning)
                np.testing.assert_allclose(stored(s), np.nansum(v, axis=dim, keepdims=keepdim), rtol=tol, atol=tol)
                want = np.nanmean(v, axis=dim, keepdims=keepdim) if nan else np.mean(v, axis=dim, keepdims=keepdim)
            np.testing.assert_allclose(stored(m), want, rtol=tol, atol=tol)


# Shapes and dims that take each path of the sum kernels: rows eight at a time, wide rows, a few long rows
# split into segments, columns in register blocks and their ragged end, and strided views read in place.
NANSUM_PATHS = [((300, 100), 1), ((20, 2000), 1), ((3, 150000), 1), ((200, 77), 0), ((9, 40, 13), (0, 2)),
                ((6, 50, 30), 1)]


@pytest.mark.parametrize("shape, dim", NANSUM_PATHS)
@pytest.mark.parametrize("dtype, np_dtype", FLOATS[:3])
@pytest.mark.parametrize("view", ["contiguous", "transposed", "sliced"])
def test_nansum_every_kernel_path(shape, dim, dtype, np_dtype, view):
    a = special(shape, nan=0.1, inf=0.0).astype(np_dtype)
    if view == "transposed":  # the same values, read through swapped strides
        x = sx.tensor(np.ascontiguousarray(np.swapaxes(a, 0, -1)), dtype=dtype).transpose(0, -1)
    elif view == "sliced":
        x = sx.tensor(np.concatenate([a, a], -1), dtype=dtype)[..., :shape[-1]]
    else:
        x = sx.tensor(a, dtype=dtype)
    tol = 2e-2 if dtype == sx.float16 else 1e-5
    ref = np.nansum(a.astype(np.float64), axis=dim)
    got = sx.nansum(x, dim)
    np.testing.assert_allclose(got.to(sx.float64).numpy(), ref, rtol=tol, atol=tol * np.nanmax(np.abs(a)))
    wide = sx.nansum(x, dim, dtype=sx.float64)  # accumulated in float64 (in place where the view allows)
    assert wide.dtype == sx.float64
    np.testing.assert_allclose(wide.numpy(), ref, rtol=1e-12 if dtype != sx.float16 else tol, atol=1e-9)


def test_nansum_gradients_and_dtypes():
    a = special((5, 7), nan=0.2, inf=0.0)
    x = sx.tensor(a, dtype=sx.float64, requires_grad=True)
    g, = sx.autograd.grad(sx.nansum(x, 1, keepdim=True).sum() * 3, x)
    np.testing.assert_array_equal(g.numpy(), np.where(np.isnan(a), 0.0, 3.0))
    finite = sx.tensor(RNG.standard_normal((4, 6)), dtype=sx.float64, requires_grad=True)
    assert gradcheck(lambda t: sx.nansum(t * t, (0, 1)), (finite,))
    assert sx.nansum(sx.tensor([[1, 2], [3, 4]]), 0).tolist() == [4, 6]
    assert sx.nansum(sx.tensor([1.5, np.nan]), dtype=sx.int64).item() == 1
    assert sx.nansum(sx.tensor([[np.nan]]), []).item() == 0.0  # an empty dim list reduces everything


def test_nansum_keeps_infinities_and_integers():
    x = sx.tensor([[np.inf, 1.0, np.nan], [np.inf, -np.inf, 2.0]])
    assert sx.nansum(x, 1).tolist()[0] == np.inf and np.isnan(sx.nansum(x, 1).tolist()[1])
    assert sx.nansum(sx.tensor([1, 2, 3])).item() == 6
    x = sx.tensor([[1.0, np.nan], [2.0, 3.0]], dtype=sx.float64, requires_grad=True)
    sx.nansum(x, 0).sum().backward()
    assert x.grad.tolist() == [[1.0, 0.0], [1.0, 1.0]]
    x = sx.tensor([[1.0, 4.0], [2.0, 3.0]], dtype=sx.float64, requires_grad=True)
    sx.nanmean(x, 0).sum().backward()
    assert x.grad.tolist() == [[0.5, 0.5], [0.5, 0.5]]


def test_signbit_frac_copysign():
    a = np.array([-0.0, 0.0, -1.5, 2.25, np.inf, -np.inf, np.nan, -np.nan, 1e-40, -1e-40])
    for dtype, np_dtype in FLOATS:
        x = sx.tensor(a, dtype=dtype)
        v = stored(x)
        assert sx.signbit(x).tolist() == np.signbit(v).tolist()
        with np.errstate(invalid="ignore"):
            np.testing.assert_array_equal(stored(x.frac()), v - np.trunc(v))
        b = sx.tensor(-a[::-1].copy(), dtype=dtype)
        np.testing.assert_array_equal(stored(sx.copysign(x, b)), np.copysign(v, stored(b)))
    assert sx.signbit(sx.tensor([-3, 0, 2])).tolist() == [True, False, False]
    assert sx.signbit(sx.tensor([0, 255], dtype=sx.uint8)).tolist() == [False, False]
    x = sx.tensor([-2.75, 0.5, 3.25], dtype=sx.float64, requires_grad=True)
    y = x.clone()
    y.frac_()
    assert y.tolist() == [-0.75, 0.5, 0.25]
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0]  # frac's gradient is 1, as PyTorch's


@pytest.mark.parity
def test_nan_ops_match_pytorch(torch):
    a = special((40, 33)).astype(np.float32)
    a[::7, ::5] = -0.0
    for dtype in ("float32", "float64", "float16", "bfloat16"):
        xt = torch.tensor(a).to(getattr(torch, dtype))
        xs = sx.tensor(xt.float().numpy()).to(getattr(sx, dtype))  # the same bits (PyTorch's bfloat16 NaN is negative)
        pairs = [(sx.nan_to_num(xs), torch.nan_to_num(xt)),
                 (xs.nan_to_num(1.0, 3.0, -2.0), xt.nan_to_num(1.0, 3.0, -2.0)),
                 (xs.nansum(1), xt.nansum(1)), (xs.nanmean(0), xt.nanmean(0)), (sx.signbit(xs), torch.signbit(xt)),
                 (xs.frac(), xt.frac()), (sx.copysign(xs, xs.flip(0)), torch.copysign(xt, xt.flip(0)))]
        for s, t in pairs:
            np.testing.assert_allclose(s.float().numpy(), t.float().numpy(), rtol=2e-2, atol=2e-2, equal_nan=True)
