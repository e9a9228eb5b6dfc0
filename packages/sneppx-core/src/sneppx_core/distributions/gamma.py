"""The gamma distribution, and ``_standard_gamma``: Gamma(alpha, 1) draws with implicit reparameterised gradients.

``_standard_gamma`` is the sampler every gamma-based distribution draws through (Gamma, Chi2, Dirichlet, Beta,
StudentT, FisherSnedecor, and others' NegativeBinomial, Wishart, LKJCholesky, InverseGamma). Its gradient with
respect to the concentration is the implicit one, ``dx/dalpha = -(dF/dalpha) / (dF/dx)`` at the sample, with ``F``
the regularised lower incomplete gamma function, as PyTorch's ``_standard_gamma`` defines it; here it is computed
to near float64 precision (see :func:`_gamma_sample_grad`). The helpers :class:`_Dual` and :func:`_continued_fraction`
(forward-mode derivatives of series and continued fractions) serve the Dirichlet's gradient too.
"""

from __future__ import annotations

import numbers

import numpy as np

import sneppx_core as sx
from sneppx_core.autograd.function import once_differentiable

from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all

_EPS = 2.0**-53  # float64 unit roundoff: the convergence test of series and continued fractions
_TINY = 1e-300
_MAX_TERMS = 20000  # series terms / continued-fraction steps per element (alpha <= 1e5 needs under 3000)
_ASYMPTOTIC_ALPHA = 1e5  # above it, dx/dalpha comes from the Cornish-Fisher expansion


class _Dual:
    """A float64 array ``v`` with its derivative ``d`` along one direction (forward-mode differentiation)."""

    __slots__ = ("v", "d")
    __array_ufunc__ = None  # NumPy arrays defer to these operators

    def __init__(self, v, d=0.0):
        self.v = np.asarray(v, dtype=np.float64)
        if isinstance(d, np.ndarray) and d.shape == self.v.shape and d.dtype == np.float64:
            self.d = d  # the arithmetic below makes fresh arrays: no copy needed
        else:
            self.d = np.broadcast_to(np.asarray(d, dtype=np.float64), self.v.shape).copy()

    def __add__(self, other):
        if not isinstance(other, _Dual):  # a constant: the derivative is unchanged
            return _Dual(self.v + other, self.d)
        return _Dual(self.v + other.v, self.d + other.d)

    __radd__ = __add__

    def __sub__(self, other):
        if not isinstance(other, _Dual):
            return _Dual(self.v - other, self.d)
        return _Dual(self.v - other.v, self.d - other.d)

    def __rsub__(self, other):
        return _Dual(other - self.v, -self.d)

    def __neg__(self):
        return _Dual(-self.v, -self.d)

    def __mul__(self, other):
        if not isinstance(other, _Dual):
            return _Dual(self.v * other, self.d * other)
        return _Dual(self.v * other.v, self.d * other.v + self.v * other.d)

    __rmul__ = __mul__

    def __truediv__(self, other):
        if not isinstance(other, _Dual):
            return _Dual(self.v / other, self.d / other)
        q = self.v / other.v
        return _Dual(q, (self.d - q * other.d) / other.v)

    def __rtruediv__(self, other):
        q = other / self.v
        return _Dual(q, -q * self.d / self.v)

    def __getitem__(self, index):
        return _Dual(self.v[index], self.d[index])


def _until_converged(state, step, n_max=_MAX_TERMS):
    """Runs ``state, done = step(n, idx, state)`` for ``n = 1, 2, ...`` on the elements ``idx`` not yet converged
    (``state`` a tuple of _Dual of the running elements, ``done`` a bool array over them) and returns the first
    entry of every element's final state."""
    size = state[0].v.size
    idx, val, der = np.arange(size), np.empty(size), np.empty(size)
    for n in range(1, n_max + 1):
        if not idx.size:
            break
        state, done = step(n, idx, state)
        if n == n_max:
            done = np.ones_like(done)
        val[idx[done]], der[idx[done]] = state[0].v[done], state[0].d[done]
        idx, state = idx[~done], tuple(s[~done] for s in state)
    return _Dual(val, der)


def _converged(increment, total):
    """Whether a series/continued fraction stops changing ``total`` (value and derivative) by ``increment``."""
    return (np.abs(increment.v) <= _EPS * np.abs(total.v)) & (np.abs(increment.d) <= _EPS * np.abs(total.d))


def _continued_fraction(b0, term):
    """``b0 + a1 / (b1 + a2 / (b2 + ...))`` on _Dual arrays by the modified Lentz method; ``term(n, idx)`` gives
    ``(a_n, b_n)`` for the elements ``idx`` still running. Each element runs until value and derivative converge."""

    def guard(z):  # Lentz's remedy for a zero denominator
        return _Dual(np.where(z.v == 0, _TINY, z.v), z.d)

    def step(n, idx, state):
        f, c, d = state
        a_n, b_n = term(n, idx)
        d = 1 / guard(b_n + a_n * d)
        c = guard(b_n + a_n / c)
        new = f * (c * d)
        return (new, c, d), _converged(new - f, new)

    b0 = guard(b0)
    return _until_converged((b0, b0, _Dual(np.zeros(b0.v.shape))), step)


