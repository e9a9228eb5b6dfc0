"""Convolutions, unfold/fold and pooling: forward against NumPy, gradients against float64 finite
differences, both against PyTorch (``-m parity``), and the error messages."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
import sneppx_core as sx
import sneppx_core.functional as F
from opcheck import rms_rel_err
from sneppx_core.testing import gradcheck

RNG = np.random.default_rng(5)


@contextlib.contextmanager
def at_threads(n):
    """Runs the block with n threads in the core's pool, restoring the setting afterwards."""
    old = sx.get_num_threads()
    sx.set_num_threads(n)
    try:
        yield
    finally:
        sx.set_num_threads(old)


def t64(a, requires_grad=True):
    return sx.tensor(np.asarray(a, dtype=np.float64), dtype=sx.float64, requires_grad=requires_grad)


def grad_of(f):
    """x -> d f(x, ...) / dx with create_graph, so that gradcheck differentiates the backward pass."""
    def fn(x, *rest):
        x = x if x.requires_grad else x.detach().requires_grad_(True)
        return sx.autograd.grad(f(x, *rest), [x], create_graph=True)[0]
    return fn


def np_windows(w, oh, ow, stride, dilation, groups):
    """(o, channels of o's group, i, j, rows, cols) for every output channel o and kernel tap (i, j): the
    padded input positions that tap reads for the (oh, ow) outputs."""
    (sh, sw), (dh, dw) = stride, dilation
    co, cg, kh, kw = w.shape
    for o in range(co):
        g = o // (co // groups)
        for i in range(kh):
            for j in range(kw):
                yield (o, slice(g * cg, (g + 1) * cg), i, j, slice(i * dh, i * dh + sh * (oh - 1) + 1, sh),
                       slice(j * dw, j * dw + sw * (ow - 1) + 1, sw))


def np_conv2d(x, w, b, stride, padding, dilation, groups):
    """Direct definition: out[n, o, y, x] = b[o] + sum_{c,i,j} w[o, c, i, j] xp[n, g c, y s + i d, x s + j d]."""
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    n, _, h, wd = x.shape
    co, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, co, oh, ow))
    for o, ch, i, j, rows, cols in np_windows(w, oh, ow, stride, dilation, groups):
        out[:, o] += np.einsum("nchw,c->nhw", xp[:, ch, rows, cols], w[o, :, i, j])
    if b is not None:
        out += b[None, :, None, None]
    return out


CONV_CASES = [  # (N, C, H, W), (C_out, kh, kw), stride, padding, dilation, groups, bias
    ((2, 3, 7, 6), (4, 3, 3), (1, 1), (0, 0), (1, 1), 1, True),
    ((1, 4, 8, 9), (6, 3, 2), (2, 1), (1, 2), (1, 1), 2, False),
    ((2, 2, 9, 9), (2, 3, 3), (2, 2), (2, 1), (2, 3), 1, True),
    ((3, 4, 5, 5), (4, 3, 3), (1, 1), (1, 1), (1, 1), 4, True),  # depthwise
    ((1, 3, 4, 4), (5, 1, 1), (1, 1), (0, 0), (1, 1), 1, True),  # pointwise
]


