"""Fixed disagreements with PyTorch: kl_div with negative targets (xlogy semantics), the target gradient of
poisson_nll_loss with ``full=True``, scatter_reduce's integer mean (floored) and its dtype with
``include_self=False``, and ``is_inference_mode_enabled``. NumPy references, finite differences, torch parity."""

from __future__ import annotations

import numpy as np
import pytest

import sneppx_core as sx
import sneppx_core.functional as F
from sneppx_core.testing import gradcheck

INP = np.array([-0.5, -1.0, -2.0, -0.1, -3.0, -0.7])
TGT = np.array([0.2, 0.0, -0.3, 1.0, 2.0, -1.0])


def _np(t):
    return t.detach().numpy()


def _kl_ref(x, t):
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(t == 0, 0.0, t * np.log(t)) - t * x


# ---------------------------------------------------------------- kl_div
def test_kl_div_negative_target_is_nan_as_xlogy():
    out = F.kl_div(sx.tensor(INP), sx.tensor(TGT), reduction="none")
    np.testing.assert_allclose(_np(out), _kl_ref(INP, TGT), rtol=1e-12, equal_nan=True)
    assert np.isnan(_np(out)[[2, 5]]).all() and _np(out)[1] == 0.0
    assert np.isnan(F.kl_div(sx.tensor(INP), sx.tensor(TGT), reduction="sum").item())


@pytest.mark.parametrize("reduction", ["mean", "sum", "batchmean"])
def test_kl_div_reductions(reduction):
    x, t = np.log(np.random.default_rng(0).dirichlet(np.ones(5), 4)), np.random.default_rng(1).dirichlet(np.ones(5), 4)
    ref = _kl_ref(x, t)
    want = {"mean": ref.mean(), "sum": ref.sum(), "batchmean": ref.sum() / 4}[reduction]
    assert F.kl_div(sx.tensor(x), sx.tensor(t), reduction=reduction).item() == pytest.approx(want, rel=1e-12)


def test_kl_div_gradients():
    rng = np.random.default_rng(2)
    x, t = rng.standard_normal((3, 4)), rng.uniform(0.1, 1.0, (3, 4))
    gradcheck(lambda a, b: F.kl_div(a, b, reduction="sum"), [sx.tensor(x, requires_grad=True),
                                                               sx.tensor(t, requires_grad=True)])
    tt = sx.tensor(np.array([0.0, 0.5]), requires_grad=True)
    F.kl_div(sx.tensor([-1.0, -1.0], dtype=sx.float64), tt, reduction="sum").backward()
    assert np.isnan(_np(tt.grad)[0]) and _np(tt.grad)[1] == pytest.approx(np.log(0.5) + 1 + 1)


def test_kl_div_errors():
    with pytest.raises(ValueError, match=r"\[kl_div\] reduction"):
        F.kl_div(sx.zeros(3), sx.zeros(3), reduction="avg")
    with pytest.raises(TypeError, match=r"\[kl_div\] target must be a Tensor"):
        F.kl_div(sx.zeros(3), [0.0, 0.0, 0.0])


@pytest.mark.parity
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div_matches_torch(torch, log_target):
    for reduction in ("none", "sum", "batchmean"):
        a, b = sx.tensor(INP, requires_grad=True), sx.tensor(TGT, requires_grad=True)
        ta, tb = torch.tensor(INP, requires_grad=True), torch.tensor(TGT, requires_grad=True)
        out = F.kl_div(a, b, reduction=reduction, log_target=log_target)
        tout = torch.nn.functional.kl_div(ta, tb, reduction=reduction, log_target=log_target)
        np.testing.assert_allclose(_np(out), tout.detach().numpy(), rtol=1e-12, equal_nan=True)
        out.sum().backward()
        tout.sum().backward()
        np.testing.assert_allclose(_np(a.grad), ta.grad.numpy(), rtol=1e-12, equal_nan=True)
        np.testing.assert_allclose(_np(b.grad), tb.grad.numpy(), rtol=1e-12, equal_nan=True)
    # the top-level form, positionally (reduction as an int)
    np.testing.assert_allclose(_np(sx.kl_div(sx.tensor(INP), sx.tensor(TGT), 0, log_target=log_target)),
                               torch.kl_div(torch.tensor(INP), torch.tensor(TGT), 0, log_target=log_target).numpy(),
                               rtol=1e-12, equal_nan=True)


# ---------------------------------------------------------------- poisson_nll_loss
X = np.array([0.5, -0.3, 1.2, 2.0, 0.1, 0.7])
Y = np.array([0.0, 0.5, 1.0, 2.5, 3.0, -1.0])


def test_poisson_full_target_gradient_includes_stirling_term():
    y = sx.tensor(Y, requires_grad=True)
    F.poisson_nll_loss(sx.tensor(X), y, log_input=True, full=True, reduction="sum").backward()
    g = _np(y.grad)
    with np.errstate(invalid="ignore", divide="ignore"):
        ref = -X + np.where(Y > 1, np.log(Y) + 0.5 / Y, 0.0)
    np.testing.assert_allclose(g[[1, 2, 3, 4]], ref[[1, 2, 3, 4]], rtol=1e-12)
    assert np.isnan(g[[0, 5]]).all()  # 0 * (log y + 1 / (2y)) at y <= 0, as in PyTorch


