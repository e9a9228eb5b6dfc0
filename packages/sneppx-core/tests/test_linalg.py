"""``sneppx_core.linalg`` and the top-level linear-algebra names: values against NumPy (float64),
reconstructions, float64 finite-difference gradients of every differentiable function, errors, and
parity with PyTorch (values and gradients)."""

from __future__ import annotations

import numpy as np
import pytest

import sneppx_core as sx
from opcheck import matches_torch, rng_for
from sneppx_core.testing import gradcheck

LA = sx.linalg
INF = float("inf")


def _mat(rng, *shape, shift=0.0):
    """Random matrices; ``shift`` adds ``shift * I`` to the trailing square block (well conditioned)."""
    a = rng.standard_normal(shape)
    if shift:
        a = a + shift * np.eye(shape[-2], shape[-1])
    return a


def _t(a, dtype=sx.float64, grad=False):
    return sx.tensor(np.asarray(a), dtype=dtype, requires_grad=grad)


def _np(t):
    return t.detach().numpy()


def _spd(L, x):
    """``x x^T + 3 I``: symmetric positive-definite, differentiable in x."""
    return x @ x.mT + 3 * L.eye(x.shape[-1], dtype=x.dtype)


def _lu_solve(L, a, b, **kw):
    LU, piv = L.linalg.lu_factor(a)
    return L.linalg.lu_solve(LU, piv, b, **kw)


