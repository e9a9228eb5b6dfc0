"""More of PyTorch's Tensor API composed from core ops: in-place shape changes (``squeeze_``,
``transpose_``, ...), ``sum_to_size``, the ``*_scatter`` family, ``put``, ``index_reduce``,
``nanmedian``, ``nanquantile``, ``mode``, ``renorm``, ``matrix_power``, the real-dtype forms of the
complex helpers (``conj``, ``angle``, ...) and the legacy ``Tensor.new``. ``FUNCTIONS`` are also
``sneppx_core`` functions (PyTorch has them at top level); ``METHODS`` are method-only;
``INPLACE`` names get an in-place ``name_`` method."""

from __future__ import annotations

import builtins
import math

import numpy as np

from . import _functional_composed
from ._backend import _C
from ._C_face import Dtype, Tensor
from ._ops import ValuesIndices
from ._tensor_extra import _check, _copy_dim, _dim, _spread
from ._tensor_math import _FLOATS



def _desc(x):
    return f"shape {tuple(x.shape)} and dtype {x.dtype.name}"


def _int_arg(v, op, what):
    v = v.item() if isinstance(v, Tensor) and v.numel() == 1 else v
    if isinstance(v, builtins.bool) or not isinstance(v, (builtins.int, np.integer)):
        raise TypeError(f"[{op}] {what} must be an int, got {type(v).__name__}")
    return builtins.int(v)


def _zero_link(x):
    """Zeros of ``x``'s shape whose gradient with respect to ``x`` is zero (NaN and inf included)."""
    return _C.where(x.detach().new_zeros(tuple(x.shape), dtype=Dtype.BOOL), x, 0.0)


def _reshape_inplace(self, view_fn, op):
    """``self`` takes the shape and strides of the view ``view_fn(self)`` (same memory), as PyTorch's
    in-place view ops: a leaf that requires grad is refused while grad mode is on; a tensor inside a
    graph keeps its history (through a copy of the view); the version counter moves, so a tensor
    saved for backward before the change raises in backward instead of being read with the new shape.
    A view of another tensor stops passing later in-place writes' history on to that tensor."""
    if self.requires_grad and _C.is_grad_enabled():
        if self.is_leaf:
            raise RuntimeError(f"[{op}] a leaf tensor that requires grad is being used in an in-place operation; "
                               f"wrap it in no_grad() or use the out-of-place {op[:-1]}")
        view = view_fn(self)
        self._set_data(view.detach())
        self.copy_(view)  # the new grad_fn runs back through the view into the old history
        return self
    view = view_fn(self)
    if self.numel():
        first = self[(0,) * self.ndim] if self.ndim else self
        try:
            first.copy_(first)  # one element written onto itself: the storage's version counter moves
        except RuntimeError:  # read-only memory: nothing can have changed it
            pass
    self._set_data(view)
    return self


def squeeze_(self, dim=None):
    """In place: removes the dims of size 1 (only those in ``dim`` when given); returns self."""
    return _reshape_inplace(self, lambda t: t.squeeze(dim), "squeeze_")


def unsqueeze_(self, dim):
    """In place: inserts a dim of size 1 at ``dim``; returns self."""
    return _reshape_inplace(self, lambda t: t.unsqueeze(dim), "unsqueeze_")


def transpose_(self, dim0, dim1):
    """In place: swaps dims ``dim0`` and ``dim1`` (the strides, not the data); returns self."""
    return _reshape_inplace(self, lambda t: t.transpose(dim0, dim1), "transpose_")


def swapaxes_(self, axis0, axis1):
    """In place: alias of ``transpose_``."""
    return _reshape_inplace(self, lambda t: t.transpose(axis0, axis1), "swapaxes_")


def swapdims_(self, dim0, dim1):
    """In place: alias of ``transpose_``."""
    return _reshape_inplace(self, lambda t: t.transpose(dim0, dim1), "swapdims_")


