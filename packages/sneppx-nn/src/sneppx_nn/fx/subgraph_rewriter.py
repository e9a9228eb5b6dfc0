"""``torch.fx.subgraph_rewriter``: ``replace_pattern`` swaps each match of a traced pattern for a replacement."""

from __future__ import annotations

from typing import Callable, NamedTuple

from .graph import Graph
from .graph_module import GraphModule
from .node import Node


class Match(NamedTuple):
    """One match: ``anchor`` is the pattern's node whose value the pattern returns; ``nodes_map`` maps the
    pattern's nodes to the graph's."""
    anchor: Node
    nodes_map: dict


def _graph_of(fn) -> Graph:
    from ._symbolic_trace import symbolic_trace
    return fn if isinstance(fn, Graph) else (fn.graph if isinstance(fn, GraphModule) else symbolic_trace(fn).graph)


def _same_constant(a, b) -> bool:
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # values whose == is not a bool (tensors)
        return a is b


class _Matcher:
    """Matches a pattern graph (one output) at a node of a graph: the same ops, targets and argument structure;
    a pattern placeholder matches any value, the same value wherever it appears."""

    def __init__(self, pattern: Graph) -> None:
        self.placeholders = [n for n in pattern.nodes if n.op == "placeholder"]
        outputs = [n for n in pattern.nodes if n.op == "output"]
        if len(outputs) != 1 or not isinstance(outputs[0].args[0], Node):
            raise ValueError("[replace_pattern] the pattern must return one value")
        self.anchor = outputs[0].args[0]

    def match(self, node: Node) -> dict | None:
        self.map: dict = {}
        return dict(self.map) if self._node(self.anchor, node) else None

    def _node(self, p: Node, g: Node) -> bool:
        if p in self.map:
            return self.map[p] is g
        if p.op == "placeholder":
            self.map[p] = g
            return True
        if p.op != g.op or not _same_target(p.target, g.target) or len(p.args) != len(g.args) \
                or p.kwargs.keys() != g.kwargs.keys():
            return False
        self.map[p] = g
        return (all(self._arg(a, b) for a, b in zip(p.args, g.args))
                and all(self._arg(p.kwargs[k], g.kwargs[k]) for k in p.kwargs))

    def _arg(self, a, b) -> bool:
        if isinstance(a, Node):
            return isinstance(b, Node) and self._node(a, b)
        if isinstance(a, (list, tuple)):
            return (isinstance(b, (list, tuple)) and len(a) == len(b)
                    and all(self._arg(x, y) for x, y in zip(a, b)))
        return not isinstance(b, Node) and _same_constant(a, b)


def _same_target(a, b) -> bool:
    return a == b or getattr(a, "__wrapped__", a) is getattr(b, "__wrapped__", b)


def replace_pattern(gm: GraphModule, pattern: Callable, replacement: Callable) -> list:
    """Replaces every non-overlapping match of ``pattern`` (a function or GraphModule, traced) in ``gm``'s graph
    by ``replacement``'s code, its inputs bound to what the pattern's placeholders matched, then recompiles.
    A match whose inner values are read outside it is skipped. Returns the ``Match`` es."""
    graph = gm.graph
    pattern_graph, replacement_graph = _graph_of(pattern), _graph_of(replacement)
    matcher = _Matcher(pattern_graph)
    taken: set = set()
    matches = []
    for node in graph.nodes:
        if node.op in ("placeholder", "output") or node in taken:
            continue
        found = matcher.match(node)
        if found is None:
            continue
        inner = {g for p, g in found.items() if p.op != "placeholder"}
        if inner & taken or any(u not in inner for g in inner if g is not node for u in g.users):
            continue
        taken |= inner
        matches.append(Match(matcher.anchor, found))
    replacement_inputs = [n for n in replacement_graph.nodes if n.op == "placeholder"]
    if len(replacement_inputs) != len(matcher.placeholders):
        raise ValueError(f"[replace_pattern] the pattern takes {len(matcher.placeholders)} values and the "
                         f"replacement {len(replacement_inputs)}")
    for m in matches:
        result = m.nodes_map[m.anchor]
        first_user = next((n for n in graph.nodes if n in result.users), result.next)
        values = dict(zip(replacement_inputs, (m.nodes_map[p] for p in matcher.placeholders)))
        with graph.inserting_before(first_user):  # the replacement goes where the value is first needed
            out = graph.graph_copy(replacement_graph, values)
        if not isinstance(out, Node):
            raise ValueError("[replace_pattern] the replacement must return one value")
        result.replace_all_uses_with(out)
        inner = {g for p, g in m.nodes_map.items() if p.op != "placeholder"}
        for g in [n for n in reversed(graph.nodes) if n in inner]:  # users before the values they read
            graph.erase_node(g)
    gm.recompile()
    return matches