# name: (fn(lib, *leaves) -> one tensor, the float64 input shapes, shift added to square inputs)
# Each entry is differentiated by finite differences and compared with PyTorch (values and gradients).
CASES = {
    "inv": (lambda L, a: L.linalg.inv(a), [(2, 3, 3)], 3),
    "inv_ex": (lambda L, a: L.linalg.inv_ex(a).inverse, [(3, 3)], 3),
    "det": (lambda L, a: L.linalg.det(a), [(2, 3, 3)], 0),
    "slogdet": (lambda L, a: L.linalg.slogdet(a).logabsdet, [(2, 3, 3)], 0),
    "solve": (lambda L, a, b: L.linalg.solve(a, b), [(2, 3, 3), (3, 2)], 3),
    "solve_vector": (lambda L, a, b: L.linalg.solve(a, b), [(2, 3, 3), (2, 3)], 3),
    "solve_right": (lambda L, a, b: L.linalg.solve(a, b, left=False), [(3, 3), (2, 3)], 3),
    "solve_ex": (lambda L, a, b: L.linalg.solve_ex(a, b).result, [(3, 3), (3, 1)], 3),
    "solve_triangular": (lambda L, a, b: L.linalg.solve_triangular(a, b, upper=True), [(2, 3, 3), (3, 2)], 3),
    "solve_triangular_right_unit": (
        lambda L, a, b: L.linalg.solve_triangular(a, b, upper=False, left=False, unitriangular=True),
        [(3, 3), (2, 3)], 0),
    "cholesky": (lambda L, x: L.linalg.cholesky(_spd(L, x)), [(2, 3, 3)], 0),
    "cholesky_upper": (lambda L, x: L.linalg.cholesky(_spd(L, x), upper=True), [(3, 3)], 0),
    "cholesky_ex": (lambda L, x: L.linalg.cholesky_ex(_spd(L, x)).L, [(3, 3)], 0),
    "qr_tall": (lambda L, a: L.linalg.qr(a).Q * 2 + L.linalg.qr(a).R.sum(), [(4, 3)], 0),
    "qr_R_wide": (lambda L, a: L.linalg.qr(a).R, [(2, 3, 4)], 0),
    "qr_Q_wide": (lambda L, a: L.linalg.qr(a).Q, [(3, 4)], 0),
    "qr_complete_square": (lambda L, a: L.linalg.qr(a, mode="complete").R, [(3, 3)], 0),
    "svd_U": (lambda L, a: (lambda u, s, vh: (u * s.unsqueeze(-2)) @ u.mT)(*L.linalg.svd(a, False)), [(4, 3)], 0),
    "svd_V": (lambda L, a: (lambda u, s, vh: vh.mT @ (s.pow(3).unsqueeze(-1) * vh))(*L.linalg.svd(a, False)),
              [(2, 3, 4)], 0),
    "svd_full": (lambda L, a: (lambda u, s, vh: (u[..., :3] * s.exp().unsqueeze(-2)) @ vh)(*L.linalg.svd(a)),
                 [(4, 3)], 0),
    "svdvals": (lambda L, a: L.linalg.svdvals(a), [(2, 4, 3)], 0),
    "eigh": (lambda L, a: (lambda w, v: (v * w.pow(3).unsqueeze(-2)) @ v.mT + w.sum())(*L.linalg.eigh(a + a.mT)),
             [(2, 3, 3)], 0),
    "eigh_upper": (lambda L, a: (lambda w, v: (v * w.exp().unsqueeze(-2)) @ v.mT)(*L.linalg.eigh(a + a.mT, "U")),
                   [(3, 3)], 0),
    "eigvalsh": (lambda L, a: L.linalg.eigvalsh(a + a.mT), [(2, 3, 3)], 0),
    "lstsq_tall": (lambda L, a, b: L.linalg.lstsq(a, b).solution, [(5, 3), (5, 2)], 0),
    "lstsq_wide": (lambda L, a, b: L.linalg.lstsq(a, b, driver="gelsd").solution, [(2, 3, 4), (2, 3, 2)], 0),
    "pinv": (lambda L, a: L.linalg.pinv(a), [(4, 3)], 0),
    "pinv_wide": (lambda L, a: L.linalg.pinv(a, rtol=1e-12), [(2, 2, 4)], 0),
    "pinv_hermitian": (lambda L, a: L.linalg.pinv(_spd(L, a), hermitian=True), [(3, 3)], 0),
    "matrix_power": (lambda L, a: L.linalg.matrix_power(a, 3) + L.linalg.matrix_power(a, -2), [(2, 3, 3)], 3),
    "matrix_exp": (lambda L, a: L.linalg.matrix_exp(a), [(2, 3, 3)], 0),
    "matrix_exp_large": (lambda L, a: L.linalg.matrix_exp(a * 4), [(3, 3)], 0),
    "multi_dot": (lambda L, a, b, c: L.linalg.multi_dot([a, b, c]), [(3,), (3, 4), (4, 2)], 0),
    "cross": (lambda L, a, b: L.linalg.cross(a, b), [(2, 3), (1, 3)], 0),
    "vecdot": (lambda L, a, b: L.linalg.vecdot(a, b, dim=0), [(3, 2), (3, 2)], 0),
    "diagonal": (lambda L, a: L.linalg.diagonal(a, offset=1), [(2, 3, 4)], 0),
    "vector_norm": (lambda L, a: L.linalg.vector_norm(a), [(2, 3)], 0),
    "vector_norm_3_dim": (lambda L, a: L.linalg.vector_norm(a, 3, dim=(0, 2), keepdim=True), [(2, 3, 2)], 0),
    "vector_norm_1": (lambda L, a: L.linalg.vector_norm(a, 1, dim=1), [(2, 3)], 0),
    "vector_norm_inf": (lambda L, a: L.linalg.vector_norm(a, INF, dim=-1) + L.linalg.vector_norm(a, -INF, dim=-1),
                        [(2, 3)], 0),
    "vector_norm_neg": (lambda L, a: L.linalg.vector_norm(a, -1.5), [(4,)], 0),
    "matrix_norm_fro": (lambda L, a: L.linalg.matrix_norm(a), [(2, 3, 3)], 0),
    "matrix_norm_nuc": (lambda L, a: L.linalg.matrix_norm(a, "nuc", keepdim=True), [(2, 3, 4)], 0),
    "matrix_norm_2": (lambda L, a: L.linalg.matrix_norm(a, 2) + L.linalg.matrix_norm(a, -2), [(4, 3)], 0),
    "matrix_norm_1": (lambda L, a: L.linalg.matrix_norm(a, 1, dim=(0, 2)) + L.linalg.matrix_norm(a, -1),
                      [(3, 3, 3)], 0),
    "matrix_norm_inf": (lambda L, a: L.linalg.matrix_norm(a, INF) + L.linalg.matrix_norm(a, -INF), [(3, 4)], 0),
    "norm": (lambda L, a: L.linalg.norm(a) + L.linalg.norm(a, 1, dim=1).sum() + L.linalg.norm(a, "nuc"),
             [(3, 4)], 0),
    "norm_vector_ord": (lambda L, a: L.linalg.norm(a, 3), [(5,)], 0),
    "cond": (lambda L, a: L.linalg.cond(a), [(2, 4, 3)], 0),
    "cond_fro": (lambda L, a: L.linalg.cond(a, "fro") + L.linalg.cond(a, 1), [(3, 3)], 2),
    "lu_L": (lambda L, a: L.linalg.lu(a).L, [(2, 3, 3)], 0),
    "lu_U_tall": (lambda L, a: L.linalg.lu(a).U + L.linalg.lu(a).L.sum(), [(4, 3)], 0),
    "lu_wide": (lambda L, a: L.linalg.lu(a).U + L.linalg.lu(a).L.sum(), [(3, 5)], 0),
    "lu_factor": (lambda L, a: L.linalg.lu_factor(a).LU, [(2, 3, 3)], 0),
    "lu_factor_tall": (lambda L, a: L.linalg.lu_factor_ex(a).LU, [(4, 2)], 0),
    "lu_solve": (lambda L, a, b: _lu_solve(L, a, b), [(2, 3, 3), (3, 2)], 2),
    "lu_solve_adjoint": (lambda L, a, b: _lu_solve(L, a, b, adjoint=True), [(3, 3), (3, 2)], 2),
    "lu_solve_right": (lambda L, a, b: _lu_solve(L, a, b, left=False), [(3, 3), (2, 3)], 2),
    "lu_solve_right_adjoint": (lambda L, a, b: _lu_solve(L, a, b, left=False, adjoint=True), [(3, 3), (2, 3)], 2),
    "tensorinv": (lambda L, a: L.linalg.tensorinv(a.reshape(2, 2, 4), ind=2), [(4, 4)], 3),
    "tensorsolve": (lambda L, a, b: L.linalg.tensorsolve(a.reshape(2, 3, 6), b), [(6, 6), (2, 3)], 3),
    "vander": (lambda L, a: L.linalg.vander(a, N=4), [(2, 3)], 0),
    "householder_product": (lambda L, a, tau: L.linalg.householder_product(a, tau), [(4, 3), (2,)], 0),
    # top-level names
    "torch.svd": (lambda L, a: (lambda u, s, v: (u * s.unsqueeze(-2)) @ v.mT + (v @ v.mT).sum())(*L.svd(a)),
                  [(4, 3)], 0),
    "torch.qr": (lambda L, a: L.qr(a, some=False).Q, [(3, 3)], 0),
    "torch.cholesky": (lambda L, x: L.cholesky(_spd(L, x)), [(3, 3)], 0),
    "cholesky_solve": (lambda L, x, b: L.cholesky_solve(b, L.linalg.cholesky(_spd(L, x))), [(2, 3, 3), (3, 2)], 0),
    "cholesky_solve_upper": (lambda L, x, b: L.cholesky_solve(b, L.linalg.cholesky(_spd(L, x), upper=True), True),
                             [(3, 3), (3, 2)], 0),
    "cholesky_inverse": (lambda L, x: L.cholesky_inverse(L.linalg.cholesky(_spd(L, x))), [(3, 3)], 0),
    "pinverse": (lambda L, a: L.pinverse(a), [(3, 4)], 0),
    "triangular_solve": (lambda L, b, a: L.triangular_solve(b, a, upper=False, transpose=True).solution,
                         [(3, 2), (3, 3)], 3),
    "torch.lu_solve": (lambda L, b, a: L.lu_solve(b, *L.linalg.lu_factor(a)), [(3, 2), (3, 3)], 2),
    "lu_unpack": (lambda L, a: L.lu_unpack(*L.linalg.lu_factor(a))[1], [(3, 3)], 0),
    "nuclear_norm": (lambda L, a: L.nuclear_norm(a), [(3, 4)], 0),
    "torch.matrix_exp": (lambda L, a: L.matrix_exp(a), [(3, 3)], 0),
    "torch.det_logdet": (lambda L, x: L.det(x) + L.logdet(_spd(L, x)) + L.inverse(_spd(L, x)).sum(), [(3, 3)], 0),
    "method_forms": (lambda L, x: _spd(L, x).cholesky().sum() + x.pinverse().sum() + x.matrix_exp().sum()
                     + x.det() + _spd(L, x).slogdet()[1], [(3, 3)], 0),
}


