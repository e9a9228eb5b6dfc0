"""The op table that drives the op tests.

Each ``OpSpec`` names an op, gives one function ``fn(m, *inputs)`` written against a module ``m``
(``sneppx_core`` or ``torch``: both speak the same API, so one function drives both), a NumPy
reference ``ref(*arrays)``, the dtypes the op supports, the rule for the result dtype, and a list
of cases (the inputs' shapes and value domains). ``test_ops.py`` runs every spec:

* forward against NumPy for every supported dtype on contiguous, transposed, sliced (stepped)
  and broadcast inputs;
* backward against float64 central finite differences (``sneppx_core.testing``);
* forward and backward against PyTorch under ``pytest -m parity``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

FLOATS = ("float32", "float64", "float16", "bfloat16")
INTS = ("int32", "int64", "uint8")
ALL = FLOATS + INTS + ("bool",)
NUMERIC = FLOATS + INTS
SIGNED = FLOATS + ("int32", "int64")
BLAS = ("float32", "float64", "float16", "bfloat16", "int32", "int64")


# ---------------------------------------------------------------- input descriptions
@dataclass(frozen=True)
class X:
    """A data input with the dtype under test. ``domain`` picks the values (see ``values``)."""

    shape: tuple
    domain: str = "normal"
    grad: bool = True


@dataclass(frozen=True)
class I:  # noqa: E742
    """An int64 index input with values in [low, high); ``perm_axis`` makes each 1-D slice along that
    axis distinct (scatter needs unique targets)."""

    shape: tuple
    high: int
    low: int = 0
    perm_axis: int | None = None


@dataclass(frozen=True)
class M:
    """A bool mask input."""

    shape: tuple


def _float_values(rng, shape, domain):
    n = int(np.prod(shape)) if shape else 1
    if domain == "normal":
        v = rng.standard_normal(n)
    elif domain == "positive":
        v = rng.uniform(0.5, 2.0, n)
    elif domain == "unit":
        v = rng.uniform(-0.9, 0.9, n)
    elif domain == "nonzero":  # away from 0, the kink of abs/relu/sign and the pole of 1/x
        v = rng.choice([-1.0, 1.0], n) * rng.uniform(0.25, 2.0, n)
    elif domain == "distinct":  # no ties, exactly representable in bfloat16
        v = (rng.permutation(n) - n / 2) * 0.25
    elif domain == "small":  # a few repeated values: ties for comparisons
        v = rng.integers(-2, 3, n).astype(np.float64) * 0.5
    elif domain == "halves":  # rounding cases, including exact .5
        v = rng.integers(-8, 9, n) * 0.5 + rng.choice([0.0, 0.25], n)
    elif domain == "special":
        v = rng.standard_normal(n)
        v[rng.random(n) < 0.3] = np.nan
        v[rng.random(n) < 0.2] = np.inf
        v[rng.random(n) < 0.2] = -np.inf
    elif domain == "zeros":  # exact zeros among values away from zero (prod's special cases)
        v = rng.choice([-1.0, 1.0], n) * rng.uniform(0.5, 1.5, n)
        v[rng.random(n) < 0.3] = 0.0
    elif domain == "prob":
        v = rng.uniform(0.1, 1.0, n)
    elif domain == "exponent":
        v = rng.uniform(-1.5, 2.5, n)
    else:
        raise ValueError(domain)
    return v.reshape(shape)


def _int_values(rng, shape, domain, unsigned):
    n = int(np.prod(shape)) if shape else 1
    lo = 0 if unsigned else -5
    if domain in ("positive", "prob"):
        v = rng.integers(1, 4, n)
    elif domain == "nonzero":
        v = rng.integers(1, 6, n) * (1 if unsigned else rng.choice([-1, 1], n))
    elif domain == "distinct":
        v = rng.permutation(n) - (0 if unsigned else n // 2)
    elif domain in ("small", "unit"):
        v = rng.integers(0 if unsigned else -2, 3, n)
    elif domain == "exponent":
        v = rng.integers(0, 4, n)
    else:
        v = rng.integers(lo, 6, n)
    return v.reshape(shape)


def values(rng, arg, dtype):
    """NumPy values (float64 or int64 or bool) for one input description and dtype."""
    if isinstance(arg, M):
        return rng.random(arg.shape) < 0.5
    if isinstance(arg, I):
        if arg.perm_axis is None:
            return rng.integers(arg.low, arg.high, arg.shape)
        ax = arg.perm_axis
        moved = list(arg.shape)
        k = moved.pop(ax)
        rows = [rng.permutation(arg.high)[:k] for _ in range(int(np.prod(moved)) if moved else 1)]
        a = np.stack(rows).reshape(moved + [k])
        return np.moveaxis(a, -1, ax)
    if dtype == "bool":
        return rng.random(arg.shape) < 0.5
    if dtype in INTS:
        return _int_values(rng, arg.shape, arg.domain, dtype == "uint8")
    return _float_values(rng, arg.shape, arg.domain)


def arg_dtype(arg, dtype):
    """The dtype name of an input: the tested dtype for data, int64 for indices, bool for masks."""
    return dtype if isinstance(arg, X) else ("int64" if isinstance(arg, I) else "bool")


# ---------------------------------------------------------------- result dtypes (PyTorch's rules)
_ORDER = ["bool", "uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


def promote(*dts):
    """PyTorch's type promotion for same-rank tensors."""
    out = dts[0]
    for d in dts[1:]:
        if {out, d} == {"float16", "bfloat16"}:
            out = "float32"
        elif _ORDER.index(d) > _ORDER.index(out):
            out = d
    return out


