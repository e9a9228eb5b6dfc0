"""``sneppx_nn.fx`` (``torch.fx``): symbolic tracing of modules and functions (the nodes' ops, names and targets,
leaf modules, ``get_attr`` for parameters and tensor constants, unpacking, ``concrete_args``, ``wrap``), graphs built
and edited by hand (``Graph``, ``Proxy``, ``GraphAppendingTracer``, ``replace_pattern``), ``Interpreter``,
``Transformer``, ``ShapeProp`` and ``GraphModule`` (its generated code, the attributes it copies, backward). The
numbers are checked against NumPy; the parity tests compare the node lists with those of ``torch.fx``."""

import copy
import operator

import numpy as np
import pytest
import sneppx_core as sx
import sneppx_nn as nn
import sneppx_nn.functional as F
from sneppx_nn import fx

RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 4)).astype(np.float32)
W = RNG.standard_normal((3, 4)).astype(np.float32)
B = RNG.standard_normal(3).astype(np.float32)
SCALE = np.array([0.5, -1.0, 2.0], np.float32)


def _net(core, nnm, func):
    """The same small model in SneppX (``sx, nn, F``) or PyTorch (``torch, torch.nn, torch.nn.functional``)."""

    class Net(nnm.Module):
        def __init__(self):
            super().__init__()
            self.linear = nnm.Linear(4, 3)
            self.act = nnm.ReLU()
            self.scale = nnm.Parameter(core.tensor(SCALE))  # used directly: a get_attr node

        def forward(self, x):
            h = self.act(self.linear(x))
            h = func.softplus(h) * self.scale
            h = h + core.tensor([1.0, 2.0, 3.0])  # a constant made while tracing: _tensor_constant0
            h = core.max(h, x[:, :3])
            return h.transpose(0, 1).sum(0) - 1

    net = Net()
    with core.no_grad():
        net.linear.weight.copy_(core.tensor(W))
        net.linear.bias.copy_(core.tensor(B))
    return net


def _net_numpy(x):
    h = np.maximum(x @ W.T + B, 0)
    h = np.logaddexp(0, h) * SCALE + np.array([1.0, 2.0, 3.0])
    return np.maximum(h, x[:, :3]).sum(1) - 1


def _signature(gm):
    """(op, name, target) of every node; a call_function's target by its ``__name__``."""
    return [(n.op, n.name, n.target.__name__ if n.op == "call_function" else n.target) for n in gm.graph.nodes]


def _np(t):
    return np.array(t.detach().numpy(), copy=True)


# --- 1. tracing a module ---------------------------------------------------------------------------------------

def test_traced_module_computes_what_the_module_computes():
    net = _net(sx, nn, F)
    gm = fx.symbolic_trace(net)
    assert isinstance(gm, fx.GraphModule) and isinstance(gm.graph, fx.Graph)
    np.testing.assert_allclose(_np(gm(sx.tensor(X))), _net_numpy(X), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(gm(sx.tensor(X))), _np(net(sx.tensor(X))), rtol=1e-6)


def test_traced_module_nodes():
    gm = fx.symbolic_trace(_net(sx, nn, F))
    assert [n.op for n in gm.graph.nodes] == [
        "placeholder", "call_module", "call_module", "call_function", "get_attr", "call_function", "get_attr",
        "call_function", "call_function", "call_function", "call_method", "call_method", "call_function", "output"]
    assert [n.name for n in gm.graph.nodes] == [
        "x", "linear", "act", "softplus", "scale", "mul", "_tensor_constant0", "add", "getitem", "max_1",
        "transpose", "sum_1", "sub", "output"]
    nodes = {n.name: n for n in gm.graph.nodes}
    assert nodes["linear"].target == "linear" and nodes["act"].target == "act" and nodes["scale"].target == "scale"
    assert nodes["softplus"].target is F.softplus and nodes["max_1"].target is sx.max
    assert nodes["mul"].target is operator.mul and nodes["getitem"].target is operator.getitem
    assert nodes["sub"].target is operator.sub and nodes["sub"].args == (nodes["sum_1"], 1)
    assert nodes["transpose"].target == "transpose" and nodes["transpose"].args == (nodes["max_1"], 0, 1)
    assert nodes["getitem"].args == (nodes["x"], (slice(None, None, None), slice(None, 3, None)))
    assert nodes["output"].args == (nodes["sub"],)
    # the constant is kept on the GraphModule (PyTorch registers it as a buffer); the parameter is the original's
    np.testing.assert_array_equal(_np(gm._tensor_constant0), [1.0, 2.0, 3.0])
    assert "_tensor_constant0" in gm.state_dict() and "scale" in dict(gm.named_parameters())


