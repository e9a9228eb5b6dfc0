"""Checkpoints: safetensors round trips, metadata, atomic writes, PyTorch interchange."""

import json
import os
import pickle
import struct

import numpy as np
import pytest
import sneppx_core as sx

import sneppx_nn as nn
from sneppx_nn import checkpoint
from conftest import to_np


def _state(rng):
    return {
        "f32": sx.Tensor(rng.standard_normal((3, 4)).astype(np.float32)),
        "f64": sx.Tensor(rng.standard_normal(5)),
        "f16": sx.Tensor(rng.standard_normal((2, 2)).astype(np.float16)),
        "bf16": sx.Tensor(rng.standard_normal((4, 3)).astype(np.float32)).to(sx.bfloat16),
        "i64": sx.Tensor(rng.integers(-5, 5, (6,))),
        "i32": sx.Tensor(rng.integers(-5, 5, (2, 3)).astype(np.int32)),
        "flag": sx.Tensor(np.array([True, False, True])),
        "u8": sx.Tensor(np.arange(4, dtype=np.uint8)),
        "i8": sx.Tensor(np.array([-128, 0, 127], dtype=np.int8)),
        "i16": sx.Tensor(rng.integers(-30000, 30000, (2, 2)).astype(np.int16)),
        "strided": sx.Tensor(rng.standard_normal((3, 5)).astype(np.float32)).transpose(0, 1),
    }


def test_roundtrip_all_dtypes_bit_exact(tmp_path, rng):
    state = _state(rng)
    path = tmp_path / "s.safetensors"
    nn.save(state, path)
    back = nn.load(path)
    assert set(back) == set(state)
    for k, v in state.items():
        assert back[k].dtype == v.dtype and back[k].shape == v.shape, k
        np.testing.assert_array_equal(to_np(back[k]), to_np(v))
    meta = nn.read_metadata(path)
    assert meta["format"] == "sneppx-checkpoint" and meta["format_version"] == 1
    assert meta["versions"]["sneppx_core"] == sx.__version__ and meta["versions"]["sneppx_nn"] == nn.__version__
    assert meta["config"] is None


def test_file_is_plain_safetensors_with_json_header(tmp_path):
    path = tmp_path / "m.safetensors"
    nn.Linear(2, 3).save_checkpoint(path, metadata={"step": 7})
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    assert header["weight"]["dtype"] == "F32" and header["weight"]["shape"] == [3, 2]
    meta = json.loads(header["__metadata__"]["sneppx"])
    assert meta["step"] == 7 and meta["config"]["class"] == "Linear"


def test_module_checkpoint_and_from_checkpoint(tmp_path):
    ln = nn.LayerNorm((2, 3), eps=1e-3, bias=False)
    with sx.no_grad():
        ln.weight.copy_(sx.randn(2, 3))
    path = tmp_path / "ln.safetensors"
    ln.save_checkpoint(str(path))
    rebuilt = nn.LayerNorm.from_checkpoint(path)
    assert rebuilt.normalized_shape == (2, 3) and rebuilt.eps == 1e-3 and rebuilt.bias is None
    np.testing.assert_array_equal(to_np(rebuilt.weight), to_np(ln.weight))
    generic = nn.Module.from_checkpoint(path)  # finds the class among imported subclasses
    assert type(generic) is nn.LayerNorm
    with pytest.raises(ValueError, match="LayerNorm"):
        nn.Linear.from_checkpoint(path)
    other = nn.LayerNorm((2, 3), bias=False)
    other.load_checkpoint(path)
    np.testing.assert_array_equal(to_np(other.weight), to_np(ln.weight))
    with pytest.raises(RuntimeError, match="size mismatch"):
        nn.LayerNorm(4).load_checkpoint(path)


def test_bfloat16_module_roundtrip(tmp_path):
    lin = nn.Linear(4, 3).to(sx.bfloat16)
    path = tmp_path / "bf.safetensors"
    lin.save_checkpoint(path)
    back = nn.Linear.from_checkpoint(path)  # built in float32, then cast to the file's bfloat16
    assert back.weight.dtype == sx.bfloat16 and back.bias.dtype == sx.bfloat16
    np.testing.assert_array_equal(to_np(back.weight), to_np(lin.weight))
    raw = nn.load(path)
    assert raw["weight"].dtype == sx.bfloat16


def test_from_checkpoint_without_config(tmp_path):
    path = tmp_path / "plain.safetensors"
    nn.save({"w": sx.ones(2)}, path)
    with pytest.raises(ValueError, match="no constructor config"):
        nn.Linear.from_checkpoint(path)
    bad = nn.CrossEntropyLoss(weight=sx.ones(3))  # a tensor argument cannot be recorded
    assert bad.get_config() is None


def test_atomic_write_keeps_old_file_on_crash(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.safetensors"
    nn.save({"w": sx.ones(3)}, path)
    before = path.read_bytes()

    def crash(arrays, tmp, header):
        with open(tmp, "wb") as fh:
            fh.write(b"half-written")
        raise KeyboardInterrupt

    monkeypatch.setattr(checkpoint, "_write", crash)
    with pytest.raises(KeyboardInterrupt):
        nn.save({"w": sx.zeros(3)}, path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["ckpt.safetensors"]


def test_load_rejects_non_safetensors(tmp_path):
    path = tmp_path / "model.pt"
    path.write_bytes(pickle.dumps({"w": np.ones(2)}))
    with pytest.raises(ValueError, match="not a safetensors file"):
        nn.load(path)
    with pytest.raises(FileNotFoundError):
        nn.load(tmp_path / "missing.safetensors")
    with pytest.raises(TypeError):
        nn.save({"w": [1, 2]}, tmp_path / "x.safetensors")


@pytest.mark.parity
def test_pytorch_reads_sneppx_files(tmp_path, rng):
    torch = pytest.importorskip("torch")
    from safetensors.torch import load_file

    state = _state(rng)
    path = tmp_path / "s.safetensors"
    nn.save(state, path)
    loaded = load_file(str(path))
    assert loaded["bf16"].dtype == torch.bfloat16 and loaded["flag"].dtype == torch.bool
    for k, v in state.items():
        np.testing.assert_array_equal(loaded[k].float().numpy() if k == "bf16" else loaded[k].numpy(), to_np(v))


@pytest.mark.parity
def test_sneppx_reads_pytorch_files(tmp_path):
    torch = pytest.importorskip("torch")
    from safetensors.torch import save_file

    torch.manual_seed(0)
    tensors = {"a": torch.randn(3, 4), "b": torch.randn(5).to(torch.bfloat16), "c": torch.arange(6).reshape(2, 3),
               "d": torch.randn(2).double(), "e": torch.randn(2).half()}
    path = tmp_path / "t.safetensors"
    save_file(tensors, str(path), metadata={"source": "torch"})
    back = nn.load(path)
    assert back["b"].dtype == sx.bfloat16 and back["c"].dtype == sx.int64 and back["e"].dtype == sx.float16
    for k, v in tensors.items():
        np.testing.assert_array_equal(to_np(back[k]), v.float().numpy() if k == "b" else v.numpy())
    assert nn.read_metadata(path) == {"source": "torch"}