def same(*dts):
    return promote(*dts)


def floating(*dts):
    d = promote(*dts)
    return d if d in FLOATS else "float32"


def boolean(*dts):
    return "bool"


def any_all(*dts):
    return "uint8" if dts[0] == "uint8" else "bool"  # PyTorch keeps uint8 for all/any


def int64(*dts):
    return "int64"


def summed(*dts):
    d = dts[0]
    return d if d in FLOATS else "int64"


def first(*dts):
    return dts[0]


def values_indices(*dts):
    return (dts[0], "int64")


# ---------------------------------------------------------------- the spec
@dataclass
class OpSpec:
    """One op: ``fn(m, *inputs)``, the NumPy reference ``ref(*arrays)`` and what it supports."""

    name: str
    fn: Callable
    ref: Callable
    cases: list
    dtypes: tuple = FLOATS
    out: Callable = same
    grad: bool = True  # differentiable for floating inputs
    layouts: tuple = ("contiguous", "transposed", "sliced", "broadcast")
    torch_fn: Callable | None = None  # when torch needs a different spelling
    tol: dict = field(default_factory=dict)  # dtype -> (rtol, atol) overrides
    grad_tol: tuple = (1e-4, 1e-6)  # (rtol, atol) against finite differences
    torch_grad: bool = True  # PyTorch can differentiate it (its scatter cannot when src > index)
    fd: bool = True  # finite differences apply (False at ties, where only a subgradient exists)
    index_out: bool = False  # integer results that are positions (compare exactly)

    @property
    def id(self):
        return self.name


TOL = {
    "float64": (1e-9, 1e-12),
    "float32": (2e-5, 2e-6),
    "float16": (2e-3, 2e-3),
    "bfloat16": (1.6e-2, 1.6e-2),
}


def tolerance(spec, dtype):
    return spec.tol.get(dtype, TOL.get(dtype, (0, 0)))


OPS: list[OpSpec] = []


def op(name, fn, ref, cases, **kw):
    OPS.append(OpSpec(name, fn, ref, cases, **kw))


S34 = [(X((3, 4)),), (X((2, 3, 4)),), (X(()),)]


def unary_cases(domain):
    return [tuple(X(a.shape, domain) for a in c) for c in S34]


# ---------------------------------------------------------------- unary elementwise
def _sigmoid(a):
    return 1 / (1 + np.exp(-a))


def _erf(a):
    return np.vectorize(math.erf, otypes=[np.float64])(a) if np.size(a) else np.zeros(np.shape(a))


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
    ("sigmoid", _sigmoid, "normal"), ("erf", _erf, "normal"), ("reciprocal", lambda a: 1 / a, "nonzero"),
]
for _n, _r, _d in _FLOAT_UNARY:
    op(_n, (lambda n: lambda m, x: getattr(m, n)(x))(_n), _r, unary_cases(_d), dtypes=ALL, out=floating)

op("neg", lambda m, x: -x, lambda a: -a, unary_cases("normal"), dtypes=SIGNED)
op("neg_fn", lambda m, x: m.neg(x), lambda a: -a, unary_cases("normal"), dtypes=SIGNED)
op("abs", lambda m, x: m.abs(x), np.abs, unary_cases("nonzero"), dtypes=NUMERIC)
op("relu", lambda m, x: m.relu(x), lambda a: np.maximum(a, 0).astype(a.dtype), unary_cases("nonzero"), dtypes=NUMERIC)
op("gelu", lambda m, x: m.nn.functional.gelu(x) if hasattr(m, "nn") else m.gelu(x), _gelu, unary_cases("normal"))
op("gelu_tanh", lambda m, x: (m.nn.functional if hasattr(m, "nn") else m).gelu(x, approximate="tanh"), _gelu_tanh,
   unary_cases("normal"))
op("silu", lambda m, x: (m.nn.functional if hasattr(m, "nn") else m).silu(x), lambda a: a * _sigmoid(a),
   unary_cases("normal"))
op("softplus", lambda m, x: (m.nn.functional if hasattr(m, "nn") else m).softplus(x), _softplus,
   [(X((3, 4)),), (X((5,)),)])
op("softplus_beta", lambda m, x: (m.nn.functional if hasattr(m, "nn") else m).softplus(x, beta=2.0, threshold=3.0),
   lambda a: np.where(2 * a > 3, a, np.log1p(np.exp(2 * np.minimum(a, 1.5))) / 2), [(X((4, 5), "nonzero"),)])
