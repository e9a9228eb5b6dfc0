"""sneppx_core.func (torch.func): vmap, grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, functional_call,
stack_module_state.

References are explicit loops, NumPy, closed forms and float64 finite differences (``gradcheck``); the parity tests
run the same computations through ``torch.func`` on the same float64 inputs.
"""

from __future__ import annotations

import numpy as np
import pytest
import sneppx_core as sx
from sneppx_core import func as F
from sneppx_core.autograd import gradcheck

RNG = np.random.default_rng(11)
A = RNG.standard_normal((3, 4))
B = RNG.standard_normal((4, 3))
V = RNG.standard_normal(4)
M = RNG.standard_normal((4, 4))
XS = RNG.standard_normal((6, 3))  # per-sample gradient data
YS = RNG.standard_normal(6)
W0 = RNG.standard_normal(3)


def t64(a, requires_grad=False):
    return sx.tensor(np.asarray(a, dtype=np.float64), dtype=sx.float64, requires_grad=requires_grad)


def npy(t):
    return np.array(t.detach().numpy())



def close(result, expected, tol=1e-10):
    """Same structure (tuples, lists, dicts) and values; ``expected`` holds arrays or tensors."""
    r, rs = F._flatten(result)
    e, es = F._flatten(expected)
    assert rs == es, (rs, es)
    for a, b in zip(r, e):
        b = npy(b) if isinstance(b, sx.Tensor) else np.asarray(b)
        assert tuple(a.shape) == b.shape, (a.shape, b.shape)
        np.testing.assert_allclose(npy(a), b, rtol=tol, atol=tol)


def numeric_jacobian(f, x, eps=1e-6):
    """Central differences of ``f`` (NumPy in, NumPy out) at ``x``: shape ``f(x).shape + x.shape``."""
    x = np.asarray(x, dtype=np.float64)
    cols = []
    for k in range(x.size):
        d = np.zeros(x.size)
        d[k] = eps
        d = d.reshape(x.shape)
        cols.append((np.asarray(f(x + d)) - np.asarray(f(x - d))) / (2 * eps))
    out = np.asarray(f(x))
    return np.stack(cols, -1).reshape(out.shape + x.shape)


# ---- vmap ----

def test_vmap_in_dims_and_out_dims_match_loops():
    a, b, v = t64(A), t64(B), t64(V)
    close(F.vmap(lambda x: x.sin() * 2)(a), np.sin(A) * 2)
    close(F.vmap(lambda x, y: x @ y, in_dims=(0, None))(a, t64(M)), A @ M)
    close(F.vmap(lambda x, y: x * y, in_dims=(1, 0))(a, b), A.T * B)
    close(F.vmap(lambda x, y: x * y, in_dims=(-1, 0))(a, b), A.T * B)
    close(F.vmap(lambda x: x.sum(), in_dims=1)(a), A.sum(0))
    close(F.vmap(lambda x: x * 3, out_dims=1)(a), (A * 3).T)
    close(F.vmap(lambda x: x * 3, out_dims=-1)(a), (A * 3).T)
    close(F.vmap(lambda x, y: x * y)(v, v), V * V)  # 1-d inputs: scalar samples
    close(F.vmap(lambda x, *, scale: x * scale)(a, scale=v), A * V)  # keyword arguments are not mapped
    close(F.vmap(lambda x: x * 2, out_dims=(1,))(a), (A * 2).T)  # a one-tuple for a single output
    close(F.vmap(lambda x: x + 1, chunk_size=2)(a), A + 1)


def test_vmap_pytrees_in_and_out():
    a, b = t64(A), t64(B)

    def f(d, pair):
        return {"s": d["x"].sum() + pair[1], "p": [d["x"] * pair[0], pair[1]]}

    out = F.vmap(f, in_dims=({"x": 0}, (None, 1)), out_dims={"s": 0, "p": [1, 0]})({"x": a}, (t64(V), b))
    expected = {"s": A.sum(1)[:, None] + B.T, "p": [(A * V).T, B.T]}
    close(out, expected)
    # an int broadcasts over a whole subtree; None leaves an input (of any kind) unmapped
    out = F.vmap(lambda d, k: d["u"] * d["w"] * k, in_dims=(0, None))({"u": a, "w": a}, 2.0)
    close(out, A * A * 2.0)
    # dicts match by key, in any order
    out = F.vmap(lambda d: d["a"] - d["b"], in_dims=({"b": None, "a": 0},))({"a": a, "b": t64(V)})
    close(out, A - V)
    # a non-tensor output with out_dims None comes back as is; an unmapped tensor too
    n, c = F.vmap(lambda x: (x.shape[0], t64(V)), out_dims=None)(a)
    assert n == 4
    close(c, V)
    out, k = F.vmap(lambda x: (x * 2, "tag"), out_dims=(0, None))(a)
    close(out, A * 2)
    assert k == "tag"


