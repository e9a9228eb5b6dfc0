"""PyTorch's top-level names for the default device and tensor type, thread setup, device modules,
``histogramdd`` and ``ormqr``.

``FUNCTIONS`` holds the module-level names; ``METHODS`` the ones that are also Tensor methods
(``is_distributed``, ``ormqr``), as in PyTorch.
"""

from __future__ import annotations

import builtins
import collections
import math
import operator
import numbers
import warnings

import numpy as np

from . import _factories, _legacy_types, accelerator
from ._backend import _C
from ._C_face import Device, Dtype, Tensor
from ._tensor_extra import _need
from ._torch_aliases import _equal_edges

_FLOATS = (Dtype.FLOAT32, Dtype.FLOAT64)
HistogramddResult = collections.namedtuple("histogramdd", "hist bin_edges")
HistogramddResult.__doc__ = "``(hist, bin_edges)``: the D-dimensional counts and a tuple of D edge tensors."


def _flag(v, op, name):
    """``v`` as a bool (a bool or an int), else a TypeError naming the op and the argument."""
    if not isinstance(v, (builtins.bool, np.bool_, numbers.Integral)):
        raise TypeError(f"[{op}] {name} must be a bool, got {type(v).__name__}")
    return builtins.bool(v)


# ---------------------------------------------------------------- default device and tensor type
def set_default_device(device):
    """Makes ``device`` (a Device, a name such as "cpu" or "cuda:1", an int for that CUDA device, or None
    for the CPU) where factories without a ``device`` argument create tensors, in this thread (as PyTorch).
    Honoured by ``zeros``, ``ones``, ``empty``, ``full``, ``arange``, ``range``, ``linspace``, ``logspace``,
    ``eye``, ``rand``, ``randn``, ``randint``, ``randperm``, ``normal`` (with a size), ``tensor``,
    ``as_tensor``, ``asarray``, ``scalar_tensor``, ``tril_indices``, ``triu_indices`` and the windows; not by
    the ``*_like`` and ``new_*`` forms (they follow their tensor), ``from_numpy``, the ``Tensor(...)``
    constructor or the legacy types. A device this build cannot use (CUDA here when
    ``cuda.is_available()`` is False) is accepted; the factories then raise RuntimeError."""
    op = "set_default_device"
    if device is None:
        _factories._DEFAULT.device = None
        _factories._DEFAULT.from_type = False
        return
    if isinstance(device, builtins.bool) or not isinstance(device, (str, Device, numbers.Integral)):
        raise TypeError(f"[{op}] expected a device, a device name or an int, got {type(device).__name__}")
    if isinstance(device, numbers.Integral):
        if not _C._HAS_CUDA:
            raise RuntimeError(f"[{op}] an int names an accelerator device ({device}), and this build has none")
        if device < 0:
            raise ValueError(f"[{op}] device index must be >= 0, got {device}")
        device = f"cuda:{int(device)}"
    if isinstance(device, str):
        try:
            device = Device(device)
        except (TypeError, ValueError) as e:
            raise type(e)(f"[{op}] {e}") from None
    _factories._DEFAULT.device = device
    _factories._DEFAULT.from_type = False
    _factories._DEVICE_SET[0] = True


def get_default_device():
    """The device factories use when given none (``set_default_device``): ``device("cpu")`` unless set."""
    return _factories._default_device() or Device("cpu")


def _tensor_type(t, op):
    """``(legacy type, is_cuda)`` for a legacy type object or a name such as "torch.cuda.DoubleTensor"."""
    if isinstance(t, _legacy_types._LegacyType):
        return t, False
    if isinstance(t, str):
        parts = t.split(".")
        prefix_ok = parts[0] in ("torch", "sneppx", "sneppx_core") and len(parts) in (2, 3)
        if prefix_ok and (len(parts) == 2 or parts[1] == "cuda") and parts[-1] in _legacy_types._BY_NAME:
            return _legacy_types._BY_NAME[parts[-1]], len(parts) == 3
        raise TypeError(f"[{op}] unknown tensor type {t!r}: expected a name such as 'torch.FloatTensor' or "
                        "'torch.cuda.FloatTensor', or a legacy type such as sneppx_core.FloatTensor")
    raise TypeError(f"[{op}] invalid type object {t!r}: only floating-point tensor types are supported as the "
                    "default type")


