"""The LDL^T factorization of symmetric (possibly indefinite) matrices in ``sneppx_core.linalg``:
``ldl_factor``, ``ldl_factor_ex`` and ``ldl_solve``, as PyTorch's (LAPACK's ``sytrf`` and ``sytrs``).

``A = P L D L^T P^T`` by Bunch-Kaufman diagonal pivoting, computed on the host in NumPy as LAPACK's
unblocked ``sytf2`` (lower triangle; alpha = (1 + sqrt(17)) / 8; the same pivot choices and the same order
of operations), in the input's precision (float32 or float64), one matrix of a batch at a time. The result
is LAPACK's compact format: ``LD`` holds D's diagonal, the sub-diagonal entries of its 2x2 blocks and the
multipliers of L below them (the strict upper triangle is zero, as PyTorch's), ``pivots`` the 1-based
interchanges, negative (twice) for a 2x2 block. ``info = k > 0`` when D[k-1, k-1] is exactly zero.

PyTorch has no derivative for these ops: its outputs require grad, and a backward pass through them raises
RuntimeError. SneppX does the same.
"""

from __future__ import annotations

import math

import numpy as np

from ._backend import NAME
from ._C_face import Dtype, Tensor
from ._linalg_common import (
    LDL_FACTOR, LDL_FACTOR_EX, batch_shape, check, desc, ints, needs_grad, out, raise_failed,
)

_INTS = (Dtype.UINT8, Dtype.INT32, Dtype.INT64)


def _work(x):
    """The values of ``x`` on the host as a NumPy array of its own precision (float32 or float64)."""
    return np.array(x.detach().cpu().numpy(), dtype=np.float64 if x.dtype == Dtype.FLOAT64 else np.float32)


def _idamax(v):
    """0-based index of the largest ``|v_i|``, the first one on ties, as BLAS's idamax (NaNs after the first
    element are passed over)."""
    a = np.abs(v)
    return 0 if np.isnan(a[0]) else int(np.argmax(np.where(np.isnan(a), -1, a)))


def _choose(a, k, imax, colmax, alpha):
    """Bunch-Kaufman's choice for column k of ``a`` (lower triangle), whose largest sub-diagonal entry
    ``colmax`` is in row ``imax``: ``(kp, step)``, the row to bring to k (k + 1 for a 2x2 block) and the
    block size."""
    akk = abs(a[k, k])
    if akk >= alpha * colmax:
        return k, 1
    row = a[imax, k:imax]  # row imax left of the diagonal, then its column below it
    rowmax = abs(row[_idamax(row)])
    if imax < a.shape[0] - 1:
        rowmax = max(rowmax, abs(a[imax + 1 + _idamax(a[imax + 1:, imax]), imax]))
    if akk >= alpha * colmax * (colmax / rowmax):
        return k, 1
    return imax, 1 if abs(a[imax, imax]) >= alpha * rowmax else 2


def _swap_lower(a, k, kk, kp, step):
    """Interchanges rows and columns kk < kp of the trailing matrix ``a[k:, k:]``, in its lower triangle."""
    a[kp + 1:, [kk, kp]] = a[kp + 1:, [kp, kk]]
    a[kk + 1:kp, kk], a[kp, kk + 1:kp] = a[kp, kk + 1:kp].copy(), a[kk + 1:kp, kk].copy()
    a[kk, kk], a[kp, kp] = a[kp, kp], a[kk, kk]
    if step == 2:
        a[k + 1, k], a[kp, k] = a[kp, k], a[k + 1, k]


def _eliminate(a, k, step):
    """Updates the trailing matrix past the pivot block at k and stores L's column(s) in its place."""
    one = a.dtype.type(1)
    if step == 1:
        d11 = one / a[k, k]
        x = a[k + 1:, k]
        a[k + 1:, k + 1:] += np.outer(x, -d11 * x)
        x *= d11
        return
    d21 = a[k + 1, k]
    d11, d22 = a[k + 1, k + 1] / d21, a[k, k] / d21
    d21 = (one / (d11 * d22 - one)) / d21
    c0, c1 = a[k + 2:, k], a[k + 2:, k + 1]
    wk, wkp1 = d21 * (d11 * c0 - c1), d21 * (d22 * c1 - c0)
    a[k + 2:, k + 2:] = a[k + 2:, k + 2:] - np.outer(c0, wk) - np.outer(c1, wkp1)
    a[k + 2:, k], a[k + 2:, k + 1] = wk, wkp1


