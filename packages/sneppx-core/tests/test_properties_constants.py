"""Tensor properties (is_xpu, layout, output_nr, ...), module constants, layouts and memory formats
(contiguous / clone / to / *_like with memory_format) and the torch.backends submodules."""

from __future__ import annotations

import copy
import importlib
import math
import pickle
import sys

import numpy as np
import pytest

import sneppx_core as sx

NOT_PROPS = ["is_xpu", "is_mps", "is_xla", "is_ipu", "is_mtia", "is_maia", "is_mkldnn", "is_vulkan",
             "is_quantized", "is_sparse", "is_sparse_csr", "is_nested"]
FORMATS = ["contiguous_format", "preserve_format", "channels_last", "channels_last_3d"]
LAYOUTS = ["strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc"]


def _cl_strides(shape):
    """Channels-last strides computed by hand: the dims in order (0, 2, 3, 1) / (0, 2, 3, 4, 1) are row-major."""
    order = [0, *range(2, len(shape)), 1]
    out, acc = [0] * len(shape), 1
    for d in reversed(order):
        out[d], acc = acc, acc * max(shape[d], 1)
    return tuple(out)


def _row_major(shape):
    out, acc = [0] * len(shape), 1
    for d in reversed(range(len(shape))):
        out[d], acc = acc, acc * max(shape[d], 1)
    return tuple(out)


def test_false_properties_and_layout():
    t = sx.randn(2, 3, requires_grad=True)
    for name in NOT_PROPS:
        assert isinstance(getattr(sx.Tensor, name), property), name
        assert getattr(t, name) is False and getattr(t * 2, name) is False
        with pytest.raises(AttributeError):
            setattr(t, name, True)
    assert t.layout is sx.strided and t.is_cpu and t.name is None
    assert t.output_nr == 0 and (t * 2).output_nr == 0 and t.split(1)[1].output_nr == 0
    assert t.real is t
    with pytest.raises(RuntimeError, match="non-complex"):
        _ = t.imag


def test_volatile_warns_and_is_false():
    t = sx.ones(2)
    with pytest.warns(UserWarning, match="volatile was removed"):
        assert t.volatile is False
    with pytest.warns(UserWarning, match="no effect"):
        t.volatile = True


def test_grad_dtype():
    leaf = sx.ones(2, dtype=sx.float64, requires_grad=True)
    assert leaf.grad_dtype == sx.float64 and sx.ones(2, dtype=sx.int64).grad_dtype == sx.int64
    leaf.grad_dtype = sx.float64  # its own dtype: accepted
    with pytest.raises(NotImplementedError, match="grad_dtype"):
        leaf.grad_dtype = sx.float32
    with pytest.raises(TypeError, match="grad_dtype"):
        leaf.grad_dtype = "float32"
    with pytest.raises(RuntimeError, match="leaf"):
        _ = (leaf * 2).grad_dtype
    with pytest.raises(RuntimeError, match="leaf"):
        (leaf * 2).grad_dtype = sx.float64


