"""The NumPy backend's Tensor: an ndarray (views share memory, as in the C backend) and a Dtype.

The op methods (``x.add``, ``x.sum``, ...) are attached by the package from the op functions, so each
op is written once; this module holds construction, properties, conversion, indexing and the
in-place writes.
"""

from __future__ import annotations

import builtins

import numpy as np

from ._core import (
    BFLOAT16, BOOL, CPU, FLOAT32, INT64, STORAGE, _WIDEN, as_dtype, check_device, from_numpy_dtype, needs_tape,
    round_bf16, store,
)


def wrap(a, dt):
    """A Tensor holding the computed values ``a`` converted to ``dt`` (bfloat16 rounded)."""
    a = np.asarray(a)
    if a.dtype != STORAGE[dt] or dt is BFLOAT16:
        a = store(a, dt)
    return view(a, dt)


def view(a, dt):
    """A Tensor around ndarray ``a``, which already holds ``dt``'s storage (views share memory)."""
    t = Tensor.__new__(Tensor)
    t._a, t._dt, t._rg, t._grad, t._ver = a, dt, False, None, 0
    return t


def need_tensor(x, op):
    """TypeError naming ``op`` unless ``x`` is a Tensor."""
    if not isinstance(x, Tensor):
        raise TypeError(f"[{op}] expected a Tensor, got {type(x).__name__}")


def arr(x, ct=None):
    """The ndarray of a Tensor or number ``x`` (as NumPy type ``ct`` when given)."""
    a = x._a if isinstance(x, Tensor) else np.asarray(x)
    return a if ct is None else a.astype(ct, copy=False)


def _infer(data):
    """(ndarray, Dtype) for Python data: floats give float32, ints int64, bools bool."""
    if isinstance(data, np.generic):
        return _from_array(np.asarray(data))
    if isinstance(data, (str, bytes, dict, set)):
        raise TypeError(f"[tensor] cannot build a tensor from {type(data).__name__} {data!r}")
    try:
        a = np.array(data)
    except ValueError as e:
        raise TypeError(f"[tensor] cannot build a tensor from ragged or mixed data: {e}") from None
    except OverflowError:
        raise ValueError(f"[tensor] a value does not fit in int64: {data!r}"[:200]) from None
    if a.dtype == object and a.size and builtins.all(isinstance(v, builtins.int) for v in a.reshape(-1)):
        raise ValueError(f"[tensor] a value does not fit in int64: {data!r}"[:200])
    if a.dtype.kind == "u" and a.dtype.itemsize == 8 and a.size and a.max() >= 2**63:
        raise ValueError(f"[tensor] a value does not fit in int64: {data!r}"[:200])
    if a.dtype.kind == "f":
        return a, FLOAT32
    if a.dtype.kind in "iu":
        return a.astype(np.int64), INT64
    if a.dtype.kind == "b":
        return a, BOOL
    raise TypeError(f"[tensor] cannot build a tensor from {type(data).__name__} {data!r}"[:200])


def _from_array(a):
    """(ndarray, Dtype) of a NumPy array; other integer widths become int64."""
    if a.dtype.kind in _WIDEN and a.dtype not in (np.dtype(np.uint8), np.dtype(np.int8), np.dtype(np.int16),
                                                   np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.bool_)):
        a = a.astype(_WIDEN[a.dtype.kind])
    return a, from_numpy_dtype(a.dtype)


def _index(obj):
    """An index for ndarray indexing from a Tensor index (ints, slices, None, Ellipsis, lists, tensors);
    negative slice steps are refused, as in the C backend."""
    if isinstance(obj, tuple):
        parts = tuple(_index_part(p) for p in obj)
    else:
        parts = (_index_part(obj),)
    if not any(p is Ellipsis for p in parts):
        parts = parts + (Ellipsis,)  # integer indexing then gives 0-d views, not NumPy scalars
    return parts


def _index_part(p):
    if isinstance(p, Tensor):
        if p._dt.is_floating_point:
            raise IndexError(f"[index] tensors used as indices must be integer or bool, got {p._dt.name} "
                             f"{tuple(p.shape)}")
        return p._a
    if isinstance(p, (builtins.bool, np.bool_)):
        return p
    if isinstance(p, slice):
        if p.step is not None and builtins.int(p.step) <= 0:
            raise ValueError(f"[index] slice step must be positive, got step {builtins.int(p.step)}")
        return p
    if isinstance(p, (builtins.int, np.integer)):
        if not -2**63 <= p < 2**63:
            raise IndexError(f"[index] index {p} is out of bounds")
        return p
    if p is None or p is Ellipsis:
        return p
    if isinstance(p, (list, np.ndarray)):
        a = np.asarray([q.item() if isinstance(q, Tensor) else q for q in p] if isinstance(p, list) else p)
        if a.dtype.kind not in "iub" and a.size:
            raise IndexError(f"[index] index lists must hold integers or bools, got {a.dtype}")
        return a.astype(np.int64) if a.dtype.kind != "b" else a
    if hasattr(p, "__index__"):
        return p.__index__()
    raise IndexError(f"[index] unsupported index type {type(p).__name__}")


