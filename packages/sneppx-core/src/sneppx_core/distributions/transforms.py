"""Invertible transforms with log-determinant Jacobians, with ``torch.distributions.transforms``' names.

A :class:`Transform` maps values of its ``domain`` constraint to its ``codomain``; ``t(x)`` computes it,
``t.inv(y)`` inverts it, and ``t.log_abs_det_jacobian(x, y)`` gives ``log |dy/dx|`` (summed over nothing: its
shape is ``x``'s less ``domain.event_dim`` rightmost dims). With ``cache_size=1`` a transform remembers its last
``(x, y)`` pair, so ``t.inv(t(x))`` returns ``x`` itself (and ``t(t.inv(y))`` returns ``y``): this is what
lets a tanh-squashed policy score its own ``rsample`` exactly::

    dist = TransformedDistribution(Normal(mu, std), [TanhTransform(cache_size=1)])
    action = dist.rsample()
    logp = dist.log_prob(action)  # uses the cached pre-tanh value, not atanh(action)
"""

from __future__ import annotations

import math
import numbers

import sneppx_core as sx

from . import constraints
from .utils import _sum_rightmost, broadcast_all, lazy_property, tril_matrix_to_vec, vec_to_tril_matrix


class Transform:
    """Base class of invertible transforms ``x -> y`` with computable ``log |dy/dx|``.

    Subclasses implement ``_call`` and/or ``_inverse``; bijective ones (``bijective = True``) also
    :meth:`log_abs_det_jacobian`, and univariate monotone ones :attr:`sign`. ``cache_size`` is 0 (no cache) or
    1 (the latest ``(x, y)`` pair is kept, so inverting the last output returns the last input itself).
    """

    bijective = False
    domain: constraints.Constraint
    codomain: constraints.Constraint

    def __init__(self, cache_size=0):
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._inv = None
        if cache_size == 1:
            self._cached_x_y = None, None
        super().__init__()

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_inv"] = None
        return state

    @property
    def event_dim(self):
        """The number of rightmost dims that make one event (when domain and codomain agree)."""
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self):
        """The inverse transform (``t.inv.inv is t``); it shares this transform's cache."""
        inv = self._inv
        if inv is None:
            inv = _InverseTransform(self)
            self._inv = inv
        return inv

    @property
    def sign(self):
        """+1 or -1: the sign of the Jacobian's determinant of a monotone univariate bijection."""
        raise NotImplementedError

    def with_cache(self, cache_size=1):
        """This transform with ``cache_size`` (itself when it already has it)."""
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return not self.__eq__(other)

    def __call__(self, x):
        """Computes ``y = t(x)`` (from the cache when ``x`` is the last input)."""
        if self._cache_size == 0:
            return self._call(x)
        x_old, y_old = self._cached_x_y
        if x is x_old:
            return y_old
        y = self._call(x)
        self._cached_x_y = x, y
        return y

    def _inv_call(self, y):
        """Computes ``x = t^-1(y)`` (from the cache when ``y`` is the last output)."""
        if self._cache_size == 0:
            return self._inverse(y)
        x_old, y_old = self._cached_x_y
        if y is y_old:
            return x_old
        x = self._inverse(y)
        self._cached_x_y = x, y
        return x

    def _call(self, x):
        raise NotImplementedError

    def _inverse(self, y):
        raise NotImplementedError

    def log_abs_det_jacobian(self, x, y):
        """``log |dy/dx|`` given the input ``x`` and output ``y``."""
        raise NotImplementedError

    def __repr__(self):
        return self.__class__.__name__ + "()"

    def forward_shape(self, shape):
        """The output shape for an input of ``shape`` (the same, by default)."""
        return shape

    def inverse_shape(self, shape):
        """The input shape for an output of ``shape`` (the same, by default)."""
        return shape


