"""Recurrent layers and cells, and ``sneppx_nn.utils``: parity with PyTorch (weights copied across,
outputs and gradients compared), finite differences and key names."""

import numpy as np
import pytest
import sneppx_core as sx

import sneppx_nn as nn
from conftest import numeric_grad

RNG = np.random.default_rng(0)


@pytest.fixture
def torch():
    """The torch module, or a skip when it is not installed."""
    return pytest.importorskip("torch")


def _copy(tm, sm):
    sd = {k: sx.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()}
    assert list(sd) == list(sm.state_dict())
    sm.load_state_dict(sd)


def _compare(t_out, s_out, tol=1e-10):
    if isinstance(t_out, (tuple, list)):
        for a, b in zip(t_out, s_out):
            _compare(a, b, tol)
        return
    t_out = getattr(t_out, "data", t_out) if not hasattr(t_out, "numpy") or hasattr(t_out, "batch_sizes") else t_out
    s_out = s_out.data if isinstance(s_out, nn.utils.rnn.PackedSequence) else s_out
    np.testing.assert_allclose(s_out.detach().numpy(), t_out.detach().numpy(), rtol=tol, atol=tol)


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat(o)]
    return [out.data if hasattr(out, "batch_sizes") else out]


CONFIGS = [
    ("LSTM", {}, (4, 3, 5)),
    ("LSTM", {"num_layers": 2, "bidirectional": True}, (4, 3, 5)),
    ("LSTM", {"batch_first": True, "bias": False}, (3, 4, 5)),
    ("LSTM", {"num_layers": 2}, (4, 5)),
    ("LSTM", {"num_layers": 2, "proj_size": 3, "bidirectional": True}, (4, 3, 5)),
    ("GRU", {}, (4, 3, 5)),
    ("GRU", {"num_layers": 3, "bidirectional": True, "batch_first": True}, (2, 6, 5)),
    ("GRU", {"bias": False}, (4, 5)),
    ("RNN", {}, (4, 3, 5)),
    ("RNN", {"nonlinearity": "relu", "num_layers": 2, "bidirectional": True}, (4, 3, 5)),
]


@pytest.mark.parity
@pytest.mark.parametrize("cls,kw,shape", CONFIGS)
@pytest.mark.parametrize("with_state", [False, True])
def test_recurrent_layers_match_torch(torch, cls, kw, shape, with_state):
    tm = getattr(torch.nn, cls)(5, 7, **kw).double()
    sm = getattr(nn, cls)(5, 7, **kw, dtype=sx.float64)
    _copy(tm, sm)
    x = RNG.standard_normal(shape)
    tx, sxx = torch.tensor(x, requires_grad=True), sx.tensor(x, requires_grad=True)
    targs, sargs = [tx], [sxx]
    if with_state:
        layers = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
        sizes = [kw.get("proj_size") or 7, 7][: 2 if cls == "LSTM" else 1]
        batch = () if len(shape) == 2 else (shape[0 if kw.get("batch_first") else 1],)
        hs = [RNG.standard_normal((layers, *batch, size)) for size in sizes]
        th = [torch.tensor(h, requires_grad=True) for h in hs]
        sh = [sx.tensor(h, requires_grad=True) for h in hs]
        targs.append(tuple(th) if cls == "LSTM" else th[0])
        sargs.append(tuple(sh) if cls == "LSTM" else sh[0])
    t_out, s_out = tm(*targs), sm(*sargs)
    _compare(t_out, s_out)
    ws = [RNG.standard_normal(tuple(t.shape)) for t in _flat(t_out)]
    sum(((t * torch.tensor(w)).sum() for t, w in zip(_flat(t_out), ws))).backward()
    sum(((t * sx.tensor(w)).sum() for t, w in zip(_flat(s_out), ws))).backward()
    np.testing.assert_allclose(sxx.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-10)
    for (name, p), q in zip(tm.named_parameters(), sm.parameters()):
        np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=1e-9, atol=1e-10, err_msg=name)
    if with_state:
        for a, b in zip(th, sh):
            np.testing.assert_allclose(b.grad.numpy(), a.grad.numpy(), rtol=1e-9, atol=1e-10)


