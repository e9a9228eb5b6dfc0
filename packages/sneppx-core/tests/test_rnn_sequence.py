"""sneppx_core.functional.lstm_sequence / gru_sequence: one recurrent layer and direction as one op.

Forward results are compared with a NumPy loop over the steps, gradients of every input (the input
projections, the initial states, the hidden weights and bias) with float64 central differences.
"""

from __future__ import annotations

import numpy as np
import pytest
import sneppx_core as sx
import sneppx_core.functional as F
from sneppx_core.testing import gradcheck

from rnn_ref import np_gru, np_lstm, npy, t

RNG = np.random.default_rng(23)


def np_lstm_seq(gi, h, c, w, reverse):
    out = np.zeros(gi.shape[:2] + (w.shape[1],))
    for s in (range(gi.shape[0] - 1, -1, -1) if reverse else range(gi.shape[0])):
        h, c = np_lstm(gi[s] + h @ w.T, c)
        out[s] = h
    return out, h, c


def np_gru_seq(gi, h, w, b, reverse):
    out = np.zeros(gi.shape[:2] + (w.shape[1],))
    for s in (range(gi.shape[0] - 1, -1, -1) if reverse else range(gi.shape[0])):
        h = out[s] = np_gru(gi[s], h @ w.T + b, h)
    return out, h


def lstm_inputs(T, B, H):
    return (RNG.standard_normal((T, B, 4 * H)), RNG.standard_normal((B, H)), RNG.standard_normal((B, H)),
            RNG.standard_normal((4 * H, H)) / np.sqrt(H))


def gru_inputs(T, B, H):
    return (RNG.standard_normal((T, B, 3 * H)), RNG.standard_normal((B, H)), RNG.standard_normal((3 * H, H)) / np.sqrt(H),
            RNG.standard_normal(3 * H))


# (T, B, H): one step, one row, odd sizes, and a batch large enough to split over threads; the LSTM
# kernel takes rows five at a time and hidden units in blocks of 16 (float32) or 8 (float64), so
# (3, 7, 19) and (2, 6, 33) also have partial blocks of both
SHAPES = [(1, 1, 1), (1, 3, 2), (5, 1, 3), (4, 3, 5), (3, 7, 19), (2, 6, 33), (3, 40, 200)]


@pytest.mark.parametrize("T,B,H", SHAPES)
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("dtype,tol", [(sx.float64, 1e-12), (sx.float32, 2e-5)])
def test_lstm_sequence_matches_numpy(T, B, H, reverse, dtype, tol):
    gi, h0, c0, w = lstm_inputs(T, B, H)
    out, h, c = F.lstm_sequence(t(gi, dtype), t(h0, dtype), t(c0, dtype), t(w, dtype), reverse)
    ro, rh, rc = np_lstm_seq(gi, h0, c0, w, reverse)
    assert out.shape == (T, B, H) and h.shape == (B, H) and c.shape == (B, H) and out.dtype == dtype
    for a, r in ((out, ro), (h, rh), (c, rc)):
        np.testing.assert_allclose(npy(a), r, atol=tol, rtol=tol)


@pytest.mark.parametrize("T,B,H", SHAPES)
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("dtype,tol", [(sx.float64, 1e-12), (sx.float32, 2e-5)])
def test_gru_sequence_matches_numpy(T, B, H, reverse, dtype, tol):
    gi, h0, w, b = gru_inputs(T, B, H)
    out, h = F.gru_sequence(t(gi, dtype), t(h0, dtype), t(w, dtype), t(b, dtype), reverse)
    ro, rh = np_gru_seq(gi, h0, w, b, reverse)
    np.testing.assert_allclose(npy(out), ro, atol=tol, rtol=tol)
    np.testing.assert_allclose(npy(h), rh, atol=tol, rtol=tol)
    out, h = F.gru_sequence(t(gi, dtype), t(h0, dtype), t(w, dtype), None, reverse)
    np.testing.assert_allclose(npy(out), np_gru_seq(gi, h0, w, 0.0, reverse)[0], atol=tol, rtol=tol)


