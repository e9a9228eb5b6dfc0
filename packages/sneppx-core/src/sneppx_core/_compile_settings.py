"""``torch._dynamo``, ``torch._inductor`` and ``torch._functorch``'s settings modules, which training scripts set
before compiling (``torch._inductor.config.coordinate_descent_tuning = True``,
``torch._dynamo.config.cache_size_limit = 64``).
SneppX has no compiler (see ``compiler``), so the settings are kept and change nothing. A ``config`` module takes
any setting; its sections (``config.triton``, ``config.cpp``, ...) too; reading a setting never set raises
AttributeError, so no program reads a made-up default."""

from __future__ import annotations

import sys
import types

from . import compiler


class _Section:
    """A group of settings (``config.triton``): any attribute may be set; unset ones raise AttributeError."""

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "_name", name)

    def __getattr__(self, key: str):
        raise AttributeError(f"[{self._name}] {key!r} was never set (SneppX has no compiler to configure)")

    def __repr__(self) -> str:
        return f"<settings {self._name}: {vars(self)}>"


def _module(name: str, doc: str, sections=()) -> types.ModuleType:
    m = types.ModuleType(name, doc)
    m.__path__ = []  # a package, so that `import torch._inductor.config` finds its config module
    for s in sections:
        setattr(m, s, _Section(f"{name}.{s}"))
    sys.modules[name] = m
    return m


_dynamo = _module("sneppx_core._dynamo", "``torch._dynamo``'s place: ``config``, ``reset``, ``disable``, "
                  "``allow_in_graph``, ``is_compiling``, ``mark_dynamic``, ``mark_static`` (no compiler: no effect).")
_dynamo.config = _module("sneppx_core._dynamo.config", "``torch._dynamo.config``: settings kept, no effect.")
_dynamo.reset, _dynamo.disable, _dynamo.allow_in_graph = compiler.reset, compiler.disable, compiler.allow_in_graph
_dynamo.is_compiling = compiler.is_compiling


def _mark(t, index=None, **kwargs) -> None:
    """Marks a dimension of ``t`` dynamic or static for the compiler: nothing to do."""


_dynamo.mark_dynamic = _dynamo.mark_static = _dynamo.maybe_mark_dynamic = _mark
_inductor = _module("sneppx_core._inductor", "``torch._inductor``'s place: ``config`` (no compiler: no effect).")
_inductor.config = _module("sneppx_core._inductor.config", "``torch._inductor.config``: settings kept, no effect.",
                           sections=("triton", "cpp", "cuda", "aot_inductor", "trace"))
_functorch = _module("sneppx_core._functorch", "``torch._functorch``'s place: ``config`` (no compiler: no effect).")
_functorch.config = _module("sneppx_core._functorch.config", "``torch._functorch.config``: settings kept, no effect "
                            "(gpt-fast sets ``enable_autograd_cache``).")
