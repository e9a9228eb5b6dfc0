"""Tensor methods written in Python: conversions, repr, pickling, hooks and result tuples."""

from __future__ import annotations

import builtins
import math
import sys

import numpy as np

from ._backend import _C
from . import _ops, _tensor_props
from ._C_face import Device, Dtype, Tensor, bool_


def _is_device(a):
    return isinstance(a, Device) or (isinstance(a, str) and (a in ("cpu", "cuda") or a.startswith("cuda:")))


def _parse_to(args, kwargs):
    from ._factories import _dtype

    dtype = kwargs.pop("dtype", None)
    device = kwargs.pop("device", None)
    if kwargs:
        raise TypeError(f"[to] unexpected keyword arguments {sorted(kwargs)}")
    for a in args:
        if isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        elif _is_device(a):
            device = a
        elif a is not None:
            try:
                dtype = _dtype(a, None)  # a Dtype, a name such as "float64", a NumPy dtype or a Python type
            except TypeError:
                if isinstance(a, str):
                    device = a  # let Device parsing explain what is wrong with it
                else:
                    raise TypeError(f"[to] expected a dtype, a device or a tensor, got {a!r}") from None
    return (None if dtype is None else _dtype(dtype, None)), device


def to(self, *args, **kwargs):
    """Converts dtype and/or device: ``to(dtype)``, ``to("cpu")``, ``to(device, dtype)``, ``to(other)``; the
    keyword ``memory_format`` (default ``preserve_format``) lays the result out as ``contiguous`` does.

    ``non_blocking=True`` lets a copy between a GPU and page-locked (``pin_memory()``) host memory run
    in the background: synchronize before reading (or overwriting) the host side."""
    non_blocking = bool(kwargs.pop("non_blocking", False))
    copy = kwargs.pop("copy", False)
    memory_format = kwargs.pop("memory_format", _tensor_props.preserve_format)
    dtype, device = _parse_to(args, kwargs)
    out = self
    if device is not None and Device(device) != out.device:
        out = _C._to_device(out, device, non_blocking)
    if dtype is not None:
        out = _C._to_dtype(out, dtype)
    out = out.clone() if copy and out is self else out
    return _tensor_props.convert(self, out, memory_format, "to")


def _caster(dtype):
    preserve, to_dtype = _tensor_props.preserve_format, _C._to_dtype
    def cast(self, memory_format=preserve):
        out = to_dtype(self, dtype)
        if memory_format is preserve and self.ndim < 4:  # the usual call: nothing to lay out
            return out
        return _tensor_props.convert(self, out, memory_format, cast.__name__)

    cast.__doc__ = f"Returns the tensor converted to {dtype!r} (self if it already is), laid out in memory_format."
    return cast


# what set_printoptions changes (PyTorch's "default" profile; sci_mode None lets the values decide)
PRINT_OPTIONS = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80, "sci_mode": None}


def _float_formatter(a):
    """PyTorch's float printing rule (``precision`` digits, 4 by default): integral values print as ``1.``,
    values spanning more than 1000x (or above 1e8, or below 1e-4) in scientific notation (unless ``sci_mode``
    is set), others as ``0.1235``; every element is right-aligned to the widest finite non-zero one."""
    vals = a[np.isfinite(a) & (a != 0)].astype(np.float64)
    int_mode, sci = True, False
    if vals.size:
        lo, hi = np.abs(vals).min(), np.abs(vals).max()
        int_mode = builtins.bool(np.all(vals == np.ceil(vals)))
        sci = hi / lo > 1000.0 or hi > 1.0e8 or (not int_mode and lo < 1.0e-4)
    if PRINT_OPTIONS["sci_mode"] is not None:
        sci = PRINT_OPTIONS["sci_mode"]
    digits = PRINT_OPTIONS["precision"]

    def raw(v):
        v = builtins.float(v)
        if sci:
            return f"{v:.{digits}e}"
        if int_mode:
            return f"{v:.0f}" + ("." if np.isfinite(v) else "")
        return f"{v:.{digits}f}"

    width = builtins.max([1] + [len(raw(v)) for v in vals])
    return lambda v: raw(v).rjust(width)


