"""``torch.fx.node``: a graph's ``Node`` and ``map_arg``/``map_aggregate`` over nested arguments."""

from __future__ import annotations

import builtins
import keyword
import operator
import re
from typing import Any, Callable

Argument = Any  # a Node, a number, a string, None, ... or a tuple/list/dict/slice of them
Target = Any  # a callable (call_function) or a string (the other ops)
_OPS = ("placeholder", "call_method", "call_module", "call_function", "get_attr", "output", "root")
_RESERVED = set(keyword.kwlist) | set(dir(builtins)) | {"self", "inf", "nan", "NoneType"}


_SIDE_EFFECTS: set = set()  # functions whose nodes dead-code elimination keeps (has_side_effect)


def has_side_effect(fn: Callable) -> Callable:
    """Marks ``fn`` as having side effects: ``eliminate_dead_code`` keeps its nodes. Returns ``fn``."""
    _SIDE_EFFECTS.add(fn)
    return fn


def map_aggregate(a: Argument, fn: Callable) -> Argument:
    """``fn`` applied to every leaf of ``a`` (tuples, named tuples, lists, dicts and slices are walked)."""
    if isinstance(a, tuple):
        t = tuple(map_aggregate(e, fn) for e in a)
        return t if not hasattr(a, "_fields") else type(a)(*t)
    if isinstance(a, list):
        return [map_aggregate(e, fn) for e in a]
    if isinstance(a, dict):
        return {k: map_aggregate(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn), map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a: Argument, fn: Callable) -> Argument:
    """``fn`` applied to every ``Node`` inside ``a`` (other leaves are kept)."""
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def _nodes_in(a: Argument) -> list:
    found: dict = {}
    map_arg(a, lambda n: found.setdefault(n))
    return list(found)


def _snake(name: str) -> str:
    """A Python identifier made from a target's name, in PyTorch's style (``layers.0`` -> ``layers_0``)."""
    name = re.sub(r"[^0-9a-zA-Z_]+", "_", name)
    name = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()  # CamelCase -> camel_case
    if not name or name[0].isdigit():
        name = f"_{name}"
    return name


def _target_name(op: str, target: Target) -> str:
    """The base name of a node for ``target`` (the graph adds ``_1``, ``_2``, ... to make it unique)."""
    if isinstance(target, str):
        return _snake(target)
    return _snake(getattr(target, "__name__", None) or type(target).__name__)


