"""SneppX_ALG: one import for all of SneppX (core, nn, optim, data, distributed, generate).

Every public name of the component packages is re-exported here, so the migration guide's
``from SneppX_ALG import Tensor, Module, AdamW`` works. Where two packages export the same name,
the earlier package in the order core, nn, optim, data, distributed, generate keeps it, as in
PyTorch: ``gather`` and ``scatter`` are the tensor ops (``torch.gather``), the collectives of that
name are ``SneppX_ALG.distributed.gather`` / ``.scatter`` (``torch.distributed.gather``), and
``save`` / ``load`` are core's ``torch.save`` / ``torch.load`` (the safetensors-only ones stay in
``sneppx_nn``). The component packages are also reachable as ``nn``, ``optim`` and
``distributed`` (``SneppX_ALG.nn.Linear``, ``SneppX_ALG.distributed.all_reduce``), and PyTorch's module paths
import with ``torch`` renamed (``import SneppX_ALG.nn.functional as F``,
``from SneppX_ALG.utils.data import DataLoader``, ``from SneppX_ALG.autograd import Function``; see ``_paths``).
``SneppX_ALG.fx`` (``torch.fx``, sneppx_nn's) is imported on first use.
"""

from __future__ import annotations

import importlib
import types as _types

import sneppx_core as _core
from sneppx_core import *  # noqa: F401,F403
from sneppx_core import _HAS_C_BACKEND, _HAS_CUDA  # noqa: F401
# torch.jit, .compiler, .func, .hub, .library, .multiprocessing, .onnx, .ops, .profiler, .random, .serialization:
# modules, outside __all__ (as in PyTorch)
from sneppx_core import compiler, func, hub, jit, library, multiprocessing, onnx, ops, profiler, random  # noqa: F401
from sneppx_core import _dynamo, _functorch, _inductor, serialization, version  # noqa: F401

from . import _paths
from ._version import __version__

versions = {"sneppx-alg": __version__, "sneppx-core": _core.__version__}
__all__ = list(_core.__all__) + ["versions", "_HAS_C_BACKEND", "_HAS_CUDA"]

_SUBMODULES = {"sneppx_nn": "nn", "sneppx_optim": "optim", "sneppx_distributed": "distributed"}
for _dist, _mod in [("sneppx-nn", "sneppx_nn"), ("sneppx-optim", "sneppx_optim"), ("sneppx-data", "sneppx_data"),
                    ("sneppx-distributed", "sneppx_distributed"), ("sneppx-generate", "sneppx_generate")]:
    try:
        _m = importlib.import_module(_mod)
    except ModuleNotFoundError as _e:
        if _e.name != _mod:
            raise
        continue
    versions[_dist] = _m.__version__
    if _mod in _SUBMODULES:
        globals()[_SUBMODULES[_mod]] = _m
    for _name in _m.__all__:
        if _name.startswith("__") or _name in __all__:  # the first package's binding stays
            continue
        globals()[_name] = getattr(_m, _name)
        __all__.append(_name)

# torch.utils' counterparts: utils.checkpoint from the core and, when installed, utils.data = sneppx_data, so that
# `from SneppX_ALG.utils.data import DataLoader` reads as PyTorch's line with `torch` renamed.
utils = _types.ModuleType(f"{__name__}.utils", "torch.utils' counterparts: benchmark, checkpoint, dlpack, hooks, "
                          "model_zoo (sneppx_core) and data (sneppx_data)")
utils.__path__ = []  # a package, so that `SneppX_ALG.utils.data` imports (through _paths' finder)
utils.checkpoint = _core.utils.checkpoint
utils.dlpack, utils.hooks, utils.model_zoo = _core.utils.dlpack, _core.utils.hooks, _core.utils.model_zoo
utils.benchmark, utils._pytree = _core.utils.benchmark, _core.utils._pytree
if "sneppx-data" in versions:
    utils.data = importlib.import_module("sneppx_data")
# torch.nn.parallel's place: DDP lives in sneppx_distributed, which sneppx_nn does not import
_extra = {}
if "sneppx-distributed" in versions:
    _parallel = _types.ModuleType(f"{__name__}.nn.parallel", "torch.nn.parallel's place: DistributedDataParallel")
    _parallel.DistributedDataParallel = importlib.import_module("sneppx_distributed").DistributedDataParallel
    _extra[_parallel.__name__] = _parallel
# torch.utils.tensorboard's place: SummaryWriter lives in sneppx_optim (tensorboardX is imported when one is made)
if "sneppx-optim" in versions:
    utils.tensorboard = _types.ModuleType(f"{__name__}.utils.tensorboard", "torch.utils.tensorboard's place: "
                                          "SummaryWriter")
    utils.tensorboard.SummaryWriter = importlib.import_module("sneppx_optim").SummaryWriter
    _extra[utils.tensorboard.__name__] = utils.tensorboard
# torch.optim.swa_utils' place: it needs sneppx_nn and sneppx_optim, which do not import each other
if "sneppx-nn" in versions and "sneppx-optim" in versions:
    from . import swa_utils

    _extra[f"{__name__}.optim.swa_utils"] = swa_utils
    importlib.import_module("sneppx_optim").swa_utils = swa_utils  # the attribute path too (torch.optim.swa_utils.X)
if "sneppx-distributed" in versions and "sneppx-nn" in versions:
    importlib.import_module("sneppx_nn").parallel = _parallel  # the attribute path too (torch.nn.parallel.X)
_paths.install(__name__, _extra)


def __getattr__(name):
    """``SneppX_ALG.fx`` (torch.fx) is sneppx_nn.fx, imported on first use: importing it makes the library's
    functions take fx's Proxies, which costs every later call a Python call."""
    if name == "fx" and "sneppx-nn" in versions:
        module = importlib.import_module("sneppx_nn.fx")
        globals()["fx"] = module
        return module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# the dtype aliases (torch.float, torch.double, torch.long, ...), which shadow builtins and so stay out of __all__
for _alias in ("bool", "float", "double", "half", "long", "int"):
    globals()[_alias] = getattr(_core, _alias)
