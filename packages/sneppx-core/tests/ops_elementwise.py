"""Op-table entries: unary, binary and ternary elementwise ops."""

from __future__ import annotations

import math

import numpy as np

from optable_base import *  # noqa: F401,F403  (specs, input descriptions, dtype rules, op())
from optable_base import X, M, functional as _F, nn_functional, op

# ---------------------------------------------------------------- unary elementwise
def _sigmoid(a):
    return 1 / (1 + np.exp(-a))


def _erf(a):
    return np.vectorize(math.erf, otypes=[np.float64])(a) if np.size(a) else np.zeros(np.shape(a))


def _erfc(a):
    return np.vectorize(math.erfc, otypes=[np.float64])(a) if np.size(a) else np.zeros(np.shape(a))


def _gelu(a):
    return 0.5 * a * (1 + _erf(a / math.sqrt(2)))


def _gelu_tanh(a):
    return 0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a**3)))


def _softplus(a):
    return np.where(a > 20, a, np.log1p(np.exp(np.minimum(a, 20))))


_FLOAT_UNARY = [
    ("exp", np.exp, "normal"), ("log", np.log, "positive"), ("log1p", np.log1p, "unit"),
    ("expm1", np.expm1, "normal"), ("sqrt", np.sqrt, "positive"), ("rsqrt", lambda a: 1 / np.sqrt(a), "positive"),
    ("sin", np.sin, "normal"), ("cos", np.cos, "normal"), ("tanh", np.tanh, "normal"),
    ("sigmoid", _sigmoid, "normal"), ("erf", _erf, "normal"), ("erfc", _erfc, "normal"),
    ("reciprocal", lambda a: 1 / a, "nonzero"),
    ("exp2", np.exp2, "normal"), ("log10", np.log10, "positive"), ("tan", np.tan, "unit"), ("asin", np.arcsin, "unit"),
    ("acos", np.arccos, "unit"), ("atan", np.arctan, "normal"), ("sinh", np.sinh, "normal"),
    ("cosh", np.cosh, "normal"), ("log2", np.log2, "positive"),
]
for _n, _r, _d in _FLOAT_UNARY:
    op(_n, (lambda n: lambda m, x: getattr(m, n)(x))(_n), _r, unary_cases(_d), dtypes=ALL, out=floating)



# Special functions: references from Python's math module and series (float64 throughout).
def _lgamma(a):
    return np.vectorize(lambda v: math.inf if v <= 0 and v == math.floor(v) else math.lgamma(v),
                        otypes=[np.float64])(a) if np.size(a) else np.zeros(np.shape(a))


def _digamma1(v):  # recurrence up to 20, then the asymptotic series
    acc = 0.0
    if v == 0:
        return -math.inf  # digamma(+0)
    if v < 0 and v == math.floor(v):
        return math.nan
    if v < 0:
        return _digamma1(1 - v) - math.pi / math.tan(math.pi * v)
    while v < 20:
        acc -= 1 / v
        v += 1
    z = 1 / (v * v)
    return acc + math.log(v) - 0.5 / v - z * (1 / 12 - z * (1 / 120 - z * (1 / 252 - z * (1 / 240 - z / 132))))


def _i0_series(v):
    t, k, s = 1.0, 0, 1.0
    while t > 1e-17 * s:
        k += 1
        t *= (v / 2) ** 2 / (k * k)
        s += t
    return s


def _erfinv1(y):
    if abs(y) >= 1:
        return math.copysign(math.inf, y) if abs(y) == 1 else math.nan
    lo, hi = -6.0, 6.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if math.erf(mid) < y else (lo, mid)
    return 0.5 * (lo + hi)


def _vec(f):
    return lambda a: np.vectorize(f, otypes=[np.float64])(a) if np.size(a) else np.zeros(np.shape(a))


for _n, _r, _d in [("lgamma", _lgamma, "positive"), ("digamma", _vec(_digamma1), "positive"),
                   ("i0", _vec(_i0_series), "normal"), ("erfinv", _vec(_erfinv1), "unit")]:
    op(_n, (lambda n: lambda m, x: getattr(m, n)(x))(_n), _r, unary_cases(_d), dtypes=ALL, out=floating)
