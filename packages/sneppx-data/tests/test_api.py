"""Package surface: exported names, docstrings, version, and imports limited to sneppx_core."""

import ast
import inspect
import pathlib

import sneppx_data

SRC = pathlib.Path(sneppx_data.__file__).parent
ALLOWED_THIRD_PARTY = {"numpy", "sneppx_core"}


def test_every_public_name_is_documented():
    for name in sneppx_data.__all__:
        obj = getattr(sneppx_data, name)
        if isinstance(obj, str):
            continue
        assert inspect.getdoc(obj), f"{name} has no docstring"
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if not attr.startswith("_") and callable(member):
                    assert inspect.getdoc(member), f"{name}.{attr} has no docstring"


def test_version_and_exports():
    assert sneppx_data.__version__ == "0.1.0"
    assert sorted(sneppx_data.__all__) == sorted(set(sneppx_data.__all__))
    for name in ["Dataset", "TensorDataset", "DataLoader", "DistributedSampler"]:
        assert name in sneppx_data.__all__


def test_imports_only_stdlib_numpy_and_core_public_api():
    import sys

    stdlib = set(sys.stdlib_module_names)
    for path in SRC.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots = [(a.name.split(".")[0], a.name) for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                roots = [(node.module.split(".")[0], node.module)]
                if node.module == "sneppx_core":
                    private = [a.name for a in node.names if a.name.startswith("_")]
                    assert not private, f"{path.name} imports private core names {private}"
            else:
                continue
            for root, full in roots:
                assert root in stdlib or root in ALLOWED_THIRD_PARTY, f"{path.name} imports {full}"
                assert not full.startswith("sneppx_core._"), f"{path.name} imports {full}"


def test_modules_stay_small():
    for path in SRC.glob("*.py"):
        assert len(path.read_text().splitlines()) < 300, path.name
