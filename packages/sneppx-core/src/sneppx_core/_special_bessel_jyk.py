"""Bessel functions J0, J1, Y0, Y1 and the modified K0, K1 (plain and scaled) of ``sneppx_core.special``,
as differentiable compositions in float64 (see ``_special_common``); absolute error about 1e-15 for J and
Y (relative near their zeros is looser, as for any fixed-precision method), relative 1e-15 for K.

* ``J0(x) = 1/(2 pi) int_0^2pi cos(x sin t) dt`` and ``J1(x) = 1/(2 pi) int_0^2pi sin t sin(x sin t) dt`` by the
  trapezoidal rule on 64 points for ``|x| <= 25`` (exact for a periodic integrand up to the aliased
  ``J_64(x)``, below 1e-16 there; the four-fold symmetry leaves 16 evaluations).
* ``Y0``, ``Y1`` for ``x < 4`` by their series about 0 (``Y0 = 2/pi (log(x/2) + gamma) J0 + 2/pi sum_k
  (-1)^(k+1) H_k (x^2/4)^k / k!^2``, ``Y1 = -2/(pi x) + 2/pi log(x/2) J1 - x/(2 pi) sum_k (psi(k+1) + psi(k+2))
  (-x^2/4)^k / (k! (k+1)!)``); for ``4 <= x <= 25`` by ``Y_n(x) = 1/pi int_0^pi sin(x sin t - n t) dt - 1/pi
  int_0^inf (e^(nt) + (-1)^n e^(-nt)) e^(-x sinh t) dt`` with 48-point Gauss-Legendre and (after ``v = x sinh t``)
  40-point Gauss-Laguerre rules.
* Beyond 25, Hankel's expansions ``J = sqrt(2/(pi x)) (P cos c - Q sin c)``, ``Y = sqrt(2/(pi x)) (P sin c + Q cos
  c)``, ``c = x - (2n+1) pi/4`` (taken from ``cos x``, ``sin x`` without rounding ``c``), 12 terms each of P, Q.
* ``K0``, ``K1`` for ``x <= 2`` by their series (``K0 = -(log(x/2) + gamma) I0 + sum_k H_k (x^2/4)^k / k!^2``,
  ``K1 = 1/x + log(x/2) I1 - x/4 sum_k (psi(k+1) + psi(k+2)) (x^2/4)^k / (k! (k+1)!)``); beyond, the scaled forms
  ``e^x K0(x) = int_0^inf e^(-u^2/2) / sqrt(x + u^2/4) du`` and ``e^x K1(x) = int_0^inf e^(-u^2/2) (1 + u^2/(2x)) /
  sqrt(x + u^2/4) du`` (``cosh t = 1 + u^2/(2x)`` in the integrals over ``e^(-x cosh t)``) by the trapezoidal rule,
  step 0.4 on [0, 9.2], whose error for these analytic, Gaussian-decaying integrands is below 1e-16.
"""

from __future__ import annotations

import math

import numpy as np

from ._backend import _C
from ._factories import zeros_like
from ._special_bessel import i1_64
from ._special_common import poly, unary

_GAMMA = 0.57721566490153286061
_H = [math.fsum(1.0 / j for j in range(1, k + 1)) for k in range(22)]  # harmonic numbers H_0..H_21
_K0_SERIES = [_H[k] / math.factorial(k) ** 2 for k in range(20)]
_K1_SERIES = [(_H[k] + _H[k + 1] - 2 * _GAMMA) / (math.factorial(k) * math.factorial(k + 1)) for k in range(20)]
_Y0_SERIES = [(-1) ** (k + 1) * c for k, c in enumerate(_K0_SERIES)]
_Y1_SERIES = [(-1) ** k * c for k, c in enumerate(_K1_SERIES)]
_TRAP_SIN = [math.sin(2 * math.pi * j / 64) for j in range(1, 16)]
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(48)  # on [-1, 1], mapped to [0, pi]
_GL_T, _GL_W = ((_GL_NODES + 1) * math.pi / 2).tolist(), (_GL_WEIGHTS * math.pi / 2).tolist()
_LAG_V, _LAG_W = (v.tolist() for v in np.polynomial.laguerre.laggauss(40))
_K_U = [0.4 * j for j in range(24)]