def _fmt_array(self):
    t = self.detach()
    if t.device != "cpu":
        t = t.cpu()
    if t.dtype in (Dtype.BFLOAT16, Dtype.FLOAT16):
        t = t.to(Dtype.FLOAT32)
    a = t.numpy()
    po = PRINT_OPTIONS
    threshold = sys.maxsize if po["threshold"] == math.inf else builtins.int(po["threshold"])
    opts = dict(separator=", ", prefix="tensor(", threshold=threshold, edgeitems=po["edgeitems"],
                max_line_width=po["linewidth"])
    summary = a if a.size <= threshold else _summarized(a, po["edgeitems"])
    if a.dtype.kind == "f":
        opts["formatter"] = {"float_kind": _float_formatter(summary)}
    elif a.dtype.kind == "c":  # each part formatted as a real tensor of those parts would be: 1.0000+2.j
        re, im = _float_formatter(summary.real), _float_formatter(np.abs(summary.imag))
        opts["formatter"] = {"complex_kind": lambda v: re(v.real) + ("-" if np.signbit(v.imag) else "+") +
                             im(abs(v.imag)).strip() + "j"}
    text = np.array2string(a, **opts)
    return text.replace(", ..., ", ",  ..., ") if a.size > threshold else text  # PyTorch's " ..." item


def _summarized(a, edge):
    """The elements that a summarized print shows (the first and last ``edge`` along each dim)."""
    for d in range(a.ndim):
        if a.shape[d] > 2 * edge:
            a = np.concatenate([np.take(a, range(edge), d), np.take(a, range(a.shape[d] - edge, a.shape[d]), d)], d)
    return a


def __repr__(self):
    """PyTorch-style repr: ``tensor([1.5000, 2.0000], dtype=sneppx.float64, requires_grad=True)``."""
    extras = []
    if self.device.type == "meta":  # no values to show, as PyTorch: tensor(..., device='meta', size=(2, 3))
        extras = ["device='meta'", f"size={tuple(self.shape)}"]
        if self.dtype != Dtype.FLOAT32:
            extras.append(f"dtype={self.dtype!r}")
        if self.requires_grad:
            extras.append("requires_grad=True")
        return "tensor(..." + "".join(", " + e for e in extras) + ")"
    if self.numel() == 0:
        body = "[]"
        if self.ndim != 1:
            extras.append(f"size={tuple(self.shape)}")
        if self.dtype != Dtype.FLOAT32:
            extras.append(f"dtype={self.dtype!r}")
    else:
        body = _fmt_array(self)
        if self.dtype not in (Dtype.FLOAT32, Dtype.INT64, Dtype.BOOL, Dtype.COMPLEX64):
            extras.append(f"dtype={self.dtype!r}")
    if self.device != "cpu":
        extras.append(f"device='{self.device}'")
    if self.grad_fn is not None:
        extras.append(f"grad_fn={self.grad_fn!r}")
    elif self.requires_grad:
        extras.append("requires_grad=True")
    return "tensor(" + body + "".join(", " + e for e in extras) + ")"


class RemovableHandle:
    """Returned by the hook registrations; ``remove()`` disables the hook."""

    def __init__(self, remove, index):
        self._remove, self._index = remove, index

    def remove(self):
        self._remove(self._index)


def register_hook(self, hook):
    """Calls ``hook(grad)`` when the gradient of this tensor is computed; a returned tensor replaces it."""
    return RemovableHandle(self._remove_hook, self._register_hook(hook))


def register_post_accumulate_grad_hook(self, hook):
    """Calls ``hook(tensor)`` after this leaf's ``.grad`` has been accumulated in a backward pass."""
    return RemovableHandle(self._remove_post_acc_hook, self._register_post_acc_hook(hook))


def _rebuild(array, dtype, requires_grad):
    t = Tensor(array, dtype=dtype)
    if requires_grad:
        t.requires_grad_(True)
    return t


def __reduce__(self):
    """Pickles as a NumPy copy of the data plus dtype and requires_grad (used by worker processes)."""
    t = self.detach()
    if t.dtype == Dtype.BFLOAT16:
        return (_rebuild, (t.float().numpy().copy(), Dtype.BFLOAT16, self.requires_grad))
    return (_rebuild, (np.array(t.numpy(), order="C"), self.dtype, self.requires_grad))  # keeps 0-d 0-d


def __iter__(self):
    if self.ndim == 0:
        raise TypeError("[iter] iteration over a 0-d tensor")
    return (self[i] for i in range(self.shape[0]))


def __contains__(self, item):
    return builtins.bool((self == item).any())


def __format__(self, spec):
    if self.ndim == 0:
        return format(self.item(), spec)
    return repr(self)


def _castable(result, out):
    """PyTorch's can_cast rule for in-place results: no float into integers, no number into bool."""
    if result == out:
        return True
    if result.is_floating_point and not out.is_floating_point:
        return False
    return out != bool_ or result == bool_


def _inplace(fn, name):
    """The in-place method ``name`` of the out-of-place method ``fn``: the result is copied into self
    (after PyTorch's cast check)."""

    def method(self, *args, **kwargs):
        # A tracked self is computed from a clone: fn may save its input for backward, and the
        # in-place write would otherwise invalidate it.
        src = self.clone() if self.requires_grad and not self.is_leaf and _C.is_grad_enabled() else self
        result = fn(src, *args, **kwargs)
        if not _castable(result.dtype, self.dtype):
            raise TypeError(f"[{name}] result type {result.dtype.name} can't be cast to the output type "
                            f"{self.dtype.name} of an in-place op")
        return self.copy_(result)

    method.__name__ = name
    method.__doc__ = f"In-place form of ``{name[:-1]}``."
    return method


