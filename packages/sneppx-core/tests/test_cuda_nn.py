"""The fused nn kernels, the optimizer steps, random draws and sorts on CUDA against the same calls on
the CPU: values and gradients. Marked ``cuda``; every test skips when no GPU is visible."""

from __future__ import annotations

import numpy as np
import pytest
import sneppx_core as sx
import sneppx_core.functional as F

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not sx.cuda.is_available(), reason="no CUDA device is visible")]

DEV = "cuda:0"


def _np(t):
    return np.asarray(t.detach().cpu().numpy())


def _both(fn, arrays, dtype=sx.float64, grad=(), seed=None, ints=()):
    """Runs fn on CPU tensors and on their GPU copies; returns [(outputs, grads)] for cpu and cuda.
    ``grad``: positions of the inputs that require grad; ``ints``: positions made int64."""
    runs = []
    for dev in ("cpu", DEV):
        xs = []
        for k, a in enumerate(arrays):
            if a is None:
                xs.append(None)
                continue
            dt = sx.int64 if k in ints else (sx.bool if np.asarray(a).dtype == bool else dtype)
            xs.append(sx.tensor(a, dtype=dt, device=dev, requires_grad=k in grad))
        if seed is not None:
            sx.manual_seed(seed)
        out = fn(*xs)
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        if grad:
            w = np.random.default_rng(1).standard_normal(tuple(outs[0].shape))
            (outs[0] * sx.tensor(w, dtype=outs[0].dtype, device=dev)).sum().backward()
        for o in outs:
            assert str(o.device) == dev
        runs.append(([_np(o) for o in outs], [_np(xs[k].grad) for k in grad]))
    return runs


def _close(runs, rtol=1e-9, atol=1e-11):
    (co, cg), (go, gg) = runs
    for a, b in zip(co + cg, go + gg):
        np.testing.assert_allclose(b, a, rtol=rtol, atol=atol)


RNG = np.random.default_rng(0)


@pytest.mark.parametrize("affine", [False, True])
def test_layer_and_rms_norm(affine):
    x, w, b = RNG.standard_normal((6, 5, 40)), RNG.standard_normal(40), RNG.standard_normal(40)
    grad = (0, 1, 2) if affine else (0,)
    args = [x, w, b] if affine else [x, None, None]
    _close(_both(lambda x, w, b: F.layer_norm(x, (40,), w, b), args, grad=grad))
    _close(_both(lambda x, w, b: F.rms_norm(x, (40,), w), args[:2] + [None], grad=grad[:2]))


def test_linear_and_gated_units():
    x, w, b = RNG.standard_normal((3, 7, 12)), RNG.standard_normal((9, 12)), RNG.standard_normal(9)
    _close(_both(F.linear, [x, w, b], grad=(0, 1, 2)))
    _close(_both(lambda x, w: F.linear(x, w), [x, w], grad=(0, 1)))
    _close(_both(lambda x: F.glu(x, -1), [RNG.standard_normal((4, 10))], grad=(0,)))
    _close(_both(lambda x: F.swiglu(x, 0), [RNG.standard_normal((6, 3))], grad=(0,)))


@pytest.mark.parametrize("kw", [{}, {"padding_idx": 2}, {"scale_grad_by_freq": True}])
def test_embedding(kw):
    ids = np.array([[1, 2, 2, 0], [3, 2, 1, 1]])
    w = RNG.standard_normal((5, 6))
    _close(_both(lambda i, w: F.embedding(i, w, **kw), [ids, w], grad=(1,), ints=(0,)))


