"""The PyTorch names real programs use: extra Tensor methods, legacy types, devices, backends flags,
``cuda``/``accelerator`` functions and ``save``/``load``."""

from __future__ import annotations

import io
import math
import os

import numpy as np
import pytest

import sneppx_core as sx
from opcheck import matches_torch

RNG = np.random.default_rng(0)


def _arr(*shape):
    return RNG.standard_normal(shape)


# name -> (function of (lib, *tensors), input shapes); the same code runs on sneppx_core and torch.
CASES = {
    "t": (lambda L, a: a.t(), [(3, 4)]),
    "mH": (lambda L, a: a.mH * 1, [(2, 3, 4)]),
    "view_as": (lambda L, a, b: a.view_as(b), [(3, 4), (2, 6)]),
    "reshape_as": (lambda L, a, b: a.reshape_as(b), [(3, 4), (12,)]),
    "addmm": (lambda L, c, a, b: L.addmm(c, a, b, beta=0.5, alpha=2.0), [(3, 5), (3, 4), (4, 5)]),
    "addmm_bias": (lambda L, c, a, b: c.addmm(a, b), [(5,), (3, 4), (4, 5)]),
    "baddbmm": (lambda L, c, a, b: L.baddbmm(c, a, b, alpha=0.5), [(2, 3, 5), (2, 3, 4), (2, 4, 5)]),
    "addcmul": (lambda L, a, b, c: a.addcmul(b, c, value=0.3), [(3, 4), (3, 4), (4,)]),
    "addcdiv": (lambda L, a, b, c: a.addcdiv(b, c.exp(), value=2), [(3, 4), (3, 4), (3, 4)]),
    "clamp_min": (lambda L, a: a.clamp_min(0.1), [(3, 4)]),
    "clamp_max": (lambda L, a: L.clamp_max(a, -0.1), [(3, 4)]),
    "unfold": (lambda L, a: a.unfold(1, 3, 2), [(2, 7, 3)]),
    "unfold_last": (lambda L, a: a.unfold(-1, 2, 1), [(3, 4)]),
    "cumprod": (lambda L, a: L.cumprod(a, 1), [(3, 5)]),
    "cumprod_dim0": (lambda L, a: a.cumprod(0), [(4, 2)]),
    "logcumsumexp": (lambda L, a: L.logcumsumexp(a * 5, 1), [(3, 6)]),
    "diff": (lambda L, a: a.diff(), [(3, 6)]),
    "diff_n2_pre": (lambda L, a, p: L.diff(a, n=2, dim=0, prepend=p), [(4, 3), (1, 3)]),
    "masked_scatter": (lambda L, a, s: a.masked_scatter(a > 0, s), [(3, 4), (20,)]),
    "index_copy": (lambda L, a, s: a.index_copy(1, L.tensor([3, 0]), s), [(3, 4), (3, 2)]),
    "index_fill": (lambda L, a: a.index_fill(0, L.tensor([1]), -2.0), [(3, 4)]),
    "nan_to_num": (lambda L, a: L.nan_to_num(L.log(a), nan=0.5, neginf=-7.0), [(3, 4)]),
    "scatter_sum": (lambda L, a, s: a.scatter_reduce(1, L.tensor([[0, 1, 0], [2, 2, 2]]), s, "sum"),
                    [(2, 4), (2, 3)]),
    "scatter_mean": (lambda L, a, s: a.scatter_reduce(1, L.tensor([[0, 1, 0], [2, 2, 2]]), s, "mean",
                                                      include_self=False), [(2, 4), (2, 3)]),
    "scatter_amax": (lambda L, a, s: a.scatter_reduce(0, L.tensor([[0, 1], [0, 0], [2, 1]]), s, "amax"),
                     [(3, 2), (3, 2)]),
    "scatter_amin": (lambda L, a, s: L.scatter_reduce(a, 0, L.tensor([[0, 1], [0, 0]]), s, "amin",
                                                      include_self=False), [(3, 2), (2, 2)]),
}