@pytest.mark.parametrize("T,B,H", [(1, 2, 3), (4, 3, 2), (3, 1, 4)])
@pytest.mark.parametrize("reverse", [False, True])
def test_lstm_sequence_gradients(T, B, H, reverse):
    args = [t(a, requires_grad=True) for a in lstm_inputs(T, B, H)]
    gradcheck(lambda *a: sx.cat([x.reshape(-1) for x in F.lstm_sequence(*a, reverse)]), args)
    gradcheck(lambda *a: F.lstm_sequence(*a, reverse)[0], args)  # only out used: h_n, c_n get no gradient
    gradcheck(lambda *a: F.lstm_sequence(*a, reverse)[2], args)  # only c_n used


@pytest.mark.parametrize("T,B,H", [(1, 2, 3), (4, 3, 2), (3, 1, 4)])
@pytest.mark.parametrize("reverse", [False, True])
def test_gru_sequence_gradients(T, B, H, reverse):
    args = [t(a, requires_grad=True) for a in gru_inputs(T, B, H)]
    gradcheck(lambda *a: sx.cat([x.reshape(-1) for x in F.gru_sequence(*a, reverse)]), args)
    gradcheck(lambda *a: F.gru_sequence(*a, reverse)[1], args)
    gradcheck(lambda g, h, w: F.gru_sequence(g, h, w, None, reverse)[0], args[:3])


@pytest.mark.parametrize("reverse", [False, True])
def test_lstm_sequence_gradients_across_unit_blocks(reverse):
    gi, h0, c0, w = lstm_inputs(3, 7, 11)
    gradcheck(lambda *a: F.lstm_sequence(*a, reverse)[0], [t(gi, requires_grad=True), t(h0, requires_grad=True),
                                                           t(c0, requires_grad=True), t(w, requires_grad=True)])


def test_lstm_sequence_float32_gradients_across_unit_blocks():
    gi, h0, c0, w = lstm_inputs(4, 7, 19)
    grads = []
    for dtype in (sx.float64, sx.float32):
        ins = [t(a, dtype, True) for a in (gi, h0, c0, w)]
        out, _h, c = F.lstm_sequence(*ins, True)
        ((out * t(np.cos(np.arange(out.numel()).reshape(out.shape)), dtype)).sum() + c.sum()).backward()
        grads.append([npy(a.grad) for a in ins])
    for g64, g32 in zip(*grads):
        np.testing.assert_allclose(g32, g64, atol=2e-5, rtol=1e-4)


def test_partial_requires_grad_and_float32_gradients():
    gi, h0, c0, w = lstm_inputs(3, 2, 4)
    g, wt = t(gi, requires_grad=True), t(w, requires_grad=True)
    out, _h, c = F.lstm_sequence(g, t(h0), t(c0), wt)
    (out.sum() + c.sum()).backward()
    assert g.grad.shape == (3, 2, 16) and wt.grad.shape == (16, 4)
    g32, w32 = t(gi, sx.float32, True), t(w, sx.float32, True)
    out, _, c = F.lstm_sequence(g32, t(h0, sx.float32), t(c0, sx.float32), w32)
    (out.sum() + c.sum()).backward()
    np.testing.assert_allclose(npy(g32.grad), npy(g.grad), atol=1e-5)
    np.testing.assert_allclose(npy(w32.grad), npy(wt.grad), atol=1e-5)


