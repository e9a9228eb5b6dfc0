"""The ``sneppx`` command, end to end on a tiny corpus (the README's main job uses the default one)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest


def sneppx(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "SneppX_ALG.cli", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_train_resume_and_generate(tmp_path):
    text = tmp_path / "tiny.txt"
    text.write_text("the quick brown fox jumps over the lazy dog. " * 200)
    out = tmp_path / "run"
    common = ["--out", str(out), "--seq-len", "32", "--batch-size", "8", "--d-model", "32", "--n-layers", "1",
              "--n-heads", "2", "--quiet"]
    tensorboard = importlib.util.find_spec("tensorboardX") is not None
    log_dir = ["--log-dir", str(tmp_path / "tb")] if tensorboard else []
    r = sneppx("train", str(text), "--steps", "40", *common, *log_dir)
    assert r.returncode == 0, r.stderr
    if tensorboard:
        assert f"tensorboard --logdir {tmp_path / 'tb'}" in r.stdout
        assert any(p.name.startswith("events.out.tfevents") for p in (tmp_path / "tb").iterdir())
    run = json.loads((out / "run.json").read_text())
    assert run["eval_loss"] < 2.5  # well below log(vocab) ~ 3.3 for this corpus
    assert run["eval_loss"] < run["unigram_loss"]
    assert (out / "model.safetensors").exists() and (out / "tokenizer.json").exists()
    metrics = out / "checkpoints" / "metrics.jsonl"
    assert f"metrics:  {metrics}" in r.stdout and "unigram baseline" in r.stdout
    assert [json.loads(line)["step"] for line in metrics.read_text().splitlines()] == list(range(1, 41))
    r = sneppx("train", str(text), "--steps", "48", "--resume", *common)
    assert r.returncode == 0, r.stderr
    assert [json.loads(line)["step"] for line in metrics.read_text().splitlines()] == list(range(1, 49))
    g = sneppx("generate", str(out), "--prompt", "the ", "--max-new-tokens", "20", "--seed", "1")
    assert g.returncode == 0, g.stderr
    assert g.stdout.startswith("the ") and len(g.stdout.strip()) >= 10
    assert set(g.stdout.strip()) <= set(text.read_text())
    g = sneppx("generate", str(out), "--prompt", "the ", "--prompt", "a ", "--max-new-tokens", "20")
    assert g.returncode == 0, g.stderr
    assert g.stdout.count("--- sample") == 2 and "\na " in g.stdout and "[end of text]" not in g.stdout
    pytest.importorskip("matplotlib")
    assert f"plot:     {out / 'loss.png'}" in r.stdout and (out / "loss.png").stat().st_size > 1000
    p = sneppx("plot", str(out), "--out", str(tmp_path / "again.png"))
    assert p.returncode == 0 and p.stdout.strip() == str(tmp_path / "again.png"), p.stderr


def test_info():
    r = sneppx("info")
    assert r.returncode == 0, r.stderr
    assert "sneppx-core" in r.stdout and "OpenBLAS" in r.stdout and "threads" in r.stdout


def test_missing_model_is_a_clear_error(tmp_path):
    r = sneppx("generate", str(tmp_path))
    assert r.returncode != 0 and "run `sneppx train" in r.stderr


@pytest.mark.parametrize("args, message", [
    (["train", "{tmp}/missing.txt", "--out", "{tmp}/r"], "sneppx train: cannot read {tmp}/missing.txt"),
    (["train", "--out", "{tmp}/r", "--steps", "0"], "sneppx train: --steps must be >= 1, got 0"),
    (["plot", "{tmp}"], "sneppx plot: no metrics.jsonl at"),
    (["generate", "{tmp}", "--max-new-tokens", "5"], "sneppx generate: {tmp} has no model.safetensors"),
])
def test_user_errors_are_one_line(tmp_path, args, message):
    r = sneppx(*[a.format(tmp=tmp_path) for a in args])
    assert r.returncode != 0
    err = r.stderr.strip()
    assert err.startswith(message.format(tmp=tmp_path)) and len(err.splitlines()) == 1, r.stderr


def _hf_gpt2_folder(folder):
    """A random GPT-2 in the Hugging Face layout, with a byte-level tokenizer."""
    import numpy as np
    from safetensors.numpy import save_file
    from sneppx_generate import Tokenizer

    d, vocab, rng = 16, 260, np.random.default_rng(0)
    r = lambda *s: (rng.normal(size=s) * 0.3).astype(np.float32)  # noqa: E731
    arrays = {"wte.weight": r(vocab, d), "wpe.weight": r(64, d), "ln_f.weight": 1 + r(d), "ln_f.bias": r(d)}
    for name, shape in [("ln_1.weight", (d,)), ("ln_1.bias", (d,)), ("ln_2.weight", (d,)), ("ln_2.bias", (d,)),
                        ("attn.c_attn.weight", (d, 3 * d)), ("attn.c_attn.bias", (3 * d,)),
                        ("attn.c_proj.weight", (d, d)), ("attn.c_proj.bias", (d,)), ("mlp.c_fc.weight", (d, 4 * d)),
                        ("mlp.c_fc.bias", (4 * d,)), ("mlp.c_proj.weight", (4 * d, d)), ("mlp.c_proj.bias", (d,))]:
        arrays["h.0." + name] = r(*shape)
    folder.mkdir()
    save_file(arrays, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(json.dumps({"model_type": "gpt2", "n_embd": d, "n_head": 2, "n_layer": 1,
                                                    "n_positions": 64, "vocab_size": vocab}))
    Tokenizer(vocab_size=vocab).save(str(folder / "tokenizer.json"))


def test_generate_reads_hugging_face_folders_like_sneppx_generate(tmp_path):
    folder = tmp_path / "hf"
    _hf_gpt2_folder(folder)
    opts = ["--prompt", "Hi", "--max-new-tokens", "70", "--temperature", "0"]
    g = sneppx("generate", str(folder), *opts)
    assert g.returncode == 0, g.stderr
    s = subprocess.run([sys.executable, "-m", "sneppx_generate.cli", str(folder), *opts], capture_output=True,
                       text=True, timeout=600)
    assert s.returncode == 0, s.stderr
    assert g.stdout.startswith("Hi") and g.stdout == s.stdout
