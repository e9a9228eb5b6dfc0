"""int8 and int16 tensors (``sneppx_core.int8``, ``int16``/``short``): storage, casts, promotion, arithmetic that
wraps as the storage type does, reductions widening to int64, byte views, files and DLPack. References: NumPy's
arithmetic on the same dtypes, Python ints, and PyTorch (parity)."""

from __future__ import annotations

import numpy as np
import pytest

import sneppx_core as sx

SMALL = [("int8", np.int8), ("int16", np.int16)]


def _values(npdt, shape, seed=0):
    info = np.iinfo(npdt)
    return np.random.default_rng(seed).integers(info.min, info.max, shape, endpoint=True).astype(npdt)


@pytest.mark.parametrize("name,npdt", SMALL)
def test_dtype_basics(name, npdt):
    dt = getattr(sx, name)
    assert dt.itemsize == np.dtype(npdt).itemsize and not dt.is_floating_point and repr(dt) == f"sneppx.{name}"
    info = sx.iinfo(dt)
    assert (info.bits, info.min, info.max) == (8 * dt.itemsize, int(np.iinfo(npdt).min), int(np.iinfo(npdt).max))
    a = _values(npdt, (3, 5))
    t = sx.tensor(a)
    assert t.dtype == dt and t.element_size() == dt.itemsize and t.numpy().dtype == npdt
    np.testing.assert_array_equal(t.numpy(), a)
    shared = sx.from_numpy(a)  # the same memory
    a[0, 0] = 7
    assert shared[0, 0].item() == 7 and shared.is_signed()
    assert sx.tensor([1, -2], dtype=name).tolist() == [1, -2]
    assert sx.zeros(2, dtype=dt).dtype == dt and sx.arange(5, dtype=dt).tolist() == [0, 1, 2, 3, 4]
    assert sx.short is sx.int16 or sx.short == sx.int16
    assert sx.ones(2).char().dtype == sx.int8 and sx.ones(2).short().dtype == sx.int16
    assert isinstance(sx.CharTensor([1, 2]), sx.CharTensor) and sx.ShortTensor(3).dtype == sx.int16


@pytest.mark.parametrize("name,npdt", SMALL)
def test_values_that_do_not_fit_are_refused(name, npdt):
    hi = int(np.iinfo(npdt).max)
    t = sx.zeros(2, dtype=name)
    t.fill_(hi)
    assert t.tolist() == [hi, hi]
    with pytest.raises(RuntimeError, match=f"{hi + 1} cannot be converted to {name}"):
        t.fill_(hi + 1)
    with pytest.raises(RuntimeError, match=name):
        sx.full((2,), -hi - 2, dtype=name)
    with pytest.raises(RuntimeError, match=rf"\[tensor\] value {hi + 1} cannot be converted to {name}"):
        sx.tensor([[1, hi + 1]], dtype=name)  # Python ints are checked, as in PyTorch
    with pytest.raises(RuntimeError, match="cannot be converted to uint8"):
        sx.tensor([-1], dtype=sx.uint8)
    wide = np.array([hi + 1, 3])
    assert sx.tensor(wide, dtype=name).tolist() == wide.astype(npdt).tolist()  # NumPy data is cast, as in PyTorch


@pytest.mark.parametrize("name,npdt", SMALL)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "and", "or", "xor"])
def test_arithmetic_wraps_like_numpy(threads, name, npdt, op):
    a, b = _values(npdt, (300, 70), 1), _values(npdt, (70,), 2)  # a broadcast row, long enough for vector loops
    fn = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "and": np.bitwise_and, "or": np.bitwise_or,
          "xor": np.bitwise_xor}[op]
    x, y = sx.tensor(a), sx.tensor(b)
    got = {"add": x + y, "sub": x - y, "mul": x * y, "and": x & y, "or": x | y, "xor": x ^ y}[op]
    assert got.dtype == name
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(got.numpy(), fn(a, b))
    inplace = x.clone()
    {"add": inplace.add_, "sub": inplace.sub_, "mul": inplace.mul_, "and": inplace.bitwise_and_,
     "or": inplace.bitwise_or_, "xor": inplace.bitwise_xor_}[op](y)
    np.testing.assert_array_equal(inplace.numpy(), got.numpy())


