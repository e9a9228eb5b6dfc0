"""Making sparse tensors: ``sparse_coo_tensor``, the compressed constructors, ``Tensor.to_sparse*`` and
``Tensor.sparse_mask`` for dense tensors, and the sparse-only Tensor methods, which raise for a dense tensor as in
PyTorch. Also registers the handler through which the compiled ``mm``/``matmul`` take sparse tensors. The types and
their operations are in ``_sparse``.
"""

from __future__ import annotations

import math

import numpy as np

from ._backend import NAME, _C
from ._C_face import Tensor, bool_, int64
from ._factories import tensor
from ._sparse import (
    SparseCompressedTensor, SparseTensor, _host, _index, _matmul, _need_sparse, _shape, _Sparse, _to_compressed,
    _values, dsmm, hspmm, smm, sspaddmm,
)
from ._tensor_props import sparse_coo, sparse_csc, sparse_csr


def _check_coo(i, v, size, op):
    sd = i.shape[0]
    if len(size) != sd + v.dim() - 1:
        raise RuntimeError(f"[{op}] size {size} must have sparse_dim + dense_dim = {sd} + {v.dim() - 1} dims "
                           f"(indices {tuple(i.shape)}, values {tuple(v.shape)})")
    if tuple(v.shape[1:]) != tuple(size[sd:]):
        raise RuntimeError(f"[{op}] values' dense dims {tuple(v.shape[1:])} do not match size {size}")
    if i.shape[1]:
        h = _host(i)
        lo, hi = h.min(axis=1), h.max(axis=1)
        for d in range(sd):
            if lo[d] < 0 or hi[d] >= size[d]:
                raise RuntimeError(f"[{op}] indices of dim {d} span [{lo[d]}, {hi[d]}], outside size {size[d]}")


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, pin_memory=False, requires_grad=False,
                      check_invariants=None, is_coalesced=None):
    """A sparse COO tensor from ``indices`` (``(sparse_dim, nnz)`` ints) and ``values`` (``(nnz, *dense dims)``);
    without ``size``, each sparse dim is one past its largest index. Indices are always checked."""
    op = "sparse_coo_tensor"
    v = _values(values, dtype, device, op)
    dev = v.device
    if isinstance(indices, Tensor):
        i = indices
        if i.dtype.is_floating_point or i.dtype == bool_:
            raise TypeError(f"[{op}] indices must be integers, got {i.dtype}")
    else:
        a = np.asarray(indices)
        if a.size and a.dtype.kind not in "iu":
            raise TypeError(f"[{op}] indices must be integers, got {a.dtype}")
        i = tensor(a.astype(np.int64), device=dev)
    i = i.to(int64).to(dev)
    if i.dim() == 1 and i.shape[0] == 0:
        i = i.reshape((1, 0))
    if i.dim() != 2:
        raise RuntimeError(f"[{op}] indices must be 2-D (sparse_dim, nnz), got {tuple(i.shape)}")
    if v.dim() == 0 or v.shape[0] != i.shape[1]:
        raise RuntimeError(f"[{op}] indices {tuple(i.shape)} and values {tuple(v.shape)} disagree on nnz")
    if size is None:
        h = _host(i)
        size = tuple(int(m) + 1 for m in h.max(axis=1)) if h.shape[1] else (0,) * h.shape[0]
        size = size + tuple(v.shape[1:])
    size = _shape(size, op)
    _check_coo(i, v, size, op)
    if requires_grad:
        v = v.detach().requires_grad_(True)
    return SparseTensor(i, v, size, bool(is_coalesced) or i.shape[1] <= 1)


