"""Attaching the added functions to ``Tensor`` as methods, with their in-place forms, behind a
guard that turns unusable arguments into TypeError/ValueError naming the op."""

from __future__ import annotations

import functools

from ._backend import _C
from ._C_face import Tensor
from ._tensor_methods import _inplace
from ._tensor_extra import (
    addcdiv, addcmul, addmm, baddbmm, clamp_max, clamp_min, cumprod, index_copy_, index_fill, masked_scatter,
    nan_to_num, nelement, scatter_reduce, t, unfold,
)


def _checked(fn, name):
    """``fn`` raising TypeError (ValueError for out-of-range numbers), with the op name and the
    argument types, for arguments it cannot use."""

    @functools.wraps(fn)
    def op(*args, **kwargs):
        if args and not isinstance(args[0], Tensor):
            raise TypeError(f"[{name}] expected a Tensor as the first argument, got {type(args[0]).__name__}")
        try:
            return fn(*args, **kwargs)
        except AttributeError as e:  # a non-tensor where a tensor was needed
            types = ", ".join(type(a).__name__ for a in args)
            raise TypeError(f"[{name}] unsupported argument types ({types}): {e}") from None
        except (OverflowError, ZeroDivisionError) as e:
            raise ValueError(f"[{name}] argument out of range: {e}") from None

    op.__name__ = name
    return op


def _install(cls, functions, more_methods, more_docs, more_inplace):
    """Attaches ``functions`` as methods, the methods of this module and ``more_methods``, and the
    in-place forms of this module's functions and of ``more_inplace``; existing names are kept."""
    methods = dict(functions)
    for name, fn in more_methods.items():
        if name in more_docs:
            fn.__name__, fn.__doc__ = name, more_docs[name]
        methods[name] = fn
    methods.update({
        "nelement": nelement, "unfold": unfold, "index_copy_": index_copy_,
        "view_as": lambda self, other: self.view(*other.shape),
        "reshape_as": lambda self, other: self.reshape(tuple(other.shape)),
        "mH": property(lambda self: self.transpose(-2, -1), doc="The last two dims swapped (real dtypes)."),
        "H": property(lambda self: t(self), doc="Transpose of a matrix (real dtypes)."),
        "adjoint": lambda self: self.transpose(-2, -1),
        "ndimension": lambda self: self.ndim, "is_cpu": property(lambda self: self.device.type == "cpu"),
        "get_device": lambda self: -1 if self.device.type == "cpu" else self.device.index,
    })
    for name in ("view_as", "reshape_as", "adjoint", "ndimension", "get_device"):
        methods[name].__name__ = name
    methods["view_as"].__doc__ = "``self.view(other.shape)``."
    methods["reshape_as"].__doc__ = "``self.reshape(other.shape)``."
    methods["adjoint"].__doc__ = "The last two dims swapped (the conjugate transpose of a real tensor)."
    methods["ndimension"].__doc__ = "Number of dims (alias of ``ndim``)."
    methods["get_device"].__doc__ = "The device index, or -1 for the CPU."
    inplace = {"addmm": addmm, "baddbmm": baddbmm, "addcmul": addcmul, "addcdiv": addcdiv, "clamp_min": clamp_min,
               "clamp_max": clamp_max, "nan_to_num": nan_to_num, "index_fill": index_fill,
               "masked_scatter": masked_scatter, "cumprod": cumprod, "scatter_reduce": scatter_reduce,
               "index_add": _C.index_add, "scatter": _C.scatter, "scatter_add": _C.scatter_add, "t": t,
               "tril": _C.tril, "triu": _C.triu, "log1p": _C.log1p, "expm1": _C.expm1, "rsqrt": _C.rsqrt,
               "log2": _C.log2, "trunc": _C.trunc, "erf": _C.erf, "cumsum": _C.cumsum, "eq": _C.eq, "ne": _C.ne,
               "lt": _C.lt, "le": _C.le, "gt": _C.gt, "ge": _C.ge, "logical_and": _C.logical_and,
               "logical_or": _C.logical_or, "logical_xor": _C.logical_xor, "logical_not": _C.logical_not,
               "floor_divide": _C.floor_divide, "remainder": _C.remainder, "atan2": _C.atan2}
    for name in ("greater", "greater_equal", "less", "less_equal", "not_equal", "index_put"):
        inplace[name] = functions[name]
    inplace.update({name: functions[name] for name in more_inplace if name in functions})
    for name, fn in inplace.items():
        methods[name + "_"] = _inplace(fn, name + "_")
    for name, fn in methods.items():
        if not hasattr(cls, name):
            setattr(cls, name, fn if isinstance(fn, property) else _checked(fn, name))
