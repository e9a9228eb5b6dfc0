"""CUDA device queries, device memory statistics and the ``torch.cuda`` functions training scripts call.

This build reports what it was compiled with, never a simulated device: in a build without CUDA
(the default) and in a CUDA build on a machine without a visible GPU, ``is_available()`` is False.
The seed functions and ``empty_cache`` are then accepted silently (as in PyTorch, so scripts can
call them unconditionally); functions that need a GPU raise RuntimeError, saying either that this
build of sneppx-core has no CUDA or that no CUDA device is visible.
"""

from __future__ import annotations

from ._backend import _C

_current = [0]


def is_available() -> bool:
    """True when this build has CUDA and a GPU is visible."""
    return bool(_C._HAS_CUDA and _C.cuda_is_available())


def device_count() -> int:
    """Number of visible GPUs (0 in builds without CUDA)."""
    return int(_C.cuda_device_count()) if _C._HAS_CUDA else 0


def is_initialized() -> bool:
    """True once a GPU is in use (False without CUDA)."""
    return is_available()


def _need_gpu(op: str) -> None:
    if not _C._HAS_CUDA:
        raise RuntimeError(f"[cuda.{op}] this build of sneppx-core has no CUDA")
    if not is_available():
        raise RuntimeError(f"[cuda.{op}] no CUDA device is visible")


def manual_seed(seed) -> None:
    """Seeds the random numbers drawn on the GPU; a no-op without a GPU.

    One generator serves every device in this build, so with a GPU this seeds it as
    ``sneppx_core.manual_seed`` does.
    """
    from ._factories import manual_seed as _seed

    if is_available():
        _seed(seed)
    elif isinstance(seed, bool) or not hasattr(seed, "__index__") and not isinstance(seed, (int, float)):
        raise TypeError(f"[cuda.manual_seed] seed must be an integer, got {seed!r}")


def manual_seed_all(seed) -> None:
    """Seeds the random numbers of every GPU; a no-op without a GPU."""
    manual_seed(seed)


def seed() -> None:
    """Seeds the GPU generator from the operating system's entropy; a no-op without a GPU."""
    if is_available():
        from ._factories import seed as _seed

        _seed()


def seed_all() -> None:
    """Seeds every GPU generator from the operating system's entropy; a no-op without a GPU."""
    seed()


def _index(device) -> int:
    from ._C_face import Device

    if isinstance(device, int) and not isinstance(device, bool):
        return device
    d = Device(device)
    if d.type != "cuda":
        raise ValueError(f"[cuda.set_device] expected a cuda device, got {device!r}")
    return 0 if d.index is None else int(d.index)


def set_device(device) -> None:
    """Makes ``device`` (an index, ``"cuda:1"`` or a device) the current GPU."""
    index = _index(device)
    if index < 0:
        return
    _need_gpu("set_device")
    if index >= device_count():
        raise ValueError(f"[cuda.set_device] device index {index} is out of range: {device_count()} GPU(s) visible")
    _current[0] = index


def current_device() -> int:
    """Index of the current GPU."""
    _need_gpu("current_device")
    return _current[0]


def _device_index(device, op: str) -> int:
    _need_gpu(op)
    index = _current[0] if device is None else _index(device)
    if not 0 <= index < device_count():
        raise ValueError(f"[cuda.{op}] device index {index} is out of range: {device_count()} GPU(s) visible")
    return index


def synchronize(device=None) -> None:
    """Waits until all work queued on the GPU (the current one by default) has finished."""
    _C.cuda_synchronize(_device_index(device, "synchronize"))


def memory_allocated(device=None) -> int:
    """Bytes of GPU memory held by live tensors on ``device`` (rounded to the allocator's size classes)."""
    return int(_C.cuda_memory_stats(_device_index(device, "memory_allocated"))[0])


def max_memory_allocated(device=None) -> int:
    """The most ``memory_allocated(device)`` has been since start or ``reset_peak_memory_stats``."""
    return int(_C.cuda_memory_stats(_device_index(device, "max_memory_allocated"))[1])


def memory_reserved(device=None) -> int:
    """Bytes the caching allocator holds on ``device``: in use by tensors plus cached for reuse."""
    return int(_C.cuda_memory_stats(_device_index(device, "memory_reserved"))[2])


def reset_peak_memory_stats(device=None) -> None:
    """Starts ``max_memory_allocated(device)`` again from the current allocation."""
    _C.cuda_reset_peak_memory(_device_index(device, "reset_peak_memory_stats"))


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether the current GPU computes in bfloat16 (False without a GPU)."""
    return is_available()


def get_device_name(device=None) -> str:
    """Name of a GPU, as the driver reports it."""
    return str(_C.cuda_device_name(_device_index(device, "get_device_name")))


def empty_cache() -> None:
    """Returns the GPU blocks cached for reuse to the driver (a no-op without a GPU)."""
    if is_available():
        _C.cuda_empty_cache()


__all__ = ["is_available", "device_count", "is_initialized", "manual_seed", "manual_seed_all", "seed", "seed_all",
           "set_device", "current_device", "synchronize", "is_bf16_supported", "get_device_name", "empty_cache",
           "memory_allocated", "max_memory_allocated", "memory_reserved", "reset_peak_memory_stats"]
