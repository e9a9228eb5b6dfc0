"""The meta-package: re-exports, versions, the guide's module paths, and the import rules."""

from __future__ import annotations

import ast
import importlib
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SIBLINGS = ["sneppx_nn", "sneppx_optim", "sneppx_data", "sneppx_distributed", "sneppx_generate"]


def test_reexports_every_public_name():
    import SneppX_ALG

    for mod in ["sneppx_core", *SIBLINGS]:
        m = importlib.import_module(mod)
        for name in m.__all__:
            assert name in SneppX_ALG.__all__, f"{mod}.{name} is not re-exported"
            assert hasattr(SneppX_ALG, name)


def test_shared_names_keep_the_first_package_binding():
    """A name two packages export keeps core's binding (then nn's, ...), as torch.gather is the tensor
    op and torch.distributed.gather the collective; the components are reachable as submodules."""
    import numpy as np

    import SneppX_ALG
    import sneppx_core
    import sneppx_distributed
    import sneppx_nn
    import sneppx_optim

    for name in ["gather", "scatter", "save", "load"]:
        assert getattr(SneppX_ALG, name) is getattr(sneppx_core, name), name
    assert SneppX_ALG.distributed is sneppx_distributed and SneppX_ALG.distributed.gather is sneppx_distributed.gather
    assert SneppX_ALG.nn is sneppx_nn and SneppX_ALG.optim is sneppx_optim
    import sneppx_core.functional
    import sneppx_nn.functional as F  # torch.nn.functional's place

    assert F.relu is sneppx_core.functional.relu and SneppX_ALG.nn.functional is F
    from SneppX_ALG._version import __version__

    assert SneppX_ALG.__version__ == __version__
    x = SneppX_ALG.tensor([[1.0, 2.0], [3.0, 4.0]])
    got = SneppX_ALG.gather(x, 1, SneppX_ALG.tensor([[1], [0]]))  # the tensor op, no process group needed
    np.testing.assert_array_equal(got.numpy(), [[2.0], [3.0]])
    seen = {}
    for mod in ["sneppx_core", *SIBLINGS]:
        for name in importlib.import_module(mod).__all__:
            if not name.startswith("__"):
                seen.setdefault(name, getattr(importlib.import_module(mod), name))
    for name, obj in seen.items():
        if name == "utils":  # SneppX_ALG.utils is torch.utils' counterpart; sneppx_nn.utils is SneppX_ALG.nn.utils
            assert SneppX_ALG.nn.utils is obj and SneppX_ALG.utils.data is importlib.import_module("sneppx_data")
            continue
        assert getattr(SneppX_ALG, name) is obj, name


def test_versions_and_flags():
    import SneppX_ALG

    assert set(SneppX_ALG.versions) == {"sneppx-alg", "sneppx-core", "sneppx-nn", "sneppx-optim", "sneppx-data",
                                        "sneppx-distributed", "sneppx-generate"}
    assert SneppX_ALG._HAS_C_BACKEND is True
    assert isinstance(SneppX_ALG.__version__, str)


def test_guide_module_paths():
    from SneppX_ALG.interface_bindings.dataloader import DataLoader
    from SneppX_ALG.interface_bindings.generation import GenerationConfig, generate

    import sneppx_data
    import sneppx_generate

    assert DataLoader is sneppx_data.DataLoader
    assert generate is sneppx_generate.generate and GenerationConfig is sneppx_generate.GenerationConfig


def test_pytorch_module_paths_with_torch_renamed():
    """`torch.<path>` imports as `SneppX_ALG.<path>` and gives the component packages' own modules."""
    import sneppx_core
    import sneppx_data
    import sneppx_nn
    import sneppx_optim

    import SneppX_ALG.nn as nn
    import SneppX_ALG.nn.functional as F
    import SneppX_ALG.nn.utils.rnn as rnn
    import SneppX_ALG.optim.lr_scheduler as lr_scheduler
    from SneppX_ALG.autograd import Function
    from SneppX_ALG.autograd.functional import jacobian
    from SneppX_ALG.utils.checkpoint import checkpoint
    from SneppX_ALG.utils.data import DataLoader
    from SneppX_ALG.utils.data.distributed import DistributedSampler

    assert nn is sneppx_nn and F is sneppx_nn.functional and rnn is sneppx_nn.utils.rnn
    assert lr_scheduler is sneppx_optim.lr_scheduler and DataLoader is sneppx_data.DataLoader
    assert Function is sneppx_core.autograd.Function and jacobian is sneppx_core.autograd.functional.jacobian
    assert checkpoint is sneppx_core.utils.checkpoint.checkpoint
    assert DistributedSampler is importlib.import_module("sneppx_data.distributed").DistributedSampler
    from SneppX_ALG.nn.parallel import DistributedDataParallel as DDP

    assert DDP is importlib.import_module("sneppx_distributed").DistributedDataParallel
    import SneppX_ALG as torch

    assert (torch.double, torch.float, torch.long, torch.half) == (sneppx_core.float64, sneppx_core.float32,
                                                                  sneppx_core.int64, sneppx_core.float16)
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("SneppX_ALG.nn.no_such_module")
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("SneppX_ALG.no_such_module")


