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


@pytest.mark.parity
@pytest.mark.parametrize("batch_first", [False, True])
def test_encoder_decoder_transformer_matches_torch(torch, batch_first):
    """``nn.Transformer`` called as PyTorch's: the same keys, and with PyTorch's weights the same outputs and
    gradients (float64), masks included."""
    kw = dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=16, dropout=0.0,
              batch_first=batch_first)
    torch.manual_seed(0)
    tm = torch.nn.Transformer(**kw).double()
    sm = nn.Transformer(**kw).to(sx.float64)
    assert sm.encoder_decoder and isinstance(sm.encoder, nn.TransformerEncoder)
    _copy(tm, sm)
    S, T, N = 5, 4, 3
    src = RNG.standard_normal((N, S, 8) if batch_first else (S, N, 8))
    tgt = RNG.standard_normal((N, T, 8) if batch_first else (T, N, 8))
    pad = np.zeros((N, S), bool)
    pad[1, -2:] = True
    tsrc, ttgt = (torch.tensor(a, requires_grad=True) for a in (src, tgt))
    ssrc, stgt = (sx.tensor(a, requires_grad=True) for a in (src, tgt))
    tmask = torch.nn.Transformer.generate_square_subsequent_mask(T, dtype=torch.float64)
    smask = nn.Transformer.generate_square_subsequent_mask(T, dtype=sx.float64)
    np.testing.assert_array_equal(smask.numpy(), tmask.numpy())
    to = tm(tsrc, ttgt, tgt_mask=tmask, src_key_padding_mask=torch.tensor(pad),
            memory_key_padding_mask=torch.tensor(pad))
    so = sm(ssrc, stgt, tgt_mask=smask, src_key_padding_mask=sx.tensor(pad), memory_key_padding_mask=sx.tensor(pad))
    np.testing.assert_allclose(so.detach().numpy(), to.detach().numpy(), rtol=1e-10, atol=1e-12)
    to.sum().backward()
    so.sum().backward()
    _check_grads(tm, sm, [(tsrc, ssrc), (ttgt, stgt)])


def test_encoder_decoder_transformer_forms_and_errors():
    """Which constructor a call means; a subclass written for PyTorch (word_language_model's TransformerModel);
    PyTorch's initialisation; the shape errors; the config a checkpoint records rebuilds it."""
    default = nn.Transformer()
    assert default.encoder_decoder and default.d_model == 512 and len(default.encoder.layers) == 6
    lm = nn.Transformer(50, 16, 2, 2)
    assert not lm.encoder_decoder and lm(sx.tensor([[1, 2, 3]])).shape == (1, 3, 50)
    assert not nn.Transformer(vocab_size=50, d_model=16, n_heads=2, n_layers=1).encoder_decoder

    class TransformerModel(nn.Transformer):
        def __init__(self, ntoken, ninp, nhead, nhid, nlayers):
            super().__init__(d_model=ninp, nhead=nhead, dim_feedforward=nhid, num_encoder_layers=nlayers)
            self.emb, self.out = nn.Embedding(ntoken, ninp), nn.Linear(ninp, ntoken)

        def forward(self, src):
            return self.out(self.encoder(self.emb(src), mask=self.generate_square_subsequent_mask(len(src))))

    m = TransformerModel(30, 8, 2, 16, 2)
    assert m(sx.tensor([[1], [2], [3]])).shape == (3, 1, 30)
    w = m.encoder.layers[0].linear1.weight.detach().numpy()  # Xavier-uniform: |w| <= sqrt(6 / (16 + 8))
    assert np.abs(w).max() <= np.sqrt(6 / 24) and w.std() > 0.2
    with pytest.raises(RuntimeError, match="batch number of src and tgt"):
        default(sx.zeros(3, 2, 512), sx.zeros(3, 4, 512))
    with pytest.raises(RuntimeError, match="feature number"):
        default(sx.zeros(3, 2, 8), sx.zeros(3, 2, 8))
    with pytest.raises(TypeError, match="only the language model"):
        default.new_cache(1, 4)
    small = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=8)
    rebuilt = type(small)(*small._config["args"], **small._config["kwargs"])
    assert rebuilt.encoder_decoder and list(rebuilt.state_dict()) == list(small.state_dict())
