"""``finfo`` and ``iinfo``: the numeric limits of a dtype, as ``torch.finfo`` and ``torch.iinfo`` give them."""

from __future__ import annotations

import numpy as np

from ._C_face import Dtype, bfloat16, complex64, complex128, float16, float32, float64, int8, int16, int32, int64, uint8


class finfo:
    """Limits of a floating dtype (float32 by default): ``bits``, ``eps`` (the gap above 1), ``max``, ``min``
    (= -max), ``tiny`` and ``smallest_normal`` (the least positive normal number), ``resolution`` (10 ** -digits)
    and ``dtype`` (the name). ``sx.finfo(x.dtype).min`` is the usual fill for masked attention scores."""

    def __init__(self, type: Dtype = float32):
        type = {complex64: float32, complex128: float64}.get(type, type)  # a complex dtype: its parts' limits
        if type == bfloat16:  # NumPy has no bfloat16: 8 exponent bits as float32, 7 fraction bits
            self.bits, self.eps, self.max, self.tiny, self.resolution = 16, 2.0 ** -7, 3.3895313892515355e38, \
                2.0 ** -126, 0.01
        elif type in (float16, float32, float64):
            info = np.finfo({float16: np.float16, float32: np.float32, float64: np.float64}[type])
            self.bits, self.eps, self.max = info.bits, float(info.eps), float(info.max)
            self.tiny, self.resolution = float(info.smallest_normal), 10.0 ** -info.precision
        else:
            raise TypeError(f"[finfo] expected a floating dtype, got {type!r}")
        self.min, self.smallest_normal, self.dtype = -self.max, self.tiny, type.name

    def __repr__(self):
        return (f"finfo(resolution={self.resolution}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.tiny:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """Limits of an integer dtype: ``bits``, ``min``, ``max`` and ``dtype`` (the name)."""

    def __init__(self, type: Dtype):
        kinds = {uint8: np.uint8, int8: np.int8, int16: np.int16, int32: np.int32, int64: np.int64}
        if type not in kinds:
            raise TypeError(f"[iinfo] expected an integer dtype, got {type!r}")
        info = np.iinfo(kinds[type])
        self.bits, self.min, self.max, self.dtype = info.bits, int(info.min), int(info.max), type.name

    def __repr__(self):
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"