@pytest.mark.parity
def test_parity_traced_module_nodes():
    torch = pytest.importorskip("torch")
    ours = _signature(fx.symbolic_trace(_net(sx, nn, F)))
    theirs = _signature(torch.fx.symbolic_trace(_net(torch, torch.nn, torch.nn.functional)))
    assert ours == theirs


# --- 2. functions, graphs built by hand --------------------------------------------------------------------------

def _tan_exp(x):
    return sx.exp(sx.tan(x))


def test_trace_a_function():
    gm = fx.symbolic_trace(_tan_exp)
    assert [(n.op, n.name) for n in gm.graph.nodes] == [
        ("placeholder", "x"), ("call_function", "tan"), ("call_function", "exp"), ("output", "output")]
    assert [n.target for n in gm.graph.nodes if n.op == "call_function"] == [sx.tan, sx.exp]
    x = np.linspace(-1, 1, 5).astype(np.float32)
    np.testing.assert_allclose(_np(gm(sx.tensor(x))), np.exp(np.tan(x)), rtol=1e-5)


def test_invert_builds_a_new_graph():
    """PyTorch's documentation example: a graph of the inverse functions, built in reverse."""
    traced = fx.symbolic_trace(_tan_exp)
    inverse = {sx.tan: sx.atan, sx.exp: sx.log}
    new_graph = fx.Graph()
    env = {}
    for node in reversed(traced.graph.nodes):
        if node.op == "call_function":
            new_node = new_graph.call_function(inverse[node.target], (env[node.name],))
            env[node.args[0].name] = new_node
        elif node.op == "output":
            env[node.args[0].name] = new_graph.placeholder(node.name)
        elif node.op == "placeholder":
            new_graph.output(env[node.name])
    new_graph.lint()
    inv = fx.GraphModule(traced, new_graph)
    assert [n.op for n in inv.graph.nodes] == ["placeholder", "call_function", "call_function", "output"]
    x = np.linspace(-1, 1, 5).astype(np.float32)
    np.testing.assert_allclose(_np(inv(sx.tensor(np.exp(np.tan(x))))), x, rtol=1e-4, atol=1e-5)


def test_lint_rejects_use_before_definition():
    graph = fx.Graph()
    x = graph.placeholder("x")
    neg = graph.call_function(operator.neg, (x,))
    graph.output(neg)
    with graph.inserting_before(neg):
        absolute = graph.call_function(operator.abs, (x,))
    graph.lint()
    assert [n.name for n in graph.nodes] == ["x", "abs_1", "neg", "output"]
    absolute.args = (neg,)  # now read before neg is defined
    with pytest.raises(RuntimeError):
        graph.lint()


def test_lint_rejects_a_node_of_another_graph():
    """PyTorch lets a node take a node of another graph; lint then raises."""
    foreign = fx.Graph().placeholder("y")
    graph = fx.Graph()
    x = graph.placeholder("x")
    graph.output(graph.call_function(operator.add, (x, foreign)))
    with pytest.raises(RuntimeError):
        graph.lint()


def test_node_links_and_edits():
    def f(x, y):
        return sx.relu(x + y) * y

    graph = fx.symbolic_trace(f).graph
    x, y, add, relu, mul, out = graph.nodes
    assert add.all_input_nodes == [x, y] and list(y.users) == [add, mul] and list(add.users) == [relu]
    assert add.prev is y and add.next is relu and out.prev is mul
    mul.replace_input_with(y, x)
    assert mul.args == (relu, x) and list(y.users) == [add]
    nested = fx.node.map_arg({"a": [x, 2], "b": (y,)}, lambda n: n.name)
    assert nested == {"a": ["x", 2], "b": ("y",)} and fx.map_arg((x, 3), lambda n: n.op) == ("placeholder", 3)
    gm = fx.GraphModule(nn.Module(), graph)
    a, b = RNG.standard_normal(4).astype(np.float32), RNG.standard_normal(4).astype(np.float32)
    np.testing.assert_allclose(_np(gm(sx.tensor(a), sx.tensor(b))), np.maximum(a + b, 0) * a, rtol=1e-6)


