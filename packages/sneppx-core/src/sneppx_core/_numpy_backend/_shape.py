"""Views, joining, indexing and sorting ops of the NumPy backend (views share memory)."""

from __future__ import annotations

import builtins

import numpy as np

from ._core import BFLOAT16, BOOL, INT64, STORAGE, Dtype, as_dtype, describe, norm_dim, promote_pair
from ._tensor import Tensor, need_tensor, view, wrap


def _dim(t, d, op, extra=0):
    return norm_dim(d, t._a.ndim, op, extra)


def _sizes(args, op):
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    try:
        return tuple(builtins.int(s.__index__()) for s in args)
    except (AttributeError, TypeError):
        raise TypeError(f"[{op}] sizes must be integers, got {args!r}") from None


def _resolve(shape, n, op, old):
    shape = list(shape)
    if shape.count(-1) > 1:
        raise ValueError(f"[{op}] only one dim can be -1, got {tuple(shape)}")
    if -1 in shape:
        rest = int(np.prod([s for s in shape if s != -1]))
        if rest == 0 or n % rest:
            raise ValueError(f"[{op}] shape {tuple(shape)} is invalid for a tensor of shape {old}")
        shape[shape.index(-1)] = n // rest
    if int(np.prod(shape)) != n or builtins.any(s < 0 for s in shape):
        raise ValueError(f"[{op}] shape {tuple(shape)} is invalid for a tensor of shape {old} ({n} elements)")
    return tuple(shape)


def reshape(input, shape):
    """The same elements in ``shape`` (a view when the strides allow, else a copy)."""
    need_tensor(input, "reshape")
    shape = _resolve(_sizes((shape,) if not isinstance(shape, (tuple, list)) else (shape,), "reshape"),
                     input._a.size, "reshape", tuple(input.shape))
    return view(np.reshape(input._a, shape), input._dt)


def _view_dtype(input, dt):
    """``input``'s bytes read as ``dt`` (the last dim rescaled by the ratio of element sizes), sharing memory as
    the C backend does, except where bfloat16 is involved (it is held in float32 arrays here: a copy)."""
    a = np.ascontiguousarray(input._a)
    if input._dt is BFLOAT16:
        a = (a.view(np.uint32) >> 16).astype(np.uint16)
    old, new = input._dt.itemsize, dt.itemsize
    if old != new and (a.ndim == 0 or (a.shape[-1] * old) % new):
        raise RuntimeError(f"[view] {describe(input)} cannot be viewed as {dt!r}: the last dim's bytes "
                           f"({a.shape[-1] if a.ndim else 0} x {old}) are not a multiple of {new}")
    if dt is BFLOAT16:
        return view((a.view(np.uint16).astype(np.uint32) << 16).view(np.float32), dt)
    return view(a.view(STORAGE[dt]), dt)


def _as_strided(input, size, stride, storage_offset=0):
    """A view of the elements of ``input`` (a contiguous tensor, taken as the storage) with the given sizes,
    strides and offset in elements; RuntimeError when it would reach outside them (what the checkpoint reader
    needs of the C backend's ``_as_strided``)."""
    a = input._a
    if not a.flags.c_contiguous:
        raise RuntimeError(f"[as_strided] expected a contiguous storage tensor, got {describe(input)}")
    size, stride, offset = tuple(builtins.int(n) for n in size), tuple(builtins.int(n) for n in stride), \
        builtins.int(storage_offset)
    if len(size) != len(stride) or offset < 0 or builtins.any(n < 0 for n in size + stride):
        raise RuntimeError(f"[as_strided] invalid size {size}, stride {stride} or offset {offset}")
    flat = a.reshape(-1)
    last = offset + builtins.sum((n - 1) * st for n, st in zip(size, stride)) if builtins.all(size) else offset - 1
    if last >= flat.size:  # (an empty view: its offset may be the storage's end, not past it)
        raise RuntimeError(f"[as_strided] size {size}, stride {stride} and offset {offset} need a storage of "
                           f"{last + 1} elements; {describe(input)} holds {flat.size}")
    out = np.lib.stride_tricks.as_strided(flat[offset:], size, tuple(st * a.itemsize for st in stride),
                                          writeable=flat.flags.writeable)
    return view(out, input._dt)


