"""PyTorch's top-level nn forms (``_torch_nn_forms``): threshold, triplet_margin_loss, rms_norm, norm_except_dim,
embedding_renorm_, convolution, grid_sampler and the RNN cells, against NumPy, float64 finite differences, and
torch's top-level functions called with the same positional arguments."""

from __future__ import annotations

import numpy as np
import pytest

import sneppx_core as sx
from opcheck import matches_torch
from sneppx_core.testing import gradcheck

RNG = np.random.default_rng(31)


def _np(t):
    return t.detach().numpy()


def _t(a, grad=False):
    return sx.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


def _seed(shape):
    return np.random.default_rng(7).standard_normal(shape)


def _tol():
    return dict(rtol=1e-10, atol=1e-12, grad_rtol=1e-8, grad_atol=1e-10)


# ---------------------------------------------------------------- simple forms
def test_threshold_and_inplace():
    a = RNG.standard_normal(8)
    np.testing.assert_array_equal(_np(sx.threshold(_t(a), 0.1, -5.0)), np.where(a <= 0.1, -5.0, a))
    x = _t(a)
    assert sx.threshold_(x, 0.0, 2.0) is x
    np.testing.assert_array_equal(_np(x), np.where(a <= 0.0, 2.0, a))
    with pytest.raises(TypeError, match=r"\[threshold\] expected input to be a Tensor"):
        sx.threshold([1.0], 0.0, 0.0)


def test_triplet_margin_loss_reference():
    a, p, n = (RNG.standard_normal((4, 5)) for _ in range(3))
    d = np.linalg.norm(a - p + 1e-6, axis=1) - np.linalg.norm(a - n + 1e-6, axis=1)
    ref = np.maximum(d + 1.0, 0)
    np.testing.assert_allclose(_np(sx.triplet_margin_loss(_t(a), _t(p), _t(n), 1.0, 2, 1e-6, False, 0)), ref,
                               rtol=1e-10)
    assert sx.triplet_margin_loss(_t(a), _t(p), _t(n)).item() == pytest.approx(ref.mean(), rel=1e-10)
    with pytest.raises(TypeError, match=r"\[triplet_margin_loss\] reduction must be the int"):
        sx.triplet_margin_loss(_t(a), _t(p), _t(n), reduction="mean")


def test_rms_norm_adjoint_get_device():
    a, w = RNG.standard_normal((3, 4)), RNG.standard_normal(4)
    ref = a / np.sqrt((a ** 2).mean(-1, keepdims=True) + 1e-5) * w
    np.testing.assert_allclose(_np(sx.rms_norm(_t(a), [4], _t(w), 1e-5)), ref, rtol=1e-10)
    gradcheck(lambda x, y: sx.rms_norm(x, (4,), y, 1e-5), [_t(a, True), _t(w, True)])
    np.testing.assert_array_equal(_np(sx.adjoint(_t(RNG.standard_normal((2, 3, 4))))).shape, (2, 4, 3))
    assert sx.get_device(sx.ones(2)) == -1
    with pytest.raises(TypeError, match=r"\[get_device\] expected input to be a Tensor"):
        sx.get_device(3)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("p", [2, 1, 3.5])
def test_norm_except_dim(dim, p):
    a = RNG.standard_normal((3, 4, 2))
    if dim == -1:
        ref = np.sum(np.abs(a) ** p) ** (1 / p)
    else:
        axes = tuple(d for d in range(3) if d != dim)
        ref = np.sum(np.abs(a) ** p, axis=axes, keepdims=True) ** (1 / p)
    out = sx.norm_except_dim(_t(a), p, dim)
    assert tuple(out.shape) == np.shape(ref)
    np.testing.assert_allclose(_np(out), ref, rtol=1e-10)
    gradcheck(lambda v: sx.norm_except_dim(v, p, dim), [_t(a, True)])


def test_norm_except_dim_errors():
    with pytest.raises(IndexError, match=r"\[norm_except_dim\] dim 3 is out of range"):
        sx.norm_except_dim(sx.ones((2, 2, 2)), 2, 3)


