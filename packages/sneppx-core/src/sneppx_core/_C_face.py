"""The compiled types and dtype constants, re-exported under their public names."""

from __future__ import annotations

from ._SNEPPX_c import (  # noqa: F401
    Device, Dtype, Generator, Tensor, default_generator, empty_cache, from_dlpack, get_num_threads,
    is_grad_enabled, set_num_threads,
)

bool_ = Dtype.BOOL
uint8 = Dtype.UINT8
int32 = Dtype.INT32
int64 = Dtype.INT64
float16 = Dtype.FLOAT16
bfloat16 = Dtype.BFLOAT16
float32 = Dtype.FLOAT32
float64 = Dtype.FLOAT64

Dtype.__str__ = Dtype.__repr__
