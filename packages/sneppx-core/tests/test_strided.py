"""as_strided, as_strided_, as_strided_scatter, empty_strided, new_empty_strided: values against NumPy's
as_strided, gradients against float64 finite differences and, marked parity, PyTorch."""

import numpy as np
import pytest

import sneppx_core as sx
from sneppx_core.testing import gradcheck

pytestmark = pytest.mark.skipif(not sx._HAS_C_BACKEND, reason="strided views need the C backend")
RNG = np.random.default_rng(3)

# (input shape, size, stride, offset or None)
CASES = [((12,), (3, 3), (1, 1), None), ((12,), (4, 3), (2, 1), 1), ((3, 4), (2, 2), (4, 1), 5),
         ((3, 4), (3,), (5,), 0), ((2, 3, 4), (2, 2, 3), (12, 1, 4), 0), ((6,), (2, 3), (0, 1), 2),
         ((5,), (0, 3), (1, 1), 0)]


def _np_view(a, size, stride, offset):
    base = np.ascontiguousarray(a).reshape(-1)
    return np.lib.stride_tricks.as_strided(base[offset:], shape=size, strides=[s * base.itemsize for s in stride])


@pytest.mark.parametrize("shape,size,stride,offset", CASES)
def test_values_against_numpy(shape, size, stride, offset):
    a = RNG.standard_normal(shape)
    x = sx.tensor(a)
    got = x.as_strided(size, stride, offset)
    np.testing.assert_array_equal(got.numpy(), _np_view(a, size, stride, offset or 0))
    np.testing.assert_array_equal(sx.as_strided(x, size, stride, offset).numpy(), got.numpy())


def test_is_a_view_and_default_offset():
    x = sx.arange(12.0).reshape(3, 4)
    v = x[1:]
    np.testing.assert_array_equal(v.as_strided((2, 2), (1, 1)).numpy(), [[4, 5], [5, 6]])  # v's own offset
    w = x.as_strided((3,), (5,))
    w[1] = 100.0
    assert x[1, 1].item() == 100.0
    assert w.stride() == (5,) and w.storage_offset() == 0


@pytest.mark.parametrize("shape,size,stride,offset", CASES[:6])
def test_gradients_against_finite_differences(shape, size, stride, offset):
    a = RNG.standard_normal(shape)
    assert gradcheck(lambda t: t.as_strided(size, stride, offset), [sx.tensor(a, requires_grad=True)])


def test_overlapping_windows_add_up():
    a = sx.arange(5.0, dtype=sx.float64).requires_grad_()
    a.as_strided((3, 3), (1, 1)).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [1, 2, 3, 2, 1])


def test_errors():
    x = sx.zeros(3, 4)
    with pytest.raises(RuntimeError, match=r"\[as_strided\] size \(10,\).*need a storage of 19 elements.*holds 12"):
        x.as_strided((10,), (2,))
    with pytest.raises(ValueError, match="negative strides"):
        x.as_strided((2,), (-1,))
    with pytest.raises(ValueError, match="mismatch in length"):
        x.as_strided((2, 2), (1,))
    with pytest.raises(TypeError, match="sequence of ints"):
        x.as_strided((2.5,), (1,))
    with pytest.raises(TypeError, match=r"\[as_strided\] expected a Tensor"):
        sx.as_strided([1, 2], (1,), (1,))
    leaf = sx.arange(12.0).requires_grad_()
    with pytest.raises(NotImplementedError, match="every element of the view must be an element of the input"):
        leaf[4:].as_strided((2,), (1,), 0)
    with pytest.raises(NotImplementedError, match="must not overlap"):
        leaf[:1].expand(3).as_strided((2,), (1,), 0)


