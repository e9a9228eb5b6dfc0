"""Linear algebra whose gradients are first-order surrogates (values from LAPACK on the host): first-order
gradients work, and differentiating a gradient again (create_graph=True) raises RuntimeError naming the op
instead of returning a wrong second derivative."""

from __future__ import annotations

import re

import numpy as np
import pytest

import sneppx_core as sx
from sneppx_core.autograd import grad

LA = sx.linalg
RNG = np.random.default_rng(11)


def _square(n=3):
    return RNG.standard_normal((n, n)) + 3 * np.eye(n)


def _spd(n=3):
    m = RNG.standard_normal((n, n))
    return m @ m.T + 3 * np.eye(n)


def _lu_solve_b(b, a):
    LU, piv = LA.lu_factor(a.detach())
    return LA.lu_solve(LU, piv, b)


def _lu_solve_lu(LU, b):
    """``lu_solve`` differentiated in the packed factors (a well-conditioned matrix stands for them)."""
    return LA.lu_solve(LU, LA.lu_factor(LU.detach()).pivots, b)


# id: (fn(leaf, *constants) -> tensor or tuple, leaf array, constant arrays, the op the message names)
CASES = {
    "inv": (LA.inv, _square(), [], "linalg.inv"),
    "inv_ex": (lambda a: LA.inv_ex(a).inverse, _square(), [], "linalg.inv_ex"),
    "solve_A": (LA.solve, _square(), [RNG.standard_normal((3, 2))], "linalg.solve"),
    "solve_B": (lambda b, a: LA.solve(a, b), RNG.standard_normal((3, 2)), [_square()], "linalg.solve"),
    "solve_right": (lambda a, b: LA.solve(a, b, left=False), _square(), [RNG.standard_normal((2, 3))],
                    "linalg.solve"),
    "solve_ex": (lambda a, b: LA.solve_ex(a, b).result, _square(), [RNG.standard_normal(3)], "linalg.solve_ex"),
    "solve_triangular": (lambda a, b: LA.solve_triangular(a, b, upper=True), _square(),
                         [RNG.standard_normal((3, 2))], "linalg.solve_triangular"),
    "solve_triangular_B": (lambda b, a: LA.solve_triangular(a, b, upper=False, left=False), RNG.standard_normal((2, 3)),
                           [_square()], "linalg.solve_triangular"),
    "det": (LA.det, _square(), [], "linalg.det"),
    "slogdet": (lambda a: LA.slogdet(a).logabsdet, _square(), [], "linalg.slogdet"),
    "pinv": (LA.pinv, RNG.standard_normal((4, 3)), [], "linalg.pinv"),
    "pinv_hermitian": (lambda a: LA.pinv(a, hermitian=True), _spd(), [], "linalg.pinv"),
    "lstsq": (lambda a, b: LA.lstsq(a, b).solution, RNG.standard_normal((4, 3)), [RNG.standard_normal((4, 2))],
              "linalg.lstsq"),
    "lstsq_B": (lambda b, a: LA.lstsq(a, b).solution, RNG.standard_normal((4, 2)), [RNG.standard_normal((4, 3))],
                "linalg.lstsq"),
    "cholesky": (LA.cholesky, _spd(), [], "linalg.cholesky"),
    "cholesky_upper": (lambda a: LA.cholesky(a, upper=True), _spd(), [], "linalg.cholesky"),
    "cholesky_ex": (lambda a: LA.cholesky_ex(a).L, _spd(), [], "linalg.cholesky_ex"),
    "qr": (LA.qr, RNG.standard_normal((4, 3)), [], "linalg.qr"),
    "qr_wide": (LA.qr, RNG.standard_normal((3, 4)), [], "linalg.qr"),
    "qr_r": (lambda a: LA.qr(a, mode="r").R, RNG.standard_normal((4, 3)), [], "linalg.qr"),
    "svd": (LA.svd, RNG.standard_normal((4, 3)), [], "linalg.svd"),
    "svd_reduced": (lambda a: LA.svd(a, full_matrices=False), RNG.standard_normal((3, 4)), [], "linalg.svd"),
    "svdvals": (LA.svdvals, RNG.standard_normal((4, 3)), [], "linalg.svdvals"),
    "eigh": (LA.eigh, _spd(), [], "linalg.eigh"),
    "eigvalsh": (LA.eigvalsh, _spd(), [], "linalg.eigvalsh"),
    "lu": (LA.lu, _square(), [], "linalg.lu"),
    "lu_tall": (LA.lu, RNG.standard_normal((4, 3)), [], "linalg.lu"),
    "lu_factor": (lambda a: LA.lu_factor(a).LU, _square(), [], "linalg.lu_factor"),
    "lu_factor_ex": (lambda a: LA.lu_factor_ex(a).LU, RNG.standard_normal((3, 4)), [], "linalg.lu_factor_ex"),
    "lu_solve_B": (_lu_solve_b, RNG.standard_normal((3, 2)), [_square()], "linalg.lu_solve"),
    "lu_solve_LU": (_lu_solve_lu, _square(), [RNG.standard_normal((3, 2))], "linalg.lu_solve"),
    "cholesky_solve": (lambda b, L: sx.cholesky_solve(b, L), RNG.standard_normal((3, 2)),
                       [np.linalg.cholesky(_spd())], "cholesky_solve"),
    "cholesky_solve_L": (lambda L, b: sx.cholesky_solve(b, L), np.linalg.cholesky(_spd()),
                         [RNG.standard_normal((3, 2))], "cholesky_solve"),
    "cholesky_inverse": (sx.cholesky_inverse, np.linalg.cholesky(_spd()), [], "cholesky_inverse"),
    # built on the ops above: the message names the op that computes on the host
    "matrix_exp": (LA.matrix_exp, RNG.standard_normal((3, 3)), [], "linalg.matrix_exp"),
    "matrix_power_neg": (lambda a: LA.matrix_power(a, -2), _square(), [], "linalg.inv"),
    "matrix_norm_nuc": (lambda a: LA.matrix_norm(a, "nuc"), RNG.standard_normal((3, 4)), [], "linalg.svdvals"),
    "cond": (LA.cond, _square(), [], "linalg.svdvals"),
    "cond_fro": (lambda a: LA.cond(a, "fro"), _square(), [], "linalg.inv_ex"),
    "tensorinv": (lambda a: LA.tensorinv(a.reshape((2, 2, 4)), ind=2), _square(4), [], "linalg.tensorinv"),
    "tensorsolve": (LA.tensorsolve, _square(), [RNG.standard_normal(3)], "linalg.tensorsolve"),
    "torch_inverse": (sx.inverse, _square(), [], "linalg.inv"),
    "torch_det": (sx.det, _square(), [], "linalg.det"),
    "torch_logdet": (sx.logdet, _spd(), [], "linalg.slogdet"),
    "torch_cholesky": (sx.cholesky, _spd(), [], "linalg.cholesky"),
    "torch_qr": (sx.qr, RNG.standard_normal((4, 3)), [], "linalg.qr"),
    "torch_svd": (sx.svd, RNG.standard_normal((4, 3)), [], "linalg.svd"),
    "torch_pinverse": (sx.pinverse, RNG.standard_normal((4, 3)), [], "linalg.pinv"),
    "torch_triangular_solve": (lambda b, a: sx.triangular_solve(b, a).solution, RNG.standard_normal((3, 2)),
                               [_square()], "linalg.solve_triangular"),
    "torch_lu": (lambda a: sx.lu(a)[0], _square(), [], "linalg.lu_factor_ex"),
    "torch_lu_solve": (lambda b, a: sx.lu_solve(b, *sx.lu(a.detach())), RNG.standard_normal((3, 2)),
                       [_square()], "linalg.lu_solve"),
    "torch_nuclear_norm": (sx.nuclear_norm, RNG.standard_normal((3, 4)), [], "linalg.svdvals"),
}