def _inputs(name):
    rng = rng_for("linalg", name)
    shapes, shift = CASES[name][1], CASES[name][2]
    return [_mat(rng, *s, shift=shift if len(s) >= 2 and s[-1] == s[-2] else 0.0) for s in shapes]


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_match_finite_differences(name):
    fn = CASES[name][0]
    assert gradcheck(lambda *xs: fn(sx, *xs), [_t(a, grad=True) for a in _inputs(name)], atol=1e-6, rtol=1e-5)


# PyTorch's own backward fails here (its cond modifies inv_ex's output in place): values only
TORCH_VALUES_ONLY = {"cond_fro"}


@pytest.mark.parity
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(torch, name):
    fn = CASES[name][0]
    if name in TORCH_VALUES_ONLY:
        xs = _inputs(name)
        got, want = fn(sx, *[_t(a) for a in xs]), fn(torch, *[torch.tensor(a) for a in xs])
        np.testing.assert_allclose(_np(got), want.numpy(), rtol=1e-9, atol=1e-9)
        return
    seed = np.random.default_rng(1)
    matches_torch(torch, fn, _inputs(name), lambda shape: seed.standard_normal(shape), rtol=1e-9, atol=1e-9,
                  grad_rtol=1e-7, grad_atol=1e-8, name=name)


# ---------------------------------------------------------------- values against NumPy (float64)
RNG = np.random.default_rng(11)


def test_svd_values_and_reconstruction():
    a = RNG.standard_normal((2, 5, 3))
    for full in (True, False):
        U, S, Vh = LA.svd(_t(a), full_matrices=full)
        k = 3
        assert tuple(U.shape) == ((2, 5, 5) if full else (2, 5, 3)) and tuple(Vh.shape) == (2, 3, 3)
        np.testing.assert_allclose(_np(S), np.linalg.svd(a, compute_uv=False), rtol=1e-12)
        np.testing.assert_allclose(_np(U)[..., :k] * _np(S)[..., None, :] @ _np(Vh), a, atol=1e-12)
        np.testing.assert_allclose(np.swapaxes(_np(U), -1, -2) @ _np(U), np.broadcast_to(np.eye(U.shape[-1]),
                                   (2,) + (U.shape[-1],) * 2), atol=1e-12)
    np.testing.assert_allclose(_np(LA.svdvals(_t(a))), np.linalg.svd(a, compute_uv=False), rtol=1e-12)


def test_qr_modes():
    a = RNG.standard_normal((2, 5, 3))
    Q, R = LA.qr(_t(a))
    assert tuple(Q.shape) == (2, 5, 3) and tuple(R.shape) == (2, 3, 3)
    np.testing.assert_allclose(_np(Q) @ _np(R), a, atol=1e-12)
    np.testing.assert_array_equal(_np(R), np.triu(_np(R)))
    Q, R = LA.qr(_t(a), mode="complete")
    assert tuple(Q.shape) == (2, 5, 5) and tuple(R.shape) == (2, 5, 3)
    np.testing.assert_allclose(_np(Q) @ _np(R), a, atol=1e-12)
    Q, R = LA.qr(_t(a), mode="r")
    assert tuple(Q.shape) == (0,)
    np.testing.assert_allclose(np.abs(_np(R)), np.abs(np.linalg.qr(a, mode="r")), atol=1e-12)
    wide = RNG.standard_normal((3, 5))
    Q, R = LA.qr(_t(wide))
    np.testing.assert_allclose(_np(Q) @ _np(R), wide, atol=1e-12)


def test_eigh_and_uplo():
    a = RNG.standard_normal((2, 4, 4))
    w, V = LA.eigh(_t(a))  # the lower triangle, as a symmetric matrix
    low = np.tril(a) + np.swapaxes(np.tril(a, -1), -1, -2)
    np.testing.assert_allclose(_np(w), np.linalg.eigvalsh(low), atol=1e-12)
    np.testing.assert_allclose(low @ _np(V), _np(V) * _np(w)[..., None, :], atol=1e-11)
    up = np.triu(a) + np.swapaxes(np.triu(a, 1), -1, -2)
    np.testing.assert_allclose(_np(LA.eigvalsh(_t(a), UPLO="U")), np.linalg.eigvalsh(up), atol=1e-12)


def test_cholesky_reads_one_triangle():
    x = RNG.standard_normal((2, 3, 3))
    spd = x @ np.swapaxes(x, -1, -2) + 3 * np.eye(3)
    noisy = np.tril(spd) + np.triu(RNG.standard_normal((3, 3)), 1)  # the upper triangle is ignored
    np.testing.assert_allclose(_np(LA.cholesky(_t(noisy))), np.linalg.cholesky(spd), atol=1e-12)
    U = LA.cholesky(_t(np.swapaxes(noisy, -1, -2)), upper=True)
    np.testing.assert_allclose(_np(U), np.swapaxes(np.linalg.cholesky(spd), -1, -2), atol=1e-12)
    L, info = LA.cholesky_ex(_t(spd))
    assert info.dtype == sx.int32 and tuple(info.shape) == (2,) and not info.numpy().any()