@pytest.mark.parity
@pytest.mark.parametrize("cls", ["RNNCell", "LSTMCell", "GRUCell"])
@pytest.mark.parametrize("batched", [True, False])
def test_cells_match_torch(torch, cls, batched):
    tm, sm = getattr(torch.nn, cls)(4, 6).double(), getattr(nn, cls)(4, 6, dtype=sx.float64)
    _copy(tm, sm)
    x = RNG.standard_normal((3, 4) if batched else (4,))
    h = RNG.standard_normal((3, 6) if batched else (6,))
    tx, sxx = torch.tensor(x, requires_grad=True), sx.tensor(x, requires_grad=True)
    th = (torch.tensor(h), torch.tensor(h * 0.5)) if cls == "LSTMCell" else torch.tensor(h)
    sh = (sx.tensor(h), sx.tensor(h * 0.5)) if cls == "LSTMCell" else sx.tensor(h)
    t_out, s_out = tm(tx, th), sm(sxx, sh)
    _compare(t_out, s_out)
    sum(t.sum() for t in _flat(t_out)).backward()
    sum(t.sum() for t in _flat(s_out)).backward()
    np.testing.assert_allclose(sxx.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-10)
    for p, q in zip(tm.parameters(), sm.parameters()):
        np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=1e-9, atol=1e-10)
    _compare(tm(tx), sm(sxx))  # default zero state


@pytest.mark.parity
@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
def test_packed_sequences_match_torch(torch, cls):
    tm = getattr(torch.nn, cls)(3, 4, num_layers=2, bidirectional=True).double()
    sm = getattr(nn, cls)(3, 4, num_layers=2, bidirectional=True, dtype=sx.float64)
    _copy(tm, sm)
    x, lengths = RNG.standard_normal((5, 3, 3)), [2, 5, 3]
    tx, sxx = torch.tensor(x, requires_grad=True), sx.tensor(x, requires_grad=True)
    tp = torch.nn.utils.rnn.pack_padded_sequence(tx, lengths, enforce_sorted=False)
    sp = nn.utils.rnn.pack_padded_sequence(sxx, lengths, enforce_sorted=False)
    np.testing.assert_array_equal(sp.batch_sizes.numpy(), tp.batch_sizes.numpy())
    np.testing.assert_array_equal(sp.sorted_indices.numpy(), tp.sorted_indices.numpy())
    t_out, s_out = tm(tp), sm(sp)
    _compare(t_out, s_out)
    t_pad, t_len = torch.nn.utils.rnn.pad_packed_sequence(t_out[0], batch_first=True, total_length=6)
    s_pad, s_len = nn.utils.rnn.pad_packed_sequence(s_out[0], batch_first=True, total_length=6)
    _compare(t_pad, s_pad)
    assert s_len.tolist() == t_len.tolist()
    t_pad.sum().backward()
    s_pad.sum().backward()
    np.testing.assert_allclose(sxx.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-10)


@pytest.mark.parity
def test_pad_and_pack_sequence_match_torch(torch):
    seqs = [RNG.standard_normal((n, 2)) for n in (4, 2, 3)]
    for kw in ({}, {"batch_first": True, "padding_value": -1.0}, {"padding_side": "left"}):
        t = torch.nn.utils.rnn.pad_sequence([torch.tensor(s) for s in seqs], **kw)
        s = nn.utils.rnn.pad_sequence([sx.tensor(s) for s in seqs], **kw)
        np.testing.assert_array_equal(s.numpy(), t.numpy())
    with pytest.raises(RuntimeError, match="not sorted in decreasing order"):
        nn.utils.rnn.pack_sequence([sx.tensor(s) for s in seqs])
    t = torch.nn.utils.rnn.pack_sequence([torch.tensor(s) for s in seqs], enforce_sorted=False)
    s = nn.utils.rnn.pack_sequence([sx.tensor(s) for s in seqs], enforce_sorted=False)
    np.testing.assert_array_equal(s.data.numpy(), t.data.numpy())
    back = nn.utils.rnn.unpad_sequence(nn.utils.rnn.pad_sequence([sx.tensor(s) for s in seqs]), [4, 2, 3])
    for a, b in zip(back, seqs):
        np.testing.assert_array_equal(a.numpy(), b)


def test_lstm_cell_gradient_against_finite_differences():
    cell = nn.LSTMCell(3, 2, dtype=sx.float64)
    x0 = RNG.standard_normal((2, 3))
    w = {k: v.detach().numpy().copy() for k, v in cell.state_dict().items()}

    def sig(v):
        return 1 / (1 + np.exp(-v))

    def loss(x):
        g = x @ w["weight_ih"].T + w["bias_ih"] + w["bias_hh"]  # zero initial state
        i, _, gg, o = np.split(g, 4, axis=1)
        c = sig(i) * np.tanh(gg)
        return (sig(o) * np.tanh(c)).sum() + c.sum()

    x = sx.tensor(x0, requires_grad=True)
    h, c = cell(x)
    (h.sum() + c.sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), numeric_grad(loss, x0.copy()), rtol=1e-6, atol=1e-8)


