"""MultiheadAttention against a NumPy reference: projections, masks, layouts, both kernels."""

import numpy as np
import pytest
import sneppx_core as sx

import sneppx_nn as nn
from conftest import numeric_grad, tensor, to_np
from reference import mha_ref


def _t(a, grad=False):
    return tensor(a, requires_grad=grad, dtype=sx.float64)


def test_state_dict_keys_match_pytorch():
    assert list(nn.MultiheadAttention(8, 2).state_dict()) == [
        "in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"]
    assert list(nn.MultiheadAttention(8, 2, kdim=3, vdim=5).state_dict()) == [
        "q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"]
    m = nn.MultiheadAttention(8, 2)
    assert np.all(to_np(m.in_proj_bias) == 0) and np.all(to_np(m.out_proj.bias) == 0)
    with pytest.raises(ValueError, match="multiple"):
        nn.MultiheadAttention(10, 3)


@pytest.mark.parametrize("need_weights", [True, False])
def test_cross_attention_seq_first(need_weights, rng):
    mha = nn.MultiheadAttention(8, 2, dtype=sx.float64)
    q, k, v = rng.standard_normal((5, 2, 8)), rng.standard_normal((7, 2, 8)), rng.standard_normal((7, 2, 8))
    out, w = mha(_t(q), _t(k), _t(v), need_weights=need_weights)
    ref_o, ref_w = mha_ref(mha, q.transpose(1, 0, 2), k.transpose(1, 0, 2), v.transpose(1, 0, 2))
    np.testing.assert_allclose(to_np(out), ref_o.transpose(1, 0, 2), rtol=1e-9, atol=1e-10)
    if need_weights:
        np.testing.assert_allclose(to_np(w), ref_w, rtol=1e-9, atol=1e-10)
    else:
        assert w is None


@pytest.mark.parametrize("need_weights", [True, False])
def test_masks_batch_first(need_weights, rng):
    mha = nn.MultiheadAttention(6, 3, batch_first=True, dtype=sx.float64)
    x = rng.standard_normal((2, 4, 6))
    kpm = np.array([[False, False, False, True], [False, True, False, False]])
    causal = np.triu(np.ones((4, 4), dtype=bool), 1)
    add = rng.standard_normal((4, 4))
    neg = np.where(causal, -np.inf, 0.0)
    pad = np.where(kpm, -np.inf, 0.0)[:, None, None, :]
    cases = [
        ({"key_padding_mask": tensor(kpm)}, pad),
        ({"attn_mask": tensor(causal)}, neg),
        ({"attn_mask": _t(add)}, add),
        ({"is_causal": True}, neg),
        ({"attn_mask": tensor(causal), "key_padding_mask": tensor(kpm)}, neg + pad),
        ({"attn_mask": _t(np.broadcast_to(add, (6, 4, 4)).copy())}, add),
    ]
    for kwargs, mask in cases:
        xt = _t(x)
        out, w = mha(xt, xt, xt, need_weights=need_weights, **kwargs)
        ref_o, ref_w = mha_ref(mha, x, x, x, mask)
        np.testing.assert_allclose(to_np(out), ref_o, rtol=1e-9, atol=1e-10, err_msg=str(list(kwargs)))
        if need_weights:
            np.testing.assert_allclose(to_np(w), ref_w, rtol=1e-9, atol=1e-10)


def test_unbatched_and_per_head_weights(rng):
    mha = nn.MultiheadAttention(4, 2, dtype=sx.float64)
    q, k = rng.standard_normal((3, 4)), rng.standard_normal((5, 4))
    out, w = mha(_t(q), _t(k), _t(k), average_attn_weights=False)
    ref_o, _ = mha_ref(mha, q[None], k[None], k[None])
    assert out.shape == (3, 4) and w.shape == (2, 3, 5)
    np.testing.assert_allclose(to_np(out), ref_o[0], rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(to_np(w).sum(-1), np.ones((2, 3)), rtol=1e-12)


def test_separate_kdim_vdim(rng):
    mha = nn.MultiheadAttention(4, 1, kdim=3, vdim=2, batch_first=True, dtype=sx.float64)
    q, k, v = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 5, 2))
    out, _ = mha(_t(q), _t(k), _t(v))
    np.testing.assert_allclose(to_np(out), mha_ref(mha, q, k, v)[0], rtol=1e-9, atol=1e-10)
    with pytest.raises(ValueError, match="kdim"):
        mha(_t(q), _t(q), _t(v))


@pytest.mark.parametrize("need_weights", [True, False])
def test_gradient_wrt_query(need_weights, rng):
    mha = nn.MultiheadAttention(4, 2, batch_first=True, dtype=sx.float64)
    q, kv = rng.standard_normal((1, 3, 4)), rng.standard_normal((1, 4, 4))
    r = rng.standard_normal((1, 3, 4))
    qt = _t(q, grad=True)
    out, _ = mha(qt, _t(kv), _t(kv), need_weights=need_weights, attn_mask=tensor(np.eye(3, 4, 1, dtype=bool)))
    (out * _t(r)).sum().backward()
    mask = np.where(np.eye(3, 4, 1, dtype=bool), -np.inf, 0.0)
    num = numeric_grad(lambda a: float((mha_ref(mha, a, kv, kv, mask)[0] * r).sum()), q.copy())
    np.testing.assert_allclose(to_np(qt.grad), num, rtol=1e-5, atol=1e-8)
    assert mha.in_proj_weight.grad is not None and mha.out_proj.weight.grad is not None


def test_mask_shape_errors(rng):
    mha = nn.MultiheadAttention(4, 2, batch_first=True)
    x = sx.randn(2, 3, 4)
    with pytest.raises(ValueError, match="attn_mask"):
        mha(x, x, x, attn_mask=sx.zeros(2, 2))
    with pytest.raises(ValueError, match="key_padding_mask"):
        mha(x, x, x, key_padding_mask=sx.zeros(3, 3, dtype=sx.bool_))
    with pytest.raises(ValueError):
        mha(sx.randn(3, 4, 4, 4), x, x)


def test_is_causal_with_more_keys_than_queries(rng):
    mha = nn.MultiheadAttention(4, 2, batch_first=True, dtype=sx.float64)
    q, kv = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 5, 4))
    mask = np.where(np.triu(np.ones((3, 5), dtype=bool), 1), -np.inf, 0.0)  # top-left aligned, as PyTorch
    ref = mha_ref(mha, q, kv, kv, mask)[0]
    for need_weights in (True, False):
        out, _ = mha(_t(q), _t(kv), _t(kv), need_weights=need_weights, is_causal=True)
        np.testing.assert_allclose(to_np(out), ref, rtol=1e-9, atol=1e-10)