def _hankel(x, nu):
    """(J_nu, Y_nu) of ``x > 0`` (large) by Hankel's asymptotic expansions, 12 terms of each of P and Q."""
    mu, a = 4.0 * nu * nu, [1.0]
    for k in range(1, 24):
        a.append(a[-1] * (mu - (2 * k - 1) ** 2) / (k * 8.0))
    r = 1.0 / (x * x)
    p = poly(r, [(-1) ** k * a[2 * k] for k in range(12)])
    q = poly(r, [(-1) ** k * a[2 * k + 1] for k in range(12)]) / x
    c, s = _C.cos(x), _C.sin(x)
    if nu == 0:  # cos, sin of x - pi/4
        cc, ss = (c + s) * math.sqrt(0.5), (s - c) * math.sqrt(0.5)
    else:  # of x - 3 pi/4
        cc, ss = (s - c) * math.sqrt(0.5), -(c + s) * math.sqrt(0.5)
    f = _C.sqrt(2.0 / (math.pi * x))
    return f * (p * cc - q * ss), f * (p * ss + q * cc)


def _j_trap(x):
    """(J0, J1) of ``0 <= x <= 25`` by the 64-point trapezoidal rule (nodes folded by symmetry)."""
    j0 = 2.0 + 2.0 * _C.cos(x)
    j1 = 2.0 * _C.sin(x)
    for s in _TRAP_SIN:
        j0 = j0 + 4.0 * _C.cos(x * s)
        j1 = j1 + (4.0 * s) * _C.sin(x * s)
    return j0 / 64.0, j1 / 64.0


def j01_64(x):
    """(J0, J1) of a float64 tensor."""
    a = _C.abs(x)
    small = a <= 25.0
    t0, t1 = _j_trap(_C.where(small, a, 0.0))
    h0, h1 = _hankel(_C.where(small, 30.0, a), 0)[0], _hankel(_C.where(small, 30.0, a), 1)[0]
    j0 = _C.where(small, t0, _C.where(_C.isinf(x), 0.0, h0))
    j1 = _C.sign(x) * _C.where(small, t1, _C.where(_C.isinf(x), 0.0, h1))
    return j0, j1


def _y_quad(x):
    """(Y0, Y1) of ``4 <= x <= 25`` by Gauss-Legendre and Gauss-Laguerre quadrature."""
    y0, y1 = x * 0.0, x * 0.0
    for t, w in zip(_GL_T, _GL_W):
        xs = x * math.sin(t)
        y0 = y0 + w * _C.sin(xs)
        y1 = y1 + w * _C.sin(xs - t)
    for v, w in zip(_LAG_V, _LAG_W):
        root = _C.sqrt(x * x + v * v)
        y0 = y0 - (2.0 * w) / root
        y1 = y1 - (2.0 * w * v) / (x * root)
    return y0 / math.pi, y1 / math.pi


def y01_64(x):
    """(Y0, Y1) of a float64 tensor (NaN for x < 0, -inf at 0)."""
    small, mid = x < 4.0, (x >= 4.0) & (x <= 25.0)
    xs = _C.where(small & (x > 0), x, 1.0)
    j0, j1 = _j_trap(xs)
    lg, z = _C.log(xs * 0.5), xs * xs * 0.25
    s0 = (2 / math.pi) * ((lg + _GAMMA) * j0 + poly(z, _Y0_SERIES))
    s1 = -2.0 / (math.pi * xs) + (2 / math.pi) * lg * j1 - xs / (2 * math.pi) * poly(z, _Y1_SERIES)
    q0, q1 = _y_quad(_C.where(mid, x, 10.0))
    xb = _C.where(small | mid | _C.isinf(x), 30.0, x)
    h0, h1 = _hankel(xb, 0)[1], _hankel(xb, 1)[1]
    out = []
    for s, q, h in ((s0, q0, h0), (s1, q1, h1)):
        y = _C.where(small, s, _C.where(mid, q, _C.where(_C.isinf(x), 0.0, h)))
        y = _C.where(x == 0, -math.inf, _C.where(x < 0, math.nan, y))
        out.append(_C.where(_C.isnan(x), x, y))
    return out


