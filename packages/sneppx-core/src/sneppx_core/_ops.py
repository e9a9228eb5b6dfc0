"""Module-level ops (PyTorch names).

Hot paths (operators, elementwise ops, reductions, matmul, views) are bound in C++ directly; the
unary ops and activations come from the formula sheet (``_C._unary_ops()``). What is defined here
only rearranges arguments or builds result tuples. Importing this module has no side effects:
``sneppx_core/__init__.py`` attaches the Tensor methods (``_tensor_methods.install``).
"""

from __future__ import annotations

import builtins
from collections import namedtuple

from ._backend import _C
from ._C_face import Device, Dtype, Tensor

# Unary ops and activations of the formula sheet (predicates and activations included).
UNARY_OPS = [name for name, *_ in _C._unary_ops()]
_NAMES = UNARY_OPS + [
    "gelu", "add", "sub", "mul", "div", "floor_divide", "remainder",
    "pow", "maximum", "minimum", "atan2", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
    "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift",
    "bitwise_right_shift", "where", "masked_fill", "clamp", "clip", "lerp", "sum",
    "mean", "prod", "amax", "amin", "argmax", "argmin", "var", "std", "logsumexp", "norm", "all", "any",
    "cumsum", "matmul", "mm", "bmm", "outer", "dot", "reshape", "transpose", "swapaxes", "permute", "squeeze",
    "unsqueeze", "broadcast_to", "flatten", "unflatten", "narrow", "select", "contiguous", "clone", "detach",
    "cat", "concat", "stack", "split", "chunk", "unbind", "tril", "triu", "trace", "flip", "roll", "movedim", "gather",
    "scatter", "scatter_add", "index_select", "index_add", "one_hot", "argsort", "nonzero", "masked_select",
    "multinomial", "bernoulli", "repeat_interleave",
]
globals().update({n: getattr(_C, n) for n in _NAMES})
from ._tensor_props import clone  # noqa: E402,F401  (with memory_format, as torch.clone)
# Special functions beyond the formula sheet's one-tensor form, and the complex views and constructors,
# bound by the compiled engine (the NumPy backend has none of them).
_SPECIAL = [n for n in ("polygamma", "mvlgamma", "nextafter", "gcd", "lcm", "ldexp", "view_as_real", "view_as_complex",
                        "complex", "polar") if hasattr(_C, n)]
globals().update({n: getattr(_C, n) for n in _SPECIAL})
Frexp = namedtuple("frexp", ["mantissa", "exponent"])
Frexp.__doc__ = "The (mantissa, exponent) result of frexp, as in PyTorch."


def frexp(input):
    """``input = mantissa * 2 ** exponent`` with ``0.5 <= |mantissa| < 1`` (int32 exponent; zeros, infinities and
    NaN keep their value as the mantissa, with exponent 0)."""
    return Frexp(*_C._frexp(input))

ValuesIndices = namedtuple("ValuesIndices", ["values", "indices"])
ValuesIndices.__doc__ = "The (values, indices) result of max, min, sort and topk, as in PyTorch."


def max(input, dim=None, keepdim=False):  # noqa: A001
    """Largest value; with ``dim``, a (values, indices) pair; with a tensor, the elementwise maximum."""
    if isinstance(dim, Tensor):
        return _C.maximum(input, dim)
    if dim is None:
        return _C.amax(input)
    return ValuesIndices(*_C._max_dim(input, dim, keepdim))


def min(input, dim=None, keepdim=False):  # noqa: A001
    """Smallest value; with ``dim``, a (values, indices) pair; with a tensor, the elementwise minimum."""
    if isinstance(dim, Tensor):
        return _C.minimum(input, dim)
    if dim is None:
        return _C.amin(input)
    return ValuesIndices(*_C._min_dim(input, dim, keepdim))


def sort(input, dim=-1, descending=False, stable=False):
    """Sorted values and their indices along ``dim`` (NaN sorts as the largest value)."""
    return ValuesIndices(*_C._sort(input, dim, descending, stable))


def topk(input, k, dim=-1, largest=True, sorted=True):  # noqa: A002
    """The ``k`` largest (or smallest) values along ``dim`` and their indices."""
    return ValuesIndices(*_C._topk(input, k, dim, largest, sorted))


def _need_tensor(x, op):
    if not isinstance(x, Tensor):
        raise TypeError(f"[{op}] expected a Tensor, got {type(x).__name__}")


def softmax(input, dim, dtype=None):
    """softmax(x)_i = exp(x_i) / sum_j exp(x_j) along ``dim``."""
    _need_tensor(input, "softmax")
    return _C._nn.softmax(input if dtype is None else input.to(dtype), dim, False)


def log_softmax(input, dim, dtype=None):
    """log_softmax(x)_i = x_i - logsumexp(x) along ``dim``."""
    _need_tensor(input, "log_softmax")
    return _C._nn.softmax(input if dtype is None else input.to(dtype), dim, True)


def numel(input):
    """Number of elements of ``input``."""
    _need_tensor(input, "numel")
    return input.numel()


def is_tensor(obj):
    """True if ``obj`` is a sneppx Tensor."""
    return isinstance(obj, Tensor)


def from_numpy(a):
    """Wraps a NumPy array as a tensor sharing its memory."""
    return Tensor.from_numpy(a)


def result_type(a, b):
    """The dtype PyTorch's promotion rules give for ``a`` op ``b`` (tensors or Python numbers).

    Shapes do not matter, only whether a tensor is 0-d: one-element stand-ins are combined.
    """
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError(f"[result_type] expected at least one Tensor, got {type(a).__name__} and {type(b).__name__}")

    def stand_in(x):
        return _C._zeros([1] if x.ndim else [], x.dtype, None) if isinstance(x, Tensor) else x

    a, b = stand_in(a), stand_in(b)
    return (a + b).dtype if isinstance(a, Tensor) else (b + a).dtype


__all__ = _NAMES + _SPECIAL + (["frexp"] if hasattr(_C, "_frexp") else []) + [
    "max", "min", "sort", "topk", "softmax", "log_softmax", "numel", "is_tensor", "from_numpy", "result_type",
    "ValuesIndices"]