@pytest.mark.parametrize("name,npdt", SMALL)
def test_division_remainder_and_unary(name, npdt):
    a = _values(npdt, (500,), 3)
    b = _values(npdt, (500,), 4)
    b[b == 0] = 3
    x, y = sx.tensor(a), sx.tensor(b)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal((x // y).numpy(), np.floor_divide(a, b))
        np.testing.assert_array_equal((x % y).numpy(), np.remainder(a, b))
        np.testing.assert_array_equal((-x).numpy(), np.negative(a))  # -min wraps to min
        np.testing.assert_array_equal(x.abs().numpy(), np.abs(a))
    assert (x / y).dtype == sx.float32
    np.testing.assert_allclose((x / y).numpy(), a.astype(np.float64) / b, rtol=1e-6)
    np.testing.assert_array_equal(x.sign().numpy(), np.sign(a))
    np.testing.assert_array_equal((x < y).numpy(), a < b)
    np.testing.assert_array_equal(sx.maximum(x, y).numpy(), np.maximum(a, b))
    np.testing.assert_array_equal(x.clamp(-100, 100).numpy(), np.clip(a, -100, 100))


def test_promotion():
    i8, u8, i16 = sx.ones(2, dtype=sx.int8), sx.ones(2, dtype=sx.uint8), sx.ones(2, dtype=sx.int16)
    assert (i8 + u8).dtype == sx.int16 and (u8 * i8).dtype == sx.int16  # neither holds the other's range
    assert (i8 + i16).dtype == sx.int16 and (i16 + sx.ones(2, dtype=sx.int32)).dtype == sx.int32
    assert (i8 + 1000).dtype == sx.int8  # a Python int keeps the tensor's dtype
    assert (i8 + 1.5).dtype == sx.float32 and (i16 * sx.ones(2, dtype=sx.float16)).dtype == sx.float16
    assert (i8 + sx.tensor(5)).dtype == sx.int8  # a 0-d int64 tensor does not widen a dimensioned one
    assert sx.promote_types(sx.int8, sx.uint8) == sx.int16 and sx.result_type(i8, u8) == sx.int16
    assert sx.can_cast(sx.int16, sx.int8) and not sx.can_cast(sx.float32, sx.int16)


@pytest.mark.parametrize("name,npdt", SMALL)
def test_reductions_widen_to_int64(name, npdt):
    a = _values(npdt, (64, 200), 5)
    x = sx.tensor(a)
    assert x.sum().dtype == sx.int64 and x.sum().item() == int(a.astype(np.int64).sum())
    np.testing.assert_array_equal(x.sum(1).numpy(), a.astype(np.int64).sum(1))
    np.testing.assert_array_equal(x.cumsum(1).numpy(), np.cumsum(a.astype(np.int64), 1))
    np.testing.assert_array_equal(x.max(1).values.numpy(), a.max(1))
    np.testing.assert_array_equal(x.argmin(1).numpy(), a.argmin(1))
    assert x.prod(1).dtype == sx.int64
    np.testing.assert_array_equal(x.sort(1).values.numpy(), np.sort(a, 1))
    np.testing.assert_array_equal(x.topk(3, 1).values.numpy(), -np.sort(-a.astype(np.int64), 1)[:, :3])


@pytest.mark.parametrize("name,npdt", SMALL)
def test_casts(name, npdt):
    f = np.array([-3.9, -0.5, 0.0, 0.7, 2.5, 100.9], np.float32)
    assert sx.tensor(f).to(name).tolist() == [int(v) for v in f]  # toward zero
    a = _values(npdt, (50,), 6)
    np.testing.assert_array_equal(sx.tensor(a).float().numpy(), a.astype(np.float32))
    np.testing.assert_array_equal(sx.tensor(a).long().numpy(), a.astype(np.int64))
    wide = np.arange(-70000, 70000, 997, dtype=np.int64)
    np.testing.assert_array_equal(sx.tensor(wide).to(name).numpy(), wide.astype(npdt))  # wraps as NumPy's cast


def test_indexing_shapes_and_matmul():
    a = _values(np.int8, (6, 9), 7)
    x = sx.tensor(a)
    idx = np.array([4, 0, 4, 2])
    np.testing.assert_array_equal(x[idx].numpy(), a[idx])
    np.testing.assert_array_equal(x[x > 0].numpy(), a[a > 0])
    np.testing.assert_array_equal(sx.cat([x, x[:2]]).numpy(), np.concatenate([a, a[:2]]))
    np.testing.assert_array_equal(x.T.contiguous().numpy(), a.T)
    np.testing.assert_array_equal(x.masked_fill(x < 0, 1).numpy(), np.where(a < 0, 1, a))
    np.testing.assert_array_equal(sx.where(x > 0, x, sx.zeros_like(x)).numpy(), np.where(a > 0, a, 0))
    y = x.clone()
    y[1:3, ::2] = -5
    b = a.copy()
    b[1:3, ::2] = -5
    np.testing.assert_array_equal(y.numpy(), b)
    m = _values(np.int16, (9, 4), 8)
    with np.errstate(over="ignore"):
        want = (a.astype(np.int64) @ m.astype(np.int64)).astype(np.int16)  # promoted to int16, wrapped
    np.testing.assert_array_equal((x.to(sx.int16) @ sx.tensor(m)).numpy(), want)


def test_byte_views():
    w = sx.randn(4, 6).to(sx.bfloat16)
    bits = w.view(sx.int16)  # llm.c writes bf16 weights this way
    assert bits.dtype == sx.int16 and bits.shape == (4, 6)
    want = (w.float().numpy().view(np.uint32) >> 16).astype(np.uint16).view(np.int16)
    np.testing.assert_array_equal(bits.numpy(), want)
    assert sx.equal(bits.view(sx.bfloat16), w)
    f = sx.tensor([1.0, -2.0], dtype=sx.float32)
    assert f.view(sx.int8).shape == (8,)
    np.testing.assert_array_equal(f.view(sx.int8).numpy(), f.numpy().view(np.int8))


@pytest.mark.parametrize("name,npdt", SMALL)
def test_files_and_dlpack(tmp_path, name, npdt):
    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    a = _values(npdt, (3, 4), 9)
    path = tmp_path / "t.safetensors"
    sx.save({"w": sx.tensor(a)}, path)
    back = sx.load(path)["w"]
    assert back.dtype == name
    np.testing.assert_array_equal(back.numpy(), a)
    (raw,) = safetensors_numpy.load_file(str(path)).values()  # the file is safetensors, dtype I8 / I16
    assert raw.dtype == npdt
    np.testing.assert_array_equal(raw, a)
    np.testing.assert_array_equal(np.from_dlpack(sx.tensor(a)), a)
    assert sx.from_dlpack(a).dtype == name
    sx.save({"w": sx.tensor(a)}, tmp_path / "t.pt", format="torch")
    np.testing.assert_array_equal(sx.load(tmp_path / "t.pt")["w"].numpy(), a)


@pytest.mark.parametrize("name,npdt", SMALL)
def test_random_fills_stay_in_range(name, npdt):
    r = sx.randint(-5, 5, (1000,), dtype=getattr(sx, name))
    assert r.dtype == name and -5 <= r.min().item() and r.max().item() < 5
    u = sx.empty(2000, dtype=name).random_()
    assert 0 <= u.min().item() and u.max().item() <= int(np.iinfo(npdt).max)


# ---------------------------------------------------------------- PyTorch parity


@pytest.mark.parity
@pytest.mark.parametrize("name,npdt", SMALL)
def test_ops_match_torch(torch, name, npdt):
    a, b = _values(npdt, (40, 30), 10), _values(npdt, (30,), 11)
    b[b == 0] = 1
    tx, ty = torch.from_numpy(a), torch.from_numpy(b)
    sxx, sxy = sx.tensor(a), sx.tensor(b)
    cases = [
        lambda m, x, y: x + y, lambda m, x, y: x * y, lambda m, x, y: x - 3, lambda m, x, y: x // y,
        lambda m, x, y: x % y, lambda m, x, y: x / y, lambda m, x, y: -x, lambda m, x, y: x.abs(),
        lambda m, x, y: x.sum(), lambda m, x, y: x.sum(0), lambda m, x, y: x.cumsum(1), lambda m, x, y: x.prod(1),
        lambda m, x, y: x.max(), lambda m, x, y: x.amin(1), lambda m, x, y: x.sort(1).values,
        lambda m, x, y: x >> 2, lambda m, x, y: x << 1, lambda m, x, y: ~x, lambda m, x, y: x & y,
        lambda m, x, y: x + m.ones(30, dtype=m.uint8), lambda m, x, y: x * 2.5, lambda m, x, y: x.float().mean(),
        lambda m, x, y: x.to(m.int8), lambda m, x, y: x.to(m.int16), lambda m, x, y: x.bitwise_xor(y),
        lambda m, x, y: m.clamp(x, -50, 60), lambda m, x, y: x.eq(y), lambda m, x, y: x.unique(),
        lambda m, x, y: x.flip(0), lambda m, x, y: m.stack([x, x]).sum(0),
    ]
    for i, case in enumerate(cases):
        want, got = case(torch, tx, ty), case(sx, sxx, sxy)
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], (i, got.dtype, want.dtype)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, err_msg=f"case {i}")