def set_default_tensor_type(t):
    """Deprecated (UserWarning, as in PyTorch): sets the default tensor type from a legacy type or its name
    ("torch.FloatTensor", "torch.cuda.FloatTensor"). Only floating-point types are accepted (TypeError
    otherwise). The type's dtype becomes the default dtype (``set_default_dtype``) and its device the default
    device (a CPU type resets only a default set by a CUDA type); a CUDA type raises TypeError in a build
    without CUDA."""
    op = "set_default_tensor_type"
    legacy, is_cuda = _tensor_type(t, op)
    name = ("torch.cuda." if is_cuda else "torch.") + legacy.__name__
    if legacy.dtype not in (Dtype.FLOAT16, Dtype.BFLOAT16, Dtype.FLOAT32, Dtype.FLOAT64):
        raise TypeError(f"[{op}] only floating-point types are supported as the default type, got {name}")
    if is_cuda and not _C._HAS_CUDA:
        raise TypeError(f"[{op}] type {name} is not available: this build of sneppx-core has no CUDA")
    _factories._set_default_float(legacy.dtype)
    warnings.warn("set_default_tensor_type() is deprecated (as in PyTorch 2.1); use set_default_device() "
                  "(and dtype= arguments) instead", UserWarning, stacklevel=2)
    if is_cuda:
        set_default_device("cuda")
        _factories._DEFAULT.from_type = True
    elif _factories._DEFAULT.from_type:
        set_default_device(None)


# ---------------------------------------------------------------- threads and device modules
def init_num_threads():
    """Does nothing and returns None: the intra-op thread pool and its size (``set_num_threads``) are
    shared by every thread of the process, so a new thread needs no set-up."""
    return None


def get_device_module(device=None):
    """The module of a device type: ``sneppx_core.cuda`` for a CUDA device, ``sneppx_core.cpu`` for the
    CPU. ``device`` is a Device, a name ("cuda:0") or None: the current accelerator's module
    (``accelerator.current_accelerator()``), else ``sneppx_core.cpu``."""
    from . import cpu, cuda

    if device is None:
        return cpu if accelerator.current_accelerator() is None else cuda
    if isinstance(device, str):
        try:
            device = Device(device)
        except (TypeError, ValueError) as e:
            raise type(e)(f"[get_device_module] {e}") from None
    if not isinstance(device, Device):
        raise TypeError(f"[get_device_module] expected a device or a device name, got {type(device).__name__}")
    return cuda if device.type == "cuda" else cpu


def is_distributed(input):
    """False: no tensor is distributed in this build."""
    _need(input, "is_distributed")
    return False


# ---------------------------------------------------------------- histogramdd
def _host(t, work):
    return np.asarray(t.detach().to("cpu").numpy(), dtype=work)


def _dim_edges(op, x, d, n, rng, dt, work):
    """The ``n + 1`` equal-width edges of dim ``d``: over ``rng[2d:2d+2]``, else the data's min and max
    ([0, 1] for no data), widened by 0.5 each way when they are equal; computed in the input's dtype."""
    if rng is not None:
        if not all(isinstance(v, numbers.Real) for v in rng[2 * d:2 * d + 2]):
            raise TypeError(f"[{op}] range must hold numbers, got {rng!r}")
        lo, hi = builtins.float(rng[2 * d]), builtins.float(rng[2 * d + 1])
    elif x.shape[0]:
        lo, hi = builtins.float(x[:, d].min()), builtins.float(x[:, d].max())
    else:
        lo, hi = 0.0, 1.0
    return np.asarray(_equal_edges(op, lo, hi, n, dt, f"dimension {d}: ").numpy(), dtype=work)


