"""The unary formula sheet: every op in it is tested, its entry points agree, and its fused
gradients are differentiable once more (double backward against float64 finite differences)."""

from __future__ import annotations

import numpy as np
import pytest

import sneppx_core as sx
import sneppx_core.functional as F
from sneppx_core import _SNEPPX_c as _C
from optable import OPS

SHEET = _C._unary_ops()  # (name, kind, is_predicate, params, fused gradient order or -1)
FUSED2 = [name for name, _k, _p, _params, order in SHEET if order == 2]
# Points away from the kinks of the piecewise activations (0, +-1, +-3, 6).
POINTS = np.array([-5.2, -2.4, -1.6, -0.7, -0.2, 0.3, 0.8, 1.7, 2.6, 4.1, 7.3])


def test_every_sheet_op_has_an_op_table_entry():
    names = {s.name.split(".")[-1] for s in OPS}
    missing = [name for name, *_ in SHEET if name not in names]
    assert not missing, f"formula-sheet ops without an op-table case: {missing}"


@pytest.mark.parametrize("name", [n for n, kind, pred, *_ in SHEET if not pred])
def test_entry_points_share_one_definition(name):
    x = sx.tensor(POINTS, dtype=sx.float64)
    y = getattr(sx, name)(x)
    np.testing.assert_array_equal(getattr(x, name)().numpy(), y.numpy())
    z = x.clone()
    assert getattr(z, name + "_")() is z
    np.testing.assert_array_equal(z.numpy(), y.numpy())
    if name in F.ACTIVATIONS:
        np.testing.assert_array_equal(getattr(F, name)(x).numpy(), y.numpy())
        w = x.clone()
        getattr(F, name)(w, inplace=True)
        np.testing.assert_array_equal(w.numpy(), y.numpy())


def _first_derivative(fn, x):
    (g,) = sx.autograd.grad(fn(x).sum(), [x], create_graph=True)
    return g


@pytest.mark.parametrize("name", FUSED2 + ["gelu", "gelu_tanh"])
def test_double_backward_matches_finite_differences(name):
    fn = (lambda t: F.gelu(t, approximate="tanh")) if name == "gelu_tanh" else getattr(F if name in F.ACTIVATIONS or
                                                                                      name == "gelu" else sx, name)
    x = sx.tensor(POINTS, dtype=sx.float64, requires_grad=True)
    g = _first_derivative(fn, x)
    assert g.requires_grad, f"{name}: the first derivative is not differentiable"
    (h,) = sx.autograd.grad(g.sum(), [x])
    eps = 1e-6
    up = _first_derivative(fn, sx.tensor(POINTS + eps, dtype=sx.float64, requires_grad=True)).detach().numpy()
    down = _first_derivative(fn, sx.tensor(POINTS - eps, dtype=sx.float64, requires_grad=True)).detach().numpy()
    np.testing.assert_allclose(h.numpy(), (up - down) / (2 * eps), rtol=1e-5, atol=1e-6)


def test_gradient_of_the_gradient_wrt_the_upstream_gradient():
    # d/dv of <v, f'(x) * u> is f'(x) * u: the fused backward is linear in its incoming gradient
    x = sx.tensor(POINTS, dtype=sx.float64, requires_grad=True)
    u = sx.tensor(np.linspace(-1, 1, POINTS.size), dtype=sx.float64, requires_grad=True)
    (g,) = sx.autograd.grad(F.silu(x), [x], grad_outputs=[u], create_graph=True)
    (gu,) = sx.autograd.grad(g.sum(), [u])
    s = 1 / (1 + np.exp(-POINTS))
    np.testing.assert_allclose(gu.numpy(), s * (1 + POINTS * (1 - s)), rtol=1e-12)


def test_third_order_through_a_fused_gradient_is_a_clear_error():
    x = sx.tensor([0.5], dtype=sx.float64, requires_grad=True)
    (g1,) = sx.autograd.grad(F.gelu(x).sum(), [x], create_graph=True)
    (g2,) = sx.autograd.grad(g1.sum(), [x], create_graph=True)
    with pytest.raises(RuntimeError, match="gelu"):
        sx.autograd.grad(g2.sum(), [x])


def test_integer_inputs_follow_the_dtype_rule():
    i = sx.tensor([-2, 0, 3])
    assert sx.relu(i).dtype == sx.int64 and sx.hardtanh(i).dtype == sx.int64
    assert sx.exp2(i).dtype == sx.float32 and F.hardswish(i).dtype == sx.float32
    with pytest.raises(TypeError, match=r"\[neg\].*bool"):
        sx.neg(sx.tensor([True]))


def test_activation_parameters_by_keyword_and_position():
    x = sx.tensor([-2.0, 1.0])
    np.testing.assert_allclose(F.leaky_relu(x, negative_slope=0.5).numpy(), [-1.0, 1.0])
    np.testing.assert_allclose(F.softplus(x, 2.0, 1.0).numpy(), F.softplus(x, beta=2.0, threshold=1.0).numpy())
    with pytest.raises(TypeError, match="leaky_relu"):
        F.leaky_relu(x, slope=0.5)