def sum_to_size(self, *size):
    """Sums ``self`` down to ``size`` (ints or one sequence), which must expand to ``self.shape``:
    ``out = sum over the leading extra dims and over the dims where size is 1 and the shape is not``."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    if not size and self.ndim:
        raise TypeError("[sum_to_size] missing the target size")
    size = tuple(_int_arg(s, "sum_to_size", "each size") for s in size)
    shape, lead = tuple(self.shape), self.ndim - len(size)
    if lead < 0 or any(s not in (1, n) for s, n in zip(size, shape[lead:])):
        raise ValueError(f"[sum_to_size] size {size} is not expandable to the input's {_desc(self)}")
    dims = list(range(lead)) + [lead + i for i, s in enumerate(size) if s == 1 and shape[lead + i] != 1]
    return self.sum(dims, True).reshape(size) if dims else self.reshape(size)


def narrow_copy(input, dim, start, length):
    """A copy (not a view) of ``input.narrow(dim, start, length)``."""
    _check(input, "narrow_copy")
    return _C.narrow(input, dim, _int_arg(start, "narrow_copy", "start"), length).clone()


def unsafe_chunk(input, chunks, dim=0):
    """``chunk`` (PyTorch's unsafe form only skips view tracking)."""
    return _C.chunk(input, chunks, dim)


def unsafe_split(input, split_size, dim=0):
    """``split`` (PyTorch's unsafe form only skips view tracking)."""
    return _C.split(input, split_size, dim)


def unsafe_split_with_sizes(input, split_sizes, dim=0):
    """``split_with_sizes``: parts of the given sizes, which must sum to ``input.shape[dim]``."""
    return _C.split(input, list(split_sizes), dim)


def _scatter_into(input, src, view_fn, op):
    """A contiguous copy of ``input`` with ``src`` written into the view ``view_fn(copy)``; autograd
    takes the gradient of the written region to ``src`` and of the rest to ``input``."""
    _check(input, op)
    _check(src, op)
    out = input.clone()
    out = out if out.is_contiguous() else out.contiguous()
    view = view_fn(out)
    if tuple(src.shape) != tuple(view.shape):
        raise ValueError(f"[{op}] src of {_desc(src)} must have the shape {tuple(view.shape)} of the slice it "
                         f"replaces in the input of {_desc(input)}")
    view.copy_(src)
    return out


def select_scatter(input, src, dim, index):
    """A copy of ``input`` with ``out.select(dim, index) = src``."""
    _check(input, "select_scatter")
    if input.ndim == 0:
        raise IndexError("[select_scatter] cannot select from a 0-d tensor")
    d = _dim(dim, input.ndim, "select_scatter")
    i = _int_arg(index, "select_scatter", "index")
    if not -input.shape[d] <= i < input.shape[d]:
        raise IndexError(f"[select_scatter] index {i} is out of range for dim {d} of the input of {_desc(input)}")
    return _scatter_into(input, src, lambda t: t.select(d, i), "select_scatter")


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """A copy of ``input`` with ``out[..., start:end:step, ...] = src`` along ``dim`` (Python slice
    bounds: negative ones count from the end, both are clamped; ``step`` must be positive)."""
    _check(input, "slice_scatter")
    if input.ndim == 0:
        raise IndexError("[slice_scatter] cannot slice a 0-d tensor")
    d, step = _dim(dim, input.ndim, "slice_scatter"), _int_arg(step, "slice_scatter", "step")
    if step <= 0:
        raise ValueError(f"[slice_scatter] step must be positive, got {step}")
    r = range(input.shape[d])[slice(start, end, step)]
    where = (slice(None),) * d + (slice(r.start, r.start + len(r) * step, step),)
    return _scatter_into(input, src, lambda t: t[where], "slice_scatter")


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """A copy of ``input`` with ``out.diagonal(offset, dim1, dim2) = src``."""
    _check(input, "diagonal_scatter")
    if input.ndim < 2:
        raise ValueError(f"[diagonal_scatter] needs an input with at least 2 dims, got {_desc(input)}")
    return _scatter_into(input, src, lambda t: t.diagonal(offset, dim1, dim2), "diagonal_scatter")


def put(input, index, source, accumulate=False):
    """A copy of ``input`` with ``out.flatten()[index[i]] = source[i]`` (``+=`` with ``accumulate``,
    summing repeats; without it the last write wins); ``index`` counts from the end when negative."""
    for a in (input, index, source):
        _check(a, "put")
    if index.dtype not in (Dtype.INT64, Dtype.INT32) or source.dtype != input.dtype or index.numel() != source.numel():
        raise ValueError(f"[put] expects an int64 (or int32) index and a source of the input's dtype with one "
                         f"element per index; got input {_desc(input)}, index {_desc(index)}, source {_desc(source)}")
    n, idx = input.numel(), index.reshape(-1).to(Dtype.INT64)
    if idx.numel() and not (-n <= idx.min().item() and idx.max().item() < n):
        raise IndexError(f"[put] index values {idx.min().item()}..{idx.max().item()} are out of range for the "
                         f"input of {_desc(input)} ({n} elements)")
    flat = _C._index_put_front(input.reshape(-1), [idx], source.reshape(-1), builtins.bool(accumulate))
    return flat.reshape(tuple(input.shape))


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """A copy of ``input`` whose slices ``index[i]`` along ``dim`` are reduced with ``source``'s slices
    ``i`` by ``reduce``: ``"prod"``, ``"mean"`` (integers floor-divide), ``"amax"`` or ``"amin"``;
    ``include_self=False`` leaves the input's values out of the slices that are written to."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise ValueError(f"[index_reduce] reduce must be prod, mean, amax or amin, got {reduce!r}")
    if isinstance(input, Tensor) and input.ndim == 0 and isinstance(source, Tensor) and source.ndim == 0:
        return index_reduce(input.reshape(1), 0, index, source.reshape(1), reduce,
                            include_self=include_self).reshape([])
    d = _copy_dim(input, dim, index, source, "index_reduce")
    n = input.shape[d] if input.ndim else 1
    if index.numel() and not (0 <= index.min().item() and index.max().item() < n):
        raise IndexError(f"[index_reduce] index values {index.min().item()}..{index.max().item()} are out of "
                         f"range for dim {d} of size {n} of the input of {_desc(input)}")
    idx = _spread(index.to(Dtype.INT64), d, source)
    if reduce != "mean":
        return input.scatter_reduce(d, idx, source, reduce, include_self=include_self)
    zeros = input.detach().new_zeros(tuple(input.shape))
    hits = _C.scatter_add(zeros, d, idx, source.detach().new_ones(tuple(source.shape)))
    total = _C.scatter_add(input if include_self else _C.where(hits > 0, zeros, input), d, idx, source)
    count = hits + 1 if include_self else _C.where(hits > 0, hits, 1)
    return total / count if input.dtype in _FLOATS else _C.floor_divide(total, count)


def _float_input(x, op):
    _check(x, op)
    if x.dtype not in _FLOATS:
        raise TypeError(f"[{op}] expects a floating input, got {_desc(x)}")


def _nan_sorted(x, d):
    """Positions of a stable ascending sort along ``d`` (NaN last) and the non-NaN count per slice."""
    return _C._sort(x.detach(), d, False, True)[1], (~_C.isnan(x.detach())).sum([d], True)


def _along(input, dim, op):
    """``input`` (0-d as 1-d) and the wrapped ``dim``, which must not be empty."""
    x = input.reshape(1) if input.ndim == 0 else input
    d = _dim(dim, x.ndim, op)
    if x.shape[d] == 0:
        raise IndexError(f"[{op}] cannot reduce over dim {d} of size 0 of the input of {_desc(input)}")
    return x, d


def _picked(input, x, d, idx, keepdim):
    """The values of ``x`` at the positions ``idx`` (kept dim ``d``) and those positions."""
    values = x.gather(d, idx)
    if input.ndim == 0:
        return ValuesIndices(values.reshape([]), idx.reshape([]))
    return ValuesIndices(values, idx) if keepdim else ValuesIndices(values.squeeze(d), idx.squeeze(d))


def nanmedian(input, dim=None, keepdim=False):
    """Lower median of the non-NaN values: the ``(m - 1) // 2``-th (0-based) of the ``m`` non-NaN values
    in a stable sort, NaN when a slice has none. With ``dim``: values and indices, the index being
    that element's position (ties go to the earlier element of the stable sort, as PyTorch's)."""
    _check(input, "nanmedian")
    if dim is None:
        flat = input.reshape(-1)
        if flat.numel() == 0 and flat.is_floating_point():
            return flat.sum() * builtins.float("nan")
        m = flat.numel() - builtins.int(_C.isnan(flat).sum().item()) if flat.is_floating_point() else flat.numel()
        return _C._kthvalue(flat, builtins.max((m - 1) // 2, 0) + 1, 0, False)[0]
    x, d = _along(input, dim, "nanmedian")
    order, m = _nan_sorted(x, d)
    return _picked(input, x, d, order.gather(d, _C.clamp((m - 1) // 2, 0, None)), keepdim)


def _q_list(q, op):
    scalar = not isinstance(q, Tensor) or q.ndim == 0
    qs = np.atleast_1d(np.asarray(q.detach().cpu().tolist() if isinstance(q, Tensor) else q, dtype=np.float64))
    if qs.ndim != 1 or not np.all((qs >= 0) & (qs <= 1)):
        raise ValueError(f"[{op}] q must be a number or a 0-d or 1-d tensor with values in [0, 1], got {q!r}")
    return scalar, qs.tolist()


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The ``q``-quantiles of the non-NaN values along ``dim`` (all elements when None): with ``m``
    non-NaN values sorted into ``s``, rank ``r = q (m - 1)`` and ``out = s[floor r] + (r - floor r)
    (s[ceil r] - s[floor r])`` for ``"linear"``; ``"lower"``, ``"higher"``, ``"midpoint"`` and
    ``"nearest"`` (half to even) as in ``quantile``. A slice with no non-NaN value gives NaN."""
    _float_input(input, "nanquantile")
    if interpolation not in ("linear", "lower", "higher", "midpoint", "nearest"):
        raise ValueError(f"[nanquantile] interpolation must be linear, lower, higher, midpoint or nearest, got "
                         f"{interpolation!r}")
    scalar, qs = _q_list(q, "nanquantile")
    x, d = _along(input, dim, "nanquantile") if dim is not None else _along(input.reshape(-1), 0, "nanquantile")
    order, m = _nan_sorted(x, d)
    s = x.gather(d, order)
    outs = []
    for qv in qs:
        rank = _C.clamp((m - 1).to(x.dtype) * qv, 0, None)
        rank = {"lower": _C.floor, "higher": _C.ceil, "nearest": _C.round}.get(interpolation, lambda r: r)(rank)
        lo, hi = _C.floor(rank), _C.ceil(rank)
        v = s.gather(d, lo.to(Dtype.INT64))
        if interpolation in ("linear", "midpoint"):
            weight = rank - lo if interpolation == "linear" else rank * 0 + 0.5
            v = _C.lerp(v, s.gather(d, hi.to(Dtype.INT64)), weight)
        outs.append(v)
    out = _C.stack(outs, 0)
    if dim is None:
        out = out.reshape([len(qs)] + ([1] * input.ndim if keepdim else []))
    elif not keepdim:
        out = out.squeeze(d + 1) if input.ndim else out.reshape([len(qs)])
    return out[0] if scalar else out


