"""Strided views: ``as_strided``, ``as_strided_``, ``as_strided_scatter``, ``empty_strided`` and
``Tensor.new_empty_strided``, as in PyTorch.

``as_strided(x, size, stride, offset)`` reads x's storage with any sizes, strides (>= 0) and offset, checked to
stay inside the storage. Without autograd it is a view (writes through it reach x). Where autograd records, the
result is the same values gathered from x's elements by their storage positions (``take``): a copy, whose
gradient adds up over elements the view repeats (overlapping windows), as PyTorch's does; every element of
the result must then be an element of x.
"""

from __future__ import annotations

import builtins

import numpy as np

from ._backend import NAME, _C
from ._C_face import Tensor
from ._factories import _default_device, _float_dtype, empty, tensor
from ._tensor_shape import index_put, take


def _ints(v, op, what):
    if isinstance(v, builtins.int):
        v = (v,)
    try:
        out = tuple(v)
    except TypeError:
        raise TypeError(f"[{op}] {what} must be a sequence of ints, got {type(v).__name__}") from None
    for s in out:
        if isinstance(s, builtins.bool) or not isinstance(s, (builtins.int, np.integer)):
            raise TypeError(f"[{op}] {what} must be a sequence of ints, got {v!r}")
    return tuple(builtins.int(s) for s in out)


def _need_c(op):
    if NAME != "c":
        raise NotImplementedError(f"[{op}] strided views need the C backend (the NumPy backend has none)")


def _positions(size, stride, offset):
    """Storage positions of the elements of a (size, stride, offset) view, in row-major order (int64)."""
    pos = np.full(size, offset, dtype=np.int64)
    for d, (n, st) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[d] = n
        pos = pos + (np.arange(n, dtype=np.int64) * st).reshape(shape)
    return pos.reshape(-1)


def _element_index(input, pos, op):
    """The row-major indices of ``input``'s elements at storage positions ``pos`` (each must be one)."""
    mine = _positions(tuple(input.shape), tuple(input.stride()), input.storage_offset())
    order = np.argsort(mine, kind="stable")
    ranked = mine[order]
    if ranked.size > 1 and np.any(ranked[1:] == ranked[:-1]):
        raise NotImplementedError(f"[{op}] with autograd, the input's elements must not overlap in memory "
                                  f"(got strides {tuple(input.stride())} for shape {tuple(input.shape)})")
    at = np.searchsorted(ranked, pos)
    ok = (at < ranked.size) & (ranked[np.minimum(at, ranked.size - 1)] == pos) if ranked.size else pos < 0
    if pos.size and not np.all(ok):
        raise NotImplementedError(f"[{op}] with autograd, every element of the view must be an element of the input "
                                  f"{tuple(input.shape)}; storage position {int(pos[~ok][0])} is not")
    return order[at] if pos.size else pos


