"""Transformer.from_pretrained: GPT-2 folders in the Hugging Face layout, refusals, and fine-tuning."""

import json

import numpy as np
import pytest
import sneppx_core as sx
from safetensors.numpy import save_file

import sneppx_nn as nn

D, VOCAB, LAYERS, POS = 16, 37, 2, 24


def _gpt2_folder(folder, shards=1, prefix=""):
    """Random GPT-2 weights (Conv1D layout) in ``folder``; returns the arrays."""
    rng = np.random.default_rng(0)
    r = lambda *s: (rng.normal(size=s) * 0.3).astype(np.float32)  # noqa: E731
    arrays = {"wte.weight": r(VOCAB, D), "wpe.weight": r(POS, D), "ln_f.weight": 1 + r(D), "ln_f.bias": r(D)}
    for i in range(LAYERS):
        for name, shape in [("ln_1.weight", (D,)), ("ln_1.bias", (D,)), ("ln_2.weight", (D,)), ("ln_2.bias", (D,)),
                            ("attn.c_attn.weight", (D, 3 * D)), ("attn.c_attn.bias", (3 * D,)),
                            ("attn.c_proj.weight", (D, D)), ("attn.c_proj.bias", (D,)),
                            ("mlp.c_fc.weight", (D, 4 * D)), ("mlp.c_fc.bias", (4 * D,)),
                            ("mlp.c_proj.weight", (4 * D, D)), ("mlp.c_proj.bias", (D,))]:
            arrays[f"h.{i}.{name}"] = r(*shape)
    named = {prefix + k: v for k, v in arrays.items()}
    keys = sorted(named)
    groups = [keys[j::shards] for j in range(shards)]
    if shards == 1:
        save_file(named, str(folder / "model.safetensors"))
    else:
        weight_map = {}
        for j, group in enumerate(groups):
            fname = f"model-{j + 1:05d}-of-{shards:05d}.safetensors"
            save_file({k: named[k] for k in group}, str(folder / fname))
            weight_map.update({k: fname for k in group})
        (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    (folder / "config.json").write_text(json.dumps({"model_type": "gpt2", "n_embd": D, "n_head": 4, "n_layer": LAYERS,
                                                    "n_positions": POS, "vocab_size": VOCAB}))
    return arrays


@pytest.mark.parametrize("shards, prefix", [(1, ""), (3, "transformer.")])
def test_gpt2_weights_land_in_the_right_places(tmp_path, shards, prefix):
    arrays = _gpt2_folder(tmp_path, shards, prefix)
    model = nn.Transformer.from_pretrained(tmp_path)
    assert (model.positional, model.tie_weights, model.blocks[0].activation) == ("learned", True, "gelu_tanh")
    state = model.state_dict()
    np.testing.assert_array_equal(state["tok_emb.weight"].numpy(), arrays["wte.weight"])
    in_proj = state["blocks.1.self_attn.in_proj_weight"].numpy()
    np.testing.assert_array_equal(in_proj, arrays["h.1.attn.c_attn.weight"].T)
    np.testing.assert_array_equal(state["blocks.0.linear2.weight"].numpy(), arrays["h.0.mlp.c_proj.weight"].T)
    np.testing.assert_array_equal(state["blocks.0.norm2.bias"].numpy(), arrays["h.0.ln_2.bias"])


def test_fine_tune_and_save_back(tmp_path):
    _gpt2_folder(tmp_path)
    model = nn.Transformer.from_pretrained(tmp_path)
    ids = sx.Tensor.from_numpy(np.random.default_rng(1).integers(0, VOCAB, (2, 9)))
    logits = model(ids)
    loss = sx.functional.cross_entropy(logits[:, :-1].reshape((-1, VOCAB)), ids[:, 1:].reshape((-1,)))
    loss.backward()
    with sx.no_grad():
        for p in model.parameters():
            p.sub_(p.grad * 0.1)
    out = tmp_path / "tuned"
    out.mkdir()
    model.save_checkpoint(str(out / "model.safetensors"))
    again = nn.Transformer.from_pretrained(out)
    with sx.no_grad():
        np.testing.assert_array_equal(again(ids).numpy(), model(ids).numpy())


def test_families_it_cannot_express_are_refused(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama"}))
    with pytest.raises(ValueError, match="gated.*load_model"):
        nn.Transformer.from_pretrained(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert"}))
    with pytest.raises(ValueError, match="'bert' is not supported"):
        nn.Transformer.from_pretrained(tmp_path)
    _gpt2_folder(tmp_path)
    cfg = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**cfg, "layer_norm_epsilon": 1e-6}))
    with pytest.raises(ValueError, match="eps"):
        nn.Transformer.from_pretrained(tmp_path)
    with pytest.raises(FileNotFoundError):
        nn.Transformer.from_pretrained(tmp_path / "absent")


@pytest.mark.parity
def test_logits_match_transformers_gpt2(tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    cfg = transformers.GPT2Config(n_embd=D, n_head=4, n_layer=LAYERS, n_positions=POS, vocab_size=VOCAB,
                                  initializer_range=0.2)
    torch.manual_seed(0)
    ref = transformers.GPT2LMHeadModel(cfg).eval()
    ref.save_pretrained(tmp_path)
    ids = np.random.default_rng(2).integers(0, VOCAB, (2, 15))
    with torch.no_grad():
        want = ref(torch.from_numpy(ids)).logits.numpy()
    model = nn.Transformer.from_pretrained(tmp_path).eval()
    with sx.no_grad():
        got = model(sx.Tensor.from_numpy(ids)).numpy()
    assert np.abs(got - want).max() / np.abs(want).max() <= 1e-4
