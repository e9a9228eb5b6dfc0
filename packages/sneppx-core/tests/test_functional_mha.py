"""multi_head_attention_forward: against a NumPy per-head loop written from the definition (float64), float64
finite-difference gradients, errors, and parity with PyTorch (outputs, weights and gradients)."""

from __future__ import annotations

import numpy as np
import pytest
import sneppx_core as sx
import sneppx_core.functional as F
from sneppx_core.testing import gradcheck

RNG = np.random.default_rng(59)
E, H, L, S, N = 8, 2, 5, 6, 3


def np_mha(q, k, v, w_in, b_in, w_out, b_out, mask=None, bias_kv=None, zero_attn=False):
    """(out (L, N, E), weights (N, H, L, S')) per batch element and head, ``mask`` additive (N, H, L, S)."""
    d = E // H
    out = np.zeros((q.shape[0], q.shape[1], E))
    ws = []
    for n in range(q.shape[1]):
        qp, kp, vp = (t[:, n] @ w.T + bb for t, w, bb in zip((q, k, v), np.split(w_in, 3), np.split(b_in, 3)))
        m = np.zeros((q.shape[0], k.shape[0], H)) if mask is None else mask[n].transpose(1, 2, 0)
        if bias_kv is not None:
            kp, vp = np.vstack([kp, bias_kv[0][0]]), np.vstack([vp, bias_kv[1][0]])
            m = np.concatenate([m, np.zeros((q.shape[0], 1, H))], 1)
        if zero_attn:
            kp, vp = np.vstack([kp, np.zeros((1, E))]), np.vstack([vp, np.zeros((1, E))])
            m = np.concatenate([m, np.zeros((q.shape[0], 1, H))], 1)
        heads, wn = [], []
        for h in range(H):
            sl = slice(h * d, (h + 1) * d)
            s = qp[:, sl] @ kp[:, sl].T / np.sqrt(d) + m[:, :, h]
            p = np.exp(s - s.max(1, keepdims=True))
            p /= p.sum(1, keepdims=True)
            heads.append(p @ vp[:, sl])
            wn.append(p)
        out[:, n] = np.hstack(heads) @ w_out.T + b_out
        ws.append(wn)
    return out, np.array(ws)


def params():
    return dict(q=RNG.standard_normal((L, N, E)), k=RNG.standard_normal((S, N, E)), v=RNG.standard_normal((S, N, E)),
                w_in=RNG.standard_normal((3 * E, E)) * 0.5, b_in=RNG.standard_normal(3 * E),
                w_out=RNG.standard_normal((E, E)), b_out=RNG.standard_normal(E))


def call(p, lib_tensor=sx.tensor, fn=F.multi_head_attention_forward, bias_kv=None, zero=False, **kw):
    t = {k: lib_tensor(v) for k, v in p.items()}
    bk, bv = (None, None) if bias_kv is None else (lib_tensor(bias_kv[0]), lib_tensor(bias_kv[1]))
    return fn(t["q"], t["k"], t["v"], E, H, t["w_in"], t["b_in"], bk, bv, zero, 0.0, t["w_out"], t["b_out"], **kw)


def masks():
    am = RNG.random((L, S)) < 0.3
    am[:, 0] = False
    kpm = RNG.random((N, S)) < 0.3
    kpm[:, 1] = False
    return am, kpm


@pytest.mark.parametrize("need_weights", [True, False])
def test_matches_the_definition(need_weights):
    p = params()
    am, kpm = masks()
    add = np.where(am, -np.inf, 0.0)[None, None] + np.where(kpm, -np.inf, 0.0)[:, None, None, :]
    out, w = call(p, attn_mask=sx.tensor(am), key_padding_mask=sx.tensor(kpm), need_weights=need_weights,
                  average_attn_weights=False)
    ro, rw = np_mha(p["q"], p["k"], p["v"], p["w_in"], p["b_in"], p["w_out"], p["b_out"], np.broadcast_to(add,
                    (N, H, L, S)))
    np.testing.assert_allclose(out.numpy(), ro, rtol=1e-10, atol=1e-12)
    if need_weights:
        np.testing.assert_allclose(w.numpy(), rw, rtol=1e-10, atol=1e-12)
    else:
        assert w is None


