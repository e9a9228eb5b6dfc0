"""Fractional max pooling (Graham, https://arxiv.org/abs/1412.6071) for ``sneppx_core.functional``.

Each (sample, channel) plane draws one number u in [0, 1) per spatial dim (``_random_samples``, shape
(N, C, 2) or (N, C, 3)). Along a dim of input size L, output size O and window k, window i starts at

    start_i = floor((i + u) * a) - floor(u * a),  a = (L - k) / (O - 1),   for i < O - 1,
    start_{O-1} = L - k,

with the arithmetic done in the input's dtype, as PyTorch does, so the same samples give PyTorch's windows.
The 2-d op reads u for the width from sample 0 and for the height from sample 1; the 3-d op reads depth,
height and width from samples 0, 1 and 2.

The op is a composition: the flat offsets of every window element are built from the starts, the values are
gathered without gradient to pick each window's maximum (the first one in scan order; a NaN wins, the last
NaN when there are several), and the output is one ``gather`` of the input at the picked offsets, so the
gradient flows to the argmax of each window through ``gather``'s backward. Indices are flat offsets into each
plane (y * W + x) or volume (d * H * W + y * W + x), as ``max_pool2d``/``max_pool3d`` give them.
"""

from __future__ import annotations

import math

from ._C_face import int64
from ._factories import arange, full, rand, tensor
from ._functional_conv import _batched, _ntuple, _unbatch
from ._grad_mode import no_grad
from ._ops import cat, where

_SAMPLE_DIM = {2: (1, 0), 3: (0, 1, 2)}  # which sample drives each spatial dim (H, W) / (D, H, W)


def _starts(u, size, out, k):
    """(N, C, out) int64 window starts along one dim from the (N, C) samples ``u`` (in the input's dtype)."""
    n, c = u.shape
    last = full((n, c, 1), size - k, dtype=int64, device=u.device)
    if out <= 1:
        return last[:, :, :out]
    kw = {"dtype": u.dtype, "device": u.device}
    alpha = tensor(float(size - k), **kw) / tensor(float(out - 1), **kw)  # each step rounded to the dtype
    i, u = arange(out - 1, **kw), u.unsqueeze(-1)
    return cat([((i + u) * alpha).to(int64) - (u * alpha).to(int64), last], -1)  # .to(int64) truncates


def _output_size(op, x, output_size, output_ratio, nsp):
    """The output size from ``output_size`` or ``output_ratio`` (int(L * ratio), as PyTorch computes it)."""
    if output_size is None and output_ratio is None:
        raise ValueError(f"[{op}] requires specifying either an output_size or an output_ratio")
    if output_size is not None:
        size = _ntuple(output_size, nsp, op, "output_size")
    else:
        ratio = (output_ratio,) * nsp if isinstance(output_ratio, (int, float)) else tuple(output_ratio)
        ratio = ratio * nsp if len(ratio) == 1 else ratio
        if len(ratio) != nsp:
            raise ValueError(f"[{op}] output_ratio must be a number or a tuple of {nsp} numbers, got {output_ratio!r}")
        size = tuple(int(x.shape[2 + d] * float(ratio[d])) for d in range(nsp))
    if min(size) < 0:
        raise ValueError(f"[{op}] output_size must be non-negative, got {size}")
    return size


def _check(op, x, input, k, size, samples, nsp):
    if x.numel() == 0:
        raise ValueError(f"[{op}] expected a non-empty input, got shape {tuple(input.shape)}")
    if min(k) <= 0:
        raise ValueError(f"[{op}] kernel_size must be positive, got {k}")
    spatial = tuple(x.shape[2:])
    if any(o + kk - 1 > s for o, kk, s in zip(size, k, spatial)):
        raise ValueError(f"[{op}] kernel_size {k} too large for output_size {size} and input {tuple(input.shape)} "
                         f"(need output_size + kernel_size - 1 <= input size in every dim)")
    if samples.dtype != x.dtype:
        raise TypeError(f"[{op}] _random_samples must have the input's dtype {x.dtype}, got {samples.dtype}")
    n, c = x.shape[0], x.shape[1]
    if samples.ndim != 3 or samples.shape[0] < n or samples.shape[1] != c or samples.shape[2] != nsp:
        raise ValueError(f"[{op}] _random_samples must have shape (N >= {n}, {c}, {nsp}) for input "
                         f"{tuple(input.shape)}, got {tuple(samples.shape)}")


