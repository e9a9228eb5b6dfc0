"""``torch.fx.interpreter``: ``Interpreter`` runs a GraphModule node by node; ``Transformer`` rebuilds it."""

from __future__ import annotations

import inspect
from typing import Any

from .graph import Graph, last_uses
from .graph_module import GraphModule
from .node import Argument, Node, Target, map_aggregate, map_arg
from .proxy import Proxy, TracerBase


def _fetch_attr(mod, target: str) -> Any:
    obj = mod
    for part in target.split("."):
        if not hasattr(obj, part):
            raise RuntimeError(f"[fx] node target {target!r} does not exist: no {part!r}")
        obj = getattr(obj, part)
    return obj


class Interpreter:
    """Runs ``module``'s graph one node at a time: ``run(*args)`` returns the output. Override ``run_node`` or
    the per-op methods (``placeholder``, ``get_attr``, ``call_function``, ``call_method``, ``call_module``,
    ``output``) to observe or change what each node does."""

    def __init__(self, module: GraphModule, garbage_collect_values: bool = True, graph: Graph | None = None) -> None:
        self.module = module
        self.graph = graph if graph is not None else module.graph
        self.garbage_collect_values = garbage_collect_values
        self.env: dict = {}
        self.user_to_last_uses: dict = last_uses(self.graph.nodes)

    def run(self, *args, initial_env: dict | None = None, enable_io_processing: bool = True) -> Any:
        """Runs the graph on ``args`` (one per placeholder); ``initial_env`` maps nodes to known values."""
        self.env = dict(initial_env or {})
        self.args_iter = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            self.env[node] = self.run_node(node)
            if self.garbage_collect_values:
                for dead in self.user_to_last_uses.get(node, ()):
                    self.env.pop(dead, None)
            if node.op == "output":
                return self.env[node]
        return None

    def run_node(self, n: Node) -> Any:
        """The value of node ``n``: its arguments fetched from the values computed so far, then the op's method."""
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    def placeholder(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """The next input given to ``run`` (or the placeholder's default)."""
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration:
            if args:
                return args[0]
            raise RuntimeError(f"[fx.Interpreter] expected an argument for placeholder {target}") from None

    def get_attr(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """The module's attribute at the dotted path ``target``."""
        return self.fetch_attr(target)

    def call_function(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """``target(*args, **kwargs)``."""
        return target(*args, **kwargs)

    def call_method(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """``args[0].target(*args[1:], **kwargs)``."""
        self_obj, *rest = args
        return getattr(self_obj, target)(*rest, **kwargs)

    def call_module(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """The submodule at ``target`` called on the arguments."""
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """The graph's result."""
        return args[0]

    def fetch_attr(self, target: str) -> Any:
        """The module's attribute at the dotted path ``target``."""
        return _fetch_attr(self.module, target)

    def fetch_args_kwargs_from_env(self, n: Node) -> tuple:
        """``n``'s arguments with each node replaced by its computed value."""
        return self.map_nodes_to_values(n.args, n), self.map_nodes_to_values(n.kwargs, n)

    def map_nodes_to_values(self, args: Argument, n: Node) -> Argument:
        """``args`` with each node replaced by its value (an error names ``n`` if one is missing)."""
        def load(a: Node):
            if a not in self.env:
                raise RuntimeError(f"[fx.Interpreter] node {n.name} reads {a.name}, which has no value yet")
            return self.env[a]
        return map_arg(args, load)


class Transformer(Interpreter):
    """Runs the graph on Proxies to build a new one: ``transform()`` returns a GraphModule of what the overridden
    methods produced (for instance ``call_function`` returning another function's call)."""

    def __init__(self, module: GraphModule) -> None:
        super().__init__(module)
        self.new_graph = Graph()

        class _Tracer(TracerBase):
            def __init__(self, graph: Graph) -> None:
                self.graph = graph

        self.tracer = _Tracer(self.new_graph)
        self.tracer.root = module

    def placeholder(self, target: Target, args: tuple, kwargs: dict) -> Proxy:
        """A placeholder of the new graph."""
        default = args[0] if args else inspect.Signature.empty
        return Proxy(self.new_graph.placeholder(target, default_value=default), self.tracer)

    def get_attr(self, target: Target, args: tuple, kwargs: dict) -> Proxy:
        """A get_attr node of the new graph."""
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_function(self, target: Target, args: tuple, kwargs: dict) -> Proxy:
        """A call_function node of the new graph."""
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def call_method(self, target: Target, args: tuple, kwargs: dict) -> Proxy:
        """A call_method node of the new graph."""
        return self.tracer.create_proxy("call_method", target, args, kwargs)

    def call_module(self, target: Target, args: tuple, kwargs: dict) -> Proxy:
        """A call_module node of the new graph."""
        return self.tracer.create_proxy("call_module", target, args, kwargs)

    def transform(self) -> GraphModule:
        """The new GraphModule (the same submodules and attributes as the old one)."""
        result = super().run()
        if result is not None:
            self.new_graph.output(map_aggregate(result, lambda a: a.node if isinstance(a, Proxy) else a))
        return GraphModule(self.module, self.new_graph)

    def run_node(self, n: Node) -> Any:
        """As ``Interpreter.run_node``; a placeholder becomes one of the new graph whatever its input."""
        if n.op == "placeholder":
            return self.placeholder(n.target, n.args, n.kwargs)
        return super().run_node(n)
