"""utils.checkpoint: gradients through a checkpointed function equal those of the plain function (dropout
included, by the preserved random state), in both modes, against PyTorch's checkpoint where marked parity."""

import warnings

import numpy as np
import pytest

import sneppx_core as sx
import sneppx_core.functional as F
from sneppx_core.utils.checkpoint import checkpoint, checkpoint_sequential

pytestmark = pytest.mark.skipif(not sx._HAS_C_BACKEND, reason="the NumPy backend has no backward pass")
RNG = np.random.default_rng(9)


class Block:
    """A module-like callable: parameters() and a forward with dropout."""

    def __init__(self, n=4, p=0.5):
        self.w = sx.tensor(RNG.standard_normal((n, n)), requires_grad=True)
        self.b = sx.tensor(RNG.standard_normal(n), requires_grad=True)
        self.p = p

    def parameters(self):
        return [self.w, self.b]

    def __call__(self, x, scale=1.0):
        return F.dropout(sx.tanh(x @ self.w + self.b), self.p, True) * scale


def _grads(fn, block, x):
    sx.manual_seed(7)
    for p in block.parameters():
        p.grad = None
    x = x.detach().requires_grad_(x.requires_grad)
    out = fn(x)
    (out * sx.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)))).sum().backward()
    return [t.grad.numpy().copy() if t.grad is not None else None for t in [x, *block.parameters()]], out


@pytest.mark.parametrize("reentrant", [True, False])
def test_gradients_equal_plain(reentrant):
    block, x = Block(), sx.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    want, out0 = _grads(block, block, x)
    got, out1 = _grads(lambda v: checkpoint(block, v, use_reentrant=reentrant), block, x)
    np.testing.assert_array_equal(out1.detach().numpy(), out0.detach().numpy())
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-14)
    assert out1.grad_fn.name() == "_CheckpointBackward"  # one node: the block's own ops were not recorded


def test_input_without_grad():
    block, x = Block(), sx.tensor(RNG.standard_normal((3, 4)))
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        out = checkpoint(block, x, use_reentrant=True)
    assert not out.requires_grad  # as PyTorch's reentrant form
    want, _ = _grads(block, block, x)
    got, _ = _grads(lambda v: checkpoint(block, v, use_reentrant=False), block, x)
    for g, w in zip(got[1:], want[1:]):
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-14)


def test_autograd_grad_and_second_order():
    block, x = Block(p=0.0), sx.tensor(RNG.standard_normal((2, 4)), requires_grad=True)
    with pytest.raises(RuntimeError, match="not compatible with .grad()"):
        sx.autograd.grad(checkpoint(block, x, use_reentrant=True).sum(), [x])
    plain = sx.autograd.grad(block(x).pow(2).sum(), [x, block.w], create_graph=True)
    ckpt = sx.autograd.grad(checkpoint(block, x, use_reentrant=False).pow(2).sum(), [x, block.w], create_graph=True)
    for g, w in zip(ckpt, plain):
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=1e-13)
    h1 = sx.autograd.grad(plain[0].sum(), block.w)[0]
    h2 = sx.autograd.grad(ckpt[0].sum(), block.w)[0]
    np.testing.assert_allclose(h2.numpy(), h1.numpy(), rtol=1e-12, atol=1e-14)


def test_closure_and_keyword_arguments():
    w = sx.tensor(RNG.standard_normal((4, 4)), requires_grad=True)
    x = sx.tensor(RNG.standard_normal((2, 4)))

    def fn(v, scale=1.0):
        return sx.sin(v @ w) * scale

    checkpoint(fn, x, use_reentrant=False, scale=3.0).sum().backward()  # w is captured, x needs no grad
    got, w.grad = w.grad.numpy().copy(), None
    fn(x, scale=3.0).sum().backward()
    np.testing.assert_allclose(got, w.grad.numpy(), rtol=1e-13)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        checkpoint(fn, x, use_reentrant=True, scale=3.0)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        checkpoint(fn, x.requires_grad_())


def test_checkpoint_sequential():
    blocks = [Block(p=0.3) for _ in range(5)]
    x = sx.tensor(RNG.standard_normal((3, 4)), requires_grad=True)

    class Seq:
        def parameters(self):
            return [p for b in blocks for p in b.parameters()]

    def plain(v):
        for b in blocks:
            v = b(v)
        return v

    want, _ = _grads(plain, Seq(), x)
    for reentrant in (True, False):
        got, _ = _grads(lambda v: checkpoint_sequential(blocks, 2, v, use_reentrant=reentrant), Seq(), x)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


@pytest.mark.parity
@pytest.mark.parametrize("reentrant", [True, False])
def test_matches_torch(torch, reentrant):
    a, w = RNG.standard_normal((3, 4)), RNG.standard_normal((4, 4))
    res = []
    for lib, ck in ((sx, checkpoint), (torch, None)):
        if ck is None:
            from torch.utils.checkpoint import checkpoint as ck
        x, wt = lib.tensor(a, requires_grad=True), lib.tensor(w, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = ck(lambda v: lib.tanh(v @ wt).pow(3), x, use_reentrant=reentrant)
        out.sum().backward()
        res.append([out.detach().numpy(), x.grad.numpy(), wt.grad.numpy()])
    for g, t in zip(*res):
        np.testing.assert_allclose(g, t, rtol=1e-13, atol=1e-14)
