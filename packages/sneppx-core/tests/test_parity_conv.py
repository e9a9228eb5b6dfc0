"""Convolution, pooling, batch norms and the composed functional ops against PyTorch (``pytest -m parity``):
forward values and the gradients of a random projection of the output, float64."""

from __future__ import annotations

import numpy as np
import pytest
import sneppx_core as sx
import sneppx_core.functional as F

pytestmark = pytest.mark.parity
RNG = np.random.default_rng(23)


def compare(torch, fn_sx, fn_torch, arrays, atol=1e-9, grad=True):
    """Runs both on float64 copies of ``arrays``; compares outputs and d<out, seed>/d inputs."""
    xs = [sx.tensor(a, dtype=sx.float64, requires_grad=grad) for a in arrays]
    ts = [torch.tensor(a, dtype=torch.float64, requires_grad=grad) for a in arrays]
    out, ref = fn_sx(*xs), fn_torch(*ts)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), atol=atol, rtol=1e-7)
    if grad:
        seed = RNG.standard_normal(tuple(ref.shape))
        out.backward(sx.tensor(seed, dtype=sx.float64))
        ref.backward(torch.tensor(seed))
        for x, t in zip(xs, ts):
            np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), atol=atol, rtol=1e-7)


@pytest.mark.parametrize("kw", [
    dict(), dict(stride=2, padding=1), dict(stride=(1, 2), padding=(2, 0), dilation=(2, 1)), dict(groups=2),
    dict(groups=4, padding=1), dict(padding="same"), dict(padding="same", dilation=2), dict(padding="valid")])
def test_conv2d(torch, kw):
    groups = kw.get("groups", 1)
    x, w, b = RNG.standard_normal((2, 4, 7, 8)), RNG.standard_normal((8, 4 // groups, 3, 2)), RNG.standard_normal(8)
    compare(torch, lambda x, w, b: F.conv2d(x, w, b, **kw), lambda x, w, b: torch.nn.functional.conv2d(x, w, b, **kw),
            [x, w, b])


@pytest.mark.parametrize("kw", [dict(), dict(stride=3, padding=2, dilation=2, groups=2), dict(padding="same")])
def test_conv1d(torch, kw):
    x, w = RNG.standard_normal((3, 4, 13)), RNG.standard_normal((6, 4 // kw.get("groups", 1), 4))
    compare(torch, lambda x, w: F.conv1d(x, w, **kw), lambda x, w: torch.nn.functional.conv1d(x, w, **kw), [x, w])


def test_conv_unbatched(torch):
    x, w = RNG.standard_normal((3, 6, 5)), RNG.standard_normal((2, 3, 3, 3))
    compare(torch, lambda x, w: F.conv2d(x, w, padding=1), lambda x, w: torch.nn.functional.conv2d(x, w, padding=1),
            [x, w])


@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1, output_padding=1),
                                dict(stride=(2, 3), padding=(0, 1), output_padding=(1, 2), groups=2, dilation=(2, 1))])
def test_conv_transpose2d(torch, kw):
    groups = kw.get("groups", 1)
    x, w, b = RNG.standard_normal((2, 4, 5, 4)), RNG.standard_normal((4, 6 // groups, 3, 3)), RNG.standard_normal(6)
    compare(torch, lambda x, w, b: F.conv_transpose2d(x, w, b, **kw),
            lambda x, w, b: torch.nn.functional.conv_transpose2d(x, w, b, **kw), [x, w, b])


@pytest.mark.parametrize("kw", [dict(padding=1), dict(stride=2, padding=1), dict(stride=2, output_padding=1, groups=2),
                                dict(stride=(1, 2), padding=(2, 1), dilation=(2, 1))])
def test_conv_transpose2d_kernel_path(torch, kw):
    """Grids of 256 positions or more take the convolution kernels (image by image)."""
    groups = kw.get("groups", 1)
    x, w, b = RNG.standard_normal((2, 8, 16, 16)), RNG.standard_normal((8, 6 // groups, 3, 3)), RNG.standard_normal(6)
    compare(torch, lambda x, w, b: F.conv_transpose2d(x, w, b, **kw),
            lambda x, w, b: torch.nn.functional.conv_transpose2d(x, w, b, **kw), [x, w, b])
    compare(torch, lambda x, w: F.conv_transpose2d(x, w, None, **kw).square().sum(),
            lambda x, w: torch.nn.functional.conv_transpose2d(x, w, None, **kw).square().sum(), [x, w])


@pytest.mark.parametrize("length", [7, 260])  # 260: the kernel path
def test_conv_transpose1d(torch, length):
    x, w = RNG.standard_normal((2, 3, length)), RNG.standard_normal((3, 2, 5))
    kw = dict(stride=2, padding=2, output_padding=1)
    compare(torch, lambda x, w: F.conv_transpose1d(x, w, **kw),
            lambda x, w: torch.nn.functional.conv_transpose1d(x, w, **kw), [x, w])


def test_conv_double_backward(torch):
    x, w = RNG.standard_normal((2, 3, 6, 5)), RNG.standard_normal((4, 3, 3, 3))

    def gx(F_, grad_fn):
        def fn(x, w):
            return grad_fn(F_.conv2d(x, w, stride=2, padding=1).square().sum(), [x], create_graph=True)[0]
        return fn

    compare(torch, gx(F, sx.autograd.grad), gx(torch.nn.functional, torch.autograd.grad), [x, w])


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=(3, 2), stride=(2, 1), dilation=(1, 2), ceil_mode=True),
                                dict(kernel_size=3, stride=2, ceil_mode=True, padding=1)])
def test_max_pool2d(torch, kw):
    x = RNG.permutation(2 * 3 * 7 * 9).reshape(2, 3, 7, 9) / 7.0
    compare(torch, lambda x: F.max_pool2d(x, **kw), lambda x: torch.nn.functional.max_pool2d(x, **kw), [x])
    _, i = F.max_pool2d(sx.tensor(x), **kw, return_indices=True)
    _, ti = torch.nn.functional.max_pool2d(torch.tensor(x), **kw, return_indices=True)
    np.testing.assert_array_equal(i.numpy(), ti.numpy())


def test_max_pool1d(torch):
    x = RNG.permutation(2 * 3 * 11).reshape(2, 3, 11) / 5.0
    kw = dict(kernel_size=4, stride=3, padding=2, ceil_mode=True)
    compare(torch, lambda x: F.max_pool1d(x, **kw), lambda x: torch.nn.functional.max_pool1d(x, **kw), [x])


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=3, stride=2, padding=1, count_include_pad=False, ceil_mode=True),
                                dict(kernel_size=(2, 3), stride=(3, 2), padding=(1, 1), ceil_mode=True),
                                dict(kernel_size=3, padding=1, divisor_override=5)])
