"""Property tests (Hypothesis): broadcasting, type promotion, views and indexing against NumPy
(and against PyTorch under ``-m parity``)."""

from __future__ import annotations

import numpy as np
import pytest
import sneppx_core as sx

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


def arr(t):
    t = t.detach()
    return np.array(t.float().numpy() if t.dtype == sx.bfloat16 else t.numpy())


# ---------------------------------------------------------------- broadcasting
@given(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, max_side=4),
       st.sampled_from(["add", "mul", "sub", "maximum", "lt", "where"]))
def test_broadcasting_matches_numpy(shapes, op):
    rng = np.random.default_rng(0)
    (sa, sb), result = shapes.input_shapes, shapes.result_shape
    a, b = rng.integers(-3, 4, sa).astype(np.float32), rng.integers(-3, 4, sb).astype(np.float32)
    x, y = sx.tensor(a), sx.tensor(b)
    if op == "where":
        out, ref = sx.where(x > 0, x, y), np.where(a > 0, a, b)
    else:
        out, ref = getattr(sx, op)(x, y), {"add": np.add, "mul": np.multiply, "sub": np.subtract,
                                          "maximum": np.maximum, "lt": np.less}[op](a, b)
    assert out.shape == tuple(result)
    np.testing.assert_array_equal(arr(out), ref)


@given(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=1, max_dims=3, max_side=4))
def test_broadcast_gradients_have_operand_shapes(shapes):
    sa, sb = shapes.input_shapes
    x = sx.ones(*sa, dtype=sx.float64, requires_grad=True)
    y = sx.ones(*sb, dtype=sx.float64, requires_grad=True)
    (x * y * 2).sum().backward()
    n = int(np.prod(shapes.result_shape))
    assert x.grad.shape == tuple(sa) and y.grad.shape == tuple(sb)
    assert arr(x.grad).sum() == 2 * n and arr(y.grad).sum() == 2 * n


@given(st.lists(st.integers(2, 4), min_size=1, max_size=3), st.data())
def test_incompatible_shapes_raise_value_error(shape, data):
    other = list(shape)
    k = data.draw(st.integers(0, len(shape) - 1))
    other[k] = shape[k] + 1
    with pytest.raises(ValueError, match=r"\[add\].*cannot be broadcast"):
        sx.zeros(*shape) + sx.zeros(*other)


# ---------------------------------------------------------------- type promotion
ORDER = {d: i for i, d in enumerate(DTYPES)}


def _cat(d):
    return 0 if d == "bool" else (2 if d in ("float16", "bfloat16", "float32", "float64") else 1)


def _promote(a, b):
    if a is None:
        return b
    if b is None:
        return a
    if {a, b} == {"float16", "bfloat16"}:
        return "float32"
    if {a, b} == {"uint8", "int8"}:
        return "int16"
    return a if ORDER[a] >= ORDER[b] else b


def _combine(higher, lower):
    """PyTorch's combine_categories: a higher-priority group wins unless the lower one is a higher category."""
    if higher is None:
        return lower
    if lower is None or _cat(higher) == 2:
        return higher
    if higher == "bool" or _cat(lower) == 2:
        return _promote(higher, lower)
    return higher


def expected_result_type(operands):
    """PyTorch's result_type for (kind, dtype) operands: dimensioned tensors outrank 0-d tensors,
    which outrank Python numbers (whose dtypes are bool, int64 and the default float32)."""
    groups = {"dim": None, "zero": None, "scalar": None}
    for kind, dt in operands:
        groups[kind] = _promote(groups[kind], dt)
    return _combine(groups["dim"], _combine(groups["zero"], groups["scalar"]))


SCALARS = {"bool": True, "int64": 3, "float32": 2.5}
operand = st.one_of(
    st.tuples(st.just("dim"), st.sampled_from(DTYPES)),
    st.tuples(st.just("zero"), st.sampled_from(DTYPES)),
    st.tuples(st.just("scalar"), st.sampled_from(sorted(SCALARS))),
)