def _sytf2(a):
    """Factors one symmetric matrix in place as LAPACK's ``sytf2`` with UPLO='L' (only the lower triangle
    of ``a`` is read). Returns ``(pivots, info)``; ``a`` then holds LD in its lower triangle."""
    n = a.shape[0]
    dt = a.dtype.type
    alpha = (dt(1) + np.sqrt(dt(17))) / dt(8)
    piv, info, k = np.zeros(n, np.int64), 0, 0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        while k < n:
            step, kp = 1, k
            imax = k + 1 + _idamax(a[k + 1:, k]) if k < n - 1 else k
            colmax = abs(a[imax, k]) if k < n - 1 else dt(0)
            if max(abs(a[k, k]), colmax) == 0 or np.isnan(a[k, k]):
                info = info or k + 1  # a zero (or NaN) column: D[k, k] = 0, nothing to eliminate
            else:
                kp, step = _choose(a, k, imax, colmax, alpha)
                if kp != k + step - 1:
                    _swap_lower(a, k, k + step - 1, kp, step)
                _eliminate(a, k, step)
            piv[k:k + step] = kp + 1 if step == 1 else -(kp + 1)
            k += step
    return piv, info


def _ldl_np(a):
    """``(LD, pivots, info)`` of a batch of symmetric arrays (their lower triangles), as LAPACK's sytrf."""
    n = a.shape[-1]
    flat = a.reshape((math.prod(a.shape[:-2]), n, n)).copy()
    piv = np.zeros(flat.shape[:-1], np.int64)
    info = np.zeros(flat.shape[0], np.int64)
    for i, m in enumerate(flat):
        piv[i], info[i] = _sytf2(m)
    return np.tril(flat).reshape(a.shape), piv.reshape(a.shape[:-1]), info.reshape(a.shape[:-2])


def _no_derivative(value, op, name, *inputs):
    """``value`` that requires grad where one of ``inputs`` does, with a backward pass through it raising
    RuntimeError (PyTorch has no derivative for ``name``)."""
    if not needs_grad(*inputs):
        return value
    s = sum(x.reshape(-1)[:0].sum() for x in inputs if isinstance(x, Tensor) and x.requires_grad)
    if NAME == "c":

        def hook(grad):
            raise RuntimeError(f"[{op}] the derivative for {name} is not implemented (as in PyTorch); detach the "
                               "input, or use linalg.solve, which is differentiable")

        s.register_hook(hook)
    return value + (s - s.detach())


def _ldl_factor_ex(A, check_errors, op):
    check(A, op, square=True)
    ld, piv, info = _ldl_np(_work(A))
    if check_errors:
        raise_failed(op, A, info, lambda k: f"singular: D[{k - 1}, {k - 1}] of its LDL factorization is zero")
    LD = _no_derivative(out(ld, A), op, "linalg.ldl_factor_ex", A)
    return LDL_FACTOR_EX(LD, ints(piv, A), ints(info, A))


def ldl_factor_ex(A, *, hermitian=False, check_errors=False):
    """``(LD, pivots, info)``: the Bunch-Kaufman LDL^T factorization ``A = P L D L^T P^T`` of a symmetric
    (possibly indefinite) matrix or batch, from its lower triangle, in LAPACK's compact format (see the
    module's docstring); int32 pivots and info, info > 0 where D has a zero on its diagonal (LinAlgError
    then with ``check_errors``). ``hermitian`` matters only for complex input, which SneppX does not have."""
    return _ldl_factor_ex(A, check_errors, "linalg.ldl_factor_ex")


def ldl_factor(A, *, hermitian=False):
    """``(LD, pivots)``: the compact LDL^T factorization of ``ldl_factor_ex``; LinAlgError (a RuntimeError)
    where D has a zero on its diagonal (the matrix is singular)."""
    LD, piv, info = _ldl_factor_ex(A, False, "linalg.ldl_factor")
    raise_failed("linalg.ldl_factor", A, info.cpu().numpy(),
                 lambda k: f"singular: D[{k - 1}, {k - 1}] of its LDL factorization is zero (use ldl_factor_ex)")
    return LDL_FACTOR(LD, piv)


def _blocks(p, op):
    """Checks that the pivots ``p`` of one matrix pair up as LAPACK's (a negative value twice, for a 2x2
    block); ValueError naming ``op`` otherwise."""
    k, n = 0, p.shape[0]
    while k < n:
        if p[k] < 0 and (k + 1 == n or p[k + 1] != p[k]):
            raise ValueError(f"[{op}] pivots {p.tolist()} are not LAPACK's: a negative pivot (a 2x2 block) must be "
                             "repeated in the next entry; pass the pivots of ldl_factor")
        k += 1 if p[k] > 0 else 2


