"""Losses of sneppx_core.functional against NumPy formulas, finite differences and PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
import sneppx_core as sx
import sneppx_core.functional as F
from sneppx_core.testing import gradcheck

RNG = np.random.default_rng(99)


def t64(a, requires_grad=True):
    return sx.tensor(np.asarray(a, dtype=np.float64), dtype=sx.float64, requires_grad=requires_grad)


def npy(t):
    return np.array(t.detach().numpy())


def np_log_softmax(a, axis):
    m = a.max(axis=axis, keepdims=True)
    return a - m - np.log(np.exp(a - m).sum(axis=axis, keepdims=True))


def np_cross_entropy(x, y, w=None, ignore=-100, reduction="mean", eps=0.0):
    """Reference with the class dim at axis 1 (or 0 for 1-D logits); y holds class indices."""
    axis = 0 if x.ndim == 1 else 1
    lp = np.moveaxis(np_log_softmax(x, axis), axis, -1)  # (..., C)
    C = lp.shape[-1]
    w = np.ones(C) if w is None else w
    valid = y != ignore
    yc = np.where(valid, y, 0)
    nll = -np.take_along_axis(lp, yc[..., None], -1)[..., 0] * w[yc]
    smooth = -(lp * w).sum(-1)
    loss = np.where(valid, (1 - eps) * nll + eps / C * smooth, 0.0)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / np.where(valid, w[yc], 0.0).sum()


CE_CASES = [
    dict(shape=(6, 5)),
    dict(shape=(6, 5), weight=True),
    dict(shape=(6, 5), ignore=True),
    dict(shape=(6, 5), eps=0.2),
    dict(shape=(6, 5), weight=True, ignore=True, eps=0.1),
    dict(shape=(6, 5), reduction="sum", eps=0.1),
    dict(shape=(6, 5), reduction="none", weight=True),
    dict(shape=(2, 4, 3, 2), ignore=True, eps=0.1),
    dict(shape=(2, 4, 3), reduction="none"),
    dict(shape=(5,), eps=0.1),
]


def _ce_inputs(case):
    shape = case["shape"]
    x = RNG.standard_normal(shape) * 2
    C = shape[0] if len(shape) == 1 else shape[1]
    tshape = () if len(shape) == 1 else (shape[0],) + shape[2:]
    y = RNG.integers(0, C, tshape)
    if case.get("ignore"):
        y.reshape(-1)[::3] = 7 if C < 7 else -1
        ignore = 7 if C < 7 else -1
    else:
        ignore = -100
    w = RNG.uniform(0.5, 2.0, C) if case.get("weight") else None
    return x, y, w, ignore


@pytest.mark.parametrize("case", CE_CASES, ids=str)
def test_cross_entropy_class_indices(case):
    x, y, w, ignore = _ce_inputs(case)
    red, eps = case.get("reduction", "mean"), case.get("eps", 0.0)
    kw = dict(ignore_index=ignore, reduction=red, label_smoothing=eps)
    got = F.cross_entropy(t64(x, False), sx.tensor(y), None if w is None else t64(w, False), **kw)
    np.testing.assert_allclose(npy(got), np_cross_entropy(x, y, w, ignore, red, eps), atol=1e-12)
    wt = None if w is None else t64(w, False)
    gradcheck(lambda x_: F.cross_entropy(x_, sx.tensor(y), wt, **kw), [t64(x)])


def test_cross_entropy_probability_targets():
    x = RNG.standard_normal((4, 6, 2))
    p = RNG.dirichlet(np.ones(6), size=(4, 2)).transpose(0, 2, 1)  # (4, 6, 2), sums to 1 over dim 1
    w = RNG.uniform(0.5, 2.0, 6)
    for red in ("mean", "sum", "none"):
        got = F.cross_entropy(t64(x, False), t64(p, False), t64(w, False), reduction=red, label_smoothing=0.1)
        lp = np_log_softmax(x, 1)
        loss = -(w[None, :, None] * (0.9 * p + 0.1 / 6) * lp).sum(1)
        ref = {"mean": loss.mean(), "sum": loss.sum(), "none": loss}[red]
        np.testing.assert_allclose(npy(got), ref, atol=1e-12)
    gradcheck(lambda x_, p_: F.cross_entropy(x_, p_, label_smoothing=0.2), [t64(x), t64(p)])


def test_cross_entropy_huge_logits_and_noncontiguous():
    x = np.array([[1e4, -1e4, 0.0], [-1e4, 1e4, 1e4]], dtype=np.float32)
    xs = sx.tensor(x, requires_grad=True)
    loss = F.cross_entropy(xs, sx.tensor([1, 2]), label_smoothing=0.1)
    loss.backward()
    assert np.isfinite(loss.item()) and np.isfinite(npy(xs.grad)).all()
    np.testing.assert_allclose(loss.item(), np_cross_entropy(x.astype(np.float64), np.array([1, 2]), eps=0.1),
                               rtol=1e-5)
    a = RNG.standard_normal((5, 4))
    y = RNG.integers(0, 5, 4)
    gradcheck(lambda x_: F.cross_entropy(x_.transpose(0, 1), sx.tensor(y)), [t64(a)])


def test_cross_entropy_errors():
    x = sx.zeros(3, 4)
    with pytest.raises(IndexError, match="cross_entropy.*target 4.*4 classes"):
        F.cross_entropy(x, sx.tensor([0, 4, 1]))
    with pytest.raises(ValueError, match="cross_entropy.*target"):
        F.cross_entropy(x, sx.tensor([0, 1]))
    with pytest.raises(ValueError, match="reduction"):
        F.cross_entropy(x, sx.tensor([0, 1, 2]), reduction="avg")
    with pytest.raises(ValueError, match="label_smoothing"):
        F.cross_entropy(x, sx.tensor([0, 1, 2]), label_smoothing=1.5)


def test_class_targets_checked_in_one_pass():
    """Targets are checked on the host in one pass: the first one outside [0, C) that is not ignore_index
    raises (negative ones too), int32 and strided targets are read as they are, and the "mean" over many
    rows divides the summed losses by the summed target weights, against NumPy."""
    x = sx.zeros(3, 4)
    for bad, want in (([0, -1, 1], "-1"), ([7, 9, 1], "7")):
        for f in (F.cross_entropy, lambda x_, t: F.nll_loss(F.log_softmax(x_, 1), t)):
            with pytest.raises(IndexError, match=rf"target {want} is out of bounds for 4 classes"):
                f(x, sx.tensor(bad))
    assert np.isfinite(F.cross_entropy(x, sx.tensor([0, 9, 3]), ignore_index=9).item())
    a = RNG.standard_normal((1000, 7))
    y = RNG.integers(0, 7, 2000)[::2].astype(np.int32)
    y[::17] = -5
    w = RNG.random(7) + 0.5
    lp = a - np.log(np.exp(a).sum(1, keepdims=True))
    keep = y != -5
    rows = -lp[keep, y[keep]] * w[y[keep]]
    target = sx.tensor(RNG.integers(0, 7, 2000).astype(np.int32))
    target[::2] = sx.tensor(y)
    got = F.cross_entropy(t64(a, False), target[::2], sx.tensor(w), ignore_index=-5)
    np.testing.assert_allclose(got.item(), rows.sum() / w[y[keep]].sum(), rtol=1e-12)
    got = F.nll_loss(sx.tensor(lp), target[::2], sx.tensor(w), ignore_index=-5, reduction="sum")
    np.testing.assert_allclose(got.item(), rows.sum(), rtol=1e-12)


def test_cross_entropy_all_ignored_mean_is_nan_like_torch():
    loss = F.cross_entropy(sx.zeros(2, 3), sx.tensor([-100, -100]))
    assert np.isnan(loss.item())


def test_nll_loss():
    x = np_log_softmax(RNG.standard_normal((5, 4, 2)), 1)
    y = RNG.integers(0, 4, (5, 2))
    y[0, 0] = -100
    w = RNG.uniform(0.5, 2.0, 4)
    for red in ("mean", "sum", "none"):
        got = F.nll_loss(t64(x, False), sx.tensor(y), t64(w, False), reduction=red)
        valid = y != -100
        yc = np.where(valid, y, 0)
        loss = np.where(valid, -np.take_along_axis(x, yc[:, None], 1)[:, 0] * w[yc], 0)
        ref = {"mean": loss.sum() / np.where(valid, w[yc], 0).sum(), "sum": loss.sum(), "none": loss}[red]
        np.testing.assert_allclose(npy(got), ref, atol=1e-12)
    gradcheck(lambda x_: F.nll_loss(x_, sx.tensor(y), t64(w, False)), [t64(x)])


def _softplus(v):
    return np.maximum(v, 0) + np.log1p(np.exp(-np.abs(v)))


POINTWISE = {  # name: (call(x, t), reference(x, t) elementwise, input sampler, target sampler)
    "mse": (lambda x, t, **k: F.mse_loss(x, t, **k), lambda x, t: (x - t) ** 2, "normal", "normal"),
    "l1": (lambda x, t, **k: F.l1_loss(x, t, **k), lambda x, t: np.abs(x - t), "normal", "normal"),
    "smooth_l1": (lambda x, t, **k: F.smooth_l1_loss(x, t, beta=0.7, **k),
                  lambda x, t: np.where(np.abs(x - t) < 0.7, 0.5 * (x - t) ** 2 / 0.7, np.abs(x - t) - 0.35),
                  "normal", "normal"),
    "huber": (lambda x, t, **k: F.huber_loss(x, t, delta=0.7, **k),
              lambda x, t: np.where(np.abs(x - t) < 0.7, 0.5 * (x - t) ** 2, 0.7 * (np.abs(x - t) - 0.35)),
              "normal", "normal"),
    "bce": (lambda x, t, **k: F.binary_cross_entropy(x, t, **k),
            lambda x, t: -(t * np.log(x) + (1 - t) * np.log(1 - x)), "prob", "prob"),
    "bce_logits": (lambda x, t, **k: F.binary_cross_entropy_with_logits(x, t, **k),
                   lambda x, t: (1 - t) * x + _softplus(-x), "normal", "prob"),
    "kl_div": (lambda x, t, **k: F.kl_div(x, t, **k), lambda x, t: t * (np.log(t) - x), "normal", "prob"),
    "kl_div_log": (lambda x, t, **k: F.kl_div(x, t, log_target=True, **k),
                   lambda x, t: np.exp(t) * (t - x), "normal", "normal"),
}


def _sample(kind, shape):
    return RNG.uniform(0.05, 0.95, shape) if kind == "prob" else RNG.standard_normal(shape)


@pytest.mark.parametrize("name", sorted(POINTWISE))
def test_pointwise_losses(name):
    call, ref, xs, ts = POINTWISE[name]
    x, t = _sample(xs, (3, 4)), _sample(ts, (3, 4))
    if name in ("l1", "smooth_l1", "huber"):
        x = t + np.where(np.abs(x - t) < 0.05, 0.3, x - t)  # no kink within the finite-difference step
    for red, f in (("mean", np.mean), ("sum", np.sum), ("none", lambda v: v)):
        np.testing.assert_allclose(npy(call(t64(x, False), t64(t, False), reduction=red)), f(ref(x, t)), atol=1e-12)
    gradcheck(lambda x_, t_: call(x_, t_), [t64(x), t64(t)])
    gradcheck(lambda x_, t_: call(x_.transpose(0, 1), t_, reduction="sum"), [t64(x.T.copy()), t64(t)])


def test_pointwise_broadcast_weight_and_pos_weight():
    x, t = RNG.standard_normal((4, 3)), RNG.uniform(0, 1, (4, 3))
    w, pw = RNG.uniform(0.5, 2, (3,)), RNG.uniform(0.5, 3, (3,))
    got = F.binary_cross_entropy_with_logits(t64(x, False), t64(t, False), t64(w, False), pos_weight=t64(pw, False))
    ref = w * ((1 - t) * x + (1 + (pw - 1) * t) * _softplus(-x))
    np.testing.assert_allclose(npy(got), ref.mean(), atol=1e-12)
    gradcheck(lambda x_, t_, w_, pw_: F.binary_cross_entropy_with_logits(x_, t_, w_, pos_weight=pw_, reduction="sum"),
              [t64(x), t64(t), t64(w), t64(pw)])
    got = F.mse_loss(t64(x, False), t64(x[:1] * 0 + 1.0, False), reduction="sum")  # target broadcast
    np.testing.assert_allclose(npy(got), ((x - 1.0) ** 2).sum(), atol=1e-12)
    kl = F.kl_div(t64(x, False), t64(t, False), reduction="batchmean")
    np.testing.assert_allclose(npy(kl), (t * (np.log(t) - x)).sum() / 4, atol=1e-12)


def test_pointwise_errors():
    with pytest.raises(ValueError, match="binary_cross_entropy.*between 0 and 1"):
        F.binary_cross_entropy(sx.tensor([1.5]), sx.tensor([1.0]))
    with pytest.raises(ValueError, match="batchmean"):
        F.mse_loss(sx.zeros(2), sx.zeros(2), reduction="batchmean")
    with pytest.raises(ValueError, match="mse_loss.*broadcast"):
        F.mse_loss(sx.zeros(2, 3), sx.zeros(4))


@pytest.mark.parity
def test_parity_losses():
    torch = pytest.importorskip("torch")
    TF = torch.nn.functional
    x = RNG.standard_normal((8, 10, 3)).astype(np.float32) * 3
    y = RNG.integers(0, 10, (8, 3))
    y[1] = -100
    w = RNG.uniform(0.5, 2, 10).astype(np.float32)
    for kw in (dict(), dict(label_smoothing=0.1), dict(reduction="sum")):
        xs, xt = sx.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        ls = F.cross_entropy(xs, sx.tensor(y), sx.tensor(w), **kw)
        lt = TF.cross_entropy(xt, torch.tensor(y), torch.tensor(w), **kw)
        np.testing.assert_allclose(ls.item(), lt.item(), rtol=1e-5)
        ls.backward()
        lt.backward()
        np.testing.assert_allclose(npy(xs.grad), xt.grad.numpy(), atol=1e-6)
    p, q = RNG.uniform(0.05, 0.95, (2, 6, 5)).astype(np.float32), RNG.standard_normal((2, 6, 5)).astype(np.float32)
    pairs = [
        (lambda a, b: F.mse_loss(a, b), lambda a, b: TF.mse_loss(a, b), q, p),
        (lambda a, b: F.smooth_l1_loss(a, b, beta=0.5), lambda a, b: TF.smooth_l1_loss(a, b, beta=0.5), q, p),
        (lambda a, b: F.huber_loss(a, b, delta=0.5), lambda a, b: TF.huber_loss(a, b, delta=0.5), q, p),
        (lambda a, b: F.binary_cross_entropy(a, b), lambda a, b: TF.binary_cross_entropy(a, b), p, p[::-1].copy()),
        (lambda a, b: F.binary_cross_entropy_with_logits(a, b), TF.binary_cross_entropy_with_logits, q, p),
        (lambda a, b: F.kl_div(a, b, reduction="batchmean"), lambda a, b: TF.kl_div(a, b, reduction="batchmean"),
         q, p),
    ]
    for f, tf, a, b in pairs:
        xs, xt = sx.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        ls, lt = f(xs, sx.tensor(b)), tf(xt, torch.tensor(b))
        np.testing.assert_allclose(ls.item(), lt.item(), rtol=1e-5)
        ls.backward()
        lt.backward()
        np.testing.assert_allclose(npy(xs.grad), xt.grad.numpy(), atol=1e-6, rtol=1e-4)