def test_pytorch_paths_programs_name():
    """The paths programs name besides the import lines: torch.nn.modules.<file>, torch.utils.tensorboard,
    torch.jit / compile / random / serialization; an aliased module keeps its own __spec__."""
    import sneppx_core
    import sneppx_data
    import sneppx_nn

    import SneppX_ALG as torch
    import SneppX_ALG.nn.modules.rnn as rnn_file
    import SneppX_ALG.utils.data  # noqa: F401
    from SneppX_ALG.nn.modules.utils import _pair

    assert torch.nn.modules.dropout.Dropout is sneppx_nn.Dropout and rnn_file.LSTM is sneppx_nn.LSTM
    assert _pair(3) == (3, 3) and torch.nn.modules.linear.NonDynamicallyQuantizableLinear(2, 2).out_features == 2
    assert sneppx_data.__spec__.name == "sneppx_data"  # not the alias's name
    assert (torch.jit, torch.compiler, torch.random, torch.serialization) == (
        sneppx_core.jit, sneppx_core.compiler, sneppx_core.random, sneppx_core.serialization)
    assert torch.compile is sneppx_core.compile and torch.Size is sneppx_core.Size
    assert "random" not in torch.__all__ and "jit" not in torch.__all__  # modules stay out of star imports
    import SneppX_ALG.onnx as onnx  # word_language_model imports it at the top; exporting raises

    assert onnx is sneppx_core.onnx and onnx.is_in_onnx_export() is False
    with pytest.raises(NotImplementedError, match=r"\[onnx.export\] SneppX has no ONNX exporter"):
        torch.onnx.export(None, (), "model.onnx")
    if "sneppx-optim" in torch.versions:
        import sneppx_optim
        from SneppX_ALG.utils.tensorboard import SummaryWriter

        assert SummaryWriter is sneppx_optim.SummaryWriter is torch.utils.tensorboard.SummaryWriter


def _imports(path: pathlib.Path):
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, node.lineno
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module, node.lineno
            if node.module == "sneppx_core":
                for a in node.names:
                    yield f"sneppx_core.{a.name}", node.lineno


@pytest.mark.parametrize("pkg", SIBLINGS)
def test_siblings_import_only_core_public_api(pkg):
    src = ROOT / "packages" / pkg.replace("_", "-") / "src" / pkg
    bad = []
    for f in src.rglob("*.py"):
        for name, line in _imports(f):
            top = name.split(".")[0]
            if top.startswith("sneppx") and top not in (pkg, "sneppx_core"):
                bad.append(f"{f.name}:{line} imports {name}")
            if top == "sneppx_core" and any(part.startswith("_") for part in name.split(".")[1:]):
                bad.append(f"{f.name}:{line} uses private {name}")
    assert not bad, bad


def test_generate_runs_without_the_training_packages():
    """core + generate alone run inference: importing any other sibling is made to fail."""
    code = r"""
import sys, importlib.abc
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split('.')[0] in ('sneppx_nn', 'sneppx_optim', 'sneppx_data', 'sneppx_distributed', 'SneppX_ALG'):
            raise ImportError('blocked: ' + name)
sys.meta_path.insert(0, Block())
import sneppx_core as sx
from sneppx_generate import generate, GenerationConfig, SimpleTokenizer
class Bigram:
    def __init__(self, v):
        self.table = sx.randn(v, v)
    def __call__(self, ids, cache=None):
        return self.table[ids]
tok = SimpleTokenizer(); tok.train('hello world')
out = generate(Bigram(tok.vocab_size), tok.encode('hel'), GenerationConfig(max_new_tokens=5))
assert out['output_ids'].shape == (1, 8)
print('ok')
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