class _InverseTransform(Transform):
    """The inverse of a transform; made by ``Transform.inv``, not directly."""

    def __init__(self, transform):
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        """The inverted transform's codomain."""
        return self._inv.codomain

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        """The inverted transform's domain."""
        return self._inv.domain

    @property
    def bijective(self):
        """Whether the inverted transform is bijective."""
        return self._inv.bijective

    @property
    def sign(self):
        """The inverted transform's sign."""
        return self._inv.sign

    @property
    def inv(self):
        """The transform this inverts."""
        return self._inv

    def with_cache(self, cache_size=1):
        """The inverse of the inverted transform with ``cache_size``."""
        return self.inv.with_cache(cache_size).inv

    def __eq__(self, other):
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    def __repr__(self):
        return f"{self.__class__.__name__}({self._inv!r})"

    def __call__(self, x):
        """The inverted transform's inverse at ``x`` (sharing its cache)."""
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x, y):
        """Minus the inverted transform's log-det at ``(y, x)``."""
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape):
        """The inverted transform's inverse shape."""
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape):
        """The inverted transform's forward shape."""
        return self._inv.forward_shape(shape)


def _widen(constraint, event_dim):
    """``constraint`` made ``independent`` up to ``event_dim`` event dims."""
    if event_dim < constraint.event_dim:
        raise ValueError(f"event_dim {event_dim} must be >= the constraint's event_dim {constraint.event_dim}")
    return constraints.independent(constraint, event_dim - constraint.event_dim) \
        if event_dim > constraint.event_dim else constraint


class ComposeTransform(Transform):
    """The transforms ``parts`` applied in order (each part does its own caching)."""

    def __init__(self, parts, cache_size=0):
        parts = list(parts)
        if not all(isinstance(p, Transform) for p in parts):
            raise TypeError("ComposeTransform: every part must be a Transform")
        if cache_size:
            parts = [part.with_cache(cache_size) for part in parts]
        super().__init__(cache_size=cache_size)
        self.parts = parts

    def __eq__(self, other):
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        """The first part's domain, widened to the largest event dim any part needs."""
        if not self.parts:
            return constraints.real
        event_dim = self.parts[-1].codomain.event_dim
        for part in reversed(self.parts):
            event_dim = max(event_dim + part.domain.event_dim - part.codomain.event_dim, part.domain.event_dim)
        return _widen(self.parts[0].domain, event_dim)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        """The last part's codomain, widened to the largest event dim any part needs."""
        if not self.parts:
            return constraints.real
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim = max(event_dim + part.codomain.event_dim - part.domain.event_dim, part.codomain.event_dim)
        return _widen(self.parts[-1].codomain, event_dim)

    @lazy_property
    def bijective(self):
        """Whether every part is bijective."""
        return all(p.bijective for p in self.parts)

    @lazy_property
    def sign(self):
        """The product of the parts' signs."""
        sign = 1
        for p in self.parts:
            sign = sign * p.sign
        return sign

    @property
    def inv(self):
        """The inverses of the parts in reverse order."""
        inv = self._inv
        if inv is None:
            inv = ComposeTransform([p.inv for p in reversed(self.parts)])
            self._inv = inv
            inv._inv = self
        return inv

    def with_cache(self, cache_size=1):
        """This composition with every part given ``cache_size``."""
        if self._cache_size == cache_size:
            return self
        return ComposeTransform(self.parts, cache_size=cache_size)

    def __call__(self, x):
        """The parts applied in order."""
        for part in self.parts:
            x = part(x)
        return x

    def log_abs_det_jacobian(self, x, y):
        """The sum of the parts' log-dets, each summed to the composition's event dim."""
        if not self.parts:
            return sx.zeros_like(x)
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))  # free when the parts cache
        xs.append(y)
        total = 0
        event_dim = self.domain.event_dim
        for part, x_in, y_out in zip(self.parts, xs[:-1], xs[1:]):
            total = total + _sum_rightmost(part.log_abs_det_jacobian(x_in, y_out),
                                           event_dim - part.domain.event_dim)
            event_dim += part.codomain.event_dim - part.domain.event_dim
        return total

    def forward_shape(self, shape):
        """The shape after every part."""
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape):
        """The shape before every part."""
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    def __repr__(self):
        return self.__class__.__name__ + "(\n    " + ",\n    ".join(repr(p) for p in self.parts) + "\n)"


identity_transform = ComposeTransform([])