# --- 3. custom tracers -------------------------------------------------------------------------------------------

class _LinearReLU(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 3)
        self.act = nn.ReLU()
        with sx.no_grad():
            self.linear.weight.copy_(sx.tensor(W))
            self.linear.bias.copy_(sx.tensor(B))

    def forward(self, x):
        return self.act(self.linear(x)) + 1.0


def test_tracer_is_leaf_module_traces_through_relu():
    class ThroughReLU(fx.Tracer):
        def is_leaf_module(self, m, module_qualified_name):
            if isinstance(m, nn.ReLU):
                return False
            return super().is_leaf_module(m, module_qualified_name)

    model = _LinearReLU()
    default = fx.Tracer().trace(model)
    assert [n.target for n in default.nodes if n.op == "call_module"] == ["linear", "act"]
    graph = ThroughReLU().trace(model)
    assert [n.target for n in graph.nodes if n.op == "call_module"] == ["linear"]
    assert len(graph.nodes) == 5  # x, linear, the relu's own op, add, output
    gm = fx.GraphModule(model, graph)
    np.testing.assert_allclose(_np(gm(sx.tensor(X))), np.maximum(X @ W.T + B, 0) + 1, rtol=1e-5, atol=1e-6)


def test_tracer_create_node_tags_every_node():
    class Tagging(fx.Tracer):
        def create_node(self, *args, **kwargs):
            n = super().create_node(*args, **kwargs)
            n.tag = "seen"
            return n

    graph = Tagging().trace(_LinearReLU())
    assert len(graph.nodes) == 5 and all(n.tag == "seen" for n in graph.nodes)


# --- 4, 5. Proxy and GraphAppendingTracer ------------------------------------------------------------------------

def test_inline_linear_with_graph_appending_tracer():
    model = _LinearReLU()
    gm = fx.symbolic_trace(model)
    graph = gm.graph
    tracer = fx.proxy.GraphAppendingTracer(graph)
    (node,) = [n for n in graph.nodes if n.op == "call_module" and n.target == "linear"]
    with graph.inserting_before(node):
        (x,) = fx.node.map_arg(node.args, lambda n: fx.Proxy(n, tracer))
        weight = fx.Proxy(graph.get_attr("linear.weight"), tracer)
        bias = fx.Proxy(graph.get_attr("linear.bias"), tracer)
        new = (x @ weight.t() + bias).node
    node.replace_all_uses_with(new)
    graph.erase_node(node)
    graph.lint()
    gm.recompile()
    assert [n.target for n in graph.nodes if n.op == "call_module"] == ["act"]
    assert [n.target for n in graph.nodes if n.op == "get_attr"] == ["linear.weight", "linear.bias"]
    assert list(graph.nodes)[-1].op == "output" and "self.linear(" not in gm.code
    np.testing.assert_allclose(_np(gm(sx.tensor(X))), np.maximum(X @ W.T + B, 0) + 1, rtol=1e-5, atol=1e-6)


def test_decompose_relu_with_node_copy():
    """PyTorch's documentation example: copy a graph node by node, replacing relu by (x > 0) * x through Proxies."""

    def f(x):
        return sx.relu(x) + 1.0

    traced = fx.symbolic_trace(f)
    new_graph = fx.Graph()
    tracer = fx.proxy.GraphAppendingTracer(new_graph)
    env = {}
    for node in traced.graph.nodes:
        if node.op == "call_function" and node.target is sx.relu:
            (px,) = [fx.Proxy(env[a.name], tracer) for a in node.args]
            env[node.name] = ((px > 0) * px).node
        else:
            env[node.name] = new_graph.node_copy(node, lambda n: env[n.name])
    gm = fx.GraphModule(traced, new_graph)
    assert [n.target for n in gm.graph.nodes if n.op == "call_function"] == [
        operator.gt, operator.mul, operator.add]
    x = np.array([-2.0, -0.5, 0.0, 0.5, 3.0], np.float32)
    np.testing.assert_allclose(_np(gm(sx.tensor(x))), np.maximum(x, 0) + 1)


