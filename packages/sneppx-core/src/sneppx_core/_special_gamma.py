"""The gamma family of ``sneppx_core.special`` beyond the core's lgamma, digamma, polygamma and mvlgamma:
the regularised incomplete gamma functions, Hurwitz zeta, and the ``x log y`` pair with entr.

``gammainc(a, x) = P(a, x) = 1 / Gamma(a) int_0^x t^(a-1) e^-t dt`` and ``gammaincc = Q = 1 - P`` run on the
host in float64 NumPy: the power series ``P = x^a e^-x / Gamma(a + 1) (1 + x / (a + 1) + x^2 / ((a + 1)(a +
2)) + ...)`` where ``x < a + 1``, and Legendre's continued fraction for ``Q`` (modified Lentz) elsewhere, each
computing the other as ``1 - value``. Both iterate to round-off (about ``9 sqrt(a)`` terms near ``x = a``),
on the elements still unconverged. The prefactor ``x^a e^-x / Gamma(a)`` is taken in log space through
Stirling's series for ``a >= 10``, so it does not lose the ``log10(a)`` digits of ``a log x - lgamma(a)``.
The gradient with respect to ``x`` is the density ``x^(a-1) e^-x / Gamma(a)`` (first order); with respect
to ``a`` it raises NotImplementedError in the backward pass, as PyTorch does.

``zeta(x, q) = sum_k (q + k)^-x`` is the Euler-Maclaurin sum of core ops: ``N`` terms, with ``q + N >= 9``,
the integral ``(q + N)^(1-x) / (x - 1)``, half the next term and 12 Bernoulli corrections, accurate to
float64 round-off. It is differentiable in both arguments (PyTorch raises there).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ._backend import _C
from ._C_face import Tensor
from ._special_common import binary, grad_on, unary
from ._surrogate import attach

_EPS = np.finfo(np.float64).eps
_TINY = 1e-300


def _lgamma_np(a):
    return _C.lgamma(Tensor(np.require(a, requirements="C"))).numpy()


# Stirling's series lgamma(a) - ((a - 1/2) log a - a + log(2 pi) / 2) = sum_k B_2k / (2k (2k - 1) a^(2k-1)),
# 8 terms: below 1e-17 for a >= 10.
_STIRLING = [1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156, -3617 / 122400]


def _log_prefactor(a, x):
    """``log(x^a e^-x / Gamma(a))``. For ``a >= 10`` as ``a (log(x / a) - t) + log(a / (2 pi)) / 2 - R(a)`` with
    ``t = (x - a) / a`` (``log(x / a) = log1p(t)`` for small ``t``) and Stirling's remainder ``R``: no
    cancellation of terms of size ``a``, so the error is about ``eps |x - a|`` instead of ``eps a``."""
    out = a * np.log(x) - x - _lgamma_np(a)
    big = a >= 10.0
    if big.any():
        ab, xb = a[big], x[big]
        t = (xb - ab) / ab
        log_ratio = np.where(np.abs(t) < 0.5, np.log1p(t), np.log(xb / ab))  # log1p is ill-conditioned near -1
        r = np.polynomial.polynomial.polyval(1.0 / (ab * ab), _STIRLING) / ab
        out[big] = ab * (log_ratio - t) + 0.5 * np.log(ab / (2 * np.pi)) - r
    return out


def _series(a, x):
    """P(a, x) by the power series, all elements at once, each until its next term is below round-off."""
    term = 1.0 / a
    total = term.copy()
    ap = a.copy()
    idx = np.arange(a.size)
    while idx.size:
        ap[idx] += 1.0
        term[idx] *= x[idx] / ap[idx]
        total[idx] += term[idx]
        idx = idx[np.abs(term[idx]) > np.abs(total[idx]) * _EPS]
    return total * np.exp(_log_prefactor(a, x))


def _contfrac(a, x):
    """Q(a, x) by Legendre's continued fraction (modified Lentz), each element until it converges."""
    b = x + 1.0 - a
    c = np.full_like(x, 1.0 / _TINY)
    d = 1.0 / b
    h = d.copy()
    idx = np.arange(a.size)
    i = 0
    while idx.size:
        i += 1
        an = -i * (i - a[idx])
        b[idx] += 2.0
        dd = an * d[idx] + b[idx]
        dd = np.where(np.abs(dd) < _TINY, _TINY, dd)
        cc = b[idx] + an / c[idx]
        cc = np.where(np.abs(cc) < _TINY, _TINY, cc)
        d[idx] = 1.0 / dd
        c[idx] = cc
        delta = d[idx] * cc
        h[idx] *= delta
        idx = idx[np.abs(delta - 1.0) > _EPS]
    return h * np.exp(_log_prefactor(a, x))