class IndependentTransform(Transform):
    """``base_transform`` with ``reinterpreted_batch_ndims`` more rightmost dims read as the event: the same
    values, with :meth:`log_abs_det_jacobian` summed over those dims."""

    def __init__(self, base_transform, reinterpreted_batch_ndims, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size=1):
        """A copy with ``cache_size``."""
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims, cache_size=cache_size)

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        """The base domain, independent over the reinterpreted dims."""
        return constraints.independent(self.base_transform.domain, self.reinterpreted_batch_ndims)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        """The base codomain, independent over the reinterpreted dims."""
        return constraints.independent(self.base_transform.codomain, self.reinterpreted_batch_ndims)

    @property
    def bijective(self):
        """Whether the base transform is bijective."""
        return self.base_transform.bijective

    @property
    def sign(self):
        """The base transform's sign."""
        return self.base_transform.sign

    def _call(self, x):
        if x.dim() < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y):
        if y.dim() < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        """The base log-det summed over the reinterpreted dims."""
        return _sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y), self.reinterpreted_batch_ndims)

    def __repr__(self):
        return f"{self.__class__.__name__}({self.base_transform!r}, {self.reinterpreted_batch_ndims})"

    def forward_shape(self, shape):
        """The base transform's forward shape."""
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        """The base transform's inverse shape."""
        return self.base_transform.inverse_shape(shape)


def _reshape_event(shape, old, new):
    """``shape`` with its rightmost ``old`` dims replaced by ``new`` (ValueError when they do not match)."""
    shape = tuple(shape)
    if len(shape) < len(old):
        raise ValueError("Too few dimensions on input")
    cut = len(shape) - len(old)
    if shape[cut:] != old:
        raise ValueError(f"Shape mismatch: expected {shape[cut:]} but got {old}")
    return shape[:cut] + new


class ReshapeTransform(Transform):
    """Reshapes the rightmost ``in_shape`` of a tensor to ``out_shape`` (same number of elements; unit
    Jacobian)."""

    bijective = True

    def __init__(self, in_shape, out_shape, cache_size=0):
        self.in_shape, self.out_shape = tuple(int(s) for s in in_shape), tuple(int(s) for s in out_shape)
        if math.prod(self.in_shape) != math.prod(self.out_shape):
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @constraints.dependent_property
    def domain(self):
        """Reals with ``len(in_shape)`` event dims."""
        return constraints.independent(constraints.real, len(self.in_shape))

    @constraints.dependent_property
    def codomain(self):
        """Reals with ``len(out_shape)`` event dims."""
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size=1):
        """A copy with ``cache_size``."""
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x):
        return x.reshape(tuple(x.shape[: x.dim() - len(self.in_shape)]) + self.out_shape)

    def _inverse(self, y):
        return y.reshape(tuple(y.shape[: y.dim() - len(self.out_shape)]) + self.in_shape)

    def log_abs_det_jacobian(self, x, y):
        """Zeros of the batch shape."""
        return x.new_zeros(tuple(x.shape[: x.dim() - len(self.in_shape)]))

    def forward_shape(self, shape):
        """``shape`` with ``in_shape`` replaced by ``out_shape``."""
        return _reshape_event(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape):
        """``shape`` with ``out_shape`` replaced by ``in_shape``."""
        return _reshape_event(shape, self.out_shape, self.in_shape)


class ExpTransform(Transform):
    """``y = exp(x)``."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def __eq__(self, other):
        return isinstance(other, ExpTransform)

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        """``x``."""
        return x


def _param_shape(value):
    return tuple(getattr(value, "shape", ()))


class PowerTransform(Transform):
    """``y = x ** exponent`` on positive reals."""

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent, cache_size=0):
        super().__init__(cache_size=cache_size)
        (self.exponent,) = broadcast_all(exponent)

    def with_cache(self, cache_size=1):
        """A copy with ``cache_size``."""
        if self._cache_size == cache_size:
            return self
        return PowerTransform(self.exponent, cache_size=cache_size)

    @lazy_property
    def sign(self):
        """The sign of ``exponent`` (a tensor)."""
        return self.exponent.sign()

    def __eq__(self, other):
        return isinstance(other, PowerTransform) and bool(self.exponent.eq(other.exponent).all().item())

    def _call(self, x):
        return x.pow(self.exponent)

    def _inverse(self, y):
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        """``log |exponent * y / x|``."""
        return (self.exponent * y / x).abs().log()

    def forward_shape(self, shape):
        """``shape`` broadcast with the exponent's."""
        return sx.broadcast_shapes(tuple(shape), _param_shape(self.exponent))

    def inverse_shape(self, shape):
        """``shape`` broadcast with the exponent's."""
        return sx.broadcast_shapes(tuple(shape), _param_shape(self.exponent))


