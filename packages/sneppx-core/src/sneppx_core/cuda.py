"""CUDA device queries. This build reports what it was compiled with, never a simulated device."""

from __future__ import annotations

from . import _SNEPPX_c as _C


def is_available() -> bool:
    """True when this build has CUDA and a GPU is visible."""
    return bool(_C._HAS_CUDA and _C.cuda_is_available())


def device_count() -> int:
    """Number of visible GPUs (0 in builds without CUDA)."""
    return int(_C.cuda_device_count()) if _C._HAS_CUDA else 0


__all__ = ["is_available", "device_count"]