def test_vmap_nested_and_zero_size():
    a, b = t64(A), t64(B)
    dot = lambda x, y: (x * y).sum()  # noqa: E731
    mv = F.vmap(dot, in_dims=(0, None))
    mm = F.vmap(mv, in_dims=(None, 1))
    close(mm(a, b), (A @ B).T)
    close(F.vmap(F.vmap(lambda x: x * x))(a), A * A)
    close(F.vmap(F.vmap(lambda x: x * x), in_dims=1)(a), (A * A).T)
    empty = F.vmap(lambda x: x.sum() * x)(sx.zeros((0, 3), dtype=sx.float64))
    assert tuple(empty.shape) == (0, 3)
    assert tuple(F.vmap(lambda x: x * 2, out_dims=1)(sx.zeros((0, 3))).shape) == (3, 0)


def test_vmap_gradients_flow():
    x = t64(A, requires_grad=True)
    y = t64(V, requires_grad=True)
    out = F.vmap(lambda r, v: (r * v).sin().sum(), in_dims=(0, None))(x, y)
    (out * t64([1.0, 2.0, 3.0])).sum().backward()
    w = np.array([1.0, 2.0, 3.0])[:, None]
    np.testing.assert_allclose(npy(x.grad), w * np.cos(A * V) * V, rtol=1e-12)
    np.testing.assert_allclose(npy(y.grad), (w * np.cos(A * V) * A).sum(0), rtol=1e-12)
    assert gradcheck(lambda u, v: F.vmap(lambda r, s: (r * s).tanh(), in_dims=(1, 0))(u, v),
                     (t64(A, True), t64(B, True)))


def test_vmap_errors():
    a = t64(A)
    f = lambda x: x  # noqa: E731
    with pytest.raises(ValueError, match="same size in the mapped dimension, got sizes \\[3, 4\\]"):
        F.vmap(lambda x, y: x)(a, t64(B))
    with pytest.raises(ValueError, match="expected in_dim to satisfy -2 <= in_dim < 2"):
        F.vmap(f, in_dims=2)(a)
    with pytest.raises(ValueError, match="We cannot vmap over non-Tensor arguments"):
        F.vmap(lambda x, n: x, in_dims=(0, 0))(a, 3)
    with pytest.raises(ValueError, match="in_dim must be either an integer dimension or None"):
        F.vmap(f, in_dims=(0.5,))(a)
    with pytest.raises(ValueError, match="expected `in_dims` to be int or a \\(potentially nested\\) tuple"):
        F.vmap(f, in_dims=[0])(a)
    with pytest.raises(ValueError, match="in_dims is not compatible with the structure of `inputs`"):
        F.vmap(f, in_dims=(0, 1))(a)
    with pytest.raises(ValueError, match="in_dims is not compatible"):
        F.vmap(f, in_dims=({"a": 0},))({"b": a})
    with pytest.raises(ValueError, match="got no inputs"):
        F.vmap(f)()
    with pytest.raises(ValueError, match="Expected at least one Tensor to vmap over"):
        F.vmap(f, in_dims=(None,))(a)
    with pytest.raises(ValueError, match="must only return Tensors, got type <class 'int'>"):
        F.vmap(lambda x: (x, 3))(a)
    with pytest.raises(ValueError, match="must only return Tensors, got type <class 'NoneType'>"):
        F.vmap(lambda x: None)(a)
    with pytest.raises(ValueError, match="`out_dims` must be an int, None or a python collection of ints"):
        F.vmap(f, out_dims="a")(a)
    with pytest.raises(ValueError, match="out_dims is not compatible with the structure of `outputs`"):
        F.vmap(f, out_dims=(0, 1))(a)
    with pytest.raises(ValueError, match="can not return a BatchedTensor when out_dim is None"):
        F.vmap(lambda x: x * 2, out_dims=None)(a)
    with pytest.raises(IndexError):
        F.vmap(f, out_dims=3)(a)
    with pytest.raises(RuntimeError, match="Only allowed values for randomness are"):
        F.vmap(f, randomness="sometimes")
    with pytest.raises(ValueError, match="chunk_size should be None or greater than 0"):
        F.vmap(f, chunk_size=0)


