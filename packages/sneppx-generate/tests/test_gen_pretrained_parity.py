"""load_model against transformers: tiny random models saved with save_pretrained, same logits and
the same greedy continuations."""

import numpy as np
import pytest
import sneppx_core as sx

from hf_folders import HF_CONFIGS, tiny_hf_model
from sneppx_generate import GenerationConfig, generate, load_model

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytestmark = pytest.mark.parity

VOCAB = 89


def _ids(batch=2, length=20, seed=0):
    return np.random.default_rng(seed).integers(3, VOCAB, (batch, length)).astype(np.int64)


def _rel_err(ours, ref):
    return float(np.abs(ours - ref).max() / np.abs(ref).max())


def _reference(folder, dtype, ids):
    """Logits of the folder's model loaded by transformers in ``dtype`` (as users load it)."""
    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=dtype).eval()
    with torch.no_grad():
        return model(torch.from_numpy(ids)).logits.float().numpy()


def _logits(model, ids):
    out = model(sx.Tensor.from_numpy(ids.copy()))
    return out.float().numpy() if out.dtype != sx.float32 else out.numpy()


@pytest.mark.parametrize("family", sorted(HF_CONFIGS))
def test_logits_and_greedy_match_transformers(family, tmp_path):
    ref_model = tiny_hf_model(family, tmp_path)
    ids = _ids()
    with torch.no_grad():
        ref = ref_model(torch.from_numpy(ids)).logits.numpy()
    model = load_model(tmp_path)
    assert _rel_err(_logits(model, ids), ref) <= 1e-4
    prompt = ids[:, :8]
    with torch.no_grad():
        ref_out = ref_model.generate(torch.from_numpy(prompt), attention_mask=torch.ones_like(torch.from_numpy(prompt)),
                                     do_sample=False, max_new_tokens=24, min_new_tokens=24).numpy()
    ours = generate(model, prompt, GenerationConfig(max_new_tokens=24, min_new_tokens=24))
    assert ours["output_ids"].numpy().tolist() == ref_out.tolist()


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_cached_decoding_matches_full_forward(family, tmp_path):
    ref_model = tiny_hf_model(family, tmp_path)
    ids = _ids(length=30)
    with torch.no_grad():
        ref = ref_model(torch.from_numpy(ids)).logits.numpy()
    model = load_model(tmp_path)
    cache = model.new_cache(2, 40)
    parts = [_logits_cached(model, ids[:, :5], cache)]
    parts += [_logits_cached(model, ids[:, j:j + 1], cache) for j in range(5, 30)]
    assert cache.length == 30
    assert _rel_err(np.concatenate(parts, 1), ref) <= 1e-4


def _logits_cached(model, ids, cache):
    return model(sx.Tensor.from_numpy(ids.copy()), cache=cache).numpy()


@pytest.mark.parametrize("family", sorted(HF_CONFIGS))
def test_bfloat16_weights_computed_in_bfloat16(family, tmp_path):
    # Weights of the usual scale (N(0, 0.02)): bfloat16 rounding alone moves the logits of the
    # reference by about 0.5% here, so 1e-2 measures the implementation, not the rounding.
    tiny_hf_model(family, tmp_path, torch_dtype=torch.bfloat16, init=0.02)
    ids = _ids()
    ref = _reference(tmp_path, torch.bfloat16, ids)
    model = load_model(tmp_path, dtype=sx.bfloat16)
    assert model.lm_head.dtype == sx.bfloat16
    assert _rel_err(_logits(model, ids), ref) <= 1e-2


def test_bfloat16_weights_computed_in_float32(tmp_path):
    tiny_hf_model("qwen2", tmp_path, torch_dtype=torch.bfloat16)
    ids = _ids()
    ref = _reference(tmp_path, torch.float32, ids)
    assert _rel_err(_logits(load_model(tmp_path), ids), ref) <= 1e-4


def test_float16_weights(tmp_path):
    tiny_hf_model("mistral", tmp_path, torch_dtype=torch.float16)
    ids = _ids()
    ref = _reference(tmp_path, torch.float32, ids)
    assert _rel_err(_logits(load_model(tmp_path, dtype="float32"), ids), ref) <= 1e-4


def test_sharded_checkpoint(tmp_path):
    ref_model = tiny_hf_model("llama", tmp_path, max_shard_size="20KB")
    assert (tmp_path / "model.safetensors.index.json").exists()
    assert len(list(tmp_path.glob("model-*-of-*.safetensors"))) > 1
    ids = _ids()
    with torch.no_grad():
        ref = ref_model(torch.from_numpy(ids)).logits.numpy()
    assert _rel_err(_logits(load_model(tmp_path), ids), ref) <= 1e-4


