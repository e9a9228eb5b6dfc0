"""Sparse tensors: COO (``sparse_coo_tensor``, ``Tensor.to_sparse()``) and 2-D compressed ones (CSR, CSC).

A sparse tensor stores its specified elements as an index tensor and a values tensor. It is its own Python type,
not a ``Tensor``: ``isinstance(s, Tensor)`` is False, and only the operations listed in the user guide take one
(``mm``/``matmul``/``@``, ``spmm``, ``sx.sparse.*``, ``+``/``-``/``*``/``/``, the methods below). Gradients flow
through the values: a sparse tensor made with ``requires_grad=True`` gets a ``grad`` of its own sparsity pattern
(the gradient of each stored value), and one made from values that require grad passes gradients back to them.

Index work (sorting, merging duplicates, conversions) runs on the host in NumPy; the values take SneppX ops
(``index_add``, ``index_select``), which record autograd and run on the values' device. This module holds the types
and their operations; making them (``sparse_coo_tensor``, ``Tensor.to_sparse``, ...) is in ``_sparse_make``, which
checks indices on construction (in range, non-negative, compressed indices well formed), as PyTorch does only
under ``sparse.check_sparse_tensor_invariants``: a bad index raises instead of reading out of bounds.
"""

from __future__ import annotations

import math

import numpy as np

from ._C_face import Tensor, bfloat16, bool_, float16, float32, float64, int8, int16, int32, int64
from ._factories import _default_float, tensor, zeros
from ._tensor_props import sparse_coo, sparse_csc, sparse_csr
from ._tensor_strided import _ints

_CHUNK = 1 << 22  # elements of gathered rows per step of a sparse-dense product


def _host(t):
    """An index tensor as a NumPy int64 array."""
    return np.asarray((t if t.device.type == "cpu" else t.cpu()).numpy(), dtype=np.int64)


def _index(a, device):
    return tensor(np.ascontiguousarray(a, dtype=np.int64), dtype=int64, device=device)


def _shape(size, op):
    size = _ints(size, op, "size")
    if any(s < 0 for s in size):
        raise ValueError(f"[{op}] size must not be negative, got {size}")
    return size


def _values(values, dtype, device, op):
    if not isinstance(values, Tensor):
        return tensor(values, dtype=dtype, device=device)
    if dtype is not None and values.dtype != dtype:
        values = values.to(dtype)
    return values if device is None else values.to(device)


def _need_sparse(x, op):
    if not isinstance(x, _Sparse):
        raise TypeError(f"[{op}] expected a sparse tensor, got {type(x).__name__}")