def test_lu_family():
    a = RNG.standard_normal((2, 4, 4))
    P, L, U = LA.lu(_t(a))
    np.testing.assert_allclose(_np(P) @ _np(L) @ _np(U), a, atol=1e-12)
    np.testing.assert_allclose(np.diagonal(_np(L), 0, -2, -1), 1.0)
    np.testing.assert_array_equal(_np(U), np.triu(_np(U)))
    assert np.abs(_np(L)).max() <= 1.0  # partial pivoting
    LU, piv = LA.lu_factor(_t(a))
    assert piv.dtype == sx.int32 and tuple(piv.shape) == (2, 4) and piv.numpy().min() >= 1
    P2, L2, U2 = sx.lu_unpack(LU, piv)
    for x, y in ((P, P2), (L, L2), (U, U2)):
        np.testing.assert_allclose(_np(x), _np(y), atol=1e-14)
    b = RNG.standard_normal((2, 4, 2))
    np.testing.assert_allclose(_np(LA.lu_solve(LU, piv, _t(b))), np.linalg.solve(a, b), atol=1e-11)
    np.testing.assert_allclose(_np(LA.lu_solve(LU, piv, _t(b), adjoint=True)),
                               np.linalg.solve(np.swapaxes(a, -1, -2), b), atol=1e-11)
    for shape in ((5, 3), (3, 5)):
        r = RNG.standard_normal(shape)
        P, L, U = LA.lu(_t(r))
        np.testing.assert_allclose(_np(P) @ _np(L) @ _np(U), r, atol=1e-12)
    empty, emptyp, info = sx.lu(_t(np.zeros((3, 3))), get_infos=True)
    assert info.item() == 1


def test_inverse_determinants_and_solves():
    a = RNG.standard_normal((2, 3, 3)) + 2 * np.eye(3)
    np.testing.assert_allclose(_np(LA.inv(_t(a))), np.linalg.inv(a), rtol=1e-10)
    np.testing.assert_allclose(_np(LA.det(_t(a))), np.linalg.det(a), rtol=1e-12)
    sign, logabs = LA.slogdet(_t(a))
    np.testing.assert_allclose(_np(sign), np.linalg.slogdet(a)[0])
    np.testing.assert_allclose(_np(logabs), np.linalg.slogdet(a)[1], rtol=1e-12)
    b = RNG.standard_normal((4, 1, 3, 2))  # batch dims broadcast: (4, 1) with (2,) -> (4, 2)
    x = LA.solve(_t(a), _t(b))
    assert tuple(x.shape) == (4, 2, 3, 2)
    np.testing.assert_allclose(_np(x), np.linalg.solve(a, b), rtol=1e-10)
    v = RNG.standard_normal((2, 3))
    np.testing.assert_allclose(_np(LA.solve(_t(a), _t(v))), np.linalg.solve(a, v[..., None])[..., 0], rtol=1e-10)
    bt = RNG.standard_normal((2, 2, 3))
    np.testing.assert_allclose(_np(LA.solve(_t(a), _t(bt), left=False)), bt @ np.linalg.inv(a), rtol=1e-10)
    t = np.triu(a)
    np.testing.assert_allclose(_np(LA.solve_triangular(_t(a), _t(b[0]), upper=True)), np.linalg.solve(t, b[0]),
                               rtol=1e-10)
    unit = np.tril(a, -1) + np.eye(3)
    np.testing.assert_allclose(_np(LA.solve_triangular(_t(a), _t(b[0]), upper=False, unitriangular=True)),
                               np.linalg.solve(unit, b[0]), rtol=1e-10)


def test_singular_determinant_gradient_is_the_adjugate():
    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])  # rank 2
    x = _t(a, grad=True)
    LA.det(x).backward()
    adj = np.array([[np.linalg.det(np.delete(np.delete(a, i, 0), j, 1)) * (-1) ** (i + j) for j in range(3)]
                    for i in range(3)])  # cofactors
    np.testing.assert_allclose(x.grad.numpy(), adj, atol=1e-12)


def test_lstsq_extras():
    a, b = RNG.standard_normal((2, 6, 3)), RNG.standard_normal((2, 6, 2))
    sol, res, rank, sv = LA.lstsq(_t(a), _t(b))
    np.testing.assert_allclose(_np(sol), np.linalg.pinv(a) @ b, rtol=1e-10)
    assert tuple(res.shape) == (0,) and tuple(sv.shape) == (0,) and rank.dtype == sx.int64
    np.testing.assert_array_equal(rank.numpy(), [3, 3])
    sol, res, rank, sv = LA.lstsq(_t(a), _t(b), driver="gelsd")
    ref = [np.linalg.lstsq(a[i], b[i], rcond=None) for i in range(2)]
    np.testing.assert_allclose(_np(res), np.stack([r[1] for r in ref]), rtol=1e-10)
    np.testing.assert_allclose(_np(sv), np.stack([r[3] for r in ref]), rtol=1e-12)
    assert tuple(LA.lstsq(_t(a), _t(b), driver="gels").rank.shape) == (0,)
    v = LA.lstsq(_t(a[0]), _t(b[0, :, 0])).solution
    np.testing.assert_allclose(_np(v), ref[0][0][:, 0], rtol=1e-10)
    deficient = np.outer(RNG.standard_normal(4), RNG.standard_normal(3))
    sol = LA.lstsq(_t(deficient), _t(b[0, :4]), driver="gelsd")
    assert sol.rank.item() == 1
    np.testing.assert_allclose(_np(sol.solution), np.linalg.lstsq(deficient, b[0, :4], rcond=None)[0], atol=1e-10)