def view_(input, *shape):
    """A view with ``shape``, or with one dtype the bytes read as that dtype; RuntimeError when the strides do not
    allow a view."""
    if len(shape) == 1 and isinstance(shape[0], (Dtype, str)):
        return _view_dtype(input, as_dtype(shape[0]))
    shape = _resolve(_sizes(shape, "view"), input._a.size, "view", tuple(input.shape))
    try:
        return view(np.reshape(input._a, shape, copy=False), input._dt)
    except ValueError:  # a copy would be needed
        raise RuntimeError(f"[view] a tensor of shape {tuple(input.shape)} and strides {input.stride()} cannot be "
                           f"viewed as {shape}; use reshape() instead") from None


def transpose(input, dim0, dim1):
    """A view with dims ``dim0`` and ``dim1`` swapped."""
    need_tensor(input, "transpose")
    if input._a.ndim == 0:
        return view(input._a, input._dt)
    return view(np.swapaxes(input._a, _dim(input, dim0, "transpose"), _dim(input, dim1, "transpose")), input._dt)


swapaxes = transpose


def permute(input, dims):
    """A view with the dims reordered."""
    need_tensor(input, "permute")
    dims = _sizes(dims if isinstance(dims, (tuple, list)) else (dims,), "permute")
    if len(dims) != input.ndim:
        raise ValueError(f"[permute] expected {input.ndim} dims, got {dims}")
    wrapped = [_dim(input, d, "permute") for d in dims]
    if sorted(wrapped) != list(range(input.ndim)):
        raise ValueError(f"[permute] dims {dims} are not a permutation of the {input.ndim} dims")
    return view(np.transpose(input._a, wrapped), input._dt)


def squeeze(input, dim=None):
    """Dims of size 1 removed (only ``dim``, an int or tuple, when given)."""
    need_tensor(input, "squeeze")
    if input._a.ndim == 0:
        return view(input._a, input._dt)
    if dim is None:
        return view(np.squeeze(input._a), input._dt)
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    ds = tuple(d for d in (_dim(input, d, "squeeze") for d in dims) if input._a.shape[d] == 1)
    return view(np.squeeze(input._a, axis=ds), input._dt)


def unsqueeze(input, dim):
    """A view with a dim of size 1 inserted at ``dim``."""
    need_tensor(input, "unsqueeze")
    return view(np.expand_dims(input._a, _dim(input, dim, "unsqueeze", extra=1)), input._dt)


def broadcast_to(input, size):
    """A stride-0 view of ``input`` expanded to ``size`` (-1 keeps a dim)."""
    need_tensor(input, "broadcast_to")
    size = list(_sizes(size if isinstance(size, (tuple, list)) else (size,), "expand"))
    off = len(size) - input._a.ndim
    bad = ValueError(f"[expand] cannot expand shape {tuple(input.shape)} to {tuple(size)}")
    if off < 0:
        raise bad
    for i, s in enumerate(size):
        if s == -1 and i >= off:
            size[i] = input._a.shape[i - off]
        elif s < 0:
            raise bad
    try:
        return view(np.broadcast_to(input._a, tuple(size)), input._dt)
    except ValueError:
        raise bad from None


def expand(input, *sizes):
    """A stride-0 view expanded to ``sizes``."""
    return broadcast_to(input, _sizes(sizes, "expand"))


def flatten(input, start_dim=0, end_dim=-1):
    """Dims ``start_dim..end_dim`` merged into one."""
    need_tensor(input, "flatten")
    if input._a.ndim == 0:
        return view(input._a.reshape(1), input._dt)
    s, e = _dim(input, start_dim, "flatten"), _dim(input, end_dim, "flatten")
    if s > e:
        raise ValueError(f"[flatten] start_dim {start_dim} comes after end_dim {end_dim}")
    shape = input._a.shape
    return view(np.reshape(input._a, shape[:s] + (-1,) + shape[e + 1:]) if input._a.size else
                np.reshape(input._a, shape[:s] + (int(np.prod(shape[s:e + 1])),) + shape[e + 1:]), input._dt)


