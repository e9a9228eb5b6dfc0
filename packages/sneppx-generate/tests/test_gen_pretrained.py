"""load_model on folders written here by hand (no transformers needed): formulas, caches, dtypes,
memory mapping, errors, generation defaults, SneppX checkpoints and the command line."""

import json

import numpy as np
import pytest
import sneppx_core as sx

from hf_folders import gpt2_reference, random_gpt2, write_safetensors
from sneppx_generate import GenerationConfig, Tokenizer, generate, load_model
from sneppx_generate import cli


def _rel_err(ours, ref):
    return float(np.abs(ours - ref).max() / np.abs(ref).max())


def _run(model, ids, cache=None):
    return model(sx.Tensor.from_numpy(np.ascontiguousarray(ids, dtype=np.int64)), cache=cache)


def test_gpt2_matches_numpy_formulas_with_and_without_cache(tmp_path):
    cfg, arrays = random_gpt2(tmp_path)
    ids = np.random.default_rng(1).integers(0, cfg["vocab_size"], (3, 11))
    ref = gpt2_reference(arrays, cfg, ids)
    model = load_model(tmp_path)
    assert _rel_err(_run(model, ids).numpy(), ref) <= 1e-5
    cache = model.new_cache(3, 20)
    parts = [_run(model, ids[:, :4], cache).numpy()]
    parts += [_run(model, ids[:, j:j + 1], cache).numpy() for j in range(4, 11)]
    assert _rel_err(np.concatenate(parts, 1), ref) <= 1e-5


def test_logits_to_keep_returns_the_last_positions(tmp_path):
    cfg, arrays = random_gpt2(tmp_path)
    ids = np.random.default_rng(2).integers(0, cfg["vocab_size"], (2, 9))
    ref = gpt2_reference(arrays, cfg, ids)
    model = load_model(tmp_path)
    t = sx.Tensor.from_numpy(ids.astype(np.int64))
    assert _rel_err(model(t, logits_to_keep=3).numpy(), ref[:, -3:]) <= 1e-5
    assert tuple(model(t, logits_to_keep=9).shape) == tuple(model(t, logits_to_keep=20).shape) == (2, 9,
                                                                                                 cfg["vocab_size"])
    cache = model.new_cache(2, 12)
    model(t, cache=cache, logits_to_keep=1)
    step = model(sx.Tensor.from_numpy(ids[:, :1].astype(np.int64)), cache=cache, logits_to_keep=1)
    assert tuple(step.shape) == (2, 1, cfg["vocab_size"])
    with pytest.raises(ValueError, match="logits_to_keep"):
        model(t, logits_to_keep=-1)


def test_float32_weights_share_the_mapped_file(tmp_path):
    random_gpt2(tmp_path)
    model = load_model(tmp_path)
    size = (tmp_path / "model.safetensors").stat().st_size
    mapped = np.frombuffer(model.weights_source.files[0]._map, dtype=np.uint8)
    base = mapped.ctypes.data
    for t in (model.wte, model.blocks[1]["mlp.c_fc.weight"]):
        assert base <= t.data_ptr() < base + size


def test_bfloat16_storage_loads_exactly_and_computes_in_bfloat16(tmp_path):
    cfg, arrays = random_gpt2(tmp_path)
    rounded = {k: ((v.view(np.uint32) >> 16) << 16).view(np.float32) for k, v in arrays.items()}
    write_safetensors(tmp_path / "model.safetensors", rounded, bf16=set(rounded))
    model = load_model(tmp_path)
    np.testing.assert_array_equal(model.wte.numpy(), rounded["wte.weight"])
    ids = np.random.default_rng(2).integers(0, cfg["vocab_size"], (2, 9))
    ref = gpt2_reference(rounded, cfg, ids)
    assert _rel_err(_run(model, ids).numpy(), ref) <= 1e-5
    half = load_model(tmp_path, dtype="bfloat16")
    assert half.wte.dtype == sx.bfloat16 and half.dtype == sx.bfloat16
    assert _rel_err(_run(half, ids).float().numpy(), ref) <= 5e-2


def _round_bf16(a):
    """float32 values rounded to nearest-even bfloat16 (NumPy only)."""
    u = np.ascontiguousarray(a, np.float32).view(np.uint32)
    u = (u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) & np.uint32(0xFFFF0000)
    return u.view(np.float32)


