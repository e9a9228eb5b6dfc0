"""Elementwise ops of the NumPy backend: the unary formula sheet, binary arithmetic, comparisons
and selection, with the C backend's dtype rules (float16/bfloat16 compute in float32)."""

from __future__ import annotations

import builtins
import math

import numpy as np

from ._core import BOOL, FLOAT32, FLOATS, compute_type, describe, result_dtype
from ._tensor import Tensor, arr, need_tensor, wrap

# ---------------------------------------------------------------- the unary formula sheet
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _sigmoid(x):
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _softplus(x, beta=1.0, threshold=20.0):
    bx = x * beta
    with np.errstate(over="ignore"):
        soft = (np.maximum(bx, 0) + np.log1p(np.exp(-np.abs(bx)))) / beta
    return np.where(bx > threshold, x, soft)


def _erf(x):
    """erf: math.erf for float64; float32 from a Taylor series (|x| < 0.5) and the Chebyshev fit of
    erfc (relative error below 1.2e-7) elsewhere, both evaluated in float64."""
    if x.dtype == np.float64:
        return np.asarray(np.frompyfunc(math.erf, 1, 1)(x), dtype=np.float64)
    d = x.astype(np.float64)
    z = np.abs(d)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (
            -0.82215223 + t * 0.17087277))))))))
    big = 1.0 - t * np.exp(-z * z + poly)
    x2, term, small = d * d, d.copy(), d.copy()
    for n in range(1, 12):
        term = term * (-x2) / n
        small = small + term / (2 * n + 1)
    out = np.where(z < 0.5, small * _TWO_OVER_SQRT_PI, np.sign(d) * big)
    return out.astype(x.dtype)


def _sign(x):
    return np.where(np.isnan(x), 0, np.sign(x)).astype(x.dtype) if x.dtype.kind == "f" else np.sign(x)


def _round(x):
    return np.round(x) if x.dtype.kind == "f" else x


# name -> (kind, is_predicate, params, function of (array, *params)); order of the C formula sheet
# Special functions, scalar ports of the compiled engine's (ops/special_math.h), computed in float64.
def _digamma1(x):
    if x == 0:
        return math.copysign(math.inf, -x)
    res = 0.0
    if x < 0:
        if x == math.floor(x):
            return math.nan
        res = -math.pi / math.tan(math.pi * (x - math.trunc(x)))
        x = 1 - x
    if math.isnan(x) or math.isinf(x):
        return x
    while x < 10:
        res -= 1 / x
        x += 1
    z = 1 / (x * x)
    return res + math.log(x) - 0.5 / x - z * (1 / 12 - z * (1 / 120 - z * (1 / 252 - z * (1 / 240 - z * (1 / 132)))))


def _zeta1(s, q):  # Hurwitz zeta for an integer s >= 2 (Euler-Maclaurin after the terms up to q + 9)
    if math.isnan(q):
        return math.nan
    if q == math.inf:
        return 0.0
    if q <= 0 and q == math.floor(q):
        return math.inf
    if q < -4194304.0:
        return math.nan
    total, a = 0.0, q
    while a <= 9 + 9:
        total += a ** -s
        a += 1
    tail = a ** (1 - s) / (s - 1) + 0.5 * a ** -s
    rising = s
    for k, b in enumerate([1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6], start=1):
        tail += b / math.factorial(2 * k) * rising * a ** (-s - 2 * k + 1)
        rising *= (s + 2 * k - 1) * (s + 2 * k)
    return total + tail


def _polygamma1(x, n):
    n = builtins.int(n)
    if n == 0:
        return _digamma1(x)
    return (1 if n % 2 else -1) * math.factorial(n) * _zeta1(n + 1, x)


def _lgamma1(x):
    if math.isnan(x):
        return x
    if math.isinf(x) or (x <= 0 and x == math.floor(x)):
        return math.inf
    return math.lgamma(x)


def _erfinv1(y):
    if not abs(y) <= 1:
        return math.nan
    if abs(y) == 1:
        return math.copysign(math.inf, y)
    if y == 0:
        return y
    a, lo, hi = abs(y), 0.0, 30.0
    for _ in range(1100):  # bisection on erf, on erfc in the tails
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        below = math.erf(mid) < a if a <= 0.5 else 1 - a < math.erfc(mid)
        lo, hi = (mid, hi) if below else (lo, mid)
    return math.copysign(lo, y)