def test_proxy_graph_without_tracing():
    graph = fx.Graph()
    tracer = fx.proxy.GraphAppendingTracer(graph)
    y = fx.Proxy(graph.placeholder("x"), tracer)
    z = fx.Proxy(graph.placeholder("y"), tracer)
    c = sx.neg(sx.tanh(sx.cat([y, z])))
    assert isinstance(c, fx.Proxy)
    graph.output(c.node)
    gm = fx.GraphModule(nn.Module(), graph)
    assert [(n.op, n.name) for n in graph.nodes] == [
        ("placeholder", "x"), ("placeholder", "y"), ("call_function", "cat"), ("call_function", "tanh"),
        ("call_function", "neg"), ("output", "output")]
    a, b = RNG.standard_normal((2, 3)).astype(np.float32), RNG.standard_normal((1, 3)).astype(np.float32)
    np.testing.assert_allclose(_np(gm(sx.tensor(a), sx.tensor(b))), -np.tanh(np.concatenate([a, b])), rtol=1e-6)


# --- 6. replacing an op ------------------------------------------------------------------------------------------

def test_replace_add_by_bitwise_and():
    class M(nn.Module):
        def forward(self, x, y):
            return x + y, sx.add(x, y), x.add(y)

    traced = fx.symbolic_trace(M())
    assert [n.op for n in traced.graph.nodes if n.name.startswith("add")] == [
        "call_function", "call_function", "call_method"]
    patterns = {operator.add, sx.add, "add"}
    for n in list(traced.graph.nodes):
        if any(n.target == p for p in patterns):
            with traced.graph.inserting_after(n):
                new_node = traced.graph.call_function(sx.bitwise_and, n.args, n.kwargs)
                n.replace_all_uses_with(new_node)
            traced.graph.erase_node(n)
    traced.recompile()
    assert [n.target for n in traced.graph.nodes if n.op.startswith("call")] == [sx.bitwise_and] * 3
    a, b = np.array([5, 6, 12, 7]), np.array([3, 3, 10, 0])
    for got in traced(sx.tensor(a), sx.tensor(b)):
        np.testing.assert_array_equal(got.numpy(), a & b)


# --- 7. wrap ----------------------------------------------------------------------------------------------------

def _clip_norm(x, limit):
    n = float(x.norm())  # not traceable: a Proxy has no value
    return x * (limit / n) if n > limit else x


def _twice_if_long(x):
    return x * 2 if len(x) > 1 else x


fx.wrap("_clip_norm")
fx.wrap(_twice_if_long)


def _uses_wrapped(x):
    return _clip_norm(x, 1.0) + _twice_if_long(x)


def test_wrap_records_one_call_function_node():
    gm = fx.symbolic_trace(_uses_wrapped)
    nodes = list(gm.graph.nodes)
    assert [n.op for n in nodes] == ["placeholder", "call_function", "call_function", "call_function", "output"]
    assert nodes[1].target is _clip_norm and nodes[2].target is _twice_if_long and nodes[1].args == (nodes[0], 1.0)
    for v in ([3.0, 4.0], [0.3, 0.4], [2.0]):
        v = np.array(v, np.float32)
        n = np.linalg.norm(v)
        want = (v / n if n > 1 else v) + (2 * v if len(v) > 1 else v)
        np.testing.assert_allclose(_np(gm(sx.tensor(v))), want, rtol=1e-6)
    assert [n.name for n in nodes] == ["x", "_clip_norm", "_twice_if_long", "add", "output"]


# --- 8. replace_pattern -----------------------------------------------------------------------------------------

def _rewrite(core, nnm):
    """A module computing cat([w1, -w2]).sum() twice, that pattern, and the replacement stack([w1, w2])."""

    class M(nnm.Module):
        def forward(self, x, w1, w2):
            m1 = core.cat([w1, core.neg(w2)]).sum()
            m2 = core.cat([w1, core.neg(w2)]).sum()
            return x + core.max(m1) + core.max(m2)

    def pattern(w1, w2):
        return core.cat([w1, core.neg(w2)]).sum()

    def replacement(w1, w2):
        return core.stack([w1, w2])

    return M, pattern, replacement


