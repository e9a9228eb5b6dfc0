"""tools/api_coverage.py writes the PyTorch coverage page (when torch is installed)."""

from __future__ import annotations

import importlib.util
import pathlib

import pytest

TOOL = pathlib.Path(__file__).resolve().parents[1] / "tools" / "api_coverage.py"


def load_tool():
    spec = importlib.util.spec_from_file_location("api_coverage", TOOL)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_render_counts_and_lists_names():
    page = load_tool().render([("Optimizers", "torch.optim", {"SGD", "Adam", "RMSprop"}, "sneppx_optim",
                                {"SGD", "Adam", "Lion"})], "9.9", {"Optimizers": {"Lion"}})
    assert "| [Optimizers](#optimizers) | `torch.optim` | `sneppx_optim` | 2 | 3 | 67% |" in page
    assert "**Missing (1):** `RMSprop`" in page and "**SneppX only:** `Lion`" in page


def test_page_from_the_installed_libraries(tmp_path):
    pytest.importorskip("torch")
    out = load_tool().main(["--out", str(tmp_path / "cov.md")])
    text = out.read_text()
    for section in ("## Modules", "## Functional ops", "## Tensor methods", "## Functions", "## Linear algebra",
                    "## Special functions", "## Optimizers", "## LR schedulers"):
        assert section in text
    assert "`svd`" in text.split("## Linear algebra")[1].split("**Missing")[0]  # torch.linalg.svd is covered
    assert "`erfcx`" in text.split("## Special functions")[1].split("**Missing")[0]  # torch.special.erfcx is covered
    assert "`Linear`" in text.split("## Modules")[1].split("**Missing")[0]  # Linear is covered
