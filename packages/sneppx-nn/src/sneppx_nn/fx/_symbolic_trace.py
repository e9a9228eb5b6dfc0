"""``torch.fx._symbolic_trace``: ``Tracer``, ``symbolic_trace`` and ``wrap``.

Tracing calls the module's ``forward`` with Proxies for its inputs. While it runs, ``Module.__call__`` records a
``call_module`` node for leaf modules (the library's layers) and calls into the others, ``Module.__getattr__``
gives a ``get_attr`` Proxy for each parameter read, and the functions given to ``wrap`` record a node instead of
running.
"""

from __future__ import annotations

import builtins
import inspect
import math
import operator
import sys
from typing import Any, Callable

import sneppx_core as sx

from ..containers import Sequential
from ..module import Module
from ..parameter import Parameter
from . import _patch
from .graph import Graph
from .graph_module import GraphModule
from .node import has_side_effect
from .proxy import Proxy, TracerBase

_WRAPPED: dict = {}  # (id of a module's globals, name) -> that globals dict: the functions fx.wrap names


def wrap(fn_or_name):
    """Called at module scope, makes tracing record calls of this function (a function of this module, or the
    name of one) as one ``call_function`` node instead of tracing into it. Returns its argument."""
    globals_ = sys._getframe(1).f_globals
    if globals_ is not sys._getframe(1).f_locals:
        raise NotImplementedError("[fx.wrap] must be called at the top level of a module")
    name = fn_or_name if isinstance(fn_or_name, str) else getattr(fn_or_name, "__name__", None)
    if not isinstance(name, str) or not (name in globals_ or hasattr(builtins, name)):
        raise NotImplementedError(f"[fx.wrap] {fn_or_name!r} is not a function of this module")
    _WRAPPED[(id(globals_), name)] = globals_
    return fn_or_name


@has_side_effect
def _assert(condition, message: str) -> None:
    """``torch._assert``: raises AssertionError(message) unless ``condition`` (the check of a concrete_arg)."""
    if not condition:
        raise AssertionError(message)


class _Patcher:
    """Sets attributes for the length of a trace and puts the old values back."""

    def __init__(self) -> None:
        self.undo: list = []

    def set(self, obj, name: str, value, in_dict: bool = False) -> None:
        if in_dict:
            self.undo.append((obj, name, obj.get(name, _MISSING), True))
            obj[name] = value
        else:
            self.undo.append((obj, name, obj.__dict__.get(name, _MISSING), False))
            setattr(obj, name, value)

    def restore(self) -> None:
        for obj, name, old, in_dict in reversed(self.undo):
            if in_dict:
                obj.pop(name, None) if old is _MISSING else obj.__setitem__(name, old)
            elif old is _MISSING:
                delattr(obj, name)
            else:
                setattr(obj, name, old)
        self.undo.clear()


_MISSING = object()