def test_avg_pool2d(torch, kw):
    x = RNG.standard_normal((2, 3, 8, 7))
    compare(torch, lambda x: F.avg_pool2d(x, **kw), lambda x: torch.nn.functional.avg_pool2d(x, **kw), [x])


def test_avg_pool1d(torch):
    x = RNG.standard_normal((2, 3, 10))
    kw = dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=True)
    compare(torch, lambda x: F.avg_pool1d(x, **kw), lambda x: torch.nn.functional.avg_pool1d(x, **kw), [x])


@pytest.mark.parametrize("size", [1, (3, 5), (4, None), (7, 2)])
def test_adaptive_pools(torch, size):
    x = RNG.permutation(2 * 3 * 9 * 7).reshape(2, 3, 9, 7) / 3.0
    tf = torch.nn.functional
    compare(torch, lambda x: F.adaptive_avg_pool2d(x, size), lambda x: tf.adaptive_avg_pool2d(x, size), [x])
    compare(torch, lambda x: F.adaptive_max_pool2d(x, size), lambda x: tf.adaptive_max_pool2d(x, size), [x])
    _, i = F.adaptive_max_pool2d(sx.tensor(x), size, return_indices=True)
    np.testing.assert_array_equal(i.numpy(), tf.adaptive_max_pool2d(torch.tensor(x), size, return_indices=True)[1])
    x1 = x.reshape(2, 3, -1)
    compare(torch, lambda x: F.adaptive_avg_pool1d(x, 5), lambda x: tf.adaptive_avg_pool1d(x, 5), [x1])
    compare(torch, lambda x: F.adaptive_max_pool1d(x, 5), lambda x: tf.adaptive_max_pool1d(x, 5), [x1])


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm(torch, training):
    x, w, b = RNG.standard_normal((4, 3, 5, 2)), RNG.standard_normal(3), RNG.standard_normal(3)
    rm, rv = RNG.standard_normal(3), RNG.random(3) + 0.5
    srm, srv = sx.tensor(rm, dtype=sx.float64), sx.tensor(rv, dtype=sx.float64)
    trm, trv = torch.tensor(rm), torch.tensor(rv)
    compare(torch, lambda x, w, b: F.batch_norm(x, srm, srv, w, b, training, 0.2, 1e-3),
            lambda x, w, b: torch.nn.functional.batch_norm(x, trm, trv, w, b, training, 0.2, 1e-3), [x, w, b])
    np.testing.assert_allclose(srm.numpy(), trm.numpy(), atol=1e-12)
    np.testing.assert_allclose(srv.numpy(), trv.numpy(), atol=1e-12)


