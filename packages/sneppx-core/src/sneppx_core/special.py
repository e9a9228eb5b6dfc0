"""Special functions, as ``torch.special`` (``import sneppx_core.special as S``; also ``sneppx_core.special``).

Names, argument names and order follow ``torch.special``. Inputs are tensors (the binary functions also
take a Python number for either argument, and broadcast); integer and bool inputs give float32 results,
floating inputs keep their dtype, as in PyTorch.

How they are computed: the core's formula-sheet ops where one exists (``erf``, ``erfinv``, ``expm1``,
``exp2``, ``log1p``, ``lgamma``, ``digamma``, ``polygamma``, ``mvlgamma``, ``i0``, ``sigmoid``, softmax);
the rest are compositions of differentiable core ops evaluated in float64 and cast back, written so that
they neither overflow nor cancel: ``erfcx`` and ``erfc`` by a continued fraction in the tail, ``log_ndtr``
by ``erfcx``, ``ndtri``'s tails by Newton's method in log space (``_special_error``); ``i1`` by its series
and ``i0e``/``i1e`` by the asymptotic series (``_special_bessel``); the Bessel J, Y and K by quadrature of
their integral forms, series about 0 and Hankel's expansions (``_special_bessel_jyk``); Hurwitz ``zeta``
by Euler-Maclaurin (``_special_gamma``); the orthogonal polynomials (``*_polynomial_*``, no gradient, as
PyTorch) by their recurrences or closed forms (``_special_poly``). ``gammainc``/``gammaincc`` run on the
host in float64 NumPy (series and continued fraction), with a first-order gradient in ``x`` and none in
``a`` (the backward pass raises, as PyTorch). ``airy_ai`` also runs on the host in float64 NumPy (Taylor series
about tabulated nodes, asymptotic expansions beyond ``|x| = 10``: ``_special_airy``) and, as in PyTorch, records no
gradient.
"""

from __future__ import annotations

import math

from ._backend import _C
from ._C_face import Dtype
from ._special_airy import airy_ai
from ._special_bessel import i0e, i1, i1e, spherical_bessel_j0
from ._special_bessel_jyk import (
    bessel_j0, bessel_j1, bessel_y0, bessel_y1, modified_bessel_k0, modified_bessel_k1, scaled_modified_bessel_k0,
    scaled_modified_bessel_k1,
)
from ._special_common import need_tensor, unary
from ._special_error import erfc, erfcx, log_ndtr, ndtr, ndtri
from ._special_gamma import entr, gammainc, gammaincc, xlog1py, xlogy, zeta
from ._special_poly import (
    chebyshev_polynomial_t, chebyshev_polynomial_u, chebyshev_polynomial_v, chebyshev_polynomial_w,
    hermite_polynomial_h, hermite_polynomial_he, laguerre_polynomial_l, legendre_polynomial_p,
    shifted_chebyshev_polynomial_t, shifted_chebyshev_polynomial_u, shifted_chebyshev_polynomial_v,
    shifted_chebyshev_polynomial_w,
)


def _sheet(name, doc):
    core = getattr(_C, name)

    def fn(input):
        need_tensor(input, name)
        return core(input)

    fn.__doc__ = doc + "\n\n    Args: input: a tensor (integers compute in float32). Returns one of its shape."
    return fn


erf = _sheet("erf", "Error function ``erf(x) = 2 / sqrt(pi) int_0^x exp(-t^2) dt``.")
erfinv = _sheet("erfinv", "Inverse error function: the ``y`` with ``erf(y) = x`` on (-1, 1); +-inf at +-1, NaN "
                "outside.")
exp2 = _sheet("exp2", "``2^x``.")
expm1 = _sheet("expm1", "``exp(x) - 1``, accurate for small ``x``.")
log1p = _sheet("log1p", "``log(1 + x)``, accurate for small ``x``.")
gammaln = _sheet("lgamma", "``log|Gamma(x)|``, the log of the absolute value of the gamma function (``inf`` at "
                 "the poles).")
digamma = _sheet("digamma", "Digamma function ``psi(x) = d/dx log Gamma(x)`` (-inf at 0, NaN at negative integers).")
psi = _sheet("digamma", "Digamma function ``psi(x) = d/dx log Gamma(x)`` (alias of ``digamma``).")
i0 = _sheet("i0", "Modified Bessel function of the first kind of order zero, ``i0(x) = sum_k (x/2)^(2k) / "
            "(k!)^2``.")