def _make(kind, dt):
    if kind == "scalar":
        return SCALARS[dt]
    return sx.ones(2, 3, dtype=dt) if kind == "dim" else sx.ones((), dtype=dt)


@given(operand, operand)
def test_type_promotion_table(a, b):
    assume(not (a[0] == "scalar" and b[0] == "scalar"))
    want = expected_result_type([a, b])
    x, y = _make(*a), _make(*b)
    assert (x + y).dtype == want
    assert (x * y).dtype == want
    assert sx.result_type(x, y) == want
    assert (x == y).dtype == sx.bool
    div_want = want if _cat(want) == 2 else "float32"
    assert (x / y).dtype == div_want


@pytest.mark.parity
@given(operand, operand)
def test_type_promotion_matches_torch(a, b):
    torch = pytest.importorskip("torch")
    assume(not (a[0] == "scalar" and b[0] == "scalar"))

    def tmake(kind, dt):
        if kind == "scalar":
            return SCALARS[dt]
        return torch.ones((2, 3) if kind == "dim" else (), dtype=getattr(torch, dt))

    want = str(torch.result_type(tmake(*a), tmake(*b))).replace("torch.", "")
    assert (_make(*a) + _make(*b)).dtype == want
    assert expected_result_type([a, b]) == want


def test_promotion_examples():
    assert (sx.ones(2, dtype=sx.int32) + sx.tensor(5)).dtype == sx.int32  # 0-d int64 does not widen
    assert (sx.ones(2, dtype=sx.int32) + sx.tensor(2.5, dtype=sx.float64)).dtype == sx.float64
    assert (sx.ones(2, dtype=sx.float16) + sx.tensor(2.5, dtype=sx.float64)).dtype == sx.float16
    assert (sx.ones(2, dtype=sx.float16) + sx.ones(2, dtype=sx.bfloat16)).dtype == sx.float32
    assert (sx.ones(2, dtype=sx.uint8) + 300).dtype == sx.uint8
    assert (sx.ones(2, dtype=sx.bool) + 1).dtype == sx.int64
    assert (sx.ones(2, dtype=sx.int64) * 1.5).dtype == sx.float32


# ---------------------------------------------------------------- views
@st.composite
def view_chain(draw):
    """(shape, ops): a chain of view ops, each valid for the shape the previous ones produce."""
    start_shape = draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=5))
    shape = list(start_shape)
    ops = []
    for _ in range(draw(st.integers(1, 4))):
        nd = len(shape)
        kind = draw(st.sampled_from(["transpose", "permute", "slice", "unsqueeze", "squeeze", "select", "narrow", "T"]))
        if kind == "transpose" and nd >= 1:
            ops.append(("transpose", draw(st.integers(-nd, nd - 1)), draw(st.integers(-nd, nd - 1))))
            i, j = ops[-1][1] % nd, ops[-1][2] % nd
            shape[i], shape[j] = shape[j], shape[i]
        elif kind == "permute" and nd >= 1:
            perm = draw(st.permutations(range(nd)))
            ops.append(("permute", tuple(perm)))
            shape = [shape[p] for p in perm]
        elif kind == "slice" and nd >= 1:
            d = draw(st.integers(0, nd - 1))
            n = shape[d]
            start, stop, step = draw(st.integers(-n, n)), draw(st.integers(-n, n + 1)), draw(st.integers(1, 3))
            ops.append(("slice", d, start, stop, step))
            shape[d] = len(range(*slice(start, stop, step).indices(n)))
        elif kind == "unsqueeze":
            d = draw(st.integers(0, nd))
            ops.append(("unsqueeze", d))
            shape.insert(d, 1)
        elif kind == "squeeze" and 1 in shape:
            d = shape.index(1)
            ops.append(("squeeze", d))
            shape.pop(d)
        elif kind == "select" and nd >= 2:
            d = draw(st.integers(0, nd - 1))
            if shape[d] > 0:
                i = draw(st.integers(-shape[d], shape[d] - 1))
                ops.append(("select", d, i))
                shape.pop(d)
        elif kind == "narrow" and nd >= 1:
            d = draw(st.integers(0, nd - 1))
            start = draw(st.integers(0, shape[d]))
            length = draw(st.integers(0, shape[d] - start))
            ops.append(("narrow", d, start, length))
            shape[d] = length
        elif kind == "T":
            ops.append(("T",))
            shape = shape[::-1]
    return tuple(start_shape), ops