@pytest.mark.parametrize("kw", [{}, {"label_smoothing": 0.1}, {"ignore_index": 1}, {"reduction": "sum"},
                                {"reduction": "none", "label_smoothing": 0.2}])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_and_nll(kw, weighted):
    x, y, cw = RNG.standard_normal((8, 5)), RNG.integers(0, 5, 8), RNG.random(5) + 0.5
    wt = cw if weighted else None
    _close(_both(lambda x, y, w: F.cross_entropy(x, y, weight=w, **kw), [x, y, wt], grad=(0,), ints=(1,)))
    probs = RNG.dirichlet(np.ones(5), size=8)
    kp = {k: v for k, v in kw.items() if k != "ignore_index"}
    _close(_both(lambda x, p, w: F.cross_entropy(x, p, weight=w, **kp), [x, probs, wt], grad=(0, 1)))
    kn = {k: v for k, v in kw.items() if k != "label_smoothing"}
    _close(_both(lambda x, y, w: F.nll_loss(F.log_softmax(x, -1), y, weight=w, **kn), [x, y, wt], grad=(0,),
                 ints=(1,)))


@pytest.mark.parametrize("case", ["plain", "causal", "causal_short_q", "bool_mask", "float_mask", "gqa", "dv"])
def test_attention_forward_and_backward(case):
    B, H, Tq, Tk, D, Dv = 2, 4, 37, 37, 16, 16
    if case == "causal_short_q":
        Tq = 5
    if case == "dv":
        Tk, Dv = 70, 24
    Hk = 2 if case == "gqa" else H
    q, k = RNG.standard_normal((B, H, Tq, D)), RNG.standard_normal((B, Hk, Tk, D))
    v = RNG.standard_normal((B, Hk, Tk, Dv))
    mask = None
    kw = {"is_causal": case.startswith("causal"), "enable_gqa": case == "gqa"}
    if case == "bool_mask":
        mask = RNG.random((Tq, Tk)) > 0.3
        mask[3] = False  # a row that sees no key
    elif case == "float_mask":
        mask = RNG.standard_normal((B, 1, Tq, Tk))
    grad = (0, 1, 2, 3) if case == "float_mask" else (0, 1, 2)
    _close(_both(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m, **kw), [q, k, v, mask],
                 grad=grad), rtol=1e-8, atol=1e-10)


def test_attention_and_dropout_draw_the_cpu_masks():
    q = RNG.standard_normal((2, 3, 20, 8))
    _close(_both(lambda q: F.scaled_dot_product_attention(q, q, q, dropout_p=0.3, is_causal=True), [q], grad=(0,),
                 seed=7), rtol=1e-8, atol=1e-10)
    x = RNG.standard_normal((33, 7))
    _close(_both(lambda x: F.dropout(x, 0.4), [x], grad=(0,), seed=3))


@pytest.mark.parametrize("dtype", [sx.float32, sx.float64])
def test_fused_optimizer_steps(dtype):
    shapes = [(30, 7), (5,), (1000,)]
    tol = {"rtol": 1e-5, "atol": 1e-6} if dtype == sx.float32 else {"rtol": 1e-12, "atol": 1e-13}
    steps = [
        lambda p, g, s: F.sgd_step(p, g, s[0], lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01,
                                   first_step=False),
        lambda p, g, s: F.adam_step(p, g, s[0], s[1], s[2], step=3, lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8,
                                    weight_decay=0.1, amsgrad=True),
        lambda p, g, s: F.adam_step(p, g, s[0], s[1], None, step=1, lr=1e-2, beta1=0.9, beta2=0.95, eps=1e-8,
                                    weight_decay=0.1, decoupled_weight_decay=True, maximize=True),
        lambda p, g, s: F.lion_step(p, g, s[0], lr=1e-3, weight_decay=0.1),
        lambda p, g, s: F.lamb_step(p, g, s[0], s[1], step=2, lr=1e-2, weight_decay=0.01),
    ]
    arrays = [[RNG.standard_normal(s) for s in shapes] for _ in range(5)]  # params, grads, three states
    arrays[3] = [np.abs(a) for a in arrays[3]]  # second moments are >= 0
    arrays[4] = [np.abs(a) for a in arrays[4]]
    for step in steps:
        res = []
        for dev in ("cpu", DEV):
            ts = [[sx.tensor(a, dtype=dtype, device=dev) for a in group] for group in arrays]
            step(ts[0], ts[1], ts[2:])
            res.append([_np(t) for group in (ts[0], ts[2], ts[3], ts[4]) for t in group])
        for a, b in zip(*res):
            np.testing.assert_allclose(b, a, **tol)


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, float("inf")])
def test_total_norm_and_scale(p):
    arrays = [RNG.standard_normal((300, 7)), RNG.standard_normal(3), RNG.standard_normal(70000)]
    norms = [F.total_norm([sx.tensor(a, device=dev) for a in arrays], p).item() for dev in ("cpu", DEV)]
    np.testing.assert_allclose(norms[1], norms[0], rtol=1e-6)
    ts = [sx.tensor(a, device=DEV) for a in arrays]
    F.scale_(ts, 0.5)
    for t, a in zip(ts, arrays):
        np.testing.assert_allclose(_np(t), (a * 0.5).astype(np.float32), rtol=1e-6)


