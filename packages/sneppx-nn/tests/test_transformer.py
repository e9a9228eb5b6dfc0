"""TransformerBlock and the Transformer language model: NumPy references, KV cache, padding, checkpoints."""

import numpy as np
import pytest
import sneppx_core as sx

import sneppx_nn as nn
from conftest import tensor, to_np
from reference import block_ref, causal_np, gpt_ref


def _ids(rng, b, t, vocab=50):
    return rng.integers(0, vocab, (b, t))


def _model(positional="learned", norm="layernorm", tie=True, dtype=sx.float64, **kw):
    sx.manual_seed(0)
    cfg = dict(vocab_size=50, d_model=16, n_heads=4, n_layers=2, max_seq_len=32)
    cfg.update(kw)
    return nn.Transformer(**cfg, norm=norm, positional=positional, tie_weights=tie, dtype=dtype).eval()


@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("norm,activation,causal", [("layernorm", "gelu", False), ("rmsnorm", "silu", True),
                                                     ("layernorm", "relu", True)])
def test_block_matches_reference(norm_first, norm, activation, causal, rng):
    blk = nn.TransformerBlock(8, 2, d_ff=12, activation=activation, norm=norm, norm_first=norm_first,
                              causal=causal, dtype=sx.float64)
    with sx.no_grad():  # non-trivial norm weights and biases
        for name, p in blk.named_parameters():
            if "norm" in name or name.endswith("bias"):
                p.copy_(tensor(rng.standard_normal(p.shape), dtype=sx.float64))
    x = rng.standard_normal((2, 5, 8))
    out = blk(tensor(x, dtype=sx.float64))
    mask = causal_np(5) if causal else None
    np.testing.assert_allclose(to_np(out), block_ref(blk, x, mask), rtol=1e-9, atol=1e-10)
    kpm = np.array([[False] * 4 + [True], [False] * 5])
    out = blk(tensor(x, dtype=sx.float64), key_padding_mask=tensor(kpm), is_causal=False)
    pad = np.where(kpm, -np.inf, 0.0)[:, None, None, :]
    np.testing.assert_allclose(to_np(out), block_ref(blk, x, pad), rtol=1e-9, atol=1e-10)


def test_block_state_dict_keys_follow_encoder_layer():
    keys = list(nn.TransformerBlock(8, 2).state_dict())
    assert keys == ["self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
                    "self_attn.out_proj.bias", "linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias",
                    "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"]
    assert nn.TransformerBlock(8, 2).linear1.out_features == 32


@pytest.mark.parametrize("positional,norm,tie", [("learned", "layernorm", True), ("rope", "rmsnorm", False),
                                                 ("rope", "layernorm", True)])
def test_transformer_matches_reference(positional, norm, tie, rng):
    model = _model(positional, norm, tie)
    ids = _ids(rng, 2, 7)
    logits = model(tensor(ids, dtype=sx.int64))
    assert logits.shape == (2, 7, 50)
    np.testing.assert_allclose(to_np(logits), gpt_ref(model, ids), rtol=1e-8, atol=1e-9)
    assert ("lm_head.weight" in model.state_dict()) is (not tie)


@pytest.mark.parametrize("positional", ["learned", "rope"])
def test_kv_cache_steps_match_full_forward(positional, rng):
    model = _model(positional, dtype=sx.float32)
    ids = _ids(rng, 2, 10)
    full = to_np(model(tensor(ids, dtype=sx.int64)))
    cache = model.new_cache(2, 12)
    pieces = [(0, 4), (4, 5), (5, 7), (7, 8), (8, 9), (9, 10)]  # prefill, single steps and a 2-token chunk
    with sx.no_grad():
        for a, b in pieces:
            step = to_np(model(tensor(ids[:, a:b], dtype=sx.int64), cache=cache))
            np.testing.assert_allclose(step, full[:, a:b], rtol=1e-5, atol=1e-5, err_msg=f"tokens {a}:{b}")
    assert cache.length == 10
    cache.reset()
    assert cache.length == 0
    with pytest.raises(ValueError, match="max_len"):
        model(tensor(ids, dtype=sx.int64), cache=model.new_cache(2, 5))
    with pytest.raises(ValueError, match="batch size"):
        model(tensor(ids[:1], dtype=sx.int64), cache=model.new_cache(2, 12))


