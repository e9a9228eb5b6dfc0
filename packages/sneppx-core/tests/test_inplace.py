"""In-place operators and methods: same object, same values as the out-of-place op, version bumps,
writes through views, dtype rules, and PyTorch parity."""

from __future__ import annotations

import operator

import numpy as np
import pytest
import sneppx_core as sx

from opcheck import make_input, rng_for, to_np

INPLACE_OPERATORS = [
    ("iadd", operator.iadd, operator.add, ("float32", "float64", "int32", "int64", "uint8", "int8", "float16",
                                        "bfloat16")),
    ("isub", operator.isub, operator.sub, ("float32", "float64", "int32", "int64", "int16", "float16")),
    ("imul", operator.imul, operator.mul, ("float32", "float64", "int32", "int64", "int8", "bool", "bfloat16")),
    ("itruediv", operator.itruediv, operator.truediv, ("float32", "float64", "float16")),
    ("ifloordiv", operator.ifloordiv, operator.floordiv, ("float32", "float64", "int32", "int64", "int16")),
    ("imod", operator.imod, operator.mod, ("float32", "float64", "int32", "int64")),
    ("ipow", operator.ipow, operator.pow, ("float32", "float64", "int64")),
    ("iand", operator.iand, operator.and_, ("bool",)),
    ("ior", operator.ior, operator.or_, ("bool",)),
]
PARAMS = [(n, i, o, d) for n, i, o, ds in INPLACE_OPERATORS for d in ds]


def _operands(dtype, rng):
    a = rng.uniform(0.5, 3.0, (3, 4)) if dtype not in ("bool",) else rng.random((3, 4)) < 0.5
    b = rng.uniform(0.5, 2.0, (4,)) if dtype not in ("bool",) else rng.random(4) < 0.5
    if dtype in ("int32", "int64", "uint8", "int8", "int16"):
        a, b = np.round(a * 2), np.round(b) + 1
    return a, b


@pytest.mark.parametrize("name,iop,op,dtype", PARAMS, ids=[f"{p[0]}-{p[3]}" for p in PARAMS])
@pytest.mark.parametrize("other_kind", ["tensor", "scalar"])
def test_inplace_operator(name, iop, op, dtype, other_kind):
    rng = rng_for(name, dtype, other_kind)
    a, b = _operands(dtype, rng)
    x = sx.tensor(a, dtype=dtype)
    other = sx.tensor(b, dtype=dtype) if other_kind == "tensor" else (True if dtype == "bool" else 2)
    expected = op(x.clone(), other)
    v0, ident = x._version, id(x)
    y = iop(x, other)
    assert id(y) == ident and y is x and x.dtype == sx.Dtype.__members__[dtype.upper()]
    assert x._version > v0
    np.testing.assert_array_equal(to_np(x), to_np(expected.to(x.dtype)))


def test_inplace_operator_writes_through_views():
    base = sx.zeros(3, 4)
    row, col, strided = base[1], base[:, 2], base.T[::2]
    row += 1
    col *= 5
    strided -= sx.tensor([[1.0, 2.0, 3.0]])
    ref = np.zeros((3, 4))
    ref[1] += 1
    ref[:, 2] *= 5
    ref.T[::2] -= np.array([[1.0, 2.0, 3.0]])
    np.testing.assert_array_equal(to_np(base), ref)


def test_inplace_result_type_must_fit():
    x = sx.ones(3, dtype=sx.int64)
    with pytest.raises(TypeError, match="can't be cast"):
        x /= 2
    with pytest.raises(TypeError, match="can't be cast"):
        x += 1.5
    f = sx.ones(3, dtype=sx.float16)
    f += sx.ones(3, dtype=sx.float64)  # floats narrow back to the output's dtype, as in PyTorch
    assert f.dtype == sx.float16 and to_np(f).tolist() == [2.0, 2.0, 2.0]


def test_inplace_broadcast_must_fit_the_output():
    x = sx.zeros(3)
    with pytest.raises(ValueError, match=r"\(2, 3\).*\(3,\)|cannot write"):
        x += sx.ones(2, 3)


