"""Reductions, scans and matrix products of the NumPy backend."""

from __future__ import annotations

import builtins

import numpy as np

from ._core import BOOL, FLOAT32, INT64, UINT8, as_dtype, compute_type, describe, norm_dim
from ._tensor import need_tensor, view, wrap


def _axes(t, dim, op):
    """The reduced axes: None for all, else a tuple of normalised dims."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return None
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    out = [norm_dim(d, t._a.ndim, op) for d in dims]
    if len(set(out)) != len(out):
        raise ValueError(f"[{op}] dim appears twice in {tuple(dims)}")
    return tuple(out) if t._a.ndim else None


def _floating(t, op):
    if not t._dt.is_floating_point:
        raise TypeError(f"[{op}] expected a floating tensor, got {describe(t)}; convert it with .float() first")


def _out(dtype, default):
    if dtype is None:
        return default
    return as_dtype(dtype)


def sum(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A001
    """Sum over ``dim`` (all when None); integer and bool inputs give int64."""
    need_tensor(input, "sum")
    dt = _out(dtype, input._dt if input._dt.is_floating_point else INT64)
    acc = np.float64 if dt.is_floating_point else np.int64  # float32 sums accumulate in float64
    return wrap(np.sum(input._a, axis=_axes(input, dim, "sum"), keepdims=keepdim, dtype=acc), dt)


def trace(input):
    """Sum of the main diagonal of a matrix; integer and bool inputs give int64."""
    need_tensor(input, "trace")
    if input._a.ndim != 2:
        raise ValueError(f"[trace] expects a 2-d tensor, got {describe(input)}")
    dt = input._dt if input._dt.is_floating_point else INT64
    return wrap(np.sum(np.diagonal(input._a), dtype=np.float64 if dt.is_floating_point else np.int64), dt)


def _nansum(input, dim=None, keepdim=False, dtype=None):
    """Sum over ``dim`` with NaN taken as 0 (integer and bool inputs: ``sum``)."""
    need_tensor(input, "nansum")
    if not input._dt.is_floating_point:
        return sum(input, dim, keepdim, dtype=dtype)
    dt = _out(dtype, input._dt)
    acc = np.float64 if dt.is_floating_point else np.int64
    return wrap(np.nansum(input._a, axis=_axes(input, dim, "nansum"), keepdims=keepdim, dtype=acc), dt)


def mean(input, dim=None, keepdim=False, *, dtype=None):
    """Mean over ``dim`` (floating inputs, or ``dtype`` given)."""
    need_tensor(input, "mean")
    dt = _out(dtype, input._dt)
    if not dt.is_floating_point:
        _floating(input, "mean")
    with np.errstate(all="ignore"):
        return wrap(np.mean(input._a, axis=_axes(input, dim, "mean"), keepdims=keepdim, dtype=np.float64), dt)


def prod(input, dim=None, keepdim=False):
    """Product over ``dim`` (one dim or all); integer inputs give int64."""
    need_tensor(input, "prod")
    dt = input._dt if input._dt.is_floating_point else INT64
    a = input._a.astype(compute_type(dt), copy=False)
    return wrap(np.prod(a, axis=_axes(input, dim, "prod"), keepdims=keepdim), dt)


def _extreme(fn, name):
    def op(input, dim=(), keepdim=False):
        need_tensor(input, name)
        try:
            return view(np.asarray(fn(input._a, axis=_axes(input, dim, name), keepdims=keepdim)), input._dt)
        except ValueError:
            raise IndexError(f"[{name}] reduction over an empty dim of shape {tuple(input.shape)}") from None

    op.__name__ = name
    op.__doc__ = f"The {name[1:]}imum over ``dim`` (all dims by default); NaN propagates."
    return op


amax, amin = _extreme(np.max, "amax"), _extreme(np.min, "amin")


def _arg(fn, name):
    def op(input, dim=None, keepdim=False):
        need_tensor(input, name)
        if input._a.size == 0:
            raise IndexError(f"[{name}] reduction over an empty tensor of shape {tuple(input.shape)}")
        a = input._a.astype(np.uint8) if input._dt is BOOL else input._a
        if dim is None:
            out = np.asarray(fn(a.reshape(-1)))
            return wrap(out.reshape((1,) * a.ndim) if keepdim else out, INT64)
        d = _axes(input, dim, name)
        if d is None:
            return wrap(np.zeros((), np.int64), INT64)
        return wrap(fn(a, axis=d[0], keepdims=keepdim), INT64)

    op.__name__ = name
    op.__doc__ = f"int64 position of the {name[3:]}imum along ``dim`` (of the flattened tensor when None)."
    return op


argmax, argmin = _arg(np.argmax, "argmax"), _arg(np.argmin, "argmin")


def _dim_extreme(name, fn, argfn):
    def op(input, dim, keepdim):
        need_tensor(input, name)
        if input._a.ndim == 0:
            return view(input._a.copy(), input._dt), wrap(np.zeros((), np.int64), INT64)
        d = _axes(input, dim, name)[0]
        if input._a.shape[d] == 0:
            raise IndexError(f"[{name}] reduction over an empty dim of shape {tuple(input.shape)}")
        a = input._a.astype(np.uint8) if input._dt is BOOL else input._a
        idx = argfn(a, axis=d, keepdims=True)
        vals = np.take_along_axis(input._a, idx, d)
        if not keepdim:
            vals, idx = vals.squeeze(d), idx.squeeze(d)
        return view(vals, input._dt), wrap(idx, INT64)

    return op


_max_dim = _dim_extreme("max", np.max, np.argmax)
_min_dim = _dim_extreme("min", np.min, np.argmin)


def _correction(unbiased, correction):
    if correction is not None:
        return builtins.float(correction)
    return 0.0 if unbiased is False else 1.0


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Variance over ``dim`` with ``correction`` (1 by default: the unbiased estimate)."""
    need_tensor(input, "var")
    _floating(input, "var")
    a = input._a.astype(compute_type(input._dt), copy=False)
    with np.errstate(all="ignore"):
        out = np.var(a, axis=_axes(input, dim, "var"), ddof=_correction(unbiased, correction), keepdims=keepdim)
    return wrap(out, input._dt)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Standard deviation: sqrt(var)."""
    v = var(input, dim, unbiased, keepdim, correction=correction)
    return wrap(np.sqrt(v._a), v._dt)


def logsumexp(input, dim, keepdim=False):
    """log(sum(exp(x))) over ``dim``, computed stably; integer inputs give float32."""
    need_tensor(input, "logsumexp")
    dt = input._dt if input._dt.is_floating_point else FLOAT32
    a = input._a.astype(compute_type(dt), copy=False)
    ax = _axes(input, dim, "logsumexp")
    with np.errstate(all="ignore"):
        m = np.max(a, axis=ax, keepdims=True) if a.size else np.zeros((1,) * a.ndim, a.dtype)
        m = np.where(np.isfinite(m), m, 0)
        out = np.log(np.sum(np.exp(a - m), axis=ax, keepdims=True)) + m
    return wrap(out if keepdim else np.squeeze(out, axis=ax) if ax is not None else out.reshape(()), dt)


def norm(input, p=2.0, dim=None, keepdim=False):
    """The p-norm over ``dim`` (all elements when None); p may be inf, -inf, 0 or "fro"."""
    need_tensor(input, "norm")
    _floating(input, "norm")
    if p == "fro":
        p = 2.0
    p = builtins.float(p)
    a = np.abs(input._a.astype(compute_type(input._dt), copy=False))
    ax = _axes(input, dim, "norm")
    with np.errstate(all="ignore"):
        if p == np.inf:
            out = np.max(a, axis=ax, keepdims=keepdim)
        elif p == -np.inf:
            out = np.min(a, axis=ax, keepdims=keepdim)
        elif p == 0:
            out = np.sum(a != 0, axis=ax, keepdims=keepdim).astype(a.dtype)
        elif p == 1:
            out = np.sum(a, axis=ax, keepdims=keepdim)
        elif p == 2:
            out = np.sqrt(np.sum(a * a, axis=ax, keepdims=keepdim))
        else:
            out = np.sum(a ** p, axis=ax, keepdims=keepdim) ** (1 / p)
    return wrap(out, input._dt)


def _truth(fn, name):
    def op(input, dim=None, keepdim=False):
        need_tensor(input, name)
        out = fn(input._a != 0, axis=_axes(input, dim, name), keepdims=keepdim)
        return wrap(out, UINT8 if input._dt is UINT8 else BOOL)

    op.__name__ = name
    op.__doc__ = f"Whether {name} elements are non-zero over ``dim`` (bool; uint8 for uint8 inputs)."
    return op


all, any = _truth(np.all, "all"), _truth(np.any, "any")  # noqa: A001


def cumsum(input, dim):
    """Running sum along ``dim``; integer and bool inputs give int64."""
    need_tensor(input, "cumsum")
    dt = input._dt if input._dt.is_floating_point else INT64
    a = input._a.astype(compute_type(dt), copy=False)
    d = _axes(input, dim, "cumsum")
    return wrap(np.cumsum(a, axis=d[0]) if d else a.copy(), dt)


# ---------------------------------------------------------------- matrix products
def _mm_dtype(op, a, b):
    need_tensor(a, op)
    need_tensor(b, op)
    if a._dt is not b._dt:
        raise TypeError(f"[{op}] expected both operands to have the same dtype, got {a._dt.name} and {b._dt.name}")
    if a._dt is BOOL:
        raise TypeError(f"[{op}] bool tensors are not supported ({describe(a)} and {describe(b)})")
    return a._dt


def matmul(input, other):
    """Matrix product with NumPy's (and PyTorch's) rules for 1-D and batched operands."""
    dt = _mm_dtype("matmul", input, other)
    ct = compute_type(dt)
    if input._a.ndim == 0 or other._a.ndim == 0:
        raise ValueError("[matmul] both arguments need at least 1 dim, got shapes "
                         f"{tuple(input.shape)} and {tuple(other.shape)}")
    try:
        out = np.matmul(input._a.astype(ct, copy=False), other._a.astype(ct, copy=False))
    except ValueError:
        raise ValueError(f"[matmul] shapes {tuple(input.shape)} and {tuple(other.shape)} cannot be multiplied "
                         f"({input._dt.name})") from None
    return wrap(out, dt)


def _check_ndim(op, t, n):
    if t._a.ndim != n:
        raise ValueError(f"[{op}] expected a {n}-D tensor, got shape {tuple(t.shape)}")


def mm(input, mat2):
    """Product of two matrices."""
    _mm_dtype("mm", input, mat2)
    _check_ndim("mm", input, 2)
    _check_ndim("mm", mat2, 2)
    return matmul(input, mat2)


def bmm(input, mat2):
    """Batched product of (B, n, k) and (B, k, m)."""
    _mm_dtype("bmm", input, mat2)
    _check_ndim("bmm", input, 3)
    _check_ndim("bmm", mat2, 3)
    if input._a.shape[0] != mat2._a.shape[0]:
        raise ValueError(f"[bmm] batch sizes differ: {tuple(input.shape)} and {tuple(mat2.shape)}")
    return matmul(input, mat2)


def dot(input, other):
    """Inner product of two 1-D tensors."""
    _mm_dtype("dot", input, other)
    _check_ndim("dot", input, 1)
    _check_ndim("dot", other, 1)
    if input._a.shape != other._a.shape:
        raise ValueError(f"[dot] shapes {tuple(input.shape)} and {tuple(other.shape)} differ")
    return matmul(input, other)


def outer(input, vec2):
    """Outer product of two 1-D tensors."""
    dt = _mm_dtype("outer", input, vec2)
    _check_ndim("outer", input, 1)
    _check_ndim("outer", vec2, 1)
    ct = compute_type(dt)
    return wrap(np.outer(input._a.astype(ct), vec2._a.astype(ct)), dt)


def _cum_extreme(input, dim, is_max):
    """Running maximum (``is_max``) or minimum along ``dim`` and the int64 index where each was reached:
    a tie or a NaN takes the later index, and after a NaN only a NaN replaces it (as PyTorch)."""
    name = "cummax" if is_max else "cummin"
    need_tensor(input, name)
    a = input._a
    if a.ndim == 0:
        return view(a.copy(), input._dt), wrap(np.zeros((), np.int64), INT64)
    d = norm_dim(dim, a.ndim, name)
    m = np.moveaxis(a, d, -1)
    vals, idx = np.empty_like(m), np.zeros(m.shape, np.int64)
    if m.shape[-1]:
        best, at = m[..., 0].copy(), np.zeros(m.shape[:-1], np.int64)
        for i in builtins.range(m.shape[-1]):
            v = m[..., i]
            take = (v >= best) if is_max else (v <= best)
            if m.dtype.kind == "f":
                take = np.isnan(v) | (take & ~np.isnan(best))
            best, at = np.where(take, v, best), np.where(take, i, at)
            vals[..., i], idx[..., i] = best, at
    return view(np.ascontiguousarray(np.moveaxis(vals, -1, d)), input._dt), wrap(np.moveaxis(idx, -1, d), INT64)


__all__ = ["sum", "trace", "_nansum", "mean", "prod", "amax", "amin", "argmax", "argmin", "_max_dim", "_min_dim",
           "var", "std", "logsumexp", "norm", "all", "any", "cumsum", "_cum_extreme", "matmul", "mm", "bmm", "dot",
           "outer"]