@pytest.mark.parity
@pytest.mark.parametrize("name", sorted(CASES))
def test_tensor_api_matches_torch(torch, name):
    fn, shapes = CASES[name]
    matches_torch(torch, fn, [_arr(*s) for s in shapes], lambda shape: _arr(*shape), rtol=1e-10, atol=1e-12,
                  grad_rtol=1e-8, grad_atol=1e-10, name=name)


def _fd_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        old = x[i]
        x[i] = old + eps
        hi = f(x)
        x[i] = old - eps
        lo = f(x)
        x[i] = old
        g[i] = (hi - lo) / (2 * eps)
    return g


@pytest.mark.parametrize("fn,ref", [
    (lambda x: x.cumprod(1), lambda a: np.cumprod(a, 1)),
    (lambda x: sx.logcumsumexp(x, 0), lambda a: np.logaddexp.accumulate(a, 0)),
    (lambda x: x.unfold(0, 2, 1), lambda a: np.stack([a[:-1], a[1:]], -1)),
    (lambda x: x.diff(dim=0), lambda a: np.diff(a, axis=0)),
])
def test_forward_and_backward_against_numpy(fn, ref):
    a = _arr(4, 3)
    x = sx.tensor(a, requires_grad=True)
    out = fn(x)
    np.testing.assert_allclose(out.detach().numpy(), ref(a), rtol=1e-12)
    w = _arr(*out.shape)
    (out * sx.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), _fd_grad(lambda v: (ref(v) * w).sum(), a.copy()), rtol=1e-6, atol=1e-7)


def test_cumprod_gradient_through_zeros():
    a = np.array([2.0, 0.0, 3.0, 4.0])
    x = sx.tensor(a, requires_grad=True)
    x.cumprod(0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), _fd_grad(lambda v: np.cumprod(v).sum(), a.copy()), atol=1e-7)


def test_inplace_forms_and_small_methods():
    x = sx.tensor([[1.0, -2.0], [3.0, -4.0]])
    x.clamp_min_(0.0)
    assert x.tolist() == [[1.0, 0.0], [3.0, 0.0]]
    x.clamp_max_(2.0)
    assert x.tolist() == [[1.0, 0.0], [2.0, 0.0]]
    x.index_add_(0, sx.tensor([1]), sx.tensor([[10.0, 10.0]]))
    assert x.tolist() == [[1.0, 0.0], [12.0, 10.0]]
    x.index_copy_(1, sx.tensor([0]), sx.tensor([[7.0], [8.0]]))
    assert x.tolist() == [[7.0, 0.0], [8.0, 10.0]]
    x.scatter_(1, sx.tensor([[1], [0]]), sx.tensor([[5.0], [6.0]]))
    assert x.tolist() == [[7.0, 5.0], [6.0, 10.0]]
    assert x.nelement() == 4 and x.ndimension() == 2 and x.get_device() == -1 and x.is_cpu
    assert x.new_zeros(3).dtype == sx.float32 and x.new_full((2,), 3).tolist() == [3.0, 3.0]
    assert sx.triu_indices(3, 4, 1).tolist() == np.stack(np.triu_indices(3, 1, 4)).tolist()
    assert sx.tril_indices(4, 3, -1).tolist() == np.stack(np.tril_indices(4, -1, 3)).tolist()


def test_bad_input_errors_name_the_op():
    with pytest.raises(ValueError, match=r"\[t\].*\(2, 3, 4\)"):
        sx.zeros(2, 3, 4).t()
    with pytest.raises(ValueError, match=r"\[unfold\]"):
        sx.zeros(3).unfold(0, 4, 1)
    with pytest.raises(ValueError, match=r"\[masked_scatter\] mask selects 3"):
        sx.zeros(3).masked_scatter(sx.ones(3, dtype=sx.bool_), sx.zeros(2))
    with pytest.raises(ValueError, match=r"\[scatter_reduce\]"):
        sx.zeros(3).scatter_reduce(0, sx.tensor([0]), sx.ones(1), "max")


