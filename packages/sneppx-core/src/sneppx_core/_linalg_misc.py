"""Norms, matrix functions and small helpers of ``sneppx_core.linalg``, composed of differentiable core
ops and of the decompositions (``_linalg_decomp``) and solves (``_linalg_solve``)."""

from __future__ import annotations

import builtins
import math

import numpy as np

from . import _tensor_more, _tensor_shape, _torch_more
from ._backend import _C
from ._C_face import Tensor
from ._linalg_common import check, desc, host, mT, out
from ._linalg_decomp import svdvals
from ._linalg_solve import _inv_ex, _solve_ex, inv_ex

_INF = builtins.float("inf")


def _dims(dim, ndim):
    dims = list(range(ndim)) if dim is None else [dim] if isinstance(dim, builtins.int) else list(dim)
    return [d % builtins.max(ndim, 1) for d in dims]


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """``(sum |x|^ord)^(1/ord)`` over ``dim`` (all dims when None); ord inf / -inf take the largest /
    smallest ``|x|``, ord 0 counts non-zeros; a complex ``x`` counts its magnitudes. The gradient at ``x = 0`` is 0,
    as PyTorch's."""
    if getattr(x, "is_complex", lambda: False)():
        x = x.abs()  # its magnitudes (real); the same gradient at 0 as the norm's
    check(x, "linalg.vector_norm", ndim=0, name="x")
    x = x if dtype is None else x.to(dtype)
    if x.ndim == 0:
        x, dim, keepdim = x.reshape(1), None, False
    dims = _dims(dim, x.ndim)
    a = x.abs()
    if ord == _INF:
        return a.amax(dims, keepdim)
    if ord == -_INF:
        return a.amin(dims, keepdim)
    if ord == 0:
        return (a.detach() != 0).to(x.dtype).sum(dims, keepdim=keepdim)
    p = builtins.float(ord)
    if p == 1:
        return a.sum(dims, keepdim=keepdim)
    return _torch_more._safe_root((x * x if p == 2 else a ** p).sum(dims, keepdim=keepdim), p)


_MATRIX_ORDS = ("fro", "nuc", _INF, -_INF, 1, -1, 2, -2)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """A matrix norm over the two dims ``dim``: "fro" (Frobenius), "nuc" (sum of singular values), 2 / -2
    (largest / smallest singular value), 1 / -1 (largest / smallest column abs-sum), inf / -inf
    (largest / smallest row abs-sum)."""
    op = "linalg.matrix_norm"
    check(A, op)
    A = A if dtype is None else A.to(dtype)
    if ord not in _MATRIX_ORDS:
        raise ValueError(f"[{op}] ord must be one of 'fro', 'nuc', inf, -inf, 1, -1, 2, -2, got {ord!r}")
    d0, d1 = _dims(dim, A.ndim)
    if d0 == d1:
        raise ValueError(f"[{op}] dims must differ, got {dim} for A of {desc(A)}")
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim)
    m = _tensor_shape.moveaxis(A, [d0, d1], [-2, -1])
    if ord in ("nuc", 2, -2):
        s = svdvals(m)
        r = s.sum(-1) if ord == "nuc" else s.amax([-1]) if ord == 2 else s.amin([-1])
    else:
        along, over = (-2, -1) if ord in (1, -1) else (-1, -2)
        sums = m.abs().sum([along], keepdim=True)
        r = (sums.amax([over], True) if ord in (1, _INF) else sums.amin([over], True)).reshape(tuple(m.shape[:-2]))
    if keepdim:
        for d in sorted((d0, d1)):
            r = r.unsqueeze(d)
    return r


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """A vector norm (``dim`` an int or one dim, or a 1-d input with ``ord``) or a matrix norm (``dim`` two
    dims, or a 2-d input with ``ord``); with ``ord`` and ``dim`` both None, the 2-norm of all elements."""
    check(A, "linalg.norm", ndim=0)
    if isinstance(dim, builtins.int) or (dim is not None and len(dim) == 1):
        return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)
    if dim is not None:
        return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype)
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if A.ndim == 1 and not isinstance(ord, str):
        return vector_norm(A, ord, None, keepdim, dtype=dtype)
    if A.ndim == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    need = "2-d" if isinstance(ord, str) else "1-d or 2-d"
    raise ValueError(f"[linalg.norm] with ord={ord!r} and dim=None the input must be {need}, got {desc(A)}")