@given(view_chain())
@settings(max_examples=max(100, settings.default.max_examples))
def test_views_share_storage_with_base(case):
    shape, ops = case
    base_np = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    base = sx.tensor(base_np)
    view, ref = _apply_views(ops, base, base_np)
    assert view.shape == ref.shape
    np.testing.assert_array_equal(arr(view), ref)
    for d, n in enumerate(view.shape):
        if n > 1 and view.numel():
            assert view.stride(d) * 8 == ref.strides[d]
    if view.numel():
        vals = np.arange(view.numel(), dtype=np.float64).reshape(view.shape) + 1000
        view[...] = sx.tensor(vals)
        ref[...] = vals
        np.testing.assert_array_equal(arr(base), base_np)
        view.mul_(2)
        ref *= 2
        np.testing.assert_array_equal(arr(base), base_np)


def _apply_views(ops, x, a):
    for op in ops:
        name, args = op[0], op[1:]
        if name == "transpose":
            x, a = x.transpose(*args), np.swapaxes(a, *args)
        elif name == "permute":
            if len(args[0]) != a.ndim:
                raise ValueError
            x, a = x.permute(*args[0]), a.transpose(args[0])
        elif name == "slice":
            d, start, stop, step = args
            sl = (slice(None),) * d + (slice(start, stop, step),)
            if d >= a.ndim:
                raise IndexError
            x, a = x[sl], a[sl]
        elif name == "unsqueeze":
            if args[0] > a.ndim:
                raise IndexError
            x, a = x.unsqueeze(args[0]), np.expand_dims(a, args[0])
        elif name == "squeeze":
            if args[0] >= a.ndim or a.shape[args[0]] != 1:
                raise ValueError
            x, a = x.squeeze(args[0]), np.squeeze(a, args[0])
        elif name == "select":
            d, i = args
            if d >= a.ndim or not -a.shape[d] <= i < a.shape[d]:
                raise IndexError
            x, a = x.select(d, i), a[(slice(None),) * d + (i,)]
        elif name == "narrow":
            d, start, length = args
            if d >= a.ndim or start + length > a.shape[d]:
                raise IndexError
            x, a = x.narrow(d, start, length), a[(slice(None),) * d + (slice(start, start + length),)]
        elif name == "T":
            x, a = x.T, a.T
    return x, a


@given(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=4), st.data())
def test_reshape_and_view_of_contiguous_share_storage(shape, data):
    n = int(np.prod(shape))
    new = data.draw(st.sampled_from([(-1,), (n,), (1, n), (n, 1)] + ([(2, -1)] if n % 2 == 0 else [])))
    base_np = np.zeros(shape)
    base = sx.tensor(base_np)
    for v in (base.view(*new), base.reshape(new), base.flatten(), base.unsqueeze(0).squeeze(0)):
        v.add_(1)
    assert (arr(base) == 4).all()


def test_view_of_non_viewable_raises_and_reshape_copies():
    x = sx.arange(6.0).reshape(2, 3)
    with pytest.raises(RuntimeError, match="view"):
        x.T.view(-1)
    r = x.T.reshape(-1)
    r[0] = 100
    assert x[0, 0].item() == 0
    np.testing.assert_array_equal(arr(r)[1:], np.arange(6.0).reshape(2, 3).T.reshape(-1)[1:])


def test_expand_is_a_stride_zero_view():
    x = sx.tensor([[1.0], [2.0]])
    e = x.expand(2, 3)
    assert e.stride() == (1, 0)
    with sx.no_grad():
        x[1, 0] = 5
    np.testing.assert_array_equal(arr(e), [[1, 1, 1], [5, 5, 5]])


