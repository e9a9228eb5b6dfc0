"""Shared helpers of ``sneppx_core.special``: argument checks, PyTorch's dtype rules, and the float64
working precision the compositions run in.

Every composed function converts its inputs to float64, computes there and casts the result back to the
dtype PyTorch gives (integers and bools become float32). The casts are differentiable, so gradients
flow through them; float32 results are then correctly rounded to within a few units in the last place
even where the formula cancels in float64.
"""

from __future__ import annotations

import numpy as np

from ._backend import _C
from ._C_face import Dtype, Tensor

FLOATS = (Dtype.FLOAT32, Dtype.FLOAT64, Dtype.FLOAT16, Dtype.BFLOAT16)
F64 = Dtype.FLOAT64


def need_tensor(x, op):
    """Raises TypeError naming ``special.<op>`` unless ``x`` is a Tensor."""
    if not isinstance(x, Tensor):
        raise TypeError(f"[special.{op}] expected a Tensor, got {type(x).__name__}")


def out_dtype(x):
    """The floating dtype of a unary special function's result: the input's, or float32 for integers."""
    return x.dtype if x.dtype in FLOATS else Dtype.FLOAT32


def unary(x, op):
    """``(x in float64, result dtype)`` for a unary special function, after checking ``x``."""
    need_tensor(x, op)
    return x.to(F64), out_dtype(x)


def _binary_dtype(a, b):
    """PyTorch's result dtype: the floating dtypes of the tensors with dimensions decide, else those of the
    0-dim tensors; Python numbers and integer tensors alone give float32."""
    tensors = [t for t in (a, b) if isinstance(t, Tensor)]
    for group in ([t for t in tensors if t.ndim > 0], [t for t in tensors if t.ndim == 0]):
        dts = {t.dtype for t in group if t.dtype in FLOATS}
        if Dtype.FLOAT64 in dts:
            return Dtype.FLOAT64
        if Dtype.FLOAT32 in dts or len(dts) > 1:
            return Dtype.FLOAT32  # float16 with bfloat16 promotes to float32, as in PyTorch
        if dts:
            return dts.pop()
    return Dtype.FLOAT32


def binary(a, b, op):
    """``(a, b, result dtype)``: both as float64 tensors on one device (a Python number becomes a tensor
    there), broadcast to a common shape; raises TypeError or ValueError naming ``special.<op>``."""
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError(f"[special.{op}] expected at least one Tensor, got {type(a).__name__} and "
                        f"{type(b).__name__}")
    for v in (a, b):
        if not isinstance(v, (Tensor, int, float, bool)):
            raise TypeError(f"[special.{op}] expected a Tensor or a number, got {type(v).__name__}")
    dtype = _binary_dtype(a, b)
    ref = a if isinstance(a, Tensor) else b
    a, b = (v.to(F64) if isinstance(v, Tensor) else Tensor(np.asarray(v, dtype=np.float64)).to(ref.device)
            for v in (a, b))
    try:
        shape = np.broadcast_shapes(tuple(a.shape), tuple(b.shape))
    except ValueError:
        raise ValueError(f"[special.{op}] shapes {tuple(a.shape)} and {tuple(b.shape)} do not broadcast") from None
    return a.broadcast_to(shape), b.broadcast_to(shape), dtype


def grad_on():
    """True when autograd records operations."""
    return _C.is_grad_enabled()


def poly(t, coeffs):
    """``sum_k coeffs[k] * t**k`` by Horner's rule (``t`` a tensor, ``coeffs`` Python floats)."""
    acc = t * 0 + coeffs[-1]
    for c in reversed(coeffs[:-1]):
        acc = acc * t + c
    return acc
