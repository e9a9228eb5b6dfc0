"""``torch.serialization``'s names: ``save``, ``load`` and the allow-list of globals for loading.

PyTorch's ``weights_only`` loading unpickles only the globals on an allow-list (``add_safe_globals``,
``safe_globals``). SneppX's own files are safetensors with a JSON structure and are never unpickled;
files written by PyTorch's ``torch.save`` are, and there ``load`` resolves, besides what a checkpoint
of tensors and plain values needs, exactly the globals on this list (see ``_torch_file``).
"""

from __future__ import annotations

import contextlib

from ._serialization import load, save

_SAFE_GLOBALS: list = []


def _check(safe_globals):
    if not isinstance(safe_globals, (list, tuple)):
        raise TypeError(f"[serialization] safe_globals must be a list of globals (or (global, name) pairs), got "
                        f"{type(safe_globals).__name__}")
    return list(safe_globals)


def add_safe_globals(safe_globals) -> None:
    """Adds ``safe_globals`` (classes or functions, or ``(global, "module.name")`` pairs) to the allow-list."""
    _SAFE_GLOBALS.extend(g for g in _check(safe_globals) if g not in _SAFE_GLOBALS)


def get_safe_globals() -> list:
    """The allow-list, in the order the globals were added."""
    return list(_SAFE_GLOBALS)


def clear_safe_globals() -> None:
    """Empties the allow-list."""
    _SAFE_GLOBALS.clear()


@contextlib.contextmanager
def safe_globals(safe_globals):
    """Within the ``with`` block, ``safe_globals`` are added to the allow-list; afterwards it is as before."""
    before = list(_SAFE_GLOBALS)
    add_safe_globals(safe_globals)
    try:
        yield
    finally:
        _SAFE_GLOBALS[:] = before


__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals"]