def test_constants():
    assert sx.pi == math.pi and sx.e == math.e and sx.inf == math.inf and math.isnan(sx.nan)
    assert sx.newaxis is None
    a = sx.arange(6).reshape(2, 3)
    assert tuple(a[:, sx.newaxis].shape) == (2, 1, 3)
    for name in FORMATS + LAYOUTS + ["layout", "memory_format"]:
        assert name in sx.__all__
    for name in FORMATS:
        obj = getattr(sx, name)
        assert isinstance(obj, sx.memory_format) and repr(obj) == f"sneppx.{name}" and str(obj) == repr(obj)
        assert pickle.loads(pickle.dumps(obj)) is obj and copy.deepcopy(obj) is obj
    for name in LAYOUTS:
        assert isinstance(getattr(sx, name), sx.layout) and repr(getattr(sx, name)) == f"sneppx.{name}"
    assert sx.strided != sx.sparse_coo and sx.channels_last != sx.contiguous_format
    with pytest.raises(TypeError):
        sx.memory_format()
    with pytest.raises(TypeError):
        sx.layout()


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (2, 1, 4, 1), (1, 3, 1, 1), (0, 3, 4, 5), (2, 3, 2, 2, 3)])
def test_channels_last_strides_values_and_test(shape):
    fmt = sx.channels_last if len(shape) == 4 else sx.channels_last_3d
    other = sx.channels_last_3d if len(shape) == 4 else sx.channels_last
    x = sx.randn(*shape, dtype=sx.float64)
    y = x.contiguous(memory_format=fmt)
    assert y.is_contiguous(memory_format=fmt)
    # a row-major tensor that is channels-last too (size-1 dims) is kept; to() copies it (its strides suggest NCHW)
    assert y is x if x.is_contiguous(memory_format=fmt) else y.stride() == _cl_strides(shape)
    assert x.to(memory_format=fmt).stride() == _cl_strides(shape)
    assert not y.is_contiguous(memory_format=other)
    np.testing.assert_array_equal(y.numpy(), x.numpy())
    assert y.contiguous(memory_format=fmt) is y
    assert y.contiguous().is_contiguous() and x.contiguous() is x
    assert y.is_contiguous(memory_format=sx.preserve_format) == y.is_contiguous()


def test_is_contiguous_channels_last_reads_strides():
    x = sx.randn(2, 3, 4, 5)
    assert x.is_contiguous() and not x.is_contiguous(memory_format=sx.channels_last)
    assert x.permute(0, 2, 3, 1).is_contiguous() is False
    nhwc = sx.randn(2, 4, 5, 3).permute(0, 3, 1, 2)  # NHWC memory viewed as NCHW: channels-last by construction
    assert nhwc.is_contiguous(memory_format=sx.channels_last) and not nhwc.is_contiguous()
    assert not nhwc[:, :, :, ::2].is_contiguous(memory_format=sx.channels_last)  # a gap
    assert not sx.randn(3, 4).is_contiguous(memory_format=sx.channels_last)  # another rank: never channels-last
    assert sx.randn(1, 3, 1, 1).is_contiguous(memory_format=sx.channels_last)  # size-1 dims do not count
    with pytest.raises(TypeError, match="memory_format"):
        x.is_contiguous(memory_format="channels_last")


def test_contiguous_errors():
    with pytest.raises(RuntimeError, match=r"\[contiguous\] required rank 4 tensor to use channels_last format"):
        sx.randn(3, 4, 5).contiguous(memory_format=sx.channels_last)
    with pytest.raises(RuntimeError, match="required rank 5 tensor to use channels_last_3d"):
        sx.randn(2, 3, 4, 5).contiguous(memory_format=sx.channels_last_3d)
    with pytest.raises(TypeError, match=r"\[contiguous\].*memory_format"):
        sx.randn(2).contiguous(memory_format=1)
    x = sx.randn(2, 3)
    assert x.contiguous(memory_format=sx.preserve_format) is x
    with pytest.raises(RuntimeError, match="preserve memory format is unsupported"):
        x.t().contiguous(memory_format=sx.preserve_format)


def test_clone_to_and_casts_keep_or_set_the_format():
    x = sx.randn(2, 3, 4, 5)
    y = x.contiguous(memory_format=sx.channels_last)
    cl, rm = _cl_strides((2, 3, 4, 5)), _row_major((2, 3, 4, 5))
    assert y.clone().stride() == cl and sx.clone(y).stride() == cl  # preserve_format keeps channels-last
    assert y.clone(memory_format=sx.contiguous_format).stride() == rm
    assert x.clone(memory_format=sx.channels_last).stride() == cl and x.clone().stride() == rm
    assert x.to(memory_format=sx.channels_last).stride() == cl and y.to(memory_format=sx.channels_last) is y
    assert y.to(memory_format=sx.contiguous_format).stride() == rm and x.to(memory_format=sx.preserve_format) is x
    assert y.double().stride() == cl and y.to(sx.float64).stride() == cl and x.double().stride() == rm
    assert x.float(memory_format=sx.channels_last).stride() == cl and x.float() is x
    c = y.clone()
    c.add_(1.0)  # a clone owns its memory
    np.testing.assert_allclose(c.numpy(), x.numpy() + 1.0, rtol=1e-6)
    with pytest.raises(TypeError, match=r"\[to\].*memory_format"):
        x.to(memory_format="channels_last")
    with pytest.raises(RuntimeError, match=r"\[clone\] required rank 4"):
        sx.randn(3).clone(memory_format=sx.channels_last)