def _clipped_sigmoid(x):
    finfo = sx.finfo(x.dtype)
    return sx.clamp(sx.sigmoid(x), min=finfo.tiny, max=1.0 - finfo.eps)


class SigmoidTransform(Transform):
    """``y = 1 / (1 + exp(-x))`` (kept within ``[tiny, 1 - eps]``), ``x = logit(y)``."""

    domain = constraints.real
    codomain = constraints.unit_interval
    bijective = True
    sign = +1

    def __eq__(self, other):
        return isinstance(other, SigmoidTransform)

    def _call(self, x):
        return _clipped_sigmoid(x)

    def _inverse(self, y):
        finfo = sx.finfo(y.dtype)
        y = y.clamp(min=finfo.tiny, max=1.0 - finfo.eps)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        """``-softplus(-x) - softplus(x)``."""
        return -sx.functional.softplus(-x) - sx.functional.softplus(x)


class SoftplusTransform(Transform):
    """``y = log(1 + exp(x))`` (linear above ``x = 20``)."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def __eq__(self, other):
        return isinstance(other, SoftplusTransform)

    def _call(self, x):
        return sx.functional.softplus(x)

    def _inverse(self, y):
        return (-y).expm1().neg().log() + y

    def log_abs_det_jacobian(self, x, y):
        """``-softplus(-x)``."""
        return -sx.functional.softplus(-x)


class TanhTransform(Transform):
    """``y = tanh(x)``, ``x = atanh(y)``; the log-det is the stable ``2 (log 2 - x - softplus(-2x))``.

    The inverse does not clamp at +-1: use ``cache_size=1`` to score a sample this transform made (as in SAC)
    so that its pre-image is reused rather than recomputed.
    """

    domain = constraints.real
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True
    sign = +1

    def __eq__(self, other):
        return isinstance(other, TanhTransform)

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return sx.atanh(y)

    def log_abs_det_jacobian(self, x, y):
        """``2 (log 2 - x - softplus(-2 x))``, i.e. ``log(1 - tanh(x)^2)`` without cancellation."""
        return 2.0 * (math.log(2.0) - x - sx.functional.softplus(-2.0 * x))


class AbsTransform(Transform):
    """``y = |x|`` (not bijective: the inverse is the identity on the non-negative half)."""

    domain = constraints.real
    codomain = constraints.positive

    def __eq__(self, other):
        return isinstance(other, AbsTransform)

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


def _equal_params(a, b):
    if isinstance(a, numbers.Number) and isinstance(b, numbers.Number):
        return a == b
    return bool((a == b).all().item())


class AffineTransform(Transform):
    """``y = loc + scale * x`` elementwise; ``event_dim`` (0, 1, 2, ...) is the number of rightmost dims that
    make one event, over which :meth:`log_abs_det_jacobian` sums."""

    bijective = True

    def __init__(self, loc, scale, event_dim=0, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.loc, self.scale = loc, scale
        self._event_dim = event_dim

    @property
    def event_dim(self):
        """The ``event_dim`` given."""
        return self._event_dim

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        """Reals with ``event_dim`` event dims."""
        return constraints.independent(constraints.real, self.event_dim) if self.event_dim else constraints.real

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        """Reals with ``event_dim`` event dims."""
        return constraints.independent(constraints.real, self.event_dim) if self.event_dim else constraints.real

    def with_cache(self, cache_size=1):
        """A copy with ``cache_size``."""
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self.event_dim, cache_size=cache_size)

    def __eq__(self, other):
        return isinstance(other, AffineTransform) and _equal_params(self.loc, other.loc) \
            and _equal_params(self.scale, other.scale)

    @property
    def sign(self):
        """The sign of ``scale`` (an int for a number, a tensor otherwise)."""
        if isinstance(self.scale, numbers.Number):
            return 1 if float(self.scale) > 0 else -1 if float(self.scale) < 0 else 0
        return self.scale.sign()

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        """``log |scale|``, summed over the event dims and expanded to the batch shape of ``x``."""
        shape = tuple(x.shape)
        if isinstance(self.scale, numbers.Number):
            result = sx.full_like(x, math.log(abs(self.scale)))
        else:
            result = self.scale.abs().log()
        if self.event_dim:
            result = result.reshape(tuple(result.shape)[: -self.event_dim] + (-1,)).sum(-1)
            shape = shape[: -self.event_dim]
        return result.expand(shape)

    def forward_shape(self, shape):
        """``shape`` broadcast with those of ``loc`` and ``scale``."""
        return sx.broadcast_shapes(tuple(shape), _param_shape(self.loc), _param_shape(self.scale))

    def inverse_shape(self, shape):
        """``shape`` broadcast with those of ``loc`` and ``scale``."""
        return sx.broadcast_shapes(tuple(shape), _param_shape(self.loc), _param_shape(self.scale))


class CorrCholeskyTransform(Transform):
    """An unconstrained vector of length ``D (D - 1) / 2`` to the lower Cholesky factor of a ``D x D``
    correlation matrix (rows of unit norm, positive diagonal): ``tanh`` into (-1, 1), then a signed
    stick-breaking of each row of the triangle."""

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def _call(self, x):
        eps = sx.finfo(x.dtype).eps
        r = vec_to_tril_matrix(sx.tanh(x).clamp(min=-1 + eps, max=1 - eps), diag=-1)
        # y_ij = r_ij * sqrt(prod_{k<j} (1 - r_ik^2)), with ones on the diagonal
        z1m_cumprod_sqrt = (1 - r**2).sqrt().cumprod(-1)
        r = r + sx.eye(r.shape[-1], dtype=r.dtype, device=r.device)
        return r * sx.functional.pad(z1m_cumprod_sqrt[..., :-1], [1, 0], value=1)

    def _inverse(self, y):
        y_cumsum = 1 - sx.cumsum(y * y, dim=-1)
        y_cumsum_shifted = sx.functional.pad(y_cumsum[..., :-1], [1, 0], value=1)
        t = tril_matrix_to_vec(y, diag=-1) / tril_matrix_to_vec(y_cumsum_shifted, diag=-1).sqrt()
        return (t.log1p() - t.neg().log1p()) / 2

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        """The log-det of ``x`` against the flattened strict lower triangle of ``y``."""
        y1m_cumsum = 1 - (y * y).cumsum(dim=-1)
        stick_breaking_logdet = 0.5 * tril_matrix_to_vec(y1m_cumsum, diag=-2).log().sum(-1)
        tanh_logdet = -2 * (x + sx.functional.softplus(-2 * x) - math.log(2.0)).sum(dim=-1)
        return stick_breaking_logdet + tanh_logdet

    def forward_shape(self, shape):
        """``(..., N)`` to ``(..., D, D)`` with ``N = D (D - 1) / 2``."""
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return tuple(shape[:-1]) + (d, d)

    def inverse_shape(self, shape):
        """``(..., D, D)`` to ``(..., D (D - 1) / 2)``."""
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return tuple(shape[:-2]) + (d * (d - 1) // 2,)


def _check_vector_shape(shape):
    if len(shape) < 1:
        raise ValueError("Too few dimensions on input")


class SoftmaxTransform(Transform):
    """Reals to the simplex by ``exp`` then normalising over the last dim (not bijective; the inverse is
    ``log``)."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def __eq__(self, other):
        return isinstance(other, SoftmaxTransform)

    def _call(self, x):
        probs = (x - x.max(-1, True)[0]).exp()
        return probs / probs.sum(-1, True)

    def _inverse(self, y):
        return y.log()

    def forward_shape(self, shape):
        """The same shape (at least one dim)."""
        _check_vector_shape(shape)
        return shape

    def inverse_shape(self, shape):
        """The same shape (at least one dim)."""
        _check_vector_shape(shape)
        return shape


