"""PyTorch's top-level linear-algebra names (``torch.svd``, ``torch.cholesky_solve``, ``torch.inverse``, ...),
forms of ``sneppx_core.linalg``. ``FUNCTIONS`` become ``sneppx_core`` functions and Tensor methods;
``MODULE_ONLY`` only functions, as in PyTorch."""

from __future__ import annotations

import builtins

import numpy as np

from . import linalg
from ._backend import _C
from ._C_face import Dtype, Tensor
from ._linalg_common import _result, check, mT, out
from ._linalg_decomp import _perm_matrix
from ._linalg_solve import cholesky_inverse, cholesky_solve  # noqa: F401  (torch.* names, re-exported)
from ._linalg_misc import geqrf as _geqrf

_SVD = _result("svd", "U S V", "``A = U @ diag(S) @ V^T`` (V, not Vh).")
_QR = _result("qr", "Q R", "``A = Q @ R``.")
_SLOGDET = _result("slogdet", "sign logabsdet", "``det(A) = sign * exp(logabsdet)``.")
_TRIANGULAR = _result("triangular_solve", "solution cloned_coefficient", "The solution and a copy of A.")
_LU_UNPACK = _result("lu_unpack", "P L U", "``A = P @ L @ U``.")
_GEQRF = _result("geqrf", "a tau", "Householder reflectors below the diagonal of ``a``, R on and above it.")


def inverse(input):
    """The inverse of a square matrix (or a batch): ``linalg.inv``."""
    return linalg.inv(input)


def det(input):
    """The determinant of a square matrix (or a batch): ``linalg.det``."""
    return linalg.det(input)


def slogdet(input):
    """``(sign, logabsdet)`` of a square matrix (or a batch): ``linalg.slogdet``."""
    return _SLOGDET(*linalg.slogdet(input))


def logdet(input):
    """``log(det(input))``: NaN for a negative determinant, -inf for a zero one."""
    sign, logabs = linalg.slogdet(input)
    nan = builtins.float("nan")
    return logabs + _C.where(sign > 0, 0.0, _C.where(sign == 0, -builtins.float("inf"), logabs.detach() * 0 + nan))


def cholesky(input, upper=False):
    """The Cholesky factor (lower, or upper with ``upper``): ``linalg.cholesky``."""
    return linalg.cholesky(input, upper=upper)


def qr(input, some=True):
    """``(Q, R)``: ``linalg.qr`` with mode "reduced" (``some``) or "complete"."""
    return _QR(*linalg.qr(input, "reduced" if some else "complete"))


def svd(input, some=True, compute_uv=True):
    """``(U, S, V)`` with ``input = U diag(S) V^T`` (``V``, where ``linalg.svd`` gives ``Vh``); reduced when
    ``some``. Without ``compute_uv``, U and V are zero matrices of shapes (*, m, m) and (*, n, n)."""
    if not compute_uv:
        check(input, "svd")
        m, n = input.shape[-2:]
        z = input.detach().new_zeros
        return _SVD(z(tuple(input.shape[:-2]) + (m, m)), linalg.svdvals(input), z(tuple(input.shape[:-2]) + (n, n)))
    U, S, Vh = linalg.svd(input, full_matrices=not some)
    return _SVD(U, S, mT(Vh))


def pinverse(input, rcond=1e-15):
    """The pseudo-inverse, dropping singular values ``<= rcond * s_max``: ``linalg.pinv(rtol=rcond)``."""
    return linalg.pinv(input, rtol=rcond)


def triangular_solve(input, A, upper=True, transpose=False, unitriangular=False):
    """``(solution, cloned_coefficient)``: X with ``A X = input`` (``A^T X = input`` when ``transpose``)
    for triangular A, and a copy of A. Note the argument order (B first), as PyTorch's."""
    T = mT(A) if transpose else A
    x = linalg.solve_triangular(T, input, upper=upper != transpose, unitriangular=unitriangular)
    return _TRIANGULAR(x, A.clone())


def matrix_exp(input):
    """The matrix exponential: ``linalg.matrix_exp``."""
    return linalg.matrix_exp(input)


def lu_solve(input, LU_data, LU_pivots):
    """X with ``A X = input`` from ``A``'s packed LU factors (note the argument order): ``linalg.lu_solve``."""
    return linalg.lu_solve(LU_data, LU_pivots, input)


def lu(A, pivot=True, get_infos=False):
    """``(LU, pivots)`` (and ``infos`` with ``get_infos``): ``linalg.lu_factor_ex``, without raising for
    singular matrices."""
    LU, piv, info = linalg.lu_factor_ex(A, pivot=pivot)
    return (LU, piv, info) if get_infos else (LU, piv)


def geqrf(input):
    """``(a, tau)``: LAPACK's geqrf (see ``householder_product``)."""
    return _GEQRF(*_geqrf(input))


def orgqr(input, tau):
    """Q from geqrf's reflectors: ``linalg.householder_product``."""
    return linalg.householder_product(input, tau)


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    """``(P, L, U)`` from packed LU factors and pivots; L and U (P) are empty when not ``unpack_data``
    (``unpack_pivots``)."""
    check(LU_data, "lu_unpack", name="LU_data")
    m, n = LU_data.shape[-2:]
    k = builtins.min(m, n)
    empty = LU_data.detach().new_zeros(0)
    L = U = P = empty
    if unpack_data:
        eye = _C._eye(m, k, LU_data.dtype).to(LU_data.device)
        L, U = _C.tril(LU_data[..., :, :k], -1) + eye, _C.triu(LU_data[..., :k, :])
    if unpack_pivots:
        P = out(_perm_matrix(_pivots(LU_pivots, LU_data, k), m), LU_data)
    return _LU_UNPACK(P, L, U)


def _pivots(piv, lu, k):
    """``lu_unpack``'s pivots as a NumPy int64 array, checked: an integer tensor of shape batch + (k,) with
    1-based rows in [1, m]."""
    if not isinstance(piv, Tensor) or piv.dtype not in (Dtype.INT32, Dtype.INT64):
        raise TypeError(f"[lu_unpack] expected LU_pivots to be an int32 or int64 tensor, got "
                        f"{piv.dtype if isinstance(piv, Tensor) else type(piv).__name__}")
    want = tuple(lu.shape[:-2]) + (k,)
    if tuple(piv.shape) != want:
        raise ValueError(f"[lu_unpack] LU_pivots has shape {tuple(piv.shape)}; LU_data {tuple(lu.shape)} needs {want}")
    a = piv.detach().cpu().numpy().astype(np.int64)
    m = lu.shape[-2]
    if a.size and (a.min() < 1 or a.max() > m):
        raise ValueError(f"[lu_unpack] LU_pivots must hold rows in [1, {m}], got values in [{a.min()}, {a.max()}]")
    return a


def nuclear_norm(input, dim=None, keepdim=False):
    """The sum of the singular values over the two dims ``dim`` (the last two when None):
    ``linalg.matrix_norm(input, "nuc")``. ``nuclear_norm(x, True)`` is ``keepdim=True``, as PyTorch."""
    if isinstance(dim, builtins.bool):
        dim, keepdim = None, dim
    return linalg.matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim)


FUNCTIONS = {fn.__name__: fn for fn in (
    inverse, det, slogdet, logdet, cholesky, cholesky_inverse, cholesky_solve, qr, svd, pinverse, triangular_solve,
    matrix_exp, lu_solve, lu, geqrf, orgqr)}
MODULE_ONLY = {"lu_unpack": lu_unpack, "nuclear_norm": nuclear_norm}
