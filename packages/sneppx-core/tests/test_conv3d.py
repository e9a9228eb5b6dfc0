"""The 3-d convolutions and poolings and the power-average poolings: forward against NumPy loops written from
the definitions (float64), gradients against float64 finite differences, errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import sneppx_core as sx
import sneppx_core.functional as F
from sneppx_core.testing import gradcheck

RNG = np.random.default_rng(31)


def t64(a, requires_grad=False):
    return sx.tensor(np.asarray(a, dtype=np.float64), dtype=sx.float64, requires_grad=requires_grad)


def np_conv3d(x, w, b, s, p, d, g):
    n, c = x.shape[:2]
    o, cg, *k = w.shape
    xp = np.pad(x, [(0, 0), (0, 0)] + [(v, v) for v in p])
    out = [(xp.shape[2 + i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(3)]
    y = np.zeros((n, o, *out))
    og = o // g
    for oc in range(o):
        grp = oc // og
        for i, j, m in itertools.product(*(range(v) for v in k)):
            z0, y0, x0 = i * d[0], j * d[1], m * d[2]
            win = xp[:, grp * cg:(grp + 1) * cg, z0:z0 + s[0] * (out[0] - 1) + 1:s[0],
                     y0:y0 + s[1] * (out[1] - 1) + 1:s[1], x0:x0 + s[2] * (out[2] - 1) + 1:s[2]]
            y[:, oc] += np.einsum("ncdhw,c->ndhw", win, w[oc, :, i, j, m])
    return y if b is None else y + b.reshape(-1, 1, 1, 1)


def np_conv_transpose3d(x, w, b, s, p, op, d, g):
    n, c = x.shape[:2]
    _, og, *k = w.shape
    cg = c // g
    full = [(x.shape[2 + i] - 1) * s[i] + d[i] * (k[i] - 1) + 1 + op[i] for i in range(3)]
    y = np.zeros((n, og * g, *full))
    for ci, z, r, q in itertools.product(range(c), *(range(v) for v in x.shape[2:])):
        grp = ci // cg
        for i, j, m in itertools.product(*(range(v) for v in k)):
            y[:, grp * og:(grp + 1) * og, z * s[0] + i * d[0], r * s[1] + j * d[1], q * s[2] + m * d[2]] += \
                x[:, ci, z, r, q, None] * w[ci, :, i, j, m]
    y = y[:, :, p[0]:full[0] - p[0], p[1]:full[1] - p[1], p[2]:full[2] - p[2]]
    return y if b is None else y + b.reshape(-1, 1, 1, 1)


CONVS = [  # (x shape, out channels, kernel, stride, padding, dilation, groups)
    ((2, 4, 5, 6, 7), 6, (3, 2, 3), (1, 1, 1), (1, 0, 1), (1, 1, 1), 1),
    ((1, 4, 7, 6, 7), 6, (3, 3, 2), (2, 1, 2), (1, 1, 0), (2, 1, 1), 2),
    ((2, 3, 4, 5, 5), 3, (1, 1, 1), (1, 1, 1), (0, 0, 0), (1, 1, 1), 3),
    ((1, 2, 6, 4, 5), 4, (2, 3, 3), (3, 2, 1), (0, 1, 1), (1, 1, 2), 1),
]


@pytest.mark.parametrize("xs, o, k, s, p, d, g", CONVS)
@pytest.mark.parametrize("bias", [True, False])
def test_conv3d_against_numpy(xs, o, k, s, p, d, g, bias):
    x, w = RNG.standard_normal(xs), RNG.standard_normal((o, xs[1] // g, *k))
    b = RNG.standard_normal(o) if bias else None
    got = F.conv3d(t64(x), t64(w), None if b is None else t64(b), s, p, d, g)
    np.testing.assert_allclose(got.numpy(), np_conv3d(x, w, b, s, p, d, g), atol=1e-12)
    got32 = F.conv3d(sx.tensor(x.astype(np.float32)), sx.tensor(w.astype(np.float32)), None, s, p, d, g)
    np.testing.assert_allclose(got32.numpy(), np_conv3d(x, w, None, s, p, d, g), atol=1e-4)


@pytest.mark.parametrize("xs, o, k, s, p, d, g", CONVS)
def test_conv_transpose3d_against_numpy(xs, o, k, s, p, d, g):
    x, w, b = RNG.standard_normal(xs), RNG.standard_normal((xs[1], o // g, *k)), RNG.standard_normal(o)
    for op in {(0, 0, 0), tuple(max(a, b_) - 1 for a, b_ in zip(s, d))}:
        got = F.conv_transpose3d(t64(x), t64(w), t64(b), s, p, op, g, d)
        np.testing.assert_allclose(got.numpy(), np_conv_transpose3d(x, w, b, s, p, op, d, g), atol=1e-12)


def test_conv_transpose3d_output_padding_past_the_padding():
    """output_padding 2 with padding 1 and stride 3: the last output depth lies past every tap (a zero plane)."""
    x, w = RNG.standard_normal((1, 2, 3, 3, 2)), RNG.standard_normal((2, 3, 2, 2, 2))
    got = F.conv_transpose3d(t64(x), t64(w), None, 3, 1, 2)
    want = np_conv_transpose3d(x, w, None, (3,) * 3, (1,) * 3, (2,) * 3, (1,) * 3, 1)
    np.testing.assert_allclose(got.numpy(), want, atol=1e-12)


def test_conv3d_is_the_adjoint_of_conv_transpose3d():
    x, w = RNG.standard_normal((2, 4, 5, 6, 5)), RNG.standard_normal((6, 2, 3, 2, 3))
    y = F.conv3d(t64(x), t64(w), None, (2, 1, 2), 1, (1, 2, 1), 2)
    u = RNG.standard_normal(tuple(y.shape))
    back = F.conv_transpose3d(t64(u), t64(w), None, (2, 1, 2), 1, (0, 0, 0), 2, (1, 2, 1))
    back = back.numpy()[:, :, :x.shape[2], :x.shape[3], :x.shape[4]]
    assert np.isclose((y.numpy() * u).sum(), (back * x[:, :, :back.shape[2], :back.shape[3], :back.shape[4]]).sum())


def test_conv3d_gradients_and_padding_modes():
    x, w, b = RNG.standard_normal((1, 4, 4, 3, 4)), RNG.standard_normal((2, 2, 2, 2, 3)), RNG.standard_normal(2)
    gradcheck(lambda x, w, b: F.conv3d(x, w, b, (2, 1, 1), (1, 1, 0), (1, 2, 1), 2), [t64(x), t64(w), t64(b)])
    gradcheck(lambda x, w, b: F.conv_transpose3d(x, w, b, 2, (0, 1, 1), 1, 1, 1),
              [t64(x), t64(RNG.standard_normal((4, 2, 2, 2, 2))), t64(b)])
    same = F.conv3d(t64(x), t64(w), None, padding="same", dilation=(2, 1, 1), groups=2)
    assert tuple(same.shape) == (1, 2, 4, 3, 4)
    ref = np_conv3d(np.pad(x, [(0, 0), (0, 0), (1, 1), (0, 1), (1, 1)]), w, None, (1,) * 3, (0,) * 3, (2, 1, 1), 2)
    np.testing.assert_allclose(same.numpy(), ref, atol=1e-12)
    unb = F.conv3d(t64(x[0]), t64(w), t64(b), 1, 1, groups=2)
    np.testing.assert_allclose(unb.numpy(), np_conv3d(x, w, b, (1,) * 3, (1,) * 3, (1,) * 3, 2)[0], atol=1e-12)


def test_conv3d_errors_name_the_op():
    x, w = t64(np.zeros((1, 4, 3, 3, 3))), t64(np.zeros((2, 4, 2, 2, 2)))
    with pytest.raises(ValueError, match=r"\[conv3d\].*groups=2"):
        F.conv3d(x, w, groups=2)
    with pytest.raises(ValueError, match=r"\[conv3d\] no output"):
        F.conv3d(x, t64(np.zeros((2, 4, 4, 2, 2))))
    with pytest.raises(ValueError, match=r"\[conv3d\] expected a 5-D weight"):
        F.conv3d(x, t64(np.zeros((2, 4, 2, 2))))
    with pytest.raises(ValueError, match=r"\[conv3d\] expected 4-D \(unbatched\) or 5-D"):
        F.conv3d(t64(np.zeros((4, 3, 3))), w)
    with pytest.raises(TypeError, match=r"\[conv3d\].*float32 and .*float64"):
        F.conv3d(sx.zeros((1, 4, 3, 3, 3)), w)
    with pytest.raises(ValueError, match=r"\[conv_transpose3d\].*output_padding"):
        F.conv_transpose3d(x, t64(np.zeros((4, 2, 2, 2, 2))), stride=2, output_padding=(0, 2, 0))


def np_pool3d(x, k, s, p, d, ceil, reduce):
    """Windows of (N, C, D, H, W) input with PyTorch's output sizes; reduce(window values, window starts/ends)."""
    sizes = []
    for i in range(3):
        span = x.shape[2 + i] + 2 * p[i] - d[i] * (k[i] - 1) - 1
        o = (span + (s[i] - 1 if ceil else 0)) // s[i] + 1
        if ceil and (o - 1) * s[i] >= x.shape[2 + i] + p[i]:
            o -= 1
        sizes.append(o)
    out = np.zeros(x.shape[:2] + tuple(sizes))
    for pos in itertools.product(*(range(v) for v in sizes)):
        out[(...,) + pos] = reduce(pos)
    return out