def test_legacy_types():
    t = sx.LongTensor([1, 2])
    assert t.dtype == sx.int64 and t.tolist() == [1, 2]
    assert sx.FloatTensor(2, 3).shape == (2, 3) and sx.FloatTensor(2, 3).dtype == sx.float32
    assert sx.BoolTensor([True, False]).dtype == sx.bool_
    assert isinstance(sx.zeros(2), sx.FloatTensor) and not isinstance(sx.zeros(2), sx.LongTensor)
    x = sx.tensor([1.7, -2.2])
    assert x.type() == "sneppx.FloatTensor" and t.type() == "sneppx.LongTensor"
    assert x.type(sx.LongTensor).tolist() == [1, -2]
    assert x.type("torch.DoubleTensor").dtype == sx.float64 and x.type(sx.float16).dtype == sx.float16


def test_device_object():
    d = sx.device("cuda", 0)
    assert d.type == "cuda" and d.index == 0 and d == sx.device("cuda:0") and d == "cuda:0"
    assert sx.device("cpu").index is None and sx.zeros(1).device == sx.device("cpu") == "cpu"
    assert isinstance(sx.zeros(1).device, sx.device)


@pytest.mark.skipif(sx.cuda.is_available(), reason="a GPU is visible")
def test_cuda_functions_without_a_gpu():
    sx.cuda.manual_seed(3)
    sx.cuda.manual_seed_all(3)
    sx.cuda.empty_cache()
    assert sx.cuda.is_bf16_supported() is False and sx.cuda.is_initialized() is False
    why = "no CUDA device is visible" if sx._HAS_CUDA else "this build of sneppx-core has no CUDA"
    for fn in (sx.cuda.synchronize, sx.cuda.current_device, lambda: sx.cuda.set_device(0)):
        with pytest.raises(RuntimeError, match=rf"\[cuda\.\w+\] {why}"):
            fn()
    with pytest.raises(ValueError, match="expected a cuda device"):
        sx.cuda.set_device("cpu")
    assert sx.accelerator.is_available() is False
    assert sx.accelerator.current_accelerator() == (sx.device("cuda") if sx._HAS_CUDA else None)


def test_backends_flags():
    b = sx.backends
    assert (b.cudnn.benchmark, b.cudnn.deterministic, b.cudnn.enabled, b.cudnn.allow_tf32) == (False, False, True, True)
    assert b.cuda.matmul.allow_tf32 is False and b.mps.is_available() is False and b.cudnn.is_available() is False
    b.cudnn.benchmark = True
    assert b.cudnn.benchmark is True
    b.cudnn.benchmark = False
    sx.set_float32_matmul_precision("high")
    assert sx.get_float32_matmul_precision() == "high" and b.cuda.matmul.allow_tf32 is True
    b.cuda.matmul.allow_tf32 = False
    assert sx.get_float32_matmul_precision() == "highest"
    with pytest.raises(ValueError, match="set_float32_matmul_precision"):
        sx.set_float32_matmul_precision("fast")
    sx.use_deterministic_algorithms(True, warn_only=True)
    assert sx.are_deterministic_algorithms_enabled() and sx.is_deterministic_algorithms_warn_only_enabled()
    sx.use_deterministic_algorithms(False)
    assert not sx.are_deterministic_algorithms_enabled()


def _checkpoint():
    w = sx.randn(3, 4, requires_grad=True)
    return {
        "model": {"w": w, "half": sx.tensor([1.5, -2.25], dtype=sx.bfloat16), "ids": sx.tensor([1, 2])},
        "optimizer": {"state": {0: {"step": sx.tensor(3.0), "exp_avg": sx.zeros(3, 4)}},
                      "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "params": [0], "foused": None}]},
        "step": 12, "loss": float("nan"), "name": "run-1", "flags": [True, False], "dtype": sx.float16,
        "mask": sx.tensor([True, False]), "array": np.arange(3.0),
    }


def _same(a, b):
    assert type(a) is type(b) or (isinstance(a, sx.Tensor) and isinstance(b, sx.Tensor))
    if isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, sx.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape and a.requires_grad == b.requires_grad
        assert a.detach().float().tolist() == b.detach().float().tolist()
    elif isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b)
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b)
    else:
        assert a == b


def test_save_load_round_trip(tmp_path):
    obj = _checkpoint()
    path = tmp_path / "ckpt.pt"
    sx.save(obj, path)
    _same(obj, sx.load(path, map_location="cpu"))
    buf = io.BytesIO()
    sx.save(obj, buf)
    buf.seek(0)
    _same(obj, sx.load(buf))
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt.pt"]  # no temporary file left behind