def cond(A, p=None):
    """The condition number ``||A||_p ||A^-1||_p``; for p None/2/-2 the ratio of the extreme singular
    values (any shape), for the other norms of square matrices (inf where A is singular)."""
    check(A, "linalg.cond")
    if p in (None, 2, -2):
        s = svdvals(A)
        return s.amax([-1]) / s.amin([-1]) if p != -2 else s.amin([-1]) / s.amax([-1])
    check(A, "linalg.cond", square=True)
    ainv, info = inv_ex(A)
    bad = info != 0
    safe = _C.where(bad.unsqueeze(-1).unsqueeze(-1), 0.0, ainv)
    r = matrix_norm(A, p) * matrix_norm(safe, p)
    return _C.where(bad, _INF, r)


def matrix_power(A, n):
    """``A`` (square, or a batch) to the integer power ``n`` (``n < 0``: powers of the inverse)."""
    check(A, "linalg.matrix_power", square=True)
    return _tensor_more.matrix_power(A, n)


_PADE13 = (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800., 129060195264000.,
           10559470521600., 670442572800., 33522128640., 1323241920., 40840800., 960960., 16380., 182., 1.)
_THETA13 = 5.371920351148152


def matrix_exp(A):
    """The matrix exponential of a square matrix or a batch, by scaling and squaring with the [13/13]
    Padé approximant (Higham 2005): ``A / 2^s`` with ``||A||_1 / 2^s <= 5.37``, ``r = (V - U)^-1 (V + U)``,
    squared s times. Every step is a differentiable op, so the gradient is the exact derivative of the
    approximant (accurate to float64 rounding); the solve's gradient is first order, so a second backward
    raises."""
    check(A, "linalg.matrix_exp", square=True)
    n = A.shape[-1]
    if A.numel() == 0:
        return A.clone()
    norm1 = builtins.float(np.abs(host(A)).sum(-2).max())
    s = builtins.max(0, math.ceil(math.log2(norm1 / _THETA13))) if norm1 > _THETA13 else 0
    a = A * (0.5 ** s)
    b = _PADE13
    eye = out(np.eye(n), A)
    a2 = a @ a
    a4 = a2 @ a2
    a6 = a4 @ a2
    u = a @ (a6 @ (a6 * b[13] + a4 * b[11] + a2 * b[9]) + a6 * b[7] + a4 * b[5] + a2 * b[3] + eye * b[1])
    v = a6 @ (a6 * b[12] + a4 * b[10] + a2 * b[8]) + a6 * b[6] + a4 * b[4] + a2 * b[2] + eye * b[0]
    r = _solve_ex(v - u, v + u, True, True, "linalg.matrix_exp").result
    for _ in range(s):
        r = r @ r
    return r


def multi_dot(tensors):
    """The product of two or more matrices in the cheapest order (dynamic programming over the chain);
    the first may be 1-d (a row vector) and the last 1-d (a column), and the result drops those dims."""
    ts = list(tensors)
    if len(ts) < 2:
        raise ValueError(f"[linalg.multi_dot] expects at least 2 tensors, got {len(ts)}")
    first, last = ts[0].ndim == 1, ts[-1].ndim == 1
    ts[0] = ts[0].unsqueeze(0) if first else ts[0]
    ts[-1] = ts[-1].unsqueeze(-1) if last else ts[-1]
    for i, t in enumerate(ts):
        check(t, "linalg.multi_dot", name=f"tensors[{i}]")
        if t.ndim != 2 or (i and ts[i - 1].shape[1] != t.shape[0]):
            raise ValueError(f"[linalg.multi_dot] tensors[{i}] of {desc(t)} does not chain (2-d, sizes matching)")
    dims = [ts[0].shape[0]] + [t.shape[1] for t in ts]
    n = len(ts)
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j], split[i][j] = min((cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1], k)
                                          for k in range(i, j))

    def product(i, j):
        return ts[i] if i == j else product(i, split[i][j]) @ product(split[i][j] + 1, j)

    r = product(0, n - 1)
    r = r.squeeze(0) if first else r
    return r.squeeze(-1) if last else r


def cross(input, other, *, dim=-1):
    """Cross product of 3-vectors along ``dim`` (default the last), broadcasting inputs of one ndim."""
    if isinstance(input, Tensor) and isinstance(other, Tensor) and input.ndim != other.ndim:
        raise ValueError(f"[linalg.cross] inputs must have the same number of dims, got {desc(input)} and "
                         f"{desc(other)}")
    return _torch_more.cross(input, other, dim=dim)


