"""Inverses, determinants and linear solves of ``sneppx_core.linalg``. Values through NumPy's LAPACK
on the host; gradients as surrogates of core ops (see ``_linalg_common``), or, for ``lu_solve``,
``cholesky_solve`` and ``cholesky_inverse``, by composing the triangular solves. All are first order
only: a backward pass with ``create_graph=True`` through them raises RuntimeError naming the op."""

from __future__ import annotations

import builtins

import numpy as np

from ._backend import _C
from ._C_face import Dtype, Tensor
from ._linalg_common import (
    INV_EX, LSTSQ, SLOGDET, SOLVE_EX, attach, batch_shape, check, desc, host, ints, lapack_info, mT, needs_grad,
    out, raise_failed,
)
from ._linalg_decomp import _inv, _lu_np, _perm_matrix


def _singular(k):
    return f"singular (U[{k - 1}, {k - 1}] of its LU factorization is zero)"


def _lu_info(m):
    return int(_lu_np(m)[2]) or m.shape[-1]  # positive: NumPy found the matrix singular


def _inv_ex(A, check_errors, op):
    check(A, op, square=True)
    a, info = lapack_info(np.linalg.inv, host(A), _lu_info)
    if check_errors:
        raise_failed(op, A, info, _singular)
    value = out(a, A)
    if needs_grad(A) and not info.any():
        value = attach(value, -(value @ A @ value), op)
    return INV_EX(value, ints(info, A))


def inv_ex(A, *, check_errors=False):
    """``(inverse, info)`` of a square matrix or a batch; info > 0 marks a singular matrix (the 1-based
    index of the zero pivot of its LU factorization; its inverse is then NaN). ``d(A^-1) = -A^-1 dA A^-1``."""
    return _inv_ex(A, check_errors, "linalg.inv_ex")


def inv(A):
    """The inverse of a square matrix (or a batch); LinAlgError for a singular one. ``d(A^-1) = -A^-1 dA A^-1``."""
    return _inv_ex(A, True, "linalg.inv").inverse


def _vector_rhs(A, B):
    """PyTorch's rule: B is a (batch of) vector(s) when 1-d, or when its shape is A's without the last dim."""
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


def _pair(op, A, B, vector):
    """``A`` and ``B`` (as matrices) broadcast to one batch shape, after checking dtypes and sizes."""
    check(A, op, square=True)
    check(B, op, ndim=1 if vector else 2, name="B")
    if A.dtype != B.dtype:
        raise TypeError(f"[{op}] expects A and B of one dtype, got A of {desc(A)} and B of {desc(B)}")
    batch = batch_shape(op, A, B, not vector)
    b = B.unsqueeze(-1) if vector else B
    if b.shape[-2] != A.shape[-1]:
        raise ValueError(f"[{op}] A of {desc(A)} and B of {desc(B)} have incompatible sizes")
    n = A.shape[-1]
    return A.broadcast_to(batch + (n, n)), b.broadcast_to(batch + tuple(b.shape[-2:]))


def _solve_ex(A, B, left, check_errors, op):
    vector = isinstance(B, Tensor) and isinstance(A, Tensor) and _vector_rhs(A, B)
    if not left:
        if vector:
            raise ValueError(f"[{op}] a vector B is not supported with left=False (use B / A.squeeze(-1))")
        x, info = _solve_ex(mT(A), mT(B), True, check_errors, op)
        return SOLVE_EX(mT(x), info)
    A2, B2 = _pair(op, A, B, vector)
    a = host(A2)
    inv_a, info = lapack_info(np.linalg.inv, a, _lu_info)
    if check_errors:
        raise_failed(op, A, info, _singular)
    x = np.linalg.solve(a, host(B2)) if not info.any() else inv_a @ host(B2)
    X = out(x, A)
    if needs_grad(A, B) and not info.any():
        X = attach(X, out(inv_a, A) @ (B2 - A2 @ X), op)
    return SOLVE_EX(X.squeeze(-1) if vector else X, ints(info, A))


def solve_ex(A, B, *, left=True, check_errors=False):
    """``(result, info)``: X with ``A X = B`` (``X A = B`` when not ``left``); B a matrix, a vector, or
    batches (broadcast against A's). info > 0 marks a singular A (X is then NaN).
    ``dX = A^-1 (dB - dA X)``."""
    return _solve_ex(A, B, left, check_errors, "linalg.solve_ex")


