"""load_state_dict's backward-compatibility rule from PyTorch: a 1-d value of one element loads into a 0-d
parameter or buffer (old checkpoints stored scalars such as BatchNorm's ``num_batches_tracked`` as [n])."""

import numpy as np
import pytest
import sneppx_core as sx

import sneppx_nn as nn


class Scalar(nn.Module):
    """A module with a 0-d parameter and a 0-d buffer."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(sx.tensor(1.0, dtype=sx.float64))
        self.register_buffer("count", sx.tensor(0))


def test_one_element_1d_value_loads_into_0d_buffer():
    bn = nn.BatchNorm1d(3)
    sd = bn.state_dict()
    sd["num_batches_tracked"] = sx.tensor([7])
    assert bn.load_state_dict(sd) == ([], [])
    assert tuple(bn.num_batches_tracked.shape) == () and bn.num_batches_tracked.item() == 7
    sd["num_batches_tracked"] = np.array([9], dtype=np.int64)
    bn.load_state_dict(sd)
    assert tuple(bn.num_batches_tracked.shape) == () and bn.num_batches_tracked.item() == 9


def test_one_element_1d_value_loads_into_0d_parameter_in_place():
    m = Scalar()
    p = m.scale
    m.load_state_dict({"scale": sx.tensor([2.5], dtype=sx.float64), "count": sx.tensor([4])})
    assert m.scale is p and isinstance(m.scale, nn.Parameter) and tuple(m.scale.shape) == ()
    assert m.scale.item() == 2.5 and m.count.item() == 4


@pytest.mark.parametrize("value,shape", [([1, 2], r"\(2,\)"), ([[3]], r"\(1, 1\)"), ([], r"\(0,\)")])
def test_other_shapes_still_mismatch(value, shape):
    m = Scalar()
    with pytest.raises(RuntimeError, match=r"size mismatch for count: copying a param with shape " + shape):
        m.load_state_dict({"scale": sx.tensor(1.0, dtype=sx.float64), "count": sx.tensor(value, dtype=sx.int64)})
    assert m.count.item() == 0  # nothing was copied


def test_0d_value_does_not_load_into_one_element_1d_parameter():
    lin = nn.Linear(2, 1)
    sd = lin.state_dict()
    sd["bias"] = sx.tensor(0.5)
    with pytest.raises(RuntimeError, match=r"size mismatch for bias: copying a param with shape \(\) from"):
        lin.load_state_dict(sd)


@pytest.mark.parity
def test_matches_torch():
    torch = pytest.importorskip("torch")
    for value in ([7], [1, 2], [[3]]):
        t, s = torch.nn.BatchNorm1d(3), nn.BatchNorm1d(3)
        tsd, ssd = t.state_dict(), s.state_dict()
        tsd["num_batches_tracked"] = torch.tensor(value)
        ssd["num_batches_tracked"] = sx.tensor(value, dtype=sx.int64)
        try:
            t.load_state_dict(tsd)
        except RuntimeError:
            with pytest.raises(RuntimeError, match="size mismatch for num_batches_tracked"):
                s.load_state_dict(ssd)
        else:
            s.load_state_dict(ssd)
            assert s.num_batches_tracked.item() == t.num_batches_tracked.item()
            assert tuple(s.num_batches_tracked.shape) == tuple(t.num_batches_tracked.shape) == ()


@pytest.mark.parity
def test_parity_pytorch_tensors_are_named_in_the_error():
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match=r"got torch.Tensor \(a PyTorch tensor: pass value.numpy\(\)"):
        nn.Linear(2, 2).load_state_dict(torch.nn.Linear(2, 2).state_dict())


def _fused_qkv_model(lib):
    """A module whose pre-hook maps separate wq/wk/wv keys onto one fused wqkv weight (gpt-fast's pattern)."""

    class Attn(lib.Module):
        def __init__(self):
            super().__init__()
            self.wqkv = lib.Linear(2, 6, bias=False)
            self._register_load_state_dict_pre_hook(self.fuse)

        @staticmethod
        def fuse(state, prefix, *args):
            if prefix + "wq" in state:
                parts = [state.pop(prefix + n) for n in ("wq", "wk", "wv")]
                state[prefix + "wqkv.weight"] = parts[0].__class__(np.concatenate([np.asarray(p) for p in parts]))

    class Net(lib.Module):
        def __init__(self):
            super().__init__()
            self.attn = Attn()

    return Net()


def test_load_state_dict_hooks_and_assign():
    net = _fused_qkv_model(nn)
    parts = {f"attn.{n}": np.full((2, 2), i, np.float32) for i, n in enumerate(("wq", "wk", "wv"))}
    given = dict(parts)
    assert net.load_state_dict({k: sx.tensor(v) for k, v in given.items()}) == ([], [])
    np.testing.assert_array_equal(net.attn.wqkv.weight.detach().numpy(), np.concatenate(list(parts.values())))
    seen = []
    handle = net.register_load_state_dict_post_hook(lambda m, keys: (seen.append(list(keys.missing_keys)),
                                                                      keys.missing_keys.clear()))
    assert net.load_state_dict({}, strict=False).missing_keys == [] and seen == [["attn.wqkv.weight"]]
    handle.remove()
    assert net.load_state_dict({}, strict=False).missing_keys == ["attn.wqkv.weight"]
    lin = nn.Linear(2, 3)
    lin.weight.requires_grad_(False)
    w = sx.full((3, 2), 2.0, dtype=sx.float64)
    lin.load_state_dict({"weight": w, "bias": sx.zeros(3)}, assign=True)
    assert isinstance(lin.weight, nn.Parameter) and lin.weight.dtype == sx.float64
    assert not lin.weight.requires_grad and lin.weight.data_ptr() == w.data_ptr()
    with pytest.raises(RuntimeError, match="size mismatch"):
        lin.load_state_dict({"weight": sx.zeros(2, 2), "bias": sx.zeros(3)}, assign=True)


@pytest.mark.parity
def test_parity_load_state_dict_pre_hook_and_assign():
    torch = pytest.importorskip("torch")
    parts = {f"attn.{n}": np.full((2, 2), i + 1, np.float32) for i, n in enumerate(("wq", "wk", "wv"))}
    t, s = _fused_qkv_model(torch.nn), _fused_qkv_model(nn)
    t.load_state_dict({k: torch.tensor(v) for k, v in parts.items()})
    s.load_state_dict({k: sx.tensor(v) for k, v in parts.items()})
    np.testing.assert_array_equal(s.attn.wqkv.weight.detach().numpy(), t.attn.wqkv.weight.detach().numpy())
    tl, sl = torch.nn.Linear(2, 3), nn.Linear(2, 3)
    tl.load_state_dict({"weight": torch.ones(3, 2, dtype=torch.float64), "bias": torch.zeros(3)}, assign=True)
    sl.load_state_dict({"weight": sx.ones(3, 2, dtype=sx.float64), "bias": sx.zeros(3)}, assign=True)
    assert str(sl.weight.dtype).split(".")[-1] == str(tl.weight.dtype).split(".")[-1]
    assert sl.weight.requires_grad == tl.weight.requires_grad
