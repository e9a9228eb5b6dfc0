"""Fractional max pooling layers: FractionalMaxPool2d and FractionalMaxPool3d."""

from __future__ import annotations

import sneppx_core.functional as F

from .module import Module


def _tuple(value, n):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * n


class _FractionalMaxPoolNd(Module):
    _nsp = 2

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices=False, _random_samples=None):
        super().__init__()
        name, n = type(self).__name__, self._nsp
        self.kernel_size = _tuple(kernel_size, n)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _tuple(output_size, n) if output_size is not None else None
        self.output_ratio = _tuple(output_ratio, n) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"[{name}] requires specifying either an output size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError(f"[{name}] only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"[{name}] output_ratio must be between 0 and 1 (got {output_ratio})")

    def extra_repr(self) -> str:
        size = f"output_size={self.output_size}" if self.output_size is not None else \
            f"output_ratio={self.output_ratio}"
        return f"kernel_size={self.kernel_size}, {size}"


class FractionalMaxPool2d(_FractionalMaxPoolNd, record_config=True):
    """Fractional max pooling of (N, C, H, W) or (C, H, W) input (Graham, 2014): the maximum over
    (kh, kw) windows whose starts step pseudo-randomly so that the output has ``output_size`` (or
    int(size * ``output_ratio``), each ratio in (0, 1)).

    Along a dim of size L with O outputs, window i starts at floor((i + u) a) - floor(u a) with
    a = (L - k) / (O - 1) (the last window at L - k); u is drawn uniformly per (sample, channel) at each call,
    or fixed by the ``_random_samples`` buffer of shape (N, C, 2). With ``return_indices`` the forward returns
    (values, flat offsets y * W + x), which ``MaxUnpool2d`` accepts. Same samples, same result as PyTorch.
    """

    _nsp = 2

    def forward(self, input):
        """fractional_max_pool2d(input)."""
        return F.fractional_max_pool2d(input, self.kernel_size, self.output_size, self.output_ratio,
                                       self.return_indices, _random_samples=self._random_samples)


class FractionalMaxPool3d(_FractionalMaxPoolNd, record_config=True):
    """Fractional max pooling of (N, C, D, H, W) or (C, D, H, W) input over (kd, kh, kw) windows; see
    FractionalMaxPool2d. ``_random_samples`` has shape (N, C, 3); indices are flat offsets
    d * H * W + y * W + x into each volume.
    """

    _nsp = 3

    def forward(self, input):
        """fractional_max_pool3d(input)."""
        return F.fractional_max_pool3d(input, self.kernel_size, self.output_size, self.output_ratio,
                                       self.return_indices, _random_samples=self._random_samples)