def _stick_offset_log(x):
    """``log(K + 1 - k)`` for ``k = 1..K`` along the last dim of ``x`` (``K = x.shape[-1]``)."""
    return (x.shape[-1] + 1 - x.new_ones(x.shape[-1]).cumsum(-1)).log()


class StickBreakingTransform(Transform):
    """Reals of length K to the simplex of length K + 1 by stick-breaking (iterated sigmoids); bijective."""

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def __eq__(self, other):
        return isinstance(other, StickBreakingTransform)

    def _call(self, x):
        z = _clipped_sigmoid(x - _stick_offset_log(x))
        z_cumprod = (1 - z).cumprod(-1)
        return sx.functional.pad(z, [0, 1], value=1) * sx.functional.pad(z_cumprod, [1, 0], value=1)

    def _inverse(self, y):
        y_crop = y[..., :-1]
        sf = (1 - y_crop.cumsum(-1)).clamp(min=sx.finfo(y.dtype).tiny)  # kept positive when y[-1] ~ 0
        return y_crop.log() - sf.log() + _stick_offset_log(y_crop)

    def log_abs_det_jacobian(self, x, y):
        """``sum(-x' + logsigmoid(x') + log y[:-1])`` with ``x'`` the offset input."""
        x = x - _stick_offset_log(x)
        return (-x + sx.functional.logsigmoid(x) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape):
        """One more element in the last dim."""
        _check_vector_shape(shape)
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape):
        """One fewer element in the last dim."""
        _check_vector_shape(shape)
        return tuple(shape[:-1]) + (shape[-1] - 1,)


