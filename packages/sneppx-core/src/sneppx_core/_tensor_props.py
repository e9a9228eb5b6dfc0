"""PyTorch's layout and memory-format objects, its math constants and the Tensor properties that say what a
tensor is not (no XPU/MPS/meta devices; a dense tensor is not sparse, quantized or nested).

Memory formats: SneppX tensors are strided, so ``channels_last`` (NHWC order of an NCHW tensor) and
``channels_last_3d`` (NDHWC) are real stride orders: ``x.contiguous(memory_format=sx.channels_last)`` returns a
copy whose strides are PyTorch's, and ``x.is_contiguous(memory_format=...)`` reads the strides. The ops do not
propagate the format: their results are row-major whatever the inputs' layout (the values are the same).
``preserve_format`` keeps a channels-last layout and otherwise gives a row-major result.
"""

from __future__ import annotations

import math
import warnings

from ._backend import NAME, _C
from ._C_face import Dtype, Tensor


class _Named:
    """A singleton named like PyTorch's (``sneppx.strided``); pickles and copies as itself."""

    __slots__ = ("_name",)
    __module__ = "sneppx_core"

    def __new__(cls, *args, **kwargs):
        raise TypeError(f"cannot create 'sneppx_core.{cls.__name__}' instances")

    @classmethod
    def _make(cls, name):
        obj = object.__new__(cls)
        obj._name = name
        return obj

    def __repr__(self):
        return f"sneppx.{self._name}"

    def __reduce__(self):
        return self._name  # the module-level name of sneppx_core


class layout(_Named):
    """The memory layout of a tensor (``torch.layout``): SneppX tensors are all ``strided``."""

    __slots__ = ()
    __module__ = "sneppx_core"


class memory_format(_Named):
    """A memory format (``torch.memory_format``): ``contiguous_format``, ``preserve_format``, ``channels_last``,
    ``channels_last_3d``."""

    __slots__ = ()
    __module__ = "sneppx_core"


strided, sparse_coo, sparse_csr, sparse_csc, sparse_bsr, sparse_bsc = (
    layout._make(n) for n in ("strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc"))
contiguous_format, preserve_format, channels_last, channels_last_3d = (
    memory_format._make(n) for n in ("contiguous_format", "preserve_format", "channels_last", "channels_last_3d"))
legacy_contiguous_format = contiguous_format  # PyTorch's alias
pi, e, inf, nan, newaxis = math.pi, math.e, math.inf, math.nan, None

# channels-last formats: the rank they need and the permutation that makes them row-major
_PERM = {channels_last: (4, (0, 2, 3, 1)), channels_last_3d: (5, (0, 2, 3, 4, 1))}
_IS_CONTIGUOUS = Tensor.is_contiguous  # the backend's argument-free row-major test
_CONTIGUOUS, _CLONE = _C.contiguous, _C.clone  # the backend's ops, bound once (the default formats' fast paths)


def _check(x, fmt, op):
    if not isinstance(x, Tensor):
        raise TypeError(f"[{op}] expected a Tensor, got {type(x).__name__}")
    if not isinstance(fmt, memory_format):
        raise TypeError(f"[{op}] argument 'memory_format' must be sneppx_core.memory_format, not {type(fmt).__name__}")


def _perm(x, fmt, op):
    rank, perm = _PERM[fmt]
    if x.ndim != rank:
        raise RuntimeError(f"[{op}] required rank {rank} tensor to use {fmt._name} format")
    return perm


def _strides_like(x, fmt):
    """PyTorch's reading of whether ``x``'s strides look like the channels-last ``fmt``: the dims in the format's
    order must have non-decreasing strides; ambiguous cases (N111, a zero-size dim, a zero channel stride) count
    as row-major."""
    rank, perm = _PERM[fmt]
    if x.ndim != rank or x.stride(1) == 0:
        return False
    shape, stride, low = x.shape, x.stride(), 0
    for d in reversed(perm):
        if shape[d] == 0 or stride[d] < low or (d == 0 and low == stride[1]):
            return False
        low = stride[d] * max(1, shape[d])
    return True


def _suggest(x):
    """The format ``x``'s strides suggest (PyTorch's ``suggest_memory_format``): the one ``preserve_format`` keeps
    and the one ``to(memory_format=...)`` need not copy for."""
    return next((fmt for fmt in _PERM if _strides_like(x, fmt)), contiguous_format)


