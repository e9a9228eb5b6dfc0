"""Fused optimizer steps against NumPy transcriptions of the published formulas and torch.optim."""

from __future__ import annotations

import numpy as np
import pytest
import sneppx_core as sx
import sneppx_core.functional as F

RNG = np.random.default_rng(5)
SHAPES = [(3, 4), (70_000,), (5,)]  # the long one spans several work ranges


def make(dtype=np.float32, shapes=SHAPES, scale=1.0):
    return [RNG.standard_normal(s).astype(dtype) * scale for s in shapes]


def tensors(arrays):
    return [sx.tensor(a.copy(), dtype=sx.float64 if a.dtype == np.float64 else sx.float32) for a in arrays]


def npy(t):
    return np.array(t.numpy())


def np_sgd(p, g, b, lr, momentum, dampening, nesterov, wd, maximize, first):
    g = -g if maximize else g
    g = g + wd * p
    if momentum:
        b = g.copy() if first else momentum * b + (1 - dampening) * g
        g = g + momentum * b if nesterov else b
    return p - lr * g, b


@pytest.mark.parametrize("momentum,dampening,nesterov,wd,maximize", [
    (0.0, 0.0, False, 0.0, False), (0.9, 0.0, False, 0.01, False), (0.9, 0.0, True, 0.0, True),
    (0.8, 0.3, False, 0.1, False)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sgd_step(momentum, dampening, nesterov, wd, maximize, dtype):
    P, G = make(dtype), make(dtype)
    ps, gs, bs = tensors(P), tensors(G), tensors([np.zeros_like(p) for p in P])
    B = [np.zeros_like(p) for p in P]
    for step in range(3):
        first = step == 0
        F.sgd_step(ps, gs, bs, lr=0.1, momentum=momentum, dampening=dampening, nesterov=nesterov, weight_decay=wd,
                   maximize=maximize, first_step=first)
        for i in range(len(P)):
            P[i], B[i] = np_sgd(P[i], G[i], B[i], 0.1, momentum, dampening, nesterov, wd, maximize, first)
    tol = 1e-12 if dtype == np.float64 else 1e-5
    for p, r in zip(ps, P):
        np.testing.assert_allclose(npy(p), r, atol=tol, rtol=tol)


def np_adam(p, g, m, v, vmax, t, lr, b1, b2, eps, wd, amsgrad, decoupled, maximize):
    g = -g if maximize else g
    if decoupled:
        p = p * (1 - lr * wd)
    else:
        g = g + wd * p
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    if amsgrad:
        vmax = np.maximum(vmax, v)
    denom = np.sqrt(vmax if amsgrad else v) / np.sqrt(1 - b2 ** t) + eps
    return p - lr / (1 - b1 ** t) * m / denom, m, v, vmax


@pytest.mark.parametrize("amsgrad,decoupled,maximize,wd", [
    (False, False, False, 0.0), (False, True, False, 0.05), (True, False, False, 0.02), (True, True, True, 0.1)])
def test_adam_step(amsgrad, decoupled, maximize, wd):
    P = make(np.float64)
    ps, ms, vs = tensors(P), tensors([np.zeros_like(p) for p in P]), tensors([np.zeros_like(p) for p in P])
    vmax = tensors([np.zeros_like(p) for p in P]) if amsgrad else None
    M, V, VM = ([np.zeros_like(p) for p in P] for _ in range(3))
    for t in range(1, 4):
        G = make(np.float64)
        F.adam_step(ps, tensors(G), ms, vs, vmax, step=t, lr=0.01, beta1=0.9, beta2=0.99, eps=1e-8, weight_decay=wd,
                    amsgrad=amsgrad, decoupled_weight_decay=decoupled, maximize=maximize)
        for i in range(len(P)):
            P[i], M[i], V[i], VM[i] = np_adam(P[i], G[i], M[i], V[i], VM[i], t, 0.01, 0.9, 0.99, 1e-8, wd, amsgrad,
                                              decoupled, maximize)
    for p, r in zip(ps, P):
        np.testing.assert_allclose(npy(p), r, atol=1e-12)


def test_lion_step():
    P, M = make(np.float64), make(np.float64, scale=0.1)
    ps, ms = tensors(P), tensors(M)
    for _ in range(3):
        G = make(np.float64)
        F.lion_step(ps, tensors(G), ms, lr=0.01, beta1=0.9, beta2=0.99, weight_decay=0.1)
        for i in range(len(P)):
            c = 0.9 * M[i] + 0.1 * G[i]
            P[i] = P[i] * (1 - 0.01 * 0.1) - 0.01 * np.sign(c)
            M[i] = 0.99 * M[i] + 0.01 * G[i]
    for p, r, m, rm in zip(ps, P, ms, M):
        np.testing.assert_allclose(npy(p), r, atol=1e-12)
        np.testing.assert_allclose(npy(m), rm, atol=1e-12)


def test_lamb_step_and_zero_norm_trust_ratio():
    P = make(np.float64) + [np.zeros(4)]  # the last parameter has ||p|| = 0: trust ratio 1
    ps, ms, vs = tensors(P), tensors([np.zeros_like(p) for p in P]), tensors([np.zeros_like(p) for p in P])
    M, V = [np.zeros_like(p) for p in P], [np.zeros_like(p) for p in P]
    for t in range(1, 4):
        G = make(np.float64, shapes=SHAPES + [(4,)])
        F.lamb_step(ps, tensors(G), ms, vs, step=t, lr=0.02, beta1=0.9, beta2=0.999, eps=1e-6, weight_decay=0.01)
        for i in range(len(P)):
            M[i] = 0.9 * M[i] + 0.1 * G[i]
            V[i] = 0.999 * V[i] + 0.001 * G[i] ** 2
            r = (M[i] / (1 - 0.9 ** t)) / (np.sqrt(V[i] / (1 - 0.999 ** t)) + 1e-6) + 0.01 * P[i]
            pn, rn = np.linalg.norm(P[i]), np.linalg.norm(r)
            ratio = pn / rn if pn > 0 and rn > 0 else 1.0
            P[i] = P[i] - 0.02 * ratio * r
    for p, r in zip(ps, P):
        np.testing.assert_allclose(npy(p), r, atol=1e-12)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, float("inf")])