# ---------------------------------------------------------------- indexing
@st.composite
def index_case(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=5))
    arr_shape = draw(hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=3))
    items, dim, mask_used, ell_used = [], 0, False, False
    for _ in range(draw(st.integers(1, len(shape) + 2))):
        kinds = ["int", "slice", "slice", "none", "intarr"]
        if not ell_used:
            kinds.append("ellipsis")
        if not mask_used:
            kinds.append("mask")
        kind = draw(st.sampled_from(kinds))
        if kind == "none":
            items.append(None)
            continue
        if kind == "ellipsis":
            items.append(Ellipsis)
            ell_used = True
            tail = draw(st.integers(0, len(shape) - dim))
            dim = len(shape) - tail
            continue
        if dim >= len(shape):
            break
        n = shape[dim]
        if kind == "int":
            items.append(draw(st.integers(-n, n - 1)))
            dim += 1
        elif kind == "slice":
            items.append(slice(draw(st.none() | st.integers(-n - 1, n + 1)), draw(st.none() | st.integers(-n - 1, n + 1)),
                               draw(st.none() | st.integers(1, 3))))
            dim += 1
        elif kind == "intarr":
            items.append(draw(hnp.arrays(np.int64, arr_shape, elements=st.integers(-n, n - 1))))
            dim += 1
        elif kind == "mask":
            k = draw(st.integers(1, min(2, len(shape) - dim)))
            items.append(draw(hnp.arrays(np.bool_, shape[dim:dim + k])))
            mask_used, dim = True, dim + k
    as_list = draw(st.booleans())
    return shape, tuple(items), as_list


def _to_sx(item, as_list):
    if isinstance(item, np.ndarray):
        if as_list and item.ndim == 1:
            return item.tolist()
        return sx.tensor(item)
    return item


def _torch_style(a, idx):
    """NumPy reference for PyTorch's rule: integers select first (as basic indexing), then the
    remaining advanced indices apply to the result with NumPy's placement rules."""
    # An Ellipsis stands for the dims the other items leave; spelled out as slices, it separates two
    # advanced indices only when it covers at least one dim (PyTorch's rule; NumPy always separates).
    used = sum(it.ndim if isinstance(it, np.ndarray) and it.dtype == bool else 1
               for it in idx if it is not None and it is not Ellipsis)
    expanded = []
    for it in idx:
        expanded.extend([slice(None)] * (a.ndim - used) if it is Ellipsis else [it])
    first, rest = [], []
    for it in expanded:
        if isinstance(it, int):
            first.append(it)
        elif it is None:
            rest.append(None)
        elif it is Ellipsis:
            first.append(Ellipsis)
            rest.append(Ellipsis)
        else:
            k = it.ndim if isinstance(it, np.ndarray) and it.dtype == bool else 1
            first.extend([slice(None)] * k)
            rest.append(it)
    return tuple(first), tuple(rest)


def _reference_get(a, idx):
    first, rest = _torch_style(a, idx)
    return np.asarray(a[first])[rest]


@given(index_case())
@settings(max_examples=max(150, settings.default.max_examples))
def test_getitem_matches_numpy(case):
    shape, idx, as_list = case
    a = np.arange(int(np.prod(shape))).reshape(shape)
    x = sx.tensor(a)
    sidx = tuple(_to_sx(i, as_list) for i in idx)
    try:
        ref = _reference_get(a, idx)
    except IndexError:
        with pytest.raises(IndexError):
            x[sidx]
        return
    out = x[sidx]
    assert out.shape == ref.shape
    np.testing.assert_array_equal(arr(out), ref)