class _Sparse:
    """What COO and compressed tensors share: the values, the size, autograd through the values, casts."""

    __slots__ = ("_v", "_size")
    __module__ = "sneppx_core"
    __array_ufunc__ = None  # NumPy arrays' operators defer to the reflected ones
    is_sparse = False
    is_sparse_csr = False
    is_cuda = property(lambda self: self._v.is_cuda)

    shape = property(lambda self: self.size(), doc="The size (dense shape).")
    ndim = property(lambda self: len(self._size), doc="Number of dims.")
    dtype = property(lambda self: self._v.dtype, doc="The values' dtype.")
    device = property(lambda self: self._v.device, doc="The values' device.")
    grad_fn = property(lambda self: self._v.grad_fn, doc="The values' grad_fn.")
    is_leaf = property(lambda self: self._v.is_leaf, doc="Whether the values are a leaf of the graph.")

    def size(self, dim=None):
        """The size, or its entry at ``dim``."""
        if dim is None:
            return _SIZE(self._size)
        return self._size[dim]

    def dim(self):
        """Number of dims."""
        return len(self._size)

    ndimension = dim

    def numel(self):
        """Number of elements of the dense tensor it stands for."""
        return math.prod(self._size)

    nelement = numel

    def __len__(self):
        if not self._size:
            raise TypeError("len() of a 0-d tensor")
        return self._size[0]

    def element_size(self):
        """Bytes per value."""
        return self._v.element_size()

    def _nnz(self):
        """Number of stored elements."""
        return self._v.shape[0]

    @property
    def requires_grad(self):
        """Whether the values record autograd."""
        return self._v.requires_grad

    @requires_grad.setter
    def requires_grad(self, flag):
        self.requires_grad_(flag)

    def requires_grad_(self, requires_grad=True):
        """Makes the values a leaf that records autograd (``grad`` is then sparse, of this pattern)."""
        self._v.requires_grad_(requires_grad)
        return self

    @property
    def grad(self):
        """The gradient of the stored values, as a sparse tensor of this one's pattern (None before backward)."""
        g = self._v.grad
        return None if g is None else self._with_values(g)

    @grad.setter
    def grad(self, value):
        if value is not None:
            _need_sparse(value, "grad")
            value = value._v
        self._v.grad = value

    def retain_grad(self):
        """Keeps the values' gradient after backward though they are not a leaf."""
        self._v.retain_grad()

    def detach(self):
        """The same indices and values, out of the graph."""
        return self._with_values(self._v.detach())

    def clone(self):
        """A copy (indices and values)."""
        return self._with_values(self._v.clone(), copy_indices=True)

    def to(self, *args, **kwargs):
        """Moves or casts the values (and moves the indices), as ``Tensor.to``."""
        v = self._v.to(*args, **kwargs)
        return self if v is self._v else self._with_values(v, device=v.device)

    def cpu(self):
        """A copy on the host (itself when it is there)."""
        return self.to("cpu")

    def cuda(self, device=None):
        """A copy on the GPU."""
        return self.to("cuda" if device is None else device)

    def type(self, dtype=None):
        """With no argument the type name; else a cast."""
        if dtype is None:
            return self._v.type().replace("sneppx.", "sneppx.sparse.", 1)
        return self.to(dtype)


    def __neg__(self):
        return self._with_values(-self._v)

    def __pos__(self):
        return self

    def neg(self):
        """``-self``, sparse."""
        return -self

    def __matmul__(self, other):
        return _matmul(self, other, "matmul")

    def __rmatmul__(self, other):
        return _matmul(other, self, "matmul")

    def mm(self, mat2):
        """``self @ mat2`` for a 2-D sparse matrix and a 2-D dense (dense result) or sparse one (sparse)."""
        return _matmul(self, mat2, "mm")

    def matmul(self, other):
        """``self @ other``: a dense matrix or vector gives a dense result, a sparse matrix a sparse one."""
        return _matmul(self, other, "matmul")

    def _repr_parts(self):
        raise NotImplementedError

    def __repr__(self):
        parts = [f"{name}={_indent(repr(t), len(name) + 7)}" for name, t in self._repr_parts()]
        tail = f"size={tuple(self._size)}, nnz={self._nnz()}"
        if self._v.dtype != _default_float():
            tail += f", dtype={self._v.dtype}"
        tail += f", layout={self.layout}"
        if self._v.grad_fn is not None:
            tail += f", grad_fn=<{type(self._v.grad_fn).__name__}>"
        elif self._v.requires_grad:
            tail += ", requires_grad=True"
        return "tensor(" + ",\n       ".join(parts + [tail]) + ")"


def _cast(name, dtype):
    def cast(self):
        return self.to(dtype)
    cast.__name__, cast.__doc__ = name, f"The values cast to {dtype}."
    return cast


for _name, _dtype in {"float": float32, "double": float64, "half": float16, "bfloat16": bfloat16, "long": int64,
                      "int": int32, "short": int16, "char": int8, "bool": bool_}.items():
    setattr(_Sparse, _name, _cast(_name, _dtype))


_SIZE = type(zeros((1,)).shape)  # the Size type of tensors' shapes


def _indent(text, n):
    return text.replace("\n", "\n" + " " * n)


