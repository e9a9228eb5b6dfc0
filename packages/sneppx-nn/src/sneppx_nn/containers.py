"""Containers: Sequential, ModuleList and ModuleDict (ParameterList and ParameterDict: parameter_containers)."""

from __future__ import annotations

import operator
from collections import OrderedDict

from .module import Module


def _index(container: str, idx, n: int) -> int:
    try:
        idx = operator.index(idx)
    except TypeError:
        raise TypeError(f"[{container}] indices must be int or slice, got {type(idx).__name__}") from None
    if not -n <= idx < n:
        raise IndexError(f"[{container}] index {idx} is out of range for length {n}")
    return idx + n if idx < 0 else idx


class _ListBase(Module):
    """Shared list behaviour: modules are registered under the names "0", "1", ..."""

    def _values(self) -> list:
        return list(self._modules.values())

    def _reset(self, mods) -> None:
        self._modules.clear()
        for i, m in enumerate(mods):
            self.add_module(str(i), m)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return self._slice(idx)
        return self._values()[_index(type(self).__name__, idx, len(self))]

    def __setitem__(self, idx, module) -> None:
        self.add_module(list(self._modules)[_index(type(self).__name__, idx, len(self))], module)

    def __delitem__(self, idx) -> None:
        mods = self._values()
        if isinstance(idx, slice):
            del mods[idx]
        else:
            del mods[_index(type(self).__name__, idx, len(mods))]
        self._reset(mods)

    def append(self, module):
        """Adds ``module`` at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        """Appends every module of the iterable ``modules``; returns self."""
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module) -> None:
        """Inserts ``module`` before position ``index``."""
        mods = self._values()
        mods.insert(index, module)
        self._reset(mods)

    def pop(self, index: int = -1):
        """Removes and returns the module at ``index``."""
        mods = self._values()
        out = mods.pop(_index(type(self).__name__, index, len(mods)))
        self._reset(mods)
        return out

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]


class Sequential(_ListBase, record_config=False):
    """Chains modules: ``forward(x)`` feeds ``x`` through each in order.

    ``Sequential(m0, m1, ...)`` names them "0", "1", ...; ``Sequential(OrderedDict(name=m))`` uses
    the given names. Supports ``len``, indexing, slicing (a new Sequential), ``append``,
    ``extend``, ``insert`` and iteration.
    """

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, m in args[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def _slice(self, idx: slice) -> "Sequential":
        return Sequential(OrderedDict(list(self._modules.items())[idx]))

    def forward(self, input):
        """Applies each module in order."""
        for m in self._modules.values():
            input = m(input)
        return input


class ModuleList(_ListBase):
    """A list of modules whose parameters the owner registers (``forward`` is not defined)."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def _slice(self, idx: slice) -> "ModuleList":
        return ModuleList(self._values()[idx])

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        return ModuleList(list(self) + list(other))


class _DictBase(Module):
    """Shared dict behaviour over one of the module's registries (``_store``), holding ``_kind``s."""

    _store, _kind = "_modules", "module"

    def __init__(self, values=None):
        super().__init__()
        if values is not None:
            self.update(values)

    def _entries(self) -> dict:
        return self.__dict__[self._store]

    def __getitem__(self, key: str):
        if key not in self._entries():
            raise KeyError(f"[{type(self).__name__}] no {self._kind} named {key!r}")
        return self._entries()[key]

    def __delitem__(self, key: str) -> None:
        self.pop(key)

    def __len__(self) -> int:
        return len(self._entries())

    def __iter__(self):
        return iter(self._entries())

    def __contains__(self, key) -> bool:
        return key in self._entries()

    def keys(self):
        """The names."""
        return self._entries().keys()

    def items(self):
        """The ``(name, value)`` pairs."""
        return self._entries().items()

    def values(self):
        """The values."""
        return self._entries().values()

    def pop(self, key: str):
        """Removes and returns the value named ``key``."""
        value = self[key]
        del self._entries()[key]
        return value

    def clear(self) -> None:
        """Removes every entry."""
        self._entries().clear()

    def update(self, values) -> None:
        """Adds entries from a mapping or an iterable of ``(name, value)`` pairs."""
        pairs = values.items() if hasattr(values, "items") else values
        for key, value in pairs:
            self[key] = value


class ModuleDict(_DictBase):
    """An ordered dict of modules whose parameters the owner registers."""

    def __init__(self, modules=None):
        super().__init__(modules)

    def __setitem__(self, key: str, module) -> None:
        self.add_module(key, module)