@given(index_case(), st.booleans())
@settings(max_examples=max(100, settings.default.max_examples))
def test_setitem_matches_numpy(case, scalar_value):
    shape, idx, as_list = case
    a = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    x = sx.tensor(a)
    sidx = tuple(_to_sx(i, as_list) for i in idx)
    first, rest = _torch_style(a, idx)
    try:
        target_shape = np.asarray(a[first])[rest].shape
    except IndexError:
        return
    value = -7.0 if scalar_value else -np.arange(int(np.prod(target_shape)), dtype=np.float64).reshape(target_shape) - 1
    if isinstance(a[first], np.ndarray):
        a[first][rest] = value  # a[first] is a view (basic indexing only)
    else:  # every consumed dim was an integer: rest only adds size-1 dims (None)
        a[first] = value if scalar_value else value.reshape(())
    x[sidx] = value if scalar_value else sx.tensor(value)
    np.testing.assert_array_equal(arr(x), a)


@pytest.mark.parity
@given(index_case())
@settings(max_examples=max(100, settings.default.max_examples))
def test_getitem_matches_torch(case):
    torch = pytest.importorskip("torch")
    shape, idx, as_list = case
    a = np.arange(int(np.prod(shape))).reshape(shape)
    tidx = tuple(torch.from_numpy(i) if isinstance(i, np.ndarray) else i for i in idx)
    try:
        ref = torch.from_numpy(a)[tidx].numpy()
    except (IndexError, RuntimeError):
        return
    out = sx.tensor(a)[tuple(_to_sx(i, as_list) for i in idx)]
    np.testing.assert_array_equal(arr(out), ref)


@pytest.mark.parametrize(
    "idx",
    [(1,), (-1,), (slice(None, None, 2),), (None, 0), (Ellipsis, 1), (0, Ellipsis, None), ([0, 2],),
     (slice(None), [1, 0, 1]), ([[0], [1]], [0, 2]), (1, [0, 2], slice(1, None)), ([0, 1], 1, [1, 2])],
)
def test_indexing_examples(idx):
    a = np.arange(60).reshape(3, 4, 5)
    x = sx.tensor(a)
    ref = _reference_get(a, tuple(np.array(i) if isinstance(i, list) else i for i in idx))
    np.testing.assert_array_equal(arr(x[idx if len(idx) > 1 else idx[0]]), ref)


def test_indexing_errors():
    x = sx.arange(12).reshape(3, 4)
    for idx, exc in [((0, 5), IndexError), ((3,), IndexError), ((-4,), IndexError), ((0, 0, 0), IndexError),
                     ((Ellipsis, Ellipsis), IndexError), ((1.5,), IndexError), (("a",), IndexError),
                     ((sx.tensor([1.0]),), IndexError), ((sx.tensor([5]),), IndexError),
                     (([0, 1], [0, 1, 2]), IndexError), ((slice(None, None, -1),), ValueError),
                     ((sx.tensor([True, False]),), IndexError)]:
        with pytest.raises(exc, match=r"\[index\]|\[select\]|index"):
            x[idx]
    with pytest.raises(IndexError):
        x[5] = 1
    with pytest.raises(ValueError, match="setitem"):
        x[0] = sx.ones(3)


def test_index_with_int_tensor_grad_accumulates_duplicates():
    x = sx.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x[sx.tensor([0, 0, 2])].sum().backward()
    np.testing.assert_array_equal(arr(x.grad), [2.0, 0.0, 1.0])


def test_bool_mask_indexing_grad():
    x = sx.tensor([[1.0, -2.0], [3.0, -4.0]], requires_grad=True)
    (x[x > 0] * 3).sum().backward()
    np.testing.assert_array_equal(arr(x.grad), [[3.0, 0.0], [3.0, 0.0]])


def test_setitem_on_non_leaf_is_differentiable():
    x = sx.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    y[1] = 0.0
    y.sum().backward()
    np.testing.assert_array_equal(arr(x.grad), [2.0, 0.0, 2.0])


def test_setitem_with_value_requiring_grad_on_basic_index():
    x = sx.zeros(3, dtype=sx.float64)
    v = sx.tensor(2.0, dtype=sx.float64, requires_grad=True)
    y = x * 1
    y[1:] = v * 3
    y.sum().backward()
    assert v.grad.item() == 6.0