def unflatten(input, dim, sizes):
    """Dim ``dim`` split into ``sizes`` (one may be -1)."""
    need_tensor(input, "unflatten")
    d = _dim(input, dim, "unflatten")
    shape = input._a.shape
    try:
        inner = _resolve(_sizes(sizes, "unflatten"), shape[d], "unflatten", tuple(shape))
    except ValueError:
        raise ValueError(f"[unflatten] sizes {tuple(sizes)} do not fit dim {d} of shape {tuple(shape)}") from None
    return view(np.reshape(input._a, shape[:d] + inner + shape[d + 1:]), input._dt)


def narrow(input, dim, start, length):
    """A view of ``length`` elements of dim ``dim`` from ``start``."""
    need_tensor(input, "narrow")
    d = _dim(input, dim, "narrow")
    n = input._a.shape[d]
    start = builtins.int(start)
    if start < 0:
        start += n
    if not (0 <= start <= n and 0 <= length and start + length <= n):
        raise IndexError(f"[narrow] start {start} and length {length} are out of range for dim {d} of size {n}")
    idx = [slice(None)] * input._a.ndim
    idx[d] = slice(start, start + length)
    return view(input._a[tuple(idx)], input._dt)


def select(input, dim, index):
    """A view of position ``index`` of dim ``dim`` (that dim removed)."""
    need_tensor(input, "select")
    d = _dim(input, dim, "select")
    n = input._a.shape[d]
    i = builtins.int(index)
    if not -n <= i < n:
        raise IndexError(f"[select] index {i} is out of range for dim {d} of size {n}")
    idx = [slice(None)] * input._a.ndim
    idx[d] = i % n
    return view(input._a[tuple(idx) + (Ellipsis,)], input._dt)


def movedim(input, source, destination):
    """A view with dim ``source`` moved to ``destination``."""
    need_tensor(input, "movedim")
    return view(np.moveaxis(input._a, source, destination), input._dt)


def contiguous(input):
    """Self when contiguous, else a row-major copy."""
    need_tensor(input, "contiguous")
    if input._a.flags.c_contiguous:
        return input
    return view(np.ascontiguousarray(input._a), input._dt)


def clone(input):
    """A copy with its own memory."""
    need_tensor(input, "clone")
    return view(np.array(input._a, copy=True), input._dt)


def detach(input):
    """The same values without autograd tracking (shares memory)."""
    return input.detach()


def _joined(tensors, op):
    if isinstance(tensors, Tensor):
        raise TypeError(f"[{op}] expected a sequence of tensors, got a Tensor")
    if not len(tensors):
        raise ValueError(f"[{op}] expected a non-empty sequence of tensors")
    for t in tensors:
        need_tensor(t, op)
    dt = tensors[0]._dt
    for t in tensors[1:]:
        dt = promote_pair(dt, t._dt)
    return dt


def cat(tensors, dim=0):
    """The tensors joined along ``dim`` (dtypes promoted)."""
    tensors = list(tensors)
    dt = _joined(tensors, "cat")
    parts = [t for t in tensors if not (t._a.ndim == 1 and t._a.size == 0)] or tensors[:1]
    if len({t._a.ndim for t in parts}) > 1:
        raise ValueError(f"[cat] shapes {', '.join(str(tuple(t.shape)) for t in tensors)} have different numbers "
                         "of dims")
    d = _dim(parts[0], dim, "cat")
    try:
        return wrap(np.concatenate([t._a for t in parts], axis=d), dt)
    except ValueError:
        raise ValueError(f"[cat] shapes {', '.join(str(tuple(t.shape)) for t in tensors)} cannot be joined along "
                         f"dim {dim}") from None


concat = cat