NAMED = [
    ("add_", lambda t: t.add_(2, alpha=3), lambda a: a + 6), ("sub_", lambda t: t.sub_(1.5), lambda a: a - 1.5),
    ("mul_", lambda t: t.mul_(-2), lambda a: a * -2), ("div_", lambda t: t.div_(4), lambda a: a / 4),
    ("pow_", lambda t: t.pow_(2), lambda a: a**2), ("exp_", lambda t: t.exp_(), np.exp),
    ("log_", lambda t: t.abs_().log_(), lambda a: np.log(np.abs(a))), ("sqrt_", lambda t: t.abs_().sqrt_(), lambda a: np.sqrt(np.abs(a))),
    ("sigmoid_", lambda t: t.sigmoid_(), lambda a: 1 / (1 + np.exp(-a))), ("tanh_", lambda t: t.tanh_(), np.tanh),
    ("relu_", lambda t: t.relu_(), lambda a: np.maximum(a, 0)), ("clamp_", lambda t: t.clamp_(-0.5, 0.5), lambda a: np.clip(a, -0.5, 0.5)),
    ("clamp_min", lambda t: t.clamp_(min=0.1), lambda a: np.maximum(a, 0.1)), ("neg_", lambda t: t.neg_(), np.negative),
    ("floor_", lambda t: t.floor_(), np.floor), ("ceil_", lambda t: t.ceil_(), np.ceil), ("round_", lambda t: t.round_(), np.round),
    ("sign_", lambda t: t.sign_(), np.sign), ("reciprocal_", lambda t: t.reciprocal_(), np.reciprocal),
    ("square_", lambda t: t.square_(), np.square), ("sin_", lambda t: t.sin_(), np.sin), ("cos_", lambda t: t.cos_(), np.cos),
    ("fill_", lambda t: t.fill_(3.5), lambda a: np.full_like(a, 3.5)), ("zero_", lambda t: t.zero_(), np.zeros_like),
    ("copy_", lambda t: t.copy_(sx.tensor([1.0, 2.0, 3.0, 4.0])), lambda a: np.broadcast_to([1.0, 2.0, 3.0, 4.0], a.shape)),
    ("masked_fill_", lambda t: t.masked_fill_(t > 0, 0.0), lambda a: np.where(a > 0, 0.0, a)),
    ("where_", lambda t: t.where_(t < 0, 1.0), lambda a: np.where(a < 0, a, 1.0)),
    ("lerp_", lambda t: t.lerp_(sx.ones(4), 0.25), lambda a: a + 0.25 * (1 - a)),
]


@pytest.mark.parametrize("name,call,ref", NAMED, ids=[n[0] for n in NAMED])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
def test_named_inplace_methods(name, call, ref, layout):
    rng = rng_for(name, layout)
    a = rng.uniform(-2, 2, (3, 4))
    x = make_input(a, "float64", layout)
    before = x._version
    out = call(x)
    assert out is x and x._version > before
    np.testing.assert_allclose(to_np(x), ref(a), rtol=1e-12, atol=1e-12)


def test_copy_converts_dtype_and_broadcasts():
    x = sx.zeros(2, 3, dtype=sx.int32)
    x.copy_(sx.tensor([1.7, -2.2, 3.9]))
    assert x.dtype == sx.int32 and to_np(x).tolist() == [[1, -2, 3], [1, -2, 3]]
    y = sx.zeros(4)
    y.copy_(y.flip(0) + sx.arange(4.0))  # source computed from the destination
    assert to_np(y).tolist() == [0.0, 1.0, 2.0, 3.0]
    z = sx.arange(4.0)
    z[1:].copy_(z[:-1])  # overlapping source and destination
    assert to_np(z).tolist() == [0.0, 0.0, 1.0, 2.0]


@pytest.mark.parity
@pytest.mark.parametrize("name,iop,op,dtype", PARAMS, ids=[f"{p[0]}-{p[3]}" for p in PARAMS])
def test_inplace_operators_match_torch(name, iop, op, dtype, torch):
    rng = rng_for("parity", name, dtype)
    a, b = _operands(dtype, rng)
    tdt = getattr(torch, dtype)
    x, t = sx.tensor(a, dtype=dtype), torch.tensor(a).to(tdt)
    iop(x, sx.tensor(b, dtype=dtype))
    iop(t, torch.tensor(b).to(tdt))
    ref = (t.float() if dtype == "bfloat16" else t).numpy()
    np.testing.assert_allclose(to_np(x).astype(np.float64), ref.astype(np.float64), rtol=1e-6)