def _new(factory):
    def method(self, *size, dtype=None, device=None, requires_grad=False):
        from . import _factories

        return getattr(_factories, factory)(*size, dtype=dtype or self.dtype,
                                            device=_factories._like_device(self, device),
                                            requires_grad=requires_grad)

    method.__doc__ = f"``{factory}`` with this tensor's dtype and device by default."
    return method


def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
    """``full`` with this tensor's dtype and device by default."""
    from ._factories import _like_device, full

    return full(size, fill_value, dtype=dtype or self.dtype, device=_like_device(self, device),
                requires_grad=requires_grad)


def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
    """A new tensor from ``data`` with this tensor's dtype and device by default."""
    from ._factories import _like_device

    return Tensor(data, dtype=dtype or self.dtype, device=_like_device(self, device), requires_grad=requires_grad)


def _set_data(self, value):
    if not isinstance(value, Tensor):
        raise TypeError(f"[Tensor.data] expected a Tensor, got {type(value).__name__}")
    setter = getattr(self, "_set_data", None)
    if setter is None:
        raise NotImplementedError("[Tensor.data] assigning data needs the compiled backend")
    setter(value)


_METHODS = {
    "to": to, "__repr__": __repr__, "__str__": __repr__, "register_hook": register_hook,
    "register_post_accumulate_grad_hook": register_post_accumulate_grad_hook, "__reduce__": __reduce__,
    "__iter__": __iter__, "__contains__": __contains__, "__format__": __format__, "new_full": new_full,
    "new_tensor": new_tensor,
    "float": _caster(Dtype.FLOAT32), "double": _caster(Dtype.FLOAT64), "half": _caster(Dtype.FLOAT16),
    "bfloat16": _caster(Dtype.BFLOAT16), "long": _caster(Dtype.INT64), "int": _caster(Dtype.INT32),
    "bool": _caster(Dtype.BOOL), "byte": _caster(Dtype.UINT8),
    "char": _caster(Dtype.INT8), "short": _caster(Dtype.INT16), "cfloat": _caster(Dtype.COMPLEX64),
    "cdouble": _caster(Dtype.COMPLEX128),
    "cpu": lambda self: self.to("cpu"), "cuda": lambda self, device=None: self.to(device or "cuda"),
    "type_as": lambda self, other: self.to(_ops._need_tensor(other, "type_as") or other.dtype),
    "max": _ops.max, "min": _ops.min, "sort": _ops.sort, "topk": _ops.topk,
    "softmax": _ops.softmax, "log_softmax": _ops.log_softmax,
    "new_zeros": _new("zeros"), "new_ones": _new("ones"), "new_empty": _new("empty"),
    "data": property(lambda self: self.detach(), _set_data,
                     doc="The tensor without autograd history (shares memory); assigning a tensor to it makes this "
                         "tensor a detached alias of that one (shape, dtype and device may change), as in PyTorch."),
}
# Installed only where the backend's class lacks them (the compiled one binds them itself).
_IF_MISSING = {
    "T": property(lambda self: self.permute(*reversed(range(self.ndim))), doc="All dims reversed."),
    "mT": property(lambda self: self.transpose(-2, -1), doc="The last two dims swapped."),
}
if hasattr(_C, "_frexp"):
    _METHODS["frexp"] = _ops.frexp
_INPLACE = ["clamp", "masked_fill", "clip", "where", "lerp"]
_UNARY = [name for name, _kind, predicate, *_ in _C._unary_ops() if not predicate]


def install(cls=Tensor):
    """Attaches the Python-level methods, the in-place forms and the factories to the Tensor class."""
    from . import _factories

    methods = dict(_METHODS)
    # In-place forms of the method forms: x.where_(cond, y) means x.where(cond, y), not where(x, ...). The
    # compiled backend binds some of them itself (written into the tensor's memory).
    for name in _INPLACE + _UNARY:
        if not hasattr(cls, name + "_"):
            methods[name + "_"] = _inplace(getattr(cls, name), name + "_")
    methods.update({name: fn for name, fn in _IF_MISSING.items() if not hasattr(cls, name)})
    for name, fn in methods.items():
        setattr(cls, name, fn)
    for name in ["float", "double", "half", "bfloat16", "long", "int", "bool", "byte"]:
        getattr(cls, name).__name__ = name
    for name in ["zeros", "ones", "full", "empty", "arange", "linspace", "eye", "rand", "randn", "randint", "randperm"]:
        setattr(cls, name, staticmethod(getattr(_factories, name)))