def stack(tensors, dim=0):
    """The tensors stacked along a new dim ``dim``."""
    tensors = list(tensors)
    dt = _joined(tensors, "stack")
    d = _dim(tensors[0], dim, "stack", extra=1)
    try:
        return wrap(np.stack([t._a for t in tensors], axis=d), dt)
    except ValueError:
        raise ValueError(f"[stack] expected tensors of one shape, got "
                         f"{', '.join(str(tuple(t.shape)) for t in tensors)}") from None


def split(tensor, split_size_or_sections, dim=0):
    """Views of pieces of ``split_size`` (or the listed sizes) along ``dim``."""
    need_tensor(tensor, "split")
    d = _dim(tensor, dim, "split")
    n = tensor._a.shape[d]
    if isinstance(split_size_or_sections, (tuple, list)):
        sizes = [builtins.int(s) for s in split_size_or_sections]
        if sum(sizes) != n or builtins.any(s < 0 for s in sizes):
            raise ValueError(f"[split] sections {tuple(sizes)} do not add up to the size {n} of dim {d}")
    else:
        step = builtins.int(split_size_or_sections)
        if step <= 0:
            raise ValueError(f"[split] split_size must be positive, got {step}")
        sizes = [builtins.min(step, n - i) for i in range(0, n, step)] or [0]
    out, start = [], 0
    for s in sizes:
        out.append(narrow(tensor, d, start, s))
        start += s
    return tuple(out)


