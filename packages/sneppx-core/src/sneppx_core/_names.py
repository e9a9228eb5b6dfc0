"""The PyTorch names added on top of the core ops: ``save``/``load``, ``device``, legacy tensor
types, ``backends``/``accelerator`` switches and more Tensor methods. ``sneppx_core`` re-exports
everything in ``__all__``; importing this module also attaches the new Tensor methods."""

from __future__ import annotations

from . import _legacy_types, _tensor_fill, _tensor_install, _tensor_math, _tensor_more, _tensor_shape, _torch_more
from . import _linalg_torch
from . import _tensor_misc, _tensor_strided, _torch_aliases, _torch_misc, _torch_nn_forms, _torch_reach, _torch_rnn
from . import _tensor_storage, _stft
from . import _legacy_names
from . import _sparse_make
from . import _tensor_props
from . import _autocast, _device_extras, accelerator, amp, backends, cpu, cuda
from ._C_face import Device, Tensor
from ._dtype_info import finfo, iinfo
from ._legacy_types import (  # noqa: F401
    BFloat16Tensor, BoolTensor, ByteTensor, CharTensor, DoubleTensor, FloatTensor, HalfTensor, IntTensor, LongTensor,
    ShortTensor,
)
from ._ops import __all__ as _ops_names
from ._serialization import load, save
from ._tensor_extra import FUNCTIONS, tril_indices, triu_indices
from ._tensor_install import _checked
from ._tensor_props import *  # noqa: F401,F403  (layouts, memory formats, pi, e, inf, nan, newaxis)
from ._torch_more import _guarded
from .backends import (  # noqa: F401
    are_deterministic_algorithms_enabled, get_float32_matmul_precision, has_lapack, has_mkl, has_openmp, has_spectral,
    is_deterministic_algorithms_warn_only_enabled, set_float32_matmul_precision, use_deterministic_algorithms,
)

device = Device  # sneppx_core.device("cuda", 0), as torch.device


def _reduce_device(d):
    return Device, (str(d),)


Device.__reduce__ = _reduce_device  # devices pickle as their name ("cuda:1"), as torch.device does
autocast = amp.autocast
cuda.amp, cpu.amp = amp.cuda_amp, amp.cpu_amp  # torch.cuda.amp / torch.cpu.amp (autocast, GradScaler)
cuda.__path__ = cpu.__path__ = []  # packages, so that `from torch.cuda.amp import GradScaler` imports


def is_autocast_enabled(device_type=None) -> bool:
    """Whether autocast is on for ``device_type`` in this thread (``"cuda"`` when not given, as PyTorch; only CPU
    autocast can be on here)."""
    return (device_type or "cuda") == "cpu" and _autocast.is_enabled()


_FUNCTIONS = {**FUNCTIONS, **_tensor_math.FUNCTIONS, **_tensor_shape.FUNCTIONS, **_tensor_fill.FUNCTIONS,
              **_tensor_more.FUNCTIONS, **_torch_more.METHODS, **_linalg_torch.FUNCTIONS, **_stft.FUNCTIONS}
_FUNCTIONS = {k: _checked(v, k) for k, v in _FUNCTIONS.items() if k not in _ops_names}
globals().update(_FUNCTIONS)
globals().update(_torch_more.FUNCTIONS)  # module-level only (no Tensor methods)
globals().update(_linalg_torch.MODULE_ONLY)  # lu_unpack, nuclear_norm: no Tensor methods in PyTorch
_ALIASES = {k: v for k, v in _torch_aliases.FUNCTIONS.items() if k not in _ops_names and k not in globals()}
globals().update(_ALIASES)  # torch.* forms of methods and functional (module-level only)
# switches, small factories and torch.* nn forms (module-level only); sneppx_core.range shadows the builtin
# only as an attribute of the package, as torch.range does
_MISC = {**_torch_misc.FUNCTIONS, **{k: _guarded(v, k) for k, v in _torch_nn_forms.FUNCTIONS.items()},
         **{k: _checked(v, k) for k, v in _tensor_misc.FUNCTIONS.items()}, **_torch_reach.FUNCTIONS,
         **{k: _guarded(v, k) for k, v in _torch_rnn.FUNCTIONS.items()}, **_tensor_strided.FUNCTIONS,
         **_tensor_storage.FUNCTIONS, **_legacy_names.FUNCTIONS, **_sparse_make.FUNCTIONS}
_MISC = {k: v for k, v in _MISC.items() if k not in _ops_names and k not in globals()}  # earlier names win
globals().update(_MISC)


def install(cls=Tensor):
    """Attaches the added functions as Tensor methods (with in-place forms) and the legacy type names."""
    methods = {**_tensor_shape.METHODS, **_tensor_fill.METHODS, **_tensor_more.METHODS, **_tensor_misc.METHODS,
               **_torch_reach.METHODS, **_tensor_strided.METHODS, **_tensor_storage.METHODS,
               **_legacy_names.METHODS, **_sparse_make.METHODS}
    inplace = _tensor_math.INPLACE + _tensor_fill.INPLACE + _tensor_more.INPLACE + ["addmv", "addr"]
    _tensor_install._install(cls, _FUNCTIONS, methods, _tensor_shape.METHOD_DOCS, inplace)
    _legacy_types._install(cls)
    _tensor_props.install(cls)  # last: its contiguous/is_contiguous/clone take memory_format


dtype = _device_extras.dtype
__all__ = ["save", "load", "device", "dtype", "finfo", "iinfo", "accelerator", "backends", "amp", "autocast", "cpu",
           "is_autocast_enabled", "tril_indices", "triu_indices", *_legacy_types.__all__, *backends.__all__[4:],
           *_tensor_props.__all__, *_FUNCTIONS, *_torch_more.FUNCTIONS, *_linalg_torch.MODULE_ONLY, *_ALIASES, *_MISC]
