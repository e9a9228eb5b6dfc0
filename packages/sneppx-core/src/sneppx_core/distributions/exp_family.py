"""``ExponentialFamily``: distributions with density ``exp(<t(x), theta> - F(theta) + k(x))``."""

from __future__ import annotations

import sneppx_core as sx

from .distribution import Distribution


class ExponentialFamily(Distribution):
    """Base class of exponential-family distributions: subclasses give ``_natural_params`` (the thetas),
    ``_log_normalizer(*thetas)`` (F) and ``_mean_carrier_measure`` (E[k(x)]); :meth:`entropy` then follows
    from the Bregman divergence of F, by autograd."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        """``F(theta) - <theta, grad F(theta)> - E[k(x)]``, the gradient by autograd."""
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        with sx.enable_grad():
            lg_normal = self._log_normalizer(*nparams)
            gradients = sx.autograd.grad(lg_normal.sum(), nparams, create_graph=True)
        result = result + lg_normal
        for p, g in zip(nparams, gradients):
            result = result - (p * g).reshape(self._batch_shape + (-1,)).sum(-1)
        return result


__all__ = ["ExponentialFamily"]
