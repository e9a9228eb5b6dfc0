"""Probability distributions with ``torch.distributions``' names: Categorical, Bernoulli and Normal.

Each has ``sample(sample_shape=())`` (no gradient), ``log_prob(value)`` and ``entropy()``, which are
differentiable in the parameters, and ``batch_shape``; Normal also has ``rsample`` (the
reparameterised sample ``loc + scale * eps``, differentiable). A policy-gradient step reads as in
PyTorch::

    dist = Categorical(logits=policy(state))
    action = dist.sample()
    loss = -dist.log_prob(action) * reward

Samples come from SneppX's generator (``sneppx_core.manual_seed``), so they differ from PyTorch's for
the same seed. Parameters are not validated beyond their shapes (PyTorch's ``validate_args``).
"""

from __future__ import annotations

import math

import numpy as np

from . import _ops
from . import functional as _F
from ._backend import _C
from ._C_face import Tensor
from ._dtype_info import finfo
from ._factories import randn
from ._factories import tensor as _tensor
from ._grad_mode import no_grad


def _as_tensor(value, like=None):
    if isinstance(value, Tensor):
        return value
    dtype = like.dtype if like is not None and like.dtype.is_floating_point else None
    return _tensor(value, dtype=dtype) if dtype is not None else _tensor(float(value))


def _eps(t) -> float:
    # The machine epsilon of t's dtype: how far probabilities are kept from 0 and 1.
    return finfo(t.dtype).eps


def _shape(sample_shape) -> tuple:
    return (int(sample_shape),) if isinstance(sample_shape, int) else tuple(int(s) for s in sample_shape)


