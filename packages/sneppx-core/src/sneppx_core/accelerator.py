"""``torch.accelerator``: the one accelerator this build can use, if any (CUDA or nothing)."""

from __future__ import annotations

from . import cuda


def is_available() -> bool:
    """True when a GPU this build can use is visible."""
    return cuda.is_available()


def current_accelerator(check_available: bool = False):
    """``device("cuda")`` when this build has CUDA, else None (with ``check_available``, also None
    when no GPU is visible)."""
    from . import _C_face

    if not cuda._C._HAS_CUDA or (check_available and not cuda.is_available()):
        return None
    return _C_face.Device("cuda")


def device_count() -> int:
    """Number of visible accelerators."""
    return cuda.device_count()


def current_device_index() -> int:
    """Index of the current accelerator."""
    return cuda.current_device()


def set_device_index(device) -> None:
    """Makes ``device`` the current accelerator."""
    cuda.set_device(device)


def synchronize(device=None) -> None:
    """Waits for the work queued on the accelerator."""
    cuda.synchronize(device)


__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index", "set_device_index",
           "synchronize"]
