"""Linear algebra, as ``torch.linalg`` (``import sneppx_core.linalg as LA``; also ``sneppx_core.linalg``).

Names, signatures, defaults and named results follow ``torch.linalg``; every function takes a matrix or
a batch of them (leading dims) in float32 or float64 (integer and half-precision inputs raise
TypeError, as PyTorch) and returns its result in the input's dtype, on the input's device.

How it is computed: the decompositions, inverses and solves run on the host through NumPy's LAPACK in
float64 (LU by a batched elimination in NumPy; ``ldl_factor`` / ``ldl_solve`` by LAPACK's Bunch-Kaufman
sytf2 / sytrs written in NumPy, in the input's precision, and, as PyTorch's, without a derivative: a
backward pass through them raises RuntimeError). Their gradients are surrogates built of differentiable
core ops whose differential at the input is the op's (``value + (s - s.detach())``), written beside
each formula: inverse, solves, Cholesky (Murray), QR, SVD and eigh (the F-matrix ``1 / (s_j^2 - s_i^2)``,
``1 / (w_j - w_i)``), LU, pinv and lstsq (the constant-rank pseudo-inverse derivative), det and slogdet.
These gradients are first order only: double backward (a backward pass with ``create_graph=True``
through one of them) raises RuntimeError naming the op, instead of returning a wrong second derivative.
The rest (norms, ``matrix_exp`` by scaling and squaring with the [13/13] Padé approximant,
``lu_solve``, ``multi_dot``, ``householder_product``, ...) are compositions of differentiable ops; those
built on the ops above (``matrix_exp`` and ``tensorsolve`` on ``solve``, ``lu_solve`` on triangular
solves, the 2-norms, nuclear norms and ``cond`` on singular values, negative ``matrix_power`` and
``tensorinv`` on ``inv``) are first order only as well.

Singular or non-positive-definite inputs raise :class:`LinAlgError` where PyTorch does; the ``*_ex``
forms return an ``info`` tensor instead. ``eig`` and ``eigvals`` return complex tensors, computed by LAPACK
through NumPy, and have no gradient (an input that requires grad raises NotImplementedError). The ``out=`` and
``driver=`` (SVD) keywords are not taken, except ``lstsq``'s ``driver``, which selects the extra results as
PyTorch's does.
"""

from __future__ import annotations

from ._backend import _C
from ._linalg_common import LinAlgError
from ._linalg_decomp import cholesky, cholesky_ex, eigh, eigvalsh, lu, lu_factor, lu_factor_ex, qr, svd, svdvals
from ._linalg_ldl import ldl_factor, ldl_factor_ex, ldl_solve
from ._linalg_misc import (
    cond, cross, diagonal, householder_product, matrix_exp, matrix_norm, matrix_power, multi_dot, norm,
    tensorinv, tensorsolve, vander, vecdot, vector_norm,
)
from ._linalg_solve import (
    det, inv, inv_ex, lstsq, lu_solve, matrix_rank, pinv, slogdet, solve, solve_ex, solve_triangular,
)


def _eig(A, name, vectors):
    """LAPACK's geev through NumPy on a CPU copy of A (float32 / complex64 stay single precision)."""
    import numpy as np

    from ._C_face import Tensor

    if not isinstance(A, Tensor):
        raise TypeError(f"[linalg.{name}] expected a Tensor, got {type(A).__name__}")
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"[linalg.{name}] expected a batch of square matrices, got shape {tuple(A.shape)}")
    if A.requires_grad and _C.is_grad_enabled():
        raise NotImplementedError(f"[linalg.{name}] the gradient of a general eigendecomposition is not implemented; "
                                  "call it on A.detach() or under no_grad (linalg.eigh is differentiable)")
    a = A.detach().cpu().numpy()
    if a.dtype.kind not in "fc":
        raise TypeError(f"[linalg.{name}] expected a floating or complex matrix, got {A.dtype!r}")
    if not np.isfinite(a).all():
        raise LinAlgError(f"[linalg.{name}] the input contains infinities or NaN")
    single = a.dtype in (np.float16, np.float32, np.complex64)
    w, v = np.linalg.eig(a)
    ct = np.complex64 if single else np.complex128
    out = [Tensor.from_numpy(np.ascontiguousarray(t.astype(ct))).to(A.device) for t in ((w, v) if vectors else (w,))]
    return tuple(out) if vectors else out[0]


def eig(A):
    """Eigenvalues and eigenvectors of square matrices (batched): complex tensors ``(L, V)`` with ``A V = V diag(L)``,
    each eigenvector of norm 1 (LAPACK's ``geev``, through NumPy, on the CPU). Not differentiable: an ``A`` that
    requires grad raises NotImplementedError (``eigh`` is, for symmetric matrices)."""
    return _eig(A, "eig", True)


def eigvals(A):
    """The eigenvalues of square matrices (batched), as a complex tensor (see ``eig``)."""
    return _eig(A, "eigvals", False)


def matmul(input, other):
    """The matrix product (``sneppx_core.matmul``)."""
    return _C.matmul(input, other)


__all__ = [
    "LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals",
    "eigvalsh", "householder_product", "inv", "inv_ex", "ldl_factor", "ldl_factor_ex", "ldl_solve", "lstsq", "lu",
    "lu_factor", "lu_factor_ex", "lu_solve",
    "matmul", "matrix_exp", "matrix_norm", "matrix_power", "matrix_rank", "multi_dot", "norm", "pinv", "qr",
    "slogdet", "solve", "solve_ex", "solve_triangular", "svd", "svdvals", "tensorinv", "tensorsolve", "vander",
    "vecdot", "vector_norm",
]
