"""Replacing the library's public functions with wrappers everywhere they can be reached: what the profiler
(timing wrappers, for the length of a recording) and ``sneppx_nn.fx`` (wrappers that record calls on traced
values) both do. A function is looked up in the modules named, wrapped once, and the wrapper is put in every
public module of the ``sneppx_*`` packages and ``SneppX_ALG`` that holds the function (a sibling package or the
meta-package re-exporting it), so that a name stays one object wherever it is reached."""

from __future__ import annotations

import importlib
import sys
import types


def public_functions(modules, skip=()) -> dict:
    """``{id(function): (function, "module.name")}`` for the public Python and compiled functions of
    ``modules`` (names; one this core does not have is passed over), less the names in ``skip``; a function
    found in several keeps the first module's path."""
    found: dict = {}
    for modname in modules:
        try:
            mod = sys.modules.get(modname) or importlib.import_module(modname)
        except ImportError:
            continue
        for name, obj in list(vars(mod).items()):
            if (not name.startswith("_") and name not in skip
                    and isinstance(obj, (types.FunctionType, types.BuiltinFunctionType))):
                found.setdefault(id(obj), (obj, f"{modname}.{name}"))
    return found


def replace_everywhere(wrappers: dict) -> list:
    """Puts ``wrappers`` (``{id(function): (function, wrapper)}``) in place of their functions in every public
    module of the packages; returns ``[(module, name, function, wrapper)]`` for ``put_back``."""
    replaced = []
    for modname, mod in list(sys.modules.items()):
        if not modname.startswith(("sneppx_", "SneppX_ALG")) or any(p.startswith("_") for p in modname.split(".")):
            continue
        for name, obj in list(vars(mod).items()):
            pair = wrappers.get(id(obj)) if not name.startswith("_") else None
            if pair is not None and pair[0] is obj:
                replaced.append((mod, name, obj, pair[1]))
                setattr(mod, name, pair[1])
    return replaced


def replace_methods(cls, names, make) -> list:
    """Puts ``make(name, method)`` in place of each method of ``cls`` in ``names`` (one ``cls`` lacks, and
    properties, static and class methods, are passed over); returns ``[(cls, name, method, wrapper)]`` for
    ``put_back``."""
    replaced = []
    for name in names:
        raw = vars(cls).get(name)
        if raw is None or isinstance(raw, (property, staticmethod, classmethod)):
            continue
        wrapper = make(name, getattr(cls, name))
        replaced.append((cls, name, raw, wrapper))
        setattr(cls, name, wrapper)
    return replaced


def put_back(replaced: list) -> None:
    """Undoes ``replace_everywhere`` (and similar ``(namespace, name, old, new)`` records, last first). Where
    another mechanism has wrapped the wrapper since (the profiler and autocast ending out of order), the wrapper
    is taken out of that chain: wrappers call the function they wrap through their ``__wrapped__`` attribute, so
    the one above it is pointed at ``old`` instead, and the wrapper remembers what replaced it for the other
    mechanism's own put_back (whose ``old`` it may be)."""
    while replaced:
        ns, name, old, new = replaced.pop()
        while getattr(old, "_sneppx_replaced_by", None) is not None:
            old = old._sneppx_replaced_by
        cur = ns.__dict__.get(name) if isinstance(ns, type) else vars(ns).get(name)
        if cur is new:
            setattr(ns, name, old)
            continue
        while cur is not None and getattr(cur, "__wrapped__", None) is not None:
            if cur.__wrapped__ is new:
                cur.__wrapped__, new._sneppx_replaced_by = old, old
                break
            cur = cur.__wrapped__


__all__ = ["public_functions", "put_back", "replace_everywhere", "replace_methods"]
