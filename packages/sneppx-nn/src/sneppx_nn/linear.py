"""Affine and shape layers: Identity, Linear, Bilinear, Flatten, Unflatten."""

from __future__ import annotations

import math

import sneppx_core as sx
import sneppx_core.functional as F

from . import init
from .module import Module
from .parameter import Parameter


def _check_features(layer: str, **sizes) -> None:
    for name, v in sizes.items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"[{layer}] {name} must be a non-negative int, got {v!r}")


class Identity(Module, record_config=True):
    """Returns its input unchanged; any constructor arguments are ignored."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        """Returns ``input``."""
        return input


class Linear(Module, record_config=True):
    """Affine map ``y = x @ W.T + b`` over the last dim.

    Args:
        in_features, out_features: sizes of the last dim of input and output.
        bias: learn ``b`` (shape (out_features,)).
        device, dtype: where and how the parameters are created.

    ``weight`` has shape (out_features, in_features). Both are initialised from
    U(-1/sqrt(in_features), 1/sqrt(in_features)) as in PyTorch (He uniform with a = sqrt(5)).
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None):
        super().__init__()
        _check_features("Linear", in_features=in_features, out_features=out_features)
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(sx.empty((out_features, in_features), dtype=dtype, device=device))
        bias_t = sx.empty((out_features,), dtype=dtype, device=device) if bias else None
        self.bias = Parameter(bias_t) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draws the weight and bias with PyTorch's default scheme."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.in_features
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        """``input @ weight.T + bias`` for input (..., in_features)."""
        if input.ndim == 0 or input.shape[-1] != self.in_features:
            raise ValueError(f"[Linear] expected input (..., {self.in_features}), got shape {tuple(input.shape)}")
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Bilinear(Module, record_config=True):
    """Bilinear map ``y_k = x1 @ W_k @ x2 + b_k``.

    Args:
        in1_features, in2_features, out_features: sizes of the last dims of x1, x2 and y.
        bias: learn ``b`` (shape (out_features,)).

    ``weight`` has shape (out_features, in1_features, in2_features); weight and bias are drawn from
    U(-1/sqrt(in1_features), 1/sqrt(in1_features)) as in PyTorch.
    """

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True,
                 device=None, dtype=None):
        super().__init__()
        _check_features("Bilinear", in1_features=in1_features, in2_features=in2_features, out_features=out_features)
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        self.weight = Parameter(sx.empty((out_features, in1_features, in2_features), dtype=dtype, device=device))
        self.bias = Parameter(sx.empty((out_features,), dtype=dtype, device=device)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draws weight and bias from U(-1/sqrt(in1), 1/sqrt(in1))."""
        bound = 1 / math.sqrt(self.in1_features) if self.in1_features > 0 else 0.0
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        """y[..., k] = sum_ij x1[..., i] W[k, i, j] x2[..., j] + b[k]."""
        if input1.shape[:-1] != input2.shape[:-1] or input1.shape[-1] != self.in1_features \
                or input2.shape[-1] != self.in2_features:
            raise ValueError(f"[Bilinear] expected inputs (..., {self.in1_features}) and (..., {self.in2_features}) "
                             f"with equal leading dims, got {tuple(input1.shape)} and {tuple(input2.shape)}")
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class Flatten(Module, record_config=True):
    """Flattens dims ``start_dim`` .. ``end_dim`` into one (default: all but the batch dim)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        """``input.flatten(start_dim, end_dim)``."""
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module, record_config=True):
    """Splits dim ``dim`` into the shape ``unflattened_size`` (whose product must equal its size)."""

    def __init__(self, dim: int, unflattened_size):
        super().__init__()
        if not isinstance(unflattened_size, (tuple, list)) or not all(isinstance(s, int) for s in unflattened_size):
            raise TypeError(f"[Unflatten] unflattened_size must be a tuple of ints, got {unflattened_size!r}")
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input):
        """``input.unflatten(dim, unflattened_size)``."""
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