def test_replace_pattern():
    M, pattern, replacement = _rewrite(sx, nn)
    gm = fx.symbolic_trace(M())
    assert fx.replace_pattern is fx.subgraph_rewriter.replace_pattern
    matches = fx.replace_pattern(gm, pattern, replacement)
    assert len(matches) == 2
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert sorted(t.__name__ for t in targets) == ["add", "add", "max", "max", "stack", "stack"]
    assert not [n for n in gm.graph.nodes if n.op == "call_method"]
    gm.graph.lint()
    x, w1, w2 = (RNG.standard_normal(3).astype(np.float32) for _ in range(3))
    want = x + 2 * np.max(np.stack([w1, w2]))  # the original would give x + 2 * (w1.sum() - w2.sum())
    np.testing.assert_allclose(_np(gm(sx.tensor(x), sx.tensor(w1), sx.tensor(w2))), want, rtol=1e-6)


@pytest.mark.parity
def test_parity_replace_pattern_order_and_names():
    """PyTorch returns the matches in graph order, each with the pattern's anchor node, and puts each replacement
    before the first user of the match's output."""
    torch = pytest.importorskip("torch")
    results = []
    for core, nnm, rewriter in ((sx, nn, fx), (torch, torch.nn, torch.fx)):
        M, pattern, replacement = _rewrite(core, nnm)
        gm = rewriter.symbolic_trace(M())
        matches = rewriter.replace_pattern(gm, pattern, replacement)
        results.append(([sorted((k.name, v.name) for k, v in m.nodes_map.items()) for m in matches],
                        [m.anchor.name for m in matches], _signature(gm)))
    assert results[0][0] == results[1][0]  # nodes_map: pattern node -> graph node, matches in graph order
    assert results[0][1] == results[1][1]  # anchor: the pattern's output node (a node of the pattern graph)
    assert results[0][2] == results[1][2]


# --- 9. Interpreter, Transformer, ShapeProp ---------------------------------------------------------------------

def test_interpreter_runs_the_graph():
    gm = fx.symbolic_trace(_net(sx, nn, F))
    np.testing.assert_allclose(_np(fx.Interpreter(gm).run(sx.tensor(X))), _net_numpy(X), rtol=1e-5, atol=1e-6)

    class Counting(fx.Interpreter):
        def __init__(self, module):
            super().__init__(module)
            self.ops = []

        def run_node(self, n):
            self.ops.append(n.op)
            return super().run_node(n)

    counting = Counting(gm)
    counting.run(sx.tensor(X))
    assert counting.ops == [n.op for n in gm.graph.nodes]


def test_transformer_swaps_relu_for_sigmoid():
    def f(x):
        return sx.relu(x) + x.relu()

    class ReluToSigmoid(fx.Transformer):
        def call_function(self, target, args, kwargs):
            return super().call_function(sx.sigmoid if target is sx.relu else target, args, kwargs)

        def call_method(self, target, args, kwargs):
            return super().call_method("sigmoid" if target == "relu" else target, args, kwargs)

    traced = fx.symbolic_trace(f)
    new = ReluToSigmoid(traced).transform()
    assert isinstance(new, fx.GraphModule)
    assert [n.target for n in new.graph.nodes if n.op.startswith("call")] == [sx.sigmoid, "sigmoid", operator.add]
    x = np.linspace(-2, 2, 5).astype(np.float32)
    np.testing.assert_allclose(_np(new(sx.tensor(x))), 2 / (1 + np.exp(-x)), rtol=1e-6)
    np.testing.assert_allclose(_np(traced(sx.tensor(x))), 2 * np.maximum(x, 0))  # the original is unchanged