def test_embedding_renorm_():
    w = RNG.standard_normal((5, 3)) * 3
    ids = np.array([0, 2, 2, 4])
    ref = w.copy()
    for i in np.unique(ids):
        n = np.linalg.norm(ref[i])
        if n > 1.5:
            ref[i] *= 1.5 / (n + 1e-7)
    x = _t(w)
    assert sx.embedding_renorm_(x, sx.tensor(ids), 1.5, 2.0) is x
    np.testing.assert_allclose(_np(x), ref, rtol=1e-12)
    with pytest.raises(TypeError, match=r"\[embedding_renorm_\] indices must be an integer tensor"):
        sx.embedding_renorm_(x, sx.tensor([0.0]), 1.0, 2.0)
    with pytest.raises(ValueError, match=r"\[embedding_renorm_\] input must be 2-d"):
        sx.embedding_renorm_(sx.ones(3), sx.tensor([0]), 1.0, 2.0)


# ---------------------------------------------------------------- convolution and grid_sampler
def test_convolution_dispatches_by_weight_dims():
    x, w, b = RNG.standard_normal((2, 4, 7)), RNG.standard_normal((6, 2, 3)), RNG.standard_normal(6)
    got = sx.convolution(_t(x), _t(w), _t(b), [2], [1], [1], False, [0], 2)
    np.testing.assert_allclose(_np(got), _np(sx.conv1d(_t(x), _t(w), _t(b), 2, 1, 1, 2)), rtol=1e-12)
    wt = RNG.standard_normal((4, 3, 3, 3))
    x2 = RNG.standard_normal((1, 4, 5, 5))
    got = sx.convolution(_t(x2), _t(wt), None, [2, 2], [1, 1], [1, 1], True, [1, 1], 1)
    want = sx.functional.conv_transpose2d(_t(x2), _t(wt), None, 2, 1, 1, 1, 1)
    np.testing.assert_allclose(_np(got), _np(want), rtol=1e-12)
    gradcheck(lambda a, k: sx.convolution(a, k, None, [1], [0], [1], False, [0], 1),
              [_t(RNG.standard_normal((1, 2, 5)), True), _t(RNG.standard_normal((3, 2, 2)), True)])
    with pytest.raises(ValueError, match=r"\[convolution\] weight must have 3, 4 or 5 dims"):
        sx.convolution(_t(x), _t(np.ones((2, 2))), None, [1], [0], [1], False, [0], 1)


def test_grid_sampler_modes():
    x, g = RNG.standard_normal((1, 2, 4, 5)), RNG.uniform(-1.2, 1.2, (1, 3, 3, 2))
    for mi, mode in enumerate(("bilinear", "nearest", "bicubic")):
        for pi, pad in enumerate(("zeros", "border", "reflection")):
            got = sx.grid_sampler(_t(x), _t(g), mi, pi, False)
            want = sx.functional.grid_sample(_t(x), _t(g), mode, pad, False)
            np.testing.assert_array_equal(_np(got), _np(want))
    with pytest.raises(ValueError, match=r"\[grid_sampler\] interpolation_mode must be 0, 1 or 2"):
        sx.grid_sampler(_t(x), _t(g), 3, 0, False)
    with pytest.raises(ValueError, match=r"\[grid_sampler\] padding_mode must be 0, 1 or 2"):
        sx.grid_sampler(_t(x), _t(g), 0, "zeros", False)


# ---------------------------------------------------------------- RNN cells
B, N_IN, H = 3, 4, 5


def _cell_args(gates, bias=True):
    args = [RNG.standard_normal((B, N_IN)), RNG.standard_normal((B, H)), RNG.standard_normal((gates * H, N_IN)) * 0.5,
            RNG.standard_normal((gates * H, H)) * 0.5]
    return args + ([RNG.standard_normal(gates * H), RNG.standard_normal(gates * H)] if bias else [])