def _to_format(x, fmt, op, copy):
    """``x`` laid out in the channels-last ``fmt`` (a copy when ``copy``; else ``x`` itself if already so)."""
    perm = _perm(x, fmt, op)
    if not copy and is_contiguous(x, fmt):
        return x
    inverse = sorted(range(len(perm)), key=perm.__getitem__)
    y = x.permute(*perm)
    return _C.contiguous(_C.clone(y) if copy else y).permute(*inverse)  # (a backend's clone may keep strides)


def is_contiguous(self, memory_format=contiguous_format):
    """Whether the elements lie in memory in the order of ``memory_format`` without gaps: row-major for
    ``contiguous_format`` (and ``preserve_format``), NHWC / NDHWC for ``channels_last`` / ``channels_last_3d``
    (strides of size-1 dims do not matter; a tensor of another rank is not channels-last)."""
    if memory_format is contiguous_format:  # the usual call: the backend's test alone
        return _IS_CONTIGUOUS(self) or self.numel() == 0  # no elements: contiguous, as in PyTorch
    _check(self, memory_format, "is_contiguous")
    if memory_format not in _PERM:
        return self.numel() == 0 or _IS_CONTIGUOUS(self)  # no elements: contiguous, as in PyTorch
    rank, perm = _PERM[memory_format]
    if self.ndim != rank:
        return False
    shape, stride, expected = self.shape, self.stride(), 1
    for d in reversed(perm):
        if shape[d] != 1:
            if stride[d] != expected:
                return False
            expected *= shape[d]
    return True


def contiguous(self, memory_format=contiguous_format):
    """The tensor itself when laid out in ``memory_format``, else a copy so laid out (recorded for autograd)."""
    if memory_format is contiguous_format:  # the usual call: the backend's op alone
        return _CONTIGUOUS(self)
    _check(self, memory_format, "contiguous")
    if memory_format in _PERM:
        return _to_format(self, memory_format, "contiguous", copy=False)
    if is_contiguous(self):
        return self
    if memory_format is preserve_format:
        raise RuntimeError("[contiguous] preserve memory format is unsupported by the contiguous operator")
    return _C.contiguous(self)


def clone(input, *, memory_format=preserve_format):
    """A copy of ``input`` (recorded for autograd), laid out in ``memory_format``; ``preserve_format`` keeps a
    channels-last layout, any other layout is copied row-major."""
    if memory_format is preserve_format and isinstance(input, Tensor) and input.ndim < 4:  # nothing to preserve
        return _CLONE(input)
    _check(input, memory_format, "clone")
    fmt = _suggest(input) if memory_format is preserve_format else memory_format
    if fmt in _PERM:
        return _to_format(input, fmt, "clone", copy=True)
    out = _C.clone(input)
    return out if memory_format is preserve_format else _C.contiguous(out)


def convert(src, out, memory_format, op):
    """``out`` (``src`` converted by ``op``, or ``src`` itself when nothing changed) laid out in ``memory_format``.
    As in PyTorch, ``src`` itself is kept when its strides suggest that format (always for ``preserve_format``);
    a converted ``out`` takes ``src``'s suggested format under ``preserve_format``."""
    if memory_format is preserve_format and isinstance(src, Tensor) and src.ndim < 4:  # the usual call
        return out
    _check(src, memory_format, op)
    if out is src:
        if memory_format is preserve_format or _suggest(src) is memory_format:
            return src
        return clone(src, memory_format=memory_format)
    fmt = _suggest(src) if memory_format is preserve_format else memory_format
    return _to_format(out, fmt, op, copy=False) if fmt in _PERM else _C.contiguous(out)


def like_format(t, out, memory_format, op):
    """``out``, a ``*_like`` factory's result for ``t``, in ``memory_format`` (PyTorch's keyword of those factories,
    default ``preserve_format``: ``t``'s channels-last layout, if it has one); a result that requires grad stays
    a leaf."""
    if memory_format is preserve_format and isinstance(t, Tensor) and t.ndim < 4:  # nothing to preserve
        return out
    _check(t, memory_format, op)
    fmt = _suggest(t) if memory_format is preserve_format else memory_format
    if fmt not in _PERM:
        return out
    grad = out.requires_grad
    out = _to_format(out.detach(), fmt, op, copy=False)
    return out.requires_grad_(True) if grad else out


def _volatile_get(self):
    warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning, stacklevel=2)
    return False


def _volatile_set(self, value):
    warnings.warn("volatile was removed and now has no effect. Use `with sneppx_core.no_grad():` instead.",
                  UserWarning, stacklevel=2)


def _real_get(self):
    return _C._real(self) if self.dtype.is_complex else self


def _real_set(self, value):
    _real_get(self).copy_(value)