class Tensor:
    """An n-dimensional array with a dtype, computed with NumPy (the inference backend of sneppx-core).

    ``Tensor(data, dtype=None, device=None, requires_grad=False)`` copies ``data`` (nested lists,
    numbers, NumPy arrays or tensors).
    """

    def __init__(self, data=None, dtype=None, device=None, requires_grad=False):
        check_device(device, "tensor")
        if data is None:
            a, dt = np.zeros(0, np.float32), FLOAT32
        elif isinstance(data, Tensor):
            a, dt = data._a, data._dt
        elif isinstance(data, np.ndarray):
            a, dt = _from_array(data)
        else:
            a, dt = _infer(data)
        if dtype is not None:
            dt = as_dtype(dtype)
        self._a = np.array(store(a, dt), copy=True, order="C")
        self._dt, self._rg, self._grad, self._ver = dt, builtins.bool(requires_grad), None, 0
        if requires_grad and not dt.is_floating_point:
            raise RuntimeError(f"[tensor] only floating tensors can require gradients, got {dt.name}")

    # ---------------------------------------------------------------- properties
    @property
    def shape(self):
        """The sizes of the dims, as a tuple."""
        return tuple(self._a.shape)

    @property
    def ndim(self):
        """Number of dims."""
        return self._a.ndim

    @property
    def dtype(self):
        """The element type."""
        return self._dt

    @property
    def device(self):
        """The device (always the CPU in the NumPy backend)."""
        return CPU

    @property
    def is_cuda(self):
        """False: the NumPy backend has no CUDA."""
        return False

    @property
    def requires_grad(self):
        """Whether autograd would track this tensor (the NumPy backend records no tape)."""
        return self._rg

    @requires_grad.setter
    def requires_grad(self, flag):
        self.requires_grad_(flag)

    @property
    def grad(self):
        """The accumulated gradient (never computed by the NumPy backend)."""
        return self._grad

    @grad.setter
    def grad(self, value):
        self._grad = value

    @property
    def grad_fn(self):
        """None: the NumPy backend records no graph."""
        return None

    @property
    def is_leaf(self):
        """True: without a tape every tensor is a leaf."""
        return True

    @property
    def retains_grad(self):
        return False

    @property
    def _version(self):
        """Counts the in-place writes made through this tensor object."""
        return self._ver

    def requires_grad_(self, requires_grad=True):
        """Sets the ``requires_grad`` flag of a floating tensor (returns self)."""
        if requires_grad and not self._dt.is_floating_point:
            raise RuntimeError(f"[requires_grad_] only floating tensors can require gradients, got {self._dt.name}")
        self._rg = builtins.bool(requires_grad)
        return self

    def retain_grad(self):
        """Not available without the autograd tape."""
        needs_tape("retain_grad")

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Not available: backpropagation needs the C backend's autograd tape (RuntimeError)."""
        needs_tape("backward")

    def _register_hook(self, hook):
        needs_tape("register_hook")

    def _register_post_acc_hook(self, hook):
        needs_tape("register_post_accumulate_grad_hook")

    def _remove_hook(self, index):
        pass

    _remove_post_acc_hook = _remove_hook

    def detach(self):
        """The same values without autograd tracking (shares memory)."""
        return view(self._a, self._dt)

    def detach_(self):
        """Stops tracking this tensor (returns self)."""
        self._rg = False
        return self

    def dim(self):
        """Number of dims."""
        return self._a.ndim

    def numel(self):
        """Number of elements."""
        return builtins.int(self._a.size)

    def size(self, dim=None):
        """The shape, or the size of one dim."""
        if dim is None:
            return tuple(self._a.shape)
        return self._a.shape[self._dim(dim, "size")]

    def stride(self, dim=None):
        """Strides in elements (0 along broadcast dims)."""
        st = tuple(s // self._a.itemsize for s in self._a.strides)
        return st if dim is None else st[self._dim(dim, "stride")]

    def storage_offset(self):
        """Offset of the first element in its buffer, in elements."""
        base = self._a
        while isinstance(base.base, np.ndarray):
            base = base.base
        lo = np.byte_bounds(base)[0] if hasattr(np, "byte_bounds") else base.__array_interface__["data"][0]
        return (self._a.__array_interface__["data"][0] - lo) // self._a.itemsize

    def data_ptr(self):
        """Address of the first element."""
        return self._a.__array_interface__["data"][0]

    def element_size(self):
        """Bytes per element."""
        return self._dt.itemsize

    def is_contiguous(self):
        """Whether the elements are stored in row-major order without gaps."""
        return builtins.bool(self._a.flags.c_contiguous)

    def is_floating_point(self):
        """Whether the dtype is floating."""
        return self._dt.is_floating_point

    def _dim(self, d, op):
        n = max(self._a.ndim, 1)
        d = d.__index__()
        if not -n <= d < n:
            raise IndexError(f"[{op}] dim {d} is out of range for a tensor of {self._a.ndim} dims")
        return d % n

    # ---------------------------------------------------------------- conversion
    def item(self):
        """The value of a one-element tensor as a Python number."""
        if self._a.size != 1:
            raise ValueError(f"[item] expected a one-element tensor, got {self._a.size} elements of shape "
                             f"{tuple(self._a.shape)}")
        return self._a.reshape(()).item()

    def tolist(self):
        """Nested Python lists (a number for a 0-d tensor)."""
        return self._a.tolist()

    def numpy(self, force=False):
        """A NumPy array sharing this tensor's memory (bfloat16 has no NumPy type)."""
        if self._dt is BFLOAT16:
            raise TypeError("[numpy] NumPy has no bfloat16 type; convert with .float() first")
        if self._rg and not force:
            raise RuntimeError("[numpy] the tensor requires grad; call .detach().numpy() (or numpy(force=True))")
        return self._a

    def __array__(self, dtype=None, copy=None):
        if self._dt is BFLOAT16:  # a float32 copy of the values
            return self._a.astype(dtype or np.float32, copy=True)
        a = self._a if dtype is None else self._a.astype(dtype)
        return a.copy() if copy and a is self._a else a

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        if self._dt is BFLOAT16:
            raise TypeError("[__dlpack__] bfloat16 is not exported by the numpy backend")
        return self._a.__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)

    def __dlpack_device__(self):
        return (1, 0)

    @staticmethod
    def from_numpy(a):
        """Wraps a NumPy array as a tensor sharing its memory."""
        if not isinstance(a, np.ndarray):
            raise TypeError(f"[from_numpy] expected a numpy.ndarray, got {type(a).__name__}")
        if not a.dtype.isnative:
            raise TypeError(f"[from_numpy] arrays of non-native byte order ({a.dtype}) are not supported; "
                            "convert with a.astype(a.dtype.newbyteorder('='))")
        return wrap(a, from_numpy_dtype(a.dtype, "from_numpy"))

    def __len__(self):
        if self._a.ndim == 0:
            raise TypeError("[len] len() of a 0-d tensor")
        return self._a.shape[0]

    def __bool__(self):
        if self._a.size != 1:
            raise RuntimeError(f"[bool] the truth value of a tensor with {self._a.size} elements is ambiguous")
        return builtins.bool(self._a.reshape(()))

    def __float__(self):
        return builtins.float(self.item())

    def __int__(self):
        return builtins.int(self.item())

    def __index__(self):
        if self._dt.is_floating_point or self._a.size != 1:
            raise TypeError(f"[index] only one-element integer tensors can be used as an index, got "
                            f"{self._dt.name} {tuple(self._a.shape)}")
        return builtins.int(self.item())

    def __hash__(self):
        return id(self)

    # ---------------------------------------------------------------- indexing and writes
    def __getitem__(self, index):
        try:
            return view(np.asarray(self._a[_index(index)]), self._dt)
        except IndexError as e:
            raise IndexError(f"[index] {e} (tensor of shape {tuple(self._a.shape)})") from None
        except ValueError as e:
            raise ValueError(f"[index] {e} (tensor of shape {tuple(self._a.shape)})") from None

    def __setitem__(self, index, value):
        v = value._a if isinstance(value, Tensor) else np.asarray(value)
        if self._dt is BFLOAT16:
            v = round_bf16(np.asarray(v, dtype=np.float32))
        try:
            with np.errstate(all="ignore"):
                self._a[_index(index)] = v
            self._ver += 1
        except ValueError as e:
            raise RuntimeError(f"[setitem] {e} (tensor of shape {tuple(self._a.shape)})") from None

    def copy_(self, src):
        """Copies ``src`` (broadcast, converted to this dtype) into this tensor."""
        self[...] = src
        return self

    def fill_(self, value):
        """Sets every element to ``value``."""
        self[...] = value.item() if isinstance(value, Tensor) else value
        return self

    def zero_(self):
        """Sets every element to zero."""
        return self.fill_(0)

    def _inplace(self, result, op):
        """Writes ``result`` into self after PyTorch's cast check for in-place results (no float into
        integers, no number into bool); ``op`` names the in-place op in the error."""
        r, o = result._dt, self._dt
        if r is not o and ((r.is_floating_point and not o.is_floating_point) or (o is BOOL and r is not BOOL)):
            raise TypeError(f"[{op}] result type {r.name} can't be cast to the output type {o.name} of an in-place op")
        self[...] = result
        return self

