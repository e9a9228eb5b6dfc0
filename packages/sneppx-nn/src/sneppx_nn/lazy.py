"""Lazy layers: ``LazyLinear``, ``LazyConv1d/2d/3d``, ``LazyConvTranspose1d/2d/3d``, ``LazyBatchNorm1d/2d/3d`` and
``LazyInstanceNorm1d/2d/3d`` infer their input size (``in_features``, ``in_channels`` or ``num_features``) from
the first input, as PyTorch's do.

Until then their parameters and buffers are empty placeholders. The first call (or ``load_state_dict``, from the
shapes it is given) builds the layer the lazy one stands for with that size, which draws the same initial values
as building it directly would, moves each value into the placeholder (so an optimizer made beforehand holds the
right objects), and turns the module into that layer: a ``LazyLinear`` becomes a ``Linear``. As in PyTorch, make
the optimizer after a first forward pass, or at least before its first step.
"""

from __future__ import annotations

import sneppx_core as sx

from .batchnorm import (
    BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, _InstanceNorm,
)
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .linear import Linear
from .module import Module
from .parameter import Parameter

_OWN = ("_parameters", "_buffers", "_modules", "_forward_pre_hooks", "_forward_hooks", "training",
        "_non_persistent_buffers")


class _LazyMixin(Module):
    """Placeholders until the input size is known, then the layer ``cls_to_become`` built with it."""

    cls_to_become: type = Module
    _size_arg = ""  # the constructor argument the input decides

    def _lazy_init(self, params, buffers, device, dtype, **kwargs):
        Module.__init__(self)
        self._lazy_kwargs = dict(kwargs, device=device, dtype=dtype)
        for name in params:
            self._parameters[name] = Parameter(sx.empty(0, dtype=dtype, device=device))
        for name in buffers:
            self._buffers[name] = sx.empty(0, dtype=dtype, device=device)

    def has_uninitialized_params(self) -> bool:
        """True until the first input (or a loaded state_dict) has given the size."""
        return True

    def _size_of(self, input) -> int:
        raise NotImplementedError

    def _size_from_state(self, state: dict, prefix: str):
        raise NotImplementedError

    def initialize_parameters(self, size: int) -> None:
        """Builds ``cls_to_become`` with ``size`` and becomes it, keeping the parameter objects."""
        like = next(iter(self._parameters.values()), None)
        if like is None:
            like = next(iter(self._buffers.values()), None)
        kwargs = dict(self._lazy_kwargs)
        if like is not None:
            kwargs.update(dtype=like.dtype, device=like.device)  # follows .to() calls made before
        with sx.no_grad():
            real = self.cls_to_become(**{self._size_arg: size}, **kwargs)
        for store in ("_parameters", "_buffers"):
            mine = self.__dict__[store]
            for name, value in real.__dict__[store].items():
                if value is not None and mine.get(name) is not None:
                    mine[name]._set_data(value.detach())
                else:
                    mine[name] = value
        for key, value in real.__dict__.items():
            if key not in _OWN:
                self.__dict__[key] = value
        del self.__dict__["_lazy_kwargs"]
        self.__class__ = self.cls_to_become

    def __call__(self, input, *args, **kwargs):
        self.initialize_parameters(self._size_of(input))
        return self(input, *args, **kwargs)

    def _materialize_from(self, state, prefix: str) -> None:
        """Called by ``load_state_dict``: takes the size from the state's shapes when they hold it."""
        size = self._size_from_state(state, prefix)
        if size is not None:
            self.initialize_parameters(int(size))

    def extra_repr(self) -> str:
        return "<uninitialized>"


def _lazy_linear_init(self, out_features, bias=True, device=None, dtype=None):
    self._lazy_init(("weight", "bias") if bias else ("weight",), (), device, dtype, out_features=out_features,
                    bias=bias)
    self.out_features = out_features


class LazyLinear(_LazyMixin, Linear):
    """A ``Linear`` whose ``in_features`` is the last dim of its first input (it becomes a Linear then)."""

    cls_to_become, _size_arg = Linear, "in_features"
    __init__ = _lazy_linear_init

    def _size_of(self, input):
        return input.shape[-1]

    def _size_from_state(self, state, prefix):
        w = state.get(prefix + "weight")
        return None if w is None else w.shape[1]