class Distribution:
    """Base class: ``batch_shape`` and ``event_shape``; subclasses define the rest."""

    def __init__(self, batch_shape=(), event_shape=()):
        self.batch_shape, self.event_shape = tuple(batch_shape), tuple(event_shape)

    def sample(self, sample_shape=()):
        """A sample of shape ``sample_shape + batch_shape + event_shape``, without gradient."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        """A reparameterised (differentiable) sample, where the distribution has one."""
        raise NotImplementedError(f"{type(self).__name__} has no reparameterised sample (rsample)")

    def log_prob(self, value):
        """The log of the probability (density) of ``value``."""
        raise NotImplementedError

    def entropy(self):
        """The entropy, one value per batch element."""
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}: {tuple(v.shape)}' for k, v in self._params().items())})"


def _one_of(name, probs, logits):
    if (probs is None) == (logits is None):
        raise ValueError(f"[{name}] pass exactly one of probs and logits")


class Categorical(Distribution):
    """Categories 0 .. K-1 along the last dim of ``probs`` (normalised to sum to 1) or ``logits``
    (normalised to log-probabilities); ``batch_shape`` is the rest of the shape."""

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of("Categorical", probs, logits)
        p = _as_tensor(probs if probs is not None else logits)
        if p.ndim < 1:
            raise ValueError(f"[Categorical] {'probs' if probs is not None else 'logits'} must have at least one dim")
        if probs is not None:
            self.probs = p / p.sum(-1, keepdim=True)
            self.logits = _C.log(_C.clamp(self.probs, _eps(p), 1 - _eps(p)))
        else:
            self.logits = p - _ops.logsumexp(p, -1, keepdim=True)
            self.probs = _C.exp(self.logits)
        self._num_events = p.shape[-1]
        super().__init__(tuple(p.shape[:-1]))

    def _params(self):
        return {"probs": self.probs}

    @property
    def mode(self):
        """The most likely category."""
        return self.probs.argmax(-1)

    def sample(self, sample_shape=()):
        """Category indices (int64) of shape ``sample_shape + batch_shape``."""
        shape = _shape(sample_shape)
        n = math.prod(shape)
        with no_grad():
            flat = self.probs.reshape((-1, self._num_events))
            draws = _ops.multinomial(flat, max(n, 1), replacement=True)[:, :n]  # (batch, n)
            return draws.transpose(0, 1).reshape(shape + self.batch_shape)

    def log_prob(self, value):
        """``log p(value)`` for category indices ``value`` (broadcast against ``batch_shape``)."""
        value = _as_tensor(value).long()
        shape = np.broadcast_shapes(tuple(value.shape), self.batch_shape)
        logits = self.logits.expand(shape + (self._num_events,))
        return logits.gather(-1, value.expand(shape).unsqueeze(-1)).squeeze(-1)

    def entropy(self):
        """``-sum p log p`` over the categories (0 log 0 = 0)."""
        return -(self.probs * _C.where(self.probs == 0, 0.0, self.logits)).sum(-1)


class Bernoulli(Distribution):
    """0 or 1 with probability ``probs`` of 1 (or ``sigmoid(logits)``); ``batch_shape`` is their shape."""

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of("Bernoulli", probs, logits)
        if probs is not None:
            self.probs = _as_tensor(probs)
            p = _C.clamp(self.probs, _eps(self.probs), 1 - _eps(self.probs))
            self.logits = _C.log(p) - _C.log1p(-p)
        else:
            self.logits = _as_tensor(logits)
            self.probs = _C.sigmoid(self.logits)
        super().__init__(tuple(self.probs.shape))

    def _params(self):
        return {"probs": self.probs}

    @property
    def mean(self):
        """The probability of 1."""
        return self.probs

    def sample(self, sample_shape=()):
        """Zeros and ones (the parameters' dtype) of shape ``sample_shape + batch_shape``."""
        with no_grad():
            return _ops.bernoulli(self.probs.expand(_shape(sample_shape) + self.batch_shape))

    def log_prob(self, value):
        """``value log p + (1 - value) log(1 - p)``, from the logits (stable)."""
        value = _as_tensor(value, self.logits)
        return -_F.binary_cross_entropy_with_logits(*_broadcast(self.logits, value), reduction="none")

    def entropy(self):
        """``-(p log p + (1 - p) log(1 - p))``."""
        return _F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")


class Normal(Distribution):
    """The normal distribution with mean ``loc`` and standard deviation ``scale`` (broadcast together)."""

    def __init__(self, loc, scale, validate_args=None):
        loc = _as_tensor(loc, scale if isinstance(scale, Tensor) else None)
        scale = _as_tensor(scale, loc)
        self.loc, self.scale = _broadcast(loc, scale)
        super().__init__(tuple(self.loc.shape))

    def _params(self):
        return {"loc": self.loc, "scale": self.scale}

    @property
    def mean(self):
        """``loc``."""
        return self.loc

    @property
    def stddev(self):
        """``scale``."""
        return self.scale

    @property
    def variance(self):
        """``scale ** 2``."""
        return self.scale * self.scale

    def rsample(self, sample_shape=()):
        """``loc + scale * eps`` with standard normal ``eps`` of shape ``sample_shape + batch_shape``:
        differentiable in ``loc`` and ``scale``."""
        eps = randn(*(_shape(sample_shape) + self.batch_shape), dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + self.scale * eps

    def log_prob(self, value):
        """``-(value - loc)^2 / (2 scale^2) - log(scale) - log(2 pi) / 2``."""
        value = _as_tensor(value, self.loc)
        return -((value - self.loc) ** 2) / (2 * self.variance) - _C.log(self.scale) - 0.5 * math.log(2 * math.pi)

    def entropy(self):
        """``1/2 + log(2 pi) / 2 + log(scale)``."""
        return 0.5 + 0.5 * math.log(2 * math.pi) + _C.log(self.scale)


def _broadcast(a, b):
    shape = np.broadcast_shapes(tuple(a.shape), tuple(b.shape))
    return a.expand(shape), b.expand(shape)


__all__ = ["Distribution", "Categorical", "Bernoulli", "Normal"]
