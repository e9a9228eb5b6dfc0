"""PyTorch's elementwise and reduction aliases and compositions (differentiable where PyTorch is):
inverse hyperbolic functions, hypot, logaddexp, xlogy, nansum,
median, cummax, ... ``FUNCTIONS`` maps names to functions; ``METHODS`` adds method-only names."""

from __future__ import annotations

import builtins
import math
from collections import namedtuple

import numpy as np

from ._backend import _C
from ._C_face import Dtype, Tensor

_FLOATS = (Dtype.FLOAT32, Dtype.FLOAT64, Dtype.FLOAT16, Dtype.BFLOAT16)
ValuesIndices = namedtuple("ValuesIndices", ["values", "indices"])
MinMax = namedtuple("MinMax", ["min", "max"])


def _float(x):
    return x if x.dtype in _FLOATS else x.to(Dtype.FLOAT32)


def _dims(x, dim):
    if dim is None:
        return list(range(x.ndim))
    return [dim] if isinstance(dim, builtins.int) else list(dim)


def asinh(x):
    """Inverse hyperbolic sine, ``sign(x) log(|x| + sqrt(x^2 + 1))``."""
    x = _float(x)
    a = _C.abs(x)
    return _C.sign(x) * _C.log(a + _C.sqrt(a * a + 1))


def acosh(x):
    """Inverse hyperbolic cosine, ``log(x + sqrt(x^2 - 1))``."""
    x = _float(x)
    return _C.log(x + _C.sqrt(x * x - 1))


def atanh(x):
    """Inverse hyperbolic tangent, ``(log1p(x) - log1p(-x)) / 2``."""
    x = _float(x)
    return (_C.log1p(x) - _C.log1p(-x)) * 0.5


def sinc(x):
    """Normalised sinc ``sin(pi x) / (pi x)`` (1 at 0)."""
    x = _float(x)
    zero = x == 0
    px = _C.where(zero, 1.0, x) * math.pi
    return _C.where(zero, 1.0, _C.sin(px) / px)


def logit(x, eps=None):
    """``log(x / (1 - x))``, with ``x`` clamped to ``[eps, 1 - eps]`` when ``eps`` is given."""
    x = _float(x)
    if eps is not None:
        x = _C.clamp(x, eps, 1 - eps)
    return _C.log(x / (1 - x))


def hypot(x, y):
    """``sqrt(x^2 + y^2)``."""
    return _C.sqrt(x * x + y * y)


def logaddexp(x, y):
    """``log(exp(x) + exp(y))`` without overflow."""
    m = _C.maximum(x, y)
    return m + _C.log1p(_C.exp(-_C.abs(x - y)))


def logaddexp2(x, y):
    """``log2(2^x + 2^y)``."""
    return logaddexp(x * math.log(2), y * math.log(2)) * (1 / math.log(2))


def xlogy(x, y):
    """``x * log(y)``, 0 where ``x == 0``."""
    y = y if isinstance(y, Tensor) else Tensor(np.asarray(y, dtype=np.float32))
    return _C.where(x == 0, 0.0, x * _C.log(_float(y)))


def deg2rad(x):
    """Degrees to radians."""
    return _float(x) * (math.pi / 180)


def rad2deg(x):
    """Radians to degrees."""
    return _float(x) * (180 / math.pi)


def float_power(x, y):
    """``x ** y`` computed in float64."""
    y = y.to(Dtype.FLOAT64) if isinstance(y, Tensor) else y
    return _C.pow(x.to(Dtype.FLOAT64), y)


def nansum(x, dim=None, keepdim=False, *, dtype=None):
    """Sum treating NaN as 0, in one pass."""
    return _C._nansum(x, _dims(x, dim), keepdim, dtype)


def nanmean(x, dim=None, keepdim=False, *, dtype=None):
    """Mean of the non-NaN elements (one pass on the CPU where no slice holds a NaN)."""
    dims = _dims(x, dim)
    if x.dtype not in _FLOATS:
        raise TypeError(f"[nanmean] expects a floating tensor, got {x.dtype}")
    out = x.mean(dims, keepdim)
    # A NaN makes its slice's mean NaN; reading that costs no device sync on the CPU only.
    if x.device.type != "cpu" or _C.isnan(out).any().item():
        size = math.prod(x.shape[d] for d in dims)
        out = _C._nansum(x, dims, keepdim) / (size - _C.isnan(x).sum(dims, keepdim))
    return out if dtype is None else out.to(dtype)


def count_nonzero(x, dim=None):
    """Number of non-zero elements (over ``dim``)."""
    return (x != 0).sum(_dims(x, dim), False)  # a bool sum is an int64 count


def aminmax(x, *, dim=None, keepdim=False):
    """``(min, max)`` together."""
    dims = _dims(x, dim)
    return MinMax(_C.amin(x, dims, keepdim), _C.amax(x, dims, keepdim))


