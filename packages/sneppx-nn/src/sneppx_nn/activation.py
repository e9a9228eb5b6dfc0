"""Elementwise activation layers and softmax layers."""

from __future__ import annotations

import math
import warnings

import sneppx_core.functional as F

from .module import Module


class ReLU(Module, record_config=True):
    """relu(x) = max(x, 0). ``inplace`` is accepted for compatibility; the result is a new tensor."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        """max(input, 0)."""
        return F.relu(input)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class GELU(Module, record_config=True):
    """gelu(x) = x * Phi(x), Phi the standard normal CDF (``approximate="none"``), or the tanh form
    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (``approximate="tanh"``)."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"[GELU] approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, input):
        """gelu(input)."""
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class SiLU(Module, record_config=True):
    """silu(x) = x * sigmoid(x) (a.k.a. swish)."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        """input * sigmoid(input)."""
        return F.silu(input)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class Tanh(Module, record_config=True):
    """tanh(x) = (e^x - e^-x) / (e^x + e^-x)."""

    def forward(self, input):
        """tanh(input)."""
        return F.tanh(input)


class Sigmoid(Module, record_config=True):
    """sigmoid(x) = 1 / (1 + e^-x)."""

    def forward(self, input):
        """sigmoid(input)."""
        return F.sigmoid(input)


class LeakyReLU(Module, record_config=True):
    """leaky_relu(x) = x for x >= 0, negative_slope * x otherwise."""

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        super().__init__()
        if isinstance(negative_slope, bool) or not isinstance(negative_slope, (int, float)) \
                or not math.isfinite(negative_slope):
            raise ValueError(f"[LeakyReLU] negative_slope must be a finite number, got {negative_slope!r}")
        self.negative_slope, self.inplace = float(negative_slope), inplace

    def forward(self, input):
        """leaky_relu(input, negative_slope)."""
        return F.leaky_relu(input, self.negative_slope)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


def _legacy_dim(name: str, ndim: int) -> int:
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated; pass dim explicitly", UserWarning,
                  stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


class Softmax(Module, record_config=True):
    """softmax(x)_i = exp(x_i) / sum_j exp(x_j) along ``dim`` (PyTorch's legacy choice, with a
    warning, when ``dim`` is None)."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        """softmax(input, dim)."""
        dim = self.dim if self.dim is not None else _legacy_dim("softmax", input.ndim)
        return F.softmax(input, dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmin(Module, record_config=True):
    """softmin(x) = softmax(-x) along ``dim`` (PyTorch's legacy choice, with a warning, when ``dim`` is None)."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        """softmin(input, dim)."""
        dim = self.dim if self.dim is not None else _legacy_dim("softmin", input.ndim)
        return F.softmin(input, dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax2d(Module, record_config=True):
    """softmax over the channels of (N, C, H, W) or (C, H, W) input (dim -3)."""

    def forward(self, input):
        """softmax(input, -3)."""
        if input.ndim not in (3, 4):
            raise ValueError(f"[Softmax2d] expected 3-D or 4-D input, got shape {tuple(input.shape)}")
        return F.softmax(input, -3)


class LogSoftmax(Module, record_config=True):
    """log_softmax(x)_i = x_i - log sum_j exp(x_j) along ``dim``."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        """log_softmax(input, dim)."""
        dim = self.dim if self.dim is not None else _legacy_dim("log_softmax", input.ndim)
        return F.log_softmax(input, dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"
