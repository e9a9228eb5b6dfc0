"""Weight and spectral normalisation, as hooks (sneppx_nn.utils.weight_norm / spectral_norm) and as
parametrizations (sneppx_nn.utils.parametrizations): values against NumPy, float64 gradients against
finite differences, state_dict keys, removal, errors, and parity with torch."""

import warnings

import numpy as np
import pytest
import sneppx_core as sx

import sneppx_nn as nn
from sneppx_nn.utils import parametrizations as P
from conftest import numeric_grad, to_np

U = nn.utils


def _legacy_weight_norm(m, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return U.weight_norm(m, **kw)


def _np_norm_except(v, dim):
    if dim is None or dim == -1:
        return np.sqrt((v ** 2).sum())
    axes = tuple(i for i in range(v.ndim) if i != dim)
    return np.sqrt((v ** 2).sum(axis=axes, keepdims=True))


def test_weight_norm_warns_and_replaces_the_parameter():
    m = nn.Linear(3, 4)
    w = to_np(m.weight)
    with pytest.warns(FutureWarning, match="parametrizations.weight_norm"):
        U.weight_norm(m)
    assert list(m.state_dict()) == ["bias", "weight_g", "weight_v"]
    assert m.weight_g.shape == (4, 1) and "weight" not in dict(m.named_parameters())
    np.testing.assert_allclose(to_np(m.weight_g), _np_norm_except(w, 0), rtol=1e-6)
    np.testing.assert_allclose(to_np(m.weight), w, rtol=1e-6, atol=1e-7)
    with pytest.raises(RuntimeError, match="two weight_norm hooks"):
        _legacy_weight_norm(m)
    U.remove_weight_norm(m)
    assert list(m.state_dict()) == ["bias", "weight"] and isinstance(m.weight, nn.Parameter)
    np.testing.assert_allclose(to_np(m.weight), w, rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match=r"\[remove_weight_norm\] weight_norm of 'weight' not found in Linear"):
        U.remove_weight_norm(m)
    with pytest.raises(ValueError, match=r"\[weight_norm\] Linear has no parameter named 'nope'"):
        _legacy_weight_norm(m, name="nope")


@pytest.mark.parametrize("dim", [0, 1, None, -2])
def test_weight_norm_gradients_match_finite_differences(dim):
    m = nn.Linear(3, 4, dtype=sx.float64)
    _legacy_weight_norm(m, dim=dim)
    rng = np.random.default_rng(0)
    x, c = rng.standard_normal((5, 3)), rng.standard_normal((5, 4))
    g0, v0, b = to_np(m.weight_g), to_np(m.weight_v), to_np(m.bias)
    d = 0 if dim == -2 else dim

    def loss(g, v):
        return (((x @ (g * v / _np_norm_except(v, d)).T) + b) * c).sum()

    (m(sx.tensor(x)) * sx.tensor(c)).sum().backward()
    np.testing.assert_allclose(to_np(m.weight_g.grad), numeric_grad(lambda g: loss(g, v0), g0.copy()), atol=1e-7)
    np.testing.assert_allclose(to_np(m.weight_v.grad), numeric_grad(lambda v: loss(g0, v), v0.copy()), atol=1e-7)


def test_weight_norm_state_dict_round_trip_and_new_values():
    a, b = nn.Linear(3, 2), nn.Linear(3, 2)
    _legacy_weight_norm(a)
    _legacy_weight_norm(b)
    with sx.no_grad():
        a.weight_g.mul_(3.0)
    b.load_state_dict(a.state_dict())
    x = sx.randn(4, 3)
    np.testing.assert_allclose(to_np(b(x)), to_np(a(x)), rtol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(to_np(b.weight), axis=1), to_np(a.weight_g).ravel(), rtol=1e-5)


def _np_matrix(w, dim):
    return np.moveaxis(w, dim, 0).reshape(w.shape[dim], -1)


def test_spectral_norm_hook_power_iteration_against_numpy():
    m = nn.Conv2d(3, 4, 3)
    U.spectral_norm(m, n_power_iterations=2)
    assert list(m.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    assert m.weight_u.shape == (4,) and m.weight_v.shape == (27,)
    w, u, v = (to_np(t) for t in (m.weight_orig, m.weight_u, m.weight_v))
    mat = _np_matrix(w, 0)
    for _ in range(2):
        v = mat.T @ u / np.linalg.norm(mat.T @ u)
        u = mat @ v / np.linalg.norm(mat @ v)
    m(sx.randn(1, 3, 5, 5))
    np.testing.assert_allclose(to_np(m.weight_u), u, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(to_np(m.weight_v), v, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(to_np(m.weight), w / (u @ mat @ v), rtol=1e-5, atol=1e-6)
    m.eval()
    u_eval = to_np(m.weight_u)
    for _ in range(3):
        m(sx.randn(1, 3, 5, 5))
    np.testing.assert_array_equal(to_np(m.weight_u), u_eval)  # no power iteration in eval mode
    m.train()
    for _ in range(30):
        m(sx.randn(1, 3, 5, 5))
    assert abs(np.linalg.svd(_np_matrix(to_np(m.weight), 0), compute_uv=False)[0] - 1) < 1e-4


def test_spectral_norm_hook_gradient_matches_finite_differences_and_remove():
    m = nn.Linear(3, 4, dtype=sx.float64).eval()
    U.spectral_norm(m)
    u, v = to_np(m.weight_u), to_np(m.weight_v)
    x, b = np.random.default_rng(1).standard_normal((2, 3)), to_np(m.bias)
    w0 = to_np(m.weight_orig)

    def loss(w):
        return (np.tanh(x @ (w / (u @ w @ v)).T + b)).sum()

    m(sx.tensor(x)).tanh().sum().backward()
    np.testing.assert_allclose(to_np(m.weight_orig.grad), numeric_grad(loss, w0.copy()), atol=1e-7)
    U.remove_spectral_norm(m)
    assert list(m.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(to_np(m.weight), w0 / (u @ w0 @ v), rtol=1e-12)
    with pytest.raises(ValueError, match=r"\[remove_spectral_norm\]"):
        U.remove_spectral_norm(m)
    with pytest.raises(ValueError, match="n_power_iterations"):
        U.spectral_norm(m, n_power_iterations=0)


def test_spectral_norm_default_dim_for_transposed_conv():
    m = U.spectral_norm(nn.ConvTranspose2d(3, 5, 3))
    assert m.weight_u.shape == (5,) and m.weight_v.shape == (27,)
    p = P.spectral_norm(nn.ConvTranspose2d(3, 5, 3))
    assert p.parametrizations.weight[0]._u.shape == (5,)


def test_parametrized_weight_norm_keys_values_gradients():
    m = nn.Linear(3, 4, dtype=sx.float64)
    w = to_np(m.weight)
    P.weight_norm(m)
    assert type(m).__name__ == "ParametrizedLinear" and isinstance(m, nn.Linear)
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original0", "parametrizations.weight.original1"]
    g0, v0 = to_np(m.parametrizations.weight.original0), to_np(m.parametrizations.weight.original1)
    np.testing.assert_allclose(g0, _np_norm_except(w, 0))
    np.testing.assert_allclose(to_np(m.weight), w, rtol=1e-12)
    x = np.random.default_rng(2).standard_normal((2, 3))
    m(sx.tensor(x)).pow(2).sum().backward()

    def loss(g, v):
        return (((x @ (g * v / _np_norm_except(v, 0)).T) + to_np(m.bias)) ** 2).sum()

    grads = m.parametrizations.weight.original0.grad, m.parametrizations.weight.original1.grad
    np.testing.assert_allclose(to_np(grads[0]), numeric_grad(lambda g: loss(g, v0), g0.copy()), atol=1e-7)
    np.testing.assert_allclose(to_np(grads[1]), numeric_grad(lambda v: loss(g0, v), v0.copy()), atol=1e-7)


def test_parametrized_spectral_norm_train_eval_and_1d():
    m = nn.Linear(5, 3)
    P.spectral_norm(m)
    sn = m.parametrizations.weight[0]
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original", "parametrizations.weight.0._u",
                                    "parametrizations.weight.0._v"]
    w = to_np(m.parametrizations.weight.original)
    u, v = to_np(sn._u), to_np(sn._v)
    u = w @ v / np.linalg.norm(w @ v)  # PyTorch's order here: u first, then v
    v = w.T @ u / np.linalg.norm(w.T @ u)
    np.testing.assert_allclose(to_np(m.weight), w / (u @ w @ v), rtol=1e-5)
    m.eval()
    u_eval = to_np(sn._u)
    _ = m.weight
    np.testing.assert_array_equal(to_np(sn._u), u_eval)
    b = nn.Linear(3, 3)
    P.spectral_norm(b, name="bias")
    np.testing.assert_allclose(np.linalg.norm(to_np(b.bias)), 1.0, rtol=1e-6)
    with pytest.raises(ValueError, match=r"\[spectral_norm\] Linear has no parameter or buffer named 'w'"):
        P.spectral_norm(nn.Linear(2, 2), name="w")
    with pytest.raises(IndexError, match=r"\[spectral_norm\] dim 2"):
        P.spectral_norm(nn.Linear(2, 2), dim=2)


def _copy_from_torch(ours, theirs):
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})


@pytest.mark.parity
@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_parity_with_torch(dim):
    torch = pytest.importorskip("torch")
    tm, m = torch.nn.Linear(3, 4).double(), nn.Linear(3, 4, dtype=sx.float64)
    _copy_from_torch(m, tm)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        torch.nn.utils.weight_norm(tm, dim=dim)
    _legacy_weight_norm(m, dim=dim)
    assert list(m.state_dict()) == list(tm.state_dict())
    np.testing.assert_allclose(to_np(m.weight_g), tm.weight_g.detach().numpy(), rtol=1e-12)
    x = np.random.default_rng(3).standard_normal((5, 3))
    tm(torch.tensor(x)).sin().sum().backward()
    m(sx.tensor(x)).sin().sum().backward()
    for name in ["weight_g", "weight_v", "bias"]:
        np.testing.assert_allclose(to_np(getattr(m, name).grad), getattr(tm, name).grad.numpy(), rtol=1e-10)
    pm, ptm = nn.Linear(3, 4, dtype=sx.float64), torch.nn.Linear(3, 4).double()
    _copy_from_torch(pm, ptm)
    P.weight_norm(pm, dim=dim)
    torch.nn.utils.parametrizations.weight_norm(ptm, dim=dim)
    assert list(pm.state_dict()) == list(ptm.state_dict())
    np.testing.assert_allclose(to_np(pm(sx.tensor(x))), ptm(torch.tensor(x)).detach().numpy(), rtol=1e-12)


@pytest.mark.parity
def test_spectral_norm_parity_with_torch():
    torch = pytest.importorskip("torch")
    tm, m = torch.nn.Conv2d(2, 3, 3).double(), nn.Conv2d(2, 3, 3, dtype=sx.float64)
    torch.nn.utils.spectral_norm(tm, n_power_iterations=3)
    U.spectral_norm(m, n_power_iterations=3)
    assert list(m.state_dict()) == list(tm.state_dict())
    _copy_from_torch(m, tm)  # the same weight_orig and the same u/v buffers
    x = np.random.default_rng(4).standard_normal((2, 2, 5, 5))
    for mode in (True, False):
        tm.train(mode)
        m.train(mode)
        ty, y = tm(torch.tensor(x)), m(sx.tensor(x))
        np.testing.assert_allclose(to_np(m.weight), tm.weight.detach().numpy(), rtol=1e-10)
        np.testing.assert_allclose(to_np(m.weight_u), tm.weight_u.numpy(), rtol=1e-10)
        np.testing.assert_allclose(to_np(y), ty.detach().numpy(), rtol=1e-10, atol=1e-12)
    ty.pow(2).sum().backward()
    y.pow(2).sum().backward()
    np.testing.assert_allclose(to_np(m.weight_orig.grad), tm.weight_orig.grad.numpy(), rtol=1e-9)
    pm, ptm = nn.Linear(4, 3, dtype=sx.float64), torch.nn.Linear(4, 3).double()
    torch.nn.utils.parametrizations.spectral_norm(ptm, n_power_iterations=2)
    P.spectral_norm(pm, n_power_iterations=2)
    assert list(pm.state_dict()) == list(ptm.state_dict())
    _copy_from_torch(pm, ptm)
    for mode in (True, False):
        ptm.train(mode)
        pm.train(mode)
        np.testing.assert_allclose(to_np(pm.weight), ptm.weight.detach().numpy(), rtol=1e-10)
    ptm.weight.sum().backward()
    pm.weight.sum().backward()
    np.testing.assert_allclose(to_np(pm.parametrizations.weight.original.grad),
                               ptm.parametrizations.weight.original.grad.numpy(), rtol=1e-9)
