"""``torch.fx.graph``: ``Graph`` (a doubly linked list of nodes) and the Python code generated from it."""

from __future__ import annotations

import builtins
import inspect
import math
import operator
import re
import sys
from dataclasses import dataclass
from typing import Any, Callable

from . import _patch
from .node import _RESERVED, Argument, Node, Target, _snake, _target_name, map_arg

# the operators written as Python syntax in generated code
_SYNTAX = {operator.add: "{} + {}", operator.sub: "{} - {}", operator.mul: "{} * {}", operator.truediv: "{} / {}",
           operator.floordiv: "{} // {}", operator.mod: "{} % {}", operator.pow: "{} ** {}",
           operator.lshift: "{} << {}", operator.rshift: "{} >> {}", operator.and_: "{} & {}",
           operator.or_: "{} | {}", operator.xor: "{} ^ {}", operator.matmul: "{} @ {}", operator.getitem: "{}[{}]",
           operator.eq: "{} == {}", operator.ne: "{} != {}", operator.lt: "{} < {}", operator.gt: "{} > {}",
           operator.le: "{} <= {}", operator.ge: "{} >= {}", operator.neg: "-{}", operator.pos: "+{}",
           operator.invert: "~{}"}


class _Namespace:
    """Unique Python names, in PyTorch's manner: ``add``, ``add_1``, ...; keywords and builtins get a suffix."""

    def __init__(self) -> None:
        self.used: set = set()
        self.count: dict = {}

    def create_name(self, candidate: str) -> str:
        candidate = re.sub(r"[^0-9a-zA-Z_]+", "_", candidate) or "_unnamed"
        if candidate[0].isdigit():
            candidate = f"_{candidate}"
        m = re.match(r"(.*)_(\d+)$", candidate)
        base, num = (candidate, None) if m is None else (m.group(1), int(m.group(2)))
        if num is None:
            num = self.count.get(base, 0)
        while candidate in self.used or candidate in _RESERVED:
            num += 1
            candidate = f"{base}_{num}"
        self.used.add(candidate)
        self.count[base] = num
        return candidate


class _NodeList:
    """``graph.nodes``: iterates in program order (or reversed); erasing the current node while iterating is
    allowed, as nodes keep their link to the next one."""

    def __init__(self, graph: "Graph", reverse: bool = False) -> None:
        self.graph, self.reverse = graph, reverse

    def __len__(self) -> int:
        return self.graph._len

    def __iter__(self):
        root = self.graph._root
        cur = root._prev if self.reverse else root._next
        while cur is not root:
            if not cur._erased:
                yield cur
            cur = cur._prev if self.reverse else cur._next

    def __reversed__(self):
        return iter(_NodeList(self.graph, not self.reverse))


class _InsertPoint:
    def __init__(self, graph: "Graph", insert: Callable) -> None:
        self.graph = graph
        self.saved, graph._insert = graph._insert, insert

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc) -> None:
        self.graph._insert = self.saved


@dataclass
class PythonCode:
    """The generated ``forward``: its source and the globals it reads."""
    src: str
    globals: dict
    _lineno_map: Any = None


