"""diagonal as a view (writes through it reach the base, as in PyTorch), diag_embed, diag and trace:
values against NumPy, gradients of both orders, errors, and the same calls in PyTorch (``pytest -m
parity``)."""

from __future__ import annotations

import numpy as np
import pytest
import sneppx_core as sx
from sneppx_core import _backend
from sneppx_core.testing import gradcheck

RNG = np.random.default_rng(29)
VIEW = pytest.mark.skipif(_backend.NAME != "c", reason="the NumPy backend's diagonal is a copy")

CASES = [((4, 4), 0, 0, 1), ((3, 5), 2, 0, 1), ((5, 3), -2, 0, 1), ((2, 3, 4), 1, 0, 2), ((2, 3, 4), -1, 2, 0),
         ((2, 3, 4, 5), 0, -1, 1), ((3, 3), 7, 0, 1), ((3, 3), -9, 1, 0), ((0, 4), 0, 0, 1)]


def diag_positions(shape, offset, d1, d2):
    """Flat positions of the elements of a tensor of ``shape`` on that diagonal, in np.diagonal's layout."""
    return np.diagonal(np.arange(int(np.prod(shape))).reshape(shape), offset, d1, d2)


def np_embed(a, offset, d1, d2):
    """Zeros of diag_embed's shape with a's last dim on the diagonal (offset) of dims d1, d2."""
    nd = a.ndim + 1
    d1, d2 = d1 % nd, d2 % nd
    n = a.shape[-1] + abs(offset)
    lead = iter(a.shape[:-1])
    out = np.zeros([n if i in (d1, d2) else next(lead) for i in range(nd)])
    out.reshape(-1)[diag_positions(out.shape, offset, d1, d2)] = a
    return out


@pytest.mark.parametrize("shape, offset, d1, d2", CASES, ids=str)
def test_diagonal_values_and_strided_bases(shape, offset, d1, d2):
    a = RNG.standard_normal(shape)
    np.testing.assert_array_equal(sx.tensor(a).diagonal(offset, d1, d2).numpy(), np.diagonal(a, offset, d1, d2))
    t = sx.tensor(np.ascontiguousarray(a.T)).permute(*reversed(range(a.ndim)))  # the same values, reversed strides
    np.testing.assert_array_equal(sx.diagonal(t, offset, d1, d2).numpy(), np.diagonal(a, offset, d1, d2))


@VIEW
@pytest.mark.parametrize("shape, offset, d1, d2", CASES, ids=str)
def test_writes_through_the_diagonal_reach_the_base(shape, offset, d1, d2):
    a = RNG.standard_normal(shape)
    x = sx.tensor(a)
    d = x.diagonal(offset, d1, d2)
    d.mul_(2).add_(1)
    ref = a.copy()
    at = diag_positions(shape, offset, d1, d2)
    ref.reshape(-1)[at] = ref.reshape(-1)[at] * 2 + 1
    np.testing.assert_array_equal(x.numpy(), ref)
    eye = sx.zeros(3, 3)
    eye.diagonal().fill_(1.0)
    np.testing.assert_array_equal(eye.numpy(), np.eye(3))


@VIEW
def test_in_place_through_the_diagonal_under_autograd():
    a = RNG.standard_normal((3, 3))
    x = sx.tensor(a, requires_grad=True)
    y = x * 1.0
    y.diagonal().mul_(3.0)  # y = x with its diagonal tripled
    (y * y).sum().backward()
    scale = np.where(np.eye(3) > 0, 3.0, 1.0)
    np.testing.assert_allclose(x.grad.numpy(), 2 * a * scale * scale, rtol=1e-12)


@pytest.mark.parametrize("shape, offset, d1, d2", [c for c in CASES if c[0][0]], ids=str)
def test_diagonal_gradients_both_orders(shape, offset, d1, d2):
    a = sx.tensor(RNG.standard_normal(shape), requires_grad=True)
    assert gradcheck(lambda t: sx.diagonal(t, offset, d1, d2) ** 2, [a])
    x = sx.tensor(RNG.standard_normal(shape), requires_grad=True)
    g, = sx.autograd.grad((sx.diagonal(x, offset, d1, d2) ** 3).sum(), x, create_graph=True)
    gg, = sx.autograd.grad(g.sum(), x)  # d/dx sum(3 diag^2) = 6 diag, on the diagonal
    want = np.zeros(shape)
    at = diag_positions(shape, offset, d1, d2)
    want.reshape(-1)[at] = 6 * x.detach().numpy().reshape(-1)[at]
    np.testing.assert_allclose(gg.numpy(), want, rtol=1e-12)


@pytest.mark.parametrize("shape, offset, d1, d2", [((2, 3), 1, -2, -1), ((2, 3), 0, 0, 2), ((2, 3), -2, 2, 0),
                                                   ((4,), 0, 0, 1), ((2, 3, 4), 1, 1, 3), ((2, 0), 0, -2, -1)],
                         ids=str)