def test_conversion_in_chunks_rounds_every_element(tmp_path, monkeypatch):
    from sneppx_generate import _weights

    monkeypatch.setattr(_weights, "_CHUNK", 100)  # chunk edges inside and across rows
    cfg, arrays = random_gpt2(tmp_path)
    half = load_model(tmp_path, dtype="bfloat16")
    for name, t in (("wte.weight", half.wte), ("h.1.mlp.c_fc.weight", half.blocks[1]["mlp.c_fc.weight"])):
        assert t.dtype == sx.bfloat16
        np.testing.assert_array_equal(t.float().numpy(), _round_bf16(arrays[name]))
    fp16 = {k: v.astype(np.float16) for k, v in arrays.items()}
    write_safetensors(tmp_path / "model.safetensors", fp16)
    half = load_model(tmp_path, dtype="bfloat16")
    np.testing.assert_array_equal(half.wte.float().numpy(), _round_bf16(fp16["wte.weight"].astype(np.float32)))
    assert load_model(tmp_path, dtype="float16").wte.numpy().dtype == np.float16


def _mapped_rss_kb(path) -> int:
    """Resident kB of this process's mappings of the file ``path`` (from /proc/self/smaps)."""
    total, inside = 0, False
    with open("/proc/self/smaps") as fh:
        for line in fh:
            fields = line.split()
            if "-" in fields[0] and len(fields) >= 5 and ":" in fields[3]:  # a mapping's header line
                inside = len(fields) == 6 and fields[5] == str(path)
            elif inside and fields[0] == "Rss:":
                total += int(fields[1])
    return total


@pytest.mark.skipif(not __import__("os").path.exists("/proc/self/smaps"), reason="needs Linux's /proc")
def test_converted_weights_leave_no_mapped_pages_resident(tmp_path):
    # The float32 file of 100 x 4096 floats: computed in float32 its pages are the weights (resident
    # once read); converted to bfloat16 they are dropped from the process after the conversion.
    cfg, arrays = random_gpt2(tmp_path, vocab=4096, d=64, layers=1)
    path = (tmp_path / "model.safetensors").resolve()
    size_kb = path.stat().st_size // 1024
    half = load_model(tmp_path, dtype="bfloat16")
    assert _mapped_rss_kb(path) < 0.1 * size_kb
    full = load_model(tmp_path)
    assert float(full.wte.sum().item()) == pytest.approx(float(arrays["wte.weight"].sum(dtype=np.float64)), rel=1e-4)
    assert _mapped_rss_kb(path) > 0.5 * size_kb  # the check sees resident pages of the float32 model
    assert half.wte.dtype == sx.bfloat16