def as_strided(input, size, stride, storage_offset=None):
    """A view of ``input``'s storage with the given ``size``, ``stride`` and ``storage_offset`` (``input``'s
    own offset when None); a gathered copy where autograd records (see the module's note)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"[as_strided] expected a Tensor, got {type(input).__name__}")
    _need_c("as_strided")
    size, stride = _ints(size, "as_strided", "size"), _ints(stride, "as_strided", "stride")
    offset = input.storage_offset() if storage_offset is None else builtins.int(storage_offset)
    view = _C._as_strided(input, list(size), list(stride), offset)  # checks the geometry
    if not (_C.is_grad_enabled() and input.requires_grad):
        return view
    idx = _element_index(input, _positions(size, stride, offset), "as_strided")
    return take(input, tensor(idx, device=input.device)).reshape(size)


def as_strided_(input, size, stride, storage_offset=None):
    """Gives ``input`` itself the geometry (size, stride, offset) over its storage; returns ``input``."""
    if not isinstance(input, Tensor):
        raise TypeError(f"[as_strided_] expected a Tensor, got {type(input).__name__}")
    _need_c("as_strided_")
    if input.requires_grad and _C.is_grad_enabled():
        raise RuntimeError("[as_strided_] cannot change the geometry of a tensor that requires grad in place; "
                           "use as_strided, or wrap the call in no_grad()")
    size, stride = _ints(size, "as_strided_", "size"), _ints(stride, "as_strided_", "stride")
    offset = input.storage_offset() if storage_offset is None else builtins.int(storage_offset)
    return _C._as_strided_(input, list(size), list(stride), offset)


def _dense_strides(t):
    """The strides a copy of ``t`` keeps (PyTorch's preserve_format): ``t``'s own when its elements are dense
    and do not overlap, else the row-major ones."""
    shape, st = tuple(t.shape), tuple(t.stride())
    order = sorted(range(len(shape)), key=lambda d: (st[d], -d))
    expect, ok = 1, True
    for d in order:
        if shape[d] != 1 and st[d] != expect:
            ok = False
            break
        expect *= shape[d]
    if ok:
        return st
    out, acc = [0] * len(shape), 1
    for d in reversed(range(len(shape))):
        out[d], acc = acc, acc * builtins.max(shape[d], 1)
    return tuple(out)


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """A copy of ``input`` with ``src`` written into the elements that ``as_strided(copy, size, stride,
    storage_offset)`` selects, the copy laid out as PyTorch's ``clone`` lays it out (offset 0); differentiable
    in both tensors."""
    for name, t in (("input", input), ("src", src)):
        if not isinstance(t, Tensor):
            raise TypeError(f"[as_strided_scatter] expected {name} to be a Tensor, got {type(t).__name__}")
    _need_c("as_strided_scatter")
    size, stride = _ints(size, "as_strided_scatter", "size"), _ints(stride, "as_strided_scatter", "stride")
    offset = 0 if storage_offset is None else builtins.int(storage_offset)
    if tuple(src.shape) != size:
        raise ValueError(f"[as_strided_scatter] src has shape {tuple(src.shape)}; the view has size {size}")
    n = input.numel()
    _C._as_strided(empty(builtins.max(n, 1), dtype=input.dtype), list(size), list(stride), offset)  # bounds
    shape = tuple(input.shape)
    own = _positions(shape, _dense_strides(input), 0)
    inv = np.empty(builtins.max(n, 1), dtype=np.int64)
    inv[own] = np.arange(n, dtype=np.int64)
    idx = inv[_positions(size, stride, offset)]
    flat = input.reshape(-1)
    values = src.to(input.dtype).reshape(-1)
    out = index_put(flat, (tensor(idx, device=input.device),), values)
    return out.reshape(shape)


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    """An uninitialised tensor with the given size and strides (over a storage just large enough)."""
    size, stride = _ints(size, "empty_strided", "size"), _ints(stride, "empty_strided", "stride")
    if len(size) != len(stride):
        raise ValueError(f"[empty_strided] mismatch in length of strides and shape: size {size}, stride {stride}")
    need = 0 if 0 in size else 1 + builtins.sum((n - 1) * s for n, s in zip(size, stride))
    base = empty(need, dtype=_float_dtype(dtype), device=_default_device(device))
    _need_c("empty_strided")
    out = _C._as_strided(base, list(size), list(stride), 0)
    return out.requires_grad_(True) if requires_grad else out


def new_empty_strided(self, size, stride, dtype=None, device=None, requires_grad=False, layout=None,
                      pin_memory=False):
    """``empty_strided`` with ``self``'s dtype and device unless given."""
    dt = self.dtype if dtype is None else dtype
    dev = self.device if device is None else device
    return empty_strided(size, stride, dtype=dt, device=dev, requires_grad=requires_grad)


METHODS = {"as_strided": as_strided, "as_strided_": as_strided_, "as_strided_scatter": as_strided_scatter,
           "new_empty_strided": new_empty_strided}
FUNCTIONS = {"as_strided": as_strided, "as_strided_": as_strided_, "as_strided_scatter": as_strided_scatter,
             "empty_strided": empty_strided}