op("sign", lambda m, x: m.sign(x), np.sign, unary_cases("small"), dtypes=NUMERIC, grad=False)
op("floor", lambda m, x: m.floor(x), np.floor, unary_cases("halves"), dtypes=NUMERIC, grad=False)
op("ceil", lambda m, x: m.ceil(x), np.ceil, unary_cases("halves"), dtypes=NUMERIC, grad=False)
op("round", lambda m, x: m.round(x), np.round, unary_cases("halves"), dtypes=NUMERIC, grad=False)
op("logical_not", lambda m, x: m.logical_not(x), np.logical_not, unary_cases("small"), dtypes=ALL, out=boolean)
op("isnan", lambda m, x: m.isnan(x), np.isnan, unary_cases("special"), dtypes=ALL, out=boolean)
op("isinf", lambda m, x: m.isinf(x), np.isinf, unary_cases("special"), dtypes=ALL, out=boolean)
op("isfinite", lambda m, x: m.isfinite(x), np.isfinite, unary_cases("special"), dtypes=ALL, out=boolean)

# ---------------------------------------------------------------- binary elementwise
BCAST = [(X((3, 4)), X((3, 4))), (X((3, 4)), X((4,))), (X((3, 1)), X((1, 4))), (X((2, 3, 4)), X((3, 1))),
         (X((3, 4)), X(()))]


def bcast(d1, d2):
    return [(X(a.shape, d1), X(b.shape, d2)) for a, b in BCAST]


op("add", lambda m, a, b: a + b, np.add, bcast("normal", "normal"), dtypes=ALL,
   torch_fn=lambda m, a, b: a + b)
op("add_alpha", lambda m, a, b: m.add(a, b, alpha=2), lambda a, b: a + 2 * b, bcast("normal", "normal"),
   dtypes=SIGNED)
op("sub", lambda m, a, b: a - b, np.subtract, bcast("normal", "normal"), dtypes=NUMERIC)
op("mul", lambda m, a, b: a * b, np.multiply, bcast("normal", "normal"), dtypes=ALL)
op("div", lambda m, a, b: a / b, np.true_divide, bcast("normal", "nonzero"), dtypes=ALL, out=floating)
op("floordiv", lambda m, a, b: a // b, np.floor_divide, bcast("normal", "nonzero"), dtypes=NUMERIC, grad=False)


op("remainder", lambda m, a, b: a % b, np.mod, bcast("normal", "nonzero"), dtypes=NUMERIC, grad=False)
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

# scalar operands and reversed operators (Python numbers keep PyTorch's "weak" type)
op("add_scalar", lambda m, a: a + 2, lambda a: a + 2, unary_cases("normal"), dtypes=NUMERIC)
op("radd_float", lambda m, a: 1.5 + a, lambda a: 1.5 + a, unary_cases("normal"), dtypes=NUMERIC, out=floating)
op("rsub", lambda m, a: 3 - a, lambda a: 3 - a, unary_cases("normal"), dtypes=SIGNED)
op("rmul_float", lambda m, a: 2.5 * a, lambda a: 2.5 * a, unary_cases("normal"), dtypes=NUMERIC, out=floating)
op("rtruediv", lambda m, a: 2 / a, lambda a: 2 / a, unary_cases("nonzero"), dtypes=NUMERIC, out=floating)
op("rfloordiv", lambda m, a: 7 // a, lambda a: np.floor_divide(7, a), unary_cases("nonzero"), dtypes=NUMERIC,
   grad=False)
op("rmod", lambda m, a: 7 % a, lambda a: np.mod(7, a), unary_cases("nonzero"), dtypes=NUMERIC, grad=False)
op("mod_scalar", lambda m, a: a % 3, lambda a: np.mod(a, 3), unary_cases("normal"), dtypes=SIGNED, grad=False)
op("pow_scalar2", lambda m, a: a**2, lambda a: a**2, unary_cases("normal"), dtypes=NUMERIC)
op("pow_scalar_half", lambda m, a: a**0.5, lambda a: a**0.5, unary_cases("positive"), dtypes=FLOATS)
op("pow_scalar_neg", lambda m, a: m.pow(a, -1.5), lambda a: a**-1.5, unary_cases("positive"), dtypes=FLOATS)
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
op("clamp_min", lambda m, x: x.clamp(min=0.3), lambda x: np.maximum(x, 0.3), unary_cases("nonzero"))
op("clamp_max", lambda m, x: x.clamp(max=0.3), lambda x: np.minimum(x, 0.3), unary_cases("nonzero"))
op("clamp_tensor", lambda m, x, lo, hi: m.clamp(x, lo, hi), lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi),
   [(X((3, 4), "distinct"), X((4,), "distinct"), X((3, 1), "distinct"))])
op("clip", lambda m, x: m.clip(x, -0.5, 0.5), lambda x: np.clip(x, -0.5, 0.5), unary_cases("nonzero"))

# ---------------------------------------------------------------- reductions
R3 = (X((3, 4, 5)),)
R3d = (X((3, 4, 5), "distinct"),)


def _red(name, call, ref, dtypes, out=same, domain="normal", grad=True, **kw):
    cases = [(X((3, 4, 5), domain),), (X((6,), domain),)]
    op(name, call, ref, cases, dtypes=dtypes, out=out, grad=grad, **kw)


def _axes(a, d):
    return d if a.ndim > 1 else -1


def _acc(a):
    return np.float64 if a.dtype.kind == "f" else np.int64


