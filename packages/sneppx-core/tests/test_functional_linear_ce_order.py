"""linear_cross_entropy's chunked path (``options``) is first-order only: its gradients are computed in the
forward pass, so differentiating them again (create_graph=True) raises instead of silently treating them as
constants; first-order gradients and repeated backward calls are unchanged."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import sneppx_core as sx
import sneppx_core.functional as F
from sneppx_core.autograd import grad

RNG = np.random.default_rng(7)
CHUNK4 = SimpleNamespace(batch_chunk_size=4, chunking_method=None)
FIRST_ORDER_ONLY = r"\[linear_cross_entropy\].*create_graph=True.*chunked path.*first-order gradients only"


def leaves(n=9, d=3, c=5):
    x, w, b = RNG.standard_normal((n, d)), RNG.standard_normal((c, d)), RNG.standard_normal(c)
    return [sx.tensor(a, requires_grad=True) for a in (x, w, b)], sx.tensor(RNG.integers(0, c, n))


def lce(ts, y, options):
    return F.linear_cross_entropy(ts[0], ts[1], y, linear_bias=ts[2], options=options)


@pytest.mark.parametrize("wrt", [0, 1, 2], ids=["input", "weight", "bias"])
def test_create_graph_raises(wrt):
    ts, y = leaves()
    with pytest.raises(RuntimeError, match=FIRST_ORDER_ONLY):
        grad(lce(ts, y, CHUNK4), ts[wrt], create_graph=True)
    assert sx.is_grad_enabled()


def test_create_graph_raises_when_mixed_with_other_terms():
    ts, y = leaves()
    loss = lce(ts, y, CHUNK4) + (ts[0] ** 3).sum()  # the cube alone would give a plausible-looking result
    with pytest.raises(RuntimeError, match=FIRST_ORDER_ONLY):
        grad(loss, ts[0], create_graph=True)
    loss = lce(ts, y, CHUNK4) + (ts[1] ** 2).sum()
    with pytest.raises(RuntimeError, match=FIRST_ORDER_ONLY):
        loss.backward(create_graph=True)
    hidden = sx.tensor(RNG.standard_normal((9, 3)), requires_grad=True)  # the loss's input is not a leaf
    with pytest.raises(RuntimeError, match=FIRST_ORDER_ONLY):
        grad(lce([hidden * 2.0, ts[1].detach(), None], y, CHUNK4), hidden, create_graph=True)


def test_first_order_gradients_and_repeated_backward_unchanged():
    ts, y = leaves()
    plain = grad(lce(ts, y, None), ts)
    chunked = lce(ts, y, CHUNK4)
    for a, b in zip(grad(chunked, ts, retain_graph=True), plain):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-14)
    chunked.backward(retain_graph=True)
    chunked.backward()
    for t, b in zip(ts, plain):
        np.testing.assert_allclose(t.grad.numpy(), 2 * b.numpy(), rtol=1e-12, atol=1e-14)
