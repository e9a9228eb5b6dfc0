"""The NumPy backend: the names of the compiled ``_SNEPPX_c`` module that inference uses, computed
with NumPy, so that sneppx_core's Python layer runs unchanged on top of it.

It covers tensor creation and conversion, views and indexing, elementwise ops and reductions,
matrix products, the forward kernels of ``functional`` and random numbers. Names of the compiled
module outside that surface resolve to functions raising NotImplementedError (naming the op and
this backend); everything that needs the autograd tape (``backward``, ``autograd.grad``, the fused
optimizer steps) raises RuntimeError saying that training requires the C backend.
"""

from __future__ import annotations

import os
import types

import numpy as np

from . import _factory, _math, _nn, _shape
from ._core import (  # noqa: F401  (names of the compiled module)
    TRAINING_MESSAGE, Device, Dtype, _default_dtype, _inference_mode_enabled, _set_default_dtype, _set_grad_enabled,
    _set_inference_mode, is_grad_enabled, needs_tape, unsupported,
)
from ._factory import (  # noqa: F401
    Generator, _arange, _empty, _eye, _full, _linspace, _log_standard_gamma, _rand, _randint, _randn, _randperm,
    _to_device, _to_dtype, _zeros, bernoulli, default_generator, multinomial,
)
from ._math import *  # noqa: F401,F403
from ._math import _NUMBER, UNARY_FUNCS, _unary_ops  # noqa: F401
from ._reduce import *  # noqa: F401,F403
from ._shape import *  # noqa: F401,F403
from ._tensor import Tensor, wrap

_HAS_CUDA = False
BACKEND = "numpy"

globals().update(UNARY_FUNCS)
_nn = types.SimpleNamespace(**{n: getattr(_nn, n) for n in (
    "softmax", "layer_norm", "rms_norm", "linear", "embedding", "dropout", "glu", "gated",
    "scaled_dot_product_attention", "nll_loss", "cross_entropy", "pointwise_loss", "sgd_step", "adam_step",
    "lion_step", "lamb_step", "scale_", "total_norm")})


def get_num_threads():
    """Threads NumPy's BLAS may use (the OMP_NUM_THREADS setting, else the CPU count)."""
    return int(os.environ.get("OMP_NUM_THREADS", os.cpu_count() or 1))


def set_num_threads(n):
    """Accepted for API compatibility; NumPy's BLAS threads are set by its environment variables."""
    if int(n) < 1:
        raise ValueError(f"[set_num_threads] expected a positive number of threads, got {n}")


def empty_cache():
    """0: the NumPy backend keeps no allocation cache."""
    return 0


def cached_bytes():
    """0: the NumPy backend keeps no allocation cache."""
    return 0


def cuda_is_available():
    """False: the NumPy backend has no CUDA."""
    return False


def cuda_device_count():
    """0: the NumPy backend has no CUDA."""
    return 0


def from_dlpack(obj):
    """A tensor sharing the memory of a DLPack-capable CPU array."""
    return Tensor.from_numpy(np.from_dlpack(obj))


def _grad(*args, **kwargs):
    needs_tape("grad")


class _Missing:
    """A name of the compiled module that the NumPy backend does not provide: calling it (or an
    attribute of it, for the op groups such as ``_conv``) raises NotImplementedError naming the op."""

    def __init__(self, name):
        self.__name__ = name

    def __call__(self, *args, **kwargs):
        unsupported(self.__name__.split(".")[-1].lstrip("_"))

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Missing(f"{self.__name__}.{attr}")


def __getattr__(name):
    """Names of the compiled module outside the inference surface (see ``_Missing``)."""
    if name.startswith("__"):
        raise AttributeError(name)
    return _Missing(name)


def _guard(fn, name):
    """``fn`` with argument errors of NumPy's making turned into TypeError/ValueError naming the op."""
    def op(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except AttributeError as e:
            types_ = ", ".join(type(a).__name__ for a in args)
            raise TypeError(f"[{name}] unsupported argument types ({types_}): {e}") from None
        except OverflowError as e:
            raise ValueError(f"[{name}] argument out of range: {e}") from None

    op.__name__, op.__doc__ = name, fn.__doc__
    return op


# ---------------------------------------------------------------- Tensor methods from the op functions
def _method(fn):
    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)

    method.__name__, method.__doc__ = fn.__name__, fn.__doc__
    return method


def _varargs(fn):
    def method(self, *args):
        return fn(self, args[0] if len(args) == 1 and isinstance(args[0], (tuple, list)) else args)

    method.__name__, method.__doc__ = fn.__name__, fn.__doc__
    return method


