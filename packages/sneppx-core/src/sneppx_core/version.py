"""``torch.version``: ``__version__`` (sneppx-core's), ``cuda`` (the CUDA runtime's version in a CUDA build,
else None), ``git_version``, ``hip``, ``rocm``, ``xpu`` (None) and ``debug`` (False)."""

from __future__ import annotations

from ._backend import _C
from ._version import __version__


def _cuda_version():
    if not getattr(_C, "_HAS_CUDA", False):
        return None
    try:  # the runtime a CUDA build links is the nvidia-cuda-runtime wheel's
        from importlib.metadata import version
        return ".".join(version("nvidia-cuda-runtime").split(".")[:2])
    except Exception:
        return "unknown"


cuda = _cuda_version()
git_version = "unknown"
hip = rocm = xpu = None
debug = False

__all__ = ["__version__", "cuda", "debug", "git_version", "hip", "rocm", "xpu"]
