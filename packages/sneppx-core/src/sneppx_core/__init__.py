"""sneppx_core: the SneppX tensor and autograd engine.

A C++20 core (``_SNEPPX_c``) with BLAS-backed matrix products, a persistent thread pool and
tape-based reverse-mode autograd, under a Python API that follows PyTorch's names. Where the
compiled core cannot be imported (or ``SNEPPX_BACKEND=numpy`` is set) the same API runs on a NumPy
backend for inference, with an ImportWarning saying why; ``_BACKEND`` names the active one::

    import sneppx_core as sx
    x = sx.Tensor.randn((4, 8))
    w = sx.Tensor.randn((8, 16), requires_grad=True)
    (x @ w).backward()
"""

from __future__ import annotations

from ._backend import NAME as _BACKEND, REASON as _BACKEND_REASON, _C  # noqa: F401
from ._backend import require_training as _require_training  # noqa: F401
from ._compat import require_core
from ._version import __version__
from ._C_face import (  # noqa: F401
    Device, Dtype, Generator, Tensor, bool_, bfloat16, float16, float32, float64, int8, int16, int32, int64,
    uint8, complex64, complex128, default_generator, get_num_threads, set_num_threads, empty_cache, from_dlpack,
    is_grad_enabled,
)
from ._factories import (
    arange, empty, empty_like, eye, full, full_like, linspace, manual_seed, ones, ones_like, rand, rand_like,
    randint, randint_like, randn, randn_like, randperm, seed, tensor, zeros, zeros_like,
)
from ._grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled
from ._ops import *  # noqa: F401,F403
from ._ops import __all__ as _ops_all
from ._einsum import einsum
from . import _names, _tensor_methods
from . import autograd, cuda, distributions, fft, functional, linalg, special, testing, utils  # noqa: F401
from . import compiler, func, hub, jit, library, multiprocessing, onnx, ops, profiler, random  # noqa: F401
from . import serialization  # noqa: F401
from . import sparse, version  # noqa: F401
from ._compile_settings import _dynamo, _functorch, _inductor  # noqa: F401  (torch._dynamo.config, ...)
from .compiler import compile  # noqa: A004
from .func import vmap
from .autograd.anomaly_mode import is_anomaly_check_nan_enabled, is_anomaly_enabled, set_anomaly_enabled
from ._names import *  # noqa: F401,F403
from ._names import __all__ as _names_all

# The Tensor class gets its Python-level methods here, explicitly, in this order: the core set
# (repr, to, in-place forms of the formula sheet, ...), then the added PyTorch names (which keep
# any name already present).
_tensor_methods.install(Tensor)
_names.install(Tensor)

bool = bool_  # noqa: A001  (sneppx_core.bool, as torch.bool)
float = float32  # noqa: A001
double = float64
half = float16
long = int64
short = int16
int = int32  # noqa: A001
cfloat = complex64
cdouble = complex128

_HAS_C_BACKEND = _BACKEND == "c"
_HAS_CUDA = _C._HAS_CUDA

__all__ = [
    "Tensor", "Device", "Dtype", "Generator", "bool_", "bfloat16", "float16", "float32", "float64", "int8", "int16",
    "int32", "int64", "uint8", "short", "complex64", "complex128", "cfloat", "cdouble", "default_generator",
    "get_num_threads", "set_num_threads", "empty_cache",
    "from_dlpack", "is_grad_enabled", "arange", "empty", "empty_like", "eye", "full", "full_like", "linspace",
    "manual_seed", "ones",
    "ones_like", "rand", "rand_like", "randint", "randint_like", "randn", "randn_like", "randperm", "seed", "tensor",
    "zeros", "zeros_like", "enable_grad", "inference_mode", "no_grad", "set_grad_enabled", "autograd", "cuda",
    "functional", "fft", "linalg", "special", "sparse", "testing", "distributions", "compile", "vmap", "require_core",
    "__version__", "_HAS_C_BACKEND", "_HAS_CUDA", "_BACKEND", "einsum", "is_anomaly_enabled",
    "is_anomaly_check_nan_enabled", "set_anomaly_enabled", *_ops_all, *_names_all,
]