class Graph:
    """A program of ``Node`` s: build it with ``placeholder``, ``get_attr``, ``call_function``, ``call_method``,
    ``call_module`` and ``output`` (or by tracing); new nodes go at the insertion point (the end, or where
    ``inserting_before``/``inserting_after`` say)."""

    def __init__(self, owning_module=None, tracer_cls=None, tracer_extras=None) -> None:
        self._root = Node(self, "", "root", "", (), {})
        self._len = 0
        self._ns = _Namespace()
        self._insert = self._root.prepend
        self._owning_module = owning_module
        self._tracer_cls = tracer_cls

    @property
    def nodes(self) -> _NodeList:
        """The nodes in program order (``reversed(graph.nodes)`` walks backwards)."""
        return _NodeList(self)

    @property
    def owning_module(self):
        """The GraphModule this graph belongs to, if any."""
        return self._owning_module

    @owning_module.setter
    def owning_module(self, mod) -> None:
        self._owning_module = mod

    # ----- building -------------------------------------------------------------------------
    def create_node(self, op: str, target: Target, args: tuple | None = None, kwargs: dict | None = None,
                    name: str | None = None, type_expr: Any = None) -> Node:
        """A new node at the insertion point; ``name`` (default: from the target) is made unique."""
        name = self._ns.create_name(name if name is not None else _target_name(op, target))
        n = Node(self, name, op, target, tuple(args or ()), dict(kwargs or {}), type_expr)
        self._insert(n)
        self._len += 1
        return n

    def placeholder(self, name: str, type_expr: Any = None, default_value: Any = inspect.Signature.empty) -> Node:
        """An input of the generated ``forward`` (with ``default_value`` if given)."""
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args, type_expr=type_expr)

    def get_attr(self, qualified_name: str, type_expr: Any = None) -> Node:
        """Reads ``self.<qualified_name>`` of the owning module (a parameter, buffer or attribute)."""
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name: str, args: tuple | None = None, kwargs: dict | None = None,
                    type_expr: Any = None) -> Node:
        """Calls the submodule at ``module_name``."""
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name: str, args: tuple | None = None, kwargs: dict | None = None,
                    type_expr: Any = None) -> Node:
        """Calls ``args[0].<method_name>(*args[1:], **kwargs)``."""
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function: Callable, args: tuple | None = None, kwargs: dict | None = None,
                      type_expr: Any = None) -> Node:
        """Calls ``the_function(*args, **kwargs)``."""
        return self.create_node("call_function", the_function, args, kwargs, type_expr=type_expr)

    def output(self, result: Argument, type_expr: Any = None) -> Node:
        """The value the generated ``forward`` returns."""
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def node_copy(self, node: Node, arg_transform: Callable = lambda x: x) -> Node:
        """A copy of ``node`` (of this or another graph) here, its input nodes mapped by ``arg_transform``."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        n = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        n.meta = dict(node.meta)
        return n

    def graph_copy(self, g: "Graph", val_map: dict, return_output_node: bool = False):
        """Copies ``g``'s nodes but its output here; ``val_map`` maps ``g``'s nodes to the copies (nodes already
        in it are not copied). Returns the copied output value."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                out = map_arg(node.args[0], lambda n: val_map[n])
                return (out, node) if return_output_node else out
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def erase_node(self, to_erase: Node) -> None:
        """Removes a node that no other node reads."""
        if to_erase.users:
            raise RuntimeError(f"[fx.Graph.erase_node] tried to erase node {to_erase.name} but it still has "
                               f"{len(to_erase.users)} user(s) in the graph: {list(to_erase.users)}")
        if to_erase.graph is not self or to_erase._erased:
            raise RuntimeError(f"[fx.Graph.erase_node] node {to_erase.name} is not in this graph")
        to_erase._unlink()
        to_erase._erased = True
        self._len -= 1
        to_erase.args, to_erase.kwargs = (), {}

    def inserting_before(self, n: Node | None = None) -> _InsertPoint:
        """``with graph.inserting_before(n):`` new nodes go just before ``n`` (the start when None), in the order
        they are made."""
        return _InsertPoint(self, (n if n is not None else self._root._next).prepend)

    def inserting_after(self, n: Node | None = None) -> _InsertPoint:
        """``with graph.inserting_after(n):`` new nodes go just after ``n`` (the end when None), in the order
        they are made (each after the one made before it)."""
        if n is None:
            return _InsertPoint(self, self._root.prepend)
        last = [n]

        def insert(x: Node) -> None:
            last[0].append(x)
            last[0] = x
        return _InsertPoint(self, insert)

    def find_nodes(self, *, op: str, target: Target = None) -> list:
        """The nodes with this ``op`` (and ``target``, if given)."""
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    # ----- checking and cleaning ---------------------------------------------------------------
    def lint(self) -> None:
        """Checks that every node belongs to this graph, reads only nodes defined before it, has a unique name,
        and that ``get_attr``/``call_module`` targets exist in the owning module."""
        seen, names = set(), set()
        for n in self.nodes:
            if n.graph is not self:
                raise RuntimeError(f"[fx.Graph.lint] node {n.name} belongs to another graph")
            if n.name in names:
                raise RuntimeError(f"[fx.Graph.lint] two nodes are named {n.name}")
            for arg in n.all_input_nodes:
                if arg.graph is not self:
                    raise RuntimeError(f"[fx.Graph.lint] node {n.name} reads {arg.name}, a node of another graph")
                if arg not in seen:
                    raise RuntimeError(f"[fx.Graph.lint] node {n.name} reads {arg.name}, which is not defined "
                                       "before it in this graph")
            seen.add(n)
            names.add(n.name)
            mod = self._owning_module
            if mod is not None and n.op in ("get_attr", "call_module"):
                obj = mod
                for part in n.target.split("."):
                    if not hasattr(obj, part):
                        raise RuntimeError(f"[fx.Graph.lint] node {n.name} targets {n.target}, which the owning "
                                           "module does not have")
                    obj = getattr(obj, part)

    def eliminate_dead_code(self) -> bool:
        """Erases nodes whose value no one reads (but placeholders, outputs and in-place calls); says whether any
        went."""
        changed = False
        for node in reversed(self.nodes):
            if not node.users and not node.is_impure():
                self.erase_node(node)
                changed = True
        return changed

    # ----- printing and code --------------------------------------------------------------------
    def __str__(self) -> str:
        return "\n".join(["graph():"] + ["    " + n.format_node() for n in self.nodes])

    def print_tabular(self) -> None:
        """Prints the nodes as a table (opcode, name, target, args, kwargs); needs the ``tabulate`` package."""
        try:
            from tabulate import tabulate
        except ImportError:
            raise ImportError("[fx.Graph.print_tabular] needs the tabulate package: pip install tabulate") from None
        rows = [[n.op, n.name, n.target, n.args, n.kwargs] for n in self.nodes]
        print(tabulate(rows, headers=["opcode", "name", "target", "args", "kwargs"]))

    def python_code(self, root_module: str = "self", *, verbose: bool = False) -> PythonCode:
        """The source of ``def forward(self, ...)`` computing this graph, and the globals it reads."""
        return _CodeGen(self, root_module).run()


