"""autograd.Function (custom forward and backward), once_differentiable, anomaly detection and Variable:
gradients against closed forms in NumPy, float64 finite differences and, marked parity, PyTorch."""

import gc
import warnings
import weakref

import numpy as np
import pytest

import sneppx_core as sx
from sneppx_core.autograd import Function, Variable
from sneppx_core.autograd.function import once_differentiable
from sneppx_core.testing import gradcheck

pytestmark = pytest.mark.skipif(not sx._HAS_C_BACKEND, reason="the NumPy backend has no backward pass")
RNG = np.random.default_rng(5)


def _t(a, grad=False):
    return sx.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


def _np(t):
    return np.asarray(t.detach().numpy())


def _functions(lib):
    """The same Functions written for sneppx_core and for torch (``lib`` is either module)."""

    class Exp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    class ScaledMul(lib.autograd.Function):  # a non-tensor argument in the middle
        @staticmethod
        def forward(ctx, x, k, w):
            ctx.save_for_backward(x, w)
            ctx.k = k
            return x * w * k

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            return g * w * ctx.k, None, g * x * ctx.k

    class SumProd(lib.autograd.Function):  # two outputs, backward written with differentiable ops
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return x + y, x * y

        @staticmethod
        def backward(ctx, gs, gp):
            x, y = ctx.saved_tensors
            return gs + gp * y, gs + gp * x

    class Cube(lib.autograd.Function):  # setup_context style
        @staticmethod
        def forward(x):
            return x ** 3

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x ** 2

    return {"Exp": Exp, "ScaledMul": ScaledMul, "SumProd": SumProd, "Cube": Cube}


F = _functions(sx)


def test_exp_values_and_gradient():
    a = RNG.standard_normal((3, 4))
    x = _t(a, True)
    y = F["Exp"].apply(x)
    np.testing.assert_allclose(_np(y), np.exp(a), rtol=1e-15)
    assert y.requires_grad and y.grad_fn.name() == "ExpBackward"
    (y * _t(a)).sum().backward()
    np.testing.assert_allclose(_np(x.grad), a * np.exp(a), rtol=1e-14)
    assert gradcheck(lambda v: F["Exp"].apply(v), [_t(a, True)])


def test_non_tensor_argument_and_needs_input_grad():
    seen = {}

    class Probe(Function):
        @staticmethod
        def forward(ctx, x, k, w):
            seen["needs"] = ctx.needs_input_grad
            return x * k + w

        @staticmethod
        def backward(ctx, g):
            return g * 2.5, None, None

    x, w = _t([1.0, 2.0], True), _t([3.0, 4.0])
    Probe.apply(x, 2.5, w).sum().backward()
    assert seen["needs"] == (True, False, False)
    np.testing.assert_allclose(_np(x.grad), [2.5, 2.5])
    a, b = RNG.standard_normal(5), RNG.standard_normal(5)
    assert gradcheck(lambda u, v: F["ScaledMul"].apply(u, 1.5, v), [_t(a, True), _t(b, True)])


def test_two_outputs_call_backward_once():
    calls = []

    class Pair(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g2, g3):
            calls.append((g2, g3))
            return g2 * 2 + g3 * 3

    x = _t([1.0, -1.0], True)
    a, b = Pair.apply(x)
    (a.sum() + 10 * b.sum()).backward()
    assert len(calls) == 1
    np.testing.assert_allclose(_np(x.grad), [32.0, 32.0])
    x.grad = None
    a, b = Pair.apply(x)
    a.sum().backward()  # b gets no gradient: zeros are passed for it
    np.testing.assert_allclose(_np(calls[-1][1]), [0.0, 0.0])
    np.testing.assert_allclose(_np(x.grad), [2.0, 2.0])


def test_set_materialize_grads_false_passes_none():
    got = []

    class Pair(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g2, g3):
            got.append(g3)
            return g2 * 2 if g3 is None else g2 * 2 + g3 * 3

    x = _t([1.0], True)
    a, _ = Pair.apply(x)
    a.sum().backward()
    assert got == [None]
    np.testing.assert_allclose(_np(x.grad), [2.0])


def test_sum_prod_and_setup_context_gradcheck():
    a, b = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 3))
    assert gradcheck(lambda u, v: sum(o.sum() * (i + 1) for i, o in enumerate(F["SumProd"].apply(u, v))),
                     [_t(a, True), _t(b, True)])
    assert gradcheck(lambda u: F["Cube"].apply(u), [_t(a, True)])


