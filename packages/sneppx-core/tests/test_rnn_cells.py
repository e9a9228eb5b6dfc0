"""sneppx_core.functional.lstm_cell / gru_cell: the fused elementwise halves of LSTM and GRU steps.

Forward results are compared with NumPy formulas, gradients with float64 central differences
(``sneppx_core.testing.gradcheck``), and both with PyTorch's LSTMCell / GRUCell under ``-m parity``.
"""

from __future__ import annotations

import numpy as np
import pytest
import sneppx_core as sx
import sneppx_core.functional as F
from sneppx_core.testing import gradcheck

from rnn_ref import np_gru, np_lstm, npy, t

RNG = np.random.default_rng(19)


# (B, H): tiny, odd, and large enough (B*H*5 > 32768 elements) to run over several threads
SHAPES = [(1, 1), (3, 5), (4, 17), (64, 300)]


@pytest.mark.parametrize("B,H", SHAPES)
@pytest.mark.parametrize("dtype,tol", [(sx.float64, 1e-12), (sx.float32, 2e-6)])
def test_lstm_cell_matches_numpy(B, H, dtype, tol):
    gates, c = RNG.standard_normal((B, 4 * H)) * 2, RNG.standard_normal((B, H))
    h2, c2 = F.lstm_cell(t(gates, dtype), t(c, dtype))
    rh, rc = np_lstm(gates, c)
    assert h2.dtype == dtype and c2.dtype == dtype
    assert h2.shape == (B, H) and c2.shape == (B, H)
    np.testing.assert_allclose(npy(h2), rh, atol=tol, rtol=tol)
    np.testing.assert_allclose(npy(c2), rc, atol=tol, rtol=tol)


@pytest.mark.parametrize("B,H", SHAPES)
@pytest.mark.parametrize("dtype,tol", [(sx.float64, 1e-12), (sx.float32, 2e-6)])
def test_gru_cell_matches_numpy(B, H, dtype, tol):
    gi, gh, h = (RNG.standard_normal(s) * 2 for s in ((B, 3 * H), (B, 3 * H), (B, H)))
    out = F.gru_cell(t(gi, dtype), t(gh, dtype), t(h, dtype))
    assert out.dtype == dtype and out.shape == (B, H)
    np.testing.assert_allclose(npy(out), np_gru(gi, gh, h), atol=tol, rtol=tol)


def test_cells_saturate_without_nan():
    gates = np.array([[80.0, -80.0, 40.0, -90.0, 90.0, 95.0, -60.0, 100.0]])
    for dtype in (sx.float32, sx.float64):
        h, c = F.lstm_cell(t(gates, dtype), t([[1.5, -2.0]], dtype))
        rh, rc = np_lstm(gates, np.array([[1.5, -2.0]]))
        np.testing.assert_allclose(npy(h), rh, atol=1e-6)
        np.testing.assert_allclose(npy(c), rc, atol=1e-6)
        g = t(gates[:, :6] * 1.1, dtype)
        out = F.gru_cell(g, t(gates[:, 2:] * -1, dtype), t([[0.5, -0.25]], dtype))
        np.testing.assert_allclose(npy(out), np_gru(gates[:, :6] * 1.1, -gates[:, 2:], np.array([[0.5, -0.25]])),
                                   atol=1e-6)


@pytest.mark.parametrize("B,H", [(1, 1), (3, 4), (20, 40)])
def test_lstm_cell_gradients(B, H):
    gates, c = t(RNG.standard_normal((B, 4 * H)), requires_grad=True), t(RNG.standard_normal((B, H)), requires_grad=True)
    gradcheck(lambda g, cp: sx.stack(F.lstm_cell(g, cp), 0), [gates, c])
    gradcheck(lambda g, cp: F.lstm_cell(g, cp)[0], [gates, c])  # only h used: dc arrives as zeros
    gradcheck(lambda g, cp: F.lstm_cell(g, cp)[1], [gates, c])