def test_like_factories_take_memory_format():
    x = sx.randn(2, 3, 4, 5)
    y = x.contiguous(memory_format=sx.channels_last)
    cl, rm = _cl_strides((2, 3, 4, 5)), _row_major((2, 3, 4, 5))
    for fn, args in [(sx.empty_like, ()), (sx.zeros_like, ()), (sx.ones_like, ()), (sx.full_like, (2.0,)),
                     (sx.rand_like, ()), (sx.randn_like, ()), (sx.randint_like, (5,))]:
        assert fn(y, *args).stride() == cl and fn(x, *args).stride() == rm
        assert fn(x, *args, memory_format=sx.channels_last).stride() == cl
        assert fn(y, *args, memory_format=sx.contiguous_format).stride() == rm
    z = sx.zeros_like(x, memory_format=sx.channels_last, requires_grad=True)
    assert z.is_leaf and z.requires_grad and float(z.abs().sum()) == 0.0
    assert float(sx.full_like(x, 2.0, memory_format=sx.channels_last).sum()) == 2.0 * x.numel()
    with pytest.raises(RuntimeError, match=r"\[zeros_like\] required rank 4"):
        sx.zeros_like(sx.ones(3), memory_format=sx.channels_last)


def test_channels_last_gradients():
    x = sx.randn(2, 3, 2, 2, dtype=sx.float64, requires_grad=True)
    w = sx.randn(2, 3, 2, 2, dtype=sx.float64)
    assert sx.autograd.gradcheck(lambda a: (a.contiguous(memory_format=sx.channels_last) * w).sum(), (x,))
    assert sx.autograd.gradcheck(lambda a: a.clone(memory_format=sx.channels_last).exp(), (x,))
    (x.to(memory_format=sx.channels_last) * w).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), w.numpy())


def test_backends_submodules_import():
    import sneppx_core.backends.cudnn as cudnn

    assert cudnn is sx.backends.cudnn and sys.modules["sneppx_core.backends.cudnn"] is cudnn
    for name in ("cuda", "cpu", "mps", "mkldnn", "mkl", "openmp", "opt_einsum"):
        assert importlib.import_module(f"sneppx_core.backends.{name}") is getattr(sx.backends, name)
    assert not any(getattr(sx.backends, n).is_available() for n in ("cudnn", "mkldnn", "mkl", "openmp", "opt_einsum"))
    oe = sx.backends.opt_einsum
    assert oe.get_opt_einsum() is None and oe.enabled is False and oe.strategy is None
    oe.enabled = False
    with pytest.raises(ValueError, match="opt_einsum is not available"):
        oe.enabled = True
    with pytest.raises(ValueError, match="opt_einsum is not available"):
        oe.strategy = "greedy"
    assert sx.has_mkl is False and sx.has_openmp is False
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("sneppx_core.backends.no_such_backend")


# ---- parity with PyTorch ---------------------------------------------------------------------------------------

@pytest.mark.parity
def test_parity_property_names_and_values(torch):
    for name in NOT_PROPS + ["layout", "output_nr", "volatile", "name", "grad_dtype", "real", "imag"]:
        assert not callable(getattr(torch.Tensor, name)) and not callable(getattr(sx.Tensor, name)), name
    t, s = torch.ones(2, 3), sx.ones(2, 3)
    for name in NOT_PROPS + ["output_nr", "name"]:
        assert getattr(t, name) == getattr(s, name), name
    assert repr(t.layout).split(".")[1] == repr(s.layout).split(".")[1] == "strided"
    for name in FORMATS + LAYOUTS:
        assert repr(getattr(torch, name)).split(".")[1] == repr(getattr(sx, name)).split(".")[1]
    for name in ("pi", "e", "inf"):
        assert getattr(torch, name) == getattr(sx, name)
    assert sx.newaxis is torch.newaxis and (sx.has_mkl, sx.has_openmp) != (None, None)


