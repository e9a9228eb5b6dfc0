"""``torch.utils._pytree``: nested containers ("pytrees") flattened to their leaves and rebuilt.

Tuples, lists, dicts (in insertion order), named tuples, ``OrderedDict``, ``defaultdict`` and ``deque`` are
nodes; everything else (``None`` too, as in PyTorch 2.13) is a leaf, unless ``register_pytree_node``
registers its type. ``tree_flatten`` gives the leaves and a ``TreeSpec``; ``tree_unflatten`` rebuilds;
``tree_map`` applies a function to every leaf (and the matching leaves of further trees of the same shape)."""

from __future__ import annotations

import collections
from typing import Any, Callable, NamedTuple


class _Node(NamedTuple):
    flatten: Callable  # node -> (children, context)
    unflatten: Callable  # (children, context) -> node


SUPPORTED_NODES: dict = {}


def register_pytree_node(cls: type, flatten_fn: Callable, unflatten_fn: Callable, *, serialized_type_name=None,
                         to_dumpable_context=None, from_dumpable_context=None, flatten_with_keys_fn=None) -> None:
    """Makes ``cls`` a node: ``flatten_fn(x) -> (children, context)``, ``unflatten_fn(children, context) -> x``."""
    if cls in SUPPORTED_NODES:
        raise ValueError(f"[register_pytree_node] {cls.__name__} is already registered")
    SUPPORTED_NODES[cls] = _Node(flatten_fn, unflatten_fn)


def _namedtuple_type(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


register_pytree_node(tuple, lambda t: (list(t), None), lambda c, _: tuple(c))
register_pytree_node(list, lambda t: (list(t), None), lambda c, _: list(c))
register_pytree_node(dict, lambda d: (list(d.values()), list(d.keys())), lambda c, k: dict(zip(k, c)))
register_pytree_node(collections.OrderedDict, lambda d: (list(d.values()), list(d.keys())),
                     lambda c, k: collections.OrderedDict(zip(k, c)))
register_pytree_node(collections.defaultdict, lambda d: (list(d.values()), (d.default_factory, list(d.keys()))),
                     lambda c, ctx: collections.defaultdict(ctx[0], zip(ctx[1], c)))
register_pytree_node(collections.deque, lambda d: (list(d), d.maxlen), lambda c, m: collections.deque(c, maxlen=m))


def _node_type(x):
    if _namedtuple_type(x):
        return "namedtuple"
    return type(x) if type(x) in SUPPORTED_NODES else None


class TreeSpec:
    """The shape of a pytree: its node ``type``, the ``context`` needed to rebuild it (dict keys, ...) and the
    ``children_specs``; ``num_leaves`` counts its leaves."""

    def __init__(self, type: Any, context: Any, children_specs: list) -> None:
        self.type, self.context, self.children_specs = type, context, list(children_specs)
        self.num_leaves = sum(c.num_leaves for c in self.children_specs)
        self.num_nodes = 1 + sum(c.num_nodes for c in self.children_specs)

    @property
    def num_children(self) -> int:
        """How many children the root node has."""
        return len(self.children_specs)

    def is_leaf(self) -> bool:
        """Whether this spec is a single leaf."""
        return False

    def unflatten(self, leaves) -> Any:
        """The tree of this shape holding ``leaves``."""
        return tree_unflatten(leaves, self)

    def flatten_up_to(self, tree) -> list:
        """The subtrees of ``tree`` at this spec's leaves (``tree`` must have this spec's nodes above them)."""
        if self.is_leaf():
            return [tree]
        kind = _node_type(tree)
        if kind != self.type:
            raise ValueError(f"[pytree] expected a {getattr(self.type, '__name__', self.type)} node, "
                             f"got {type(tree).__name__}")
        children, context = _flatten_node(tree)
        if len(children) != len(self.children_specs) or (kind in (dict, collections.OrderedDict)
                                                         and list(context) != list(self.context)):
            raise ValueError(f"[pytree] the node {type(tree).__name__} does not match the spec {self}")
        return [leaf for child, spec in zip(children, self.children_specs) for leaf in spec.flatten_up_to(child)]

    def __eq__(self, other) -> bool:
        return (isinstance(other, TreeSpec) and not other.is_leaf() and not self.is_leaf()
                and (self.type, self.context, self.children_specs) == (other.type, other.context,
                                                                       other.children_specs))

    def __repr__(self) -> str:
        name = self.type if isinstance(self.type, str) else self.type.__name__
        return f"TreeSpec({name}, {self.context}, [{', '.join(map(repr, self.children_specs))}])"


class LeafSpec(TreeSpec):
    """The spec of a leaf."""

    def __init__(self) -> None:
        super().__init__(None, None, [])
        self.num_leaves, self.num_nodes = 1, 1

    def is_leaf(self) -> bool:
        """True."""
        return True

    def __eq__(self, other) -> bool:
        return isinstance(other, LeafSpec)

    def __repr__(self) -> str:
        return "*"


def _flatten_node(x):
    if _namedtuple_type(x):
        return list(x), type(x)
    return SUPPORTED_NODES[type(x)].flatten(x)


def tree_flatten(tree, is_leaf: Callable | None = None) -> tuple:
    """(the leaves of ``tree`` left to right, its ``TreeSpec``); ``is_leaf(x)`` True stops the descent at x."""
    leaves: list = []

    def walk(x) -> TreeSpec:
        kind = _node_type(x)
        if kind is None or (is_leaf is not None and is_leaf(x)):
            leaves.append(x)
            return LeafSpec()
        children, context = _flatten_node(x)
        return TreeSpec(kind, context, [walk(c) for c in children])

    spec = walk(tree)
    return leaves, spec


def tree_unflatten(leaves, treespec: TreeSpec):
    """The tree of shape ``treespec`` holding ``leaves`` in order."""
    leaves = list(leaves)
    if len(leaves) != treespec.num_leaves:
        raise ValueError(f"[tree_unflatten] the spec has {treespec.num_leaves} leaves, got {len(leaves)}")
    it = iter(leaves)

    def build(spec: TreeSpec):
        if spec.is_leaf():
            return next(it)
        children = [build(c) for c in spec.children_specs]
        if spec.type == "namedtuple":
            return spec.context(*children)
        return SUPPORTED_NODES[spec.type].unflatten(children, spec.context)

    return build(treespec)


def tree_leaves(tree, is_leaf: Callable | None = None) -> list:
    """The leaves of ``tree``."""
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf: Callable | None = None) -> TreeSpec:
    """The ``TreeSpec`` of ``tree``."""
    return tree_flatten(tree, is_leaf)[1]


