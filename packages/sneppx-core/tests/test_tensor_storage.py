"""Storage-level Tensor methods: resize_, resize_as_, set_, is_set_to, untyped_storage, storage, storage_type,
is_shared and as_subclass (against NumPy / hand-computed values, and against PyTorch under the parity marker)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import sneppx_core as sx

pytestmark = pytest.mark.skipif(sx._BACKEND != "c", reason="storage methods need the C backend")


def _np(t):
    return np.asarray(t.detach().numpy())


def _geom(t):
    return tuple(t.shape), tuple(t.stride()), t.storage_offset()


class Sub(sx.Tensor):
    """A Python subclass of Tensor (its __init__ must not run in as_subclass)."""

    def __init__(self, *args, **kwargs):
        raise AssertionError("as_subclass must not call __init__")


# ---------------------------------------------------------------- resize_ / resize_as_
def test_resize_shrink_keeps_the_storage_and_aliases():
    a = sx.arange(6.0)
    view = a[:]
    v0 = a._version
    assert a.resize_(2, 2) is a
    assert _geom(a) == ((2, 2), (2, 1), 0)
    np.testing.assert_array_equal(_np(a), [[0, 1], [2, 3]])
    view[0] = 100.0
    assert a[0, 0].item() == 100.0  # same storage: the old view still aliases
    assert a.untyped_storage().nbytes() == 24  # the storage is not shrunk
    assert a._version == v0 + 2  # the resize and the write


def test_resize_uses_storage_order_from_the_offset():
    t = sx.arange(6.0).view(2, 3).t()
    t.resize_(6)
    np.testing.assert_array_equal(_np(t), np.arange(6.0))  # storage order, not t's logical order
    s = sx.arange(8.0)[3:5]
    s.resize_(2, 2)
    assert _geom(s) == ((2, 2), (2, 1), 3)
    np.testing.assert_array_equal(_np(s), [[3, 4], [5, 6]])


def test_resize_grow_copies_the_storage_and_zeroes_the_rest():
    base = sx.arange(6.0)
    t = base[2:]
    t.resize_(7)
    assert _geom(t) == ((7,), (1,), 2)
    np.testing.assert_array_equal(_np(t), [2, 3, 4, 5, 0, 0, 0])
    assert t.untyped_storage().nbytes() == 9 * 4  # offset + numel elements, as PyTorch sizes it
    assert t.untyped_storage().tolist()[:8] == list(np.arange(2.0, dtype=np.float32).tobytes())
    t[0] = -1.0  # SneppX: a grown tensor has a new storage; the old views keep the old one
    assert base[2].item() == 2.0


def test_resize_same_size_changes_nothing():
    t = sx.arange(6.0).view(2, 3).t()
    v0 = t._version
    t.resize_(3, 2)
    assert _geom(t) == ((3, 2), (1, 3), 0) and t._version == v0


@pytest.mark.parametrize("args, shape", [((2, 3), (2, 3)), (((2, 3),), (2, 3)), (([6],), (6,)), (((),), ()),
                                         ((0,), (0,)), ((np.int64(4),), (4,))])
def test_resize_size_forms(args, shape):
    t = sx.arange(6.0).resize_(*args)
    assert tuple(t.shape) == shape and t.is_contiguous()


def test_resize_int_and_bool_dtypes_grow_with_zeros():
    t = sx.tensor([True, False, True]).resize_(5)
    assert t.tolist() == [True, False, True, False, False]
    u = sx.tensor([7, 8], dtype=sx.int32).resize_(2, 2)
    assert u.tolist() == [[7, 8], [0, 0]] and u.dtype == sx.int32


def test_resize_as():
    t = sx.arange(6.0)
    assert t.resize_as_(sx.ones(2, 2)) is t and tuple(t.shape) == (2, 2)
    assert sx.resize_as_(t, the_template=sx.ones(3)) is t and tuple(t.shape) == (3,)
    np.testing.assert_array_equal(_np(t), [0, 1, 2])
    with pytest.raises(TypeError, match=r"\[resize_as_\] the_template"):
        t.resize_as_(3)
    with pytest.raises(TypeError, match=r"\[resize_as_\] the_template"):
        sx.resize_as_(t, [3])


def test_resize_errors():
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        sx.ones(2, requires_grad=True).resize_(3)
    with sx.no_grad(), pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        sx.ones(2, requires_grad=True).resize_(3)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        (sx.ones(2, requires_grad=True) * 2).resize_(2)
    with pytest.raises(RuntimeError, match=r"\[resize_\] invalid size"):
        sx.ones(2).resize_(2, -1)
    with pytest.raises(RuntimeError, match=r"\[resize_\] invalid size"):
        sx.ones(2).resize_(2 ** 40, 2 ** 40)
    with pytest.raises(TypeError, match=r"\[resize_\]"):
        sx.ones(2).resize_(2.0)
    with pytest.raises(TypeError, match=r"\[resize_\]"):
        sx.ones(2).resize_(True)
    with pytest.raises(TypeError, match=r"\[resize_\] missing"):
        sx.ones(2).resize_()
    with pytest.raises(NotImplementedError, match=r"\[resize_\] .*memory_format"):
        sx.ones(2).resize_(3, memory_format="channels_last")


def test_resize_read_only_memory_is_refused():
    t = sx.Tensor.from_numpy(np.frombuffer(bytes(16), dtype=np.float32))
    with pytest.raises(RuntimeError, match=r"\[resize_\] cannot change the tensor's size"):
        t.resize_(2)


@pytest.mark.parametrize("new_size", [2, 20, (3, 1)])
def test_resizing_a_saved_tensor_fails_backward(new_size):
    x = sx.ones(3, dtype=sx.float64)
    w = sx.ones(3, dtype=sx.float64, requires_grad=True)
    y = (w * x).sum()
    x.resize_(new_size)
    with pytest.raises(RuntimeError, match=r"\[backward\]"):
        y.backward()


def test_same_size_resize_of_a_saved_tensor_keeps_backward():
    x = sx.tensor([1.0, 2.0, 3.0], dtype=sx.float64)
    w = sx.ones(3, dtype=sx.float64, requires_grad=True)
    y = (w * x).sum()
    x.resize_(3)
    y.backward()
    np.testing.assert_array_equal(_np(w.grad), [1, 2, 3])


# ---------------------------------------------------------------- set_ / is_set_to
def test_set_empty():
    t = sx.arange(4.0)
    assert t.set_() is t
    assert _geom(t) == ((0,), (1,), 0) and t.untyped_storage().nbytes() == 0 and t.dtype == sx.float32


def test_set_to_a_tensor_aliases_it():
    src = sx.arange(12.0).view(3, 4).t()[1:]
    t = sx.zeros(2)
    assert t.set_(src) is t
    assert _geom(t) == _geom(src) and t.is_set_to(src) and src.is_set_to(t)
    src[0, 0] = 42.0
    expect = np.arange(12.0).reshape(3, 4).T[1:].copy()
    expect[0, 0] = 42.0
    np.testing.assert_array_equal(_np(t), expect)


def test_set_with_geometry_matches_numpy_strides():
    base = np.arange(10.0)
    src = sx.tensor(base)
    t = sx.zeros(1, dtype=sx.float64).set_(src, 1, (3, 2), (2, 3))
    expect = np.lib.stride_tricks.as_strided(base[1:], (3, 2), (16, 24))
    np.testing.assert_array_equal(_np(t), expect)
    assert _geom(t) == ((3, 2), (2, 3), 1)
    u = sx.zeros(1, dtype=sx.float64).set_(source=src, storage_offset=4, size=(2, 3))  # contiguous strides
    np.testing.assert_array_equal(_np(u), base[4:10].reshape(2, 3))
    t[0, 0] = -5.0
    assert src[1].item() == -5.0


def test_set_to_a_storage():
    src = sx.arange(6.0)
    t = sx.zeros(2).set_(src[2:].untyped_storage())
    assert _geom(t) == ((6,), (1,), 0) and t.tolist() == [0, 1, 2, 3, 4, 5]
    with pytest.warns(UserWarning):
        typed = src.storage()
    t2 = sx.zeros(2).set_(typed, 1, (2,), (2,))
    assert t2.tolist() == [1.0, 3.0]
    with pytest.raises(NotImplementedError, match=r"\[set_\] .*reinterpret"):
        sx.zeros(2, dtype=sx.int32).set_(src.untyped_storage())


def test_set_errors():
    src = sx.arange(6.0)
    with pytest.raises(RuntimeError, match=r"\[set_\] Could not set tensor of type float64"):
        sx.zeros(2).set_(src.double())
    with pytest.raises(RuntimeError, match=r"\[set_\] .*storage holds 6.*cannot grow"):  # PyTorch grows it
        sx.zeros(2).set_(src, 0, (10,), (1,))
    with pytest.raises(RuntimeError, match=r"\[set_\] invalid storage offset -1"):
        sx.zeros(2).set_(src, -1, (2,), (1,))
    with pytest.raises(RuntimeError, match=r"\[set_\] unequal size length"):
        sx.zeros(2).set_(src, 0, (2,), (1, 2))
    with pytest.raises(RuntimeError, match=r"\[set_\] invalid size"):
        sx.zeros(2).set_(src, 0, (2, -1))
    with pytest.raises(RuntimeError, match=r"\[set_\] negative strides"):
        sx.zeros(2).set_(src, 0, (2, 2), (-1, 1))
    with pytest.raises(TypeError, match=r"\[set_\] pass size"):
        sx.zeros(2).set_(src, 1)
    with pytest.raises(TypeError, match=r"\[set_\] source"):
        sx.zeros(2).set_(3)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        sx.zeros(2, requires_grad=True).set_(src)
    with pytest.raises(RuntimeError, match=r"\[set_\] is not differentiable"):
        sx.zeros(2).set_(sx.ones(3, requires_grad=True))
    with sx.no_grad():
        leaf = sx.zeros(2, requires_grad=True).set_(src)
    assert leaf.requires_grad and leaf.tolist() == src.tolist()


def test_set_of_a_saved_tensor_fails_backward():
    x = sx.ones(3, dtype=sx.float64)
    w = sx.ones(3, dtype=sx.float64, requires_grad=True)
    y = (w * x).sum()
    x.set_(sx.ones(3, dtype=sx.float64))
    with pytest.raises(RuntimeError, match=r"\[backward\].*new data"):
        y.backward()


def test_is_set_to():
    a = sx.arange(6.0)
    assert a.is_set_to(a) and a[:].is_set_to(a)
    assert not a.view(2, 3).is_set_to(a) and not a[1:].is_set_to(a) and not a.clone().is_set_to(a)
    assert not sx.empty(0).is_set_to(sx.empty(0))
    with pytest.raises(TypeError, match=r"\[is_set_to\] tensor"):
        a.is_set_to(3)


# ---------------------------------------------------------------- storages
@pytest.mark.parametrize("dtype, npdtype", [(sx.float32, np.float32), (sx.float64, np.float64),
                                            (sx.int64, np.int64), (sx.int32, np.int32), (sx.uint8, np.uint8),
                                            (sx.bool_, np.bool_), (sx.float16, np.float16)])
def test_untyped_storage_bytes(dtype, npdtype):
    values = np.array([0, 1, 3, 0, 7, 2]).astype(npdtype)
    t = sx.tensor(values, dtype=dtype)
    s = t[1:3].untyped_storage()
    assert s.nbytes() == s.size() == len(s) == values.nbytes
    assert s.tolist() == list(values.tobytes())
    assert s.element_size() == 1 and s.device == t.device and s.dtype == sx.uint8
    assert s.data_ptr() == t.data_ptr() and not s.is_shared()


def test_untyped_storage_identity():
    a = sx.randn(4, 5)
    views = [a[1:], a.t(), a.view(20), a[:, 2], a.unsqueeze(0)]
    for v in views:
        assert v.untyped_storage().data_ptr() == a.untyped_storage().data_ptr()
        assert v.untyped_storage() == a.untyped_storage()
        assert hash(v.untyped_storage()) == hash(a.untyped_storage())
    other = a.clone()
    assert other.untyped_storage().data_ptr() != a.untyped_storage().data_ptr()
    assert other.untyped_storage() != a.untyped_storage()
    assert sx.is_storage(a.untyped_storage()) and not sx.is_storage(a)


def test_storage_keeps_the_memory_alive():
    s = sx.arange(4.0)[1:].untyped_storage()  # the tensor is gone; the storage holds the memory
    assert s.tolist() == list(np.arange(4.0, dtype=np.float32).tobytes())


def test_bfloat16_storage_bytes():
    t = sx.tensor([1.0, -2.0], dtype=sx.bfloat16)
    assert t.untyped_storage().tolist() == [0x80, 0x3F, 0x00, 0xC0]  # 1.0 = 0x3F80, -2.0 = 0xC000


def test_new_untyped_storage():
    s = sx._tensor_storage.UntypedStorage(5)
    assert s.nbytes() == 5 and s.tolist() == [0] * 5


def test_typed_storage_and_storage_type():
    t = sx.arange(6, dtype=sx.int32)[2:4]
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        s = t.storage()
    assert s.dtype == sx.int32 and s.size() == len(s) == 6 and s.element_size() == 4 and s.nbytes() == 24
    assert s.tolist() == [0, 1, 2, 3, 4, 5] and s.data_ptr() == t.data_ptr() - 8 and not s.is_shared()
    assert s.untyped() == t.untyped_storage() and sx.is_storage(s)
    with pytest.warns(UserWarning):
        cls = t.storage_type()
    assert cls.__name__ == "IntStorage" and cls.dtype == sx.int32 and issubclass(cls, type(s))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        names = {d: sx.ones(1, dtype=d).storage_type().__name__ for d in (sx.float32, sx.float64, sx.bool_)}
        assert sx.ones(1).storage_type() is sx.ones(2).storage_type()
    assert names == {sx.float32: "FloatStorage", sx.float64: "DoubleStorage", sx.bool_: "BoolStorage"}


def test_is_shared_is_false():
    assert sx.ones(3).is_shared() is False


# ---------------------------------------------------------------- as_subclass
def test_as_subclass_wraps_the_same_memory():
    t = sx.arange(12.0).view(3, 4).t()
    s = t.as_subclass(Sub)
    assert type(s) is Sub and isinstance(s, sx.Tensor)
    assert _geom(s) == _geom(t) and s.data_ptr() == t.data_ptr() and s.dtype == t.dtype and s.is_set_to(t)
    s[0, 0] = -1.0
    assert t[0, 0].item() == -1.0 and s._version == t._version
    plain = t.as_subclass(sx.Tensor)
    assert type(plain) is sx.Tensor and plain is not t and plain.is_set_to(t)


def test_as_subclass_errors_and_autograd():
    for cls in (int, object, 3):
        with pytest.raises(TypeError, match="does not inherit from Tensor"):
            sx.ones(2).as_subclass(cls)
    x = sx.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"\[as_subclass\] .*autograd"):
        x.as_subclass(Sub)
    with sx.no_grad():
        s = x.as_subclass(Sub)
    assert type(s) is Sub and not s.requires_grad and s.data_ptr() == x.data_ptr()


# ---------------------------------------------------------------- parity with PyTorch
def _resize_cases(L):
    return [
        (lambda: L.arange(6.0), (2, 2)),
        (lambda: L.arange(6.0).view(2, 3).t(), (6,)),
        (lambda: L.arange(6.0).view(2, 3).t(), (2, 3)),
        (lambda: L.arange(6.0).view(2, 3).t(), (3, 2)),
        (lambda: L.arange(8.0)[3:5], (2, 2)),
        (lambda: L.arange(6.0).view(2, 3)[:, :2], (2, 2)),
        (lambda: L.arange(6.0).view(2, 3)[:, :2], (4,)),
        (lambda: L.arange(6.0), ()),
        (lambda: L.arange(6.0), (0, 3)),
        (lambda: L.arange(6.0)[2:], (9,)),
        (lambda: L.arange(3.0).expand(2, 3), (3,)),
    ]


@pytest.mark.parity
@pytest.mark.parametrize("case", range(11))
def test_resize_parity(torch, case):
    make_s, size = _resize_cases(sx)[case]
    make_t, _ = _resize_cases(torch)[case]
    s, t = make_s(), make_t()
    sv, tv = s._version, t._version
    s.resize_(size)
    t.resize_(size)
    assert _geom(s) == (tuple(t.shape), t.stride(), t.storage_offset())
    assert s._version - sv == t._version - tv
    assert s.untyped_storage().nbytes() == t.untyped_storage().nbytes()
    kept = min(s.numel(), 6 - s.storage_offset())  # PyTorch's new elements are uninitialised
    np.testing.assert_array_equal(_np(s).reshape(-1)[:kept], t.numpy().reshape(-1)[:kept])


@pytest.mark.parity
def test_resize_errors_parity(torch):
    for L in (sx, torch):
        with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
            L.ones(2, requires_grad=True).resize_(3)
        with pytest.raises(RuntimeError):
            L.ones(2).resize_(2, -1)
        with pytest.raises(TypeError):
            L.ones(2).resize_(2.0)
        with pytest.raises(TypeError):
            L.ones(2).resize_as_(3)
        x, w = L.ones(3), L.ones(3, requires_grad=True)
        y = (w * x).sum()
        x.resize_(2)
        with pytest.raises(RuntimeError):
            y.backward()


@pytest.mark.parity
def test_set_parity(torch):
    def run(L):
        src = L.arange(10.0)
        forms = [L.zeros(2).set_(), L.zeros(2).set_(src[3:].view(7, 1).t()), L.zeros(2).set_(src, 1, (3, 2), (2, 3)),
                 L.zeros(2).set_(src, 4, (2, 3)), L.zeros(2).set_(src.untyped_storage()),
                 L.zeros(2).set_(src[2:].untyped_storage(), 1, (2,), (2,))]
        return [(_geom(f), f.tolist(), f.untyped_storage().data_ptr() == src.untyped_storage().data_ptr())
                for f in forms]

    ours, theirs = run(sx), run(torch)
    assert ours[1:] == theirs[1:]
    assert ours[0][:2] == theirs[0][:2] and not ours[0][2]


@pytest.mark.parity
def test_set_errors_parity(torch):
    for L in (sx, torch):
        src = L.arange(6.0)
        with pytest.raises(RuntimeError):
            L.zeros(2, dtype=L.float64).set_(src)
        with pytest.raises(RuntimeError):
            L.zeros(2).set_(src, -1, (2,), (1,))
        with pytest.raises(RuntimeError):
            L.zeros(2).set_(src, 0, (2,), (1, 2))
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            L.zeros(2, requires_grad=True).set_(src)
        with pytest.raises(TypeError):
            L.zeros(2).set_(3)
        with pytest.raises(TypeError):
            L.zeros(2).set_(src, 1)


@pytest.mark.parity
def test_storage_parity(torch):
    for name in ("float32", "float64", "int64", "int32", "uint8", "bool", "float16", "bfloat16"):
        data = [0, 1, 0, 3, 5, 1]
        s, t = sx.tensor(data, dtype=getattr(sx, name)), torch.tensor(data, dtype=getattr(torch, name))
        for view in (lambda x: x, lambda x: x[2:], lambda x: x.view(2, 3).t(), lambda x: x[::2]):
            us, ut = view(s).untyped_storage(), view(t).untyped_storage()
            assert (us.nbytes(), us.size(), len(us), us.element_size()) == (ut.nbytes(), ut.size(), len(ut), 1)
            assert us.tolist() == ut.tolist(), name
            assert (us.data_ptr() == s.data_ptr()) and (ut.data_ptr() == t.data_ptr())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ts, tt = s[1:].storage(), t[1:].storage()
            assert (ts.size(), len(ts), ts.element_size(), ts.nbytes()) == (tt.size(), len(tt), tt.element_size(),
                                                                           tt.nbytes())
            assert ts.tolist() == tt.tolist() and ts.untyped().nbytes() == tt.untyped().nbytes()
            assert s.storage_type().__name__ == t.storage_type().__name__
        assert s.is_shared() == t.is_shared() is False
        assert sx.is_storage(s.untyped_storage()) == torch.is_storage(t.untyped_storage()) is True


@pytest.mark.parity
def test_aliasing_and_is_set_to_parity(torch):
    def run(L):
        a = L.arange(12.0).view(3, 4)
        others = [a[1:], a.t(), a.reshape(12), a.clone(), a[:, 1], a.contiguous(), a.view(4, 3), a[:]]
        same = [o.untyped_storage().data_ptr() == a.untyped_storage().data_ptr() for o in others]
        return same, [o.is_set_to(a) for o in others], [a.is_set_to(o) for o in others]

    assert run(sx) == run(torch)


@pytest.mark.parity
def test_as_subclass_parity(torch):
    class TSub(torch.Tensor):
        pass

    s, t = sx.arange(12.0).view(3, 4).t(), torch.arange(12.0).view(3, 4).t()
    ss, tt = s.as_subclass(Sub), t.as_subclass(TSub)
    assert _geom(ss) == (tuple(tt.shape), tt.stride(), tt.storage_offset())
    assert (ss.data_ptr() == s.data_ptr()) == (tt.data_ptr() == t.data_ptr()) is True
    assert ss.tolist() == tt.tolist()
    for L, cls in ((sx, int), (torch, int)):
        with pytest.raises(TypeError, match="does not inherit from Tensor"):
            L.ones(2).as_subclass(cls)


# ---------------------------------------------------------------------------------------------------------------
# view(dtype): the bytes reinterpreted (NumPy's ndarray.view is the reference)


@pytest.mark.parametrize("src, dst", [("float32", "int32"), ("float32", "uint8"), ("float64", "float32"),
                                      ("int64", "float64"), ("uint8", "float32"), ("float32", "float16"),
                                      ("int32", "bfloat16"), ("float16", "int64")])
def test_view_dtype_reinterprets_bytes(src, dst):
    base = np.arange(48, dtype=np.float64).reshape(3, 16).astype(src)
    x = sx.tensor(base)
    v = x.view(getattr(sx, dst))
    assert v.dtype == getattr(sx, dst)
    want = base.view(np.uint16) if dst == "bfloat16" else base.view(dst)
    if dst == "bfloat16":  # NumPy has no bfloat16: compare the bits through the uint8 view of both
        assert v.shape == want.shape
        np.testing.assert_array_equal(v.view(sx.uint8).numpy(), base.view(np.uint8))
    else:
        np.testing.assert_array_equal(v.numpy(), want)
    # it shares the storage: writing through the view changes x's bytes
    v.view(sx.uint8)[0, 0] = 255
    assert base.view(np.uint8)[0, 0] != 255 and x.view(sx.uint8).numpy()[0, 0] == 255
    # a slice whose offset, last-dim size and strides divide evenly views too
    part = x[1:, 8:]
    np.testing.assert_array_equal(part.view(sx.uint8).numpy(), base[1:, 8:].view(np.uint8))


def test_view_dtype_rules_and_errors():
    x = sx.arange(8.0).reshape(2, 4)
    assert not sx.ones(3, requires_grad=True).view(sx.int32).requires_grad
    assert x.view(sx.float32) is not x and x.view(sx.float32).data_ptr() == x.data_ptr()
    for bad, match in [(lambda: x[:, :3].view(sx.float64), "last dim's size"),
                       (lambda: x.t().view(sx.float64), "stride 1"),
                       (lambda: x[:, 1:3].view(sx.float64), "storage offset"),
                       (lambda: sx.tensor(1.0).view(sx.float16), "0-d")]:
        with pytest.raises(RuntimeError, match=match):
            bad()
    with pytest.raises(TypeError, match="bool"):
        x.view(sx.bool)


@pytest.mark.parity
def test_view_dtype_matches_torch(torch):
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    for lib_dt in ("int32", "float64", "uint8", "bfloat16", "float16"):
        ours = sx.tensor(a)[:, 1:, 2:].view(getattr(sx, lib_dt))
        theirs = torch.tensor(a)[:, 1:, 2:].view(getattr(torch, lib_dt))
        assert tuple(ours.shape) == tuple(theirs.shape) and ours.stride() == theirs.stride()
        assert ours.storage_offset() == theirs.storage_offset()
        np.testing.assert_array_equal(ours.view(sx.uint8).numpy(), theirs.view(torch.uint8).numpy())
    for bad in (lambda lib: lib.ones(2, 3).view(lib.float64), lambda lib: lib.ones(4, 2).t().view(lib.float64),
                lambda lib: lib.tensor(1.0).view(lib.float16)):
        with pytest.raises(RuntimeError):
            bad(torch)
        with pytest.raises(RuntimeError):
            bad(sx)


def test_out_of_place_resize_keeps_the_number_of_elements():
    x = sx.arange(6.0, requires_grad=True)
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        y = x.resize(2, 3)
    assert y.shape == (2, 3) and y.grad_fn is not None
    np.testing.assert_array_equal(y.detach().numpy(), np.arange(6.0).reshape(2, 3))
    with pytest.warns(UserWarning, match="non-inplace resize_as is deprecated"):
        assert x.resize_as(sx.ones(3, 2)).shape == (3, 2)
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match=r"\[resize\] requested resize to 4"):
        x.resize(4)