def _imag_get(self):
    if not self.dtype.is_complex:
        raise RuntimeError("[imag] imag is not implemented for tensors with non-complex dtypes.")
    return _C._imag(self)


def _imag_set(self, value):
    _imag_get(self).copy_(value)


def real(input):
    """The real parts of a complex tensor, as a view sharing its memory; a real tensor itself."""
    if not isinstance(input, Tensor):
        raise TypeError(f"[real] expected a Tensor, got {type(input).__name__}")
    return _real_get(input)


def imag(input):
    """The imaginary parts of a complex tensor, as a view sharing its memory (RuntimeError for a real
    tensor, as in PyTorch)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"[imag] expected a Tensor, got {type(input).__name__}")
    return _imag_get(input)


def _grad_dtype_get(self):
    if not self.is_leaf:
        raise RuntimeError("[grad_dtype] grad_dtype can only be accessed on leaf tensors.")
    return self.dtype


def _grad_dtype_set(self, value):
    if not self.is_leaf:
        raise RuntimeError("[grad_dtype] grad_dtype can only be set on leaf tensors.")
    if value is not None and not isinstance(value, Dtype):
        raise TypeError(f"[grad_dtype] expected a dtype or None, got {type(value).__name__}")
    if value != self.dtype:
        raise NotImplementedError(f"[grad_dtype] SneppX accumulates a leaf's gradient in the leaf's own dtype "
                                  f"({self.dtype!r}); it cannot be set to {value!r}")


_NOT = {"is_xpu": "an XPU", "is_mps": "an MPS (Apple GPU)", "is_xla": "an XLA",
        "is_ipu": "an IPU", "is_mtia": "an MTIA", "is_maia": "a MAIA", "is_vulkan": "a Vulkan",
        "is_mkldnn": "a oneDNN (MKL-DNN)", "is_quantized": "a quantized", "is_sparse": "a sparse COO",
        "is_sparse_csr": "a sparse CSR", "is_nested": "a nested"}
PROPERTIES = {name: property(lambda self: False, doc=f"False: SneppX has no {what} tensors.")
              for name, what in _NOT.items()}
PROPERTIES["is_meta"] = property(lambda self: self.device.type == "meta",
                                 doc="True for a tensor on the meta device (a shape and a dtype, no data).")
PROPERTIES["is_sparse"] = property(lambda self: False, doc="False: a dense tensor (sparse COO tensors are their own "
                                                            "type, ``sparse.SparseTensor``, where it is True).")
PROPERTIES["is_sparse_csr"] = property(lambda self: False, doc="False: a dense tensor (CSR tensors are "
                                                                 "``sparse.SparseCompressedTensor``).")
PROPERTIES.update({
    "layout": property(lambda self: strided, doc="The memory layout: ``strided`` (the only one SneppX has)."),
    "output_nr": property(lambda self: 0, doc="Which output of its ``grad_fn`` the tensor is: 0 (every SneppX "
                                               "graph node has one output; leaves are 0 too)."),
    "name": property(lambda self: None, doc="None: SneppX tensors carry no name."),
    "real": property(_real_get, _real_set, doc="The real parts of a complex tensor (a view), or the tensor itself "
                                                "(real dtypes); assigning copies into them."),
    "imag": property(_imag_get, _imag_set, doc="The imaginary parts of a complex tensor (a view; RuntimeError for "
                                                "real dtypes); assigning copies into them."),
    "volatile": property(_volatile_get, _volatile_set, doc="False, with a warning (removed, as in PyTorch)."),
    "grad_dtype": property(_grad_dtype_get, _grad_dtype_set,
                           doc="The dtype of a leaf's gradient: the leaf's own dtype (only that can be set)."),
})


def install(cls=Tensor):
    """Attaches the properties and the memory-format forms of ``contiguous``, ``is_contiguous`` and ``clone``. The
    compiled backend keeps its own argument-free ``contiguous()``/``is_contiguous()`` (30 ns against a Python
    function's 130) and hands calls with a ``memory_format`` to the forms here."""
    for name, prop in PROPERTIES.items():
        setattr(cls, name, prop)
    forms = (contiguous, is_contiguous)
    if NAME == "c":  # the compiled backend (the NumPy backend answers every name, raising when called)
        _C._set_format_methods({fn.__name__: fn for fn in forms})
        forms = ()
    for fn in (*forms, clone):
        setattr(cls, fn.__name__, fn)


__all__ = ["layout", "memory_format", "strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr",
           "sparse_bsc", "contiguous_format", "preserve_format", "channels_last", "channels_last_3d", "pi", "e",
           "inf", "nan", "newaxis", "legacy_contiguous_format", "real", "imag"]
