"""The Tensor API: construction, NumPy/DLPack exchange, factories, random numbers, dtypes, devices,
properties, repr and pickling."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import sneppx_core as sx

DTYPES = ["float32", "float64", "float16", "bfloat16", "int32", "int64", "bool", "uint8"]
NP_SHAREABLE = {"float32": np.float32, "float64": np.float64, "float16": np.float16, "int32": np.int32,
                "int64": np.int64, "bool": np.bool_, "uint8": np.uint8}


def arr(t):
    return np.array(t.detach().float().numpy() if t.dtype == sx.bfloat16 else t.detach().numpy())


# ---------------------------------------------------------------- construction
@pytest.mark.parametrize(
    "data,dtype,shape",
    [
        ([[1, 2], [3, 4]], sx.int64, (2, 2)), ([1.5, 2], sx.float32, (2,)), ([True, False], sx.bool, (2,)),
        ([[1, 2.5]], sx.float32, (1, 2)), (3, sx.int64, ()), (2.5, sx.float32, ()), (True, sx.bool, ()),
        ([], sx.float32, (0,)), ([[[1]], [[2]]], sx.int64, (2, 1, 1)),
    ],
)
def test_construction_infers_dtype_and_shape(data, dtype, shape):
    t = sx.tensor(data)
    assert t.dtype == dtype and t.shape == shape and t.ndim == len(shape)
    np.testing.assert_array_equal(arr(t), np.array(data, dtype=np.asarray(data).dtype).reshape(shape))


def test_tensor_class_and_factory_alias_agree():
    a, b = sx.Tensor([[1.0, 2.0]]), sx.tensor([[1.0, 2.0]])
    assert type(a) is type(b) is sx.Tensor and a.shape == b.shape and a.dtype == b.dtype


def test_zero_dim_from_scalar_and_numpy_scalar():
    for v, dt in [(3.0, sx.float32), (np.float64(2.5), sx.float64), (np.int32(4), sx.int32), (7, sx.int64)]:
        t = sx.tensor(v)
        assert t.shape == () and t.ndim == 0 and t.numel() == 1 and t.dtype == dt
        assert t.item() == v


@pytest.mark.parametrize("dtype", DTYPES)
def test_construction_with_explicit_dtype(dtype):
    data = [[0, 1, 2], [3, 1, 0]]
    t = sx.tensor(data, dtype=dtype)
    assert t.dtype == getattr(sx, dtype)
    expected = np.array(data).astype(bool) if dtype == "bool" else np.array(data)
    np.testing.assert_array_equal(arr(t), expected)


@pytest.mark.parametrize("np_dtype", [np.float32, np.float64, np.float16, np.int32, np.int64, np.bool_, np.uint8])
def test_construction_from_numpy_copies_and_keeps_dtype(np_dtype):
    a = (np.arange(6).reshape(2, 3) % 3).astype(np_dtype)
    t = sx.tensor(a)
    assert t.dtype == np.dtype(np_dtype).name.replace("bool", "bool")
    np.testing.assert_array_equal(arr(t), a)
    a[0, 0] = 1
    b = a.copy()
    b[0, 0] = 0
    assert arr(t)[0, 0] == 0  # a copy: later writes to the array are not seen


def test_construction_from_non_contiguous_numpy():
    a = np.arange(24.0).reshape(4, 6)[::2, 1::2].T
    np.testing.assert_array_equal(arr(sx.tensor(a)), a)


def test_construction_from_tensor_copies():
    src = sx.tensor([1.0, 2.0])
    t = sx.tensor(src)
    t[0] = 9.0
    assert src[0].item() == 1.0
    assert sx.tensor(src, dtype=sx.int64).dtype == sx.int64


def test_construction_with_requires_grad():
    t = sx.tensor([1.0], requires_grad=True)
    assert t.requires_grad and t.is_leaf
    with pytest.raises(RuntimeError, match="floating"):
        sx.tensor([1], requires_grad=True)


@pytest.mark.parametrize("bad,exc", [([[1, 2], [3]], (TypeError, ValueError)), ("abc", TypeError),
                                     ([1, "a"], TypeError), (None, TypeError), (object(), TypeError),
                                     ([b"ab"], TypeError)])
def test_construction_rejects_bad_data(bad, exc):
    with pytest.raises(exc, match=r"\[tensor\]"):
        sx.tensor(bad)


# ---------------------------------------------------------------- NumPy exchange
@pytest.mark.parametrize("dtype", sorted(NP_SHAREABLE))
def test_from_numpy_and_numpy_share_memory(dtype):
    a = np.zeros((2, 3), dtype=NP_SHAREABLE[dtype])
    t = sx.Tensor.from_numpy(a)
    assert t.dtype == getattr(sx, dtype) and t.shape == (2, 3)
    a[1, 2] = 1
    assert arr(t)[1, 2] == 1
    with sx.no_grad():
        t[0, 1] = 1
    assert a[0, 1] == 1
    n = t.numpy()
    n[0, 0] = 1
    assert a[0, 0] == 1 and arr(t)[0, 0] == 1
    assert sx.from_numpy(a).shape == (2, 3)


def test_from_numpy_keeps_strides_of_views():
    a = np.arange(12.0).reshape(3, 4)
    v = a[:, ::2]
    t = sx.Tensor.from_numpy(v)
    assert t.stride() == (4, 2)
    a[2, 2] = -1
    assert t[2, 1].item() == -1


def test_numpy_of_view_shares_memory():
    t = sx.arange(12).reshape(3, 4)
    v = t.T.numpy()
    assert v.shape == (4, 3)
    v[1, 2] = 100
    assert t[2, 1].item() == 100


def test_numpy_keeps_tensor_storage_alive():
    n = sx.arange(5.0).numpy()
    import gc

    gc.collect()
    np.testing.assert_array_equal(n, np.arange(5.0))


def test_numpy_of_tensor_requiring_grad_raises():
    t = sx.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="detach"):
        t.numpy()
    assert t.detach().numpy()[0] == 1.0
    assert np.asarray(t)[0] == 1.0  # __array__ detaches


def test_dunder_array():
    t = sx.tensor([[1, 2], [3, 4]], dtype=sx.int32)
    a = np.asarray(t)
    assert a.dtype == np.int32 and a.tolist() == [[1, 2], [3, 4]]
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    np.testing.assert_array_equal(np.asarray(sx.tensor([1.0, 2.0], dtype=sx.bfloat16)), [1.0, 2.0])


def test_numpy_of_bfloat16_raises_clearly():
    with pytest.raises(TypeError, match="bfloat16"):
        sx.tensor([1.0], dtype=sx.bfloat16).numpy()


# ---------------------------------------------------------------- DLPack
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint8", "bool", "float16"])
def test_dlpack_to_numpy_shares_memory(dtype):
    t = sx.zeros(2, 3, dtype=dtype)
    assert t.__dlpack_device__() == (1, 0)
    a = np.from_dlpack(t)
    assert a.shape == (2, 3) and a.dtype == NP_SHAREABLE[dtype]
    a[1, 1] = 1
    assert arr(t)[1, 1] == 1


def test_dlpack_from_numpy_shares_memory():
    a = np.zeros((3, 2), dtype=np.float32)
    t = sx.from_dlpack(a)
    a[2, 1] = 5
    assert t[2, 1].item() == 5
    with sx.no_grad():
        t[0, 0] = 7
    assert a[0, 0] == 7


def test_dlpack_of_strided_view():
    base = sx.arange(12.0).reshape(3, 4)
    a = np.from_dlpack(base.T[1:, ::2])
    np.testing.assert_array_equal(a, np.arange(12.0).reshape(3, 4).T[1:, ::2])
    a[0, 0] = -1
    assert base[0, 1].item() == -1


def test_dlpack_of_tensor_requiring_grad_raises():
    with pytest.raises(RuntimeError, match="detach"):
        np.from_dlpack(sx.ones(2, requires_grad=True))


def test_dlpack_capsule_can_be_dropped_unused():
    t = sx.ones(3)
    cap = t.__dlpack__()
    del cap  # the capsule's destructor frees the export without touching t
    assert t.sum().item() == 3


@pytest.mark.parity
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint8", "bool", "float16", "bfloat16"])
def test_dlpack_with_torch_both_ways(dtype, torch):
    t = sx.zeros(2, 3, dtype=dtype)
    tt = torch.from_dlpack(t)
    assert str(tt.dtype) == "torch." + dtype and tuple(tt.shape) == (2, 3)
    tt[1, 2] = 1
    assert arr(t)[1, 2] == 1
    src = torch.zeros(4, 2, dtype=getattr(torch, dtype))
    s = sx.from_dlpack(src)
    assert s.dtype == getattr(sx, dtype) and s.shape == (4, 2)
    src[3, 1] = 1
    assert arr(s)[3, 1] == 1
    from torch.utils import dlpack

    s2 = sx.from_dlpack(dlpack.to_dlpack(src))
    src[0, 0] = 1
    assert arr(s2)[0, 0] == 1


@pytest.mark.parity
def test_dlpack_torch_strided(torch):
    src = torch.arange(12.0).reshape(3, 4).t()[:, 1:]
    s = sx.from_dlpack(src)
    np.testing.assert_array_equal(arr(s), src.numpy())
    assert s.stride() == src.stride()


# ---------------------------------------------------------------- factories
@pytest.mark.parametrize("name,fill", [("zeros", 0), ("ones", 1)])
def test_zeros_ones_both_forms(name, fill):
    f = getattr(sx, name)
    for t in (f(4, 8), f((4, 8)), f([4, 8])):
        assert t.shape == (4, 8) and t.dtype == sx.float32
        assert (arr(t) == fill).all()
    t = f(2, 3, dtype=sx.int32, device="cpu", requires_grad=False)
    assert t.dtype == sx.int32 and str(t.device) == "cpu"
    assert f(3, requires_grad=True).requires_grad
    assert f(()).shape == () and f(0).shape == (0,)


def test_full_empty_eye_arange_linspace():
    assert arr(sx.full((2, 2), 3.5)).tolist() == [[3.5, 3.5], [3.5, 3.5]]
    assert sx.full((2,), 3).dtype == sx.int64 and sx.full((2,), True).dtype == sx.bool
    assert sx.full(3, 1.0, dtype="float64").dtype == sx.float64
    assert sx.empty(2, 3).shape == (2, 3) and sx.empty((4,), dtype=sx.int32).dtype == sx.int32
    np.testing.assert_array_equal(arr(sx.eye(3)), np.eye(3))
    np.testing.assert_array_equal(arr(sx.eye(2, 4, dtype=sx.int64)), np.eye(2, 4))
    np.testing.assert_array_equal(arr(sx.arange(5)), np.arange(5))
    assert sx.arange(5).dtype == sx.int64 and sx.arange(0.0, 1.0, 0.25).dtype == sx.float32
    np.testing.assert_allclose(arr(sx.arange(1, 2, 0.25)), np.arange(1, 2, 0.25))
    np.testing.assert_array_equal(arr(sx.arange(10, 0, -3)), np.arange(10, 0, -3))
    assert sx.arange(5, dtype="float64").dtype == sx.float64
    np.testing.assert_allclose(arr(sx.linspace(-1, 1, 7)), np.linspace(-1, 1, 7), rtol=1e-6, atol=1e-7)
    assert sx.linspace(0, 1, 5, dtype=sx.float64)[-1].item() == 1.0


@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "empty_like", "rand_like", "randn_like"])
def test_like_factories(name):
    src = sx.ones(2, 3, dtype=sx.float64)
    t = getattr(sx, name)(src)
    assert t.shape == (2, 3) and t.dtype == sx.float64
    t2 = getattr(sx, name)(src, dtype=sx.float32)
    assert t2.dtype == sx.float32


def test_full_like_and_randint_like():
    src = sx.zeros(3, 2, dtype=sx.int32)
    assert arr(sx.full_like(src, 7)).tolist() == [[7, 7]] * 3
    r = sx.randint_like(src, 0, 5)
    assert r.shape == (3, 2) and r.dtype == sx.int32 and ((arr(r) >= 0) & (arr(r) < 5)).all()


def test_zeros_like_requires_grad():
    assert sx.zeros_like(sx.ones(2), requires_grad=True).requires_grad


@pytest.mark.parametrize("spelling", ["float64", sx.Dtype.FLOAT64, sx.float64, sx.double, np.float64])
def test_dtype_spellings(spelling):
    assert sx.zeros(2, dtype=spelling).dtype == sx.float64
    assert sx.tensor([1], dtype=spelling).dtype == sx.float64
    assert sx.ones(2).to(spelling).dtype == sx.float64
    assert sx.rand(2, dtype=spelling).dtype == sx.float64
    assert sx.arange(3, dtype=spelling).dtype == sx.float64


def test_dtype_objects():
    assert sx.float32 == sx.Dtype.FLOAT32 == "float32"
    assert sx.float32 != sx.float64 and sx.float32 != "nonsense"
    assert repr(sx.float32) == "sneppx.float32" and sx.float32.itemsize == 4
    assert sx.float16.is_floating_point and not sx.int64.is_floating_point
    assert hash(sx.float32) == hash(sx.Dtype.FLOAT32)
    with pytest.raises(TypeError, match="dtype"):
        sx.zeros(2, dtype="float128")


# ---------------------------------------------------------------- random numbers
def test_manual_seed_determinism():
    for f in (lambda: sx.rand(5), lambda: sx.randn(3, 2), lambda: sx.randint(0, 100, (6,)), lambda: sx.randperm(8),
              lambda: sx.multinomial(sx.tensor([0.2, 0.3, 0.5]), 4, replacement=True)):
        sx.manual_seed(1234)
        a = arr(f())
        sx.manual_seed(1234)
        b = arr(f())
        np.testing.assert_array_equal(a, b)
        c = arr(f())
        assert not np.array_equal(b, c)


def test_random_values_independent_of_thread_count():
    n0 = sx.get_num_threads()
    outs = []
    try:
        for threads in (1, 2):
            sx.set_num_threads(threads)
            assert sx.get_num_threads() == threads
            sx.manual_seed(7)
            outs.append([arr(sx.rand(300_000)), arr(sx.randn(200_000, dtype=sx.float64)),
                         arr(sx.randint(0, 1000, (100_000,)))])
    finally:
        sx.set_num_threads(n0)
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)


def test_random_distributions():
    sx.manual_seed(0)
    u = arr(sx.rand(200_000, dtype=sx.float64))
    assert u.min() >= 0 and u.max() < 1 and abs(u.mean() - 0.5) < 0.005 and abs(u.var() - 1 / 12) < 0.002
    z = arr(sx.randn(200_000, dtype=sx.float64))
    assert abs(z.mean()) < 0.01 and abs(z.std() - 1) < 0.01
    r = arr(sx.randint(-3, 4, (70_000,)))
    counts = np.bincount(r + 3, minlength=7)
    assert r.min() == -3 and r.max() == 3 and (np.abs(counts / 10_000 - 1) < 0.06).all()
    p = arr(sx.randperm(50))
    assert sorted(p.tolist()) == list(range(50))


def test_generator_objects():
    g1, g2 = sx.Generator(5), sx.Generator(5)
    assert g1.initial_seed() == 5
    np.testing.assert_array_equal(arr(sx.rand(4, generator=g1)), arr(sx.rand(4, generator=g2)))
    state = g1.get_state()
    a = arr(sx.randn(3, generator=g1))
    g1.set_state(state)
    np.testing.assert_array_equal(a, arr(sx.randn(3, generator=g1)))
    g1.manual_seed(5)
    g3 = sx.Generator(5)
    np.testing.assert_array_equal(arr(sx.rand(4, generator=g1)), arr(sx.rand(4, generator=g3)))
    assert not np.array_equal(arr(sx.rand(4, generator=sx.Generator(6))), arr(sx.rand(4, generator=sx.Generator(5))))


def test_generator_does_not_touch_default_stream():
    sx.manual_seed(11)
    a = arr(sx.rand(4))
    sx.manual_seed(11)
    sx.rand(100, generator=sx.Generator(3))
    np.testing.assert_array_equal(a, arr(sx.rand(4)))


def test_generator_seed_edge_cases():
    assert sx.Generator(-1).initial_seed() == 2**64 - 1
    assert sx.Generator(2**64 - 1).initial_seed() == 2**64 - 1
    for bad, exc in [(float("nan"), ValueError), (2**64, ValueError), (1.5, ValueError), ([1], TypeError)]:
        with pytest.raises(exc, match="seed"):
            sx.Generator(bad)
    with pytest.raises(ValueError, match="device"):  # a string is PyTorch's first argument, the device
        sx.Generator("a")


def test_manual_seed_bad_values():
    for bad, exc in [(float("nan"), ValueError), (float("inf"), ValueError), (2**70, ValueError), ("x", TypeError)]:
        with pytest.raises(exc, match="manual_seed"):
            sx.manual_seed(bad)
    sx.manual_seed(-5)  # negative seeds wrap, as in PyTorch
    a = arr(sx.rand(3))
    sx.manual_seed(2**64 - 5)
    np.testing.assert_array_equal(a, arr(sx.rand(3)))


def test_multinomial():
    sx.manual_seed(3)
    p = sx.tensor([0.1, 0.0, 0.6, 0.3])
    s = arr(sx.multinomial(p, 20_000, replacement=True))
    freq = np.bincount(s, minlength=4) / 20_000
    np.testing.assert_allclose(freq, [0.1, 0.0, 0.6, 0.3], atol=0.015)
    w = arr(sx.multinomial(sx.tensor([[1.0, 2.0, 3.0, 0.0], [0.0, 0.0, 1.0, 1.0]]), 2))
    assert w.shape == (2, 2) and all(len(set(r)) == 2 for r in w.tolist())
    assert set(w[1].tolist()) == {2, 3} and 3 not in w[0].tolist()
    g = sx.Generator(9)
    a = arr(p.multinomial(5, True, generator=g))
    g.manual_seed(9)
    np.testing.assert_array_equal(a, arr(sx.multinomial(p, 5, replacement=True, generator=g)))


def test_bernoulli_and_inplace_random():
    sx.manual_seed(0)
    b = arr(sx.bernoulli(sx.full((50_000,), 0.25)))
    assert set(np.unique(b)) <= {0.0, 1.0} and abs(b.mean() - 0.25) < 0.01
    t = sx.empty(40_000, dtype=sx.float64).uniform_(-2, 3)
    assert arr(t).min() >= -2 and arr(t).max() < 3 and abs(arr(t).mean() - 0.5) < 0.03
    n = sx.empty(40_000).normal_(5.0, 2.0)
    assert abs(arr(n).mean() - 5) < 0.05 and abs(arr(n).std() - 2) < 0.05


# ---------------------------------------------------------------- conversions and devices
def test_to_and_casts():
    x = sx.tensor([1.7, -2.2])
    assert x.to(sx.float64).dtype == sx.float64 and x.to("float64").dtype == sx.float64
    assert x.to(dtype=sx.int32).dtype == sx.int32 and x.to("cpu") is x
    assert x.to("cpu", sx.float64).dtype == sx.float64 and x.to(sx.float32) is x
    assert x.to(sx.ones(1, dtype=sx.float16)).dtype == sx.float16
    assert arr(x.long()).tolist() == [1, -2] and x.long().dtype == sx.int64
    assert x.float() is x and x.double().dtype == sx.float64 and x.half().dtype == sx.float16
    assert x.int().dtype == sx.int32 and x.bool().dtype == sx.bool and x.bfloat16().dtype == sx.bfloat16
    assert sx.tensor([1, 2]).float().dtype == sx.float32 and sx.tensor([300]).byte().dtype == sx.uint8
    c = x.to(sx.float32, copy=True)
    assert c is not x and arr(c).tolist() == arr(x).tolist()


@pytest.mark.skipif(sx.cuda.is_available(), reason="a GPU is visible")
def test_cuda_is_unavailable_and_to_cuda_raises():
    assert sx.cuda.is_available() is False
    assert sx.cuda.device_count() == 0
    x = sx.ones(2)
    for f in (lambda: x.to("cuda"), lambda: x.cuda(), lambda: sx.zeros(2, device="cuda"),
              lambda: sx.tensor([1.0], device="cuda:0")):
        with pytest.raises(RuntimeError, match="CUDA"):
            f()
    with pytest.raises(ValueError, match="device"):
        x.to("tpu")


def test_device_objects():
    d = sx.Device("cpu")
    assert d == "cpu" and str(d) == "cpu" and d.type == "cpu" and d.index is None
    assert sx.ones(1).device == d and repr(d) == "device(type='cpu')"
    assert sx.Device("cuda:1").index == 1 and sx.Device("cuda", 2).index == 2


# ---------------------------------------------------------------- properties
def test_properties():
    x = sx.arange(24.0).reshape(2, 3, 4)
    assert x.shape == (2, 3, 4) and x.ndim == 3 and x.dim() == 3 and x.numel() == 24
    assert x.size() == (2, 3, 4) and x.size(1) == 3 and x.size(-1) == 4
    assert x.stride() == (12, 4, 1) and x.stride(0) == 12 and x.is_contiguous()
    t = x.transpose(0, 2)
    assert t.shape == (4, 3, 2) and t.stride() == (1, 4, 12) and not t.is_contiguous()
    assert t.contiguous().is_contiguous() and x.contiguous() is x
    assert x.T.shape == (4, 3, 2) and x.mT.shape == (2, 4, 3)
    np.testing.assert_array_equal(arr(x.mT), np.swapaxes(np.arange(24.0).reshape(2, 3, 4), -1, -2))
    assert x.dtype == sx.float32 and str(x.device) == "cpu" and x.element_size() == 4
    assert len(x) == 2 and x.is_floating_point() and not sx.tensor([1]).is_floating_point()
    assert x[1, 2, 3].item() == 23.0 and isinstance(x[0, 0, 0].item(), float)
    assert isinstance(sx.tensor([3]).item(), int) and isinstance(sx.tensor(True).item(), bool)
    assert x.tolist() == np.arange(24.0).reshape(2, 3, 4).tolist()
    assert sx.tensor(2.5).tolist() == 2.5
    with pytest.raises(ValueError, match="item"):
        x.item()
    with pytest.raises(IndexError, match="size"):
        x.size(3)


def test_clone_detach_contiguous_semantics():
    x = sx.tensor([[1.0, 2.0], [3.0, 4.0]])
    c = x.clone()
    c[0, 0] = 10
    assert x[0, 0].item() == 1
    d = x.detach()
    d[0, 0] = 10
    assert x[0, 0].item() == 10
    ct = x.T.contiguous()
    ct[0, 1] = -1
    assert x[1, 0].item() == 3 and ct.is_contiguous()


def test_iteration_and_len():
    x = sx.arange(6).reshape(3, 2)
    rows = list(x)
    assert len(rows) == 3 and all(r.shape == (2,) for r in rows)
    assert [r.tolist() for r in rows] == [[0, 1], [2, 3], [4, 5]]
    assert [v.item() for v in sx.arange(3)] == [0, 1, 2]
    for bad in (lambda: len(sx.tensor(1)), lambda: list(sx.tensor(1))):
        with pytest.raises(TypeError):
            bad()
    assert 3 in x and 7 not in x


def test_python_number_conversions():
    assert float(sx.tensor(2.5)) == 2.5 and int(sx.tensor(7)) == 7 and bool(sx.tensor([1]))
    assert [10, 20, 30][sx.tensor(1)] == 20
    assert f"{sx.tensor(0.5):.2f}" == "0.50"
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(sx.tensor([1, 2]))


@pytest.mark.parametrize("dtype", DTYPES)
def test_pickle_round_trip(dtype):
    x = (sx.arange(12).reshape(3, 4) % 5).to(dtype)
    for t in (x, x.T, x[1:, ::2], x[0, 0]):
        y = pickle.loads(pickle.dumps(t))
        assert y.dtype == t.dtype and y.shape == t.shape
        np.testing.assert_array_equal(arr(y), arr(t))
    g = pickle.loads(pickle.dumps(sx.ones(2, requires_grad=True)))
    assert g.requires_grad and g.is_leaf


def test_repr_basics():
    assert repr(sx.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(sx.tensor([1.5, 2.0], dtype=sx.float64)) == "tensor([1.5000, 2.0000], dtype=sneppx.float64)"
    assert repr(sx.tensor([1, 2], dtype=sx.int32)) == "tensor([1, 2], dtype=sneppx.int32)"
    assert repr(sx.tensor([1.0], requires_grad=True)) == "tensor([1.], requires_grad=True)"
    assert "grad_fn=<" in repr(sx.tensor([1.0], requires_grad=True) * 2)
    assert repr(sx.zeros(0)) == "tensor([])" and repr(sx.zeros(2, 0)) == "tensor([], size=(2, 0))"
    assert str(sx.tensor(3)) == "tensor(3)"
    assert "..." in repr(sx.zeros(5000))


@pytest.mark.parity
@pytest.mark.parametrize(
    "data,dtype",
    [
        ([1.5, 2], None), (3.5, None), ([[0.1234567, 100.0], [1e-5, 3.0]], None), ([1.0, float("nan"), float("inf")], None),
        ([0.0, 0.0], None), ([[1, 2], [30, 4]], None), ([True, False], None), ([-1.5, 2.25, 1e-3], None),
        ([1e9, 1.0], None), ([[1.0, 2.0], [3.0, 4.0]], "float64"), ([1, 2], "int32"), ([0.5, 1], "float16"),
        ([1.25, -3], "bfloat16"), ([[-0.0001, 5.0]], None), (7, "uint8"), ([], None), ([[]], "int64"),
    ],
)
def test_repr_matches_torch(data, dtype, torch):
    a = repr(sx.tensor(data, dtype=dtype))
    b = repr(torch.tensor(data, dtype=getattr(torch, dtype) if dtype else None)).replace("torch.", "sneppx.")
    assert a == b


# ---------------------------------------------------------------- accessors read on every layer call
@pytest.mark.parametrize("dtype", DTYPES)
def test_dtype_and_device_are_shared_objects(dtype):
    x = sx.zeros(2, 3, dtype=dtype)
    assert x.dtype is getattr(sx, dtype if dtype != "bool" else "bool_") and x.dtype == dtype
    assert x.device is sx.ones(1).device and x.device == sx.device("cpu") and str(x.device) == "cpu"
    assert x.shape == (2, 3) and type(x.shape) is tuple and x.ndim == x.dim() == 2 and x.numel() == 6


def test_contiguous_returns_self_or_a_recorded_copy():
    x = sx.randn(3, 4, requires_grad=True)
    assert x.contiguous() is x and x.is_contiguous()
    t = x.T
    assert not t.is_contiguous()
    c = t.contiguous()
    assert c is not t and c.is_contiguous() and c.shape == (4, 3)
    np.testing.assert_array_equal(c.detach().numpy(), x.detach().numpy().T)
    (c * sx.arange(12.0).reshape(4, 3)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.arange(12.0, dtype=np.float32).reshape(4, 3).T)
    assert sx.zeros(0, 5).T.contiguous().shape == (5, 0) and sx.tensor(2.0).contiguous().shape == ()


def test_accessors_reject_other_objects():
    for name in ("contiguous", "dim", "numel", "is_contiguous"):
        with pytest.raises(TypeError):
            getattr(sx.Tensor, name)(5)
    for name in ("dtype", "device", "shape", "ndim"):
        with pytest.raises(TypeError):
            getattr(sx.Tensor, name).__get__(5)
        with pytest.raises(AttributeError):
            setattr(sx.ones(1), name, None)