@pytest.mark.parity
def test_torch_files_round_trip(torch, tmp_path):
    state = {"q": torch.tensor([[-128, 5], [127, 0]], dtype=torch.int8), "s": torch.arange(-3, 3, dtype=torch.short)}
    torch.save(state, tmp_path / "torch.pt")
    mine = sx.load(tmp_path / "torch.pt")
    assert mine["q"].dtype == sx.int8 and mine["s"].dtype == sx.int16
    assert mine["q"].tolist() == state["q"].tolist() and mine["s"].tolist() == state["s"].tolist()
    sx.save(mine, tmp_path / "mine.pt", format="torch")
    back = torch.load(tmp_path / "mine.pt", weights_only=True)
    assert back["q"].dtype == torch.int8 and back["s"].dtype == torch.int16 and torch.equal(back["q"], state["q"])


@pytest.mark.parity
def test_weight_only_int8_linear_matches_torch(torch):
    """The weight-only int8 scheme of gpt-fast's quantize.py: per-row scales, int8 weights, the product taken in
    the input's dtype and rescaled. Same float weights give the same int8 weights and outputs on both."""
    rng = np.random.default_rng(12)
    w, x = rng.standard_normal((16, 32)).astype(np.float32), rng.standard_normal((5, 32)).astype(np.float32)

    def quantize(m, weight):
        scales = weight.abs().amax(dim=1).clamp(min=1e-5) / 127
        q = m.clamp(m.round(weight / scales.unsqueeze(1)), -128, 127).to(m.int8)
        return q, scales

    def forward(m, F, q, scales, inp):
        return F.linear(inp, q.to(dtype=inp.dtype)) * scales

    import torch.nn.functional as TF

    tq, ts = quantize(torch, torch.from_numpy(w))
    sq, ss = quantize(sx, sx.tensor(w))
    assert sq.dtype == sx.int8 and sq.element_size() == 1
    np.testing.assert_array_equal(sq.numpy(), tq.numpy())
    got = forward(sx, sx.functional, sq, ss, sx.tensor(x)).numpy()
    np.testing.assert_allclose(got, forward(torch, TF, tq, ts, torch.from_numpy(x)).numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got, x @ w.T, rtol=0.05, atol=0.1)  # close to the float product