def _lower_cholesky_map(x, fn):
    return x.tril(-1) + fn(x.diagonal(dim1=-2, dim2=-1)).diag_embed()


class LowerCholeskyTransform(Transform):
    """Unconstrained matrices to lower-triangular ones with a positive diagonal (the strict lower triangle
    kept, the diagonal exponentiated)."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def __eq__(self, other):
        return isinstance(other, LowerCholeskyTransform)

    def _call(self, x):
        return _lower_cholesky_map(x, sx.exp)

    def _inverse(self, y):
        return _lower_cholesky_map(y, sx.log)


class PositiveDefiniteTransform(Transform):
    """Unconstrained matrices to positive-definite ones: ``L L^T`` with ``L`` from
    :class:`LowerCholeskyTransform`."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def __eq__(self, other):
        return isinstance(other, PositiveDefiniteTransform)

    def _call(self, x):
        x = LowerCholeskyTransform()(x)
        return x @ x.mT

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(sx.linalg.cholesky(y))


def _check_transforms(name, tseq):
    tseq = list(tseq)
    if not all(isinstance(t, Transform) for t in tseq):
        raise TypeError(f"{name}: every element of tseq must be a Transform")
    return tseq


def _check_dim(name, value, dim, size, what):
    """ValueError unless ``dim`` indexes ``value`` and ``value.size(dim) == size``."""
    if not -value.dim() <= dim < value.dim():
        raise ValueError(f"{name}: dim {dim} out of range for {what} with {value.dim()} dimensions")
    if value.size(dim) != size:
        raise ValueError(f"{name}: {what}.size({dim}) = {value.size(dim)} must equal {size}")