def _special(f):
    def run(x, *params):
        return np.asarray(np.frompyfunc(lambda v: f(builtins.float(v), *params), 1, 1)(x.astype(np.float64)),
                          dtype=np.float64).astype(x.dtype)
    return run


def _i0(x):
    return np.where(np.isinf(x), np.inf, np.i0(np.where(np.isinf(x), 0, x).astype(np.float64))).astype(x.dtype)


UNARY = {
    "neg": ("math", False, [], np.negative), "abs": ("math", False, [], np.abs),
    "square": ("math", False, [], np.square), "sign": ("math", False, [], _sign),
    "floor": ("math", False, [], lambda x: np.floor(x) if x.dtype.kind == "f" else x),
    "ceil": ("math", False, [], lambda x: np.ceil(x) if x.dtype.kind == "f" else x),
    "round": ("math", False, [], _round),
    "trunc": ("math", False, [], lambda x: np.trunc(x) if x.dtype.kind == "f" else x),
    "frac": ("math", False, [], lambda x: x - np.trunc(x) if x.dtype.kind == "f" else np.zeros_like(x)),
    "logical_not": ("math", True, [], np.logical_not), "isnan": ("math", True, [], np.isnan),
    "isinf": ("math", True, [], np.isinf), "isfinite": ("math", True, [], np.isfinite),
    "signbit": ("math", True, [], np.signbit),
    "exp": ("math", False, [], np.exp), "exp2": ("math", False, [], np.exp2), "expm1": ("math", False, [], np.expm1),
    "log": ("math", False, [], np.log), "log2": ("math", False, [], np.log2), "log10": ("math", False, [], np.log10),
    "log1p": ("math", False, [], np.log1p), "sqrt": ("math", False, [], np.sqrt),
    "rsqrt": ("math", False, [], lambda x: 1 / np.sqrt(x)), "reciprocal": ("math", False, [], lambda x: 1 / x),
    "sin": ("math", False, [], np.sin), "cos": ("math", False, [], np.cos), "tan": ("math", False, [], np.tan),
    "asin": ("math", False, [], np.arcsin), "acos": ("math", False, [], np.arccos),
    "atan": ("math", False, [], np.arctan), "sinh": ("math", False, [], np.sinh), "cosh": ("math", False, [], np.cosh),
    "lgamma": ("math", False, [], _special(_lgamma1)), "digamma": ("math", False, [], _special(_digamma1)),
    "erfinv": ("math", False, [], _special(_erfinv1)), "i0": ("math", False, [], _i0),
    "erf": ("math", False, [], _erf), "erfc": ("math", False, [], _special(math.erfc)),
    "tanh": ("math", False, [], np.tanh), "sigmoid": ("math", False, [], _sigmoid),
    "relu": ("activation", False, [], lambda x: np.maximum(x, 0).astype(x.dtype)),
    "silu": ("activation", False, [], lambda x: x * _sigmoid(x)),
    "leaky_relu": ("activation", False, [("negative_slope", 0.01)], lambda x, s: np.where(x > 0, x, x * s)),
    "elu": ("activation", False, [("alpha", 1.0)], lambda x, a: np.where(x > 0, x, a * np.expm1(np.minimum(x, 0)))),
    "celu": ("activation", False, [("alpha", 1.0)],
             lambda x, a: np.maximum(x, 0) + np.minimum(0, a * np.expm1(np.minimum(x, 0) / a))),
    "selu": ("activation", False, [],
             lambda x: _SELU_SCALE * np.where(x > 0, x, _SELU_ALPHA * np.expm1(np.minimum(x, 0)))),
    "softplus": ("activation", False, [("beta", 1.0), ("threshold", 20.0)], _softplus),
    "mish": ("activation", False, [], lambda x: x * np.tanh(_softplus(x))),
    "hardtanh": ("activation", False, [("min_val", -1.0), ("max_val", 1.0)], lambda x, lo, hi: np.clip(x, lo, hi)),
    "hardsigmoid": ("activation", False, [], lambda x: np.clip(x / 6 + 0.5, 0, 1)),
    "hardswish": ("activation", False, [], lambda x: x * np.clip(x + 3, 0, 6) / 6),
    "relu6": ("activation", False, [], lambda x: np.clip(x, 0, 6)),
    "logsigmoid": ("activation", False, [], lambda x: np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x)))),
    "softsign": ("activation", False, [], lambda x: x / (1 + np.abs(x))),
}
# Ops that keep integer dtypes (the rest give floating results for integer inputs).
_KEEP_INT = {"neg", "abs", "square", "sign", "floor", "ceil", "round", "trunc", "frac", "relu", "relu6", "hardtanh"}