_sum_tol = {"float16": (4e-3, 4e-3), "bfloat16": (3e-2, 5e-2)}
_red("sum_all", lambda m, x: x.sum(), lambda a: np.sum(a, dtype=_acc(a)), ALL, out=summed, tol=_sum_tol)
for _dim, _kd, _tag in [(1, False, "d1"), (-1, True, "dlast_keep"), ((0, 2), False, "d02"),
                        ((0, -1), True, "d0last_keep")]:
    _red("sum_" + _tag, (lambda d, k: lambda m, x: x.sum(dim=_axes(x, d), keepdim=k))(_dim, _kd),
         (lambda d, k: lambda a: np.sum(a, axis=_axes(a, d), keepdims=k, dtype=_acc(a)))(_dim, _kd), ALL,
         out=summed, tol=_sum_tol)
op("sum_fn_dtype", lambda m, x: m.sum(x, dim=0, dtype=m.float64), lambda a: np.sum(a.astype(np.float64), 0),
   [(X((3, 4)),)], dtypes=ALL, out=lambda *d: "float64", grad=False)


def _mk(method, d, k, **kw):
    return lambda m, x: getattr(x, method)(dim=_axes(x, d), keepdim=k, **kw)


op("mean_all", lambda m, x: x.mean(), np.mean, [R3, (X(()),)])
op("mean_d1", _mk("mean", 1, False), lambda a: np.mean(a, axis=_axes(a, 1)), [R3, (X((6,)),)])
op("mean_d02_keep", _mk("mean", (0, 2), True), lambda a: np.mean(a, axis=_axes(a, (0, 2)), keepdims=True), [R3])
for _c in (0, 1, 2):
    op(f"var_c{_c}", (lambda c: lambda m, x: x.var(dim=_axes(x, (0, 2)), correction=c))(_c),
       (lambda c: lambda a: np.var(a, axis=_axes(a, (0, 2)), ddof=c))(_c), [R3, (X((6,)),)],
       tol={"float16": (5e-3, 5e-3), "bfloat16": (4e-2, 4e-2)})
    op(f"std_c{_c}", (lambda c: lambda m, x: x.std(dim=_axes(x, 1), correction=c, keepdim=True))(_c),
       (lambda c: lambda a: np.std(a, axis=_axes(a, 1), ddof=c, keepdims=True))(_c), [R3, (X((6,)),)],
       tol={"float16": (5e-3, 5e-3), "bfloat16": (4e-2, 4e-2)})
op("var_all", lambda m, x: x.var(), lambda a: np.var(a, ddof=1), [R3])
op("std_unbiased_false", lambda m, x: x.std(1, False), lambda a: np.std(a, axis=1), [R3])
op("prod_all", lambda m, x: x.prod(), lambda a: np.prod(a, dtype=np.float64 if a.dtype.kind == "f" else np.int64),
   [(X((2, 3), "positive"),), (X((4,), "unit"),)], dtypes=ALL, out=summed)
op("prod_d1", lambda m, x: x.prod(dim=-1, keepdim=True),
   lambda a: np.prod(a, axis=-1, keepdims=True, dtype=np.float64 if a.dtype.kind == "f" else np.int64),
   [(X((3, 4), "unit"),), (X((2, 3, 4), "positive"),)], dtypes=ALL, out=summed)
op("prod_with_zero", lambda m, x: (x * (x > 0)).prod(dim=1),
   lambda a: np.prod(a * (a > 0), axis=1), [(X((4, 3), "nonzero"),)], dtypes=("float64", "float32"))
op("prod_zeros_d1", lambda m, x: x.prod(dim=1), lambda a: np.prod(a, axis=1), [(X((8, 3), "zeros"),)])
op("prod_zeros_all", lambda m, x: x.prod(), np.prod, [(X((5,), "zeros"),), (X((2, 2), "zeros"),)])
for _n, _r in [("amax", np.max), ("amin", np.min)]:
    op(_n + "_all", (lambda n: lambda m, x: getattr(m, n)(x))(_n), _r, [R3d, (X(()),)], dtypes=ALL)
    op(_n + "_d02", (lambda n: lambda m, x: getattr(x, n)(dim=(0, 2)))(_n), (lambda r: lambda a: r(a, axis=(0, 2)))(_r),
       [R3d], dtypes=ALL)
    op(_n + "_ties", (lambda n: lambda m, x: getattr(x, n)(dim=1, keepdim=True))(_n),
       (lambda r: lambda a: r(a, axis=1, keepdims=True))(_r), [(X((3, 4), "small"),)], fd=False)
op("max_all", lambda m, x: x.max(), np.max, [R3d], dtypes=ALL)
op("min_all", lambda m, x: m.min(x), np.min, [R3d], dtypes=ALL)
op("max_all_ties", lambda m, x: x.max(), np.max, [(X((3, 4), "small"),)], fd=False)
op("max_dim", lambda m, x: tuple(x.max(dim=1)), lambda a: (np.max(a, 1), np.argmax(a, 1)), [R3d, (X((3, 4), "distinct"),)],
   dtypes=ALL, out=values_indices)
op("min_dim_keep", lambda m, x: tuple(m.min(x, -1, keepdim=True)),
   lambda a: (np.min(a, -1, keepdims=True), np.argmin(a, -1, keepdims=True)), [R3d, (X((7,), "distinct"),)], dtypes=ALL, out=values_indices)
