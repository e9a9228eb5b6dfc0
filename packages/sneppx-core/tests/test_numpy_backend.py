"""The NumPy backend against the C backend, in one process.

A second copy of sneppx_core is imported under another name with ``SNEPPX_BACKEND=numpy`` (its
Python layer is the same source, on top of ``sneppx_core._numpy_backend``). Every forward case of
the op table runs on both copies from the same input values; the results must have the same dtype
and shape and agree within the float32 tolerance of the op table (exactly for integer and bool
results). The training entry points of the NumPy copy must raise the documented RuntimeError, and
ops beyond its surface NotImplementedError.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import sys
import warnings

import numpy as np
import pytest
import sneppx_core as sx

from opcheck import LAYOUTS, rng_for
from optable import FLOATS, OPS, arg_dtype, tolerance, values

NAME = "sneppx_core_numpy_copy"


_IMPORTED = []


def _import_numpy_copy():
    """sneppx_core's sources imported again as ``NAME`` with SNEPPX_BACKEND=numpy; (module, warnings)."""
    if _IMPORTED:
        return _IMPORTED[0]
    src = pathlib.Path(sx.__file__).parent
    spec = importlib.util.spec_from_file_location(NAME, src / "__init__.py", submodule_search_locations=[str(src)])
    module = importlib.util.module_from_spec(spec)
    old = os.environ.get("SNEPPX_BACKEND")
    os.environ["SNEPPX_BACKEND"] = "numpy"
    sys.modules[NAME] = module
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[NAME]
        raise
    finally:
        if old is None:
            del os.environ["SNEPPX_BACKEND"]
        else:
            os.environ["SNEPPX_BACKEND"] = old
    _IMPORTED.append((module, list(caught)))
    return _IMPORTED[0]


@pytest.fixture(scope="module")
def npx():
    return _import_numpy_copy()[0]


def _to_np(m, t):
    t = t.detach()
    if t.dtype == m.bfloat16:
        t = t.float()
    return np.array(t.numpy())


def _make_input(m, a, dtype, layout):
    """``a`` as a tensor of module ``m`` in ``layout`` (as ``opcheck.make_input`` builds them)."""
    dt = getattr(m, dtype)
    nd = a.ndim
    if layout == "transposed" and nd >= 2:
        rev = tuple(reversed(range(nd)))
        return m.tensor(np.ascontiguousarray(a.transpose(rev)), dtype=dt).permute(*rev)
    if layout == "sliced" and nd >= 1:
        big = np.zeros(tuple(2 * n + 1 for n in a.shape), dtype=a.dtype)
        sl = tuple(slice(1, None, 2) for _ in range(nd))
        big[sl] = a
        return m.tensor(big, dtype=dt)[sl]
    if layout == "broadcast":
        for d, n in enumerate(a.shape):
            if n > 1:
                return m.tensor(np.take(a, [0], axis=d), dtype=dt).expand(*a.shape)
    return m.tensor(a, dtype=dt)


