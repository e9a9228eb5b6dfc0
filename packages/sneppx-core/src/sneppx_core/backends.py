"""``torch.backends`` settings.

The flags are accepted and readable so that training scripts run unchanged. The CPU kernels
compute float32 matrix products in float32 whatever the flags say. ``cuda.matmul.allow_tf32`` and
``set_float32_matmul_precision`` share one setting, as in PyTorch: below "highest", float32 matrix
products on a GPU may use TF32 tensor cores (10-bit mantissa products, float32 sums).
"""

from __future__ import annotations

from ._backend import CPU, _C

_state = {"precision": "highest", "deterministic": False, "warn_only": False}


def _set_precision(precision: str) -> None:
    _state["precision"] = precision
    if hasattr(_C, "cuda_set_allow_tf32"):  # the compiled core: its CUDA matrix products read the flag
        _C.cuda_set_allow_tf32(precision != "highest")


class _Cudnn:
    """``backends.cudnn``: cuDNN is never used by this build."""

    benchmark = False
    deterministic = False
    enabled = True
    allow_tf32 = True
    benchmark_limit = 10

    @staticmethod
    def is_available() -> bool:
        """False: this build does not use cuDNN."""
        return False

    @staticmethod
    def version():
        """None: no cuDNN."""
        return None


class _Matmul:
    """``backends.cuda.matmul``: TF32 and reduced-precision switches for GPU matrix products."""

    allow_fp16_reduced_precision_reduction = True
    allow_bf16_reduced_precision_reduction = True

    @property
    def allow_tf32(self) -> bool:
        return _state["precision"] != "highest"

    @allow_tf32.setter
    def allow_tf32(self, value) -> None:
        _set_precision("high" if value else "highest")


class _Cuda:
    """``backends.cuda``."""

    matmul = _Matmul()

    @staticmethod
    def is_built() -> bool:
        """Whether this build of sneppx-core has CUDA."""
        return bool(_C._HAS_CUDA)


class _Mps:
    """``backends.mps``: Apple GPUs are not supported."""

    @staticmethod
    def is_available() -> bool:
        """False: no MPS backend."""
        return False

    @staticmethod
    def is_built() -> bool:
        """False: no MPS backend."""
        return False


class _Cpu:
    """``backends.cpu``."""

    @staticmethod
    def get_cpu_capability() -> str:
        """The vector instruction set of the loaded core build: ``"AVX512"``, ``"AVX2"`` or ``"DEFAULT"``
        (PyTorch's names). ``SNEPPX_CPU=avx2`` selects the AVX2 build on an AVX-512 machine."""
        return {"avx512": "AVX512", "avx2": "AVX2"}.get(CPU, "DEFAULT")


cpu = _Cpu()
cudnn = _Cudnn()
cuda = _Cuda()
mps = _Mps()


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Asks for deterministic algorithms. Accepted for compatibility: every kernel of this build
    is already deterministic on the CPU."""
    if not isinstance(mode, bool):
        raise TypeError(f"[use_deterministic_algorithms] mode must be a bool, got {mode!r}")
    _state["deterministic"], _state["warn_only"] = mode, bool(warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    """What the last ``use_deterministic_algorithms`` call asked for (False by default)."""
    return _state["deterministic"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """The ``warn_only`` of the last ``use_deterministic_algorithms`` call."""
    return _state["warn_only"]


def set_float32_matmul_precision(precision: str) -> None:
    """Sets the float32 matrix-product precision: ``"highest"``, ``"high"`` or ``"medium"``. Below
    "highest", CUDA matrix products may use TF32; the CPU kernels always compute in full float32."""
    if precision not in ("highest", "high", "medium"):
        raise ValueError(f"[set_float32_matmul_precision] expected 'highest', 'high' or 'medium', got {precision!r}")
    _set_precision(precision)


def get_float32_matmul_precision() -> str:
    """The float32 matrix-product precision setting (``"highest"`` by default)."""
    return _state["precision"]


__all__ = ["cpu", "cudnn", "cuda", "mps",  # the first four are reached as backends.X only
           "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_float32_matmul_precision",
           "get_float32_matmul_precision"]
