"""``utils._pytree`` (``torch.utils._pytree``): flatten/unflatten round trips over every node type, maps over
several trees, the ``*_only`` forms, registered types and spec errors; the parity test compares leaves, specs'
shapes and maps with PyTorch's."""

import collections

import pytest

import sneppx_core as sx
from sneppx_core.utils import _pytree as pt

P = collections.namedtuple("P", "a b")


def _tree():
    dd = collections.defaultdict(list, k=[8])
    return {"x": [1, (2, 3)], "y": None, "z": P(4, [5]), "w": collections.OrderedDict(q=6),
            "d": collections.deque([7], maxlen=3), "dd": dd}


def test_flatten_unflatten_round_trip():
    tree = _tree()
    leaves, spec = pt.tree_flatten(tree)
    assert leaves == [1, 2, 3, None, 4, 5, 6, 7, 8] and spec.num_leaves == 9
    back = pt.tree_unflatten(leaves, spec)
    assert back == tree and type(back["z"]) is P and back["d"].maxlen == 3 and back["dd"].default_factory is list
    assert pt.tree_structure(tree) == spec and pt.tree_leaves([]) == []
    with pytest.raises(ValueError, match="9 leaves"):
        pt.tree_unflatten([1], spec)


def test_maps():
    tree = {"a": [1, 2], "b": (3,)}
    assert pt.tree_map(lambda x, y: x * 10 + y, tree, {"a": [4, 5], "b": (6,)}) == {"a": [14, 25], "b": (36,)}
    with pytest.raises(ValueError):
        pt.tree_map(lambda x, y: x, tree, {"a": [4], "b": (6,)})
    assert pt.tree_map_only(int, lambda v: v + 1, [1, "s", 2.5]) == [2, "s", 2.5]
    assert pt.tree_map_only((float, str), str, [1, "s", 2.5]) == [1, "s", "2.5"]
    t = [sx.ones(2), {"k": sx.zeros(1)}]
    assert pt.tree_all_only(sx.Tensor, lambda x: x.dim() == 1, t) and not pt.tree_any(lambda x: x is None, t)
    assert pt.tree_leaves([[1], [2]], is_leaf=lambda x: x == [2]) == [1, [2]]
    seen = []
    assert pt.tree_map_(seen.append, (1, [2])) == (1, [2]) and seen == [1, 2]


def test_registered_type():
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

    pt.register_pytree_node(Pair, lambda p: ([p.a, p.b], None), lambda c, _: Pair(*c))
    try:
        out = pt.tree_map(lambda v: v * 2, [Pair(1, (2,))])
        assert out[0].a == 2 and out[0].b == (4,)
        with pytest.raises(ValueError, match="already registered"):
            pt.register_pytree_node(Pair, None, None)
    finally:
        del pt.SUPPORTED_NODES[Pair]


@pytest.mark.parity
def test_parity_with_torch_pytree():
    tp = pytest.importorskip("torch.utils._pytree")
    tree = _tree()
    ours, theirs = pt.tree_flatten(tree), tp.tree_flatten(tree)
    assert ours[0] == theirs[0]
    assert ours[1].num_leaves == theirs[1].num_leaves and ours[1].num_nodes == theirs[1].num_nodes
    assert pt.tree_map(str, tree) == tp.tree_map(str, tree)
    assert pt.tree_map_only(int, lambda v: -v, tree) == tp.tree_map_only(int, lambda v: -v, tree)