def _flat(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


FORWARD = [(s, d, lay) for s in OPS for d in s.dtypes for lay in LAYOUTS if lay in s.layouts]


@pytest.mark.parametrize("spec,dtype,layout", FORWARD,
                         ids=["-".join([s.name, d, lay]) for s, d, lay in FORWARD])
def test_forward_matches_c_backend(npx, spec, dtype, layout):
    rng = rng_for("numpy-backend", spec.name, dtype, layout)
    for k, case in enumerate(spec.cases):
        arrays = [values(rng, arg, dtype) for arg in case]
        dts = [arg_dtype(arg, dtype) for arg in case]
        got = _flat(spec.fn(npx, *[_make_input(npx, a, d, layout) for a, d in zip(arrays, dts)]))
        want = _flat(spec.fn(sx, *[_make_input(sx, a, d, layout) for a, d in zip(arrays, dts)]))
        label = f"{spec.name} {dtype} {layout} case {k}"
        assert len(got) == len(want), label
        for g, w in zip(got, want):
            assert g.dtype.name == w.dtype.name, f"{label}: dtype {g.dtype} vs C {w.dtype}"
            assert tuple(g.shape) == tuple(w.shape), f"{label}: shape {tuple(g.shape)} vs C {tuple(w.shape)}"
            if w.dtype.name in FLOATS:
                rtol, atol = tolerance(spec, "float32" if w.dtype.name == "float64" else w.dtype.name)
                np.testing.assert_allclose(_to_np(npx, g).astype(np.float64), _to_np(sx, w).astype(np.float64),
                                           rtol=rtol, atol=atol, equal_nan=True, err_msg=label)
            else:
                np.testing.assert_array_equal(_to_np(npx, g), _to_np(sx, w), err_msg=label)


# ---------------------------------------------------------------- the NumPy copy itself
def test_import_warns_and_reports_the_backend():
    module, caught = _import_numpy_copy()
    msgs = [str(w.message) for w in caught if issubclass(w.category, ImportWarning)]
    assert len(msgs) == 1 and "SNEPPX_BACKEND=numpy" in msgs[0] and "NumPy backend" in msgs[0]
    assert module._HAS_C_BACKEND is False and module._HAS_CUDA is False and module._BACKEND == "numpy"
    assert sx._HAS_C_BACKEND is (sx._BACKEND == "c")


def test_training_entry_points_raise(npx):
    x = npx.ones(3, requires_grad=True)
    loss = (x * 2).sum()
    for call in (loss.backward, lambda: npx.autograd.grad([loss], [x]),
                 lambda: npx.functional.sgd_step([x], [x], [None], lr=0.1, momentum=0.0, dampening=0.0,
                                                 nesterov=False, weight_decay=0.0, maximize=False),
                 lambda: x.register_hook(lambda g: g)):
        with pytest.raises(RuntimeError, match="training requires the C backend.*C\\+\\+20 compiler"):
            call()
    with pytest.raises(RuntimeError, match="training requires the C backend"):
        npx._require_training("Trainer.fit")


def test_ops_beyond_the_surface_raise_not_implemented(npx):
    x = npx.ones(1, 2, 5, 5)
    with pytest.raises(NotImplementedError, match=r"\[conv\].*numpy backend"):
        npx.functional.conv2d(x, npx.ones(3, 2, 3, 3))
    with pytest.raises(NotImplementedError, match="numpy backend"):
        npx._C._parallel_raise("value")


def test_views_share_memory_and_bfloat16_rounds(npx):
    x = npx.zeros(2, 3)
    x[0].fill_(5)
    x.t()[2].copy_(npx.tensor([7.0, 8.0]))
    x.view(6)[1] = 9
    assert x.tolist() == [[5, 9, 7], [0, 0, 8]]
    b = npx.tensor([1.1, 300.7]).bfloat16()
    assert b.tolist() == [1.1015625, 300.0] and b.dtype == npx.bfloat16
    with pytest.raises(RuntimeError, match=r"\[view\]"):
        x.t().view(6)


def test_dtype_rules_match_the_c_backend(npx):
    cases = [lambda m: m.tensor([1, 2]) / 2, lambda m: m.tensor([1, 2]) * 1.5,
             lambda m: m.tensor([1.0]).half() + m.tensor(1.0), lambda m: m.tensor([1], dtype=m.int32) + m.tensor(1),
             lambda m: m.tensor([True]) + m.tensor([True]), lambda m: m.tensor([1, 2], dtype=m.uint8).sum(),
             lambda m: m.tensor([1.0], dtype=m.float64) + 1.5, lambda m: 2 ** m.tensor([1, 2]),
             lambda m: m.arange(3), lambda m: m.arange(0.5, 2), lambda m: m.full((2,), 1),
             lambda m: m.tensor([1, 2.5]), lambda m: m.tensor(np.float64(1.0)), lambda m: m.zeros(2).long().cumsum(0),
             lambda m: m.tensor([100, -100], dtype=m.int8) * 3, lambda m: m.tensor([-3], dtype=m.int8) + m.ones(1,
             dtype=m.uint8), lambda m: m.tensor(np.array([7, -9], np.int16)).sum(), lambda m: m.ones(2).short() + 1]
    for f in cases:
        assert f(npx).dtype.name == f(sx).dtype.name
        np.testing.assert_array_equal(f(npx).numpy(), f(sx).numpy())


def test_inplace_casts_are_refused_as_on_the_c_backend(npx):
    """Both backends refuse a float result into an integer tensor and a number into a bool one, with
    the same TypeError naming the in-place op; a float64 result narrows into float32 on both."""
    refused = [(lambda m: m.tensor([1, 2]).mul_(1.5), "mul_"), (lambda m: m.tensor([True]).add_(1), "add_"),
               (lambda m: m.tensor([1, 2]).__itruediv__(2), "div_")]
    for f, op in refused:
        for m in (npx, sx):
            with pytest.raises(TypeError, match=rf"\[{op}\] result type .* can't be cast"):
                f(m)
    for m in (npx, sx):
        x = m.tensor([1.0, 2.0])
        x.add_(m.tensor([0.5], dtype=m.float64))
        assert x.dtype == m.float32 and x.tolist() == [1.5, 2.5]


def test_seeding_api(npx):
    npx.manual_seed(3)
    a = npx.randn(4)
    npx.manual_seed(3)
    assert npx.randn(4).tolist() == a.tolist()
    g = npx.Generator(5)
    assert g.initial_seed() == 5
    s = g.get_state()
    r = npx.rand(3, generator=g)
    g.set_state(s)
    assert npx.rand(3, generator=g).tolist() == r.tolist()
    assert npx.randint(0, 10, (3,)).dtype == npx.int64 and npx.randperm(5).sort().values.tolist() == list(range(5))


def test_dtype_views_and_as_strided_match_the_c_backend(npx):
    """``view(dtype)`` reads the bytes as another dtype (llm.c's bf16 writer, the checkpoint reader's typed
    storages) and ``_as_strided`` makes the checkpoint reader's views; both as on the C backend."""
    a = np.array([[1.0, -2.0, 0.5, 3.25], [7.0, -0.125, 9.0, 1e-3]], np.float32)
    for m in (npx, sx):
        bits = m.tensor(a).bfloat16().view(m.int16)
        assert bits.dtype.name == "int16" and bits.tolist() == sx.tensor(a).bfloat16().view(sx.int16).tolist()
        assert bits.view(m.bfloat16).float().tolist() == sx.tensor(a).bfloat16().float().tolist()
        np.testing.assert_array_equal(m.tensor(a).view(m.int8).numpy(), a.view(np.int8))
        np.testing.assert_array_equal(m.tensor(a).view(m.uint8).view(m.float32).numpy(), a)
        flat = m.tensor(np.arange(12, dtype=np.float32))
        np.testing.assert_array_equal(m._C._as_strided(flat, [2, 3], [1, 4], 2).numpy(),
                                      np.lib.stride_tricks.as_strided(np.arange(12.0)[2:], (2, 3), (8, 32)))
    with pytest.raises(RuntimeError, match="as_strided"):
        npx._C._as_strided(npx.tensor(np.arange(4.0)), [3], [2], 0)
    with pytest.raises(RuntimeError, match="view"):
        npx.tensor(np.ones(3, np.float32)).view(npx.float64)
