"""Random in-place fills (``bernoulli_``, ``exponential_``, ``random_``, ...) and further small
PyTorch functions (``fmax``, ``copysign``, ``hsplit``, ``diag_embed``, ...), composed from core ops.
The random fills transform draws of the default generator (``manual_seed`` fixes them); their
streams differ from PyTorch's."""

from __future__ import annotations

import builtins
import math

import numpy as np

from . import _backend
from ._backend import _C
from ._C_face import Dtype, Tensor


def _uniform(self, generator=None):
    from ._factories import rand

    dtype = self.dtype if self.is_floating_point() else Dtype.FLOAT64
    return rand(*self.shape, dtype=dtype, generator=generator)


def bernoulli_(self, p=0.5, *, generator=None):
    """Fills with 1 with probability ``p`` (a number or a tensor), else 0."""
    return self.copy_(_uniform(self, generator) < p)


def exponential_(self, lambd=1.0, *, generator=None):
    """Fills with draws from the exponential distribution of rate ``lambd``."""
    return self.copy_(-_C.log1p(-_uniform(self, generator)) / lambd)


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """Fills with draws from the Cauchy distribution."""
    u = _uniform(self, generator)
    return self.copy_(median + sigma * _C.sin(math.pi * (u - 0.5)) / _C.cos(math.pi * (u - 0.5)))


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """Fills with ``exp(N(mean, std^2))`` draws."""
    from ._factories import randn

    return self.copy_(_C.exp(randn(*self.shape, dtype=self.dtype, generator=generator) * std + mean))


def geometric_(self, p, *, generator=None):
    """Fills with the number of Bernoulli(``p``) trials up to the first success (>= 1)."""
    u = _uniform(self, generator)
    return self.copy_(_C.ceil(_C.log1p(-u) / math.log1p(-p)).clamp(1, None))


def random_(self, from_=0, to=None, *, generator=None):
    """Fills with integers drawn uniformly from ``[from_, to)`` (``random_(to)`` means ``[0, to)``;
    without bounds, ``[0, 2**24]`` for float32 and ``[0, 2**53]`` for float64, as PyTorch)."""
    from ._factories import randint

    if to is None and from_ != 0:
        from_, to = 0, from_
    if to is None:
        to = {Dtype.FLOAT32: 2 ** 24 + 1, Dtype.FLOAT64: 2 ** 53 + 1, Dtype.FLOAT16: 2 ** 11 + 1,
              Dtype.BFLOAT16: 2 ** 8 + 1, Dtype.INT32: 2 ** 31, Dtype.BOOL: 2, Dtype.UINT8: 256,
              Dtype.INT8: 2 ** 7, Dtype.INT16: 2 ** 15}.get(self.dtype, 2 ** 63)
    return self.copy_(randint(from_, to, tuple(self.shape), generator=generator))


def fmax(a, b):
    """Elementwise maximum that ignores NaN (NaN only where both are NaN)."""
    return _C.where(_C.isnan(a), b, _C.where(_C.isnan(b), a, _C.maximum(a, b)))


def fmin(a, b):
    """Elementwise minimum that ignores NaN (NaN only where both are NaN)."""
    return _C.where(_C.isnan(a), b, _C.where(_C.isnan(b), a, _C.minimum(a, b)))


def copysign(a, b):
    """``|a|`` with the sign of ``b`` (the sign bit, so -0.0 counts as negative)."""
    b = b if isinstance(b, Tensor) else Tensor(np.asarray(b, dtype=np.float64))
    m = _C.abs(a)
    return _C.where(_C.signbit(b), -m, m)


def heaviside(x, values):
    """0 where ``x < 0``, 1 where ``x > 0``, ``values`` where ``x == 0``."""
    return _C.where(x == 0, values, (x > 0).to(x.dtype))


def isposinf(x):
    """True at +inf."""
    return x == builtins.float("inf")


def isneginf(x):
    """True at -inf."""
    return x == -builtins.float("inf")


def msort(x):
    """Sorted along dim 0."""
    return _C._sort(x, 0, False, False)[0]


