"""Normalisation layers: LayerNorm, RMSNorm, GroupNorm, LocalResponseNorm and CrossMapLRN2d."""

from __future__ import annotations

import sneppx_core as sx
import sneppx_core.functional as F

from .module import Module
from .parameter import Parameter


def _shape(layer: str, normalized_shape) -> tuple:
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if not shape or not all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in shape):
        raise ValueError(f"[{layer}] normalized_shape must be a positive int or a tuple of them, "
                         f"got {normalized_shape!r}")
    return shape


def _check_input(layer: str, input, shape: tuple) -> None:
    if input.ndim < len(shape) or tuple(input.shape[-len(shape):]) != shape:
        raise ValueError(f"[{layer}] expected input (..., {', '.join(map(str, shape))}), "
                         f"got shape {tuple(input.shape)}")


class LayerNorm(Module, record_config=True):
    """Layer normalisation over the last ``len(normalized_shape)`` dims:

        y = (x - mean) / sqrt(var + eps) * weight + bias

    with the biased variance. ``weight`` starts at ones and ``bias`` at zeros; without
    ``elementwise_affine`` neither exists, with ``bias=False`` only the weight does.
    """

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 device=None, dtype=None):
        super().__init__()
        self.normalized_shape = _shape("LayerNorm", normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(sx.ones(self.normalized_shape, dtype=dtype, device=device))
            self.bias = Parameter(sx.zeros(self.normalized_shape, dtype=dtype, device=device)) if bias else None
        else:
            self.weight, self.bias = None, None

    def reset_parameters(self) -> None:
        """Sets the weight to ones and the bias to zeros."""
        with sx.no_grad():
            if self.weight is not None:
                self.weight.fill_(1.0)
            if self.bias is not None:
                self.bias.fill_(0.0)

    def forward(self, input):
        """layer_norm(input) over the trailing ``normalized_shape`` dims."""
        _check_input("LayerNorm", input, self.normalized_shape)
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class RMSNorm(Module, record_config=True):
    """Root-mean-square normalisation over the last ``len(normalized_shape)`` dims:

        y = x / sqrt(mean(x^2) + eps) * weight

    ``eps=None`` uses the machine epsilon of the input's dtype, as PyTorch does.
    """

    def __init__(self, normalized_shape, eps=None, elementwise_affine: bool = True, device=None, dtype=None):
        super().__init__()
        self.normalized_shape = _shape("RMSNorm", normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        w = Parameter(sx.ones(self.normalized_shape, dtype=dtype, device=device)) if elementwise_affine else None
        self.weight = w

    def reset_parameters(self) -> None:
        """Sets the weight to ones."""
        if self.weight is not None:
            with sx.no_grad():
                self.weight.fill_(1.0)

    def forward(self, input):
        """rms_norm(input) over the trailing ``normalized_shape`` dims."""
        _check_input("RMSNorm", input, self.normalized_shape)
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class GroupNorm(Module, record_config=True):
    """Group normalisation of (N, C, ...) input: the C channels split into ``num_groups`` groups, each
    (sample, group) normalised over its channels and positions, then y = x_hat * weight[c] + bias[c]
    (``affine``: weight starts at ones, bias at zeros)."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True, device=None,
                 dtype=None):
        super().__init__()
        if num_groups <= 0 or num_channels % num_groups:
            raise ValueError(f"[GroupNorm] num_channels {num_channels} must be divisible by num_groups {num_groups}")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        if affine:
            self.weight = Parameter(sx.ones((num_channels,), dtype=dtype, device=device))
            self.bias = Parameter(sx.zeros((num_channels,), dtype=dtype, device=device))
        else:
            self.weight, self.bias = None, None

    def reset_parameters(self) -> None:
        """Sets the weight to ones and the bias to zeros."""
        if self.affine:
            with sx.no_grad():
                self.weight.fill_(1.0)
                self.bias.fill_(0.0)

    def forward(self, input):
        """group_norm(input, num_groups, weight, bias, eps)."""
        if input.ndim < 2 or input.shape[1] != self.num_channels:
            raise ValueError(f"[GroupNorm] expected input (N, {self.num_channels}, ...), "
                             f"got shape {tuple(input.shape)}")
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"


class LocalResponseNorm(Module, record_config=True):
    """Normalises each channel of (N, C, *) input by the squares of its ``size`` neighbouring channels:
    local_response_norm(input, size, alpha, beta, k) (AlexNet)."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        """local_response_norm(input, size, alpha, beta, k)."""
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class CrossMapLRN2d(Module, record_config=True):
    """PyTorch's legacy cross-channel LRN of (N, C, H, W) input (from Lua Torch): y_c = x_c * (k + alpha / size *
    s_c) ** -beta, where s_c sums x_j^2 over the channels j in [c - p + 1, c + p - 1] (clipped to [0, C)),
    p = int((size - 1) / 2 + 1), plus channel 0 for every c >= p.

    This is what PyTorch's CrossMapLRN2d computes: its running-sum recurrence never drops channel 0 and has
    2 p - 1 channels in the window (``size`` + 1 for even ``size``), so it equals LocalResponseNorm only when
    the window covers every channel. The gradient here is the exact gradient of that output (PyTorch's
    hand-written backward is that of a different window and can differ).
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        """x * (k + alpha / size * s) ** -beta with the channel sums s described above."""
        if input.ndim != 4 or not input.is_floating_point():
            raise ValueError(f"[CrossMapLRN2d] expected 4-D floating-point input (N, C, H, W), got shape "
                             f"{tuple(input.shape)} of dtype {input.dtype}")
        c, p = input.shape[1], int((self.size - 1) / 2 + 1)
        sq = input * input
        padded = F.pad(sq, (0, 0, 0, 0, p - 1, p - 1))
        sums = padded[:, 0:c]
        for j in range(1, 2 * p - 1):
            sums = sums + padded[:, j:j + c]
        first = (sx.arange(c, device=input.device) >= p).to(input.dtype).reshape((1, c, 1, 1)) * sq[:, 0:1]
        return input * ((sums + first) * (self.alpha / self.size) + self.k) ** -self.beta

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
