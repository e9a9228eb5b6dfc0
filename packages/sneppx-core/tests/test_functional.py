"""sneppx_core.functional: softmax, norms, activations, gated units, linear, embedding, dropout.

Forward results are compared with NumPy formulas, gradients with float64 central differences
(``sneppx_core.testing.gradcheck``), and both with PyTorch under ``-m parity``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import sneppx_core as sx
import sneppx_core.functional as F
from opcheck import rms_rel_err
from sneppx_core.testing import gradcheck

RNG = np.random.default_rng(1234)


def arr(*shape, scale=1.0):
    return RNG.standard_normal(shape) * scale


def t64(a, requires_grad=True):
    return sx.tensor(np.asarray(a, dtype=np.float64), dtype=sx.float64, requires_grad=requires_grad)


def npy(t):
    return np.array(t.detach().numpy())


def np_softmax(a, axis):
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


_erf = np.vectorize(math.erf)

ACTIVATIONS = {  # name: (sneppx call, NumPy reference)
    "relu": (F.relu, lambda a: np.maximum(a, 0)),
    "gelu": (F.gelu, lambda a: 0.5 * a * (1 + _erf(a / math.sqrt(2)))),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"),
                  lambda a: 0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a ** 3)))),
    "silu": (F.silu, lambda a: a / (1 + np.exp(-a))),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.2), lambda a: np.where(a > 0, a, 0.2 * a)),
    "elu": (lambda x: F.elu(x, 1.5), lambda a: np.where(a > 0, a, 1.5 * (np.exp(a) - 1))),
    "softplus": (lambda x: F.softplus(x, 2.0, 3.0),
                 lambda a: np.where(2 * a > 3, a, np.log1p(np.exp(2 * a)) / 2)),
}


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("dim", [-1, 0, 1])
def test_softmax_forward_and_gradient(log, dim):
    a = arr(4, 5, 3)
    f = F.log_softmax if log else F.softmax
    ref = np_softmax(a, dim)
    np.testing.assert_allclose(npy(f(t64(a, False), dim)), np.log(ref) if log else ref, atol=1e-12)
    np.testing.assert_allclose(npy(f(sx.tensor(a, dtype=sx.float32), dim)), np.log(ref) if log else ref, atol=2e-6)
    gradcheck(lambda x: f(x, dim), [t64(a)])
    gradcheck(lambda x: f(x.transpose(0, 2), dim), [t64(a)])  # non-contiguous input


@pytest.mark.parametrize("log", [False, True])
def test_softmax_huge_logits_stay_finite(log):
    a = np.array([[1e4, -1e4, 0.0, 1e4 - 1.0], [-1e4, -1e4, -1e4, -1e4]], dtype=np.float32)
    x = sx.tensor(a, requires_grad=True)
    y = (F.log_softmax if log else F.softmax)(x, -1)
    y.backward(sx.ones_like(y))
    assert np.isfinite(npy(y)).all() and np.isfinite(npy(x.grad)).all()
    a64 = a.astype(np.float64)
    m = a64.max(-1, keepdims=True)
    ref = (a64 - m) - np.log(np.exp(a64 - m).sum(-1, keepdims=True)) if log else np_softmax(a64, -1)
    np.testing.assert_allclose(npy(y), ref, atol=1e-5)


def test_softmax_dtype_argument_and_method():
    a = arr(3, 4)
    y = F.softmax(sx.tensor(a, dtype=sx.float32), -1, dtype=sx.float64)
    assert y.dtype == sx.float64
    np.testing.assert_allclose(npy(sx.tensor(a).softmax(-1)), np_softmax(a, -1), atol=1e-6)


def np_layer_norm(a, k, w=None, b=None, eps=1e-5, rms=False):
    axes = tuple(range(a.ndim - k, a.ndim))
    if rms:
        y = a / np.sqrt((a ** 2).mean(axis=axes, keepdims=True) + eps)
    else:
        mu = a.mean(axis=axes, keepdims=True)
        y = (a - mu) / np.sqrt(((a - mu) ** 2).mean(axis=axes, keepdims=True) + eps)
    y = y if w is None else y * w
    return y if b is None else y + b


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape,k", [((3, 7), 1), ((2, 3, 4), 2)])
def test_layer_norm(affine, shape, k):
    a = arr(*shape)
    ns = shape[-k:]
    w, b = (arr(*ns), arr(*ns)) if affine else (None, None)
    got = F.layer_norm(t64(a, False), ns, None if w is None else t64(w, False), None if b is None else t64(b, False))
    np.testing.assert_allclose(npy(got), np_layer_norm(a, k, w, b), atol=1e-10)
    if affine:
        gradcheck(lambda x, w_, b_: F.layer_norm(x, ns, w_, b_), [t64(a), t64(w), t64(b)])
        gradcheck(lambda x, w_, b_: F.layer_norm(x.transpose(0, 1).transpose(0, 1), ns, w_, b_),
                  [t64(a), t64(w), t64(b)])
    else:
        gradcheck(lambda x: F.layer_norm(x, ns), [t64(a)])


@pytest.mark.parametrize("rms", [False, True])
@pytest.mark.parametrize("shape", [(8, 65536), (64, 768)])
def test_layer_norm_float32_rows_stay_accurate(rms, shape):
    """layer_norm and rms_norm sum a row in blocks (float32 lanes restarted every 1024 values, the blocks
    added in double lanes) and layer_norm keeps the mean's remainder below float32 precision: on rows of float32
    values of mean 30 and deviation 0.5 their RMS error against float64 on the same values, relative to the
    output's RMS, stays under 1e-6 (1e-7 for rms_norm). One running sum per lane over rows of 65536 gave 1.4e-5
    and 1.6e-7, a block's lanes added in float 4.0e-6 on rows of 768, the mean rounded to float32 alone 1.2e-6
    and 1.4e-6 (PyTorch: 2.0e-6 and 4.9e-8 on either length; these: 7.5e-8 and 6.7e-7)."""
    rng = np.random.default_rng(5)
    a = (rng.standard_normal(shape) * 0.5 + 30.0).astype(np.float32)
    ref = np_layer_norm(a.astype(np.float64), 1, rms=rms)
    n = shape[-1]
    got = npy(F.rms_norm(sx.tensor(a), (n,), eps=1e-5) if rms else F.layer_norm(sx.tensor(a), (n,)))
    assert rms_rel_err(got, ref) < (1e-7 if rms else 1e-6)


@pytest.mark.parametrize("shape", [(4, 65536), (512, 768)])
def test_layer_norm_float32_backward_stays_accurate(shape):
    """layer_norm's backward sums g * w and g * w * xhat over each row in the same blocks: against float64 on
    the same float32 values (rows of mean 30 and deviation 0.5, an output gradient of mean 1), the input,
    weight and bias gradients' RMS errors relative to their RMS stay under 4e-6, 3.5e-6 and 1e-6 (2.6e-6,
    2.3e-6 and 6e-8 on rows of 768; a block's lanes added in float gave 8.1e-6 and 4.3e-6 there through the
    forward's mean; PyTorch: 1.1e-5, 1.6e-6 and 1.6e-7)."""
    rng = np.random.default_rng(6)
    n = shape[1]
    a = (rng.standard_normal(shape) * 0.5 + 30.0).astype(np.float32)
    g = (rng.standard_normal(shape) * 0.5 + 1.0).astype(np.float32)
    w = (rng.standard_normal(n) * 0.1 + 1.0).astype(np.float32)
    a64, g64, w64 = a.astype(np.float64), g.astype(np.float64), w.astype(np.float64)
    mu = a64.mean(-1, keepdims=True)
    r = 1 / np.sqrt(((a64 - mu) ** 2).mean(-1, keepdims=True) + 1e-5)
    xh, gh = (a64 - mu) * r, g64 * w64
    gx = r * (gh - gh.mean(-1, keepdims=True) - xh * (gh * xh).mean(-1, keepdims=True))
    x, wt, b = (sx.tensor(v, requires_grad=True) for v in (a, w, np.zeros(n, np.float32)))
    F.layer_norm(x, (n,), wt, b).backward(sx.tensor(g))
    assert rms_rel_err(npy(x.grad), gx) < 4e-6
    assert rms_rel_err(npy(wt.grad), (g64 * xh).sum(0)) < 3.5e-6
    assert rms_rel_err(npy(b.grad), g64.sum(0)) < 1e-6


