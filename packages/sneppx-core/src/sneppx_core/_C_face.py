"""The backend's types and dtype constants, re-exported under their public names."""

from __future__ import annotations

from ._backend import _C

Device, Dtype, Generator, Tensor = _C.Device, _C.Dtype, _C.Generator, _C.Tensor
default_generator, empty_cache, from_dlpack = _C.default_generator, _C.empty_cache, _C.from_dlpack
get_num_threads, is_grad_enabled, set_num_threads = _C.get_num_threads, _C.is_grad_enabled, _C.set_num_threads

bool_ = Dtype.BOOL
uint8 = Dtype.UINT8
int8 = Dtype.INT8
int16 = Dtype.INT16
int32 = Dtype.INT32
int64 = Dtype.INT64
float16 = Dtype.FLOAT16
bfloat16 = Dtype.BFLOAT16
float32 = Dtype.FLOAT32
float64 = Dtype.FLOAT64
complex64 = Dtype.COMPLEX64
complex128 = Dtype.COMPLEX128


def _dtype_key(obj):
    if isinstance(obj, Dtype):
        return obj.name
    if isinstance(obj, str):
        return obj[len("sneppx."):] if obj.startswith("sneppx.") else obj
    return None


# Dtypes compare equal to their names, so code written with strings keeps working.
Dtype.__eq__ = lambda self, other: self.name == _dtype_key(other)
Dtype.__ne__ = lambda self, other: self.name != _dtype_key(other)
Dtype.__hash__ = lambda self: hash(self.name)
Dtype.__repr__ = lambda self: "sneppx." + self.name
Dtype.__str__ = Dtype.__repr__
