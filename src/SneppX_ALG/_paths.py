"""``import SneppX_ALG.nn.functional as F``: PyTorch's module paths with ``torch`` renamed.

``SneppX_ALG.<a>.<b>...`` imports the module that the attribute path names (``SneppX_ALG.nn`` is
``sneppx_nn``, ``SneppX_ALG.utils.data`` is ``sneppx_data``, ``SneppX_ALG.autograd.functional`` is
``sneppx_core.autograd.functional``), or else the real submodule of the component module
(``SneppX_ALG.nn.utils.rnn`` is ``sneppx_nn.utils.rnn``); a few paths no component has are modules of the
meta-package (``SneppX_ALG.nn.parallel`` holds sneppx_distributed's ``DistributedDataParallel``). The modules
are the components' own: nothing is copied, and ``sys.modules`` holds them under both names.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import types


class AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``<root>.<path>`` (see the module's note). It runs before the regular finders: these would find the
    component's files through the alias's ``__path__`` and run them a second time as new modules."""

    def __init__(self, root: str, extra: dict) -> None:
        self.root = root
        self.extra = extra  # full name -> a module made by the meta-package (PyTorch paths no component has)
        self.found: dict = {}
        self.specs: dict = {}  # full name -> the aliased module's own __spec__, while it is being imported

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(self.root + "."):
            return None
        if fullname in self.extra:
            self.found[fullname] = self.extra[fullname]
            return importlib.util.spec_from_loader(fullname, self)
        parent_name, _, child = fullname.rpartition(".")
        parent = sys.modules.get(parent_name)
        if parent is None:
            return None
        module = getattr(parent, child, None)
        if not isinstance(module, types.ModuleType):
            real = getattr(parent, "__name__", parent_name)
            if real == parent_name:  # a module of this package itself: nothing to alias
                return None
            try:
                module = importlib.import_module(f"{real}.{child}")
            except ModuleNotFoundError as e:
                if e.name != f"{real}.{child}":
                    raise
                return None
        self.found[fullname] = module
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        module = self.found.pop(spec.name)
        self.specs[spec.name] = getattr(module, "__spec__", None)
        return module

    def exec_module(self, module) -> None:
        """Nothing to run: the module was imported under its own name. The import system has just set the
        module's ``__spec__`` to the alias's; its own is put back (``importlib.reload`` and tools reading
        ``__spec__.name`` then see the real module)."""
        own = self.specs.pop(module.__spec__.name, None)
        if own is not None:
            module.__spec__ = own


def install(root: str, extra: dict) -> None:
    """Puts the finder for ``root`` at the front of ``sys.meta_path`` (once); ``extra`` maps full names to
    modules that only the meta-package has."""
    if not any(isinstance(f, AliasFinder) and f.root == root for f in sys.meta_path):
        sys.meta_path.insert(0, AliasFinder(root, extra))
