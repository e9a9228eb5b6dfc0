"""Shared pieces of ``sneppx_core.linalg``: argument checks, the round trip through NumPy's LAPACK on
the host, the autograd surrogate and the named result tuples.

Values are computed in float64 by NumPy and returned in the input's dtype, on the input's device.
Gradients come from a *surrogate*: a tensor ``s`` built from differentiable core ops whose
differential at the input equals the op's (``s`` is linear in the inputs, its coefficients detached),
attached as ``value + (s - s.detach())`` by ``_surrogate.attach``. The value is unchanged, backward
follows ``s``. These gradients are first order only: a backward pass with ``create_graph=True`` through
them raises RuntimeError naming the op, rather than treating the detached coefficients as constants.
"""

from __future__ import annotations

import collections

import numpy as np

from ._backend import _C
from ._C_face import Dtype, Tensor
from ._surrogate import attach as _attach

_FLOATS = (Dtype.FLOAT32, Dtype.FLOAT64)


class LinAlgError(RuntimeError):
    """Raised where a matrix is singular or not positive-definite and the op needs it not to be (a
    RuntimeError, as ``torch.linalg.LinAlgError``)."""


LinAlgError.__module__ = "sneppx_core.linalg"


def _result(name, fields, doc):
    cls = collections.namedtuple(name, fields)
    cls.__doc__ = doc
    return cls


SVD = _result("linalg_svd", "U S Vh", "``A = U @ diag(S) @ Vh``.")
EIGH = _result("linalg_eigh", "eigenvalues eigenvectors", "Ascending eigenvalues and orthonormal eigenvectors.")
QR = _result("linalg_qr", "Q R", "``A = Q @ R``.")
SLOGDET = _result("linalg_slogdet", "sign logabsdet", "``det(A) = sign * exp(logabsdet)``.")
LSTSQ = _result("linalg_lstsq", "solution residuals rank singular_values", "Least-squares solution and its extras.")
INV_EX = _result("linalg_inv_ex", "inverse info", "The inverse and LAPACK's info (0: success).")
CHOLESKY_EX = _result("linalg_cholesky_ex", "L info", "The factor and LAPACK's info (0: success).")
SOLVE_EX = _result("linalg_solve_ex", "result info", "The solution and LAPACK's info (0: success).")
LU_FACTOR = _result("linalg_lu_factor", "LU pivots", "Packed LU factors and 1-based row pivots.")
LU_FACTOR_EX = _result("linalg_lu_factor_ex", "LU pivots info", "Packed LU factors, pivots and LAPACK's info.")
LU = _result("linalg_lu", "P L U", "``A = P @ L @ U``.")
LDL_FACTOR = _result("linalg_ldl_factor", "LD pivots", "Compact LDL^T factors (LAPACK's sytrf) and pivots.")
LDL_FACTOR_EX = _result("linalg_ldl_factor_ex", "LD pivots info", "Compact LDL^T factors, pivots and LAPACK's info.")


def desc(x):
    """``shape (..) and dtype ..`` of ``x``, for error messages."""
    return f"shape {tuple(x.shape)} and dtype {str(x.dtype).replace('sneppx.', '')}"


def check(x, op, *, square=False, ndim=2, name="A"):
    """``x`` if it is a float32/float64 tensor with at least ``ndim`` dims (square matrices when
    ``square``); TypeError or ValueError naming ``op``, the shape and the dtype otherwise."""
    if not isinstance(x, Tensor):
        raise TypeError(f"[{op}] expected a Tensor for {name}, got {type(x).__name__}")
    if x.dtype not in _FLOATS:
        raise TypeError(f"[{op}] expects a float32 or float64 tensor, got {name} of {desc(x)}")
    if x.ndim < ndim:
        raise ValueError(f"[{op}] expects {name} with at least {ndim} dims, got {name} of {desc(x)}")
    if square and x.shape[-1] != x.shape[-2]:
        raise ValueError(f"[{op}] expects square matrices (or batches of them), got {name} of {desc(x)}")
    return x