def np_max_pool3d(x, k, s, p, d, ceil):
    idx = {}

    def red(pos):
        vals, flat = [], []
        for tap in itertools.product(*(range(v) for v in k)):
            c = [pos[i] * s[i] - p[i] + tap[i] * d[i] for i in range(3)]
            if all(0 <= c[i] < x.shape[2 + i] for i in range(3)):
                vals.append(x[:, :, c[0], c[1], c[2]])
                flat.append((c[0] * x.shape[3] + c[1]) * x.shape[4] + c[2])
        vals = np.stack(vals, -1)
        idx[pos] = np.asarray(flat)[vals.argmax(-1)]
        return vals.max(-1)
    out = np_max_pool3d.out = np_pool3d(x, k, s, p, d, ceil, red)
    ind = np.zeros(out.shape, dtype=np.int64)
    for pos, v in idx.items():
        ind[(...,) + pos] = v
    return out, ind


def np_avg_pool3d(x, k, s, p, ceil, count_include_pad, divisor_override):
    def red(pos):
        total, lo, hi = 0.0, [], []
        for i in range(3):
            a = pos[i] * s[i] - p[i]
            e = min(a + k[i], x.shape[2 + i] + p[i])
            lo.append(a), hi.append(e)
        box = np.prod([h - a for a, h in zip(lo, hi)])
        clo = [max(a, 0) for a in lo]
        chi = [min(h, x.shape[2 + i]) for i, h in enumerate(hi)]
        total = x[:, :, clo[0]:chi[0], clo[1]:chi[1], clo[2]:chi[2]].sum((2, 3, 4))
        if divisor_override:
            return total / divisor_override
        return total / (box if count_include_pad else np.prod([h - a for a, h in zip(clo, chi)]))
    return np_pool3d(x, k, s, p, (1, 1, 1), ceil, red)


