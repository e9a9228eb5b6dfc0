"""`import SneppX_ALG.backends.<name>` (PyTorch's `import torch.backends.cudnn as cudnn`) gives sneppx_core's
backends submodules, the same objects as the attributes."""

from __future__ import annotations

import importlib
import sys

import pytest


@pytest.mark.parametrize("name", ["cudnn", "cuda", "cpu", "mps", "mkldnn", "mkl", "openmp", "opt_einsum"])
def test_backends_submodules_import_with_torch_renamed(name):
    import sneppx_core

    import SneppX_ALG

    module = importlib.import_module(f"SneppX_ALG.backends.{name}")
    assert module is getattr(sneppx_core.backends, name) is getattr(SneppX_ALG.backends, name)
    assert module is sys.modules[f"sneppx_core.backends.{name}"]
    assert module.__spec__.name == f"sneppx_core.backends.{name}"  # its own spec, not the alias's


def test_cudnn_import_line_of_dcgan():
    import SneppX_ALG.backends.cudnn as cudnn
    from SneppX_ALG.backends import cudnn as same

    assert cudnn is same and cudnn.is_available() is False
    cudnn.benchmark = True
    try:
        assert importlib.import_module("sneppx_core").backends.cudnn.benchmark is True
    finally:
        cudnn.benchmark = False
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("SneppX_ALG.backends.no_such_backend")
