"""The ``sneppx`` command, end to end on a tiny corpus (the README's main job uses the default one)."""

from __future__ import annotations

import json
import subprocess
import sys


def sneppx(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "SneppX_ALG.cli", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_train_resume_and_generate(tmp_path):
    text = tmp_path / "tiny.txt"
    text.write_text("the quick brown fox jumps over the lazy dog. " * 200)
    out = tmp_path / "run"
    common = ["--out", str(out), "--seq-len", "32", "--batch-size", "8", "--d-model", "32", "--n-layers", "1",
              "--n-heads", "2", "--quiet"]
    r = sneppx("train", str(text), "--steps", "40", *common)
    assert r.returncode == 0, r.stderr
    run = json.loads((out / "run.json").read_text())
    assert run["eval_loss"] < 2.5  # well below log(vocab) ~ 3.3 for this corpus
    assert (out / "model.safetensors").exists() and (out / "tokenizer.json").exists()
    r = sneppx("train", str(text), "--steps", "48", "--resume", *common)
    assert r.returncode == 0, r.stderr
    g = sneppx("generate", str(out), "--prompt", "the ", "--max-new-tokens", "20", "--seed", "1")
    assert g.returncode == 0, g.stderr
    assert g.stdout.startswith("the ") and len(g.stdout.strip()) >= 10
    assert set(g.stdout.strip()) <= set(text.read_text())


def test_info():
    r = sneppx("info")
    assert r.returncode == 0, r.stderr
    assert "sneppx-core" in r.stdout and "OpenBLAS" in r.stdout and "threads" in r.stdout


def test_missing_model_is_a_clear_error(tmp_path):
    r = sneppx("generate", str(tmp_path))
    assert r.returncode != 0 and "run `sneppx train" in r.stderr