def test_second_derivative_through_backward():
    a = RNG.standard_normal(4)
    x = _t(a, True)
    (g,) = sx.autograd.grad(F["Cube"].apply(x).sum(), x, create_graph=True)
    np.testing.assert_allclose(_np(g), 3 * a ** 2, rtol=1e-14)
    (h,) = sx.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(_np(h), 6 * a, rtol=1e-14)


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


def test_once_differentiable_first_order_only():
    class Sq(Square):
        backward = staticmethod(once_differentiable(Square.backward))

    x = _t([1.0, 3.0], True)
    Sq.apply(x).sum().backward()
    np.testing.assert_allclose(_np(x.grad), [2.0, 6.0])
    (g,) = sx.autograd.grad(Sq.apply(x).sum(), x, create_graph=True)
    np.testing.assert_allclose(_np(g), [2.0, 6.0])
    assert not g.requires_grad  # the seed needs no grad: nothing to guard (as PyTorch)
    y = Sq.apply(x)
    (g,) = sx.autograd.grad((y * y).sum(), x, create_graph=True)
    np.testing.assert_allclose(_np(g), [4.0, 108.0])
    with pytest.raises(RuntimeError, match="differentiate twice a function that was marked with @once_differentiable"):
        g.sum().backward()


def test_backward_result_checks():
    def make(result):
        class Bad(Function):
            @staticmethod
            def forward(ctx, x, y):
                return x + y

            @staticmethod
            def backward(ctx, g):
                return result(g)

        return Bad

    x, y = _t([1.0, 2.0], True), _t([3.0, 4.0], True)
    with pytest.raises(RuntimeError, match="incorrect number of gradients"):
        make(lambda g: g).apply(x, y).sum().backward()
    with pytest.raises(RuntimeError, match=r"invalid gradient at index 1 - got \[3\]"):
        make(lambda g: (g, sx.ones(3, dtype=sx.float64))).apply(x, y).sum().backward()
    with pytest.raises(TypeError, match="expected a Tensor or None"):
        make(lambda g: (g, 2.0)).apply(x, y).sum().backward()
    x.grad = y.grad = None
    make(lambda g: (g, g.expand(3, 2) / 3, None)).apply(x, y).sum().backward()  # summed to the input's shape
    np.testing.assert_allclose(_np(y.grad), [1.0, 1.0])
    with pytest.raises(NotImplementedError, match="must define backward"):
        class NoBackward(Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

        NoBackward.apply(x).sum().backward()


def test_mark_dirty_in_place():
    class Double_(Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    leaf = _t([1.0, 2.0], True)
    z = leaf * 3
    out = Double_.apply(z)
    assert out is z and z.grad_fn.name() == "Double_Backward"
    np.testing.assert_allclose(_np(z), [6.0, 12.0])
    (out * _t([1.0, 10.0])).sum().backward()
    np.testing.assert_allclose(_np(leaf.grad), [6.0, 60.0])
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        Double_.apply(_t([1.0], True))


def test_non_differentiable_outputs_and_no_grad():
    class WithMask(Function):
        @staticmethod
        def forward(ctx, x):
            m = (x > 0).to(x.dtype)
            ctx.mark_non_differentiable(m)
            return x * m, m

        @staticmethod
        def backward(ctx, g, gm):
            return g

    x = _t([1.0, -1.0], True)
    y, m = WithMask.apply(x)
    assert y.requires_grad and not m.requires_grad
    with sx.no_grad():
        y2 = F["Exp"].apply(x)
    assert not y2.requires_grad and y2.grad_fn is None


def test_input_returned_is_a_new_tensor():
    class Ident(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 5

    x = _t([1.0], True)
    y = Ident.apply(x)
    assert y is not x and y.grad_fn is not None and x.grad_fn is None
    y.backward(_t([1.0]))
    np.testing.assert_allclose(_np(x.grad), [5.0])


def test_saved_tensor_modified_in_place_and_second_backward():
    x = _t([1.0, 2.0], True)
    z = x * 1
    y = Square.apply(z)
    with sx.no_grad():
        z.add_(1)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.sum().backward()
    y = Square.apply(x * 1)
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    np.testing.assert_allclose(_np(x.grad), [4.0, 8.0])
    y = Square.apply(x * 1)
    y.sum().backward()
    with pytest.raises(RuntimeError, match="second time"):
        y.sum().backward()


def test_saving_the_output_makes_no_reference_cycle():
    ctxs = []

    class Keep(Function):
        @staticmethod
        def forward(ctx, x):
            y = x * 2
            ctx.save_for_backward(y)
            ctxs.append(weakref.ref(ctx))
            return y

        @staticmethod
        def backward(ctx, g):
            return 2 * g

    gc.disable()
    try:
        y = Keep.apply(_t([1.0], True))
        assert ctxs[0]() is not None
        del y
        assert ctxs[0]() is None  # freed by reference counting alone
    finally:
        gc.enable()


def _scaling(name, forward_factor, backward_factor):
    """A Function named ``name`` whose forward multiplies by one factor and backward by another."""

    def forward(ctx, x):
        return x * forward_factor

    def backward(ctx, g):
        return g * backward_factor

    return type(name, (Function,), {"forward": staticmethod(forward), "backward": staticmethod(backward)})


def test_the_node_does_not_hold_the_inputs():
    Double = _scaling("Double", 2, 2)
    gc.disable()
    try:
        leaf = _t([1.0, 2.0], True)
        x = leaf * 1
        alive = weakref.ref(x)
        y = Double.apply(x)
        del x
        assert alive() is None  # only what forward saves is kept for backward
        y.sum().backward()
        np.testing.assert_allclose(_np(leaf.grad), [2.0, 2.0])
    finally:
        gc.enable()


def test_instance_call_is_refused():
    with pytest.raises(RuntimeError, match="apply"):
        F["Exp"]()(_t([1.0]))


def test_detect_anomaly_names_the_node():
    NanBack = _scaling("NanBack", 1, float("nan"))
    x = _t([1.0], True)
    NanBack.apply(x).sum().backward()  # off: no check
    assert np.isnan(_np(x.grad)).all()
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        guard = sx.autograd.detect_anomaly()
    with guard:
        assert sx.is_anomaly_enabled()
        with pytest.raises(RuntimeError, match="Function 'NanBackBackward' returned nan values in its 0th output"):
            NanBack.apply(x).sum().backward()
        with pytest.raises(RuntimeError, match="returned nan values"):
            sx.sqrt(_t([-1.0], True)).sum().backward()
    assert not sx.is_anomaly_enabled()
    with sx.autograd.set_detect_anomaly(True, check_nan=False):
        assert sx.is_anomaly_enabled() and not sx.is_anomaly_check_nan_enabled()
        NanBack.apply(x).sum().backward()
    assert not sx.is_anomaly_enabled() and sx.is_anomaly_check_nan_enabled()
    sx.set_anomaly_enabled(True)
    try:
        with pytest.raises(RuntimeError, match="returned nan values"):
            NanBack.apply(x).sum().backward()
    finally:
        sx.set_anomaly_enabled(False)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")

        @sx.autograd.detect_anomaly()
        def run():
            return sx.is_anomaly_enabled()

    assert run() and not sx.is_anomaly_enabled()


def test_variable():
    t = _t([1.0, 2.0])
    v = Variable(t, requires_grad=True)
    assert v is not t and v.requires_grad and not t.requires_grad
    assert isinstance(t, Variable) and not isinstance(3, Variable)
    with sx.no_grad():
        v.add_(1)
    np.testing.assert_allclose(_np(t), [2.0, 3.0])  # shares the data
    assert tuple(Variable().shape) == (0,)
    with pytest.raises(TypeError, match="has to be a tensor"):
        Variable(3)


@pytest.mark.parity
@pytest.mark.parametrize("name", ["Exp", "ScaledMul", "SumProd", "Cube"])
def test_matches_torch(torch, name):
    T = _functions(torch)
    args = {"Exp": 1, "ScaledMul": 2, "SumProd": 2, "Cube": 1}[name]
    arrays = [RNG.standard_normal((3, 2)) for _ in range(args)]
    seeds = [RNG.standard_normal((3, 2)) for _ in range(2)]

    def run(lib, fns, make):
        xs = [make(a) for a in arrays]
        call = (xs[0], 0.75, xs[1]) if name == "ScaledMul" else tuple(xs)
        out = fns[name].apply(*call)
        outs = out if isinstance(out, tuple) else (out,)
        loss = sum((o * make(s)).sum() for o, s in zip(outs, seeds))
        grads = lib.autograd.grad(loss, xs, create_graph=True)
        second = lib.autograd.grad(sum((g * g).sum() for g in grads), xs, allow_unused=True)
        return [o.detach().numpy() for o in outs], [g.detach().numpy() for g in grads], \
            [None if s is None else s.detach().numpy() for s in second]

    got = run(sx, F, lambda a: _t(a, True))
    want = run(torch, T, lambda a: torch.tensor(a, requires_grad=True))
    for g, w in zip(got[0] + got[1], want[0] + want[1]):
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-14)
    for g, w in zip(got[2], want[2]):
        if w is None:
            assert g is None or not np.any(g)
        else:
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-13)