def test_non_contiguous_mixed_and_half_inputs():
    gi, h0, c0, w = lstm_inputs(3, 2, 4)
    big = np.ascontiguousarray(gi.transpose(2, 1, 0))  # a permuted view of it has gi's shape
    out, h, _ = F.lstm_sequence(t(big).permute(2, 1, 0), t(h0, sx.float32), t(c0), t(w))
    assert out.dtype == sx.float64
    ro, _, _ = np_lstm_seq(gi, npy(t(h0, sx.float32)), c0, w, False)
    np.testing.assert_allclose(npy(out), ro, atol=1e-12)
    gi, h0, w, b = gru_inputs(3, 2, 4)
    out, h = F.gru_sequence(t(gi, sx.bfloat16), t(h0, sx.bfloat16), t(w, sx.bfloat16), t(b, sx.bfloat16))
    assert out.dtype == sx.bfloat16 and h.dtype == sx.bfloat16
    r = np_gru_seq(*(npy(t(a, sx.bfloat16)) for a in (gi, h0, w, b)), False)[0]
    np.testing.assert_allclose(npy(out), r, atol=3e-2)


def test_no_grad_and_in_place_weight_change_is_caught():
    gi, h0, c0, w = (t(a, requires_grad=True) for a in lstm_inputs(2, 2, 3))
    with sx.no_grad():
        out, _h, c = F.lstm_sequence(gi, h0, c0, w)
    assert not out.requires_grad and not c.requires_grad
    wl = t(npy(w), requires_grad=True)
    out, _, c = F.lstm_sequence(gi, h0, c0, wl)
    with sx.no_grad():
        wl.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified"):
        out.sum().backward()


def test_double_backward_raises():
    gi, h0, c0, w = (t(a, requires_grad=True) for a in lstm_inputs(2, 2, 3))
    out, _h, _ = F.lstm_sequence(gi, h0, c0, w)
    with pytest.raises(RuntimeError, match="lstm_sequence.*create_graph"):
        sx.autograd.grad(out.sum(), [gi], create_graph=True)
    gi, h0, w, b = (t(a, requires_grad=True) for a in gru_inputs(2, 2, 3))
    out, _ = F.gru_sequence(gi, h0, w, b)
    with pytest.raises(RuntimeError, match="gru_sequence.*create_graph"):
        sx.autograd.grad(out.sum(), [w], create_graph=True)


def test_bad_inputs_name_the_op_and_shapes():
    z = lambda *s: t(np.zeros(s))
    with pytest.raises(ValueError, match=r"lstm_sequence.*\(T, B, 4\*H\).*\(2, 3, 7\)"):
        F.lstm_sequence(z(2, 3, 7), z(3, 2), z(3, 2), z(8, 2))
    with pytest.raises(ValueError, match=r"lstm_sequence.*T >= 1"):
        F.lstm_sequence(z(0, 3, 8), z(3, 2), z(3, 2), z(8, 2))
    with pytest.raises(ValueError, match=r"lstm_sequence.*state float64 \(4, 2\)"):
        F.lstm_sequence(z(2, 3, 8), z(3, 2), z(4, 2), z(8, 2))
    with pytest.raises(TypeError, match=r"lstm_sequence.*w_hh.*floating"):
        F.lstm_sequence(z(2, 3, 8), z(3, 2), z(3, 2), sx.zeros(8, 2, dtype=sx.int64))
    with pytest.raises(ValueError, match=r"gru_sequence.*\(T, B, 3\*H\)"):
        F.gru_sequence(z(2, 3, 8), z(3, 2), z(6, 2))
    with pytest.raises(ValueError, match=r"gru_sequence.*b_hh.*\(6,\).*\(5,?\)"):
        F.gru_sequence(z(2, 3, 6), z(3, 2), z(6, 2), z(5))


def test_empty_batch():
    gi, w = t(np.zeros((2, 0, 8)), requires_grad=True), t(np.ones((8, 2)), requires_grad=True)
    out, h, c = F.lstm_sequence(gi, t(np.zeros((0, 2))), t(np.zeros((0, 2))), w)
    assert out.shape == (2, 0, 2) and h.shape == (0, 2)
    (out.sum() + c.sum()).backward()
    assert gi.grad.shape == (2, 0, 8) and np.all(npy(w.grad) == 0)