def test_layer_norm_constant_rows_are_finite():
    x = sx.full((4, 16), 3.0, requires_grad=True)
    w, b = sx.ones(16, requires_grad=True), sx.full((16,), 0.5, requires_grad=True)
    y = F.layer_norm(x, (16,), w, b)
    np.testing.assert_allclose(npy(y), 0.5)
    y.backward(sx.tensor(RNG.standard_normal((4, 16)), dtype=sx.float32))
    for t in (x.grad, w.grad, b.grad):
        assert np.isfinite(npy(t)).all()


def test_layer_norm_errors():
    with pytest.raises(ValueError, match="layer_norm.*normalized_shape"):
        F.layer_norm(sx.zeros(3, 4), (5,))
    with pytest.raises(ValueError, match="layer_norm.*weight"):
        F.layer_norm(sx.zeros(3, 4), (4,), sx.ones(3))


@pytest.mark.parametrize("weighted", [True, False])
def test_rms_norm(weighted):
    a = arr(5, 6)
    w = arr(6) if weighted else None
    got = F.rms_norm(t64(a, False), 6, None if w is None else t64(w, False), eps=1e-6)
    np.testing.assert_allclose(npy(got), np_layer_norm(a, 1, w, eps=1e-6, rms=True), atol=1e-10)
    eps32 = float(np.finfo(np.float32).eps)
    got32 = F.rms_norm(sx.tensor(a, dtype=sx.float32), (6,))
    np.testing.assert_allclose(npy(got32), np_layer_norm(a, 1, eps=eps32, rms=True), atol=1e-5)
    if weighted:
        gradcheck(lambda x, w_: F.rms_norm(x, (6,), w_, 1e-6), [t64(a), t64(w)])
    else:
        gradcheck(lambda x: F.rms_norm(x.transpose(0, 1), (5,)), [t64(a)])


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation(name):
    fn, ref = ACTIVATIONS[name]
    a = arr(6, 7, scale=2.0)
    a[0, :3] = [0.0, 25.0, -25.0]
    np.testing.assert_allclose(npy(fn(t64(a, False))), ref(a), atol=1e-12, rtol=1e-10)
    np.testing.assert_allclose(npy(fn(sx.tensor(a, dtype=sx.float32))), ref(a), atol=2e-6, rtol=2e-6)
    b = a + 0.05 * np.sign(a)  # keep the finite differences away from kinks
    b[b == 0] = 0.3
    gradcheck(lambda x: fn(x.transpose(0, 1)), [t64(b)])


