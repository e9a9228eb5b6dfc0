"""Helpers of ``sneppx_core.distributions``, with ``torch.distributions.utils``' names."""

from __future__ import annotations

import functools
import numbers

import sneppx_core as sx

euler_constant = 0.57721566490153286060  # Euler–Mascheroni constant


def broadcast_all(*values):
    """Broadcasts tensors and Python numbers to one shape. Numbers become tensors of the first tensor's
    dtype and device (the default dtype when there is none); anything else raises ValueError."""
    if not all(isinstance(v, (sx.Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number or Tensor.")
    like = next((v for v in values if isinstance(v, sx.Tensor)), None)
    if like is None:
        return tuple(sx.tensor(float(v), dtype=sx.get_default_dtype()) for v in values)
    dtype = like.dtype if like.dtype.is_floating_point else sx.get_default_dtype()
    ts = [v if isinstance(v, sx.Tensor) else sx.tensor(float(v), dtype=dtype, device=like.device) for v in values]
    return tuple(sx.broadcast_tensors(*ts))


def _standard_normal(shape, dtype, device):
    return sx.randn(*shape, dtype=dtype, device=device) if shape else sx.randn((), dtype=dtype, device=device)


def _sum_rightmost(value, dim):
    """Sums the rightmost ``dim`` dimensions of ``value``."""
    return value.reshape(tuple(value.shape[: value.ndim - dim]) + (-1,)).sum(-1) if dim > 0 else value


def clamp_probs(probs):
    """``probs`` kept within ``[eps, 1 - eps]`` of its dtype (``eps`` its machine epsilon)."""
    eps = sx.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def logits_to_probs(logits, is_binary=False):
    """Softmax of ``logits`` over the last dim, or the sigmoid when ``is_binary``."""
    return sx.sigmoid(logits) if is_binary else sx.functional.softmax(logits, dim=-1)


def probs_to_logits(probs, is_binary=False):
    """Log-odds of ``probs`` (``is_binary``) or their logs, after :func:`clamp_probs`."""
    ps = clamp_probs(probs)
    return sx.log(ps) - sx.log1p(-ps) if is_binary else sx.log(ps)


class lazy_property:
    """A property computed once on first use (under grad mode) and then stored on the instance; on the
    class it reads as a placeholder, as ``torch.distributions.utils.lazy_property``."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        functools.update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with sx.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    """What ``Class.attribute`` gives for a lazy property: both a lazy_property and a property."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)


class _BinaryProbs:
    """For distributions of one success probability given as ``probs`` or as ``logits`` (log-odds), kept in
    ``_param``: the other is computed from it on first use."""

    @lazy_property
    def logits(self):
        """The log-odds, from ``probs`` when those were given."""
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        """The success probability, from ``logits`` when those were given."""
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        """The shape of the parameter tensor."""
        return tuple(self._param.shape)


def tril_matrix_to_vec(mat, diag=0):
    """The lower triangle (from diagonal ``diag``) of the last two dims, row by row, as a vector."""
    n = mat.shape[-1]
    if not -n <= diag < n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    rows, cols = sx.tril_indices(n, n, diag, device=mat.device)
    return mat[..., rows, cols]


def vec_to_tril_matrix(vec, diag=0):
    """The inverse of :func:`tril_matrix_to_vec`: a vector back into an (n, n) lower-triangular matrix."""
    m = vec.shape[-1]
    n = next((k for k in range(1, m + abs(diag) + 2) if _tril_count(k, diag) >= m), 0)
    if _tril_count(n, diag) != m:
        raise ValueError(f"{m} is not the length of the triangle of a square matrix below diagonal {diag}")
    rows, cols = sx.tril_indices(n, n, diag, device=vec.device)
    flat = sx.zeros(tuple(vec.shape[:-1]) + (n * n,), dtype=vec.dtype, device=vec.device)
    # an out-of-place scatter, so that the result is differentiable in ``vec``
    flat = flat.scatter(-1, (rows * n + cols).expand(tuple(vec.shape)), vec)
    return flat.reshape(tuple(vec.shape[:-1]) + (n, n))


def _tril_count(n, diag):
    return sum(max(0, min(n, r + diag + 1)) for r in range(n))


__all__ = ["broadcast_all", "clamp_probs", "logits_to_probs", "probs_to_logits", "lazy_property",
           "tril_matrix_to_vec", "vec_to_tril_matrix", "euler_constant"]