def last_uses(nodes) -> dict:
    """``{node: [the values it is the last node to read]}``: after it runs, they can be released."""
    last: dict = {}
    for n in nodes:
        for i in n.all_input_nodes:
            last[i] = n
    freed: dict = {}
    for value, user in last.items():
        freed.setdefault(user, []).append(value)
    return freed


def _format_target(base: str, target: str) -> str:
    out = base
    for part in target.split("."):
        out = f"{out}.{part}" if part.isidentifier() else f"getattr({out}, {part!r})"
    return out


class _CodeGen:
    """Writes a graph as Python: one statement per node, each value released (``x = None``) after its last use."""

    def __init__(self, graph: Graph, root_module: str) -> None:
        self.graph, self.root = graph, root_module
        self.ns = _Namespace()
        for n in graph.nodes:
            self.ns.used.add(n.name)
        self.ns.used.add(root_module)
        self.globals: dict = {"inf": math.inf, "nan": math.nan, "NoneType": type(None)}
        self.by_id: dict = {}

    def add_global(self, hint: str, obj: Any) -> str:
        if id(obj) in self.by_id:
            return self.by_id[id(obj)]
        if getattr(builtins, getattr(obj, "__name__", ""), None) is obj:
            name = obj.__name__
        else:
            name = self.ns.create_name(_snake(hint))
            self.globals[name] = obj
        self.by_id[id(obj)] = name
        return name

    def function(self, fn: Callable) -> str:
        path = _patch.PATHS.get(fn)
        if path is not None:
            top = path.split(".")[0]
            self.globals.setdefault(top, sys.modules[top])
            return path
        if getattr(operator, getattr(fn, "__name__", ""), None) is fn:
            self.globals.setdefault("operator", operator)
            return f"operator.{fn.__name__}"
        hint = f"{getattr(fn, '__module__', '') or ''}.{getattr(fn, '__qualname__', type(fn).__name__)}"
        return self.add_global(hint, fn)

    def arg(self, a: Argument) -> str:
        if isinstance(a, Node):
            return a.name
        if isinstance(a, tuple):
            body = ", ".join(self.arg(e) for e in a)
            if hasattr(a, "_fields"):
                return f"{self.add_global(type(a).__name__, type(a))}({body})"
            return f"({body},)" if len(a) == 1 else f"({body})"
        if isinstance(a, list):
            return "[" + ", ".join(self.arg(e) for e in a) + "]"
        if isinstance(a, dict):
            return "{" + ", ".join(f"{self.arg(k)}: {self.arg(v)}" for k, v in a.items()) + "}"
        if isinstance(a, slice):
            return f"slice({self.arg(a.start)}, {self.arg(a.stop)}, {self.arg(a.step)})"
        if a is None or a is ... or isinstance(a, (bool, int, str, bytes)):
            return repr(a)
        if isinstance(a, (float, complex)):
            return repr(a)  # inf and nan are globals
        if callable(a) and not isinstance(a, type) and hasattr(a, "__name__"):
            return self.function(a)
        return self.add_global(type(a).__name__.lower(), a)

    def call_args(self, args: tuple, kwargs: dict) -> str:
        parts = [self.arg(a) for a in args] + [f"{k} = {self.arg(v)}" for k, v in kwargs.items()]
        return ", ".join(parts)

    def statement(self, n: Node) -> str:
        if n.op == "get_attr":
            return f"{n.name} = {_format_target(self.root, n.target)}"
        if n.op == "call_module":
            return f"{n.name} = {_format_target(self.root, n.target)}({self.call_args(n.args, n.kwargs)})"
        if n.op == "call_method":
            return f"{n.name} = {self.arg(n.args[0])}.{n.target}({self.call_args(n.args[1:], n.kwargs)})"
        if n.op == "output":
            return f"return {self.arg(n.args[0])}"
        fn = n.target
        if fn in _SYNTAX and not n.kwargs and len(n.args) == _SYNTAX[fn].count("{}"):
            return f"{n.name} = " + _SYNTAX[fn].format(*(self.arg(a) for a in n.args))
        if fn is getattr and len(n.args) == 2 and isinstance(n.args[1], str) and n.args[1].isidentifier():
            return f"{n.name} = {self.arg(n.args[0])}.{n.args[1]}"
        return f"{n.name} = {self.function(fn)}({self.call_args(n.args, n.kwargs)})"

    def run(self) -> PythonCode:
        nodes = list(self.graph.nodes)
        freed = last_uses(nodes)
        params, body = [], []
        for n in nodes:
            if n.op == "placeholder":
                raw = n.target.lstrip("*")
                default = f" = {self.arg(n.args[0])}" if n.args else ""
                params.append(f"{n.target}{default}")
                if raw != n.name:
                    body.append(f"{n.name} = {raw}")
                continue
            line = self.statement(n)
            if n.op != "output":
                dead = [v.name for v in freed.get(n, ())] + ([n.name] if not n.users else [])
                if dead:
                    line += ";  " + " = ".join(dead) + " = None"
            body.append(line)
        if not any(n.op == "output" for n in nodes):
            body.append("return None")
        sig = ", ".join([self.root] + params)
        src = f"\n\n\ndef forward({sig}):\n" + "".join(f"    {line}\n" for line in body) + "    "
        return PythonCode(src, self.globals)
