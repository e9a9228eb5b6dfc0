"""Tensor factories with PyTorch's signatures: ``zeros(2, 3)`` and ``zeros((2, 3))`` alike."""

from __future__ import annotations

import builtins
import threading

import numpy as np

from ._backend import _C
from ._C_face import Dtype, Tensor, float32, int64  # noqa: F401  (float32: imported from here)
from ._tensor_props import like_format, preserve_format

_default_seed = [67280421310721]
class _PerThread(threading.local):
    """set_default_device's choice, per thread as in PyTorch (class attributes: no lookup misses, which would
    cost an exception each)."""

    device = None
    from_type = False


_DEFAULT = _PerThread()
_DEVICE_SET = [False]  # True once any thread set a default device: until then factories skip the per-thread lookup
_FLOAT = [_C._default_dtype()]  # the default floating dtype, mirrored from the core by _set_default_float


def _default_device(device=None):
    """``device`` when given, else the default of this thread (``set_default_device``; None means the CPU)."""
    return _DEFAULT.device if device is None and _DEVICE_SET[0] else device


def _meta(device):
    """"meta" when the factory's tensor goes to the meta device (made there directly: it holds no memory, so a
    shape too large for any machine is fine), else None (made on the CPU, then moved by ``_finish``)."""
    device = _default_device(device)
    return "meta" if device is not None and str(device) == "meta" else None


def _default_float():
    """The default floating dtype (``set_default_dtype``)."""
    return _FLOAT[0]


def _set_default_float(dtype):
    """Sets the core's default floating dtype and its mirror here."""
    _C._set_default_dtype(dtype)
    _FLOAT[0] = dtype


def _shape(size, op="factory") -> list:
    """The shape from ``f(2, 3)`` or ``f((2, 3))``; sizes must be integers (or have ``__index__``)."""
    if len(size) == 1 and not isinstance(size[0], builtins.int) and not hasattr(size[0], "__index__"):
        if not isinstance(size[0], (tuple, list)) and not hasattr(size[0], "__iter__"):
            raise TypeError(f"[{op}] size must be integers or a sequence of integers, got {size[0]!r}")
        size = tuple(size[0])
    out = []
    for s in size:
        if type(s) is not builtins.int:  # plain ints (the usual case) skip the checks
            if isinstance(s, builtins.bool) or not (isinstance(s, builtins.int) or hasattr(s, "__index__")):
                raise TypeError(f"[{op}] sizes must be integers, got {s!r}")
            s = s.__index__()
        out.append(s)
    return out


def _size_kw(sizes, size, op) -> list:
    """The shape given as ``size=``: a sequence of ints, and no positional sizes beside it (as in PyTorch)."""
    if sizes:
        raise TypeError(f"{op}() got multiple values for argument 'size'")
    if not hasattr(size, "__iter__"):
        raise TypeError(f"[{op}] argument 'size' must be a tuple of ints, not {type(size).__name__}")
    return _shape((size,), op)


def _finish(t, requires_grad, device=None):
    if device is None and _DEVICE_SET[0]:
        device = _DEFAULT.device
    if device is not None and str(device) != "cpu":
        t = _C._to_device(t, device)
    if requires_grad:
        t.requires_grad_(True)
    return t


_ALIASES = {"float": "float32", "double": "float64", "half": "float16", "int": "int32", "long": "int64",
            "short": "int16", "cfloat": "complex64", "cdouble": "complex128"}
_PY_TYPES = {builtins.float: "float64", builtins.int: "int64", builtins.bool: "bool",  # as in PyTorch
             builtins.complex: "complex128"}


def _dtype(dtype, default):
    """``default`` when ``dtype`` is None, else ``dtype`` as a Dtype. Accepts Dtypes, names such as
    "float32" or "sneppx.float32", NumPy dtypes and the Python types float, int and bool."""
    if dtype is None:
        return default
    if isinstance(dtype, Dtype):
        return dtype
    if isinstance(dtype, str):
        name = dtype[len("sneppx."):] if dtype.startswith("sneppx.") else dtype
        name = _ALIASES.get(name, name)
    elif dtype in _PY_TYPES:
        name = _PY_TYPES[dtype]
    else:
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = None
    member = getattr(Dtype, str(name).upper(), None)
    if not isinstance(member, Dtype) or member.name != name:
        raise TypeError(f"[dtype] expected a dtype such as sneppx.float32 or 'float32', got {dtype!r}")
    return member


def _float_dtype(dtype):
    """``dtype`` as a Dtype, the default floating dtype (``set_default_dtype``) when None."""
    return _FLOAT[0] if dtype is None else _dtype(dtype, _FLOAT[0])


def zeros(*sizes, size=None, dtype=None, device=None, requires_grad=False):
    """A tensor of zeros of the given shape (the default dtype, float32 unless set, if ``dtype`` is None)."""
    shape = _shape(sizes, "zeros") if size is None else _size_kw(sizes, size, "zeros")
    return _finish(_C._zeros(shape, dtype, _meta(device)), requires_grad, device)


