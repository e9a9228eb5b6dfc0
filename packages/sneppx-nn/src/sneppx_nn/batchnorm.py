"""Batch-statistics normalisation layers: BatchNorm1d/2d/3d and InstanceNorm1d/2d/3d (PyTorch's buffers and
state_dict keys: weight, bias, running_mean, running_var, num_batches_tracked)."""

from __future__ import annotations

import sneppx_core as sx
import sneppx_core.functional as F

from .module import Module
from .parameter import Parameter


class _NormBase(Module):
    """Parameters and running statistics shared by the batch and instance norms."""

    _dims: tuple = ()

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None):
        super().__init__()
        name = type(self).__name__
        if isinstance(num_features, bool) or not isinstance(num_features, int) or num_features <= 0:
            raise ValueError(f"[{name}] num_features must be a positive int, got {num_features!r}")
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Parameter(sx.ones((num_features,), dtype=dtype, device=device))
            self.bias = Parameter(sx.zeros((num_features,), dtype=dtype, device=device))
        else:
            self.weight, self.bias = None, None
        if track_running_stats:
            self.register_buffer("running_mean", sx.zeros((num_features,), dtype=dtype, device=device))
            self.register_buffer("running_var", sx.ones((num_features,), dtype=dtype, device=device))
            self.register_buffer("num_batches_tracked", sx.zeros((), dtype=sx.int64, device=device))
        else:
            self.running_mean = self.running_var = self.num_batches_tracked = None

    def reset_running_stats(self) -> None:
        """running_mean = 0, running_var = 1, num_batches_tracked = 0."""
        if self.track_running_stats:
            with sx.no_grad():
                self.running_mean.fill_(0.0)
                self.running_var.fill_(1.0)
                self.num_batches_tracked.fill_(0)

    def reset_parameters(self) -> None:
        """Resets the running statistics, and the affine weight to ones and bias to zeros."""
        self.reset_running_stats()
        if self.affine:
            with sx.no_grad():
                self.weight.fill_(1.0)
                self.bias.fill_(0.0)

    def _check_input(self, input) -> None:
        if input.ndim not in self._dims:
            raise ValueError(f"[{type(self).__name__}] expected {' or '.join(f'{d}-D' for d in self._dims)} input, "
                             f"got shape {tuple(input.shape)}")

    def _momentum(self) -> float:
        """The update factor: ``momentum``, or 1 / num_batches_tracked (a cumulative mean) when it is None."""
        if self.training and self.track_running_stats:
            with sx.no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:
                return 1.0 / float(self.num_batches_tracked.item())
        return 0.0 if self.momentum is None else self.momentum

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    def forward(self, input):
        """Batch statistics in training mode (updating the running ones), running statistics in eval mode."""
        self._check_input(input)
        if input.shape[1] != self.num_features:
            raise ValueError(f"[{type(self).__name__}] expected {self.num_features} channels (dim 1), got input "
                             f"{tuple(input.shape)}")
        momentum = self._momentum()
        use_batch = self.training or self.running_mean is None
        return F.batch_norm(input, self.running_mean, self.running_var, self.weight, self.bias, use_batch, momentum,
                            self.eps)


class BatchNorm1d(_BatchNorm, record_config=True):
    """Batch normalisation of (N, C) or (N, C, L) input per channel:

        y = (x - E[x]) / sqrt(Var[x] + eps) * weight + bias

    Training mode uses the batch statistics (biased variance) and updates running_mean / running_var with
    r = (1 - momentum) r + momentum * stat (unbiased variance; ``momentum=None``: cumulative mean); eval mode
    uses the running statistics. ``track_running_stats=False`` always uses batch statistics.
    """

    _dims = (2, 3)


class BatchNorm2d(_BatchNorm, record_config=True):
    """Batch normalisation of (N, C, H, W) input per channel; see BatchNorm1d."""

    _dims = (4,)


class BatchNorm3d(_BatchNorm, record_config=True):
    """Batch normalisation of (N, C, D, H, W) input per channel; see BatchNorm1d."""

    _dims = (5,)


class _InstanceNorm(_NormBase):
    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False, device=None,
                 dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)

    def forward(self, input):
        """Per-(sample, channel) statistics; running statistics in eval mode when tracked."""
        self._check_input(input)
        unbatched = input.ndim == self._dims[0]
        x = input.unsqueeze(0) if unbatched else input
        if x.shape[1] != self.num_features:
            raise ValueError(f"[{type(self).__name__}] expected {self.num_features} channels, got input "
                             f"{tuple(input.shape)}")
        momentum = 0.0 if self.momentum is None else self.momentum  # num_batches_tracked stays 0, as in PyTorch
        use_input_stats = self.training or not self.track_running_stats
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias, use_input_stats,
                              momentum, self.eps)
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm, record_config=True):
    """Instance normalisation of (N, C, L) or (C, L) input: each (sample, channel) normalised over L.
    ``affine`` and ``track_running_stats`` default to False, as in PyTorch."""

    _dims = (2, 3)


class InstanceNorm2d(_InstanceNorm, record_config=True):
    """Instance normalisation of (N, C, H, W) or (C, H, W) input over each channel's H x W positions."""

    _dims = (3, 4)


class InstanceNorm3d(_InstanceNorm, record_config=True):
    """Instance normalisation of (N, C, D, H, W) or (C, D, H, W) input over each channel's D x H x W positions."""

    _dims = (4, 5)
