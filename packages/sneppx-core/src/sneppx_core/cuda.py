"""CUDA device queries and the ``torch.cuda`` functions training scripts call.

This build reports what it was compiled with, never a simulated device. On a machine without
CUDA the seed functions are accepted silently (as in PyTorch, so scripts can seed every device
unconditionally); functions that need a GPU raise RuntimeError.
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
        raise RuntimeError(f"[cuda.{op}] no CUDA GPU is visible")


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


def synchronize(device=None) -> None:
    """Waits until all work queued on the GPU has finished."""
    _need_gpu("synchronize")
    from ._factories import zeros

    zeros(1, device=f"cuda:{_current[0] if device is None else _index(device)}").to("cpu")  # a copy back waits


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether the current GPU computes in bfloat16 (False without a GPU)."""
    return is_available()


def get_device_name(device=None) -> str:
    """Name of a GPU."""
    _need_gpu("get_device_name")
    return f"CUDA device {_current[0] if device is None else _index(device)}"


def empty_cache() -> None:
    """Releases cached GPU memory (a no-op without a GPU)."""
    if is_available():
        _C.empty_cache()


__all__ = ["is_available", "device_count", "is_initialized", "manual_seed", "manual_seed_all", "seed", "seed_all",
           "set_device", "current_device", "synchronize", "is_bf16_supported", "get_device_name", "empty_cache"]