def _unary_ops():
    """The unary op table: (name, kind, is_predicate, [(param, default)], max order of the fused gradient)."""
    return [(n, kind, pred, list(params), -1) for n, (kind, pred, params, _f) in UNARY.items()]


def _make_unary(name):
    kind, pred, params, fn = UNARY[name]
    names = [p for p, _ in params]
    defaults = [d for _, d in params]

    def op(input, *args, **kwargs):
        need_tensor(input, name)
        values = list(args) + defaults[len(args):]
        for k, v in kwargs.items():
            if k not in names:
                raise TypeError(f"[{name}] got an unexpected keyword argument {k!r}")
            values[names.index(k)] = v
        dt = input._dt
        if pred:
            out_dt = BOOL
        elif dt.is_floating_point or name in _KEEP_INT:
            out_dt = dt
        else:
            out_dt = FLOAT32
        if name == "neg" and dt is BOOL:
            raise TypeError("[neg] negation of a bool tensor is not supported; use logical_not()")
        a = input._a if (pred or name in _KEEP_INT and not dt.is_floating_point) else \
            input._a.astype(compute_type(out_dt), copy=False)
        with np.errstate(all="ignore"):
            out = fn(a, *[builtins.float(v) for v in values])
        return wrap(out, out_dt)

    op.__name__ = name
    op.__doc__ = f"Elementwise {name} (the NumPy backend's form of the unary formula sheet)."
    return op


# ---------------------------------------------------------------- binary ops
_NUMBER = (builtins.bool, builtins.int, builtins.float, np.number, np.bool_)


def _operands(op, x, y):
    """(array of x, array of y, result dtype, compute type) for a binary op of tensors and numbers."""
    if not isinstance(x, Tensor) and not isinstance(y, Tensor):
        raise TypeError(f"[{op}] expected a Tensor, got {type(x).__name__} and {type(y).__name__}")
    t = x if isinstance(x, Tensor) else y
    for v in (x, y):
        if not isinstance(v, (Tensor,) + _NUMBER):
            raise TypeError(f"[{op}] unsupported operand type {type(v).__name__} for a {describe(t)} tensor")
        if isinstance(v, builtins.int) and not isinstance(v, builtins.bool) and not -2**63 <= v < 2**63:
            raise ValueError(f"[{op}] the number {v} does not fit in int64")
    dt = result_dtype(x, y)
    ct = compute_type(dt)
    return arr(x, ct), arr(y, ct), dt, ct


def _check_shapes(op, x, y):
    if isinstance(x, Tensor) and isinstance(y, Tensor):
        try:
            np.broadcast_shapes(x._a.shape, y._a.shape)
        except ValueError:
            raise ValueError(f"[{op}] shapes {tuple(x._a.shape)} and {tuple(y._a.shape)} cannot be broadcast "
                             f"({x._dt.name} and {y._dt.name})") from None


def _binary(op, x, y, fn, out_dt=None, floating=False):
    xa, ya, dt, ct = _operands(op, x, y)
    _check_shapes(op, x, y)
    if floating and not dt.is_floating_point:
        dt, ct = FLOAT32, np.float32
        xa, ya = xa.astype(ct), ya.astype(ct)
    with np.errstate(all="ignore"):
        out = fn(xa, ya)
    return wrap(out, out_dt or dt)


def _alpha(op, y, alpha):
    if alpha is None:
        return y
    return y * alpha


def add(input, other, alpha=None):
    """input + alpha * other."""
    other = _alpha("add", other, alpha)
    if isinstance(input, Tensor) and input._dt is BOOL and isinstance(other, Tensor) and other._dt is BOOL:
        return wrap(np.logical_or(input._a, other._a), BOOL)
    return _binary("add", input, other, np.add)