def _digamma(a):
    """The digamma function of a float64 array."""
    return sx.digamma(sx.tensor(np.ascontiguousarray(a, dtype=np.float64))).numpy()


def _grad_series(alpha, x):
    """dx/dalpha where ``x < alpha + 1``: ``P = x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a + 1) ... (a + n))``."""
    a = _Dual(alpha, 1.0)

    def step(n, idx, state):
        total, term = state
        term = term * x[idx] / (a[idx] + n)
        return (total + term, term), _converged(term, total + term)

    one = _Dual(np.ones(alpha.shape))
    s = _until_converged((one, one), step)
    return -(x / alpha) * ((np.log(x) - _digamma(alpha + 1)) * s.v + s.d)


def _grad_continued_fraction(alpha, x):
    """dx/dalpha where ``x >= alpha + 1``, from Legendre's continued fraction of ``Q = 1 - P``."""
    a = _Dual(alpha, 1.0)
    h = 1 / _continued_fraction(x + 1 - a, lambda n, i: (-n * (n - a[i]), x[i] + 2 * n + 1 - a[i]))
    return x * (h.v * (np.log(x) - _digamma(alpha)) + h.d)


def _grad_asymptotic(alpha, x):
    """dx/dalpha for large ``alpha`` by the Cornish-Fisher expansion ``x = a + sqrt(a) z + (z^2 - 1)/3 + ...`` at
    fixed normal quantile ``z`` (found from ``x`` by Newton's method); the terms kept leave O(alpha^-2.5)."""
    s = np.sqrt(alpha)
    z = (x - alpha) / s
    for _ in range(4):
        f = s * z + (z * z - 1) / 3 + (z**3 - 7 * z) / (36 * s) - (3 * z**4 + 7 * z * z - 16) / (810 * alpha)
        slope = s + 2 * z / 3 + (3 * z * z - 7) / (36 * s) - (12 * z**3 + 14 * z) / (810 * alpha)
        z = z - (f - (x - alpha)) / slope
    return 1 + z / (2 * s) - (z**3 - 7 * z) / (72 * alpha * s) + (3 * z**4 + 7 * z * z - 16) / (810 * alpha**2)


def _gamma_sample_grad(alpha, x):
    """``dx/dalpha = -(dP/dalpha) / (dP/dx)`` for samples ``x`` of Gamma(alpha, 1) (float64 arrays of one shape):
    the implicit reparameterisation gradient, with ``P(alpha, x)`` the regularised lower incomplete gamma function.

    ``dP/dalpha`` is differentiated exactly, in forward mode, through the power series of ``P`` (``x < alpha + 1``)
    or the continued fraction of ``1 - P`` (otherwise); above ``alpha = 1e5`` the Cornish-Fisher expansion of the
    quantile is differentiated instead. Against 50-digit mpmath values the relative error is below 1e-13 for
    ``alpha <= 1e3``, below 5e-13 up to ``1e5``, and below 5e-12 above it (for samples within 7 standard
    deviations). ``x == 0`` (an underflowed sample) gives 0; NaN where ``alpha`` is not positive and finite.
    """
    alpha, x = np.broadcast_arrays(np.asarray(alpha, np.float64), np.asarray(x, np.float64))
    grad = np.full(alpha.shape, np.nan)
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(alpha) & (alpha > 0) & (x >= 0)
        grad[ok & (x == 0)] = 0.0
        ok &= x > 0
        big = ok & (alpha > _ASYMPTOTIC_ALPHA)
        ser = ok & ~big & (x < alpha + 1)
        cf = ok & ~big & ~ser
    for mask, fn in ((ser, _grad_series), (cf, _grad_continued_fraction), (big, _grad_asymptotic)):
        if mask.any():
            grad[mask] = fn(alpha[mask], x[mask])
    return grad


def _log_standard_gamma(alpha):
    """Logs of Gamma(alpha, 1) draws for a flat float64 tensor ``alpha``, from SneppX's generator: Marsaglia and
    Tsang's squeeze-free rejection method (acceptance >= 95%), boosted below ``alpha = 1`` by ``u^(1/alpha)``
    (added in log space, so tiny concentrations do not underflow). NaN for NaN or negative ``alpha``."""
    dev = alpha.device
    out = sx.full(tuple(alpha.shape), float("nan"), dtype=sx.float64, device=dev)
    out = sx.where(sx.isinf(alpha) & (alpha > 0), float("inf"), out)
    boost = alpha < 1
    a = sx.where(boost, alpha + 1, alpha)
    d = a - 1.0 / 3.0
    c = (9 * d).rsqrt()
    pending = sx.arange(alpha.numel(), device=dev)[sx.isfinite(alpha) & (alpha >= 0)]
    while pending.numel():
        n, dp, cp = pending.numel(), d[pending], c[pending]
        z = sx.randn(n, dtype=sx.float64, device=dev)
        u = sx.rand(n, dtype=sx.float64, device=dev)
        v = (1 + cp * z) ** 3
        log_v = v.clamp(min=_TINY).log()
        accept = (v > 0) & (u.log() < 0.5 * z * z + dp - dp * v + dp * log_v)
        out[pending[accept]] = (dp.log() + log_v)[accept]
        pending = pending[~accept]
    boosted = sx.arange(alpha.numel(), device=dev)[boost]
    if boosted.numel():
        u = sx.rand(boosted.numel(), dtype=sx.float64, device=dev)
        out[boosted] = out[boosted] + u.log() / alpha[boosted]
    return out


