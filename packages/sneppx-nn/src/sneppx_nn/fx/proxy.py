"""``torch.fx.proxy``: ``Proxy`` (a value being traced), ``Attribute``, ``TracerBase`` and ``GraphAppendingTracer``.

A Proxy stands for a node's value: operators on it (``x + y``, ``x[0]``), its methods (``x.relu()``) and the
library's functions given it (``sneppx_core.relu(x)``, ``F.gelu(x)``; see ``_patch``) append nodes to its
tracer's graph instead of computing.
"""

from __future__ import annotations

import dis
import operator
import sys
from typing import Any

import sneppx_core as sx

from .node import Node

# the types kept as they are in a node's arguments (the code generator writes them with repr or as globals)
_BASE_TYPES = (str, int, float, bool, complex, bytes, sx.Dtype, type(sx.device("cpu")), sx.Size, sx.Tensor, type(...),
               type(None))


class TraceError(ValueError):
    """Raised when traced code needs a Proxy's concrete value (``if x.sum() > 0``, ``for row in x``)."""


class TracerBase:
    """What a Proxy needs of its tracer: a ``graph`` and the ways to turn arguments into nodes."""

    graph: Any = None
    check_mutable_operations = False
    trace_asserts = False
    record_stack_traces = False

    def create_node(self, kind: str, target, args: tuple, kwargs: dict, name: str | None = None,
                    type_expr: Any = None) -> Node:
        """Appends a node to ``self.graph`` (subclasses override it to tag or rewrite nodes)."""
        return self.graph.create_node(kind, target, args, kwargs, name, type_expr)

    def proxy(self, node: Node) -> "Proxy":
        """The Proxy of ``node``."""
        return Proxy(node, self)

    def create_proxy(self, kind: str, target, args: tuple, kwargs: dict, name: str | None = None,
                     type_expr: Any = None, proxy_factory_fn=None) -> "Proxy":
        """Turns ``args``/``kwargs`` into node arguments (``create_arg``), appends a node and returns its Proxy."""
        node = self.create_node(kind, target, self.create_arg(tuple(args)), self.create_arg(dict(kwargs)), name,
                                type_expr)
        return self.proxy(node) if proxy_factory_fn is None else proxy_factory_fn(node)

    def create_arg(self, a: Any) -> Any:
        """``a`` as a node argument: Proxies become their nodes, containers are walked, numbers, strings,
        dtypes, devices and tensors are kept; anything else raises NotImplementedError."""
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, Node):
            return a
        if isinstance(a, tuple):
            args = tuple(self.create_arg(e) for e in a)
            return type(a)(*args) if hasattr(a, "_fields") else args
        if isinstance(a, list):
            return [self.create_arg(e) for e in a]
        if isinstance(a, dict):
            out = {}
            for k, v in a.items():
                if not isinstance(k, str):
                    k = self.create_arg(k)
                    if isinstance(k, Node):
                        raise RuntimeError(f"[fx] keys of a dict argument cannot be traced values, got {k}")
                out[k] = self.create_arg(v)
            return out
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, range):
            return range(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, _BASE_TYPES) or callable(a) and not isinstance(a, type) and hasattr(a, "__name__"):
            return a
        raise NotImplementedError(f"[fx] argument of type {type(a).__name__} cannot be recorded in a graph")

    def to_bool(self, obj: "Proxy") -> bool:
        """Called for ``bool(proxy)``: tracing cannot follow control flow on a traced value."""
        raise TraceError("symbolically traced variables cannot be used as inputs to control flow "
                         f"(bool() of {obj.node.name}); pass the value as a concrete_arg or move the branch "
                         "into a wrapped function (fx.wrap)")

    def iter(self, obj: "Proxy"):
        """Called for ``iter(proxy)`` outside tuple unpacking."""
        raise TraceError(f"Proxy object cannot be iterated ({obj.node.name}): a traced value's length is "
                         "unknown; unpack it (a, b = x) or index it")

    def keys(self, obj: "Proxy") -> "Proxy":
        """Called for ``**proxy``: records ``proxy.keys()``."""
        return Attribute(obj, "keys")()


