"""functional.pad and functional.interpolate against NumPy, finite differences and PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
import sneppx_core as sx
import sneppx_core.functional as F
from sneppx_core.testing import gradcheck

RNG = np.random.default_rng(11)


def t64(a, requires_grad=True):
    return sx.tensor(np.asarray(a, dtype=np.float64), dtype=sx.float64, requires_grad=requires_grad)


@pytest.mark.parametrize("mode,np_mode", [("constant", "constant"), ("reflect", "reflect"), ("replicate", "edge"),
                                          ("circular", "wrap")])
def test_pad_modes(mode, np_mode):
    a = RNG.standard_normal((2, 3, 5, 4))
    got = F.pad(t64(a, False), (1, 2, 3, 1), mode=mode)
    ref = np.pad(a, ((0, 0), (0, 0), (3, 1), (1, 2)), mode=np_mode)
    np.testing.assert_allclose(got.numpy(), ref)
    gradcheck(lambda x: F.pad(x, (1, 2, 3, 1), mode=mode), [t64(a[:1, :1])])


def test_pad_constant_value_and_negative_pads():
    a = RNG.standard_normal((3, 6))
    got = F.pad(t64(a, False), (-2, 1, 1, 0), value=7.0)
    ref = np.pad(a[:, 2:], ((1, 0), (0, 1)), constant_values=7.0)
    np.testing.assert_allclose(got.numpy(), ref)
    with pytest.raises(ValueError, match="pad.*reflect"):
        F.pad(sx.zeros(1, 1, 3), (3, 0), mode="reflect")
    with pytest.raises(ValueError, match="pad.*even"):
        F.pad(sx.zeros(3), (1, 2, 3))


@pytest.mark.parametrize("pad", [(2, 0, 0, 1, 1, 1), (0, 0, 0, 0, 2, 1), (1, 1), (-1, 2, 1, -2), (-2, -1, 0, 0, 3, 0),
                                 (0, 0, 0, 0, 0, 0), (1, 2, 3, 4)])
def test_pad_constant_many_dims_crops_and_gradients(pad):
    a = RNG.standard_normal((2, 4, 5, 6))
    widths = [(0, 0)] * (4 - len(pad) // 2) + [(pad[2 * k], pad[2 * k + 1]) for k in reversed(range(len(pad) // 2))]
    crop = tuple(slice(max(-l, 0), n - max(-r, 0)) for (l, r), n in zip(widths, a.shape))
    ref = np.pad(a[crop], [(max(l, 0), max(r, 0)) for l, r in widths], constant_values=-3.5)
    np.testing.assert_array_equal(F.pad(t64(a, False), pad, value=-3.5).numpy(), ref)
    strided = t64(a.transpose(0, 1, 3, 2).copy(), False).transpose(2, 3)  # the same values, not contiguous
    np.testing.assert_array_equal(F.pad(strided, pad, value=-3.5).numpy(), ref)
    gradcheck(lambda x: F.pad(x, pad, value=2.0) ** 2, [t64(a[:1, :2])])
    for dtype in (sx.float32, sx.bfloat16, sx.int64, sx.bool):
        got = F.pad(sx.tensor(a > 0).to(dtype), pad, value=1)
        assert got.dtype == dtype
        want = np.pad((a > 0)[crop], [(max(l, 0), max(r, 0)) for l, r in widths], constant_values=1)
        np.testing.assert_array_equal(got.float().numpy(), want)


@pytest.mark.parametrize("mode,np_mode", [("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")])
def test_pad_three_dims_in_one_gather(mode, np_mode):
    a = RNG.standard_normal((2, 4, 5, 6))
    got = F.pad(t64(a, False).transpose(2, 3), (2, 1, 0, 3, 1, 0), mode=mode)  # a strided input
    ref = np.pad(a.transpose(0, 1, 3, 2), ((0, 0), (1, 0), (0, 3), (2, 1)), mode=np_mode)
    np.testing.assert_array_equal(got.numpy(), ref)
    gradcheck(lambda x: F.pad(x, (2, 1, 0, 3, 1, 0), mode=mode), [t64(a[:1, :3])])


@pytest.mark.parametrize("mode,np_mode", [("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int64, np.bool_, np.uint8])
def test_pad_gather_dtypes_dims_and_threads(mode, np_mode, dtype):
    a = np.abs(RNG.standard_normal((3, 4, 9, 33)) * 4).astype(dtype)
    for pad in [(3, 2), (0, 4, 2, 0), (1, 1, 3, 2, 1, 0), (5, 0, 0, 0)]:
        widths = [(0, 0)] * (4 - len(pad) // 2) + [(pad[2 * k], pad[2 * k + 1]) for k in reversed(range(len(pad) // 2))]
        ref = np.pad(a, widths, mode=np_mode)
        for threads in (1, 2):
            sx.set_num_threads(threads)
            np.testing.assert_array_equal(F.pad(sx.tensor(a), pad, mode=mode).numpy(), ref)
    sx.set_num_threads(2)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_gather_second_order_and_large(mode):
    a = RNG.standard_normal((1, 1, 4, 5))
    x = t64(a)
    g, = sx.autograd.grad((F.pad(x, (2, 1, 1, 2), mode=mode) ** 2).sum(), x, create_graph=True)
    gg, = sx.autograd.grad((g * g).sum(), x)  # g = 2 P^T P x, so the gradient of |g|^2 is 8 (P^T P)^2 x
    p = np.stack([np.pad(e, ((1, 2), (2, 1)), mode={"replicate": "edge", "circular": "wrap"}.get(mode, mode))
                  for e in np.eye(20).reshape(20, 4, 5)]).reshape(20, -1)  # the padding as a matrix
    ptp = p @ p.T
    np.testing.assert_allclose(gg.numpy().reshape(-1), 8 * ptp @ ptp @ a.reshape(-1), rtol=1e-10)
    big = RNG.standard_normal((4, 6, 40, 70)).astype(np.float32)  # rows over many tasks
    ref = np.pad(big, ((0, 0), (0, 0), (3, 3), (2, 5)), mode={"replicate": "edge", "circular": "wrap"}.get(mode, mode))
    np.testing.assert_array_equal(F.pad(sx.tensor(big), (2, 5, 3, 3), mode=mode).numpy(), ref)


def test_pad_gather_rejects_bad_maps():
    from sneppx_core._backend import _C
    if not hasattr(_C, "_conv"):
        pytest.skip("the compiled backend's pad_gather")
    x = sx.zeros(2, 3)
    with pytest.raises(IndexError, match=r"\[pad\] index 3 is out of range for dim 1"):
        _C._conv.pad_gather(x, [sx.tensor([0, 3])])
    with pytest.raises(TypeError, match=r"\[pad\] the index map of dim 1 must be a 1-d contiguous int64"):
        _C._conv.pad_gather(x, [sx.tensor([0.0, 1.0])])
    with pytest.raises(ValueError, match=r"\[pad\] 3 index maps"):
        _C._conv.pad_gather(x, [sx.tensor([0])] * 3)


def test_pad_errors():
    with pytest.raises(ValueError, match=r"\[pad\] padding \(-4, 0\) crops more than dim 1"):
        F.pad(sx.zeros(2, 3), (-4, 0))
    with pytest.raises(ValueError, match=r"\[pad\].*even length"):
        F.pad(sx.zeros(2, 3), (1, 1, 1, 1, 1, 1))


@pytest.mark.parametrize("mode,shape,size,align", [
    ("nearest", (1, 2, 5), 8, None), ("nearest", (1, 1, 4, 6), (3, 9), None), ("linear", (2, 1, 5), 9, False),
    ("linear", (2, 1, 5), 3, True), ("bilinear", (1, 2, 4, 3), (7, 5), False),
    ("bilinear", (1, 2, 4, 3), (6, 2), True)])
def test_interpolate_gradients(mode, shape, size, align):
    a = RNG.standard_normal(shape)
    gradcheck(lambda x: F.interpolate(x, size=size, mode=mode, align_corners=align), [t64(a)])


def test_interpolate_linear_against_numpy():
    a = RNG.standard_normal((1, 1, 4))
    got = F.interpolate(t64(a, False), size=7, mode="linear", align_corners=True).numpy()[0, 0]
    np.testing.assert_allclose(got, np.interp(np.linspace(0, 3, 7), np.arange(4), a[0, 0]))
    got = F.interpolate(t64(a, False), scale_factor=2, mode="nearest").numpy()[0, 0]
    np.testing.assert_allclose(got, np.repeat(a[0, 0], 2))


@pytest.mark.parity
@pytest.mark.parametrize("kw", [
    dict(size=(7, 5), mode="bilinear"), dict(size=(3, 8), mode="bilinear", align_corners=True),
    dict(scale_factor=2.5, mode="nearest"), dict(size=(5, 9), mode="nearest"), dict(scale_factor=0.5, mode="bilinear")])
def test_parity_interpolate(kw):
    torch = pytest.importorskip("torch")
    a = RNG.standard_normal((2, 3, 6, 4)).astype(np.float32)
    np.testing.assert_allclose(F.interpolate(sx.tensor(a), **kw).numpy(),
                               torch.nn.functional.interpolate(torch.tensor(a), **kw).numpy(), atol=1e-6)


@pytest.mark.parity
@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_parity_pad(mode):
    torch = pytest.importorskip("torch")
    a = RNG.standard_normal((1, 2, 5, 6)).astype(np.float32)
    np.testing.assert_allclose(F.pad(sx.tensor(a), (2, 1, 0, 3), mode=mode).numpy(),
                               torch.nn.functional.pad(torch.tensor(a), (2, 1, 0, 3), mode=mode).numpy())
