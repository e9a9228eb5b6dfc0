"""sneppx-generate where sneppx_core's compiled extension is missing: the command line runs on the
NumPy backend and gives the greedy continuation this process computes."""

import os
import pathlib
import shutil
import subprocess
import sys

import sneppx_core as sx

from hf_folders import random_gpt2
from sneppx_generate import Tokenizer, generate, load_model


def _core_without_extension(root: pathlib.Path) -> pathlib.Path:
    """A copy of sneppx_core's Python files (no compiled extension) under ``root``; returns ``root``."""
    src = pathlib.Path(sx.__file__).parent
    shutil.copytree(src, root / "sneppx_core",
                    ignore=shutil.ignore_patterns("_SNEPPX_c*", "*.so", "*.pyd", "__pycache__"))
    assert not list((root / "sneppx_core").glob("_SNEPPX_c*"))
    return root


def _run(args, site, timeout=600):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    env.pop("SNEPPX_BACKEND", None)
    return subprocess.run([sys.executable, "-W", "always::ImportWarning", "-m", "sneppx_generate.cli", *args],
                          env=env, capture_output=True, text=True, timeout=timeout)


def test_command_line_runs_without_the_compiled_extension(tmp_path):
    site = _core_without_extension(tmp_path / "site")
    folder = tmp_path / "model"
    folder.mkdir()
    tok = Tokenizer(vocab_size=260)
    tok.save(str(folder / "tokenizer.json"))
    random_gpt2(folder, vocab=260)
    prompt = "Hello there"
    run = _run([str(folder), "--prompt", prompt, "--max-new-tokens", "10", "--temperature", "0"], site)
    assert run.returncode == 0, run.stderr
    assert "ImportWarning" in run.stderr and "_SNEPPX_c could not be imported" in run.stderr
    ids = Tokenizer.from_pretrained(folder).encode(prompt)
    new = generate(load_model(folder), ids, max_new_tokens=10)["sequences"][0][len(ids):]
    assert run.stdout == prompt + tok.decode(new) + "\n"

    version = _run(["--version"], site)
    assert version.returncode == 0 and "NumPy (inference only) backend" in version.stdout, version


def test_version_names_this_process_backend():
    from sneppx_generate import cli

    expected = "C backend" if sx._HAS_C_BACKEND else "NumPy (inference only) backend"
    assert cli.version_line().endswith(f"(sneppx-core {sx.__version__}, {expected})")
