"""``torch.backends`` settings.

The flags are accepted and readable so that training scripts run unchanged. The CPU kernels
compute float32 matrix products in float32 whatever the flags say. ``cuda.matmul.allow_tf32`` and
``set_float32_matmul_precision`` share one setting, as in PyTorch: below "highest", float32 matrix
products on a GPU may use TF32 tensor cores (10-bit mantissa products, float32 sums).
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import sys
import types

from ._backend import CPU, _C

__path__ = []  # a package: `import sneppx_core.backends.cudnn` finds the submodules made below (in sys.modules)

_state = {"precision": "highest", "deterministic": False, "warn_only": False}


def _set_precision(precision: str) -> None:
    _state["precision"] = precision
    if hasattr(_C, "cuda_set_allow_tf32"):  # the compiled core: its CUDA matrix products read the flag
        _C.cuda_set_allow_tf32(precision != "highest")


class _Cudnn(types.ModuleType):
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


class _Cuda(types.ModuleType):
    """``backends.cuda``."""

    matmul = _Matmul()

    @staticmethod
    @contextlib.contextmanager
    def sdp_kernel(enable_flash: bool = True, enable_math: bool = True, enable_mem_efficient: bool = True,
                   enable_cudnn: bool = True):
        """PyTorch's (deprecated) choice of attention kernels for the block: accepted, and SneppX's
        ``scaled_dot_product_attention`` keeps choosing its own (the same result up to rounding)."""
        if not (enable_flash or enable_math or enable_mem_efficient or enable_cudnn):
            raise RuntimeError("[backends.cuda.sdp_kernel] at least one attention kernel must be enabled")
        yield

    @staticmethod
    def is_built() -> bool:
        """Whether this build of sneppx-core has CUDA."""
        return bool(_C._HAS_CUDA)


class _Mps(types.ModuleType):
    """``backends.mps``: Apple GPUs are not supported."""

    @staticmethod
    def is_available() -> bool:
        """False: no MPS backend."""
        return False

    @staticmethod
    def is_built() -> bool:
        """False: no MPS backend."""
        return False


class _Cpu(types.ModuleType):
    """``backends.cpu``."""

    @staticmethod
    def get_cpu_capability() -> str:
        """The vector instruction set of the loaded core build: ``"AVX512"``, ``"AVX2"`` or ``"DEFAULT"``
        (PyTorch's names). ``SNEPPX_CPU=avx2`` selects the AVX2 build on an AVX-512 machine."""
        return {"avx512": "AVX512", "avx2": "AVX2"}.get(CPU, "DEFAULT")


class _Mkldnn(types.ModuleType):
    """``backends.mkldnn``: oneDNN (MKL-DNN) is not part of this build; the flags are accepted and change nothing."""

    enabled = True
    deterministic = False
    allow_tf32 = True

    @staticmethod
    def is_available() -> bool:
        """False: this build has no oneDNN."""
        return False


class _Mkl(types.ModuleType):
    """``backends.mkl``: the matrix products use OpenBLAS, not MKL."""

    @staticmethod
    def is_available() -> bool:
        """False: this build does not use MKL."""
        return False


class _Openmp(types.ModuleType):
    """``backends.openmp``: the CPU kernels run on SneppX's own thread pool, not OpenMP."""

    @staticmethod
    def is_available() -> bool:
        """False: this build does not use OpenMP."""
        return False


class _OptEinsum(types.ModuleType):
    """``backends.opt_einsum``: ``einsum`` contracts from left to right and never uses the opt_einsum package, so
    this answers as PyTorch does where that package is missing."""

    @staticmethod
    def is_available() -> bool:
        """False: einsum does not use opt_einsum."""
        return False

    @staticmethod
    def get_opt_einsum():
        """None: einsum does not use opt_einsum."""
        return None

    @property
    def enabled(self) -> bool:
        """False: no contraction-path optimisation."""
        return False

    @enabled.setter
    def enabled(self, value) -> None:
        if value:
            raise ValueError(f"[opt_einsum] opt_einsum is not available, so setting `enabled` to {value} will not "
                             f"reap the benefits of calculating an optimal path for einsum")

    @property
    def strategy(self):
        """None: no contraction-path optimisation."""
        return None

    @strategy.setter
    def strategy(self, value) -> None:
        raise ValueError(f"[opt_einsum] opt_einsum is not available, so setting `strategy` to {value} will not be "
                         "meaningful")


def _submodule(cls, name):
    """The ``backends.<name>`` submodule: an instance of ``cls``, importable as ``sneppx_core.backends.<name>``."""
    module = cls(f"{__name__}.{name}", cls.__doc__)
    module.__spec__ = importlib.machinery.ModuleSpec(module.__name__, None)  # made here, loaded by no finder
    sys.modules[module.__name__] = module
    return module


cpu = _submodule(_Cpu, "cpu")
cudnn = _submodule(_Cudnn, "cudnn")
cuda = _submodule(_Cuda, "cuda")
mps = _submodule(_Mps, "mps")
mkldnn = _submodule(_Mkldnn, "mkldnn")
mkl = _submodule(_Mkl, "mkl")
openmp = _submodule(_Openmp, "openmp")
opt_einsum = _submodule(_OptEinsum, "opt_einsum")
has_mkl = False  # torch.has_mkl: no MKL in this build
has_openmp = False  # torch.has_openmp: SneppX's own thread pool, not OpenMP
has_lapack = True  # torch.has_lapack: the linalg factorizations run on NumPy's LAPACK
has_spectral = False  # torch.has_spectral: no FFT (torch.fft) in SneppX


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


__all__ = ["cpu", "cudnn", "cuda", "mps",  # the first four are reached as backends.X only (and imported as modules)
           "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_float32_matmul_precision",
           "get_float32_matmul_precision", "has_mkl", "has_openmp", "has_lapack", "has_spectral"]