def test_total_norm(norm_type):
    A = make(np.float32) + [RNG.standard_normal(7)]
    ts = tensors(A)
    flat = np.concatenate([a.astype(np.float64).ravel() for a in A])
    ref = np.abs(flat).max() if np.isinf(norm_type) else (np.abs(flat) ** norm_type).sum() ** (1 / norm_type)
    got = F.total_norm(ts, norm_type)
    assert got.dtype == sx.float32 and got.shape == ()
    np.testing.assert_allclose(got.item(), ref, rtol=1e-6)
    assert F.total_norm([]).item() == 0.0


def test_scale_and_version_bumps():
    ts = tensors(make(np.float32))
    ref = [npy(t).copy() for t in ts]
    versions = [t._version for t in ts]
    F.scale_(ts, 0.5)
    F.scale_(ts, sx.tensor(3.0))
    for t, r, v in zip(ts, ref, versions):
        np.testing.assert_allclose(npy(t), r * 1.5, rtol=1e-6)
        assert t._version > v
    P, G = tensors(make(np.float32)), tensors(make(np.float32))
    before = [p._version for p in P]
    F.sgd_step(P, G, None, lr=0.1)
    assert all(p._version > b for p, b in zip(P, before))


def test_errors_name_the_offending_tensor():
    p = [sx.zeros(3), sx.zeros(4)]
    with pytest.raises(ValueError, match=r"adam_step.*grads\[1\].*shape"):
        F.adam_step(p, [sx.zeros(3), sx.zeros(5)], [sx.zeros(3), sx.zeros(4)], [sx.zeros(3), sx.zeros(4)], None,
                    step=1, lr=0.1, beta1=0.9, beta2=0.99, eps=1e-8)
    with pytest.raises(TypeError, match=r"sgd_step.*grads\[0\].*None"):
        F.sgd_step(p, [None, sx.zeros(4)], None, lr=0.1)
    with pytest.raises(ValueError, match=r"sgd_step.*contiguous"):
        F.sgd_step([sx.zeros(3, 2).transpose(0, 1)], [sx.zeros(2, 3)], None, lr=0.1)
    with pytest.raises(TypeError, match=r"lion_step.*float32 or float64"):
        F.lion_step([sx.zeros(3, dtype=sx.int64)], [sx.zeros(3, dtype=sx.int64)], [sx.zeros(3, dtype=sx.int64)],
                    lr=0.1)
    with pytest.raises(TypeError, match=r"exp_avgs\[0\] is float64"):
        F.lion_step([sx.zeros(3)], [sx.zeros(3)], [sx.zeros(3, dtype=sx.float64)], lr=0.1)
    with pytest.raises(ValueError, match=r"exp_avg_sqs has 1 tensors but params has 2"):
        F.lamb_step(p, p, p, p[:1], step=1, lr=0.1)
    with pytest.raises(ValueError, match="step must be >= 1"):
        F.adam_step(p, p, p, p, None, step=0, lr=0.1, beta1=0.9, beta2=0.99, eps=1e-8)


@pytest.mark.parity
@pytest.mark.parametrize("kind", ["sgd", "sgd_nesterov", "adam", "adamw", "adam_amsgrad"])
def test_parity_with_torch_optim(kind):
    torch = pytest.importorskip("torch")
    P = make(np.float32)
    tp = [torch.tensor(a.copy(), requires_grad=True) for a in P]
    opt = {
        "sgd": lambda: torch.optim.SGD(tp, lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.01),
        "sgd_nesterov": lambda: torch.optim.SGD(tp, lr=0.05, momentum=0.9, nesterov=True, maximize=True),
        "adam": lambda: torch.optim.Adam(tp, lr=1e-2, betas=(0.8, 0.95), weight_decay=0.02, foreach=True),
        "adamw": lambda: torch.optim.AdamW(tp, lr=1e-2, weight_decay=0.1, foreach=True),
        "adam_amsgrad": lambda: torch.optim.Adam(tp, lr=1e-2, amsgrad=True, foreach=False),
    }[kind]()
    ps = tensors(P)
    st = [[sx.zeros(a.shape) for a in P] for _ in range(3)]
    for t in range(1, 5):
        G = make(np.float32)
        for p, g in zip(tp, G):
            p.grad = torch.tensor(g)
        opt.step()
        gs = tensors(G)
        if kind.startswith("sgd"):
            nest = kind == "sgd_nesterov"
            F.sgd_step(ps, gs, st[0], lr=0.05, momentum=0.9, dampening=0.0 if nest else 0.1, nesterov=nest,
                       weight_decay=0.0 if nest else 0.01, maximize=nest, first_step=t == 1)
        else:
            g = opt.param_groups[0]
            F.adam_step(ps, gs, st[0], st[1], st[2], step=t, lr=g["lr"], beta1=g["betas"][0], beta2=g["betas"][1],
                        eps=g["eps"], weight_decay=g["weight_decay"], amsgrad=g["amsgrad"],
                        decoupled_weight_decay=kind == "adamw")
    for p, t_ in zip(ps, tp):
        np.testing.assert_allclose(npy(p), t_.detach().numpy(), atol=2e-6, rtol=1e-5)