def sparse_compressed_tensor(compressed_indices, plain_indices, values, size=None, *, dtype=None, layout=None,
                             device=None, pin_memory=False, requires_grad=False, check_invariants=None):
    """A 2-D CSR or CSC tensor (``layout``) from its compressed and plain indices and values."""
    op = "sparse_compressed_tensor"
    if layout not in (sparse_csr, sparse_csc):
        raise NotImplementedError(f"[{op}] layout {layout} is not supported; SneppX has sparse_csr and sparse_csc")
    v = _values(values, dtype, device, op)
    dev = v.device
    c = _host(compressed_indices if isinstance(compressed_indices, Tensor) else tensor(compressed_indices))
    p = _host(plain_indices if isinstance(plain_indices, Tensor) else tensor(plain_indices))
    if c.ndim != 1 or p.ndim != 1 or v.dim() != 1 or len(c) == 0:
        raise RuntimeError(f"[{op}] expected 1-D indices and values (batched or blocked forms are not supported), "
                           f"got {c.shape}, {p.shape} and values {tuple(v.shape)}")
    if c[0] != 0 or c[-1] != len(p) or (np.diff(c) < 0).any() or len(p) != v.shape[0]:
        raise RuntimeError(f"[{op}] compressed indices must start at 0, not decrease and end at nnz = {len(p)} "
                           f"(values {tuple(v.shape)})")
    n_plain = int(p.max()) + 1 if len(p) else 0
    if size is None:
        size = (len(c) - 1, n_plain) if layout is sparse_csr else (n_plain, len(c) - 1)
    size = _shape(size, op)
    major, minor = (size[0], size[1]) if layout is sparse_csr else (size[1], size[0])
    if len(size) != 2 or len(c) != major + 1 or (len(p) and (p.min() < 0 or p.max() >= minor)):
        raise RuntimeError(f"[{op}] size {size} does not fit compressed indices of length {len(c)} and plain "
                           f"indices in [{p.min() if len(p) else 0}, {p.max() if len(p) else 0}]")
    slice_of = np.repeat(np.arange(len(c) - 1), np.diff(c))
    if len(p) > 1 and ((np.diff(p) <= 0) & (np.diff(slice_of) == 0)).any():
        raise RuntimeError(f"[{op}] plain indices must be sorted and unique within each compressed slice")
    if requires_grad:
        v = v.detach().requires_grad_(True)
    return SparseCompressedTensor(_index(c, dev), _index(p, dev), v, size, layout)


def sparse_csr_tensor(crow_indices, col_indices, values, size=None, **kwargs):
    """A 2-D CSR tensor (``torch.sparse_csr_tensor``)."""
    return sparse_compressed_tensor(crow_indices, col_indices, values, size, layout=sparse_csr, **kwargs)


def sparse_csc_tensor(ccol_indices, row_indices, values, size=None, **kwargs):
    """A 2-D CSC tensor (``torch.sparse_csc_tensor``)."""
    return sparse_compressed_tensor(ccol_indices, row_indices, values, size, layout=sparse_csc, **kwargs)


def _blocked(name):
    def f(*args, **kwargs):
        raise NotImplementedError(f"[{name}] blocked sparse layouts (BSR, BSC) are not supported; use "
                                  "sparse_coo_tensor or sparse_csr_tensor")
    f.__name__ = name
    f.__doc__ = "Not supported: raises NotImplementedError (SneppX has COO, CSR and CSC, not blocked layouts)."
    return f


def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
    """The COO form of a dense tensor (``sparse_dim`` leading dims indexed, default all), or ``layout``'s."""
    if not isinstance(self, Tensor):
        raise TypeError(f"[to_sparse] expected a Tensor, got {type(self).__name__}")
    n = self.dim()
    if layout not in (None, sparse_coo):
        return _to_compressed(to_sparse(self), layout, blocksize, "to_sparse")
    sd = n if sparse_dim is None else int(sparse_dim)
    if not 0 < sd <= n:
        raise RuntimeError(f"[to_sparse] sparse_dim must be in [1, {n}] for a tensor of shape {tuple(self.shape)}, "
                           f"got {sparse_dim}")
    rows = self.reshape((math.prod(self.shape[:sd]), *self.shape[sd:]))
    nz = rows != 0
    if sd < n:
        nz = nz.reshape((rows.shape[0], -1)).any(1)
    pos = np.flatnonzero((nz if nz.device.type == "cpu" else nz.cpu()).numpy())
    dev = self.device
    idx = np.stack(np.unravel_index(pos, tuple(self.shape[:sd]))).reshape(sd, -1)
    return SparseTensor(_index(idx, dev), rows.index_select(0, _index(pos, dev)), tuple(self.shape), True)


