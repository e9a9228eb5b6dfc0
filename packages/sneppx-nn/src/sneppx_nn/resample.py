"""Resampling, padding, patch and distance layers: Upsample, PixelShuffle, PixelUnshuffle, ZeroPad1d/2d,
ConstantPad1d/2d, Unfold, Fold, CosineSimilarity, PairwiseDistance."""

from __future__ import annotations

import sneppx_core.functional as F

from .module import Module


class Upsample(Module, record_config=True):
    """Resamples (N, C, *spatial) input to ``size`` or by ``scale_factor`` with F.interpolate
    (mode "nearest", "linear", "bilinear" or "trilinear"; ``align_corners`` for the linear modes)."""

    def __init__(self, size=None, scale_factor=None, mode: str = "nearest", align_corners=None):
        super().__init__()
        self.size, self.scale_factor, self.mode, self.align_corners = size, scale_factor, mode, align_corners

    def forward(self, input):
        """interpolate(input, size, scale_factor, mode, align_corners)."""
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners)

    def extra_repr(self) -> str:
        what = f"size={self.size}" if self.size is not None else f"scale_factor={self.scale_factor}"
        return f"{what}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample, record_config=True):
    """Upsample with mode "nearest" (PyTorch's old layer)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, "nearest")


class UpsamplingBilinear2d(Upsample, record_config=True):
    """Upsample with mode "bilinear" and ``align_corners=True`` (PyTorch's old layer)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, "bilinear", True)


class ChannelShuffle(Module, record_config=True):
    """Shuffles the channels of (N, C, *) input in ``groups`` (ShuffleNet): channel_shuffle(input, groups)."""

    def __init__(self, groups: int):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        """channel_shuffle(input, groups)."""
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"


class PixelShuffle(Module, record_config=True):
    """(*, C r^2, H, W) -> (*, C, H r, W r) with r = ``upscale_factor``."""

    def __init__(self, upscale_factor: int):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        """pixel_shuffle(input, upscale_factor)."""
        return F.pixel_shuffle(input, self.upscale_factor)


class PixelUnshuffle(Module, record_config=True):
    """(*, C, H r, W r) -> (*, C r^2, H, W) with r = ``downscale_factor``."""

    def __init__(self, downscale_factor: int):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        """pixel_unshuffle(input, downscale_factor)."""
        return F.pixel_unshuffle(input, self.downscale_factor)


def _padding(layer, padding) -> tuple:
    """``padding`` as 2 n ints (left, right[, top, bottom]) for a layer that pads its last ``layer._n`` dims."""
    n = 2 * layer._n
    out = (padding,) * n if isinstance(padding, int) else tuple(padding)
    if len(out) != n:
        raise ValueError(f"[{type(layer).__name__}] padding must be an int or {n} ints, got {padding!r}")
    return out


class _ConstantPad(Module):
    _n = 2

    def __init__(self, padding, value: float = 0.0):
        super().__init__()
        self.padding = _padding(self, padding)
        self.value = value

    def forward(self, input):
        """pad(input, padding, value=value); padding = (left, right[, top, bottom])."""
        return F.pad(input, self.padding, mode="constant", value=self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPad, record_config=True):
    """Pads the last dim with ``value``: padding = int or (left, right)."""

    _n = 1


class ConstantPad2d(_ConstantPad, record_config=True):
    """Pads the last two dims with ``value``: padding = int or (left, right, top, bottom)."""

    _n = 2


class ConstantPad3d(_ConstantPad, record_config=True):
    """Pads the last three dims with ``value``: padding = int or (left, right, top, bottom, front, back)."""

    _n = 3


class _ZeroPad:
    """Zero padding: a ConstantPad with value 0, shown as PyTorch shows it (the padding alone)."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return str(self.padding)


class ZeroPad1d(_ZeroPad, ConstantPad1d, record_config=True):
    """Pads the last dim with zeros: padding = int or (left, right)."""


class ZeroPad2d(_ZeroPad, ConstantPad2d, record_config=True):
    """Pads the last two dims with zeros: padding = int or (left, right, top, bottom)."""


class ZeroPad3d(_ZeroPad, ConstantPad3d, record_config=True):
    """Pads the last three dims with zeros: padding = int or (left, right, top, bottom, front, back)."""


class _ModePad(Module):
    _n = 2
    _mode = "reflect"

    def __init__(self, padding):
        super().__init__()
        self.padding = _padding(self, padding)

    def forward(self, input):
        """pad(input, padding, mode) of an unbatched or batched input: (C, *) or (N, C, *) with _n dims *."""
        if input.ndim not in (self._n + 1, self._n + 2):
            raise ValueError(f"[{type(self).__name__}] expects a {self._n + 1}-d or {self._n + 2}-d input, got "
                             f"shape {tuple(input.shape)}")
        return F.pad(input, self.padding, mode=self._mode)

    def extra_repr(self) -> str:
        return str(self.padding)


class ReflectionPad1d(_ModePad, record_config=True):
    """Pads the last dim of (C, W) or (N, C, W) with its mirror image, the edge not repeated:
    padding = int or (left, right), each smaller than W."""

    _n = 1


class ReflectionPad2d(_ModePad, record_config=True):
    """Pads the last two dims of (C, H, W) or (N, C, H, W) with their mirror image, the edge not repeated:
    padding = int or (left, right, top, bottom), each smaller than its dim."""


class ReplicationPad1d(_ModePad, record_config=True):
    """Pads the last dim of (C, W) or (N, C, W) by repeating its edge values: padding = int or (left, right)."""

    _n = 1
    _mode = "replicate"


class ReplicationPad2d(_ModePad, record_config=True):
    """Pads the last two dims of (C, H, W) or (N, C, H, W) by repeating their edge values:
    padding = int or (left, right, top, bottom)."""

    _mode = "replicate"


class CircularPad1d(_ModePad, record_config=True):
    """Pads the last dim of (C, W) or (N, C, W) with values wrapped around from the other end:
    padding = int or (left, right), each at most W."""

    _n = 1
    _mode = "circular"


class CircularPad2d(_ModePad, record_config=True):
    """Pads the last two dims of (C, H, W) or (N, C, H, W) with values wrapped around from the other end:
    padding = int or (left, right, top, bottom), each at most its dim."""

    _mode = "circular"


class ReflectionPad3d(_ModePad, record_config=True):
    """Pads the last three dims of (C, D, H, W) or (N, C, D, H, W) with their mirror image, the edge not
    repeated: padding = int or (left, right, top, bottom, front, back), each smaller than its dim."""

    _n = 3


class ReplicationPad3d(_ModePad, record_config=True):
    """Pads the last three dims of (C, D, H, W) or (N, C, D, H, W) by repeating their edge values."""

    _n = 3
    _mode = "replicate"


class CircularPad3d(_ModePad, record_config=True):
    """Pads the last three dims of (C, D, H, W) or (N, C, D, H, W) with values wrapped around from the other
    end: each padding at most its dim."""

    _n = 3
    _mode = "circular"


class Unfold(Module, record_config=True):
    """Sliding blocks of (N, C, H, W) input as (N, C * kh * kw, L) columns (F.unfold)."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, input):
        """unfold(input, ...)."""
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)


class Fold(Module, record_config=True):
    """Sums (N, C * kh * kw, L) columns back into an (N, C, *output_size) image (F.fold)."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):
        """fold(input, ...)."""
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)


class CosineSimilarity(Module, record_config=True):
    """Cosine similarity of two inputs along ``dim`` (norms clamped below by ``eps``)."""

    def __init__(self, dim: int = 1, eps: float = 1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        """cosine_similarity(x1, x2, dim, eps)."""
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module, record_config=True):
    """||x1 - x2 + eps||_p over the last dim."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        """pairwise_distance(x1, x2, p, eps, keepdim)."""
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
