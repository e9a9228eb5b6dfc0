"""Fractional max pooling: forward and indices against NumPy loops written from the definition, float64
finite-difference gradients, the samples drawn from the generator, errors, and parity with PyTorch (same
``_random_samples``, same outputs, indices and gradients)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import sneppx_core as sx
import sneppx_core.functional as F
from sneppx_core.testing import gradcheck

RNG = np.random.default_rng(47)


def np_starts(u, size, out, k, ftype):
    """Window starts along one dim, in the arithmetic of the float type ``ftype`` (np.float64/np.float32)."""
    seq = [0] * out
    if out > 1:
        alpha = ftype(size - k) / ftype(out - 1)
        u = ftype(u)
        for i in range(out - 1):
            seq[i] = int((ftype(i) + u) * alpha) - int(u * alpha)
    if out > 0:
        seq[out - 1] = size - k
    return seq


def np_fractional(x, k, out, samples, ftype=np.float64):
    """(values, indices) by scanning each window: a larger value or a NaN takes over."""
    nsp = len(k)
    n, c, *spatial = x.shape
    order = (1, 0) if nsp == 2 else (0, 1, 2)  # the sample that drives each dim
    y = np.zeros((n, c, *out), dtype=x.dtype)
    idx = np.zeros((n, c, *out), dtype=np.int64)
    for b, ch in itertools.product(range(n), range(c)):
        starts = [np_starts(samples[b, ch, order[d]], spatial[d], out[d], k[d], ftype) for d in range(nsp)]
        plane = x[b, ch].reshape(-1)
        for o in itertools.product(*(range(v) for v in out)):
            best, best_i = -np.inf, None
            for w in itertools.product(*(range(v) for v in k)):
                pos = [starts[d][o[d]] + w[d] for d in range(nsp)]
                flat = int(np.ravel_multi_index(pos, spatial))
                if best_i is None:
                    best_i = flat
                if plane[flat] > best or np.isnan(plane[flat]):
                    best, best_i = plane[flat], flat
            y[(b, ch) + o], idx[(b, ch) + o] = best, best_i
    return y, idx


def distinct(shape):
    """Values 0.1 apart in random order, so every window has one clear maximum."""
    return RNG.permutation(np.prod(shape)).reshape(shape) * 0.1 - 3.0


CASES = [  # (input shape, kernel, output size)
    ((2, 3, 9, 11), (2, 3), (4, 5)),
    ((1, 2, 7, 7), (3, 3), (5, 5)),
    ((2, 1, 10, 6), (1, 2), (10, 3)),
    ((1, 2, 5, 6), (2, 2), (1, 1)),
    ((2, 2, 6, 7, 5), (2, 3, 2), (3, 4, 2)),
    ((1, 3, 5, 5, 8), (1, 2, 3), (5, 2, 6)),
]


def _fn(nsp):
    return F.fractional_max_pool2d if nsp == 2 else F.fractional_max_pool3d


@pytest.mark.parametrize("shape,k,out", CASES)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_forward_and_indices_match_loops(shape, k, out, dtype):
    nsp = len(k)
    x = RNG.standard_normal(shape).astype(dtype)
    u = RNG.random((shape[0], shape[1], nsp)).astype(dtype)
    y, i = _fn(nsp)(sx.tensor(x), k, output_size=out, return_indices=True, _random_samples=sx.tensor(u))
    ry, ri = np_fractional(x, k, out, u, getattr(np, dtype))
    assert y.dtype == getattr(sx, dtype) and i.dtype == sx.int64
    np.testing.assert_array_equal(i.numpy(), ri)
    np.testing.assert_array_equal(y.numpy(), ry)


def test_unbatched_ratio_and_with_indices_names():
    x = RNG.standard_normal((3, 10, 9))
    u = RNG.random((1, 3, 2))
    y, i = F.fractional_max_pool2d_with_indices(sx.tensor(x), 2, output_ratio=0.5, _random_samples=sx.tensor(u))
    ry, ri = np_fractional(x[None], (2, 2), (5, 4), u)  # int(10 * 0.5), int(9 * 0.5)
    np.testing.assert_array_equal(y.numpy(), ry[0])
    np.testing.assert_array_equal(i.numpy(), ri[0])
    v = RNG.standard_normal((2, 6, 7, 8))
    w = RNG.random((1, 2, 3))
    y3, i3 = F.fractional_max_pool3d_with_indices(sx.tensor(v), (2, 2, 3), output_ratio=(0.5, 0.6, 0.7),
                                                  _random_samples=sx.tensor(w))
    ry3, ri3 = np_fractional(v[None], (2, 2, 3), (3, 4, 5), w)
    np.testing.assert_array_equal(y3.numpy(), ry3[0])
    np.testing.assert_array_equal(i3.numpy(), ri3[0])


def test_nan_and_minus_inf_windows():
    x = np.array([[[[1.0, np.nan, 3.0, np.nan], [-np.inf] * 4]]])
    u = np.full((1, 1, 2), 0.5)
    y, i = F.fractional_max_pool2d(sx.tensor(x), (1, 4), output_size=(2, 1), return_indices=True,
                                   _random_samples=sx.tensor(u))
    assert np.isnan(y.numpy()[0, 0, 0, 0]) and i.numpy()[0, 0, 0, 0] == 3  # the last NaN
    assert y.numpy()[0, 0, 1, 0] == -np.inf and i.numpy()[0, 0, 1, 0] == 4  # the window's first element


@pytest.mark.parametrize("shape,k,out", [CASES[0], CASES[2], CASES[4]])
def test_gradients_match_finite_differences(shape, k, out):
    nsp = len(k)
    u = sx.tensor(RNG.random((shape[0], shape[1], nsp)))
    x = sx.tensor(distinct(shape), requires_grad=True)
    assert gradcheck(lambda t: _fn(nsp)(t, k, output_size=out, _random_samples=u) ** 2, [x], eps=1e-6)


def test_gradient_goes_to_the_argmax():
    x = sx.tensor(distinct((1, 2, 8, 8)), requires_grad=True)
    u = sx.tensor(RNG.random((1, 2, 2)))
    y, i = F.fractional_max_pool2d(x, 3, output_size=4, return_indices=True, _random_samples=u)
    y.sum().backward()
    expect = np.zeros((1, 2, 64))
    for c in range(2):
        np.add.at(expect[0, c], i.numpy()[0, c].reshape(-1), 1.0)
    np.testing.assert_array_equal(x.grad.numpy().reshape(1, 2, 64), expect)


def test_samples_come_from_the_generator():
    x = sx.tensor(RNG.standard_normal((2, 3, 12, 12)).astype(np.float32))
    sx.manual_seed(5)
    a = F.fractional_max_pool2d(x, 2, output_size=5)
    sx.manual_seed(5)
    u = sx.rand(2, 3, 2, dtype=sx.float32)
    b = F.fractional_max_pool2d(x, 2, output_size=5, _random_samples=u)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    sx.manual_seed(5)
    c = F.fractional_max_pool3d(sx.tensor(RNG.standard_normal((3, 6, 6, 6))), 2, output_size=3)
    assert tuple(c.shape) == (3, 3, 3, 3)


def test_extra_sample_rows_are_ignored_and_half_precision_runs():
    x = RNG.standard_normal((2, 2, 9, 9))
    u = RNG.random((4, 2, 2))
    a = F.fractional_max_pool2d(sx.tensor(x), 2, output_size=4, _random_samples=sx.tensor(u))
    b = F.fractional_max_pool2d(sx.tensor(x), 2, output_size=4, _random_samples=sx.tensor(u[:2]))
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    h = F.fractional_max_pool2d(sx.tensor(x, dtype=sx.float16), 2, output_size=4)
    assert h.dtype == sx.float16 and tuple(h.shape) == (2, 2, 4, 4)


@pytest.mark.parametrize("call,match", [
    (lambda x, u: F.fractional_max_pool2d(x, 2, _random_samples=u), "output_size or an output_ratio"),
    (lambda x, u: F.fractional_max_pool2d(x, 4, output_size=6, _random_samples=u), r"too large.*\(1, 2, 8, 8\)"),
    (lambda x, u: F.fractional_max_pool2d(x, 2, output_size=4, _random_samples=u.float()), "float32"),
    (lambda x, u: F.fractional_max_pool2d(x, 2, output_size=4, _random_samples=u[:, :1]), r"got \(1, 1, 2\)"),
    (lambda x, u: F.fractional_max_pool2d(x.long(), 2, output_size=4), "int64"),
    (lambda x, u: F.fractional_max_pool2d(x[0, 0, 0], 2, output_size=4), "3-D"),
    (lambda x, u: F.fractional_max_pool3d(x[0], 2, output_size=2), "4-D"),
    (lambda x, u: F.fractional_max_pool2d(x, 0, output_size=4, _random_samples=u), "kernel_size"),
    (lambda x, u: F.fractional_max_pool2d(x, 2, output_ratio=(0.5, 0.5, 0.5), _random_samples=u), "output_ratio"),
])
def test_errors_name_the_op_and_the_shapes(call, match):
    x = sx.tensor(RNG.standard_normal((1, 2, 8, 8)))
    u = sx.tensor(RNG.random((1, 2, 2)))
    with pytest.raises((ValueError, TypeError), match=match) as info:
        call(x, u)
    assert "fractional_max_pool" in str(info.value)


PARITY = [  # (input shape, kernel, output size)
    ((2, 3, 31, 29), (3, 2), (13, 17)),
    ((1, 2, 300, 40), (2, 2), (170, 20)),
    ((3, 2, 9, 8), (2, 2), (8, 7)),
    ((2, 2, 9, 10, 11), (2, 3, 2), (5, 6, 8)),
    ((1, 1, 40, 6, 5), (3, 2, 2), (27, 3, 3)),  # PyTorch's 3-d op wants output + k - 1 < input
]


@pytest.mark.parity
@pytest.mark.parametrize("shape,k,out", PARITY)
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_matches_torch(torch, shape, k, out, dtype):
    nsp = len(k)
    tdt = getattr(torch, dtype)
    tx = torch.tensor(distinct(shape)).to(tdt).requires_grad_(True)
    tu = torch.rand(shape[0], shape[1], nsp, generator=torch.Generator().manual_seed(sum(shape)), dtype=torch.float64)
    tu = tu.to(tdt)
    tf = getattr(torch.nn.functional, f"fractional_max_pool{nsp}d")
    ty, ti = tf(tx, k, output_size=out, return_indices=True, _random_samples=tu)
    x = sx.tensor(tx.detach().double().numpy(), dtype=getattr(sx, dtype), requires_grad=True)
    u = sx.tensor(tu.double().numpy(), dtype=getattr(sx, dtype))
    y, i = _fn(nsp)(x, k, output_size=out, return_indices=True, _random_samples=u)
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
    np.testing.assert_array_equal(y.detach().float().numpy(), ty.detach().float().numpy())
    seed = RNG.standard_normal(tuple(ty.shape))
    (ty * torch.tensor(seed).to(tdt)).sum().backward()
    (y * sx.tensor(seed, dtype=getattr(sx, dtype))).sum().backward()
    if dtype in ("float16", "bfloat16"):
        # where windows overlap, SneppX sums a position's gradients in float32 and rounds once (its scatter_add);
        # PyTorch's pooling backward adds them in the narrow type: within its rounding of each addition (of
        # partial sums up to a few seeds in size)
        eps = float(np.finfo(np.float16).eps) if dtype == "float16" else 2.0 ** -7
        np.testing.assert_allclose(x.grad.float().numpy(), tx.grad.float().numpy(), rtol=2 * eps,
                                   atol=4 * eps * np.abs(seed).max())
    else:
        np.testing.assert_array_equal(x.grad.float().numpy(), tx.grad.float().numpy())


@pytest.mark.parity
def test_module_style_ratio_matches_torch(torch):
    tx = torch.randn(2, 4, 25, 19, dtype=torch.float64)
    tu = torch.rand(2, 4, 2, dtype=torch.float64)
    ty = torch.nn.functional.fractional_max_pool2d(tx, 3, output_ratio=(0.7, 0.45), _random_samples=tu)
    y = F.fractional_max_pool2d(sx.tensor(tx.numpy()), 3, output_ratio=(0.7, 0.45),
                                _random_samples=sx.tensor(tu.numpy()))
    np.testing.assert_array_equal(y.numpy(), ty.numpy())
