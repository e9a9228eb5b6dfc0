"""PyTorch's legacy tensor types: ``FloatTensor([1, 2])``, ``isinstance(x, LongTensor)`` and
``Tensor.type``.

Each type is a class whose call builds a plain :class:`Tensor` of its dtype: ``LongTensor([1, 2])``
holds int64 data and ``FloatTensor(2, 3)`` is an uninitialised 2x3 float32 tensor, as in PyTorch.
"""

from __future__ import annotations

import builtins

from ._C_face import Dtype, Tensor


class _LegacyType(type):
    def __call__(cls, *args, device=None):
        from . import _factories

        if device is not None and str(device) != "cpu":
            raise RuntimeError(f"[{cls.__name__}] legacy constructors only make CPU tensors, got device={device!r}")
        if not args:
            return _factories.empty(0, dtype=cls.dtype, device="cpu")
        if all(isinstance(a, builtins.int) and not isinstance(a, builtins.bool) for a in args):
            return _factories.empty(*args, dtype=cls.dtype, device="cpu")
        if len(args) == 1:
            data = args[0]
            return data.to(cls.dtype) if isinstance(data, Tensor) else Tensor(data, dtype=cls.dtype)
        raise TypeError(f"[{cls.__name__}] expected sizes or one sequence of data, got {args!r}")

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype == cls.dtype and obj.device.type == "cpu"

    def __repr__(cls):
        return f"<class 'sneppx.{cls.__name__}'>"


def _legacy(name, dtype):
    doc = f"Legacy constructor: ``{name}(data)`` or ``{name}(*sizes)`` makes a {dtype.name} CPU tensor."
    return _LegacyType(name, (), {"dtype": dtype, "__doc__": doc})


FloatTensor = _legacy("FloatTensor", Dtype.FLOAT32)
DoubleTensor = _legacy("DoubleTensor", Dtype.FLOAT64)
HalfTensor = _legacy("HalfTensor", Dtype.FLOAT16)
BFloat16Tensor = _legacy("BFloat16Tensor", Dtype.BFLOAT16)
LongTensor = _legacy("LongTensor", Dtype.INT64)
IntTensor = _legacy("IntTensor", Dtype.INT32)
BoolTensor = _legacy("BoolTensor", Dtype.BOOL)
ByteTensor = _legacy("ByteTensor", Dtype.UINT8)
CharTensor = _legacy("CharTensor", Dtype.INT8)
ShortTensor = _legacy("ShortTensor", Dtype.INT16)
TYPES = [FloatTensor, DoubleTensor, HalfTensor, BFloat16Tensor, LongTensor, IntTensor, BoolTensor, ByteTensor,
         CharTensor, ShortTensor]
_BY_NAME = {t.__name__: t for t in TYPES}


def type_(self, dtype=None, non_blocking=False, **kwargs):
    """Without an argument, the type name (``"sneppx.FloatTensor"``); with a dtype, a legacy type
    such as ``sneppx_core.LongTensor`` or its name (``"torch.LongTensor"`` too), the converted tensor."""
    if dtype is None:
        for t in TYPES:
            if t.dtype == self.dtype:
                return "sneppx." + t.__name__
        return "sneppx." + self.dtype.name
    if isinstance(dtype, _LegacyType):
        return self.to(dtype.dtype)
    if isinstance(dtype, str) and dtype.rpartition(".")[2] in _BY_NAME:
        return self.to(_BY_NAME[dtype.rpartition(".")[2]].dtype)
    return self.to(dtype)


def _install(cls):
    """Attaches ``Tensor.type``."""
    type_.__name__ = "type"
    cls.type = type_


__all__ = [t.__name__ for t in TYPES]