def solve(A, B, *, left=True):
    """X with ``A X = B`` (``X A = B`` when not ``left``) for square A; B a matrix, a vector, or batches
    (broadcast). LinAlgError for a singular A. ``dX = A^-1 (dB - dA X)``."""
    return _solve_ex(A, B, left, True, "linalg.solve").result


def _trsolve(t, b, upper):
    """``t^-1 b`` by substitution (as LAPACK's trsm: no check, inf/NaN for a zero diagonal)."""
    n = t.shape[-1]
    x = np.zeros(np.broadcast_shapes(t.shape[:-2] + (n, 1), b.shape))
    order = range(n - 1, -1, -1) if upper else range(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in order:
            acc = b[..., i, :] - np.einsum("...j,...jk->...k", t[..., i, :], x)
            x[..., i, :] = acc / t[..., i, i, None]
    return x


def _triangle(A, upper, unitriangular):
    if not unitriangular:
        return _C.triu(A) if upper else _C.tril(A)
    return (_C.triu(A, 1) if upper else _C.tril(A, -1)) + out(np.eye(A.shape[-1]), A)


def solve_triangular(A, B, *, upper, left=True, unitriangular=False):
    """X with ``A X = B`` (``X A = B`` when not ``left``) for triangular A (its upper triangle when
    ``upper``, else lower; ones on the diagonal when ``unitriangular``), by substitution; batches
    broadcast. ``dX = T^-1 (dB - dT X)`` with T the triangle used."""
    return _solve_triangular(A, B, upper, left, unitriangular, "linalg.solve_triangular")


def _solve_triangular(A, B, upper, left, unitriangular, op):
    check(A, op, square=True)
    check(B, op, name="B")
    if A.dtype != B.dtype:
        raise TypeError(f"[{op}] expects A and B of one dtype, got A of {desc(A)} and B of {desc(B)}")
    n = A.shape[-1]
    if B.shape[-2 if left else -1] != n:
        raise ValueError(f"[{op}] A of {desc(A)} and B of {desc(B)} have incompatible sizes (left={left})")
    batch = batch_shape(op, A, B)
    A2, B2 = A.broadcast_to(batch + (n, n)), B.broadcast_to(batch + tuple(B.shape[-2:]))
    T = _triangle(A2, upper, unitriangular)
    t = host(T)
    if left:
        x = _trsolve(t, host(B2), upper)
    else:
        x = np.swapaxes(_trsolve(np.swapaxes(t, -1, -2), np.swapaxes(host(B2), -1, -2), not upper), -1, -2)
    X = out(x, A)
    if needs_grad(A, B):
        tinv = out(_trsolve(t, np.broadcast_to(np.eye(n), t.shape), upper), A)
        X = attach(X, tinv @ (B2 - T @ X) if left else (B2 - X @ T) @ tinv, op)
    return X


def _adjugate(a):
    """adj(a) = det(a) a^-1 of a batch, through the SVD so that singular matrices have one too:
    ``adj = det(U V^T) V diag(prod_{j != i} s_j) U^T``."""
    u, s, vh = np.linalg.svd(a)
    n = s.shape[-1]
    others = np.where(np.eye(n, dtype=bool), 1.0, s[..., None, :]).prod(-1)
    sign = np.linalg.det(u) * np.linalg.det(vh)
    return sign[..., None, None] * np.swapaxes(vh, -1, -2) @ (others[..., :, None] * np.swapaxes(u, -1, -2))


def det(A):
    """Determinant of a square matrix (or a batch); ``d det = tr(adj(A) dA)`` (defined for singular A too)."""
    check(A, "linalg.det", square=True)
    a = host(A)
    value = out(np.asarray(np.linalg.det(a)), A)
    if not needs_grad(A):
        return value
    return attach(value, (out(np.swapaxes(_adjugate(a), -1, -2), A) * A).sum([-2, -1]), "linalg.det")


def slogdet(A):
    """``(sign, logabsdet)`` with ``det(A) = sign * exp(logabsdet)``, of a square matrix (or a batch);
    ``d logabsdet = tr(A^-1 dA)``; the sign gets no gradient."""
    check(A, "linalg.slogdet", square=True)
    a = host(A)
    sign, logabs = np.linalg.slogdet(a)
    value = out(np.asarray(logabs), A)
    if needs_grad(A):
        value = attach(value, (out(np.swapaxes(_inv(a), -1, -2), A) * A).sum([-2, -1]), "linalg.slogdet")
    return SLOGDET(out(np.asarray(sign), A), value)


def _pinv_surrogate(a, P):
    """Surrogate of ``P = a^+`` at constant rank: ``dP = -P da P + P P^T da^T (I - a P) + (I - P a) da^T P^T P``
    (also for ``hermitian=True``, unsymmetrised, as PyTorch's)."""
    A0, m, n = a.detach(), a.shape[-2], a.shape[-1]
    left = out(np.eye(n), a) - P @ A0
    right = out(np.eye(m), a) - A0 @ P
    return -(P @ a @ P) + (P @ mT(P)) @ mT(a) @ right + left @ mT(a) @ (mT(P) @ P)


def _tolerance(s, atol, rtol, shape, A):
    """PyTorch's cut-off ``max(atol, rtol * s_max)`` (rtol defaults to eps * max(m, n) when both are None)."""
    eps = float(np.finfo(np.float64 if A.dtype == Dtype.FLOAT64 else np.float32).eps)
    if rtol is None:
        rtol = eps * builtins.max(shape) if atol is None else 0.0
    as_arr = lambda v: host(v) if isinstance(v, Tensor) else np.asarray(v, dtype=np.float64)  # noqa: E731
    smax = s.max(-1) if s.shape[-1] else np.zeros(s.shape[:-1])
    return np.maximum(as_arr(0.0 if atol is None else atol), as_arr(rtol) * smax)


def _pinv_np(a, atol, rtol, like, hermitian=False):
    """``(a^+, |values|, kept)`` of a batch of arrays through the SVD (the eigendecomposition of the lower
    triangle when ``hermitian``), values ``<= max(atol, rtol * max)`` dropped."""
    if hermitian:
        d, right = np.linalg.eigh(a)
        left = right
    else:
        right, d, vh = np.linalg.svd(a, full_matrices=False)
        left = np.swapaxes(vh, -1, -2)
    s = np.abs(d)
    keep = s > _tolerance(s, atol, rtol, a.shape[-2:], like)[..., None]
    dinv = np.where(keep, 1.0 / np.where(keep, d, 1.0), 0.0)
    return left @ (dinv[..., :, None] * np.swapaxes(right, -1, -2)), s, keep


def pinv(A, *, atol=None, rtol=None, hermitian=False):
    """The Moore-Penrose pseudo-inverse through the SVD (the eigendecomposition of the lower triangle when
    ``hermitian``), dropping singular values ``<= max(atol, rtol * s_max)``. The gradient is the
    constant-rank formula (see ``_pinv_surrogate``)."""
    check(A, "linalg.pinv", square=hermitian)
    p = _pinv_np(host(A), atol, rtol, A, hermitian)[0]
    P = out(p, A)
    return attach(P, _pinv_surrogate(A, P), "linalg.pinv") if needs_grad(A) else P


def lstsq(A, B, rcond=None, *, driver=None):
    """``(solution, residuals, rank, singular_values)`` of ``min ||A X - B||`` (the minimum-norm solution
    ``A^+ B``, singular values ``<= rcond * s_max`` dropped; rcond defaults to eps * max(m, n)). As
    PyTorch on the CPU: ``driver`` in gelsy (default), gels, gelsd, gelss; ``rank`` except for gels,
    ``singular_values`` for gelsd/gelss, ``residuals`` (squared column norms of ``A X - B``) for m > n
    and full rank except for gelsy; empty tensors otherwise. ``dX = dA^+ B + A^+ dB`` at full rank."""
    op = "linalg.lstsq"
    driver = driver or "gelsy"
    if driver not in ("gels", "gelsy", "gelsd", "gelss"):
        raise ValueError(f"[{op}] driver must be one of gels, gelsy, gelsd, gelss, got {driver!r}")
    check(A, op)
    check(B, op, ndim=1, name="B")
    vector = B.ndim == A.ndim - 1
    b = B.unsqueeze(-1) if vector else B
    if A.dtype != B.dtype or b.shape[-2] != A.shape[-2]:
        raise ValueError(f"[{op}] A of {desc(A)} and B of {desc(B)} need one dtype and as many rows")
    m, n = A.shape[-2:]
    batch = batch_shape(op, A, b)
    A2, B2 = A.broadcast_to(batch + (m, n)), b.broadcast_to(batch + tuple(b.shape[-2:]))
    p, s, keep = _pinv_np(host(A2), None, rcond, A)
    x = p @ host(B2)
    rank = keep.sum(-1)
    X = out(x, A)
    if needs_grad(A, B):
        P = out(p, A)
        X = attach(X, _pinv_surrogate(A2, P) @ B2.detach() + P @ B2, op)
    empty = A.detach().new_zeros(0)
    res = empty
    if driver != "gelsy" and m > n and bool((rank == n).all()):
        res = ((A2 @ X - B2) ** 2).sum(-2)
        res = res.squeeze(-1) if vector else res
    return LSTSQ(X.squeeze(-1) if vector else X, res,
                 ints(rank, A, Dtype.INT64) if driver != "gels" else empty.to(Dtype.INT64),
                 out(s, A) if driver in ("gelsd", "gelss") else empty)


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False):
    """The number of singular values (absolute eigenvalues when ``hermitian``) above
    ``max(atol, rtol * s_max)``, as int64; rtol defaults to eps * max(m, n) when both are None."""
    check(A, "linalg.matrix_rank")
    a = host(A)
    s = np.abs(np.linalg.eigvalsh(a)) if hermitian else np.linalg.svd(a, compute_uv=False)
    return ints((s > _tolerance(s, atol, rtol, a.shape[-2:], A)[..., None]).sum(-1), A, Dtype.INT64)


