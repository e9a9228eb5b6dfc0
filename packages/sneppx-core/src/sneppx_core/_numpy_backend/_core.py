"""Dtypes, devices, the grad-mode flag and the NumPy conversions shared by the NumPy backend."""

from __future__ import annotations

import builtins

import numpy as np

TRAINING_MESSAGE = (
    "training requires the C backend of sneppx-core, and this process runs the NumPy backend "
    "(inference only). Install a sneppx-core wheel for your platform, or build it from source with a "
    "C++20 compiler (pip install sneppx-core --no-binary sneppx-core), and unset SNEPPX_BACKEND=numpy"
)


def needs_tape(op):
    """Raises the RuntimeError of everything that needs the autograd tape (backward, grad, fused steps)."""
    raise RuntimeError(f"[{op}] {TRAINING_MESSAGE}")


def unsupported(op):
    """Raises NotImplementedError for an op that the NumPy backend does not provide."""
    raise NotImplementedError(
        f"[{op}] is not implemented by the numpy backend of sneppx-core (it covers the inference surface); "
        "install a sneppx-core wheel or build the C backend to use it")


class Dtype:
    """A tensor element type (the members are ``Dtype.FLOAT32`` and so on, as in the C backend)."""

    __slots__ = ("name", "value", "itemsize", "is_floating_point")

    def __init__(self, name, value, itemsize, is_floating_point):
        self.name, self.value, self.itemsize, self.is_floating_point = name, value, itemsize, is_floating_point

    def __int__(self):
        return self.value

    def __eq__(self, other):
        return isinstance(other, Dtype) and other.name == self.name

    def __hash__(self):  # by name, as sneppx_core's _C_face defines it for both backends
        return hash(self.name)

    def __repr__(self):
        return "sneppx." + self.name

    __index__ = __int__

    @property
    def is_complex(self):
        """True for complex64 and complex128."""
        return self.name.startswith("complex")

    def __reduce__(self):
        return (getattr, (Dtype, self.name.upper()))


_MEMBERS = [("bool", 0, 1, False), ("uint8", 1, 1, False), ("int8", 2, 1, False), ("int16", 3, 2, False),
            ("int32", 4, 4, False), ("int64", 5, 8, False), ("float16", 6, 2, True), ("bfloat16", 7, 2, True),
            ("float32", 8, 4, True), ("float64", 9, 8, True), ("complex64", 10, 8, False),
            ("complex128", 11, 16, False)]
for _m in _MEMBERS:
    setattr(Dtype, _m[0].upper(), Dtype(*_m))
Dtype.__members__ = {m[0].upper(): getattr(Dtype, m[0].upper()) for m in _MEMBERS}

BOOL, UINT8, INT8, INT16, INT32, INT64 = Dtype.BOOL, Dtype.UINT8, Dtype.INT8, Dtype.INT16, Dtype.INT32, Dtype.INT64
FLOAT16, BFLOAT16, FLOAT32, FLOAT64 = Dtype.FLOAT16, Dtype.BFLOAT16, Dtype.FLOAT32, Dtype.FLOAT64
FLOATS = (FLOAT16, BFLOAT16, FLOAT32, FLOAT64)
INTS = (UINT8, INT8, INT16, INT32, INT64)

class _Storage(dict):
    """Dtype -> NumPy storage type; complex dtypes have none here (their ops are the compiled backend's)."""

    def __missing__(self, dt):
        raise TypeError(f"[dtype] {dt!r} tensors need the compiled backend (the NumPy backend has no complex ops)")


# Storage: bfloat16 values live in float32 arrays, rounded to bfloat16 after every op.
STORAGE = _Storage({BOOL: np.bool_, UINT8: np.uint8, INT8: np.int8, INT16: np.int16, INT32: np.int32, INT64: np.int64,
           FLOAT16: np.float16, BFLOAT16: np.float32, FLOAT32: np.float32, FLOAT64: np.float64})
_FROM_NP = {np.dtype(np.bool_): BOOL, np.dtype(np.uint8): UINT8, np.dtype(np.int8): INT8, np.dtype(np.int16): INT16,
            np.dtype(np.int32): INT32,
            np.dtype(np.int64): INT64, np.dtype(np.float16): FLOAT16, np.dtype(np.float32): FLOAT32,
            np.dtype(np.float64): FLOAT64}
# Other NumPy integer types convert to int64 (as the C backend does).
_WIDEN = {"i": np.int64, "u": np.int64, "b": np.bool_}


def from_numpy_dtype(npdt, op="tensor"):
    """The Dtype of a NumPy dtype (TypeError when there is none)."""
    npdt = np.dtype(npdt)
    if npdt in _FROM_NP:
        return _FROM_NP[npdt]
    raise TypeError(f"[{op}] NumPy dtype {npdt.name} has no sneppx dtype")


def as_dtype(dtype):
    """``dtype`` (a Dtype, a name or a NumPy dtype) as a Dtype."""
    if isinstance(dtype, Dtype):
        return dtype
    if isinstance(dtype, str):
        name = dtype[len("sneppx."):] if dtype.startswith("sneppx.") else dtype
        member = getattr(Dtype, name.upper(), None)
        if isinstance(member, Dtype):
            return member
    try:
        return from_numpy_dtype(np.dtype(dtype))
    except TypeError:
        raise TypeError(f"[dtype] expected a dtype such as sneppx.float32, got {dtype!r}") from None