def test_pinv_and_rank():
    deficient = RNG.standard_normal((5, 2)) @ RNG.standard_normal((2, 4))
    p = _np(LA.pinv(_t(deficient)))
    np.testing.assert_allclose(p, np.linalg.pinv(deficient), atol=1e-10)
    np.testing.assert_allclose(deficient @ p @ deficient, deficient, atol=1e-10)
    assert LA.matrix_rank(_t(deficient)).item() == 2 and LA.matrix_rank(_t(deficient)).dtype == sx.int64
    assert LA.matrix_rank(_t(deficient), atol=1e3).item() == 0
    s = RNG.standard_normal((4, 4))
    s = s + s.T
    np.testing.assert_allclose(_np(LA.pinv(_t(s), hermitian=True)), np.linalg.pinv(s), rtol=1e-9, atol=1e-10)
    assert LA.matrix_rank(_t(s), hermitian=True).item() == 4
    np.testing.assert_allclose(_np(sx.pinverse(_t(deficient))), np.linalg.pinv(deficient, rcond=1e-15),
                               atol=1e-9)


def _expm_reference(a):
    """exp(a) by a 40-term Taylor series of a / 2^s, squared s times (float64)."""
    s = max(0, int(np.ceil(np.log2(max(np.abs(a).sum(0).max(), 1e-300)))) + 2)
    b = a / 2.0 ** s
    term, total = np.eye(len(a)), np.eye(len(a))
    for k in range(1, 40):
        term = term @ b / k
        total = total + term
    for _ in range(s):
        total = total @ total
    return total


@pytest.mark.parametrize("scale", [1e-3, 1.0, 8.0, 40.0])
def test_matrix_exp_values(scale):
    a = RNG.standard_normal((4, 4)) * scale / 4
    ref = _expm_reference(a)
    np.testing.assert_allclose(_np(LA.matrix_exp(_t(a))), ref, rtol=1e-11 * max(1.0, scale), atol=1e-13)
    sym = a + a.T
    w, v = np.linalg.eigh(sym)
    np.testing.assert_allclose(_np(LA.matrix_exp(_t(sym))), (v * np.exp(w)) @ v.T, rtol=1e-10 * max(1.0, scale))
    nil = np.triu(a, 1)  # nilpotent: the series ends
    np.testing.assert_allclose(_np(LA.matrix_exp(_t(nil))), np.eye(4) + nil + nil @ nil / 2 + nil @ nil @ nil / 6,
                               rtol=1e-12, atol=1e-12 * scale ** 3)


def test_matrix_exp_gradient_is_the_block_formula():
    """d/dA <G, exp(A)> is the upper-right block of exp([[A^T, G], [0, A^T]])."""
    a, g = RNG.standard_normal((3, 3)) * 2, RNG.standard_normal((3, 3))
    x = _t(a, grad=True)
    (LA.matrix_exp(x) * _t(g)).sum().backward()
    block = _expm_reference(np.block([[a.T, g], [np.zeros((3, 3)), a.T]]))
    np.testing.assert_allclose(x.grad.numpy(), block[:3, 3:], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("ord", [None, 2, 1, INF, -INF, 0, 3.5, -1])
def test_vector_norm_values(ord):
    a = RNG.standard_normal((3, 4))
    a[0, 1] = 0.0
    got = LA.vector_norm(_t(a), 2 if ord is None else ord, dim=1)
    np.testing.assert_allclose(_np(got), np.linalg.norm(a, 2 if ord is None else ord, axis=1), rtol=1e-12)


@pytest.mark.parametrize("ord", ["fro", "nuc", 2, -2, 1, -1, INF, -INF])
def test_matrix_norm_and_cond_values(ord):
    a = RNG.standard_normal((2, 3, 3))
    np.testing.assert_allclose(_np(LA.matrix_norm(_t(a), ord)), np.linalg.norm(a, ord, axis=(-2, -1)), rtol=1e-12)
    np.testing.assert_allclose(_np(LA.norm(_t(a[0]), ord)), np.linalg.norm(a[0], ord), rtol=1e-12)
    np.testing.assert_allclose(_np(LA.cond(_t(a), ord)), np.linalg.cond(a, ord), rtol=1e-9)


def test_norm_defaults_and_zero_gradient():
    a = RNG.standard_normal((2, 3, 4))
    np.testing.assert_allclose(LA.norm(_t(a)).item(), np.linalg.norm(a.ravel()), rtol=1e-12)
    assert tuple(LA.norm(_t(a), dim=(0, 2), keepdim=True).shape) == (1, 3, 1)
    assert tuple(LA.matrix_norm(_t(a), "nuc", dim=(0, 2), keepdim=True).shape) == (1, 3, 1)
    z = sx.zeros(3, dtype=sx.float64, requires_grad=True)
    LA.vector_norm(z).backward()
    np.testing.assert_array_equal(z.grad.numpy(), 0.0)
    assert LA.cond(_t(np.zeros((2, 2))), "fro").item() == INF


def test_small_helpers():
    a, b, c = RNG.standard_normal((2, 5)), RNG.standard_normal((5, 9)), RNG.standard_normal((9, 3))
    np.testing.assert_allclose(_np(LA.multi_dot([_t(a), _t(b), _t(c)])), np.linalg.multi_dot([a, b, c]), rtol=1e-12)
    np.testing.assert_allclose(_np(LA.multi_dot([_t(a[0]), _t(b), _t(c[:, 0])])), a[0] @ b @ c[:, 0], rtol=1e-12)
    u, v = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))
    np.testing.assert_allclose(_np(LA.cross(_t(u), _t(v))), np.cross(u, v), rtol=1e-12)
    np.testing.assert_allclose(_np(LA.vecdot(_t(u), _t(v))), (u * v).sum(-1), rtol=1e-12)
    np.testing.assert_allclose(_np(LA.vander(_t(u[0]))), np.vander(u[0], increasing=True), rtol=1e-12)
    assert LA.vander(sx.tensor([1, 2, 3])).dtype == sx.int64
    t = RNG.standard_normal((6, 2, 3)) + 0.0
    sq = RNG.standard_normal((6, 6)) + 3 * np.eye(6)
    np.testing.assert_allclose(_np(LA.tensorinv(_t(sq.reshape(6, 2, 3)), ind=1)),
                               np.linalg.tensorinv(sq.reshape(6, 2, 3), ind=1), rtol=1e-10)
    np.testing.assert_allclose(_np(LA.tensorsolve(_t(sq.reshape(2, 3, 6)), _t(t[:2, 0]))),
                               np.linalg.tensorsolve(sq.reshape(2, 3, 6), t[:2, 0]), rtol=1e-10)
    m = RNG.standard_normal((2, 5, 3))
    h, tau = sx.geqrf(_t(m))
    q = LA.householder_product(h, tau)
    np.testing.assert_allclose(_np(q), np.linalg.qr(m)[0], atol=1e-12)
    np.testing.assert_allclose(_np(sx.orgqr(h, tau)), _np(q))


