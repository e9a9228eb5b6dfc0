"""scatter_reduce with reduce="prod": forward against NumPy's multiply.at, gradients against float64
central differences (also where slots hold zeros: the product is linear in each element, so the
differences are exact there too), and results and gradients against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
import sneppx_core as sx
from sneppx_core.testing import gradcheck

RNG = np.random.default_rng(41)


def np_scatter_prod(a, dim, idx, src, include_self):
    out = a.copy()
    pos = list(np.indices(idx.shape))
    pos[dim] = idx
    pos = tuple(pos)
    if not include_self:
        out[pos] = 1
    np.multiply.at(out, pos, src[tuple(slice(0, n) for n in idx.shape)])
    return out


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_forward_matches_numpy(include_self, dim):
    a, src = RNG.standard_normal((4, 5)), RNG.standard_normal((5, 6))
    idx = RNG.integers(0, 4 if dim == 0 else 5, (3, 4))
    out = sx.scatter_reduce(sx.tensor(a), dim, sx.tensor(idx), sx.tensor(src), "prod", include_self=include_self)
    np.testing.assert_allclose(out.numpy(), np_scatter_prod(a, dim % 2, idx, src, include_self), rtol=1e-14)


def test_integers_float32_and_method_form():
    a = sx.tensor(np.array([[5, 1, 7]], dtype=np.int64))
    out = a.scatter_reduce(1, sx.tensor([[0, 0, 2]]), sx.tensor([[9, 3, 2]]), "prod", include_self=False)
    assert out.dtype == sx.int64 and out.tolist() == [[27, 1, 2]]
    out = a.scatter_reduce(1, sx.tensor([[0, 0, 2]]), sx.tensor([[9, 3, 2]]), "prod")
    assert out.tolist() == [[135, 1, 14]]
    x = sx.tensor([2.0, 3.0], dtype=sx.float32)
    out = x.scatter_reduce(0, sx.tensor([1, 1]), sx.tensor([0.5, 4.0], dtype=sx.float32), "prod")
    assert out.dtype == sx.float32 and out.tolist() == [2.0, 6.0]
    out = sx.scatter_reduce(sx.tensor(3.0), 0, sx.tensor(0), sx.tensor(2.0), "prod")
    assert out.shape == () and out.item() == 6.0


@pytest.mark.parametrize("include_self", [True, False])
def test_gradients(include_self):
    a, src = RNG.standard_normal((4, 5)), RNG.standard_normal((5, 5))  # src larger than index along dim 0
    idx = sx.tensor(RNG.integers(0, 5, (3, 5)))
    gradcheck(lambda x, s: sx.scatter_reduce(x, 1, idx, s, "prod", include_self=include_self),
              [sx.tensor(a, requires_grad=True), sx.tensor(src, requires_grad=True)])


# Slot 0 gets src 0 (the only zero of src there), slot 1 gets two zeros, slot 2 a zero input value
# and nonzero src, slot 3 nothing.
ZERO_CASE = ([1.5, -2.0, 0.0, 3.0], [0, 0, 1, 1, 1, 2, 2], [0.0, 2.0, 0.0, 0.0, 3.0, -1.5, 2.5])


@pytest.mark.parametrize("include_self", [True, False])
def test_gradients_with_zeros(include_self):
    a, idx, src = ZERO_CASE
    gradcheck(lambda x, s: sx.scatter_reduce(x, 0, sx.tensor(idx), s, "prod", include_self=include_self),
              [sx.tensor(a, requires_grad=True), sx.tensor(src, requires_grad=True)])


def test_zero_gradients_are_the_products_of_the_others():
    a, idx, src = ZERO_CASE
    x, s = sx.tensor(a, requires_grad=True), sx.tensor(src, requires_grad=True)
    sx.scatter_reduce(x, 0, sx.tensor(idx), s, "prod").sum().backward()
    # slot 0: 1.5 * 0 * 2; slot 1: -2 * 0 * 0 * 3; slot 2: 0 * -1.5 * 2.5
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 0.0, -3.75, 1.0])
    np.testing.assert_allclose(s.grad.numpy(), [3.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])


def test_without_include_self_the_input_gets_no_gradient_where_written():
    x, s = sx.tensor([2.0, 3.0, 4.0], requires_grad=True), sx.tensor([5.0, 6.0], requires_grad=True)
    sx.scatter_reduce(x, 0, sx.tensor([2, 2]), s, "prod", include_self=False).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 0.0] and s.grad.tolist() == [6.0, 5.0]


def test_double_backward_and_bad_inputs_raise():
    x, s = sx.tensor([2.0, 3.0], requires_grad=True), sx.tensor([5.0], requires_grad=True)
    out = sx.scatter_reduce(x, 0, sx.tensor([0]), s, "prod")
    with pytest.raises(RuntimeError, match=r"scatter_reduce\(prod\).*create_graph"):
        sx.autograd.grad(out.sum(), [x], create_graph=True)
    with pytest.raises(ValueError, match=r"scatter_reduce\(prod\).*index"):
        sx.scatter_reduce(sx.zeros(3, 4), 1, sx.zeros(5, 4, dtype=sx.int64), sx.zeros(5, 4), "prod")
    with pytest.raises(IndexError, match=r"scatter_reduce\(prod\)"):
        sx.scatter_reduce(sx.zeros(3, 4), 1, sx.tensor([[4]]), sx.zeros(1, 1), "prod")
    with pytest.raises(TypeError, match=r"scatter_reduce\(prod\).*index must be an integer"):
        sx.scatter_reduce(sx.zeros(3), 0, sx.tensor([0.0]), sx.zeros(1), "prod")


@pytest.mark.parity
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("zeros", [False, True])
def test_matches_torch(torch, include_self, zeros):
    a, src = RNG.standard_normal((4, 6)), RNG.standard_normal((3, 6))  # PyTorch's backward wants src as index
    if zeros:
        a[RNG.random(a.shape) < 0.2] = 0
        src[RNG.random(src.shape) < 0.3] = 0
    idx = RNG.integers(0, 6, (3, 6))
    w = RNG.standard_normal(a.shape)
    grads = []
    for lib in (sx, torch):
        x, s = lib.tensor(a, requires_grad=True), lib.tensor(src, requires_grad=True)
        out = x.scatter_reduce(1, lib.tensor(idx), s, "prod", include_self=include_self)
        (out * lib.tensor(w)).sum().backward()
        grads.append((out.detach().numpy(), x.grad.numpy(), s.grad.numpy()))
    for mine, theirs in zip(*grads):
        np.testing.assert_allclose(mine, theirs, rtol=1e-12, atol=1e-14)
