"""Package surface: exports, docstrings, imports limited to sneppx_core's public API, file sizes."""

import ast
import inspect
import pathlib

import sneppx_nn as nn

SRC = pathlib.Path(nn.__file__).parent
ALLOWED_TOP = {"sneppx_core", "numpy", "safetensors", "__future__", "sneppx_nn",
               "tabulate"}  # tabulate: optional, only fx's Graph.print_tabular imports it (as in PyTorch)
STDLIB_OK = {"collections", "copy", "numbers", "functools", "inspect", "itertools", "json", "math", "operator", "os",
             "secrets", "struct", "warnings", "typing", "contextlib", "contextvars", "errno", "re", "socket", "time",
             "sys", "types", "builtins", "dataclasses", "dis", "enum", "importlib", "keyword", "linecache"}
# sys: SyncBatchNorm looks sneppx_distributed up in sys.modules (no import); types: the modules of sneppx_nn.modules
# (torch.nn.modules' file layout); builtins, dis, keyword, linecache: fx (builtin names, tuple unpacking of a
# Proxy, reserved names, tracebacks into generated code); enum: nn.attention's SDPBackend


def test_all_names_exist_and_are_documented():
    assert nn.__version__ == "0.1.0"
    for name in nn.__all__:
        obj = getattr(nn, name)
        if name == "__version__":
            continue
        assert (obj.__doc__ or "").strip(), f"{name} has no docstring"
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if not attr.startswith("_") and callable(member):
                    assert inspect.getdoc(getattr(obj, attr)), f"{name}.{attr} has no docstring"
    for name in nn.init.__all__:
        assert getattr(nn.init, name).__doc__


def test_guide_table_names_exist():
    for name in ["Module", "Linear", "Embedding", "LayerNorm", "RMSNorm", "Dropout", "Sequential",
                 "MultiheadAttention", "TransformerBlock", "Transformer", "GELU", "MSELoss"]:
        assert name in nn.__all__
    for method in ["parameters", "state_dict", "load_state_dict", "to", "train", "eval", "save_checkpoint"]:
        assert callable(getattr(nn.Module, method))


def _imports(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            yield node.module, [a.name for a in node.names]


def test_imports_only_core_public_api_and_declared_deps():
    for path in SRC.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for module, names in _imports(tree):
            top = module.split(".")[0]
            assert top in ALLOWED_TOP | STDLIB_OK, f"{path.name} imports {module}"
            if top == "sneppx_core":
                assert not any(part.startswith("_") for part in module.split(".")), f"{path.name}: {module}"
                assert not any(n.startswith("_") for n in names), f"{path.name}: from {module} import {names}"
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("sx", "F"):
                private = node.attr.startswith("_") and not node.attr.endswith("__")
                assert not private, f"{path.name} uses private {node.value.id}.{node.attr}"


def test_module_and_function_sizes():
    for path in SRC.glob("*.py"):
        text = path.read_text()
        assert len(text.splitlines()) <= 300, f"{path.name} is longer than 300 lines"
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                assert length <= 40, f"{path.name}:{node.name} is {length} lines"