def test_shape_prop():
    from sneppx_nn.fx.passes.shape_prop import ShapeProp

    class S(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(4, 3)

        def forward(self, x):
            h = self.linear(x)
            return h.argmax(-1), h.sum() * x.size(0)

    gm = fx.symbolic_trace(S())
    ShapeProp(gm).propagate(sx.randn(5, 4))
    meta = {n.name: n.meta.get("tensor_meta") for n in gm.graph.nodes if n.op != "output"}
    assert meta["size"] is None  # an int, not a tensor
    shapes = {k: (tuple(v.shape), v.dtype) for k, v in meta.items() if v is not None}
    assert shapes == {"x": ((5, 4), sx.float32), "linear": ((5, 3), sx.float32), "argmax": ((5,), sx.int64),
                      "sum_1": ((), sx.float32), "mul": ((), sx.float32)}


# --- 10. dead code, erase_node, control flow, concrete_args ------------------------------------------------------

def test_eliminate_dead_code():
    def f(x):
        y = x + 1
        x.relu()  # traced, then unused
        return y

    gm = fx.symbolic_trace(f)
    assert [n.name for n in gm.graph.nodes] == ["x", "add", "relu", "output"]
    assert gm.graph.eliminate_dead_code() is True
    assert [n.name for n in gm.graph.nodes] == ["x", "add", "output"]
    assert gm.graph.eliminate_dead_code() is False
    gm.recompile()
    np.testing.assert_array_equal(_np(gm(sx.tensor([-1.0, 2.0]))), [0.0, 3.0])


def test_erase_node_with_users_raises():
    gm = fx.symbolic_trace(lambda x: (x + 1) * 2)
    add = next(n for n in gm.graph.nodes if n.name == "add")
    with pytest.raises(RuntimeError, match="user"):
        gm.graph.erase_node(add)
    assert "add" in [n.name for n in gm.graph.nodes]


def test_control_flow_on_a_proxy_raises():
    def f(x):
        if x.sum() > 0:
            return x
        return -x

    with pytest.raises(Exception, match="control flow"):
        fx.symbolic_trace(f)


def _flagged(x, flag):
    if flag:
        return x * 2
    return x - 1


def test_concrete_args_specialise_a_bool():
    gm = fx.symbolic_trace(_flagged, concrete_args={"flag": True})
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert operator.mul in targets and operator.sub not in targets
    np.testing.assert_array_equal(_np(gm(sx.tensor([1.0, -3.0]), True)), [2.0, -6.0])
    gm2 = fx.symbolic_trace(_flagged, concrete_args={"flag": False})
    np.testing.assert_array_equal(_np(gm2(sx.tensor([1.0, -3.0]), False)), [0.0, -4.0])
    with pytest.raises(AssertionError, match="specialized"):  # PyTorch guards the value with an _assert node
        gm(sx.tensor([1.0]), False)


@pytest.mark.parity
def test_parity_concrete_args_nodes():
    torch = pytest.importorskip("torch")

    def f(x, flag):
        if flag:
            return x * 2
        return x - 1

    assert (_signature(fx.symbolic_trace(f, concrete_args={"flag": True}))
            == _signature(torch.fx.symbolic_trace(f, concrete_args={"flag": True})))


@pytest.mark.parity
def test_parity_unpacking_nodes():
    torch = pytest.importorskip("torch")

    def g(x):
        a, b = x.chunk(2, dim=-1)
        return a * b

    assert _signature(fx.symbolic_trace(g)) == _signature(torch.fx.symbolic_trace(g))


# --- 11. unpacking ----------------------------------------------------------------------------------------------

def test_unpacking_a_proxy():
    def f(x):
        a, b = x.chunk(2, dim=-1)
        return a * b

    gm = fx.symbolic_trace(f)
    assert [(n.op, n.name) for n in gm.graph.nodes] == [
        ("placeholder", "x"), ("call_method", "chunk"), ("call_function", "getitem"),
        ("call_function", "getitem_1"), ("call_function", "mul"), ("output", "output")]
    chunk, g0, g1 = list(gm.graph.nodes)[1:4]
    assert g0.args == (chunk, 0) and g1.args == (chunk, 1) and g0.target is operator.getitem
    np.testing.assert_allclose(_np(gm(sx.tensor(X))), X[:, :2] * X[:, 2:], rtol=1e-6)


# --- 12. nested modules, what GraphModule copies ----------------------------------------------------------------

def _outer(core, nnm):
    class Outer(nnm.Module):
        def __init__(self):
            super().__init__()
            self.net = nnm.Sequential(nnm.Linear(4, 5), nnm.ReLU(), nnm.Linear(5, 2))
            self.unused = nnm.Linear(3, 3)
            self.gain = nnm.Parameter(core.tensor([1.5, -0.5]))

        def forward(self, x):
            return self.net(x) * self.gain

    return Outer()


def test_nested_modules_targets_and_names():
    gm = fx.symbolic_trace(_outer(sx, nn))
    assert [(n.op, n.name, n.target) for n in gm.graph.nodes if n.op in ("call_module", "get_attr")] == [
        ("call_module", "net_0", "net.0"), ("call_module", "net_1", "net.1"), ("call_module", "net_2", "net.2"),
        ("get_attr", "gain", "gain")]


def test_graph_module_copies_only_what_the_graph_uses():
    model = _outer(sx, nn)
    gm = fx.symbolic_trace(model)
    assert not hasattr(gm, "unused")
    assert set(gm.state_dict()) == {k for k in model.state_dict() if not k.startswith("unused.")}
    assert set(gm.state_dict()) == {"net.0.weight", "net.0.bias", "net.2.weight", "net.2.bias", "gain"}
    assert gm.get_submodule("net.2") is model.net[2]  # shared, not copied (as in PyTorch)
    for k, v in gm.state_dict().items():
        np.testing.assert_array_equal(_np(v), _np(model.state_dict()[k]))
    x = sx.tensor(X)
    np.testing.assert_allclose(_np(gm(x)), _np(model(x)), rtol=1e-6)


@pytest.mark.parity
def test_parity_nested_modules():
    torch = pytest.importorskip("torch")
    ours = fx.symbolic_trace(_outer(sx, nn))
    theirs = torch.fx.symbolic_trace(_outer(torch, torch.nn))
    assert _signature(ours) == _signature(theirs)
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())