def k01e_64(x):
    """(e^x K0(x), e^x K1(x), K0(x), K1(x)) of a float64 tensor (inf at 0, NaN for x < 0)."""
    small = x <= 2.0
    xs = _C.where(small & (x > 0), x, 1.0)
    lg, z = _C.log(xs * 0.5), xs * xs * 0.25
    k0s = -(lg + _GAMMA) * _C.i0(xs) + poly(z, _K0_SERIES)
    k1s = 1.0 / xs + lg * i1_64(xs) - xs * 0.25 * poly(z, _K1_SERIES)
    xb = _C.where(small, 3.0, x)
    e0 = e1 = zeros_like(xb)
    for j, u in enumerate(_K_U):
        g = (0.2 if j == 0 else 0.4) * math.exp(-u * u / 2) / _C.sqrt(xb + u * u / 4)
        e0 = e0 + g
        e1 = e1 + g * (1.0 + (u * u / 2) / xb)
    ex, emx = _C.exp(xs), _C.exp(-xb)
    out = []
    for scaled, plain in ((_C.where(small, ex * k0s, e0), _C.where(small, k0s, emx * e0)),
                          (_C.where(small, ex * k1s, e1), _C.where(small, k1s, emx * e1))):
        out.append([_C.where(x == 0, math.inf, _C.where(x < 0, math.nan, v)) for v in (scaled, plain)])
    (k0e, k0), (k1e, k1) = out
    return k0e, k1e, k0, k1


def _unary(op, pick, doc):
    def fn(input):
        x, dt = unary(input, op)
        return pick(x).to(dt)

    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = doc + "\n\n    Args: input: a tensor (integers compute in float32). Returns one of its shape."
    return fn


bessel_j0 = _unary("bessel_j0", lambda x: j01_64(x)[0],
                   "Bessel function of the first kind of order zero, ``J0(x) = 1/pi int_0^pi cos(x sin t) dt``.")
bessel_j1 = _unary("bessel_j1", lambda x: j01_64(x)[1],
                   "Bessel function of the first kind of order one, ``J1(x) = 1/pi int_0^pi cos(t - x sin t) dt``.")
bessel_y0 = _unary("bessel_y0", lambda x: y01_64(x)[0],
                   "Bessel function of the second kind of order zero, ``Y0(x)`` (``-inf`` at 0, NaN for x < 0).")
bessel_y1 = _unary("bessel_y1", lambda x: y01_64(x)[1],
                   "Bessel function of the second kind of order one, ``Y1(x)`` (``-inf`` at 0, NaN for x < 0).")
modified_bessel_k0 = _unary("modified_bessel_k0", lambda x: k01e_64(x)[2],
                            "Modified Bessel function of the second kind of order zero, ``K0(x) = int_0^inf "
                            "exp(-x cosh t) dt`` (inf at 0, NaN for x < 0).")
modified_bessel_k1 = _unary("modified_bessel_k1", lambda x: k01e_64(x)[3],
                            "Modified Bessel function of the second kind of order one, ``K1(x) = int_0^inf "
                            "exp(-x cosh t) cosh t dt`` (inf at 0, NaN for x < 0).")
scaled_modified_bessel_k0 = _unary("scaled_modified_bessel_k0", lambda x: k01e_64(x)[0],
                                   "``exp(x) K0(x)``, finite for large ``x`` where ``K0`` underflows.")
scaled_modified_bessel_k1 = _unary("scaled_modified_bessel_k1", lambda x: k01e_64(x)[1],
                                   "``exp(x) K1(x)``, finite for large ``x`` where ``K1`` underflows.")
