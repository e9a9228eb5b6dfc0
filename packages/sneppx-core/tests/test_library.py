"""``library.custom_op`` (``torch.library``): a NumPy-implemented operator with a registered backward, checked
against float64 finite differences (``gradcheck``) and NumPy; ``ops.<namespace>`` lookup; per-device kernels;
the error of a missing backward; the parity test runs the same definitions on PyTorch."""

import numpy as np
import pytest

import sneppx_core as sx
from sneppx_core import library


def _define(lib, torch_like, name):
    """``name``: x * sin(y) computed in NumPy, with its backward (works with torch.library and SneppX's)."""

    @lib.custom_op(f"sxtest::{name}", mutates_args=())
    def op(x: torch_like.Tensor, y: torch_like.Tensor) -> torch_like.Tensor:
        a, b = x.detach().numpy(), y.detach().numpy()
        return torch_like.from_numpy(np.ascontiguousarray(a * np.sin(b)))

    @op.register_fake
    def _(x, y):
        return torch_like.empty_like(x)

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return grad * torch_like.sin(y), grad * x * torch_like.cos(y)

    op.register_autograd(backward, setup_context=setup_context)
    return op


def test_custom_op_values_and_gradients():
    op = _define(library, sx, "mul_sin")
    x = sx.tensor(np.array([0.5, -1.0, 2.0]), dtype=sx.float64, requires_grad=True)
    y = sx.tensor(np.array([0.3, 1.2, -0.7]), dtype=sx.float64, requires_grad=True)
    np.testing.assert_allclose(op(x, y).detach().numpy(), x.detach().numpy() * np.sin(y.detach().numpy()))
    assert sx.testing.gradcheck(op, (x, y))
    assert sx.ops.sxtest.mul_sin is op and sx.ops.sxtest.mul_sin.default is op
    assert library.register_fake("sxtest::mul_sin", lambda x, y: x) is not None


def test_kernels_and_missing_backward():
    @library.custom_op("sxtest::double", mutates_args=(), device_types="cpu")
    def double(x):
        return x * 2

    assert double(sx.ones(2)).tolist() == [2.0, 2.0]
    library.register_kernel("sxtest::double", "cpu", lambda x: x * 3)
    out = double(sx.ones(2, requires_grad=True))
    assert out.tolist() == [3.0, 3.0]
    with pytest.raises(RuntimeError, match="no autograd formula"):
        out.sum().backward()
    with pytest.raises(ValueError, match="namespace::name"):
        library.custom_op("nonamespace", mutates_args=())
    with pytest.raises(AttributeError, match="no custom op was defined"):
        sx.ops.not_a_namespace
    with pytest.raises(NotImplementedError, match="custom_op"):
        library.Library("sxtest", "DEF")


@pytest.mark.parity
def test_parity_with_torch_library():
    torch = pytest.importorskip("torch")
    t_op = _define(torch.library, torch, "mul_sin_parity")
    s_op = _define(library, sx, "mul_sin_parity")
    a, b = np.array([0.25, -2.0, 1.5]), np.array([1.0, 0.1, -3.0])
    tx, ty = (torch.tensor(v, requires_grad=True) for v in (a, b))
    sxx, sy = (sx.tensor(v, dtype=sx.float64, requires_grad=True) for v in (a, b))
    to, so = t_op(tx, ty), s_op(sxx, sy)
    np.testing.assert_allclose(so.detach().numpy(), to.detach().numpy(), rtol=1e-15)
    (to * torch.tensor(a)).sum().backward()
    (so * sx.tensor(a, dtype=sx.float64)).sum().backward()
    np.testing.assert_allclose(sxx.grad.numpy(), tx.grad.numpy(), rtol=1e-14)
    np.testing.assert_allclose(sy.grad.numpy(), ty.grad.numpy(), rtol=1e-14)