UNARY = [name for name, _kind, predicate, *_ in sx._C._unary_ops() if not predicate]


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
def test_every_unary_inplace_form_equals_the_op(threads, name, dtype, layout):
    # Long enough to be split over the pool, with values outside the fast formulas' ranges (the
    # kernels re-read those inputs for an exact second pass) and signed zeros.
    rng = rng_for("unary_", name, dtype, layout)
    a = rng.uniform(-4, 4, (67, 300))
    a.flat[::97] = rng.choice([1e4, -1e4, 90.0, -90.0, 0.0, -0.0, np.inf, -np.inf, np.nan], a.flat[::97].size)
    x = make_input(a, dtype, layout)
    want = to_np(getattr(x, name)())
    before = x._version
    assert getattr(x, name + "_")() is x and x._version > before
    np.testing.assert_array_equal(to_np(x), want)


def test_unary_inplace_leaves_the_rest_of_the_buffer_and_tracks_autograd():
    base = sx.tensor(np.arange(-6.0, 6.0).reshape(3, 4))
    base[:, 1::2].neg_()
    np.testing.assert_array_equal(to_np(base), np.where(np.arange(12).reshape(3, 4) % 2 == 1, -1, 1)
                                  * np.arange(-6.0, 6.0).reshape(3, 4))
    assert str(sx.tensor([-0.0]).abs_().numpy()[0]) == "0.0"  # |-0.0| is +0.0, as in PyTorch
    w = sx.tensor([-1.0, 2.0, -3.0, 4.0], requires_grad=True)
    y = w * 3
    y.relu_()  # a tracked non-leaf: computed from a clone, recorded
    y.sum().backward()
    np.testing.assert_array_equal(to_np(w.grad), [0.0, 3.0, 0.0, 3.0])
    with pytest.raises(RuntimeError, match="leaf"):
        w.relu_()
    with sx.no_grad():
        assert w.relu_() is w  # what optimizers do: written straight into the parameter
    np.testing.assert_array_equal(to_np(w.detach()), [0.0, 2.0, 0.0, 4.0])
    i = sx.arange(5)
    with pytest.raises(TypeError, match=r"\[sqrt_\] result type float32.*int64"):
        i.sqrt_()  # a float result does not go into an integer tensor, as in PyTorch
    assert i.dtype == sx.int64 and to_np(i).tolist() == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
def test_binary_inplace_operands_of_every_kind(threads, layout):
    rng = rng_for("binary_", layout)
    a = rng.uniform(0.5, 2.0, (130, 257))
    b = rng.uniform(0.5, 2.0, (130, 257))
    for call, ref in [
        (lambda x: x.mul_(x), lambda: a * a),  # the operand is the tensor itself
        (lambda x: x.add_(2.5), lambda: a + 2.5),
        (lambda x: x.div_(sx.tensor(b[0])), lambda: a / b[0]),  # broadcast row
        (lambda x: x.sub_(sx.tensor(b[:, :1])), lambda: a - b[:, :1]),  # broadcast column
        (lambda x: x.mul_(sx.tensor(np.round(b * 4)).to(sx.int64)), lambda: a * np.round(b * 4)),  # int operand
        (lambda x: x.pow_(3.0), lambda: a**3),
        (lambda x: x.pow_(sx.tensor(b)), lambda: a**b),
        (lambda x: x.floor_divide_(sx.tensor(b)) if hasattr(x, "floor_divide_") else x.__ifloordiv__(sx.tensor(b)),
         lambda: np.floor_divide(a, b)),
    ]:
        x = make_input(a, "float64", layout)
        before = x._version
        assert call(x) is x and x._version > before
        np.testing.assert_allclose(to_np(x), ref(), rtol=1e-12)


