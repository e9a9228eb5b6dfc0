"""The error-function family of ``sneppx_core.special``: erfc, erfcx, ndtr, log_ndtr and ndtri.

All are compositions of differentiable core ops in float64 (see ``_special_common``). The pieces:

* ``erfcx(x) = exp(x^2) erfc(x)``. For ``x < 2`` it is ``exp(x^2) (1 - erf(x))``: ``1 - erf(x)`` there is at
  least ``erfc(2) = 4.7e-3``, so the subtraction costs at most a factor 200 of float64's 1.1e-16. For
  ``x >= 2`` it is Laplace's continued fraction ``erfc(x) = exp(-x^2) / sqrt(pi) / (x + (1/2) / (x + 1 / (x +
  (3/2) / (x + ...))))``, 60 levels evaluated from the bottom: at ``x = 2`` that is within 5e-16 of the
  limit, and better beyond. Neither branch overflows or cancels: ``exp(x^2)`` is only taken for ``x < 2``.
* ``erfc(x)`` is the core op (its sheet entry keeps the tail's relative accuracy, where ``1 - erf`` would be 0).
* ``log_ndtr(x)`` is ``log(erfcx(-x / sqrt2) / 2) - x^2 / 2`` for ``x < -1`` (no underflow of ``ndtr``) and
  ``log1p(-erfc(x / sqrt2) / 2)`` otherwise.
* ``ndtri(p)`` is ``sqrt2 erfinv(2p - 1)`` where ``min(p, 1 - p) >= 0.05``. In the tails ``2p - 1`` would lose
  the digits of ``p``, so there ``x`` solves ``log_ndtr(x) = log(q)`` (``q = min(p, 1 - p)``) by Newton's
  method from the asymptotic start ``-sqrt(t - log(2 pi t))``, ``t = -2 log q``: 4 steps reach float64
  round-off for any ``q`` down to the smallest subnormal.

Each ``where`` feeds its branches inputs that are finite in the other's region, so a masked branch
gives zero gradient, never ``0 * inf = NaN``.
"""

from __future__ import annotations

import math

from ._backend import _C
from ._grad_mode import no_grad
from ._special_common import need_tensor, out_dtype, unary
from ._surrogate import attach

_SQRT2 = math.sqrt(2.0)
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _cf_erfcx(x):
    """erfcx(x) for x >= 2 by the continued fraction (60 levels)."""
    t = x
    for k in range(60, 0, -1):
        t = x + (0.5 * k) / t
    return 1.0 / (t * math.sqrt(math.pi))


def erfcx64(x):
    """Scaled complementary error function of a float64 tensor."""
    big = x >= 2.0
    xb = _C.where(big, x, 2.0)
    xs = _C.where(big, 0.0, x)
    return _C.where(big, _cf_erfcx(xb), _C.exp(xs * xs) * (1.0 - _C.erf(xs)))


def log_ndtr64(x):
    """log of the standard normal CDF of a float64 tensor."""
    low = x < -1.0
    xl = _C.where(low, x, -1.0)
    xr = _C.where(low, 0.0, x)
    left = _C.log(erfcx64(-xl / _SQRT2) * 0.5) - xl * xl * 0.5
    return _C.where(low, left, _C.log1p(-0.5 * _C.erfc(xr / _SQRT2)))


def erfc(input):
    """Complementary error function ``erfc(x) = 1 - erf(x) = 2 / sqrt(pi) int_x^inf exp(-t^2) dt``, accurate
    relative to its value in the right tail (``erfc(10) = 2.1e-45`` in float64, where ``1 - erf`` gives 0).

    Args: input: a tensor (integers compute in float32). Returns a tensor of the same shape.
    """
    need_tensor(input, "erfc")
    return _C.erfc(input.to(out_dtype(input)))  # the sheet's op: half an ulp in every floating dtype


def erfcx(input):
    """Scaled complementary error function ``erfcx(x) = exp(x^2) erfc(x)``, without the overflow of
    ``exp(x^2)`` or the underflow of ``erfc``: ``erfcx(x) ~ 1 / (x sqrt(pi))`` for large ``x``; ``inf`` below
    about -26.6, where ``2 exp(x^2)`` overflows float64.

    Args: input: a tensor (integers compute in float32). Returns a tensor of the same shape.
    """
    x, dt = unary(input, "erfcx")
    return erfcx64(x).to(dt)


def ndtr(input):
    """Standard normal cumulative distribution ``ndtr(x) = (1 + erf(x / sqrt2)) / 2 = erfc(-x / sqrt2) / 2``,
    with relative accuracy in the left tail.

    Args: input: a tensor (integers compute in float32). Returns a tensor of the same shape.
    """
    x, dt = unary(input, "ndtr")
    return (0.5 * _C.erfc(-x / _SQRT2)).to(dt)


def log_ndtr(input):
    """``log(ndtr(x))``, finite far into the left tail (``log_ndtr(-40) = -804.6``, where ``ndtr`` underflows)
    and ``log1p``-accurate on the right.

    Args: input: a tensor (integers compute in float32). Returns a tensor of the same shape.
    """
    x, dt = unary(input, "log_ndtr")
    return log_ndtr64(x).to(dt)


def _log_ndtr_left(x):
    """log_ndtr for x < -1 (the tails of ndtri), without the right branch."""
    return _C.log(erfcx64(-x / _SQRT2) * 0.5) - x * x * 0.5


def _tail_newton(q):
    """(x, 1 / (d log_ndtr / dx) at x) with ndtr(x) = q for 0 < q < 0.05 (float64, no graph), by Newton on
    log_ndtr(x) = log(q); the start is within 7% and the convergence quadratic, so 4 steps reach round-off."""
    lq = _C.log(q)
    t = -2.0 * lq
    x = -_C.sqrt(t - _C.log(2 * math.pi * t))
    for _ in range(4):
        x = x + (lq - _log_ndtr_left(x)) * _inverse_slope(x)
    return x, _inverse_slope(x)


def _inverse_slope(x):
    """``1 / (d log_ndtr / dx) = ndtr(x) / phi(x)`` for x < -1."""
    return _C.exp(_log_ndtr_left(x) + x * x * 0.5 + _LOG_SQRT_2PI)


def ndtri(input):
    """Inverse of ``ndtr``: the ``x`` with ``ndtr(x) = p`` (``-inf`` at 0, ``inf`` at 1, NaN outside [0, 1]).

    The tails (``p`` or ``1 - p`` below 0.05) are solved in log space, so ``ndtri(1e-300) = -37.05`` keeps
    its digits. Gradient: ``dx/dp = 1 / phi(x) = sqrt(2 pi) exp(x^2 / 2)``; in the tails it is first order
    only (a backward pass with ``create_graph=True`` through tail values raises RuntimeError).

    Args: input: probabilities, a tensor (integers compute in float32). Returns a tensor of the same shape.
    """
    p, dt = unary(input, "ndtri")
    upper = p > 0.5
    q = _C.where(upper, 1.0 - p, p)
    tail = (q > 0) & (q < 0.05)
    out = _SQRT2 * _C.erfinv(2.0 * p - 1.0)
    if not bool(tail.any().item()):
        return out.to(dt)
    qt = _C.where(tail, q, 0.01)
    with no_grad():
        xv, slope = _tail_newton(qt.detach())
    # x(q) = xv + (log q - log q0) * slope to first order: the implicit-function derivative dx/dq = 1 / phi(x)
    xt = attach(xv, _C.log(qt) * slope, "special.ndtri", "the tails of ndtri are first order")
    return _C.where(tail, _C.where(upper, -xt, xt), out).to(dt)
