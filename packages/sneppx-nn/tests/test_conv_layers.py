"""Convolution, pooling, batch-norm and resampling layers: construction, state_dict keys, running
statistics, and parity with torch.nn (same weights through state_dict) for layers and a small CNN."""

import inspect

import numpy as np
import pytest
import sneppx_core as sx

import sneppx_nn as nn
from conftest import to_np

RNG = np.random.default_rng(31)


def test_conv_layer_shapes_and_init():
    conv = nn.Conv2d(4, 8, 3, stride=2, padding=1, groups=2)
    assert tuple(conv.weight.shape) == (8, 2, 3, 3) and tuple(conv.bias.shape) == (8,)
    bound = 1 / np.sqrt(2 * 9)
    assert np.abs(to_np(conv.weight)).max() <= bound and np.abs(to_np(conv.bias)).max() <= bound
    assert tuple(conv(sx.randn(2, 4, 9, 9)).shape) == (2, 8, 5, 5)
    assert tuple(conv(sx.randn(4, 9, 9)).shape) == (8, 5, 5)
    assert list(nn.Conv1d(3, 5, 4, bias=False).state_dict()) == ["weight"]
    t = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)
    assert tuple(t.weight.shape) == (4, 3, 3, 3)
    assert tuple(t(sx.randn(1, 4, 5, 5)).shape) == (1, 6, 10, 10)
    assert tuple(t(sx.randn(1, 4, 5, 5), output_size=(9, 9)).shape) == (1, 6, 9, 9)
    with pytest.raises(ValueError, match=r"\[Conv2d\] in_channels 3 and out_channels 8 must be divisible by groups 2"):
        nn.Conv2d(3, 8, 3, groups=2)
    with pytest.raises(ValueError, match=r"\[Conv2d\] expected input \(N, 4, H, W\)"):
        conv(sx.randn(2, 3, 9, 9))


def test_padding_modes():
    conv = nn.Conv2d(1, 1, 3, padding=1, padding_mode="circular", bias=False)
    with sx.no_grad():
        conv.weight.fill_(0.0)
        conv.weight[0, 0, 1, 0] = 1.0  # picks the left neighbour
    x = sx.arange(12, dtype=sx.float32).reshape(1, 1, 3, 4)
    np.testing.assert_array_equal(to_np(conv(x))[0, 0], np.roll(np.arange(12).reshape(3, 4), 1, axis=1))


