"""Compositions for ``sneppx_core.functional``: tanhshrink, hardshrink, softshrink, threshold, softmin and
prelu, the in-place activations ``relu_`` and the like, distances, normalisation helpers, channel dropout
and pixel (un)shuffle, all differentiable through the core ops they are built from.
(The pointwise activations are fused kernels of the unary formula sheet; see ``functional``.)"""

from __future__ import annotations

import warnings

from ._backend import _C
from ._factories import ones


def _act(input, out, inplace):
    return input.copy_(out) if inplace else out


def tanhshrink(input):
    """tanhshrink(x) = x - tanh(x)."""
    return input - _C.tanh(input)


def hardshrink(input, lambd=0.5):
    """hardshrink(x) = x where |x| > lambd, else 0 (NaN stays NaN)."""
    return _C.where(_C.abs(input) <= lambd, 0.0, input)


def softshrink(input, lambd=0.5):
    """softshrink(x) = x - lambd where x > lambd, x + lambd where x < -lambd, else 0 (lambd >= 0)."""
    if not lambd >= 0:
        raise ValueError(f"[softshrink] lambd must be >= 0, got {lambd}")
    return input - _C.clamp(input, -lambd, lambd)


def _threshold_out(input, threshold, value):
    return _C.where(input <= threshold, value, input)


def threshold(input, threshold, value, inplace=False):
    """threshold(x) = x where x > threshold, else value (NaN stays NaN)."""
    return _act(input, _threshold_out(input, threshold, value), inplace)


def threshold_(input, threshold, value):
    """In-place :func:`threshold`."""
    return input.copy_(_threshold_out(input, threshold, value))


def softmin(input, dim, dtype=None):
    """softmin(x) = softmax(-x) along ``dim``; ``dtype`` casts the input first."""
    x = input if dtype is None else input.to(dtype)
    return _C._nn.softmax(-x, dim, False)


def _inplace_form(name):
    def f(input, *args, **kwargs):
        return getattr(input, name + "_")(*args, **kwargs)
    f.__name__ = f.__qualname__ = name + "_"
    f.__doc__ = f"In-place {name}: ``input.{name}_(...)``, as ``torch.nn.functional.{name}_``."
    return f


relu_, elu_, leaky_relu_, hardtanh_, selu_, celu_ = (
    _inplace_form(n) for n in ("relu", "elu", "leaky_relu", "hardtanh", "selu", "celu"))


def prelu(input, weight):
    """prelu(x) = max(0, x) + weight * min(0, x), with one weight or one per channel (dim 1)."""
    if weight.ndim > 1:
        raise ValueError(f"[prelu] weight must be 0-D or 1-D, got shape {tuple(weight.shape)}")
    n = weight.numel()
    w = weight
    if n != 1:
        ch = 1 if input.ndim >= 2 else 0
        if input.ndim == 0 or input.shape[ch] != n:
            raise ValueError(f"[prelu] weight of {n} parameters does not match the channels of input "
                             f"{tuple(input.shape)}")
        w = weight.reshape((n,) + (1,) * (input.ndim - ch - 1))
    return _C.relu(input) - w * _C.relu(-input)


