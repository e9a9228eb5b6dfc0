"""More of ``torch.nn.functional``'s names for ``sneppx_core.functional``, composed of its other functions
and core ops: the old resampling names (``upsample``, ``upsample_nearest``, ``upsample_bilinear``), the
``*_with_indices`` poolings, ``max_unpool1d/2d``, ``channel_shuffle``, ``bilinear`` and
``local_response_norm``; all differentiable through what they are built from.
"""

from __future__ import annotations

import math

from ._factories import zeros
from ._functional_conv import _batched, _ntuple, _unbatch, adaptive_max_pool1d, adaptive_max_pool2d, max_pool1d, \
    max_pool2d
from ._functional_extra import interpolate, pad


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """The old name of :func:`interpolate` (same arguments)."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """:func:`interpolate` with mode "nearest"."""
    return interpolate(input, size, scale_factor, "nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """:func:`interpolate` with mode "bilinear" and ``align_corners=True`` (as PyTorch's old name)."""
    return interpolate(input, size, scale_factor, "bilinear", True)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    """:func:`max_pool1d` returning the indices too."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    """:func:`max_pool2d` returning the indices too."""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=True):
    """:func:`adaptive_max_pool1d` returning the indices too."""
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=True):
    """:func:`adaptive_max_pool2d` returning the indices too."""
    return adaptive_max_pool2d(input, output_size, True)


def _max_unpool_nd(input, indices, kernel_size, stride, padding, output_size, nsp):
    op = f"max_unpool{nsp}d"
    x, added = _batched(input, nsp, op)
    k = _ntuple(kernel_size, nsp, op, "kernel_size")
    s = k if stride is None else _ntuple(stride, nsp, op, "stride")
    p = _ntuple(padding, nsp, op, "padding")
    if tuple(indices.shape) != tuple(input.shape):
        raise ValueError(f"[{op}] indices {tuple(indices.shape)} must have the shape of input {tuple(input.shape)}")
    size = [(x.shape[2 + d] - 1) * s[d] - 2 * p[d] + k[d] for d in range(nsp)]
    if output_size is not None:
        want = [int(v) for v in output_size][-nsp:]
        for d in range(nsp):
            if not size[d] - s[d] < want[d] < size[d] + s[d]:
                raise ValueError(f"[{op}] output_size {tuple(output_size)} must be within a stride of the default "
                                 f"size {tuple(size)}")
        size = want
    n, c = x.shape[0], x.shape[1]
    plane = math.prod(size)
    idx = (indices.unsqueeze(0) if added else indices).reshape((n, c, -1))
    if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= plane):
        raise ValueError(f"[{op}] indices must lie in [0, {plane}) for output size {tuple(size)}, got "
                         f"[{int(idx.min())}, {int(idx.max())}]")
    out = zeros((n, c, plane), dtype=x.dtype, device=x.device).scatter(2, idx, x.reshape((n, c, -1)))
    return _unbatch(out.reshape((n, c, *size)), added)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of :func:`max_pool1d`: each value of (N, C, L) input at its index (from
    ``max_pool1d(..., return_indices=True)``) in a zero output of length (L - 1) stride - 2 padding + k
    (or ``output_size``)."""
    return _max_unpool_nd(input, indices, kernel_size, stride, padding, output_size, 1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of :func:`max_pool2d`: each value of (N, C, H, W) input at its index within the
    output plane (from ``max_pool2d(..., return_indices=True)``), zeros elsewhere."""
    return _max_unpool_nd(input, indices, kernel_size, stride, padding, output_size, 2)


def channel_shuffle(input, groups):
    """(N, C, *) with C = g m: the channels as a (g, m) grid read column by column (ShuffleNet's shuffle)."""
    if input.ndim < 3:
        raise ValueError(f"[channel_shuffle] expected input of 3 dims or more, got shape {tuple(input.shape)}")
    n, c = input.shape[0], input.shape[1]
    if groups <= 0 or c % groups:
        raise ValueError(f"[channel_shuffle] {c} channels are not divisible by groups {groups}")
    rest = tuple(input.shape[2:])
    return input.reshape((n, groups, c // groups, *rest)).transpose(1, 2).reshape((n, c, *rest))


native_channel_shuffle = channel_shuffle


def bilinear(input1, input2, weight, bias=None):
    """y[..., k] = sum_ij x1[..., i] W[k, i, j] x2[..., j] + b[k] for (o, i, j) weight."""
    o, i, j = weight.shape
    if tuple(input1.shape[:-1]) != tuple(input2.shape[:-1]) or input1.shape[-1] != i or input2.shape[-1] != j:
        raise ValueError(f"[bilinear] expected inputs (..., {i}) and (..., {j}) with equal leading dims for weight "
                         f"{tuple(weight.shape)}, got {tuple(input1.shape)} and {tuple(input2.shape)}")
    t = (input1 @ weight.permute(1, 0, 2).reshape((i, o * j))).unflatten(-1, (o, j))
    y = (t * input2.unsqueeze(-2)).sum(-1)
    return y if bias is None else y + bias


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha / size * sum of x^2 over the ``size`` channels around each one) ** beta, the channels
    past the ends counting as zeros (AlexNet's normalisation; input (N, C, *))."""
    if input.ndim < 3:
        raise ValueError(f"[local_response_norm] expected input of 3 dims or more, got shape {tuple(input.shape)}")
    c = input.shape[1]
    sq = (input * input).movedim(1, -1)
    sq = pad(sq, (size // 2, (size - 1) // 2))
    window = sq[..., 0:c]
    for j in range(1, size):
        window = window + sq[..., j:j + c]
    div = (window.movedim(-1, 1) * (alpha / size) + k) ** beta
    return input / div


__all__ = [
    "upsample", "upsample_nearest", "upsample_bilinear", "max_pool1d_with_indices", "max_pool2d_with_indices",
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices", "max_unpool1d", "max_unpool2d",
    "channel_shuffle", "native_channel_shuffle", "bilinear", "local_response_norm",
]
