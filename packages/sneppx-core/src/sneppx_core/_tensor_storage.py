"""Storage-level Tensor methods, as in PyTorch: ``resize_``, ``resize_as_``, ``set_``, ``is_set_to``,
``untyped_storage``, ``storage``, ``storage_type``, ``is_shared``, ``share_memory_`` and ``as_subclass``.

SneppX reaches a storage only through the tensors over it. Its base address is the tensor's ``data_ptr()`` less
``storage_offset()`` elements, its size ``_C._storage_nbytes``. Storage objects hold a flat view of the whole
storage, so they keep the memory alive, as PyTorch's do.

Where PyTorch grows a storage in place (``resize_`` past its end), SneppX gives the tensor a new storage (the old
bytes copied, the new ones zero): other tensors over the old storage stop aliasing it. Shrinking, or growing within
the storage, keeps the storage, so views still alias. The version counter belongs to the storage in SneppX.
"""

from __future__ import annotations

import builtins
import ctypes
import math
import numbers
import warnings

from . import _legacy_types, _shared
from ._backend import _C
from ._C_face import Tensor, uint8
from ._factories import zeros
from ._tensor_strided import _ints, _need_c

_INT64_MAX = 2 ** 63 - 1
_LEGACY_NAMES = {t.dtype.name: t.__name__[:-len("Tensor")] for t in _legacy_types.TYPES}  # "int8": "Char", ...


def _tensor(t, op, what="self"):
    if not isinstance(t, Tensor):
        raise TypeError(f"[{op}] {what} must be a Tensor, got {type(t).__name__}")
    return t


def _storage_numel(t):
    """Elements of ``t``'s dtype that ``t``'s storage holds."""
    return _C._storage_nbytes(t) // t.element_size()


def _whole(t, op):
    """A flat, detached view of ``t``'s whole storage in ``t``'s dtype."""
    _need_c(op)
    flat = _tensor(t, op).detach()
    return _C._as_strided(flat, [_storage_numel(flat)], [1], 0)


def _contiguous_strides(size):
    out, acc = [0] * len(size), 1
    for d in reversed(range(len(size))):
        out[d], acc = acc, acc * builtins.max(size[d], 1)
    return out


def _geometry(op, size, stride, offset):
    """Checks a (size, stride, offset) triple as PyTorch does (RuntimeError); returns the strides (contiguous when
    None) as a list."""
    if 0 not in size and math.prod(size) > _INT64_MAX or builtins.any(n < 0 for n in size):
        raise RuntimeError(f"[{op}] invalid size {list(size)}: sizes must be >= 0 and their product fit in int64")
    stride = _contiguous_strides(size) if stride is None else list(_ints(stride, op, "stride"))
    if len(stride) != len(size):
        raise RuntimeError(f"[{op}] unequal size length ({len(size)}) and stride length ({len(stride)})")
    if builtins.any(s < 0 for s in stride):
        raise RuntimeError(f"[{op}] negative strides are not supported, got {stride}")
    if offset < 0:
        raise RuntimeError(f"[{op}] invalid storage offset {offset}")
    return stride


def _bump_version(t, op):
    """Counts a change of ``t``'s geometry as an in-place write (autograd's saved tensors see it), as PyTorch does."""
    try:
        _C._as_strided(t, [0], [1], 0).zero_()  # writes nothing; bumps the storage's version
    except RuntimeError as e:
        raise RuntimeError(f"[{op}] cannot change the tensor's size: {e}") from None


def resize_(self, *sizes, memory_format=None):
    """Resizes ``self`` in place to ``sizes`` (contiguous, from its storage offset) and returns it. The first
    elements of the storage are kept; elements past the storage's end are new and zero (uninitialised in PyTorch).
    A size equal to the current one changes nothing (not even the strides)."""
    op = "resize_"
    _tensor(self, op)
    if not sizes:
        raise TypeError(f"[{op}] missing the size argument")
    if len(sizes) == 1 and not isinstance(sizes[0], numbers.Integral):
        sizes = sizes[0]
    size = _ints(sizes, op, "size")
    if memory_format is not None:
        raise NotImplementedError(f"[{op}] SneppX tensors have only the contiguous memory format; "
                                  f"memory_format must be None, got {memory_format!r}")
    _need_c(op)
    if self.requires_grad:
        raise RuntimeError(f"[{op}] cannot resize variables that require grad")
    stride = _geometry(op, size, None, 0)
    if size == tuple(self.shape):
        return self
    offset, avail = self.storage_offset(), _storage_numel(self)
    _bump_version(self, op)
    need = offset + math.prod(size)
    if 0 not in size and need > avail:  # a new storage: the old bytes, then zeros
        grown = zeros(need, dtype=self.dtype, device=self.device)
        if avail:
            _C._as_strided(grown, [avail], [1], 0).copy_(_C._as_strided(self, [avail], [1], 0))
        self._set_data(grown)
    return _C._as_strided_(self, list(size), stride, offset)


