"""set_default_dtype / get_default_dtype: factories, Python floats and integer promotions follow the default
floating dtype, as in PyTorch (parity tests compare every case with torch under the same default)."""

import numpy as np
import pytest

import sneppx_core as sx

pytestmark = pytest.mark.skipif(not sx._HAS_C_BACKEND, reason="the NumPy backend keeps float32")


@pytest.fixture
def default64():
    sx.set_default_dtype(sx.float64)
    try:
        yield
    finally:
        sx.set_default_dtype(sx.float32)


def _cases(lib):
    """(name, thunk) pairs whose results' dtypes (and values, where deterministic) follow the default."""
    i = lib.tensor([1, 2, 3])
    return [
        ("zeros", lambda: lib.zeros(2, 3)), ("ones", lambda: lib.ones(2)), ("empty", lambda: lib.empty(2)),
        ("full_float", lambda: lib.full((2,), 1.5)), ("full_int", lambda: lib.full((2,), 3)),
        ("rand", lambda: lib.rand(3)), ("randn", lambda: lib.randn(3)),
        ("arange_float", lambda: lib.arange(0, 1, 0.25)), ("arange_int", lambda: lib.arange(3)),
        ("linspace", lambda: lib.linspace(0, 1, 5)), ("eye", lambda: lib.eye(2)),
        ("tensor_float", lambda: lib.tensor([1.5, 2.0])), ("tensor_0d", lambda: lib.tensor(2.0)),
        ("tensor_int", lambda: lib.tensor([1, 2])), ("tensor_f32_array", lambda: lib.tensor(np.ones(2, np.float32))),
        ("int_div", lambda: i / 2), ("int_mul_float", lambda: i * 2.5), ("int_sqrt", lambda: i.sqrt()),
        ("int_sigmoid", lambda: lib.sigmoid(i)), ("int_true_div_int", lambda: i / i),
        ("f32_mul_float", lambda: lib.ones(2, dtype=lib.float32) * 2.5), ("float_method", lambda: i.float()),
        ("logspace", lambda: lib.logspace(0, 2, 3)), ("scalar_tensor", lambda: lib.scalar_tensor(1.5)),
        ("zeros_like_int", lambda: lib.zeros_like(i)), ("atan2_int", lambda: lib.atan2(i, i)),
    ]


def _run(lib, dtype):
    lib.set_default_dtype(dtype)
    try:
        return {name: fn() for name, fn in _cases(lib)}
    finally:
        lib.set_default_dtype(lib.float32)


def test_default_is_float32_and_restored():
    assert sx.get_default_dtype() == sx.float32
    assert sx.tensor([1.5]).dtype == sx.float32 and sx.zeros(1).dtype == sx.float32


def test_float64_default(default64):
    assert sx.get_default_dtype() == sx.float64
    assert sx.zeros(2).dtype == sx.float64 and sx.tensor([0.1]).dtype == sx.float64
    assert sx.tensor([0.1]).item() == 0.1  # no float32 rounding on the way
    assert (sx.tensor([1, 2]) / 3).dtype == sx.float64
    np.testing.assert_array_equal((sx.tensor([1, 2]) / 3).numpy(), np.array([1, 2]) / 3)
    x = sx.tensor([0.5, 2.0], requires_grad=True)
    (x ** 3).sum().backward()
    assert x.grad.dtype == sx.float64
    np.testing.assert_allclose(x.grad.numpy(), [0.75, 12.0])


def test_bad_defaults():
    with pytest.raises(TypeError, match="only floating-point types"):
        sx.set_default_dtype(sx.int64)
    with pytest.raises(TypeError, match="set_default_dtype"):
        sx.set_default_dtype("float64")
    assert sx.get_default_dtype() == sx.float32


def test_numpy_backend_keeps_float32():
    from sneppx_core import _numpy_backend as nb

    assert nb._default_dtype() == nb.Dtype.FLOAT32
    nb._set_default_dtype(nb.Dtype.FLOAT32)
    with pytest.raises(NotImplementedError, match="keeps float32"):
        nb._set_default_dtype(nb.Dtype.FLOAT64)


@pytest.mark.parity
@pytest.mark.parametrize("default", ["float64", "float16", "bfloat16", "float32"])
def test_matches_torch(torch, default):
    got = _run(sx, getattr(sx, default))
    want = _run(torch, getattr(torch, default))
    for name, w in want.items():
        g = got[name]
        assert str(g.dtype).split(".")[-1] == str(w.dtype).split(".")[-1], (name, g.dtype, w.dtype)
        if name not in ("empty", "rand", "randn"):
            np.testing.assert_allclose(g.float().numpy() if g.dtype == sx.bfloat16 else g.numpy(),
                                       w.float().numpy() if w.dtype == torch.bfloat16 else w.numpy(),
                                       rtol=1e-2 if default in ("float16", "bfloat16") else 1e-12, err_msg=name)