def batch_shape(op, A, B, b_matrix=True):
    """The broadcast batch shape of ``A`` (matrices) and ``B`` (matrices, or vectors when not ``b_matrix``)."""
    tail = 2 if b_matrix else 1
    try:
        return tuple(np.broadcast_shapes(tuple(A.shape[:-2]), tuple(B.shape[:-tail])))
    except ValueError:
        raise ValueError(f"[{op}] batch dims do not broadcast: A of {desc(A)}, B of {desc(B)}") from None


def host(x):
    """The values of ``x`` as a float64 NumPy array on the host."""
    return np.asarray(x.detach().cpu().numpy(), dtype=np.float64)


def out(a, like):
    """A constant tensor of NumPy array ``a`` in ``like``'s dtype, on ``like``'s device."""
    t = Tensor(np.array(a, dtype=np.float64, order="C")).to(like.dtype)
    return t if like.device.type == "cpu" else t.to(like.device)


def ints(a, like, dtype=Dtype.INT32):
    """An integer tensor of ``a`` on ``like``'s device."""
    t = Tensor(np.array(a, dtype=np.int64, order="C")).to(dtype)
    return t if like.device.type == "cpu" else t.to(like.device)


def needs_grad(*xs):
    """True when autograd is on and one of ``xs`` requires grad (only then are surrogates built)."""
    return _C.is_grad_enabled() and any(isinstance(x, Tensor) and x.requires_grad for x in xs)


def attach(value, s, op):
    """``value`` whose gradient is that of the surrogate ``s`` (the same value, as ``s - s.detach() == 0``),
    first order only: differentiating it again (create_graph=True) raises RuntimeError naming ``op``."""
    return _attach(value, s, op)


def mT(x):
    """The last two dims swapped."""
    return x.transpose(-2, -1)


def diag(x):
    """The main diagonals of a batch of matrices, as a last dim."""
    from ._tensor_shape import diagonal

    return diagonal(x, 0, -2, -1)


def sym(x):
    """The symmetric part ``(x + x^T) / 2``."""
    return (x + mT(x)) * 0.5


def finite_inv(d):
    """``1 / d`` where ``d`` is non-zero, else 0 (for the F-matrices of repeated eigen/singular values)."""
    with np.errstate(divide="ignore"):
        return np.where(d == 0, 0.0, 1.0 / np.where(d == 0, 1.0, d))


def raise_failed(op, x, info, what):
    """LinAlgError naming the first batch element with ``info > 0``; ``what(k)`` describes the failure."""
    bad = np.flatnonzero(np.asarray(info).reshape(-1))
    if bad.size:
        i = int(bad[0])
        k = int(np.asarray(info).reshape(-1)[i])
        where = f" (batch element {i})" if x.ndim > 2 else ""
        raise LinAlgError(f"[{op}] input of {desc(x)}{where}: {what(k)}")


def lapack_info(fn, a, info_of):
    """``fn(a)`` over a batch (``fn`` keeps the shape); where NumPy raises, ``fn`` per matrix, with NaN
    results and ``info_of(matrix)`` as the info of the failed ones. Returns (result, info of the batch shape)."""
    batch = a.shape[:-2]
    try:
        return fn(a), np.zeros(batch, np.int32)
    except np.linalg.LinAlgError:
        pass
    flat = a.reshape((-1,) + a.shape[-2:])
    res, info = [], np.zeros(flat.shape[0], np.int32)
    for i, m in enumerate(flat):
        try:
            res.append(fn(m))
        except np.linalg.LinAlgError:
            info[i] = info_of(m)
            res.append(np.full(m.shape, np.nan))
    r = np.stack(res) if res else np.zeros((0,) + a.shape[-2:])
    return r.reshape(batch + r.shape[1:]), info.reshape(batch)