def _dense_method(name, doc, fn):
    fn.__name__, fn.__doc__ = name, doc
    return fn


def _not_sparse(name):
    def f(self, *args, **kwargs):
        raise RuntimeError(f"[{name}] expected a sparse tensor, got a dense (strided) {self.dtype} tensor of shape "
                           f"{tuple(self.shape)}")
    return _dense_method(name, "Only for sparse tensors: a dense tensor raises RuntimeError, as in PyTorch.", f)


def sparse_mask(self, mask):
    """The elements of this dense tensor at ``mask``'s (a sparse tensor's) indices, as a sparse tensor of its
    pattern."""
    _need_sparse(mask, "sparse_mask")
    coo = mask.to_sparse_coo().coalesce()
    if tuple(self.shape) != coo._size:
        raise RuntimeError(f"[sparse_mask] shapes differ: {tuple(self.shape)} and mask {coo._size}")
    sd = coo.sparse_dim()
    rows = self.reshape((math.prod(coo._size[:sd]), *coo._size[sd:]))
    out = SparseTensor(coo._i, rows.index_select(0, _index(coo._lin(), self.device)), coo._size, True)
    return out if isinstance(mask, SparseTensor) else out.to_sparse(layout=mask.layout)


def _sparse_call(op, a, b):
    """mm/matmul given a non-Tensor argument (registered with the compiled core)."""
    if isinstance(a, _Sparse) or isinstance(b, _Sparse):
        return _matmul(a, b, op)
    return NotImplemented


if NAME == "c":
    _C._set_sparse_call(_sparse_call)

def resize_as_sparse_(input, the_template):
    """``input.resize_as_sparse_(the_template)`` for a sparse ``input``."""
    if not isinstance(input, (Tensor, _Sparse)):
        raise TypeError(f"[resize_as_sparse_] input must be a sparse tensor, got {type(input).__name__}")
    return input.resize_as_sparse_(the_template)


FUNCTIONS = {"sparse_coo_tensor": sparse_coo_tensor, "sparse_compressed_tensor": sparse_compressed_tensor,
             "sparse_csr_tensor": sparse_csr_tensor, "sparse_csc_tensor": sparse_csc_tensor,
             "sparse_bsr_tensor": _blocked("sparse_bsr_tensor"), "sparse_bsc_tensor": _blocked("sparse_bsc_tensor"),
             "smm": smm, "hspmm": hspmm, "sspaddmm": sspaddmm, "saddmm": sspaddmm, "dsmm": dsmm, "hsmm": hspmm,
             "resize_as_sparse_": resize_as_sparse_}
METHODS = {
    "to_sparse": to_sparse,
    "to_sparse_coo": _dense_method("to_sparse_coo", "The COO form (``to_sparse()``).", lambda self: to_sparse(self)),
    "to_sparse_csr": _dense_method("to_sparse_csr", "The CSR form of a 2-D tensor.",
                                   lambda self, dense_dim=None: to_sparse(self, layout=sparse_csr)),
    "to_sparse_csc": _dense_method("to_sparse_csc", "The CSC form of a 2-D tensor.",
                                   lambda self, dense_dim=None: to_sparse(self, layout=sparse_csc)),
    "to_sparse_bsr": _blocked("to_sparse_bsr"), "to_sparse_bsc": _blocked("to_sparse_bsc"),
    "sparse_mask": sparse_mask,
    "sparse_dim": _dense_method("sparse_dim", "0 for a dense tensor.", lambda self: 0),
    "dense_dim": _dense_method("dense_dim", "The number of dims, for a dense tensor.", lambda self: self.dim()),
    **{n: _not_sparse(n) for n in ("indices", "values", "crow_indices", "col_indices", "ccol_indices",
                                   "row_indices", "coalesce", "is_coalesced", "smm", "hspmm", "sspaddmm",
                                   "sparse_resize_", "sparse_resize_and_clear_", "resize_as_sparse_")},
}