def test_vmap_randomness():
    x = sx.zeros((4, 3), dtype=sx.float64)
    draw = lambda r: r + sx.randn((3,), dtype=sx.float64)  # noqa: E731
    with pytest.raises(RuntimeError, match="called random operation while in randomness error mode"):
        F.vmap(draw)(x)
    same = npy(F.vmap(draw, randomness="same")(x))
    assert np.all(same == same[0]) and np.any(same[0] != 0)
    sx.manual_seed(3)
    different = npy(F.vmap(draw, randomness="different")(x))
    sx.manual_seed(3)
    loop = np.stack([npy(draw(x[i])) for i in range(4)])
    np.testing.assert_array_equal(different, loop)  # "different" is what a loop gives
    assert len({tuple(r) for r in different}) == 4


def test_exports():
    assert sx.vmap is F.vmap and sx.func is F and "vmap" in sx.__all__
    for name in F.__all__:
        assert getattr(F, name).__doc__
    alg = pytest.importorskip("SneppX_ALG")
    import importlib

    assert alg.func is F and alg.vmap is F.vmap
    assert importlib.import_module("SneppX_ALG.func") is F


# ---- grad and friends ----

def test_grad_closed_forms():
    v = t64(V)
    close(F.grad(lambda x: x.sin().sum())(v), np.cos(V))
    close(F.grad(lambda x, y: (x * y).sum(), argnums=1)(v, v * 2), V)
    close(F.grad(lambda x, y: (x * y).sum(), argnums=-2)(v, v * 2), 2 * V)
    close(F.grad(lambda x, y: (x * x * y).sum(), argnums=(0, 1))(v, v), (2 * V * V, V * V))
    # pytrees of tensors: the gradient has the argument's structure
    g = F.grad(lambda p: (p["w"] * p["b"][0]).sum() + p["b"][1].exp().sum())({"w": v, "b": [v * 2, v]})
    close(g, {"w": 2 * V, "b": [V, np.exp(V)]})
    # inputs the output does not use get zeros
    close(F.grad(lambda x, y: x.sum(), argnums=(0, 1))(v, v), (np.ones(4), np.zeros(4)))
    gv, val = F.grad_and_value(lambda x: (x * x).sum())(v)
    close((gv, val), (2 * V, (V * V).sum()))
    g, aux = F.grad(lambda x: ((x ** 3).sum(), {"m": x.max(), "n": 1}), has_aux=True)(v)
    close(g, 3 * V ** 2)
    assert aux["n"] == 1 and float(aux["m"]) == V.max()
    g, (val, aux) = F.grad_and_value(lambda x: ((x * x).sum(), x * 2), has_aux=True)(v)
    close((g, val, aux), (2 * V, (V * V).sum(), 2 * V))


def test_grad_composes():
    s = t64(0.7)
    f = lambda x: x.sin() * x * x  # noqa: E731
    d1 = lambda x: np.cos(x) * x * x + 2 * x * np.sin(x)  # noqa: E731
    d2 = lambda x: -np.sin(x) * x * x + 4 * x * np.cos(x) + 2 * np.sin(x)  # noqa: E731
    close(F.grad(f)(s), d1(0.7))
    close(F.grad(F.grad(f))(s), d2(0.7))
    close(F.grad(F.grad(F.grad(f)))(s), numeric_jacobian(d2, 0.7), tol=1e-7)
    close(F.vmap(F.grad(f))(t64(V)), d1(V))
    close(F.vmap(F.grad(F.grad(f)))(t64(V)), d2(V))
    # the inner derivative with respect to y does not leak into the outer one with respect to x
    close(F.grad(lambda x: F.grad(lambda y: x * y * y)(x))(s), 4 * 0.7)
    # second-order gradcheck through the transform (its result is differentiable)
    assert gradcheck(lambda x: F.grad(lambda u: (u.sin() * u).sum())(x), (t64(V, True),))