def test_rnn_cells_reference():
    x, h, wi, wh, bi, bh = _cell_args(1)
    pre = x @ wi.T + bi + h @ wh.T + bh
    np.testing.assert_allclose(_np(sx.rnn_tanh_cell(*map(_t, (x, h, wi, wh, bi, bh)))), np.tanh(pre), rtol=1e-10)
    np.testing.assert_allclose(_np(sx.rnn_relu_cell(*map(_t, (x, h, wi, wh)))),
                               np.maximum(x @ wi.T + h @ wh.T, 0), rtol=1e-10)
    x, h, wi, wh, bi, bh = _cell_args(4)
    c = RNG.standard_normal((B, H))
    gi, gf, gg, go = np.split(x @ wi.T + bi + h @ wh.T + bh, 4, axis=1)
    c2 = _sigmoid(gf) * c + _sigmoid(gi) * np.tanh(gg)
    hn, cn = sx.lstm_cell(_t(x), (_t(h), _t(c)), _t(wi), _t(wh), _t(bi), _t(bh))
    np.testing.assert_allclose(_np(cn), c2, rtol=1e-10)
    np.testing.assert_allclose(_np(hn), _sigmoid(go) * np.tanh(c2), rtol=1e-10)
    x, h, wi, wh, bi, bh = _cell_args(3)
    xr, xz, xn = np.split(x @ wi.T + bi, 3, axis=1)
    hr, hz, hn_ = np.split(h @ wh.T + bh, 3, axis=1)
    r, z = _sigmoid(xr + hr), _sigmoid(xz + hz)
    ref = (1 - z) * np.tanh(xn + r * hn_) + z * h
    np.testing.assert_allclose(_np(sx.gru_cell(*map(_t, (x, h, wi, wh, bi, bh)))), ref, rtol=1e-10)


@pytest.mark.parametrize("name,gates", [("rnn_tanh_cell", 1), ("rnn_relu_cell", 1), ("gru_cell", 3),
                                        ("lstm_cell", 4)])
def test_rnn_cells_gradcheck(name, gates):
    args = [_t(a, True) for a in _cell_args(gates)]
    if name == "lstm_cell":
        c = _t(RNG.standard_normal((B, H)), True)
        gradcheck(lambda x, h, c, *w: sx.cat([o.reshape(-1) for o in sx.lstm_cell(x, (h, c), *w)]),
                  [args[0], args[1], c, *args[2:]])
    else:
        gradcheck(getattr(sx, name), args)


def test_rnn_cell_errors():
    x, h, wi, wh = map(_t, _cell_args(3, bias=False))
    with pytest.raises(ValueError, match=r"\[gru_cell\] expected input \(B, I\), hx \(B, H\), w_ih \(3\*H, I\)"):
        sx.gru_cell(x, h, wh, wh)
    with pytest.raises(TypeError, match=r"\[lstm_cell\] hx must be a pair"):
        sx.lstm_cell(x, h, wi, wh)
    with pytest.raises(TypeError, match=r"\[rnn_tanh_cell\] expected hx to be a Tensor"):
        sx.rnn_tanh_cell(x, None, wi, wh)


# ---------------------------------------------------------------- parity
@pytest.mark.parity
def test_simple_forms_match_torch(torch):
    a, p, n = (RNG.standard_normal((4, 5)) for _ in range(3))
    for red in (0, 1, 2):
        matches_torch(torch, lambda lib, x, y, z: lib.triplet_margin_loss(x, y, z, 0.5, 1, 1e-6, True, red),
                      [a, p, n], _seed, name=f"triplet {red}", **_tol())
    matches_torch(torch, lambda lib, x: lib.threshold(x, 0.2, -1.0), [a], _seed, name="threshold", **_tol())
    matches_torch(torch, lambda lib, x, w: lib.rms_norm(x, [5], w, 1e-6), [a, RNG.standard_normal(5)], _seed,
                  name="rms_norm", **_tol())
    matches_torch(torch, lambda lib, x: lib.rms_norm(x, [4, 5]), [a], _seed, name="rms_norm eps None", **_tol())
    v = RNG.standard_normal((3, 4, 2))
    for dim in (0, 1, 2, -1):
        matches_torch(torch, lambda lib, x: lib.norm_except_dim(x, 3, dim), [v], _seed, name=f"ned {dim}", **_tol())
    matches_torch(torch, lambda lib, x: lib.adjoint(x), [v], _seed, name="adjoint", **_tol())
    x, tx = sx.tensor(a), torch.tensor(a)
    sx.threshold_(x, 0.0, 3.0)
    torch.threshold_(tx, 0.0, 3.0)
    np.testing.assert_array_equal(_np(x), tx.numpy())
    w = RNG.standard_normal((6, 3)) * 2
    x, tx = sx.tensor(w), torch.tensor(w)
    sx.embedding_renorm_(x, sx.tensor([1, 3, 3, 5]), 1.0, 1.0)
    torch.embedding_renorm_(tx, torch.tensor([1, 3, 3, 5]), 1.0, 1.0)
    np.testing.assert_allclose(_np(x), tx.numpy(), rtol=1e-12)
    assert sx.get_device(sx.ones(1)) == torch.get_device(torch.ones(1))


