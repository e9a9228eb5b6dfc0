"""Fit the polynomials of the float erfinv and erfc kernels (csrc/cpu/vspecial.h) and print them as C++.

The kernel's log: log(2^e m) = e ln 2 + f Q(f) with f = m - 1, m in [sqrt(1/2), sqrt(2)), and Q a degree-14
fit of log1p(f) / f (no division, where an atanh series needs one).

erfinv(y) = y * P(t) with w = -log(1 - y^2): t = w - 2.5 for w <= 5 (the vectorised range, |y| <= 0.9966)
and t = w - 10.8 for the tails, 4.9 <= w <= 16.7 (past the largest float below 1). Each P is a least-squares
Chebyshev fit of erfinv(y) / y at Chebyshev nodes, against erfinv solved by Newton steps on math.erf /
math.erfc in float64, converted to powers of t. erfc's: erfcx(a) = exp(a^2) erfc(a) on [0, 4], degree 22 in
a - 2. Run: python tools/fit_erfinv.py
"""
import math

import numpy as np


def erfinv(y):
    """erfinv(y) for 0 < y < 1 by Newton steps on erf (on erfc where y > 0.7, which resolves the tail)."""
    x = math.sqrt(-math.log((1 - y) * (1 + y))) * 0.8 if y > 0.5 else y * 0.886
    for _ in range(100):
        if y <= 0.7:
            x -= (math.erf(x) - y) / (2 / math.sqrt(math.pi) * math.exp(-x * x))
        else:
            x += (math.erfc(x) - (1 - y)) / (2 / math.sqrt(math.pi) * math.exp(-x * x))
    return x


def ratio(w):
    """erfinv(y) / y at w = -log(1 - y^2) (its limit sqrt(pi) / 2 at w = 0)."""
    y = math.sqrt(-math.expm1(-w))
    return erfinv(y) / y if y > 0 else math.sqrt(math.pi) / 2


def log1p_ratio(f):
    """log1p(f) / f (1 at f = 0)."""
    return math.log1p(f) / f if f else 1.0


def erfcx(a):
    """exp(a^2) erfc(a), in float64 (math.erfc is accurate relative to its value; a <= 4 here)."""
    return math.erfc(a) * math.exp(a * a)


def fit(lo, hi, fn, deg):
    """Powers of t of the fit of fn on [lo, hi], and its largest relative error on a fine grid."""
    n = 8 * deg
    t = (lo + hi) / 2 + (hi - lo) / 2 * np.cos(np.pi * (np.arange(n) + 0.5) / n)
    cheb = np.polynomial.chebyshev.Chebyshev.fit(t, [fn(v) for v in t], deg, domain=[lo, hi])
    power = cheb.convert(kind=np.polynomial.Polynomial)
    grid = np.linspace(lo, hi, 4001)
    want = np.array([fn(v) for v in grid])
    return power.coef, np.max(np.abs(power(grid) - want) / want)


def main():
    for name, deg, lo, hi, fn in [("kLog1pRatio", 14, math.sqrt(0.5) - 1, math.sqrt(2) - 1, log1p_ratio),
                                  ("kErfinvCentral", 12, -2.5, 2.5, lambda t: ratio(t + 2.5)),
                                  ("kErfinvTail", 14, 4.9 - 10.8, 16.7 - 10.8, lambda t: ratio(t + 10.8)),
                                  ("kErfcx", 22, -2.0, 2.0, lambda t: erfcx(t + 2.0))]:
        coef, err = fit(lo, hi, fn, deg)
        print(f"// largest relative error {err:.1e}")
        body = ", ".join(f"{c:.17e}" for c in coef[::-1])
        print(f"inline constexpr double {name}[{deg + 1}] = {{{body}}};")


if __name__ == "__main__":
    main()