def test_grad_graph_semantics():
    v = t64(V)
    assert not F.grad(lambda x: (x ** 3).sum())(v).requires_grad  # as in PyTorch: no outer graph
    # a captured tensor that requires grad keeps the graph: a gradient penalty reaches it
    w = t64(W0[:1].repeat(4), requires_grad=True)
    gp = F.grad(lambda x: (w * x).sin().sum())(v)
    assert gp.requires_grad
    (gp * gp).sum().backward()
    expected = 2 * W0[0] * np.cos(W0[0] * V) * (np.cos(W0[0] * V) - W0[0] * V * np.sin(W0[0] * V))
    np.testing.assert_allclose(npy(w.grad), expected, rtol=1e-12)
    # an input that requires grad keeps the graph too; under no_grad results are detached
    x = t64(V, requires_grad=True)
    g = F.grad(lambda u: (u ** 3).sum())(x)
    g.sum().backward()
    np.testing.assert_allclose(npy(x.grad), 6 * V, rtol=1e-12)
    with sx.no_grad():
        assert not F.grad(lambda u: (u ** 3).sum())(x).requires_grad
        close(F.grad(F.grad(lambda u: u ** 3))(t64(0.5)), 3.0)


def test_grad_errors():
    v = t64(V)
    with pytest.raises(RuntimeError, match="Expected f\\(\\*args\\) to return a scalar Tensor, got tensor with 1"):
        F.grad(lambda x: x)(v)
    with pytest.raises(RuntimeError, match="to return a Tensor, got <class 'int'>"):
        F.grad(lambda x: 3)(v)
    with pytest.raises(RuntimeError, match="should be a tuple: \\(output, aux\\) if has_aux is True"):
        F.grad(lambda x: x.sum(), has_aux=True)(v)
    with pytest.raises(ValueError, match="Thing passed to transform API must be Tensor, got <class 'float'>"):
        F.grad(lambda x: x)(3.0)
    with pytest.raises(RuntimeError, match="Got argnum=2, but only 1 positional inputs"):
        F.grad(lambda x: x.sum(), argnums=2)(v)
    with pytest.raises(RuntimeError, match="argnums elements must be unique"):
        F.grad(lambda x: x.sum(), argnums=(0, 0))(v)
    with pytest.raises(RuntimeError, match="argnums must be non-empty"):
        F.grad(lambda x: x.sum(), argnums=())(v)
    with pytest.raises(RuntimeError, match="argnums must be int or Tuple"):
        F.grad(lambda x: x.sum(), argnums=[0])(v)


def test_per_sample_gradients():
    w, xs, ys = t64(W0), t64(XS), t64(YS)

    def loss(w, x, y):
        return ((x * w).sum() - y) ** 2

    per_sample = F.vmap(F.grad(loss), in_dims=(None, 0, 0))(w, xs, ys)
    expected = []
    for i in range(6):
        wi = t64(W0, requires_grad=True)
        expected.append(npy(sx.autograd.grad(loss(wi, xs[i], ys[i]), wi)[0]))
    close(per_sample, np.stack(expected))
    close(per_sample, 2 * (XS @ W0 - YS)[:, None] * XS)
    assert not per_sample.requires_grad


def test_vjp_and_jvp():
    v, a = t64(V), t64(A)
    f = lambda x, y: ((y @ x).sin(), x.sum())  # noqa: E731
    out, vjp_fn = F.vjp(f, v, a)
    close(out, (np.sin(A @ V), V.sum()))
    u = RNG.standard_normal(3)
    for _ in range(2):  # the graph is kept between calls
        gx, gy = vjp_fn((t64(u), t64(2.0)))
        close(gx, (u * np.cos(A @ V)) @ A + 2.0)
        close(gy, np.outer(u * np.cos(A @ V), V))
    out, vjp_fn, aux = F.vjp(lambda x: (x * 2, x.max()), v, has_aux=True)
    close((vjp_fn(v)[0], aux), (2 * V, V.max()))
    with pytest.raises(RuntimeError, match="Expected pytree structure of cotangents to be the same"):
        F.vjp(f, v, a)[1](t64(u))
    with pytest.raises(RuntimeError, match="All outputs of f must be floating-point"):
        F.vjp(lambda x: x.argmax(), v)
    # jvp: J @ t against the Jacobian
    t = RNG.standard_normal(4)
    out, tan = F.jvp(lambda x: (x.sin() * x.sum(), {"q": x @ t64(M)}), (v,), (t64(t),))
    jac = np.diag(np.cos(V)) * V.sum() + np.outer(np.sin(V), np.ones(4))
    close((out, tan), ((np.sin(V) * V.sum(), {"q": V @ M}), (jac @ t, {"q": t @ M})))
    out, tan = F.jvp(lambda x, y: x * y, (v, v), (t64(t), t64(V)))
    close(tan, t * V + V * V)
    out, tan, aux = F.jvp(lambda x: (x.exp(), "aux"), (v,), (t64(t),), has_aux=True)
    close(tan, np.exp(V) * t)
    assert aux == "aux"
    close(F.jvp(lambda x: t64(M), (v,), (t64(t),))[1], np.zeros((4, 4)))
    with pytest.raises(RuntimeError, match="independent of the inputs"):
        F.jvp(lambda x: t64(M), (v,), (t64(t),), strict=True)
    with pytest.raises(RuntimeError, match="Expected primals to be a tuple"):
        F.jvp(lambda x: x, v, (v,))
    with pytest.raises(RuntimeError, match="same python structure"):
        F.jvp(lambda x: x, (v,), (v, v))
    with pytest.raises(RuntimeError, match="shape"):
        F.jvp(lambda x: x, (v,), (t64(A),))


