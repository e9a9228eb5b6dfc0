"""``pad`` and ``interpolate`` for ``sneppx_core.functional``, built from differentiable core ops."""

from __future__ import annotations

import functools
import math

import numpy as np

from . import _backend, _ops
from ._backend import _C
from ._C_face import Tensor
from ._factories import full


def _pad_indices(n, left, right, mode):
    """Source index of every output position along one dim of length n (reflect/replicate/circular)."""
    pos = np.arange(-left, n + right)
    if mode == "replicate":
        return np.clip(pos, 0, n - 1)
    if mode == "circular":
        if left > n or right > n:
            raise ValueError(f"[pad] circular padding of {left}, {right} is larger than the dim of size {n}")
        return pos % n
    if left >= n or right >= n:
        raise ValueError(f"[pad] reflect padding of {left}, {right} must be smaller than the dim of size {n}")
    period = 2 * (n - 1) if n > 1 else 1
    p = np.abs(pos) % period
    return np.where(p >= n, period - p, p)


def pad(input, pad, mode="constant", value=None):
    """Pads the last len(pad) // 2 dims: ``pad`` = (left_last, right_last, left_prev, right_prev, ...).

    mode "constant" fills with ``value`` (default 0; negative pads crop); "reflect" mirrors without
    repeating the edge, "replicate" repeats the edge, "circular" wraps around. Differentiable.
    """
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2 or len(pad) // 2 > input.ndim:
        raise ValueError(f"[pad] pad {pad} must have an even length of at most 2 * ndim = {2 * input.ndim}")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise ValueError(f"[pad] mode must be 'constant', 'reflect', 'replicate' or 'circular', got {mode!r}")
    if mode != "constant" and value not in (None, 0):
        raise ValueError(f"[pad] value is only for mode='constant', got value={value} with mode={mode!r}")
    if mode != "constant":
        if not any(pad):
            return input
        maps = _pad_maps(tuple(input.shape[input.ndim - len(pad) // 2:]), pad, mode)
        if _backend.NAME == "c":  # one pass: rows gathered through the per-dim source maps
            return _C._conv.pad_gather(input, maps)
        for j, m in enumerate(maps):  # one index_select per padded dim
            input = input.index_select(input.ndim - len(maps) + j, m)
        return input
    value = 0.0 if value is None else value
    if _backend.NAME == "c":  # one pass: the output filled with value, input copied into its interior
        return _C._conv.pad_constant(input, list(pad), value)
    out = input
    for k in range(len(pad) // 2):
        out = _pad_constant(out, input.ndim - 1 - k, pad[2 * k], pad[2 * k + 1], value)
    return out


@functools.lru_cache(maxsize=64)
def _pad_maps(tail, pad, mode):
    """Source index of every output position along each padded dim (shapes ``tail``), as CPU tensors."""
    k = len(tail)
    return tuple(Tensor(_pad_indices(n, pad[2 * (k - 1 - j)], pad[2 * (k - 1 - j) + 1], mode))
                 for j, n in enumerate(tail))


def _pad_constant(x, dim, left, right, value):
    if left < 0:
        x = x.narrow(dim, -left, x.shape[dim] + left)
    if right < 0:
        x = x.narrow(dim, 0, x.shape[dim] + right)
    parts = []
    for n in (max(left, 0), None, max(right, 0)):
        if n is None:
            parts.append(x)
        elif n:
            shape = list(x.shape)
            shape[dim] = n
            parts.append(full(tuple(shape), value, dtype=x.dtype, device=x.device))
    return _ops.cat(parts, dim) if len(parts) > 1 else x


def _out_sizes(input, size, scale_factor):
    spatial = input.shape[2:]
    if (size is None) == (scale_factor is None):
        raise ValueError("[interpolate] give exactly one of size and scale_factor")
    if size is not None:
        sizes = (size,) * len(spatial) if isinstance(size, int) else tuple(size)
        scales = [None] * len(spatial)
    else:
        scales = (scale_factor,) * len(spatial) if isinstance(scale_factor, (int, float)) else tuple(scale_factor)
        sizes = tuple(int(math.floor(n * s)) for n, s in zip(spatial, scales))
    if len(sizes) != len(spatial):
        raise ValueError(f"[interpolate] size {sizes} does not match the {len(spatial)} spatial dims of "
                         f"{tuple(input.shape)}")
    return sizes, scales


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Resamples the spatial dims of (N, C, *spatial) input to ``size`` (or ``size * scale_factor``).

    mode "nearest": out[i] = in[floor(i * s)], s = in / out (or 1 / scale_factor);
    "linear" / "bilinear" / "trilinear": separable linear interpolation at source coordinate
    (i + 0.5) s - 0.5 clamped at 0, or i (in - 1) / (out - 1) with ``align_corners=True``.
    Differentiable (gathers and weighted sums of core ops).
    """
    linear = {"linear": 1, "bilinear": 2, "trilinear": 3}
    if mode != "nearest" and mode not in linear:
        raise NotImplementedError(f"[interpolate] mode {mode!r} is not supported (nearest, linear, bilinear, "
                                  "trilinear)")
    if mode in linear and input.ndim - 2 != linear[mode]:
        raise ValueError(f"[interpolate] mode {mode!r} expects {linear[mode] + 2}-D input, got {tuple(input.shape)}")
    if mode == "nearest" and align_corners is not None:
        raise ValueError("[interpolate] align_corners is only for the linear modes")
    sizes, scales = _out_sizes(input, size, scale_factor)
    out = input
    for k, (n_out, sc) in enumerate(zip(sizes, scales)):
        dim, n_in = 2 + k, input.shape[2 + k]
        s = n_in / n_out if sc is None else 1.0 / sc
        i = np.arange(n_out, dtype=np.float64)
        if mode == "nearest":
            out = out.index_select(dim, Tensor(np.minimum(np.floor(i * s).astype(np.int64), n_in - 1)).to(input.device))
            continue
        if align_corners:
            src = i * ((n_in - 1) / (n_out - 1)) if n_out > 1 else np.zeros_like(i)
        else:
            src = np.maximum((i + 0.5) * s - 0.5, 0.0)
        i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
        i1 = np.minimum(i0 + 1, n_in - 1)
        shape = [1] * input.ndim
        shape[dim] = n_out
        w = Tensor((src - i0).reshape(shape), dtype=input.dtype).to(input.device)
        a, b = out.index_select(dim, Tensor(i0).to(input.device)), out.index_select(dim, Tensor(i1).to(input.device))
        out = a + (b - a) * w
    return out