def test_batchnorm_state_and_modes():
    bn = nn.BatchNorm2d(3, momentum=None)
    assert list(bn.state_dict()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    assert [n for n, _ in bn.named_parameters()] == ["weight", "bias"]
    xs = [RNG.standard_normal((4, 3, 2, 2)) * (i + 1) + i for i in range(3)]
    for x in xs:
        bn(sx.tensor(x.astype(np.float32)))
    assert int(bn.num_batches_tracked.item()) == 3
    # momentum=None: running_mean is the plain average of the batch means
    np.testing.assert_allclose(to_np(bn.running_mean), np.mean([x.mean(axis=(0, 2, 3)) for x in xs], 0), atol=1e-5)
    bn.eval()
    x = sx.tensor(xs[0].astype(np.float32))
    y = to_np(bn(x))
    rm, rv = to_np(bn.running_mean), to_np(bn.running_var)
    np.testing.assert_allclose(y, (xs[0] - rm[:, None, None]) / np.sqrt(rv[:, None, None] + 1e-5), atol=1e-5)
    assert int(bn.num_batches_tracked.item()) == 3
    free = nn.BatchNorm1d(5, affine=False, track_running_stats=False).eval()
    assert list(free.state_dict()) == []
    y = to_np(free(sx.tensor(RNG.standard_normal((6, 5)).astype(np.float32))))
    np.testing.assert_allclose(y.mean(0), 0, atol=1e-5)  # batch statistics even in eval mode


def test_misc_layers():
    assert tuple(nn.MaxPool2d(2)(sx.randn(1, 2, 6, 5)).shape) == (1, 2, 3, 2)
    out, idx = nn.MaxPool2d(3, 2, 1, return_indices=True, ceil_mode=True)(sx.randn(1, 2, 6, 5))
    assert tuple(out.shape) == tuple(idx.shape) == (1, 2, 4, 3)
    assert tuple(nn.AdaptiveAvgPool2d((1, 1))(sx.randn(2, 4, 5, 3)).shape) == (2, 4, 1, 1)
    assert tuple(nn.Upsample(scale_factor=2, mode="nearest")(sx.randn(1, 1, 2, 3)).shape) == (1, 1, 4, 6)
    assert tuple(nn.PixelShuffle(2)(sx.randn(1, 8, 2, 3)).shape) == (1, 2, 4, 6)
    assert tuple(nn.ZeroPad2d((1, 2, 0, 3))(sx.randn(1, 1, 2, 3)).shape) == (1, 1, 5, 6)
    assert tuple(nn.GroupNorm(2, 4)(sx.randn(2, 4, 3)).shape) == (2, 4, 3)
    assert list(nn.PReLU(3).state_dict()) == ["weight"]
    d = nn.Dropout2d(0.5).eval()
    x = sx.randn(2, 3, 4, 4)
    assert d(x) is x


MODE_PADS = [("ReflectionPad1d", "reflect", 1), ("ReflectionPad2d", "reflect", 2), ("ReplicationPad1d", "edge", 1),
             ("ReplicationPad2d", "edge", 2), ("CircularPad1d", "wrap", 1), ("CircularPad2d", "wrap", 2),
             ("ReflectionPad3d", "reflect", 3), ("ReplicationPad3d", "edge", 3), ("CircularPad3d", "wrap", 3),
             ("ConstantPad3d", "constant", 3)]


@pytest.mark.parametrize("name,np_mode,n", MODE_PADS, ids=[p[0] for p in MODE_PADS])
def test_mode_pads_against_numpy(name, np_mode, n):
    """Reflection, replication and circular padding layers of unbatched and batched inputs, int or per-side
    padding, against np.pad; the gradient of each input element is the sum of its copies' seeds."""
    cls = getattr(nn, name)
    for padding, batch in ((2, ()), ((1, 3, 0, 2, 2, 1)[:2 * n], (2,)), ((0, 4, 3, 1, 1, 2)[:2 * n], (1,))):
        layer = cls(padding, 0.0) if np_mode == "constant" else cls(padding)
        per = layer.padding
        widths = [(0, 0)] * (len(batch) + 1) + [(per[2 * k], per[2 * k + 1]) for k in reversed(range(n))]
        x = RNG.standard_normal(batch + (3,) + (4, 5, 6)[3 - n:])
        xs = sx.tensor(x, dtype=sx.float64, requires_grad=True)
        out = layer(xs)
        np.testing.assert_array_equal(to_np(out), np.pad(x, widths, mode=np_mode))
        seed = RNG.standard_normal(tuple(out.shape))
        (out * sx.tensor(seed, dtype=sx.float64)).sum().backward()
        want = np.zeros_like(x)
        index = np.pad(np.arange(x.size).reshape(x.shape), widths, mode=np_mode,
                       **({"constant_values": -1} if np_mode == "constant" else {})).reshape(-1)
        np.add.at(want.reshape(-1), index[index >= 0], seed.reshape(-1)[index >= 0])
        np.testing.assert_allclose(to_np(xs.grad), want, atol=1e-12)
    if np_mode == "constant":  # ConstantPad3d: any rank, repr with its value as PyTorch's; ZeroPad3d the padding
        assert repr(cls(1, 0.5)) == f"{name}(padding={(1,) * 2 * n}, value=0.5)"
        assert repr(nn.ZeroPad3d(1)) == f"ZeroPad3d({(1,) * 6})" and repr(nn.ZeroPad2d(2)) == f"ZeroPad2d({(2,) * 4})"
        return
    assert repr(cls(1)) == f"{name}({(1,) * 2 * n})" and list(cls(1).state_dict()) == []
    with pytest.raises(ValueError, match=rf"\[{name}\] expects a {n + 1}-d or {n + 2}-d input, got shape"):
        cls(1)(sx.randn(*(2,) * (n + 3)))
    with pytest.raises(ValueError, match=rf"\[{name}\] padding must be an int or {2 * n} ints"):
        cls((1, 2, 3))


def test_reflection_pad_must_be_smaller_than_the_dim():
    with pytest.raises(ValueError, match=r"\[pad\] reflect padding of 0, 3 must be smaller than the dim of size 3"):
        nn.ReflectionPad1d((0, 3))(sx.randn(2, 3))


def _torch():
    return pytest.importorskip("torch")


def copy_weights(src, dst, torch):
    dst.load_state_dict({k: torch.from_numpy(np.array(to_np(v))) for k, v in src.state_dict().items()}, strict=True)


PARITY_LAYERS = [
    ("Conv2d", (3, 4, 3), dict(stride=2, padding=1), (2, 3, 7, 6)),
    ("Conv2d", (4, 4, (3, 2)), dict(groups=4, padding="same", padding_mode="reflect"), (2, 4, 5, 6)),
    ("Conv1d", (2, 6, 3), dict(dilation=2, padding=2), (3, 2, 9)),
    ("ConvTranspose2d", (4, 2, 3), dict(stride=2, padding=1, output_padding=1), (2, 4, 3, 4)),
    ("ConvTranspose1d", (2, 3, 4), dict(stride=2), (2, 2, 5)),
    ("BatchNorm2d", (3,), dict(momentum=0.3), (4, 3, 3, 2)),
    ("BatchNorm1d", (3,), dict(), (5, 3)),
    ("BatchNorm2d", (3,), dict(momentum=None), (4, 3, 5, 4)),
    ("BatchNorm2d", (3,), dict(track_running_stats=False), (4, 3, 3, 3)),
    ("BatchNorm1d", (4,), dict(affine=False, eps=1e-3), (3, 4, 6)),
    ("InstanceNorm2d", (3,), dict(affine=True, track_running_stats=True), (2, 3, 4, 4)),
    ("GroupNorm", (2, 4), dict(), (2, 4, 3, 3)),
    ("MaxPool2d", (3, 2, 1), dict(ceil_mode=True), (2, 2, 7, 7)),
    ("AvgPool2d", (3, 2, 1), dict(count_include_pad=False), (2, 2, 7, 6)),
    ("AdaptiveAvgPool2d", ((2, 3),), dict(), (2, 2, 7, 6)),
    ("AdaptiveMaxPool2d", (3,), dict(), (2, 2, 7, 6)),
    ("PReLU", (3,), dict(init=0.1), (2, 3, 4)),
    ("Hardswish", (), dict(), (3, 5)),
    ("Mish", (), dict(), (3, 5)),
    ("CELU", (0.5,), dict(), (3, 5)),
    ("Hardshrink", (0.7,), dict(), (3, 5)),
    ("Softshrink", (), dict(), (3, 5)),
    ("Threshold", (0.2, -1.5), dict(), (3, 5)),
    ("GLU", (), dict(dim=1), (3, 6)),
    ("Softmin", (), dict(dim=0), (3, 5)),
    ("Softmax2d", (), dict(), (2, 3, 4, 5)),
    ("LocalResponseNorm", (3,), dict(alpha=0.3, beta=0.6, k=1.5), (2, 6, 4, 3)),
    ("LocalResponseNorm", (4,), dict(), (2, 5, 7)),
    ("ChannelShuffle", (3,), dict(), (2, 6, 4, 3)),
    ("UpsamplingNearest2d", (), dict(scale_factor=2), (1, 2, 3, 4)),
    ("UpsamplingBilinear2d", (), dict(size=(5, 7)), (1, 2, 3, 4)),
    ("Upsample", (), dict(scale_factor=2, mode="bilinear", align_corners=True), (1, 2, 3, 4)),
    ("PixelShuffle", (2,), dict(), (1, 8, 2, 3)),
    ("ReflectionPad2d", ((1, 2, 0, 3),), dict(), (2, 3, 5, 6)),
    ("ReflectionPad1d", ((3, 1),), dict(), (3, 6)),
    ("ReplicationPad2d", (2,), dict(), (3, 4, 5)),
    ("ReplicationPad1d", ((0, 4),), dict(), (2, 3, 5)),
    ("CircularPad2d", ((1, 2, 2, 0),), dict(), (2, 2, 4, 5)),
    ("CircularPad1d", (3,), dict(), (2, 4)),
    ("ReflectionPad3d", ((1, 2, 0, 1, 2, 1),), dict(), (2, 2, 4, 5, 3)),
    ("ReplicationPad3d", (2,), dict(), (2, 3, 4, 5)),
    ("CircularPad3d", ((1, 0, 2, 1, 0, 3),), dict(), (1, 2, 4, 3, 5)),
    ("ZeroPad3d", ((1, 2, 0, 1, 2, 1),), dict(), (2, 2, 3, 4, 3)),
    ("Conv3d", (4, 6, (3, 2, 3)), dict(stride=(1, 2, 1), padding=1, groups=2), (2, 4, 5, 6, 5)),
    ("Conv3d", (2, 3, 3), dict(padding="same", padding_mode="replicate", dilation=(1, 2, 1)), (1, 2, 4, 5, 6)),
    ("ConvTranspose3d", (4, 2, (2, 3, 3)), dict(stride=2, padding=1, output_padding=1), (2, 4, 3, 3, 2)),
    ("BatchNorm3d", (3,), dict(momentum=0.3), (4, 3, 3, 2, 2)),
    ("InstanceNorm3d", (3,), dict(affine=True, track_running_stats=True), (2, 3, 3, 4, 2)),
    ("MaxPool3d", ((2, 3, 2), (1, 2, 2), 1), dict(ceil_mode=True), (2, 2, 5, 7, 6)),
    ("AvgPool3d", (3, 2, 1), dict(count_include_pad=False), (2, 2, 5, 7, 6)),
    ("AdaptiveAvgPool3d", ((2, None, 3),), dict(), (2, 2, 5, 4, 6)),
    ("AdaptiveMaxPool3d", (3,), dict(), (2, 2, 5, 7, 6)),
    ("LPPool1d", (2, 3), dict(stride=2), (2, 3, 9)),
    ("LPPool2d", (1.5, (2, 3)), dict(ceil_mode=True), (2, 3, 5, 7)),
    ("LPPool3d", (3, 2), dict(), (2, 2, 4, 5, 6)),
]


@pytest.mark.parity
@pytest.mark.parametrize("name,args,kw,shape", PARITY_LAYERS, ids=[p[0] for p in PARITY_LAYERS])
def test_layer_parity(name, args, kw, shape):
    torch = _torch()
    cls = getattr(nn, name)
    ours = cls(*args, **kw, **({"dtype": sx.float64} if "dtype" in inspect.signature(cls).parameters else {}))
    theirs = getattr(torch.nn, name)(*args, **kw).double()
    copy_weights(ours, theirs, torch)
    for training in (True, False):
        ours.train(training), theirs.train(training)
        x = RNG.standard_normal(shape)
        xs, xt = sx.tensor(x, dtype=sx.float64, requires_grad=True), torch.tensor(x, requires_grad=True)
        out_s, out_t = ours(xs), theirs(xt)
        np.testing.assert_allclose(to_np(out_s), out_t.detach().numpy(), atol=1e-9, rtol=1e-7)
        seed = RNG.standard_normal(tuple(out_t.shape))
        (out_s * sx.tensor(seed, dtype=sx.float64)).sum().backward()
        (out_t * torch.tensor(seed)).sum().backward()
        np.testing.assert_allclose(to_np(xs.grad), xt.grad.numpy(), atol=1e-9, rtol=1e-7)
        tp = dict(theirs.named_parameters())
        for n, p in ours.named_parameters():
            np.testing.assert_allclose(to_np(p.grad), tp[n].grad.numpy(), atol=1e-9, rtol=1e-7, err_msg=n)
            p.grad = None
            tp[n].grad = None
        tb = dict(theirs.named_buffers())
        for n, b in ours.named_buffers():
            np.testing.assert_allclose(to_np(b), tb[n].numpy(), atol=1e-12, err_msg=n)


@pytest.mark.parity
def test_small_cnn_training_matches_torch():
    """Two conv-BN-ReLU-pool blocks and a Linear head, SGD with momentum: same losses and weights for
    a few steps in float64."""
    torch = _torch()

    def build(m):
        return m.Sequential(m.Conv2d(3, 8, 3, padding=1), m.BatchNorm2d(8), m.ReLU(), m.MaxPool2d(2),
                            m.Conv2d(8, 16, 3, padding=1), m.BatchNorm2d(16), m.ReLU(), m.MaxPool2d(2),
                            m.Flatten(), m.Linear(16 * 2 * 2, 10))

    ours, theirs = build(nn), build(torch.nn).double()
    ours.to(sx.float64)
    copy_weights(ours, theirs, torch)
    params = list(ours.parameters())
    bufs = [sx.zeros_like(p) for p in params]
    opt_t = torch.optim.SGD(theirs.parameters(), lr=0.05, momentum=0.9)
    loss_s_fn, loss_t_fn = nn.CrossEntropyLoss(), torch.nn.CrossEntropyLoss()
    for _ in range(3):
        x, y = RNG.standard_normal((6, 3, 8, 8)), RNG.integers(0, 10, 6)
        ls = loss_s_fn(ours(sx.tensor(x, dtype=sx.float64)), sx.tensor(y))
        lt = loss_t_fn(theirs(torch.tensor(x)), torch.tensor(y))
        np.testing.assert_allclose(float(ls.item()), float(lt.item()), rtol=1e-9)
        opt_t.zero_grad()
        ls.backward(), lt.backward()
        opt_t.step()
        with sx.no_grad():  # SGD with momentum, PyTorch's form: buf = 0.9 buf + g; p -= lr buf
            for p, buf in zip(params, bufs):
                buf.copy_(buf * 0.9 + p.grad)
                p.copy_(p - buf * 0.05)
                p.grad = None
    tsd = theirs.state_dict()
    for k, v in ours.state_dict().items():
        np.testing.assert_allclose(to_np(v), tsd[k].numpy(), atol=1e-9, err_msg=k)


@pytest.mark.parity
@pytest.mark.parametrize("nsp,shape,k,out", [(1, (2, 3, 9), 3, None), (2, (2, 3, 6, 8), 2, None),
                                             (2, (2, 3, 5, 7), 2, (5, 7)), (2, (3, 6, 7), (2, 3), (6, 7)),
                                             (3, (2, 2, 4, 5, 7), 2, (4, 5, 7)), (3, (2, 4, 6, 4), (1, 3, 2), None)])
def test_max_unpool_parity(nsp, shape, k, out):
    """MaxUnpool1d/2d/3d of MaxPool's indices (odd sizes through output_size, an unbatched input): values and
    the input's gradient as torch's."""
    torch = _torch()
    x = RNG.standard_normal(shape)
    xs, xt = sx.tensor(x, dtype=sx.float64, requires_grad=True), torch.tensor(x, requires_grad=True)
    pool, unpool = f"MaxPool{nsp}d", f"MaxUnpool{nsp}d"
    ys, is_ = getattr(nn, pool)(k, return_indices=True)(xs)
    yt, it = getattr(torch.nn, pool)(k, return_indices=True)(xt)
    us, ut = getattr(nn, unpool)(k)(ys, is_, out), getattr(torch.nn, unpool)(k)(yt, it, out)
    np.testing.assert_array_equal(to_np(us), ut.detach().numpy())
    seed = RNG.standard_normal(tuple(ut.shape))
    (us * sx.tensor(seed, dtype=sx.float64)).sum().backward()
    (ut * torch.tensor(seed)).sum().backward()
    np.testing.assert_allclose(to_np(xs.grad), xt.grad.numpy(), atol=1e-12)


def test_max_unpool_errors():
    x = sx.arange(70, dtype=sx.float32).reshape(1, 2, 5, 7)  # each window's maximum at its bottom right
    y, i = nn.MaxPool2d(2, return_indices=True)(x)
    with pytest.raises(ValueError, match=r"max_unpool2d\] indices must lie in \[0, 24\)"):
        nn.MaxUnpool2d(2)(y, i)  # the default output (4, 6) cannot hold indices of a (5, 7) input
    with pytest.raises(ValueError, match="within a stride"):
        nn.MaxUnpool2d(2)(y, i, (9, 7))
    with pytest.raises(ValueError, match="shape of input"):
        nn.MaxUnpool2d(2)(y, i[:, :1])


def test_3d_layers_shapes_state_and_errors():
    conv = nn.Conv3d(4, 8, 3, stride=(1, 2, 2), padding=1, groups=2)
    assert tuple(conv.weight.shape) == (8, 2, 3, 3, 3) and list(conv.state_dict()) == ["weight", "bias"]
    bound = 1 / np.sqrt(2 * 27)
    assert np.abs(to_np(conv.weight)).max() <= bound
    assert tuple(conv(sx.randn(2, 4, 5, 9, 9)).shape) == (2, 8, 5, 5, 5)
    assert tuple(conv(sx.randn(4, 5, 9, 9)).shape) == (8, 5, 5, 5)
    t = nn.ConvTranspose3d(4, 6, 3, stride=2, padding=1, groups=2)
    assert tuple(t.weight.shape) == (4, 3, 3, 3, 3)
    assert tuple(t(sx.randn(1, 4, 3, 4, 5), output_size=(6, 8, 10)).shape) == (1, 6, 6, 8, 10)
    with pytest.raises(ValueError, match=r"\[Conv3d\] expected input \(N, 4, D, H, W\)"):
        conv(sx.randn(2, 3, 5, 9, 9))
    bn = nn.BatchNorm3d(3, momentum=0.5)
    x = RNG.standard_normal((4, 3, 2, 3, 2)) * 2 + 1
    y = to_np(bn(sx.tensor(x, dtype=sx.float32)))
    mean, var = x.mean((0, 2, 3, 4)), x.var((0, 2, 3, 4))
    np.testing.assert_allclose(y, (x - mean[:, None, None, None]) / np.sqrt(var[:, None, None, None] + 1e-5),
                               atol=1e-4)
    np.testing.assert_allclose(to_np(bn.running_var), 0.5 + 0.5 * x.var((0, 2, 3, 4), ddof=1), rtol=1e-5)
    with pytest.raises(ValueError, match=r"\[BatchNorm3d\]"):
        bn(sx.randn(4, 3, 2, 2))
    inorm = nn.InstanceNorm3d(3)
    y = to_np(inorm(sx.tensor(x[0], dtype=sx.float32)))
    m, v = x[0].mean((1, 2, 3), keepdims=True), x[0].var((1, 2, 3), keepdims=True)
    np.testing.assert_allclose(y, (x[0] - m) / np.sqrt(v + 1e-5), atol=1e-4)


def test_small_3d_cnn_learns():
    """A video-style classifier (Conv3d, BatchNorm3d, MaxPool3d, AdaptiveAvgPool3d) fits a toy task: is the
    bright blob in the first or the second half of the clip."""
    sx.manual_seed(0)
    model = nn.Sequential(nn.Conv3d(1, 6, 3, padding=1), nn.BatchNorm3d(6), nn.ReLU(), nn.MaxPool3d((1, 2, 2)),
                          nn.Conv3d(6, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool3d((2, 1, 1)), nn.Flatten(),
                          nn.Linear(16, 2))
    x = RNG.standard_normal((32, 1, 6, 8, 8)) * 0.3
    y = RNG.integers(0, 2, 32)
    for i, label in enumerate(y):
        x[i, 0, 3 * label:3 * label + 3, 2:6, 2:6] += 1.5
    xs, ys = sx.tensor(x, dtype=sx.float32), sx.tensor(y)
    params = list(model.parameters())
    loss_fn, losses = nn.CrossEntropyLoss(), []
    for _ in range(30):
        loss = loss_fn(model(xs), ys)
        losses.append(float(loss.item()))
        for p in params:
            p.grad = None
        loss.backward()
        with sx.no_grad():
            for p in params:
                p.copy_(p - p.grad * 0.1)
    assert losses[-1] < 0.3 * losses[0], losses
