"""Tensor methods written in Python: conversions, repr, pickling, hooks and result tuples."""

from __future__ import annotations

import builtins

import numpy as np

from . import _SNEPPX_c as _C
from . import _ops
from ._C_face import Device, Dtype, Tensor


def _parse_to(args, kwargs):
    dtype = kwargs.pop("dtype", None)
    device = kwargs.pop("device", None)
    for a in args:
        if isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        elif isinstance(a, Dtype):
            dtype = a
        elif isinstance(a, (str, Device)):
            if isinstance(a, str) and a in ("float32", "float64", "float16", "bfloat16", "int32", "int64", "bool", "uint8"):
                dtype = a
            else:
                device = a
        elif a is not None:
            raise TypeError(f"[to] unexpected argument {a!r}")
    return dtype, device


def to(self, *args, **kwargs):
    """Converts dtype and/or device: ``to(dtype)``, ``to("cpu")``, ``to(device, dtype)``, ``to(other)``."""
    kwargs.pop("non_blocking", None)
    copy = kwargs.pop("copy", False)
    dtype, device = _parse_to(args, kwargs)
    out = self
    if device is not None and Device(device) != out.device:
        out = _C._to_device(out, device)
    if dtype is not None:
        out = _C._to_dtype(out, dtype if isinstance(dtype, Dtype) else getattr(Dtype, str(dtype).upper()))
    return out.clone() if copy and out is self else out


def _caster(dtype):
    def cast(self):
        return _C._to_dtype(self, dtype)

    cast.__doc__ = f"Returns the tensor converted to {dtype!r} (self if it already is)."
    return cast


def _fmt_array(self):
    t = self.detach()
    if t.dtype in (Dtype.BFLOAT16, Dtype.FLOAT16):
        t = t.to(Dtype.FLOAT32)
    a = t.numpy()
    if a.dtype.kind == "f":
        body = np.array2string(a, separator=", ", precision=4, prefix="tensor(", threshold=1000, edgeitems=3,
                               floatmode="maxprec_equal")
    else:
        body = np.array2string(a, separator=", ", prefix="tensor(", threshold=1000, edgeitems=3)
    return body


def __repr__(self):
    """PyTorch-style repr: ``tensor([1., 2.], requires_grad=True)``."""
    extras = []
    default = {Dtype.FLOAT32, Dtype.INT64, Dtype.BOOL}
    if self.dtype not in default or self.numel() == 0:
        extras.append(f"dtype={self.dtype!r}")
    if self.device != "cpu":
        extras.append(f"device='{self.device}'")
    if self.grad_fn is not None:
        extras.append(f"grad_fn={self.grad_fn!r}")
    elif self.requires_grad:
        extras.append("requires_grad=True")
    body = _fmt_array(self)
    return "tensor(" + body + "".join(", " + e for e in extras) + ")"


class RemovableHandle:
    """Returned by ``register_hook``; ``remove()`` disables the hook."""

    def __init__(self, tensor, index):
        self._tensor, self._index = tensor, index

    def remove(self):
        self._tensor._remove_hook(self._index)


def register_hook(self, hook):
    """Calls ``hook(grad)`` when the gradient of this tensor is computed; a returned tensor replaces it."""
    return RemovableHandle(self, self._register_hook(hook))


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
    return (_rebuild, (np.ascontiguousarray(t.numpy()), self.dtype, self.requires_grad))


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


def _inplace(name):
    fn = getattr(_C, name)

    def method(self, *args, **kwargs):
        return self.copy_(fn(self, *args, **kwargs))

    method.__doc__ = f"In-place form of ``{name}``."
    return method


def _new(factory):
    def method(self, *size, dtype=None, device=None, requires_grad=False):
        from . import _factories

        return getattr(_factories, factory)(*size, dtype=dtype or self.dtype, device=device,
                                            requires_grad=requires_grad)

    method.__doc__ = f"``{factory}`` with this tensor's dtype by default."
    return method


def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
    """``full`` with this tensor's dtype by default."""
    from ._factories import full

    return full(size, fill_value, dtype=dtype or self.dtype, device=device, requires_grad=requires_grad)


def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
    """A new tensor from ``data`` with this tensor's dtype by default."""
    return Tensor(data, dtype=dtype or self.dtype, requires_grad=requires_grad)


_METHODS = {
    "to": to, "__repr__": __repr__, "__str__": __repr__, "register_hook": register_hook, "__reduce__": __reduce__,
    "__iter__": __iter__, "__contains__": __contains__, "__format__": __format__, "new_full": new_full,
    "new_tensor": new_tensor,
    "float": _caster(Dtype.FLOAT32), "double": _caster(Dtype.FLOAT64), "half": _caster(Dtype.FLOAT16),
    "bfloat16": _caster(Dtype.BFLOAT16), "long": _caster(Dtype.INT64), "int": _caster(Dtype.INT32),
    "bool": _caster(Dtype.BOOL), "byte": _caster(Dtype.UINT8),
    "cpu": lambda self: self.to("cpu"), "cuda": lambda self, device=None: self.to(device or "cuda"),
    "type_as": lambda self, other: self.to(other.dtype),
    "max": _ops.max, "min": _ops.min, "sort": _ops.sort, "topk": _ops.topk,
    "softmax": _ops.softmax, "log_softmax": _ops.log_softmax,
    "new_zeros": _new("zeros"), "new_ones": _new("ones"), "new_empty": _new("empty"),
    "T": property(lambda self: self.permute(*reversed(range(self.ndim))), doc="All dims reversed."),
    "mT": property(lambda self: self.transpose(-2, -1), doc="The last two dims swapped."),
    "data": property(lambda self: self.detach(), doc="The tensor without autograd history (shares memory)."),
}
for _name in ["abs", "neg", "exp", "log", "sqrt", "sigmoid", "tanh", "relu", "clamp", "masked_fill", "floor", "ceil",
              "round", "sign", "reciprocal", "square", "sin", "cos", "clip", "where", "lerp"]:
    _METHODS[_name + "_"] = _inplace(_name)

for _name, _fn in _METHODS.items():
    setattr(Tensor, _name, _fn)
for _name in ["float", "double", "half", "bfloat16", "long", "int", "bool", "byte"]:
    getattr(Tensor, _name).__name__ = _name


def _attach_factories():
    from . import _factories

    for name in ["zeros", "ones", "full", "empty", "arange", "linspace", "eye", "rand", "randn", "randint", "randperm"]:
        setattr(Tensor, name, staticmethod(getattr(_factories, name)))


_attach_factories()
