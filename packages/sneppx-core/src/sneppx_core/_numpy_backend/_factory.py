"""Factories, dtype/device conversion and random numbers of the NumPy backend.

Random numbers come from NumPy's PCG64 generator seeded with the same seeds (``manual_seed``,
``Generator(seed)``): a seed fixes every stream, but the streams differ from the C backend's
counter-based ones.
"""

from __future__ import annotations

import builtins

import numpy as np

from ._core import BOOL, FLOAT32, INT64, STORAGE, as_dtype, check_device, store
from ._tensor import Tensor, need_tensor, view, wrap

_DEFAULT_SEED = 67280421310721


def _to_dtype(t, dtype):
    """``t`` converted to ``dtype`` (``t`` itself when it already has it)."""
    need_tensor(t, "to")
    dt = as_dtype(dtype)
    if dt is t._dt:
        return t
    a = t._a
    if dt is BOOL:
        return wrap(a != 0, BOOL)
    return wrap(store(a, dt), dt)


def _to_device(t, device, non_blocking=False):
    """``t`` on ``device``: the CPU only in the NumPy backend."""
    check_device(device, "to")
    return t


def _value_dtype(v):
    if isinstance(v, (builtins.bool, np.bool_)):
        return BOOL
    if isinstance(v, (builtins.int, np.integer)):
        return INT64
    return FLOAT32


def _check_shape(shape, op):
    if builtins.any(s < 0 for s in shape):
        raise ValueError(f"[{op}] negative dimension in shape {tuple(shape)}")
    n = 1
    for s in shape:
        n *= s
    if n > 2**62:
        raise MemoryError(f"[{op}] shape {tuple(shape)} has too many elements")


def _zeros(shape, dtype=None, device=None):
    check_device(device, "zeros")
    _check_shape(shape, "zeros")
    dt = as_dtype(dtype) if dtype is not None else FLOAT32
    return view(np.zeros(tuple(shape), STORAGE[dt]), dt)


_empty = _zeros


def _full(shape, value, dtype=None, device=None):
    check_device(device, "full")
    _check_shape(shape, "full")
    if isinstance(value, Tensor):
        value = value.item()
    dt = as_dtype(dtype) if dtype is not None else _value_dtype(value)
    return wrap(np.full(tuple(shape), value, dtype=STORAGE[dt] if dt is not BOOL else np.bool_), dt)


def _arange(start, end, step, dtype):
    if step == 0 or not np.isfinite([start, end, step]).all():
        raise ValueError(f"[arange] expected finite start, end and a non-zero step, got {start}, {end}, {step}")
    n = builtins.max(0, int(np.ceil((end - start) / step)))
    dt = as_dtype(dtype)
    return wrap(start + np.arange(n, dtype=np.float64) * step, dt)


def _linspace(start, end, steps, dtype):
    if steps < 0:
        raise ValueError(f"[linspace] steps must be non-negative, got {steps}")
    return wrap(np.linspace(start, end, steps), as_dtype(dtype))


def _eye(n, m, dtype):
    if n < 0 or m < 0:
        raise ValueError(f"[eye] sizes must be non-negative, got {n} and {m}")
    return wrap(np.eye(n, m), as_dtype(dtype))


# ---------------------------------------------------------------- random numbers
class Generator:
    """A seeded random-number generator (NumPy's PCG64 under the same seeding API)."""

    def __init__(self, seed=None):
        self.manual_seed(_DEFAULT_SEED if seed is None else seed)

    def manual_seed(self, seed):
        """Restarts the stream from ``seed``; returns self."""
        seed = builtins.int(seed)
        if not -(1 << 63) <= seed < (1 << 64):
            raise ValueError(f"[Generator] seed {seed} is out of range [-2**63, 2**64)")
        self._seed = seed & ((1 << 64) - 1)
        self._rng = np.random.Generator(np.random.PCG64(self._seed))
        return self

    def initial_seed(self):
        """The seed the stream started from."""
        return self._seed

    def get_state(self):
        """The generator's state (pass it to ``set_state``)."""
        return (self._seed, self._rng.bit_generator.state)

    def set_state(self, state):
        """Restores a state from ``get_state``."""
        seed, bits = state
        if not isinstance(bits, dict):
            raise TypeError("[set_state] expected a state from the numpy backend's get_state()")
        self._seed = seed
        self._rng.bit_generator.state = bits


_DEFAULT = Generator()


def default_generator():
    """The generator that random functions use when none is passed."""
    return _DEFAULT


