"""``affine_grid`` and ``grid_sample`` for ``sneppx_core.functional`` (spatial transformers, warping, resampling at
arbitrary points), composed of core ops: differentiable in the input (through ``gather``) and in the grid or
``theta`` (through the interpolation weights).

A grid holds normalised coordinates, x first: -1 and 1 are the centres of the edge pixels with
``align_corners=True`` and their outer edges with ``align_corners=False`` (the default).
"""

from __future__ import annotations

import itertools

from ._factories import linspace, ones
from ._ops import stack, where

_MODES = ("bilinear", "nearest", "bicubic")
_PADDING = ("zeros", "border", "reflection")


def _base_coords(steps, align_corners, like):
    """The normalised centres of ``steps`` pixels."""
    if steps <= 1:
        return linspace(0.0, 0.0, steps, dtype=like.dtype, device=like.device)
    line = linspace(-1.0, 1.0, steps, dtype=like.dtype, device=like.device)
    return line if align_corners else line * (steps - 1) / steps


def affine_grid(theta, size, align_corners=None):
    """The sampling grid of the affine maps ``theta`` for an output of ``size``.

    ``theta`` (N, 2, 3) with size (N, C, H, W) gives grid[n, h, w] = theta[n] @ (x_w, y_h, 1), shape (N, H, W, 2);
    ``theta`` (N, 3, 4) with size (N, C, D, H, W) gives (N, D, H, W, 3). ``align_corners`` defaults to False.
    """
    op = "affine_grid"
    size = tuple(int(v) for v in size)
    nsp = len(size) - 2
    if nsp not in (2, 3) or theta.ndim != 3 or tuple(theta.shape) != (size[0], nsp, nsp + 1):
        raise ValueError(f"[{op}] expected theta (N, 2, 3) with size (N, C, H, W) or theta (N, 3, 4) with size "
                         f"(N, C, D, H, W), got theta {tuple(theta.shape)} and size {size}")
    if not theta.dtype.is_floating_point:
        raise TypeError(f"[{op}] theta must be floating point, got {theta.dtype}")
    if min(size[2:]) <= 0:
        raise ValueError(f"[{op}] size {size} must be positive")
    axes = [_base_coords(n, bool(align_corners), theta) for n in reversed(size[2:])]  # x, y(, z)
    mesh = [a.reshape(tuple(-1 if j == nsp - 1 - i else 1 for j in range(nsp))).expand(size[2:])
            for i, a in enumerate(axes)]
    base = stack(mesh + [ones(size[2:], dtype=theta.dtype, device=theta.device)], -1).reshape((1, -1, nsp + 1))
    return (base @ theta.transpose(1, 2)).reshape((size[0],) + size[2:] + (nsp,))


def _unnormalize(coord, size, align_corners):
    return (coord + 1) / 2 * (size - 1) if align_corners else ((coord + 1) * size - 1) / 2


def _reflect(x, twice_low, twice_high):
    """x reflected into [twice_low / 2, twice_high / 2] (as by mirrors at both ends, repeatedly)."""
    if twice_low == twice_high:
        return x * 0
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    x = (x - low).abs()
    extra = x.fmod(span)
    return where((x / span).floor().remainder(2) == 0, extra + low, span - extra + low)


def _pad_coord(x, size, padding_mode, align_corners):
    """The coordinate a padding mode reads instead of ``x`` (zeros: ``x`` itself, read as 0 when outside)."""
    if padding_mode == "border":
        return x.clamp(0, size - 1)
    if padding_mode == "reflection":
        x = _reflect(x, 0, 2 * (size - 1)) if align_corners else _reflect(x, -1, 2 * size - 1)
        return x.clamp(0, size - 1)
    return x