def _loss(name):
    """The leaf and ``sum`` of all floating outputs of the case ``name``."""
    fn, leaf, consts, _ = CASES[name]
    x = sx.tensor(leaf, dtype=sx.float64, requires_grad=True)
    res = fn(x, *(sx.tensor(c, dtype=sx.float64) for c in consts))
    outs = res if isinstance(res, tuple) else (res,)
    outs = [o for o in outs if o.is_floating_point() and o.requires_grad]
    total = outs[0].sum()
    for o in outs[1:]:
        total = total + o.sum()
    return x, total


@pytest.mark.parametrize("name", sorted(CASES))
def test_first_order_gradient(name):
    x, loss = _loss(name)
    (g,) = grad(loss, x, retain_graph=True)
    assert tuple(g.shape) == tuple(x.shape) and np.isfinite(g.numpy()).all()
    assert np.abs(g.numpy()).max() > 0
    x.grad = None
    loss.backward(retain_graph=True)  # repeated first-order backward passes are unaffected
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * g.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", sorted(CASES))
def test_double_backward_raises_naming_the_op(name):
    op = CASES[name][3]
    x, loss = _loss(name)
    with pytest.raises(RuntimeError, match=rf"\[{re.escape(op)}\] second-order gradients \(create_graph=True\)"):
        grad(loss, x, create_graph=True)
    assert sx.is_grad_enabled()


def test_double_backward_raises_when_mixed_with_other_terms():
    a = sx.tensor(_square(), requires_grad=True)
    loss = LA.inv(a).sum() + (a ** 3).sum()  # the cube alone would give a plausible-looking second derivative
    with pytest.raises(RuntimeError, match=r"\[linalg\.inv\] second-order"):
        loss.backward(create_graph=True)
    hidden = sx.tensor(_spd(), requires_grad=True)
    with pytest.raises(RuntimeError, match=r"\[linalg\.eigh\] second-order"):
        grad(LA.eigh(hidden * 2.0).eigenvalues.sum(), hidden, create_graph=True)


def test_no_surrogate_without_grad():
    a = sx.tensor(_square(), requires_grad=True)
    with sx.no_grad():
        v = LA.inv(a)
    assert not v.requires_grad
    np.testing.assert_allclose(v.numpy(), np.linalg.inv(a.detach().numpy()), rtol=1e-12)


def test_differentiable_compositions_still_allow_double_backward():
    a = sx.tensor(RNG.standard_normal((3, 3)), requires_grad=True)
    (g,) = grad((LA.matrix_power(a, 3) ** 2).sum(), a, create_graph=True)
    (h,) = grad(g.sum(), a)
    assert np.isfinite(h.numpy()).all()