def tree_map(func: Callable, tree, *rests, is_leaf: Callable | None = None):
    """``tree`` with each leaf ``x`` replaced by ``func(x, *matching leaves of rests)``."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [spec.flatten_up_to(r) for r in rests]
    return tree_unflatten([func(*xs) for xs in zip(leaves, *others)], spec)


def tree_map_(func: Callable, tree, *rests, is_leaf: Callable | None = None):
    """Calls ``func`` on every leaf (for its effect) and returns ``tree``."""
    leaves, spec = tree_flatten(tree, is_leaf)
    for xs in zip(leaves, *[spec.flatten_up_to(r) for r in rests]):
        func(*xs)
    return tree


def _matches(kind):
    if isinstance(kind, type) or (isinstance(kind, tuple) and all(isinstance(k, type) for k in kind)):
        return lambda x: isinstance(x, kind)
    return kind  # a predicate


def tree_map_only(type_or_types_or_pred, func: Callable, tree, is_leaf: Callable | None = None):
    """``tree_map`` applied only to leaves of the given type(s) (or passing the predicate); others are kept."""
    match = _matches(type_or_types_or_pred)
    return tree_map(lambda x: func(x) if match(x) else x, tree, is_leaf=is_leaf)


def tree_all(pred: Callable, tree, is_leaf: Callable | None = None) -> bool:
    """Whether ``pred`` holds for every leaf."""
    return all(map(pred, tree_leaves(tree, is_leaf)))


def tree_any(pred: Callable, tree, is_leaf: Callable | None = None) -> bool:
    """Whether ``pred`` holds for some leaf."""
    return any(map(pred, tree_leaves(tree, is_leaf)))


def tree_all_only(type_or_types, pred: Callable, tree, is_leaf: Callable | None = None) -> bool:
    """Whether ``pred`` holds for every leaf of the given type(s)."""
    match = _matches(type_or_types)
    return all(pred(x) for x in tree_leaves(tree, is_leaf) if match(x))


def tree_any_only(type_or_types, pred: Callable, tree, is_leaf: Callable | None = None) -> bool:
    """Whether ``pred`` holds for some leaf of the given type(s)."""
    match = _matches(type_or_types)
    return any(pred(x) for x in tree_leaves(tree, is_leaf) if match(x))


__all__ = ["LeafSpec", "SUPPORTED_NODES", "TreeSpec", "register_pytree_node", "tree_all", "tree_all_only",
           "tree_any", "tree_any_only", "tree_flatten", "tree_leaves", "tree_map", "tree_map_", "tree_map_only",
           "tree_structure", "tree_unflatten"]