def _bin_edges(op, x, bins, rng, dt, work):
    """The list of D edge arrays from ``bins``: an int, D ints, or D increasing 1-d tensors of edges."""
    dims = x.shape[1]
    if isinstance(bins, Tensor) and bins.ndim == 0 and not bins.is_floating_point():
        bins = builtins.int(bins.item())
    if isinstance(bins, numbers.Integral) and not isinstance(bins, builtins.bool):
        bins = [bins] * dims
    if not isinstance(bins, (list, tuple, Tensor)) or len(bins) != dims:
        raise ValueError(f"[{op}] bins must be an int or a sequence of {dims} ints or tensors (one per dimension "
                         f"of the input's last dim), got {bins!r}")
    if all(isinstance(b, Tensor) for b in bins):
        if rng is not None:
            raise ValueError(f"[{op}] range cannot be given with tensors of bin edges")
        edges = []
        for d, b in enumerate(bins):
            if b.ndim != 1 or b.shape[0] < 2 or b.dtype != dt:
                raise ValueError(f"[{op}] bin edges of dimension {d} must be a 1-d {dt} tensor of at least 2 values, "
                                 f"got shape {tuple(b.shape)} and dtype {b.dtype}")
            e = _host(b, work)
            if np.any(np.diff(e) < 0):
                raise ValueError(f"[{op}] bin edges of dimension {d} must be increasing")
            edges.append(e)
        return edges
    for d, n in enumerate(bins):
        if isinstance(n, builtins.bool) or not isinstance(n, numbers.Integral) or not 0 < n < 2 ** 31:
            raise ValueError(f"[{op}] bins must be > 0 (and < 2**31), got {n!r} for dimension {d}")
    if rng is not None and (not isinstance(rng, (list, tuple)) or len(rng) != 2 * dims):
        raise ValueError(f"[{op}] for a {dims}-dimensional histogram range must have {2 * dims} elements, "
                         f"got {rng!r}")
    return [_dim_edges(op, x, d, builtins.int(n), rng, dt, work) for d, n in enumerate(bins)]


def histogramdd(input, bins=10, *, range=None, weight=None, density=False):  # noqa: A002
    """``(hist, bin_edges)``: the histogram of the points ``input`` (..., D) (the last dim holds the D
    coordinates). ``bins`` is an int or D ints (equal-width bins over ``range`` = (min_0, max_0, min_1,
    ...), by default the data's min and max per dim, widened by 0.5 each way when equal), or D increasing
    1-d tensors of edges. Each bin is closed on the left, the last one along a dim also on the right; points
    outside are left out. ``weight`` (input's shape without its last dim) sums weights instead of counting;
    ``density=True`` divides by the total and by each bin's volume. Float32 or float64 input; computed on the
    host with NumPy, not differentiable (as in PyTorch)."""
    op = "histogramdd"
    _need(input, op)
    dt = input.dtype
    if dt not in _FLOATS:
        raise TypeError(f"[{op}] expects a float32 or float64 input, got {dt}")
    if input.ndim < 2:
        raise ValueError(f"[{op}] input must have at least 2 dims (..., D), got shape {tuple(input.shape)}")
    work = np.float64 if dt == Dtype.FLOAT64 else np.float32
    density = _flag(density, op, "density")
    x = _host(input, work).reshape(int(np.prod(input.shape[:-1])), input.shape[-1])
    w = None
    if weight is not None:
        _need(weight, op, "weight")
        if tuple(weight.shape) != tuple(input.shape[:-1]) or weight.dtype != dt:
            raise ValueError(f"[{op}] weight must have shape {tuple(input.shape[:-1])} and dtype {dt}, got shape "
                             f"{tuple(weight.shape)} and dtype {weight.dtype}")
        w = _host(weight, np.float64).reshape(-1)
    edges = _bin_edges(op, x, bins, range, dt, work)
    if not edges:
        return HistogramddResult(_factories.zeros((), dtype=dt, device=input.device), ())
    hist, _ = np.histogramdd(x, bins=edges, weights=w)
    if density:  # no points in range: 0 / 0, NaN as in PyTorch
        with np.errstate(invalid="ignore", divide="ignore"):
            hist = hist / hist.sum()
            for d, e in enumerate(edges):
                shape = [1] * len(edges)
                shape[d] = -1
                hist = hist / np.diff(e.astype(np.float64)).reshape(shape)
    res = [Tensor.from_numpy(np.ascontiguousarray(a, dtype=work)).to(input.device) for a in [hist, *edges]]
    return HistogramddResult(res[0], tuple(res[1:]))


