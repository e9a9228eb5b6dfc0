"""Matrix decompositions of ``sneppx_core.linalg``: Cholesky, QR, SVD, symmetric eigendecomposition and
LU with partial pivoting. Values through NumPy's LAPACK (LU by a batched elimination in NumPy); each
gradient is a surrogate of core ops (see ``_linalg_common``), written next to its formula, first order only
(a backward pass with ``create_graph=True`` through it raises RuntimeError naming the op)."""

from __future__ import annotations

import math

import numpy as np

from ._backend import _C
from ._linalg_common import (
    CHOLESKY_EX, EIGH, LU, LU_FACTOR, LU_FACTOR_EX, QR, SVD, attach, check, desc, diag, finite_inv, host, ints,
    lapack_info, mT, needs_grad, out, raise_failed, sym,
)
from ._surrogate import first_order


def _inv(a):
    """``a^-1`` of a batch of square arrays (the pseudo-inverse where singular: gradients there are undefined)."""
    try:
        return np.linalg.inv(a)
    except np.linalg.LinAlgError:
        return np.linalg.pinv(a)


def _chol_info(m):
    """LAPACK's info for a matrix that is not positive-definite: the order of the first bad leading minor."""
    for k in range(1, m.shape[-1] + 1):
        try:
            np.linalg.cholesky(m[:k, :k])
        except np.linalg.LinAlgError:
            return k
    return m.shape[-1]


def _cholesky(A, upper, check_errors, op):
    check(A, op, square=True)
    a = host(A)
    a = np.swapaxes(a, -1, -2) if upper else a
    low, info = lapack_info(np.linalg.cholesky, a, _chol_info)
    if check_errors:
        raise_failed(op, A, info, lambda k: f"not positive-definite (the leading minor of order {k} is not)")
    L = out(low, A)
    if needs_grad(A) and not info.any():
        n = A.shape[-1]
        phi = out(np.tril(np.ones((n, n))) - 0.5 * np.eye(n), A)
        linv = out(np.linalg.inv(low), A)
        L = attach(L, L.detach() @ (phi * (linv @ sym(A) @ mT(linv))), op)
    return CHOLESKY_EX(mT(L) if upper else L, ints(info, A))


def cholesky_ex(A, *, upper=False, check_errors=False):
    """``(L, info)``: the Cholesky factor of symmetric positive-definite ``A = L L^T`` (``U^T U`` with
    ``upper``), read from the lower (upper) triangle; info > 0 is the order of the first leading minor
    that is not positive-definite (L is then NaN). Gradient (Murray): ``dL = L Phi(L^-1 dA L^-T)`` with
    ``Phi`` the lower triangle with half the diagonal, ``dA`` symmetrised."""
    return _cholesky(A, upper, check_errors, "linalg.cholesky_ex")


def cholesky(A, *, upper=False):
    """The Cholesky factor ``L`` of symmetric positive-definite ``A = L L^T`` (``U`` with ``A = U^T U``
    when ``upper``), of a matrix or a batch; LinAlgError where ``A`` is not positive-definite."""
    return _cholesky(A, upper, True, "linalg.cholesky").L


def _qr_surrogates(A, Q, R):
    """Surrogates of reduced ``A = Q R`` for m >= n: with ``C = Q^T dA R^-1`` and ``W = tril(C, -1)``,
    ``Q^T dQ = W - W^T``, ``dR = (C - W + W^T) R`` and ``dQ = dA R^-1 - Q (C - W + W^T)``."""
    rinv = out(_inv(host(R)), A)
    c = mT(Q) @ A @ rinv
    w = _C.tril(c, -1)
    upper = c - w + mT(w)
    return A @ rinv - Q @ upper, upper @ R


