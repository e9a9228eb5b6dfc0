"""TransformerEncoder/Decoder layers: PyTorch parity (weights copied, outputs and gradients
compared), state_dict keys, masks and argument errors."""

import numpy as np
import pytest
import sneppx_core as sx

import sneppx_nn as nn

RNG = np.random.default_rng(1)


@pytest.fixture
def torch():
    """The torch module, or a skip when it is not installed."""
    return pytest.importorskip("torch")


def _copy(tm, sm):
    sd = {k: sx.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()}
    assert list(sd) == list(sm.state_dict())
    sm.load_state_dict(sd)


def _check_grads(tm, sm, pairs):
    for a, b in pairs:
        np.testing.assert_allclose(b.grad.numpy(), a.grad.numpy(), rtol=1e-8, atol=1e-10)
    for (name, p), q in zip(tm.named_parameters(), sm.parameters()):
        np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=1e-8, atol=1e-10, err_msg=name)


def _masks(torch, lib, S, N, kind):
    if kind is None:
        return {}
    causal = np.triu(np.ones((S, S), bool), 1)
    pad = np.zeros((N, S), bool)
    pad[0, -2:] = True
    if kind == "bool":
        return {"src_mask": lib.tensor(causal), "src_key_padding_mask": lib.tensor(pad)}
    return {"src_mask": lib.tensor(np.where(causal, -np.inf, 0.0)), "is_causal": True}


@pytest.mark.parity
@pytest.mark.parametrize("kw", [
    {}, {"norm_first": True, "activation": "gelu"}, {"batch_first": True, "bias": False},
])
@pytest.mark.parametrize("masks", [None, "bool", "float_causal"])
def test_encoder_matches_torch(torch, kw, masks):
    tl = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, **kw)
    tm = torch.nn.TransformerEncoder(tl, 2, norm=torch.nn.LayerNorm(8), enable_nested_tensor=False).double()
    sl = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, **kw)
    sm = nn.TransformerEncoder(sl, 2, norm=nn.LayerNorm(8)).to(sx.float64)
    _copy(tm, sm)
    S, N = 5, 3
    x = RNG.standard_normal((N, S, 8) if kw.get("batch_first") else (S, N, 8))
    tx, sxx = torch.tensor(x, requires_grad=True), sx.tensor(x, requires_grad=True)
    tmk = _masks(torch, torch, S, N, masks)
    smk = _masks(torch, sx, S, N, masks)
    rename = {"src_mask": "mask"}
    t_out = tm(tx, **{rename.get(k, k): v for k, v in tmk.items()})
    s_out = sm(sxx, **{rename.get(k, k): v for k, v in smk.items()})
    np.testing.assert_allclose(s_out.detach().numpy(), t_out.detach().numpy(), rtol=1e-9, atol=1e-10)
    w = RNG.standard_normal(x.shape)
    (t_out * torch.tensor(w)).sum().backward()
    (s_out * sx.tensor(w)).sum().backward()
    _check_grads(tm, sm, [(tx, sxx)])


@pytest.mark.parity
@pytest.mark.parametrize("kw", [{}, {"norm_first": True, "batch_first": True}])
def test_decoder_matches_torch(torch, kw):
    tl = torch.nn.TransformerDecoderLayer(8, 4, dim_feedforward=12, dropout=0.0, **kw)
    tm = torch.nn.TransformerDecoder(tl, 2).double()
    sm = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 4, dim_feedforward=12, dropout=0.0, **kw), 2)
    sm = sm.to(sx.float64)
    _copy(tm, sm)
    T, S, N = 4, 6, 2
    bf = kw.get("batch_first")
    tgt = RNG.standard_normal((N, T, 8) if bf else (T, N, 8))
    mem = RNG.standard_normal((N, S, 8) if bf else (S, N, 8))
    causal = np.triu(np.ones((T, T), bool), 1)
    mpad = np.zeros((N, S), bool)
    mpad[1, :2] = True
    targs = [torch.tensor(a, requires_grad=True) for a in (tgt, mem)]
    sargs = [sx.tensor(a, requires_grad=True) for a in (tgt, mem)]
    t_out = tm(*targs, tgt_mask=torch.tensor(causal), memory_key_padding_mask=torch.tensor(mpad))
    s_out = sm(*sargs, tgt_mask=sx.tensor(causal), memory_key_padding_mask=sx.tensor(mpad))
    np.testing.assert_allclose(s_out.detach().numpy(), t_out.detach().numpy(), rtol=1e-9, atol=1e-10)
    t_out.sum().backward()
    s_out.sum().backward()
    _check_grads(tm, sm, list(zip(targs, sargs)))


@pytest.mark.parity
def test_state_dict_keys_and_defaults_match_torch(torch):
    t = torch.nn.TransformerDecoderLayer(16, 4)
    s = nn.TransformerDecoderLayer(16, 4)
    assert list(s.state_dict()) == list(t.state_dict())
    assert [tuple(v.shape) for v in s.state_dict().values()] == [tuple(v.shape) for v in t.state_dict().values()]
    assert s.linear1.out_features == 2048 and s.dropout.p == 0.1 and s.norm1.eps == 1e-5
    te = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(16, 4), 3)
    se = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4), 3)
    assert list(se.state_dict()) == list(te.state_dict())


def test_layers_are_independent_copies_and_dropout_follows_mode():
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, dim_feedforward=8, dropout=0.5), 2)
    assert enc.layers[0].linear1.weight is not enc.layers[1].linear1.weight
    x = sx.randn(3, 2, 8)
    enc.eval()
    a, b = enc(x).detach(), enc(x).detach()
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    enc.train()
    assert not np.allclose(enc(x).detach().numpy(), a.numpy())


def test_bad_arguments():
    with pytest.raises(ValueError, match="activation should be relu/gelu"):
        nn.TransformerEncoderLayer(8, 2, activation="swish")
    with pytest.raises(ValueError, match=r"embed_dim \(8\) must be a positive multiple of num_heads \(3\)"):
        nn.TransformerEncoderLayer(8, 3)
    with pytest.raises(ValueError, match=r"\[TransformerEncoder\] num_layers"):
        nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2), 0)
    layer = nn.TransformerEncoderLayer(8, 2, activation=lambda t: t * 2, dropout=0.0)
    assert layer(sx.randn(3, 8)).shape == (3, 8)