def _mode_positions(rows):
    """For each row of a 2-d array: the position of the last occurrence of its most frequent value
    (the smallest such value on a tie; each NaN counts as its own value)."""
    r, n = rows.shape
    order = np.argsort(rows, axis=1, kind="stable")
    s = np.take_along_axis(rows, order, 1)
    new_run = np.ones((r, n), dtype=bool)
    new_run[:, 1:] = s[:, 1:] != s[:, :-1]
    run = np.cumsum(new_run, 1) - 1
    counts = np.bincount((run + np.arange(r)[:, None] * n).ravel(), minlength=r * n).reshape(r, n)
    size = np.take_along_axis(counts, run, 1)
    best = size.max(1)
    pos = np.argmax(size == best[:, None], axis=1) + best - 1
    return order[np.arange(r), pos]


def mode(input, dim=-1, keepdim=False):
    """The most frequent value along ``dim`` (the smallest on a tie) and the index of its last
    occurrence. Each NaN counts as a distinct value."""
    _check(input, "mode")
    x, d = _along(input, dim, "mode")
    a = x.detach().cpu()
    a = a.to(Dtype.FLOAT32) if a.dtype in (Dtype.FLOAT16, Dtype.BFLOAT16) else a
    moved = np.moveaxis(a.numpy(), d, -1)
    pos = _mode_positions(moved.reshape(-1, moved.shape[-1])).reshape(moved.shape[:-1])
    return _picked(input, x, d, Tensor(np.array(pos, dtype=np.int64, order="C")).to(x.device).unsqueeze(d), keepdim)