def _lu_parts(LU, pivots, op):
    check(LU, op, square=True, name="LU")
    n = LU.shape[-1]
    P = out(_perm_matrix(pivots.detach().cpu().numpy().astype(np.int64), n), LU)
    return P, _triangle(LU, False, True), _C.triu(LU)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False):
    """X with ``A X = B`` for ``A = P L U`` given packed by ``lu_factor`` (``X A = B`` when not ``left``;
    ``A^T`` for A when ``adjoint``), composed of triangular solves, so differentiable in LU and B."""
    P, L, U = _lu_parts(LU, pivots, "linalg.lu_solve")

    def st(A, B, upper, left=True, unitriangular=False):
        return _solve_triangular(A, B, upper, left, unitriangular, "linalg.lu_solve")

    if left and not adjoint:  # X = U^-1 L^-1 P^T B
        return st(U, st(L, mT(P) @ B, upper=False, unitriangular=True), upper=True)
    if left:  # A^T = U^T L^T P^T: X = P L^-T U^-T B
        return P @ st(mT(L), st(mT(U), B, upper=False), upper=True, unitriangular=True)
    if not adjoint:  # X = B U^-1 L^-1 P^T
        return st(L, st(U, B, upper=True, left=False), upper=False, left=False, unitriangular=True) @ mT(P)
    return st(mT(U), st(mT(L), B @ P, upper=True, left=False, unitriangular=True), upper=False, left=False)


def cholesky_solve(B, L, upper=False):
    """X with ``A X = B`` for ``A = L L^T`` (``U^T U`` when ``upper``) given its Cholesky factor,
    composed of two triangular solves (differentiable in B and L)."""
    return _cholesky_solve(B, L, upper, "cholesky_solve")


def _cholesky_solve(B, L, upper, op):
    lo, up = (mT(L), L) if upper else (L, mT(L))
    return _solve_triangular(up, _solve_triangular(lo, B, False, True, False, op), True, True, False, op)


def cholesky_inverse(L, upper=False):
    """``A^-1`` for ``A = L L^T`` (``U^T U`` when ``upper``) given its Cholesky factor."""
    check(L, "cholesky_inverse", square=True, name="L")
    return _cholesky_solve(out(np.eye(L.shape[-1]), L).broadcast_to(tuple(L.shape)), L, upper, "cholesky_inverse")