class Tracer(TracerBase):
    """Turns a Module's ``forward`` (or a function) into a ``Graph``. Subclass it to change which modules are
    leaves (``is_leaf_module``), how nodes are made (``create_node``, ``create_proxy``) or what arguments may be
    recorded (``create_arg``). The functions of ``autowrap_modules`` (``math``) and ``autowrap_functions`` are
    recorded as nodes when the traced code calls them on traced values."""

    def __init__(self, autowrap_modules: tuple = (math,), autowrap_functions: tuple = (),
                 param_shapes_constant: bool = False) -> None:
        self.autowrap_modules = tuple(autowrap_modules)
        self.autowrap_functions = tuple(autowrap_functions)
        self.param_shapes_constant = param_shapes_constant
        self.graph: Graph | None = None
        self.root: Module | None = None
        self.scope = None
        self.module_stack: dict = {}
        self.node_name_to_scope: dict = {}

    # ----- what a leaf is and where modules are -----------------------------------------------
    def is_leaf_module(self, m: Module, module_qualified_name: str) -> bool:
        """Whether calls of ``m`` are recorded as one ``call_module`` node: the library's own layers are,
        ``Sequential`` and user modules are traced into."""
        mod = type(m).__module__
        return mod.startswith("sneppx_nn.") and not mod.startswith("sneppx_nn.fx") and not isinstance(m, Sequential)

    def path_of_module(self, mod: Module) -> str:
        """The qualified name of ``mod`` in the traced root."""
        path = self._module_paths.get(id(mod))
        if path is None:
            raise NameError(f"[fx.Tracer] a {type(mod).__name__} called in forward is not a submodule of the "
                            "traced module")
        return path

    def call_module(self, m: Module, forward: Callable, args: tuple, kwargs: dict) -> Any:
        """A module call met while tracing: a ``call_module`` node for a leaf, else its ``forward`` traced."""
        qualname = self.path_of_module(m)
        if not self.is_leaf_module(m, qualname):
            return forward(*args, **kwargs)
        return self.create_proxy("call_module", qualname, args, kwargs)

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict) -> Any:
        """A module attribute read while tracing: a parameter of the root becomes a ``get_attr`` Proxy."""
        if isinstance(attr_val, Parameter):
            path = self._tensor_paths.get(id(attr_val))
            if path is not None:
                if path not in parameter_proxy_cache:
                    parameter_proxy_cache[path] = self.create_proxy("get_attr", path, (), {})
                return parameter_proxy_cache[path]
        return attr_val

    def create_arg(self, a: Any) -> Any:
        """As ``TracerBase.create_arg``; a parameter or buffer of the root becomes a ``get_attr`` node, another
        tensor is stored on the root as ``_tensor_constant<i>`` and read with ``get_attr``."""
        if isinstance(a, sx.Tensor) and not isinstance(a, Proxy):
            path = self._tensor_paths.get(id(a))
            if path is None:
                i = 0
                while hasattr(self.root, f"_tensor_constant{i}"):
                    i += 1
                path = f"_tensor_constant{i}"
                setattr(self.root, path, a)
                self._tensor_paths[id(a)] = path
            return self.create_node("get_attr", path, (), {})
        if isinstance(a, Module):
            for path, m in self.root.named_modules():
                if m is a:
                    return self.create_node("get_attr", path, (), {})
            raise NameError(f"[fx.Tracer] a {type(a).__name__} passed as an argument is not a submodule of the "
                            "traced module")
        return super().create_arg(a)

    # ----- tracing ----------------------------------------------------------------------------
    def _placeholders(self, fn: Callable, skip_self: bool, concrete_args: dict | None) -> list:
        concrete_args = dict(concrete_args or {})
        params = list(inspect.signature(fn).parameters.values())[1 if skip_self else 0:]
        args, checks = [], []
        for p in params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise NotImplementedError(f"[fx.symbolic_trace] {fn.__qualname__} takes *{p.name}: trace a forward "
                                          "with named parameters")
            if p.name in concrete_args:  # kept in the signature (named as in PyTorch), checked below
                value = concrete_args.pop(p.name)
                checks.append((self.create_proxy("placeholder", f"{p.name}_1", (), {}), p.name, value))
                args.append(value)
                continue
            default = () if p.default is p.empty else (p.default,)
            args.append(self.create_proxy("placeholder", p.name, default, {}))
        if concrete_args:
            raise TypeError(f"[fx.symbolic_trace] concrete_args names no parameter: {sorted(concrete_args)}")
        for ph, name, value in checks:  # the generated code refuses another value than the one traced with
            if isinstance(value, (bool, int, float, str)) or value is None:
                same = self.create_proxy("call_function", operator.is_ if value is None else operator.eq,
                                         (ph, value), {})
                self.create_proxy("call_function", _assert, (same, f"{name} has been specialized to have value "
                                                             f"{value} but got another value"), {})
        return args

    def trace(self, root, concrete_args: dict | None = None) -> Graph:
        """The graph of ``root``'s ``forward`` (``root`` a Module) or of the function ``root``; the parameters
        named in ``concrete_args`` take those values instead of being traced."""
        if isinstance(root, Module):
            self.root, fn = root, type(root).forward
        elif callable(root):
            self.root, fn = Module(), root
        else:
            raise TypeError(f"[fx.Tracer.trace] expected a Module or a function, got {type(root).__name__}")
        _patch.patch_library()
        self.graph = Graph(tracer_cls=type(self))
        self._module_paths = {id(m): p for p, m in self.root.named_modules(remove_duplicate=False)}
        self._tensor_paths = {}
        for p, t in [*self.root.named_parameters(remove_duplicate=False), *self.root.named_buffers()]:
            self._tensor_paths.setdefault(id(t), p)
        patcher, cache = _Patcher(), {}
        orig_call, orig_getattr = Module.__call__, Module.__getattr__
        tracer = self

        def module_call(mod, *args, **kwargs):
            return tracer.call_module(mod, lambda *a, **k: orig_call(mod, *a, **k), args, kwargs)

        def module_getattr(mod, name):
            return tracer.getattr(name, orig_getattr(mod, name), cache)

        try:
            patcher.set(Module, "__call__", module_call)
            patcher.set(Module, "__getattr__", module_getattr)
            self._patch_functions(patcher, getattr(fn, "__globals__", {}))
            args = self._placeholders(fn, isinstance(root, Module), concrete_args)
            result = fn(self.root, *args) if isinstance(root, Module) else fn(*args)
            self.create_node("output", "output", (self.create_arg(result),), {},
                             type_expr=getattr(fn, "__annotations__", {}).get("return"))
        finally:
            patcher.restore()
        return self.graph

    def _patch_functions(self, patcher: _Patcher, fn_globals: dict) -> None:
        for (_, name), globals_ in list(_WRAPPED.items()):
            fn = globals_.get(name, getattr(builtins, name, None))
            patcher.set(globals_, name, _patch.checked_first(fn, fn), in_dict=True)
        auto = {id(f): f for m in self.autowrap_modules for f in vars(m).values()
                if callable(f) and not isinstance(f, type) and not getattr(f, "__name__", "_").startswith("_")}
        auto.update({id(f): f for f in self.autowrap_functions})
        for name, value in list(fn_globals.items()):
            if id(value) in auto:
                patcher.set(fn_globals, name, _patch.checked_first(value, value), in_dict=True)
        for m in self.autowrap_modules:
            for name, value in list(vars(m).items()):
                if id(value) in auto:
                    patcher.set(m, name, _patch.checked_first(value, value))


def symbolic_trace(root, concrete_args: dict | None = None) -> GraphModule:
    """The ``GraphModule`` of a Module or function, traced with the default ``Tracer``."""
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if isinstance(root, Module) else root.__name__
    return GraphModule(tracer.root, graph, name)