@pytest.mark.parametrize("positional", ["learned", "rope"])
def test_left_padding_with_attention_mask(positional, rng):
    model = _model(positional)
    short, long = _ids(rng, 1, 4)[0], _ids(rng, 1, 7)[0]
    batch = np.stack([np.concatenate([np.zeros(3, dtype=np.int64), short]), long])
    mask = np.array([[0, 0, 0, 1, 1, 1, 1], [1] * 7])
    logits = to_np(model(tensor(batch, dtype=sx.int64), attention_mask=tensor(mask, dtype=sx.int64)))
    alone = to_np(model(tensor(short[None], dtype=sx.int64)))
    np.testing.assert_allclose(logits[0, 3:], alone[0], rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(logits[1], to_np(model(tensor(long[None], dtype=sx.int64)))[0], rtol=1e-8, atol=1e-9)
    assert np.isfinite(logits).all()
    # continue both rows with a cache, feeding the growing mask
    cache = model.new_cache(2, 9)
    with sx.no_grad():
        model(tensor(batch, dtype=sx.int64), cache=cache, attention_mask=tensor(mask, dtype=sx.int64))
        nxt = np.array([[5], [6]])
        mask2 = np.concatenate([mask, np.ones((2, 1), dtype=np.int64)], 1)
        step = to_np(model(tensor(nxt, dtype=sx.int64), cache=cache, attention_mask=tensor(mask2, dtype=sx.int64)))
    ref = to_np(model(tensor(np.concatenate([short, [5]])[None], dtype=sx.int64)))
    np.testing.assert_allclose(step[0, 0], ref[0, -1], rtol=1e-8, atol=1e-9)


def test_causality(rng):
    model = _model()
    ids = _ids(rng, 1, 6)
    changed = ids.copy()
    changed[0, 4] = (changed[0, 4] + 1) % 50
    a = to_np(model(tensor(ids, dtype=sx.int64)))
    b = to_np(model(tensor(changed, dtype=sx.int64)))
    np.testing.assert_array_equal(a[:, :4], b[:, :4])
    assert np.abs(a[:, 4:] - b[:, 4:]).max() > 1e-6


@pytest.mark.parametrize("positional", ["learned", "rope"])
def test_from_checkpoint_needs_no_other_information(positional, tmp_path, rng):
    model = _model(positional, norm="rmsnorm", tie=False, d_ff=24)
    path = tmp_path / "lm.safetensors"
    model.save_checkpoint(path)
    back = nn.Transformer.from_checkpoint(path)
    assert back.positional == positional and back.blocks[0].d_ff == 24 and back.lm_head is not None
    ids = tensor(_ids(rng, 2, 5), dtype=sx.int64)
    np.testing.assert_array_equal(to_np(back(ids)), to_np(model(ids)))
    assert back.tok_emb.weight.dtype == sx.float64


def test_training_reduces_loss():
    model = _model(dtype=sx.float32, dropout=0.1).train()
    loss_fn = nn.CrossEntropyLoss()
    rng = np.random.default_rng(1)
    ids = tensor(_ids(rng, 4, 9), dtype=sx.int64)
    inputs, targets = ids[:, :-1], ids[:, 1:]
    losses = []
    for _ in range(30):
        model.zero_grad()
        loss = loss_fn(model(inputs).reshape((-1, 50)), targets.reshape((-1,)))
        loss.backward()
        assert all(p.grad is not None for p in model.parameters())
        with sx.no_grad():
            for p in model.parameters():
                p.copy_(p - 0.5 * p.grad)
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


def test_argument_errors():
    with pytest.raises(ValueError, match="positional"):
        nn.Transformer(10, 8, 2, 1, positional="alibi")
    with pytest.raises(ValueError, match="multiple"):
        nn.Transformer(10, 9, 2, 1)
    with pytest.raises(ValueError, match="norm"):
        nn.TransformerBlock(8, 2, norm="batchnorm")
    with pytest.raises(ValueError, match="activation"):
        nn.TransformerBlock(8, 2, activation="tanh")
    model = nn.Transformer(10, 8, 2, 1, max_seq_len=4)
    with pytest.raises(ValueError, match="int64"):
        model(sx.zeros(1, 3))
    with pytest.raises(ValueError, match="max_seq_len"):
        model(sx.zeros(1, 5, dtype=sx.int64))
    with pytest.raises(ValueError, match="attention_mask"):
        model(sx.zeros(1, 3, dtype=sx.int64), attention_mask=sx.ones(1, 2, dtype=sx.int64))
    with pytest.raises(ValueError, match="max_seq_len"):
        model.new_cache(1, 8)
