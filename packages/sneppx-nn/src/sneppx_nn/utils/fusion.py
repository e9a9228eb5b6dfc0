r"""Folding an eval-mode batch norm into the preceding convolution or linear layer, as
``torch.nn.utils.fuse_conv_bn_eval`` and friends.

With ``s = gamma / sqrt(running_var + eps)`` (per channel), ``bn(conv(x)) = conv'(x)`` where
``W' = W * s`` (along the output-channel dim) and ``b' = (b - running_mean) * s + beta``.
"""

from __future__ import annotations

import copy

import sneppx_core as sx

from ..parameter import Parameter


def _bn_defaults(rm, bn_w, bn_b, bias):
    ones, zeros = sx.ones_like(rm), sx.zeros_like(rm)
    return (zeros if bias is None else bias), (ones if bn_w is None else bn_w), (zeros if bn_b is None else bn_b)


def _check_eval(fn: str, layer, bn) -> None:
    if layer.training or bn.training:
        raise RuntimeError(f"[{fn}] fusion is only for eval mode: call .eval() on both modules first "
                           f"(training: {type(layer).__name__}={layer.training}, {type(bn).__name__}={bn.training})")
    if bn.running_mean is None or bn.running_var is None:
        raise RuntimeError(f"[{fn}] the batch norm has no running statistics (track_running_stats=False)")


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose: bool = False):
    """The weight and bias (as Parameters, dtypes kept) of the convolution that computes
    ``bn(conv(x))`` in eval mode; ``conv_b``, ``bn_w`` and ``bn_b`` may be None. ``transpose`` is for
    ConvTranspose weights, whose output channels are dim 1."""
    if conv_w.ndim < 3 or tuple(bn_rm.shape) != (conv_w.shape[1 if transpose else 0],):
        raise ValueError(f"[fuse_conv_bn_weights] a conv weight of shape {tuple(conv_w.shape)} (transpose={transpose})"
                         f" does not match batch-norm statistics of shape {tuple(bn_rm.shape)}")
    w_dtype = conv_w.dtype
    b_dtype = w_dtype if conv_b is None else conv_b.dtype
    conv_b, bn_w, bn_b = _bn_defaults(bn_rm, bn_w, bn_b, conv_b)
    inv_std = (bn_rv + bn_eps).rsqrt()
    shape = ([1, -1] if transpose else [-1, 1]) + [1] * (conv_w.ndim - 2)
    with sx.no_grad():
        w = (conv_w * (bn_w * inv_std).reshape(shape)).to(w_dtype)
        b = ((conv_b - bn_rm) * inv_std * bn_w + bn_b).to(b_dtype)
    return Parameter(w, conv_w.requires_grad), Parameter(b, conv_b.requires_grad)


def fuse_conv_bn_eval(conv, bn, transpose: bool = False):
    """A copy of ``conv`` whose weight and bias fold in the eval-mode batch norm ``bn`` that follows it
    (both must be in eval mode); the inputs are not changed."""
    _check_eval("fuse_conv_bn_eval", conv, bn)
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                    bn.eps, bn.weight, bn.bias, transpose)
    return fused


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """The weight and bias (as Parameters, dtypes kept) of the linear layer that computes ``bn(linear(x))``
    in eval mode; ``linear_b``, ``bn_w`` and ``bn_b`` may be None."""
    if linear_w.ndim != 2 or bn_rm.shape[0] not in (1, linear_w.shape[0]):
        raise ValueError(f"[fuse_linear_bn_weights] a linear weight of shape {tuple(linear_w.shape)} does not match "
                         f"batch-norm statistics of shape {tuple(bn_rm.shape)}")
    w_dtype = linear_w.dtype
    b_dtype = w_dtype if linear_b is None else linear_b.dtype
    linear_b, bn_w, bn_b = _bn_defaults(bn_rm, bn_w, bn_b, linear_b)
    with sx.no_grad():
        scale = bn_w * (bn_rv + bn_eps).rsqrt()
        w = (linear_w * scale.unsqueeze(-1)).to(w_dtype)
        b = ((linear_b - bn_rm) * scale + bn_b).to(b_dtype)
    return Parameter(w, linear_w.requires_grad), Parameter(b, linear_b.requires_grad)


def fuse_linear_bn_eval(linear, bn):
    """A copy of ``linear`` whose weight and bias fold in the eval-mode batch norm ``bn`` that follows it
    (``bn.num_features`` must equal ``linear.out_features`` or be 1)."""
    _check_eval("fuse_linear_bn_eval", linear, bn)
    if bn.num_features not in (1, linear.out_features):
        raise ValueError(f"[fuse_linear_bn_eval] linear.out_features ({linear.out_features}) must equal "
                         f"bn.num_features ({bn.num_features}) or bn.num_features must be 1")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                      bn.eps, bn.weight, bn.bias)
    return fused


__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]
