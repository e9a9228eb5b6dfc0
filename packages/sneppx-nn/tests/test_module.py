"""Module registration, traversal, modes, state_dict, to(), hooks and repr."""

import copy
import pickle

import numpy as np
import pytest
import sneppx_core as sx

import sneppx_nn as nn
from conftest import to_np


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 3)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(3, 2, bias=False)
        self.scale = nn.Parameter(sx.ones(2))
        self.register_buffer("steps", sx.zeros(1))
        self.register_buffer("scratch", sx.zeros(2), persistent=False)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x))) * self.scale


def test_parameter_is_leaf_with_grad_and_copies_data():
    data = sx.randn(2, 3)
    p = nn.Parameter(data)
    assert isinstance(p, sx.Tensor) and p.requires_grad and p.is_leaf
    np.testing.assert_array_equal(to_np(p), to_np(data))
    assert nn.Parameter(data, requires_grad=False).requires_grad is False
    assert nn.Parameter(sx.zeros(2, dtype=sx.float64)).dtype == sx.float64
    assert "Parameter containing" in repr(p)


def test_registration_and_traversal():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == ["scale", "fc1.weight", "fc1.bias", "fc2.weight"]
    assert [n for n, _ in net.named_buffers()] == ["steps", "scratch"]
    assert [n for n, _ in net.named_children()] == ["fc1", "act", "fc2"]
    assert [n for n, _ in net.named_modules()] == ["", "fc1", "act", "fc2"]
    assert len(list(net.parameters(recurse=False))) == 1
    assert net.num_parameters() == 4 * 3 + 3 + 3 * 2 + 2
    net.fc2.weight.requires_grad_(False)
    assert net.num_parameters(only_trainable=True) == 4 * 3 + 3 + 2
    assert net.get_submodule("fc1") is net.fc1
    with pytest.raises(AttributeError, match="nope"):
        net.get_submodule("nope")


def test_reassignment_and_deletion():
    net = Net()
    with pytest.raises(TypeError, match="scale"):
        net.scale = sx.ones(2)  # a plain tensor cannot replace a parameter
    net.scale = None
    assert "scale" not in dict(net.named_parameters())
    net.steps = sx.ones(1)
    assert to_np(net.state_dict()["steps"]).tolist() == [1.0]
    del net.fc2
    assert "fc2" not in dict(net.named_children())
    with pytest.raises(AttributeError):
        _ = net.fc2


def test_shared_parameters_listed_once():
    a = nn.Linear(2, 2)
    seq = nn.Sequential(a, a)
    assert len(list(seq.parameters())) == 2
    assert len(list(seq.named_modules())) == 2


def test_state_dict_keys_and_sharing():
    net = Net()
    sd = net.state_dict()
    assert list(sd) == ["scale", "steps", "fc1.weight", "fc1.bias", "fc2.weight"]
    assert not sd["fc1.weight"].requires_grad
    with sx.no_grad():
        net.fc1.weight.fill_(3.0)
    assert to_np(sd["fc1.weight"]).max() == 3.0  # detached views share memory


def test_load_state_dict_roundtrip_in_place():
    src, dst = Net(), Net()
    weight_obj = dst.fc1.weight
    result = dst.load_state_dict(src.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert dst.fc1.weight is weight_obj and weight_obj.requires_grad
    for k, v in src.state_dict().items():
        np.testing.assert_array_equal(to_np(v), to_np(dst.state_dict()[k]))


def test_load_state_dict_numpy_values_and_errors():
    net = Net()
    sd = {k: to_np(v) for k, v in net.state_dict().items()}
    sd["fc1.weight"] = np.full((3, 4), 0.5)
    net.load_state_dict(sd)
    assert np.all(to_np(net.fc1.weight) == 0.5)
    bad = dict(sd)
    bad.pop("fc1.bias")
    bad["extra"] = np.zeros(1)
    bad["fc2.weight"] = np.zeros((5, 5))
    before = to_np(net.fc2.weight)
    with pytest.raises(RuntimeError) as e:
        net.load_state_dict(bad)
    msg = str(e.value)
    assert "fc1.bias" in msg and "extra" in msg and "size mismatch for fc2.weight" in msg
    np.testing.assert_array_equal(to_np(net.fc2.weight), before)  # nothing copied
    bad.pop("fc2.weight")
    res = net.load_state_dict(bad, strict=False)
    assert res.missing_keys == ["fc1.bias", "fc2.weight"] and res.unexpected_keys == ["extra"]
    with pytest.raises(TypeError):
        net.load_state_dict([1, 2])


def test_train_eval_apply_requires_grad():
    net = Net()
    assert net.training and net.fc1.training
    assert net.eval() is net and not net.fc1.training
    assert net.train() is net and net.fc2.training
    with pytest.raises(ValueError):
        net.train("yes")
    seen = []
    assert net.apply(lambda m: seen.append(type(m).__name__)) is net
    assert seen == ["Linear", "ReLU", "Linear", "Net"]
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())