def _as_pytorch_bins(folder, model, shards=1, legacy=False):
    """Replaces the folder's safetensors by PyTorch's older layout: ``pytorch_model.bin`` written with
    ``torch.save`` (or ``shards`` of it listed in ``pytorch_model.bin.index.json``); ``legacy``: in
    torch.save's pre-1.6 format, as the oldest models on the Hub are."""
    import json

    for f in folder.glob("model*.safetensors*"):
        f.unlink()
    state = model.state_dict()
    if shards == 1:
        torch.save(state, folder / "pytorch_model.bin", _use_new_zipfile_serialization=not legacy)
        return
    names, weight_map = list(state), {}
    for i in range(shards):
        part = f"pytorch_model-{i + 1:05d}-of-{shards:05d}.bin"
        chunk = {n: state[n] for n in names[i::shards]}
        torch.save(chunk, folder / part)
        weight_map.update(dict.fromkeys(chunk, part))
    (folder / "pytorch_model.bin.index.json").write_text(json.dumps({"weight_map": weight_map}))


@pytest.mark.parametrize("family,legacy", [("gpt2", False), ("gpt2", True), ("llama_tied", False), ("qwen3", True)])
def test_pytorch_model_bin(family, legacy, tmp_path):
    ref_model = tiny_hf_model(family, tmp_path)
    _as_pytorch_bins(tmp_path, ref_model, legacy=legacy)
    ids = _ids()
    with torch.no_grad():
        ref = ref_model(torch.from_numpy(ids)).logits.numpy()
    model = load_model(tmp_path)
    assert type(model.weights_source.files[0]).__name__ == "TorchFile"
    assert _rel_err(_logits(model, ids), ref) <= 1e-4
    assert _rel_err(_logits(load_model(tmp_path, dtype="bfloat16"), ids), ref) <= 5e-2


def test_sharded_pytorch_model_bin(tmp_path):
    ref_model = tiny_hf_model("llama", tmp_path)
    _as_pytorch_bins(tmp_path, ref_model, shards=3)
    ids = _ids()
    with torch.no_grad():
        ref = ref_model(torch.from_numpy(ids)).logits.numpy()
    assert len(load_model(tmp_path).weights_source.files) == 3
    assert _rel_err(_logits(load_model(tmp_path), ids), ref) <= 1e-4
    (tmp_path / "pytorch_model-00002-of-00003.bin").unlink()
    with pytest.raises(FileNotFoundError, match="shards listed in .* are missing"):
        load_model(tmp_path)


def test_generation_config_defaults_are_used(tmp_path):
    ref_model = tiny_hf_model("gpt2", tmp_path)
    model = load_model(tmp_path)
    assert model.generation_defaults == {"eos_token_id": 2, "bos_token_id": 1, "pad_token_id": 0}
    prompt = _ids(1, 6)
    first = generate(model, prompt, max_new_tokens=1)["sequences"][0][-1]
    # Make the first greedy token the EOS id of generation_config.json: generation stops there.
    ref_model.generation_config.eos_token_id = first
    ref_model.generation_config.save_pretrained(tmp_path)
    out = generate(load_model(tmp_path), prompt, max_new_tokens=10)
    assert out["num_generated"] == [1]
    assert generate(load_model(tmp_path), prompt, max_new_tokens=10, eos_token_id=VOCAB + 1)["num_generated"] == [10]


@pytest.mark.parametrize("family", ["gpt2", "llama", "mistral", "qwen3"])
def test_left_padded_batch_matches_transformers(family, tmp_path):
    ref_model = tiny_hf_model(family, tmp_path)
    rng = np.random.default_rng(5)
    prompts = [rng.integers(3, VOCAB, n).tolist() for n in (9, 4, 14)]
    width = max(len(p) for p in prompts)
    ids = np.zeros((3, width), np.int64)
    mask = np.zeros((3, width), np.int64)
    for i, p in enumerate(prompts):
        ids[i, width - len(p):], mask[i, width - len(p):] = p, 1
    with torch.no_grad():
        ref = ref_model.generate(torch.from_numpy(ids), attention_mask=torch.from_numpy(mask), do_sample=False,
                                 max_new_tokens=24, min_new_tokens=24, pad_token_id=0).numpy()
    ours = generate(load_model(tmp_path), prompts, GenerationConfig(max_new_tokens=24, min_new_tokens=24))
    assert ours["output_ids"].numpy().tolist() == ref.tolist()