def resize_as_(self, the_template, *, memory_format=None):
    """``self.resize_(the_template.shape)``: resizes ``self`` in place to the shape of ``the_template``."""
    _tensor(the_template, "resize_as_", "the_template")
    return resize_(_tensor(self, "resize_as_"), tuple(the_template.shape), memory_format=memory_format)


def resize(self, *sizes):
    """Deprecated out-of-place resize, which can only change the shape: ``self`` reshaped to ``sizes`` (the same
    number of elements; a view when the layout allows), with PyTorch's deprecation warning."""
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    return _reshape_same_numel(_tensor(self, "resize"), sizes, "resize")


def resize_as(self, tensor):
    """Deprecated out-of-place ``resize_as``: ``self`` reshaped to ``tensor``'s shape (see ``resize``)."""
    warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=2)
    _tensor(tensor, "resize_as", "tensor")
    return _reshape_same_numel(_tensor(self, "resize_as"), tuple(tensor.shape), "resize_as")


def _reshape_same_numel(self, sizes, op):
    if len(sizes) == 1 and not isinstance(sizes[0], numbers.Integral):
        sizes = sizes[0]
    size = _ints(sizes, op, "size")
    if math.prod(size) != self.numel():
        raise RuntimeError(f"[{op}] requested resize to {'x'.join(map(str, size)) or '()'} ({math.prod(size)} "
                           f"elements in total), but the given tensor has a size of {tuple(self.shape)} "
                           f"({self.numel()} elements); the out-of-place form can only change the shape, keeping "
                           f"the number of elements")
    return self.reshape(size)


def _set_source(self, source, op):
    """The tensor whose storage ``set_`` points ``self`` at (detached); checks dtypes and autograd."""
    if isinstance(source, (UntypedStorage, TypedStorage)):
        flat = source._flat
        if flat.dtype != self.dtype:
            raise NotImplementedError(f"[{op}] SneppX cannot reinterpret a storage of {flat.dtype.name} elements as "
                                      f"{self.dtype.name}; pass a storage of a {self.dtype.name} tensor")
        source_grad = False
    elif isinstance(source, Tensor):
        if source.dtype != self.dtype:
            raise RuntimeError(f"[{op}] Could not set tensor of type {source.dtype.name} to a tensor of type "
                               f"{self.dtype.name}")
        flat, source_grad = source, source.requires_grad
    else:
        raise TypeError(f"[{op}] source must be a Tensor or a storage, got {type(source).__name__}")
    if _C.is_grad_enabled():
        if self.requires_grad and self.is_leaf:
            raise RuntimeError(f"[{op}] a leaf Variable that requires grad is being used in an in-place operation.")
        if self.requires_grad or source_grad:
            raise RuntimeError(f"[{op}] is not differentiable (PyTorch's backward would fail too); call it under "
                               f"no_grad() or on detached tensors")
    return flat.detach()


def set_(self, source=None, storage_offset=0, size=None, stride=None):
    """Points ``self`` at other memory and returns it: ``set_()`` makes it empty, ``set_(tensor)`` shares the
    tensor's storage, offset, shape and strides, ``set_(tensor_or_storage, storage_offset, size, stride=None)``
    views that storage with the given geometry (contiguous strides when None), which must lie inside it."""
    op = "set_"
    _tensor(self, op)
    _need_c(op)
    if source is None:
        if size is not None or stride is not None or storage_offset != 0:
            raise TypeError(f"[{op}] size, stride and storage_offset need a source")
        self._set_data(_set_source(self, zeros(0, dtype=self.dtype, device=self.device), op))
        return self
    flat = _set_source(self, source, op)
    if size is None:
        if stride is not None or storage_offset != 0:
            raise TypeError(f"[{op}] pass size with storage_offset and stride: set_(source, storage_offset, size, "
                            f"stride=None)")
        if isinstance(source, Tensor):
            self._set_data(flat)
            return self
        size = (_storage_numel(flat),)
    size = _ints(size, op, "size")
    if isinstance(storage_offset, builtins.bool) or not isinstance(storage_offset, builtins.int):
        raise TypeError(f"[{op}] storage_offset must be an int, got {type(storage_offset).__name__}")
    stride = _geometry(op, size, stride, storage_offset)
    try:
        view = _C._as_strided(flat, list(size), stride, storage_offset)
    except RuntimeError as e:  # past the storage's end: PyTorch grows the storage in place, SneppX cannot
        raise RuntimeError(str(e).replace("[as_strided]", f"[{op}]", 1) + " (SneppX cannot grow a storage in "
                           "place)") from None
    self._set_data(view)
    return self