def _polygamma2(v):  # -2 zeta(3, v): 100 terms, then Euler-Maclaurin
    q = v + 100
    return -2 * (math.fsum(1 / (v + k) ** 3 for k in range(100)) + 1 / (2 * q * q) + 1 / (2 * q**3) + 1 / (4 * q**4)
                 - 1 / (12 * q**6))


op("polygamma", lambda m, x: m.polygamma(2, x), _vec(_polygamma2),
   unary_cases("positive"), dtypes=FLOATS, out=floating)
op("mvlgamma", lambda m, x: m.mvlgamma(x + 1, 2), lambda a: _lgamma(a + 1) + _lgamma(a + 0.5) + 0.5 * math.log(math.pi),
   unary_cases("positive"), dtypes=FLOATS, out=floating)

op("neg", lambda m, x: -x, lambda a: -a, unary_cases("normal"), dtypes=SIGNED)
op("neg_fn", lambda m, x: m.neg(x), lambda a: -a, unary_cases("normal"), dtypes=SIGNED)
op("abs", lambda m, x: m.abs(x), np.abs, unary_cases("nonzero"), dtypes=NUMERIC)
op("relu", lambda m, x: m.relu(x), lambda a: np.maximum(a, 0).astype(a.dtype), unary_cases("nonzero"), dtypes=NUMERIC)
op("gelu", lambda m, x: nn_functional(m).gelu(x), _gelu, unary_cases("normal"))
op("gelu_tanh", lambda m, x: nn_functional(m).gelu(x, approximate="tanh"), _gelu_tanh,
   unary_cases("normal"))
op("silu", lambda m, x: nn_functional(m).silu(x), lambda a: a * _sigmoid(a),
   unary_cases("normal"))
op("softplus", lambda m, x: nn_functional(m).softplus(x), _softplus,
   [(X((3, 4)),), (X((5,)),)])
op("softplus_beta", lambda m, x: nn_functional(m).softplus(x, beta=2.0, threshold=3.0),
   lambda a: np.where(2 * a > 3, a, np.log1p(np.exp(2 * np.minimum(a, 1.5))) / 2), [(X((4, 5), "nonzero"),)])


_SELU_A, _SELU_S = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
_ACTIVATIONS = [  # the activations of the formula sheet, through their functional entry points
    ("leaky_relu", lambda a: np.where(a > 0, a, 0.01 * a), "nonzero"),
    ("elu", lambda a: np.where(a > 0, a, np.expm1(a)), "normal"),
    ("celu", lambda a: np.where(a > 0, a, np.expm1(a)), "normal"),
    ("selu", lambda a: _SELU_S * np.where(a > 0, a, _SELU_A * np.expm1(a)), "normal"),
    ("mish", lambda a: a * np.tanh(np.log1p(np.exp(a))), "normal"),
    ("hardtanh", lambda a: np.clip(a, -1, 1), "normal"),
    ("relu6", lambda a: np.clip(a, 0, 6), "normal"),
    ("hardsigmoid", lambda a: np.clip(a / 6 + 0.5, 0, 1), "normal"),
    ("hardswish", lambda a: a * np.clip(a + 3, 0, 6) / 6, "normal"),
    ("logsigmoid", lambda a: -np.log1p(np.exp(-a)), "normal"),
    ("softsign", lambda a: a / (1 + np.abs(a)), "nonzero"),
]
for _n, _r, _d in _ACTIVATIONS:
    op("F." + _n, (lambda n: lambda m, x: getattr(_F(m), n)(x))(_n), _r, unary_cases(_d))
op("leaky_relu_slope", lambda m, x: _F(m).leaky_relu(x, 0.2), lambda a: np.where(a > 0, a, 0.2 * a),
   unary_cases("nonzero"))
op("elu_alpha", lambda m, x: _F(m).elu(x, alpha=0.5), lambda a: np.where(a > 0, a, 0.5 * np.expm1(a)),
   unary_cases("normal"))
op("hardtanh_range", lambda m, x: _F(m).hardtanh(x, -0.5, 2.0), lambda a: np.clip(a, -0.5, 2.0),
   unary_cases("normal"))