op("max_elementwise", lambda m, a, b: m.max(a, b), np.maximum, bcast("distinct", "distinct"), dtypes=NUMERIC)
op("argmax_all", lambda m, x: x.argmax(), np.argmax, [R3d], dtypes=NUMERIC, out=int64, grad=False)
op("argmax_d1", lambda m, x: m.argmax(x, dim=1), lambda a: np.argmax(a, 1), [R3d], dtypes=NUMERIC, out=int64, grad=False)
op("argmin_keep", lambda m, x: x.argmin(dim=-1, keepdim=True), lambda a: np.argmin(a, -1, keepdims=True), [R3d],
   dtypes=NUMERIC, out=int64, grad=False)
op("argmax_ties", lambda m, x: x.argmax(dim=1), lambda a: np.argmax(a, 1), [(X((5, 6), "small"),)], dtypes=NUMERIC,
   out=int64, grad=False)


def _lse(a, axis, keepdims=False):
    mx = np.max(a, axis=axis, keepdims=True)
    r = np.log(np.sum(np.exp(a - mx), axis=axis, keepdims=True)) + mx
    return r if keepdims else np.squeeze(r, axis=axis)


op("logsumexp_d1", lambda m, x: m.logsumexp(x, dim=1), lambda a: _lse(a, 1), [R3, (X((3, 4)),)],
   tol={"bfloat16": (2e-2, 3e-2)})
op("logsumexp_d02_keep", lambda m, x: x.logsumexp(dim=(0, 2), keepdim=True), lambda a: _lse(a, (0, 2), True), [R3],
   tol={"bfloat16": (2e-2, 3e-2)})
op("logsumexp_int", lambda m, x: x.logsumexp(dim=-1), lambda a: _lse(a.astype(np.float64), -1), [(X((3, 4)),)],
   dtypes=("int32", "int64"), out=floating, grad=False)
for _p, _pr in [(2, 2), (1, 1), (3, 3), (float("inf"), np.inf), (0, 0)]:
    op(f"norm_p{_p}", (lambda p: lambda m, x: x.norm(p=p))(_p),
       (lambda p: lambda a: np.linalg.norm(a.reshape(-1), ord=p))(_pr), [(X((3, 4), "nonzero"),)],
       grad=_p != 0, tol={"bfloat16": (3e-2, 3e-2), "float16": (4e-3, 4e-3)})
op("norm_dim", lambda m, x: x.norm(dim=1, keepdim=True), lambda a: np.linalg.norm(a, axis=1, keepdims=True),
   [R3], tol={"bfloat16": (3e-2, 3e-2), "float16": (4e-3, 4e-3)})
op("norm_dims", lambda m, x: m.norm(x, p=1, dim=(0, 2)), lambda a: np.abs(a).sum(axis=(0, 2)), [(X((3, 4, 5), "nonzero"),)],
   tol={"bfloat16": (3e-2, 3e-2), "float16": (4e-3, 4e-3)})
for _n, _r in [("all", np.all), ("any", np.any)]:
    op(_n, (lambda n: lambda m, x: getattr(x, n)())(_n), _r, [(X((3, 4), "small"),), (X((2, 3), "nonzero"),)],
       dtypes=ALL, out=any_all)
    op(_n + "_dim", (lambda n: lambda m, x: getattr(m, n)(x, dim=1, keepdim=True))(_n),
       (lambda r: lambda a: r(a, axis=1, keepdims=True))(_r), [(X((3, 4, 5), "small"),)], dtypes=ALL, out=any_all)
    op(_n + "_dims", (lambda n: lambda m, x: getattr(m, n)(x, dim=(0, 2)))(_n),
       (lambda r: lambda a: r(a, axis=(0, 2)))(_r), [(X((3, 4, 2), "small"),)], dtypes=ALL, out=any_all)
op("cumsum_d0", lambda m, x: x.cumsum(0), lambda a: np.cumsum(a, 0, dtype=np.float64 if a.dtype.kind == "f" else np.int64),
   [R3, (X((6,)),)], dtypes=ALL, out=summed, tol={"float16": (4e-3, 4e-3), "bfloat16": (3e-2, 5e-2)})
op("cumsum_dlast", lambda m, x: m.cumsum(x, dim=-1),
   lambda a: np.cumsum(a, -1, dtype=np.float64 if a.dtype.kind == "f" else np.int64),
   [R3], dtypes=ALL, out=summed, tol={"float16": (4e-3, 4e-3), "bfloat16": (3e-2, 5e-2)})

# ---------------------------------------------------------------- linear algebra
MM = [(X((4,)), X((4,))), (X((3, 4)), X((4,))), (X((4,)), X((4, 5))), (X((3, 4)), X((4, 5))),
      (X((2, 3, 4)), X((2, 4, 5))), (X((2, 3, 4)), X((4, 5))), (X((3, 4)), X((2, 4, 5))),
      (X((2, 1, 3, 4)), X((3, 4, 2))), (X((2, 3, 4)), X((4,)))]