@pytest.mark.parametrize("name", ["inv", "det", "solve", "cholesky", "svd", "eigh", "qr", "lstsq", "pinv",
                                  "matrix_exp", "lu", "matrix_norm"])
def test_float32_in_float32_out(name):
    fns = {"inv": lambda a: LA.inv(a), "det": LA.det, "solve": lambda a: LA.solve(a, a[..., :1]),
           "cholesky": lambda a: LA.cholesky(a @ a.mT), "svd": lambda a: LA.svd(a).S,
           "eigh": lambda a: LA.eigh(a).eigenvectors, "qr": lambda a: LA.qr(a).R,
           "lstsq": lambda a: LA.lstsq(a, a[..., :1]).solution, "pinv": LA.pinv, "matrix_exp": LA.matrix_exp,
           "lu": lambda a: LA.lu(a).U, "matrix_norm": lambda a: LA.matrix_norm(a, 2)}
    a = RNG.standard_normal((2, 3, 3)) + 2 * np.eye(3)
    got = fns[name](_t(a, dtype=sx.float32))
    ref = fns[name](_t(a))
    assert got.dtype == sx.float32 and ref.dtype == sx.float64
    np.testing.assert_allclose(_np(got), _np(ref), rtol=2e-5, atol=2e-5)


def test_grad_only_when_needed():
    a = _t(RNG.standard_normal((3, 3)) + 2 * np.eye(3), grad=True)
    assert LA.inv(a).requires_grad and all(t.requires_grad for t in LA.svd(a))
    with sx.no_grad():
        assert not LA.inv(a).requires_grad and not LA.eigh(a).eigenvalues.requires_grad
    assert not LA.lu(a.detach()).L.requires_grad


# ---------------------------------------------------------------- errors
@pytest.mark.parametrize("fn", [LA.inv, LA.det, LA.cholesky, LA.svd, LA.eigh, LA.qr, LA.pinv, LA.matrix_exp,
                                LA.vector_norm, LA.lu_factor, sx.inverse])
def test_integer_inputs_raise(fn):
    with pytest.raises(TypeError, match=r"int64"):
        fn(sx.ones(3, 3, dtype=sx.int64))


@pytest.mark.parametrize("fn", [LA.inv, LA.det, LA.slogdet, LA.cholesky, LA.eigh, LA.matrix_exp, LA.inv_ex])
def test_non_square_and_vector_inputs_raise(fn):
    with pytest.raises(ValueError, match=r"\(2, 3\) and dtype float32"):
        fn(sx.ones(2, 3))
    with pytest.raises(ValueError, match=r"at least 2 dims"):
        fn(sx.ones(3))


def test_solve_argument_errors():
    a = sx.eye(3, dtype=sx.float64)
    with pytest.raises(ValueError, match=r"batch dims"):
        LA.solve(a.expand(2, 3, 3), sx.ones(4, 3, 1, dtype=sx.float64))
    with pytest.raises(TypeError, match=r"one dtype"):
        LA.solve(a, sx.ones(3, 1))
    with pytest.raises(ValueError, match=r"incompatible"):
        LA.solve(a, sx.ones(4, 1, dtype=sx.float64))
    with pytest.raises(ValueError, match=r"driver"):
        LA.lstsq(a, a, driver="nope")
    with pytest.raises(ValueError, match=r"ord"):
        LA.matrix_norm(a, 3)
    with pytest.raises(ValueError, match=r"mode"):
        LA.qr(a, mode="economic")
    with pytest.raises(ValueError, match=r"same number of dims"):
        LA.cross(sx.ones(2, 3), sx.ones(3))


def test_linalg_errors_name_op_shape_dtype():
    a = np.stack([np.eye(3), np.diag([1.0, 1.0, 0.0])])
    with pytest.raises(LA.LinAlgError, match=r"\[linalg.inv\].*\(2, 3, 3\) and dtype float64 \(batch element 1\)"):
        LA.inv(_t(a))
    assert issubclass(LA.LinAlgError, RuntimeError)
    inv, info = LA.inv_ex(_t(a))
    np.testing.assert_array_equal(info.numpy(), [0, 3])
    assert np.isnan(inv.numpy()[1]).all() and np.allclose(inv.numpy()[0], np.eye(3))
    with pytest.raises(LA.LinAlgError, match=r"linalg.inv_ex"):
        LA.inv_ex(_t(a), check_errors=True)
    with pytest.raises(LA.LinAlgError, match=r"\[linalg.solve\]"):
        LA.solve(_t(a), _t(np.ones((3, 1))))
    np.testing.assert_array_equal(LA.solve_ex(_t(a), _t(np.ones((3, 1)))).info.numpy(), [0, 3])
    bad = np.diag([1.0, -1.0, 1.0])
    with pytest.raises(LA.LinAlgError, match=r"\[linalg.cholesky\].*order 2"):
        LA.cholesky(_t(bad, dtype=sx.float32))
    assert LA.cholesky_ex(_t(bad)).info.item() == 2
    with pytest.raises(LA.LinAlgError, match=r"lu_factor"):
        LA.lu_factor(_t(np.zeros((3, 2))))
    assert LA.lu_factor_ex(_t(np.zeros((3, 3)))).info.item() == 1