def _inplace(fn, name):
    def method(self, *args, **kwargs):
        return self._inplace(fn(self, *args, **kwargs), name)

    method.__doc__ = f"In-place form of ``{fn.__name__}``."
    return method


def _rop(fn):
    def method(self, other):
        return fn(other, self)

    return method


_METHOD_NAMES = list(UNARY_FUNCS) + [
    "add", "sub", "mul", "div", "floor_divide", "remainder", "fmod", "pow", "maximum", "minimum", "atan2", "eq", "ne", "lt",
    "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
    "bitwise_not", "bitwise_left_shift", "bitwise_right_shift", "masked_fill", "clamp", "clip", "lerp", "gelu",
    "sum", "mean", "prod", "amax", "amin", "argmax", "argmin", "var", "std", "logsumexp", "norm", "all", "any",
    "cumsum", "matmul", "mm", "bmm", "dot", "outer", "transpose", "swapaxes", "squeeze", "unsqueeze",
    "broadcast_to", "flatten", "unflatten", "narrow", "select", "contiguous", "clone", "split", "chunk", "unbind",
    "tril", "triu", "trace", "flip", "roll", "gather", "scatter", "scatter_add", "index_select", "index_add", "nonzero",
    "masked_select", "argsort", "multinomial", "bernoulli", "repeat_interleave",
]
_GUARDED = _METHOD_NAMES + ["reshape", "permute", "where", "cat", "concat", "stack", "movedim", "one_hot",
                             "_sort", "_kthvalue", "_topk", "_max_dim", "_min_dim", "_cum_extreme", "from_dlpack",
                             "_to_dtype", "_full"]
for _name in _GUARDED:
    globals()[_name] = _guard(globals()[_name], _name.lstrip("_"))
for _name in _METHOD_NAMES:
    setattr(Tensor, _name, _method(globals()[_name]))
for _name, _fn in {"reshape": reshape, "permute": permute}.items():  # noqa: F405
    setattr(Tensor, _name, _varargs(_fn))
Tensor.view = _guard(_shape.view_, "view")
Tensor.expand = _guard(_shape.expand, "expand")
Tensor.repeat = _guard(_shape.repeat, "repeat")
Tensor.expand_as = _guard(lambda self, other: _shape.broadcast_to(self, other.shape), "expand_as")
Tensor.size = _guard(Tensor.size, "size")
def _where_method(self, condition, other):
    """Elements of self where ``condition`` is True, else of ``other``."""
    return where(condition, self, other)  # noqa: F405


Tensor.where = _where_method
Tensor.normal_ = _factory.normal_
Tensor.uniform_ = _factory.uniform_
for _name, _fn in {"add_": add, "sub_": sub, "mul_": mul, "div_": div, "pow_": pow}.items():  # noqa: F405
    setattr(Tensor, _name, _inplace(_fn, _name))

_OPERATORS = {
    "add": add, "sub": sub, "mul": mul, "truediv": div, "floordiv": floor_divide, "mod": remainder,  # noqa: F405
    "pow": pow, "matmul": matmul, "and": bitwise_and, "or": bitwise_or, "xor": bitwise_xor,  # noqa: F405
    "lshift": bitwise_left_shift, "rshift": bitwise_right_shift,  # noqa: F405
}
def _forward_op(f, reflected):
    """``self OP other``; NotImplemented for an operand of another kind whose type has the reflected method (a
    sparse tensor), so that Python calls it, as the compiled backend does."""
    def op(self, other):
        if not isinstance(other, (Tensor, np.ndarray, list, tuple) + _NUMBER) and hasattr(type(other), reflected):
            return NotImplemented
        return f(self, other)
    return op


for _name, _fn in _OPERATORS.items():
    setattr(Tensor, f"__{_name}__", _forward_op(_fn, f"__r{_name}__"))
    setattr(Tensor, f"__r{_name}__", _rop(_fn))
    setattr(Tensor, f"__i{_name}__", _inplace(_fn, f"{_fn.__name__}_"))
for _name, _fn in {"eq": eq, "ne": ne, "lt": lt, "le": le, "gt": gt, "ge": ge}.items():  # noqa: F405
    setattr(Tensor, f"__{_name}__", (lambda f: lambda self, other: f(self, other) if isinstance(
        other, (Tensor, int, float, bool, np.number, np.bool_)) else NotImplemented)(_fn))
Tensor.__hash__ = lambda self: id(self)
Tensor.__neg__ = lambda self: neg(self)  # noqa: F405
Tensor.__pos__ = lambda self: self
Tensor.__abs__ = lambda self: abs(self)  # noqa: F405
Tensor.__invert__ = lambda self: bitwise_not(self)  # noqa: F405
Tensor.__rmatmul__ = lambda self, other: matmul(other, self)  # noqa: F405