def test_random_draws_follow_the_cpu_streams():
    draws = {}
    for dev in ("cpu", DEV):
        sx.manual_seed(11)
        draws[dev] = [_np(sx.rand(1001, device=dev, dtype=sx.float64)), _np(sx.rand(77, device=dev)),
                      _np(sx.randn(1001, device=dev, dtype=sx.float64)), _np(sx.randint(-5, 9, (300,), device=dev)),
                      _np(sx.randperm(50, device=dev)), _np(sx.arange(3, 40, 3, device=dev)),
                      _np(sx.multinomial(sx.tensor([[0.1, 0.5, 0.4], [1, 0, 3]], device=dev), 2))]
    cpu, gpu = draws["cpu"], draws[DEV]
    for k in (0, 1, 3, 4, 5, 6):
        np.testing.assert_array_equal(gpu[k], cpu[k])
    np.testing.assert_allclose(gpu[2], cpu[2], rtol=1e-13, atol=1e-14)


def test_sorts_gathers_and_scatters():
    a = RNG.standard_normal((7, 300))
    a[0, :5] = [np.nan, -0.0, 0.0, np.inf, -np.inf]
    a[1, :40] = 1.5  # ties keep their order
    for fn in (lambda x: x.sort(dim=1), lambda x: x.sort(dim=0, descending=True), lambda x: x.topk(5, dim=1),
               lambda x: x.topk(3, dim=0, largest=False)):
        _close(_both(fn, [a]), rtol=0, atol=0)
    idx = RNG.integers(-300, 300, (7, 50))
    _close(_both(lambda x, i: x.gather(1, i), [a, idx], ints=(1,)), rtol=0, atol=0)
    dup = np.array([[0, 1, 1, 3], [2, 2, 2, 0]])
    src = RNG.standard_normal((2, 4))
    for reduce_ in ("sum", "prod", "amax", "amin"):
        _close(_both(lambda x, i, s: x.scatter_reduce(1, i, s, reduce_), [RNG.standard_normal((2, 5)), dup, src],
                     ints=(1,)), rtol=1e-12, atol=1e-14)
    x = RNG.standard_normal((6, 4))
    _close(_both(lambda x, i, s: x.index_add(0, i, s, alpha=2.0), [x, np.array([0, 5, 0]), RNG.standard_normal((3, 4))],
                 ints=(1,)), rtol=1e-12, atol=1e-14)
    _close(_both(lambda x, i: x.index_select(1, i), [x, np.array([3, -1, 0, 0])], ints=(1,)), rtol=0, atol=0)
    _close(_both(lambda x, i: x[i], [x, np.array([4, -2, 4])], ints=(1,), grad=(0,)), rtol=1e-12, atol=1e-14)
    for bad in (lambda: sx.zeros(3, 4, device=DEV).gather(1, sx.tensor([[4]], device=DEV)),
                lambda: sx.zeros(3, 4, device=DEV).index_select(0, sx.tensor([3], device=DEV)),
                lambda: F.embedding(sx.tensor([5], device=DEV), sx.zeros(5, 2, device=DEV))):
        with pytest.raises(IndexError):
            bad()


