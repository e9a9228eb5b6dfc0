"""The Airy function ``Ai`` of ``sneppx_core.special`` (``airy_ai``), computed on the host in float64 NumPy.

``Ai`` solves ``y'' = x y`` and decays for ``x -> +inf``; it oscillates for ``x -> -inf``. Two regions:

* ``|x| <= 10``: the Taylor series about the nearest node ``x0 = k / 2`` (``|x - x0| <= 1/4``), whose
  coefficients follow from ``Ai(x0)``, ``Ai'(x0)`` and the equation: ``a_{n+2} = (x0 a_n + a_{n-1}) / ((n + 1)
  (n + 2))``. The 41 node values are computed once, on first use, from the Maclaurin series ``Ai = c1 f - c2 g``
  (``f = sum 3^k (1/3)_k x^(3k) / (3k)!``, ``g = sum 3^k (2/3)_k x^(3k+1) / (3k+1)!``) in 50-digit ``decimal``
  arithmetic, which absorbs the cancellation of ``c1 f - c2 g`` for positive ``x`` (a factor ``Bi / Ai``, up to
  1e19 at ``x = 10``). 30 Taylor terms reach round-off; for positive ``x`` the rounding of the node values is
  amplified by at most ``exp(2 sqrt(x0) / 4) < 5``.
* ``|x| > 10``: the asymptotic expansions (DLMF 9.7.5, 9.7.9) in ``zeta = (2/3) |x|^(3/2) > 21``, whose smallest
  term is below 1e-18 there: ``Ai(x) = exp(-zeta) / (2 sqrt(pi) x^(1/4)) sum (-1)^k u_k zeta^-k`` and ``Ai(-t) =
  (cos(zeta - pi/4) P + sin(zeta - pi/4) Q) / (sqrt(pi) t^(1/4))`` with ``P``, ``Q`` the even and odd terms.
  ``zeta`` is formed in double-double arithmetic, so ``exp(-zeta)`` keeps full relative accuracy up to the
  underflow near ``x = 104``, and the phase ``zeta - pi/4`` is reduced modulo ``pi/2`` exactly enough to keep
  ``Ai(-t)`` accurate to round-off relative to its envelope for every ``t`` (beyond ``t = 2^32`` by exact
  integer arithmetic, element by element).

Away from the zeros of ``Ai`` (all on the negative axis) the result is within a few units of 1e-16 relative.
PyTorch's ``airy_ai`` records no gradient (its result never requires grad); neither does this one.
"""

from __future__ import annotations

import decimal
import functools
import math

import numpy as np

from ._C_face import Dtype, Tensor
from ._grad_mode import no_grad
from ._special_common import need_tensor

_X_TAYLOR = 10.0  # Taylor series about the nodes for |x| <= 10, asymptotic expansions beyond
_NODES = np.arange(-20, 21) / 2.0
_TAYLOR_TERMS = 30
_ASYM_TERMS = 28  # u_k / zeta^k < 3e-18 for k = 25 and zeta >= 21.08 (x = 10)
_EXACT_PHASE = 2.0 ** 32  # beyond this |x| the phase is reduced with Python integers
_UNDERFLOW = 110.0  # Ai(x) < 1e-330 for x > 110: below the smallest subnormal
# Ai(0) = 3^(-2/3) / Gamma(2/3) and -Ai'(0) = 3^(-1/3) / Gamma(1/3), to 51 digits
_AI0 = "0.355028053887817239260063186004183176397979174199177"
_DAI0 = "0.258819403792806798405183560189203963479091138354935"
# u_k = (2k+1)(2k+3)...(6k-1) / (216^k k!) of the asymptotic expansions
_U = [1.0]
for _k in range(1, _ASYM_TERMS):
    _U.append(_U[-1] * (6 * _k - 5) * (6 * _k - 3) * (6 * _k - 1) / ((2 * _k - 1) * 216 * _k))
_HALF_PI = (math.pi / 2, 6.123233995736766e-17)  # pi/2 = sum of the two, to about 1e-33
_QUARTER_PI = (math.pi / 4, 3.061616997868383e-17)
_TWO_THIRDS = (2.0 / 3.0, 3.700743415417188e-17)
_SPLIT = 134217729.0  # 2^27 + 1, Dekker's splitting constant


