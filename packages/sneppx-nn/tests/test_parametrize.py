"""sneppx_nn.utils.parametrize and parametrizations.orthogonal: registration, reads, assignment through
right_inverse, caching, removal, state_dict keys, gradients, errors, and parity with torch."""

import copy

import numpy as np
import pytest
import sneppx_core as sx

import sneppx_nn as nn
from sneppx_nn.utils import parametrizations as P
from sneppx_nn.utils import parametrize
from conftest import numeric_grad, to_np


class Symmetric(nn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).mT

    def right_inverse(self, a):
        return a.triu()


class Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return 2.0 * x


class Split(nn.Module):
    def forward(self, a, b):
        return a + b

    def right_inverse(self, w):
        return w * 0.25, w * 0.75


def test_register_reads_assigns_and_keeps_the_parameter_object():
    m = nn.Linear(3, 3)
    w = m.weight
    parametrize.register_parametrization(m, "weight", Symmetric())
    assert parametrize.is_parametrized(m) and parametrize.is_parametrized(m, "weight")
    assert not parametrize.is_parametrized(m, "bias") and not parametrize.is_parametrized(nn.Linear(2, 2))
    assert m.parametrizations.weight.original is w  # optimizers built before keep working
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original"]
    a = to_np(m.weight)
    np.testing.assert_allclose(a, a.T)
    np.testing.assert_allclose(np.triu(a), np.triu(to_np(w)))
    target = np.arange(9.0).reshape(3, 3)
    with pytest.raises(ValueError, match=r"\[parametrize\] right_inverse returned a Tensor of dtype .*float64"):
        m.weight = sx.tensor(target)
    m.weight = sx.tensor(target + target.T, dtype=sx.float32)  # goes through right_inverse
    np.testing.assert_allclose(to_np(m.weight), target + target.T)
    np.testing.assert_allclose(to_np(w), np.triu(target + target.T))
    assert parametrize.type_before_parametrizations(m) is nn.Linear


def test_gradient_reaches_the_original_float64():
    m = nn.Linear(3, 3, dtype=sx.float64)
    parametrize.register_parametrization(m, "weight", Symmetric())
    x = np.random.default_rng(0).standard_normal((4, 3))
    m(sx.tensor(x)).pow(2).sum().backward()
    w0, b = to_np(m.parametrizations.weight.original), to_np(m.bias)

    def loss(w):
        s = np.triu(w) + np.triu(w, 1).T
        return ((x @ s.T + b) ** 2).sum()

    np.testing.assert_allclose(to_np(m.parametrizations.weight.original.grad), numeric_grad(loss, w0.copy()),
                               atol=1e-7)


def test_chain_cache_and_remove():
    m = nn.Linear(2, 2)
    w = to_np(m.weight)
    scale = Scale()
    parametrize.register_parametrization(m, "weight", Symmetric())
    parametrize.register_parametrization(m, "weight", scale)
    assert len(m.parametrizations.weight) == 2
    sym = np.triu(w) + np.triu(w, 1).T
    np.testing.assert_allclose(to_np(m.weight), 2 * sym, rtol=1e-6)
    scale.calls = 0
    with parametrize.cached():
        first = m.weight
        assert m.weight is first and scale.calls == 1
    _ = m.weight
    assert scale.calls == 2
    parametrize.remove_parametrizations(m, "weight")
    assert type(m) is nn.Linear and not hasattr(m, "parametrizations")
    assert list(m.state_dict()) == ["bias", "weight"] and isinstance(m.weight, nn.Parameter)
    np.testing.assert_allclose(to_np(m.weight), 2 * sym, rtol=1e-6)