@pytest.mark.parametrize("log_input", [True, False])
def test_poisson_full_gradcheck(log_input):
    rng = np.random.default_rng(3)
    x = rng.uniform(0.2, 2.0, 6) if not log_input else rng.standard_normal(6)
    y = rng.uniform(1.2, 4.0, 6)
    gradcheck(lambda a, b: F.poisson_nll_loss(a, b, log_input=log_input, full=True, reduction="sum"),
              [sx.tensor(x, requires_grad=True), sx.tensor(y, requires_grad=True)])


@pytest.mark.parity
@pytest.mark.parametrize("log_input", [True, False])
@pytest.mark.parametrize("full", [True, False])
def test_poisson_matches_torch(torch, log_input, full):
    x = np.abs(X) if not log_input else X
    y = np.append(Y, np.nan)
    x = np.append(x, 0.3)
    a, b = sx.tensor(x, requires_grad=True), sx.tensor(y, requires_grad=True)
    ta, tb = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
    out = sx.poisson_nll_loss(a, b, log_input, full, 1e-8, 0)  # the top-level form, positionally
    tout = torch.poisson_nll_loss(ta, tb, log_input, full, 1e-8, 0)
    np.testing.assert_allclose(_np(out), tout.detach().numpy(), rtol=1e-12, equal_nan=True)
    out.sum().backward()
    tout.sum().backward()
    np.testing.assert_allclose(_np(a.grad), ta.grad.numpy(), rtol=1e-12, equal_nan=True)
    np.testing.assert_allclose(_np(b.grad), tb.grad.numpy(), rtol=1e-12, equal_nan=True)