# --- 13. generated code, printing -------------------------------------------------------------------------------

def test_generated_code_is_python_that_runs():
    gm = fx.symbolic_trace(_net(sx, nn, F))
    code = gm.code
    assert "def forward(self, x" in code and "self.linear(x)" in code
    compile(code, "<fx>", "exec")
    assert gm.graph.python_code("self").src == code
    gm.graph.erase_node(next(n for n in gm.graph.nodes if n.op == "output"))
    gm.graph.output(next(n for n in gm.graph.nodes if n.name == "linear"))
    gm.recompile()
    assert "return linear" in gm.code
    np.testing.assert_allclose(_np(gm(sx.tensor(X))), X @ W.T + B, rtol=1e-5, atol=1e-6)


def test_printing():
    gm = fx.symbolic_trace(_net(sx, nn, F))
    readable = gm.print_readable(print_output=False)
    assert "def forward(self, x" in readable and "self.linear(x)" in readable
    text = str(gm.graph)
    assert "%linear" in text and "call_module[target=linear]" in text and "placeholder[target=x]" in text


def test_print_tabular(capsys):
    graph = fx.symbolic_trace(_net(sx, nn, F)).graph
    try:
        import tabulate  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError):  # PyTorch needs tabulate for this
            graph.print_tabular()
        return
    graph.print_tabular()
    out = capsys.readouterr().out
    assert "call_module" in out and "_tensor_constant0" in out


# --- 14. backward -----------------------------------------------------------------------------------------------

def test_backward_through_graph_module():
    net = _net(sx, nn, F)
    gm = fx.symbolic_trace(copy.deepcopy(net))
    grads = []
    for m in (net, gm):
        x = sx.tensor(X, requires_grad=True)
        (m(x) * sx.tensor([1.0, -2.0])).sum().backward()
        grads.append([_np(x.grad)] + [_np(p.grad) for p in (m.linear.weight, m.linear.bias, m.scale)])
    assert len(grads[1]) == 4 and np.abs(grads[1][1]).sum() > 0
    for a, b in zip(*grads):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-7)


# --- 15. the SneppX_ALG path ------------------------------------------------------------------------------------

def test_sneppx_alg_fx_alias():
    pytest.importorskip("SneppX_ALG")
    import SneppX_ALG.fx as alg_fx
    from SneppX_ALG.fx import symbolic_trace

    assert alg_fx is fx and symbolic_trace is fx.symbolic_trace