class GraphAppendingTracer(TracerBase):
    """The tracer of Proxies made around the nodes of an existing graph: new nodes go to that graph (at its
    insertion point, ``graph.inserting_before``/``inserting_after``)."""

    def __init__(self, graph) -> None:
        self.graph = graph
        self.scope = None
        self.module_stack: dict = {}
        self.node_name_to_scope: dict = {}


class Proxy:
    """A traced value: the ``node`` of a graph that computes it, and the ``tracer`` that records what is done
    with it. ``Proxy(node)`` of an existing node appends to that node's graph."""

    def __init__(self, node: Node, tracer: TracerBase | None = None) -> None:
        self.node = node
        self.tracer = tracer if tracer is not None else GraphAppendingTracer(node.graph)

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    def __getattr__(self, k: str) -> "Attribute":
        if k.startswith("__") and k.endswith("__") or k in ("node", "tracer"):
            raise AttributeError(k)
        return Attribute(self, k)

    def __call__(self, *args, **kwargs) -> "Proxy":
        return self.tracer.create_proxy("call_method", "__call__", (self, *args), kwargs)

    def __iter__(self):
        frame = sys._getframe(1)
        for inst in dis.get_instructions(frame.f_code):
            if inst.offset > frame.f_lasti:
                break
            if inst.offset == frame.f_lasti:
                if inst.opname == "UNPACK_SEQUENCE":
                    return (self[i] for i in range(inst.argval))
                break
        return self.tracer.iter(self)

    def __bool__(self) -> bool:
        return self.tracer.to_bool(self)

    def __len__(self) -> int:
        raise RuntimeError("'len' is not supported in symbolic tracing by default: a traced value's length is "
                           "unknown; call fx.wrap('len') at module scope to record len() calls")

    def keys(self) -> "Proxy":
        """``proxy.keys()`` (what ``**proxy`` calls)."""
        return self.tracer.keys(self)

    def __hash__(self) -> int:
        return id(self)

    def __deepcopy__(self, memo):
        raise TraceError(f"a Proxy ({self.node.name}) cannot be copied while tracing")


class Attribute(Proxy):
    """``proxy.name``: a ``getattr`` node, made when the value is used; calling it records ``call_method``."""

    def __init__(self, root: Proxy, attr: str) -> None:
        self.root, self.attr, self.tracer = root, attr, root.tracer
        self._node = None

    @property
    def node(self) -> Node:
        """The ``getattr`` node, appended on first use."""
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr, (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs) -> Proxy:
        return self.tracer.create_proxy("call_method", self.attr, (self.root, *args), kwargs)


# operators a Proxy records (operator.add for x + y, ...): binary ones also reflected (1 + x)
_BINARY = ("add", "sub", "mul", "floordiv", "truediv", "mod", "pow", "lshift", "rshift", "and_", "or_", "xor",
           "matmul")
_OTHER = ("getitem", "eq", "ne", "lt", "gt", "le", "ge")
_UNARY = ("neg", "pos", "invert", "abs")


def _method(fn, reflected: bool = False):
    def impl(self, *args):
        args = (args[0], self) if reflected else (self, *args)
        return _tracer_of(args).create_proxy("call_function", fn, args, {})
    return impl


def _tracer_of(args) -> TracerBase:
    return next(a.tracer for a in args if isinstance(a, Proxy))


for _name in _BINARY + _OTHER + _UNARY:
    _dunder = _name.rstrip("_")
    setattr(Proxy, f"__{_dunder}__", _method(getattr(operator, _name)))
for _name in _BINARY:
    _dunder = _name.rstrip("_")
    setattr(Proxy, f"__r{_dunder}__", _method(getattr(operator, _name), reflected=True))