def qr(A, mode="reduced"):
    """``(Q, R)`` with ``A = Q R``, Q orthonormal columns and R upper triangular, of a matrix or a batch.
    ``mode``: "reduced" (Q m x k, R k x n, k = min(m, n)), "complete" (Q m x m, R m x n) or "r" (R only,
    Q empty). Differentiable except for mode="complete" with m > n, where Q's extra columns are arbitrary."""
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"[linalg.qr] mode must be 'reduced', 'complete' or 'r', got {mode!r}")
    check(A, "linalg.qr")
    m, n = A.shape[-2:]
    grad = needs_grad(A)
    if grad and mode == "complete" and m > n:
        raise RuntimeError(f"[linalg.qr] not differentiable with mode='complete' and nrows > ncols ({desc(A)}): "
                           "use mode='reduced', or detach the input")
    q, r = np.linalg.qr(host(A), mode="complete" if mode == "complete" else "reduced")
    Q, R = out(q, A), out(r, A)
    if grad:
        if m >= n:
            sq, sr = _qr_surrogates(A, Q, R)
        else:  # A = [X | Y] = Q [R1 | R2]: X = Q R1 is square, R2 = Q^T Y
            sq, sr1 = _qr_surrogates(A[..., :m], Q, R[..., :m])
            sr = _C.cat([sr1, mT(sq) @ A.detach()[..., m:] + mT(Q) @ A[..., m:]], -1)
        Q, R = attach(Q, sq, "linalg.qr"), attach(R, sr, "linalg.qr")
    if mode == "r":
        Q = A.detach().new_zeros(0)
    return QR(Q, R)


def _svd_surrogates(A, U, S, Vh):
    """Surrogates of reduced ``A = U diag(S) V^T`` (k = min(m, n)). With ``P = U^T dA V`` and
    ``F_ij = 1 / (s_j^2 - s_i^2)`` (0 on the diagonal and for repeated values):
    ``dS = diag(P)``, ``dU = U (F o (P S + S P^T)) + (I - U U^T) dA V S^-1``,
    ``dV = V (F o (S P + P^T S)) + (I - V V^T) dA^T U S^-1``."""
    s = host(S)
    f = out(finite_inv(s[..., None, :] ** 2 - s[..., :, None] ** 2), A)
    sinv = out(finite_inv(s), A).unsqueeze(-2)
    row, col = S.detach().unsqueeze(-2), S.detach().unsqueeze(-1)
    V = mT(Vh)
    p = mT(U) @ A @ V
    su = U @ (f * (p * row + col * mT(p))) + (A @ V - U @ p) * sinv
    sv = V @ (f * (col * p + mT(p) * row)) + (mT(A) @ U - V @ mT(p)) * sinv
    return su, diag(p), mT(sv)


def _pad_delta(value, s, axis, op):
    """``value`` with the gradient of surrogate ``s``, which covers only its first columns (rows for axis -2),
    first order only (see ``_surrogate.first_order``)."""
    d = first_order(s, op)
    extra = value.shape[axis] - s.shape[axis]
    if extra:
        zshape = list(d.shape)
        zshape[axis] = extra
        d = _C.cat([d, d.detach().new_zeros(tuple(zshape))], axis)
    return value + d


def svd(A, full_matrices=True, *, driver=None):
    """``(U, S, Vh)`` with ``A = U diag(S) Vh``, singular values S descending, of a matrix or a batch.
    With ``full_matrices`` U is m x m and Vh n x n, else m x k and k x n (k = min(m, n)). Gradients flow
    through the first k columns of U and rows of Vh (the others are arbitrary and get none); they are
    undefined for repeated or zero singular values (those terms are dropped)."""
    return _svd(A, full_matrices, "linalg.svd")


def _svd(A, full_matrices, op):
    check(A, op)
    u, s, vh = np.linalg.svd(host(A), full_matrices=full_matrices)
    U, S, Vh = out(u, A), out(s, A), out(vh, A)
    if needs_grad(A):
        k = S.shape[-1]
        su, ss, svh = _svd_surrogates(A, U[..., :k], S, Vh[..., :k, :])
        U, S, Vh = _pad_delta(U, su, -1, op), attach(S, ss, op), _pad_delta(Vh, svh, -2, op)
    return SVD(U, S, Vh)


def svdvals(A, *, driver=None):
    """The singular values of ``A`` (descending), of a matrix or a batch; ``dS = diag(U^T dA V)``."""
    check(A, "linalg.svdvals")
    if not needs_grad(A):
        return out(np.linalg.svd(host(A), compute_uv=False), A)
    return _svd(A, False, "linalg.svdvals").S



