"""Differentiable neural-network functions (``import sneppx_core.functional as F``)."""

from __future__ import annotations

import math

from . import _SNEPPX_c as _C
from ._C_face import Tensor

relu = _C.relu
sigmoid = _C.sigmoid
tanh = _C.tanh
silu = _C.silu
gelu = _C.gelu
softplus = _C.softplus
leaky_relu = _C.leaky_relu
elu = _C.elu


def softmax(input, dim, dtype=None):
    """softmax(x)_i = exp(x_i - max x) / sum_j exp(x_j - max x) along ``dim``."""
    x = input if dtype is None else input.to(dtype)
    m = x.amax(dim, keepdim=True).detach()
    e = (x - m).exp()
    return e / e.sum(dim, keepdim=True)


def log_softmax(input, dim, dtype=None):
    """log_softmax(x) = x - logsumexp(x) along ``dim``."""
    x = input if dtype is None else input.to(dtype)
    return x - x.logsumexp(dim, keepdim=True)


def linear(input, weight, bias=None):
    """y = x @ weight.T + bias, with weight of shape (out_features, in_features)."""
    y = input @ weight.mT
    return y if bias is None else y + bias


__all__ = ["relu", "sigmoid", "tanh", "silu", "gelu", "softplus", "leaky_relu", "elu", "softmax", "log_softmax",
           "linear"]