def chunk(input, chunks, dim=0):
    """``chunks`` views (the last may be smaller) along ``dim``."""
    need_tensor(input, "chunk")
    if chunks <= 0:
        raise ValueError(f"[chunk] chunks must be positive, got {chunks}")
    n = input._a.shape[_dim(input, dim, "chunk")]
    return split(input, builtins.max(1, -(-n // chunks)), dim)


def unbind(input, dim=0):
    """Views of each position of ``dim``."""
    need_tensor(input, "unbind")
    d = _dim(input, dim, "unbind")
    return tuple(select(input, d, i) for i in range(input._a.shape[d]))


def tril(input, diagonal=0):
    """Elements on and below the ``diagonal``-th diagonal (others zero)."""
    need_tensor(input, "tril")
    return view(np.tril(input._a, diagonal), input._dt)


def triu(input, diagonal=0):
    """Elements on and above the ``diagonal``-th diagonal (others zero)."""
    need_tensor(input, "triu")
    return view(np.triu(input._a, diagonal), input._dt)


def flip(input, dims):
    """A copy with the order of ``dims`` reversed."""
    need_tensor(input, "flip")
    dims = [_dim(input, d, "flip") for d in (dims if isinstance(dims, (tuple, list)) else (dims,))]
    if len(set(dims)) != len(dims):
        raise ValueError(f"[flip] dims {tuple(dims)} name a dim twice")
    return view(np.flip(input._a, dims).copy(), input._dt)


def roll(input, shifts, dims=None):
    """Elements shifted cyclically by ``shifts`` along ``dims`` (flattened when None)."""
    need_tensor(input, "roll")
    if dims is None:
        return view(np.roll(input._a.reshape(-1), shifts).reshape(input._a.shape), input._dt)
    many = isinstance(dims, (tuple, list))
    ds = [_dim(input, d, "roll") for d in (dims if many else (dims,))]
    if len(set(ds)) != len(ds):
        raise ValueError(f"[roll] dims {tuple(dims)} name a dim twice")
    if many != isinstance(shifts, (tuple, list)) or many and len(shifts) != len(ds):
        raise ValueError(f"[roll] shifts {shifts!r} and dims {dims!r} must have the same length")
    return view(np.roll(input._a, shifts, ds if many else ds[0]), input._dt)


def repeat(input, *sizes):
    """The tensor tiled ``sizes`` times (leading new dims allowed)."""
    sizes = _sizes(sizes, "repeat")
    if len(sizes) < input._a.ndim or builtins.any(s < 0 for s in sizes):
        raise ValueError(f"[repeat] repeats {sizes} do not fit a tensor of shape {tuple(input.shape)}")
    return view(np.tile(input._a, sizes), input._dt)


def _index_tensor(index, op):
    need_tensor(index, op)
    if index._dt.is_floating_point or index._dt is BOOL:
        raise TypeError(f"[{op}] index must be an integer tensor, got {describe(index)}")
    return index._a.astype(np.int64, copy=False)


def _check_range(idx, n, op):
    if idx.size and (idx.min() < -n or idx.max() >= n):
        bad = idx[(idx < -n) | (idx >= n)].flat[0]
        raise IndexError(f"[{op}] index {bad} is out of range for a dim of size {n}")


def gather(input, dim, index):
    """out[i][j] = input[index[i][j]][j] (for dim 0), and so on."""
    need_tensor(input, "gather")
    d = _dim(input, dim, "gather")
    idx = _index_tensor(index, "gather")
    _check_range(idx, input._a.shape[d], "gather")
    src = input._a
    if idx.ndim != src.ndim or builtins.any(i > n for k, (i, n) in enumerate(zip(idx.shape, src.shape)) if k != d):
        raise ValueError(f"[gather] index of shape {idx.shape} does not fit input of shape {src.shape}")
    sl = tuple(slice(0, s) for s in idx.shape)
    sl = tuple(slice(None) if k == d else s for k, s in enumerate(sl))
    return view(np.take_along_axis(src[sl], idx, axis=d), input._dt)


def _scatter(input, dim, index, src, add):
    op = "scatter_add" if add else "scatter"
    need_tensor(input, op)
    d = _dim(input, dim, op)
    idx = _index_tensor(index, op)
    src_shape = src._a.shape if isinstance(src, Tensor) else idx.shape
    if idx.ndim != input._a.ndim or builtins.any(
            i > s or (k != d and i > n) for k, (i, s, n) in enumerate(zip(idx.shape, src_shape, input._a.shape))):
        raise ValueError(f"[{op}] index of shape {idx.shape} does not fit input {input._a.shape} and src {src_shape}")
    _check_range(idx, input._a.shape[d], op)
    out = np.array(input._a, copy=True)
    if isinstance(src, Tensor):
        s = src._a[tuple(slice(0, n) for n in idx.shape)].astype(out.dtype)
    else:
        s = np.full(idx.shape, src, dtype=out.dtype)
    grids = list(np.meshgrid(*[np.arange(n) for n in idx.shape], indexing="ij"))
    grids[d] = idx % input._a.shape[d]
    if add:
        np.add.at(out, tuple(grids), s)
    else:
        out[tuple(grids)] = s
    return wrap(out, input._dt)


def scatter(input, dim, index, src):
    """A copy of ``input`` with ``src`` written at ``index`` along ``dim``."""
    return _scatter(input, dim, index, src, False)


def scatter_add(input, dim, index, src):
    """A copy of ``input`` with ``src`` added at ``index`` along ``dim``."""
    return _scatter(input, dim, index, src, True)


def index_select(input, dim, index):
    """The positions ``index`` (1-D) of dim ``dim``."""
    need_tensor(input, "index_select")
    d = _dim(input, dim, "index_select")
    idx = _index_tensor(index, "index_select")
    if idx.ndim > 1:
        raise ValueError(f"[index_select] index must be 1-D, got shape {idx.shape}")
    n = input._a.shape[d] if input._a.ndim else 1
    if idx.size and (idx.min() < -n or idx.max() >= n):
        bad = idx[(idx < -n) | (idx >= n)].flat[0]
        raise IndexError(f"[index_select] index {bad} is out of bounds for dim {d} with size {n}")
    return view(np.take(input._a, idx.reshape(-1), axis=d), input._dt)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Each element (each slice along ``dim``) repeated ``repeats`` times: an int, or one count each;
    flattened first without ``dim``; with only counts, each of their positions that many times."""
    need_tensor(input, "repeat_interleave")
    if repeats is None:
        input, repeats, dim = wrap(np.arange(input._a.size), INT64), input, 0
    a = input._a.reshape(-1) if dim is None or input._a.ndim == 0 else input._a
    d = norm_dim(0 if dim is None else dim, a.ndim, "repeat_interleave")
    counts = np.asarray(repeats._a if isinstance(repeats, Tensor) else repeats)
    if counts.dtype.kind not in "iu" or counts.ndim > 1:
        raise TypeError(f"[repeat_interleave] repeats must be an integer or a 0-d or 1-d integer tensor, "
                        f"got {counts.dtype} {counts.shape}")
    if counts.size != 1 and counts.size != a.shape[d]:
        raise ValueError(f"[repeat_interleave] repeats must hold one count for each of the {a.shape[d]} slices "
                         f"along dim {d}, got shape {counts.shape}")
    if np.any(counts < 0):
        raise ValueError(f"[repeat_interleave] repeats must be >= 0, got {counts.tolist()}")
    each = [builtins.int(c) for c in counts.reshape(-1)]
    if (each[0] * a.shape[d] if counts.size == 1 else builtins.sum(each)) > np.iinfo(np.int64).max:
        raise ValueError("[repeat_interleave] the repeats add up to more than an int64 can hold")
    out = np.repeat(a, counts.reshape(-1) if counts.size != 1 else int(counts.reshape(-1)[0]), axis=d)
    if output_size is not None and output_size != out.shape[d]:
        raise ValueError(f"[repeat_interleave] output_size {output_size} does not match the result's length "
                         f"{out.shape[d]} along the repeated dim")
    return view(out, input._dt)


def index_add(input, dim, index, source, *, alpha=1.0):
    """A copy of ``input`` with ``alpha * source`` added at the positions ``index`` of ``dim``."""
    need_tensor(input, "index_add")
    d = _dim(input, dim, "index_add")
    idx = _index_tensor(index, "index_add").reshape(-1)
    _check_range(idx, input._a.shape[d], "index_add")
    want = input._a.shape[:d] + (idx.size,) + input._a.shape[d + 1:]
    if source._a.shape != want:
        raise ValueError(f"[index_add] source of shape {source._a.shape} does not fit input {input._a.shape} "
                         f"and index of {idx.size}: expected {want}")
    out = np.array(input._a, copy=True)
    src = source._a if alpha == 1 else source._a * alpha
    np.add.at(np.moveaxis(out, d, 0), idx, np.moveaxis(src.astype(out.dtype), d if src.ndim else 0, 0))
    return wrap(out, input._dt)


def _index_put_front(input, indices, values, accumulate):
    """A copy of ``input`` with ``values`` written (added, with ``accumulate``) at the integer
    ``indices`` of its leading dims; without ``accumulate`` the last write to a position wins."""
    need_tensor(input, "index_put")
    if len(indices) > input._a.ndim:
        raise IndexError(f"[index_put] too many indices ({len(indices)}) for a tensor of {input._a.ndim} dims")
    idx = tuple(_index_tensor(i, "index_put") for i in indices)
    for k, i in enumerate(idx):
        _check_range(i, input._a.shape[k], "index_put")
    out = np.array(input._a, copy=True)
    v = np.asarray(values._a).astype(out.dtype)
    if accumulate:
        np.add.at(out, idx, v)
    else:
        out[idx] = v
    return wrap(out, input._dt)


def one_hot(tensor, num_classes=-1):
    """int64 one-hot rows of the integer ``tensor``."""
    idx = _index_tensor(tensor, "one_hot")
    if idx.size and idx.min() < 0:
        raise IndexError(f"[one_hot] class {idx.min()} is negative")
    n = builtins.int(idx.max()) + 1 if num_classes == -1 and idx.size else num_classes
    if idx.size and idx.max() >= n:
        raise IndexError(f"[one_hot] class {idx.max()} is out of range for {n} classes")
    return wrap((idx[..., None] == np.arange(n)).astype(np.int64), INT64)


def nonzero(input):
    """(n, ndim) int64 positions of the non-zero elements."""
    need_tensor(input, "nonzero")
    return wrap(np.argwhere(input._a), INT64)


def masked_select(input, mask):
    """1-D elements of ``input`` where ``mask`` (broadcast) is True."""
    need_tensor(input, "masked_select")
    shape = np.broadcast_shapes(input._a.shape, mask._a.shape)
    return view(np.broadcast_to(input._a, shape)[np.broadcast_to(mask._a.astype(bool), shape)], input._dt)


def _argsort(a, d, descending, stable):
    if a.dtype == np.bool_:
        a = a.astype(np.uint8)
    if descending:
        if a.dtype.kind == "f":
            key = np.where(np.isnan(a), -np.inf, -a)
            order = np.argsort(key, axis=d, kind="stable")
            nan_first = np.take_along_axis(np.isnan(a), order, d)
            # NaN counts as the largest value: it comes first in a descending sort
            order = np.take_along_axis(order, np.argsort(~nan_first, axis=d, kind="stable"), d)
            return order
        return np.argsort(-a.astype(np.int64) if a.dtype.kind == "u" else -a, axis=d, kind="stable")
    return np.argsort(a, axis=d, kind="stable")


def argsort(input, dim=-1, descending=False, stable=False):
    """int64 positions that sort ``input`` along ``dim``."""
    need_tensor(input, "argsort")
    if input._a.ndim == 0:
        return wrap(np.zeros((), np.int64), INT64)
    return wrap(_argsort(input._a, _dim(input, dim, "argsort"), descending, stable), INT64)


def _sort(input, dim, descending, stable):
    need_tensor(input, "sort")
    if input._a.ndim == 0:
        return view(input._a.copy(), input._dt), wrap(np.zeros((), np.int64), INT64)
    d = _dim(input, dim, "sort")
    order = _argsort(input._a, d, descending, stable)
    return view(np.take_along_axis(input._a, order, d), input._dt), wrap(order, INT64)


def _kthvalue(input, k, dim, keepdim, nan_wins=False):
    """The ``k``-th of a stable sort along ``dim`` (NaN largest) and its index; with ``nan_wins`` a slice
    holding a NaN gives its first NaN (median)."""
    need_tensor(input, "kthvalue")
    a = input._a
    d = _dim(input, dim, "kthvalue")
    n = a.shape[d] if a.ndim else 1
    if not 1 <= k <= n:
        raise IndexError(f"[kthvalue] k={k} is out of range for a dim of size {n}")
    if a.ndim == 0:
        return view(a.copy(), input._dt), wrap(np.zeros((), np.int64), INT64)
    idx = np.take(_argsort(a, d, False, True), [k - 1], axis=d)
    if nan_wins and a.size and input._dt.is_floating_point:
        nan = np.isnan(a)
        idx = np.where(nan.any(axis=d, keepdims=True), nan.argmax(axis=d, keepdims=True), idx)
    vals = np.take_along_axis(a, idx, d)
    if not keepdim:
        vals, idx = vals.squeeze(d), idx.squeeze(d)
    return view(vals.copy(), input._dt), wrap(idx, INT64)


def _topk(input, k, dim, largest, sorted):  # noqa: A002
    need_tensor(input, "topk")
    d = _dim(input, dim, "topk")
    n = input._a.shape[d] if input._a.ndim else 1
    if not 0 <= k <= n:
        raise IndexError(f"[topk] k={k} is out of range for a dim of size {n}")
    if input._a.ndim == 0:
        return _sort(input, 0, largest, True)
    order = _argsort(input._a, d, largest, True)
    order = np.take(order, np.arange(k), axis=d)
    return view(np.take_along_axis(input._a, order, d), input._dt), wrap(order, INT64)


__all__ = ["reshape", "transpose", "swapaxes", "permute", "squeeze", "unsqueeze", "broadcast_to", "flatten",
           "unflatten", "narrow", "select", "movedim", "contiguous", "clone", "detach", "cat", "concat", "stack",
           "split", "chunk", "unbind", "tril", "triu", "flip", "roll", "gather", "scatter", "scatter_add",
           "index_select", "index_add", "repeat_interleave", "_index_put_front", "one_hot", "nonzero", "masked_select",
           "argsort", "_sort", "_kthvalue", "_topk", "_as_strided"]