modified_bessel_i0 = _sheet("i0", "Modified Bessel function of the first kind of order zero (as ``i0``).")
expit = _sheet("sigmoid", "Logistic sigmoid ``expit(x) = 1 / (1 + exp(-x))``.")
gammaln.__name__, psi.__name__, modified_bessel_i0.__name__, expit.__name__ = (
    "gammaln", "psi", "modified_bessel_i0", "expit")


def modified_bessel_i1(input):
    """Modified Bessel function of the first kind of order one (as ``i1``).

    Args: input: a tensor (integers compute in float32). Returns a tensor of the same shape.
    """
    need_tensor(input, "modified_bessel_i1")
    return i1(input)


def polygamma(n, input):
    """``polygamma(n, x)``: the ``n``-th derivative of the digamma function (``n = 0`` is ``digamma``).

    Args: n: a non-negative int. input: a tensor. Returns a tensor of the same shape.
    """
    need_tensor(input, "polygamma")
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"[special.polygamma] n must be a non-negative int, got {n!r}")
    return _C.polygamma(n, input)


def multigammaln(input, p):
    """Multivariate log-gamma function of dimension ``p``:
    ``log Gamma_p(a) = p (p - 1) / 4 log(pi) + sum_{j=1..p} lgamma(a + (1 - j) / 2)``; every element of ``a``
    must exceed ``(p - 1) / 2``.

    Args: input: a floating tensor. p: a positive int. Returns a tensor of the same shape.
    """
    need_tensor(input, "multigammaln")
    return _C.mvlgamma(input, p)


def logit(input, eps=None):
    """``logit(p) = log(p / (1 - p))``; with ``eps``, ``p`` is first clamped to ``[eps, 1 - eps]``.
    Gradient ``1 / (p (1 - p))`` (0 outside ``[eps, 1 - eps]`` when clamped).

    Args: input: a tensor (integers compute in float32). eps: a float or None. Returns a tensor of the same shape.
    """
    need_tensor(input, "logit")
    x = input if input.dtype.is_floating_point else input.to(Dtype.FLOAT32)
    if eps is not None:
        x = _C.clamp(x, eps, 1.0 - eps)
    return _C.log(x / (1.0 - x))


def sinc(input):
    """Normalised sinc ``sin(pi x) / (pi x)``, 1 at 0. Gradient ``(cos(pi x) - sinc(x)) / x``, 0 at 0.

    Args: input: a tensor (integers compute in float32). Returns a tensor of the same shape.
    """
    x, dt = unary(input, "sinc")
    zero = x == 0
    px = _C.where(zero, 1.0, x) * math.pi
    return _C.where(zero, 1.0, _C.sin(px) / px).to(dt)


def round(input, *, decimals=0):  # noqa: A001
    """Rounds to ``decimals`` decimal places, halves to even (``round(x * 10^d) / 10^d``; for negative ``d``,
    ``round(x / 10^-d) * 10^-d``). Gradient 0.

    Args: input: a tensor. decimals: an int. Returns a tensor of the same shape and dtype.
    """
    need_tensor(input, "round")
    if decimals == 0:
        return _C.round(input)
    if not input.dtype.is_floating_point:
        raise TypeError(f"[special.round] decimals={decimals} needs a floating tensor, got {input.dtype}")
    scale = 10.0 ** abs(decimals)
    if decimals > 0:
        return _C.round(input * scale) / scale
    return _C.round(input / scale) * scale


def logsumexp(input, dim, keepdim=False):
    """``log sum exp(x)`` over ``dim`` (an int or a sequence of ints), without overflow.

    Args: input: a tensor. dim: the dimensions to reduce. keepdim: keep them with size 1.
    """
    need_tensor(input, "logsumexp")
    return _C.logsumexp(input, dim, keepdim)


def softmax(input, dim, *, dtype=None):
    """``softmax(x)_i = exp(x_i) / sum_j exp(x_j)`` along ``dim``; ``dtype`` casts the input first."""
    need_tensor(input, "softmax")
    return _C._nn.softmax(input if dtype is None else input.to(dtype), dim, False)


def log_softmax(input, dim, *, dtype=None):
    """``log_softmax(x)_i = x_i - logsumexp(x)`` along ``dim``; ``dtype`` casts the input first."""
    need_tensor(input, "log_softmax")
    return _C._nn.softmax(input if dtype is None else input.to(dtype), dim, True)


__all__ = [
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_k0", "modified_bessel_k1",
    "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
    "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w",
    "digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc", "gammaincc",
    "gammaln", "i0", "i0e", "i1", "i1e", "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp",
    "modified_bessel_i0", "modified_bessel_i1", "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round",
    "sinc", "softmax", "spherical_bessel_j0", "xlog1py", "xlogy", "zeta",
]