def test_jacobians():
    v, a = t64(V), t64(A)
    f = lambda x: x.sin() * (x * x).sum()  # noqa: E731
    fn = lambda x: np.sin(x) * (x * x).sum()  # noqa: E731
    close(F.jacrev(f)(v), numeric_jacobian(fn, V), tol=1e-7)
    close(F.jacfwd(f)(v), numeric_jacobian(fn, V), tol=1e-7)
    close(F.jacrev(lambda x: x @ x.t())(a), numeric_jacobian(lambda x: x @ x.T, A), tol=1e-7)
    # several outputs and argnums: output structure outside, inputs' inside
    g = lambda x, y: {"p": y @ x, "s": (x * x).sum()}  # noqa: E731
    for jac in (F.jacrev, F.jacfwd):
        res = jac(g, argnums=(0, 1))(v, a)
        close(res, {"p": (A, np.einsum("ij,k->ijk", np.eye(3), V)), "s": (2 * V, np.zeros((3, 4)))})
    res, aux = F.jacrev(lambda x: (x * 2, x.sum()), has_aux=True)(v)
    close((res, aux), (2 * np.eye(4), V.sum()))
    res, aux = F.jacfwd(lambda x: (x * 2, x.sum()), has_aux=True)(v)
    close((res, aux), (2 * np.eye(4), V.sum()))
    close(F.jacrev(f, chunk_size=1)(v), F.jacrev(f)(v))
    close(F.vmap(F.jacrev(lambda x: x.sin()))(a), np.stack([np.diag(np.cos(r)) for r in A]))
    with pytest.raises(ValueError, match="`chunk_size` should be greater than 0"):
        F.jacrev(f, chunk_size=0)
    with pytest.raises(RuntimeError, match="called random operation while in randomness error mode"):
        F.jacfwd(lambda x: x + sx.randn((4,), dtype=sx.float64))(v)
    assert F.jacfwd(lambda x: x + sx.randn((4,), dtype=sx.float64), randomness="same")(v).shape == (4, 4)


def test_hessian():
    v = t64(V)
    close(F.hessian(lambda x: x @ t64(M) @ x)(v), M + M.T)
    close(F.hessian(lambda x: x.sin().sum())(v), np.diag(-np.sin(V)))
    h = F.hessian(lambda x, y: (x * x * y).sum(), argnums=(0, 1))(v, v)
    close(h, ((np.diag(2 * V), np.diag(2 * V)), (np.diag(2 * V), np.zeros((4, 4)))))
    ref = sx.autograd.functional.hessian(lambda x: (x.exp() * x).sum(), v)
    close(F.hessian(lambda x: (x.exp() * x).sum())(v), ref)
    close(F.jacrev(F.jacrev(lambda x: (x.exp() * x).sum()))(v), ref)


# ---- modules ----