def test_save_writes_tied_tensors_once(tmp_path):
    """Two detached views of one parameter (a state dict's tied weights) are written once and load as one
    tensor; equal values in separate memory stay separate."""
    w = sx.randn(100, 16, requires_grad=True)
    p = tmp_path / "tied.pt"
    sx.save({"emb.weight": w.detach(), "head.weight": w.detach(), "other": w.detach().clone()}, p)
    assert os.path.getsize(p) < 2 * w.numel() * 4 + 4096  # one copy for the tied pair, one for the clone
    back = sx.load(p)
    assert back["emb.weight"] is back["head.weight"] and back["other"] is not back["emb.weight"]
    np.testing.assert_array_equal(back["other"].numpy(), w.detach().numpy())
    x = sx.arange(6.0)
    views = sx.load(_saved(tmp_path, {"a": x[:3], "b": x[3:]}))  # same memory, different geometry: two entries
    assert views["a"].tolist() == [0.0, 1.0, 2.0] and views["b"].tolist() == [3.0, 4.0, 5.0]


def _saved(tmp_path, obj):
    path = tmp_path / "obj.pt"
    sx.save(obj, path)
    return path


def test_save_load_keeps_numpy_array_shapes(tmp_path):
    """A 0-d NumPy array comes back 0-d (it came back with shape (1,)); a strided one comes back whole."""
    obj = {"a": np.array(3.5), "b": np.arange(6.0).reshape(2, 3)[:, ::2]}
    sx.save(obj, tmp_path / "a.pt")
    back = sx.load(tmp_path / "a.pt")
    assert back["a"].shape == () and back["a"] == 3.5
    np.testing.assert_array_equal(back["b"], obj["b"])


def test_save_writes_safetensors_readable_by_the_reference_reader(tmp_path):
    safetensors = pytest.importorskip("safetensors.numpy")
    x = sx.tensor([[1.0, 2.0], [3.0, 4.0]])
    sx.save({"x": x, "n": 3}, tmp_path / "a.st")
    loaded = safetensors.load_file(str(tmp_path / "a.st"))
    np.testing.assert_array_equal(loaded["0"], x.numpy())


def test_save_rejects_what_needs_pickle_and_keeps_the_old_file(tmp_path):
    path = tmp_path / "ckpt"
    sx.save({"a": 1}, path)
    with pytest.raises(TypeError, match=r"\[save\] obj\['cfg'\]\['fn'\] is a builtins.function"):
        sx.save({"cfg": {"fn": lambda: 1}}, path)
    with pytest.raises(TypeError, match="key of type tuple"):
        sx.save({(1, 2): 3}, path)
    assert sx.load(path) == {"a": 1} and os.listdir(tmp_path) == ["ckpt"]
    (tmp_path / "bad").write_bytes(b"\x00" * 20)
    with pytest.raises(ValueError, match=r"\[load\] not a sneppx_core.save file"):
        sx.load(tmp_path / "bad")


def test_shared_tensors_are_stored_once():
    x = sx.randn(100)
    a, b = io.BytesIO(), io.BytesIO()
    sx.save([x, x], a)
    sx.save([x], b)
    assert len(a.getvalue()) - len(b.getvalue()) < 100


@pytest.mark.parametrize("row, col", [(0, 0), (0, 4), (4, 0), (1, 1), (3, 4), (4, 3), (7, 7), (2, 9), (50, 33)])
def test_tri_indices_against_numpy(row, col):
    for offset in (-60, -5, -1, 0, 1, 3, 60, -(1 << 62), 1 << 62):
        for upper, name in ((True, "triu_indices"), (False, "tril_indices")):
            got = getattr(sx, name)(row, col, offset)
            want = np.stack(getattr(np, name)(row, int(np.clip(offset, -1000, 1000)), col)).astype(np.int64)
            assert got.dtype == sx.int64 and tuple(got.shape) == want.shape
            np.testing.assert_array_equal(got.numpy(), want.reshape(2, -1))
    assert sx.tril_indices(row, col, dtype=sx.int32, device="cpu").dtype == sx.int32
    with pytest.raises(ValueError, match=r"\[triu_indices\] row and col must lie in"):
        sx.triu_indices(-1, 3)


