"""The gamma distribution, and ``_standard_gamma``: Gamma(alpha, 1) draws with implicit reparameterised gradients.

``_standard_gamma`` is the sampler every gamma-based distribution draws through (Gamma, Chi2, Dirichlet, Beta,
StudentT, FisherSnedecor, and others' NegativeBinomial, Wishart, LKJCholesky, InverseGamma). Its gradient with
respect to the concentration is the implicit one, ``dx/dalpha = -(dF/dalpha) / (dF/dx)`` at the sample, with ``F``
the regularised lower incomplete gamma function, as PyTorch's ``_standard_gamma`` defines it; here it is computed
to near float64 precision by a compiled kernel (see :func:`_gamma_sample_grad`).
"""

from __future__ import annotations

import numbers

import numpy as np

import sneppx_core as sx
from sneppx_core._backend import _C
from sneppx_core.autograd.function import once_differentiable

from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all

def _host64(t):
    """``t`` as a contiguous float64 CPU tensor without autograd (what the compiled kernels take)."""
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    return (t if t.dtype == sx.float64 else t.to(sx.float64)).contiguous()


def _like(t, like):
    """``t`` (a kernel's float64 CPU result) in ``like``'s dtype and on its device."""
    if t.dtype != like.dtype:
        t = t.to(like.dtype)
    return t if like.device.type == "cpu" else t.to(like.device)


def _on_host(fn, *arrays):
    """``fn`` (a compiled kernel over float64 CPU tensors of one shape) on NumPy-convertible ``arrays``, broadcast
    together; the result as a float64 array."""
    arrays = np.broadcast_arrays(*(np.asarray(a, np.float64) for a in arrays))
    return fn(*(sx.tensor(np.require(a, requirements="C")) for a in arrays)).numpy()


def _gamma_sample_grad(alpha, x):
    """``dx/dalpha = -(dP/dalpha) / (dP/dx)`` for samples ``x`` of Gamma(alpha, 1) (float64 arrays, broadcast): the
    implicit reparameterisation gradient, with ``P(alpha, x)`` the regularised lower incomplete gamma function.

    The compiled kernel (``csrc/ops/sample_grad.cpp``) differentiates ``dP/dalpha`` exactly, in forward mode,
    through the power series of ``P`` (``x < alpha + 1 + sqrt(alpha + 1)``) or the continued fraction of ``1 - P``
    (otherwise); above ``alpha = 1e5`` the Cornish-Fisher expansion of the quantile. Against 30-digit mpmath values
    the relative error is below 2e-13 for ``alpha <= 1e3``, below 1e-12 up to ``1e5`` and below 5e-12 above it (for
    samples within 7 standard deviations). Float32 draws' gradients (the compiled sampler's node) stop the sums at
    ``2^-40`` instead of float64's unit roundoff. ``x == 0`` (an underflowed sample) gives 0; NaN where ``alpha`` is not positive and finite.
    """
    return _on_host(_C._standard_gamma_grad, alpha, x)


def _log_standard_gamma(alpha):
    """Logs of Gamma(alpha, 1) draws for a float64 tensor ``alpha``, from SneppX's generator: Marsaglia and Tsang's
    method (acceptance >= 95%), boosted below ``alpha = 1`` by ``u^(1/alpha)`` (added in log space, so tiny
    concentrations do not underflow), by the backend's kernel (``csrc/ops/sample_grad.cpp``; on the host, then
    moved to ``alpha``'s device). NaN for NaN or negative ``alpha``."""
    out = _C._log_standard_gamma(_host64(alpha))
    return out if alpha.device.type == "cpu" else out.to(alpha.device)


def _native(concentration):
    """True where the compiled samplers with autograd nodes (``_C._standard_gamma``, ``_C._sample_dirichlet``) take
    ``concentration``: float32 or float64 on the CPU, with the compiled backend; elsewhere the samplers run as
    ``autograd.Function``s over the float64 kernels."""
    return (hasattr(_C, "_standard_gamma") and concentration.device.type == "cpu"
            and concentration.dtype in (sx.float32, sx.float64))


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
        x = _log_standard_gamma(concentration.reshape(-1)).exp().reshape(tuple(concentration.shape))
        x = _like(x, concentration).clamp(min=sx.finfo(concentration.dtype).tiny)
        ctx.save_for_backward(concentration, x)
        return x

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        """``grad_output * dx/dalpha`` (see :func:`_gamma_sample_grad`)."""
        concentration, x = ctx.saved_tensors
        grad = _C._standard_gamma_grad(_host64(concentration), _host64(x))
        return grad_output * _like(grad, concentration)


def _standard_gamma(concentration):
    """Gamma(concentration, 1) samples of ``concentration``'s shape and dtype, from SneppX's generator.

    Differentiable in ``concentration`` (first order) by implicit reparameterisation, as ``torch._standard_gamma``:
    ``d sample / d alpha = -(dF/dalpha) / (dF/dx)`` at the sample, ``F`` the gamma CDF (accuracy: see
    :func:`_gamma_sample_grad`). Samples are clamped to the dtype's smallest normal number; NaN for NaN or negative
    concentrations, ``inf`` for an infinite one.
    """
    _check_floating(concentration, "_standard_gamma")
    return _C._standard_gamma(concentration) if _native(concentration) else _StandardGamma.apply(concentration)


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