POOLS = [  # kernel, stride, padding, dilation, ceil_mode
    ((3, 2, 2), (1, 2, 2), (1, 1, 0), (1, 1, 1), False),
    ((2, 3, 2), (2, 2, 3), (1, 1, 1), (2, 1, 1), True),
    ((3, 3, 3), (2, 2, 2), (1, 1, 1), (1, 1, 1), True),
    ((1, 2, 3), (1, 1, 2), (0, 1, 0), (1, 2, 1), False),
]


@pytest.mark.parametrize("k, s, p, d, ceil", POOLS)
def test_max_pool3d_against_numpy(k, s, p, d, ceil):
    x = RNG.permutation(2 * 3 * 7 * 8 * 9).astype(np.float64).reshape(2, 3, 7, 8, 9)  # distinct: one argmax
    out, ind = F.max_pool3d(t64(x), k, s, p, d, ceil, True)
    want, want_ind = np_max_pool3d(x, k, s, p, d, ceil)
    np.testing.assert_array_equal(out.numpy(), want)
    np.testing.assert_array_equal(ind.numpy(), want_ind)
    assert ind.dtype == sx.int64
    same, _ = F.max_pool3d_with_indices(t64(x[0]), k, s, p, d, ceil)
    np.testing.assert_array_equal(same.numpy(), want[0])
    if d != (1, 1, 1):
        return
    back = F.max_unpool3d(out, ind, k, s, p, output_size=x.shape[2:])
    kept = np.zeros_like(x).reshape(2, 3, -1)
    np.put_along_axis(kept, want_ind.reshape(2, 3, -1), want.reshape(2, 3, -1), -1)
    np.testing.assert_array_equal(back.numpy(), kept.reshape(x.shape))