class Node:
    """One operation of a ``Graph``: ``op`` is one of ``placeholder``, ``get_attr``, ``call_function``,
    ``call_method``, ``call_module``, ``output``; ``target`` is what it calls or reads; ``args``/``kwargs`` hold
    other nodes and constants. ``users`` maps each node that reads this one to ``None``."""

    def __init__(self, graph, name: str, op: str, target: Target, args: tuple, kwargs: dict, return_type=None):
        if op not in _OPS:
            raise ValueError(f"[fx.Node] unknown op {op!r}; one of {_OPS[:-1]}")
        if op == "call_function" and not callable(target):
            raise ValueError(f"[fx.Node] call_function's target must be callable, got {type(target).__name__}")
        if op in ("placeholder", "call_method", "call_module", "get_attr", "output") and not isinstance(target, str):
            raise ValueError(f"[fx.Node] {op}'s target must be a string, got {type(target).__name__}")
        self.graph, self.name, self.op, self.target = graph, name, op, target
        self.type = return_type
        self.users: dict = {}
        self.meta: dict = {}
        self._prev = self._next = self
        self._erased = False
        self._input_nodes: dict = {}
        self._args: tuple = ()
        self._kwargs: dict = {}
        self._update(tuple(args), dict(kwargs))

    # ----- arguments ---------------------------------------------------------------------------
    def _update(self, args: tuple, kwargs: dict) -> None:
        for n in self._input_nodes:
            n.users.pop(self, None)
        self._args, self._kwargs = args, kwargs
        self._input_nodes = dict.fromkeys(_nodes_in((args, kwargs)))
        for n in self._input_nodes:  # a node of another graph is allowed here, and refused by Graph.lint
            n.users.setdefault(self)

    @property
    def args(self) -> tuple:
        """The positional arguments; assigning them updates the inputs' ``users``."""
        return self._args

    @args.setter
    def args(self, value) -> None:
        self._update(tuple(value), self._kwargs)

    @property
    def kwargs(self) -> dict:
        """The keyword arguments; assigning them updates the inputs' ``users``."""
        return self._kwargs

    @kwargs.setter
    def kwargs(self, value) -> None:
        self._update(self._args, dict(value))

    @property
    def all_input_nodes(self) -> list:
        """The nodes this one reads, in the order they appear in ``args`` then ``kwargs``."""
        return list(self._input_nodes)

    def update_arg(self, idx: int, arg: Argument) -> None:
        """Sets ``args[idx]``."""
        args = list(self._args)
        args[idx] = arg
        self.args = args

    def update_kwarg(self, key: str, arg: Argument) -> None:
        """Sets ``kwargs[key]``."""
        self.kwargs = {**self._kwargs, key: arg}

    def replace_input_with(self, old: "Node", new: "Node") -> None:
        """Makes this node read ``new`` wherever it read ``old``."""
        swap = lambda n: new if n is old else n  # noqa: E731
        self._update(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    def replace_all_uses_with(self, replace_with: "Node", delete_user_cb: Callable = lambda user: True,
                              *, propagate_meta: bool = False) -> list:
        """Makes every user of this node (for which ``delete_user_cb`` is true) read ``replace_with`` instead;
        returns those users."""
        if propagate_meta:
            for k, v in self.meta.items():
                replace_with.meta.setdefault(k, v)
        users = [u for u in self.users if delete_user_cb(u)]
        for u in users:
            u.replace_input_with(self, replace_with)
        return users

    # ----- the list ------------------------------------------------------------------------
    @property
    def next(self) -> "Node":
        """The node after this one in its graph (the graph's root sentinel after the last)."""
        return self._next

    @property
    def prev(self) -> "Node":
        """The node before this one in its graph."""
        return self._prev

    def _unlink(self) -> None:
        self._prev._next, self._next._prev = self._next, self._prev

    def prepend(self, x: "Node") -> None:
        """Moves ``x`` to just before this node."""
        if x is self:
            return
        if x._prev is not x:
            x._unlink()
        x._prev, x._next = self._prev, self
        self._prev._next = x
        self._prev = x

    def append(self, x: "Node") -> None:
        """Moves ``x`` to just after this node."""
        self._next.prepend(x)

    def is_impure(self) -> bool:
        """Whether dead-code elimination must keep this node: placeholders, outputs and in-place calls."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op in ("call_function", "call_method"):
            name = self.target if isinstance(self.target, str) else getattr(self.target, "__name__", "")
            return name.endswith("_") and not name.endswith("__") or self.target in _SIDE_EFFECTS
        return False

    def format_node(self) -> str:
        """One line describing the node, as ``Graph.__str__`` prints it."""
        if self.op == "placeholder":
            return f"%{self.name} : [num_users={len(self.users)}] = placeholder[target={self.target}]"
        if self.op == "output":
            return f"return {_fmt(self.args[0]) if self.args else None}"
        target = self.target if isinstance(self.target, str) else _qualified(self.target)
        head = f"%{self.name} : [num_users={len(self.users)}] = {self.op}[target={target}]"
        return head if self.op == "get_attr" else f"{head}(args = {_fmt(self.args)}, kwargs = {_fmt(self.kwargs)})"

    def __repr__(self) -> str:
        return self.name


def _fmt(a: Argument) -> str:
    return repr(map_arg(a, lambda n: _Named(f"%{n.name}")))


class _Named:
    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _qualified(fn: Callable) -> str:
    """``module.name`` of a function, for display (``operator.add``, ``sneppx_core.relu``)."""
    from ._patch import PATHS  # (_patch imports this module)
    if fn in PATHS:
        return PATHS[fn]
    if getattr(fn, "__module__", None) == "_operator" or getattr(operator, getattr(fn, "__name__", ""), None) is fn:
        return f"operator.{fn.__name__}"
    return f"{getattr(fn, '__module__', None) or type(fn).__module__}.{getattr(fn, '__qualname__', repr(fn))}"