def sub(input, other, alpha=None):
    """input - alpha * other."""
    for t in (input, other):
        if isinstance(t, Tensor) and t._dt is BOOL:
            raise TypeError(f"[sub] subtraction of a bool tensor ({describe(t)}) is not supported; use logical_xor()")
    return _binary("sub", input, _alpha("sub", other, alpha), np.subtract)


def mul(input, other):
    """input * other."""
    if isinstance(input, Tensor) and input._dt is BOOL and isinstance(other, Tensor) and other._dt is BOOL:
        return wrap(np.logical_and(input._a, other._a), BOOL)
    return _binary("mul", input, other, np.multiply)


def _int_zero_check(op, ya):
    if np.any(np.asarray(ya) == 0):
        raise RuntimeError(f"[{op}] ZeroDivisionError: integer division by zero")


def _floor_div(op, xa, ya):
    if xa.dtype.kind in "iub":
        _int_zero_check(op, ya)
    return np.floor_divide(xa, ya)


def div(input, other, rounding_mode=None):
    """input / other; ``rounding_mode`` "trunc" or "floor" rounds the quotient (keeping integer dtypes)."""
    if rounding_mode is None:
        return _binary("div", input, other, np.true_divide, floating=True)
    if rounding_mode == "floor":
        return floor_divide(input, other)
    if rounding_mode == "trunc":
        def trunc(a, b):
            if a.dtype.kind in "iub":
                _int_zero_check("div", b)
                q = np.floor_divide(a, b)
                return q + ((np.remainder(a, b) != 0) & ((a < 0) != (b < 0)))
            return np.trunc(a / b)
        return _binary("div", input, other, trunc)
    raise ValueError(f"[div] rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}")


def floor_divide(input, other):
    """floor(input / other)."""
    return _binary("floor_divide", input, other, lambda a, b: _floor_div("floor_divide", a, b))


def _zero_checked(op, fn):
    """``fn`` on NumPy operands, raising first for an integer zero divisor."""
    def run(a, b):
        if a.dtype.kind in "iub":
            _int_zero_check(op, b)
        return fn(a, b)
    return run


def remainder(input, other):
    """input - floor(input / other) * other (the sign of the divisor, as Python's %)."""
    return _binary("remainder", input, other, _zero_checked("remainder", np.remainder))


def fmod(input, other):
    """input - trunc(input / other) * other (the sign of the dividend, as C's fmod)."""
    return _binary("fmod", input, other, _zero_checked("fmod", np.fmod))


def _int_pow(a, b):
    b = np.broadcast_to(b, np.broadcast_shapes(np.shape(a), np.shape(b)))
    safe = np.power(a, np.maximum(b, 0))
    neg = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0)).astype(safe.dtype)
    return np.where(b < 0, neg, safe)


def pow(input, exponent):  # noqa: A001
    """input ** exponent (a tensor or a number)."""
    return _binary("pow", input, exponent, lambda a, b: _int_pow(a, b) if a.dtype.kind in "iu" else np.power(a, b))


def maximum(input, other):
    """Elementwise maximum (NaN propagates)."""
    return _binary("maximum", input, other, np.maximum)


def minimum(input, other):
    """Elementwise minimum (NaN propagates)."""
    return _binary("minimum", input, other, np.minimum)


def atan2(input, other):
    """atan2(input, other), elementwise."""
    return _binary("atan2", input, other, np.arctan2, floating=True)


def _compare(name, fn):
    def op(input, other):
        return _binary(name, input, other, fn, out_dt=BOOL)

    op.__name__ = name
    op.__doc__ = f"Elementwise {name} comparison (a bool tensor)."
    return op


eq, ne = _compare("eq", np.equal), _compare("ne", np.not_equal)
lt, le = _compare("lt", np.less), _compare("le", np.less_equal)
gt, ge = _compare("gt", np.greater), _compare("ge", np.greater_equal)


def _logical(name, fn):
    def op(input, other):
        need_tensor(input, name)
        b = other._a if isinstance(other, Tensor) else np.asarray(other)
        _check_shapes(name, input, other)
        return wrap(fn(input._a != 0, b != 0), BOOL)

    op.__name__ = name
    op.__doc__ = f"Elementwise {name} of the truth values (a bool tensor)."
    return op