def _uplo(UPLO, op):
    if UPLO not in ("L", "U"):
        raise ValueError(f"[{op}] UPLO must be 'L' or 'U', got {UPLO!r}")
    return UPLO


def eigh(A, UPLO="L"):
    """``(eigenvalues, eigenvectors)`` of symmetric ``A`` (its lower triangle, or upper with UPLO="U"),
    eigenvalues ascending, eigenvectors orthonormal columns. With ``M = V^T sym(dA) V`` and
    ``F_ij = 1 / (w_j - w_i)`` (0 for repeated eigenvalues): ``dw = diag(M)``, ``dV = V (F o M)``."""
    return _eigh(A, UPLO, "linalg.eigh")


def _eigh(A, UPLO, op):
    check(A, op, square=True)
    w, v = np.linalg.eigh(host(A), UPLO=_uplo(UPLO, op))
    W, V = out(w, A), out(v, A)
    if needs_grad(A):
        f = out(finite_inv(w[..., None, :] - w[..., :, None]), A)
        m = mT(V) @ sym(A) @ V
        W, V = attach(W, diag(m), op), attach(V, V.detach() @ (f * m), op)
    return EIGH(W, V)


def eigvalsh(A, UPLO="L"):
    """The eigenvalues (ascending) of symmetric ``A`` (its lower triangle, or upper with UPLO="U")."""
    check(A, "linalg.eigvalsh", square=True)
    if not needs_grad(A):
        return out(np.linalg.eigvalsh(host(A), UPLO=_uplo(UPLO, "linalg.eigvalsh")), A)
    return _eigh(A, UPLO, "linalg.eigvalsh").eigenvalues


def _lu_np(a, pivot=True):
    """``(LU, pivots, info)`` of a batch of m x n arrays by Gaussian elimination with partial pivoting,
    as LAPACK's getrf: packed factors, 1-based row swaps, info = 1-based index of the first zero pivot."""
    m, n = a.shape[-2:]
    batch = a.shape[:-2]
    a = np.array(a, dtype=np.float64).reshape((math.prod(batch), m, n))
    k = min(m, n)
    piv = np.tile(np.arange(1, k + 1, dtype=np.int32), (a.shape[0], 1))
    info = np.zeros(a.shape[0], np.int32)
    rows = np.arange(a.shape[0])
    for j in range(k):
        if pivot:
            p = j + np.argmax(np.abs(a[:, j:, j]), axis=1)
            piv[:, j] = p + 1
            a[rows, j], a[rows, p] = a[rows, p].copy(), a[rows, j].copy()
        d = a[:, j, j]
        info[(d == 0) & (info == 0)] = j + 1
        a[:, j + 1:, j] /= np.where(d == 0, 1.0, d)[:, None]
        a[:, j + 1:, j + 1:] -= a[:, j + 1:, j, None] * a[:, j, None, j + 1:]
    return a.reshape(batch + (m, n)), piv.reshape(batch + (k,)), info.reshape(batch)


def _perm_matrix(piv, m):
    """The permutation matrices P (batch x m x m) of 1-based LAPACK row swaps ``piv``, ``A = P L U``."""
    flat = piv.reshape((math.prod(piv.shape[:-1]), piv.shape[-1])) - 1
    perm = np.tile(np.arange(m), (flat.shape[0], 1))
    rows = np.arange(flat.shape[0])
    for j in range(flat.shape[-1]):
        perm[rows, j], perm[rows, flat[:, j]] = perm[rows, flat[:, j]], perm[rows, j].copy()
    P = np.zeros((flat.shape[0], m, m))
    P[rows[:, None], perm, np.arange(m)] = 1.0
    return P.reshape(piv.shape[:-1] + (m, m))


def _unpack(lu, k):
    """Unit-lower L (m x k) and upper U (k x n) of packed factors."""
    m = lu.shape[-2]
    return np.tril(lu[..., :, :k], -1) + np.eye(m, k), np.triu(lu[..., :k, :])