@pytest.mark.parametrize("xs,ws,stride,padding,dilation,groups,bias", CONV_CASES)
def test_conv2d_against_numpy(xs, ws, stride, padding, dilation, groups, bias):
    x = RNG.standard_normal(xs)
    w = RNG.standard_normal((ws[0], xs[1] // groups, ws[1], ws[2]))
    b = RNG.standard_normal(ws[0]) if bias else None
    got = F.conv2d(t64(x, False), t64(w, False), None if b is None else t64(b, False), stride, padding, dilation,
                   groups)
    np.testing.assert_allclose(got.numpy(), np_conv2d(x, w, b, stride, padding, dilation, groups), rtol=1e-10,
                               atol=1e-10)
    got32 = F.conv2d(sx.tensor(x.astype(np.float32)), sx.tensor(w.astype(np.float32)),
                     None if b is None else sx.tensor(b.astype(np.float32)), stride, padding, dilation, groups)
    assert got32.dtype == sx.float32
    np.testing.assert_allclose(got32.numpy(), np_conv2d(x, w, b, stride, padding, dilation, groups), rtol=1e-4,
                               atol=1e-4)


def test_conv1d_is_conv2d_with_unit_height():
    x, w, b = RNG.standard_normal((2, 4, 11)), RNG.standard_normal((6, 2, 3)), RNG.standard_normal(6)
    got = F.conv1d(t64(x, False), t64(w, False), t64(b, False), stride=2, padding=1, dilation=2, groups=2)
    ref = np_conv2d(x[:, :, None], w[:, :, None], b, (1, 2), (0, 1), (1, 2), 2)[:, :, 0]
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("xs,ws,stride,padding,dilation,groups,bias", CONV_CASES[:4])
def test_conv2d_gradients(xs, ws, stride, padding, dilation, groups, bias):
    xs = (1,) + xs[1:3] + (min(xs[3], 6),)
    x = RNG.standard_normal(xs)
    w = RNG.standard_normal((ws[0], xs[1] // groups, ws[1], ws[2]))
    args = [t64(x), t64(w)] + ([t64(RNG.standard_normal(ws[0]))] if bias else [])
    gradcheck(lambda x, w, *b: F.conv2d(x, w, b[0] if b else None, stride, padding, dilation, groups), args)


def np_conv2d_grads(x, w, gy, stride, padding, dilation, groups):
    """(dL/dx, dL/dw) of sum(conv2d(x, w) * gy), by the same direct definition as np_conv2d."""
    ph, pw = padding
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    gxp, gw = np.zeros_like(xp), np.zeros_like(w)
    for o, ch, i, j, rows, cols in np_windows(w, *gy.shape[2:], stride, dilation, groups):
        gw[o, :, i, j] = np.einsum("nchw,nhw->c", xp[:, ch, rows, cols], gy[:, o])
        gxp[:, ch, rows, cols] += np.einsum("nhw,c->nchw", gy[:, o], w[o, :, i, j])
    return gxp[:, :, ph:ph + x.shape[2], pw:pw + x.shape[3]], gw


@pytest.mark.parametrize("hw", [None, (20, 19)])
@pytest.mark.parametrize("n", [1, 3, 11])
@pytest.mark.parametrize("xs,ws,stride,padding,dilation,groups,bias", CONV_CASES)
def test_conv2d_batch_gradients_against_numpy(n, hw, xs, ws, stride, padding, dilation, groups, bias):
    """Gradients of a batch (more images than the kernel's tasks, split unevenly) against the direct
    definition, in float64 and float32, and the same bits at 1 and 2 threads. Images of 20 x 19 have 64
    or more output positions, which the CPU convolves image by image; the small ones go through the
    whole-batch patch matrix. (These have too few channels for the direct float32 kernel, tested below.)"""
    x = RNG.standard_normal((n, xs[1]) + (hw or xs[2:]))
    w = RNG.standard_normal((ws[0], xs[1] // groups, ws[1], ws[2]))
    b = RNG.standard_normal(ws[0]) if bias else None
    gy = RNG.standard_normal(np_conv2d(x, w, b, stride, padding, dilation, groups).shape)
    gx_ref, gw_ref = np_conv2d_grads(x, w, gy, stride, padding, dilation, groups)
    for dt, tol in ((np.float64, 1e-10), (np.float32, 2e-4)):
        grads = []
        for threads in (1, 2):
            with at_threads(threads):
                xt, wt = sx.tensor(x.astype(dt), requires_grad=True), sx.tensor(w.astype(dt), requires_grad=True)
                bt = None if b is None else sx.tensor(b.astype(dt), requires_grad=True)
                y = F.conv2d(xt, wt, bt, stride, padding, dilation, groups)
                assert ("Convolution" in str(y.grad_fn)) == (gy.shape[2] * gy.shape[3] >= 64), y.grad_fn
                y.backward(sx.tensor(gy.astype(dt)))
            grads.append([t.grad.numpy() for t in (xt, wt) + ((bt,) if bt is not None else ())])
            np.testing.assert_allclose(grads[-1][0], gx_ref, rtol=tol, atol=tol * 10)
            np.testing.assert_allclose(grads[-1][1], gw_ref, rtol=tol, atol=tol * 10 * n)
            if bt is not None:
                np.testing.assert_allclose(grads[-1][2], gy.sum(axis=(0, 2, 3)), rtol=tol, atol=tol * 10 * n)
        for a, c in zip(*grads):
            np.testing.assert_array_equal(a, c)


@pytest.mark.parametrize("cout,c,k,stride,pad,hw",
                         [(3, 32, 9, 1, 0, 40), (10, 16, 3, 1, 1, 18), (8, 8, 3, 2, 1, 18), (3, 32, 3, 1, 1, 20),
                          (1, 64, 3, 1, 1, 30), (5, 16, 5, 1, 2, 24)])
def test_conv2d_few_output_channels_on_the_direct_kernel(cout, c, k, stride, pad, hw):
    """Fewer than 16 output channels in float32: the forward on the direct kernel, its last vector of channels
    partly used, with 8 or more, patches of 2^19 floats an image, or 2^17 with a window past 3x3 (the 9x9,
    1-channel and 5x5 cases), else patches and BLAS; the input gradient of the stride-1 ones on the direct
    kernel with as few input channels. Output, input, weight and bias gradients against the float64 definition."""
    x = RNG.standard_normal((2, c, hw, hw + 2))  # 64 output positions or more (the direct kernel's images)
    w, b = RNG.standard_normal((cout, c, k, k)) * 0.1, RNG.standard_normal(cout)
    xt, wt, bt = (sx.tensor(a.astype(np.float32), requires_grad=True) for a in (x, w, b))
    y = F.conv2d(xt, wt, bt, stride, pad)
    assert "Convolution" in str(y.grad_fn), y.grad_fn
    ref = np_conv2d(x, w, b, (stride, stride), (pad, pad), (1, 1), 1)
    np.testing.assert_allclose(y.detach().numpy(), ref, rtol=1e-4, atol=1e-4)
    gy = RNG.standard_normal(ref.shape)
    y.backward(sx.tensor(gy.astype(np.float32)))
    gx_ref, gw_ref = np_conv2d_grads(x, w, gy, (stride, stride), (pad, pad), (1, 1), 1)
    np.testing.assert_allclose(xt.grad.numpy(), gx_ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(wt.grad.numpy(), gw_ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(bt.grad.numpy(), gy.sum((0, 2, 3)), rtol=1e-4, atol=1e-4)


FEW_WGRAD_CASES = [  # C_out, C, window, stride, padding, dilation, (H, W): rows of 16 outputs or more
    (3, 5, (3, 3), (1, 1), (1, 1), (1, 1), (20, 37)),   # rows of 37: a partial last vector
    (11, 4, (5, 5), (1, 1), (2, 2), (1, 1), (17, 16)),  # channels in blocks of 4, 4 and 3
    (1, 3, (3, 13), (1, 1), (1, 6), (1, 1), (9, 30)),   # 13 taps a row: two blocks of them
    (6, 2, (3, 3), (2, 1), (0, 1), (2, 2), (21, 40)),   # row stride 2, dilation 2
    (2, 7, (2, 4), (1, 1), (0, 0), (1, 3), (8, 50)),    # a 2x4 window, dilation 3 along rows of the input
]


@pytest.mark.parametrize("cout,c,k,stride,pad,dil,hw", FEW_WGRAD_CASES)
def test_conv2d_weight_gradient_few_output_channels(cout, c, k, stride, pad, dil, hw):
    """The float32 weight gradient of a layer with fewer than 12 output channels and column stride 1, summed
    from the input's rows without a patch matrix: against the float64 definition, the same bits at 1 and 2
    threads. An infinite input in the last column reaches only the taps whose windows read it: the lanes
    past a row's end, which read it for the other taps, are masked off."""
    x = RNG.standard_normal((3, c) + hw)
    w, gy = RNG.standard_normal((cout, c) + k), None
    gw_ref = None
    for inf in (False, True):
        if inf:
            x[:, :, :, -1] = np.inf
        grads = []
        for threads in (1, 2):
            with at_threads(threads):
                xt, wt = sx.tensor(x.astype(np.float32)), sx.tensor(w.astype(np.float32), requires_grad=True)
                y = F.conv2d(xt, wt, None, stride, pad, dil)
                if gy is None:
                    gy = RNG.standard_normal(y.shape)
                    gw_ref = np_conv2d_grads(x, w, gy, stride, pad, dil, 1)[1]
                y.backward(sx.tensor(gy.astype(np.float32)))
                grads.append(wt.grad.numpy())
        np.testing.assert_array_equal(grads[0], grads[1])
        if not inf:
            np.testing.assert_allclose(grads[0], gw_ref, rtol=2e-5, atol=2e-5 * np.sqrt(gy[:, 0].size))
        else:  # the taps of window columns that never reach the last input column stay finite and exact
            reach = (hw[1] - 1 + pad[1] - np.arange(k[1]) * dil[1]) // stride[1] < y.shape[3]
            reach &= (hw[1] - 1 + pad[1] - np.arange(k[1]) * dil[1]) >= 0
            assert not reach.all() and reach.any()
            np.testing.assert_allclose(grads[0][..., ~reach], gw_ref[..., ~reach], rtol=2e-5,
                                       atol=2e-5 * np.sqrt(gy[:, 0].size))
            assert not np.isfinite(grads[0][..., reach]).all()


WGRAD_CASES = [  # (C, C_out, kh, kw, groups) on maps of 9 x 8 (72 positions): how the weight gradient splits
    (25, 64, 3, 3, 1),   # 225 patch rows: transposed, two ragged row chunks at 2 threads
    (50, 96, 3, 3, 2),   # two groups of 48 output channels, transposed, a chunk a group at 2 threads
    (24, 20, 3, 3, 1),   # 216 rows, 20 output channels: summed in the gradient itself, two chunks at 2 threads
    (12, 8, 3, 3, 1),    # 108 rows: the batch in two slices
    (16, 64, 3, 3, 1),   # 144 rows: two slices, transposed
    (200, 64, 1, 1, 1),  # 1x1: each image its own patch matrix, transposed
    (3, 16, 3, 3, 1),    # 27 rows: up to eight slices
]


@pytest.mark.parametrize("n", [1, 3, 11])
@pytest.mark.parametrize("c,cout,kh,kw,groups", WGRAD_CASES)
def test_conv2d_weight_gradient_splits(n, c, cout, kh, kw, groups):
    """The weight gradient split by rows of the patch matrix and, for few rows, by slices of the batch
    (transposed or not, in place or summed afterwards): against the float64 definition in float64 and
    float32, and the same bits at 1 and 2 threads."""
    pad = (kh // 2, kw // 2)
    x = RNG.standard_normal((n, c, 9, 8))
    w = RNG.standard_normal((cout, c // groups, kh, kw))
    gy = RNG.standard_normal((n, cout, 9, 8))
    gw_ref = np_conv2d_grads(x, w, gy, (1, 1), pad, (1, 1), groups)[1]
    for dt, tol in ((np.float64, 1e-10), (np.float32, 2e-5)):
        grads = []
        for threads in (1, 2):
            with at_threads(threads):
                xt, wt = sx.tensor(x.astype(dt)), sx.tensor(w.astype(dt), requires_grad=True)
                y = F.conv2d(xt, wt, None, 1, pad, 1, groups)
                assert "Convolution" in str(y.grad_fn), y.grad_fn
                y.backward(sx.tensor(gy.astype(dt)))
            grads.append(wt.grad.numpy())
            np.testing.assert_allclose(grads[-1], gw_ref, rtol=tol, atol=tol * np.sqrt(n * 72))
        np.testing.assert_array_equal(grads[0], grads[1])


DIRECT_CASES = [  # float32, groups 1, C kh kw >= 64, C_out >= 16, >= 64 outputs a map or a zero border: the CPU's direct kernel
    # (N, C, H, W), (C_out, kh, kw), stride, padding, dilation
    ((3, 16, 9, 9), (40, 3, 3), (1, 1), (1, 1), (1, 1)),    # tiles across rows and images, a part-filled group
    ((2, 20, 8, 8), (70, 3, 3), (1, 1), (1, 1), (1, 1)),    # maps of 64 positions
    ((2, 16, 18, 17), (33, 3, 3), (2, 2), (1, 1), (1, 1)),  # stride 2, one channel past a vector
    ((1, 3, 23, 21), (16, 7, 7), (2, 2), (3, 3), (1, 1)),   # a 7x7 stem
    ((2, 17, 12, 13), (20, 3, 2), (1, 1), (0, 1), (2, 1)),  # rectangular and dilated
    ((2, 12, 11, 13), (18, 3, 2), (1, 2), (1, 0), (1, 1)),  # stride along one dim
    ((2, 16, 9, 9), (24, 3, 3), (1, 1), (3, 0), (1, 1)),    # padding past the window: gradient by patches
    ((1, 16, 1, 80), (17, 1, 5), (1, 1), (0, 2), (1, 3)),   # conv1d shape
    # tiles of one output row (column stride 1, rows that fill them): window rows in the border skipped
    ((2, 16, 10, 16), (64, 3, 3), (1, 1), (1, 1), (1, 1)),  # three tiles a row
    ((2, 16, 11, 24), (32, 3, 3), (2, 1), (2, 1), (2, 1)),  # row stride and dilation
    ((1, 16, 4, 24), (16, 3, 3), (1, 1), (3, 1), (1, 1)),   # rows whose window lies all in the border
    # column stride 2 on long rows (tiles across rows)
    ((2, 16, 20, 33), (64, 3, 3), (2, 2), (1, 1), (1, 1)),  # rows of 17 outputs
    ((1, 16, 12, 23), (64, 3, 3), (2, 2), (3, 1), (2, 1)),  # dilated rows, some windows all in the border
    ((2, 3, 30, 64), (24, 7, 7), (2, 2), (3, 3), (1, 1)),   # a 7x7 stem: rows of 32 outputs
    # class tiles (border terms skipped by corner, edge and interior): small maps, and 8x8 ones
    ((3, 64, 4, 4), (40, 3, 3), (1, 1), (1, 1), (1, 1)),    # 4x4 maps: nine classes; weight gradient by patches
    ((5, 32, 2, 2), (64, 3, 3), (1, 1), (1, 1), (1, 1)),    # 2x2 maps: every position its own class
    ((2, 16, 8, 9), (24, 3, 3), (2, 2), (1, 1), (1, 1)),    # stride 2 to 4x5
    ((2, 16, 6, 7), (17, 3, 5), (1, 1), (2, 1), (2, 1)),    # rectangular, dilated rows, partial channel block
    ((2, 32, 8, 8), (64, 3, 3), (1, 1), (1, 1), (1, 1)),    # 8x8 maps (16% of the terms in the border)
    ((2, 32, 1, 12), (20, 1, 5), (1, 1), (0, 2), (1, 1)),   # conv1d shape of 12 outputs
    # class tiles that read the input itself, where 1/16 to 1/8 of the terms are in the border
    ((2, 16, 16, 16), (24, 4, 4), (2, 2), (1, 1), (1, 1)),  # a DCGAN layer's 4x4 windows of stride 2 (12%)
    ((2, 16, 14, 14), (20, 3, 3), (1, 1), (1, 1), (1, 1)),  # 14x14 maps (9%)
    ((2, 16, 9, 10), (24, 3, 3), (1, 2), (2, 0), (1, 1)),   # border along one dim only, stride along the other
    ((1, 16, 10, 10), (32, 3, 3), (2, 2), (2, 2), (2, 2)),  # dilated windows that span the border
    # groups of channels that one task packs a chunk at a time (many output channels, few tiles each),
    # a last group not full, input channels not a whole number of chunks
    ((2, 40, 2, 2), (200, 3, 3), (1, 1), (1, 1), (1, 1)),   # 2x2 maps (class tiles)
    ((1, 200, 3, 3), (24, 3, 3), (1, 1), (1, 1), (1, 1)),   # the input gradient has 200 output channels
    ((1, 16, 6, 24), (260, 3, 3), (1, 1), (1, 1), (1, 1)),  # row tiles
    ((1, 240, 2, 2), (256, 3, 3), (1, 1), (1, 1), (1, 1)),  # 2.2 MB of weights: packed as they go at 2 threads too
]


@pytest.mark.parametrize("xs,ws,stride,padding,dilation", DIRECT_CASES)
def test_conv2d_direct_float32_against_numpy(xs, ws, stride, padding, dilation):
    """The direct float32 kernel (forward, and at stride 1 the input gradient): output channel counts
    that do not fill a vector or a group of them, output tiles that run over rows and images, strides,
    dilations and padding, forward and gradients against the float64 definition, and the same bits at 1
    and 2 threads."""
    x = RNG.standard_normal(xs)
    w = RNG.standard_normal((ws[0], xs[1], ws[1], ws[2]))
    b = RNG.standard_normal(ws[0])
    ref = np_conv2d(x, w, b, stride, padding, dilation, 1)
    gy = RNG.standard_normal(ref.shape)
    gx_ref, gw_ref = np_conv2d_grads(x, w, gy, stride, padding, dilation, 1)
    runs = []
    for threads in (1, 2):
        with at_threads(threads):
            xt, wt, bt = (sx.tensor(a.astype(np.float32), requires_grad=True) for a in (x, w, b))
            y = F.conv2d(xt, wt, bt, stride, padding, dilation)
            assert "Convolution" in str(y.grad_fn), y.grad_fn  # the kernel path, at every plane size
            y.backward(sx.tensor(gy.astype(np.float32)))
        runs.append([y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy(), bt.grad.numpy()])
        scale = np.sqrt(xs[1] * ws[1] * ws[2])  # float32 rounding grows with the terms of each sum
        np.testing.assert_allclose(runs[-1][0], ref, rtol=1e-5, atol=1e-5 * scale)
        np.testing.assert_allclose(runs[-1][1], gx_ref, rtol=1e-5, atol=1e-5 * np.sqrt(ws[0]) * ws[1] * ws[2])
        np.testing.assert_allclose(runs[-1][2], gw_ref, rtol=1e-5, atol=1e-5 * np.sqrt(gy[:, 0].size) * 4)
        np.testing.assert_allclose(runs[-1][3], gy.sum(axis=(0, 2, 3)), rtol=1e-5, atol=1e-4)
    for a, c in zip(*runs):
        np.testing.assert_array_equal(a, c)


@pytest.mark.parametrize("xs", [(2, 16, 10, 16), (3, 16, 4, 4), (2, 16, 8, 8), (2, 16, 14, 14)])  # row, class tiles
@pytest.mark.parametrize("cout", [64, 200])  # 200: weights packed as the tiles go, then the run again
def test_conv2d_direct_float32_non_finite_weights(xs, cout):
    """Row and class tiles skip the border's terms only while every weight is finite: an inf or NaN weight
    gives NaN from the border (0 * inf), as the definition and the other tiles do."""
    x = RNG.standard_normal(xs)
    w = RNG.standard_normal((cout, 16, 3, 3))
    w[3, 5, 0, 1], w[7, 2, 2, 2], w[40, 0, 1, 0], w[-1, 15, 2, 0] = np.inf, np.nan, -np.inf, np.inf
    with np.errstate(invalid="ignore"):
        ref = np_conv2d(x, w, None, (1, 1), (1, 1), (1, 1), 1)
    assert np.isnan(ref[:, 3, 0]).all() and np.isnan(ref[:, 40, :, 0]).all()  # border terms 0 * inf
    for threads in (1, 2):
        with at_threads(threads):
            got = F.conv2d(sx.tensor(x.astype(np.float32)), sx.tensor(w.astype(np.float32)), padding=1).numpy()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("c,k,stride", [(256, 4, 2), (512, 3, 1)])  # 4096 and 4608 terms a sum
def test_conv2d_direct_float32_long_sums_stay_accurate(c, k, stride):
    """The direct kernel sums the input channels in blocks (a chunk's sum from zero, the chunks' sums
    added), so its float32 error does not grow with the number of terms as one running sum's does: its
    RMS error against float64, relative to the output's RMS, stays under 5e-7 for 4096 and more terms
    (one running sum: 1.0e-6 and 1.2e-6; PyTorch: 2.3e-7 to 2.6e-7; blocks of 128 terms on the AVX-512
    build: 2.1e-7 to 2.2e-7, of 512 on the AVX2 one: 3.6e-7 to 3.8e-7)."""
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((2, c, 8, 8)), rng.standard_normal((64, c, k, k))
    ref = np_conv2d(x, w, None, (stride, stride), (1, 1), (1, 1), 1)
    got = F.conv2d(sx.tensor(x.astype(np.float32)), sx.tensor(w.astype(np.float32)), None, stride, 1).numpy()
    assert rms_rel_err(got, ref) < 5e-7


def test_conv2d_direct_float32_with_create_graph():
    """Second-order gradients through a directly convolved layer use the differentiable path."""
    x, w = RNG.standard_normal((2, 8, 9, 9)), RNG.standard_normal((16, 8, 3, 3))
    xt = sx.tensor(x.astype(np.float32), requires_grad=True)
    wt = sx.tensor(w.astype(np.float32), requires_grad=True)
    (gx,) = sx.autograd.grad(F.conv2d(xt, wt, padding=1).square().sum(), [xt], create_graph=True)
    (gw,) = sx.autograd.grad(gx.sum(), [wt])
    x64, w64 = t64(x), t64(w)
    (gx64,) = sx.autograd.grad(F.conv2d(x64, w64, padding=1).square().sum(), [x64], create_graph=True)
    (gw64,) = sx.autograd.grad(gx64.sum(), [w64])
    np.testing.assert_allclose(gx.detach().numpy(), gx64.detach().numpy(), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(gw.numpy(), gw64.numpy(), rtol=1e-4, atol=1e-3)


def test_conv1d_and_transpose_gradients():
    x, w, b = RNG.standard_normal((2, 2, 6)), RNG.standard_normal((4, 1, 3)), RNG.standard_normal(4)
    gradcheck(lambda x, w, b: F.conv1d(x, w, b, 2, 1, 1, 2), [t64(x), t64(w), t64(b)])
    x, w = RNG.standard_normal((1, 4, 3, 3)), RNG.standard_normal((4, 1, 3, 2))
    gradcheck(lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1, groups=2,
                                                 dilation=(1, 2)), [t64(x), t64(w), t64(RNG.standard_normal(2))])
    x, w = RNG.standard_normal((2, 2, 4)), RNG.standard_normal((2, 3, 3))
    gradcheck(lambda x, w: F.conv_transpose1d(x, w, stride=3, padding=1), [t64(x), t64(w)])


def test_conv_transpose_is_the_adjoint_of_conv():
    # <conv(x, w), y> == <x, conv_transpose(y, w)> for every x, y
    x, w = RNG.standard_normal((2, 4, 7, 8)), RNG.standard_normal((6, 2, 3, 2))
    y = RNG.standard_normal(F.conv2d(t64(x, False), t64(w, False), stride=2, padding=1, groups=2).shape)
    lhs = np.sum(F.conv2d(t64(x, False), t64(w, False), stride=2, padding=1, groups=2).numpy() * y)
    xt = F.conv_transpose2d(t64(y, False), t64(w, False), stride=2, padding=1, groups=2)
    assert tuple(xt.shape) == x.shape
    np.testing.assert_allclose(lhs, np.sum(x * xt.numpy()), rtol=1e-10)


TRANSPOSE_CASES = [  # grids that take the convolution kernels: 256 positions or more (64 for a direct one)
    # (N, C, h, w), (C_out / groups, kh, kw), stride, padding, output_padding, dilation, groups
    ((2, 16, 8, 9), (24, 3, 3), (1, 1), (1, 1), (0, 0), (1, 1), 1),    # stride 1: direct in float32 (only)
    ((2, 16, 16, 17), (24, 3, 3), (1, 1), (1, 1), (0, 0), (1, 1), 1),  # stride 1, image by image in float64
    ((2, 3, 16, 16), (16, 3, 3), (1, 1), (1, 1), (0, 0), (1, 1), 1),   # stride 1, 3 input channels: direct too
    ((2, 24, 18, 15), (16, 3, 3), (1, 1), (1, 1), (0, 0), (1, 1), 1),  # stride 1, rows of 15: class tiles
    ((3, 24, 16, 16), (16, 4, 4), (2, 2), (1, 1), (0, 0), (1, 1), 1),  # a DCGAN layer: image by image
    ((2, 8, 16, 16), (5, 3, 3), (2, 3), (1, 0), (1, 2), (1, 1), 1),    # output padding, few channels
    ((2, 8, 16, 16), (6, 3, 2), (2, 1), (0, 1), (0, 0), (2, 1), 2),    # groups and dilation
    ((1, 4, 1, 260), (3, 1, 5), (1, 2), (0, 2), (0, 1), (1, 1), 1),    # a conv_transpose1d shape
]


@pytest.mark.parametrize("xs,ws,stride,padding,out_pad,dilation,groups", TRANSPOSE_CASES)
def test_conv_transpose2d_kernels_against_numpy(xs, ws, stride, padding, out_pad, dilation, groups):
    """Transposed convolutions on grids that take the convolution kernels: the output (the adjoint of
    conv2d applied to x) and the gradients (conv2d of gy, the weight gradient with x in the place of gy,
    the sum of gy) against the float64 definition, in float64 and float32, the same bits at 1 and 2 threads."""
    x = RNG.standard_normal(xs)
    w = RNG.standard_normal((xs[1], ws[0], ws[1], ws[2]))
    b = RNG.standard_normal(ws[0] * groups)
    out = tuple((h - 1) * s - 2 * p + d * (k - 1) + o + 1
                for h, s, p, d, k, o in zip(xs[2:], stride, padding, dilation, ws[1:], out_pad))
    ref = np_conv2d_grads(np.zeros((xs[0], ws[0] * groups) + out), w, x, stride, padding, dilation, groups)[0]
    ref += b[:, None, None]
    gy = RNG.standard_normal(ref.shape)
    gx_ref = np_conv2d(gy, w, None, stride, padding, dilation, groups)
    gw_ref = np_conv2d_grads(gy, w, x, stride, padding, dilation, groups)[1]
    for dt, tol in ((np.float64, 1e-10), (np.float32, 2e-5)):
        runs = []
        for threads in (1, 2):
            with at_threads(threads):
                xt, wt, bt = (sx.tensor(a.astype(dt), requires_grad=True) for a in (x, w, b))
                y = F.conv_transpose2d(xt, wt, bt, stride, padding, out_pad, groups, dilation)
                kernels = xs[2] * xs[3] >= 256 or dt == np.float32  # the first case: direct only in float32
                assert ("ConvolutionTranspose" in str(y.grad_fn.next_functions)) == kernels, y.grad_fn.next_functions
                y.backward(sx.tensor(gy.astype(dt)))
            runs.append([y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy(), bt.grad.numpy()])
            scale = np.sqrt(xs[1] * ws[1] * ws[2])
            np.testing.assert_allclose(runs[-1][0], ref, rtol=tol, atol=tol * scale)
            np.testing.assert_allclose(runs[-1][1], gx_ref, rtol=tol, atol=tol * scale * 4)
            np.testing.assert_allclose(runs[-1][2], gw_ref, rtol=tol, atol=tol * np.sqrt(x[:, 0].size) * 4)
            np.testing.assert_allclose(runs[-1][3], gy.sum(axis=(0, 2, 3)), rtol=tol, atol=tol * np.sqrt(gy.size))
        for a, c in zip(*runs):
            np.testing.assert_array_equal(a, c)


def test_conv_transpose_kernels_double_backward():
    """Gradients of gradients through a transposed convolution on the kernel path (its backward records
    public ops under create_graph), against finite differences."""
    x, w = t64(RNG.standard_normal((1, 2, 16, 16))), t64(RNG.standard_normal((2, 3, 3, 3)))
    y = F.conv_transpose2d(x, w, stride=2, padding=1)
    assert "ConvolutionTranspose" in str(y.grad_fn), y.grad_fn
    gradcheck(grad_of(lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1).square().sum()), [x, w])


def test_conv_double_backward():
    x, w = t64(RNG.standard_normal((1, 2, 5, 5))), t64(RNG.standard_normal((3, 2, 3, 3)))
    gradcheck(grad_of(lambda x, w: F.conv2d(x, w, padding=1).square().sum()), [x, w])


def test_padding_same_and_valid_and_unbatched():
    x, w = RNG.standard_normal((2, 6, 9)), RNG.standard_normal((3, 2, 2, 4))  # even kernel: odd extra on the right
    got = F.conv2d(t64(x, False), t64(w, False), padding="same", dilation=(1, 2))
    assert tuple(got.shape) == (3, 6, 9)
    xp = np.pad(x, ((0, 0), (0, 1), (3, 3)))
    np.testing.assert_allclose(got.numpy(), np_conv2d(xp[None], w, None, (1, 1), (0, 0), (1, 2), 1)[0], atol=1e-10)
    assert tuple(F.conv2d(t64(x, False), t64(w, False), padding="valid").shape) == (3, 5, 6)
    with pytest.raises(ValueError, match="conv2d.*same.*strided"):
        F.conv2d(t64(x, False), t64(w, False), padding="same", stride=2)


def test_unfold_fold():
    x = RNG.standard_normal((2, 3, 5, 6))
    cols = F.unfold(t64(x, False), (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)).numpy()
    # row c * kh * kw + i * kw + j, column y * ow + x: the padded input at (y s + i d, x s + j d)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    oh, ow = (5 + 2 - 1 - 1) // 2 + 1, (6 + 2 - 4 - 1) // 1 + 1
    assert cols.shape == (2, 3 * 6, oh * ow)
    for c, i, j in [(0, 0, 0), (1, 1, 2), (2, 0, 1)]:
        ref = xp[:, c, i:i + 2 * (oh - 1) + 1:2, 2 * j:2 * j + ow]
        np.testing.assert_allclose(cols[:, c * 6 + i * 3 + j].reshape(2, oh, ow), ref)
    gradcheck(lambda x: F.unfold(x, 2, padding=1, stride=2), [t64(x[:1, :2])])
    c = RNG.standard_normal((1, 2 * 4, 9))
    gradcheck(lambda c: F.fold(c, (4, 4), 2, padding=1, stride=2), [t64(c)])
    ones = F.fold(F.unfold(sx.ones(1, 1, 4, 4, dtype=sx.float64), 2, stride=1), (4, 4), 2, stride=1).numpy()[0, 0]
    np.testing.assert_allclose(ones, np.outer([1, 2, 2, 1], [1, 2, 2, 1]))  # how many blocks cover each pixel


def test_conv_errors_name_op_and_shapes():
    x, w = sx.zeros(2, 3, 8, 8), sx.zeros(4, 2, 3, 3)
    with pytest.raises(ValueError, match=r"\[conv2d\] weight \(4, 2, 3, 3\) expects 2 input channels.*\(2, 3, 8, 8\)"):
        F.conv2d(x, w)
    with pytest.raises(ValueError, match=r"\[conv2d\].*divisible by groups 2"):
        F.conv2d(x, sx.zeros(4, 1, 3, 3), groups=2)
    with pytest.raises(ValueError, match=r"\[conv2d\] input \(2, 3, 8, 8\) is too small"):
        F.conv2d(x, sx.zeros(4, 3, 9, 9))
    with pytest.raises(TypeError, match=r"\[conv2d\].*same dtype.*float64"):
        F.conv2d(x, sx.zeros(4, 3, 3, 3, dtype=sx.float64))
    with pytest.raises(ValueError, match=r"\[conv1d\] expected 2-D \(unbatched\) or 3-D"):
        F.conv1d(x, w)
    with pytest.raises(ValueError, match=r"\[conv_transpose2d\] output_padding"):
        F.conv_transpose2d(x, sx.zeros(3, 2, 3, 3), stride=1, output_padding=1)
    with pytest.raises(ValueError, match=r"\[conv2d\] bias"):
        F.conv2d(x, sx.zeros(4, 3, 3, 3), sx.zeros(3))


# ---- pooling
def np_pool2d(x, k, s, p, reduce, ceil_mode=False, include_pad=True):
    n, c, h, w = x.shape
    fill = -np.inf if reduce == "max" else 0.0
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])), constant_values=fill)

    def size(length, kk, ss, pp):
        span = length + 2 * pp - kk
        o = (-(-span // ss) if ceil_mode else span // ss) + 1
        return o - 1 if ceil_mode and (o - 1) * ss >= length + pp else o

    oh, ow = size(h, k[0], s[0], p[0]), size(w, k[1], s[1], p[1])
    out = np.zeros((n, c, oh, ow))
    for y in range(oh):
        for z in range(ow):
            y0, z0 = y * s[0], z * s[1]
            win = xp[:, :, y0:min(y0 + k[0], h + 2 * p[0]), z0:min(z0 + k[1], w + 2 * p[1])]
            if reduce == "max":
                out[:, :, y, z] = win.max(axis=(2, 3))
            else:
                inside = (min(y0 + k[0], h + p[0]) - max(y0, p[0])) * (min(z0 + k[1], w + p[1]) - max(z0, p[1]))
                div = (min(y0 + k[0], h + 2 * p[0]) - y0) * (min(z0 + k[1], w + 2 * p[1]) - z0)
                out[:, :, y, z] = win.sum(axis=(2, 3)) / (div if include_pad else inside)
    return out


@pytest.mark.parametrize("k,s,p,ceil_mode", [((2, 2), (2, 2), (0, 0), False), ((3, 2), (2, 1), (1, 1), False),
                                             ((3, 3), (2, 2), (1, 0), True), ((2, 3), (3, 2), (0, 1), True)])
def test_pools_against_numpy(k, s, p, ceil_mode):
    x = RNG.standard_normal((2, 3, 7, 8))
    got = F.max_pool2d(t64(x, False), k, s, p, ceil_mode=ceil_mode)
    np.testing.assert_allclose(got.numpy(), np_pool2d(x, k, s, p, "max", ceil_mode))
    got = F.avg_pool2d(t64(x, False), k, s, p, ceil_mode=ceil_mode, count_include_pad=False)
    np.testing.assert_allclose(got.numpy(), np_pool2d(x, k, s, p, "avg", ceil_mode, include_pad=False), atol=1e-12)
    if not ceil_mode:
        got = F.avg_pool2d(t64(x, False), k, s, p)
        np.testing.assert_allclose(got.numpy(), np_pool2d(x, k, s, p, "avg"), atol=1e-12)


# (kernel, stride, padding, dilation, ceil_mode) of max pools: strides 1-3, padding, dilation, ceil_mode.
MAX_POOL_WINDOWS = [((2, 2), (2, 2), (0, 0), (1, 1), False), ((3, 2), (1, 2), (0, 0), (1, 1), False),
                    ((2, 3), (3, 1), (0, 0), (1, 1), False), ((3, 3), (2, 2), (1, 1), (1, 1), False),
                    ((3, 3), (3, 3), (1, 1), (1, 1), True), ((3, 2), (1, 2), (1, 1), (2, 2), True)]


def test_max_pool_indices_and_nan():
    x = RNG.permutation(48).astype(np.float64).reshape(1, 2, 4, 6)
    out, idx = F.max_pool2d(t64(x, False), 2, return_indices=True)
    flat = x.reshape(1, 2, 24)
    np.testing.assert_array_equal(np.take_along_axis(flat, idx.numpy().reshape(1, 2, -1), 2).reshape(out.shape),
                                  out.numpy())
    assert idx.dtype == sx.int64
    x[0, 0, 1, 1] = np.nan
    assert np.isnan(F.max_pool2d(t64(x, False), 2).numpy()[0, 0, 0, 0])


@pytest.mark.parametrize("k,s,p,d,ceil", MAX_POOL_WINDOWS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_max_pool_windows_ties_nans_and_padding(k, s, p, d, ceil, dtype):
    """The first maximum in window order (taps in the padding skipped), and the first NaN, win."""
    x = RNG.integers(0, 3, (2, 3, 7, 8)).astype(dtype)
    x[RNG.random(x.shape) < 0.05] = np.nan
    x[RNG.random(x.shape) < 0.05] = -np.inf
    out, idx = F.max_pool2d(sx.from_numpy(x), k, s, p, d, ceil_mode=ceil, return_indices=True)
    oh, ow = out.shape[2:]
    ref_i = np.zeros((2, 3, oh, ow), dtype=np.int64)
    for y in range(oh):
        for z in range(ow):
            taps = [(y * s[0] - p[0] + a * d[0], z * s[1] - p[1] + b * d[1]) for a in range(k[0]) for b in range(k[1])]
            rows = [iy * 8 + ix for iy, ix in taps if 0 <= iy < 7 and 0 <= ix < 8]
            win = x.reshape(2, 3, 56)[:, :, rows]
            nan = np.isnan(win)
            first = np.where(nan.any(-1), nan.argmax(-1), np.argmax(np.where(nan, -np.inf, win), -1))
            ref_i[:, :, y, z] = np.array(rows)[first]
    np.testing.assert_array_equal(idx.numpy(), ref_i)
    np.testing.assert_array_equal(out.numpy(), np.take_along_axis(x.reshape(2, 3, 56), ref_i.reshape(2, 3, -1),
                                                                  2).reshape(out.shape))


@pytest.mark.parametrize("k,s,p,d,ceil", MAX_POOL_WINDOWS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_max_pool_values_alone_match_the_indexed_path(threads, k, s, p, d, ceil, dtype):
    """Without return_indices and without autograd, max pooling finds the values alone: the same values
    (NaN where a window holds one, -inf in the padding) as the path that finds the argmax, in 1-d, 2-d
    and adaptive pools."""
    x = RNG.integers(0, 3, (2, 3, 7, 8)).astype(dtype)
    x[RNG.random(x.shape) < 0.05] = np.nan
    x[RNG.random(x.shape) < 0.05] = -np.inf
    t = sx.from_numpy(x)
    want = F.max_pool2d(t, k, s, p, d, ceil_mode=ceil, return_indices=True)[0]
    np.testing.assert_array_equal(F.max_pool2d(t, k, s, p, d, ceil_mode=ceil).numpy(), want.numpy())
    np.testing.assert_array_equal(F.max_pool2d(t[0], k, s, p, d, ceil_mode=ceil).numpy(), want.numpy()[0])
    flat = t.reshape(2, 3, 56)
    want1 = F.max_pool1d(flat, k[1], s[1], p[1], d[1], ceil_mode=ceil, return_indices=True)[0]
    np.testing.assert_array_equal(F.max_pool1d(flat, k[1], s[1], p[1], d[1], ceil_mode=ceil).numpy(), want1.numpy())
    np.testing.assert_array_equal(F.adaptive_max_pool2d(t, (k[0] + 1, k[1] + 2)).numpy(),
                                  F.adaptive_max_pool2d(t, (k[0] + 1, k[1] + 2), return_indices=True)[0].numpy())


@pytest.mark.parametrize("k,s,d,w", [(2, 2, 1, 12), (3, 3, 1, 12), (2, 3, 2, 12), (4, 4, 1, 12), (2, 2, 1, 13),
                                     (3, 2, 1, 12)])
def test_max_pool1d_values_against_numpy(threads, k, s, d, w):
    """1-d max pooling without indices, where the rows of a task are taken as one long row (windows that
    stay in their row, rows that leave no input between them: w = outputs * stride) and where they are
    not (w = 13; windows of 3 at stride 2 overlap the next row's): maxima, NaN and -inf against NumPy over
    many rows, so that the threads split them."""
    x = RNG.integers(0, 5, (9, 16, w)).astype(np.float32)
    x[RNG.random(x.shape) < 0.03] = np.nan
    x[RNG.random(x.shape) < 0.03] = -np.inf
    ow = (w - d * (k - 1) - 1) // s + 1
    win = np.stack([x[..., j * d:j * d + (ow - 1) * s + 1:s] for j in range(k)], -1)
    want = np.where(np.isnan(win).any(-1), np.nan, np.nanmax(np.where(np.isnan(win), -np.inf, win), -1))
    got = F.max_pool1d(sx.from_numpy(x), k, s, dilation=d)
    np.testing.assert_array_equal(got.numpy(), want)


def test_pool_gradients():
    x = RNG.permutation(60).astype(np.float64).reshape(1, 3, 4, 5) / 10  # distinct values: max is smooth
    gradcheck(lambda x: F.max_pool2d(x, 3, 2, 1, dilation=1, ceil_mode=True), [t64(x)])
    gradcheck(lambda x: F.max_pool2d(x, 2, 1, dilation=2), [t64(x)])
    gradcheck(lambda x: F.max_pool1d(x.flatten(2), 3, 2, 1), [t64(x)])
    gradcheck(lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False), [t64(x)])
    gradcheck(lambda x: F.avg_pool2d(x, 2, 1, divisor_override=3), [t64(x)])
    gradcheck(lambda x: F.avg_pool1d(x.flatten(2), 4, 3, 2), [t64(x)])
    gradcheck(lambda x: F.adaptive_avg_pool2d(x, (3, 2)), [t64(x)])
    gradcheck(lambda x: F.adaptive_max_pool2d(x, (3, 4)), [t64(x)])
    gradcheck(lambda x: F.adaptive_avg_pool1d(x.flatten(2), 7), [t64(x)])
    # second order: the max-pool backward is a scatter whose own vjp is a gather
    gradcheck(grad_of(lambda x: F.max_pool2d(x, 2).square().sum()), [t64(x)])
    gradcheck(grad_of(lambda x: F.avg_pool2d(x, 2).square().sum()), [t64(x)])


def test_adaptive_pools_against_numpy():
    x = RNG.standard_normal((2, 3, 7, 5))
    got = F.adaptive_avg_pool2d(t64(x, False), (3, None)).numpy()
    for i in range(3):
        lo, hi = i * 7 // 3, -(-(i + 1) * 7 // 3)
        np.testing.assert_allclose(got[:, :, i], x[:, :, lo:hi].mean(axis=2), atol=1e-12)
    np.testing.assert_allclose(F.adaptive_max_pool2d(t64(x, False), 1).numpy()[..., 0, 0], x.max(axis=(2, 3)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_average_pools_of_long_windows_against_numpy(dtype):
    """Windows whose rows (or whole span, when they cover full rows) hold 16 or more elements are summed
    by the vectorised row sums: global averages of short planes and of 64 or more long ones (eight at a
    time, a count that is no multiple of eight), of a few long ones (and their gradients), full-width windows over several rows, long
    partial rows, a wide fixed window; against NumPy's float64 means, the same at 1 and 2 threads."""
    def means(x, rows, cols):  # windows given as lists of (lo, hi)
        return np.stack([np.stack([x[:, :, a:b, c:d].mean(axis=(2, 3)) for c, d in cols], -1) for a, b in rows], -2)

    def spans(n, o):
        return [(i * n // o, -(-(i + 1) * n // o)) for i in range(o)]

    cases = [((3, 7, 9, 13), 1), ((2, 3, 20, 16), 1), ((4, 17, 16, 20), 1), ((2, 5, 8, 12), (2, 1)),
             ((2, 3, 6, 40), (3, 2))]
    for shape, size in cases:
        x = RNG.standard_normal(shape)
        oh, ow = (size, size) if isinstance(size, int) else size
        ref = means(x, spans(shape[2], oh), spans(shape[3], ow))
        outs = []
        for threads in (1, 2):
            with at_threads(threads):
                xt = sx.tensor(x.astype(dtype), requires_grad=True)
                y = F.adaptive_avg_pool2d(xt, size)
                gy = RNG.standard_normal(tuple(y.shape))
                y.backward(sx.tensor(gy.astype(dtype)))
                outs.append(y.detach().numpy())
            assert outs[-1].dtype == dtype
            if size == 1:  # the global average's gradient: gy / (H W) at every element of its plane
                np.testing.assert_allclose(xt.grad.numpy(), np.broadcast_to(gy / (shape[2] * shape[3]), shape),
                                           rtol=1e-6 if dtype == np.float32 else 1e-13)
            np.testing.assert_allclose(outs[-1], ref, rtol=1e-6 if dtype == np.float32 else 1e-13, atol=1e-7)
        np.testing.assert_array_equal(outs[0], outs[1])
    x = RNG.standard_normal((2, 3, 5, 40))
    got = F.avg_pool2d(sx.tensor(x.astype(dtype)), (2, 17), stride=(1, 3)).numpy()
    ref = means(x, [(i, i + 2) for i in range(4)], [(j * 3, j * 3 + 17) for j in range(8)])
    np.testing.assert_allclose(got, ref, rtol=1e-6 if dtype == np.float32 else 1e-13, atol=1e-7)


def test_pool_errors():
    with pytest.raises(ValueError, match=r"\[max_pool2d\] padding \(2, 2\) must be .* at most half"):
        F.max_pool2d(sx.zeros(1, 1, 5, 5), 3, padding=2)
    with pytest.raises(ValueError, match=r"\[avg_pool2d\] input \(1, 1, 2, 2\) is too small"):
        F.avg_pool2d(sx.zeros(1, 1, 2, 2), 3)
    with pytest.raises(ValueError, match=r"\[max_pool2d\] expected 3-D \(unbatched\) or 4-D"):
        F.max_pool2d(sx.zeros(2, 2), 2)
    with pytest.raises(TypeError, match=r"\[max_pool2d\] expected a floating input"):
        F.max_pool2d(sx.zeros(1, 1, 4, 4, dtype=sx.int64), 2)


def test_half_inputs_compute_in_float32():
    x = RNG.standard_normal((1, 2, 6, 6)).astype(np.float32)
    w = RNG.standard_normal((3, 2, 3, 3)).astype(np.float32)
    got = F.conv2d(sx.tensor(x).to(sx.bfloat16), sx.tensor(w).to(sx.bfloat16))
    assert got.dtype == sx.bfloat16
    np.testing.assert_allclose(got.float().numpy(), np_conv2d(x, w, None, (1, 1), (0, 0), (1, 1), 1), atol=0.3)
    assert F.max_pool2d(sx.tensor(x).half(), 2).dtype == sx.float16