@functools.lru_cache(maxsize=1)
def _node_values():
    """``(Ai, Ai')`` at the nodes, from the Maclaurin series in 50-digit decimal arithmetic."""
    ai, dai = [], []
    with decimal.localcontext() as ctx:
        ctx.prec = 50
        c1, c2 = decimal.Decimal(_AI0), decimal.Decimal(_DAI0)
        tiny = decimal.Decimal("1e-60")
        for x0 in _NODES:
            x = decimal.Decimal(x0)
            x3 = x * x * x
            f = tf = decimal.Decimal(1)  # f and its terms; g, f', g' likewise
            g = tg = x
            fp, tfp = decimal.Decimal(0), x * x / 2
            gp = tgp = decimal.Decimal(1)
            k = 0
            while max(abs(tf), abs(tg), abs(tfp), abs(tgp)) > tiny:
                fp += tfp
                tf *= x3 / ((3 * k + 2) * (3 * k + 3))
                tg *= x3 / ((3 * k + 3) * (3 * k + 4))
                tgp *= x3 / ((3 * k + 1) * (3 * k + 3))
                tfp *= x3 / ((3 * k + 3) * (3 * k + 5))
                f, g, gp = f + tf, g + tg, gp + tgp
                k += 1
            ai.append(float(c1 * f - c2 * g))
            dai.append(float(c1 * fp - c2 * gp))
    return np.array(ai), np.array(dai)


def _taylor(x):
    """Ai for |x| <= 10.25 by the Taylor series about the nearest node."""
    k = np.rint(2.0 * x)
    x0 = k / 2.0
    h = x - x0  # exact: |h| <= 1/4 and x0 is a half-integer near x
    ai, dai = _node_values()
    idx = (k + 20).astype(np.int64)
    prev, cur, nxt = np.zeros_like(x), ai[idx], dai[idx]  # a_{n-1}, a_n, a_{n+1}
    total, hp = cur.copy(), np.ones_like(x)
    for n in range(_TAYLOR_TERMS):
        hp = hp * h
        total += nxt * hp
        prev, cur, nxt = cur, nxt, (x0 * cur + prev) / ((n + 1) * (n + 2))
    return total


def _two_prod(a, b):
    """``(p, e)`` with ``p = fl(a b)`` and ``a b = p + e`` exactly (Dekker)."""
    p = a * b
    a1 = a * _SPLIT - (a * _SPLIT - a)
    b1 = b * _SPLIT - (b * _SPLIT - b)
    a2, b2 = a - a1, b - b1
    return p, ((a1 * b1 - p) + a1 * b2 + a2 * b1) + a2 * b2


def _zeta_dd(t):
    """``zeta = (2/3) t^(3/2)`` as a double-double ``(hi, lo)``, relative error about 1e-31 (10 <= t <= 2^32)."""
    s = np.sqrt(t)
    p, e = _two_prod(s, s)
    s_lo = ((t - p) - e) / (2.0 * s)  # sqrt(t) = s + s_lo to about 1e-32 relative
    a, ae = _two_prod(t, s)
    b = ae + t * s_lo  # t^(3/2) = a + b
    z, ze = _two_prod(_TWO_THIRDS[0], a)
    lo = ze + _TWO_THIRDS[0] * b + _TWO_THIRDS[1] * a
    hi = z + lo
    return hi, lo - (hi - z)


def _reduce_dd(t):
    """``(n mod 4, r)`` with ``zeta = n pi/2 + r`` and ``|r| <= pi/4`` (10 <= t <= 2^32)."""
    hi, lo = _zeta_dd(t)
    n = np.rint(hi / _HALF_PI[0])
    p, e = _two_prod(n, _HALF_PI[0])
    r = (((hi - p) - e) - n * _HALF_PI[1]) + lo
    return np.mod(n, 4.0).astype(np.int64), r


def _half_pi_scaled(bits):
    """``floor(pi/2 * 2^bits)`` to within one unit (from a cached value with up to 1023 more bits)."""
    more = -bits % 1024
    return _half_pi_fixed(bits + more) >> more