def ones(*sizes, size=None, dtype=None, device=None, requires_grad=False):
    """A tensor of ones of the given shape."""
    shape = _shape(sizes, "ones") if size is None else _size_kw(sizes, size, "ones")
    return _finish(_C._full(shape, 1, _float_dtype(dtype), _meta(device)), requires_grad, device)


def empty(*sizes, size=None, dtype=None, device=None, requires_grad=False):
    """An uninitialised tensor of the given shape."""
    shape = _shape(sizes, "empty") if size is None else _size_kw(sizes, size, "empty")
    return _finish(_C._empty(shape, dtype, _meta(device)), requires_grad, device)


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    """A tensor of ``size`` filled with ``fill_value`` (dtype inferred from the value)."""
    if isinstance(size, builtins.int):
        size = (size,)
    return _finish(_C._full(_shape((size,), "full"), fill_value, dtype, _meta(device)), requires_grad, device)


def _int(v, op, what):
    """``v`` as a Python int for ``op`` (a ValueError or TypeError naming it otherwise)."""
    if isinstance(v, builtins.float) and not v.is_integer():
        raise ValueError(f"[{op}] {what} must be an integer, got {v!r}")
    try:
        return builtins.int(v)
    except (OverflowError, ValueError):
        raise ValueError(f"[{op}] {what} must be a finite integer, got {v!r}") from None
    except TypeError:
        raise TypeError(f"[{op}] {what} must be an integer, got {type(v).__name__}") from None


def _float(v, op, what):
    try:
        return builtins.float(v)
    except (TypeError, ValueError):
        raise TypeError(f"[{op}] {what} must be a number, got {v!r}") from None


def _like(t, op):
    """The shape of ``t`` for a ``*_like`` factory (a TypeError naming the op when t is no tensor)."""
    if not isinstance(t, Tensor):
        raise TypeError(f"[{op}] expected a Tensor, got {type(t).__name__}")
    return t.shape


def _like_device(t, device):
    """The device of a ``*_like`` result: ``device`` when given, else ``t``'s (as in PyTorch)."""
    return t.device if device is None else device


def zeros_like(t, dtype=None, device=None, requires_grad=False, memory_format=preserve_format):
    """Zeros with the shape (and, by default, dtype and channels-last layout) of ``t``."""
    out = zeros(_like(t, "zeros_like"), dtype=_dtype(dtype, t.dtype), device=_like_device(t, device),
                requires_grad=requires_grad)
    return like_format(t, out, memory_format, "zeros_like")


def ones_like(t, dtype=None, device=None, requires_grad=False, memory_format=preserve_format):
    """Ones with the shape (and, by default, dtype and channels-last layout) of ``t``."""
    out = ones(_like(t, "ones_like"), dtype=_dtype(dtype, t.dtype), device=_like_device(t, device),
               requires_grad=requires_grad)
    return like_format(t, out, memory_format, "ones_like")


def empty_like(t, dtype=None, device=None, requires_grad=False, memory_format=preserve_format):
    """An uninitialised tensor like ``t``."""
    out = empty(_like(t, "empty_like"), dtype=_dtype(dtype, t.dtype), device=_like_device(t, device),
                requires_grad=requires_grad)
    return like_format(t, out, memory_format, "empty_like")


def full_like(t, fill_value, dtype=None, device=None, requires_grad=False, memory_format=preserve_format):
    """A tensor like ``t`` filled with ``fill_value``."""
    out = full(_like(t, "full_like"), fill_value, dtype=_dtype(dtype, t.dtype), device=_like_device(t, device),
               requires_grad=requires_grad)
    return like_format(t, out, memory_format, "full_like")


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    """Values from ``start`` to ``end`` (exclusive) by ``step``; int64 for integer arguments."""
    if end is None:
        start, end = 0, start
    ints = all(isinstance(v, builtins.int) for v in (start, end, step))
    dtype = _dtype(dtype, int64 if ints else _FLOAT[0])
    return _finish(_C._arange(_float(start, "arange", "start"), _float(end, "arange", "end"),
                                 _float(step, "arange", "step"), dtype), requires_grad, device)


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    out = _C._linspace(_float(start, "linspace", "start"), _float(end, "linspace", "end"),
                       _int(steps, "linspace", "steps"), _float_dtype(dtype))
    return _finish(out, requires_grad, device)


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    """An ``n`` x ``m`` identity matrix."""
    return _finish(_C._eye(n, n if m is None else m, _float_dtype(dtype)), requires_grad, device)


def rand(*sizes, size=None, generator=None, dtype=None, device=None, requires_grad=False):
    """Uniform random numbers in [0, 1)."""
    shape = _shape(sizes, "rand") if size is None else _size_kw(sizes, size, "rand")
    if _meta(device):  # no values to draw
        return _finish(_C._empty(shape, _float_dtype(dtype), "meta"), requires_grad, device)
    return _finish(_C._rand(shape, _float_dtype(dtype), generator), requires_grad, device)