# ---------------------------------------------------------------- scatter_reduce
IDX = np.array([[0, 1, 0], [2, 2, 0], [0, 1, 1], [2, 0, 0], [0, 1, 0]])
_SRC_RNG = np.random.default_rng(0)
BASE, SRC = _SRC_RNG.integers(-9, 10, (4, 3)), _SRC_RNG.integers(-9, 10, (5, 3))
ALL = ["uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


def _scatter_ref(base, src, reduce, include_self, integer):
    """scatter_reduce along dim 0 with NumPy loops (float64 arithmetic; integer means floored)."""
    out = base.astype(np.float64)
    groups = {}
    for i in range(IDX.shape[0]):
        for j in range(IDX.shape[1]):
            groups.setdefault((IDX[i, j], j), []).append(float(src[i, j]))
    for (r, c), vals in groups.items():
        vals = ([float(base[r, c])] if include_self else []) + vals
        if reduce == "sum":
            out[r, c] = sum(vals)
        elif reduce == "mean":
            out[r, c] = np.floor(sum(vals) / len(vals)) if integer else sum(vals) / len(vals)
    return out


def _inputs(dtype):
    base, src = (np.abs(BASE), np.abs(SRC)) if dtype == "uint8" else (BASE, SRC)
    return base, src


@pytest.mark.parametrize("dtype", ["uint8", "int32", "int64", "float32", "float64"])
@pytest.mark.parametrize("reduce", ["sum", "mean"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_dtype_and_integer_mean(dtype, reduce, include_self):
    base, src = _inputs(dtype)
    dt = getattr(sx, dtype)
    out = sx.tensor(base).to(dt).scatter_reduce(0, sx.tensor(IDX), sx.tensor(src).to(dt), reduce,
                                                include_self=include_self)
    assert out.dtype == dt
    ref = _scatter_ref(base, src, reduce, include_self, dtype in ("uint8", "int32", "int64"))
    np.testing.assert_allclose(_np(out).astype(np.float64), ref, rtol=1e-6)


def test_scatter_reduce_mean_floors_negative_integers():
    out = sx.tensor([0, 0]).scatter_reduce(0, sx.tensor([0, 0, 1, 1]), sx.tensor([-3, 0, 3, 0]), "mean",
                                           include_self=False)
    assert _np(out).tolist() == [-2, 1]


def test_scatter_reduce_mean_gradcheck():
    rng = np.random.default_rng(4)
    for inc in (True, False):
        gradcheck(lambda a, b: a.scatter_reduce(0, sx.tensor(IDX), b, "mean", include_self=inc),
                  [sx.tensor(rng.standard_normal((4, 3)), requires_grad=True),
                   sx.tensor(rng.standard_normal((5, 3)), requires_grad=True)])


@pytest.mark.parity
@pytest.mark.parametrize("dtype", ALL)
def test_scatter_reduce_matches_torch_every_dtype_and_reduce(torch, dtype):
    base, src = _inputs(dtype)
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        s = src % 3 if reduce == "prod" and dtype == "uint8" else src
        for inc in (True, False):
            out = sx.scatter_reduce(sx.tensor(base).to(getattr(sx, dtype)), 0, sx.tensor(IDX),
                                    sx.tensor(s).to(getattr(sx, dtype)), reduce, include_self=inc)
            tout = torch.scatter_reduce(torch.tensor(base).to(getattr(torch, dtype)), 0, torch.tensor(IDX),
                                        torch.tensor(s).to(getattr(torch, dtype)), reduce, include_self=inc)
            assert repr(out.dtype).split(".")[-1] == str(tout.dtype).split(".")[-1], (reduce, inc)
            np.testing.assert_allclose(out.float().numpy(), tout.float().numpy(), rtol=1e-6, err_msg=f"{reduce} {inc}")
    # many hits on one slot: the count is kept in the input's dtype, as there (a uint8 count wraps; float16
    # and bfloat16 sums accumulate in float32, as there)
    for n in (300, 3000):
        for inc in (True, False):
            out = sx.zeros(2, dtype=getattr(sx, dtype)).scatter_reduce(
                0, sx.zeros(n, dtype=sx.int64), sx.full((n,), 3, dtype=getattr(sx, dtype)), "mean", include_self=inc)
            tout = torch.zeros(2, dtype=getattr(torch, dtype)).scatter_reduce(
                0, torch.zeros(n, dtype=torch.int64), torch.full((n,), 3, dtype=getattr(torch, dtype)), "mean",
                include_self=inc)
            np.testing.assert_allclose(out.float().numpy(), tout.float().numpy(), rtol=1e-6, err_msg=f"{n} {inc}")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_low_precision_scatter_add_rounds_once(dtype):
    """float16 / bfloat16 scatter_add sums in float32 and rounds once: 3000 ones in one slot are 3000 rounded
    to the dtype (a running sum in bfloat16 would stop at 256), in place and out of place."""
    rng = np.random.default_rng(3)
    src = rng.uniform(0.5, 1.5, (4000, 3))
    idx = rng.integers(0, 2, (4000, 3))
    x16 = sx.tensor(src).to(getattr(sx, dtype))
    exact = np.zeros((2, 3))
    np.add.at(exact, (idx, np.arange(3)[None, :].repeat(4000, 0)), x16.float().numpy().astype(np.float64))
    want = sx.tensor(exact.astype(np.float32)).to(getattr(sx, dtype)).float().numpy()
    out = sx.zeros(2, 3, dtype=getattr(sx, dtype)).scatter_add(0, sx.tensor(idx), x16)
    np.testing.assert_allclose(out.float().numpy(), want, rtol=1e-2)  # within the rounding of the float32 sum
    inplace = sx.zeros(2, 3, dtype=getattr(sx, dtype))
    inplace.scatter_add_(0, sx.tensor(idx), x16)
    np.testing.assert_array_equal(inplace.float().numpy(), out.float().numpy())
    ones = sx.zeros(1, dtype=getattr(sx, dtype)).scatter_add(0, sx.zeros(3000, dtype=sx.int64),
                                                             sx.ones(3000, dtype=getattr(sx, dtype)))
    assert ones.item() == sx.tensor([3000.0]).to(getattr(sx, dtype)).item()


# ---------------------------------------------------------------- inference mode
def test_is_inference_mode_enabled():
    assert sx.is_inference_mode_enabled() is False
    with sx.inference_mode():
        assert sx.is_inference_mode_enabled() and not sx.is_grad_enabled()
        with sx.inference_mode(False):
            assert not sx.is_inference_mode_enabled() and sx.is_grad_enabled()
        assert sx.is_inference_mode_enabled()
    assert sx.is_inference_mode_enabled() is False and sx.is_grad_enabled()

    @sx.inference_mode()
    def f():
        return sx.is_inference_mode_enabled(), sx.is_grad_enabled()

    assert f() == (True, False) and not sx.is_inference_mode_enabled()
    with pytest.raises(KeyError):
        with sx.inference_mode():
            raise KeyError("x")
    assert not sx.is_inference_mode_enabled()


def _inference_flags(m):
    """is_inference() of tensors made inside and outside inference mode, of views and of results."""
    base = m.ones(2, 3)
    with m.inference_mode():
        made = m.ones(2, 3)
        inner_view = base[0]  # a view of a normal tensor stays normal
        computed = base * 2
        with m.inference_mode(False):
            not_marked = m.ones(2)
    outer_view, outer_result = made[1], made + 1  # a view of an inference tensor is one; a new result is not
    return [t.is_inference() for t in (base, made, inner_view, computed, not_marked, outer_view, outer_result)]


def test_is_inference_marks_tensors_allocated_in_inference_mode():
    assert _inference_flags(sx) == [False, True, False, True, False, True, False]
    with sx.no_grad():
        assert not sx.ones(1).is_inference()


@pytest.mark.parity
def test_is_inference_matches_torch(torch):
    assert _inference_flags(sx) == _inference_flags(torch)


@pytest.mark.parity
def test_is_inference_mode_enabled_matches_torch(torch):
    for mode in (True, False):
        with sx.inference_mode(mode), torch.inference_mode(mode):
            assert sx.is_inference_mode_enabled() == torch.is_inference_mode_enabled()
            assert sx.is_grad_enabled() == torch.is_grad_enabled()
