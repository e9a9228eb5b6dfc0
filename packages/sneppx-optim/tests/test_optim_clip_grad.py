"""Gradient clipping against NumPy."""

import math

import numpy as np
import pytest
import sneppx_core as sx

import sneppx_optim as so
from optim_helpers import grad_sequence, make_params, set_grads, to_np

SHAPES = [(4, 3), (5,), ()]


def _setup(scale=1.0):
    params, _ = make_params(SHAPES)
    grads = [g * scale for g in grad_sequence(SHAPES, 1)[0]]
    set_grads(params, grads)
    return params, [g.astype(np.float32).astype(np.float64) for g in grads]


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, math.inf, "inf"])
@pytest.mark.parametrize("max_norm", [0.5, 1e6])
def test_clip_grad_norm(norm_type, max_norm):
    params, grads = _setup()
    flat = np.concatenate([g.ravel() for g in grads])
    q = math.inf if norm_type == "inf" else norm_type
    total = np.max(np.abs(flat)) if q == math.inf else np.sum(np.abs(flat) ** q) ** (1 / q)
    got = so.clip_grad_norm_(params, max_norm, norm_type=norm_type)
    assert got.ndim == 0 and got.item() == pytest.approx(total, rel=1e-5)
    coef = min(1.0, max_norm / (total + 1e-6))
    for p, g in zip(params, grads):
        np.testing.assert_allclose(to_np(p.grad), g * coef, rtol=1e-5, atol=1e-7)
    if max_norm < total:
        clipped = np.concatenate([to_np(p.grad).ravel() for p in params])
        assert np.linalg.norm(clipped, ord=q) == pytest.approx(max_norm, rel=1e-4)


def test_clip_grad_norm_skips_missing_grads_and_accepts_one_tensor():
    params, grads = _setup()
    params[1].grad = None
    total = so.clip_grad_norm_(params, 1e9).item()
    assert total == pytest.approx(math.sqrt(np.sum(grads[0] ** 2) + grads[2] ** 2), rel=1e-5)
    assert so.clip_grad_norm_(params[0], 1e9).item() == pytest.approx(np.linalg.norm(grads[0]), rel=1e-5)
    assert so.clip_grad_norm_([sx.zeros(2, requires_grad=True)], 1.0).item() == 0.0


def test_clip_grad_norm_nonfinite():
    params, _ = _setup()
    params[0].grad = sx.Tensor(np.full((4, 3), np.nan, dtype=np.float32))
    with pytest.raises(RuntimeError, match="non-finite|nan"):
        so.clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
    assert math.isnan(so.clip_grad_norm_(params, 1.0).item())
    with pytest.raises(ValueError, match="max_norm"):
        so.clip_grad_norm_(params, -1.0)
    with pytest.raises(ValueError, match="norm_type"):
        so.clip_grad_norm_(params, 1.0, norm_type="fro")


def test_clip_grad_value():
    params, grads = _setup(scale=3.0)
    so.clip_grad_value_(params, 1.5)
    for p, g in zip(params, grads):
        np.testing.assert_allclose(to_np(p.grad), np.clip(g, -1.5, 1.5), rtol=1e-6)
    with pytest.raises(ValueError, match="clip_value"):
        so.clip_grad_value_(params, -1)


@pytest.mark.parity
@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf])
def test_clip_grad_norm_matches_torch(norm_type):
    torch = pytest.importorskip("torch")
    params, grads = _setup(scale=5.0)
    tp = [torch.zeros(g.shape, requires_grad=True) for g in grads]
    for t, g in zip(tp, grads):
        t.grad = torch.tensor(g, dtype=torch.float32)
    want = torch.nn.utils.clip_grad_norm_(tp, 2.0, norm_type=norm_type)
    got = so.clip_grad_norm_(params, 2.0, norm_type=norm_type)
    assert got.item() == pytest.approx(want.item(), rel=1e-6)
    for p, t in zip(params, tp):
        np.testing.assert_allclose(to_np(p.grad), t.grad.double().numpy(), rtol=1e-6, atol=1e-8)
