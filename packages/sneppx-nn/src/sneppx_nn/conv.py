"""Convolution layers: Conv1d/2d/3d and ConvTranspose1d/2d/3d (PyTorch's signatures and state)."""

from __future__ import annotations

import math

import sneppx_core as sx
import sneppx_core.functional as F

from . import init
from .module import Module
from .parameter import Parameter

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _tuple(value, n: int, layer: str, name: str) -> tuple:
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,) * n
    out = tuple(value)
    if len(out) != n or not all(isinstance(v, int) and not isinstance(v, bool) for v in out):
        raise ValueError(f"[{layer}] {name} must be an int or a tuple of {n} ints, got {value!r}")
    return out


class _ConvNd(Module):
    """Shared construction of the convolution layers: checks, parameters and PyTorch's initialisation."""

    _nsp = 2
    _transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode,
                 output_padding, device, dtype):
        super().__init__()
        name, n = type(self).__name__, self._nsp
        for key, v in (("in_channels", in_channels), ("out_channels", out_channels), ("groups", groups)):
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ValueError(f"[{name}] {key} must be a positive int, got {v!r}")
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"[{name}] in_channels {in_channels} and out_channels {out_channels} must be divisible "
                             f"by groups {groups}")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"[{name}] padding_mode must be one of {_PADDING_MODES}, got {padding_mode!r}")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = _tuple(kernel_size, n, name, "kernel_size")
        self.stride = _tuple(stride, n, name, "stride")
        self.dilation = _tuple(dilation, n, name, "dilation")
        self.output_padding = _tuple(output_padding, n, name, "output_padding")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"[{name}] padding must be 'same', 'valid', an int or a tuple, got {padding!r}")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError(f"[{name}] padding='same' is not supported for strided convolutions")
            self.padding = padding
        else:
            self.padding = _tuple(padding, n, name, "padding")
        self.padding_mode = padding_mode
        if self._transposed:
            shape = (in_channels, out_channels // groups) + self.kernel_size
        else:
            shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = Parameter(sx.empty(shape, dtype=dtype, device=device))
        self.bias = Parameter(sx.empty((out_channels,), dtype=dtype, device=device)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """weight ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (He uniform with a = sqrt(5)), bias likewise."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1] * math.prod(self.kernel_size)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0
            init.uniform_(self.bias, -bound, bound)

    def _check_input(self, input) -> None:
        n = self._nsp
        if input.ndim not in (n + 1, n + 2) or input.shape[-n - 1] != self.in_channels:
            dims = ("L", "H, W", "D, H, W")[n - 1]
            raise ValueError(f"[{type(self).__name__}] expected input (N, {self.in_channels}, {dims}) or "
                             f"({self.in_channels}, {dims}), got shape {tuple(input.shape)}")

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * self._nsp:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * self._nsp:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * self._nsp:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, 0, device, dtype)

    def forward(self, input):
        """The convolution of ``input`` with ``weight`` plus ``bias``."""
        self._check_input(input)
        fn = (F.conv1d, F.conv2d, F.conv3d)[self._nsp - 1]
        if self.padding_mode == "zeros":
            return fn(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)
        if self.padding == "same":
            total = [d * (k - 1) for d, k in zip(self.dilation, self.kernel_size)]
            pads = tuple(v for t in reversed(total) for v in (t // 2, t - t // 2))
        elif self.padding == "valid":
            pads = (0,) * (2 * self._nsp)
        else:
            pads = tuple(p for p in reversed(self.padding) for _ in range(2))
        x = F.pad(input, pads, mode=self.padding_mode)
        return fn(x, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)


class Conv1d(_Conv, record_config=True):
    """1-d convolution over (N, C_in, L) input (or unbatched (C_in, L)).

    out[n, o] = bias[o] + sum_c weight[o, c] (*) x[n, c], a cross-correlation with ``stride``, ``padding``
    (int, tuple, "same" or "valid"; ``padding_mode`` zeros/reflect/replicate/circular), ``dilation`` and
    ``groups``. ``weight``: (out_channels, in_channels / groups, kernel_size); ``bias``: (out_channels,).
    L_out = floor((L + 2 padding - dilation (kernel_size - 1) - 1) / stride) + 1.
    """

    _nsp = 1


class Conv2d(_Conv, record_config=True):
    """2-d convolution over (N, C_in, H, W) input (or unbatched (C_in, H, W)); see Conv1d.

    ``weight``: (out_channels, in_channels / groups, kh, kw). ``groups = in_channels`` gives a depthwise
    convolution.
    """

    _nsp = 2


class Conv3d(_Conv, record_config=True):
    """3-d convolution over (N, C_in, D, H, W) input (or unbatched (C_in, D, H, W)); see Conv1d.

    ``weight``: (out_channels, in_channels / groups, kd, kh, kw).
    """

    _nsp = 3


class _ConvTranspose(_ConvNd):
    _transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f"[{type(self).__name__}] only padding_mode='zeros' is supported, got {padding_mode!r}")
        if isinstance(padding, str):
            raise ValueError(f"[{type(self).__name__}] padding must be an int or a tuple, got {padding!r}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, output_padding, device, dtype)

    def forward(self, input, output_size=None):
        """The transposed convolution of ``input``; ``output_size`` picks output_padding to reach that size."""
        self._check_input(input)
        op = self.output_padding
        if output_size is not None:
            want = tuple(output_size)[-self._nsp:]
            base = [(input.shape[-self._nsp + i] - 1) * s - 2 * p + d * (k - 1) + 1 for i, (s, p, d, k) in
                    enumerate(zip(self.stride, self.padding, self.dilation, self.kernel_size))]
            op = tuple(w - b for w, b in zip(want, base))
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[self._nsp - 1]
        return fn(input, self.weight, self.bias, self.stride, self.padding, op, self.groups, self.dilation)


class ConvTranspose1d(_ConvTranspose, record_config=True):
    """Transposed 1-d convolution (the input-gradient of Conv1d) over (N, C_in, L) input.

    ``weight``: (in_channels, out_channels / groups, kernel_size).
    L_out = (L - 1) stride - 2 padding + dilation (kernel_size - 1) + output_padding + 1.
    """

    _nsp = 1


class ConvTranspose2d(_ConvTranspose, record_config=True):
    """Transposed 2-d convolution over (N, C_in, H, W) input; ``weight``: (in_channels, out_channels / groups,
    kh, kw); output size as in ConvTranspose1d per spatial dim."""

    _nsp = 2


class ConvTranspose3d(_ConvTranspose, record_config=True):
    """Transposed 3-d convolution over (N, C_in, D, H, W) input; ``weight``: (in_channels, out_channels / groups,
    kd, kh, kw); output size as in ConvTranspose1d per spatial dim."""

    _nsp = 3
