r"""Ready-made parametrizations, as ``torch.nn.utils.parametrizations``: ``weight_norm``,
``spectral_norm`` and ``orthogonal``, each registered through :mod:`.parametrize`.

State-dict keys follow PyTorch: ``parametrizations.weight.original0`` / ``original1`` (g and v) for
weight_norm; ``parametrizations.weight.original`` and ``parametrizations.weight.0._u`` / ``._v`` for
spectral_norm; ``parametrizations.weight.original`` and ``parametrizations.weight.0.base`` for orthogonal.
"""

from __future__ import annotations

import numpy as np
import sneppx_core as sx
import sneppx_core.functional as F
from sneppx_core import Tensor

from ..conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..module import Module
from . import parametrize
from .hook_norms import norm_except_dim, weight_from_norm, weight_to_matrix

_MAPS = ("matrix_exp", "cayley", "householder")
_EPS = {sx.float64: 2.0 ** -52, sx.float32: 2.0 ** -23, sx.float16: 2.0 ** -10, sx.bfloat16: 2.0 ** -7}


class _WeightNorm(Module):
    """``forward(g, v) = g v / ||v||``; ``right_inverse(w) = (||w||, w)`` (norms over all dims but ``dim``)."""

    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        """The weight ``g v / ||v||``."""
        return weight_from_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        """``(g, v)`` with ``g = ||weight||`` and ``v = weight``."""
        return norm_except_dim(weight, self.dim), weight


def weight_norm(module, name: str = "weight", dim: int = 0):
    r"""Parametrizes ``module.<name>`` as ``w = g v / ||v||`` (Salimans and Kingma, 2016), the norm taken over
    every dim except ``dim`` (the whole tensor for ``dim=None``). ``g`` and ``v`` are stored as
    ``module.parametrizations.<name>.original0`` and ``original1``. Returns ``module``."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    """``forward(W) = W / sigma(W)``, sigma estimated by power iteration with buffers ``_u`` and ``_v``."""

    def __init__(self, weight, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12):
        super().__init__()
        ndim = weight.ndim
        if not -ndim <= dim < ndim:
            raise IndexError(f"[spectral_norm] dim {dim} is out of range for a weight of shape {tuple(weight.shape)}")
        if n_power_iterations <= 0:
            raise ValueError("[spectral_norm] expected n_power_iterations to be positive, got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim, self.eps = dim % ndim, eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            mat = weight_to_matrix(weight.detach(), self.dim)
            h, w = mat.shape
            with sx.no_grad():
                u = sx.empty(h, dtype=weight.dtype, device=weight.device).normal_(0.0, 1.0)
                v = sx.empty(w, dtype=weight.dtype, device=weight.device).normal_(0.0, 1.0)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=eps))
            self._power_method(mat, 15)

    def _power_method(self, mat, steps: int) -> None:
        with sx.no_grad():
            for _ in range(steps):
                self._u.copy_(F.normalize(sx.mv(mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(sx.mv(mat.t(), self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        """``weight / sigma`` with ``sigma = u . (W v)``; in training mode ``u = normalize(W v)``,
        ``v = normalize(W^T u)`` first take ``n_power_iterations`` steps (in place, without gradient).
        A 1-d weight is divided by its 2-norm."""
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        mat = weight_to_matrix(weight, self.dim)
        if self.training:
            self._power_method(mat.detach(), self.n_power_iterations)
        sigma = sx.dot(self._u.clone(), sx.mv(mat, self._v.clone()))
        return weight / sigma

    def right_inverse(self, value):
        """The value itself (assigning a weight stores it unnormalised)."""
        return value


def _default_dim(module, dim):
    if dim is not None:
        return dim
    return 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0


def _tensor_of(module, name: str, fn: str):
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"[{fn}] {type(module).__name__} has no parameter or buffer named {name!r}")
    return weight


def spectral_norm(module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12, dim=None):
    r"""Parametrizes ``module.<name>`` as ``W / sigma(W)`` (Miyato et al., 2018), sigma the largest singular
    value of W reshaped to a matrix (``dim`` first: 0, or 1 for ConvTranspose layers), estimated by
    power iteration: 15 steps at registration, then ``n_power_iterations`` before each read in training
    mode (none in eval mode). The vectors are buffers ``parametrizations.<name>.0._u`` and ``._v``.
    Returns ``module``."""
    weight = _tensor_of(module, name, "spectral_norm")
    norm = _SpectralNorm(weight, n_power_iterations, _default_dim(module, dim), eps)
    parametrize.register_parametrization(module, name, norm)
    return module


def _make_orthogonal(a):
    """The Q factor of ``a = QR`` with R's diagonal made positive (batched)."""
    q, r = sx.linalg.qr(a)
    return q * r.diagonal(0, -2, -1).sign().unsqueeze(-2)


def _is_orthogonal(q) -> bool:
    n, k = q.shape[-2], q.shape[-1]
    eye = sx.eye(k, dtype=q.dtype, device=q.device)
    atol = 10.0 * n * _EPS.get(q.dtype, _EPS[sx.float32])
    return bool(sx.allclose(q.mT @ q, eye, atol=atol))