def test_functional_call_and_stack_module_state():
    nn = pytest.importorskip("sneppx_nn")
    sx.manual_seed(0)
    models = [nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2)) for _ in range(4)]
    params, buffers = F.stack_module_state(models)
    assert sorted(params) == sorted(k for k, _ in models[0].named_parameters()) and buffers == {}
    for k, p in params.items():
        assert p.requires_grad and p.grad_fn is None and tuple(p.shape[:1]) == (4,)
        close(p, np.stack([npy(dict(m.named_parameters())[k]) for m in models]))
    base = models[0]
    x = sx.randn((7, 3))
    ensemble = F.vmap(lambda p, b, xx: F.functional_call(base, (p, b), (xx,)), in_dims=(0, 0, None))
    close(ensemble(params, buffers, x), np.stack([npy(m(x)) for m in models]), tol=1e-6)
    close(F.functional_call(base, {k: v[2] for k, v in params.items()}, x), npy(models[2](x)), tol=1e-6)
    # gradients with respect to the given parameters match the module's own backward
    p1 = {k: v.detach() for k, v in base.named_parameters()}
    g = F.grad(lambda p: F.functional_call(base, p, (x,)).pow(2).sum())(p1)
    base.zero_grad()
    base(x).pow(2).sum().backward()
    for k, q in base.named_parameters():
        close(g[k], npy(q.grad), tol=1e-5)
    with pytest.raises(TypeError, match="expected a sneppx_nn.Module"):
        F.functional_call(lambda z: z, {}, (x,))
    with pytest.raises(ValueError, match="Expected all elements of parameter_and_buffer_dicts to be dictionaries"):
        F.functional_call(base, ({}, 3), (x,))
    with pytest.raises(ValueError, match="to be a dict, or a list/tuple of dicts"):
        F.functional_call(base, 3, (x,))
    with pytest.raises(RuntimeError, match="Expected at least one model, got 0"):
        F.stack_module_state([])
    with pytest.raises(RuntimeError, match="same class"):
        F.stack_module_state([nn.Linear(3, 2), nn.Sequential(nn.Linear(3, 2))])
    with pytest.raises(RuntimeError, match="same training/eval mode"):
        F.stack_module_state([nn.Linear(3, 2), nn.Linear(3, 2).eval()])
    bn = [nn.BatchNorm1d(3) for _ in range(2)]
    p, b = F.stack_module_state(bn)
    assert sorted(b) == sorted(k for k, _ in bn[0].named_buffers())
    assert all(not t.requires_grad for t in b.values())


# ---- parity with torch.func ----

def _pair(torch, *arrays):
    return [t64(a) for a in arrays], [torch.tensor(np.asarray(a, dtype=np.float64)) for a in arrays]


def _same(torch, ours, theirs, tol=1e-10):
    theirs = torch.utils._pytree.tree_map(lambda t: t.detach().numpy() if isinstance(t, torch.Tensor) else t, theirs)
    close(ours, theirs, tol)


@pytest.mark.parity
def test_parity_vmap(torch):
    tf = torch.func
    (a, b, v), (ta, tb, tv) = _pair(torch, A, B, V)
    cases = [
        (lambda x, y: (x * y).sin(), dict(), (a, a), (ta, ta)),
        (lambda x, y: x @ y, dict(in_dims=(0, None)), (a, b), (ta, tb)),
        (lambda x, y: x * y, dict(in_dims=(1, 0), out_dims=1), (a, b), (ta, tb)),
        (lambda x: {"s": x.sum(), "p": (x, x * 2)}, dict(out_dims={"s": 0, "p": (1, 0)}), (a,), (ta,)),
        (lambda d, k: [d["x"] * k, d["x"].exp()], dict(in_dims=({"x": 1}, None), out_dims=-1), ({"x": b}, v),
         ({"x": tb}, tv)),
    ]
    for f, kw, ours, theirs in cases:
        _same(torch, F.vmap(f, **kw)(*ours), tf.vmap(f, **kw)(*theirs))
    _same(torch, F.vmap(F.vmap(lambda x, y: (x * y).sum(), (None, 1)), (0, None))(a, b),
          tf.vmap(tf.vmap(lambda x, y: (x * y).sum(), (None, 1)), (0, None))(ta, tb))