def var_mean(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(var, mean)`` over ``dim`` (all elements when None); the variance divides by N - ``correction``
    (1 unless ``unbiased=False`` or ``correction`` says otherwise)."""
    return _C.var(x, dim, unbiased, keepdim, correction=correction), _C.mean(x, dim, keepdim)


def std_mean(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(std, mean)`` over ``dim`` (all elements when None), as ``var_mean`` with the square root."""
    return _C.std(x, dim, unbiased, keepdim, correction=correction), _C.mean(x, dim, keepdim)


def cummax(x, dim):
    """Running maximum along ``dim`` and where it was reached (a tie or a NaN takes the later index)."""
    return ValuesIndices(*_C._cum_extreme(x, dim, True))


def cummin(x, dim):
    """Running minimum along ``dim`` and where it was reached (a tie or a NaN takes the later index)."""
    return ValuesIndices(*_C._cum_extreme(x, dim, False))


def kthvalue(x, k, dim=-1, keepdim=False):
    """The ``k``-th smallest value along ``dim`` (1-based) and its index: the ``k``-th of a stable sort
    (NaN largest, ties by position)."""
    return ValuesIndices(*_C._kthvalue(x, int(k), int(dim), bool(keepdim)))


def median(x, dim=None, keepdim=False):
    """Lower median (the ``(n + 1) // 2``-th smallest value); with ``dim``, values and indices. As in
    PyTorch, a slice holding a NaN gives NaN (at its first NaN)."""
    if dim is None:
        return _C._kthvalue(x.reshape(-1), (x.numel() + 1) // 2, 0, False, True)[0]
    k = (x.shape[dim] + 1) // 2 if x.ndim else 1
    return ValuesIndices(*_C._kthvalue(x, k, int(dim), bool(keepdim), True))


def quantile(x, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The ``q``-quantiles (``q`` a number or 1-d tensor in [0, 1]) along ``dim`` (all elements
    when None), interpolating ``"linear"``, ``"lower"``, ``"higher"``, ``"midpoint"`` or ``"nearest"``."""
    scalar = not isinstance(q, Tensor)
    qs = np.atleast_1d(np.asarray(q.tolist() if isinstance(q, Tensor) else q, dtype=np.float64))
    if np.any((qs < 0) | (qs > 1)):
        raise ValueError(f"[quantile] q must be in [0, 1], got {qs.tolist()}")
    if dim is None:
        x, dim = x.reshape(-1), 0
    s = _C._sort(x, dim, False, True)[0]
    n = s.shape[dim]
    outs = []
    for qv in qs:
        pos = qv * (n - 1)
        lo, hi = math.floor(pos), math.ceil(pos)
        frac_ = {"linear": pos - lo, "lower": 0.0, "higher": 1.0, "midpoint": 0.5,
                 "nearest": builtins.float(builtins.round(pos) == hi)}[interpolation]
        a, b = s.narrow(dim, lo, 1), s.narrow(dim, hi, 1)
        v = a + (b - a) * frac_ if hi != lo else a
        outs.append(v if keepdim else v.squeeze(dim))
    return outs[0] if scalar else _C.stack(outs, 0)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``|a - b| <= atol + rtol |b|`` elementwise (equal infinities count as close)."""
    b = b if isinstance(b, Tensor) else Tensor(np.asarray(b, dtype=np.float64)).to(a.dtype)
    close = (a == b) | (_C.abs(a - b) <= atol + rtol * _C.abs(b))
    return close | (_C.isnan(a) & _C.isnan(b)) if equal_nan else close


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True if every element of ``a`` is close to ``b`` (see :func:`isclose`)."""
    return builtins.bool(isclose(a, b, rtol, atol, equal_nan).all().item())


def equal(a, b):
    """True if ``a`` and ``b`` have the same shape and elements."""
    return tuple(a.shape) == tuple(b.shape) and builtins.bool((a == b).all().item())


def dist(a, b, p=2):
    """``||a - b||_p`` over all elements."""
    return _C.norm(a - b, p)


def _alias(fn, name, doc):
    def alias(*args, **kwargs):
        return fn(*args, **kwargs)

    alias.__name__, alias.__doc__ = name, doc
    return alias


FUNCTIONS = {name: fn for name, fn in dict(globals()).items()
             if callable(fn) and not name.startswith("_") and fn.__module__ == __name__
             and name not in ("ValuesIndices", "MinMax")}
FUNCTIONS.update({"fmod": _C.fmod, "arcsin": _C.asin, "arccos": _C.acos, "arctan": _C.atan, "arcsinh": asinh, "arccosh": acosh,
                  "arctanh": atanh})
FUNCTIONS.update({name: _alias(fn, name, f"Alias of ``{target}``.") for name, (fn, target) in {
    "arctan2": (_C.atan2, "atan2"), "absolute": (_C.abs, "abs"), "negative": (_C.neg, "neg"),
    "multiply": (_C.mul, "mul"), "divide": (_C.div, "div"), "true_divide": (_C.div, "div"),
    "subtract": (_C.sub, "sub"), "greater": (_C.gt, "gt"), "greater_equal": (_C.ge, "ge"), "less": (_C.lt, "lt"),
    "less_equal": (_C.le, "le"), "not_equal": (_C.ne, "ne"), "fix": (_C.trunc, "trunc"), "sgn": (_C.sign, "sign"),
}.items()})
INPLACE = ["asinh", "acosh", "atanh", "sinc",
           "logit", "hypot", "xlogy", "fmod", "deg2rad", "rad2deg", "arcsin", "arccos", "arctan", "arcsinh",
           "arccosh", "arctanh", "arctan2", "absolute", "negative", "multiply", "divide", "true_divide", "subtract",
           "fix", "sgn", "float_power"]