def renorm(input, p, dim, maxnorm):
    """Each slice ``input.select(dim, i)`` whose ``p``-norm exceeds ``maxnorm`` is scaled by
    ``maxnorm / (norm + 1e-7)``; the others are kept (the gradient runs through the norm too)."""
    _float_input(input, "renorm")
    if input.ndim < 2:
        raise ValueError(f"[renorm] needs an input with at least 2 dims, got {_desc(input)}")
    if not builtins.float(p) > 0 or not builtins.float(maxnorm) >= 0:
        raise ValueError(f"[renorm] needs p > 0 and maxnorm >= 0, got p={p} and maxnorm={maxnorm}")
    d = _dim(dim, input.ndim, "renorm")
    dims = [i for i in range(input.ndim) if i != d]
    norm = _C.norm(input.detach(), p, dims, True)
    big = norm > maxnorm
    if input.requires_grad and _C.is_grad_enabled():  # the norm again, differentiable, where it is used
        norm = _C.norm(_C.where(big, input, 1.0), p, dims, True)
    return input * _C.where(big, maxnorm / (norm + 1e-7), 1.0)


def matrix_power(input, n):
    """``input`` (a square matrix or a batch) to the integer power ``n`` by repeated squaring;
    ``n = 0`` gives identities, ``n < 0`` powers of the inverse (floating input)."""
    _check(input, "matrix_power")
    n = _int_arg(n, "matrix_power", "n")
    if input.ndim < 2 or input.shape[-1] != input.shape[-2]:
        raise ValueError(f"[matrix_power] expects a square matrix or a batch of them, got {_desc(input)}")
    if n == 0:
        eye = _C._eye(input.shape[-1], input.shape[-1], input.dtype).to(input.device)
        out = eye.expand(*input.shape).contiguous()
        return out + _zero_link(input) if input.requires_grad else out
    if n < 0:
        if input.dtype not in _FLOATS:
            raise TypeError(f"[matrix_power] a negative power needs a floating input, got {_desc(input)}")
        from .linalg import inv  # deferred: linalg imports this module

        input, n = inv(input), -n
    out, base = None, input
    while n:
        if n & 1:
            out = base if out is None else out @ base
        n >>= 1
        if n:
            base = base @ base
    return out.clone() if out is input else out