def test_parameter_names_shapes_and_init():
    m = nn.LSTM(3, 5, num_layers=2, bidirectional=True)
    names = [k for k, _ in m.named_parameters()]
    assert names[:5] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_ih_l0_reverse"]
    assert m.weight_ih_l1.shape == (20, 10) and m.weight_hh_l1_reverse.shape == (20, 5)
    assert nn.GRU(3, 5).weight_ih_l0.shape == (15, 3) and nn.RNN(3, 5, bias=False).state_dict().keys() == {
        "weight_ih_l0", "weight_hh_l0"}
    bound = 1 / np.sqrt(5)
    assert all(np.abs(p.detach().numpy()).max() <= bound for p in m.parameters())
    m.flatten_parameters()
    assert len(m.all_weights) == 4 and m.all_weights[1][0] is m.weight_ih_l0_reverse


def test_dropout_between_layers_only_in_training():
    m = nn.GRU(3, 4, num_layers=2, dropout=0.5)
    x = sx.randn(5, 2, 3)
    m.eval()
    a, b = m(x)[0].detach(), m(x)[0].detach()
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    m.train()
    sx.manual_seed(0)
    c = m(x)[0]
    assert not np.allclose(c.detach().numpy(), a.numpy())


def test_bad_input_errors():
    with pytest.raises(ValueError, match=r"\[LSTM\] expected input of shape \(L, N, 3\).*got \(2, 2, 4\)"):
        nn.LSTM(3, 4)(sx.zeros(2, 2, 4))
    with pytest.raises(ValueError, match=r"\[GRU\] expected hidden state of shape \(1, 2, 4\), got \(1, 3, 4\)"):
        nn.GRU(3, 4)(sx.zeros(5, 2, 3), sx.zeros(1, 3, 4))
    with pytest.raises(TypeError, match=r"\[LSTM\] hx must be a tuple"):
        nn.LSTM(3, 4)(sx.zeros(5, 2, 3), sx.zeros(1, 2, 4))
    with pytest.raises(ValueError, match=r"proj_size must be an int in \[0, hidden_size\)"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="only supported by LSTM"):
        nn.RNNBase("GRU", 3, 4, proj_size=2)
    with pytest.raises(ValueError, match="nonlinearity"):
        nn.RNNCell(3, 4, nonlinearity="gelu")


@pytest.mark.parity
def test_clip_grad_and_parameter_vectors_match_torch(torch):
    shapes = [(3, 4), (5,)]
    grads = [RNG.standard_normal(s) * 3 for s in shapes]
    for norm_type in (2.0, 1.0, float("inf")):
        sp = [sx.zeros(*s, requires_grad=True) for s in shapes]
        tp = [torch.zeros(*s, requires_grad=True) for s in shapes]
        for p, q, g in zip(sp, tp, grads):
            p.grad, q.grad = sx.tensor(g, dtype=sx.float32), torch.tensor(g, dtype=torch.float32)
        a = nn.utils.clip_grad_norm_(sp, 1.5, norm_type=norm_type)
        b = torch.nn.utils.clip_grad_norm_(tp, 1.5, norm_type=norm_type)
        assert a.item() == pytest.approx(b.item(), rel=1e-5)
        for p, q in zip(sp, tp):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)
    nn.utils.clip_grad_value_(sp, 0.1)
    torch.nn.utils.clip_grad_value_(tp, 0.1)
    for p, q in zip(sp, tp):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6)
    m = nn.Linear(3, 2)
    v = nn.utils.parameters_to_vector(m.parameters())
    assert v.shape == (8,)
    np.testing.assert_array_equal(v.detach().numpy()[:6], m.weight.detach().numpy().reshape(-1))
    nn.utils.vector_to_parameters(sx.arange(8.0), m.parameters())
    assert m.bias.tolist() == [6.0, 7.0]
    with pytest.raises(ValueError, match=r"\[vector_to_parameters\] the vector has 3 elements, the parameters 8"):
        nn.utils.vector_to_parameters(sx.zeros(3), m.parameters())