op("sign", lambda m, x: m.sign(x), np.sign, unary_cases("small"), dtypes=NUMERIC, grad=False)
op("floor", lambda m, x: m.floor(x), np.floor, unary_cases("halves"), dtypes=NUMERIC, grad=False)
op("ceil", lambda m, x: m.ceil(x), np.ceil, unary_cases("halves"), dtypes=NUMERIC, grad=False)
op("round", lambda m, x: m.round(x), np.round, unary_cases("halves"), dtypes=NUMERIC, grad=False)
op("trunc", lambda m, x: m.trunc(x), np.trunc, unary_cases("halves"), dtypes=NUMERIC, grad=False)
op("square", lambda m, x: m.square(x), np.square, unary_cases("normal"), dtypes=NUMERIC)
op("logical_not", lambda m, x: m.logical_not(x), np.logical_not, unary_cases("small"), dtypes=ALL, out=boolean)
op("isnan", lambda m, x: m.isnan(x), np.isnan, unary_cases("special"), dtypes=ALL, out=boolean)
op("isinf", lambda m, x: m.isinf(x), np.isinf, unary_cases("special"), dtypes=ALL, out=boolean)
op("isfinite", lambda m, x: m.isfinite(x), np.isfinite, unary_cases("special"), dtypes=ALL, out=boolean)
op("signbit", lambda m, x: m.signbit(x), np.signbit, unary_cases("zeros"), dtypes=NUMERIC, out=boolean)
op("frac", lambda m, x: m.frac(x), lambda a: a - np.trunc(a), unary_cases("normal"))
op("nan_to_num", lambda m, x: m.nan_to_num(x, nan=0.5, posinf=100.0, neginf=-100.0),
   lambda a: np.nan_to_num(a, nan=0.5, posinf=100.0, neginf=-100.0), unary_cases("special"), grad=False)
op("nan_to_num_uneven", lambda m, x: m.nan_to_num(x, nan=-1.0, posinf=8.0, neginf=-3.0),
   lambda a: np.nan_to_num(a, nan=-1.0, posinf=8.0, neginf=-3.0), unary_cases("special"), grad=False)

# ---------------------------------------------------------------- binary elementwise
op("add", lambda m, a, b: a + b, np.add, bcast("normal", "normal"), dtypes=ALL,
   torch_fn=lambda m, a, b: a + b)
op("add_alpha", lambda m, a, b: m.add(a, b, alpha=2), lambda a, b: a + 2 * b, bcast("normal", "normal"),
   dtypes=SIGNED)