def _real_form(name, result, doc):
    """The real-dtype form of a complex helper: ``input`` itself, or the constant ``result``."""

    def fn(input):
        _check(input, name)
        return input if result is None else result

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


def conj(input):
    """The complex conjugate: a new tensor for complex dtypes (PyTorch's is a lazy view; here writes into
    it do not reach ``input``), ``input`` itself for real dtypes."""
    _check(input, "conj")
    return _C._conj(input) if input.dtype.is_complex else input


def conj_physical(input):
    """The complex conjugate as a new tensor (``input`` itself for real dtypes): ``conj``, which never makes a
    lazy view here."""
    _check(input, "conj_physical")
    return conj(input)


def conj_physical_(input):
    """Conjugates a complex tensor in place (nothing to do for real dtypes); returns ``input``."""
    _check(input, "conj_physical_")
    return input.copy_(_C._conj(input)) if input.dtype.is_complex else input


resolve_conj = _real_form("resolve_conj", None, "``input`` with a pending conjugation applied: ``input`` itself.")
resolve_neg = _real_form("resolve_neg", None, "``input`` with a pending negation applied: ``input`` itself.")
is_conj = _real_form("is_conj", False, "False: no tensor carries a lazy conjugation bit.")
is_neg = _real_form("is_neg", False, "False: no tensor carries a lazy negation bit.")


