"""Autograd behaviour: seeds, accumulation, graph retention, higher order, grad modes, hooks, versions."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sneppx_core as sx
from sneppx_core.autograd import grad


def leaf(values, dtype=sx.float64):
    return sx.tensor(values, dtype=dtype, requires_grad=True)


def npg(t):
    return np.array(t.detach().numpy())


# ---------------------------------------------------------------- seeds and accumulation
def test_backward_on_scalar():
    x = leaf([1.0, 2.0, 3.0])
    (x * x).sum().backward()
    np.testing.assert_allclose(npg(x.grad), [2.0, 4.0, 6.0])


def test_backward_on_non_scalar_seeds_ones():
    x = leaf([[1.0, -2.0], [0.5, 3.0]])
    (x**3).backward()
    np.testing.assert_allclose(npg(x.grad), 3 * npg(x) ** 2)


def test_backward_with_gradient():
    x = leaf([1.0, 2.0, 3.0])
    y = x * x
    y.backward(sx.tensor([1.0, 0.5, -1.0], dtype=sx.float64))
    np.testing.assert_allclose(npg(x.grad), [2.0, 2.0, -6.0])


def test_backward_seed_takes_the_output_dtype():
    x = leaf([1.0, 2.0])  # float64
    (x * x).backward(sx.tensor([1.0, 1.0], dtype=sx.float32))
    assert x.grad.dtype == sx.float64
    np.testing.assert_allclose(npg(x.grad), [2.0, 4.0])
    (g,) = grad(x * 3, x, grad_outputs=sx.ones(2, dtype=sx.float16))
    assert g.dtype == sx.float64
    with pytest.raises(TypeError, match="floating"):
        (x * 1).backward(sx.tensor([1, 1]))


def test_backward_gradient_shape_mismatch_raises():
    x = leaf([1.0, 2.0])
    with pytest.raises(ValueError, match="backward"):
        (x * 2).backward(sx.ones(3, dtype=sx.float64))


def test_gradients_accumulate_across_calls():
    x = leaf([1.0, 2.0])
    for k in range(1, 4):
        (x * 3).sum().backward()
        np.testing.assert_allclose(npg(x.grad), [3.0 * k, 3.0 * k])
    x.grad = None
    (x * 5).sum().backward()
    np.testing.assert_allclose(npg(x.grad), [5.0, 5.0])


def test_accumulated_grad_is_not_aliased_with_the_seed():
    x = leaf([1.0, 2.0])
    seed = sx.tensor([1.0, 1.0], dtype=sx.float64)
    x.backward(seed) if False else (x * 1).backward(seed)
    seed += 10  # the caller's tensor changes; x.grad must not
    np.testing.assert_allclose(npg(x.grad), [1.0, 1.0])
    g = x.grad
    (x * 1).sum().backward()
    np.testing.assert_allclose(npg(g) if g is x.grad else npg(x.grad), [2.0, 2.0])


def test_zero_grad_by_assignment_and_zero_():
    x = leaf([1.0, 2.0])
    (x * 2).sum().backward()
    with sx.no_grad():
        x.grad.zero_()
    (x * 2).sum().backward()
    np.testing.assert_allclose(npg(x.grad), [2.0, 2.0])


def test_shared_subexpression_gradients_add():
    x = leaf([0.3, -1.2])
    y = x.exp()
    z = y * y + y.sin() + y
    z.sum().backward()
    e = np.exp(npg(x))
    np.testing.assert_allclose(npg(x.grad), (2 * e + np.cos(e) + 1) * e)


def test_same_leaf_used_twice_in_one_op():
    x = leaf([1.5, -2.0])
    (x * x).sum().backward()
    np.testing.assert_allclose(npg(x.grad), 2 * npg(x))


# ---------------------------------------------------------------- graph retention
def test_second_backward_without_retain_graph_raises():
    x = leaf([1.0, 2.0])
    y = (x.exp() * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="retain_graph"):
        y.backward()


def test_retain_graph_allows_second_backward():
    x = leaf([1.0, 2.0])
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    first = npg(x.grad).copy()
    y.backward()
    np.testing.assert_allclose(npg(x.grad), 2 * first)


def test_backward_without_grad_raises():
    with pytest.raises(RuntimeError, match="does not require grad"):
        sx.tensor([1.0, 2.0]).sum().backward()


# ---------------------------------------------------------------- higher order
@pytest.mark.parametrize(
    "f,d1,d2",
    [
        (lambda x: x**3, lambda v: 3 * v**2, lambda v: 6 * v),
        (lambda x: x.tanh(), lambda v: 1 - np.tanh(v) ** 2, lambda v: -2 * np.tanh(v) * (1 - np.tanh(v) ** 2)),
        (lambda x: x.exp(), np.exp, np.exp),
        (lambda x: x.sigmoid(), lambda v: s(v) * (1 - s(v)), lambda v: s(v) * (1 - s(v)) * (1 - 2 * s(v))),
        (lambda x: x.sin() * x, lambda v: np.cos(v) * v + np.sin(v), lambda v: 2 * np.cos(v) - v * np.sin(v)),
        (lambda x: x.log(), lambda v: 1 / v, lambda v: -1 / v**2),
        (lambda x: x.sqrt(), lambda v: 0.5 / np.sqrt(v), lambda v: -0.25 * v**-1.5),
        (lambda x: 1 / x, lambda v: -1 / v**2, lambda v: 2 / v**3),
        (lambda x: x.erf(), lambda v: 2 / np.sqrt(np.pi) * np.exp(-(v**2)),
         lambda v: -4 * v / np.sqrt(np.pi) * np.exp(-(v**2))),
    ],
    ids=["cube", "tanh", "exp", "sigmoid", "xsin", "log", "sqrt", "reciprocal", "erf"],
)
def test_second_derivatives_with_create_graph(f, d1, d2):
    v = np.array([0.4, 1.3, 2.1])
    x = leaf(v)
    (g,) = grad(f(x).sum(), x, create_graph=True)
    assert g.requires_grad
    np.testing.assert_allclose(npg(g), d1(v), rtol=1e-10)
    (gg,) = grad(g.sum(), x)
    np.testing.assert_allclose(npg(gg), d2(v), rtol=1e-9)


def s(v):
    return 1 / (1 + np.exp(-v))


def test_second_derivative_via_backward_create_graph():
    x = leaf([0.5, -1.5])
    y = (x**3).sum()
    y.backward(create_graph=True)
    g = x.grad
    assert g.requires_grad
    x.grad = None
    g.sum().backward()
    np.testing.assert_allclose(npg(x.grad), 6 * np.array([0.5, -1.5]))


def test_third_derivative():
    x = leaf([0.7])
    (g1,) = grad((x**4).sum(), x, create_graph=True)
    (g2,) = grad(g1.sum(), x, create_graph=True)
    (g3,) = grad(g2.sum(), x)
    np.testing.assert_allclose(npg(g3), [24 * 0.7])


def test_mixed_second_derivative_through_matmul():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    x, w = leaf(a), leaf(b)
    (gx,) = grad(((x @ w) ** 2).sum(), x, create_graph=True)
    (gw,) = grad(gx.sum(), w)
    # d/dw sum_ij [2 (x w) w^T]_ij ; computed by hand: 2 x^T 1 w^T... compare with finite differences
    eps = 1e-6
    num = np.zeros_like(b)
    for i in range(b.shape[0]):
        for j in range(b.shape[1]):
            for sgn in (1, -1):
                bb = b.copy()
                bb[i, j] += sgn * eps
                num[i, j] += sgn * np.sum(2 * (a @ bb) @ bb.T) / (2 * eps)
    np.testing.assert_allclose(npg(gw), num, rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------- autograd.grad
def test_autograd_grad_does_not_touch_dot_grad():
    x, y = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    gx, gy = grad((x * y).sum(), (x, y))
    np.testing.assert_allclose(npg(gx), [3.0, 4.0])
    np.testing.assert_allclose(npg(gy), [1.0, 2.0])
    assert x.grad is None and y.grad is None


def test_autograd_grad_with_grad_outputs():
    x = leaf([1.0, 2.0])
    (g,) = grad(x * x, x, grad_outputs=sx.tensor([1.0, -1.0], dtype=sx.float64))
    np.testing.assert_allclose(npg(g), [2.0, -4.0])


def test_autograd_grad_non_scalar_without_grad_outputs_raises():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="scalar"):
        grad(x * x, x)


def test_autograd_grad_unused_input():
    x, y = leaf([1.0]), leaf([2.0])
    with pytest.raises(RuntimeError, match="allow_unused"):
        grad((x * 2).sum(), (x, y))
    gx, gy = grad((x * 2).sum(), (x, y), allow_unused=True)
    assert gy is None
    np.testing.assert_allclose(npg(gx), [2.0])


def test_autograd_grad_of_intermediate():
    x = leaf([1.0, 2.0])
    h = x * 3
    (gh,) = grad((h * h).sum(), h)
    np.testing.assert_allclose(npg(gh), 2 * npg(h))


# ---------------------------------------------------------------- grad modes
def test_no_grad_context_manager():
    x = leaf([1.0])
    with sx.no_grad():
        y = x * 2
        assert not sx.is_grad_enabled()
    assert sx.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None


def test_enable_grad_inside_no_grad():
    x = leaf([1.0])
    with sx.no_grad():
        with sx.enable_grad():
            y = x * 2
        z = x * 2
    assert y.requires_grad and not z.requires_grad


def test_no_grad_and_enable_grad_as_decorators():
    x = leaf([1.0])

    @sx.no_grad()
    def f(t):
        return t * 2

    @sx.no_grad
    def f2(t):
        return t * 2

    @sx.enable_grad()
    def g(t):
        return t * 2

    assert not f(x).requires_grad and not f2(x).requires_grad
    with sx.no_grad():
        assert g(x).requires_grad
        assert not sx.is_grad_enabled()
    assert f.__name__ == "f"


def test_set_grad_enabled_forms():
    x = leaf([1.0])
    with sx.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert sx.is_grad_enabled()
    sx.set_grad_enabled(False)
    try:
        assert not sx.is_grad_enabled()
    finally:
        sx.set_grad_enabled(True)
    assert sx.is_grad_enabled()

    @sx.set_grad_enabled(False)
    def f(t):
        return t * 2

    assert sx.is_grad_enabled()
    assert not f(x).requires_grad
    assert sx.is_grad_enabled()


def test_grad_mode_restored_after_exception():
    with pytest.raises(KeyError), sx.no_grad():
        raise KeyError("x")
    assert sx.is_grad_enabled()


def test_grad_mode_is_per_thread():
    import threading

    seen = []
    with sx.no_grad():
        t = threading.Thread(target=lambda: seen.append(sx.is_grad_enabled()))
        t.start()
        t.join()
    assert seen == [True]


# ---------------------------------------------------------------- flags, detach, retain_grad, hooks
def test_requires_grad_and_leaf_flags():
    x = sx.tensor([1.0, 2.0])
    assert not x.requires_grad and x.is_leaf
    assert x.requires_grad_() is x and x.requires_grad
    y = x * 2
    assert y.requires_grad and not y.is_leaf and y.grad_fn is not None
    with pytest.raises(RuntimeError):
        y.requires_grad_(False)
    with pytest.raises(RuntimeError, match="floating"):
        sx.tensor([1, 2]).requires_grad_()
    x.requires_grad_(False)
    assert not (x * 2).requires_grad


def test_detach_shares_memory_and_stops_gradients():
    x = leaf([1.0, 2.0])
    d = x.detach()
    assert not d.requires_grad and d.grad_fn is None
    with sx.no_grad():
        d[0] = 7.0
    assert x[0].item() == 7.0
    y = (x * d).sum()
    y.backward()
    np.testing.assert_allclose(npg(x.grad), npg(d))


def test_retain_grad_on_intermediate():
    x = leaf([1.0, 2.0])
    h = x * 3
    h.retain_grad()
    assert h.retains_grad
    (h * h).sum().backward()
    np.testing.assert_allclose(npg(h.grad), 2 * npg(h))
    np.testing.assert_allclose(npg(x.grad), 18 * npg(x))


def test_intermediate_grad_is_none_without_retain_grad():
    x = leaf([1.0])
    h = x * 3
    (h * h).sum().backward()
    assert h.grad is None


def test_hook_on_leaf_modifies_gradient():
    x = leaf([1.0, 2.0])
    calls = []

    def hook(g):
        calls.append(npg(g).copy())
        return g * 10

    handle = x.register_hook(hook)
    (x * 2).sum().backward()
    np.testing.assert_allclose(calls[0], [2.0, 2.0])
    np.testing.assert_allclose(npg(x.grad), [20.0, 20.0])
    handle.remove()
    x.grad = None
    (x * 2).sum().backward()
    np.testing.assert_allclose(npg(x.grad), [2.0, 2.0])
    assert len(calls) == 1


def test_hook_on_intermediate_modifies_upstream_gradient():
    x = leaf([1.0, 2.0])
    h = x * 2
    h.register_hook(lambda g: g * 0.5)
    h.sum().backward()
    np.testing.assert_allclose(npg(x.grad), [1.0, 1.0])


def test_hook_returning_none_keeps_gradient():
    x = leaf([3.0])
    seen = []
    x.register_hook(lambda g: seen.append(g.item()))
    (x * 4).sum().backward()
    assert seen == [4.0] and x.grad.item() == 4.0


def test_post_accumulate_grad_hook_sees_the_leaf():
    x = leaf([1.0, 2.0])
    seen = []
    x.register_post_accumulate_grad_hook(lambda t: seen.append(npg(t.grad).copy()))
    (x * 3).sum().backward()
    np.testing.assert_allclose(seen[0], [3.0, 3.0])


@pytest.mark.parametrize(
    "make,name",
    [
        (lambda x: x + x, "Add"), (lambda x: x * x, "Mul"), (lambda x: x / 2, "Div"), (lambda x: x - 1, "Sub"),
        (lambda x: x @ x, "Dot"), (lambda x: x @ x[:, None], "Matmul"), (lambda x: x.sum(), "Sum"), (lambda x: x.exp(), "exp"),
        (lambda x: x.reshape(-1), "View"), (lambda x: x.transpose(0, 0), "Transpose"),
        (lambda x: x.permute(0), "Permute"), (lambda x: x[1:], "Slice"), (lambda x: x.unsqueeze(0), "Unsqueeze"),
        (lambda x: sx.cat([x, x]), "Cat"), (lambda x: x.clone(), "Clone"), (lambda x: x**2, "Pow"),
    ],
)
def test_grad_fn_names(make, name):
    x = leaf([1.0, 2.0])
    fn = make(x).grad_fn
    assert fn is not None and name.lower() in fn.name().lower(), fn.name()
    assert any(n is not None for n, _ in fn.next_functions)


def test_leaf_has_no_grad_fn_and_accumulator_in_next_functions():
    x = leaf([1.0])
    assert x.grad_fn is None
    fn = (x * 2).grad_fn
    names = [n.name() for n, _ in fn.next_functions if n is not None]
    assert "AccumulateGrad" in names


# ---------------------------------------------------------------- broadcasting reduces gradients
@pytest.mark.parametrize("sa,sb", [((3, 4), (4,)), ((3, 1), (1, 4)), ((2, 3, 4), (3, 1)), ((3, 4), ()), ((1,), (5,))])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "maximum", "pow"])
def test_broadcast_operands_get_reduced_gradients(sa, sb, op):
    rng = np.random.default_rng(0)
    a = rng.uniform(0.5, 2.0, sa)
    b = rng.uniform(0.5, 2.0, sb)
    x, y = leaf(a), leaf(b)
    out = getattr(sx, op)(x, y)
    out.sum().backward()
    assert x.grad.shape == x.shape and y.grad.shape == y.shape
    # reference: the gradient of the broadcast copy summed back
    f = {"add": lambda p, q: (np.ones_like(p), np.ones_like(q)),
         "sub": lambda p, q: (np.ones_like(p), -np.ones_like(q)),
         "mul": lambda p, q: (q, p), "div": lambda p, q: (1 / q, -p / q**2),
         "maximum": lambda p, q: ((p > q) * 1.0, (q > p) * 1.0),
         "pow": lambda p, q: (q * p ** (q - 1), p**q * np.log(p))}[op]
    pa, pb = np.broadcast_arrays(a, b)
    ga, gb = f(pa, pb)
    np.testing.assert_allclose(npg(x.grad), _sum_to(ga, sa), rtol=1e-10)
    np.testing.assert_allclose(npg(y.grad), _sum_to(gb, sb), rtol=1e-10)


def _sum_to(g, shape):
    while g.ndim > len(shape):
        g = g.sum(0)
    for i, n in enumerate(shape):
        if n == 1:
            g = g.sum(i, keepdims=True)
    return g


def test_expand_gradient_is_reduced():
    x = leaf([[1.0], [2.0]])
    x.expand(2, 3).sum().backward()
    np.testing.assert_allclose(npg(x.grad), [[3.0], [3.0]])


# ---------------------------------------------------------------- version counter
def test_inplace_on_saved_input_raises_at_backward():
    x = leaf([1.0, 2.0])
    h = x * 1
    y = (h * h).sum()  # saves h
    with sx.no_grad():
        h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.backward()


def test_inplace_on_saved_output_raises_at_backward():
    x = leaf([0.5, 1.5])
    h = x * 1
    e = h.exp()  # exp saves its output
    y = e.sum()
    e.mul_(2)
    with pytest.raises(RuntimeError, match="in-place"):
        y.backward()


def test_inplace_on_saved_via_view_raises():
    x = leaf([1.0, 2.0, 3.0])
    h = x * 1
    y = (h.sin()).sum()  # sin saves h
    with sx.no_grad():
        v = h[1:]
        v.zero_()
    with pytest.raises(RuntimeError, match="in-place"):
        y.backward()


def test_inplace_on_unsaved_tensor_keeps_correct_gradient():
    x = leaf([1.0, 2.0])
    h = x * 3  # mul by a constant: h itself is not saved by the next op
    h += 1
    h *= 2
    (h + 0).sum().backward()
    np.testing.assert_allclose(npg(x.grad), [6.0, 6.0])


def test_inplace_non_leaf_chain_gradient():
    x = leaf([1.0, 2.0])
    y = x.exp()
    z = y * 1
    z.mul_(x)  # z = exp(x) * x, x is saved by mul_ (via the out-of-place product)
    z.sum().backward()
    v = np.array([1.0, 2.0])
    np.testing.assert_allclose(npg(x.grad), np.exp(v) * (1 + v))


def test_inplace_on_leaf_requiring_grad_raises():
    x = leaf([1.0, 2.0])
    for f in (lambda: x.add_(1), lambda: x.mul_(2), lambda: x.exp_(), lambda: x.zero_(), lambda: x.fill_(1.0)):
        with pytest.raises(RuntimeError, match="leaf"):
            f()
    with pytest.raises(RuntimeError, match="leaf"):
        x += 1
    with sx.no_grad():
        x += 1
    np.testing.assert_allclose(npg(x), [2.0, 3.0])


def test_version_counter_increments():
    x = sx.zeros(3)
    v0 = x._version
    x += 1
    x.mul_(2)
    x[0] = 5
    assert x._version == v0 + 3
    view = x[1:]
    view.add_(1)
    assert x._version == v0 + 4


def test_requires_grad_assignment_checks():
    x = sx.tensor([1.0])
    x.requires_grad = True
    assert x.requires_grad
    y = x * 2
    with pytest.raises(RuntimeError, match="leaf"):
        y.requires_grad = False


def test_grad_assignment_shape_check():
    x = leaf([1.0, 2.0])
    with pytest.raises(ValueError, match="shape"):
        x.grad = sx.zeros(3, dtype=sx.float64)
    x.grad = sx.ones(2, dtype=sx.float64)
    (x * 1).sum().backward()
    np.testing.assert_allclose(npg(x.grad), [2.0, 2.0])


def test_backward_through_integer_conversion_stops():
    x = leaf([1.7, 2.2])
    y = (x.long().double() * x).sum()
    y.backward()
    np.testing.assert_allclose(npg(x.grad), [1.0, 2.0])


def test_dtype_conversion_is_differentiable():
    x = leaf([1.0, 2.0])
    (x.float() * 3).sum().backward()
    assert x.grad.dtype == sx.float64
    np.testing.assert_allclose(npg(x.grad), [3.0, 3.0])


def test_gradient_of_large_graph_depth():
    x = leaf([0.5])
    y = x
    for _ in range(2000):
        y = y * 1.0001
    y.sum().backward()
    np.testing.assert_allclose(npg(x.grad), [1.0001**2000], rtol=1e-9)
    assert math.isfinite(x.grad.item())


@pytest.mark.parametrize(
    "op,expected",
    [
        (lambda h, x: h.div_(x), lambda v: np.zeros_like(v)),
        (lambda h, x: h.exp_(), lambda v: 3 * np.exp(3 * v)),
        (lambda h, x: h.pow_(2), lambda v: 18 * v),
        (lambda h, x: h.clamp_(0, 4), lambda v: np.where(3 * v <= 4, 3.0, 0.0)),
        (lambda h, x: h.sigmoid_(), lambda v: 3 * s(3 * v) * (1 - s(3 * v))),
    ],
    ids=["div_", "exp_", "pow_", "clamp_", "sigmoid_"],
)
def test_inplace_ops_on_non_leaf_give_correct_gradients(op, expected):
    v = np.array([0.5, 2.0])
    x = leaf(v)
    h = x * 3
    op(h, x)
    h.sum().backward()
    np.testing.assert_allclose(npg(x.grad), expected(v), rtol=1e-10, atol=1e-12)


def test_inplace_op_reading_itself_as_other_operand_raises_not_wrong():
    x = leaf([0.5, 2.0])
    h = x * 3
    h.mul_(h)  # the second operand is the tensor being overwritten (PyTorch raises too)
    with pytest.raises(RuntimeError, match="in-place"):
        h.sum().backward()


# ---------------------------------------------------------------- writes into views (CopySlices)
def _grads_after(write):
    x = leaf(np.arange(1.0, 7.0).reshape(2, 3))
    w = leaf([0.5, -1.0, 2.0])
    y = x * 2
    write(y, w)
    (y * y).sum().backward()
    return npg(x.grad), npg(w.grad) if w.grad is not None else None


def test_setitem_mask_on_intermediate():
    gx, _ = _grads_after(lambda y, w: y.__setitem__(y > 6, 0.0))
    v = np.arange(1.0, 7.0).reshape(2, 3)
    np.testing.assert_allclose(gx, np.where(2 * v > 6, 0.0, 8 * v))


def test_setitem_row_from_value_requiring_grad():
    gx, gw = _grads_after(lambda y, w: y.__setitem__(0, w * 3))
    v = np.arange(1.0, 7.0).reshape(2, 3)
    np.testing.assert_allclose(gx, np.vstack([np.zeros(3), 8 * v[1]]))
    np.testing.assert_allclose(gw, 2 * (3 * np.array([0.5, -1.0, 2.0])) * 3)


def test_inplace_op_on_view_of_intermediate():
    gx, _ = _grads_after(lambda y, w: y[:, 1].mul_(3))
    v = np.arange(1.0, 7.0).reshape(2, 3)
    scale = np.array([1.0, 3.0, 1.0])
    np.testing.assert_allclose(gx, 2 * (2 * v * scale) * 2 * scale)


def test_inplace_on_transposed_view_and_broadcast_value():
    gx, gw = _grads_after(lambda y, w: y.T[1:].copy_(w[:2].unsqueeze(1)))
    v = np.arange(1.0, 7.0).reshape(2, 3)
    mask = np.array([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    np.testing.assert_allclose(gx, 8 * v * mask)
    y_final = np.where(mask > 0, 2 * v, 0.0)
    y_final[:, 1], y_final[:, 2] = 0.5, -1.0
    np.testing.assert_allclose(gw, [2 * 0.5 * 2, 2 * -1.0 * 2, 0.0])


def test_write_into_view_of_leaf_requiring_grad_raises():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="leaf"):
        x[0] = 5.0
    with pytest.raises(RuntimeError, match="leaf"):
        x[1:].mul_(2)


def test_setitem_into_plain_tensor_with_grad_value_makes_it_non_leaf():
    buf = sx.zeros(4, dtype=sx.float64)
    v = leaf([1.0, 2.0])
    buf[1:3] = v * v
    assert buf.requires_grad and not buf.is_leaf
    (buf * sx.tensor([1.0, 2.0, 3.0, 4.0], dtype=sx.float64)).sum().backward()
    np.testing.assert_allclose(npg(v.grad), [2 * 1.0 * 2.0, 2 * 2.0 * 3.0])


@pytest.mark.parity
def test_view_writes_match_torch(torch):
    def run(m, x0, w0):
        x = m.tensor(x0, requires_grad=True)
        w = m.tensor(w0, requires_grad=True)
        y = x * 1.5 + 0.25  # (exp would save its output, and PyTorch too rejects writing into it)
        y[0, 1:] = w * 2
        y[:, 0].mul_(w[0])
        y[y > 3] = 1.0
        y.T[2].add_(w[1:2])
        (y.sin() * y).sum().backward()
        return [np.array(t.detach().numpy()) for t in (y, x.grad, w.grad)]

    rng = np.random.default_rng(5)
    x0, w0 = rng.uniform(-1, 1.2, (3, 3)), rng.uniform(-1, 1, 2)
    for a, b in zip(run(sx, x0, w0), run(torch, x0, w0)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_double_backward_through_view_write():
    x = leaf([0.5, 1.0, 2.0])
    y = x * 1
    y[1:] = x[1:] ** 3  # y = [x0, x1^3, x2^3]
    (g,) = grad((y * y).sum(), x, create_graph=True)  # d/dx: [2 x0, 6 x1^5, 6 x2^5]
    np.testing.assert_allclose(npg(g), [1.0, 6.0, 192.0])
    (gg,) = grad(g.sum(), x)
    np.testing.assert_allclose(npg(gg), [2.0, 30.0, 480.0])