op("sub", lambda m, a, b: a - b, np.subtract, bcast("normal", "normal"), dtypes=NUMERIC)
op("mul", lambda m, a, b: a * b, np.multiply, bcast("normal", "normal"), dtypes=ALL)
op("div", lambda m, a, b: a / b, np.true_divide, bcast("normal", "nonzero"), dtypes=ALL, out=floating)
op("floordiv", lambda m, a, b: a // b, np.floor_divide, bcast("normal", "nonzero"), dtypes=NUMERIC, grad=False)


op("remainder", lambda m, a, b: a % b, np.mod, bcast("normal", "nonzero"), dtypes=NUMERIC)
op("fmod", lambda m, a, b: m.fmod(a, b), np.fmod, bcast("normal", "nonzero"), dtypes=NUMERIC)
op("pow", lambda m, a, b: a**b, np.power, bcast("positive", "exponent"), dtypes=SIGNED + ("uint8",),
   tol={"bfloat16": (3e-2, 3e-2), "float16": (4e-3, 4e-3)})
op("maximum", lambda m, a, b: m.maximum(a, b), np.maximum, bcast("distinct", "distinct"), dtypes=ALL)
op("minimum", lambda m, a, b: m.minimum(a, b), np.minimum, bcast("distinct", "distinct"), dtypes=ALL)
op("maximum_ties", lambda m, a, b: m.maximum(a, b), np.maximum, [(X((4, 5), "small"), X((4, 5), "small"))], fd=False)
op("atan2", lambda m, a, b: m.atan2(a, b), np.arctan2, bcast("nonzero", "nonzero"))
for _n, _r in [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
               ("gt", np.greater), ("ge", np.greater_equal)]:
    op(_n, (lambda n: lambda m, a, b: getattr(m, n)(a, b))(_n), _r, bcast("small", "small"), dtypes=ALL, out=boolean)
op("lt_operator", lambda m, a, b: a < b, np.less, bcast("small", "small"), dtypes=ALL, out=boolean)
op("eq_operator", lambda m, a, b: a == b, np.equal, bcast("small", "small"), dtypes=ALL, out=boolean)
for _n, _r in [("logical_and", np.logical_and), ("logical_or", np.logical_or), ("logical_xor", np.logical_xor)]:
    op(_n, (lambda n: lambda m, a, b: getattr(m, n)(a, b))(_n), _r, bcast("small", "small"), dtypes=ALL, out=boolean)
# bitwise ops: integers and bool (shifts: integers), through the functions and the operators
_BITS = INTS + ("bool",)
for _n, _r in [("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or), ("bitwise_xor", np.bitwise_xor)]:
    op(_n, (lambda n: lambda m, a, b: getattr(m, n)(a, b))(_n), _r, bcast("normal", "normal"), dtypes=_BITS,
       grad=False)
op("and_operator", lambda m, a, b: a & b, np.bitwise_and, bcast("normal", "normal"), dtypes=_BITS, grad=False)
op("or_operator", lambda m, a, b: a | b, np.bitwise_or, bcast("normal", "normal"), dtypes=_BITS, grad=False)
op("xor_operator", lambda m, a, b: a ^ b, np.bitwise_xor, bcast("normal", "normal"), dtypes=_BITS, grad=False)
op("invert_operator", lambda m, a: ~a, np.invert, unary_cases("normal"), dtypes=_BITS, grad=False)
op("bitwise_not", lambda m, a: m.bitwise_not(a), np.invert, unary_cases("normal"), dtypes=_BITS, grad=False)
op("and_scalar", lambda m, a: a & 6, lambda a: np.bitwise_and(a, 6), unary_cases("normal"), dtypes=INTS, grad=False)
op("ror_scalar", lambda m, a: 9 | a, lambda a: np.bitwise_or(9, a), unary_cases("normal"), dtypes=INTS, grad=False)
op("lshift", lambda m, a, b: a << b, np.left_shift, bcast("normal", "exponent"), dtypes=INTS, grad=False)
op("rshift", lambda m, a, b: m.bitwise_right_shift(a, b), np.right_shift, bcast("normal", "exponent"), dtypes=INTS,
   grad=False)
op("rshift_scalar", lambda m, a: a >> 1, lambda a: np.right_shift(a, 1), unary_cases("normal"), dtypes=INTS,
   grad=False)

# scalar operands and reversed operators (Python numbers keep PyTorch's "weak" type)
op("add_scalar", lambda m, a: a + 2, lambda a: a + 2, unary_cases("normal"), dtypes=NUMERIC)
op("radd_float", lambda m, a: 1.5 + a, lambda a: 1.5 + a, unary_cases("normal"), dtypes=NUMERIC, out=floating)
op("rsub", lambda m, a: 3 - a, lambda a: 3 - a, unary_cases("normal"), dtypes=SIGNED)
op("rmul_float", lambda m, a: 2.5 * a, lambda a: 2.5 * a, unary_cases("normal"), dtypes=NUMERIC, out=floating)
op("rtruediv", lambda m, a: 2 / a, lambda a: 2 / a, unary_cases("nonzero"), dtypes=NUMERIC, out=floating)
op("rfloordiv", lambda m, a: 7 // a, lambda a: np.floor_divide(7, a), unary_cases("nonzero"), dtypes=NUMERIC,
   grad=False)
op("rmod", lambda m, a: 7 % a, lambda a: np.mod(7, a), unary_cases("nonzero"), dtypes=NUMERIC, grad=False)
op("mod_scalar", lambda m, a: a % 3, lambda a: np.mod(a, 3), unary_cases("normal"), dtypes=SIGNED)
op("pow_scalar2", lambda m, a: a**2, lambda a: a**2, unary_cases("normal"), dtypes=NUMERIC)
op("pow_scalar_half", lambda m, a: a**0.5, lambda a: a**0.5, unary_cases("positive"), dtypes=FLOATS)
op("pow_scalar_neg", lambda m, a: m.pow(a, -1.5), lambda a: a**-1.5, unary_cases("positive"), dtypes=FLOATS)
# the exponents with a formula of their own (products and a square root)
op("pow_scalar3", lambda m, a: a**3.0, lambda a: a**3.0, unary_cases("normal"), dtypes=FLOATS)
op("pow_scalar4", lambda m, a: m.pow(a, 4), lambda a: a**4.0, unary_cases("normal"), dtypes=FLOATS)
op("pow_scalar0", lambda m, a: a**0.0, lambda a: a**0.0, unary_cases("normal"), dtypes=FLOATS)
op("pow_scalar_1_5", lambda m, a: a**1.5, lambda a: a**1.5, unary_cases("positive"), dtypes=FLOATS)
op("pow_scalar_neg_half", lambda m, a: a**-0.5, lambda a: a**-0.5, unary_cases("positive"), dtypes=FLOATS)
op("pow_scalar_neg1", lambda m, a: a**-1.0, lambda a: a**-1.0, unary_cases("positive"), dtypes=FLOATS)
op("pow_scalar_neg2", lambda m, a: a**-2, lambda a: a**-2.0, unary_cases("positive"), dtypes=FLOATS)
op("rpow", lambda m, a: 2**a, lambda a: np.power(2.0, a), unary_cases("normal"), dtypes=FLOATS)
op("rpow_int", lambda m, a: 2**a, lambda a: np.power(2, a), unary_cases("exponent"), dtypes=("int32", "int64"))
op("div_int_by_int", lambda m, a: a / 2, lambda a: a / 2, unary_cases("normal"), dtypes=NUMERIC + ("bool",),
   out=floating)

# ---------------------------------------------------------------- ternary / parametrised
op("where", lambda m, c, a, b: m.where(c, a, b), np.where,
   [(M((3, 4)), X((3, 4)), X((3, 4))), (M((3, 1)), X((4,)), X((3, 4))), (M((2, 3, 4)), X((3, 4)), X(()))],
   dtypes=ALL)
op("where_scalar", lambda m, c, a: m.where(c, a, 0.5), lambda c, a: np.where(c, a, 0.5),
   [(M((3, 4)), X((3, 4)))])
op("masked_fill", lambda m, x, k: x.masked_fill(k, 2), lambda x, k: np.where(k, np.array(2).astype(x.dtype), x),
   [(X((3, 4)), M((3, 4))), (X((3, 4)), M((4,))), (X((2, 3, 4)), M((3, 1)))], dtypes=ALL)
op("masked_fill_float", lambda m, x, k: x.masked_fill(k, -1.25), lambda x, k: np.where(k, -1.25, x),
   [(X((3, 4)), M((3, 4)))])
op("lerp", lambda m, a, b: m.lerp(a, b, 0.3), lambda a, b: a + 0.3 * (b - a), bcast("normal", "normal"))
op("lerp_tensor", lambda m, a, b, w: m.lerp(a, b, w), lambda a, b, w: a + w * (b - a),
   [(X((3, 4)), X((3, 4)), X((3, 4), "prob")), (X((3, 4)), X((4,)), X((3, 1), "prob"))])
op("clamp", lambda m, x: m.clamp(x, -0.5, 0.7), lambda x: np.clip(x, -0.5, 0.7), unary_cases("nonzero"))
op("clamp_int", lambda m, x: m.clamp(x, -1, 2), lambda x: np.clip(x, -1, 2).astype(x.dtype), unary_cases("normal"),
   dtypes=("int32", "int64"))
op("clamp_int_float_bounds", lambda m, x: m.clamp(x, -0.5, 1.5),  # promoted to float32, as in PyTorch
   lambda x: np.clip(x, -0.5, 1.5), unary_cases("normal"), dtypes=("int32", "int64", "uint8"), out=floating)
op("clamp_min", lambda m, x: x.clamp(min=0.3), lambda x: np.maximum(x, 0.3), unary_cases("nonzero"))
op("clamp_max", lambda m, x: x.clamp(max=0.3), lambda x: np.minimum(x, 0.3), unary_cases("nonzero"))
op("clamp_tensor", lambda m, x, lo, hi: m.clamp(x, lo, hi), lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi),
   [(X((3, 4), "distinct"), X((4,), "distinct"), X((3, 1), "distinct"))])
op("clip", lambda m, x: m.clip(x, -0.5, 0.5), lambda x: np.clip(x, -0.5, 0.5), unary_cases("nonzero"))
