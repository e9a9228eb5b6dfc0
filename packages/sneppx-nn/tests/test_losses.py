"""Loss modules against NumPy formulas: values, reductions, options and input gradients."""

import numpy as np
import pytest
import sneppx_core as sx

import sneppx_nn as nn
from conftest import numeric_grad, tensor, to_np


def _reduce(l, reduction):
    return {"none": l, "mean": l.mean(), "sum": l.sum()}[reduction]


def _log_softmax(x, axis=1):
    m = x.max(axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))


def _ce(x, y, weight=None, ignore_index=-100, reduction="mean", eps=0.0):
    """PyTorch's cross entropy for class-index targets, x (N, C)."""
    c = x.shape[1]
    w = np.ones(c) if weight is None else weight
    lsm = _log_softmax(x)
    keep = y != ignore_index
    ys = np.where(keep, y, 0)
    wn = w[ys] * keep
    nll = -lsm[np.arange(len(y)), ys] * wn
    smooth = -(lsm * w).sum(1) * keep
    if reduction == "none":
        return (1 - eps) * nll + eps / c * smooth
    if reduction == "sum":
        return (1 - eps) * nll.sum() + eps / c * smooth.sum()
    return ((1 - eps) * nll.sum() + eps / c * smooth.sum()) / wn.sum()


def _check(loss, ref, inputs, rng, atol=1e-8):
    """Forward value against ``ref(*arrays)`` and the gradient of the first input against
    finite differences (everything float64)."""
    ts = [tensor(a, dtype=sx.float64 if a.dtype.kind == "f" else None) for a in inputs]
    ts[0].requires_grad_(True)
    out = loss(*ts)
    expected = ref(*inputs)
    np.testing.assert_allclose(to_np(out), expected, rtol=1e-7, atol=atol)
    if np.ndim(expected) == 0:
        assert out.ndim == 0
    r = rng.standard_normal(np.shape(expected))
    (out * tensor(r, dtype=sx.float64)).sum().backward()
    num = numeric_grad(lambda a: float((ref(a, *inputs[1:]) * r).sum()), inputs[0].copy())
    np.testing.assert_allclose(to_np(ts[0].grad), num, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_regression_losses(reduction, rng):
    x, y = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    _check(nn.MSELoss(reduction), lambda a, b: _reduce((a - b) ** 2, reduction), [x, y], rng)
    _check(nn.L1Loss(reduction), lambda a, b: _reduce(np.abs(a - b), reduction), [x, y], rng)
    beta = 0.7

    def smooth(a, b):
        d = np.abs(a - b)
        return _reduce(np.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta), reduction)

    _check(nn.SmoothL1Loss(reduction, beta=beta), smooth, [x, y], rng)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy_weight_ignore_smoothing(reduction, smoothing, rng):
    x = rng.standard_normal((6, 4))
    y = np.array([0, 3, -100, 2, 1, 3])
    w = rng.uniform(0.5, 2.0, 4)
    loss = nn.CrossEntropyLoss(weight=tensor(w, dtype=sx.float64), reduction=reduction, label_smoothing=smoothing)
    _check(loss, lambda a, b: _ce(a, b, w, -100, reduction, smoothing), [x, y], rng)
    assert "weight" in loss.state_dict()


def test_cross_entropy_spatial_and_probability_targets(rng):
    x = rng.standard_normal((2, 3, 5))
    y = rng.integers(0, 3, (2, 5))

    def spatial(a, b):
        return _ce(a.transpose(0, 2, 1).reshape(-1, 3), b.reshape(-1), ignore_index=2)

    _check(nn.CrossEntropyLoss(ignore_index=2), spatial, [x, y], rng)
    p = rng.dirichlet(np.ones(3), 4)
    xp = rng.standard_normal((4, 3))
    _check(nn.CrossEntropyLoss(), lambda a, b: -(b * _log_softmax(a)).sum(1).mean(), [xp, p], rng)


def test_nll_loss(rng):
    x = _log_softmax(rng.standard_normal((5, 3)))
    y = np.array([2, 0, 1, 1, 0])
    w = np.array([0.2, 1.0, 3.0])

    def ref(a, b):
        return -(a[np.arange(5), b] * w[b]).sum() / w[b].sum()

    _check(nn.NLLLoss(weight=tensor(w, dtype=sx.float64)), ref, [x, y], rng)
    _check(nn.NLLLoss(reduction="sum", ignore_index=1), lambda a, b: -(a[np.arange(5), b] * (b != 1)).sum(), [x, y], rng)


def test_binary_losses(rng):
    p = rng.uniform(0.05, 0.95, (4, 3))
    y = rng.integers(0, 2, (4, 3)).astype(np.float64)
    w = rng.uniform(0.5, 1.5, 3)

    def bce(a, b):
        return (-(w * (b * np.log(a) + (1 - b) * np.log(1 - a)))).mean()

    _check(nn.BCELoss(weight=tensor(w, dtype=sx.float64)), bce, [p, y], rng)
    x = rng.standard_normal((4, 3)) * 3
    pw = np.array([1.0, 2.0, 0.5])

    def bce_logits(a, b):
        ls, l1s = -np.log1p(np.exp(-a)), -np.log1p(np.exp(a))
        return (-(pw * b * ls + (1 - b) * l1s)).sum()

    _check(nn.BCEWithLogitsLoss(reduction="sum", pos_weight=tensor(pw, dtype=sx.float64)), bce_logits, [x, y], rng)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum", "batchmean"])
def test_kl_div(reduction, rng):
    x = _log_softmax(rng.standard_normal((3, 4)))
    t = rng.dirichlet(np.ones(4), 3)

    def ref(a, b):
        l = b * (np.log(b) - a)
        return l.sum() / 3 if reduction == "batchmean" else _reduce(l, reduction)

    _check(nn.KLDivLoss(reduction), ref, [x, t], rng)
    _check(nn.KLDivLoss(reduction, log_target=True),
           lambda a, b: ref(a, np.exp(b)), [x, np.log(t)], rng)


def test_loss_argument_errors():
    with pytest.raises(ValueError, match="reduction"):
        nn.MSELoss("avg")
    with pytest.raises(ValueError, match="reduction"):
        nn.L1Loss("batchmean")
    with pytest.raises(ValueError, match="label_smoothing"):
        nn.CrossEntropyLoss(label_smoothing=1.5)
    with pytest.raises(TypeError, match="weight"):
        nn.NLLLoss(weight=[1.0, 2.0])
