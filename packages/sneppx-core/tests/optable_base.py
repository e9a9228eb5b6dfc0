"""Building blocks of the op table (``optable.py``): input descriptions, value domains, result-dtype
rules, ``OpSpec`` and the ``op`` registration function.

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


def is_torch(m) -> bool:
    """Whether op module ``m`` is torch. A name check, not ``hasattr(m, "nn")``: a failed hasattr raises and
    catches an AttributeError, ~0.5 us per call that the benchmark rows would charge to SneppX alone."""
    return m.__name__ == "torch"


def nn_functional(m):
    """``torch.nn.functional`` for the torch module, ``m`` itself otherwise (SneppX's functions live at
    its top level and in ``m.functional``)."""
    return m.nn.functional if is_torch(m) else m


def functional(m):
    """``torch.nn.functional`` or ``sneppx_core.functional``."""
    return m.nn.functional if is_torch(m) else m.functional


def op(name, fn, ref, cases, **kw):
    OPS.append(OpSpec(name, fn, ref, cases, **kw))


S34 = [(X((3, 4)),), (X((2, 3, 4)),), (X(()),)]


def unary_cases(domain):
    return [tuple(X(a.shape, domain) for a in c) for c in S34]


BCAST = [(X((3, 4)), X((3, 4))), (X((3, 4)), X((4,))), (X((3, 1)), X((1, 4))), (X((2, 3, 4)), X((3, 1))),
         (X((3, 4)), X(()))]


def bcast(d1, d2):
    return [(X(a.shape, d1), X(b.shape, d2)) for a, b in BCAST]