def _lu_surrogates(A, P, L, U):
    """Surrogates of ``A = P L U``. On the leading k x k block ``A1 = L1 U1`` of ``P^T A``, with
    ``C = L1^-1 dA1 U1^-1``: ``dL1 = L1 tril(C, -1)``, ``dU1 = triu(C) U1``; a tall A's lower rows give
    ``dL2 = (dA2 - L2 dU1) U1^-1``, a wide A's right columns ``dU2 = L1^-1 (dA2 - dL1 U2)``."""
    m, n = A.shape[-2:]
    k = min(m, n)
    pa = mT(P) @ A
    l1, u1 = L[..., :k, :k], U[..., :k, :k]
    linv, uinv = out(_inv(host(l1)), A), out(_inv(host(u1)), A)
    c = linv @ pa[..., :k, :k] @ uinv
    sl, su = l1 @ _C.tril(c, -1), _C.triu(c) @ u1
    if m > k:
        sl = _C.cat([sl, (pa[..., k:, :] - L[..., k:, :] @ su) @ uinv], -2)
    if n > k:
        su = _C.cat([su, linv @ (pa[..., :, k:] - sl @ U[..., :, k:])], -1)
    return sl, su


def lu_factor_ex(A, *, pivot=True, check_errors=False):
    """``(LU, pivots, info)``: the LU factorization with partial pivoting of ``A`` (m x n, or a batch),
    packed as LAPACK's getrf: unit-lower L below the diagonal, U on and above it, 1-based int32 row
    pivots, info = index of the first zero pivot (0 when A is nonsingular)."""
    return _lu_factor_ex(A, pivot, check_errors, "linalg.lu_factor_ex")


def _lu_factor_ex(A, pivot, check_errors, op):
    check(A, op)
    lu, piv, info = _lu_np(host(A), pivot)
    if check_errors:
        raise_failed(op, A, info, lambda k: f"singular (U[{k - 1}, {k - 1}] is zero)")
    LUt = out(lu, A)
    if needs_grad(A):
        m, n = A.shape[-2:]
        k = min(m, n)
        lo, up = _unpack(lu, k)
        sl, su = _lu_surrogates(A, out(_perm_matrix(piv, m), A), out(lo, A), out(up, A))
        pad = A.detach().new_zeros(tuple(A.shape[:-2]) + (m, n))
        sl = _C.cat([sl, pad[..., :, k:]], -1) if n > k else sl
        su = _C.cat([su, pad[..., k:, :]], -2) if m > k else su
        LUt = attach(LUt, _C.tril(sl, -1) + _C.triu(su), op)
    return LU_FACTOR_EX(LUt, ints(piv, A), ints(info, A))


def lu_factor(A, *, pivot=True):
    """``(LU, pivots)``: packed LU factors with partial pivoting (see ``lu_factor_ex``); LinAlgError
    for a singular square matrix, as PyTorch."""
    LUt, piv, info = _lu_factor_ex(A, pivot, False, "linalg.lu_factor")
    raise_failed("linalg.lu_factor", A, info.numpy(), lambda k: f"U[{k - 1}, {k - 1}] is zero (use lu or lu_factor_ex)")
    return LU_FACTOR(LUt, piv)


def lu(A, *, pivot=True):
    """``(P, L, U)`` with ``A = P L U``: P a permutation, L unit lower triangular (m x k), U upper (k x n),
    k = min(m, n), of a matrix or a batch. Differentiable where the leading k x k block of ``P^T A`` is
    nonsingular: see ``_lu_surrogates``."""
    check(A, "linalg.lu")
    m, n = A.shape[-2:]
    k = min(m, n)
    lu_, piv, _ = _lu_np(host(A), pivot)
    lo, up = _unpack(lu_, k)
    P, L, U = out(_perm_matrix(piv, m), A), out(lo, A), out(up, A)
    if needs_grad(A):
        sl, su = _lu_surrogates(A, P, L, U)
        L, U = attach(L, sl, "linalg.lu"), attach(U, su, "linalg.lu")
    return LU(P, L, U)
