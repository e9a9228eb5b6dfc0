"""SyncBatchNorm: batch normalisation whose training statistics cover the whole batch across the processes of
a distributed group (PyTorch's ``nn.SyncBatchNorm``).

Alone (no initialised ``sneppx_distributed`` group, one process, or eval mode) it is exactly ``BatchNorm``. In a
group it is an ``autograd.Function``: forward all-reduces each channel's count, sum and sum of squares (in
float64) and normalises with the global mean and biased variance, updating the running statistics with the
unbiased global variance; backward all-reduces each channel's sum of the output gradient and of its product with
the normalised input, so the input gradient is the full batch's. The weight and bias gradients stay each
process's own, as in PyTorch, where ``DistributedDataParallel`` averages them. Every process must run the layer
the same number of times in the same order (the collectives pair up). The package needs nothing from
``sneppx_distributed`` to import: the layer looks the distributed package up when it runs.
"""

from __future__ import annotations

import sys

import sneppx_core as sx
from sneppx_core.autograd import Function

from .batchnorm import _BatchNorm


def _group_size(group):
    """The size of the distributed group in use (1 without an initialised ``sneppx_distributed``)."""
    dist = sys.modules.get("sneppx_distributed")
    if dist is None or not dist.is_initialized():
        return 1, None
    return dist.get_world_size(group), dist


def _channel_sums(*tensors, dims):
    """The per-channel sums of each tensor, in float64, packed into one vector (one all_reduce)."""
    return sx.cat([t.to(sx.float64).sum(dims) for t in tensors])


class _SyncBatchNormFn(Function):
    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, eps, momentum, group, dist):
        c = x.shape[1]
        dims = [0] + list(range(2, x.ndim))
        count = x.numel() // c
        stats = sx.cat([_channel_sums(x, x * x, dims=dims), sx.tensor([float(count)], dtype=sx.float64)])
        dist.all_reduce(stats, group=group)
        n = float(stats[2 * c].item())
        if n <= 1:
            raise ValueError(f"[SyncBatchNorm] expected more than 1 value per channel over the group when training, "
                             f"got {int(n)} for input {tuple(x.shape)}")
        mean = stats[:c] / n
        var = (stats[c:2 * c] / n - mean * mean).clamp(min=0.0)
        invstd = (var + eps).rsqrt()
        shape = [1, c] + [1] * (x.ndim - 2)
        xhat = (x - mean.to(x.dtype).reshape(shape)) * invstd.to(x.dtype).reshape(shape)
        y = xhat if weight is None else xhat * weight.reshape(shape)
        if bias is not None:
            y = y + bias.reshape(shape)
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(mean.to(running_mean.dtype) * momentum)
            running_var.mul_(1 - momentum).add_((var * (n / (n - 1))).to(running_var.dtype) * momentum)
        ctx.save_for_backward(xhat, weight, invstd)
        ctx.n, ctx.group, ctx.dist, ctx.has_bias = n, group, dist, bias is not None
        return y

    @staticmethod
    def backward(ctx, gy):
        xhat, weight, invstd = ctx.saved_tensors
        c = xhat.shape[1]
        dims = [0] + list(range(2, xhat.ndim))
        shape = [1, c] + [1] * (xhat.ndim - 2)
        local = _channel_sums(gy, gy * xhat, dims=dims)
        total = local.clone()
        with sx.no_grad():
            ctx.dist.all_reduce(total, group=ctx.group)
        sum_dy, sum_dy_xhat = total[:c] / ctx.n, total[c:] / ctx.n
        scale = invstd if weight is None else invstd * weight.to(sx.float64)
        gx = (gy - sum_dy.to(gy.dtype).reshape(shape) - xhat * sum_dy_xhat.to(gy.dtype).reshape(shape)) \
            * scale.to(gy.dtype).reshape(shape)
        gw = None if weight is None else local[c:].to(weight.dtype)
        gb = local[:c].to(gy.dtype) if ctx.has_bias else None
        return gx, gw, gb, None, None, None, None, None, None


class SyncBatchNorm(_BatchNorm, record_config=True):
    """Batch normalisation of (N, C, ...) input whose training statistics are those of the whole batch across
    the processes of ``process_group`` (the default group when None); see the module's note. Alone or in eval
    mode it is ``BatchNorm``. ``convert_sync_batchnorm`` swaps a model's batch norms for it."""

    _dims = (2, 3, 4, 5)

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        self.process_group = process_group

    def forward(self, input):
        """Group statistics in training mode within a group of several processes, else BatchNorm's."""
        size, dist = _group_size(self.process_group) if self.training else (1, None)
        if size == 1:
            return super().forward(input)
        self._check_input(input)
        if input.shape[1] != self.num_features:
            raise ValueError(f"[SyncBatchNorm] expected {self.num_features} channels (dim 1), got input "
                             f"{tuple(input.shape)}")
        momentum = self._momentum()
        stats = (self.running_mean, self.running_var) if self.track_running_stats else (None, None)
        return _SyncBatchNormFn.apply(input, self.weight, self.bias, *stats, self.eps, momentum,
                                      self.process_group, dist)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every BatchNorm1d/2d/3d replaced by a SyncBatchNorm holding its parameters and
        buffers (the same tensors); returns the converted module (a new one when ``module`` is a batch norm)."""
        out = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            out = cls(module.num_features, module.eps, module.momentum, module.affine, module.track_running_stats,
                      process_group)
            if module.affine:
                out.weight, out.bias = module.weight, module.bias
            if module.track_running_stats:
                out.running_mean, out.running_var = module.running_mean, module.running_var
                out.num_batches_tracked = module.num_batches_tracked
            out.train(module.training)
        for name, child in list(module.named_children()):
            setattr(out, name, cls.convert_sync_batchnorm(child, process_group))
        return out