@pytest.mark.parity
def test_parity_vmap_error_messages(torch):
    tf = torch.func
    (a, b), (ta, tb) = _pair(torch, A, B)

    def f(x, y=None):
        return x

    def g(x):
        return (x, 3)

    cases = [
        (lambda m, x, y: m.vmap(f)(x, y), (a, b), (ta, tb)),
        (lambda m, x, y: m.vmap(f, in_dims=2)(x), (a, b), (ta, tb)),
        (lambda m, x, y: m.vmap(f, in_dims=(0, 0))(x, 3), (a, b), (ta, tb)),
        (lambda m, x, y: m.vmap(f, in_dims=[0])(x), (a, b), (ta, tb)),
        (lambda m, x, y: m.vmap(f, in_dims=(0.5,))(x), (a, b), (ta, tb)),
        (lambda m, x, y: m.vmap(f)(), (a, b), (ta, tb)),
        (lambda m, x, y: m.vmap(f, in_dims=(None,))(x), (a, b), (ta, tb)),
        (lambda m, x, y: m.vmap(g)(x), (a, b), (ta, tb)),
        (lambda m, x, y: m.vmap(f, out_dims="a")(x), (a, b), (ta, tb)),
        (lambda m, x, y: m.vmap(lambda z: z * 2, out_dims=None)(x), (a, b), (ta, tb)),
        (lambda m, x, y: m.vmap(f, randomness="x"), (a, b), (ta, tb)),
        (lambda m, x, y: m.vmap(f, chunk_size=0), (a, b), (ta, tb)),
        (lambda m, x, y: m.grad(f)(x), (a, b), (ta, tb)),
        (lambda m, x, y: m.grad(lambda z: 3)(x), (a, b), (ta, tb)),
        (lambda m, x, y: m.grad(lambda z: z.sum(), has_aux=True)(x), (a, b), (ta, tb)),
        (lambda m, x, y: m.grad(f)(3.0), (a, b), (ta, tb)),
        (lambda m, x, y: m.grad(f, argnums=2)(x), (a, b), (ta, tb)),
        (lambda m, x, y: m.grad(f, argnums=(0, 0))(x), (a, b), (ta, tb)),
        (lambda m, x, y: m.grad(f, argnums=())(x), (a, b), (ta, tb)),
        (lambda m, x, y: m.jacrev(f, chunk_size=0), (a, b), (ta, tb)),
        (lambda m, x, y: m.jvp(f, x, (x,)), (a, b), (ta, tb)),
    ]
    for call, ours, theirs in cases:
        with pytest.raises(Exception) as mine:
            call(F, *ours)
        with pytest.raises(Exception) as ref:
            call(tf, *theirs)
        assert (type(mine.value), str(mine.value)) == (type(ref.value), str(ref.value))
    with pytest.raises(RuntimeError) as mine:
        F.vmap(lambda x: x + sx.randn((4,)))(a)
    with pytest.raises(RuntimeError) as ref:
        tf.vmap(lambda x: x + torch.randn(4))(ta)
    assert str(mine.value) == str(ref.value)


@pytest.mark.parity
def test_parity_grad_family(torch):
    tf = torch.func
    (a, v, m), (ta, tv, tm) = _pair(torch, A, V, M)
    s, ts = t64(0.7), torch.tensor(0.7, dtype=torch.float64)
    f = lambda x: (x.sin() * x).sum()  # noqa: E731
    _same(torch, F.grad(f)(v), tf.grad(f)(tv))
    _same(torch, F.grad_and_value(f)(v), tf.grad_and_value(f)(tv))
    h = lambda x: x.sin() * x * x  # noqa: E731
    _same(torch, F.grad(F.grad(F.grad(h)))(s), tf.grad(tf.grad(tf.grad(h)))(ts))
    _same(torch, F.vmap(F.grad(f))(a), tf.vmap(tf.grad(f))(ta))
    g = lambda p, x: ((p["w"] @ x).tanh() * p["b"][0]).sum()  # noqa: E731
    _same(torch, F.grad(g, argnums=(0, 1))({"w": a, "b": [v[:3]]}, v),
          tf.grad(g, argnums=(0, 1))({"w": ta, "b": [tv[:3]]}, tv))
    k = lambda x, y: ((y @ x).exp(), {"n": x.sum() * y})  # noqa: E731
    for jac in ("jacrev", "jacfwd"):
        _same(torch, getattr(F, jac)(k, argnums=(0, 1))(v, a), getattr(tf, jac)(k, argnums=(0, 1))(tv, ta))
    q = lambda x, y: (x @ y @ x).sin() + (y * y).sum()  # noqa: E731
    _same(torch, F.hessian(q, argnums=(0, 1))(v, m), tf.hessian(q, argnums=(0, 1))(tv, tm))
    t = RNG.standard_normal(4)
    _same(torch, F.jvp(k, (v, a), (t64(t), a.cos())), tf.jvp(k, (tv, ta), (torch.tensor(t), ta.cos())))
    out, fn = F.vjp(k, v, a)
    tout, tfn = tf.vjp(k, tv, ta)
    u = RNG.standard_normal(3)
    _same(torch, (out, fn((t64(u), {"n": a}))), (tout, tfn((torch.tensor(u), {"n": ta}))))


