"""scaled_dot_product_attention against a NumPy reference, finite differences and PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
import sneppx_core as sx
import sneppx_core.functional as F
from opcheck import rms_rel_err
from sneppx_core.testing import gradcheck

RNG = np.random.default_rng(7)
SDPA = F.scaled_dot_product_attention


def t64(a, requires_grad=True):
    return sx.tensor(np.asarray(a, dtype=np.float64), dtype=sx.float64, requires_grad=requires_grad)


def npy(t):
    return np.array(t.detach().numpy())


def np_attention(q, k, v, mask=None, causal=False, scale=None):
    """softmax(q k^T * scale + mask) v; causal aligned to the end; rows without keys give 0."""
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    Tq, Tk = s.shape[-2:]
    if causal:
        allowed = np.arange(Tk)[None, :] <= np.arange(Tq)[:, None] + (Tk - Tq)
        s = np.where(allowed, s, -np.inf)
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    m = s.max(-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(m), m, 0))
    den = e.sum(-1, keepdims=True)
    p = np.where(den > 0, e / np.where(den > 0, den, 1), 0)
    return p @ v


@pytest.mark.parametrize("Tq,Tk,causal", [(5, 5, False), (70, 70, True), (3, 9, True), (9, 4, True), (1, 200, True),
                                          (130, 67, False)])
def test_forward_against_numpy(Tq, Tk, causal):
    q, k, v = RNG.standard_normal((2, 3, Tq, 20)), RNG.standard_normal((2, 3, Tk, 20)), RNG.standard_normal(
        (2, 3, Tk, 12))
    ref = np_attention(q, k, v, causal=causal)
    got = SDPA(t64(q, False), t64(k, False), t64(v, False), is_causal=causal)
    np.testing.assert_allclose(npy(got), ref, atol=1e-12)
    got32 = SDPA(*(sx.tensor(a, dtype=sx.float32) for a in (q, k, v)), is_causal=causal)
    np.testing.assert_allclose(npy(got32), ref, atol=2e-5)


@pytest.mark.parametrize("causal", [False, True])
def test_float32_long_sequences_stay_accurate(causal):
    """The float32 tile products sum each block's terms from zero and add them to the running output (and to the
    gradients' accumulators), so attention over 2048 keys keeps PyTorch's float32 accuracy: against float64 on
    the same values, the RMS error of the output relative to its RMS stays under 6e-7 and of the three input
    gradients under 7.5e-7 (here 2.7e-7-5.3e-7; PyTorch 3.0e-7-5.5e-7). One chain of adds continued over all
    the keys gave 8.7e-7 and 9.4e-7-1.1e-6."""
    rng = np.random.default_rng(8)
    q, k, v, go = (rng.standard_normal((1, 2, 2048, 64)).astype(np.float32) for _ in range(4))
    q64, k64, v64, go64 = (a.astype(np.float64) for a in (q, k, v, go))
    s = q64 @ np.swapaxes(k64, -1, -2) / 8.0
    if causal:
        s = np.where(np.tril(np.ones((2048, 2048), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    dp = go64 @ np.swapaxes(v64, -1, -2)
    ds = p * (dp - (dp * p).sum(-1, keepdims=True)) / 8.0
    refs = [p @ v64, ds @ k64, np.swapaxes(ds, -1, -2) @ q64, np.swapaxes(p, -1, -2) @ go64]
    x = [sx.tensor(a, requires_grad=True) for a in (q, k, v)]
    out = SDPA(*x, is_causal=causal)
    out.backward(sx.tensor(go))
    for got, ref, bound in zip([out] + [t.grad for t in x], refs, [6e-7, 7.5e-7, 7.5e-7, 7.5e-7]):
        assert rms_rel_err(npy(got), ref) < bound


def test_masks_scale_and_broadcast():
    q, k, v = RNG.standard_normal((2, 2, 6, 8)), RNG.standard_normal((1, 2, 7, 8)), RNG.standard_normal((2, 1, 7, 8))
    bmask = RNG.uniform(size=(6, 7)) > 0.3
    fmask = RNG.standard_normal((2, 1, 6, 7))
    got = SDPA(t64(q, False), t64(k, False), t64(v, False), attn_mask=sx.tensor(bmask), scale=0.3)
    np.testing.assert_allclose(npy(got), np_attention(q, k, v, bmask, scale=0.3), atol=1e-12)
    got = SDPA(t64(q, False), t64(k, False), t64(v, False), attn_mask=t64(fmask, False))
    np.testing.assert_allclose(npy(got), np_attention(q, k, v, fmask), atol=1e-12)


def test_gradients_float64():
    q, k, v = (RNG.standard_normal((1, 2, n, 5)) for n in (4, 6, 6))
    fmask = RNG.standard_normal((4, 6))
    bmask = RNG.uniform(size=(1, 1, 4, 6)) > 0.4
    gradcheck(lambda a, b, c: SDPA(a, b, c), [t64(q), t64(k), t64(v)])
    gradcheck(lambda a, b, c: SDPA(a, b, c, is_causal=True), [t64(q), t64(k), t64(v)])
    gradcheck(lambda a, b, c, m: SDPA(a, b, c, attn_mask=m), [t64(q), t64(k), t64(v), t64(fmask)])
    gradcheck(lambda a, b, c: SDPA(a, b, c, attn_mask=sx.tensor(bmask)), [t64(q), t64(k), t64(v)])


def test_gradients_noncontiguous_and_gqa():
    # (B, T, H, D) storage viewed as (B, H, T, D), as a model's projections produce it
    q, k, v = (RNG.standard_normal((1, 5, 4, 3)) for _ in range(3))
    k2, v2 = (RNG.standard_normal((1, 5, 2, 3)) for _ in range(2))

    def heads(t):
        return t.transpose(1, 2)

    gradcheck(lambda a, b, c: SDPA(heads(a), heads(b), heads(c), is_causal=True), [t64(q), t64(k), t64(v)])
    gradcheck(lambda a, b, c: SDPA(heads(a), heads(b), heads(c), enable_gqa=True), [t64(q), t64(k2), t64(v2)])
    got = SDPA(heads(t64(q, False)), heads(t64(k2, False)), heads(t64(v2, False)), enable_gqa=True)
    rep = lambda a: np.repeat(a.transpose(0, 2, 1, 3), 2, axis=1)  # noqa: E731
    np.testing.assert_allclose(npy(got), np_attention(q.transpose(0, 2, 1, 3), rep(k2), rep(v2)), atol=1e-12)


def test_fully_masked_rows_give_zeros_and_no_nan():
    q, k, v = (sx.tensor(RNG.standard_normal((1, 1, 4, 8)), dtype=sx.float32, requires_grad=True) for _ in range(3))
    mask = np.ones((4, 4), dtype=bool)
    mask[2] = False
    out = SDPA(q, k, v, attn_mask=sx.tensor(mask))
    out.backward(sx.ones_like(out))
    assert np.all(npy(out)[0, 0, 2] == 0)
    for t in (q, k, v):
        assert np.isfinite(npy(t.grad)).all()
    assert np.all(npy(q.grad)[0, 0, 2] == 0)
    out = SDPA(q, k, v, attn_mask=sx.full((4, 4), float("-inf")))
    assert np.all(npy(out) == 0)


def test_dropout_is_seeded_and_differentiable():
    q, k, v = (RNG.standard_normal((1, 2, 5, 4)) for _ in range(3))

    def f(a, b, c):
        return SDPA(a, b, c, dropout_p=0.4, generator=sx.Generator(3))

    a1, a2 = npy(f(t64(q, False), t64(k, False), t64(v, False))), npy(f(t64(q, False), t64(k, False), t64(v, False)))
    np.testing.assert_array_equal(a1, a2)
    assert not np.allclose(a1, np_attention(q, k, v))
    gradcheck(f, [t64(q), t64(k), t64(v)])


def test_errors():
    q = sx.zeros(1, 2, 3, 4)
    with pytest.raises(ValueError, match="scaled_dot_product_attention.*last dim"):
        SDPA(q, sx.zeros(1, 2, 3, 5), sx.zeros(1, 2, 3, 5))
    with pytest.raises(ValueError, match="either attn_mask or is_causal"):
        SDPA(q, q, q, attn_mask=sx.ones(3, 3, dtype=sx.bool), is_causal=True)
    with pytest.raises(ValueError, match="dropout_p"):
        SDPA(q, q, q, dropout_p=1.0)
    with pytest.raises(ValueError, match="attn_mask.*broadcast"):
        SDPA(q, q, q, attn_mask=sx.ones(2, 2, dtype=sx.bool))
    with pytest.raises(TypeError, match="dtype"):
        SDPA(q, q.double(), q)


@pytest.mark.parity
@pytest.mark.parametrize("T,D,causal,mask", [(64, 64, True, None), (130, 20, True, None), (77, 32, False, "bool"),
                                             (50, 16, False, "float"), (200, 64, False, None)])
def test_parity_with_torch(T, D, causal, mask):
    torch = pytest.importorskip("torch")
    arrays = [RNG.standard_normal((2, 3, T, D)).astype(np.float32) for _ in range(3)]
    m = None
    if mask == "bool":
        m = RNG.uniform(size=(T, T)) > 0.2
    elif mask == "float":
        m = RNG.standard_normal((2, 1, T, T)).astype(np.float32)
    s_in = [sx.tensor(a, requires_grad=True) for a in arrays]
    t_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    ys = SDPA(*s_in, attn_mask=None if m is None else sx.tensor(m), is_causal=causal)
    yt = torch.nn.functional.scaled_dot_product_attention(*t_in, attn_mask=None if m is None else torch.tensor(m),
                                                          is_causal=causal)
    np.testing.assert_allclose(npy(ys), yt.detach().numpy(), atol=2e-5)
    g = RNG.standard_normal((2, 3, T, D)).astype(np.float32)
    ys.backward(sx.tensor(g))
    yt.backward(torch.tensor(g))
    for s, t in zip(s_in, t_in):
        np.testing.assert_allclose(npy(s.grad), t.grad.numpy(), atol=2e-4, rtol=1e-4)


@pytest.mark.parity
def test_parity_fully_masked_rows():
    torch = pytest.importorskip("torch")
    arrays = [RNG.standard_normal((1, 2, 5, 8)).astype(np.float32) for _ in range(3)]
    m = np.ones((5, 5), dtype=bool)
    m[1] = False
    s_in = [sx.tensor(a, requires_grad=True) for a in arrays]
    t_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    ys, yt = SDPA(*s_in, attn_mask=sx.tensor(m)), torch.nn.functional.scaled_dot_product_attention(
        *t_in, attn_mask=torch.tensor(m))
    np.testing.assert_allclose(npy(ys), yt.detach().numpy(), atol=1e-5)
    ys.sum().backward()
    yt.sum().backward()
    for s, t in zip(s_in, t_in):
        np.testing.assert_allclose(npy(s.grad), t.grad.numpy(), atol=1e-5)