def isreal(input):
    """Where the imaginary part is 0 (a bool tensor of ``input``'s shape; all True for real dtypes)."""
    _check(input, "isreal")
    if input.dtype.is_complex:
        return _C._imag(input.detach()) == 0
    return input.detach().new_ones(tuple(input.shape), dtype=Dtype.BOOL)


def angle(input):
    """The argument: ``atan2(imag, real)`` of a complex number (float32 / float64, differentiable); of a
    real number ``pi`` where ``x < 0``, 0 where ``x >= 0``, NaN at NaN (integer and bool input give
    float32), with a zero gradient, as PyTorch's for real input."""
    _check(input, "angle")
    if input.dtype.is_complex:
        return _C._complex_angle(input)
    x = input if input.dtype in _FLOATS else input.to(Dtype.FLOAT32)
    a = x.detach()
    out = _C.where(_C.isnan(a), a, _C.where(a < 0, math.pi, a.new_zeros(tuple(a.shape))))
    return out + _zero_link(x) if x.requires_grad else out


def hardshrink(input, lambd=0.5):
    """``x`` where ``|x| > lambd``, else 0 (``functional.hardshrink``)."""
    _check(input, "hardshrink")
    return _functional_composed.hardshrink(input, lambd)


def prelu(input, weight):
    """``max(0, x) + weight * min(0, x)``, one weight or one per channel (``functional.prelu``)."""
    _check(input, "prelu")
    return _functional_composed.prelu(input, weight)


def new(self, *args, device=None):
    """Legacy constructor with this tensor's dtype (and device unless given): ``new()`` is empty,
    ``new(*sizes)`` or ``new(size_tuple)`` uninitialised, ``new(list_or_array)`` a copy of the data and
    ``new(tensor)`` an alias of a tensor of the same dtype. (A tuple is a size: shapes are tuples.)"""
    from ._factories import _like_device, empty

    dev = _like_device(self, device)
    if len(args) == 1 and isinstance(args[0], Tensor):
        other = args[0]
        if other.dtype != self.dtype:
            raise TypeError(f"[new] expected a tensor of dtype {self.dtype.name}, got {_desc(other)}")
        return other.expand(*other.shape)
    if len(args) == 1 and isinstance(args[0], (list, np.ndarray)):
        return Tensor(args[0], dtype=self.dtype, device=dev)
    size = args[0] if len(args) == 1 and isinstance(args[0], tuple) else (args or (0,))
    if not all(isinstance(s, (builtins.int, np.integer)) and not isinstance(s, builtins.bool) for s in size):
        raise TypeError(f"[new] expected sizes (ints or one tuple), a list of data or a tensor, got "
                        f"({', '.join(type(a).__name__ for a in args)})")
    return empty(*size, dtype=self.dtype, device=dev)


FUNCTIONS = {name: fn for name, fn in dict(globals()).items()
             if callable(fn) and not name.startswith("_") and fn.__module__ == __name__
             and name not in ("squeeze_", "unsqueeze_", "transpose_", "swapaxes_", "swapdims_", "sum_to_size", "new")}
METHODS = {name: globals()[name]
           for name in ("squeeze_", "unsqueeze_", "transpose_", "swapaxes_", "swapdims_", "sum_to_size", "new")}
INPLACE = ["put", "index_reduce", "renorm"]