def _geqrf(a):
    """LAPACK geqrf of ``a`` (batched), through NumPy: reflectors below the diagonal, R on and above it."""
    raw = a.detach().cpu().numpy().astype(np.float64)
    h, tau = np.linalg.qr(raw, mode="raw")
    return (sx.tensor(np.ascontiguousarray(np.swapaxes(h, -1, -2))).to(a.dtype).to(a.device),
            sx.tensor(tau).to(a.dtype).to(a.device))


class _Orthogonal(Module):
    """Maps an unconstrained matrix (or batch) ``X`` to an orthogonal one with orthonormal columns (rows when
    wide), through ``matrix_exp(A)``, the Cayley map ``(I - A/2)^-1 (I + A/2)`` of the skew-symmetric
    ``A = tril(X) - tril(X)^T``, or a product of Householder reflectors stored below the diagonal of X.
    With ``use_trivialization`` the result is multiplied by the buffer ``base`` (set by right_inverse)."""

    def __init__(self, weight, orthogonal_map: str, *, use_trivialization: bool = True):
        super().__init__()
        self.shape, self.orthogonal_map = tuple(weight.shape), orthogonal_map
        self.use_trivialization = use_trivialization
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, x):
        """The orthogonal matrix (or batch) that ``x`` parametrizes."""
        n, k = x.shape[-2], x.shape[-1]
        wide = n < k
        if wide:
            x, n, k = x.mT, k, n
        if self.orthogonal_map == "householder":
            a = x.tril(-1)
            q = sx.linalg.householder_product(a, 2.0 / (1.0 + (a * a).sum(-2)))
            q = q * x.diagonal(0, -2, -1).detach().trunc().unsqueeze(-2)  # signs of X's diagonal, not learned
        else:
            a = x.tril()
            if n != k:
                a = sx.cat([a, sx.zeros(*a.shape[:-1], n - k, dtype=a.dtype, device=a.device)], -1)
            a = a - a.mT
            if self.orthogonal_map == "matrix_exp":
                q = sx.linalg.matrix_exp(a)
            else:
                eye = sx.eye(n, dtype=a.dtype, device=a.device)
                q = sx.linalg.solve(eye - 0.5 * a, eye + 0.5 * a)
            q = q[..., :k]
        if self.use_trivialization:
            q = self.base @ q
        return q.mT if wide else q

    def right_inverse(self, q):
        """An ``X`` with ``forward(X) == q`` for orthogonal ``q`` (``q`` is orthogonalised by QR first when it is
        not): with ``use_trivialization`` ``q`` (completed to a square matrix) becomes ``base`` and ``X`` is
        minus the identity; without it, the householder map gets q's Householder reflectors."""
        if tuple(q.shape) != self.shape:
            raise ValueError(f"[orthogonal] expected a matrix of shape {self.shape}, got {tuple(q.shape)}")
        n, k = q.shape[-2], q.shape[-1]
        wide = n < k
        if wide:
            q, n, k = q.mT, k, n
        if not self.use_trivialization:
            if self.orthogonal_map != "householder":
                raise NotImplementedError("[orthogonal] it is not possible to assign to the matrix exponential or "
                                          "the Cayley parametrizations when use_trivialization=False")
            a, tau = _geqrf(q)
            sign = a.diagonal(0, -2, -1).sign() * (1.0 - 2.0 * (tau == 0).to(a.dtype))  # no reflection: flip
            a.diagonal(0, -2, -1).copy_(sign)
            return a.mT if wide else a
        if n == k:
            base = q.clone() if _is_orthogonal(q) else _make_orthogonal(q)
        else:
            extra = sx.randn(*q.shape[:-2], n, n - k, dtype=q.dtype, device=q.device)
            base = _make_orthogonal(sx.cat([q, extra], -1))
        self.base = base
        neg_eye = sx.zeros(*self.shape, dtype=q.dtype, device=q.device)
        neg_eye.diagonal(0, -2, -1).fill_(-1.0)
        return neg_eye


def orthogonal(module, name: str = "weight", orthogonal_map=None, *, use_trivialization: bool = True):
    r"""Parametrizes the matrix (or batch of matrices) ``module.<name>`` to stay orthogonal: columns
    orthonormal when tall, rows when wide. ``orthogonal_map`` is "matrix_exp" (default for square),
    "cayley" or "householder" (default otherwise). With ``use_trivialization`` (default) the current
    weight, orthogonalised, is kept as ``base`` and the original starts at minus the identity, so the
    module's weight is unchanged at registration. Returns ``module``."""
    weight = _tensor_of(module, name, "orthogonal")
    if weight.ndim < 2:
        raise ValueError(f"[orthogonal] expected a matrix or batch of matrices, got shape {tuple(weight.shape)}")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] else "householder"
    if orthogonal_map not in _MAPS:
        raise ValueError(f'[orthogonal] orthogonal_map has to be one of "matrix_exp", "cayley", "householder", '
                         f"got {orthogonal_map!r}")
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


__all__ = ["weight_norm", "spectral_norm", "orthogonal"]
