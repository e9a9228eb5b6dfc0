"""The volumetric (3-d) convolutions and poolings of ``sneppx_core.functional``, and the power-average poolings.

They reduce to the 2-d kernels, so they are differentiable through what they are built from:

- ``conv3d`` gathers the depth taps of each output depth into channels (one copy, kd times the input) and
  runs one 2-d convolution over (N * D_out) planes whose weight holds the depth taps as channels;
  ``conv_transpose3d`` runs the 2-d transposed convolution of each input plane with the depth taps as output
  channels, then sums the taps into their output depths with ``fold``.
- A 3-d window is a 2-d window times a depth interval, and a maximum, a sum, a window's divisor and an adaptive
  window all split that way: the poolings reduce each (H, W) plane with the 2-d kernel, then the depth by a 2-d
  pooling of (D, H_out * W_out) planes with a (k, 1) window. Both passes pick the first maximum in scan
  order, so ``max_pool3d``'s indices are PyTorch's, flat offsets d * H * W + y * W + x into each volume.
"""

from __future__ import annotations

import math

from ._ops import stack
from ._functional_conv import _batched, _ntuple, _unbatch, adaptive_avg_pool2d, adaptive_max_pool2d, avg_pool1d, \
    avg_pool2d, conv2d, conv_transpose2d, fold, max_pool2d
from ._functional_extra import pad
from ._functional_more import _max_unpool_nd


def _conv3d_args(op, x, weight, groups):
    if weight.ndim != 5:
        raise ValueError(f"[{op}] expected a 5-D weight, got shape {tuple(weight.shape)}")
    if x.dtype != weight.dtype:
        raise TypeError(f"[{op}] input and weight must have one dtype, got {x.dtype} and {weight.dtype}")
    if isinstance(groups, bool) or not isinstance(groups, int) or groups <= 0:
        raise ValueError(f"[{op}] groups must be a positive int, got {groups!r}")