_mm_tol = {"float16": (4e-3, 8e-3), "bfloat16": (2e-2, 6e-2), "float32": (1e-5, 1e-5)}
op("matmul", lambda m, a, b: a @ b, np.matmul, MM, dtypes=BLAS, tol=_mm_tol)
op("matmul_fn", lambda m, a, b: m.matmul(a, b), np.matmul, [(X((5, 7)), X((7, 3)))], dtypes=BLAS, tol=_mm_tol)
op("bmm", lambda m, a, b: m.bmm(a, b), np.matmul, [(X((2, 3, 4)), X((2, 4, 5)))], dtypes=BLAS, tol=_mm_tol)
op("mm", lambda m, a, b: m.mm(a, b), np.matmul, [(X((3, 4)), X((4, 2)))], dtypes=BLAS, tol=_mm_tol)
op("outer", lambda m, a, b: m.outer(a, b), np.outer, [(X((3,)), X((4,)))], dtypes=NUMERIC)
op("dot", lambda m, a, b: m.dot(a, b), np.dot, [(X((5,)), X((5,)))], dtypes=BLAS, tol=_mm_tol)

# ---------------------------------------------------------------- shapes and views
op("reshape", lambda m, x: x.reshape(-1, 2), lambda a: a.reshape(-1, 2), [(X((3, 4)),), (X((2, 3, 4)),)], dtypes=ALL)
op("reshape_fn", lambda m, x: m.reshape(x, (2, -1)), lambda a: a.reshape(2, -1), [(X((2, 3, 4)),)], dtypes=ALL)
op("view_flat", lambda m, x: x.contiguous().view(-1), lambda a: a.reshape(-1), [(X((3, 4)),)], dtypes=ALL)
op("view_split", lambda m, x: x.view(2, 3, 2) if x.is_contiguous() else x.reshape(2, 3, 2),
   lambda a: a.reshape(2, 3, 2), [(X((3, 4)),)], dtypes=ALL)
op("transpose", lambda m, x: x.transpose(0, -1), lambda a: np.swapaxes(a, 0, -1), [(X((3, 4)),), (X((2, 3, 4)),)],
   dtypes=ALL)
op("permute", lambda m, x: x.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1), [(X((2, 3, 4)),)], dtypes=ALL)
op("permute_fn", lambda m, x: m.permute(x, (1, 2, 0)), lambda a: a.transpose(1, 2, 0), [(X((2, 3, 4)),)], dtypes=ALL)
op("T", lambda m, x: x.T, lambda a: a.T, [(X((3, 4)),)], dtypes=ALL)
op("mT", lambda m, x: x.mT, lambda a: np.swapaxes(a, -1, -2), [(X((2, 3, 4)),)], dtypes=ALL)
op("squeeze", lambda m, x: x.squeeze(), lambda a: a.squeeze(), [(X((3, 1, 4, 1)),)], dtypes=ALL,
   layouts=("contiguous", "transposed", "sliced"))
op("squeeze_dim", lambda m, x: x.squeeze(1), lambda a: a.squeeze(1), [(X((3, 1, 4)),)], dtypes=ALL)
op("unsqueeze", lambda m, x: x.unsqueeze(1), lambda a: np.expand_dims(a, 1), [(X((3, 4)),)], dtypes=ALL)
op("unsqueeze_neg", lambda m, x: m.unsqueeze(x, -1), lambda a: np.expand_dims(a, -1), [(X((3, 4)),), (X(()),)],
   dtypes=ALL)
op("expand", lambda m, x: x.expand(2, 3, 4), lambda a: np.broadcast_to(a, (2, 3, 4)), [(X((3, 1)),), (X((4,)),)],
   dtypes=ALL)
op("expand_neg1", lambda m, x: x.expand(2, -1, 4), lambda a: np.broadcast_to(a, (2, 3, 4)), [(X((3, 1)),)], dtypes=ALL)
op("broadcast_to", lambda m, x: m.broadcast_to(x, (2, 3, 4)), lambda a: np.broadcast_to(a, (2, 3, 4)),
   [(X((1, 4)),)], dtypes=ALL)
op("flatten", lambda m, x: x.flatten(), lambda a: a.reshape(-1), [(X((2, 3, 4)),), (X(()),)], dtypes=ALL)
op("flatten_mid", lambda m, x: m.flatten(x, 1, 2), lambda a: a.reshape(a.shape[0], -1, *a.shape[3:]),
   [(X((2, 3, 4, 2)),)], dtypes=ALL)
op("unflatten", lambda m, x: x.unflatten(1, (2, -1)), lambda a: a.reshape(a.shape[0], 2, -1, *a.shape[2:]),
   [(X((3, 6)),), (X((2, 4, 3)),)], dtypes=ALL)
op("narrow", lambda m, x: x.narrow(1, 1, 2), lambda a: a[:, 1:3], [(X((3, 4)),)], dtypes=ALL)
op("narrow_neg", lambda m, x: m.narrow(x, -1, -3, 2), lambda a: a[..., -3:-1], [(X((2, 3, 4)),)], dtypes=ALL)
op("contiguous", lambda m, x: x.contiguous(), lambda a: a, [(X((3, 4)),)], dtypes=ALL)
op("clone", lambda m, x: x.clone(), lambda a: a, [(X((3, 4)),)], dtypes=ALL)
op("select", lambda m, x: x.select(1, -1), lambda a: a[:, -1], [(X((3, 4)),)], dtypes=ALL)
op("getitem_slices", lambda m, x: x[1:, ::2], lambda a: a[1:, ::2], [(X((3, 4)),), (X((4, 5, 2)),)], dtypes=ALL)
op("getitem_adv", lambda m, x, i: x[i], lambda a, i: a[i], [(X((5, 3)), I((4,), 5)), (X((5,)), I((2, 3), 5))],
   dtypes=ALL)
