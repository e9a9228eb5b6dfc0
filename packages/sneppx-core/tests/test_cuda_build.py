"""What a build says about CUDA on this machine: a CPU build, a CUDA build without a visible GPU
(both run anywhere), and the errors of both. The GPU comparisons are in test_cuda.py."""

from __future__ import annotations

import pytest
import sneppx_core as sx

NO_GPU = not sx.cuda.is_available()


@pytest.mark.skipif(sx._HAS_CUDA, reason="a CUDA build")
def test_cpu_build_has_no_cuda():
    assert sx.cuda.is_available() is False and sx.cuda.device_count() == 0
    for f in (lambda: sx.ones(2).to("cuda"), lambda: sx.zeros(2, device="cuda"), sx.cuda.synchronize,
              sx.cuda.memory_allocated):
        with pytest.raises(RuntimeError, match="this build of sneppx-core has no CUDA"):
            f()


@pytest.mark.skipif(not (sx._HAS_CUDA and NO_GPU), reason="needs a CUDA build on a machine without a GPU")
def test_cuda_build_without_a_gpu():
    assert sx.cuda.is_available() is False and sx.cuda.device_count() == 0
    assert sx.accelerator.current_accelerator() == sx.device("cuda")
    assert sx.accelerator.current_accelerator(check_available=True) is None
    x = sx.ones(2, 3)
    for f in (lambda: x.to("cuda"), x.cuda, lambda: x.to("cuda:1"), lambda: sx.zeros(2, device="cuda"),
              lambda: sx.empty(2, device="cuda"), lambda: sx.tensor([1.0], device="cuda:0"),
              lambda: x.to(sx.device("cuda", 0)), lambda: x.to("cuda", sx.float64)):
        with pytest.raises(RuntimeError, match=r"\[cuda\] no CUDA device is visible"):
            f()
    for name in ("synchronize", "memory_allocated", "max_memory_allocated", "memory_reserved",
                 "reset_peak_memory_stats", "get_device_name", "current_device"):
        with pytest.raises(RuntimeError, match=rf"\[cuda\.{name}\] no CUDA device is visible"):
            getattr(sx.cuda, name)()
    sx.cuda.empty_cache()  # nothing cached, nothing to do
    sx.cuda.manual_seed_all(0)
    assert x.device == "cpu" and x.sum().item() == 6.0  # the CPU side is untouched
