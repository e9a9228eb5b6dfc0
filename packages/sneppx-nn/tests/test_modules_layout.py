"""sneppx_nn.modules: torch.nn.modules' file layout over sneppx_nn's own classes."""

import importlib

import pytest
import sneppx_core
import sneppx_nn
import sneppx_nn.modules as modules


def test_each_file_holds_the_package_classes():
    for file, names in modules._LAYOUT.items():
        mod = importlib.import_module(f"sneppx_nn.modules.{file}")
        assert getattr(modules, file) is mod
        for name in names.split():
            assert getattr(mod, name) is getattr(sneppx_nn, name) is getattr(modules, name)
    assert sneppx_nn.modules.dropout.Dropout is sneppx_nn.Dropout
    assert sneppx_nn.modules.module.Module is sneppx_nn.Module


def test_tuple_helpers_and_marker_linear():
    from sneppx_nn.modules.utils import _ntuple, _pair, _quadruple, _reverse_repeat_tuple, _single, _triple

    assert (_single(3), _pair(3), _triple(2), _quadruple(1)) == ((3,), (3, 3), (2, 2, 2), (1, 1, 1, 1))
    assert _pair((1, 2)) == (1, 2) and _pair([4, 5]) == (4, 5) and _ntuple(5)(0) == (0,) * 5
    assert _reverse_repeat_tuple((1, 2), 2) == (2, 2, 1, 1)
    lin = sneppx_nn.modules.linear.NonDynamicallyQuantizableLinear(3, 2)
    assert isinstance(lin, sneppx_nn.Linear) and lin(sneppx_core.ones(4, 3)).shape == (4, 2)


@pytest.mark.parity
def test_layout_matches_pytorch():
    tm = pytest.importorskip("torch.nn.modules")

    for name in tm.__all__:
        cls = getattr(tm, name)
        if not hasattr(sneppx_nn, name):
            continue
        file = cls.__module__.rsplit(".", 1)[-1]
        if file == "linear_cross_entropy_options":  # a dataclass module of its own in PyTorch
            continue
        assert getattr(getattr(modules, file), name) is getattr(sneppx_nn, name), (file, name)