POW_EXPONENTS = [0.0, 0.5, -0.5, 1.0, -1.0, 1.5, 2.0, -2.0, 3.0, 4.0, 2.5, -1.5, 3.5, 0.25, 7.0]
POW_SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.3, -2.5, 3.7, 1e-30, 1e20, float("inf"), float("-inf"), float("nan")]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("c", POW_EXPONENTS)
def test_pow_scalar_formulas_match_numpy(c, dtype):
    """x ** c, whether a fixed formula or pow computes it, matches NumPy on ordinary and special values.
    Where NumPy's float64 result leaves the dtype's normal range, the result need only leave it the same
    way; -inf (where PyTorch's sqrt-based answers differ from pow) is left to the torch comparison."""
    rng = np.random.default_rng(5)
    special = [v for v in POW_SPECIAL if v != float("-inf")]
    a = np.concatenate([np.array(special), rng.standard_normal(50) * 3, rng.uniform(0.1, 5, 50)]).astype(dtype)
    y = (sx.tensor(a) ** c).numpy().astype(np.float64)
    with np.errstate(all="ignore"):
        ref = np.power(a.astype(np.float64), c)
    tiny, huge = np.abs(ref) < 1e-36, np.abs(ref) > 1e36
    normal = ~tiny & ~huge & ~np.isnan(ref)
    rtol = 1e-6 if dtype == "float32" else 1e-14
    np.testing.assert_allclose(y[normal], ref[normal], rtol=rtol)
    np.testing.assert_array_equal(np.isnan(y), np.isnan(ref))
    assert np.all(np.abs(y[tiny]) < 1e-36) and np.all(np.abs(y[huge]) > 1e36)


@pytest.mark.parity
@pytest.mark.parametrize("c", POW_EXPONENTS)
def test_pow_scalar_special_values_match_torch(torch, c):
    a = np.array(POW_SPECIAL + [-3.0, 2.0], dtype=np.float32)
    y = (sx.tensor(a) ** c).numpy()
    ref = (torch.tensor(a) ** c).numpy()
    np.testing.assert_allclose(y, ref, rtol=1e-6, atol=0)
    np.testing.assert_array_equal(np.signbit(y[y == 0]), np.signbit(ref[y == 0]))


# The kernels' paths: contiguous, strided (a transposed view), in place, and float16 / bfloat16 (blocks
# widened to float). Values span the float formulas' ranges and beyond (the trig and exp formulas hand
# large inputs to their double fallback) and rows longer than a block.
PATH_DTYPES = ["float16", "bfloat16", "float32", "float64"]


def _path_input(dtype):
    rng = np.random.default_rng(11)
    a = rng.standard_normal((37, 300)) * 3
    a[3, :40] = rng.uniform(-3e4, 3e4, 40)
    a[5, :6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-3]
    return sx.tensor(a, dtype=sx.float32).to(getattr(sx, dtype))


def _bits(t):
    """The elements as float64 (exact for every dtype here), NaNs compared by position."""
    return t.to(sx.float64).numpy() if t.dtype != sx.bool else t.numpy()


@pytest.mark.parametrize("dtype", PATH_DTYPES)
@pytest.mark.parametrize("name", [n for n, *_ in SHEET if n != "pow"])
def test_every_path_of_a_sheet_op_gives_the_contiguous_result(name, dtype):
    x = _path_input(dtype)
    fn = getattr(sx, name)
    y = fn(x)
    if dtype in ("float16", "bfloat16"):  # these compute in float: the float32 result, rounded once
        np.testing.assert_array_equal(_bits(y), _bits(fn(x.float()).to(y.dtype)))
    np.testing.assert_array_equal(_bits(fn(x.t())), _bits(y).T)
    if hasattr(x, name + "_") and y.dtype == x.dtype:
        z = x.clone()
        getattr(z, name + "_")()
        np.testing.assert_array_equal(_bits(z), _bits(y))
        w = x.t().contiguous().t()  # in place on a strided view
        getattr(w, name + "_")()
        np.testing.assert_array_equal(_bits(w), _bits(y))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", [n for n, _k, _p, _params, order in SHEET if order >= 1])
def test_fused_gradients_of_half_types_are_the_float_ones_rounded(name, dtype):
    x = _path_input(dtype)
    x = sx.where(x.isfinite(), x, sx.zeros_like(x)).requires_grad_()
    xf = x.detach().float().requires_grad_()
    fn = getattr(sx, name)
    (g,) = sx.autograd.grad(fn(x.t()).sum(), [x])
    (gf,) = sx.autograd.grad(fn(xf.t()).sum(), [xf])
    np.testing.assert_array_equal(_bits(g), _bits(gf.to(g.dtype)))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_pow_scalar_of_half_types_is_the_float_one_rounded(dtype):
    x = _path_input(dtype).abs()
    for c in POW_EXPONENTS + [1.7]:
        want = _bits((x.float() ** c).to(x.dtype))
        np.testing.assert_array_equal(_bits(x ** c), want)
        np.testing.assert_array_equal(_bits(x.t() ** c), want.T)