def test_zero_grad():
    net = Net()
    net(sx.randn(5, 4)).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad(set_to_none=False)
    assert all(np.all(to_np(p.grad) == 0) for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_to_dtype_converts_floating_tensors():
    net = Net()
    before = to_np(net.fc1.weight)
    assert net.to(sx.float64) is net
    assert all(p.dtype == sx.float64 and p.requires_grad for p in net.parameters())
    assert net.steps.dtype == sx.float64
    np.testing.assert_allclose(to_np(net.fc1.weight), before)
    out = net(sx.randn(2, 4, dtype=sx.float64))
    assert out.dtype == sx.float64
    net.to("float32").to("cpu")
    assert net.fc1.weight.dtype == sx.float32
    with pytest.raises(TypeError):
        net.to(sx.int64)


def test_hooks_run_and_modify_and_remove():
    lin = nn.Linear(2, 2)
    calls = []
    h1 = lin.register_forward_pre_hook(lambda m, args: (args[0] * 0,))
    h2 = lin.register_forward_hook(lambda m, args, out: calls.append(out.shape) or out + 1)
    out = lin(sx.ones(3, 2))
    np.testing.assert_allclose(to_np(out), np.tile(to_np(lin.bias) + 1, (3, 1)), rtol=1e-6)
    assert calls == [(3, 2)]
    h1.remove()
    h2.remove()
    np.testing.assert_allclose(to_np(lin(sx.zeros(1, 2))), to_np(lin.bias)[None], rtol=1e-6)
    assert calls == [(3, 2)]


def test_repr_tree_like_pytorch():
    seq = nn.Sequential(nn.Linear(4, 8), nn.GELU(approximate="tanh"), nn.Dropout(0.1), nn.LayerNorm(8))
    assert repr(seq) == (
        "Sequential(\n"
        "  (0): Linear(in_features=4, out_features=8, bias=True)\n"
        "  (1): GELU(approximate='tanh')\n"
        "  (2): Dropout(p=0.1, inplace=False)\n"
        "  (3): LayerNorm((8,), eps=1e-05, elementwise_affine=True)\n"
        ")")


def test_forward_missing_raises():
    class NoForward(nn.Module):
        pass

    with pytest.raises(NotImplementedError, match="NoForward"):
        NoForward()(1)


def test_assign_before_init_raises():
    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(sx.ones(1))

    with pytest.raises(AttributeError, match="__init__"):
        Early()


def test_deepcopy_and_pickle_keep_values():
    net = Net()
    for clone in (copy.deepcopy(net), pickle.loads(pickle.dumps(net))):
        assert isinstance(clone.fc1.weight, nn.Parameter) and clone.fc1.weight is not net.fc1.weight
        for k, v in net.state_dict().items():
            np.testing.assert_array_equal(to_np(v), to_np(clone.state_dict()[k]))


def test_config_recorded_for_opted_in_layers():
    lin = nn.Linear(3, 4, bias=False, dtype=sx.float64)
    cfg = lin.get_config()
    assert cfg["class"] == "Linear" and cfg["kwargs"]["in_features"] == 3
    assert cfg["kwargs"]["bias"] is False and cfg["kwargs"]["dtype"] == "float64"
    assert Net().get_config() is None  # not opted in

    class Sub(nn.Linear):
        pass

    assert Sub(2, 5).get_config()["class"] == "test_config_recorded_for_opted_in_layers.<locals>.Sub"

    class Custom(nn.Linear, record_config=False):
        def __init__(self):
            super().__init__(2, 2)

    assert Custom().get_config() is None
