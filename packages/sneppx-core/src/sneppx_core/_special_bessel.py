"""Modified Bessel functions of ``sneppx_core.special``: i0e, i1, i1e (and spherical_bessel_j0), as
differentiable compositions in float64 (see ``_special_common``).

* ``i1(x) = sum_k (x/2)^(2k+1) / (k! (k+1)!)`` for ``|x| <= 20``: 40 terms of positive coefficients by
  Horner's rule in ``(x/2)^2``, so no cancellation (within a few ulp of the true value there).
* Beyond, and for the scaled ``i0e`` above 700 (where ``i0`` would overflow float64), the asymptotic series
  ``I_v(x) e^-x ~ 1 / sqrt(2 pi x) sum_k prod_{j<=k} ((2j-1)^2 - 4 v^2) / (k! (8x)^k)``, 25 terms: its
  truncation error at ``x = 20`` is below float64 round-off.
* ``i0e(x) = exp(-|x|) i0(x)`` with the core's ``i0`` up to ``|x| = 700``.
"""

from __future__ import annotations

import math

from ._backend import _C
from ._special_common import poly, unary

_SERIES = [1.0 / (math.factorial(k) * math.factorial(k + 1)) for k in range(40)]


def _asym_coeffs(nu, n=25):
    out, c = [], 1.0
    for k in range(n):
        out.append(c)
        c *= ((2 * k + 1) ** 2 - 4 * nu * nu) / ((k + 1) * 8.0)
    return out


_ASYM = {0: _asym_coeffs(0), 1: _asym_coeffs(1)}


def _scaled_asym(a, nu):
    """``I_nu(a) exp(-a)`` for large positive ``a`` by the asymptotic series."""
    return poly(1.0 / a, _ASYM[nu]) / _C.sqrt(2 * math.pi * a)


def _i1_parts(x):
    """(small mask, i1 by the series where small, |x| where not small else 21)."""
    a = _C.abs(x)
    small = a <= 20.0
    xs = _C.where(small, x, 0.0) * 0.5
    return small, xs * poly(xs * xs, _SERIES), _C.where(small, 21.0, a)


def i1_64(x):
    """Modified Bessel function of the first kind of order one, of a float64 tensor."""
    small, ser, ab = _i1_parts(x)
    # exp(a) / sqrt(2 pi a) as one exponential: finite up to i1's own overflow near |x| = 713
    big = _C.sign(x) * _C.exp(ab - 0.5 * _C.log(2 * math.pi * ab)) * poly(1.0 / ab, _ASYM[1])
    return _C.where(small, ser, _C.where(_C.isinf(x), x, big))


def i1e64(x):
    """``exp(-|x|) i1(x)`` of a float64 tensor."""
    small, ser, ab = _i1_parts(x)
    xs = _C.where(small, x, 0.0)
    return _C.where(small, _C.exp(-_C.abs(xs)) * ser, _C.sign(x) * _scaled_asym(ab, 1))


def i0e64(x):
    """``exp(-|x|) i0(x)`` of a float64 tensor."""
    a = _C.abs(x)
    small = a <= 700.0
    xs = _C.where(small, x, 0.0)
    return _C.where(small, _C.exp(-_C.abs(xs)) * _C.i0(xs), _scaled_asym(_C.where(small, 701.0, a), 0))


def i0e(input):
    """Exponentially scaled modified Bessel function of order zero, ``i0e(x) = exp(-|x|) i0(x)``, finite for
    every ``x`` (``~ 1 / sqrt(2 pi |x|)``; 0 at infinity). Gradient ``i1e(x) - sign(x) i0e(x)``.

    Args: input: a tensor (integers compute in float32). Returns a tensor of the same shape.
    """
    x, dt = unary(input, "i0e")
    return i0e64(x).to(dt)


def i1(input):
    """Modified Bessel function of the first kind of order one, ``i1(x) = sum_k (x/2)^(2k+1) / (k! (k+1)!)``
    (odd; overflows to ``inf`` near ``|x| = 713`` in float64, 89 in float32). Gradient ``i0(x) - i1(x) / x``.

    Args: input: a tensor (integers compute in float32). Returns a tensor of the same shape.
    """
    x, dt = unary(input, "i1")
    return i1_64(x).to(dt)


def i1e(input):
    """Exponentially scaled modified Bessel function of order one, ``i1e(x) = exp(-|x|) i1(x)``, finite for
    every ``x`` (0 at infinity).

    Args: input: a tensor (integers compute in float32). Returns a tensor of the same shape.
    """
    x, dt = unary(input, "i1e")
    return i1e64(x).to(dt)


def spherical_bessel_j0(input):
    """Spherical Bessel function of the first kind of order zero, ``j0(x) = sin(x) / x`` (1 at 0, 0 at
    infinity).

    Args: input: a tensor (integers compute in float32). Returns a tensor of the same shape.
    """
    x, dt = unary(input, "spherical_bessel_j0")
    zero = x == 0
    xs = _C.where(zero | _C.isinf(x), 1.0, x)
    out = _C.where(zero, 1.0, _C.sin(xs) / xs)
    return _C.where(_C.isinf(x), 0.0, out).to(dt)