def test_finfo_and_iinfo_against_numpy():
    for dt, ref in ((sx.float16, np.float16), (sx.float32, np.float32), (sx.float64, np.float64)):
        info, want = sx.finfo(dt), np.finfo(ref)
        assert (info.bits, info.eps, info.max, info.min) == (want.bits, want.eps, want.max, want.min)
        assert info.tiny == info.smallest_normal == want.smallest_normal and info.dtype == dt.name
        assert info.resolution == 10.0 ** -want.precision
        assert float(sx.tensor([info.max], dtype=dt).item()) == info.max  # the dtype holds it
        assert float(sx.tensor([1 + info.eps], dtype=dt).item()) == 1 + info.eps  # the gap above 1
        assert float(sx.tensor([1 + info.eps / 4], dtype=dt).item()) == 1
    bf = sx.finfo(sx.bfloat16)
    assert (bf.bits, bf.eps, bf.tiny) == (16, 2.0 ** -7, 2.0 ** -126)
    assert float(sx.tensor([bf.max], dtype=sx.bfloat16).float().item()) == bf.max
    assert float(sx.tensor([1 + bf.eps], dtype=sx.bfloat16).float().item()) == 1 + bf.eps
    assert sx.finfo().dtype == "float32"
    for dt, ref in ((sx.uint8, np.uint8), (sx.int32, np.int32), (sx.int64, np.int64)):
        info, want = sx.iinfo(dt), np.iinfo(ref)
        assert (info.bits, info.min, info.max, info.dtype) == (want.bits, want.min, want.max, dt.name)
    with pytest.raises(TypeError, match=r"\[finfo\] expected a floating dtype"):
        sx.finfo(sx.int64)
    with pytest.raises(TypeError, match=r"\[iinfo\] expected an integer dtype"):
        sx.iinfo(sx.float32)


@pytest.mark.parity
def test_finfo_parity():
    torch = pytest.importorskip("torch")
    for name in ("float16", "bfloat16", "float32", "float64"):
        assert repr(sx.finfo(getattr(sx, name))) == repr(torch.finfo(getattr(torch, name)))
    for name in ("uint8", "int32", "int64"):
        assert repr(sx.iinfo(getattr(sx, name))) == repr(torch.iinfo(getattr(torch, name)))


def test_assigning_data_makes_a_detached_alias():
    w = sx.zeros((2, 3), requires_grad=True)
    w.grad = sx.ones((2, 3))
    new = sx.arange(4, dtype=sx.float64).reshape(4, 1)
    w.data = new
    assert w.shape == (4, 1) and w.dtype == sx.float64 and w.requires_grad and w.is_leaf
    new[0, 0] = 7.0  # shares memory with the assigned tensor, as in PyTorch
    assert float(w[0, 0].item()) == 7.0
    with pytest.raises(ValueError, match=r"\(2, 3\) and \(4, 1\)"):  # the old gradient no longer fits
        (w * 2).sum().backward()
    w.grad = None
    (w * 2).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.full((4, 1), 2.0))
    view = sx.arange(6.0).reshape(2, 3)[:, 1]
    view.data = sx.ones(5)
    assert view.shape == (5,) and view.is_contiguous()


def test_assigning_data_after_a_tensor_was_saved_for_backward_raises():
    w = sx.ones(3, requires_grad=True)
    y = (w * w).sum()
    w.data = sx.full((3,), 2.0)  # same shape, a new storage at version 0: only the storage tells
    with pytest.raises(RuntimeError, match=r"\[backward\].*given new data \(\.data = \.\.\.\) after it was saved"):
        y.backward()
    with pytest.raises(TypeError, match=r"\[Tensor.data\] a tensor that requires grad needs floating point or complex data"):
        w.data = sx.arange(3)
    with pytest.raises(TypeError, match=r"\[Tensor.data\] expected a Tensor, got list"):
        w.data = [1.0, 2.0]