def _storage_key(t):
    """What identifies ``t``'s storage: its device and base address."""
    return str(t.device), t.data_ptr() - t.storage_offset() * t.element_size()


def is_set_to(self, tensor):
    """True if both tensors view the same storage with the same offset, shape and strides."""
    _tensor(self, "is_set_to")
    _tensor(tensor, "is_set_to", "tensor")
    return (_storage_key(self) == _storage_key(tensor) and self.storage_offset() == tensor.storage_offset()
            and self.dtype == tensor.dtype and tuple(self.shape) == tuple(tensor.shape)
            and tuple(self.stride()) == tuple(tensor.stride()))


def _raw_bytes(flat):
    """The bytes of a flat (stride-1) tensor, copied to the host."""
    host = flat if flat.device.type == "cpu" else flat.cpu()
    n = host.numel() * host.element_size()
    return ctypes.string_at(host.data_ptr(), n) if n else b""


class UntypedStorage:
    """The bytes under a tensor (``Tensor.untyped_storage()``): base address, size and contents. Two storages
    compare equal when they are the same memory (same device, base address and size)."""

    def __init__(self, size=0, *, device=None):
        """A new storage of ``size`` bytes (zeros; uninitialised in PyTorch)."""
        self._flat = zeros(builtins.int(size), dtype=uint8, device=device)

    @classmethod
    def _of(cls, flat):
        out = cls.__new__(cls)
        out._flat = flat
        return out

    @property
    def device(self):
        """The device that holds the storage."""
        return self._flat.device

    @property
    def dtype(self):
        """``uint8``: an untyped storage is bytes."""
        return uint8

    def data_ptr(self):
        """The address of the storage's first byte."""
        return self._flat.data_ptr()

    def nbytes(self):
        """The storage's size in bytes."""
        return self._flat.numel() * self._flat.element_size()

    def size(self):
        """The storage's size in bytes (as ``nbytes()``)."""
        return self.nbytes()

    def __len__(self):
        return self.nbytes()

    def element_size(self):
        """1: the elements of an untyped storage are bytes."""
        return 1

    def tolist(self):
        """The storage's bytes as a list of ints."""
        return list(_raw_bytes(self._flat))

    def is_shared(self):
        """True when the storage is in shared memory (``Tensor.share_memory_``)."""
        return _shared.is_shared(self._flat)

    def share_memory_(self):
        """Not supported on a storage object: call ``share_memory_()`` on the tensor (its storage moves)."""
        raise NotImplementedError("[share_memory_] on a storage: call share_memory_() on the tensor; SneppX moves "
                                  "a tensor's storage, not a storage object")

    def __eq__(self, other):
        if not isinstance(other, UntypedStorage):
            return NotImplemented
        return (_storage_key(self._flat), self.nbytes()) == (_storage_key(other._flat), other.nbytes())

    def __hash__(self):
        return hash((_storage_key(self._flat), self.nbytes()))

    def __repr__(self):
        return f"[sneppx.UntypedStorage(device={self.device}) of size {self.nbytes()}]"


def _warn_typed():
    warnings.warn("TypedStorage is deprecated, as in PyTorch; use tensor.untyped_storage() instead of "
                  "tensor.storage()", UserWarning, stacklevel=4)