def test_group_and_instance_norm(torch):
    x, w, b = RNG.standard_normal((2, 6, 4, 3)), RNG.standard_normal(6), RNG.standard_normal(6)
    tf = torch.nn.functional
    compare(torch, lambda x, w, b: F.group_norm(x, 3, w, b), lambda x, w, b: tf.group_norm(x, 3, w, b), [x, w, b])
    rm, rv = sx.zeros(6, dtype=sx.float64), sx.ones(6, dtype=sx.float64)
    trm, trv = torch.zeros(6, dtype=torch.float64), torch.ones(6, dtype=torch.float64)
    compare(torch, lambda x, w, b: F.instance_norm(x, rm, rv, w, b, momentum=0.3),
            lambda x, w, b: tf.instance_norm(x, trm, trv, w, b, momentum=0.3), [x, w, b])
    np.testing.assert_allclose(rm.numpy(), trm.numpy(), atol=1e-12)
    np.testing.assert_allclose(rv.numpy(), trv.numpy(), atol=1e-12)


@pytest.mark.parametrize("name,args", [
    ("hardtanh", (-0.5, 0.7)), ("relu6", ()), ("hardsigmoid", ()), ("hardswish", ()), ("mish", ()),
    ("celu", (0.6,)), ("selu", ()), ("logsigmoid", ()), ("softsign", ()), ("tanhshrink", ()), ("elu", (0.8,)),
    ("softplus", (2.0, 3.0)), ("hardshrink", (3.0,)), ("softshrink", (3.0,)), ("threshold", (3.0, -2.0)),
    ("softmin", (0,))])
def test_activations(torch, name, args):
    x = RNG.uniform(-6, 6, (5, 7))
    x = x[np.abs(np.abs(x) - 3) > 1e-3]
    compare(torch, lambda x: getattr(F, name)(x, *args), lambda x: getattr(torch.nn.functional, name)(x, *args), [x])


def test_composed_ops(torch):
    tf = torch.nn.functional
    x, w = RNG.standard_normal((2, 3, 4, 2)), RNG.random(3)
    compare(torch, F.prelu, tf.prelu, [x, w])
    a, b = RNG.standard_normal((4, 6)), RNG.standard_normal((4, 6))
    compare(torch, lambda a, b: F.cosine_similarity(a, b, dim=1), lambda a, b: tf.cosine_similarity(a, b, dim=1),
            [a, b])
    compare(torch, lambda a, b: F.pairwise_distance(a, b, p=3.0), lambda a, b: tf.pairwise_distance(a, b, p=3.0),
            [a, b])
    compare(torch, lambda a: F.normalize(a, p=1.0, dim=0), lambda a: tf.normalize(a, p=1.0, dim=0), [a])
    x = RNG.standard_normal((2, 12, 3, 4))
    compare(torch, lambda x: F.pixel_shuffle(x, 2), lambda x: tf.pixel_shuffle(x, 2), [x])
    compare(torch, lambda x: F.pixel_unshuffle(x, 3), lambda x: tf.pixel_unshuffle(x, 3), [x.reshape(2, 4, 6, 6)])
    compare(torch, lambda x: F.unfold(x, (2, 3), 1, 1, 2), lambda x: tf.unfold(x, (2, 3), 1, 1, 2), [x])
    c = RNG.standard_normal((2, 12, 9))
    compare(torch, lambda c: F.fold(c, (5, 6), (2, 3), 1, 1, 2), lambda c: tf.fold(c, (5, 6), (2, 3), 1, 1, 2), [c])
    ids = np.array([[3, 0], [1, 4]])
    np.testing.assert_array_equal(F.one_hot(sx.tensor(ids)).numpy(), tf.one_hot(torch.tensor(ids)).numpy())



@pytest.mark.parametrize("kw", [
    dict(), dict(stride=2, padding=1), dict(stride=(1, 2, 1), padding=(2, 0, 1), dilation=(2, 1, 1)),
    dict(groups=2, padding="same"), dict(groups=4, padding=1, dilation=(1, 1, 2))])
