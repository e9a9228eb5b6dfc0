"""Build hook: a CUDA build (``-DSNEPPX_CUDA=ON`` in ``CMAKE_ARGS`` or ``SKBUILD_CMAKE_ARGS``) needs the
NVIDIA toolchain wheels to build, and its wheel depends on the NVIDIA runtime wheels (the extension
finds ``libcudart.so.13``, ``libcublas.so.13`` and ``libcublasLt.so.13`` in
``site-packages/nvidia/cu13/lib`` through its RPATH). The default CPU build needs neither.
"""

from __future__ import annotations

import os
import re

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

CUDA_BUILD_REQUIRES = ["nvidia-cuda-nvcc>=13,<14", "nvidia-cuda-runtime>=13,<14", "nvidia-cuda-cccl>=13,<14",
                       "nvidia-cublas>=13,<14"]
CUDA_RUNTIME_REQUIRES = ["nvidia-cuda-runtime>=13,<14", "nvidia-cublas>=13,<14"]


def cuda_requested() -> bool:
    """True when the CMake arguments of this build switch the CUDA backend on (the last setting wins)."""
    args = os.environ.get("CMAKE_ARGS", "").split() + os.environ.get("SKBUILD_CMAKE_ARGS", "").split(";")
    on = False
    for arg in args:
        m = re.fullmatch(r"-DSNEPPX_CUDA(?::BOOL)?=(\w+)", arg.strip())
        if m:
            on = m.group(1).upper() in ("ON", "TRUE", "YES", "1")
    return on


class CudaBuildHook(BuildHookInterface):
    """Adds the NVIDIA wheels to the build requirements and to the wheel's dependencies of a CUDA build."""

    PLUGIN_NAME = "custom"

    def dependencies(self) -> list[str]:
        return list(CUDA_BUILD_REQUIRES) if cuda_requested() else []

    def initialize(self, version: str, build_data: dict) -> None:
        if cuda_requested():
            build_data["dependencies"].extend(CUDA_RUNTIME_REQUIRES)