def randn(*sizes, size=None, generator=None, dtype=None, device=None, requires_grad=False):
    """Standard normal random numbers."""
    shape = _shape(sizes, "randn") if size is None else _size_kw(sizes, size, "randn")
    if _meta(device):  # no values to draw
        return _finish(_C._empty(shape, _float_dtype(dtype), "meta"), requires_grad, device)
    return _finish(_C._randn(shape, _float_dtype(dtype), generator), requires_grad, device)


def randint(low, high=None, size=None, generator=None, dtype=None, device=None, requires_grad=False):
    """Random integers in [low, high); ``randint(high, size)`` starts at 0."""
    if size is None:
        if high is None or isinstance(high, builtins.int):
            raise TypeError("[randint] size is required, e.g. randint(0, 10, (3,))")
        low, high, size = 0, low, high
    elif high is None:
        low, high = 0, low
    size = (size,) if isinstance(size, builtins.int) else size
    out = _C._randint(_int(low, "randint", "low"), _int(high, "randint", "high"), _shape((size,), "randint"),
                      _dtype(dtype, int64), generator)
    return _finish(out, requires_grad, device)


def randperm(n, generator=None, dtype=None, device=None, requires_grad=False):
    """A random permutation of 0..n-1 (int64)."""
    return _finish(_C._randperm(_int(n, "randperm", "n"), _dtype(dtype, int64), generator), requires_grad, device)


def rand_like(t, generator=None, dtype=None, device=None, memory_format=preserve_format):
    """Uniform random numbers shaped like ``t`` (on ``t``'s device unless ``device`` is given)."""
    out = rand(_like(t, "rand_like"), generator=generator, dtype=_dtype(dtype, t.dtype),
               device=_like_device(t, device))
    return like_format(t, out, memory_format, "rand_like")


def randn_like(t, generator=None, dtype=None, device=None, memory_format=preserve_format):
    """Normal random numbers shaped like ``t`` (on ``t``'s device unless ``device`` is given)."""
    out = randn(_like(t, "randn_like"), generator=generator, dtype=_dtype(dtype, t.dtype),
                device=_like_device(t, device))
    return like_format(t, out, memory_format, "randn_like")


def randint_like(t, low, high=None, generator=None, dtype=None, device=None, memory_format=preserve_format):
    """Random integers shaped like ``t`` (on ``t``'s device unless ``device`` is given)."""
    out = randint(low, high, _like(t, "randint_like"), generator=generator, dtype=_dtype(dtype, t.dtype),
                  device=_like_device(t, device))
    return like_format(t, out, memory_format, "randint_like")


def manual_seed(seed) -> Tensor.__class__:
    """Seeds the default generator: every random function becomes deterministic."""
    import math

    if isinstance(seed, builtins.float) and not math.isfinite(seed):
        raise ValueError(f"[manual_seed] seed must be a finite integer, got {seed!r}")
    try:
        seed = builtins.int(seed)
    except (TypeError, ValueError):
        raise TypeError(f"[manual_seed] seed must be an integer, got {seed!r}") from None
    if not -(1 << 63) <= seed < (1 << 64):
        raise ValueError(f"[manual_seed] seed {seed} is out of range [-2**63, 2**64)")
    seed &= (1 << 64) - 1
    _default_seed[0] = seed
    return _C.default_generator().manual_seed(seed)


def seed() -> builtins.int:
    """Seeds the default generator from the operating system's entropy and returns the seed."""
    import os

    s = builtins.int.from_bytes(os.urandom(8), "little")
    manual_seed(s)
    return s


_WIDENED = ("uint16", "uint32", "uint64")  # NumPy integer types stored as int64


def warn_if_widened(data, op: str, stacklevel: int = 3) -> None:
    """Warns (once per call site) that a NumPy array of an integer type SneppX lacks becomes int64: the values
    are kept, but bytes are not (``view(dtype)``, ``element_size()``, ``numpy()``'s dtype differ from PyTorch's)."""
    if isinstance(data, np.ndarray) and data.dtype.name in _WIDENED:
        import warnings

        warnings.warn(f"[{op}] NumPy {data.dtype.name} has no SneppX dtype: the values are stored as int64, so a "
                      "later view(dtype) reinterprets 8-byte elements (convert with .astype first to choose)",
                      UserWarning, stacklevel=stacklevel)


def tensor(data, dtype=None, device=None, requires_grad=False):
    """Copies ``data`` (nested lists, numbers, arrays or tensors) into a new tensor, like ``torch.tensor``. A NumPy
    array of uint16, uint32 or uint64 (dtypes SneppX lacks) becomes int64, with a warning."""
    if dtype is None:
        warn_if_widened(data, "tensor")
    return Tensor(data, dtype=dtype, device=_default_device(device) if _DEVICE_SET[0] else device,
                  requires_grad=requires_grad)