def _check_floating(concentration, op):
    """TypeError unless ``concentration`` is a floating-point tensor (``op`` names the caller)."""
    if not isinstance(concentration, sx.Tensor) or not concentration.dtype.is_floating_point:
        raise TypeError(f"{op}: concentration must be a floating-point Tensor, got "
                        f"{getattr(concentration, 'dtype', type(concentration).__name__)}")


class _StandardGamma(sx.autograd.Function):
    """Gamma(concentration, 1) draws, differentiable in the concentration by implicit reparameterisation (first
    order only: the backward is once-differentiable)."""

    @staticmethod
    def forward(ctx, concentration):
        """Draws in float64 (SneppX's generator), returned in the concentration's dtype, at least its ``tiny``."""
        flat = concentration.detach().reshape(-1).to(sx.float64)
        x = _log_standard_gamma(flat).exp().reshape(tuple(concentration.shape)).to(concentration.dtype)
        x = x.clamp(min=sx.finfo(concentration.dtype).tiny)
        ctx.save_for_backward(concentration, x)
        return x

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        """``grad_output * dx/dalpha`` (see :func:`_gamma_sample_grad`)."""
        concentration, x = ctx.saved_tensors
        grad = _gamma_sample_grad(*(t.detach().cpu().to(sx.float64).numpy() for t in (concentration, x)))
        return grad_output * sx.tensor(grad, dtype=concentration.dtype, device=concentration.device)


def _standard_gamma(concentration):
    """Gamma(concentration, 1) samples of ``concentration``'s shape and dtype, from SneppX's generator.

    Differentiable in ``concentration`` (first order) by implicit reparameterisation, as ``torch._standard_gamma``:
    ``d sample / d alpha = -(dF/dalpha) / (dF/dx)`` at the sample, ``F`` the gamma CDF (accuracy: see
    :func:`_gamma_sample_grad`). Samples are clamped to the dtype's smallest normal number; NaN for NaN or negative
    concentrations, ``inf`` for an infinite one.
    """
    _check_floating(concentration, "_standard_gamma")
    return _StandardGamma.apply(concentration)


class Gamma(ExponentialFamily):
    """The gamma distribution with shape ``concentration`` (alpha) and ``rate`` (beta = 1 / scale)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def mean(self):
        """``concentration / rate``."""
        return self.concentration / self.rate

    @property
    def mode(self):
        """``max(concentration - 1, 0) / rate``."""
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        """``concentration / rate^2``."""
        return self.concentration / self.rate.pow(2)

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        both_numbers = isinstance(concentration, numbers.Number) and isinstance(rate, numbers.Number)
        super().__init__(() if both_numbers else tuple(self.concentration.shape), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """A new Gamma with both parameters expanded to ``batch_shape``."""
        return self._expand_params(Gamma, batch_shape, _instance, ("concentration", "rate"))

    def rsample(self, sample_shape=()):
        """``_standard_gamma(concentration) / rate``: differentiable in both (implicitly in the concentration)."""
        shape = self._extended_shape(sample_shape)
        value = _standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        value.detach().clamp_(min=sx.finfo(value.dtype).tiny)  # in place: not recorded by autograd
        return value

    def log_prob(self, value):
        """``a log(b) + (a - 1) log(x) - b x - lgamma(a)`` (``a`` concentration, ``b`` rate)."""
        value = sx.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return (sx.xlogy(self.concentration, self.rate) + sx.xlogy(self.concentration - 1, value)
                - self.rate * value - sx.lgamma(self.concentration))

    def entropy(self):
        """``a - log(b) + lgamma(a) + (1 - a) digamma(a)``."""
        return (self.concentration - sx.log(self.rate) + sx.lgamma(self.concentration)
                + (1.0 - self.concentration) * sx.digamma(self.concentration))

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return sx.lgamma(x + 1) + (x + 1) * sx.log(-y.reciprocal())

    def cdf(self, value):
        """``gammainc(concentration, rate * value)`` (not differentiable in the concentration, as in PyTorch)."""
        if self._validate_args:
            self._validate_sample(value)
        a, x = sx.broadcast_tensors(self.concentration, self.rate * value)
        shape = tuple(a.shape)
        return sx.special.gammainc(a.reshape(-1), x.reshape(-1)).reshape(shape)  # flat: 0-d inputs fail there


__all__ = ["Gamma"]
