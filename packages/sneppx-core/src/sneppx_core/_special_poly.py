"""Orthogonal polynomials of ``sneppx_core.special``: Chebyshev (T, U, V, W and their shifted forms on
[0, 1]), Hermite (physicists' H and probabilists' He), Laguerre L and Legendre P, of a tensor ``x`` and a
degree ``n`` (a tensor or a number, broadcast against ``x``).

As in PyTorch, ``n`` is truncated to an integer, a negative or non-finite ``n`` gives 0, and the results
carry no gradient. Each is its three-term recurrence in float64, one pass of tensor ops per degree up to
the largest ``n``, so the cost grows with ``max(n)``. The Chebyshev kinds above degree 8 use the closed
forms instead (with ``y = 2x - 1`` for the shifted ones): ``T_n = cos(n t)``, ``U_n = sin((n+1) t) / sin t``,
``V_n = cos((n+1/2) t) / cos(t/2)``, ``W_n = sin((n+1/2) t) / sin(t/2)`` with ``t = acos y`` for ``|y| < 1``;
the same with cosh / sinh and ``t = acosh |y|`` for ``|y| > 1`` (``V`` and ``W`` trade places, with the sign
``(-1)^n``, for ``y < -1``); their exact values at ``y = +-1``. Hermite degrees above 512 (128 below
float64) give NaN, PyTorch's limit.
"""

from __future__ import annotations

from ._backend import _C
from ._C_face import Dtype
from ._factories import ones_like
from ._grad_mode import no_grad
from ._special_common import binary

_CHEB_START = {"t": lambda y: y, "u": lambda y: 2.0 * y, "v": lambda y: 2.0 * y - 1.0, "w": lambda y: 2.0 * y + 1.0}


def _recur(n, p0, p1, step, top):
    """The degree-``n`` member of ``p_{k+1} = step(k, p_{k-1}, p_k)`` from ``p0``, ``p1``, for ``n <= top``."""
    out = _C.where(n == 0, p0, p1)
    p, q = p0, p1
    for k in range(1, top):
        p, q = q, step(k, p, q)
        out = _C.where(n == k + 1, q, out)
    return out


def _args(x, n, op):
    x, n, dt = binary(x, n, op)
    n = _C.where(_C.isfinite(n), _C.trunc(n), -1.0)
    top = int(_C.amax(n).item()) if n.numel() else 0
    return x, n, max(top, 0), dt


def _acosh_abs(y):
    a = _C.abs(y) - 1.0  # exact near 1, where log(|y| + sqrt(y^2 - 1)) would cancel
    return _C.log1p(a + _C.sqrt(a * (a + 2.0)))


def _closed(kind, y, n):
    """The Chebyshev polynomial of ``kind`` by its closed forms (any degree ``n >= 0``)."""
    inside = _C.abs(y) < 1.0
    th = _C.acos(_C.where(inside, y, 0.0))
    t = _acosh_abs(_C.where(inside, 2.0, y))
    sign = 1.0 - 2.0 * _C.remainder(n, 2.0)  # (-1)^n
    neg = y < 0
    h = n + 0.5
    if kind == "t":
        out = _C.where(inside, _C.cos(n * th), _C.where(neg, sign, 1.0) * _C.cosh(n * t))
        edge = _C.where(neg, sign, 1.0)
    elif kind == "u":
        out = _C.where(inside, _C.sin((n + 1.0) * th) / _C.sin(th),
                       _C.where(neg, sign, 1.0) * _C.sinh((n + 1.0) * t) / _C.sinh(t))
        edge = _C.where(neg, sign, 1.0) * (n + 1.0)
    else:
        cos_form = _C.cosh(h * t) / _C.cosh(t * 0.5)
        sin_form = _C.sinh(h * t) / _C.sinh(t * 0.5)
        out_v = _C.where(neg, sign * sin_form, cos_form)
        out_w = _C.where(neg, sign * cos_form, sin_form)
        if kind == "v":
            out = _C.where(inside, _C.cos(h * th) / _C.cos(th * 0.5), out_v)
            edge = _C.where(neg, sign * (2.0 * n + 1.0), 1.0)
        else:
            out = _C.where(inside, _C.sin(h * th) / _C.sin(th * 0.5), out_w)
            edge = _C.where(neg, sign, 2.0 * n + 1.0)
    out = _C.where(_C.abs(y) == 1.0, edge, out)
    return _C.where(_C.isinf(y), float("nan"), out)  # the recurrence meets inf - inf there


