"""Every ```python block of the user guide and tutorial pages, run in order, one namespace per page.

A page's blocks build on each other like a notebook. A block right after an HTML comment
``<!-- skip: why -->`` is not run (it needs MPI ranks, a network or a long time; the reason is
given); ```bash, ```text and ```pycon blocks are never run. Each page runs in an empty temporary
folder, so files its examples write do not land in the source tree.
"""

from __future__ import annotations

import pathlib
import re

import pytest

DOCS = pathlib.Path(__file__).resolve().parents[1] / "docs"
PAGES = sorted([*DOCS.glob("guide/*.md"), *DOCS.glob("tutorials/*.md")])
OPTIONAL = {"matplotlib", "tensorboardX"}  # the optional extras; pages that use them skip without them
FENCE = re.compile(r"(<!--\s*skip:[^>]*-->\s*\n)?^```python[^\n]*\n(.*?)^```", re.M | re.S)


def blocks(page: pathlib.Path) -> list:
    """The runnable python blocks of ``page`` as (line number, source) pairs."""
    text = page.read_text(encoding="utf-8")
    return [(text[:m.start(2)].count("\n") + 1, m.group(2)) for m in FENCE.finditer(text) if not m.group(1)]


def test_every_page_is_checked():
    assert {p.stem for p in DOCS.glob("guide/*.md")} >= {"core", "nn", "optim", "data", "distributed", "generate",
                                                         "watching-training"}
    assert sum(len(blocks(p)) for p in PAGES) >= 30


@pytest.mark.parametrize("page", PAGES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_page_examples_run(page, tmp_path, monkeypatch, capsys):
    import sneppx_core as sx

    monkeypatch.chdir(tmp_path)
    sx.manual_seed(0)
    ns: dict = {"__name__": f"docs_{page.stem.replace('-', '_')}"}
    for line, source in blocks(page):
        try:
            exec(compile(source, f"{page.relative_to(DOCS)}:{line}", "exec"), ns)
        except ImportError as e:
            if e.name in OPTIONAL:
                pytest.skip(f"{page.name} needs the optional package {e.name}")
            raise
        except Exception as e:
            raise AssertionError(f"{page.relative_to(DOCS)}, block at line {line}: {type(e).__name__}: {e}") from e