@pytest.mark.parametrize("B,H", [(1, 1), (3, 4), (20, 40)])
def test_gru_cell_gradients(B, H):
    gi, gh, h = (t(RNG.standard_normal(s), requires_grad=True) for s in ((B, 3 * H), (B, 3 * H), (B, H)))
    gradcheck(F.gru_cell, [gi, gh, h])


def test_gradients_through_several_steps_and_partial_requires_grad():
    B, H = 3, 4
    gates = [t(RNG.standard_normal((B, 4 * H)), requires_grad=True) for _ in range(3)]
    c0 = t(RNG.standard_normal((B, H)))  # no grad: only the gates' gradients are wanted

    def lstm3(a, b, c):
        h, c_ = None, c0
        for g in (a, b, c):
            h, c_ = F.lstm_cell(g if h is None else g + sx.cat([h, h, h, h], 1), c_)
        return h * c_

    gradcheck(lstm3, gates)
    gi = t(RNG.standard_normal((B, 3 * H)), requires_grad=True)
    gh, h = t(RNG.standard_normal((B, 3 * H))), t(RNG.standard_normal((B, H)), requires_grad=True)
    gradcheck(lambda a, b: F.gru_cell(a, gh, F.gru_cell(a, gh, b)), [gi, h])


def test_non_contiguous_and_mixed_inputs():
    B, H = 4, 3
    big = RNG.standard_normal((4 * H, B))
    c = RNG.standard_normal((B, H))
    h2, c2 = F.lstm_cell(t(big).t(), t(c, sx.float32))  # transposed view; float64 with float32 promotes
    rh, rc = np_lstm(big.T, c)
    assert h2.dtype == sx.float64
    np.testing.assert_allclose(npy(h2), rh, atol=1e-6)
    np.testing.assert_allclose(npy(c2), rc, atol=1e-6)
    gi, gh = RNG.standard_normal((3 * H, B)), RNG.standard_normal((B, 3 * H))
    out = F.gru_cell(t(gi).t(), t(gh), t(c))
    np.testing.assert_allclose(npy(out), np_gru(gi.T, gh, c), atol=1e-12)


def test_half_inputs_compute_in_float32():
    gates, c = RNG.standard_normal((2, 8)), RNG.standard_normal((2, 2))
    h2, c2 = F.lstm_cell(t(gates, sx.bfloat16), t(c, sx.bfloat16))
    assert h2.dtype == sx.bfloat16 and c2.dtype == sx.bfloat16
    rh, _ = np_lstm(npy(t(gates, sx.bfloat16)), npy(t(c, sx.bfloat16)))
    np.testing.assert_allclose(npy(h2), rh, atol=1e-2)


def test_no_grad_and_grad_fn_names():
    gates, c = t(RNG.standard_normal((2, 8)), requires_grad=True), t(RNG.standard_normal((2, 2)))
    with sx.no_grad():
        h, c2 = F.lstm_cell(gates, c)
    assert not h.requires_grad and not c2.requires_grad
    h, c2 = F.lstm_cell(gates, c)
    assert h.requires_grad and c2.requires_grad
    assert "LstmCell" in type(h.grad_fn).__name__ or "LstmCell" in str(h.grad_fn.name())


def test_double_backward_raises():
    gates, c = t(RNG.standard_normal((2, 8)), requires_grad=True), t(RNG.standard_normal((2, 2)), requires_grad=True)
    h, c2 = F.lstm_cell(gates, c)
    with pytest.raises(RuntimeError, match="lstm_cell.*create_graph"):
        sx.autograd.grad((h * c2).sum(), [gates], create_graph=True)
    gi, gh = (t(RNG.standard_normal((2, 6)), requires_grad=True) for _ in range(2))
    out = F.gru_cell(gi, gh, c)
    with pytest.raises(RuntimeError, match="gru_cell.*create_graph"):
        sx.autograd.grad(out.sum(), [gi], create_graph=True)