class CatTransform(Transform):
    """Applies ``tseq[i]`` to the ``lengths[i]``-long piece ``i`` of dim ``dim``, as ``cat`` joins them."""

    def __init__(self, tseq, dim=0, lengths=None, cache_size=0):
        tseq = _check_transforms("CatTransform", tseq)
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = tseq
        self.lengths = list(lengths) if lengths is not None else [1] * len(self.transforms)
        if len(self.lengths) != len(self.transforms):
            raise ValueError(f"CatTransform: lengths ({len(self.lengths)}) must match transforms "
                             f"({len(self.transforms)})")
        self.dim = dim

    @lazy_property
    def event_dim(self):
        """The largest event dim of the parts."""
        return max(t.event_dim for t in self.transforms)

    @lazy_property
    def length(self):
        """The total length along ``dim``."""
        return sum(self.lengths)

    def with_cache(self, cache_size=1):
        """A copy with ``cache_size``."""
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _pieces(self, value, what):
        _check_dim("CatTransform", value, self.dim, self.length, what)
        start = 0
        for length in self.lengths:
            yield value.narrow(self.dim, start, length)
            start += length

    def _call(self, x):
        return sx.cat([t(xs) for t, xs in zip(self.transforms, self._pieces(x, "x"))], dim=self.dim)

    def _inverse(self, y):
        return sx.cat([t.inv(ys) for t, ys in zip(self.transforms, self._pieces(y, "y"))], dim=self.dim)

    def log_abs_det_jacobian(self, x, y):
        """The parts' log-dets, joined along ``dim`` (or summed when ``dim`` is inside the event)."""
        logdetjacs = []
        for t, xs, ys in zip(self.transforms, self._pieces(x, "x"), self._pieces(y, "y")):
            logdetjacs.append(_sum_rightmost(t.log_abs_det_jacobian(xs, ys), self.event_dim - t.event_dim))
        dim = (self.dim - x.dim() if self.dim >= 0 else self.dim) + self.event_dim
        return sx.cat(logdetjacs, dim=dim) if dim < 0 else sum(logdetjacs)

    @property
    def bijective(self):
        """Whether every part is bijective."""
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        """The parts' domains joined by ``constraints.cat``."""
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @constraints.dependent_property
    def codomain(self):
        """The parts' codomains joined by ``constraints.cat``."""
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(Transform):
    """Applies ``tseq[i]`` to slice ``i`` of dim ``dim``, as ``stack`` joins them."""

    def __init__(self, tseq, dim=0, cache_size=0):
        tseq = _check_transforms("StackTransform", tseq)
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = tseq
        self.dim = dim

    def with_cache(self, cache_size=1):
        """A copy with ``cache_size``."""
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _slice(self, z, what="z"):
        _check_dim("StackTransform", z, self.dim, len(self.transforms), what)
        return [z.select(self.dim, i) for i in range(z.size(self.dim))]

    def _call(self, x):
        return sx.stack([t(xs) for t, xs in zip(self.transforms, self._slice(x, "x"))], dim=self.dim)

    def _inverse(self, y):
        return sx.stack([t.inv(ys) for t, ys in zip(self.transforms, self._slice(y, "y"))], dim=self.dim)

    def log_abs_det_jacobian(self, x, y):
        """The parts' log-dets stacked along ``dim``."""
        return sx.stack([t.log_abs_det_jacobian(xs, ys) for t, xs, ys
                         in zip(self.transforms, self._slice(x, "x"), self._slice(y, "y"))], dim=self.dim)

    @property
    def bijective(self):
        """Whether every part is bijective."""
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        """The parts' domains joined by ``constraints.stack``."""
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @constraints.dependent_property
    def codomain(self):
        """The parts' codomains joined by ``constraints.stack``."""
        return constraints.stack([t.codomain for t in self.transforms], self.dim)


class CumulativeDistributionTransform(Transform):
    """``y = distribution.cdf(x)`` onto the unit interval (inverse ``icdf``; log-det ``log_prob``), e.g. for a
    Gaussian copula."""

    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        """The distribution's support."""
        return self.distribution.support

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        """The distribution's ``log_prob(x)``."""
        return self.distribution.log_prob(x)

    def with_cache(self, cache_size=1):
        """A copy with ``cache_size``."""
        if self._cache_size == cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)


__all__ = [
    "AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform", "CorrCholeskyTransform",
    "CumulativeDistributionTransform", "ExpTransform", "IndependentTransform", "LowerCholeskyTransform",
    "PositiveDefiniteTransform", "PowerTransform", "ReshapeTransform", "SigmoidTransform", "SoftplusTransform",
    "TanhTransform", "SoftmaxTransform", "StackTransform", "StickBreakingTransform", "Transform",
    "identity_transform",
]