def test_remove_without_leaving_parametrized_and_sequence_originals():
    m = nn.Linear(2, 2)
    w = to_np(m.weight)
    parametrize.register_parametrization(m, "weight", Symmetric())
    parametrize.register_parametrization(m, "bias", Scale())
    parametrize.remove_parametrizations(m, "weight", leave_parametrized=False)
    np.testing.assert_allclose(to_np(m.weight), np.triu(w))
    assert type(m).__name__ == "ParametrizedLinear"  # bias still parametrized
    s = nn.Linear(2, 2)
    w = to_np(s.weight)
    parametrize.register_parametrization(s, "weight", Split())
    assert list(s.state_dict()) == ["bias", "parametrizations.weight.original0", "parametrizations.weight.original1"]
    np.testing.assert_allclose(to_np(s.weight), w, rtol=1e-6)
    with pytest.raises(ValueError, match="sequence of tensors"):
        parametrize.remove_parametrizations(s, "weight", leave_parametrized=False)
    parametrize.remove_parametrizations(s, "weight")
    np.testing.assert_allclose(to_np(s.weight), w, rtol=1e-6)


def test_errors_state_dict_and_deepcopy():
    m = nn.Linear(2, 3)
    with pytest.raises(ValueError, match=r"\[register_parametrization\] Linear has no parameter, buffer"):
        parametrize.register_parametrization(m, "nope", Scale())
    with pytest.raises(ValueError, match="shape"):
        parametrize.register_parametrization(m, "weight", Symmetric())  # (3, 2) is not square: shape changes
    assert not parametrize.is_parametrized(m)
    with pytest.raises(ValueError, match=r"\[remove_parametrizations\]"):
        parametrize.remove_parametrizations(m, "weight")
    parametrize.register_parametrization(m, "weight", Scale())
    with pytest.raises(RuntimeError, match="does not implement right_inverse"):
        m.weight = sx.zeros(3, 2)
    other = copy.deepcopy(m)
    assert type(other) is type(m) and other.parametrizations.weight.original is not m.parametrizations.weight.original
    other.load_state_dict({k: v * 0 + 1 for k, v in m.state_dict().items()})
    np.testing.assert_allclose(to_np(other.weight), 2 * np.ones((3, 2)))


def test_transfer_parametrizations_and_params():
    src, dst = nn.Linear(3, 3), nn.Linear(3, 3)
    parametrize.register_parametrization(src, "weight", Symmetric())
    P.weight_norm(src, "bias", dim=None)
    parametrize.transfer_parametrizations_and_params(src, dst)
    assert list(dst.state_dict()) == list(src.state_dict())
    np.testing.assert_array_equal(to_np(dst.weight), to_np(src.weight))
    np.testing.assert_array_equal(to_np(dst.bias), to_np(src.bias))
    with sx.no_grad():
        src.parametrizations.weight.original.mul_(2.0)
    np.testing.assert_array_equal(to_np(dst.weight), to_np(src.weight))  # the originals are shared
    bare = nn.Module()
    parametrize.transfer_parametrizations_and_params(src, bare, "weight")
    np.testing.assert_array_equal(to_np(bare.weight), to_np(src.weight))
    with pytest.raises(ValueError, match=r"\[transfer_parametrizations_and_params\]"):
        parametrize.transfer_parametrizations_and_params(nn.Linear(2, 2), dst)


@pytest.mark.parametrize("shape,orth_map", [((4, 4), None), ((5, 3), None), ((3, 5), None), ((4, 4), "cayley"),
                                            ((5, 3), "matrix_exp"), ((4, 4), "householder")])
def test_orthogonal_parametrization_stays_orthogonal_while_training(shape, orth_map):
    m = nn.Linear(shape[1], shape[0], dtype=sx.float64)
    w = to_np(m.weight)
    P.orthogonal(m, orthogonal_map=orth_map)
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original", "parametrizations.weight.0.base"]
    q = to_np(m.weight)
    gram = q.T @ q if shape[0] >= shape[1] else q @ q.T
    np.testing.assert_allclose(gram, np.eye(min(shape)), atol=1e-10)
    if shape[0] == shape[1]:  # the weight is the Q of its own QR at registration
        qr, r = np.linalg.qr(w)
        np.testing.assert_allclose(q, qr * np.sign(np.diag(r)), atol=1e-10)
    x, orig = sx.randn(6, shape[1], dtype=sx.float64), m.parametrizations.weight.original
    for _ in range(3):
        m(x).pow(2).sum().backward()
        with sx.no_grad():
            orig.sub_(0.1 * orig.grad)
        orig.grad = None
    q2 = to_np(m.weight)
    assert np.abs(q2 - q).max() > 1e-3
    gram = q2.T @ q2 if shape[0] >= shape[1] else q2 @ q2.T
    np.testing.assert_allclose(gram, np.eye(min(shape)), atol=1e-10)