def _igamma_host(a, x):
    """(P, Q) of float64 arrays ``a``, ``x`` of one shape, with PyTorch's values at the domain's edges."""
    p = np.full(a.shape, np.nan)
    with np.errstate(invalid="ignore"):
        p[(a == 0) & (x > 0)] = 1.0
        p[(a > 0) & (x == 0)] = 0.0
        p[np.isinf(a) & np.isfinite(x) & (x >= 0)] = 0.0
        p[np.isfinite(a) & (a > 0) & np.isinf(x) & (x > 0)] = 1.0
        inner = np.isfinite(a) & np.isfinite(x) & (a > 0) & (x > 0)
    q = np.asarray(1.0 - p)  # an array also for 0-d inputs (1.0 - p is a NumPy scalar there)
    ser = inner & (x < a + 1.0)
    cf = inner & ~ser
    if ser.any():
        p[ser] = _series(a[ser], x[ser])
        q[ser] = 1.0 - p[ser]
    if cf.any():
        q[cf] = _contfrac(a[cf], x[cf])
        p[cf] = 1.0 - q[cf]
    return p, q


def _no_grad_for_a(value, a, op):
    """``value``, where a backward pass reaching ``a`` raises NotImplementedError (PyTorch's behaviour)."""
    if not (grad_on() and a.requires_grad):
        return value
    s = a * 0.0

    def hook(grad):
        raise NotImplementedError(f"[special.{op}] the derivative with respect to input (the shape parameter a) "
                                  "is not implemented, as in PyTorch")

    s.register_hook(hook)
    return value + (s - s.detach())


def _igamma(a_in, x_in, op, upper):
    a, x, dt = binary(a_in, x_in, op)
    pq = _igamma_host(*(np.array(t.detach().cpu().numpy(), dtype=np.float64) for t in (a, x)))
    value = Tensor(np.require(pq[1 if upper else 0], requirements="C"))
    value = value if x.device.type == "cpu" else value.to(x.device)
    if grad_on() and x.requires_grad:
        ad, xd = a.detach(), x.detach()
        density = _C.exp((ad - 1.0) * _C.log(xd) - xd - _C.lgamma(ad))  # dP/dx, as PyTorch writes it
        value = attach(value, (-density if upper else density) * x, f"special.{op}")
    return _no_grad_for_a(value, a, op).to(dt)


def gammainc(input, other):
    """Regularised lower incomplete gamma function ``P(a, x) = 1 / Gamma(a) int_0^x t^(a-1) e^-t dt`` with
    ``a = input``, ``x = other`` (broadcast). NaN for ``a < 0`` or ``x < 0``; 1 for ``a = 0 < x``.

    Differentiable in ``x`` (first order: ``dP/dx = x^(a-1) e^-x / Gamma(a)``); a backward pass that needs the
    gradient with respect to ``a`` raises NotImplementedError, as in PyTorch.
    """
    return _igamma(input, other, "gammainc", False)


def gammaincc(input, other):
    """Regularised upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``, computed directly where it is
    small (``x >= a + 1``); ``a = input``, ``x = other``. Gradients as ``gammainc`` (``dQ/dx = -dP/dx``)."""
    return _igamma(input, other, "gammaincc", True)