def test_scans_and_logsumexp():
    a = RNG.standard_normal((5, 40, 3))
    for fn in (lambda x: x.cumsum(1), lambda x: x.cumprod(2), lambda x: x.logcumsumexp(1),
               lambda x: x.logsumexp(1), lambda x: x.logsumexp(2)):
        _close(_both(fn, [a], grad=(0,)), rtol=1e-10, atol=1e-12)
    ints = RNG.integers(-9, 9, (4, 50))
    _close(_both(lambda x: x.cumsum(1), [ints], ints=(0,)), rtol=0, atol=0)


@pytest.mark.parametrize("kw", [{}, {"stride": 2, "padding": 1}, {"dilation": 2, "groups": 2}])
def test_convolutions(kw):
    x, w, b = RNG.standard_normal((2, 4, 9, 11)), RNG.standard_normal((6, 4 // kw.get("groups", 1), 3, 3)), \
        RNG.standard_normal(6)
    _close(_both(lambda x, w, b: F.conv2d(x, w, b, **kw), [x, w, b], grad=(0, 1, 2)))
    wt = RNG.standard_normal((4, 6 // kw.get("groups", 1), 3, 3))
    _close(_both(lambda x, w: F.conv_transpose2d(x, w, **kw), [x, wt], grad=(0, 1)))
    _close(_both(lambda x, w: F.conv1d(x, w, padding=1), [x[:, :, 0], RNG.standard_normal((5, 4, 3))], grad=(0, 1)))


@pytest.mark.parametrize("fn", [lambda x: F.max_pool2d(x, 3, 2, 1), lambda x: F.max_pool2d(x, 2, dilation=2),
                                lambda x: F.avg_pool2d(x, 3, 2, 1),
                                lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
                                lambda x: F.adaptive_avg_pool2d(x, (4, 3)), lambda x: F.adaptive_max_pool2d(x, 5)])
def test_pooling(fn):
    x = RNG.standard_normal((2, 3, 10, 9))
    x[0, 0, 0, 0] = np.nan
    _close(_both(fn, [x], grad=(0,)))


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm(training):
    x, w, b = RNG.standard_normal((4, 5, 6, 7)), RNG.standard_normal(5), RNG.standard_normal(5)
    rm, rv = RNG.standard_normal(5), RNG.random(5) + 0.5

    def fn(x, w, b, rm, rv):
        y = F.batch_norm(x, rm, rv, w, b, training=training, momentum=0.2)
        return y, rm, rv
    _close(_both(fn, [x, w, b, rm, rv], grad=(0, 1, 2)))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_dtypes_compute_on_the_device(dtype):
    dt = getattr(sx, dtype)
    a, b = RNG.standard_normal((33, 40)), RNG.standard_normal((40, 17))
    cpu = [sx.tensor(v, dtype=dt) for v in (a, b)]
    gpu = [t.to(DEV) for t in cpu]
    for fn in (lambda x, y: x @ y, lambda x, y: (x * 3 - 1).exp().sum(1), lambda x, y: x.softmax(-1),
               lambda x, y: x.max(0).values, lambda x, y: x.cumsum(1), lambda x, y: F.gelu(x).to(sx.float32)):
        want, got = fn(*cpu), fn(*gpu)
        assert got.dtype == want.dtype and str(got.device) == DEV
        np.testing.assert_allclose(_np(got.float()), _np(want.float()), rtol=2e-2, atol=2e-2)
    sx.manual_seed(5)
    r_cpu = sx.randn(100, dtype=dt)
    sx.manual_seed(5)
    r_gpu = sx.randn(100, dtype=dt, device=DEV)
    np.testing.assert_allclose(_np(r_gpu.float()), _np(r_cpu.float()), rtol=1e-2, atol=1e-2)


def test_tf32_switch_changes_float32_products_only_when_asked():
    a, b = RNG.standard_normal((256, 512)), RNG.standard_normal((512, 256))
    ga, gb = sx.tensor(a, dtype=sx.float32, device=DEV), sx.tensor(b, dtype=sx.float32, device=DEV)
    exact = a.astype(np.float32).astype(np.float64) @ b.astype(np.float32).astype(np.float64)
    assert np.abs(_np(ga @ gb) - exact).max() < 1e-3
    sx.backends.cuda.matmul.allow_tf32 = True
    try:
        err = np.abs(_np(ga @ gb) - exact).max()
    finally:
        sx.backends.cuda.matmul.allow_tf32 = False
    assert 1e-3 < err < 0.5  # TF32: about three decimal digits per product


def test_pinned_memory_non_blocking_copies_and_events():
    x = sx.arange(1 << 20, dtype=sx.float32)
    p = x.pin_memory()
    assert p.is_pinned() and not x.is_pinned() and p.pin_memory() is p
    start, end = sx.cuda.Event(enable_timing=True), sx.cuda.Event(enable_timing=True)
    start.record()
    g = p.to(DEV, non_blocking=True)
    back = (g * 2).to("cpu", non_blocking=True)
    end.record()
    assert back.is_pinned()
    end.synchronize()
    assert end.query() and start.elapsed_time(end) >= 0
    np.testing.assert_array_equal(_np(back), np.arange(1 << 20, dtype=np.float32) * 2)
    s = sx.cuda.current_stream()
    assert s == sx.cuda.default_stream() and s.device == DEV
    with sx.cuda.stream(s):
        y = g + 1
    s.synchronize()
    assert s.query() and float(y[3].item()) == 4.0


@pytest.mark.parametrize("reverse", [False, True])
def test_recurrent_cells_and_sequences(reverse):
    T, B, H = 5, 3, 6
    gi4, gi3 = RNG.standard_normal((T, B, 4 * H)), RNG.standard_normal((T, B, 3 * H))
    h0, c0 = RNG.standard_normal((B, H)), RNG.standard_normal((B, H))
    w4, w3, b3 = RNG.standard_normal((4 * H, H)) * 0.3, RNG.standard_normal((3 * H, H)) * 0.3, RNG.standard_normal(3 * H)
    _close(_both(lambda g, h, c, w: F.lstm_sequence(g, h, c, w, reverse), [gi4, h0, c0, w4], grad=(0, 1, 2, 3)))
    _close(_both(lambda g, h, w, b: F.gru_sequence(g, h, w, b, reverse), [gi3, h0, w3, b3], grad=(0, 1, 2, 3)))
    _close(_both(F.lstm_cell, [gi4[0], c0], grad=(0, 1)))
    _close(_both(F.gru_cell, [gi3[0], gi3[1], h0], grad=(0, 1, 2)))


def test_pointwise_losses_and_boolean_masks():
    x, t = RNG.standard_normal((4, 7)), RNG.standard_normal((4, 7))
    p, y = 1 / (1 + np.exp(-x)), (RNG.random((4, 7)) > 0.5).astype(np.float64)
    for fn, args in ((F.mse_loss, [x, t]), (F.l1_loss, [x, t]), (F.smooth_l1_loss, [x, t]),
                     (lambda a, b: F.huber_loss(a, b, delta=0.5), [x, t]), (F.binary_cross_entropy, [p, y]),
                     (lambda a, b: F.binary_cross_entropy_with_logits(a, b, pos_weight=sx.full((7,), 2.0,
                                                                                               device=a.device,
                                                                                               dtype=a.dtype)),
                      [x, y]),
                     (lambda a, b: F.kl_div(a, b, reduction="batchmean", log_target=True), [x, t])):
        _close(_both(fn, args, grad=(0, 1)))
    mask = RNG.random((4, 7)) > 0.4
    _close(_both(lambda a, m: a[m], [x, mask], grad=(0,)), rtol=0, atol=0)
    _close(_both(lambda a, m: a.masked_select(m), [x, mask[0]], grad=(0,)), rtol=0, atol=0)
    _close(_both(lambda m: sx.nonzero(m), [mask]), rtol=0, atol=0)
    _close(_both(lambda a: a.count_nonzero(), [x * (x > 0)]), rtol=0, atol=0)