def test_orthogonal_without_trivialization_and_errors():
    m = nn.Linear(3, 5, dtype=sx.float64)
    P.orthogonal(m, use_trivialization=False)
    q = to_np(m.weight)
    np.testing.assert_allclose(q.T @ q, np.eye(3), atol=1e-10)
    c = nn.Linear(3, 3)
    P.orthogonal(c, orthogonal_map="cayley", use_trivialization=False)
    with pytest.raises(NotImplementedError, match="use_trivialization=False"):
        c.weight = sx.eye(3)
    with pytest.raises(ValueError, match=r"\[orthogonal\] expected a matrix"):
        P.orthogonal(nn.Linear(3, 3), name="bias")
    with pytest.raises(ValueError, match="orthogonal_map has to be one of"):
        P.orthogonal(nn.Linear(3, 3), orthogonal_map="qr")


@pytest.mark.parity
@pytest.mark.parametrize("shape,orth_map,triv", [((4, 4), None, True), ((5, 3), None, True), ((3, 5), None, True),
                                                 ((4, 4), "cayley", True), ((5, 3), "matrix_exp", True),
                                                 ((5, 3), "householder", False), ((3, 4), "householder", False)])
def test_orthogonal_parity_with_torch(shape, orth_map, triv):
    torch = pytest.importorskip("torch")
    tm = torch.nn.Linear(shape[1], shape[0]).double()
    m = nn.Linear(shape[1], shape[0], dtype=sx.float64)
    m.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    torch.nn.utils.parametrizations.orthogonal(tm, orthogonal_map=orth_map, use_trivialization=triv)
    P.orthogonal(m, orthogonal_map=orth_map, use_trivialization=triv)
    assert list(m.state_dict()) == list(tm.state_dict())
    np.testing.assert_allclose(to_np(m.weight), tm.weight.detach().numpy(), atol=1e-10)
    with torch.no_grad():  # move the original off its starting point, the same way in both
        tm.parametrizations.weight.original.add_(0.3 * torch.randn(*shape, dtype=torch.float64).tril())
    m.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    np.testing.assert_allclose(to_np(m.weight), tm.weight.detach().numpy(), atol=1e-10)
    tm.weight.pow(3).sum().backward()
    m.weight.pow(3).sum().backward()
    np.testing.assert_allclose(to_np(m.parametrizations.weight.original.grad),
                               tm.parametrizations.weight.original.grad.numpy(), atol=1e-9)


@pytest.mark.parity
def test_custom_parametrization_parity_with_torch():
    torch = pytest.importorskip("torch")

    class TSym(torch.nn.Module):
        def forward(self, x):
            return x.triu() + x.triu(1).mT

        def right_inverse(self, a):
            return a.triu()

    tm, m = torch.nn.Linear(3, 3).double(), nn.Linear(3, 3, dtype=sx.float64)
    m.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    torch.nn.utils.parametrize.register_parametrization(tm, "weight", TSym())
    parametrize.register_parametrization(m, "weight", Symmetric())
    assert list(m.state_dict()) == list(tm.state_dict()) and type(m).__name__ == type(tm).__name__
    np.testing.assert_allclose(to_np(m.weight), tm.weight.detach().numpy())
    torch.nn.utils.parametrize.remove_parametrizations(tm, "weight", leave_parametrized=False)
    parametrize.remove_parametrizations(m, "weight", leave_parametrized=False)
    np.testing.assert_allclose(to_np(m.weight), tm.weight.detach().numpy())
