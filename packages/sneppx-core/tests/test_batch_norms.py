"""batch_norm, group_norm, instance_norm and the composed activations/distances of functional:
NumPy references, float64 finite differences and the running-statistics updates."""

from __future__ import annotations

import numpy as np
import pytest
import sneppx_core as sx
import sneppx_core.functional as F
from opcheck import rms_rel_err
from sneppx_core.testing import gradcheck

RNG = np.random.default_rng(7)


def t64(a, requires_grad=True):
    return sx.tensor(np.asarray(a, dtype=np.float64), dtype=sx.float64, requires_grad=requires_grad)


def test_batch_norm_training_updates_running_stats():
    x = RNG.standard_normal((4, 3, 5, 2)) * 2 + 1
    w, b = RNG.standard_normal(3), RNG.standard_normal(3)
    rm, rv = t64(np.zeros(3), False), t64(np.ones(3), False)
    y = F.batch_norm(t64(x, False), rm, rv, t64(w, False), t64(b, False), training=True, momentum=0.3, eps=1e-5)
    mu, var = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
    ref = (x - mu[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-5) * w[None, :, None, None] \
        + b[None, :, None, None]
    np.testing.assert_allclose(y.numpy(), ref, atol=1e-10)
    n = x.size // 3
    np.testing.assert_allclose(rm.numpy(), 0.3 * mu, atol=1e-12)
    np.testing.assert_allclose(rv.numpy(), 0.7 + 0.3 * var * n / (n - 1), atol=1e-12)
    # eval: the running statistics normalise, nothing is updated
    y = F.batch_norm(t64(x, False), rm, rv, None, None, training=False)
    np.testing.assert_allclose(y.numpy(), (x - rm.numpy()[:, None, None]) / np.sqrt(rv.numpy()[:, None, None] + 1e-5),
                               atol=1e-10)
    np.testing.assert_allclose(rm.numpy(), 0.3 * mu, atol=1e-12)


def test_batch_norm_gradients():
    x, w, b = RNG.standard_normal((3, 2, 4)), RNG.standard_normal(2), RNG.standard_normal(2)
    gradcheck(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), [t64(x), t64(w), t64(b)])
    rm, rv = t64(RNG.standard_normal(2), False), t64(RNG.random(2) + 0.5, False)
    gradcheck(lambda x, w: F.batch_norm(x, rm, rv, w, None, training=False), [t64(x), t64(w)])
    gradcheck(lambda x: F.batch_norm(x, None, None, training=True), [t64(RNG.standard_normal((5, 3)))])