def vecdot(x, y, *, dim=-1):
    """``sum(x * y)`` along ``dim``, broadcasting the inputs."""
    return (x * y).sum([dim])


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """The diagonal with ``offset`` of the matrices over ``dim1`` and ``dim2`` (the last two by default)."""
    return _tensor_shape.diagonal(A, offset, dim1, dim2)


def tensorinv(A, ind=2):
    """The inverse of ``A`` seen as a matrix of its first ``ind`` dims by the rest (their sizes' products
    must agree); the result has shape ``A.shape[ind:] + A.shape[:ind]``."""
    check(A, "linalg.tensorinv", ndim=1)
    rows, cols = math.prod(A.shape[:ind]), math.prod(A.shape[ind:])
    if ind <= 0 or rows != cols:
        raise ValueError(f"[linalg.tensorinv] the products of A.shape[:{ind}] and A.shape[{ind}:] must agree and "
                         f"ind be positive, got A of {desc(A)}")
    inverse = _inv_ex(A.reshape((rows, cols)), True, "linalg.tensorinv").inverse
    return inverse.reshape(tuple(A.shape[ind:]) + tuple(A.shape[:ind]))


def tensorsolve(A, B, dims=None):
    """X with ``tensordot(A, X, X.ndim) = B``: X has shape ``A.shape[B.ndim:]``; ``dims`` moves those dims
    of A to the end first."""
    check(A, "linalg.tensorsolve", ndim=1)
    if dims is not None:
        dims = _dims(dims, A.ndim)
        A = _tensor_shape.moveaxis(A, dims, list(range(A.ndim - len(dims), A.ndim)))
    xshape = tuple(A.shape[B.ndim:])
    rows, cols = B.numel(), math.prod(xshape)
    if tuple(A.shape[:B.ndim]) != tuple(B.shape) or rows != cols:
        raise ValueError(f"[linalg.tensorsolve] A of {desc(A)} and B of {desc(B)} do not form a square system")
    return _solve_ex(A.reshape((rows, cols)), B.reshape(-1), True, True, "linalg.tensorsolve").result.reshape(xshape)


def vander(x, N=None):
    """The Vandermonde matrix ``[x^0, x^1, ..., x^(N-1)]`` along a new last dim (N defaults to x's last size)."""
    if not isinstance(x, Tensor) or x.ndim < 1:
        raise ValueError("[linalg.vander] expects a tensor with at least 1 dim")
    N = x.shape[-1] if N is None else N
    if N <= 1:
        raise ValueError(f"[linalg.vander] N must be greater than 1, got {N}")
    powers = x.unsqueeze(-1).expand(*x.shape, N - 1)
    return _C.cat([x.detach().new_ones(tuple(x.shape) + (1,)), powers], -1).cumprod(-1)


def householder_product(A, tau):
    """The first n columns of ``H_1 ... H_k``, ``H_i = I - tau_i v_i v_i^T`` with ``v_i`` column i of A below
    the diagonal and 1 on it (LAPACK's orgqr: Q from ``geqrf``), composed of differentiable ops."""
    op = "linalg.householder_product"
    check(A, op)
    check(tau, op, ndim=1, name="tau")
    m, n = A.shape[-2:]
    k = tau.shape[-1]
    if not k <= n <= m or tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise ValueError(f"[{op}] expects A (*, m, n) with m >= n >= k and tau (*, k), got A of {desc(A)} and "
                         f"tau of {desc(tau)}")
    v = _C.tril(A, -1) + out(np.eye(m, n), A)
    q = out(np.eye(m), A).expand(*A.shape[:-2], m, m)
    for i in range(k):
        vi = v[..., :, i:i + 1]
        q = q - (q @ vi) * tau[..., i:i + 1].unsqueeze(-1) @ mT(vi)
    return q[..., :, :n]


def geqrf(A):
    """``(a, tau)``: LAPACK's geqrf, the Householder form of ``A = Q R`` (R on and above the diagonal of
    ``a``, the reflectors below it; ``householder_product(a, tau)`` gives Q). Not differentiable."""
    check(A, "geqrf")
    h, tau = np.linalg.qr(host(A), mode="raw")
    return out(np.swapaxes(h, -1, -2), A), out(tau, A)