class _LazyConv(_LazyMixin):
    _size_arg = "in_channels"

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None, **extra):
        self._lazy_init(("weight", "bias") if bias else ("weight",), (), device, dtype, out_channels=out_channels,
                        kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation, groups=groups,
                        bias=bias, padding_mode=padding_mode, **extra)
        self.out_channels, self.groups = out_channels, groups

    def _size_of(self, input):
        nsp = self.cls_to_become._nsp
        return input.shape[1] if input.ndim == nsp + 2 else input.shape[0]

    def _size_from_state(self, state, prefix):
        w = state.get(prefix + "weight")
        if w is None:
            return None
        return w.shape[0] if self.cls_to_become._transposed else w.shape[1] * self.groups


class _LazyConvTranspose(_LazyConv):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True,
                 dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode, device,
                         dtype, output_padding=output_padding)


class LazyConv1d(_LazyConv, Conv1d):
    """A ``Conv1d`` whose ``in_channels`` comes from its first input."""

    cls_to_become = Conv1d


class LazyConv2d(_LazyConv, Conv2d):
    """A ``Conv2d`` whose ``in_channels`` comes from its first input."""

    cls_to_become = Conv2d


class LazyConv3d(_LazyConv, Conv3d):
    """A ``Conv3d`` whose ``in_channels`` comes from its first input."""

    cls_to_become = Conv3d


class LazyConvTranspose1d(_LazyConvTranspose, ConvTranspose1d):
    """A ``ConvTranspose1d`` whose ``in_channels`` comes from its first input."""

    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyConvTranspose, ConvTranspose2d):
    """A ``ConvTranspose2d`` whose ``in_channels`` comes from its first input."""

    cls_to_become = ConvTranspose2d


class LazyConvTranspose3d(_LazyConvTranspose, ConvTranspose3d):
    """A ``ConvTranspose3d`` whose ``in_channels`` comes from its first input."""

    cls_to_become = ConvTranspose3d


class _LazyNorm(_LazyMixin):
    _size_arg = "num_features"

    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None):
        track = track_running_stats
        self._lazy_init(("weight", "bias") if affine else (), ("running_mean", "running_var") if track else (),
                        device, dtype, eps=eps, momentum=momentum, affine=affine, track_running_stats=track)
        if track:
            self._buffers["num_batches_tracked"] = sx.zeros((), dtype=sx.int64, device=device)
        self.eps, self.momentum, self.affine, self.track_running_stats = eps, momentum, affine, track

    def _size_of(self, input):
        unbatched = issubclass(self.cls_to_become, _InstanceNorm) and input.ndim == self.cls_to_become._dims[0]
        return input.shape[0] if unbatched else input.shape[1]

    def _size_from_state(self, state, prefix):
        for name in ("weight", "running_mean"):
            if prefix + name in state:
                return state[prefix + name].shape[0]
        return None


class LazyBatchNorm1d(_LazyNorm, BatchNorm1d):
    """A ``BatchNorm1d`` whose ``num_features`` comes from its first input."""

    cls_to_become = BatchNorm1d


class LazyBatchNorm2d(_LazyNorm, BatchNorm2d):
    """A ``BatchNorm2d`` whose ``num_features`` comes from its first input."""

    cls_to_become = BatchNorm2d


class LazyBatchNorm3d(_LazyNorm, BatchNorm3d):
    """A ``BatchNorm3d`` whose ``num_features`` comes from its first input."""

    cls_to_become = BatchNorm3d


class LazyInstanceNorm1d(_LazyNorm, InstanceNorm1d):
    """An ``InstanceNorm1d`` whose ``num_features`` comes from its first input (batched or not). As in PyTorch,
    ``affine`` and ``track_running_stats`` default to True here, where InstanceNorm1d's default to False."""

    cls_to_become = InstanceNorm1d


class LazyInstanceNorm2d(_LazyNorm, InstanceNorm2d):
    """An ``InstanceNorm2d`` whose ``num_features`` comes from its first input; see LazyInstanceNorm1d."""

    cls_to_become = InstanceNorm2d


class LazyInstanceNorm3d(_LazyNorm, InstanceNorm3d):
    """An ``InstanceNorm3d`` whose ``num_features`` comes from its first input; see LazyInstanceNorm1d."""

    cls_to_become = InstanceNorm3d


__all__ = [
    "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
    "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d",
    "LazyInstanceNorm2d", "LazyInstanceNorm3d",
]