class SparseTensor(_Sparse):
    """A sparse COO tensor: ``indices`` (int64, ``(sparse_dim, nnz)``) and ``values`` (``(nnz, *dense dims)``),
    as ``torch.sparse_coo_tensor`` makes. Duplicate indices are allowed until ``coalesce()`` sums them."""

    __slots__ = ("_i", "_coalesced")
    layout = sparse_coo
    is_sparse = True

    def __init__(self, indices, values, size, coalesced=False):
        self._i, self._v, self._size, self._coalesced = indices, values, tuple(size), bool(coalesced)

    def _with_values(self, v, device=None, copy_indices=False):
        i = self._i if device is None or device == self._i.device else self._i.to(device)
        return SparseTensor(i.clone() if copy_indices else i, v, self._size, self._coalesced)

    def _repr_parts(self):
        return [("indices", self._i), ("values", self._v)]

    def sparse_dim(self):
        """Number of sparse (indexed) dims."""
        return self._i.shape[0]

    def dense_dim(self):
        """Number of dense dims (the values' dims after the first)."""
        return self._v.dim() - 1

    def is_coalesced(self):
        """Whether the indices are sorted and unique (``coalesce()`` makes them so)."""
        return self._coalesced

    def _coalesced_(self, coalesced):
        """Marks the tensor coalesced or not (the caller vouches for the indices)."""
        self._coalesced = bool(coalesced)
        return self

    def indices(self):
        """The indices of a coalesced tensor (``coalesce()`` first otherwise)."""
        if not self._coalesced:
            raise RuntimeError("[indices] Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
        return self._i

    def values(self):
        """The values of a coalesced tensor (``coalesce()`` first otherwise); autograd flows through them."""
        if not self._coalesced:
            raise RuntimeError("[values] Cannot get values on an uncoalesced tensor, please call .coalesce() first")
        return self._v

    def _indices(self):
        """The stored indices, duplicates and order included."""
        return self._i

    def _values(self):
        """The stored values, duplicates and order included."""
        return self._v

    def _lin(self):
        """Host linear index of each stored element over the sparse dims (row-major)."""
        sd = self.sparse_dim()
        if self._nnz() == 0 or sd == 0:
            return np.zeros(self._nnz(), dtype=np.int64)
        return np.ravel_multi_index(tuple(_host(self._i)), self._size[:sd])

    def coalesce(self):
        """Indices sorted row-major and unique, the values of duplicates summed (itself when already so)."""
        if self._coalesced:
            return self
        sd = self.sparse_dim()
        uniq, inv = np.unique(self._lin(), return_inverse=True)
        idx = np.stack(np.unravel_index(uniq, self._size[:sd])) if sd else np.zeros((0, len(uniq)), np.int64)
        dev = self._v.device
        v = zeros((len(uniq), *self._v.shape[1:]), dtype=self._v.dtype, device=dev)
        v = v.index_add(0, _index(inv.reshape(-1), dev), self._v)
        return SparseTensor(_index(idx.reshape(sd, -1), dev), v, self._size, True)

    def to_dense(self, dtype=None, *, masked_grad=True):
        """The dense tensor (duplicates summed); its gradient flows to the values."""
        sd, dev = self.sparse_dim(), self._v.device
        flat = zeros((math.prod(self._size[:sd]), *self._v.shape[1:]), dtype=self._v.dtype, device=dev)
        out = flat.index_add(0, _index(self._lin(), dev), self._v).reshape(self._size)
        return out if dtype is None else out.to(dtype)

    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
        """Itself for COO (``sparse_dim`` must match), or the compressed layout asked for."""
        if layout in (None, sparse_coo):
            if sparse_dim not in (None, self.sparse_dim()):
                raise RuntimeError(f"[to_sparse] a COO tensor with sparse_dim {self.sparse_dim()} cannot change it "
                                   f"to {sparse_dim}; go through to_dense()")
            return self
        return _to_compressed(self, layout, blocksize, "to_sparse")

    def to_sparse_coo(self):
        """Itself."""
        return self

    def to_sparse_csr(self, dense_dim=None):
        """The CSR form of a 2-D tensor."""
        return _to_compressed(self, sparse_csr, None, "to_sparse_csr")

    def to_sparse_csc(self, dense_dim=None):
        """The CSC form of a 2-D tensor."""
        return _to_compressed(self, sparse_csc, None, "to_sparse_csc")

    def transpose(self, dim0, dim1):
        """Swaps two sparse dims (the indices' rows); dense dims cannot be swapped with sparse ones."""
        n, sd = len(self._size), self.sparse_dim()
        d0, d1 = dim0 % n if n else 0, dim1 % n if n else 0
        if d0 == d1:
            return self
        if d0 >= sd or d1 >= sd:
            if d0 < sd or d1 < sd:
                raise RuntimeError(f"[transpose] cannot swap sparse dim and dense dim ({dim0}, {dim1}) of a COO "
                                   f"tensor with sparse_dim {sd}")
            return SparseTensor(self._i, self._v.transpose(d0 - sd + 1, d1 - sd + 1), _swap(self._size, d0, d1))
        order = list(range(sd))
        order[d0], order[d1] = d1, d0
        return SparseTensor(self._i[order], self._v, _swap(self._size, d0, d1))

    def t(self):
        """The transpose of a tensor of at most 2 dims."""
        if len(self._size) > 2:
            raise RuntimeError(f"[t] expects a tensor with <= 2 dims, got sparse {tuple(self._size)}")
        return self if len(self._size) < 2 else self.transpose(0, 1)

    def sum(self, dim=None, keepdim=False, dtype=None):
        """The sum over all elements (a dense 0-d tensor) or over ``dim``: sparse while sparse dims remain,
        dense otherwise (``torch.sparse.sum``'s rule)."""
        return _sum(self, dim, keepdim, dtype)

    def __add__(self, other):
        return _add(self, other, 1, "add")

    __radd__ = __add__

    def add(self, other, *, alpha=1):
        """``self + alpha * other``: sparse for a sparse ``other``, dense for a dense one."""
        return _add(self, other, alpha, "add")

    def __sub__(self, other):
        return _add(self, other, -1, "sub")

    def __rsub__(self, other):
        return _add(-self, other, 1, "sub")

    def sub(self, other, *, alpha=1):
        """``self - alpha * other``."""
        return _add(self, other, -alpha, "sub")

    def __mul__(self, other):
        return _mul(self, other)

    __rmul__ = __mul__

    def mul(self, other):
        """Elementwise product with a number or a tensor: sparse, of the stored elements' pattern."""
        return _mul(self, other)

    def __truediv__(self, other):
        if isinstance(other, _Sparse):
            raise TypeError("[div] dividing by a sparse tensor would divide by its zeros")
        return self._mul_values(other, lambda v, o: v / o)

    div = __truediv__

    def __pow__(self, exponent):
        if not isinstance(exponent, (int, float)) or exponent <= 0:
            raise ValueError(f"[pow] a sparse tensor takes a positive number as exponent, got {exponent!r}")
        c = self.coalesce()
        return c._with_values(c._v ** exponent)

    pow = __pow__

    def _mul_values(self, other, f):
        if isinstance(other, Tensor) and other.dim() > 0:
            dense = other.expand(self._size) if tuple(other.shape) != self._size else other
            sd = self.sparse_dim()
            rows = dense.reshape((math.prod(self._size[:sd]), *self._size[sd:]))
            return self._with_values(f(self._v, rows.index_select(0, _index(self._lin(), self._v.device))))
        return self._with_values(f(self._v, other))

    def smm(self, mat):
        """``self @ mat`` as a sparse tensor (``torch.smm``)."""
        return smm(self, mat)

    def hspmm(self, mat2):
        """``self @ mat2`` as a hybrid COO tensor: the nonzero rows only, as dense rows (``torch.hspmm``)."""
        return hspmm(self, mat2)

    def sspaddmm(self, mat1, mat2, *, beta=1, alpha=1):
        """``beta * self + alpha * (mat1 @ mat2)``, sparse (``torch.sspaddmm``)."""
        return sspaddmm(self, mat1, mat2, beta=beta, alpha=alpha)

    def sparse_resize_(self, size, sparse_dim, dense_dim):
        """Changes the size in place, keeping the elements (which must fit, with the same sparse/dense dims)."""
        size = _shape(size, "sparse_resize_")
        if sparse_dim != self.sparse_dim() or dense_dim != self.dense_dim() or len(size) != sparse_dim + dense_dim:
            raise RuntimeError(f"[sparse_resize_] only the size can change here: sparse_dim {self.sparse_dim()}, "
                               f"dense_dim {self.dense_dim()}, got {size}, {sparse_dim}, {dense_dim}")
        if tuple(size[sparse_dim:]) != tuple(self._v.shape[1:]):
            raise RuntimeError(f"[sparse_resize_] the dense dims {tuple(self._v.shape[1:])} cannot change to "
                               f"{size[sparse_dim:]}")
        if self._nnz() and (_host(self._i).max(axis=1) >= np.asarray(size[:sparse_dim])).any():
            raise RuntimeError(f"[sparse_resize_] size {size} is too small for the indices")
        self._size = tuple(size)
        return self

    def sparse_resize_and_clear_(self, size, sparse_dim, dense_dim):
        """Sets the size and dims and removes every element."""
        size = _shape(size, "sparse_resize_and_clear_")
        if len(size) != sparse_dim + dense_dim:
            raise RuntimeError(f"[sparse_resize_and_clear_] size {size} does not have sparse_dim + dense_dim = "
                               f"{sparse_dim + dense_dim} dims")
        dev = self._v.device
        self._i = zeros((sparse_dim, 0), dtype=int64, device=dev)
        self._v = zeros((0, *size[sparse_dim:]), dtype=self._v.dtype, device=dev)
        self._size, self._coalesced = tuple(size), True
        return self

    def resize_as_sparse_(self, other):
        """``sparse_resize_and_clear_`` to another sparse tensor's size and dims... then copies its elements."""
        _need_sparse(other, "resize_as_sparse_")
        self._i, self._v, self._size, self._coalesced = other._i.clone(), other._v.clone(), other._size, \
            other._coalesced
        return self


def _swap(size, a, b):
    s = list(size)
    s[a], s[b] = s[b], s[a]
    return tuple(s)


def _zero_preserving(name):
    def op(self):
        c = self.coalesce() if isinstance(self, SparseTensor) else self
        return c._with_values(getattr(c._v, name)())
    op.__name__ = name
    op.__doc__ = f"``{name}`` of the stored values (zero stays zero), sparse."
    return op


for _name in ("abs", "sqrt", "square", "sin", "sinh", "tan", "tanh", "asin", "asinh", "atan", "atanh", "ceil",
              "floor", "round", "trunc", "frac", "expm1", "log1p", "sign", "sgn", "erf", "erfinv", "deg2rad",
              "rad2deg", "relu", "signbit", "isnan", "isinf", "isposinf", "isneginf"):
    setattr(_Sparse, _name, _zero_preserving(_name))
_Sparse.__abs__ = _Sparse.abs


class SparseCompressedTensor(_Sparse):
    """A 2-D sparse CSR or CSC tensor: compressed indices (``crow_indices``/``ccol_indices``, length rows + 1 or
    cols + 1), plain indices (``col_indices``/``row_indices``) and values, as ``torch.sparse_csr_tensor`` and
    ``torch.sparse_csc_tensor`` make. Within each compressed slice the plain indices are sorted and unique."""

    __slots__ = ("_c", "_p", "_layout")

    def __init__(self, compressed, plain, values, size, layout):
        self._c, self._p, self._v, self._size, self._layout = compressed, plain, values, tuple(size), layout

    layout = property(lambda self: self._layout, doc="``sparse_csr`` or ``sparse_csc``.")
    is_sparse_csr = property(lambda self: self._layout is sparse_csr, doc="Whether the layout is CSR.")

    def _with_values(self, v, device=None, copy_indices=False):
        c, p = (self._c, self._p) if device is None else (self._c.to(device), self._p.to(device))
        if copy_indices:
            c, p = c.clone(), p.clone()
        return SparseCompressedTensor(c, p, v, self._size, self._layout)

    def _repr_parts(self):
        names = ("crow_indices", "col_indices") if self.is_sparse_csr else ("ccol_indices", "row_indices")
        return [(names[0], self._c), (names[1], self._p), ("values", self._v)]

    def _check_layout(self, want, op):
        if self._layout is not want:
            raise RuntimeError(f"[{op}] expected a {want} tensor, got {self._layout}")

    def crow_indices(self):
        """The compressed row indices of a CSR tensor."""
        self._check_layout(sparse_csr, "crow_indices")
        return self._c

    def col_indices(self):
        """The column indices of a CSR tensor."""
        self._check_layout(sparse_csr, "col_indices")
        return self._p

    def ccol_indices(self):
        """The compressed column indices of a CSC tensor."""
        self._check_layout(sparse_csc, "ccol_indices")
        return self._c

    def row_indices(self):
        """The row indices of a CSC tensor."""
        self._check_layout(sparse_csc, "row_indices")
        return self._p

    def values(self):
        """The stored values; autograd flows through them."""
        return self._v

    def sparse_dim(self):
        """2: compressed tensors here are matrices."""
        return 2

    def dense_dim(self):
        """0: the values are scalars."""
        return 0

    def to_sparse_coo(self):
        """The COO form (coalesced)."""
        rows = np.repeat(np.arange(len(self._c) - 1), np.diff(_host(self._c)))
        plain = _host(self._p)
        pair = (rows, plain) if self.is_sparse_csr else (plain, rows)
        coo = SparseTensor(_index(np.stack(pair).reshape(2, -1), self._v.device), self._v, self._size)
        return coo._coalesced_(True) if self.is_sparse_csr else coo.coalesce()

    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
        """The COO form (the default layout), or the compressed layout asked for."""
        if layout in (None, sparse_coo):
            return self.to_sparse_coo()
        return _to_compressed(self.to_sparse_coo(), layout, blocksize, "to_sparse")

    def to_sparse_csr(self, dense_dim=None):
        """Itself when CSR, else converted."""
        return self if self.is_sparse_csr else _to_compressed(self.to_sparse_coo(), sparse_csr, None, "to_sparse_csr")

    def to_sparse_csc(self, dense_dim=None):
        """Itself when CSC, else converted."""
        return self if not self.is_sparse_csr else \
            _to_compressed(self.to_sparse_coo(), sparse_csc, None, "to_sparse_csc")

    def to_dense(self, dtype=None, *, masked_grad=True):
        """The dense matrix; its gradient flows to the values."""
        return self.to_sparse_coo().to_dense(dtype)

    def t(self):
        """The transpose: a CSR matrix's arrays read as CSC, and the reverse (no copy)."""
        other = sparse_csc if self.is_sparse_csr else sparse_csr
        return SparseCompressedTensor(self._c, self._p, self._v, self._size[::-1], other)

    def transpose(self, dim0, dim1):
        """``t()`` when the two dims differ."""
        return self if dim0 % 2 == dim1 % 2 else self.t()

    def sum(self, dim=None, keepdim=False, dtype=None):
        """As the COO form's ``sum``."""
        return _sum(self.to_sparse_coo(), dim, keepdim, dtype)

    def __add__(self, other):
        if isinstance(other, _Sparse):
            return _add(self.to_sparse_coo(), other, 1, "add").to_sparse(layout=self._layout)
        return _add(self.to_sparse_coo(), other, 1, "add")

    __radd__ = __add__

    def __sub__(self, other):
        return self + (-other)

    def __rsub__(self, other):
        return (-self) + other

    def __mul__(self, other):
        if isinstance(other, (int, float)) or (isinstance(other, Tensor) and other.dim() == 0):
            return self._with_values(self._v * other)
        return _mul(self.to_sparse_coo(), other).to_sparse(layout=self._layout)

    __rmul__ = __mul__
    mul = __mul__

    def __truediv__(self, other):
        if isinstance(other, _Sparse):
            raise TypeError("[div] dividing by a sparse tensor would divide by its zeros")
        return self._with_values(self._v / other)

    div = __truediv__


def _to_compressed(coo, layout, blocksize, op):
    if layout not in (sparse_csr, sparse_csc):
        raise NotImplementedError(f"[{op}] layout {layout} is not supported; SneppX has sparse_coo, sparse_csr "
                                  "and sparse_csc")
    if blocksize is not None:
        raise NotImplementedError(f"[{op}] blocked layouts (blocksize) are not supported")
    if coo.dim() != 2 or coo.dense_dim() != 0:
        raise RuntimeError(f"[{op}] compressed layouts take a 2-D tensor with scalar values, got sparse "
                           f"{tuple(coo._size)} with dense_dim {coo.dense_dim()}")
    coo = coo.coalesce() if layout is sparse_csr else coo.transpose(0, 1).coalesce()
    idx = _host(coo._i).reshape(2, -1)
    n = coo._size[0]
    compressed = np.concatenate([[0], np.cumsum(np.bincount(idx[0], minlength=n))])
    dev = coo._v.device
    size = coo._size if layout is sparse_csr else coo._size[::-1]
    return SparseCompressedTensor(_index(compressed, dev), _index(idx[1], dev), coo._v, size, layout)


# ------------------------------------------------------------------ operations


def _dense_2d(x, op):
    if not isinstance(x, Tensor):
        raise TypeError(f"[{op}] expected a tensor, got {type(x).__name__}")
    return x


def _spmm(s, d, op):
    """sparse (m, k) @ dense (k, n) or (k,): rows gathered from d, scaled by the values, added into the result."""
    if s.dim() != 2 or s.dense_dim() != 0:
        raise RuntimeError(f"[{op}] the sparse operand must be a 2-D matrix with scalar values, got sparse "
                           f"{tuple(s._size)} with dense_dim {s.dense_dim()}")
    vec = d.dim() == 1
    if vec:
        d = d.unsqueeze(1)
    if d.dim() != 2 or d.shape[0] != s._size[1]:
        raise RuntimeError(f"[{op}] shapes cannot be multiplied: sparse {tuple(s._size)} and {tuple(d.shape)}")
    if d.dtype != s.dtype:
        raise TypeError(f"[{op}] expected both operands to have the same dtype, got {s.dtype} (sparse) and "
                        f"{d.dtype}")
    if s.device != d.device:
        raise RuntimeError(f"[{op}] operands on different devices: {s.device} (sparse) and {d.device}")
    n, nnz = d.shape[1], s._nnz()
    out = zeros((s._size[0], n), dtype=d.dtype, device=d.device)
    step = max(1, _CHUNK // max(n, 1))
    for a in range(0, nnz, step):
        i, v = (s._i, s._v) if nnz <= step else (s._i[:, a:a + step], s._v[a:a + step])
        out = out.index_add(0, i[0], v.unsqueeze(1) * d.index_select(0, i[1]))
    return out.squeeze(1) if vec else out


def _matmul(a, b, op):
    """``a @ b`` where at least one is sparse: sparse @ dense and dense @ sparse are dense, sparse @ sparse sparse."""
    if isinstance(a, SparseCompressedTensor):
        a = a.to_sparse_coo()
    if isinstance(b, SparseCompressedTensor):
        b = b.to_sparse_coo()
    if isinstance(a, SparseTensor) and isinstance(b, SparseTensor):
        return _spmm(a, b.to_dense(), op).to_sparse()
    if isinstance(a, SparseTensor):
        return _spmm(a, _dense_2d(b, op), op)
    b_t = b.transpose(0, 1)
    a = _dense_2d(a, op)
    if a.dim() == 1:
        return _spmm(b_t, a, op)
    return _spmm(b_t, a.transpose(0, 1), op).transpose(0, 1)


def _sum(s, dim, keepdim, dtype):
    if keepdim:
        raise NotImplementedError("[sum] keepdim=True is not supported for sparse tensors")
    v = s._v if dtype is None else s._v.to(dtype)
    if dim is None:
        return v.sum()
    n, sd = s.dim(), s.sparse_dim()
    dims = sorted({int(d) % n for d in ((dim,) if isinstance(dim, int) else dim)})
    dense_dims = [d - sd + 1 for d in dims if d >= sd]
    if dense_dims:
        v = v.sum(dim=tuple(dense_dims))
    keep = [d for d in range(sd) if d not in dims]
    size = tuple(s._size[d] for d in range(n) if d not in dims)
    if not keep:
        return v.sum(0)
    return SparseTensor(s._i[keep], v, size).coalesce()


def _add(s, other, alpha, op):
    if isinstance(other, _Sparse):
        other = other.to_sparse_coo() if isinstance(other, SparseCompressedTensor) else other
        if other._size != s._size:
            raise RuntimeError(f"[{op}] sizes differ: sparse {tuple(s._size)} and sparse {tuple(other._size)}")
        if other.sparse_dim() != s.sparse_dim():
            raise RuntimeError(f"[{op}] sparse_dim differs: {s.sparse_dim()} and {other.sparse_dim()}")
        from ._ops import cat
        from ._torch_aliases import promote_types
        dt = promote_types(s.dtype, other.dtype)
        w = other._v if alpha == 1 else other._v * alpha
        return SparseTensor(cat([s._i, other._i], 1), cat([s._v.to(dt), w.to(dt)], 0), s._size).coalesce()
    if isinstance(other, Tensor):
        return s.to_dense() + (other if alpha == 1 else other * alpha)
    if isinstance(other, (int, float)) and other == 0:
        return s
    raise TypeError(f"[{op}] a sparse tensor adds a tensor or a sparse tensor, got {type(other).__name__}")


def _mul(s, other):
    if isinstance(other, SparseCompressedTensor):
        other = other.to_sparse_coo()
    if isinstance(other, SparseTensor):
        if other._size != s._size or other.sparse_dim() != s.sparse_dim():
            raise RuntimeError(f"[mul] sparse tensors of different sizes or sparse dims: {tuple(s._size)} and "
                               f"{tuple(other._size)}")
        a, b = s.coalesce(), other.coalesce()
        common, ia, ib = np.intersect1d(a._lin(), b._lin(), assume_unique=True, return_indices=True)
        dev = a._v.device
        v = a._v.index_select(0, _index(ia, dev)) * b._v.index_select(0, _index(ib, dev))
        sd = a.sparse_dim()
        idx = np.stack(np.unravel_index(common, a._size[:sd])).reshape(sd, -1)
        return SparseTensor(_index(idx, dev), v, a._size, True)
    if not isinstance(other, (Tensor, int, float, bool)):
        return NotImplemented
    return s._mul_values(other, lambda v, o: v * o)


# ------------------------------------------------------------------ module-level products


def _as_coo(x, op):
    _need_sparse(x, op)
    return x.to_sparse_coo()


def smm(input, mat):
    """``input @ mat`` (sparse @ dense) as a sparse tensor."""
    return _matmul(_as_coo(input, "smm"), mat, "smm").to_sparse()


def hspmm(mat1, mat2):
    """``mat1 @ mat2`` (sparse @ dense) as a hybrid COO tensor: indices of the rows ``mat1`` stores, those rows
    dense."""
    s = _as_coo(mat1, "hspmm").coalesce()
    out = _matmul(s, mat2, "hspmm")
    rows = np.unique(_host(s._i)[0]) if s._nnz() else np.zeros(0, np.int64)
    dev = out.device
    return SparseTensor(_index(rows.reshape(1, -1), dev), out.index_select(0, _index(rows, dev)),
                        tuple(out.shape), True)


def sspaddmm(input, mat1, mat2, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat1 @ mat2)`` with ``input`` and ``mat1`` sparse: a sparse result."""
    prod = smm(mat1, mat2)
    return _add(_as_coo(input, "sspaddmm") * beta, prod, alpha, "sspaddmm")


def dsmm(input, mat2):
    """``input @ mat2`` (sparse @ dense), dense."""
    return _matmul(_as_coo(input, "dsmm"), mat2, "dsmm")