@pytest.mark.parity
@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (2, 1, 4, 1), (1, 3, 1, 1), (0, 3, 4, 5), (1, 1, 1, 1),
                                   (2, 3, 2, 2, 3), (1, 2, 1, 3, 1)])
def test_parity_channels_last(torch, shape):
    tfmt, sfmt = ((torch.channels_last, sx.channels_last) if len(shape) == 4
                  else (torch.channels_last_3d, sx.channels_last_3d))
    a = np.random.default_rng(0).standard_normal(shape)
    t, s = torch.tensor(a), sx.tensor(a)
    tc, sc = t.contiguous(memory_format=tfmt), s.contiguous(memory_format=sfmt)
    assert tc.stride() == sc.stride()
    for tv, sv in [(t, s), (tc, sc), (t.transpose(1, -1), s.transpose(1, -1)),
                   (tc.transpose(0, 1), sc.transpose(0, 1)), (t.permute(0, *range(2, len(shape)), 1),
                                                              s.permute(0, *range(2, len(shape)), 1))]:
        for tf, sf in [(tfmt, sfmt), (torch.contiguous_format, sx.contiguous_format)]:
            assert tv.is_contiguous(memory_format=tf) == sv.is_contiguous(memory_format=sf)
    if t.numel():  # PyTorch's preserve_format keeps any dense strides; SneppX only a suggested channels-last layout
        assert tc.clone().stride() == sc.clone().stride()
        assert torch.empty_like(tc).stride() == sx.empty_like(sc).stride()
        assert tc.float().stride() == sc.float().stride() and t.float().stride() == s.float().stride()
    assert t.to(memory_format=tfmt).stride() == s.to(memory_format=sfmt).stride()
    tt, st = t.transpose(0, 1), s.transpose(0, 1)  # strides that suggest row-major: to() keeps the tensor
    assert (tt.to(memory_format=torch.contiguous_format) is tt) == (st.to(memory_format=sx.contiguous_format) is st)
    np.testing.assert_array_equal(sc.numpy(), tc.numpy())


@pytest.mark.parity
def test_parity_memory_format_errors(torch):
    cases = [lambda m: m.randn(3, 4, 5).contiguous(memory_format=m.channels_last),
             lambda m: m.randn(2, 3, 4, 5).contiguous(memory_format=m.channels_last_3d),
             lambda m: m.randn(2, 3).t().contiguous(memory_format=m.preserve_format),
             lambda m: m.randn(2, 3).contiguous(memory_format="channels_last"),
             lambda m: m.ones(2, requires_grad=True).mul(2).grad_dtype,
             lambda m: m.ones(2).imag]
    for case in cases:
        with pytest.raises(Exception) as te:
            case(torch)
        with pytest.raises(Exception) as se:
            case(sx)
        assert type(se.value) is type(te.value), (te.value, se.value)


def test_real_imag_functions_and_more_constants():
    x = sx.arange(3.0)
    assert sx.real(x) is x
    with pytest.raises(RuntimeError, match="non-complex"):
        sx.imag(x)
    assert sx.legacy_contiguous_format is sx.contiguous_format and x.contiguous(
        memory_format=sx.legacy_contiguous_format) is x
    assert sx.has_lapack is True and sx.has_spectral is False  # linalg on NumPy's LAPACK; no FFT


@pytest.mark.parity
def test_real_imag_and_resize_match_torch(torch):
    t = torch.arange(6.0)
    assert torch.real(t) is t and sx.legacy_contiguous_format is sx.contiguous_format
    assert torch.legacy_contiguous_format is torch.contiguous_format
    with pytest.raises(RuntimeError):
        torch.imag(t)
    with pytest.warns(UserWarning):
        assert tuple(t.resize(3, 2).shape) == tuple(sx.arange(6.0).resize(3, 2).shape)