# ---------------------------------------------------------------- ormqr
def _ormqr_check(op, input, tau, other, left):
    for name, t in (("input", input), ("input2", tau), ("input3", other)):
        _need(t, op, name)
    for t in (input, tau, other):
        if t.dtype not in _FLOATS or t.dtype != input.dtype:
            raise TypeError(f"[{op}] input, input2 (tau) and input3 (other) must share a float32 or float64 dtype, "
                            f"got {input.dtype}, {tau.dtype} and {other.dtype}")
    shapes = f"input {tuple(input.shape)}, tau {tuple(tau.shape)}, other {tuple(other.shape)}"
    if input.ndim < 2 or other.ndim != input.ndim or tau.ndim != input.ndim - 1:
        raise ValueError(f"[{op}] expects input (*, mn, k), tau (*, min(mn, k)) and other (*, m, n) with the same "
                         f"batch dims, got {shapes}")
    mn, k = input.shape[-2:]
    side = other.shape[-2] if left else other.shape[-1]
    batch = tuple(input.shape[:-2])
    if side != mn or tau.shape[-1] != builtins.min(mn, k) or batch != tuple(tau.shape[:-1]) or \
            batch != tuple(other.shape[:-2]):
        which = "other.shape[-2]" if left else "other.shape[-1]"
        raise ValueError(f"[{op}] expects {which} == input.shape[-2] (mn), tau.shape[-1] == min(mn, k) and equal "
                         f"batch dims, got {shapes}")


def ormqr(input, input2, input3, left=True, transpose=False):
    """``op(Q) @ other`` (``left``) or ``other @ op(Q)``, ``op`` the transpose when ``transpose``, with ``Q``
    the square (mn, mn) product ``H_1 ... H_r`` of the Householder reflectors that ``input`` (*, mn, k) and
    ``input2`` (tau, (*, r), r = min(mn, k)) hold as ``geqrf`` gives them: ``H_i = I - tau_i v_i v_i^T``, v_i
    column i of ``input`` below the diagonal and 1 on it. ``input3`` (other) is (*, m, n). Each reflector is
    applied as ``C - tau_i v_i (v_i^T C)`` (or ``C - (C v_i) tau_i v_i^T``) with differentiable ops, so
    gradients reach all three inputs."""
    op = "ormqr"
    left, transpose = _flag(left, op, "left"), _flag(transpose, op, "transpose")
    _ormqr_check(op, input, input2, input3, left)
    mn, r = input.shape[-2], input2.shape[-1]
    eye = _C._eye(mn, r, input.dtype)
    v = _C.tril(input[..., :, :r], -1) + (eye if str(input.device) == "cpu" else eye.to(input.device))
    order = builtins.range(r) if left == transpose else builtins.range(r - 1, -1, -1)
    c = input3
    for i in order:
        vi = v[..., :, i:i + 1]
        ti = input2[..., i:i + 1].unsqueeze(-1)
        vt = vi.transpose(-2, -1)
        c = c - vi @ ((vt @ c) * ti) if left else c - ((c @ vi) * ti) @ vt
    return c


class Size(tuple):
    """``torch.Size``: a tuple of dimension sizes with ``numel()``. Tensors' ``shape`` and ``size()`` are plain
    tuples in SneppX, which compare equal to a Size of the same sizes."""

    def __new__(cls, sizes=()):
        sizes = tuple(sizes)
        for s in sizes:
            if isinstance(s, builtins.bool) or not hasattr(s, "__index__"):
                raise TypeError(f"[Size] sizes must be integers, got {type(s).__name__} in {sizes}")
        return super().__new__(cls, (operator.index(s) for s in sizes))

    def numel(self) -> int:
        """The number of elements of a tensor of this shape (1 for ``Size([])``)."""
        return math.prod(self)

    def __getitem__(self, key):
        item = super().__getitem__(key)
        return Size(item) if isinstance(key, slice) else item

    def __add__(self, other):
        return Size(tuple(self) + tuple(other))

    def __repr__(self):
        return f"sneppx.Size({list(self)})"


_PLAIN = [set_default_device, get_default_device, set_default_tensor_type, init_num_threads, get_device_module,
          is_distributed, histogramdd, ormqr]
FUNCTIONS = {**{f.__name__: f for f in _PLAIN}, "Size": Size}
METHODS = {"is_distributed": is_distributed, "ormqr": ormqr}
__all__ = list(FUNCTIONS)