def test_errors_name_what_is_wrong(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such folder"):
        load_model(tmp_path / "absent")
    with pytest.raises(FileNotFoundError, match="config.json"):
        load_model(tmp_path)
    cfg, arrays = random_gpt2(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({**cfg, "model_type": "bert"}))
    with pytest.raises(ValueError, match="'bert' is not supported.*gpt2.*llama"):
        load_model(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    del arrays["h.1.mlp.c_fc.bias"]
    write_safetensors(tmp_path / "model.safetensors", arrays)
    with pytest.raises(KeyError, match="h.1.mlp.c_fc.bias"):
        load_model(tmp_path)
    with pytest.raises(ValueError, match="dtype"):
        load_model(tmp_path, dtype="int8")
    index = {"weight_map": {"a": "model-1-of-2.safetensors"}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(FileNotFoundError, match="model-1-of-2"):
        load_model(tmp_path)


def test_positions_beyond_the_model_raise(tmp_path):
    random_gpt2(tmp_path, positions=8)
    model = load_model(tmp_path)
    with pytest.raises(ValueError, match="exceed"):
        model.new_cache(1, 9)
    with pytest.raises(ValueError, match="exceed"):
        _run(model, np.zeros((1, 9)))
    with pytest.raises(ValueError, match="int64 Tensor"):
        model([[1, 2]])


def test_generation_config_json_supplies_eos_pad_and_bos(tmp_path):
    random_gpt2(tmp_path)
    model = load_model(tmp_path)
    first = generate(model, [5, 6, 7], max_new_tokens=3)["sequences"][0][3:]
    eos = first[-1]
    (tmp_path / "generation_config.json").write_text(json.dumps({"eos_token_id": eos, "bos_token_id": 5,
                                                                 "pad_token_id": 4}))
    model = load_model(tmp_path)
    assert model.generation_defaults == {"eos_token_id": eos, "bos_token_id": 5, "pad_token_id": 4}
    out = generate(model, [[5, 6, 7], [9]], max_new_tokens=3)
    assert out["sequences"][0] == [5, 6, 7] + first[:first.index(eos) + 1]
    assert out["output_ids"].numpy()[1, 0] == 4  # left padding with the file's pad id
    assert generate(model, [[]], max_new_tokens=1)["sequences"][0][0] == 5  # empty prompt starts at BOS
    other = [e for e in range(60) if e not in first][0]
    assert generate(model, [5, 6, 7], GenerationConfig(max_new_tokens=3, eos_token_id=other))["num_generated"] == [3]


@pytest.mark.parametrize("kw", [
    {"positional": "learned", "norm": "layernorm"},
    {"positional": "rope", "norm": "rmsnorm", "activation": "silu", "tie_weights": False, "bias": False},
])
def test_sneppx_checkpoint_round_trip(tmp_path, kw):
    nn = pytest.importorskip("sneppx_nn")
    sx.manual_seed(0)
    net = nn.Transformer(vocab_size=41, d_model=24, n_heads=3, n_layers=2, max_seq_len=32, **kw).eval()
    with sx.no_grad():
        for p in net.parameters():
            p.add_(sx.randn(tuple(p.shape)) * 0.1)
    net.save_checkpoint(str(tmp_path / "model.safetensors"))
    ids = np.random.default_rng(3).integers(0, 41, (2, 12))
    with sx.no_grad():
        ref = net(sx.Tensor.from_numpy(ids)).numpy()
    for where in (tmp_path, tmp_path / "model.safetensors"):
        model = load_model(where)
        assert _rel_err(_run(model, ids).numpy(), ref) <= 1e-5
    greedy = GenerationConfig(max_new_tokens=10)
    assert generate(model, ids[:, :4], greedy)["sequences"] == generate(net, ids[:, :4], greedy)["sequences"]


def test_command_line_streams_the_greedy_continuation(tmp_path, capsys):
    tok = Tokenizer(vocab_size=260)
    tok.save(str(tmp_path / "tokenizer.json"))
    random_gpt2(tmp_path, vocab=260)
    prompt = "Hello there"
    cli.main([str(tmp_path), "--prompt", prompt, "--max-new-tokens", "12", "--temperature", "0"])
    out = capsys.readouterr().out
    ids = Tokenizer.from_pretrained(tmp_path).encode(prompt)
    new = generate(load_model(tmp_path), ids, max_new_tokens=12)["sequences"][0][len(ids):]
    assert out == prompt + tok.decode(new) + "\n"


def test_command_line_reports_bad_folders(tmp_path):
    with pytest.raises(SystemExit, match="sneppx-generate: .*config.json"):
        cli.main([str(tmp_path), "--prompt", "x"])


def test_command_line_device_option(tmp_path, capsys):
    Tokenizer(vocab_size=260).save(str(tmp_path / "tokenizer.json"))
    random_gpt2(tmp_path, vocab=260)
    cli.main([str(tmp_path), "--prompt", "Hi", "--max-new-tokens", "4", "--temperature", "0", "--device", "cpu"])
    cpu_out = capsys.readouterr().out
    assert cpu_out.startswith("Hi") and cpu_out.endswith("\n")
    with pytest.raises(SystemExit, match="sneppx-generate: .*device.*'gpu'"):
        cli.main([str(tmp_path), "--prompt", "Hi", "--device", "gpu"])
    if sx.cuda.is_available():  # the GPU's greedy continuation is the CPU's
        cli.main([str(tmp_path), "--prompt", "Hi", "--max-new-tokens", "4", "--temperature", "0", "--device", "cuda"])
        assert capsys.readouterr().out == cpu_out
    else:
        with pytest.raises(SystemExit, match="(?i)sneppx-generate: .*cuda"):  # "CUDA" on the NumPy backend
            cli.main([str(tmp_path), "--prompt", "Hi", "--device", "cuda"])


def test_command_line_chat_mode_applies_the_template(tmp_path, capsys):
    pytest.importorskip("jinja2")
    tok = Tokenizer(vocab_size=260)
    tok.save(str(tmp_path / "tokenizer.json"))
    template = "{% for m in messages %}[{{ m['role'] }}]{{ m['content'] }}{% endfor %}[assistant]"
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": template}))
    random_gpt2(tmp_path, vocab=260)
    cli.main([str(tmp_path), "--chat", "--prompt", "Hi", "--max-new-tokens", "5", "--temperature", "0"])
    ids = Tokenizer.from_pretrained(tmp_path).encode("[user]Hi[assistant]")
    new = generate(load_model(tmp_path), ids, max_new_tokens=5)["sequences"][0][len(ids):]
    assert capsys.readouterr().out == tok.decode(new) + "\n"
    (tmp_path / "tokenizer_config.json").unlink()
    with pytest.raises(SystemExit, match="no chat_template"):
        cli.main([str(tmp_path), "--chat", "--prompt", "Hi"])


def test_padded_batch_rows_match_rows_run_alone(tmp_path):
    random_gpt2(tmp_path)
    model = load_model(tmp_path)
    prompts = [[3, 9, 27, 4, 8], [11], [5, 6, 7]]
    alone = [generate(model, p, max_new_tokens=6)["sequences"][0] for p in prompts]
    batch = generate(model, prompts, max_new_tokens=6)["sequences"]
    assert batch == alone
    ids = np.array([[0, 0, 4, 5], [1, 2, 3, 4]])
    mask = sx.Tensor.from_numpy(np.array([[0, 0, 1, 1], [1, 1, 1, 1]]))
    padded = model(sx.Tensor.from_numpy(ids), attention_mask=mask).numpy()
    np.testing.assert_allclose(padded[0, 2:], _run(model, ids[:1, 2:]).numpy()[0], rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="attention_mask must have shape"):
        model(sx.Tensor.from_numpy(ids), attention_mask=mask[:, 1:])


def test_to_moves_every_weight_and_keeps_tied_ones_shared(tmp_path):
    cfg, arrays = random_gpt2(tmp_path)
    ids = np.random.default_rng(5).integers(0, cfg["vocab_size"], (2, 7))
    ref = gpt2_reference(arrays, cfg, ids)
    model = load_model(tmp_path, device="cpu")
    assert model.device == "cpu" and model.lm_head is model.wte
    assert model.blocks[0]["attn.c_attn.weight"] is model._block_tuples[0][2]
    assert _rel_err(_run(model, ids).numpy(), ref) <= 1e-5
    cache = model.new_cache(2, 10)
    assert all(str(k.device) == "cpu" for k in cache.keys)
    if sx.cuda.is_available():
        gpu = load_model(tmp_path, device="cuda")
        assert gpu.device == "cuda:0" and gpu.lm_head is gpu.wte and str(gpu.wte.device) == "cuda:0"
        out = gpu(sx.tensor(ids, device="cuda")).cpu().numpy()
        assert _rel_err(out, ref) <= 1e-5
        sequences = generate(gpu, ids.tolist(), max_new_tokens=5, do_sample=False)["sequences"]
        assert sequences == generate(model, ids.tolist(), max_new_tokens=5, do_sample=False)["sequences"]
    else:
        with pytest.raises(RuntimeError, match="(no CUDA device is visible|has no CUDA)"):
            load_model(tmp_path, device="cuda")


def test_a_safetensors_header_of_640_bytes_is_not_taken_for_a_pickle(tmp_path):
    # 640 = 0x280: the file starts 80 02 00 00, as a protocol-2 pickle does (PyTorch's legacy format
    # goes on with the 8a 0a of its magic number)
    from sneppx_generate._weights import SafetensorsFile, open_weights

    for k in range(400, 700):
        path = tmp_path / "w.safetensors"
        write_safetensors(path, {"w": np.ones(2, np.float32)}, metadata={"pad": "x" * k})
        if path.read_bytes()[:4] == b"\x80\x02\x00\x00":
            break
    else:
        pytest.fail("no padding gave a 640-byte header")
    assert isinstance(open_weights(str(path)), SafetensorsFile)