def test_gauge_dependent_cases_raise():
    with pytest.raises(RuntimeError, match=r"mode='complete'"):
        LA.qr(sx.ones(4, 3, requires_grad=True), mode="complete")
    for fn in (LA.eig, LA.eigvals):
        with pytest.raises(NotImplementedError, match=r"gradient"):
            fn(sx.eye(3, requires_grad=True))


def test_eig_of_a_general_matrix():
    a = RNG.standard_normal((2, 4, 4))  # real, not symmetric: complex eigenvalues in pairs
    L, V = LA.eig(_t(a))
    assert L.dtype == sx.complex128 and V.shape == (2, 4, 4)
    np.testing.assert_allclose(_np(_t(a, sx.complex128) @ V), _np(V * L.unsqueeze(-2)), atol=1e-12)
    np.testing.assert_allclose(np.sort_complex(_np(LA.eigvals(_t(a))).ravel()),
                               np.sort_complex(np.linalg.eigvals(a).ravel()), atol=1e-12)
    assert LA.eigvals(sx.eye(3)).dtype == sx.complex64
    with pytest.raises(ValueError, match="square"):
        LA.eig(sx.ones(2, 3))


# ---------------------------------------------------------------- top-level names and methods
def test_top_level_forms():
    a = RNG.standard_normal((4, 3))
    U, S, V = sx.svd(_t(a))
    assert tuple(U.shape) == (4, 3) and tuple(V.shape) == (3, 3)
    np.testing.assert_allclose(_np(U) * _np(S) @ _np(V).T, a, atol=1e-12)
    U, S, V = sx.svd(_t(a), some=False)
    assert tuple(U.shape) == (4, 4)
    U, S, V = sx.svd(_t(a), compute_uv=False)
    assert tuple(U.shape) == (4, 4) and tuple(V.shape) == (3, 3) and not U.numpy().any()
    Q, R = sx.qr(_t(a), some=False)
    assert tuple(Q.shape) == (4, 4) and tuple(R.shape) == (4, 3)
    tri = np.triu(a[:3]) + 3 * np.eye(3)
    sol, clone = sx.triangular_solve(_t(a[:3, :2]), _t(tri))
    np.testing.assert_allclose(_np(sol), np.linalg.solve(tri, a[:3, :2]), rtol=1e-12)
    np.testing.assert_array_equal(_np(clone), tri)
    P, L, U = sx.lu_unpack(*LA.lu_factor(_t(a[:3])), unpack_data=False)
    assert tuple(L.shape) == (0,) and tuple(P.shape) == (3, 3)
    assert tuple(sx.nuclear_norm(_t(a), True).shape) == (1, 1)
    assert sx.slogdet(_t(a[:3])).sign.shape == () and sx.logdet(_t(-np.eye(3))).isnan().item()
    for name in ("cholesky", "cholesky_inverse", "cholesky_solve", "qr", "svd", "pinverse", "triangular_solve",
                 "matrix_exp", "lu_solve", "lu", "geqrf", "orgqr", "inverse", "det", "slogdet", "logdet"):
        assert callable(getattr(sx.Tensor, name)) and callable(getattr(sx, name)), name
    for name in ("lu_unpack", "nuclear_norm"):  # functions only, as in PyTorch
        assert callable(getattr(sx, name)) and not hasattr(sx.Tensor, name), name
    for f in (sx.lstsq, sx.Tensor.lstsq):  # removed from PyTorch, which keeps the names to raise with a pointer
        with pytest.raises(RuntimeError, match="linalg.lstsq"):
            f(_t(a), _t(a))
    assert "linalg" in sx.__all__


def test_result_field_names():
    a = _t(RNG.standard_normal((3, 3)) + 3 * np.eye(3))
    assert LA.svd(a)._fields == ("U", "S", "Vh") and sx.svd(a)._fields == ("U", "S", "V")
    assert LA.eigh(a)._fields == ("eigenvalues", "eigenvectors") and LA.qr(a)._fields == ("Q", "R")
    assert LA.slogdet(a)._fields == ("sign", "logabsdet")
    assert LA.lstsq(a, a)._fields == ("solution", "residuals", "rank", "singular_values")
    assert LA.inv_ex(a)._fields == ("inverse", "info") and LA.solve_ex(a, a)._fields == ("result", "info")
    assert LA.cholesky_ex(a @ a.mT)._fields == ("L", "info") and LA.lu(a)._fields == ("P", "L", "U")
    assert LA.lu_factor(a)._fields == ("LU", "pivots") and LA.lu_factor_ex(a)._fields == ("LU", "pivots", "info")


def test_meta_package_exposes_linalg():
    alg = pytest.importorskip("SneppX_ALG")
    assert alg.linalg is sx.linalg and alg.svd is sx.svd


# ---------------------------------------------------------------- PyTorch parity of the non-differentiable parts
@pytest.mark.parity
def test_parity_extras(torch):
    a = RNG.standard_normal((2, 4, 4))
    LU, piv = LA.lu_factor(_t(a))
    tLU, tpiv = torch.linalg.lu_factor(torch.tensor(a))
    np.testing.assert_array_equal(piv.numpy(), tpiv.numpy())
    np.testing.assert_allclose(LU.numpy(), tLU.numpy(), rtol=1e-12, atol=1e-14)
    b = RNG.standard_normal((2, 6, 2))
    tall = RNG.standard_normal((2, 6, 3))
    for driver in (None, "gels", "gelsy", "gelsd", "gelss"):
        got = LA.lstsq(_t(tall), _t(b), driver=driver)
        want = torch.linalg.lstsq(torch.tensor(tall), torch.tensor(b), driver=driver)
        for g, w in zip(got, want):
            assert tuple(g.shape) == tuple(w.shape), driver
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-9, atol=1e-12)
    sing = np.stack([np.eye(3), np.diag([1.0, 1.0, 0.0])])
    np.testing.assert_array_equal(LA.inv_ex(_t(sing)).info.numpy(), torch.linalg.inv_ex(torch.tensor(sing)).info)
    bad = np.diag([1.0, 2.0, -1.0])
    assert LA.cholesky_ex(_t(bad)).info.item() == torch.linalg.cholesky_ex(torch.tensor(bad)).info.item()
    with pytest.raises(RuntimeError):
        torch.linalg.inv(torch.ones(3, 3, dtype=torch.int64))
    r = RNG.standard_normal((3, 4))
    np.testing.assert_allclose(LA.qr(_t(r), mode="r").R.numpy(), torch.linalg.qr(torch.tensor(r), mode="r").R,
                               atol=1e-12)
    assert tuple(LA.qr(_t(r), mode="r").Q.shape) == tuple(torch.linalg.qr(torch.tensor(r), mode="r").Q.shape)
    deficient = RNG.standard_normal((5, 2)) @ RNG.standard_normal((2, 4))
    assert LA.matrix_rank(_t(deficient)).item() == torch.linalg.matrix_rank(torch.tensor(deficient)).item()
    h, tau = sx.geqrf(_t(r))
    th, ttau = torch.geqrf(torch.tensor(r))
    np.testing.assert_allclose(h.numpy(), th.numpy(), atol=1e-12)
    np.testing.assert_allclose(tau.numpy(), ttau.numpy(), atol=1e-12)