def test_binary_inplace_with_an_overlapping_operand():
    # an operand that shares memory with x in another layout is read before x is written
    a = np.arange(16.0).reshape(4, 4)
    x = sx.tensor(a)
    x.add_(x.T)
    np.testing.assert_array_equal(to_np(x), a + a.T)
    y = sx.tensor(np.arange(8.0))
    y[1:].mul_(y[:-1])
    np.testing.assert_array_equal(to_np(y), np.concatenate([[0.0], np.arange(1.0, 8.0) * np.arange(7.0)]))


# In-place methods that write straight into the tensor (clamp_, lerp_, addcmul_, tril_, scatter_, ...):
# the same object, a version bump, and the bits of the out-of-place op, on every layout, at sizes that
# split across threads; operands that overlap the tensor or need autograd take the general path.
def _fused_cases(m, a, b, c, idx, idx_rows):
    n = a.shape[1]
    return [
        ("clamp_", lambda x: x.clamp_(-0.5, 0.25), lambda x: x.clamp(-0.5, 0.25)),
        ("clip_", lambda x: x.clip_(max=0.25), lambda x: x.clip(max=0.25)),
        ("clamp_min_", lambda x: x.clamp_min_(0.1), lambda x: x.clamp(min=0.1)),
        ("clamp_max_", lambda x: x.clamp_max_(-0.1), lambda x: x.clamp(max=-0.1)),
        ("lerp_", lambda x: x.lerp_(m(b), 0.3), lambda x: x.lerp(m(b), 0.3)),
        ("lerp_tensor", lambda x: x.lerp_(m(b), m(c[:1])), lambda x: x.lerp(m(b), m(c[:1]))),
        ("addcmul_", lambda x: x.addcmul_(m(b), m(c), value=-0.7), lambda x: x + m(b) * m(c) * -0.7),
        ("addcdiv_", lambda x: x.addcdiv_(m(b), m(c[:, :1]), value=0.3), lambda x: x + m(b) / m(c[:, :1]) * 0.3),
        ("tril_", lambda x: x.tril_(3), lambda x: x.tril(3)),
        ("triu_", lambda x: x.triu_(-2), lambda x: x.triu(-2)),
        ("scatter_", lambda x: x.scatter_(1, idx, m(b[:, : n // 2])), lambda x: x.scatter(1, idx, m(b[:, : n // 2]))),
        ("scatter_value", lambda x: x.scatter_(1, idx, 2.5), lambda x: x.scatter(1, idx, 2.5)),
        ("scatter_add_", lambda x: x.scatter_add_(1, idx, m(b[:, : n // 2])),
         lambda x: x.scatter_add(1, idx, m(b[:, : n // 2]))),
        ("index_add_", lambda x: x.index_add_(0, idx_rows, m(b[:90]), alpha=2.0),
         lambda x: x.index_add(0, idx_rows, m(b[:90]), alpha=2.0)),
    ]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
def test_inplace_methods_written_into_the_tensor(threads, dtype, layout):
    rng = rng_for("into", dtype, layout)
    a, b, c = rng.uniform(-2, 2, (130, 257)), rng.uniform(-2, 2, (130, 257)), rng.uniform(0.5, 2, (130, 257))
    idx = sx.tensor(rng.integers(-257, 257, (130, 128)))
    idx_rows = sx.tensor(rng.integers(-130, 130, 90))
    m = lambda v: sx.tensor(v).to(getattr(sx, dtype))  # noqa: E731
    for name, call, ref in _fused_cases(m, a, b, c, idx, idx_rows):
        x = make_input(a, dtype, layout)
        want = to_np(ref(x))
        before = x._version
        assert call(x) is x, name
        assert x._version > before, name
        np.testing.assert_array_equal(to_np(x), want, err_msg=name)


def test_inplace_methods_written_into_the_tensor_match_numpy():
    rng = rng_for("into_numpy")
    a, b, c = rng.uniform(-2, 2, (6, 9)), rng.uniform(-2, 2, (6, 9)), rng.uniform(0.5, 2, (6, 9))
    idx = rng.integers(0, 9, (6, 4))
    x = sx.tensor(a)
    x.addcmul_(sx.tensor(b), sx.tensor(c), value=0.5).addcdiv_(sx.tensor(b), sx.tensor(c), value=-2)
    np.testing.assert_allclose(to_np(x), a + 0.5 * b * c - 2 * b / c, rtol=1e-12)
    x = sx.tensor(a)
    x.lerp_(sx.tensor(b), 0.25).clamp_(-1, 1).tril_(1)
    np.testing.assert_allclose(to_np(x), np.tril(np.clip(a + 0.25 * (b - a), -1, 1), 1), rtol=1e-12)
    x = sx.tensor(a)
    x.scatter_add_(1, sx.tensor(idx), sx.tensor(b[:, :4]))
    want = a.copy()
    for r in range(6):
        for k in range(4):
            want[r, idx[r, k]] += b[r, k]
    np.testing.assert_allclose(to_np(x), want, rtol=1e-12)
    x = sx.tensor(np.zeros((3, 4), np.float32))
    x.index_add_(0, sx.tensor([2, 0, 2]), sx.ones(3, 4), alpha=3)
    np.testing.assert_array_equal(to_np(x), [[3] * 4, [0] * 4, [6] * 4])


def test_inplace_methods_with_overlapping_operands_and_autograd():
    a = np.arange(16.0).reshape(4, 4) / 7
    x = sx.tensor(a)
    x.addcmul_(x, x.T, value=2.0)  # operands that are (views of) x itself: read before any write
    np.testing.assert_allclose(to_np(x), a + 2 * a * a.T, rtol=1e-12)
    x = sx.tensor(a)
    x.lerp_(x.T, 0.5)
    np.testing.assert_allclose(to_np(x), (a + a.T) / 2, rtol=1e-12)
    w = sx.tensor(a, requires_grad=True)
    h = w * 3
    h.clamp_(0.5, 1.5).addcmul_(w, w, value=0.5)  # a tracked tensor: recorded, gradients flow
    h.sum().backward()
    inside = ((3 * a >= 0.5) & (3 * a <= 1.5)).astype(float)
    np.testing.assert_allclose(to_np(w.grad), 3 * inside + a, rtol=1e-12)
    i = sx.tensor(np.arange(12).reshape(3, 4) * 3 - 10)
    assert i.clamp_(-2, 5) is i and to_np(i).tolist() == np.clip(np.arange(12).reshape(3, 4) * 3 - 10, -2, 5).tolist()


def test_failed_inplace_index_ops_leave_the_tensor_alone():
    a = np.arange(12.0).reshape(3, 4)
    for call in (lambda x: x.scatter_add_(1, sx.tensor([[0, 4]] * 3), sx.ones(3, 2)),
                 lambda x: x.scatter_(1, sx.tensor([[0, -5]] * 3), 1.0),
                 lambda x: x.index_add_(0, sx.tensor([0, 3]), sx.ones(2, 4))):
        x = sx.tensor(a)
        with pytest.raises(IndexError, match=r"is out of bounds for dimension"):
            call(x)
        np.testing.assert_array_equal(to_np(x), a)


def test_fill_and_zero_cut_the_gradient_of_what_they_overwrite():
    a = np.arange(1.0, 10.0).reshape(3, 3)
    for write, mask in [(lambda y: y.fill_(0.5), np.ones((3, 3))), (lambda y: y.zero_(), np.ones((3, 3))),
                        (lambda y: y[1].fill_(4.0), np.eye(3)[1][:, None] * np.ones(3)),
                        (lambda y: y[:, 2].zero_(), np.eye(3)[2] * np.ones((3, 1))),
                        (lambda y: y.diagonal().fill_(-1.0), np.eye(3))]:
        leaf = sx.tensor(a, requires_grad=True)
        y = leaf * 2.0
        write(y)
        (y * y).sum().backward()
        expect = np.where(mask > 0, 0.0, 8.0 * a)  # d(4 a^2)/da where kept, 0 where overwritten
        # Overwritten whole, y keeps no path to the leaf: its grad stays None (PyTorch's: zeros).
        got = leaf.grad.numpy() if leaf.grad is not None else np.zeros_like(a)
        np.testing.assert_allclose(got, expect, rtol=1e-12)
    leaf = sx.tensor(a, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad"):
        leaf.fill_(1.0)
    with sx.no_grad():
        leaf.fill_(1.0)
    assert leaf.tolist() == [[1.0] * 3] * 3