def test_inplace_activation_writes_input():
    x = sx.tensor([-1.0, 2.0])
    y = F.relu(x, inplace=True)
    assert y is x and x.tolist() == [0.0, 2.0]


@pytest.mark.parametrize("dim", [0, -1])
def test_glu_and_swiglu(dim):
    a = arr(4, 6)
    x1, x2 = np.split(a, 2, axis=dim)
    np.testing.assert_allclose(npy(F.glu(t64(a, False), dim)), x1 / (1 + np.exp(-x2)), atol=1e-12)
    np.testing.assert_allclose(npy(F.swiglu(t64(a, False), dim)), x1 / (1 + np.exp(-x1)) * x2, atol=1e-12)
    gradcheck(lambda x: F.glu(x, dim), [t64(a)])
    gradcheck(lambda x: F.swiglu(x.transpose(0, 1), 1 - dim if dim >= 0 else 0), [t64(a)])
    gradcheck(lambda g, u: F.swiglu(g, u), [t64(x1), t64(x2)])
    with pytest.raises(ValueError, match="glu.*even"):
        F.glu(sx.zeros(3, 5), -1)


@pytest.mark.parametrize("shape", [(5,), (3, 5), (2, 3, 5)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear(shape, bias):
    x, w, b = arr(*shape), arr(4, 5), arr(4)
    got = F.linear(t64(x, False), t64(w, False), t64(b, False) if bias else None)
    np.testing.assert_allclose(npy(got), x @ w.T + (b if bias else 0), atol=1e-12)
    ins = [t64(x), t64(w)] + ([t64(b)] if bias else [])
    gradcheck(lambda *t: F.linear(*t), ins)
    gradcheck(lambda x_, w_: F.linear(x_, w_.transpose(0, 1).transpose(0, 1)), [t64(x), t64(w)])


def test_linear_float32_noncontiguous_weight_and_errors():
    x, w = arr(3, 5), arr(5, 4)
    wt = sx.tensor(w, dtype=sx.float32).transpose(0, 1)  # (4, 5) view of a (5, 4) buffer
    np.testing.assert_allclose(npy(F.linear(sx.tensor(x, dtype=sx.float32), wt)), x @ w, atol=1e-5)
    with pytest.raises(ValueError, match="linear"):
        F.linear(sx.zeros(3, 6), sx.zeros(4, 5))
    with pytest.raises(TypeError, match="linear.*dtype"):
        F.linear(sx.zeros(3, 5), sx.zeros(4, 5, dtype=sx.float64))


def test_linear_double_backward():
    x, w = t64(arr(3, 4)), t64(arr(2, 4))
    y = F.linear(x, w)
    (gx,) = sx.autograd.grad((y * y).sum(), [x], create_graph=True)
    gx.sum().backward()
    # d/dw sum_ij (2 y W)_ij = 2 * (1^T W) x-terms: compare with NumPy: gx = 2 y W, sum(gx) = 2 sum(x W^T W 1)
    ones = np.ones((3, 4))
    xa, wa = npy(x), npy(w)
    ref = 2 * ((ones @ wa.T).T @ xa + (xa @ wa.T).T @ ones)
    np.testing.assert_allclose(npy(w.grad), ref, atol=1e-10)


def test_embedding_forward_backward_and_padding():
    w = arr(7, 3)
    ids = np.array([[1, 2, 4], [4, 0, 6], [2, 4, 4]])
    got = F.embedding(sx.tensor(ids), t64(w, False))
    np.testing.assert_allclose(npy(got), w[ids])
    wt = t64(w)
    g = arr(3, 3, 3)
    F.embedding(sx.tensor(ids), wt, padding_idx=4).backward(t64(g, False))
    ref = np.zeros_like(w)
    np.add.at(ref, ids.reshape(-1), g.reshape(-1, 3))
    ref[4] = 0
    np.testing.assert_allclose(npy(wt.grad), ref, atol=1e-12)
    wt.grad = None
    F.embedding(sx.tensor(ids), wt, scale_grad_by_freq=True).backward(t64(g, False))
    counts = np.bincount(ids.reshape(-1), minlength=7)
    ref = np.zeros_like(w)
    np.add.at(ref, ids.reshape(-1), g.reshape(-1, 3) / counts[ids.reshape(-1)][:, None])
    np.testing.assert_allclose(npy(wt.grad), ref, atol=1e-12)


def test_embedding_errors():
    w = sx.zeros(10, 4)
    with pytest.raises(IndexError, match=r"embedding.*\b12\b.*10 rows"):
        F.embedding(sx.tensor([1, 12]), w)
    with pytest.raises(IndexError, match=r"-1"):
        F.embedding(sx.tensor([-1]), w)
    with pytest.raises(TypeError, match="embedding"):
        F.embedding(sx.tensor([1.0]), w)
    with pytest.raises(NotImplementedError):
        F.embedding(sx.tensor([1]), w, max_norm=1.0)


def test_dropout_identity_cases_and_errors():
    x = sx.randn(10)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    with pytest.raises(ValueError, match="dropout.*between 0 and 1"):
        F.dropout(x, 1.5)
    np.testing.assert_array_equal(npy(F.dropout(x, 1.0)), 0.0)


def test_dropout_statistics_seed_and_backward():
    x = sx.ones(200_000, requires_grad=True)
    y = F.dropout(x, 0.3, generator=sx.Generator(7))
    a = npy(y)
    kept = a != 0
    assert abs(kept.mean() - 0.7) < 0.01
    np.testing.assert_allclose(a[kept], 1 / 0.7, rtol=1e-6)
    np.testing.assert_array_equal(npy(F.dropout(x, 0.3, generator=sx.Generator(7))), a)
    assert not np.array_equal(npy(F.dropout(x, 0.3, generator=sx.Generator(8))), a)
    g = RNG.standard_normal(200_000)
    y.backward(sx.tensor(g, dtype=sx.float32))
    np.testing.assert_allclose(npy(x.grad), np.where(kept, g / 0.7, 0.0), rtol=1e-6)


def test_fused_backward_refuses_create_graph():
    x = t64(arr(3, 4))
    y = F.softmax(x, -1)
    with pytest.raises(RuntimeError, match="softmax.*create_graph"):
        sx.autograd.grad((y * y).sum(), [x], create_graph=True)


@pytest.mark.parity
def test_parity_softmax_norms_activations_linear():
    torch = pytest.importorskip("torch")
    TF = torch.nn.functional
    a = RNG.standard_normal((6, 40)).astype(np.float32)
    cases = [
        (lambda x: F.softmax(x, 0), lambda x: TF.softmax(x, 0)),
        (lambda x: F.log_softmax(x, -1), lambda x: TF.log_softmax(x, -1)),
        (lambda x: F.layer_norm(x, (40,)), lambda x: TF.layer_norm(x, (40,))),
        (lambda x: F.rms_norm(x, (40,)), lambda x: TF.rms_norm(x, (40,))),
        (lambda x: F.glu(x, -1), lambda x: TF.glu(x, -1)),
    ] + [(ACTIVATIONS[n][0], f) for n, f in [
        ("relu", TF.relu), ("gelu", TF.gelu), ("gelu_tanh", lambda x: TF.gelu(x, approximate="tanh")),
        ("silu", TF.silu), ("leaky_relu", lambda x: TF.leaky_relu(x, 0.2)), ("elu", lambda x: TF.elu(x, 1.5)),
        ("softplus", lambda x: TF.softplus(x, 2.0, 3.0))]]
    for f, tf in cases:
        xs, xt = sx.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        ys, yt = f(xs), tf(xt)
        np.testing.assert_allclose(npy(ys), yt.detach().numpy(), atol=2e-6, rtol=1e-5)
        g = RNG.standard_normal(tuple(yt.shape)).astype(np.float32)
        ys.backward(sx.tensor(g))
        yt.backward(torch.tensor(g))
        np.testing.assert_allclose(npy(xs.grad), xt.grad.numpy(), atol=2e-6, rtol=1e-5)


@pytest.mark.parity
def test_parity_affine_norms_linear_embedding():
    torch = pytest.importorskip("torch")
    TF = torch.nn.functional
    x, w, b = (RNG.standard_normal(s).astype(np.float32) for s in [(5, 3, 8), (8,), (8,)])
    W = RNG.standard_normal((6, 8)).astype(np.float32)
    ids = np.array([[0, 3, 3], [5, 1, 0]])
    cases = [
        (lambda x_, w_, b_: F.layer_norm(x_, (8,), w_, b_), lambda x_, w_, b_: TF.layer_norm(x_, (8,), w_, b_),
         [x, w, b]),
        (lambda x_, w_: F.rms_norm(x_, (8,), w_), lambda x_, w_: TF.rms_norm(x_, (8,), w_), [x, w]),
        (lambda x_, W_: F.linear(x_, W_), lambda x_, W_: TF.linear(x_, W_), [x, W]),
        (lambda W_: F.embedding(sx.tensor(ids), W_, padding_idx=3),
         lambda W_: TF.embedding(torch.tensor(ids), W_, padding_idx=3), [W]),
    ]
    for f, tf, ins in cases:
        s_in = [sx.tensor(v, requires_grad=True) for v in ins]
        t_in = [torch.tensor(v, requires_grad=True) for v in ins]
        ys, yt = f(*s_in), tf(*t_in)
        np.testing.assert_allclose(npy(ys), yt.detach().numpy(), atol=1e-5, rtol=1e-5)
        g = RNG.standard_normal(tuple(yt.shape)).astype(np.float32)
        ys.backward(sx.tensor(g))
        yt.backward(torch.tensor(g))
        for s, t in zip(s_in, t_in):
            np.testing.assert_allclose(npy(s.grad), t.grad.numpy(), atol=1e-4, rtol=1e-5)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_inputs_compute_in_float32(dtype):
    a = arr(4, 8)
    x = sx.tensor(a, dtype=getattr(sx, dtype), requires_grad=True)
    ref_in = npy(x.float()).astype(np.float64)
    y = F.layer_norm(F.gelu(x), (8,))
    assert y.dtype == getattr(sx, dtype)
    ref = np_layer_norm(ACTIVATIONS["gelu"][1](ref_in), 1)
    np.testing.assert_allclose(npy(y.float()), ref, atol=0.05)
    y.float().sum().backward()
    assert x.grad.dtype == getattr(sx, dtype) and np.isfinite(npy(x.grad.float())).all()


def test_large_inputs_match_across_thread_counts():
    a = RNG.standard_normal((3000, 700)).astype(np.float32)
    g = RNG.standard_normal((3000, 700)).astype(np.float32)
    w = RNG.standard_normal(700).astype(np.float32)
    results = []
    old = sx.get_num_threads()
    try:
        for n in (1, 2):
            sx.set_num_threads(n)
            x, wt = sx.tensor(a, requires_grad=True), sx.tensor(w, requires_grad=True)
            y = F.layer_norm(F.softmax(x, -1) * 50.0, (700,), wt)
            y.backward(sx.tensor(g))
            results.append((npy(y), npy(x.grad), npy(wt.grad)))
    finally:
        sx.set_num_threads(old)
    for r1, r2 in zip(*results):
        np.testing.assert_array_equal(r1, r2)
    np.testing.assert_allclose(results[0][0], np_layer_norm(np_softmax(a.astype(np.float64), -1) * 50.0, 1, w),
                               atol=2e-4)


def test_activation_parameters_by_position_keyword_and_inplace():
    """Parameters by position or keyword give the same result; a trailing positional bool is inplace, as
    in PyTorch (F.elu(x, 1.0, True)); too many positional arguments raise naming the activation."""
    a = np.random.default_rng(3).standard_normal((4, 5)).astype(np.float32)
    x = sx.tensor(a)
    np.testing.assert_array_equal(F.leaky_relu(x, 0.2).numpy(), F.leaky_relu(x, negative_slope=0.2).numpy())
    np.testing.assert_allclose(F.leaky_relu(x, 0.2).numpy(), np.where(a > 0, a, np.float32(0.2) * a), rtol=1e-6)
    np.testing.assert_array_equal(F.hardtanh(x, -0.5).numpy(), np.clip(a, -0.5, 1.0))
    y = sx.tensor(a)
    F.elu(y, 1.0, True)
    np.testing.assert_allclose(y.numpy(), np.where(a > 0, a, np.expm1(a)), rtol=1e-5, atol=1e-6)
    z = sx.tensor(a)
    F.relu6(z, True)
    np.testing.assert_array_equal(z.numpy(), np.clip(a, 0, 6))
    with pytest.raises(TypeError, match=r"\[elu\] takes at most 1"):
        F.elu(x, 1.0, True, 3)
    with pytest.raises(TypeError, match=r"\[leaky_relu\] got an unexpected keyword argument 'slope'"):
        F.leaky_relu(x, slope=0.2)


def test_activation_parameters_by_position_keyword_and_bad_values():
    x = sx.tensor(np.linspace(-3, 3, 13, dtype=np.float32))
    a = x.numpy()
    np.testing.assert_allclose(F.leaky_relu(x, 0.2).numpy(), np.where(a > 0, a, 0.2 * a), rtol=1e-6)
    np.testing.assert_allclose(F.leaky_relu(x, 1).numpy(), a, rtol=1e-6)  # an int parameter
    np.testing.assert_allclose(F.hardtanh(x, -0.5).numpy(), np.clip(a, -0.5, 1.0), rtol=1e-6)  # max_val defaulted
    np.testing.assert_allclose(F.elu(x, alpha=0.5).numpy(), np.where(a > 0, a, 0.5 * np.expm1(a)), rtol=1e-6)
    for bad in ("a", None, [1]):
        with pytest.raises(TypeError, match=r"\[leaky_relu\] negative_slope must be a number"):
            F.leaky_relu(x, bad)
    with pytest.raises(TypeError, match=r"\[hardtanh\] max_val"):
        F.hardtanh(x, -1.0, object())