def test_conv3d_and_transpose(torch, kw):
    groups = kw.get("groups", 1)
    x, b = RNG.standard_normal((2, 4, 5, 6, 5)), RNG.standard_normal(8)
    w = RNG.standard_normal((8, 4 // groups, 3, 2, 2))
    tf = torch.nn.functional
    compare(torch, lambda x, w, b: F.conv3d(x, w, b, **kw), lambda x, w, b: tf.conv3d(x, w, b, **kw), [x, w, b])
    if kw.get("padding") == "same":
        return
    kt = dict(kw, output_padding=1) if kw.get("stride") == 2 else kw
    wt = RNG.standard_normal((4, 8 // groups, 3, 2, 2))
    compare(torch, lambda x, w, b: F.conv_transpose3d(x, w, b, **kt),
            lambda x, w, b: tf.conv_transpose3d(x, w, b, **kt), [x, wt, b])


@pytest.mark.parametrize("k, s, p, d, ceil", [
    (2, None, 0, 1, False), ((3, 2, 2), (1, 2, 2), (1, 1, 0), 1, True), ((2, 3, 2), 2, 1, (2, 1, 1), True)])
def test_pools_3d(torch, k, s, p, d, ceil):
    x = RNG.permutation(2 * 3 * 6 * 7 * 8).reshape(2, 3, 6, 7, 8) / 7.0  # distinct values: one argmax
    tf = torch.nn.functional
    compare(torch, lambda x: F.max_pool3d(x, k, s, p, d, ceil), lambda x: tf.max_pool3d(x, k, s, p, d, ceil), [x])
    got = F.max_pool3d(sx.tensor(x), k, s, p, d, ceil, return_indices=True)[1]
    np.testing.assert_array_equal(got.numpy(), tf.max_pool3d(torch.tensor(x), k, s, p, d, ceil, True)[1].numpy())
    for include, div in ((True, None), (False, None), (True, 3)):
        compare(torch, lambda x: F.avg_pool3d(x, k, s, p, ceil, include, div),
                lambda x: tf.avg_pool3d(x, k, s, p, ceil, include, div), [x])
    compare(torch, lambda x: F.lp_pool3d(x, 2.5, k, s, ceil), lambda x: tf.lp_pool3d(x, 2.5, k, s, ceil), [x])
    size = (4, 3, 5)
    compare(torch, lambda x: F.adaptive_avg_pool3d(x, size), lambda x: tf.adaptive_avg_pool3d(x, size), [x])
    compare(torch, lambda x: F.adaptive_max_pool3d(x, size), lambda x: tf.adaptive_max_pool3d(x, size), [x])
    out, ind = tf.max_pool3d(torch.tensor(x), 2, return_indices=True)
    compare(torch, lambda y: F.max_unpool3d(y, sx.tensor(ind.numpy()), 2, output_size=x.shape[2:]),
            lambda y: tf.max_unpool3d(y, ind, 2, output_size=x.shape[2:]), [out.numpy()])
    x2 = x[:, :, 0]
    compare(torch, lambda x: F.lp_pool2d(x, 3.0, 3, 2, True), lambda x: tf.lp_pool2d(x, 3.0, 3, 2, True), [x2])
    compare(torch, lambda x: F.lp_pool1d(x, 1.5, 2), lambda x: tf.lp_pool1d(x, 1.5, 2), [x2[:, :, 0]])


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample(torch, mode, padding_mode, align):
    tf = torch.nn.functional
    x, grid = RNG.standard_normal((2, 3, 5, 6)), RNG.uniform(-1.4, 1.4, (2, 4, 7, 2))
    if mode == "nearest":  # the grid gets no gradient
        compare(torch, lambda x: F.grid_sample(x, sx.tensor(grid), mode, padding_mode, align),
                lambda x: tf.grid_sample(x, torch.tensor(grid), mode, padding_mode, align), [x])
    else:
        compare(torch, lambda x, g: F.grid_sample(x, g, mode, padding_mode, align),
                lambda x, g: tf.grid_sample(x, g, mode, padding_mode, align), [x, grid])
    theta = RNG.standard_normal((2, 3, 4))
    compare(torch, lambda th: F.affine_grid(th, (2, 1, 3, 4, 5), align),
            lambda th: tf.affine_grid(th, (2, 1, 3, 4, 5), align), [theta])
    if mode != "bicubic":
        x3, g3 = RNG.standard_normal((2, 2, 3, 4, 5)), RNG.uniform(-1.4, 1.4, (2, 2, 3, 4, 3))
        compare(torch, lambda x, g: F.grid_sample(x, g, mode, padding_mode, align),
                lambda x, g: tf.grid_sample(x, g, mode, padding_mode, align), [x3, g3], grad=mode == "bilinear")

try:
    from hypothesis import given, strategies as st
except ImportError:  # property tests need hypothesis
    given = None

if given is not None:
    @st.composite
    def conv_configs(draw):
        """A random valid conv2d / conv_transpose2d configuration (small sizes)."""
        groups = draw(st.sampled_from([1, 2, 3]))
        cin, cout = groups * draw(st.integers(1, 2)), groups * draw(st.integers(1, 2))
        k = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
        s = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
        d = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
        p = (draw(st.integers(0, 2)), draw(st.integers(0, 2)))
        hw = tuple(draw(st.integers(max(1, d[i] * (k[i] - 1) + 1 - 2 * p[i]), 7)) for i in range(2))
        return dict(n=draw(st.integers(1, 2)), cin=cin, cout=cout, k=k, s=s, d=d, p=p, hw=hw, groups=groups,
                    bias=draw(st.booleans()), seed=draw(st.integers(0, 2**31)))

    @given(conv_configs())
    def test_conv2d_random_configs(cfg):
        torch = pytest.importorskip("torch")
        rng = np.random.default_rng(cfg["seed"])
        x = rng.standard_normal((cfg["n"], cfg["cin"]) + cfg["hw"])
        w = rng.standard_normal((cfg["cout"], cfg["cin"] // cfg["groups"]) + cfg["k"])
        arrays = [x, w] + ([rng.standard_normal(cfg["cout"])] if cfg["bias"] else [])
        kw = dict(stride=cfg["s"], padding=cfg["p"], dilation=cfg["d"], groups=cfg["groups"])
        compare(torch, lambda x, w, *b: F.conv2d(x, w, *b, **kw),
                lambda x, w, *b: torch.nn.functional.conv2d(x, w, *b, **kw), arrays)

    @given(conv_configs())
    def test_conv_transpose2d_random_configs(cfg):
        torch = pytest.importorskip("torch")
        rng = np.random.default_rng(cfg["seed"])
        x = rng.standard_normal((cfg["n"], cfg["cin"]) + cfg["hw"])
        w = rng.standard_normal((cfg["cin"], cfg["cout"] // cfg["groups"]) + cfg["k"])
        op = tuple(min(max(s, d) - 1, 1) for s, d in zip(cfg["s"], cfg["d"]))
        kw = dict(stride=cfg["s"], padding=cfg["p"], dilation=cfg["d"], groups=cfg["groups"], output_padding=op)
        out = [(h - 1) * s - 2 * p + d * (k - 1) + o + 1 for h, s, p, d, k, o in
               zip(cfg["hw"], cfg["s"], cfg["p"], cfg["d"], cfg["k"], op)]
        if min(out) <= 0:
            return
        compare(torch, lambda x, w: F.conv_transpose2d(x, w, **kw),
                lambda x, w: torch.nn.functional.conv_transpose2d(x, w, **kw), [x, w])

    @given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3), st.integers(0, 1), st.integers(1, 2),
           st.booleans(), st.booleans(), st.integers(3, 8), st.integers(0, 2**31))
    def test_pools_random_configs(kh, kw_, s, p, d, ceil_mode, include_pad, size, seed):
        torch = pytest.importorskip("torch")
        p = min(p, kh // 2, kw_ // 2)
        if d * (max(kh, kw_) - 1) + 1 > size + 2 * p:
            return
        x = np.random.default_rng(seed).permutation(2 * size * (size + 1)).reshape(1, 2, size, size + 1) / 3.0
        tf = torch.nn.functional
        mp = dict(kernel_size=(kh, kw_), stride=s, padding=p, dilation=d, ceil_mode=ceil_mode)
        compare(torch, lambda x: F.max_pool2d(x, **mp), lambda x: tf.max_pool2d(x, **mp), [x])
        ap = dict(kernel_size=(kh, kw_), stride=s, padding=p, ceil_mode=ceil_mode, count_include_pad=include_pad)
        compare(torch, lambda x: F.avg_pool2d(x, **ap), lambda x: tf.avg_pool2d(x, **ap), [x])
