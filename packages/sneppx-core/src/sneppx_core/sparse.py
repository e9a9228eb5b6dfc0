"""``sneppx.sparse``: products, sums and softmax of sparse tensors, as ``torch.sparse``.

The sparse tensor types and their construction (``sparse_coo_tensor``, ``Tensor.to_sparse()``, CSR and CSC) are in
the top-level namespace; see ``sneppx_core._sparse`` for what they store and how gradients flow.
"""

from __future__ import annotations

import numpy as np

from ._C_face import Tensor
from ._factories import zeros
from ._sparse import SparseCompressedTensor, SparseTensor, _as_coo, _host, _index, _matmul, _need_sparse, _sum
from ._sparse_make import sparse_coo_tensor
from ._tensor_props import sparse_coo


def mm(mat1, mat2, reduce="sum"):
    """``mat1 @ mat2`` with ``mat1`` sparse: a dense ``mat2`` gives a dense result, a sparse one a sparse result.
    Gradients flow to both operands (``mat1``'s to its stored values)."""
    _need_sparse(mat1, "sparse.mm")
    if reduce != "sum":
        raise NotImplementedError(f"[sparse.mm] reduce={reduce!r} is not supported; only 'sum'")
    return _matmul(mat1, mat2, "sparse.mm")


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    """``beta * mat + alpha * (mat1 @ mat2)`` with ``mat1`` sparse and ``mat``, ``mat2`` dense: dense."""
    prod = _matmul(_as_coo(mat1, "sparse.addmm"), mat2, "sparse.addmm")
    if beta == 0:
        return prod * alpha
    return mat * beta + prod * alpha


def sum(input, dim=None, dtype=None):  # noqa: A001
    """The sum of a sparse tensor's elements: over all (a dense 0-d tensor) or over ``dim`` (a dense tensor once
    every sparse dim is reduced, else sparse)."""
    return _sum(_as_coo(input, "sparse.sum"), dim, False, dtype)


def _softmax(input, dim, dtype, log, op):
    s = _as_coo(input, op).coalesce()
    if dtype is not None:
        s = s.to(dtype)
    n, sd = s.dim(), s.sparse_dim()
    d = int(dim) % n
    if d >= sd:  # a dense dim: each stored element's values are a full slice
        from .functional import log_softmax, softmax
        f = log_softmax if log else softmax
        return s._with_values(f(s._v, dim=d - sd + 1))
    idx = _host(s._i).reshape(sd, -1)
    others = [k for k in range(sd) if k != d]
    group = np.ravel_multi_index(tuple(idx[others]), tuple(s._size[k] for k in others)) if others else \
        np.zeros(idx.shape[1], np.int64)
    _, g = np.unique(group, return_inverse=True)
    dev = s._v.device
    g_t = _index(g.reshape(-1), dev)
    n_groups = int(g.max()) + 1 if len(g) else 0
    shape = (n_groups, *s._v.shape[1:])
    top = zeros(shape, dtype=s._v.dtype, device=dev).index_reduce(0, g_t, s._v.detach(), "amax", include_self=False)
    shifted = s._v - top.index_select(0, g_t)
    e = shifted.exp()
    total = zeros(shape, dtype=s._v.dtype, device=dev).index_add(0, g_t, e)
    if log:
        return s._with_values(shifted - total.log().index_select(0, g_t))
    return s._with_values(e / total.index_select(0, g_t))


def softmax(input, dim, *, dtype=None):
    """Softmax of a sparse tensor over ``dim``, taken over the stored elements only (unstored ones count as -inf
    and stay unstored); sparse, of the input's (coalesced) pattern."""
    return _softmax(input, dim, dtype, False, "sparse.softmax")


def log_softmax(input, dim, *, dtype=None):
    """Log-softmax over the stored elements along ``dim`` (see ``softmax``)."""
    return _softmax(input, dim, dtype, True, "sparse.log_softmax")


def spdiags(diagonals, offsets, shape, layout=None):
    """A sparse 2-D tensor of ``shape`` whose diagonal ``offsets[k]`` holds ``diagonals[k]``: element ``(j -
    offsets[k], j)`` takes ``diagonals[k, j]``, as SciPy's ``spdiags`` (COO unless ``layout`` says CSR or CSC)."""
    if not isinstance(diagonals, Tensor) or diagonals.dim() != 2:
        raise ValueError("[spdiags] diagonals must be a 2-D tensor")
    offs = _host(offsets if isinstance(offsets, Tensor) else Tensor(list(offsets))).reshape(-1)
    rows_n, cols_n = (int(s) for s in shape)
    if offs.shape[0] != diagonals.shape[0] or len(set(offs.tolist())) != len(offs):
        raise ValueError(f"[spdiags] expected {diagonals.shape[0]} unique offsets, got {offs.tolist()}")
    rows, cols, picks = [], [], []
    width = diagonals.shape[1]
    for k, off in enumerate(offs.tolist()):
        j = np.arange(max(0, off), min(cols_n, rows_n + off, width))
        rows.append(j - off)
        cols.append(j)
        picks.append(k * width + j)
    dev = diagonals.device
    idx = np.stack([np.concatenate(rows), np.concatenate(cols)]).astype(np.int64)
    vals = diagonals.reshape(-1).index_select(0, _index(np.concatenate(picks), dev))
    out = sparse_coo_tensor(_index(idx, dev), vals, (rows_n, cols_n)).coalesce()
    return out if layout in (None, sparse_coo) else out.to_sparse(layout=layout)


class check_sparse_tensor_invariants:
    """PyTorch's switch for checking sparse tensors' indices on construction. SneppX always checks them (it costs
    one pass over the indices), so ``is_enabled()`` is True and ``disable()`` changes nothing; usable as a context
    manager or decorator, as in PyTorch."""

    def __init__(self, enable=True):
        self.state = enable

    @staticmethod
    def is_enabled():
        """True: construction always checks."""
        return True

    @staticmethod
    def enable():
        """Nothing to do: checks are always on."""

    @staticmethod
    def disable():
        """Checks stay on in SneppX."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __call__(self, fn):
        return fn


__all__ = ["mm", "addmm", "sum", "softmax", "log_softmax", "spdiags", "check_sparse_tensor_invariants",
           "SparseTensor", "SparseCompressedTensor"]
