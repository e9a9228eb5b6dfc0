"""The Dirichlet distribution, sampled as normalised gammas with PyTorch's implicit reparameterised gradient."""

from __future__ import annotations

import sneppx_core as sx
from sneppx_core._backend import _C
from sneppx_core.autograd.function import once_differentiable

from . import constraints
from .exp_family import ExponentialFamily
from .gamma import _check_floating, _host64, _like, _log_standard_gamma, _native, _on_host


def _sample_dirichlet(concentration):
    """Dirichlet draws (over the last dim of ``concentration``) from SneppX's generator, without gradient:
    normalised Gamma(concentration_i, 1) draws, computed in float64 from the gammas' logs (so tiny concentrations
    do not underflow to 0/0), returned in the concentration's dtype and clamped to at least its ``tiny``."""
    _check_floating(concentration, "_sample_dirichlet")
    if _native(concentration):
        return _C._sample_dirichlet(concentration.detach())
    log_gammas = _log_standard_gamma(concentration.detach().reshape(-1)).reshape(tuple(concentration.shape))
    x = sx.functional.softmax(log_gammas, dim=-1).to(concentration.dtype)
    return x.clamp(min=sx.finfo(concentration.dtype).tiny)


def _beta_sample_grad(x, alpha, total):
    """``-(dI_x(alpha, beta)/dalpha) / pdf(x) / (1 - x)`` with ``beta = total - alpha`` held fixed (float64 arrays,
    broadcast): the scaled implicit gradient of a Beta(alpha, beta) sample, ``I`` the regularised incomplete beta
    function.

    The compiled kernel (``csrc/ops/sample_grad.cpp``) differentiates ``dI/dalpha`` exactly, in forward mode,
    through the continued fraction of ``I_x(alpha, beta)`` (or of ``I_{1-x}(beta, alpha)`` past the mean), so the
    result is good to about 1e-13 relative (checked against mpmath), where PyTorch's ``_dirichlet_grad`` uses
    approximations good to about 1e-3 to 1e-6. 0 where ``x == 0`` or ``beta == 0`` (a one-component Dirichlet,
    whose sample is always 1).
    """
    return _on_host(_C._beta_sample_grad, x, alpha, total)


def _dirichlet_grad(x, concentration, total):
    """``torch._dirichlet_grad``'s quantity: :func:`_beta_sample_grad` of each component ``x_i`` of a Dirichlet
    sample, as a Beta(concentration_i, total_i - concentration_i) sample (tensors of one shape)."""
    return _like(_C._beta_sample_grad(_host64(x), _host64(concentration), _host64(total)), concentration)


def _Dirichlet_backward(x, concentration, grad_output):
    """The concentration's gradient for a Dirichlet sample ``x`` (PyTorch's formula, exposed for testing):
    ``g_i * (grad_output_i - sum_j x_j grad_output_j)``, ``g_i`` the Beta-marginal gradient of
    :func:`_dirichlet_grad`."""
    total = concentration.sum(-1, True).expand_as(concentration)
    grad = _dirichlet_grad(x, concentration, total)
    return grad * (grad_output - (x * grad_output).sum(-1, True))


class _Dirichlet(sx.autograd.Function):
    """Dirichlet draws, differentiable (first order: the backward is once-differentiable) in the concentration."""

    @staticmethod
    def forward(ctx, concentration):
        """A draw from :func:`_sample_dirichlet`."""
        x = _sample_dirichlet(concentration)
        ctx.save_for_backward(x, concentration)
        return x

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        """:func:`_Dirichlet_backward` at the saved sample."""
        x, concentration = ctx.saved_tensors
        return _Dirichlet_backward(x, concentration, grad_output)


class Dirichlet(ExponentialFamily):
    """The Dirichlet distribution over the simplex, with ``concentration`` (alpha) along the last dim."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if not isinstance(concentration, sx.Tensor):
            raise TypeError(f"Dirichlet: concentration must be a Tensor, got {type(concentration).__name__}")
        if concentration.ndim < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        shape = tuple(concentration.shape)
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """A new Dirichlet with the concentration expanded to ``batch_shape + event_shape``."""
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = tuple(batch_shape)
        new.concentration = self.concentration.expand(batch_shape + self.event_shape)
        super(Dirichlet, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        """Normalised gammas, differentiable in the concentration (PyTorch's implicit gradient)."""
        shape = self._extended_shape(sample_shape)
        concentration = self.concentration.expand(shape)
        return _C._sample_dirichlet(concentration) if _native(concentration) else _Dirichlet.apply(concentration)

    def log_prob(self, value):
        """``sum (alpha_i - 1) log x_i + lgamma(sum alpha_i) - sum lgamma(alpha_i)``."""
        if self._validate_args:
            self._validate_sample(value)
        return (sx.xlogy(self.concentration - 1.0, value).sum(-1) + sx.lgamma(self.concentration.sum(-1))
                - sx.lgamma(self.concentration).sum(-1))

    @property
    def mean(self):
        """``alpha / sum(alpha)``."""
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        """``(alpha - 1)+ / sum (alpha - 1)+``; where every ``alpha < 1``, a vertex (the first, as PyTorch)."""
        concentrationm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concentrationm1 / concentrationm1.sum(-1, True)
        all_below_one = (self.concentration < 1).all(dim=-1, keepdim=True)
        vertex = sx.functional.one_hot(mode.argmax(dim=-1), concentrationm1.shape[-1]).to(mode.dtype)
        return sx.where(all_below_one, vertex, mode)

    @property
    def variance(self):
        """``alpha_i (a0 - alpha_i) / (a0^2 (a0 + 1))``, ``a0 = sum(alpha)``."""
        con0 = self.concentration.sum(-1, True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self):
        """``log B(alpha) + (a0 - K) digamma(a0) - sum (alpha_i - 1) digamma(alpha_i)``."""
        k = self.concentration.shape[-1]
        a0 = self.concentration.sum(-1)
        return (sx.lgamma(self.concentration).sum(-1) - sx.lgamma(a0) - (k - a0) * sx.digamma(a0)
                - ((self.concentration - 1.0) * sx.digamma(self.concentration)).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - sx.lgamma(x.sum(-1))


__all__ = ["Dirichlet"]