# ---------------------------------------------------------------- symmetric inputs read through one triangle
SYMMETRIC = {
    "eigh": lambda L, a: (lambda w, v: (v * w.pow(3).unsqueeze(-2)) @ v.mT + w.sum())(*L.linalg.eigh(a)),
    "eigvalsh": lambda L, a: L.linalg.eigvalsh(a),
    "cholesky": lambda L, a: L.linalg.cholesky(a),
    "pinv_hermitian": lambda L, a: L.linalg.pinv(a, hermitian=True),
}


def _spd_array(n=3):
    x = RNG.standard_normal((n, n))
    return x @ x.T + n * np.eye(n)


@pytest.mark.parametrize("name", ["eigh", "eigvalsh", "cholesky"])  # PyTorch's pinv: the general formula
def test_symmetric_inputs_get_symmetric_gradients(name):
    """The gradient is the symmetric one (as PyTorch's): finite differences see only the lower triangle,
    so they give ``tril(2 G, -1) + diag(G)``."""
    fn, a = SYMMETRIC[name], _spd_array()
    x = _t(a, grad=True)
    out = fn(sx, x)
    seed = RNG.standard_normal(tuple(out.shape))
    (out * _t(seed)).sum().backward()
    g = x.grad.numpy()
    np.testing.assert_allclose(g, g.T, atol=1e-12)
    _, (num,) = sx.testing.numerical_grad(lambda y: fn(sx, y), [_t(a)], seed=seed)
    np.testing.assert_allclose(num, np.tril(2 * g, -1) + np.diag(np.diag(g)), atol=1e-6)


@pytest.mark.parity
@pytest.mark.parametrize("name", sorted(SYMMETRIC))
def test_symmetric_gradients_match_torch(torch, name):
    seed = np.random.default_rng(2)
    matches_torch(torch, SYMMETRIC[name], [_spd_array()], lambda shape: seed.standard_normal(shape), rtol=1e-9,
                  atol=1e-9, grad_rtol=1e-7, grad_atol=1e-8, name=name)


def test_repeated_eigenvalues_give_finite_gradients():
    """Where eigenvalues repeat the pairs' F-terms are dropped (PyTorch's gradient is NaN there): exact for
    losses of the eigenvalues and of the eigenvectors of simple eigenvalues."""
    q = np.linalg.qr(RNG.standard_normal((3, 3)))[0]
    a = q @ np.diag([2.0, 2.0, 1.0]) @ q.T
    x = _t(a, grad=True)
    (LA.eigvalsh(x) ** 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * a, atol=1e-12)  # d tr(A^2) = 2 A
    projector = lambda y: (lambda w, v: v[:, :1] @ v[:, :1].mT)(*LA.eigh((y + y.mT) / 2))  # noqa: E731
    assert gradcheck(projector, [_t(a, grad=True)], atol=1e-6, rtol=1e-5)  # the simple eigenvalue's vector
    y = _t(a, grad=True)
    (LA.svdvals(y) * _t([1.0, 2.0, 3.0])).sum().backward()
    u, s, vh = np.linalg.svd(a)
    np.testing.assert_allclose(y.grad.numpy(), u @ np.diag([1.0, 2.0, 3.0]) @ vh, atol=1e-12)


def test_empty_inputs():
    e = sx.zeros(0, 0, dtype=sx.float64)
    assert tuple(LA.inv(e).shape) == (0, 0) and LA.det(e).item() == 1.0
    assert tuple(LA.inv(sx.zeros(0, 3, 3, dtype=sx.float64)).shape) == (0, 3, 3)
    assert tuple(LA.svd(sx.zeros(0, 3, dtype=sx.float64)).S.shape) == (0,)
    assert tuple(LA.lu_factor(sx.zeros(2, 0, 0, dtype=sx.float64)).pivots.shape) == (2, 0)
    assert tuple(LA.lu(sx.zeros(0, 3, 2)).L.shape) == (0, 3, 2)
    assert tuple(LA.matrix_exp(sx.zeros(0, 0)).shape) == (0, 0) and LA.vector_norm(sx.zeros(0)).item() == 0.0


def test_lu_unpack_checks_its_pivots():
    lu = _t(RNG.standard_normal((3, 3)))
    with pytest.raises(TypeError, match=r"\[lu_unpack\] expected LU_pivots to be an int32 or int64 tensor, got int"):
        sx.lu_unpack(lu, 3)
    with pytest.raises(TypeError, match="got sneppx.float32"):
        sx.lu_unpack(lu, sx.tensor([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match=r"needs \(3,\)"):
        sx.lu_unpack(lu, sx.tensor([1, 2]))
    for bad in ([0, 2, 3], [1, 2, 4]):
        with pytest.raises(ValueError, match=r"rows in \[1, 3\]"):
            sx.lu_unpack(lu, sx.tensor(bad))
