"""Containers of parameters: ParameterList and ParameterDict."""

from __future__ import annotations

from sneppx_core import Tensor

from .containers import _DictBase, _index
from .module import Module
from .parameter import Parameter


def _as_parameter(container: str, value) -> Parameter:
    # A Parameter as is, a tensor wrapped in one (as PyTorch's parameter containers do).
    if isinstance(value, Parameter):
        return value
    if isinstance(value, Tensor):
        return Parameter(value)
    raise TypeError(f"[{container}] holds Parameters or tensors, got {type(value).__name__}")


def _describe(p) -> str:
    dtype = str(p.dtype).removeprefix("sneppx.")
    return f"Parameter containing: [{dtype} of size {'x'.join(map(str, p.shape))}]"


class ParameterList(Module):
    """A list of parameters, registered under the names "0", "1", ... (tensors become Parameters).

    Supports ``len``, indexing, slicing (a new ParameterList of the same parameters), assignment,
    ``append``, ``extend``, ``+=`` and iteration; holds only Parameters and tensors.
    """

    def __init__(self, values=None):
        super().__init__()
        if values is not None:
            self.extend(values)

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ParameterList(list(self)[idx])
        return list(self._parameters.values())[_index("ParameterList", idx, len(self))]

    def __setitem__(self, idx, value) -> None:
        i = _index("ParameterList", idx, len(self))
        self.register_parameter(str(i), _as_parameter("ParameterList", value))

    def append(self, value):
        """Adds ``value`` at the end; returns self."""
        self.register_parameter(str(len(self)), _as_parameter("ParameterList", value))
        return self

    def extend(self, values):
        """Appends every value of the iterable ``values``; returns self."""
        for v in values:
            self.append(v)
        return self

    def __iadd__(self, values):
        return self.extend(values)

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]

    def extra_repr(self) -> str:
        return "\n".join(f"  ({k}): {_describe(p)}" for k, p in self._parameters.items())  # indented as in torch


class ParameterDict(_DictBase):
    """An ordered dict of parameters registered under their keys (tensors become Parameters).

    Has the dict methods ``keys``, ``values``, ``items``, ``get``, ``pop``, ``setdefault``, ``update``,
    ``clear`` and ``copy`` (a new ParameterDict of the same parameters); holds only Parameters and tensors.
    """

    _store, _kind = "_parameters", "parameter"

    def __init__(self, parameters=None):
        super().__init__(parameters)

    def __setitem__(self, key: str, value) -> None:
        self.register_parameter(key, _as_parameter("ParameterDict", value))

    def get(self, key: str, default=None):
        """The parameter named ``key``, or ``default``."""
        return self._parameters.get(key, default)

    def setdefault(self, key: str, default=None):
        """The parameter named ``key``, first set to ``default`` where there is none."""
        if key not in self._parameters:
            self[key] = default
        return self._parameters[key]

    def copy(self) -> "ParameterDict":
        """A new ParameterDict holding the same parameters."""
        return ParameterDict(self._parameters.items())

    def extra_repr(self) -> str:
        return "\n".join(f"  ({k}): {_describe(p)}" for k, p in self._parameters.items())  # indented as in torch