def test_as_strided_in_place():
    b = sx.zeros(6)
    assert b.as_strided_((2, 3), (3, 1)) is b
    assert tuple(b.shape) == (2, 3) and b.stride() == (3, 1)
    b.as_strided_((3,), (2,), 1)
    b.fill_(1.0)
    np.testing.assert_array_equal(b.as_strided((6,), (1,), 0).numpy(), [0, 1, 0, 1, 0, 1])
    with pytest.raises(RuntimeError, match="requires grad"):
        sx.zeros(4, requires_grad=True).as_strided_((2,), (1,))
    with pytest.raises(RuntimeError, match="need a storage"):
        b.as_strided_((7,), (1,), 0)


def test_empty_strided():
    e = sx.empty_strided((2, 3), (1, 2))
    assert tuple(e.shape) == (2, 3) and e.stride() == (1, 2) and e.dtype == sx.float32 and not e.is_contiguous()
    n = sx.zeros(2, dtype=sx.float64).new_empty_strided((2, 2), (1, 2))
    assert n.dtype == sx.float64 and n.stride() == (1, 2)
    assert tuple(sx.empty_strided((0, 3), (3, 1)).shape) == (0, 3)


@pytest.mark.parity
@pytest.mark.parametrize("shape,size,stride,offset", CASES)
def test_matches_torch(torch, shape, size, stride, offset):
    a = RNG.standard_normal(shape)
    seed = RNG.standard_normal(size)
    xs, xt = sx.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    ys, yt = xs.as_strided(size, stride, offset), xt.as_strided(size, stride, offset)
    np.testing.assert_array_equal(ys.detach().numpy(), yt.detach().numpy())
    if ys.numel():
        (ys * sx.tensor(seed)).sum().backward()
        (yt * torch.tensor(seed)).sum().backward()
        np.testing.assert_allclose(xs.grad.numpy(), xt.grad.numpy(), rtol=1e-14, atol=1e-15)


@pytest.mark.parity
@pytest.mark.parametrize("transpose", [False, True])
def test_scatter_matches_torch(torch, transpose):
    a, s = RNG.standard_normal((3, 4)), RNG.standard_normal((2, 2))
    seed = RNG.standard_normal((4, 3) if transpose else (3, 4))
    xs, ss = sx.tensor(a, requires_grad=True), sx.tensor(s, requires_grad=True)
    out = sx.as_strided_scatter(xs.t() if transpose else xs, ss, (2, 2), (1, 2))
    (out * sx.tensor(seed)).sum().backward()
    # PyTorch's values (its backward needs a contiguous input); its gradients by clone + as_strided + copy_
    # (torch 2.13's as_strided_scatter backward gives the input the complement of the right mask)
    xt, st = torch.tensor(a, requires_grad=True), torch.tensor(s, requires_grad=True)
    xi = xt.t() if transpose else xt
    want = torch.as_strided_scatter(xi.detach(), st.detach(), (2, 2), (1, 2))
    np.testing.assert_array_equal(out.detach().numpy(), want.numpy())
    o = xi.clone()
    o.as_strided((2, 2), (1, 2)).copy_(st)
    (o * torch.tensor(seed)).sum().backward()
    np.testing.assert_array_equal(xs.grad.numpy(), xt.grad.numpy())
    np.testing.assert_array_equal(ss.grad.numpy(), st.grad.numpy())


def test_scatter_gradients_and_errors():
    a, s = RNG.standard_normal((3, 4)), RNG.standard_normal((2, 2))
    assert gradcheck(lambda x, y: sx.as_strided_scatter(x, y, (2, 2), (1, 2), 3),
                     [sx.tensor(a, requires_grad=True), sx.tensor(s, requires_grad=True)])
    with pytest.raises(ValueError, match=r"src has shape \(2, 2\); the view has size \(3,\)"):
        sx.as_strided_scatter(sx.zeros(3, 4), sx.zeros(2, 2), (3,), (1,))
    with pytest.raises(RuntimeError, match="need a storage"):
        sx.as_strided_scatter(sx.zeros(3, 4), sx.zeros(2, 2), (2, 2), (1, 2), 10)