logical_and = _logical("logical_and", np.logical_and)
logical_or = _logical("logical_or", np.logical_or)
logical_xor = _logical("logical_xor", np.logical_xor)


def bitwise(name, fn, shift=False):
    """An op of bool/integer tensors (``&``, ``|``, ``^``; the shifts of integers only)."""
    def op(input, other):
        dt = result_dtype(input, other)
        if dt.is_floating_point or (shift and dt is BOOL):
            kinds = "integer" if shift else "integer and bool"
            raise TypeError(f"[{name}] is only defined for {kinds} tensors, got {dt.name}")
        return _binary(name, input, other, fn)

    op.__name__ = name
    op.__doc__ = f"Elementwise {name} (integer and bool tensors)."
    return op


def _shift_count(a, c):
    """Counts outside [0, width) of a's dtype, and the counts clipped into it."""
    bits = 8 * a.dtype.itemsize
    return (c < 0) | (c >= bits), np.clip(c, 0, bits - 1).astype(a.dtype)


def _shl(a, c):
    outside, c = _shift_count(a, c)
    return np.where(outside, 0, np.left_shift(a, c)).astype(a.dtype)


def _shr(a, c):
    outside, c = _shift_count(a, c)
    return np.where(outside, np.where(a < 0, -1, 0), np.right_shift(a, c)).astype(a.dtype)


bitwise_and = bitwise("bitwise_and", np.bitwise_and)
bitwise_or = bitwise("bitwise_or", np.bitwise_or)
bitwise_xor = bitwise("bitwise_xor", np.bitwise_xor)
bitwise_left_shift = bitwise("bitwise_left_shift", _shl, shift=True)
bitwise_right_shift = bitwise("bitwise_right_shift", _shr, shift=True)


def bitwise_not(input):
    """~input: logical not of a bool tensor, the bitwise complement of an integer one."""
    need_tensor(input, "bitwise_not")
    if input._dt.is_floating_point:
        raise TypeError(f"[bitwise_not] is only defined for integer and bool tensors, got {describe(input)}")
    return wrap(np.invert(input._a), input._dt)


# ---------------------------------------------------------------- selection
def where(condition, input, other):
    """Elements of ``input`` where ``condition`` is True, else of ``other`` (tensors or numbers)."""
    need_tensor(condition, "where")
    if condition._dt is not BOOL:
        raise TypeError(f"[where] condition must be a bool tensor, got {describe(condition)}")
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError("[where] at least one of input and other must be a tensor")
    dt = result_dtype(input, other)
    ct = compute_type(dt)
    a, b = arr(input, ct), arr(other, ct)
    try:
        out = np.where(condition._a, a, b)
    except ValueError:
        raise ValueError(f"[where] shapes {tuple(condition.shape)}, {np.shape(a)} and {np.shape(b)} "
                         "cannot be broadcast") from None
    return wrap(out, dt)


def masked_fill(input, mask, value):
    """``input`` with ``value`` where ``mask`` is True."""
    need_tensor(input, "masked_fill")
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError(f"[masked_fill] value must be a number or a 0-d tensor, got shape {tuple(value.shape)}")
        value = value.item()
    need_tensor(mask, "masked_fill")
    if mask._dt is not BOOL:
        raise TypeError(f"[masked_fill] mask must be a bool tensor, got {describe(mask)}")
    ct = compute_type(input._dt)
    try:
        out = np.where(mask._a, np.asarray(value).astype(ct) if input._dt is not BOOL else builtins.bool(value),
                       input._a)
    except ValueError:
        out = None
    if out is None or out.shape != input._a.shape:
        raise ValueError(f"[masked_fill] mask of shape {tuple(mask.shape)} does not broadcast to "
                         f"{tuple(input.shape)}")
    return wrap(out, input._dt)


