"""The tutorial scripts in examples/, run end to end at small sizes."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"
TINY = ["--seq-len", "32", "--d-model", "32", "--n-layers", "1", "--n-heads", "2", "--batch-size", "8"]


def run(*args, timeout=600):
    r = subprocess.run([*map(str, args)], capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_char_gpt_trains_resumes_and_plots(tmp_path):
    text = tmp_path / "fox.txt"
    text.write_text("the quick brown fox jumps over the lazy dog. " * 300)
    out = tmp_path / "run"
    first = run(sys.executable, EXAMPLES / "char_gpt.py", text, "--out", out, "--steps", "30", *TINY)
    assert "held-out loss" in first and "--- sample ---" in first
    more = run(sys.executable, EXAMPLES / "char_gpt.py", text, "--out", out, "--steps", "45", "--resume", *TINY)
    assert "steps 1..45" in more
    rows = [json.loads(line) for line in (out / "checkpoints" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == list(range(1, 46))
    held_out = float(more.split("held-out loss ")[1].split()[0])
    unigram = float(more.split("(unigram ")[1].split(",")[0])
    assert held_out < unigram  # it learned more than character frequencies
    pytest.importorskip("matplotlib")
    assert (out / "loss.png").stat().st_size > 1000


def test_ddp_on_two_mpi_ranks(tmp_path):
    from sneppx_distributed import find_mpiexec

    out = run(find_mpiexec(), "-n", "2", sys.executable, EXAMPLES / "ddp_train.py", "--epochs", "2",
              "--out", tmp_path / "ddp")
    assert "2 ranks" in out and "replicas identical: True" in out
    assert (tmp_path / "ddp" / "checkpoints" / "metrics.jsonl").exists()


def test_ddp_through_launch(tmp_path, monkeypatch):
    from sneppx_distributed import launch

    monkeypatch.syspath_prepend(str(EXAMPLES))
    monkeypatch.setenv("PYTHONPATH", str(EXAMPLES) + ":" + __import__("os").environ.get("PYTHONPATH", ""))
    import ddp_train

    loss = launch(ddp_train.main, nprocs=2, args=(["--epochs", "1", "--out", str(tmp_path / "l")],))
    assert 0 < loss < 0.5


def test_finetune_and_deploy(tmp_path):
    generate = pytest.importorskip("sneppx_generate")
    nn = pytest.importorskip("sneppx_nn")
    if not hasattr(generate, "load_model") or not hasattr(nn.Transformer, "from_pretrained"):
        pytest.skip("sneppx_generate.load_model / Transformer.from_pretrained are not in this tree yet")
    out = run(sys.executable, EXAMPLES / "finetune_deploy.py", "--tiny", "--out", tmp_path / "ft", timeout=900)
    assert "deployed:" in out
