"""Source style of sneppx_nn that the linter checks: submodules imported into the package namespace are
exported in ``__all__`` (else they read as unused imports), and no source line is longer than 120 columns."""

import ast
import pathlib

import sneppx_nn as nn

SRC = pathlib.Path(nn.__file__).parent


def test_imported_submodules_are_exported():
    tree = ast.parse((SRC / "__init__.py").read_text())
    subs = {alias.asname or alias.name for node in tree.body
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module is None for alias in node.names}
    assert subs, "no 'from . import ...' found"
    assert subs <= set(nn.__all__), f"imported but not in __all__: {sorted(subs - set(nn.__all__))}"


def test_lines_fit_120_columns():
    long = [f"{path.relative_to(SRC)}:{number} ({len(line)} columns)" for path in sorted(SRC.rglob("*.py"))
            for number, line in enumerate(path.read_text().splitlines(), 1) if len(line) > 120]
    assert not long, long
