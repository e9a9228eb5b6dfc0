"""Pooling layers: MaxPool1d/2d/3d, AvgPool1d/2d/3d, AdaptiveAvgPool1d/2d/3d, AdaptiveMaxPool1d/2d/3d, MaxUnpool1d/2d/3d
and LPPool1d/2d/3d."""

from __future__ import annotations

import sneppx_core.functional as F

from .module import Module


class _MaxPoolNd(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd, record_config=True):
    """Maximum over sliding windows of (N, C, L) input; ``stride`` defaults to ``kernel_size``. With
    ``return_indices`` the forward returns (values, argmax offsets)."""

    def forward(self, input):
        """max_pool1d(input)."""
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                            self.return_indices)


class MaxPool2d(_MaxPoolNd, record_config=True):
    """Maximum over (kh, kw) windows of (N, C, H, W) input; see MaxPool1d."""

    def forward(self, input):
        """max_pool2d(input)."""
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                            self.return_indices)


class MaxPool3d(_MaxPoolNd, record_config=True):
    """Maximum over (kd, kh, kw) windows of (N, C, D, H, W) input; indices are flat offsets into each volume."""

    def forward(self, input):
        """max_pool3d(input)."""
        return F.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                            self.return_indices)


def _tuple(value, n):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * n


class _MaxUnpoolNd(Module):
    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        n = self._nsp  # PyTorch keeps these as tuples
        self.kernel_size = _tuple(kernel_size, n)
        self.stride = self.kernel_size if stride is None else _tuple(stride, n)
        self.padding = _tuple(padding, n)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd, record_config=True):
    """The partial inverse of MaxPool1d: ``forward(input, indices, output_size=None)`` puts each value at
    its index (from ``return_indices=True``) in a zero output."""

    _nsp = 1

    def forward(self, input, indices, output_size=None):
        """max_unpool1d(input, indices, ...)."""
        return F.max_unpool1d(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class MaxUnpool2d(_MaxUnpoolNd, record_config=True):
    """The partial inverse of MaxPool2d: ``forward(input, indices, output_size=None)`` puts each value at
    its index within the output plane (from ``return_indices=True``) in a zero output."""

    _nsp = 2

    def forward(self, input, indices, output_size=None):
        """max_unpool2d(input, indices, ...)."""
        return F.max_unpool2d(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class MaxUnpool3d(_MaxUnpoolNd, record_config=True):
    """The partial inverse of MaxPool3d: ``forward(input, indices, output_size=None)`` puts each value at
    its index within the output volume (from ``return_indices=True``) in a zero output."""

    _nsp = 3

    def forward(self, input, indices, output_size=None):
        """max_unpool3d(input, indices, ...)."""
        return F.max_unpool3d(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class _AvgPoolNd(Module):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.ceil_mode, self.count_include_pad = padding, ceil_mode, count_include_pad
        self.divisor_override = divisor_override

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPoolNd, record_config=True):
    """Mean over sliding windows of (N, C, L) input (``count_include_pad``: padding zeros count)."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
        super().__init__(kernel_size, stride, padding, ceil_mode, count_include_pad)

    def forward(self, input):
        """avg_pool1d(input)."""
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad)


class AvgPool2d(_AvgPoolNd, record_config=True):
    """Mean over (kh, kw) windows of (N, C, H, W) input; ``divisor_override`` replaces the window size."""

    def forward(self, input):
        """avg_pool2d(input)."""
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
                            self.divisor_override)


class AvgPool3d(_AvgPoolNd, record_config=True):
    """Mean over (kd, kh, kw) windows of (N, C, D, H, W) input; see AvgPool2d."""

    def forward(self, input):
        """avg_pool3d(input)."""
        return F.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
                            self.divisor_override)


class _LPPoolNd(Module):
    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.ceil_mode = norm_type, kernel_size, stride, ceil_mode

    def forward(self, input):
        """(sum of input ** norm_type over each window) ** (1 / norm_type)."""
        fn = (F.lp_pool1d, F.lp_pool2d, F.lp_pool3d)[self._nsp - 1]
        return fn(input, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd, record_config=True):
    """Power-average pooling of (N, C, L) input: (sum of x ** p over each window) ** (1 / p) with
    p = ``norm_type`` (1: sum pooling; large p approaches max pooling of |x|)."""

    _nsp = 1


class LPPool2d(_LPPoolNd, record_config=True):
    """Power-average pooling over (kh, kw) windows of (N, C, H, W) input; see LPPool1d."""

    _nsp = 2


class LPPool3d(_LPPoolNd, record_config=True):
    """Power-average pooling over (kd, kh, kw) windows of (N, C, D, H, W) input; see LPPool1d."""

    _nsp = 3


class _Adaptive(Module):
    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_Adaptive, record_config=True):
    """Mean over windows [floor(i L / out), ceil((i + 1) L / out)) for each output position i."""

    def __init__(self, output_size):
        super().__init__(output_size)

    def forward(self, input):
        """adaptive_avg_pool1d(input, output_size)."""
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_Adaptive, record_config=True):
    """Adaptive mean pooling of (N, C, H, W) input to ``output_size`` (None entries keep the input size);
    ``AdaptiveAvgPool2d(1)`` is global average pooling."""

    def __init__(self, output_size):
        super().__init__(output_size)

    def forward(self, input):
        """adaptive_avg_pool2d(input, output_size)."""
        return F.adaptive_avg_pool2d(input, self.output_size)


class AdaptiveMaxPool1d(_Adaptive, record_config=True):
    """Maximum over the adaptive windows of AdaptiveAvgPool1d."""

    def forward(self, input):
        """adaptive_max_pool1d(input, output_size)."""
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool2d(_Adaptive, record_config=True):
    """Maximum over the adaptive windows of AdaptiveAvgPool2d."""

    def forward(self, input):
        """adaptive_max_pool2d(input, output_size)."""
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)


class AdaptiveAvgPool3d(_Adaptive, record_config=True):
    """Adaptive mean pooling of (N, C, D, H, W) input to ``output_size`` (None entries keep the input size)."""

    def __init__(self, output_size):
        super().__init__(output_size)

    def forward(self, input):
        """adaptive_avg_pool3d(input, output_size)."""
        return F.adaptive_avg_pool3d(input, self.output_size)


class AdaptiveMaxPool3d(_Adaptive, record_config=True):
    """Maximum over the adaptive windows of AdaptiveAvgPool3d."""

    def forward(self, input):
        """adaptive_max_pool3d(input, output_size)."""
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)
