"""PyTorch's top-level switches and small factories (``_torch_misc``) and the added Tensor methods
(``_tensor_misc``): NumPy references, errors, and parity with torch called with the same positional arguments."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import sneppx_core as sx
from sneppx_core import _tensor_misc, _torch_misc, _torch_nn_forms

RNG = np.random.default_rng(21)


def _np(t):
    return t.detach().numpy()


@pytest.fixture
def print_defaults():
    yield
    sx.set_printoptions(profile="default", sci_mode=None)


# ---------------------------------------------------------------- registration
def test_names_are_exported_with_docs():
    for mod in (_torch_misc, _torch_nn_forms, _tensor_misc):
        for name in mod.FUNCTIONS:
            assert hasattr(sx, name) and name in sx.__all__ and getattr(sx, name).__doc__, name
    for name in _tensor_misc.METHODS:
        assert getattr(sx.Tensor, name).__doc__, name
    for name in ("gcd_", "lcm_", "ldexp_", "i0_"):
        assert sx.__all__.count(name) == 1, name
    assert sx.range is _torch_misc.FUNCTIONS["range"] and range(3) == range(0, 3)  # the builtin is untouched here


# ---------------------------------------------------------------- range, ravel, in-place forms
@pytest.mark.parametrize("args", [(1, 4), (0, 1, 0.25), (5, 1, -1.5), (3,), (0, 0.3, 0.1), (-2, 2, 3)])
def test_range_is_inclusive_and_float32(args):
    with pytest.warns(UserWarning, match="deprecated"):
        out = sx.range(*args)
    start, end, step = (0, args[0], 1) if len(args) == 1 else (*args, 1)[:3]
    n = int(np.floor((end - start) / step)) + 1
    assert out.dtype == sx.float32
    np.testing.assert_allclose(_np(out), start + step * np.arange(n), rtol=1e-6, atol=1e-7)


def test_range_dtype_device_grad_out_and_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert _np(sx.range(1, 7, 2, dtype=sx.int64)).tolist() == [1, 3, 5, 7]
        assert sx.range(0, 2, requires_grad=True).requires_grad
        o = sx.zeros(3)
        assert sx.range(0, 2, out=o) is o and _np(o).tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match=r"\[range\] step"):
        sx.range(0, 3, -1)
    with pytest.raises(ValueError, match=r"\[range\] step"):
        sx.range(0, 3, 0)
    with pytest.raises(ValueError, match=r"\[range\] end must be a finite number"):
        sx.range(0, float("inf"))


def test_ravel():
    a = RNG.standard_normal((2, 3, 4))
    x = sx.tensor(a)
    np.testing.assert_array_equal(_np(sx.ravel(x)), a.ravel())
    np.testing.assert_array_equal(_np(sx.ravel(x.transpose(0, 2))), a.transpose(2, 1, 0).ravel())
    with pytest.raises(TypeError, match=r"\[ravel\] expected input to be a Tensor"):
        sx.ravel([1, 2])


def test_new_inplace_forms():
    x = sx.tensor([12, 18, -8])
    assert sx.gcd_(x, sx.tensor([8, 12, 6])) is x and _np(x).tolist() == [4, 6, 2]
    x = sx.tensor([4, 6, 3])
    assert sx.lcm_(x, sx.tensor([6, 4, 5])) is x and _np(x).tolist() == [12, 12, 15]
    x = sx.tensor([1.0, -2.0])
    assert sx.ldexp_(x, sx.tensor([3, 1])) is x and _np(x).tolist() == [8.0, -4.0]
    a = RNG.uniform(-2, 2, 5)
    x = sx.tensor(a)
    assert sx.i0_(x) is x
    np.testing.assert_allclose(_np(x), np.i0(a), rtol=1e-6)


@pytest.mark.parity
def test_range_ravel_inplace_match_torch(torch):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for args in [(1, 4), (0, 1, 0.1), (5, 1, -1.5), (-3, 3, 0.7), (0, 0.3, 0.1), (0.5, -0.5, -0.1)]:
            np.testing.assert_allclose(_np(sx.range(*args)), torch.range(*args).numpy(), rtol=1e-6, atol=1e-7)
        assert _np(sx.range(2, 9, 3, dtype=sx.int64)).tolist() == torch.range(2, 9, 3, dtype=torch.int64).tolist()
    a = RNG.standard_normal((3, 4))
    np.testing.assert_array_equal(_np(sx.ravel(sx.tensor(a).t())), torch.ravel(torch.tensor(a).t()).numpy())
    for name, a, b in [("gcd_", [12, 18, -8], [8, 12, 6]), ("lcm_", [4, 6, 3], [6, 4, 5]),
                       ("ldexp_", [1.0, -2.0], [3, 1])]:
        x, tx = sx.tensor(a), torch.tensor(a)
        getattr(sx, name)(x, sx.tensor(b))
        getattr(torch, name)(tx, torch.tensor(b))
        np.testing.assert_allclose(_np(x), tx.numpy(), err_msg=name)
    a = RNG.uniform(-2, 2, 5)
    np.testing.assert_allclose(_np(sx.i0_(sx.tensor(a))), torch.i0_(torch.tensor(a)).numpy(), rtol=1e-6)


# ---------------------------------------------------------------- frombuffer
def test_frombuffer_shares_a_writable_buffer():
    buf = bytearray(np.arange(6, dtype=np.float32).tobytes())
    t = sx.frombuffer(buf, dtype=sx.float32)
    assert _np(t).tolist() == [0, 1, 2, 3, 4, 5]
    buf[0:4] = np.float32(9).tobytes()
    assert _np(t)[0] == 9.0
    t2 = sx.frombuffer(buf, dtype=sx.float32, count=2, offset=8)
    assert _np(t2).tolist() == [2.0, 3.0]


def test_frombuffer_dtypes_readonly_and_errors():
    raw = np.array([1, -2, 3], dtype=np.int32).tobytes()
    with pytest.warns(UserWarning, match="not writable"):
        t = sx.frombuffer(raw, dtype=sx.int32)
    assert t.dtype == sx.int32 and _np(t).tolist() == [1, -2, 3]
    bits = (np.array([1.5, -2.0], dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16).tobytes()
    with pytest.warns(UserWarning, match="copied"):
        b = sx.frombuffer(bytearray(bits), dtype=sx.bfloat16)
    assert b.dtype == sx.bfloat16 and _np(b.float()).tolist() == [1.5, -2.0]
    assert sx.frombuffer(bytearray(8), dtype=sx.float64, requires_grad=True).requires_grad
    with pytest.raises(ValueError, match=r"\[frombuffer\] .*count=3"):
        sx.frombuffer(bytearray(8), dtype=sx.float32, count=3)
    with pytest.raises(ValueError, match=r"\[frombuffer\] 7 bytes"):
        sx.frombuffer(bytearray(7), dtype=sx.float32)
    with pytest.raises(ValueError, match=r"\[frombuffer\] offset 9"):
        sx.frombuffer(bytearray(8), dtype=sx.uint8, offset=9)
    with pytest.raises(TypeError, match=r"\[frombuffer\] expected an object with the buffer protocol"):
        sx.frombuffer([1, 2], dtype=sx.uint8)


@pytest.mark.parity
def test_frombuffer_matches_torch(torch):
    data = np.arange(10, dtype=np.int64).tobytes()
    for dtype in ("uint8", "int32", "int64", "float16", "float32", "float64"):
        for count, offset in ((-1, 0), (2, 8), (1, 16)):
            size = np.dtype(dtype).itemsize
            if (len(data) - offset) % size and count == -1:
                continue
            t = sx.frombuffer(bytearray(data), dtype=getattr(sx, dtype), count=count, offset=offset)
            tt = torch.frombuffer(bytearray(data), dtype=getattr(torch, dtype), count=count, offset=offset)
            np.testing.assert_array_equal(_np(t), tt.numpy(), err_msg=f"{dtype} {count} {offset}")


# ---------------------------------------------------------------- printing
def test_set_printoptions_precision_and_sci_mode(print_defaults):
    x = sx.tensor([1.23456789, 2.5])
    assert repr(x) == "tensor([1.2346, 2.5000])"
    sx.set_printoptions(precision=2)
    assert repr(x) == "tensor([1.23, 2.50])"
    sx.set_printoptions(sci_mode=True)
    assert repr(x) == "tensor([1.23e+00, 2.50e+00])"
    sx.set_printoptions(profile="default")
    assert repr(x) == "tensor([1.2346, 2.5000])"  # sci_mode not given means None (choose), as in PyTorch
    sx.set_printoptions(sci_mode=False)
    assert repr(sx.tensor([1e-6, 1.0])) == "tensor([0.0000, 1.0000])"


def test_set_printoptions_threshold_edgeitems_profile(print_defaults):
    x = sx.arange(20)
    sx.set_printoptions(threshold=10, edgeitems=2)
    assert repr(x) == "tensor([ 0,  1,  ..., 18, 19])"
    sx.set_printoptions(profile="full")
    assert "..." not in repr(sx.arange(2000))
    sx.set_printoptions(profile="short")
    assert repr(sx.tensor([1.23456])) == "tensor([1.23])"
    sx.set_printoptions(linewidth=20)
    assert all(len(line) <= 20 for line in repr(sx.arange(12)).splitlines())
    with pytest.raises(ValueError, match=r"\[set_printoptions\] profile"):
        sx.set_printoptions(profile="long")
    with pytest.raises(ValueError, match=r"\[set_printoptions\] precision"):
        sx.set_printoptions(precision=-1)


@pytest.mark.parity
def test_set_printoptions_matches_torch(torch, print_defaults):
    cases = [np.array([1.23456789, -2.5, 1000.25]), np.array([1e-6, 2.0]), np.arange(2000.0) / 7,
             RNG.standard_normal((8, 9))]
    settings = [dict(precision=2), dict(precision=6, sci_mode=True), dict(threshold=5, edgeitems=1),
                dict(profile="short"), dict(sci_mode=False), dict(profile="full", precision=3), dict(profile="default")]
    try:
        for opts in settings:
            args = (opts.get("precision"), opts.get("threshold"), opts.get("edgeitems"), None, opts.get("profile"),
                    opts.get("sci_mode"))
            sx.set_printoptions(*args)
            torch.set_printoptions(*args)
            for a in cases[:3]:  # 1-d: rows wrap as NumPy wraps them, which can differ from PyTorch
                assert repr(sx.tensor(a, dtype=sx.float32)) == repr(torch.tensor(a, dtype=torch.float32)), opts
            sx.set_printoptions(profile="default", sci_mode=None)
            torch.set_printoptions(profile="default", sci_mode=None)
        sx.set_printoptions(threshold=20, edgeitems=2)
        torch.set_printoptions(threshold=20, edgeitems=2)
        assert repr(sx.tensor(cases[3], dtype=sx.float32)) == repr(torch.tensor(cases[3], dtype=torch.float32))
    finally:
        torch.set_printoptions(profile="default", sci_mode=None)


# ---------------------------------------------------------------- autocast, threads, warnings, denormals
def test_autocast_state():
    assert sx.get_autocast_dtype("cpu") == sx.bfloat16 and sx.get_autocast_dtype("cuda") == sx.float16
    assert sx.get_autocast_cpu_dtype() == sx.bfloat16 and sx.get_autocast_gpu_dtype() == sx.float16
    try:
        sx.set_autocast_dtype("cpu", sx.float16)
        assert sx.get_autocast_dtype("cpu") == sx.float16
        sx.set_autocast_gpu_dtype(sx.bfloat16)
        assert sx.get_autocast_dtype("cuda") == sx.bfloat16
        sx.set_autocast_cache_enabled(False)
        assert sx.is_autocast_cache_enabled() is False
    finally:
        sx.set_autocast_cpu_dtype(sx.bfloat16)
        sx.set_autocast_dtype("cuda", sx.float16)
        sx.set_autocast_cache_enabled(True)
    assert sx.is_autocast_cpu_enabled() is False and sx.clear_autocast_cache() is None
    sx.set_autocast_enabled("cpu", False)
    sx.set_autocast_enabled(False)
    sx.set_autocast_cpu_enabled(False)
    with pytest.raises(NotImplementedError, match=r"\[set_autocast_enabled\] autocasting on 'cuda' is not"):
        sx.set_autocast_enabled("cuda", True)
    with pytest.raises(ValueError, match=r"\[get_autocast_dtype\] device_type"):
        sx.get_autocast_dtype("tpu")
    with pytest.raises(ValueError, match=r"\[set_autocast_dtype\] dtype"):
        sx.set_autocast_dtype("cpu", sx.int32)


def test_threads_warnings_denormals():
    try:
        assert sx.get_num_interop_threads() == 1
        sx.set_num_interop_threads(3)
        assert sx.get_num_interop_threads() == 3
        with pytest.raises(ValueError, match=r"\[set_num_interop_threads\] num"):
            sx.set_num_interop_threads(0)
        assert sx.is_warn_always_enabled() is False
        sx.set_warn_always(True)
        assert sx.is_warn_always_enabled() is True
    finally:
        sx.set_num_interop_threads(1)
        sx.set_warn_always(False)
    assert sx.set_flush_denormal(True) is False and sx.set_flush_denormal(False) is False


def test_deterministic_debug_mode():
    try:
        for mode, level in (("warn", 1), (2, 2), ("default", 0), (1, 1), ("error", 2), (0, 0)):
            sx.set_deterministic_debug_mode(mode)
            assert sx.get_deterministic_debug_mode() == level
            assert sx.are_deterministic_algorithms_enabled() == (level > 0)
            assert sx.is_deterministic_algorithms_warn_only_enabled() == (level == 1)
        with pytest.raises(RuntimeError, match=r"\[set_deterministic_debug_mode\] invalid mode 3"):
            sx.set_deterministic_debug_mode(3)
        with pytest.raises(RuntimeError, match=r"\[set_deterministic_debug_mode\] invalid mode 'strict'"):
            sx.set_deterministic_debug_mode("strict")
    finally:
        sx.set_deterministic_debug_mode(0)


@pytest.mark.parity
def test_deterministic_debug_mode_matches_torch(torch):
    try:
        for mode in ("warn", 2, "default", 1, "error", 0):
            sx.set_deterministic_debug_mode(mode)
            torch.set_deterministic_debug_mode(mode)
            assert sx.get_deterministic_debug_mode() == torch.get_deterministic_debug_mode()
    finally:
        sx.set_deterministic_debug_mode(0)
        torch.set_deterministic_debug_mode(0)


@pytest.mark.parity
def test_autocast_defaults_match_torch(torch):
    for dev in ("cpu", "cuda"):
        assert repr(sx.get_autocast_dtype(dev)).split(".")[-1] == str(torch.get_autocast_dtype(dev)).split(".")[-1]
    assert sx.is_autocast_cpu_enabled() == torch.is_autocast_cpu_enabled()
    assert sx.is_autocast_cache_enabled() == torch.is_autocast_cache_enabled()
    assert sx.is_warn_always_enabled() == torch.is_warn_always_enabled()


# ---------------------------------------------------------------- Tensor methods
def test_apply_map_map2():
    a, b, c = RNG.standard_normal((2, 3)), RNG.standard_normal(3), RNG.standard_normal((2, 1))
    x = sx.tensor(a)
    assert x.apply_(lambda v: v * 2 + 1) is x
    np.testing.assert_allclose(_np(x), a * 2 + 1)
    x = sx.tensor(a)
    assert x.map_(sx.tensor(b), lambda u, v: u * v) is x
    np.testing.assert_allclose(_np(x), a * b)
    x = sx.tensor(a)
    assert x.map2_(sx.tensor(b), sx.tensor(c), lambda s, u, v: s + u - v) is x
    np.testing.assert_allclose(_np(x), a + b - c)
    i = sx.tensor([1, 2, 3])
    assert _np(i.apply_(lambda v: v * 10)).tolist() == [10, 20, 30] and i.dtype == sx.int64


def test_apply_map_errors():
    with pytest.raises(TypeError, match=r"\[apply_\] can't call apply_\(\) on a tensor that requires grad"):
        sx.ones(2, requires_grad=True).apply_(abs)
    with pytest.raises(TypeError, match=r"\[apply_\] expected a callable"):
        sx.ones(2).apply_(3)
    with pytest.raises(ValueError, match=r"\[map_\] argument 0 of shape \(3,\) does not broadcast to \(2,\)"):
        sx.ones(2).map_(sx.ones(3), max)


def test_histogram_method_and_const_data_ptr():
    a = RNG.standard_normal(50)
    h, e = sx.tensor(a).histogram(5, range=(-2.0, 2.0))
    rh, re = np.histogram(a, 5, range=(-2, 2))
    np.testing.assert_array_equal(_np(h), rh)
    np.testing.assert_allclose(_np(e), re, rtol=1e-6)
    x = sx.ones(3)
    assert x.const_data_ptr() == x.data_ptr()


def test_dim_order():
    x = sx.zeros((2, 3, 4))
    assert x.dim_order() == (0, 1, 2) and x.permute(2, 0, 1).dim_order() == (1, 2, 0)
    assert x.transpose(0, 1).dim_order() == (1, 0, 2) and sx.zeros(()).dim_order() == ()
    with pytest.raises(RuntimeError, match=r"\[dim_order\] .*unique"):
        sx.zeros((2, 1, 3)).dim_order(ambiguity_check=True)


def test_nonzero_static():
    a = np.array([[0, 1, 0], [2, 0, 3]])
    x = sx.tensor(a)
    ref = np.argwhere(a)
    assert _np(x.nonzero_static(size=5)).tolist() == ref.tolist() + [[-1, -1]] * 2
    assert _np(sx.nonzero_static(x, size=2, fill_value=7)).tolist() == ref[:2].tolist()
    assert tuple(sx.nonzero_static(x, size=0).shape) == (0, 2)
    with pytest.raises(ValueError, match=r"\[nonzero_static\] size"):
        x.nonzero_static(size=-1)


@pytest.mark.parity
def test_methods_match_torch(torch):
    a, b, c = RNG.standard_normal((2, 3)), RNG.standard_normal(3), RNG.standard_normal((2, 1))
    x, tx = sx.tensor(a), torch.tensor(a)
    np.testing.assert_allclose(_np(x.map2_(sx.tensor(b), sx.tensor(c), lambda s, u, v: s * u + v)),
                               tx.map2_(torch.tensor(b), torch.tensor(c), lambda s, u, v: s * u + v).numpy())
    np.testing.assert_allclose(_np(x.apply_(lambda v: v ** 2)), tx.apply_(lambda v: v ** 2).numpy())
    np.testing.assert_allclose(_np(x.map_(sx.tensor(b), min)), tx.map_(torch.tensor(b), min).numpy())
    z = np.zeros((2, 3, 4, 5))
    for perm in [(0, 1, 2, 3), (3, 2, 1, 0), (0, 2, 3, 1), (1, 0, 3, 2)]:
        assert sx.tensor(z).permute(*perm).dim_order() == torch.tensor(z).permute(*perm).dim_order(), perm
    for shape, perm in [((2, 1, 3), (2, 0, 1)), ((1, 4), (1, 0)), ((3, 1, 1), (1, 2, 0))]:
        s, t = sx.zeros(shape).permute(*perm), torch.zeros(shape).permute(*perm)
        assert s.dim_order() == t.dim_order(), (shape, perm)
    m = np.array([[0, 1.5, 0], [2, 0, 0]])
    for size, fill in ((1, -1), (4, 9)):
        np.testing.assert_array_equal(_np(sx.nonzero_static(sx.tensor(m), size=size, fill_value=fill)),
                                      torch.nonzero_static(torch.tensor(m), size=size, fill_value=fill).numpy())
    h, e = sx.tensor(a).histogram(4)
    th, te = torch.tensor(a).histogram(4)
    np.testing.assert_allclose(_np(h), th.numpy())
    np.testing.assert_allclose(_np(e), te.numpy(), rtol=1e-12)


# ---------------------------------------------------------------- igamma / igammac
def test_igamma_is_special_gammainc():
    a, x = sx.tensor([0.5, 1.0, 2.5, 7.0], dtype=sx.float64), sx.tensor([0.3, 1.0, 4.0, 2.0], dtype=sx.float64)
    # P(1, x) = 1 - exp(-x); P + Q = 1
    np.testing.assert_allclose(sx.igamma(a, x).numpy()[1], 1 - np.exp(-1.0), rtol=1e-14)
    np.testing.assert_allclose((a.igamma(x) + a.igammac(x)).numpy(), np.ones(4), rtol=1e-14)
    np.testing.assert_array_equal(sx.igammac(a, x).numpy(), sx.special.gammaincc(a, x).numpy())
    b = a.clone()
    assert b.igamma_(x) is b
    np.testing.assert_array_equal(b.numpy(), sx.special.gammainc(a, x).numpy())
    with pytest.raises(TypeError, match=r"\[igamma_\].*int64"):
        sx.tensor([1, 2]).igamma_(sx.tensor([1.0, 2.0]))


@pytest.mark.parity
def test_igamma_matches_torch(torch):
    rng = np.random.default_rng(5)
    a, x = rng.uniform(0.1, 10, 50), rng.uniform(0, 12, 50)
    for name in ("igamma", "igammac"):
        got = getattr(sx, name)(sx.tensor(a), sx.tensor(x)).numpy()
        want = getattr(torch, name)(torch.tensor(a), torch.tensor(x)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_widened_numpy_integers_warn():
    a = np.array([1, 2, 300], np.uint32)
    with pytest.warns(UserWarning, match=r"\[tensor\] NumPy uint32 has no SneppX dtype: .* int64"):
        t = sx.tensor(a)
    assert t.dtype == sx.int64 and t.tolist() == [1, 2, 300]
    for fn in (sx.as_tensor, sx.asarray):
        with pytest.warns(UserWarning, match="uint16"):
            fn(np.array([7], np.uint16))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a chosen dtype, or a dtype SneppX has, converts silently
        assert sx.tensor(a, dtype=sx.float32).tolist() == [1.0, 2.0, 300.0]
        sx.tensor(np.array([1], np.uint8))
        assert sx.tensor(np.array([-2, 300], np.int16)).dtype == sx.int16


def test_version_and_compiler_settings():
    assert sx.version.__version__ == sx.__version__ and sx.version.debug is False
    assert (sx.version.cuda is None) == (not sx._HAS_CUDA)
    import sneppx_core._inductor.config as config
    config.coordinate_descent_tuning = True
    config.triton.unique_kernel_names = True
    sx._dynamo.config.cache_size_limit = 64
    sx._functorch.config.enable_autograd_cache = True
    assert config.triton.unique_kernel_names is True and sx._dynamo.config.cache_size_limit == 64
    assert sx._functorch.config.enable_autograd_cache is True
    with pytest.raises(AttributeError, match="never set"):
        config.triton.cudagraphs
    sx._dynamo.reset()
    sx._dynamo.mark_dynamic(sx.ones(2), 0)
    assert sx._dynamo.is_compiling() is False


def test_device_context_generator_device_dtype_and_sdp_kernel():
    assert sx.dtype is sx.Dtype and isinstance(sx.float32, sx.dtype)
    before = sx.get_default_device()
    with sx.device("cpu") as d:
        assert d == "cpu" and sx.zeros(2).device == "cpu" and sx.get_default_device() == "cpu"
        with sx.device("cpu"):
            pass
    assert sx.get_default_device() == before
    g = sx.Generator(device="cpu")
    g.manual_seed(3)
    a = sx.randn(4, generator=g)
    g2 = sx.Generator(3)  # SneppX's seed form
    np.testing.assert_array_equal(a.numpy(), sx.randn(4, generator=g2).numpy())
    with pytest.raises(ValueError, match="device"):
        sx.Generator(device="tpu")
    with pytest.raises(RuntimeError, match="meta"):  # as PyTorch
        sx.Generator(device="meta")
    with sx.backends.cuda.sdp_kernel(enable_flash=False):
        pass
    with pytest.raises(RuntimeError, match="at least one"):
        with sx.backends.cuda.sdp_kernel(False, False, False, False):
            pass
    if not sx.cuda.is_available():
        assert sx.cuda.max_memory_reserved() == 0