def _cubic_weights(t):
    """The four cubic-convolution weights (A = -0.75) of the taps at -1, 0, 1, 2 for a fraction ``t``."""
    a = -0.75

    def near(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _read(flat, sizes, coords):
    """flat (N, C, prod(sizes)) read at integer-valued float coordinates (each (N, L)); 0 outside."""
    n, c = flat.shape[0], flat.shape[1]
    index, inside = None, None
    for size, x in zip(sizes, coords):
        ok = (x >= 0) & (x <= size - 1)
        inside = ok if inside is None else inside & ok
        xi = x.clamp(0, size - 1).long()
        index = xi if index is None else index * size + xi
    vals = flat.gather(2, index.unsqueeze(1).expand((n, c, index.shape[1])))
    return vals * inside.unsqueeze(1).to(flat.dtype)


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Samples (N, C, H, W) input at the points of an (N, H_out, W_out, 2) grid of normalised (x, y) coordinates,
    giving (N, C, H_out, W_out); (N, C, D, H, W) input takes an (N, D_out, H_out, W_out, 3) grid of (x, y, z).

    ``mode``: "bilinear" (trilinear for 5-D input), "nearest" (ties to even, as PyTorch) or "bicubic" (4-D only,
    cubic convolution with A = -0.75). ``padding_mode``: "zeros" (points outside read 0), "border" (clamped to the
    edge) or "reflection" (mirrored at the edges). ``align_corners`` defaults to False.

    The bilinear weights have a kink at each pixel centre. A point that lands on one up to rounding (an
    identity warp does) gets the gradient of one side, which the coordinate's last bit picks, so the grid's
    gradient there can differ from PyTorch's while the values agree.
    """
    op = "grid_sample"
    nsp = input.ndim - 2
    if nsp not in (2, 3) or grid.ndim != nsp + 2 or grid.shape[-1] != nsp or grid.shape[0] != input.shape[0]:
        raise ValueError(f"[{op}] expected input (N, C, H, W) with grid (N, H_out, W_out, 2), or input "
                         f"(N, C, D, H, W) with grid (N, D_out, H_out, W_out, 3), got input {tuple(input.shape)} "
                         f"and grid {tuple(grid.shape)}")
    if input.dtype != grid.dtype or not input.dtype.is_floating_point:
        raise TypeError(f"[{op}] input and grid must have one floating dtype, got {input.dtype} and {grid.dtype}")
    if mode not in _MODES or padding_mode not in _PADDING:
        raise ValueError(f"[{op}] mode must be one of {_MODES} and padding_mode one of {_PADDING}, got {mode!r} and "
                         f"{padding_mode!r}")
    if mode == "bicubic" and nsp == 3:
        raise ValueError(f"[{op}] bicubic mode needs 4-D input, got {tuple(input.shape)}")
    align = bool(align_corners)
    n, c, sizes = input.shape[0], input.shape[1], tuple(input.shape[2:])
    out_shape = (n, c) + tuple(grid.shape[1:-1])
    if min(sizes) <= 0 or input.numel() == 0 or grid.numel() == 0:
        return input.new_zeros(out_shape)
    flat = input.reshape((n, c, -1))
    pts = grid.reshape((n, -1, nsp))
    raw = [_unnormalize(pts[:, :, nsp - 1 - i], sizes[i], align) for i in range(nsp)]  # per input dim: z/y, x
    if mode == "bicubic":
        base = [x.detach().floor() for x in raw]
        weights = [_cubic_weights(x - b) for x, b in zip(raw, base)]
        out = 0
        for taps in itertools.product(range(4), repeat=nsp):
            coords = [_pad_coord(b + (t - 1), s, padding_mode, align) for b, t, s in zip(base, taps, sizes)]
            w = weights[0][taps[0]] * weights[1][taps[1]]
            out = out + _read(flat, sizes, [x.floor() for x in coords]) * w.unsqueeze(1)
        return out.reshape(out_shape)
    src = [_pad_coord(x, s, padding_mode, align) for x, s in zip(raw, sizes)]
    if mode == "nearest":
        return _read(flat, sizes, [x.detach().round() for x in src]).reshape(out_shape)
    base = [x.detach().floor() for x in src]
    out = 0
    for taps in itertools.product((0, 1), repeat=nsp):
        w = None
        for x, b, t in zip(src, base, taps):
            f = x - b if t else (b + 1) - x
            w = f if w is None else w * f
        out = out + _read(flat, sizes, [b + t for b, t in zip(base, taps)]) * w.unsqueeze(1)
    return out.reshape(out_shape)


__all__ = ["affine_grid", "grid_sample"]