def clamp(input, min=None, max=None):  # noqa: A002
    """Values clipped to [min, max] (tensors or numbers; NaN stays NaN)."""
    need_tensor(input, "clamp")
    if min is None and max is None:
        raise ValueError("[clamp] at least one of min and max must be given")
    bounds = [b for b in (min, max) if b is not None]
    dt = result_dtype(input, *bounds)  # promoted as by input + bound: float bounds make int inputs float
    ct = compute_type(dt)
    out = input._a.astype(ct, copy=False)
    if min is not None:
        m = arr(min, ct)
        out = np.where(np.isnan(out) if out.dtype.kind == "f" else False, out, np.maximum(out, m))
    if max is not None:
        m = arr(max, ct)
        out = np.where(np.isnan(out) if out.dtype.kind == "f" else False, out, np.minimum(out, m))
    return wrap(out, dt)


clip = clamp


def lerp(input, end, weight):
    """input + weight * (end - input)."""
    need_tensor(input, "lerp")
    dt = result_dtype(input, end)
    ct = compute_type(dt)
    a, b, w = arr(input, ct), arr(end, ct), arr(weight, ct)
    return wrap(a + w * (b - a), dt)


def gelu(input, approximate="none"):
    """Gaussian error linear unit (``approximate`` "none" or "tanh")."""
    need_tensor(input, "gelu")
    dt = input._dt if input._dt.is_floating_point else FLOAT32
    x = input._a.astype(compute_type(dt), copy=False)
    if approximate == "none":
        out = 0.5 * x * (1 + _erf(x / np.sqrt(2).astype(x.dtype)))
    elif approximate == "tanh":
        out = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi).astype(x.dtype) * (x + 0.044715 * x * x * x)))
    else:
        raise ValueError(f"[gelu] approximate must be 'none' or 'tanh', got {approximate!r}")
    return wrap(out, dt)


def _nan_to_num(input, nan, posinf, neginf):
    """NaN -> ``nan``, +inf -> ``posinf``, -inf -> ``neginf`` (integer and bool tensors copied)."""
    need_tensor(input, "nan_to_num")
    if not input._dt.is_floating_point:
        return wrap(np.array(input._a, copy=True), input._dt)
    x = input._a.astype(compute_type(input._dt), copy=False)
    with np.errstate(over="ignore"):
        out = np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)
    return wrap(out, input._dt)


def float_dtype(dt):
    """``dt`` when floating, else float32 (results of integer inputs to floating ops)."""
    return dt if dt in FLOATS else FLOAT32


__all__ = ["add", "sub", "mul", "div", "floor_divide", "remainder", "fmod", "pow", "maximum", "minimum", "atan2", "eq", "ne",
           "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
           "bitwise_xor", "bitwise_not", "bitwise_left_shift", "bitwise_right_shift", "where", "masked_fill", "clamp",
           "clip", "lerp", "gelu", "_nan_to_num", "_unary_ops"]
UNARY_FUNCS = {name: _make_unary(name) for name in UNARY}


def _float_input(input, op):
    """``(values in the compute type, result dtype)`` of a special function's tensor argument."""
    need_tensor(input, op)
    out_dt = float_dtype(input._dt)
    return input._a.astype(compute_type(out_dt), copy=False), out_dt


def polygamma(n, input):
    """polygamma(n, input): the n-th derivative of digamma."""
    a, out_dt = _float_input(input, "polygamma")
    if n < 0:
        raise RuntimeError(f"[polygamma] polygamma(n, x) does not support negative n, got {n}")
    with np.errstate(all="ignore"):
        return wrap(_special(_polygamma1)(a, n), out_dt)


def mvlgamma(input, p):
    """Multivariate log-gamma: sum over i < p of lgamma(input - i/2), plus p (p-1)/4 log(pi)."""
    a, out_dt = _float_input(input, "mvlgamma")
    if p < 1:
        raise RuntimeError(f"[mvlgamma] p has to be greater than or equal to 1, got {p}")
    if np.any(a <= 0.5 * (p - 1)):
        raise RuntimeError(f"[mvlgamma] all elements must be greater than (p-1)/2 = {0.5 * (p - 1)}")
    lg = _special(_lgamma1)
    with np.errstate(all="ignore"):
        out = sum(lg(a - a.dtype.type(0.5 * i)) for i in range(p)) + a.dtype.type(p * (p - 1) / 4 * math.log(math.pi))
    return wrap(out.astype(a.dtype), out_dt)


__all__ += ["polygamma", "mvlgamma"]