def _sytrs(a, p, b):
    """Solves ``A X = b`` in place from one matrix's factors (``a`` = LD, ``p`` = 1-based pivots), as
    LAPACK's ``sytrs`` with UPLO='L'."""
    n = a.shape[0]
    k = 0
    while k < n:  # X := D^-1 L^-1 P^T b
        if p[k] > 0:
            b[[k, p[k] - 1]] = b[[p[k] - 1, k]]
            b[k + 1:] += np.outer(a[k + 1:, k], -b[k])
            b[k] *= b.dtype.type(1) / a[k, k]
            k += 1
            continue
        b[[k + 1, -p[k] - 1]] = b[[-p[k] - 1, k + 1]]
        b[k + 2:] += np.outer(a[k + 2:, k], -b[k])
        b[k + 2:] += np.outer(a[k + 2:, k + 1], -b[k + 1])
        akm1k = a[k + 1, k]
        akm1, ak = a[k, k] / akm1k, a[k + 1, k + 1] / akm1k
        denom = akm1 * ak - 1
        bkm1, bk = b[k] / akm1k, b[k + 1] / akm1k
        b[k], b[k + 1] = (ak * bkm1 - bk) / denom, (akm1 * bk - bkm1) / denom
        k += 2
    k = n - 1
    while k >= 0:  # X := P L^-T X
        b[k] -= a[k + 1:, k] @ b[k + 1:]
        if p[k] < 0:
            b[k - 1] -= a[k + 1:, k - 1] @ b[k + 1:]
        r = abs(p[k]) - 1
        b[[k, r]] = b[[r, k]]
        k -= 1 if p[k] > 0 else 2


def _check_pivots(pivots, LD, op):
    """The pivots as a NumPy int64 array, checked: integers of shape ``LD.shape[:-1]`` with ``1 <= |p| <= n``."""
    if not isinstance(pivots, Tensor) or pivots.dtype not in _INTS:
        got = pivots.dtype if isinstance(pivots, Tensor) else type(pivots).__name__
        raise TypeError(f"[{op}] expected pivots to be an integer tensor (as ldl_factor's int32), got {got}")
    if tuple(pivots.shape) != tuple(LD.shape[:-1]):
        raise ValueError(f"[{op}] expected pivots of shape LD.shape[:-1] = {tuple(LD.shape[:-1])}, got pivots of "
                         f"shape {tuple(pivots.shape)}")
    p = pivots.detach().cpu().numpy().astype(np.int64)
    n = LD.shape[-1]
    if p.size and not (1 <= np.abs(p).min() and np.abs(p).max() <= n):
        raise ValueError(f"[{op}] pivots must satisfy 1 <= |pivot| <= {n} (LD of {desc(LD)}), got values in "
                         f"[{p.min()}, {p.max()}]; pass the pivots of ldl_factor")
    return p


def ldl_solve(LD, pivots, B, *, hermitian=False):
    """X with ``A X = B`` from ``A``'s compact LDL^T factorization ``(LD, pivots)`` (of ``ldl_factor``), as
    LAPACK's sytrs; B of shape (*, n, k), batch dims broadcast against LD's. A zero in D gives inf/NaN, as
    PyTorch's. Not differentiable, as in PyTorch (a backward pass through X raises RuntimeError)."""
    op = "linalg.ldl_solve"
    check(LD, op, square=True, name="LD")
    check(B, op, name="B")
    if LD.dtype != B.dtype:
        raise TypeError(f"[{op}] expects LD and B of one dtype, got LD of {desc(LD)} and B of {desc(B)}")
    n = LD.shape[-1]
    if B.shape[-2] != n:
        raise ValueError(f"[{op}] incompatible sizes: LD of {desc(LD)} is {n} by {n}, B of {desc(B)} has "
                         f"{B.shape[-2]} rows")
    p = _check_pivots(pivots, LD, op)
    batch = batch_shape(op, LD, B)
    count, rhs = math.prod(batch), tuple(B.shape[-2:])
    a = np.broadcast_to(_work(LD), batch + (n, n)).reshape((count, n, n))
    p = np.broadcast_to(p, batch + (n,)).reshape((count, n))
    x = np.array(np.broadcast_to(_work(B), batch + rhs)).reshape((count,) + rhs)
    for piv in p:
        _blocks(piv, op)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for m, piv, b in zip(a, p, x):
            _sytrs(m, piv, b)
    X = out(x.reshape(batch + rhs), B)
    return _no_derivative(X, op, op, LD, B)

