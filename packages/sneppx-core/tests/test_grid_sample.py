"""affine_grid and grid_sample: against NumPy loops written from the definitions (float64), gradients against
float64 finite differences, an identity warp, errors; parity with torch in test_parity_conv.py."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import sneppx_core as sx
import sneppx_core.functional as F
from sneppx_core.testing import gradcheck

RNG = np.random.default_rng(41)


def t64(a, requires_grad=False):
    return sx.tensor(np.asarray(a, dtype=np.float64), dtype=sx.float64, requires_grad=requires_grad)


def unnormalize(c, size, align):
    return (c + 1) / 2 * (size - 1) if align else ((c + 1) * size - 1) / 2


def reflect(x, lo2, hi2):
    if lo2 == hi2:
        return 0.0
    lo, span = lo2 / 2, (hi2 - lo2) / 2
    x = abs(x - lo)
    flips, extra = math.floor(x / span), math.fmod(x, span)
    return extra + lo if flips % 2 == 0 else span - extra + lo


def pad_coord(x, size, pm, align):
    if pm == "reflection":
        x = reflect(x, 0, 2 * (size - 1)) if align else reflect(x, -1, 2 * size - 1)
    if pm in ("border", "reflection"):
        x = min(max(x, 0), size - 1)
    return x


def cubic(t):
    a = -0.75
    near = lambda x: ((a + 2) * x - (a + 3)) * x * x + 1  # noqa: E731
    far = lambda x: ((a * x - 5 * a) * x + 8 * a) * x - 4 * a  # noqa: E731
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def np_grid_sample(x, grid, mode, pm, align):
    """Point by point: unnormalise, apply the padding mode, interpolate the in-bounds taps."""
    n, c, *sizes = x.shape
    nsp = len(sizes)
    pts = grid.reshape(n, -1, nsp)
    out = np.zeros((n, c, pts.shape[1]))

    def read(b, idx):
        return x[(b, slice(None)) + tuple(idx)] if all(0 <= v < s for v, s in zip(idx, sizes)) else 0.0
    for b, p in itertools.product(range(n), range(pts.shape[1])):
        raw = [unnormalize(pts[b, p, nsp - 1 - i], sizes[i], align) for i in range(nsp)]
        if mode == "bicubic":
            base = [math.floor(v) for v in raw]
            ws = [cubic(v - f) for v, f in zip(raw, base)]
            for ty, tx in itertools.product(range(4), repeat=2):
                idx = [int(pad_coord(base[0] + ty - 1, sizes[0], pm, align)),
                       int(pad_coord(base[1] + tx - 1, sizes[1], pm, align))]
                out[b, :, p] += ws[0][ty] * ws[1][tx] * read(b, idx)
            continue
        src = [pad_coord(v, s, pm, align) for v, s in zip(raw, sizes)]
        if mode == "nearest":
            out[b, :, p] = read(b, [int(np.rint(v)) for v in src])
            continue
        base = [math.floor(v) for v in src]
        for taps in itertools.product((0, 1), repeat=nsp):
            w = np.prod([v - f if t else f + 1 - v for v, f, t in zip(src, base, taps)])
            out[b, :, p] += w * read(b, [f + t for f, t in zip(base, taps)])
    return out.reshape((n, c) + grid.shape[1:-1])


CASES = [(mode, pm, align) for mode in ("bilinear", "nearest", "bicubic") for pm in ("zeros", "border", "reflection")
         for align in (False, True)]


@pytest.mark.parametrize("mode, pm, align", CASES)
def test_grid_sample_2d_against_numpy(mode, pm, align):
    x = RNG.standard_normal((2, 3, 5, 6))
    grid = RNG.uniform(-1.5, 1.5, (2, 4, 7, 2))
    got = F.grid_sample(t64(x), t64(grid), mode, pm, align)
    np.testing.assert_allclose(got.numpy(), np_grid_sample(x, grid, mode, pm, align), atol=1e-12)


@pytest.mark.parametrize("mode, pm, align", [c for c in CASES if c[0] != "bicubic"])
def test_grid_sample_3d_against_numpy(mode, pm, align):
    x = RNG.standard_normal((2, 2, 3, 4, 5))
    grid = RNG.uniform(-1.5, 1.5, (2, 2, 3, 4, 3))
    got = F.grid_sample(t64(x), t64(grid), mode, pm, align)
    np.testing.assert_allclose(got.numpy(), np_grid_sample(x, grid, mode, pm, align), atol=1e-12)


def test_grid_sample_gradients():
    x = RNG.standard_normal((1, 2, 4, 5))
    grid = RNG.uniform(-1.2, 1.2, (1, 3, 3, 2))
    grid = grid + 0.01 * (np.abs(unnormalize(grid, 5, False) % 1 - 0.5) < 0.02)  # away from the kinks at pixels
    for mode, pm in (("bilinear", "zeros"), ("bilinear", "reflection"), ("bicubic", "border")):
        gradcheck(lambda x, g: F.grid_sample(x, g, mode, pm), [t64(x, True), t64(grid, True)])
    gradcheck(lambda x: F.grid_sample(x, t64(grid), "nearest"), [t64(x, True)])
    x3, g3 = RNG.standard_normal((1, 2, 3, 3, 4)), RNG.uniform(-0.9, 0.9, (1, 2, 2, 2, 3))
    gradcheck(lambda x, g: F.grid_sample(x, g, align_corners=True), [t64(x3, True), t64(g3, True)])
    gradcheck(lambda th: F.affine_grid(th, (2, 1, 3, 4)), [t64(RNG.standard_normal((2, 2, 3)), True)])


@pytest.mark.parametrize("align", [False, True])
def test_affine_grid_against_numpy_and_identity_warp(align):
    theta = RNG.standard_normal((2, 2, 3))
    got = F.affine_grid(t64(theta), (2, 1, 3, 4), align)
    xs = np.linspace(-1, 1, 4) * (1 if align else 3 / 4)
    ys = np.linspace(-1, 1, 3) * (1 if align else 2 / 3)
    base = np.stack(np.broadcast_arrays(xs[None, :], ys[:, None], 1.0), -1)
    np.testing.assert_allclose(got.numpy(), np.einsum("hwk,nik->nhwi", base, theta), atol=1e-12)
    theta3 = RNG.standard_normal((1, 3, 4))
    g3 = F.affine_grid(t64(theta3), (1, 2, 2, 3, 1), align).numpy()
    assert g3.shape == (1, 2, 3, 1, 3)
    zs = np.linspace(-1, 1, 2) * (1 if align else 1 / 2)
    np.testing.assert_allclose(g3[0, 1, 2, 0], theta3[0] @ np.array([0.0, ys[-1] if align else 2 / 3, zs[1], 1.0]),
                               atol=1e-12)
    x = RNG.standard_normal((2, 3, 5, 7))
    eye = np.tile(np.eye(2, 3), (2, 1, 1))
    for mode in ("bilinear", "nearest", "bicubic"):
        out = F.grid_sample(t64(x), F.affine_grid(t64(eye), x.shape, align), mode, align_corners=align)
        np.testing.assert_allclose(out.numpy(), x, atol=1e-12)


def test_grid_sample_float32_and_errors():
    x, grid = RNG.standard_normal((1, 2, 4, 4)), RNG.uniform(-1, 1, (1, 3, 3, 2))
    got = F.grid_sample(sx.tensor(x, dtype=sx.float32), sx.tensor(grid, dtype=sx.float32))
    assert got.dtype == sx.float32
    np.testing.assert_allclose(got.numpy(), np_grid_sample(x, grid, "bilinear", "zeros", False), atol=1e-5)
    with pytest.raises(ValueError, match=r"\[grid_sample\] expected input \(N, C, H, W\) with grid"):
        F.grid_sample(t64(x), t64(grid[..., :1]))
    with pytest.raises(TypeError, match=r"\[grid_sample\].*float64 and .*float32"):
        F.grid_sample(t64(x), sx.tensor(grid, dtype=sx.float32))
    with pytest.raises(ValueError, match=r"\[grid_sample\] mode must be one of"):
        F.grid_sample(t64(x), t64(grid), mode="area")
    with pytest.raises(ValueError, match=r"\[grid_sample\] bicubic mode needs 4-D"):
        F.grid_sample(t64(np.zeros((1, 1, 2, 2, 2))), t64(np.zeros((1, 1, 1, 1, 3))), mode="bicubic")
    with pytest.raises(ValueError, match=r"\[affine_grid\] expected theta \(N, 2, 3\)"):
        F.affine_grid(t64(np.zeros((1, 2, 3))), (2, 1, 3, 3))