@functools.lru_cache(maxsize=4)
def _half_pi_fixed(bits):
    """``pi/2 * 2^bits`` to within one unit, by Machin's formula in integer arithmetic."""
    guard = bits + 16
    one = 1 << guard

    def arctan_inv(m):  # arctan(1/m) * 2^guard
        total = term = one // m
        k, sign = 1, 1
        while term:
            term //= m * m
            sign = -sign
            total += sign * (term // (2 * k + 1))
            k += 1
        return total

    return (2 * (4 * arctan_inv(5) - arctan_inv(239))) >> 16


def _reduce_exact(t):
    """``(n mod 4, r)`` as ``_reduce_dd``, for one float ``t`` of any size, in exact integer arithmetic."""
    p, q = float(t).as_integer_ratio()
    j = q.bit_length() - 1  # q = 2^j
    bits = int(1.5 * math.log2(t)) + 72
    z = 2 * math.isqrt(p ** 3 << (2 * bits - 3 * j)) // 3  # floor(zeta * 2^bits), to within one unit
    half_pi = _half_pi_scaled(bits)
    n, rem = divmod(z + half_pi // 2, half_pi)  # n = round(zeta / (pi/2))
    return n % 4, (rem - half_pi // 2) / (1 << bits)


def _horner(coeffs, y):
    """``sum_k coeffs[k] y^k`` for an array ``y``."""
    acc = np.zeros_like(y)
    for c in reversed(coeffs):
        acc = acc * y + c
    return acc


def _positive(x):
    """Ai for x > 10: ``exp(-zeta) / (2 sqrt(pi) x^(1/4)) sum (-1)^k u_k zeta^-k``."""
    out = np.zeros_like(x)
    ok = x <= _UNDERFLOW
    xs = x[ok]
    hi, lo = _zeta_dd(xs)
    s = _horner(_U, -1.0 / hi)
    out[ok] = np.exp(-hi) * (1.0 - lo) * s / (2.0 * math.sqrt(math.pi) * np.sqrt(np.sqrt(xs)))
    return out


def _negative(t):
    """Ai(-t) for t > 10: ``(cos(zeta - pi/4) P + sin(zeta - pi/4) Q) / (sqrt(pi) t^(1/4))``."""
    quad = np.zeros(t.shape, dtype=np.int64)
    r = np.zeros_like(t)
    mid = t <= _EXACT_PHASE
    quad[mid], r[mid] = _reduce_dd(t[mid])
    for i in np.flatnonzero(~mid):
        quad[i], r[i] = _reduce_exact(t[i])
    phi = (r - _QUARTER_PI[0]) - _QUARTER_PI[1]  # zeta - pi/4 = quad pi/2 + phi
    c, s = np.cos(phi), np.sin(phi)
    cos_t = np.choose(quad, [c, -s, -c, s])
    sin_t = np.choose(quad, [s, c, -s, -c])
    with np.errstate(over="ignore"):
        w = 1.5 / (t * np.sqrt(t))  # 1 / zeta; 0 where t^(3/2) overflows
    w2 = -w * w
    series = cos_t * _horner(_U[0::2], w2) + sin_t * w * _horner(_U[1::2], w2)
    return series / (math.sqrt(math.pi) * np.sqrt(np.sqrt(t)))


def airy_ai_np(x):
    """Ai of a float64 NumPy array: NaN at NaN and at -inf, 0 at +inf."""
    x = np.asarray(x, dtype=np.float64)
    out = np.full(x.shape, np.nan)
    with np.errstate(invalid="ignore"):
        near, pos, neg = np.abs(x) <= _X_TAYLOR, x > _X_TAYLOR, (x < -_X_TAYLOR) & np.isfinite(x)
    out[near] = _taylor(x[near])
    out[pos] = _positive(x[pos])
    out[neg] = _negative(-x[neg])
    return out


def airy_ai(input, *, out=None):
    """Airy function of the first kind, ``Ai(x)``: the solution of ``y'' = x y`` that decays as ``x -> +inf``
    (``Ai(0) = 3^(-2/3) / Gamma(2/3)``). Float64 on the host, accurate to about 1e-16 relative away from the
    zeros of ``Ai``; 0 at ``+inf``, NaN at ``-inf`` and NaN.

    As in PyTorch the result records no gradient (it never requires grad), integer and bool inputs give float32,
    and float16/bfloat16 inputs raise NotImplementedError.

    Args: input: a tensor. out: an optional floating tensor of the result's shape to write into (and return).
    """
    need_tensor(input, "airy_ai")
    dt = input.dtype
    if dt in (Dtype.FLOAT16, Dtype.BFLOAT16):
        raise NotImplementedError(f"[special.airy_ai] not implemented for {dt}: use float32 or float64")
    dt = dt if dt in (Dtype.FLOAT32, Dtype.FLOAT64) else Dtype.FLOAT32
    values = airy_ai_np(input.detach().cpu().numpy())
    res = Tensor(np.require(values, requirements="C")).to(dt)
    res = res if input.device.type == "cpu" else res.to(input.device)
    if out is None:
        return res
    need_tensor(out, "airy_ai")
    if out.dtype not in (Dtype.FLOAT32, Dtype.FLOAT64):
        raise RuntimeError(f"[special.airy_ai] result type {dt} can't be cast to the desired output type {out.dtype}")
    if tuple(out.shape) != tuple(res.shape):
        raise ValueError(f"[special.airy_ai] out has shape {tuple(out.shape)}, expected {tuple(res.shape)}")
    with no_grad():
        out.copy_(res)
    return out