op("getitem_mask", lambda m, x, k: x[k], lambda a, k: a[k], [(X((3, 4)), M((3, 4))), (X((3, 4)), M((3,)))], dtypes=ALL)

# ---------------------------------------------------------------- joining, splitting, triangles
op("cat0", lambda m, a, b, c: m.cat([a, b, c]), lambda a, b, c: np.concatenate([a, b, c]),
   [(X((2, 3)), X((1, 3)), X((4, 3)))], dtypes=ALL)
op("cat1", lambda m, a, b: m.cat((a, b), dim=-1), lambda a, b: np.concatenate([a, b], -1),
   [(X((2, 3, 1)), X((2, 3, 4)))], dtypes=ALL)
op("cat_promote", lambda m, a: m.cat([a, (a * 2).double() if a.dtype != m.bool else a.double()]),
   lambda a: np.concatenate([a, (a * 2 if a.dtype != bool else a)]).astype(np.float64), [(X((2, 3)),)],
   dtypes=FLOATS + ("int64",), out=lambda *d: "float64", grad=False)
op("stack0", lambda m, a, b: m.stack([a, b]), lambda a, b: np.stack([a, b]), [(X((3, 4)), X((3, 4)))], dtypes=ALL)
op("stack_last", lambda m, a, b, c: m.stack([a, b, c], dim=-1), lambda a, b, c: np.stack([a, b, c], -1),
   [(X((3, 4)), X((3, 4)), X((3, 4)))], dtypes=ALL)
op("split_size", lambda m, x: tuple(x.split(2, dim=1)), lambda a: tuple(np.split(a, [2, 4], 1)), [(X((3, 5)),)],
   dtypes=ALL)
op("split_sections", lambda m, x: tuple(m.split(x, [1, 3], 0)), lambda a: tuple(np.split(a, [1], 0)),
   [(X((4, 3)),)], dtypes=ALL)
op("chunk", lambda m, x: tuple(x.chunk(3, -1)), lambda a: tuple(np.array_split(a, [3, 6], -1)), [(X((2, 7)),)],
   dtypes=ALL)
op("unbind", lambda m, x: tuple(x.unbind(1)), lambda a: tuple(np.moveaxis(a, 1, 0)), [(X((2, 3)),)], dtypes=ALL)
for _k in (0, 1, -1):
    op(f"tril_{_k}", (lambda k: lambda m, x: m.tril(x, k))(_k), (lambda k: lambda a: np.tril(a, k))(_k),
       [(X((4, 5)),), (X((2, 3, 3)),)], dtypes=ALL)
    op(f"triu_{_k}", (lambda k: lambda m, x: x.triu(k))(_k), (lambda k: lambda a: np.triu(a, k))(_k),
       [(X((4, 5)),), (X((2, 3, 3)),)], dtypes=ALL)
op("flip", lambda m, x: m.flip(x, (0, -1)), lambda a: np.flip(a, (0, -1)), [(X((3, 4)),), (X((2, 3, 4)),)], dtypes=ALL)
op("roll", lambda m, x: x.roll(1, 1), lambda a: np.roll(a, 1, 1), [(X((3, 4)),)], dtypes=ALL)
op("roll_multi", lambda m, x: m.roll(x, (2, -1), (0, 1)), lambda a: np.roll(a, (2, -1), (0, 1)), [(X((3, 4)),)],
   dtypes=ALL)
op("roll_flat", lambda m, x: m.roll(x, 5), lambda a: np.roll(a, 5), [(X((3, 4)),)], dtypes=ALL)
op("repeat", lambda m, x: x.repeat(2, 3), lambda a: np.tile(a, (2, 3)), [(X((2, 3)),)], dtypes=ALL)
op("repeat_lead", lambda m, x: x.repeat(2, 1, 2), lambda a: np.tile(a, (2, 1, 2)), [(X((2, 3)),), (X((3,)),)],
   dtypes=ALL)

# ---------------------------------------------------------------- gather, scatter, sorting
op("gather", lambda m, x, i: m.gather(x, 1, i), lambda a, i: np.take_along_axis(a, i, 1),
   [(X((3, 5)), I((3, 4), 5)), (X((2, 4, 3)), I((2, 2, 3), 4))], dtypes=ALL)
op("gather_d0", lambda m, x, i: x.gather(0, i), lambda a, i: np.take_along_axis(a, i, 0),
   [(X((4, 3)), I((6, 3), 4))], dtypes=ALL)


def _scatter_ref(a, i, s, add=False, axis=1):
    out = a.copy()
    src = np.take(s, np.arange(i.shape[axis]), axis=axis)
    src = src[tuple(slice(0, n) for n in i.shape)]
    idx = list(np.indices(i.shape))  # (put_along_axis would broadcast a short index over all rows)
    idx[axis] = i
    if add:
        np.add.at(out, tuple(idx), src)
    else:
        out[tuple(idx)] = src
    return out