def compute_type(dt):
    """The NumPy type an op on ``dt`` computes in (float16/bfloat16 compute in float32)."""
    return np.float32 if dt in (FLOAT16, BFLOAT16) else STORAGE[dt]


def round_bf16(a):
    """float32 ``a`` rounded to the nearest bfloat16 (ties to even), still as float32."""
    a = np.array(a, dtype=np.float32, order="C", ndmin=0)
    bits = a.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32).view(np.float32)
    return np.where(np.isnan(a), a, rounded).reshape(a.shape)


def store(a, dt):
    """``a`` converted to the storage of ``dt`` (a new or the same ndarray)."""
    a = np.asarray(a)
    if dt is BFLOAT16:
        return round_bf16(a.astype(np.float32))
    with np.errstate(all="ignore"):
        return a.astype(STORAGE[dt], copy=False)


# ---------------------------------------------------------------- promotion (PyTorch's rules)
_ORDER = [BOOL, UINT8, INT8, INT16, INT32, INT64, FLOAT16, BFLOAT16, FLOAT32, FLOAT64]


def _category(dt):
    return 2 if dt.is_floating_point else (0 if dt is BOOL else 1)


def promote_pair(a, b):
    """The promoted dtype of two dtypes of the same priority."""
    if {a, b} == {FLOAT16, BFLOAT16}:
        return FLOAT32
    if {a, b} == {UINT8, INT8}:
        return INT16
    return a if _ORDER.index(a) >= _ORDER.index(b) else b


def scalar_dtype(v):
    """The dtype group of a Python (or NumPy) number: bool, int64 or the default float32."""
    if isinstance(v, (builtins.bool, np.bool_)):
        return BOOL
    if isinstance(v, (builtins.int, np.integer)):
        return INT64
    if isinstance(v, (builtins.float, np.floating)):
        return FLOAT32
    raise TypeError(f"expected a Tensor or a number, got {type(v).__name__}")


def result_dtype(*operands):
    """PyTorch's result dtype: dimensioned tensors, then 0-d tensors, then numbers, where a lower
    group only wins with a higher category (bool < integer < floating)."""
    groups = [None, None, None]
    for x in operands:
        if hasattr(x, "_dt"):
            k, dt = (0 if x._a.ndim else 1), x._dt
        else:
            k, dt = 2, scalar_dtype(x)
        groups[k] = dt if groups[k] is None else promote_pair(groups[k], dt)
    out = None
    for dt in groups:
        if dt is not None and (out is None or _category(dt) > _category(out)):
            out = dt
    return out


def norm_dim(d, ndim, op, extra=0):
    """Dim ``d`` of a tensor of ``ndim`` dims (``extra``: positions past the end, as unsqueeze has),
    wrapped to [0, ndim + extra); TypeError for a non-integer, IndexError when out of range."""
    if isinstance(d, builtins.bool) or not hasattr(d, "__index__"):
        raise TypeError(f"[{op}] dim must be an integer, got {d!r}")
    d = d.__index__()
    n = builtins.max(ndim + extra, 1)
    if not -n <= d < n:
        raise IndexError(f"[{op}] dim {d} is out of range for a tensor of {ndim} dims")
    return d % n


def describe(t):
    """``float32 (2, 3)``: a tensor's dtype and shape for error messages."""
    return f"{t._dt.name} {tuple(t._a.shape)}"


class Device:
    """A device: ``Device("cpu")``; the NumPy backend computes on the CPU only."""

    def __init__(self, type, index=None):  # noqa: A002
        if isinstance(type, Device):
            type, index = type.type, type.index if index is None else index
        if not isinstance(type, str):
            raise TypeError(f"[device] expected a device string such as 'cpu', got {type!r}")
        if ":" in type:
            type, _, idx = type.partition(":")
            try:
                index = builtins.int(idx)
            except ValueError:
                raise ValueError(f"[device] invalid device string {type + ':' + idx!r}") from None
        if type not in ("cpu", "cuda"):
            raise ValueError(f"[device] expected 'cpu' or 'cuda', got {type!r}")
        self.type, self.index = type, index

    def __eq__(self, other):
        if isinstance(other, str):
            try:
                other = Device(other)
            except (ValueError, TypeError):
                return False
        return isinstance(other, Device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        return f"device(type='{self.type}')" if self.index is None else \
            f"device(type='{self.type}', index={self.index})"


CPU = Device("cpu")


def check_device(device, op="cuda"):
    """Accepts None or a CPU device; a CUDA device raises RuntimeError."""
    if device is None:
        return
    if Device(device).type != "cpu":
        raise RuntimeError(f"[{op}] the numpy backend of sneppx-core has no CUDA")  # (as a build without CUDA)


_GRAD = [True]


def is_grad_enabled():
    """Whether grad mode is on (the NumPy backend records no tape either way)."""
    return _GRAD[0]


def _set_grad_enabled(flag):
    _GRAD[0] = builtins.bool(flag)


_INFERENCE = [False]


def _inference_mode_enabled():
    """Whether inference mode is on (this backend marks no tensor: ``Tensor.is_inference()`` is False)."""
    return _INFERENCE[0]


def _set_inference_mode(flag):
    _INFERENCE[0] = builtins.bool(flag)


def _default_dtype():
    """The default floating dtype: always float32 on this backend."""
    return FLOAT32


def _set_default_dtype(dtype):
    if dtype != FLOAT32:
        raise NotImplementedError(f"[set_default_dtype] the NumPy backend keeps float32 as the default dtype, got "
                                  f"{dtype}")