def _bn_reference(x, rm, rv, w, b, training, momentum, eps):
    """NumPy float64 batch norm over axis 1: output and the updated running statistics."""
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    if training or rm is None:
        mu, var = x.mean(axis=axes), x.var(axis=axes)
        if training and rm is not None:
            n = x.size // x.shape[1]
            rm, rv = (1 - momentum) * rm + momentum * mu, (1 - momentum) * rv + momentum * var * n / (n - 1)
    else:
        mu, var = rm, rv
    y = (x - mu.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    if w is not None:
        y = y * w.reshape(shape)
    if b is not None:
        y = y + b.reshape(shape)
    return y, rm, rv


BN_CASES = [  # (shape, training, running statistics, affine)
    ((6, 4), True, True, True), ((5, 3, 7), True, True, True), ((4, 3, 5, 6), True, True, True),
    ((4, 3, 5, 6), True, False, True), ((4, 3, 5, 6), False, True, True), ((4, 3, 5, 6), False, False, False),
    ((3, 2, 40), True, True, False), ((2, 5, 33, 3), False, True, True)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,training,running,affine", BN_CASES)
def test_batch_norm_matches_numpy(shape, training, running, affine, dtype):
    x = RNG.standard_normal(shape) * 3 + 2
    c = shape[1]
    w, b = (RNG.standard_normal(c), RNG.standard_normal(c)) if affine else (None, None)
    rm, rv = (RNG.standard_normal(c), RNG.random(c) + 0.5) if running else (None, None)
    dt = getattr(sx, dtype)
    t = (lambda a: None if a is None else sx.tensor(a, dtype=dt))
    srm, srv = t(rm), t(rv)
    y = F.batch_norm(t(x), srm, srv, t(w), t(b), training=training, momentum=0.3, eps=1e-4)
    ref, rm2, rv2 = _bn_reference(x, rm, rv, w, b, training, 0.3, 1e-4)
    tol = 1e-10 if dtype == "float64" else 2e-5
    np.testing.assert_allclose(y.numpy(), ref, atol=tol, rtol=tol)
    if running:
        np.testing.assert_allclose(srm.numpy(), rm2, atol=tol, rtol=tol)
        np.testing.assert_allclose(srv.numpy(), rv2, atol=tol, rtol=tol)


@pytest.mark.parametrize("shape,training,running,affine", BN_CASES[:6])
def test_batch_norm_gradients_all_modes(shape, training, running, affine):
    c = shape[1]
    x = RNG.standard_normal(shape)
    rm, rv = (t64(RNG.standard_normal(c), False), t64(RNG.random(c) + 0.5, False)) if running else (None, None)
    if affine:
        fn = lambda x, w, b: F.batch_norm(x, rm, rv, w, b, training=training, momentum=0.0)  # noqa: E731
        gradcheck(fn, [t64(x), t64(RNG.standard_normal(c)), t64(RNG.standard_normal(c))])
    else:
        gradcheck(lambda x: F.batch_norm(x, rm, rv, training=training, momentum=0.0), [t64(x)])


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_double_backward(training):
    """create_graph=True differentiates the batch norm gradient again (checked by finite differences)."""
    rm, rv = t64(RNG.standard_normal(3), False), t64(RNG.random(3) + 0.5, False)
    seed = t64(RNG.standard_normal((4, 3, 2)), False)

    def grads(x, w):
        # finite differences call this on leaves without requires_grad: differentiate copies then
        x, w = (t if t.requires_grad else t.detach().requires_grad_(True) for t in (x, w))
        y = F.batch_norm(x, rm, rv, w, None, training=training, momentum=0.0)
        gx, gw = sx.autograd.grad((y * seed).sum(), [x, w], create_graph=True)
        return (gx * gx).sum() + (gw * gw * 0.5).sum()

    gradcheck(grads, [t64(RNG.standard_normal((4, 3, 2))), t64(RNG.standard_normal(3))])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_batch_norm_half_input_and_other_running_dtype(dtype):
    """Half inputs compute in float32; running statistics of another dtype are updated through a copy."""
    x = RNG.standard_normal((4, 3, 5)).astype(np.float32)
    xs = sx.tensor(x).to(getattr(sx, dtype))
    x_rounded = xs.float().numpy().astype(np.float64)
    rm, rv = sx.zeros(3, dtype=sx.float64), sx.ones(3, dtype=sx.float64)
    y = F.batch_norm(xs, rm, rv, training=True, momentum=0.5)
    assert y.dtype == getattr(sx, dtype)
    ref, rm2, rv2 = _bn_reference(x_rounded, np.zeros(3), np.ones(3), None, None, True, 0.5, 1e-5)
    np.testing.assert_allclose(y.float().numpy(), ref, atol=3e-2)
    np.testing.assert_allclose(rm.numpy(), rm2, atol=1e-6)
    np.testing.assert_allclose(rv.numpy(), rv2, atol=1e-6)


def test_batch_norm_same_for_any_thread_count():
    x = sx.tensor(RNG.standard_normal((8, 6, 40, 40)).astype(np.float32), requires_grad=True)
    g = sx.tensor(RNG.standard_normal((8, 6, 40, 40)).astype(np.float32))
    outs = []
    before = sx.get_num_threads()
    try:
        for n in (1, 2):
            sx.set_num_threads(n)
            x.grad = None
            y = F.batch_norm(x, None, None, training=True)
            y.backward(g)
            outs.append((y.detach().numpy(), x.grad.numpy()))
    finally:
        sx.set_num_threads(before)
    np.testing.assert_array_equal(outs[0][0], outs[1][0])
    np.testing.assert_array_equal(outs[0][1], outs[1][1])


def test_batch_norm_running_stats_read_only_and_versions():
    rm, rv = sx.zeros(3), sx.ones(3)
    x = sx.randn(4, 3, 2, requires_grad=True)
    w = sx.ones(3, requires_grad=True)
    before = rm._version
    F.batch_norm(x, rm, rv, w, None, training=True)
    assert rm._version > before
    frozen = np.zeros(3, dtype=np.float32)
    frozen.flags.writeable = False
    ro = sx.Tensor.from_numpy(frozen)
    with pytest.raises(RuntimeError, match="batch_norm"):
        F.batch_norm(x, ro, sx.ones(3), training=True)
    y = F.batch_norm(x, None, None, w, None, training=True)
    with sx.no_grad():
        x.mul_(2.0)  # x is saved for backward
    with pytest.raises(RuntimeError):
        y.sum().backward()


def test_group_and_instance_norm():
    x = RNG.standard_normal((2, 6, 3, 2))
    w, b = RNG.standard_normal(6), RNG.standard_normal(6)
    y = F.group_norm(t64(x, False), 3, t64(w, False), t64(b, False), eps=1e-5).numpy()
    xg = x.reshape(2, 3, -1)
    ref = ((xg - xg.mean(-1, keepdims=True)) / np.sqrt(xg.var(-1, keepdims=True) + 1e-5)).reshape(x.shape)
    np.testing.assert_allclose(y, ref * w[:, None, None] + b[:, None, None], atol=1e-10)
    gradcheck(lambda x, w, b: F.group_norm(x, 2, w, b), [t64(x[:1, :4]), t64(w[:4]), t64(b[:4])])
    y = F.instance_norm(t64(x, False)).numpy()
    xi = x.reshape(2, 6, -1)
    ref = ((xi - xi.mean(-1, keepdims=True)) / np.sqrt(xi.var(-1, keepdims=True) + 1e-5)).reshape(x.shape)
    np.testing.assert_allclose(y, ref, atol=1e-10)
    rm, rv = t64(np.zeros(6), False), t64(np.ones(6), False)
    F.instance_norm(t64(x, False), rm, rv, momentum=0.5)
    np.testing.assert_allclose(rm.numpy(), 0.5 * xi.mean(-1).mean(0), atol=1e-12)
    np.testing.assert_allclose(rv.numpy(), 0.5 + 0.5 * xi.var(-1, ddof=1).mean(0), atol=1e-12)
    gradcheck(lambda x, w: F.instance_norm(x, weight=w), [t64(x[:, :2]), t64(w[:2])])


def test_norm_errors():
    with pytest.raises(ValueError, match=r"\[batch_norm\] running_mean .*\(4,\).* must have shape \(3,\)"):
        F.batch_norm(sx.zeros(2, 3, 4), sx.zeros(4), sx.ones(4))
    with pytest.raises(ValueError, match=r"\[batch_norm\] expected more than 1 value per channel"):
        F.batch_norm(sx.zeros(1, 3), None, None, training=True)
    with pytest.raises(ValueError, match=r"\[group_norm\] expected the 6 channels .* divisible by num_groups=4"):
        F.group_norm(sx.zeros(2, 6, 3), 4)


ACTS = [  # (name, functional, NumPy reference)
    ("hardtanh", lambda x: F.hardtanh(x, -0.5, 0.8), lambda a: np.clip(a, -0.5, 0.8)),
    ("relu6", F.relu6, lambda a: np.clip(a, 0, 6)),
    ("hardsigmoid", F.hardsigmoid, lambda a: np.clip(a + 3, 0, 6) / 6),
    ("hardswish", F.hardswish, lambda a: a * np.clip(a + 3, 0, 6) / 6),
    ("mish", F.mish, lambda a: a * np.tanh(np.log1p(np.exp(a)))),
    ("celu", lambda x: F.celu(x, 0.7), lambda a: np.maximum(a, 0) + np.minimum(0, 0.7 * (np.exp(a / 0.7) - 1))),
    ("selu", F.selu, lambda a: 1.0507009873554805 * np.where(a > 0, a, 1.6732632423543772 * (np.exp(a) - 1))),
    ("logsigmoid", F.logsigmoid, lambda a: -np.log1p(np.exp(-a))),
    ("softsign", F.softsign, lambda a: a / (1 + np.abs(a))),
    ("tanhshrink", F.tanhshrink, lambda a: a - np.tanh(a)),
    ("hardshrink", lambda x: F.hardshrink(x, 3.0), lambda a: np.where(np.abs(a) > 3, a, 0)),
    ("softshrink", lambda x: F.softshrink(x, 3.0), lambda a: np.sign(a) * np.maximum(np.abs(a) - 3, 0)),
    ("threshold", lambda x: F.threshold(x, 3.0, -2.0), lambda a: np.where(a > 3, a, -2.0)),
    ("softmin", lambda x: F.softmin(x, 0), lambda a: np.exp(-a) / np.exp(-a).sum()),
]


@pytest.mark.parametrize("name,fn,ref", ACTS, ids=[a[0] for a in ACTS])
def test_activations(name, fn, ref):
    a = RNG.uniform(-5, 5, (4, 7))
    a = a[np.abs(np.abs(a) - 3) > 1e-3]  # keep away from the kinks of the hard functions
    np.testing.assert_allclose(fn(t64(a, False)).numpy(), ref(a), rtol=1e-10, atol=1e-12)
    gradcheck(fn, [t64(a)])


def test_shrinks_keep_nan_and_inplace_forms():
    """NaN passes through the shrinks and threshold (as in PyTorch); the in-place forms write into their
    input and return it; softshrink rejects a negative lambd."""
    x = sx.tensor([np.nan, 0.2, -4.0])
    for f in (F.hardshrink, F.softshrink, lambda t: F.threshold(t, 0.0, 1.0)):
        assert np.isnan(f(x).numpy()[0])
    with pytest.raises(ValueError, match="softshrink"):
        F.softshrink(x, -0.5)
    a = RNG.uniform(-2, 2, 9)
    for name, args, ref in [("relu_", (), np.maximum(a, 0)), ("leaky_relu_", (0.3,), np.where(a > 0, a, 0.3 * a)),
                            ("hardtanh_", (-0.5, 0.5), np.clip(a, -0.5, 0.5)), ("threshold_", (0.1, 7.0),
                                                                                  np.where(a > 0.1, a, 7.0)),
                            ("elu_", (), np.where(a > 0, a, np.expm1(a)))]:
        t = t64(a, False)
        assert getattr(F, name)(t, *args) is t, name
        np.testing.assert_allclose(t.numpy(), ref, rtol=1e-12, err_msg=name)


def test_local_response_norm_channel_shuffle_and_bilinear():
    """local_response_norm against its definition in NumPy (zero channels past the ends), channel_shuffle as a
    permutation of the channels, bilinear against einsum; gradients by finite differences."""
    x = RNG.standard_normal((2, 7, 3, 2))
    size, alpha, beta, k = 4, 0.2, 0.7, 1.3
    sq = np.pad(x ** 2, ((0, 0), (size // 2, (size - 1) // 2), (0, 0), (0, 0)))
    ref = x / (k + alpha / size * np.stack([sq[:, c:c + size].sum(1) for c in range(7)], 1)) ** beta
    np.testing.assert_allclose(F.local_response_norm(t64(x, False), size, alpha, beta, k).numpy(), ref, rtol=1e-12)
    gradcheck(lambda x: F.local_response_norm(x, 3, 0.5, 0.75, 1.0), [t64(x[:, :5])])
    y = RNG.standard_normal((2, 6, 3))
    np.testing.assert_array_equal(F.channel_shuffle(t64(y, False), 2).numpy(), y[:, [0, 3, 1, 4, 2, 5]])
    a, b, w, bias = (RNG.standard_normal(s) for s in ((3, 4), (3, 5), (2, 4, 5), (2,)))
    np.testing.assert_allclose(F.bilinear(t64(a, False), t64(b, False), t64(w, False), t64(bias, False)).numpy(),
                               np.einsum("ni,kij,nj->nk", a, w, b) + bias, rtol=1e-12)
    gradcheck(F.bilinear, [t64(a), t64(b), t64(w), t64(bias)])


def test_prelu_distances_and_shuffles():
    x, w = RNG.standard_normal((2, 3, 4)), RNG.random(3)
    np.testing.assert_allclose(F.prelu(t64(x, False), t64(w, False)).numpy(),
                               np.where(x > 0, x, w[:, None] * x))
    gradcheck(lambda x, w: F.prelu(x, w), [t64(x), t64(w)])
    a, b = RNG.standard_normal((3, 5)), RNG.standard_normal((3, 5))
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    np.testing.assert_allclose(F.cosine_similarity(t64(a, False), t64(b, False)).numpy(), cos)
    np.testing.assert_allclose(F.pairwise_distance(t64(a, False), t64(b, False)).numpy(),
                               np.linalg.norm(a - b + 1e-6, axis=1))
    np.testing.assert_allclose(F.normalize(t64(a, False), dim=1).numpy(),
                               a / np.linalg.norm(a, axis=1, keepdims=True))
    gradcheck(lambda a, b: F.cosine_similarity(a, b, dim=1), [t64(a), t64(b)])
    x = RNG.standard_normal((2, 8, 3, 2))
    y = F.pixel_shuffle(t64(x, False), 2).numpy()
    assert y.shape == (2, 2, 6, 4)
    assert y[1, 1, 2 * 2 + 1, 2 * 1 + 0] == x[1, 1 * 4 + 1 * 2 + 0, 2, 1]
    np.testing.assert_array_equal(F.pixel_unshuffle(F.pixel_shuffle(t64(x, False), 2), 2).numpy(), x)
    oh = F.one_hot(sx.tensor([2, 0, 1]), 4).numpy()
    np.testing.assert_array_equal(oh, np.eye(4, dtype=np.int64)[[2, 0, 1]])


def test_dropout2d_zeroes_whole_channels():
    sx.manual_seed(3)
    x = sx.ones(8, 16, 3, 3)
    y = F.dropout2d(x, 0.5).numpy()
    per_channel = y.reshape(8, 16, 9)
    assert np.all((per_channel == 0).all(-1) | (per_channel == 2).all(-1))
    assert 0 < (per_channel[..., 0] == 0).mean() < 1
    assert F.dropout2d(x, 0.5, training=False) is x


@pytest.mark.parametrize("shape,groups", [((1, 8, 256, 256), 1), ((2, 16, 128, 128), 4)])
def test_group_norm_float32_long_groups_stay_accurate(shape, groups):
    """The batch-statistics kernels sum each row in blocks (float32 lanes restarted every 1024 values, the
    blocks added in double): over groups of 524288 and 65536 float32 values of mean 3, group_norm's output and
    input gradient stay within 2e-7 (RMS, relative) of float64 on the same values (NumPy's output, the
    float64 kernels' gradient); one running sum per lane over a row gave outputs 4.0e-6 and 5.9e-7 off
    (PyTorch: 7.2e-8 and 8.8e-8; these: 7.2e-8 and 7.8e-8)."""
    rng = np.random.default_rng(3)
    x, g = (rng.standard_normal(shape) + 3.0).astype(np.float32), rng.standard_normal(shape).astype(np.float32)
    x32, x64 = sx.tensor(x, requires_grad=True), t64(x)
    y32, y64 = F.group_norm(x32, groups), F.group_norm(x64, groups)
    y32.backward(sx.tensor(g))
    y64.backward(t64(g, False))
    xg = x.astype(np.float64).reshape(shape[0], groups, -1)  # the output's reference in NumPy
    ref = ((xg - xg.mean(-1, keepdims=True)) / np.sqrt(xg.var(-1, keepdims=True) + 1e-5)).reshape(shape)
    assert rms_rel_err(y32.detach().numpy(), ref) < 2e-7
    assert rms_rel_err(x32.grad.numpy(), x64.grad.numpy()) < 2e-7


def test_batch_norm_float32_long_rows_stay_accurate():
    """batch_norm over a few long planes (mean 30, deviation 0.5): the same blocked row sums, within 3e-6
    of float64 on the same values (one running sum per lane: 1.2e-5; PyTorch: 1.9e-6; these: 1.7e-6)."""
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((2, 3, 512, 512)) * 0.5 + 30.0).astype(np.float32)
    x64 = x.astype(np.float64)
    mu, var = x64.mean(axis=(0, 2, 3), keepdims=True), x64.var(axis=(0, 2, 3), keepdims=True)
    ref = (x64 - mu) / np.sqrt(var + 1e-5)
    got = F.batch_norm(sx.tensor(x), None, None, training=True).numpy()
    assert rms_rel_err(got, ref) < 3e-6