_SCATTER_LAYOUTS = ("contiguous", "transposed", "sliced")
op("scatter", lambda m, x, i, s: m.scatter(x, 1, i, s), _scatter_ref,
   [(X((3, 5)), I((3, 3), 5, perm_axis=1), X((3, 3))), (X((2, 6)), I((1, 4), 6, perm_axis=1), X((1, 4)))],
   dtypes=ALL, layouts=_SCATTER_LAYOUTS)
op("scatter_src_larger", lambda m, x, i, s: m.scatter(x, 1, i, s), _scatter_ref,
   [(X((3, 5)), I((3, 3), 5, perm_axis=1), X((3, 4)))], dtypes=ALL, layouts=_SCATTER_LAYOUTS, torch_grad=False)
op("scatter_scalar", lambda m, x, i: x.scatter(1, i, 2), lambda a, i: _scatter_ref(a, i, np.full(i.shape, 2)),
   [(X((3, 5)), I((3, 2), 5, perm_axis=1))], dtypes=NUMERIC, layouts=_SCATTER_LAYOUTS)
op("scatter_add", lambda m, x, i, s: x.scatter_add(1, i, s), lambda a, i, s: _scatter_ref(a, i, s, add=True),
   [(X((3, 5)), I((3, 6), 5), X((3, 6))), (X((2, 4)), I((2, 3), 4), X((2, 3)))], dtypes=NUMERIC,
   layouts=_SCATTER_LAYOUTS)
op("scatter_add_src_larger", lambda m, x, i, s: x.scatter_add(1, i, s), lambda a, i, s: _scatter_ref(a, i, s, add=True),
   [(X((2, 4)), I((2, 3), 4), X((2, 5)))], dtypes=NUMERIC, layouts=_SCATTER_LAYOUTS, torch_grad=False)
op("index_select", lambda m, x, i: m.index_select(x, 1, i), lambda a, i: np.take(a, i, 1),
   [(X((3, 5)), I((4,), 5)), (X((2, 5, 3)), I((7,), 5))], dtypes=ALL)


def _index_add_ref(a, i, s, alpha=1):
    out = a.copy()
    np.add.at(out, (slice(None), i), alpha * s) if a.ndim == 2 else np.add.at(out, i, alpha * s)
    return out


op("index_add", lambda m, x, i, s: m.index_add(x, 1, i, s), _index_add_ref,
   [(X((3, 5)), I((4,), 5), X((3, 4)))], dtypes=NUMERIC)
op("index_add_alpha", lambda m, x, i, s: x.index_add(0, i, s, alpha=2), lambda a, i, s: _index_add_ref(a, i, s, 2),
   [(X((5,)), I((6,), 5), X((6,)))], dtypes=SIGNED)
op("one_hot", lambda m, i: (m.nn.functional if hasattr(m, "nn") else m).one_hot(i, 6),
   lambda i: np.eye(6, dtype=np.int64)[i], [(I((3, 4), 6),), (I((5,), 6),)], dtypes=("int64",), out=int64, grad=False)
def _desc(a, axis):
    idx = np.flip(np.argsort(a, axis, kind="stable"), axis)
    return np.take_along_axis(a, idx, axis), idx


op("topk", lambda m, x: tuple(x.topk(3, dim=1)), lambda a: tuple(r[:, :3] for r in _desc(a, 1)), [(X((3, 6), "distinct"),)],
   dtypes=NUMERIC, layouts=("contiguous", "transposed", "sliced"), out=values_indices)
op("topk_smallest", lambda m, x: tuple(m.topk(x, 2, dim=0, largest=False)),
   lambda a: (np.sort(a, 0)[:2], np.argsort(a, 0, kind="stable")[:2]), [(X((5, 3), "distinct"),)], dtypes=NUMERIC,
   layouts=("contiguous", "transposed", "sliced"), out=values_indices)
op("sort", lambda m, x: tuple(x.sort(dim=-1)), lambda a: (np.sort(a, -1), np.argsort(a, -1, kind="stable")),
   [(X((3, 6), "distinct"),), (X((2, 3, 4), "distinct"),)], dtypes=NUMERIC,
   layouts=("contiguous", "transposed", "sliced"), out=values_indices)
op("sort_desc", lambda m, x: tuple(m.sort(x, dim=0, descending=True)),
   lambda a: _desc(a, 0), [(X((5, 3), "distinct"),)], dtypes=NUMERIC,
   layouts=("contiguous", "transposed", "sliced"), out=values_indices)
op("sort_stable_ties", lambda m, x: tuple(m.sort(x, dim=-1, stable=True)),
   lambda a: (np.sort(a, -1, kind="stable"), np.argsort(a, -1, kind="stable")), [(X((4, 7), "small"),)],
   dtypes=SIGNED, grad=False, out=values_indices)
op("argsort", lambda m, x: m.argsort(x, dim=1), lambda a: np.argsort(a, 1, kind="stable"), [(X((3, 6), "distinct"),)],
   dtypes=NUMERIC, out=int64, grad=False, layouts=("contiguous", "transposed", "sliced"))
op("argsort_desc", lambda m, x: x.argsort(dim=0, descending=True), lambda a: _desc(a, 0)[1],
   [(X((5, 3), "distinct"),)], dtypes=SIGNED, out=int64, grad=False, layouts=("contiguous", "transposed", "sliced"))

OPS_BY_NAME = {s.name: s for s in OPS}
assert len(OPS_BY_NAME) == len(OPS), "op names must be unique"