def test_bad_inputs_name_the_op_and_shapes():
    with pytest.raises(ValueError, match=r"lstm_cell.*\(B, 4\*H\).*\(2, 7\)"):
        F.lstm_cell(t(np.zeros((2, 7))), t(np.zeros((2, 2))))
    with pytest.raises(ValueError, match=r"lstm_cell"):
        F.lstm_cell(t(np.zeros((3, 8))), t(np.zeros((2, 2))))
    with pytest.raises(ValueError, match=r"lstm_cell"):
        F.lstm_cell(t(np.zeros(8)), t(np.zeros(2)))
    with pytest.raises(TypeError, match=r"lstm_cell.*c_prev.*floating"):
        F.lstm_cell(t(np.zeros((2, 8))), sx.zeros(2, 2, dtype=sx.int64))
    with pytest.raises(ValueError, match=r"gru_cell.*\(B, 3\*H\)"):
        F.gru_cell(t(np.zeros((2, 6))), t(np.zeros((2, 3))), t(np.zeros((2, 2))))
    with pytest.raises(ValueError, match=r"gru_cell"):
        F.gru_cell(t(np.zeros((2, 6))), t(np.zeros((2, 6))), t(np.zeros((2, 3))))
    with pytest.raises(TypeError, match=r"gru_cell.*gi.*floating"):
        F.gru_cell(sx.zeros(2, 6, dtype=sx.int32), t(np.zeros((2, 6))), t(np.zeros((2, 2))))


def test_empty_batch():
    h, c = F.lstm_cell(t(np.zeros((0, 8)), requires_grad=True), t(np.zeros((0, 2))))
    assert h.shape == (0, 2) and c.shape == (0, 2)
    (h.sum() + c.sum()).backward()
    out = F.gru_cell(t(np.zeros((0, 6)), requires_grad=True), t(np.zeros((0, 6))), t(np.zeros((0, 2))))
    assert out.shape == (0, 2)


@pytest.mark.parity
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_parity_with_torch_cells(dtype):
    torch = pytest.importorskip("torch")
    B, I, H = 5, 7, 6
    tdt, sdt = getattr(torch, dtype), getattr(sx, dtype)
    tol = 1e-5 if dtype == "float32" else 1e-12
    x, h0, c0 = RNG.standard_normal((B, I)), RNG.standard_normal((B, H)), RNG.standard_normal((B, H))
    for kind, gates in (("LSTM", 4), ("GRU", 3)):
        cell = (torch.nn.LSTMCell if kind == "LSTM" else torch.nn.GRUCell)(I, H, dtype=tdt)
        w_ih, w_hh, b_ih, b_hh = (p.detach().numpy().astype(np.float64) for p in
                                  (cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh))
        tx, th = torch.tensor(x, dtype=tdt), torch.tensor(h0, dtype=tdt, requires_grad=True)
        sxx, sh = t(x, sdt), t(h0, sdt, requires_grad=True)
        gi = F.linear(sxx, t(w_ih, sdt), t(b_ih, sdt))
        gh = F.linear(sh, t(w_hh, sdt), t(b_hh, sdt))
        if kind == "LSTM":
            tc, sc = torch.tensor(c0, dtype=tdt, requires_grad=True), t(c0, sdt, requires_grad=True)
            th2, tc2 = cell(tx, (th, tc))
            sh2, sc2 = F.lstm_cell(gi + gh, sc)
            (th2 * 1.5 + tc2 * tc2).sum().backward()
            (sh2 * 1.5 + sc2 * sc2).sum().backward()
            np.testing.assert_allclose(npy(sc2), tc2.detach().numpy(), atol=tol, rtol=tol)
            np.testing.assert_allclose(npy(sc.grad), tc.grad.numpy(), atol=tol, rtol=tol)
        else:
            th2 = cell(tx, th)
            sh2 = F.gru_cell(gi, gh, sh)
            (th2 * th2).sum().backward()
            (sh2 * sh2).sum().backward()
        np.testing.assert_allclose(npy(sh2), th2.detach().numpy(), atol=tol, rtol=tol)
        np.testing.assert_allclose(npy(sh.grad), th.grad.numpy(), atol=tol, rtol=tol)