def test_bias_kv_zero_attention_float_mask_and_unbatched():
    p = params()
    bias_kv = (RNG.standard_normal((1, 1, E)), RNG.standard_normal((1, 1, E)))
    fm = RNG.standard_normal((N * H, L, S))
    out, w = call(p, bias_kv=bias_kv, zero=True, attn_mask=sx.tensor(fm))
    ro, rw = np_mha(p["q"], p["k"], p["v"], p["w_in"], p["b_in"], p["w_out"], p["b_out"], fm.reshape(N, H, L, S),
                    bias_kv, True)
    np.testing.assert_allclose(out.numpy(), ro, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(w.numpy(), rw.mean(1), rtol=1e-10, atol=1e-12)
    one = {k: (v[:, 0] if k in "qkv" else v) for k, v in p.items()}
    out1, w1 = call(one)
    ro1, rw1 = np_mha(p["q"][:, :1], p["k"][:, :1], p["v"][:, :1], p["w_in"], p["b_in"], p["w_out"], p["b_out"])
    np.testing.assert_allclose(out1.numpy(), ro1[:, 0], rtol=1e-10, atol=1e-12)
    assert tuple(w1.shape) == (L, S)


def test_separate_weights_and_static_kv():
    p = params()
    t = {k: sx.tensor(v) for k, v in p.items()}
    wq, wk, wv = t["w_in"].chunk(3, 0)
    a, _ = call(p)
    b, _ = F.multi_head_attention_forward(t["q"], t["k"], t["v"], E, H, None, t["b_in"], None, None, False, 0.0,
                                          t["w_out"], t["b_out"], use_separate_proj_weight=True, q_proj_weight=wq,
                                          k_proj_weight=wk, v_proj_weight=wv)
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-12)
    ks = (F.linear(t["k"], wk, t["b_in"][E:2 * E])).reshape((S, N * H, E // H)).transpose(0, 1)
    vs = (F.linear(t["v"], wv, t["b_in"][2 * E:])).reshape((S, N * H, E // H)).transpose(0, 1)
    c, _ = call(p, static_k=ks, static_v=vs)
    np.testing.assert_allclose(a.numpy(), c.numpy(), rtol=1e-12, atol=1e-12)


def test_gradients_match_finite_differences():
    p = params()
    names = ["q", "k", "v", "w_in", "b_in", "w_out", "b_out"]
    _, kpm = masks()

    def fn(*ts):
        out, w = F.multi_head_attention_forward(ts[0], ts[1], ts[2], E, H, ts[3], ts[4], None, None, False, 0.0,
                                                ts[5], ts[6], key_padding_mask=sx.tensor(kpm))
        return out.sum() + (w * w).sum()

    assert gradcheck(fn, [sx.tensor(p[n], requires_grad=True) for n in names])


@pytest.mark.parametrize("kw,match", [
    (dict(attn_mask=np.zeros((L, S + 1), bool)), r"attn_mask must have shape \(5, 6\), got \(5, 7\)"),
    (dict(key_padding_mask=np.zeros((N, S + 1), bool)), r"key_padding_mask must have shape \(3, 6\)"),
    (dict(attn_mask=np.zeros((L, S), np.int64)), "int64"),
    (dict(is_causal=True), "is_causal"),
    (dict(use_separate_proj_weight=True), "q/k/v_proj_weight"),
])
def test_errors(kw, match):
    kw = {k: (sx.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
    with pytest.raises((ValueError, TypeError), match=match) as info:
        call(params(), **kw)
    assert "multi_head_attention_forward" in str(info.value)
    p = params()
    with pytest.raises(ValueError, match=r"query \(5, 3, 8\)"):
        F.multi_head_attention_forward(sx.tensor(p["q"]), sx.tensor(p["k"]), sx.tensor(p["v"]), 6, H, None, None,
                                       None, None, False, 0.0, sx.tensor(p["w_out"]), None)


@pytest.mark.parity
@pytest.mark.parametrize("case", ["plain", "masks", "masks_no_weights", "bias_zero", "per_head", "unbatched"])
def test_matches_torch(torch, case):
    p = params()
    am, kpm = masks()
    bias_kv = (RNG.standard_normal((1, 1, E)), RNG.standard_normal((1, 1, E))) if case == "bias_zero" else None
    kw = {"masks": dict(attn_mask=am, key_padding_mask=kpm), "masks_no_weights": dict(attn_mask=am,
          key_padding_mask=kpm, need_weights=False), "per_head": dict(average_attn_weights=False,
          attn_mask=RNG.standard_normal((N * H, L, S)))}.get(case, {})
    if case == "unbatched":
        p = {k: (v[:, 0] if k in "qkv" else v) for k, v in p.items()}
    results = []
    for lib, fn in ((torch, torch.nn.functional.multi_head_attention_forward), (sx, F.multi_head_attention_forward)):
        leaves = {}

        def make(a, lib=lib, leaves=leaves):
            t = lib.tensor(a, requires_grad=a.dtype != bool)
            leaves[len(leaves)] = t
            return t

        args = {k: lib.tensor(v) for k, v in kw.items() if isinstance(v, np.ndarray)}
        out, w = call(p, make, fn, bias_kv, case == "bias_zero", **{**kw, **args})
        (out * out).sum().backward() if w is None else ((out * out).sum() + (w * w).sum()).backward()
        results.append([out.detach().numpy()] + ([] if w is None else [w.detach().numpy()]) +
                       [t.grad.numpy() for t in leaves.values() if t.requires_grad])
    assert len(results[0]) == len(results[1])
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-11)
