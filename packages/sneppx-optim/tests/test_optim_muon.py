"""Muon: against a float64 NumPy implementation of its rule (bfloat16 rounding emulated where PyTorch rounds),
the Newton-Schulz iteration's near-orthogonality, state_dict resume, argument checks, and step-for-step parity
with torch.optim.Muon (the ``parity`` tests)."""

import math

import numpy as np
import pytest
import sneppx_core as sx

import sneppx_optim as so
from optim_helpers import grad_sequence, make_params, rel_err, set_grads, step_with, stepped, to_np

SHAPES = [(6, 4), (3, 8), (5, 5)]
STEPS = 8
NS = (3.4445, -4.7750, 2.0315)


def bf16(a):
    """``a`` rounded to the nearest bfloat16 (ties to even), as float64."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    return u.view(np.float32).astype(np.float64)


def newton_schulz(g, coefficients=NS, steps=5, eps=1e-7, rounding=bf16):
    """X = G / max(||G||, eps) (transposed if tall), then X = a X + (b A + c A^2) X with A = X X^T."""
    a, b, c = coefficients
    x = rounding(g)
    tall = g.shape[0] > g.shape[1]
    x = x.T if tall else x
    x = rounding(x / max(rounding(np.linalg.norm(x)), eps))
    for _ in range(steps):
        gram = rounding(x @ x.T)
        x = rounding(a * x + rounding(b * gram + c * gram @ gram) @ x)
    return x.T if tall else x


def muon(params, grad_seq, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True, ns_steps=5,
         adjust_lr_fn=None):
    """Muon (Jordan et al. 2024): an EMA momentum, orthogonalized, with decoupled weight decay."""
    p = [a.copy() for a in params]
    buf = [np.zeros_like(a) for a in p]
    for grads in grad_seq:
        for i, g in enumerate(grads):
            buf[i] = momentum * buf[i] + (1 - momentum) * g
            u = (1 - momentum) * g + momentum * buf[i] if nesterov else buf[i]
            o = newton_schulz(u, steps=ns_steps)
            rows, cols = p[i].shape
            scale = 0.2 * math.sqrt(max(rows, cols)) if adjust_lr_fn == "match_rms_adamw" else \
                math.sqrt(max(1.0, rows / cols))
            p[i] = p[i] * (1 - lr * weight_decay) - lr * scale * o
    return p, buf


@pytest.mark.parametrize("kwargs", [dict(lr=0.02), dict(lr=0.05, nesterov=False, weight_decay=0.0),
                                    dict(lr=0.01, momentum=0.5, adjust_lr_fn="match_rms_adamw", ns_steps=3),
                                    dict(lr=0.02, adjust_lr_fn="original", weight_decay=0.3)])
def test_matches_numpy_reference(kwargs):
    grads = grad_sequence(SHAPES, STEPS)
    params, start = make_params(SHAPES)
    opt = so.Muon(params, **kwargs)
    step_with(params, opt, grads)
    want, bufs = muon(start, grads, **kwargs)
    for p, w, b in zip(params, want, bufs):
        assert rel_err(to_np(p), w) < 2e-3
        assert rel_err(to_np(opt.state[p]["momentum_buffer"]), b) < 1e-5


def test_newton_schulz_is_nearly_orthogonal():
    rng = np.random.default_rng(3)
    for shape in [(8, 5), (5, 8), (6, 6)]:
        g = rng.standard_normal(shape)
        o = so.muon.zeropower_via_newtonschulz(sx.tensor(g))
        assert o.dtype == sx.bfloat16 and tuple(o.shape) == shape
        s = np.linalg.svd(to_np(o.float()), compute_uv=False)
        assert 0.5 < s.min() and s.max() < 1.3  # U S' V^T with S' near 1, as the quintic iteration gives
        s64 = np.linalg.svd(newton_schulz(g, rounding=lambda v: v), compute_uv=False)
        np.testing.assert_allclose(s, s64, atol=0.05)


def test_state_dict_resume_and_keys():
    grads = grad_sequence(SHAPES, 6)
    whole, _ = stepped(so.Muon, dict(lr=0.02), SHAPES, grads)
    params, opt = stepped(so.Muon, dict(lr=0.02), SHAPES, grads[:3])
    sd = opt.state_dict()
    assert set(sd["state"][0]) == {"momentum_buffer"}
    assert set(sd["param_groups"][0]) == {"lr", "weight_decay", "momentum", "nesterov", "ns_coefficients", "eps",
                                          "ns_steps", "adjust_lr_fn", "params"}
    fresh = [sx.Tensor(to_np(p).astype(np.float32), requires_grad=True) for p in params]
    opt2 = so.Muon(fresh, lr=0.02)
    opt2.load_state_dict(sd)
    step_with(fresh, opt2, grads[3:])
    for a, b in zip(fresh, whole):
        np.testing.assert_array_equal(to_np(a), to_np(b))


def test_argument_checks():
    p = [sx.zeros((2, 3), requires_grad=True)]
    with pytest.raises(ValueError, match="Muon: only 2-d parameters"):
        so.Muon([sx.zeros(3, requires_grad=True)])
    with pytest.raises(ValueError, match="Muon: lr"):
        so.Muon(p, lr=-1.0)
    with pytest.raises(ValueError, match="Muon: momentum"):
        so.Muon(p, momentum=-0.1)
    with pytest.raises(ValueError, match="Muon: adjust_lr_fn"):
        so.Muon(p, adjust_lr_fn="rms")
    opt = so.Muon(p, ns_steps=100)
    set_grads(p, [np.ones((2, 3))])
    with pytest.raises(ValueError, match="Muon: ns_steps must be less than 100"):
        opt.step()
    assert "Muon" in so.__all__


@pytest.mark.parity
@pytest.mark.parametrize("kwargs", [dict(lr=0.02), dict(lr=0.05, nesterov=False, weight_decay=0.0),
                                    dict(lr=0.01, momentum=0.5, adjust_lr_fn="match_rms_adamw", ns_steps=3),
                                    dict(lr=0.02, eps=1e-3, ns_coefficients=(3.0, -3.2, 1.2))])
def test_steps_match_torch(kwargs):
    torch = pytest.importorskip("torch")
    grads = grad_sequence(SHAPES, STEPS)
    params, start = make_params(SHAPES)
    tparams = [torch.tensor(a, dtype=torch.float32, requires_grad=True) for a in start]
    ours, theirs = so.Muon(params, **kwargs), torch.optim.Muon(tparams, **kwargs)
    for step_grads in grads:
        set_grads(params, step_grads)
        for t, g in zip(tparams, step_grads):
            t.grad = torch.tensor(g, dtype=torch.float32)
        ours.step()
        theirs.step()
        # the orthogonalization runs in bfloat16 in both, each product and the norm summed in float32 and
        # rounded once; a bfloat16 element rounded the other way would show as a difference near lr * 2**-8
        for p, t in zip(params, tparams):
            np.testing.assert_allclose(to_np(p), t.detach().numpy(), rtol=1e-5, atol=1e-6)
    tsd, osd = theirs.state_dict(), ours.state_dict()
    assert set(tsd["state"][0]) == set(osd["state"][0])
    assert set(tsd["param_groups"][0]) == set(osd["param_groups"][0])
    for i in range(len(SHAPES)):
        np.testing.assert_allclose(to_np(osd["state"][i]["momentum_buffer"]),
                                   tsd["state"][i]["momentum_buffer"].numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parity
def test_positional_arguments_match_torch():
    torch = pytest.importorskip("torch")
    start = np.random.default_rng(9).standard_normal((4, 6)).astype(np.float32)
    p, t = sx.Tensor(start.copy(), requires_grad=True), torch.tensor(start.copy(), requires_grad=True)
    args = (0.03, 0.05, 0.9, False, NS, 1e-7, 4, "match_rms_adamw")
    ours, theirs = so.Muon([p], *args), torch.optim.Muon([t], *args)
    g = np.random.default_rng(10).standard_normal((4, 6)).astype(np.float32)
    p.grad, t.grad = sx.Tensor(g), torch.tensor(g)
    ours.step()
    theirs.step()
    np.testing.assert_allclose(to_np(p), t.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert rel_err(to_np(p), start) > 1e-3  # it moved
