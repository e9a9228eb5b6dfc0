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
              lambda: sx.cuda.memory_allocated(0)):
        with pytest.raises(RuntimeError, match="this build of sneppx-core has no CUDA"):
            f()
    _no_gpu_in_use()


def _no_gpu_in_use():
    """The current device's memory statistics are 0 (as PyTorch's before CUDA is initialised)."""
    assert sx.cuda.memory_allocated() == sx.cuda.max_memory_allocated() == sx.cuda.memory_reserved() == 0
    assert sx.cuda.memory_stats() == {}
    sx.cuda.reset_peak_memory_stats()


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
    for name in ("synchronize", "get_device_name", "current_device"):
        with pytest.raises(RuntimeError, match=rf"\[cuda\.{name}\] no CUDA device is visible"):
            getattr(sx.cuda, name)()
    for name in ("memory_allocated", "max_memory_allocated", "memory_reserved", "reset_peak_memory_stats"):
        with pytest.raises(RuntimeError, match=rf"\[cuda\.{name}\] no CUDA device is visible"):
            getattr(sx.cuda, name)(0)
    _no_gpu_in_use()
    sx.cuda.empty_cache()  # nothing cached, nothing to do
    sx.cuda.manual_seed_all(0)
    assert x.device == "cpu" and x.sum().item() == 6.0  # the CPU side is untouched


@pytest.mark.skipif(not NO_GPU, reason="a GPU is visible")
def test_streams_events_and_pinned_memory_need_a_gpu():
    x = sx.ones(3)
    assert x.is_pinned() is False
    with pytest.raises(RuntimeError, match=r"\[pin_memory\] cannot pin memory: no accelerator is available"):
        x.pin_memory()
    no_gpu = r"(this build of sneppx-core has no CUDA|no CUDA device is visible)"
    for f in (sx.cuda.Stream, sx.cuda.current_stream, sx.cuda.default_stream, lambda: sx.cuda.Event().record()):
        with pytest.raises(RuntimeError, match=no_gpu):
            f()
    e = sx.cuda.Event(enable_timing=True)  # an event that was never recorded: done, nothing to wait for
    assert e.query() is True
    e.synchronize()
    with pytest.raises(RuntimeError, match=r"both events must be recorded first"):
        e.elapsed_time(sx.cuda.Event(enable_timing=True))
    with pytest.raises(RuntimeError, match=r"both events need enable_timing=True"):
        e.elapsed_time(sx.cuda.Event())
    with pytest.raises(NotImplementedError, match="interprocess"):
        sx.cuda.Event(interprocess=True)
    with pytest.raises(TypeError, match=r"\[cuda.stream\] expected a cuda.Stream"):
        sx.cuda.stream("side")
    with sx.cuda.stream(None):
        pass
    y = x.to("cpu", non_blocking=True)  # already there: the same tensor
    assert y is x


def test_tf32_setting_reaches_the_core():
    from sneppx_core._backend import _C

    b = sx.backends
    try:
        b.cuda.matmul.allow_tf32 = True
        assert _C.cuda_allow_tf32() is True
        sx.set_float32_matmul_precision("highest")
        assert _C.cuda_allow_tf32() is False and b.cuda.matmul.allow_tf32 is False
        sx.set_float32_matmul_precision("medium")
        assert _C.cuda_allow_tf32() is True
    finally:
        sx.set_float32_matmul_precision("highest")