def normalize(input, p=2.0, dim=1, eps=1e-12):
    """input / max(||input||_p along dim, eps)."""
    return input / _C.clamp(_C.norm(input, float(p), dim, True), eps, None)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum(x1 * x2) / (max(||x1||, eps) * max(||x2||, eps)) along ``dim`` (inputs broadcast)."""
    n1 = _C.sqrt(_C.clamp(_C.sum(x1 * x1, dim, True), eps * eps, None))
    n2 = _C.sqrt(_C.clamp(_C.sum(x2 * x2, dim, True), eps * eps, None))
    return _C.sum((x1 / n1) * (x2 / n2), dim, False)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """||x1 - x2 + eps||_p over the last dim (eps keeps the gradient finite at equal points)."""
    return _C.norm(x1 - x2 + eps, float(p), -1, keepdim)


def one_hot(tensor, num_classes=-1):
    """int64 one-hot encoding: a trailing dim of ``num_classes`` (max + 1 when -1) with a 1 at each id."""
    return _C.one_hot(tensor, num_classes)


def pixel_shuffle(input, upscale_factor):
    """(*, C r^2, H, W) -> (*, C, H r, W r): out[c, h r + i, w r + j] = in[c r^2 + i r + j, h, w]."""
    r = int(upscale_factor)
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise ValueError(f"[pixel_shuffle] channels {c} of input {tuple(input.shape)} must be divisible by "
                         f"upscale_factor^2 = {r * r}")
    k = len(lead)
    x = input.reshape(tuple(lead) + (c // (r * r), r, r, h, w))
    x = x.permute(tuple(range(k)) + (k, k + 3, k + 1, k + 4, k + 2))
    return x.reshape(tuple(lead) + (c // (r * r), h * r, w * r))


def pixel_unshuffle(input, downscale_factor):
    """The inverse of pixel_shuffle: (*, C, H r, W r) -> (*, C r^2, H, W)."""
    r = int(downscale_factor)
    *lead, c, h, w = input.shape
    if h % r or w % r:
        raise ValueError(f"[pixel_unshuffle] spatial size ({h}, {w}) must be divisible by downscale_factor {r}")
    k = len(lead)
    x = input.reshape(tuple(lead) + (c, h // r, r, w // r, r))
    x = x.permute(tuple(range(k)) + (k, k + 2, k + 4, k + 1, k + 3))
    return x.reshape(tuple(lead) + (c * r * r, h // r, w // r))


def _probability(p, op):
    """``p`` as a float, or a ValueError naming the op when it is not a probability."""
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"[{op}] dropout probability has to be between 0 and 1, but got {p}")
    return p


def _feature_mask_shape(input, lead, op):
    """The shape of a channel-dropout mask: ``input``'s first ``lead`` dims (2: (N, C, *) input; 1: unbatched
    (C, *) input, which PyTorch gives a batch dim of 1), then ones. RuntimeError, as in PyTorch, when the input
    so read has fewer than 2 dims."""
    if input.ndim + 2 - lead < 2:
        raise RuntimeError(f"[{op}] Feature dropout requires at least 2 dimensions in the input, got shape "
                           f"{tuple(input.shape)}")
    return tuple(input.shape[:lead]) + (1,) * (input.ndim - lead)


def _feature_dropout(input, p, training, inplace, lead, op):
    """Dropout of whole channels (mask shape from :func:`_feature_mask_shape`), the kept ones scaled by
    1 / (1 - p); ``input`` itself when not training, when ``p`` is 0 or when it is empty."""
    if not training or p == 0.0 or input.numel() == 0:
        return input
    shape = _feature_mask_shape(input, lead, op)
    keep = _C._nn.dropout(ones(shape, dtype=input.dtype, device=input.device), float(p), True, None)
    return _act(input, input * keep, inplace)


def _channel_dropout(input, p, training, inplace, nsp, op):
    """dropout1d/2d/3d with PyTorch's rank rules: ``nsp`` spatial dims, a channel dim and an optional batch dim.

    dropout1d raises RuntimeError for other ranks; dropout2d and dropout3d warn (UserWarning) and go on.
    dropout2d never adds a batch dim (a 3-D input is read as (N, C, L), with a warning, as PyTorch does), so a
    mask is drawn per (dim 0, dim 1) for any rank; dropout1d and dropout3d read only 3-D and 5-D input as
    batched, and the rest as unbatched (one mask per index of dim 0)."""
    p = _probability(p, op)
    nd = input.ndim
    note = (f"Note that {op} exists to provide channel-wise dropout on inputs with {nsp} spatial "
            f"dimension{'s' if nsp > 1 else ''}, a channel dimension, and an optional batch dimension "
            f"(i.e. {nsp + 1}D or {nsp + 2}D inputs).")
    if nd not in (nsp + 1, nsp + 2):
        if nsp == 1:
            raise RuntimeError(f"{op}: Expected 2D or 3D input, but received a {nd}D input. {note}")
        warnings.warn(f"{op}: Received a {nd}-D input to {op}, which is deprecated and will result in an error "
                      f"in a future release. To retain the behavior and silence this warning, please use dropout "
                      f"instead. {note}", UserWarning, stacklevel=3)
    elif nsp == 2 and nd == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
                      "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel dim. "
                      "This behavior will change in a future release to interpret the input as one without a "
                      "batch dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, "
                      "please switch to using dropout1d instead.", UserWarning, stacklevel=3)
    batched = nsp == 2 or nd == nsp + 2
    return _feature_dropout(input, p, training, inplace, 2 if batched else 1, op)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zeroes whole channels of (N, C, L) or (C, L) input with probability p, scaling the rest by 1 / (1 - p);
    other ranks raise RuntimeError, as in PyTorch."""
    return _channel_dropout(input, p, training, inplace, 1, "dropout1d")


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zeroes whole channels of (N, C, H, W) input with probability p, scaling the rest by 1 / (1 - p).

    As in PyTorch, 3-D input is read as (N, C, L) and other ranks as (N, C, *) (a mask per (N, C); fewer than
    2 dims raise RuntimeError in training), each with a UserWarning."""
    return _channel_dropout(input, p, training, inplace, 2, "dropout2d")


__all__ = [
    "tanhshrink", "hardshrink", "softshrink", "threshold", "threshold_", "softmin", "relu_", "elu_", "leaky_relu_",
    "hardtanh_", "selu_", "celu_", "prelu", "normalize", "cosine_similarity", "pairwise_distance", "one_hot",
    "pixel_shuffle", "pixel_unshuffle", "dropout1d", "dropout2d",
]
