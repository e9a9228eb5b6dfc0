"""PyTorch's shape, indexing and small linear-algebra Tensor functions, composed from core ops:
tile, take_along_dim, rot90, diagonal, unique, index_put, ... (inverse, det and the rest of linear algebra
live in ``linalg`` and ``_linalg_torch``). ``FUNCTIONS`` maps names to functions; ``METHODS`` adds
method-only names."""

from __future__ import annotations

import builtins
import itertools

import numpy as np

from . import _backend
from ._backend import _C
from ._C_face import Dtype, Tensor

_SIGNED = (Dtype.FLOAT32, Dtype.FLOAT64, Dtype.FLOAT16, Dtype.BFLOAT16, Dtype.INT8, Dtype.INT16,
           Dtype.INT32, Dtype.INT64)


def _ints(a):
    return Tensor(np.require(a, dtype=np.int64, requirements="C"))


def moveaxis(x, source, destination):
    """Moves dims ``source`` (an int or a sequence) to positions ``destination``; the others keep
    their order."""
    src = [source] if isinstance(source, builtins.int) else list(source)
    dst = [destination] if isinstance(destination, builtins.int) else list(destination)
    if len(src) != len(dst):
        raise ValueError(f"[movedim] source {source} and destination {destination} differ in length")
    n = builtins.max(x.ndim, 1)
    if any(not -n <= d < n for d in src + dst):
        raise IndexError(f"[movedim] dims {source} -> {destination} out of range for {x.ndim} dims")
    src, dst = [d % n for d in src], [d % n for d in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError(f"[movedim] repeated dim in source {source} or destination {destination}")
    order = [None] * x.ndim
    for s_, d_ in zip(src, dst):
        order[d_] = s_
    rest = iter(d for d in range(x.ndim) if d not in src)
    return x.permute(*[o if o is not None else next(rest) for o in order])


def tile(x, dims):
    """Repeats ``x`` ``dims[i]`` times along each dim (missing leading dims count as 1)."""
    dims = tuple(dims)
    shape = (1,) * (len(dims) - x.ndim) + tuple(x.shape)
    dims = (1,) * (len(shape) - len(dims)) + dims
    return x.reshape(shape).repeat(*dims)


def take(x, index):
    """Elements of the flattened ``x`` at ``index`` (the result has ``index``'s shape)."""
    return x.reshape(-1).index_select(0, index.reshape(-1)).reshape(tuple(index.shape))


def take_along_dim(x, indices, dim=None):
    """``gather`` with broadcasting between ``x`` and ``indices`` (flattened when ``dim`` is None)."""
    if dim is None:
        return x.reshape(-1).gather(0, indices.reshape(-1))
    shape = list(np.broadcast_shapes(tuple(x.shape), tuple(indices.shape)))
    xs, ix = list(shape), list(shape)
    xs[dim], ix[dim] = x.shape[dim], indices.shape[dim]
    return x.broadcast_to(tuple(xs)).gather(dim, indices.broadcast_to(tuple(ix)))


def tensor_split(x, indices_or_sections, dim=0):
    """Splits into ``n`` nearly equal parts (the first ``size % n`` one longer) or at the given indices."""
    size = x.shape[dim]
    if isinstance(indices_or_sections, builtins.int):
        n = indices_or_sections
        if not 0 < n <= builtins.max(size, 1 << 16):
            raise ValueError(f"[tensor_split] the number of sections must be in [1, {builtins.max(size, 1 << 16)}] "
                             f"for a dim of size {size}, got {n}")
        q, r = divmod(size, n)
        cuts = [i * q + builtins.min(i, r) for i in range(1, n)]  # the first r parts one longer
    else:
        cuts = list(indices_or_sections.tolist() if isinstance(indices_or_sections, Tensor) else indices_or_sections)
    bounds = [0] + [builtins.min(builtins.max(c, 0), size) for c in cuts] + [size]
    return tuple(x.narrow(dim, a, builtins.max(b - a, 0)) for a, b in itertools.pairwise(bounds))


def fliplr(x):
    """Reverses dim 1."""
    return _C.flip(x, [1])


def flipud(x):
    """Reverses dim 0."""
    return _C.flip(x, [0])


def rot90(x, k=1, dims=(0, 1)):
    """Rotates by 90 degrees ``k`` times in the plane of ``dims`` (from the first towards the second)."""
    a, b = dims
    k %= 4
    if k == 1:
        return _C.flip(x, [b]).transpose(a, b)
    if k == 2:
        return _C.flip(x, [a, b])
    if k == 3:
        return _C.flip(x.transpose(a, b), [b])
    return x.clone()


def diagonal(x, offset=0, dim1=0, dim2=1):
    """The diagonal with ``offset`` of the matrices spanned by ``dim1`` and ``dim2``, as a last dim: a
    view, so writes through it reach ``x`` (a copy on the NumPy backend)."""
    if _backend.NAME == "c":
        return _C._diagonal(x, offset, dim1, dim2)
    y = moveaxis(x, [dim1, dim2], [-2, -1])
    rows, cols = y.shape[-2], y.shape[-1]
    i = np.arange(builtins.max(0, builtins.min(rows + builtins.min(offset, 0), cols - builtins.max(offset, 0))))
    flat = (i - builtins.min(offset, 0)) * cols + i + builtins.max(offset, 0)
    return y.reshape(tuple(y.shape[:-2]) + (rows * cols,)).index_select(y.ndim - 2, _ints(flat))


def diag(x, diagonal=0):
    """A 1-d ``x`` placed on a diagonal of a square matrix, or the diagonal of a 2-d ``x``."""
    if x.ndim == 2:
        return globals()["diagonal"](x, diagonal)
    if x.ndim != 1:
        raise ValueError(f"[diag] expects a 1-d or 2-d tensor, got shape {tuple(x.shape)}")
    if _backend.NAME == "c":
        return _C._diag_embed(x, diagonal, 0, 1)
    n = x.shape[0] + abs(diagonal)
    r = np.arange(x.shape[0]) + builtins.max(-diagonal, 0)
    c = np.arange(x.shape[0]) + builtins.max(diagonal, 0)
    base = _C.index_add(x.detach().new_zeros(n * n), 0, _ints(r * n + c), x)
    return base.reshape((n, n))


def inner(a, b):
    """Sum over the last dims of ``a`` and ``b`` (a dot product for vectors)."""
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    return _C.matmul(a.reshape((-1, a.shape[-1])), b.reshape((-1, b.shape[-1])).transpose(0, 1)).reshape(
        tuple(a.shape[:-1]) + tuple(b.shape[:-1]))


def mv(mat, vec):
    """Matrix-vector product."""
    return _C.matmul(mat, vec)


def addmv(input, mat, vec, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat @ vec)``."""
    out = _C.matmul(mat, vec) * alpha
    return out if beta == 0 else out + input * beta


def addr(input, vec1, vec2, *, beta=1, alpha=1):
    """``beta * input + alpha * outer(vec1, vec2)``."""
    out = _C.outer(vec1, vec2) * alpha
    return out if beta == 0 else out + input * beta


def unique(x, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct elements (sorted), optionally with each element's position in them and counts. As in
    PyTorch, NaNs are never equal, so each one is an element of its own (after every number)."""
    if dim is not None:
        raise NotImplementedError("[unique] dim= is not implemented; unique over all elements only")
    flat = x.detach().reshape(-1)
    n = flat.shape[0]
    s, order = _C._sort(flat, 0, False, True)
    # a run of equal values starts where a sorted element differs from the one before it
    start = _C.cat([_C._full((builtins.min(n, 1),), True, Dtype.BOOL, x.device), s[1:] != s[:-1]], 0)
    out = [s[start]]
    if return_inverse:  # each element's run, put back in the elements' order
        run = start.cumsum(0).sub_(1)
        out.append(_C.scatter(run, 0, order, run).reshape(tuple(x.shape)))
    if return_counts:
        ends = _C.cat([start.nonzero().reshape(-1), _C._full((1,), n, Dtype.INT64, x.device)], 0)
        out.append(ends[1:] - ends[:-1])
    return out[0] if len(out) == 1 else tuple(out)


def unique_consecutive(x, return_inverse=False, return_counts=False, dim=None):
    """Collapses runs of equal consecutive elements (over the flattened tensor)."""
    if dim is not None:
        raise NotImplementedError("[unique_consecutive] dim= is not implemented")
    a = x.detach().numpy().reshape(-1)
    start = np.concatenate([[True], a[1:] != a[:-1]]) if a.size else np.zeros(0, bool)
    out = [Tensor(a[start]).to(x.dtype)]
    if return_inverse:
        out.append(_ints((np.cumsum(start) - 1).reshape(tuple(x.shape))))
    if return_counts:
        out.append(_ints(np.diff(np.append(np.flatnonzero(start), a.size))))
    return out[0] if len(out) == 1 else tuple(out)


def bincount(x, weights=None, minlength=0):
    """Occurrences of each value of a 1-d non-negative int tensor: int64 counts, or the sums of
    ``weights`` (1-d, one per element) in the weights' dtype when it is float32 or float64, else in
    float64, as PyTorch."""
    if x.ndim != 1 or x.dtype not in (Dtype.INT32, Dtype.INT64, Dtype.UINT8):
        raise ValueError(f"[bincount] expects a 1-d integer tensor, got shape {tuple(x.shape)} and {x.dtype}")
    if weights is None:
        return _ints(np.bincount(x.numpy(), minlength=minlength))
    if weights.ndim != 1 or weights.shape[0] != x.shape[0]:
        raise ValueError(f"[bincount] weights of shape {tuple(weights.shape)} must be 1-d with one weight per "
                         f"element of the input of shape {tuple(x.shape)}")
    lo, hi = (x.min().item(), x.max().item()) if x.numel() else (0, -1)
    if lo < 0:
        raise ValueError(f"[bincount] expects non-negative values, got {lo}")
    dt = weights.dtype if weights.dtype in (Dtype.FLOAT32, Dtype.FLOAT64) else Dtype.FLOAT64
    out = weights.new_zeros(builtins.max(hi + 1, minlength), dtype=dt)
    return out.index_add_(0, x.to(Dtype.INT64), weights.detach().to(dt))  # the sums, in the order of x


def index_put(x, indices, values, accumulate=False):
    """A copy of ``x`` with ``x[indices] = values`` (``+=`` with ``accumulate``, summing duplicates;
    without it the last write to a position wins). ``indices`` index the leading dims; a bool tensor
    among them stands for the coordinates of its true elements, one index per dim it spans."""
    idx = []
    for i in indices:
        i = i if isinstance(i, Tensor) else _ints(i)
        idx.extend(_C.nonzero(i).unbind(1) if i.dtype == Dtype.BOOL else [i])
    if not isinstance(values, Tensor):
        values = x.detach().new_full((), values)
    return _C._index_put_front(x, idx, values, accumulate)


FUNCTIONS = {name: fn for name, fn in dict(globals()).items()
             if callable(fn) and not name.startswith("_") and fn.__module__ == __name__}
def _alias(fn, name, doc):
    def alias(*args, **kwargs):
        return fn(*args, **kwargs)

    alias.__name__, alias.__doc__ = name, doc
    return alias


FUNCTIONS.update(swapdims=_alias(_C.transpose, "swapdims", "Alias of ``transpose``."),
                 ger=_alias(_C.outer, "ger", "Alias of ``outer``."),
                 vdot=_alias(_C.dot, "vdot", "Dot product of 1-d tensors."))
METHODS = {
    "movedim": moveaxis,
    "ravel": lambda self: self.reshape(-1),
    "positive": lambda self: self,
    "is_signed": lambda self: self.dtype in _SIGNED,
    "is_complex": lambda self: self.dtype.is_complex,
    "is_inference": lambda self: False,
    "is_pinned": lambda self, device=None: bool(getattr(_C, "_is_pinned", lambda t: False)(self)),
    "is_same_size": lambda self, other: tuple(self.shape) == tuple(other.shape),
    "is_nonzero": lambda self: builtins.bool(self.item()),
    "itemsize": property(lambda self: self.element_size(), doc="Bytes per element."),
    "nbytes": property(lambda self: self.element_size() * self.numel(), doc="Bytes of the elements."),
}
METHOD_DOCS = {
    "ravel": "The elements as a 1-d tensor.", "positive": "Returns self.", "is_signed": "True for signed dtypes.",
    "is_complex": "True for complex64 and complex128 tensors.",
    "is_inference": "False (the NumPy backend marks no inference tensors; the C backend binds its own).",
    "is_pinned": "True when the tensor lives in page-locked memory (``pin_memory()``).",
    "is_same_size": "True if ``other`` has the same shape.",
    "is_nonzero": "Truth value of a one-element tensor.",
}


def pin_memory(self, device=None):
    """Page-locked copy for fast (and, with ``non_blocking=True``, asynchronous) GPU transfers; self when
    it is pinned already. Like PyTorch, raises when no GPU is available."""
    from . import cuda

    if not cuda.is_available():
        raise RuntimeError("[pin_memory] cannot pin memory: no accelerator is available")
    return _C._pin_memory(self)


METHODS["pin_memory"] = pin_memory
