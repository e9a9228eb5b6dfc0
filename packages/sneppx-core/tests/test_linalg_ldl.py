"""``sneppx_core.linalg.ldl_factor`` / ``ldl_factor_ex`` / ``ldl_solve``: reconstructions of ``A`` from the
compact factors (decoded here from LAPACK's documented format), hand-computed pivots, solves against
``numpy.linalg.solve``, singular inputs, errors, the missing derivative, and parity with PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

import sneppx_core as sx

LA = sx.linalg
RNG = np.random.default_rng(20240611)


def _t(a, dtype=sx.float64, grad=False):
    return sx.tensor(np.asarray(a), dtype=dtype, requires_grad=grad)


def _sym(*shape):
    a = RNG.standard_normal(shape)
    return a + np.swapaxes(a, -1, -2)


def _decode(ld, piv):
    """``A = U D U^T`` from LAPACK's lower compact format: ``U = P(1) L(1) P(2) L(2) ...``, where block k (of
    size s = 1, or 2 when ``piv[k] < 0``) has its D block on LD's diagonal (and sub-diagonal), L(k) the unit
    matrix with ``LD[k+s:, k:k+s]`` below the block, and P(k) swapping rows k + s - 1 and ``|piv[k]| - 1``."""
    n = ld.shape[0]
    blocks, k = [], 0
    while k < n:
        s = 1 if piv[k] > 0 else 2
        blocks.append((k, s))
        k += s
    d = np.zeros((n, n))
    for k, s in blocks:
        d[k:k + s, k:k + s] = np.tril(ld[k:k + s, k:k + s]) + np.tril(ld[k:k + s, k:k + s], -1).T
    m = d
    for k, s in reversed(blocks):
        lk = np.eye(n)
        lk[k + s:, k:k + s] = ld[k + s:, k:k + s]
        pk = np.eye(n)
        pk[[k + s - 1, abs(piv[k]) - 1]] = pk[[abs(piv[k]) - 1, k + s - 1]]
        m = pk @ lk @ m @ lk.T @ pk.T
    return m


def _check_reconstructs(a, dtype=sx.float64, tol=1e-12):
    LD, piv, info = LA.ldl_factor_ex(_t(a, dtype))
    assert LD.dtype == dtype and piv.dtype == sx.int32 and info.dtype == sx.int32
    assert tuple(piv.shape) == a.shape[:-1] and tuple(info.shape) == a.shape[:-2]
    ld, p = LD.numpy().astype(np.float64), piv.numpy()
    np.testing.assert_array_equal(np.triu(ld, 1), 0 * ld)  # the strict upper triangle is zero
    sym = np.tril(a) + np.swapaxes(np.tril(a, -1), -1, -2)
    flat_ld, flat_p = ld.reshape((-1,) + a.shape[-2:]), p.reshape((-1, a.shape[-1]))
    got = np.stack([_decode(x, q) for x, q in zip(flat_ld, flat_p)]).reshape(a.shape)
    np.testing.assert_allclose(got, sym, rtol=tol, atol=tol * np.abs(a).max())
    return ld, p, info.numpy()


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_reconstructs_random_indefinite(n):
    _check_reconstructs(_sym(n, n))
    _check_reconstructs(_sym(n, n).astype(np.float32), sx.float32, tol=2e-5)


def test_reconstructs_with_2x2_pivots_and_batches():
    a = _sym(3, 2, 6, 6)
    a[..., range(6), range(6)] = 0.0  # zero diagonal: every first pivot is a 2x2 block
    _, p, info = _check_reconstructs(a)
    assert (p < 0).any() and not info.any()
    small = _sym(4, 5, 5)
    small[..., range(5), range(5)] *= 1e-3
    _, p, _ = _check_reconstructs(small)
    assert (p < 0).sum() >= 8


def test_only_the_lower_triangle_is_read():
    a = RNG.standard_normal((5, 5))
    lower = np.tril(a) + np.tril(a, -1).T
    f, g = LA.ldl_factor(_t(a)), LA.ldl_factor(_t(lower))
    np.testing.assert_array_equal(f.LD.numpy(), g.LD.numpy())
    np.testing.assert_array_equal(f.pivots.numpy(), g.pivots.numpy())
    _check_reconstructs(a)


def test_hand_computed_pivots():
    # column 0: |1| < alpha * 2 and |10| >= alpha * rowmax (2): a 1x1 pivot after swapping rows/cols 1 and 2
    LD, piv = LA.ldl_factor(_t([[1.0, 2.0, 0.0], [2.0, 10.0, 0.0], [0.0, 0.0, 1.0]]))
    np.testing.assert_array_equal(piv.numpy(), [2, 2, 3])
    np.testing.assert_allclose(LD.numpy(), [[10.0, 0, 0], [0.2, 0.6, 0], [0, 0, 1.0]], rtol=1e-15)
    # zero diagonal: a 2x2 block holding rows 0 and 1 (pivots -2, -2), then D = -3 and L's row [1.5, 0.5]
    LD, piv = LA.ldl_factor(_t([[0.0, 2.0, 1.0], [2.0, 0.0, 3.0], [1.0, 3.0, 0.0]]))
    np.testing.assert_array_equal(piv.numpy(), [-2, -2, 3])
    np.testing.assert_allclose(LD.numpy(), [[0.0, 0, 0], [2.0, 0, 0], [1.5, 0.5, -3.0]], rtol=1e-15)
    # a positive-definite matrix: no interchanges, L D L^T with D > 0 (PyTorch's documentation example, whose
    # printed input and output are rounded to 4 decimals)
    a = [[7.2079, 4.2414, 1.9428], [4.2414, 3.4554, 0.3264], [1.9428, 0.3264, 1.3823]]
    LD, piv = LA.ldl_factor(_t(a))
    np.testing.assert_array_equal(piv.numpy(), [1, 2, 3])
    np.testing.assert_allclose(LD.numpy(), [[7.2079, 0, 0], [0.5884, 0.9595, 0], [0.2695, -0.8513, 0.1633]],
                               atol=5e-4)


@pytest.mark.parametrize("dtype,tol", [(sx.float64, 1e-10), (sx.float32, 1e-3)])
def test_solve_matches_numpy(dtype, tol):
    a = _sym(2, 3, 6, 6)
    a[1, :, range(6), range(6)] = 0.0
    b = RNG.standard_normal((2, 3, 6, 4))
    LD, piv = LA.ldl_factor(_t(a, dtype))
    X = LA.ldl_solve(LD, piv, _t(b, dtype))
    assert X.dtype == dtype and tuple(X.shape) == (2, 3, 6, 4)
    np.testing.assert_allclose(X.numpy(), np.linalg.solve(a, b), rtol=tol, atol=tol)


def test_solve_broadcasts_batches():
    a = _sym(4, 4)
    b = RNG.standard_normal((3, 2, 4, 1))
    LD, piv = LA.ldl_factor(_t(a))
    np.testing.assert_allclose(LA.ldl_solve(LD, piv, _t(b)).numpy(), np.linalg.solve(a, b), rtol=1e-10)
    a2 = _sym(2, 1, 4, 4)
    LD, piv = LA.ldl_factor(_t(a2))
    b2 = RNG.standard_normal((3, 4, 2))
    X = LA.ldl_solve(LD, piv.to(sx.int64), _t(b2), hermitian=True)
    assert tuple(X.shape) == (2, 3, 4, 2)
    np.testing.assert_allclose(X.numpy(), np.linalg.solve(a2, b2), rtol=1e-10)


def test_singular_input_info_and_errors():
    a = np.stack([_sym(3, 3), np.diag([1.0, 0.0, 2.0]), np.zeros((3, 3))])
    LD, piv, info = LA.ldl_factor_ex(_t(a))
    np.testing.assert_array_equal(info.numpy(), [0, 2, 1])
    np.testing.assert_array_equal(piv.numpy()[1:], [[1, 2, 3], [1, 2, 3]])
    with pytest.raises(LA.LinAlgError, match=r"\[linalg.ldl_factor\].*\(3, 3, 3\).*batch element 1.*D\[1, 1\]"):
        LA.ldl_factor(_t(a))
    with pytest.raises(LA.LinAlgError, match=r"\[linalg.ldl_factor_ex\].*D\[0, 0\]"):
        LA.ldl_factor_ex(_t(np.zeros((2, 2))), check_errors=True)
    assert issubclass(LA.LinAlgError, RuntimeError)
    X = LA.ldl_solve(LD[2], piv[2], _t(np.ones((3, 1)))).numpy()
    assert not np.isfinite(X).any()  # a zero in D: inf / NaN, as LAPACK's sytrs


def test_empty_inputs():
    f = LA.ldl_factor_ex(sx.zeros(2, 0, 0, dtype=sx.float64))
    assert tuple(f.LD.shape) == (2, 0, 0) and tuple(f.pivots.shape) == (2, 0) and tuple(f.info.shape) == (2,)
    assert tuple(LA.ldl_solve(f.LD, f.pivots, sx.zeros(0, 3, dtype=sx.float64)).shape) == (2, 0, 3)


def test_input_errors():
    LD, piv = LA.ldl_factor(_t(_sym(3, 3)))
    b = _t(np.ones((3, 2)))
    with pytest.raises(ValueError, match=r"\[linalg.ldl_factor\].*at least 2 dims.*shape \(3,\)"):
        LA.ldl_factor(sx.zeros(3))
    with pytest.raises(ValueError, match=r"\[linalg.ldl_factor_ex\] expects square.*\(3, 4\) and dtype float32"):
        LA.ldl_factor_ex(sx.zeros(3, 4))
    with pytest.raises(TypeError, match=r"\[linalg.ldl_factor\].*float32 or float64.*int64"):
        LA.ldl_factor(sx.zeros(3, 3, dtype=sx.int64))
    with pytest.raises(ValueError, match=r"\[linalg.ldl_solve\] expects B with at least 2 dims"):
        LA.ldl_solve(LD, piv, _t(np.ones(3)))
    with pytest.raises(ValueError, match=r"\[linalg.ldl_solve\] incompatible sizes.*\(4, 2\)"):
        LA.ldl_solve(LD, piv, _t(np.ones((4, 2))))
    with pytest.raises(TypeError, match=r"\[linalg.ldl_solve\] expects LD and B of one dtype.*float32"):
        LA.ldl_solve(LD, piv, sx.ones(3, 2))
    with pytest.raises(TypeError, match=r"\[linalg.ldl_solve\] expected pivots to be an integer tensor"):
        LA.ldl_solve(LD, piv.to(sx.float64), b)
    with pytest.raises(ValueError, match=r"\[linalg.ldl_solve\] batch dims do not broadcast"):
        LA.ldl_solve(LA.ldl_factor(_t(_sym(2, 3, 3))).LD, LA.ldl_factor(_t(_sym(2, 3, 3))).pivots,
                     _t(np.ones((3, 3, 2))))
    with pytest.raises(ValueError, match=r"pivots of shape LD.shape\[:-1\] = \(3,\), got pivots of shape \(2,\)"):
        LA.ldl_solve(LD, piv[:2], b)
    for bad in ([0, 1, 2], [1, 2, 4], [1, -4, -4]):
        with pytest.raises(ValueError, match=r"1 <= \|pivot\| <= 3"):
            LA.ldl_solve(LD, sx.tensor(bad, dtype=sx.int32), b)
    for bad in ([-2, 1, 3], [1, 2, -3], [-2, -3, 3]):
        with pytest.raises(ValueError, match=r"not LAPACK's"):
            LA.ldl_solve(LD, sx.tensor(bad, dtype=sx.int32), b)


def test_no_derivative():
    """As PyTorch: the outputs require grad when the input does, and a backward pass through them raises."""
    A = _t(_sym(3, 3), grad=True)
    LD, piv = LA.ldl_factor(A)
    assert LD.requires_grad and not piv.requires_grad
    with pytest.raises(RuntimeError, match=r"derivative for linalg.ldl_factor_ex is not implemented"):
        LD.sum().backward()
    B = _t(np.ones((3, 2)), grad=True)
    X = LA.ldl_solve(LD.detach(), piv, B)
    assert X.requires_grad
    with pytest.raises(RuntimeError, match=r"derivative for linalg.ldl_solve is not implemented"):
        sx.autograd.grad(X.sum(), [B])
    with sx.no_grad():
        assert not LA.ldl_factor(A).LD.requires_grad
    inf = _t([[np.inf, 1.0], [1.0, 2.0]], grad=True)  # the guard leaves the values alone
    np.testing.assert_array_equal(LA.ldl_factor_ex(inf).LD.detach().numpy(), LA.ldl_factor_ex(inf.detach()).LD.numpy())


def test_result_types():
    r = LA.ldl_factor_ex(_t(_sym(2, 2)))
    assert type(r).__name__ == "linalg_ldl_factor_ex" and r._fields == ("LD", "pivots", "info")
    r = LA.ldl_factor(_t(_sym(2, 2)))
    assert type(r).__name__ == "linalg_ldl_factor" and r._fields == ("LD", "pivots")
    assert {"ldl_factor", "ldl_factor_ex", "ldl_solve"} <= set(LA.__all__)


# ------------------------------------------------------------------------------------------ parity with PyTorch
def _parity_inputs():
    a = _sym(5, 5)
    zero_diag = a.copy()
    zero_diag[range(5), range(5)] = 0.0
    small = a.copy()
    small[range(5), range(5)] *= 1e-2
    ints = RNG.integers(-2, 3, (6, 6)).astype(np.float64)
    cases = [a, zero_diag, small, ints + ints.T, RNG.standard_normal((4, 4)), _sym(3, 2, 4, 4), np.diag([1.0, 0, 2]),
             np.zeros((3, 3)), _sym(1, 1), _sym(70, 70)]
    for n in range(2, 9):
        b = _sym(8, n, n)
        b[::2, range(n), range(n)] = 0.0
        cases.append(b)
    return cases


@pytest.mark.parity
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_parity_factor_and_solve(torch, dtype):
    tol = 1e-10 if dtype == "float64" else 1e-4
    saw_2x2 = saw_singular = False
    for a in _parity_inputs():
        a = a.astype(dtype)
        mine = LA.ldl_factor_ex(sx.tensor(a))
        ref = torch.linalg.ldl_factor_ex(torch.tensor(a))
        np.testing.assert_array_equal(mine.pivots.numpy(), ref.pivots.numpy())
        np.testing.assert_array_equal(mine.info.numpy(), ref.info.numpy())
        scale = max(1.0, float(np.abs(ref.LD.numpy()).max()))
        np.testing.assert_allclose(mine.LD.numpy(), ref.LD.numpy(), rtol=tol, atol=tol * scale)
        saw_2x2 |= bool((ref.pivots.numpy() < 0).any())
        saw_singular |= bool(ref.info.numpy().any())
        if ref.info.numpy().any():
            continue
        b = RNG.standard_normal(a.shape[:-1] + (3,)).astype(dtype)
        x = LA.ldl_solve(mine.LD, mine.pivots, sx.tensor(b)).numpy()
        want = torch.linalg.ldl_solve(ref.LD, ref.pivots, torch.tensor(b)).numpy()
        cond = float(np.linalg.cond(a.astype(np.float64)).max())
        np.testing.assert_allclose(x, want, rtol=tol * cond, atol=tol * cond * np.abs(want).max())
    assert saw_2x2 and saw_singular


@pytest.mark.parity
def test_parity_errors_and_gradients(torch):
    sing = np.stack([np.eye(3), np.diag([1.0, 1.0, 0.0])])
    with pytest.raises(RuntimeError):
        torch.linalg.ldl_factor(torch.tensor(sing))
    with pytest.raises(RuntimeError):  # LinAlgError is a RuntimeError
        LA.ldl_factor(_t(sing))
    a = _sym(3, 3)
    ta = torch.tensor(a, requires_grad=True)
    tLD = torch.linalg.ldl_factor(ta).LD
    LD = LA.ldl_factor(_t(a, grad=True)).LD
    assert tLD.requires_grad and LD.requires_grad
    with pytest.raises(RuntimeError, match="not implemented"):
        tLD.sum().backward()
    with pytest.raises(RuntimeError, match="not implemented"):
        LD.sum().backward()
    assert torch.linalg.ldl_factor_ex(torch.tensor(a)).pivots.dtype == torch.int32
    assert LA.ldl_factor_ex(_t(a)).pivots.dtype == sx.int32