def test_diag_embed_values_and_gradients(shape, offset, d1, d2):
    a = RNG.standard_normal(shape)
    x = sx.tensor(a, requires_grad=True)
    out = sx.diag_embed(x, offset, d1, d2)
    np.testing.assert_array_equal(out.detach().numpy(), np_embed(a, offset, d1, d2))
    np.testing.assert_array_equal(out.detach().diagonal(offset, d1, d2).numpy(), a)
    if a.size:
        assert gradcheck(lambda t: sx.diag_embed(t, offset, d1, d2) * 1.5, [x])
        g, = sx.autograd.grad((sx.diag_embed(x, offset, d1, d2) ** 2).sum(), x, create_graph=True)
        gg, = sx.autograd.grad(g.sum(), x)
        np.testing.assert_allclose(gg.numpy(), np.full(shape, 2.0))


def test_diag_and_trace():
    v = RNG.standard_normal(4)
    for k in (-2, 0, 3):
        np.testing.assert_array_equal(sx.diag(sx.tensor(v), k).numpy(), np.diag(v, k))
    m = RNG.standard_normal((3, 5))
    np.testing.assert_array_equal(sx.diag(sx.tensor(m), 1).numpy(), np.diag(m, 1))
    assert sx.tensor(np.arange(12).reshape(3, 4)).trace().item() == 15
    assert sx.tensor(np.arange(12).reshape(3, 4)).trace().dtype == sx.int64
    b = sx.tensor(np.array([[True, False], [True, True]]))
    np.testing.assert_array_equal(b.diagonal().numpy(), [True, True])


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32", "int64", "uint8", "bool"])
@pytest.mark.parametrize("shape", [(1, 1), (5, 7), (7, 5), (0, 3), (3, 0), (300, 301)], ids=str)
def test_trace_without_grad(shape, dtype):
    """trace's unrecorded path (the diagonal as a plain strided view) on contiguous, transposed and sliced
    inputs: values and dtype (int64 for integer and bool inputs) against NumPy."""
    a = (RNG.standard_normal(shape) * 3).astype(dtype) if dtype != "bool" else RNG.random(shape) < 0.5
    big = np.zeros((shape[0] * 2 + 1, shape[1] * 3 + 2), a.dtype)
    big[1::2, 2::3] = a
    floating = dtype.startswith("float")
    for x, ref in ((sx.tensor(a), a), (sx.tensor(np.ascontiguousarray(a.T)).t(), a), (sx.tensor(big)[1::2, 2::3], a)):
        t = x.trace()
        assert t.dtype == (x.dtype if floating else sx.int64) and t.shape == ()
        want = np.trace(ref.astype(np.float64 if floating else np.int64))
        eps = {"float16": 1e-3, "float32": 1e-6, "float64": 1e-13}.get(dtype, 0.0)
        np.testing.assert_allclose(t.item(), want, rtol=0, atol=eps * np.abs(np.diagonal(ref)).astype(float).sum())


@VIEW
@pytest.mark.parametrize("shape, wrap", [((3, 3), False), ((7, 3), True), ((7, 3), False), ((3, 5), True),
                                         ((4, 4, 4), False), ((2, 2, 2, 2), False), ((9, 2), True)], ids=str)
def test_fill_diagonal(shape, wrap):
    a = RNG.standard_normal(shape)
    x = sx.tensor(a)
    assert x.fill_diagonal_(-7.0, wrap) is x
    ref = a.copy()
    np.fill_diagonal(ref, -7.0, wrap=wrap)
    np.testing.assert_array_equal(x.numpy(), ref)
    leaf = sx.tensor(a, requires_grad=True)
    y = leaf * 2.0
    y.fill_diagonal_(0.0, wrap)
    y.sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), np.where(ref == -7.0, 0.0, 2.0))
    with pytest.raises(ValueError, match=r"\[fill_diagonal_\] expects a 2-d tensor"):
        sx.zeros(2, 3, 3).fill_diagonal_(1.0)


def test_diagonal_errors():
    with pytest.raises(ValueError, match=r"\[diagonal\] dim1 and dim2 cannot be the same dim, got 0 and -2"):
        sx.ones(2, 2).diagonal(0, 0, -2)
    with pytest.raises((ValueError, IndexError), match=r"diagonal"):
        sx.ones(3).diagonal()
    with pytest.raises(IndexError, match=r"diagonal"):
        sx.ones(2, 2).diagonal(0, 0, 2)
    with pytest.raises((ValueError, IndexError), match=r"diag_embed"):
        sx.diag_embed(sx.ones(2, 3), 0, 1, 1)


@pytest.mark.parity
@pytest.mark.parametrize("offset, d1, d2", [(0, -2, -1), (1, 0, 2), (-1, 2, 0), (2, 1, 0)], ids=str)
def test_diagonal_and_diag_embed_match_pytorch(torch, offset, d1, d2):
    a = RNG.standard_normal((2, 3, 4))
    np.testing.assert_array_equal(sx.tensor(a).diagonal(offset, d1, d2).numpy(),
                                  torch.tensor(a).diagonal(offset, d1, d2).numpy())
    np.testing.assert_array_equal(sx.diag_embed(sx.tensor(a), offset, d1, d2).numpy(),
                                  torch.diag_embed(torch.tensor(a), offset, d1, d2).numpy())
    x, tx = sx.tensor(a), torch.tensor(a)
    x.diagonal(offset, d1, d2).add_(5.0)
    tx.diagonal(offset, d1, d2).add_(5.0)
    np.testing.assert_array_equal(x.numpy(), tx.numpy())