def _chebyshev(x, n, kind, shifted, op):
    with no_grad():
        x, n, top, dt = _args(x, n, op)
        y = 2.0 * x - 1.0 if shifted else x
        out = _recur(n, ones_like(y), _CHEB_START[kind](y), lambda k, p, q: 2.0 * y * q - p, min(top, 8))
        if top > 8:
            out = _C.where(n > 8, _closed(kind, y, _C.where(n > 8, n, 9.0)), out)
        return _C.where(n < 0, 0.0, out).to(dt)


def _make_chebyshev(kind, shifted):
    name = f"{'shifted_' if shifted else ''}chebyshev_polynomial_{kind}"
    label = {"t": "first", "u": "second", "v": "third", "w": "fourth"}[kind]
    rec = {"t": "T_1 = y", "u": "U_1 = 2y", "v": "V_1 = 2y - 1", "w": "W_1 = 2y + 1"}[kind]
    where = "of ``y = 2x - 1`` (orthogonal on [0, 1])" if shifted else "of ``y = x``"

    def fn(input, n):
        return _chebyshev(input, n, kind, shifted, name)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"Chebyshev polynomial of the {label} kind {where}, of degree ``n``: ``P_0 = 1``, ``{rec}``, "
                  "``P_{k+1} = 2y P_k - P_{k-1}``.\n\n    Args: input: a tensor or number. n: the degree, a tensor or "
                  "number (truncated to an integer; negative gives 0). No gradient, as in PyTorch.")
    return fn


chebyshev_polynomial_t = _make_chebyshev("t", False)
chebyshev_polynomial_u = _make_chebyshev("u", False)
chebyshev_polynomial_v = _make_chebyshev("v", False)
chebyshev_polynomial_w = _make_chebyshev("w", False)
shifted_chebyshev_polynomial_t = _make_chebyshev("t", True)
shifted_chebyshev_polynomial_u = _make_chebyshev("u", True)
shifted_chebyshev_polynomial_v = _make_chebyshev("v", True)
shifted_chebyshev_polynomial_w = _make_chebyshev("w", True)


def _three_term(x, n, op, p1, step, limit=None):
    with no_grad():
        x, n, top, dt = _args(x, n, op)
        if limit is not None:
            cap = limit(dt)
            n = _C.where(n > cap, float("nan"), n)
            top = min(top, cap)
        out = _recur(n, ones_like(x), p1(x), lambda k, p, q: step(k, x, p, q), top)
        out = _C.where(n < 0, 0.0, out)
        return _C.where(_C.isnan(n), float("nan"), out).to(dt)


def _hermite_cap(dt):
    return 512 if dt == Dtype.FLOAT64 else 128


def hermite_polynomial_h(input, n):
    """Physicists' Hermite polynomial ``H_n(x)``: ``H_0 = 1``, ``H_1 = 2x``, ``H_{k+1} = 2x H_k - 2k H_{k-1}``.

    Args: input: a tensor or number. n: the degree, a tensor or number (truncated; negative gives 0; above 512
    in float64, 128 otherwise, NaN). No gradient, as in PyTorch.
    """
    return _three_term(input, n, "hermite_polynomial_h", lambda x: 2.0 * x,
                       lambda k, x, p, q: 2.0 * x * q - (2.0 * k) * p, _hermite_cap)


def hermite_polynomial_he(input, n):
    """Probabilists' Hermite polynomial ``He_n(x)``: ``He_0 = 1``, ``He_1 = x``, ``He_{k+1} = x He_k - k He_{k-1}``.

    Args: input: a tensor or number. n: the degree, as for ``hermite_polynomial_h``. No gradient, as in PyTorch.
    """
    return _three_term(input, n, "hermite_polynomial_he", lambda x: x, lambda k, x, p, q: x * q - float(k) * p,
                       _hermite_cap)


def laguerre_polynomial_l(input, n):
    """Laguerre polynomial ``L_n(x)``: ``L_0 = 1``, ``L_1 = 1 - x``,
    ``L_{k+1} = ((2k + 1 - x) L_k - k L_{k-1}) / (k + 1)``.

    Args: input: a tensor or number. n: the degree, a tensor or number (truncated; negative gives 0). No gradient.
    """
    return _three_term(input, n, "laguerre_polynomial_l", lambda x: 1.0 - x,
                       lambda k, x, p, q: ((2.0 * k + 1.0 - x) * q - float(k) * p) / (k + 1.0))


def legendre_polynomial_p(input, n):
    """Legendre polynomial ``P_n(x)``: ``P_0 = 1``, ``P_1 = x``, ``P_{k+1} = ((2k + 1) x P_k - k P_{k-1}) / (k + 1)``.

    Args: input: a tensor or number. n: the degree, a tensor or number (truncated; negative gives 0). No gradient.
    """
    return _three_term(input, n, "legendre_polynomial_p", lambda x: x,
                       lambda k, x, p, q: ((2.0 * k + 1.0) * x * q - float(k) * p) / (k + 1.0))