@pytest.mark.parity
def test_parity_per_sample_gradients_and_ensembles(torch):
    tf = torch.func
    nn = pytest.importorskip("sneppx_nn")
    (w, xs, ys), (tw, txs, tys) = _pair(torch, W0, XS, YS)

    def loss(w, x, y):
        return ((x * w).sum().tanh() - y) ** 2

    _same(torch, F.vmap(F.grad(loss), in_dims=(None, 0, 0))(w, xs, ys),
          tf.vmap(tf.grad(loss), in_dims=(None, 0, 0))(tw, txs, tys))
    ours = [nn.Linear(3, 2) for _ in range(3)]
    theirs = [torch.nn.Linear(3, 2).double() for _ in range(3)]
    with torch.no_grad():
        for o, t in zip(ours, theirs):
            o.weight = nn.Parameter(t64(t.weight.numpy()))
            o.bias = nn.Parameter(t64(t.bias.numpy()))
    p, b = F.stack_module_state(ours)
    tp, tb = tf.stack_module_state(theirs)
    _same(torch, (p, b), (tp, tb))

    def run(mod, fc):
        return lambda pp, bb, x: fc(mod, (pp, bb), (x,)).sin().sum()

    _same(torch, F.vmap(F.grad(run(ours[0], F.functional_call)), in_dims=(0, 0, None))(p, b, xs),
          tf.vmap(tf.grad(run(theirs[0], tf.functional_call)), in_dims=(0, 0, None))(tp, tb, txs))


@pytest.mark.parity
def test_parity_requires_grad_of_results(torch):
    """Results carry a graph exactly when they depend on an outside tensor that requires grad."""

    def cases(m, mk):
        x, xr, w = mk([0.5, 1.5], False), mk([0.5, 1.5], True), mk([2.0, 3.0], True)
        cube = lambda u: u ** 3  # noqa: E731
        return [
            m.grad(lambda u: cube(u).sum())(x), m.grad(lambda u: cube(u).sum())(xr), m.grad(lambda u: u.sum())(xr),
            m.grad(lambda u: (u * w).sum())(x), m.grad(lambda u: ((u * w) ** 2).sum())(x), m.vmap(m.grad(cube))(xr),
            m.jacrev(cube)(x), m.jacrev(cube)(xr), m.hessian(lambda u: cube(u).sum())(xr),
            m.jvp(cube, (x,), (x,))[1], m.jvp(cube, (xr,), (x,))[1], m.vjp(cube, x)[1](x)[0],
            m.vjp(cube, xr)[1](x)[0], m.vjp(cube, x)[1](xr)[0],
        ]

    ours = cases(F, lambda v, r: sx.tensor(v, dtype=sx.float64, requires_grad=r))
    theirs = cases(torch.func, lambda v, r: torch.tensor(v, dtype=torch.float64, requires_grad=r))
    assert [t.requires_grad for t in ours] == [t.requires_grad for t in theirs]
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(npy(a), b.detach().numpy(), rtol=1e-12)


def test_linearize_functionalize_debug_unwrap():
    x = sx.tensor([1.0, 2.0, -0.5], dtype=sx.float64)
    out, jvp_fn = sx.func.linearize(lambda a: sx.sin(a) * a, x)
    xs = x.numpy()
    np.testing.assert_allclose(out.numpy(), np.sin(xs) * xs, rtol=1e-15)
    for v in (np.array([1.0, 0.0, 0.0]), np.array([0.3, -2.0, 1.5])):
        want = (np.cos(xs) * xs + np.sin(xs)) * v  # the Jacobian is diagonal
        np.testing.assert_allclose(jvp_fn(sx.tensor(v, dtype=sx.float64)).numpy(), want, rtol=1e-13)

    def f(a):
        b = a.clone()
        b.mul_(2.0)
        return b

    assert sx.func.functionalize(f) is f and sx.func.functionalize(f, remove="mutations_and_views") is f
    with pytest.raises(RuntimeError, match="invalid argument for remove"):
        sx.func.functionalize(f, remove="views")
    assert sx.func.debug_unwrap(x) is x


def test_replace_all_batch_norm_modules_():
    nn = pytest.importorskip("sneppx_nn")
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.InstanceNorm1d(4, track_running_stats=True))
    assert sx.func.replace_all_batch_norm_modules_(model) is model
    bn = model[1]
    assert bn.running_mean is None and bn.running_var is None and not bn.track_running_stats
    assert model[2].track_running_stats  # instance norm is left alone, as in PyTorch
    x = sx.randn(5, 3)
    model.eval()  # without running statistics, eval mode normalises with the batch's own
    h = model[0](x).detach().numpy()
    want = (h - h.mean(0)) / np.sqrt(h.var(0) + bn.eps) * bn.weight.detach().numpy() + bn.bias.detach().numpy()
    np.testing.assert_allclose(bn(model[0](x)).detach().numpy(), want, rtol=1e-4, atol=1e-5)
