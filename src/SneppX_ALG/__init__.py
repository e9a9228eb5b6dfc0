"""SneppX_ALG: one import for all of SneppX (core, nn, optim, data, distributed, generate).

Every public name of the component packages is re-exported here, so the migration guide's
``from SneppX_ALG import Tensor, Module, AdamW`` works.
"""

from __future__ import annotations

import importlib

import sneppx_core as _core
from sneppx_core import *  # noqa: F401,F403
from sneppx_core import _HAS_C_BACKEND, _HAS_CUDA  # noqa: F401

from ._version import __version__

versions = {"sneppx-alg": __version__, "sneppx-core": _core.__version__}
__all__ = list(_core.__all__) + ["versions", "_HAS_C_BACKEND", "_HAS_CUDA"]

for _dist, _mod in [("sneppx-nn", "sneppx_nn"), ("sneppx-optim", "sneppx_optim"), ("sneppx-data", "sneppx_data"),
                    ("sneppx-distributed", "sneppx_distributed"), ("sneppx-generate", "sneppx_generate")]:
    try:
        _m = importlib.import_module(_mod)
    except ModuleNotFoundError as _e:
        if _e.name != _mod:
            raise
        continue
    versions[_dist] = _m.__version__
    for _name in _m.__all__:
        globals()[_name] = getattr(_m, _name)
        if _name not in __all__:
            __all__.append(_name)
