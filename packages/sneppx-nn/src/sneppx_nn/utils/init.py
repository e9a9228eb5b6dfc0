"""Building a module without initialising its parameters, as ``torch.nn.utils.skip_init``."""

from __future__ import annotations

from .. import init as _init
from ..module import Module


def skip_init(module_cls, *args, **kwargs):
    """Builds ``module_cls(*args, **kwargs)`` while the initialisers of ``sneppx_nn.init`` (``uniform_``,
    ``normal_``, ``trunc_normal_``, ``constant_``, ``orthogonal_`` and those built on them) leave tensors
    as they are: parameters hold unspecified values (whatever their memory held), to be filled by the
    caller, for example from a checkpoint. Tensors a constructor fills by other means keep those values."""
    if not isinstance(module_cls, type) or not issubclass(module_cls, Module):
        raise RuntimeError(f"[skip_init] expected a Module subclass, got {module_cls!r}")
    token = _init._SKIP.set(True)
    try:
        return module_cls(*args, **kwargs)
    finally:
        _init._SKIP.reset(token)


__all__ = ["skip_init"]