@pytest.mark.parity
def test_convolution_and_grid_sampler_match_torch(torch):
    cases = [((2, 4, 7), (6, 2, 3), [2], [1], [1], False, [0], 2),
             ((1, 2, 5, 6), (3, 2, 2, 3), [1, 2], [0, 1], [2, 1], False, [0, 0], 1),
             ((1, 2, 3, 4, 4), (2, 2, 2, 2, 2), [1, 1, 1], [1, 0, 0], [1, 1, 1], False, [0, 0, 0], 1),
             ((1, 4, 3), (4, 3, 3), [2], [1], [1], True, [1], 1),
             ((1, 4, 3, 3), (4, 1, 2, 2), [2, 2], [0, 1], [1, 1], True, [1, 0], 2),
             ((1, 2, 2, 2, 3), (2, 2, 2, 2, 2), [2, 1, 1], [0, 0, 1], [1, 1, 1], True, [1, 0, 0], 1)]
    for xs, ws, *rest in cases:
        b = RNG.standard_normal(ws[1] * rest[-1] if rest[3] else ws[0])
        matches_torch(torch, lambda lib, x, w, bb: lib.convolution(x, w, bb, *rest),
                      [RNG.standard_normal(xs), RNG.standard_normal(ws), b], _seed, name=str(xs), **_tol())
    x, g = RNG.standard_normal((1, 2, 4, 5)), RNG.uniform(-1.2, 1.2, (1, 3, 3, 2))
    for mi in (0, 1, 2):
        for pi in (0, 1, 2):
            for ac in (False, True):
                if mi == 1:  # nearest: torch gives the grid a zero gradient, SneppX none; compare the input's
                    fn = lambda lib, a: lib.grid_sampler(a, lib.tensor(g), mi, pi, ac)  # noqa: E731
                else:
                    fn = lambda lib, a, b: lib.grid_sampler(a, b, mi, pi, ac)  # noqa: E731
                matches_torch(torch, fn, [x, g][:1 if mi == 1 else 2], _seed, name=f"grid {mi} {pi} {ac}",
                              rtol=1e-10, atol=1e-12, grad_rtol=1e-7, grad_atol=1e-9)


@pytest.mark.parity
@pytest.mark.parametrize("name,gates", [("rnn_tanh_cell", 1), ("rnn_relu_cell", 1), ("gru_cell", 3)])
@pytest.mark.parametrize("bias", [True, False])
def test_cells_match_torch(torch, name, gates, bias):
    matches_torch(torch, lambda lib, *a: getattr(lib, name)(*a), _cell_args(gates, bias), _seed, name=name, **_tol())


@pytest.mark.parity
def test_lstm_cell_matches_torch(torch):
    x, h, wi, wh, bi, bh = _cell_args(4)
    c = RNG.standard_normal((B, H))
    matches_torch(torch, lambda lib, *a: lib.cat(lib.lstm_cell(a[0], (a[1], a[2]), *a[3:]), 1),
                  [x, h, c, wi, wh, bi, bh], _seed, name="lstm_cell", **_tol())
    matches_torch(torch, lambda lib, *a: lib.cat(lib.lstm_cell(a[0], [a[1], a[2]], a[3], a[4]), 1),
                  [x, h, c, wi, wh], _seed, name="lstm_cell no bias", **_tol())