def _rng(generator):
    if generator is not None and not isinstance(generator, Generator):
        raise TypeError(f"expected a sneppx Generator, got {type(generator).__name__}")
    return (generator if generator is not None else _DEFAULT)._rng


def _float_dtype(dtype, op):
    dt = as_dtype(dtype)
    if not dt.is_floating_point:
        raise TypeError(f"[{op}] expected a floating dtype, got {dt.name}")
    return dt


def _rand(shape, dtype, generator=None):
    dt = _float_dtype(dtype, "rand")
    _check_shape(shape, "rand")
    return wrap(_rng(generator).random(tuple(shape)), dt)


def _randn(shape, dtype, generator=None):
    dt = _float_dtype(dtype, "randn")
    _check_shape(shape, "randn")
    return wrap(_rng(generator).standard_normal(tuple(shape)), dt)


def _randint(low, high, shape, dtype, generator=None):
    if high <= low:
        raise ValueError(f"[randint] expected low < high, got low={low} high={high}")
    _check_shape(shape, "randint")
    return wrap(_rng(generator).integers(low, high, tuple(shape)), as_dtype(dtype))


def _randperm(n, dtype, generator=None):
    if n < 0:
        raise ValueError(f"[randperm] n must be non-negative, got {n}")
    return wrap(_rng(generator).permutation(n), as_dtype(dtype))


def bernoulli(input, *, generator=None):
    """0/1 samples with the probabilities in ``input``."""
    need_tensor(input, "bernoulli")
    return wrap(_rng(generator).random(input._a.shape) < input._a, input._dt)


def _log_standard_gamma(alpha, generator=None):
    """Logs of Gamma(alpha, 1) draws (float64) for a float64 tensor ``alpha``: NumPy's gamma sampler, boosted below
    ``alpha = 1`` by ``u^(1/alpha)`` in log space (tiny concentrations do not underflow); NaN for NaN or negative
    ``alpha``."""
    need_tensor(alpha, "_log_standard_gamma")
    a = np.asarray(alpha._a, np.float64)
    rng = _rng(generator)
    with np.errstate(divide="ignore", invalid="ignore"):
        ok = a >= 0  # False for NaN
        boost = ok & (a < 1)
        out = np.full(a.shape, np.nan)
        out[ok] = np.log(rng.standard_gamma(np.where(boost, a + 1, a)[ok]))
        out[boost] += np.log1p(-rng.random(np.count_nonzero(boost))) / a[boost]
    return wrap(out, as_dtype("float64"))


def multinomial(input, num_samples, replacement=False, *, generator=None):
    """int64 indices drawn from the rows of ``input`` (non-negative weights)."""
    need_tensor(input, "multinomial")
    p = np.atleast_2d(input._a.astype(np.float64))
    if np.any(p < 0) or not np.all(np.isfinite(p)):
        bad = p[(p < 0) | ~np.isfinite(p)].flat[0]
        raise ValueError(f"[multinomial] weights must be finite and non-negative, got {bad}")
    if np.any(p.sum(-1) <= 0):
        raise ValueError("[multinomial] each row needs a positive total weight")
    if not replacement and num_samples > p.shape[-1]:
        raise ValueError(f"[multinomial] cannot draw {num_samples} samples without replacement from "
                         f"{p.shape[-1]} categories")
    rng = _rng(generator)
    rows = [rng.choice(p.shape[-1], size=num_samples, replace=replacement, p=r / r.sum()) for r in p]
    out = np.stack(rows).astype(np.int64)
    return wrap(out if input._a.ndim == 2 else out[0], INT64)


def _numbers(op, *values):
    try:
        out = [builtins.float(v) for v in values]
    except (TypeError, ValueError):
        raise TypeError(f"[{op}] expected numbers, got {values!r}") from None
    if not np.isfinite(out).all():
        raise ValueError(f"[{op}] expected finite numbers, got {values!r}")
    return out


def normal_(self, mean=0.0, std=1.0, generator=None):
    """Fills with normal samples (in place)."""
    need_tensor(self, "normal_")
    mean, std = _numbers("normal_", mean, std)
    self[...] = _rng(generator).normal(mean, std, self._a.shape)
    return self


def uniform_(self, a=0.0, b=1.0, generator=None):
    """Fills with uniform samples in [a, b) (in place)."""
    need_tensor(self, "uniform_")
    a, b = _numbers("uniform_", a, b)
    if not np.isfinite(b - a):
        raise ValueError(f"[uniform_] the range [{a}, {b}) is too wide")
    self[...] = _rng(generator).uniform(a, b, self._a.shape)
    return self