def test_max_pool3d_ties_pick_the_first_in_scan_order_and_nan_propagates():
    x = np.zeros((1, 1, 2, 2, 2))
    _, ind = F.max_pool3d(t64(x), 2, return_indices=True)
    assert int(ind.item()) == 0
    x[0, 0, 1, 0, 1] = np.nan
    assert np.isnan(F.max_pool3d(t64(x), 2).item())


@pytest.mark.parametrize("k, s, p, d, ceil", POOLS)
@pytest.mark.parametrize("count_include_pad, divisor_override", [(True, None), (False, None), (True, 5)])
def test_avg_pool3d_against_numpy(k, s, p, d, ceil, count_include_pad, divisor_override):
    x = RNG.standard_normal((2, 3, 7, 8, 9))
    got = F.avg_pool3d(t64(x), k, s, p, ceil, count_include_pad, divisor_override)
    np.testing.assert_allclose(got.numpy(), np_avg_pool3d(x, k, s, p, ceil, count_include_pad, divisor_override),
                               atol=1e-12)


def _adaptive_windows(size, out):
    return [(i * size // out, -(-(i + 1) * size // out)) for i in range(out)]


@pytest.mark.parametrize("output_size", [(3, 4, 5), 2, (None, 3, 4), (7, 8, 9), (5, 3, 6), 1])
def test_adaptive_pools_3d_against_numpy(output_size):
    x = RNG.permutation(2 * 3 * 7 * 8 * 9).astype(np.float64).reshape(2, 3, 7, 8, 9)
    size = output_size if isinstance(output_size, tuple) else (output_size,) * 3
    size = tuple(x.shape[2 + i] if v is None else v for i, v in enumerate(size))
    avg, mx, ind = np.zeros((2, 3) + size), np.zeros((2, 3) + size), np.zeros((2, 3) + size, dtype=np.int64)
    wins = [_adaptive_windows(x.shape[2 + i], size[i]) for i in range(3)]
    for pos in itertools.product(*(range(v) for v in size)):
        (a, b), (c, d), (e, f) = (wins[i][pos[i]] for i in range(3))
        box = x[:, :, a:b, c:d, e:f]
        avg[(...,) + pos] = box.mean((2, 3, 4))
        mx[(...,) + pos] = box.max((2, 3, 4))
        z, y, q = np.unravel_index(box.reshape(2, 3, -1).argmax(-1), box.shape[2:])
        ind[(...,) + pos] = ((z + a) * 8 + y + c) * 9 + q + e
    np.testing.assert_allclose(F.adaptive_avg_pool3d(t64(x), output_size).numpy(), avg, atol=1e-12)
    out, got_ind = F.adaptive_max_pool3d(t64(x), output_size, return_indices=True)
    np.testing.assert_array_equal(out.numpy(), mx)
    np.testing.assert_array_equal(got_ind.numpy(), ind)
    np.testing.assert_array_equal(F.adaptive_max_pool3d_with_indices(t64(x[1]), output_size)[1].numpy(), ind[1])


@pytest.mark.parametrize("p", [1.0, 2.0, 3.5])
def test_lp_pools_against_numpy(p):
    x = np.abs(RNG.standard_normal((2, 3, 5, 6, 7))) + 0.1
    got = F.lp_pool3d(t64(x), p, (2, 3, 2), (1, 2, 2))
    want = np_avg_pool3d(x ** p, (2, 3, 2), (1, 2, 2), (0,) * 3, False, True, 1) ** (1 / p)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    got2 = F.lp_pool2d(t64(x[:, :, 0]), p, 3, 2, ceil_mode=True)  # the last row's windows clipped to 2 of 3 rows
    win = x[:, :, 0] ** p
    want2 = np.stack([np.stack([win[:, :, i:i + 3, j:j + 3].sum((2, 3)) * (1.5 if i == 4 else 1) for j in (0, 2, 4)],
                               -1) for i in (0, 2, 4)], -2) ** (1 / p)
    np.testing.assert_allclose(got2.numpy(), want2, rtol=1e-12)
    got1 = F.lp_pool1d(t64(x[:, :, 0, 0]), p, 3)
    want1 = np.stack([(x[:, :, 0, 0, i:i + 3] ** p).sum(-1) for i in (0, 3)], -1) ** (1 / p)
    np.testing.assert_allclose(got1.numpy(), want1, rtol=1e-12)


def test_pool3d_gradients():
    x = RNG.permutation(3 * 4 * 5 * 5).astype(np.float64).reshape(1, 3, 4, 5, 5) / 10  # distinct values
    gradcheck(lambda x: F.max_pool3d(x, (2, 3, 2), (1, 2, 2), 1, (1, 1, 2), ceil_mode=True), [t64(x)])
    gradcheck(lambda x: F.avg_pool3d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False), [t64(x)])
    gradcheck(lambda x: F.avg_pool3d(x, 2, 1, divisor_override=3), [t64(x)])
    gradcheck(lambda x: F.adaptive_avg_pool3d(x, (3, 2, 4)), [t64(x)])
    gradcheck(lambda x: F.adaptive_max_pool3d(x, (3, 4, 2)), [t64(x)])
    gradcheck(lambda x: F.lp_pool3d(x + 1, 2, 2), [t64(x)])
    ind = F.max_pool3d(t64(x), 2, return_indices=True)[1]
    seeds = t64(RNG.standard_normal(tuple(ind.shape)))
    gradcheck(lambda y: F.max_unpool3d(y, ind, 2, output_size=x.shape[2:]), [seeds])


def test_pool3d_errors_name_the_op():
    x = t64(np.zeros((1, 2, 4, 4, 4)))
    with pytest.raises(ValueError, match=r"\[max_pool3d\].*padding \(2, 0, 0\) at most half"):
        F.max_pool3d(x, 2, padding=(2, 0, 0))
    with pytest.raises(ValueError, match=r"\[avg_pool3d\] expected 4-D"):
        F.avg_pool3d(t64(np.zeros((4, 4, 4))), 2)
    with pytest.raises(ValueError, match=r"\[adaptive_max_pool3d\] output_size"):
        F.adaptive_max_pool3d(x, (2, 2))
    with pytest.raises(ValueError, match=r"\[max_unpool3d\] indices must lie"):
        F.max_unpool3d(t64(np.ones((1, 2, 2, 2, 2))), sx.full((1, 2, 2, 2, 2), 64, dtype=sx.int64), 2)
    with pytest.raises(ValueError, match=r"\[lp_pool3d\] norm_type"):
        F.lp_pool3d(x, 0, 2)
