"""The NCCL backend: the library from the nvidia-nccl-cu13 wheel (loads and answers without a GPU),
and collectives and DDP on GPUs (marked ``cuda``; skipped without enough visible GPUs)."""

import importlib.util

import numpy as np
import pytest
import sneppx_core as sx
import sneppx_distributed as dist
from nccl_helpers import collectives, ddp_steps
from sneppx_distributed import _nccl

try:
    HAS_WHEEL = importlib.util.find_spec("nvidia.nccl") is not None
except ModuleNotFoundError:  # no nvidia namespace package at all
    HAS_WHEEL = False
GPUS = sx.cuda.device_count() if sx.cuda.is_available() else 0


@pytest.mark.skipif(not HAS_WHEEL, reason="nvidia-nccl-cu13 is not installed (the cuda nox session installs it)")
def test_the_library_loads_and_makes_ids_without_a_gpu():
    major, minor, _ = _nccl.version()
    assert (major, minor) >= (2, 20)
    a, b = _nccl.unique_id(), _nccl.unique_id()
    assert len(a) == len(b) == 128 and a != b
    assert _nccl.dtype_code(sx.bfloat16, "t") == 9 and _nccl.op_code("avg", sx.float32, "t") == 4
    assert _nccl.op_code("sum", sx.bool, "t") == 2  # logical or: NCCL's max on bytes
    with pytest.raises(NotImplementedError, match="no 'bxor' reduction for .*int64"):
        _nccl.op_code("bxor", sx.int64, "all_reduce")


def test_missing_library_says_how_to_install_it(monkeypatch):
    monkeypatch.delenv("SNEPPX_NCCL_LIBRARY", raising=False)
    monkeypatch.setitem(__import__("sys").modules, "nvidia.nccl", None)  # as if the wheel were not installed
    monkeypatch.setattr(_nccl, "_lib", None)
    with pytest.raises(RuntimeError, match=r"pip install 'sneppx-distributed\[cuda\]'"):
        _nccl.library()
    monkeypatch.setenv("SNEPPX_NCCL_LIBRARY", "/nonexistent/libnccl.so.2")
    with pytest.raises(OSError, match="nonexistent"):
        _nccl.library()


@pytest.mark.skipif(GPUS > 0, reason="a GPU is visible")
def test_nccl_backend_needs_a_gpu():
    with pytest.raises(RuntimeError, match="backend 'nccl' needs CUDA tensors"):
        dist.init_process_group("nccl")
    with pytest.raises(RuntimeError, match="num_gpus=1 but no CUDA device is available"):
        dist.launch(collectives, num_gpus=1)



@pytest.mark.cuda
@pytest.mark.skipif(GPUS < 1, reason="needs a visible GPU")
@pytest.mark.parametrize("n", [1, 2])
def test_collectives_on_gpus(n):
    if GPUS < n:
        pytest.skip(f"needs {n} GPUs")
    out = dist.launch(collectives, num_gpus=n)
    total = n * (n + 1) / 2
    assert out["backend"] == "nccl" and out["device"] == "cuda:0"
    assert out["sum"] == [total] * 5 and out["avg"] == [total / n] * 3 and out["max"] == [n - 1, 0]
    assert out["broadcast"] == [float(i * n) for i in range(4)]
    assert out["all_gather"] == [[float(r)] * 2 for r in range(n)]
    assert out["all_gather_into_tensor"] == [float(r) for r in range(n) for _ in range(2)]
    assert out["reduce_scatter_tensor"] == [float(n * k) for k in range(2)]
    assert "the NCCL backend of this rank handles tensors on cuda:0" in out["cpu_error"]


@pytest.mark.cuda
@pytest.mark.skipif(GPUS < 2, reason="needs two visible GPUs")
def test_ddp_on_two_gpus_matches_one():
    one, two = dist.launch(ddp_steps, num_gpus=1, args=(5, 3)), dist.launch(ddp_steps, num_gpus=2, args=(5, 3))
    for a, b in zip(one["weights"], two["weights"]):
        np.testing.assert_allclose(np.array(b), np.array(a), rtol=1e-5, atol=1e-6)