def argwhere(x):
    """The indices of the non-zero elements, one row each (like ``nonzero``)."""
    return _C.nonzero(x)


def split_with_sizes(x, split_sizes, dim=0):
    """Splits into parts of the given sizes along ``dim``."""
    return _C.split(x, list(split_sizes), dim)


def _split_dim(x, sections, dim, op, min_ndim):
    from ._tensor_shape import tensor_split

    if x.ndim < min_ndim:
        raise ValueError(f"[{op}] needs a tensor with at least {min_ndim} dims, got shape {tuple(x.shape)}")
    if isinstance(sections, builtins.int) and sections <= 0:
        raise ValueError(f"[{op}] the number of sections must be positive, got {sections}")
    if isinstance(sections, builtins.int) and x.shape[dim] % sections:
        raise ValueError(f"[{op}] dim {dim} of size {x.shape[dim]} cannot be split into {sections} equal parts")
    return tensor_split(x, sections, dim)


def hsplit(x, sections):
    """Splits along dim 1 (dim 0 for 1-d tensors) into equal parts or at indices."""
    return _split_dim(x, sections, 1 if x.ndim > 1 else 0, "hsplit", 1)


def vsplit(x, sections):
    """Splits along dim 0 into equal parts or at indices."""
    return _split_dim(x, sections, 0, "vsplit", 2)


def dsplit(x, sections):
    """Splits along dim 2 into equal parts or at indices."""
    return _split_dim(x, sections, 2, "dsplit", 3)


def diag_embed(x, offset=0, dim1=-2, dim2=-1):
    """Places the last dim of ``x`` on a diagonal of new square matrices (in dims ``dim1``, ``dim2``)."""
    if _backend.NAME == "c":  # zeros with x written on the diagonal view
        return _C._diag_embed(x, offset, dim1, dim2)
    from ._tensor_shape import moveaxis

    n = x.shape[-1] + abs(offset)
    r = np.arange(x.shape[-1]) + builtins.max(-offset, 0)
    c = np.arange(x.shape[-1]) + builtins.max(offset, 0)
    flat = Tensor((r * n + c).astype(np.int64))
    lead = tuple(x.shape[:-1])
    out = _C.index_add(x.detach().new_zeros(lead + (n * n,)), x.ndim - 1, flat, x).reshape(lead + (n, n))
    return moveaxis(out, [-2, -1], [dim1, dim2]) if (dim1, dim2) != (-2, -1) else out


def fill_diagonal_(x, fill_value, wrap=False):
    """Fills the main diagonal of ``x`` (2-d, or every dim of one length) with ``fill_value``, in place.
    With ``wrap``, the diagonal of a tall matrix starts again every ``cols + 1`` rows, as PyTorch's."""
    if x.ndim < 2 or (x.ndim > 2 and len(set(x.shape)) != 1):
        raise ValueError(f"[fill_diagonal_] expects a 2-d tensor or one whose dims all have the same length, got "
                         f"shape {tuple(x.shape)}")
    starts = range(0, x.shape[0], x.shape[1] + 1) if wrap and x.ndim == 2 else [0]
    for r in starts:
        d = x[r:]
        while d.ndim > 1:  # the diagonal of the first two dims, until one dim is left
            d = d.diagonal(0, 0, 1)
        d.fill_(fill_value)
    return x


def diagflat(x, offset=0):
    """The flattened ``x`` on a diagonal of a square matrix."""
    from ._tensor_shape import diag

    return diag(x.reshape(-1), offset)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """``beta * input + alpha * sum_b batch1[b] @ batch2[b]``."""
    out = _C.bmm(batch1, batch2).sum(0) * alpha
    return out if beta == 0 else out + input * beta


FUNCTIONS = {name: fn for name, fn in dict(globals()).items()
             if callable(fn) and not name.startswith("_") and fn.__module__ == __name__ and not name.endswith("_")}
METHODS = {name: fn for name, fn in dict(globals()).items()
           if callable(fn) and name.endswith("_") and not name.startswith("_") and fn.__module__ == __name__}
INPLACE = ["fmax", "fmin", "copysign", "heaviside", "addbmm"]