def _same_padding(op, x, weight, stride, dilation, padding):
    """(input padded on the right for odd "same" totals, padding as a 3-tuple)."""
    if padding == "valid":
        return x, (0, 0, 0)
    if padding != "same":
        raise ValueError(f"[{op}] padding must be 'same', 'valid', an int or a tuple, got {padding!r}")
    if any(s != 1 for s in stride):
        raise ValueError(f"[{op}] padding='same' is not supported for strided convolutions (stride={stride})")
    total = [d * (k - 1) for d, k in zip(dilation, weight.shape[2:])]
    extra = [t % 2 for t in total]
    if any(extra):  # PyTorch puts the odd element on the right
        x = pad(x, tuple(v for e in reversed(extra) for v in (0, e)))
    return x, tuple(t // 2 for t in total)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-d convolution of (N, C_in, D, H, W) input (or unbatched (C_in, D, H, W)) with
    (C_out, C_in / groups, kd, kh, kw) weight:

        out[n, o, z, y, x] = bias[o] + sum_{c, i, j, l} weight[o, c, i, j, l] * x_pad[n, c', z sd + i dd,
                                                                                  y sh + j dh, x sw + l dw]

    with c' = g(o) * C_in / groups + c. ``padding`` is an int, a 3-tuple, "valid" or "same" (stride 1).
    """
    op = "conv3d"
    x, added = _batched(input, 3, op)
    _conv3d_args(op, x, weight, groups)
    stride, dilation = _ntuple(stride, 3, op, "stride"), _ntuple(dilation, 3, op, "dilation")
    if isinstance(padding, str):
        x, padding = _same_padding(op, x, weight, stride, dilation, padding)
    padding = _ntuple(padding, 3, op, "padding")
    n, c, o, kd = x.shape[0], x.shape[1], weight.shape[0], weight.shape[2]
    if c != weight.shape[1] * groups or o % groups:
        raise ValueError(f"[{op}] input {tuple(input.shape)} and weight {tuple(weight.shape)} do not match with "
                         f"groups={groups} (C_in = weight.shape[1] * groups, C_out divisible by groups)")
    ks = weight.shape[2:]
    out = [(x.shape[2 + i] + 2 * padding[i] - dilation[i] * (ks[i] - 1) - 1) // max(stride[i], 1) + 1
           for i in range(3)]
    if min(out) <= 0 or min(stride) <= 0 or min(dilation) <= 0 or min(padding) < 0:
        raise ValueError(f"[{op}] no output for input {tuple(input.shape)} and kernel {tuple(ks)} with stride "
                         f"{stride}, padding {padding} and dilation {dilation} (output size {tuple(out)})")
    if padding[0]:
        x = pad(x, (0, 0, 0, 0, padding[0], padding[0]))
    sd, dd, od = stride[0], dilation[0], out[0]
    h, w = x.shape[3], x.shape[4]
    # taps[n, z, g, i, c] = x[n, g * C_in/groups + c, z sd + i dd]: each depth tap of each output depth as channels
    taps = stack([x[:, :, i * dd:i * dd + sd * (od - 1) + 1:sd].transpose(1, 2).unflatten(2, (groups, c // groups))
                  for i in range(kd)], 3).reshape((n * od, c * kd, h, w))
    w2 = weight.transpose(1, 2).reshape((o, kd * weight.shape[1]) + tuple(weight.shape[3:]))
    y = conv2d(taps, w2, bias, stride[1:], padding[1:], dilation[1:], groups)
    y = y.reshape((n, od, o, y.shape[2], y.shape[3])).transpose(1, 2).contiguous()
    return _unbatch(y, added)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 3-d convolution (the input gradient of conv3d) of (N, C_in, D, H, W) input with
    (C_in, C_out / groups, kd, kh, kw) weight; per spatial dim
    D_out = (D - 1) stride - 2 padding + dilation (kd - 1) + output_padding + 1.
    """
    op = "conv_transpose3d"
    x, added = _batched(input, 3, op)
    _conv3d_args(op, x, weight, groups)
    s, p, opad, d = (_ntuple(v, 3, op, name) for v, name in ((stride, "stride"), (padding, "padding"),
                                                             (output_padding, "output_padding"),
                                                             (dilation, "dilation")))
    n, c, depth = x.shape[0], x.shape[1], x.shape[2]
    cin, og, kd = weight.shape[0], weight.shape[1], weight.shape[2]
    if c != cin or c % groups:
        raise ValueError(f"[{op}] input {tuple(input.shape)} and weight {tuple(weight.shape)} do not match with "
                         f"groups={groups} (C_in = weight.shape[0], divisible by groups)")
    ks = weight.shape[2:]
    size = [(x.shape[2 + i] - 1) * s[i] - 2 * p[i] + d[i] * (ks[i] - 1) + opad[i] + 1 for i in range(3)]
    if min(s) <= 0 or min(d) <= 0 or min(p) < 0 or any(not 0 <= o < max(a, b) for o, a, b in zip(opad, s, d)):
        raise ValueError(f"[{op}] need positive stride {s} and dilation {d}, non-negative padding {p}, and "
                         f"output_padding {opad} smaller than the stride or the dilation")
    if min(size) <= 0:
        raise ValueError(f"[{op}] the output size {tuple(size)} of input {tuple(input.shape)} is not positive")
    # planes[n * D + z, g * kd * og + i * og + j]: input plane z through the 2-d taps of depth tap i
    w2 = weight.transpose(1, 2).reshape((cin, kd * og) + tuple(weight.shape[3:]))
    planes = conv_transpose2d(x.transpose(1, 2).reshape((n * depth, c) + tuple(x.shape[3:])), w2, None, s[1:], p[1:],
                              opad[1:], groups, d[1:])
    oh, ow = planes.shape[2], planes.shape[3]
    cols = planes.reshape((n, depth, groups, kd, og, oh, ow)).permute(0, 2, 4, 5, 6, 3, 1)
    full = (depth - 1) * s[0] + d[0] * (kd - 1) + 1
    y = fold(cols.reshape((n, groups * og * oh * ow * kd, depth)), (full, 1), (kd, 1), (d[0], 1), 0, (s[0], 1))
    y = y.reshape((n, groups * og, oh, ow, full)).permute(0, 1, 4, 2, 3)
    out_d = size[0]
    if p[0] + out_d > full:  # output_padding past the padding: zeros
        y = pad(y, (0, 0, 0, 0, 0, p[0] + out_d - full))
    y = y[:, :, p[0]:p[0] + out_d].contiguous()
    if bias is not None:
        y = y + bias.reshape((-1, 1, 1, 1))
    return _unbatch(y, added)


def _pool3d_args(op, input, kernel_size, stride, padding, dilation=1):
    """(batched input, whether batched was added, k, s, p, d) with PyTorch's checks of a 3-d pooling."""
    x, added = _batched(input, 3, op)
    k = _ntuple(kernel_size, 3, op, "kernel_size")
    s = k if stride is None or stride == () or stride == [] else _ntuple(stride, 3, op, "stride")
    p, d = _ntuple(padding, 3, op, "padding"), _ntuple(dilation, 3, op, "dilation")
    if min(k) <= 0 or min(s) <= 0 or min(d) <= 0 or min(p) < 0 or any(2 * a > b for a, b in zip(p, k)):
        raise ValueError(f"[{op}] need positive kernel_size {k}, stride {s} and dilation {d}, and padding {p} at "
                         f"most half the kernel")
    return x, added, k, s, p, d


def _depth_plane(y, n, c, depth):
    """(N, C * D, H', W') -> (N * C, 1, D, H' * W'): the depth as the rows of a plane."""
    return y.reshape((n * c, 1, depth, y.shape[2] * y.shape[3]))


def _max_pool3d(op, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    x, added, k, s, p, d = _pool3d_args(op, input, kernel_size, stride, padding, dilation)
    n, c, depth, h, w = x.shape
    y, hw_idx = max_pool2d(x.reshape((n, c * depth, h, w)), k[1:], s[1:], p[1:], d[1:], ceil_mode, True)
    oh, ow = y.shape[2], y.shape[3]
    out, idx = max_pool2d(_depth_plane(y, n, c, depth), (k[0], 1), (s[0], 1), (p[0], 0), (d[0], 1), ceil_mode, True)
    out = out.reshape((n, c, -1, oh, ow))
    if not return_indices:
        return _unbatch(out, added)
    # idx is an offset into each (D, H' W') plane: its row is the depth, and the 2-d pass's index there the (y, x)
    flat = idx.reshape((n * c, -1))
    hw = hw_idx.reshape((n * c, -1)).gather(1, flat)
    idx = (flat // (oh * ow) * (h * w) + hw).reshape(tuple(out.shape))
    return _unbatch(out, added), _unbatch(idx, added)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Maximum over (kd, kh, kw) windows of (N, C, D, H, W) input (padding counts as -inf; ``stride`` defaults to
    ``kernel_size``); indices are flat offsets d * H * W + y * W + x into each volume. NaN propagates."""
    return _max_pool3d("max_pool3d", input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    """:func:`max_pool3d` returning the indices too."""
    return _max_pool3d("max_pool3d", input, kernel_size, stride, padding, dilation, ceil_mode, True)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Mean over (kd, kh, kw) windows of (N, C, D, H, W) input; zero padding counts in the divisor when
    ``count_include_pad``; ``divisor_override`` replaces the window size."""
    op = "avg_pool3d"
    x, added, k, s, p, _ = _pool3d_args(op, input, kernel_size, stride, padding)
    if divisor_override is not None and int(divisor_override) == 0:
        raise ValueError(f"[{op}] divisor_override must be non-zero")
    n, c, depth, h, w = x.shape
    one = None if divisor_override is None else 1  # sums, divided at the end
    y = avg_pool2d(x.reshape((n, c * depth, h, w)), k[1:], s[1:], p[1:], ceil_mode, count_include_pad, one)
    oh, ow = y.shape[2], y.shape[3]
    y = avg_pool2d(_depth_plane(y, n, c, depth), (k[0], 1), (s[0], 1), (p[0], 0), ceil_mode, count_include_pad, one)
    y = y.reshape((n, c, -1, oh, ow))
    return _unbatch(y if one is None else y / float(divisor_override), added)


def adaptive_avg_pool3d(input, output_size):
    """Adaptive mean pooling of (N, C, D, H, W) input to ``output_size`` (an int, or a triple whose None
    entries keep the input size); per dim the windows of ``adaptive_avg_pool1d``."""
    op = "adaptive_avg_pool3d"
    x, added = _batched(input, 3, op)
    size = _ntuple(tuple(x.shape[2 + i] if v is None else v for i, v in enumerate(output_size))
                   if isinstance(output_size, (tuple, list)) else output_size, 3, op, "output_size")
    n, c, depth, h, w = x.shape
    y = adaptive_avg_pool2d(x.reshape((n, c * depth, h, w)), size[1:])
    y = adaptive_avg_pool2d(_depth_plane(y, n, c, depth), (size[0], size[1] * size[2]))
    return _unbatch(y.reshape((n, c) + size), added)


def _adaptive_max3d(input, output_size, return_indices):
    op = "adaptive_max_pool3d"
    x, added = _batched(input, 3, op)
    size = _ntuple(tuple(x.shape[2 + i] if v is None else v for i, v in enumerate(output_size))
                   if isinstance(output_size, (tuple, list)) else output_size, 3, op, "output_size")
    n, c, depth, h, w = x.shape
    y, hw_idx = adaptive_max_pool2d(x.reshape((n, c * depth, h, w)), size[1:], True)
    out, idx = adaptive_max_pool2d(_depth_plane(y, n, c, depth), (size[0], size[1] * size[2]), True)
    out = out.reshape((n, c) + size)
    if not return_indices:
        return _unbatch(out, added)
    flat = idx.reshape((n * c, -1))
    hw = hw_idx.reshape((n * c, -1)).gather(1, flat)
    idx = (flat // (size[1] * size[2]) * (h * w) + hw).reshape(tuple(out.shape))
    return _unbatch(out, added), _unbatch(idx, added)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Maximum over the adaptive windows of ``adaptive_avg_pool3d`` (indices as in ``max_pool3d``)."""
    return _adaptive_max3d(input, output_size, return_indices)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=True):
    """:func:`adaptive_max_pool3d` returning the indices too."""
    return _adaptive_max3d(input, output_size, True)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of :func:`max_pool3d`: each value of (N, C, D, H, W) input at its index within the
    output volume (from ``max_pool3d(..., return_indices=True)``), zeros elsewhere."""
    return _max_unpool_nd(input, indices, kernel_size, stride, padding, output_size, 3)


def _lp_pool(op, input, norm_type, kernel_size, stride, ceil_mode, nsp, avg):
    k = _ntuple(kernel_size, nsp, op, "kernel_size")
    p = float(norm_type)
    if p == 0:
        raise ValueError(f"[{op}] norm_type must be non-zero, got {norm_type!r}")
    out = avg(input ** p, k, k if stride is None else stride, 0, ceil_mode)
    return ((out.sign() * out.abs().relu()) * math.prod(k)) ** (1.0 / p)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling of (N, C, L) input: (sum of x ** p over each window) ** (1 / p), p = ``norm_type``
    (p = 1 is sum pooling; large p approaches max pooling of |x|). Computed as PyTorch does, from the mean of
    x ** p times the window size, so a window clipped by ``ceil_mode`` has its sum scaled up to the whole size."""
    return _lp_pool("lp_pool1d", input, norm_type, kernel_size, stride, ceil_mode, 1, avg_pool1d)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling over (kh, kw) windows of (N, C, H, W) input; see :func:`lp_pool1d`."""
    return _lp_pool("lp_pool2d", input, norm_type, kernel_size, stride, ceil_mode, 2, avg_pool2d)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling over (kd, kh, kw) windows of (N, C, D, H, W) input; see :func:`lp_pool1d`."""
    return _lp_pool("lp_pool3d", input, norm_type, kernel_size, stride, ceil_mode, 3, avg_pool3d)


__all__ = [
    "conv3d", "conv_transpose3d", "max_pool3d", "max_pool3d_with_indices", "avg_pool3d", "adaptive_avg_pool3d",
    "adaptive_max_pool3d", "adaptive_max_pool3d_with_indices", "max_unpool3d", "lp_pool1d", "lp_pool2d", "lp_pool3d",
]
