"""Convolution, pooling and batch-statistics norms for ``sneppx_core.functional``.

The work is done by the C++ ops bound as ``_SNEPPX_c._conv`` (im2col + GEMM convolutions, pooling
kernels, norms composed of core ops); this module normalises PyTorch's arguments (ints or tuples,
``padding="same"``, unbatched inputs, ``return_indices``) and documents the maths. The activations,
distances and reshuffles that are plain compositions live in ``_functional_composed``.
"""

from __future__ import annotations

from ._backend import _C
from ._functional_extra import pad
from ._functional_composed import *  # noqa: F401,F403
from ._functional_composed import __all__ as _composed_all
from ._grad_mode import no_grad

_conv = _C._conv


def _ntuple(value, n, op, name):
    """``value`` as an n-tuple of ints (an int, or a sequence of length 1 or n)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,) * n
    try:
        out = tuple(int(v) for v in value)
    except TypeError:
        raise TypeError(f"[{op}] {name} must be an int or a tuple of {n} ints, got {value!r}") from None
    if len(out) == 1:
        out *= n
    if len(out) != n:
        raise ValueError(f"[{op}] {name} must be an int or a tuple of {n} ints, got {value!r}")
    return out


def _batched(input, nsp, op):
    """(input with a batch dim, whether one was added): unbatched (C, *spatial) input is allowed."""
    if input.ndim == nsp + 1:
        return input.unsqueeze(0), True
    if input.ndim != nsp + 2:
        raise ValueError(f"[{op}] expected {nsp + 1}-D (unbatched) or {nsp + 2}-D (batched) input, "
                         f"got shape {tuple(input.shape)}")
    return input, False


def _unbatch(out, added):
    return out.squeeze(0) if added else out


def _conv_nd(input, weight, bias, stride, padding, dilation, groups, nsp):
    op = f"conv{nsp}d"
    x, added = _batched(input, nsp, op)
    stride, dilation = _ntuple(stride, nsp, op, "stride"), _ntuple(dilation, nsp, op, "dilation")
    if isinstance(padding, str):
        if padding == "valid":
            padding = (0,) * nsp
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError(f"[{op}] padding='same' is not supported for strided convolutions (stride={stride})")
            total = [d * (k - 1) for d, k in zip(dilation, weight.shape[2:])]
            padding = tuple(t // 2 for t in total)
            extra = [t - 2 * (t // 2) for t in total]
            if any(extra):  # PyTorch puts the odd element on the right
                x = pad(x, tuple(v for e in reversed(extra) for v in (0, e)))
        else:
            raise ValueError(f"[{op}] padding must be 'same', 'valid', an int or a tuple, got {padding!r}")
    padding = _ntuple(padding, nsp, op, "padding")
    return _unbatch(_conv.conv(x, weight, bias, stride, padding, dilation, int(groups)), added)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-d convolution (cross-correlation, as in PyTorch) of (N, C_in, L) input with (C_out, C_in/groups, k).

    out[n, o, l] = bias[o] + sum_{c, j} weight[o, c, j] * x_pad[n, g(o) * C_in/groups + c, l * stride + j * dilation].
    ``padding`` is an int, a 1-tuple, ``"valid"`` (none) or ``"same"`` (output length = input length; the odd
    extra goes on the right). Computed as im2col + one GEMM per group over the whole batch.
    """
    return _conv_nd(input, weight, bias, stride, padding, dilation, groups, 1)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-d convolution of (N, C_in, H, W) input with (C_out, C_in/groups, kh, kw) weight.

    out[n, o, y, x] = bias[o] + sum_{c, i, j} weight[o, c, i, j] * x_pad[n, c', y sh + i dh, x sw + j dw] with
    c' = g(o) * C_in/groups + c. ``groups = C_in`` is a depthwise convolution. ``padding`` as in ``conv1d``;
    backward: dx = col2im(W^T g), dW = g cols^T, db = sum of g.
    """
    return _conv_nd(input, weight, bias, stride, padding, dilation, groups, 2)


def _conv_transpose_nd(input, weight, bias, stride, padding, output_padding, groups, dilation, nsp):
    op = f"conv_transpose{nsp}d"
    x, added = _batched(input, nsp, op)
    args = [_ntuple(v, nsp, op, n) for v, n in ((stride, "stride"), (padding, "padding"),
                                                 (output_padding, "output_padding"), (dilation, "dilation"))]
    return _unbatch(_conv.conv_transpose(x, weight, bias, *args, int(groups)), added)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 1-d convolution (the gradient of conv1d with respect to its input) with
    (C_in, C_out/groups, k) weight. L_out = (L - 1) stride - 2 padding + dilation (k - 1) + output_padding + 1.
    """
    return _conv_transpose_nd(input, weight, bias, stride, padding, output_padding, groups, dilation, 1)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 2-d convolution with (C_in, C_out/groups, kh, kw) weight: col2im(W^T x) + bias, with
    H_out = (H - 1) sh - 2 ph + dh (kh - 1) + output_padding_h + 1 (and likewise W_out).
    """
    return _conv_transpose_nd(input, weight, bias, stride, padding, output_padding, groups, dilation, 2)


def _max_pool_nd(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, nsp):
    op = f"max_pool{nsp}d"
    x, added = _batched(input, nsp, op)
    k = _ntuple(kernel_size, nsp, op, "kernel_size")
    s = k if stride is None or stride == () or stride == [] else _ntuple(stride, nsp, op, "stride")
    out, idx = _conv.max_pool(x, k, s, _ntuple(padding, nsp, op, "padding"), _ntuple(dilation, nsp, op, "dilation"),
                              bool(ceil_mode), bool(return_indices))
    return (_unbatch(out, added), _unbatch(idx, added)) if return_indices else _unbatch(out, added)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Maximum over sliding windows of (N, C, L) input (stride defaults to kernel_size; padding counts as -inf).

    With ``return_indices`` also returns the argmax offsets within each input row. NaN propagates.
    The gradient goes to the argmax of each window.
    """
    return _max_pool_nd(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 1)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Maximum over (kh, kw) windows of (N, C, H, W) input; indices are flat offsets y * W + x into each plane.

    L_out = floor((L + 2 p - d (k - 1) - 1) / s) + 1 (ceil with ``ceil_mode``, dropping a last window that
    would start in the right padding).
    """
    return _max_pool_nd(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 2)


def _avg_pool_nd(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, nsp):
    op = f"avg_pool{nsp}d"
    x, added = _batched(input, nsp, op)
    k = _ntuple(kernel_size, nsp, op, "kernel_size")
    s = k if stride is None or stride == () or stride == [] else _ntuple(stride, nsp, op, "stride")
    out = _conv.avg_pool(x, k, s, _ntuple(padding, nsp, op, "padding"), bool(ceil_mode), bool(count_include_pad),
                         None if divisor_override is None else int(divisor_override))
    return _unbatch(out, added)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """Mean over sliding windows of (N, C, L) input; zero padding counts in the divisor when
    ``count_include_pad`` (windows clipped by ``ceil_mode`` never count beyond the padding)."""
    return _avg_pool_nd(input, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Mean over (kh, kw) windows of (N, C, H, W) input; ``divisor_override`` replaces the window size."""
    return _avg_pool_nd(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 2)


def _adaptive_size(input, output_size, nsp, op):
    size = _ntuple(tuple(input.shape[-nsp + i] if v is None else v for i, v in enumerate(output_size))
                   if isinstance(output_size, (tuple, list)) else output_size, nsp, op, "output_size")
    return size


def adaptive_avg_pool1d(input, output_size):
    """Mean over windows [floor(i L / out), ceil((i + 1) L / out)) for each output position i."""
    x, added = _batched(input, 1, "adaptive_avg_pool1d")
    return _unbatch(_conv.adaptive_avg_pool(x, _adaptive_size(x, output_size, 1, "adaptive_avg_pool1d")), added)


def adaptive_avg_pool2d(input, output_size):
    """Adaptive mean pooling to ``output_size`` (an int, or a pair whose None entries keep the input size)."""
    x, added = _batched(input, 2, "adaptive_avg_pool2d")
    return _unbatch(_conv.adaptive_avg_pool(x, _adaptive_size(x, output_size, 2, "adaptive_avg_pool2d")), added)


def _adaptive_max(input, output_size, return_indices, nsp):
    op = f"adaptive_max_pool{nsp}d"
    x, added = _batched(input, nsp, op)
    out, idx = _conv.adaptive_max_pool(x, _adaptive_size(x, output_size, nsp, op), bool(return_indices))
    return (_unbatch(out, added), _unbatch(idx, added)) if return_indices else _unbatch(out, added)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Maximum over the adaptive windows of ``adaptive_avg_pool1d``."""
    return _adaptive_max(input, output_size, return_indices, 1)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Maximum over the adaptive windows of ``adaptive_avg_pool2d`` (indices as in ``max_pool2d``)."""
    return _adaptive_max(input, output_size, return_indices, 2)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Batch normalisation of (N, C, ...) input per channel:

        y = (x - mean) / sqrt(var + eps) * weight + bias

    In training mode (or without running statistics) mean and the biased var are taken over the batch and
    spatial dims, and the running statistics, when given, are updated in place:
    running = (1 - momentum) * running + momentum * stat (the variance unbiased, n / (n - 1)).
    Otherwise the running statistics normalise. ``momentum=None`` is resolved by the caller (BatchNorm).
    """
    return _conv.batch_norm(input, running_mean, running_var, weight, bias, bool(training),
                            0.0 if momentum is None else float(momentum), float(eps))


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Group normalisation: the C channels split into ``num_groups`` groups; each (sample, group) is normalised
    over its channels and spatial positions (biased variance), then y = x_hat * weight[c] + bias[c]."""
    return _conv.group_norm(input, int(num_groups), weight, bias, float(eps))


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Instance normalisation: each (sample, channel) normalised over its spatial positions.

    Computed as batch_norm of the (1, N * C, ...) reshaped input; with running statistics, they are updated
    with the batch mean of the per-instance statistics, as PyTorch does. ``use_input_stats=False`` normalises
    with the running statistics instead.
    """
    if not use_input_stats:
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    n, c = input.shape[0], input.shape[1]
    x = input.reshape((1, n * c) + tuple(input.shape[2:]))
    rm = running_mean.repeat(n) if running_mean is not None else None
    rv = running_var.repeat(n) if running_var is not None else None
    w = weight.repeat(n) if weight is not None else None
    b = bias.repeat(n) if bias is not None else None
    out = batch_norm(x, rm, rv, w, b, True, momentum, eps).reshape(tuple(input.shape))
    if rm is not None:
        with no_grad():
            running_mean.copy_(rm.reshape((n, c)).mean(0))
            running_var.copy_(rv.reshape((n, c)).mean(0))
    return out


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding (kh, kw) blocks of (N, C, H, W) input as (N, C * kh * kw, L) columns (im2col);
    row c * kh * kw + i * kw + j holds channel c at kernel offset (i, j)."""
    op = "unfold"
    return _conv.unfold(input, *(_ntuple(v, 2, op, n) for v, n in ((kernel_size, "kernel_size"),
                        (dilation, "dilation"), (padding, "padding"), (stride, "stride"))))


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """The adjoint of ``unfold``: (N, C * kh * kw, L) columns summed into an (N, C, *output_size) image
    (overlapping blocks add up)."""
    op = "fold"
    return _conv.fold(input, _ntuple(output_size, 2, op, "output_size"),
                      *(_ntuple(v, 2, op, n) for v, n in ((kernel_size, "kernel_size"), (dilation, "dilation"),
                                                          (padding, "padding"), (stride, "stride"))))


__all__ = [
    "conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "max_pool1d", "max_pool2d", "avg_pool1d",
    "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool2d",
    "batch_norm", "group_norm", "instance_norm", "unfold", "fold", *_composed_all,
]