def _window_offsets(samples, spatial, size, k):
    """(N, C, prod(size), prod(k)) flat offsets of every element of every window into each plane or volume."""
    nsp = len(spatial)
    n, c = samples.shape[0], samples.shape[1]
    offsets, step = None, 1
    for d in reversed(range(nsp)):
        starts = _starts(samples[:, :, _SAMPLE_DIM[nsp][d]], spatial[d], size[d], k[d])
        pos = (starts.unsqueeze(-1) + arange(k[d], device=samples.device)) * step
        shape = [n, c] + [1] * (2 * nsp)
        shape[2 + d], shape[2 + nsp + d] = size[d], k[d]
        pos = pos.reshape(tuple(shape))
        offsets = pos if offsets is None else offsets + pos
        step *= spatial[d]
    return offsets.reshape((n, c, math.prod(size), math.prod(k)))


def _first_max(values):
    """(..., 1) position of each row's maximum: the first one, or the last NaN when the row has NaN."""
    width = values.shape[-1]
    nan_pos = (arange(1, width + 1, device=values.device) * values.isnan()).amax(-1, keepdim=True)
    return where(nan_pos > 0, nan_pos - 1, values.argmax(-1, keepdim=True))


def _fractional_max_pool(op, input, kernel_size, output_size, output_ratio, return_indices, _random_samples, nsp):
    x, added = _batched(input, nsp, op)
    k = _ntuple(kernel_size, nsp, op, "kernel_size")
    size = _output_size(op, x, output_size, output_ratio, nsp)
    n, c = x.shape[0], x.shape[1]
    if not x.is_floating_point():
        raise TypeError(f"[{op}] expected a floating-point input, got {input.dtype} of shape {tuple(input.shape)}")
    samples = _random_samples
    if samples is None:
        samples = rand(n, c, nsp, dtype=x.dtype, device=x.device)
    _check(op, x, input, k, size, samples, nsp)
    flat = x.reshape((n, c, -1))
    with no_grad():
        windows = _window_offsets(samples[:n].detach(), tuple(x.shape[2:]), size, k)
        values = flat.detach().gather(2, windows.reshape((n, c, -1))).reshape(tuple(windows.shape))
        idx = windows.gather(3, _first_max(values)).reshape((n, c, -1))
    out = flat.gather(2, idx).reshape((n, c) + size)
    if not return_indices:
        return _unbatch(out, added)
    return _unbatch(out, added), _unbatch(idx.reshape((n, c) + size), added)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """Fractional max pooling of (N, C, H, W) or (C, H, W) input: the maximum over (kh, kw) windows whose
    starts step pseudo-randomly so that the output is ``output_size`` (or int(size * ``output_ratio``)).

    Window starts per dim: floor((i + u) a) - floor(u a) with a = (L - k) / (O - 1), the last window at
    L - k; u comes from ``_random_samples`` (N, C, 2) (u[..., 0] for the width, u[..., 1] for the height;
    drawn uniformly in [0, 1) from the default generator when None). With ``return_indices`` also returns
    flat offsets y * W + x into each plane (for ``max_unpool2d``). Same samples, same result as PyTorch.
    """
    return _fractional_max_pool("fractional_max_pool2d", input, kernel_size, output_size, output_ratio,
                                return_indices, _random_samples, 2)


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """:func:`fractional_max_pool2d` returning ``(output, indices)``."""
    return _fractional_max_pool("fractional_max_pool2d", input, kernel_size, output_size, output_ratio, True,
                                _random_samples, 2)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """Fractional max pooling of (N, C, D, H, W) or (C, D, H, W) input over (kd, kh, kw) windows; see
    :func:`fractional_max_pool2d`. ``_random_samples`` is (N, C, 3): u[..., 0] for the depth, 1 for the height,
    2 for the width. Indices are flat offsets d * H * W + y * W + x into each volume.
    """
    return _fractional_max_pool("fractional_max_pool3d", input, kernel_size, output_size, output_ratio,
                                return_indices, _random_samples, 3)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """:func:`fractional_max_pool3d` returning ``(output, indices)``."""
    return _fractional_max_pool("fractional_max_pool3d", input, kernel_size, output_size, output_ratio, True,
                                _random_samples, 3)


__all__ = [
    "fractional_max_pool2d", "fractional_max_pool2d_with_indices", "fractional_max_pool3d",
    "fractional_max_pool3d_with_indices",
]