# (2j)! / B_2j for j = 1..12: the Euler-Maclaurin correction denominators.
_BERNOULLI = [Fraction(1, 6), Fraction(-1, 30), Fraction(1, 42), Fraction(-1, 30), Fraction(5, 66),
              Fraction(-691, 2730), Fraction(7, 6), Fraction(-3617, 510), Fraction(43867, 798),
              Fraction(-174611, 330), Fraction(854513, 138), Fraction(-236364091, 2730)]
_EM = [float(math.factorial(2 * j) / b) for j, b in enumerate(_BERNOULLI, start=1)]


def zeta(input, other):
    """Hurwitz zeta function ``zeta(x, q) = sum_{k >= 0} (q + k)^-x`` with ``x = input``, ``q = other``
    (broadcast); ``zeta(x, 1)`` is Riemann's. ``inf`` at ``x = 1`` and at integer ``q <= 0``; NaN for ``x < 1``
    and for negative ``q`` with non-integer ``x``. Differentiable in both arguments.

    Negative ``q`` sums ``-q`` extra terms, so ``q`` below -1e6 raises ValueError.
    """
    x, q, dt = binary(input, other, "zeta")
    low = float(_C.amin(q.detach()).item()) if q.numel() else 0.0
    if low < -1e6:
        raise ValueError(f"[special.zeta] q down to {low} would sum more than a million terms; shift it first")
    n = 9 + (math.ceil(-low) if low < 0 else 0)
    total = x * 0.0
    for k in range(n):
        total = total + _C.pow(q + k, -x)
    a = q + n
    b = _C.pow(a, -x)
    total = total + a * b / (x - 1.0) + 0.5 * b
    fac, k = x * 1.0, 0.0  # fac = x (x+1) ... (x+2j-2)
    for j in range(12):
        b = b / a
        total = total + fac * b / _EM[j]
        fac = fac * (x + k + 1.0) * (x + k + 2.0)
        b = b / a
        k += 2.0
    qint = q == _C.floor(q)
    out = _C.where((q <= 0) & qint, math.inf, total)
    out = _C.where((q < 0) & ~qint & (x != _C.floor(x)), math.nan, out)
    out = _C.where(x < 1.0, math.nan, _C.where(x == 1.0, math.inf, out))
    return out.to(dt)


def _xlog(x_in, y_in, op, log, pole):
    x, y, dt = binary(x_in, y_in, op)
    # Where x == 0 the value is 0: y is replaced there by one of log 0 when log(y) is not finite, so x * log(y)
    # is 0 itself and keeps PyTorch's gradients (log(y) in x, x / y = 0 in y) without 0 * inf = NaN.
    ys = _C.where((x == 0) & ((y <= pole) | _C.isinf(y)), pole + 1.0, y)
    return (x * log(ys) + 0.0).to(dt)  # + 0.0 turns the -0.0 of 0 * log(y < 1) into 0.0


def xlogy(input, other):
    """``x * log(y)`` with ``x = input``, ``y = other`` (either may be a number; broadcast), and 0 where
    ``x == 0`` unless ``y`` is NaN. Gradients: ``log(y)`` and ``x / y``."""
    return _xlog(input, other, "xlogy", _C.log, 0.0)


def xlog1py(input, other):
    """``x * log1p(y)`` with ``x = input``, ``y = other`` (either may be a number; broadcast), and 0 where
    ``x == 0`` unless ``y`` is NaN. Gradients: ``log1p(y)`` and ``x / (1 + y)``."""
    return _xlog(input, other, "xlog1py", _C.log1p, -1.0)


def entr(input):
    """Elementwise entropy term: ``-x log(x)`` for ``x > 0``, 0 at 0, ``-inf`` for ``x < 0`` (NaN stays NaN).
    Gradient ``-(log(x) + 1)`` for ``x > 0``."""
    x, dt = unary(input, "entr")
    pos = x > 0
    xs = _C.where(pos, x, 1.0)
    out = _C.where(pos, -xs * _C.log(xs), _C.where(x == 0, x * 0.0, -math.inf))
    return _C.where(_C.isnan(x), x, out).to(dt)