class TypedStorage:
    """A tensor's storage seen as elements of its dtype (``Tensor.storage()``; deprecated in PyTorch)."""

    dtype = None  # set per instance (and on the legacy classes that ``storage_type()`` returns)

    def __init__(self, *args, **kwargs):
        """Not constructible: SneppX makes typed storages only through ``Tensor.storage()``."""
        raise TypeError("[TypedStorage] SneppX makes typed storages only through Tensor.storage()")

    @classmethod
    def _of(cls, flat):
        out = object.__new__(cls)
        out._flat, out.dtype = flat, flat.dtype
        return out

    @property
    def device(self):
        """The device that holds the storage."""
        return self._flat.device

    def size(self):
        """The number of elements of the storage's dtype it holds."""
        return self._flat.numel()

    def __len__(self):
        return self.size()

    def element_size(self):
        """The size of one element in bytes."""
        return self._flat.element_size()

    def nbytes(self):
        """The storage's size in bytes."""
        return self.size() * self.element_size()

    def data_ptr(self):
        """The address of the storage's first element."""
        return self._flat.data_ptr()

    def tolist(self):
        """The storage's elements as a list of Python numbers."""
        return self._flat.tolist()

    def untyped(self):
        """The same memory as an ``UntypedStorage``."""
        return UntypedStorage._of(self._flat)

    def is_shared(self):
        """True when the storage is in shared memory (``Tensor.share_memory_``)."""
        return _shared.is_shared(self._flat)

    def share_memory_(self):
        """Not supported on a storage object: call ``share_memory_()`` on the tensor (its storage moves)."""
        raise NotImplementedError("[share_memory_] on a storage: call share_memory_() on the tensor; SneppX moves "
                                  "a tensor's storage, not a storage object")

    def __repr__(self):
        return f"[sneppx.TypedStorage(dtype={self.dtype!r}, device={self.device}) of size {self.size()}]"


_LEGACY = {}


def _legacy_class(dtype):
    """PyTorch's legacy storage class for ``dtype`` (``FloatStorage``, ...): a TypedStorage subclass naming it."""
    name = _LEGACY_NAMES[dtype.name] + "Storage"
    if name not in _LEGACY:
        _LEGACY[name] = type(name, (TypedStorage,), {"dtype": dtype, "__doc__": f"Storage of {dtype!r} elements.",
                                                     "__module__": __name__})
    return _LEGACY[name]


def untyped_storage(self):
    """The storage under ``self``, as bytes (an ``UntypedStorage`` that keeps the memory alive)."""
    return UntypedStorage._of(_whole(self, "untyped_storage"))


def storage(self):
    """The storage under ``self`` as elements of its dtype (a ``TypedStorage``; deprecated, as in PyTorch)."""
    _warn_typed()
    return TypedStorage._of(_whole(self, "storage"))


def storage_type(self):
    """The legacy storage class of ``self``'s dtype (``FloatStorage`` for float32, ...); deprecated, as in PyTorch."""
    _warn_typed()
    return _legacy_class(_tensor(self, "storage_type").dtype)


def is_shared(self):
    """True when the tensor's storage is in shared memory (``share_memory_``, or received from another process
    through ``multiprocessing``); False for CUDA tensors (PyTorch says True for every CUDA tensor)."""
    _tensor(self, "is_shared")
    return _shared.is_shared(self)


def as_subclass(self, cls):
    """An instance of ``cls`` (a subclass of Tensor) over ``self``'s memory: same storage, shape, strides and dtype.
    ``cls.__init__`` is not called. A tensor that requires grad can be wrapped only under ``no_grad()``: SneppX
    cannot attach a new Python object to the autograd graph, and the result does not require grad (as SneppX's
    views made under no_grad() do not)."""
    op = "as_subclass"
    _tensor(self, op)
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(f"[{op}] Creating a Tensor subclass from a class that does not inherit from Tensor is not "
                        f"possible. Make sure your class inherits from Tensor.")
    if self.requires_grad and _C.is_grad_enabled():
        raise RuntimeError(f"[{op}] SneppX cannot attach the new {cls.__name__} object to this tensor's autograd "
                           f"graph; wrap self.detach() or call it under no_grad()")
    out = Tensor.__new__(cls)
    Tensor.__init__(out, [], dtype=self.dtype)
    out._set_data(self)
    return out


METHODS = {"resize_": resize_, "resize_as_": resize_as_, "resize": resize, "resize_as": resize_as, "set_": set_,
           "is_set_to": is_set_to, "untyped_storage": untyped_storage, "storage": storage, "storage_type": storage_type,
           "is_shared": is_shared, "share_memory_": _shared.share_memory_, "as_subclass": as_subclass}
FUNCTIONS = {"resize_as_": resize_as_}
