"""PyTorch's top-level forms of methods and functional (``_torch_aliases``): in-place functions return and modify
their input, the neural-network functions agree with torch's top-level ones called with the same positional
arguments, and gradient/histogram/chain_matmul/frobenius_norm/promote_types/can_cast against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import sneppx_core as sx
from opcheck import matches_torch
from sneppx_core import _torch_aliases

RNG = np.random.default_rng(11)
DTYPES = ["bool_", "uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


def _np(t):
    return t.detach().numpy()


def _seed(shape):
    return np.random.default_rng(5).standard_normal(shape)


# ---------------------------------------------------------------- registration
def test_every_name_is_exported_once():
    for name in _torch_aliases.FUNCTIONS:
        assert hasattr(sx, name), name
        assert name in sx.__all__, name
        assert getattr(sx, name).__doc__, name
    for name in _torch_aliases.INPLACE:
        assert hasattr(sx.Tensor, name), name
    assert sx.__all__.count("batch_norm") == 1 and sx.__all__.count("exp_") == 1
    assert not hasattr(sx.Tensor, "constant_pad_nd")  # Tensor.histogram exists, as in PyTorch (_tensor_misc)


def test_existing_names_are_kept():
    assert sx.prelu is not _torch_aliases.FUNCTIONS.get("prelu")
    assert "set_default_dtype" in sx.__all__ and sx.set_default_dtype.__doc__


# ---------------------------------------------------------------- in-place forms
_UNIT = {"acos_", "arccos_", "asin_", "arcsin_", "atanh_", "arctanh_", "logit_", "erfc_"}
_POS = {"log_", "log10_", "log1p_", "log2_", "sqrt_", "rsqrt_", "acosh_", "arccosh_", "reciprocal_"}
_ARGS = {"clamp_": (-0.5, 0.5), "clip_": (-0.5, 0.5), "clamp_max_": (0.3,), "clamp_min_": (-0.3,), "fill_": (2.5,),
         "celu_": (0.7,)}


def _inplace_input(name):
    a = RNG.uniform(-0.9, 0.9, (3, 4))
    if name in _POS:
        a = np.abs(a) + (1.1 if name in ("acosh_", "arccosh_") else 0.1)
    if name in ("logit_",):
        a = np.abs(a) * 0.9 + 0.05
    return a


@pytest.mark.parametrize("name", [n for n in _torch_aliases.INPLACE
                                  if n not in ("addmv_", "index_put_", "xlogy_", "gcd_", "lcm_", "ldexp_")])
def test_inplace_form_returns_and_modifies_input(name):
    a = _inplace_input(name)
    x = sx.tensor(a)
    args = _ARGS.get(name, ())
    base = name[:-1]
    if base == "detach":
        expected = a
    elif base == "zero":
        expected = np.zeros_like(a)
    elif base == "fill":
        expected = np.full_like(a, 2.5)
    else:
        expected = _np(getattr(sx.tensor(a), base)(*args))
    out = getattr(sx, name)(x, *args)
    assert out is x
    np.testing.assert_allclose(_np(x), expected, rtol=1e-6, atol=1e-7, err_msg=name)


def test_inplace_forms_with_tensor_arguments():
    m, v, c = sx.tensor(RNG.standard_normal((3, 4))), sx.tensor(RNG.standard_normal(4)), sx.tensor(RNG.random(3))
    expected = _np(sx.addmv(c, m, v, beta=0.5, alpha=2.0))
    assert sx.addmv_(c, m, v, beta=0.5, alpha=2.0) is c
    np.testing.assert_allclose(_np(c), expected, rtol=1e-6)
    x, y = sx.tensor(RNG.random(5) + 0.1), sx.tensor(RNG.random(5) + 0.1)
    expected = _np(sx.xlogy(x, y))
    assert sx.xlogy_(x, y) is x
    np.testing.assert_allclose(_np(x), expected, rtol=1e-6)
    z = sx.zeros(5)
    assert sx.index_put_(z, (sx.tensor([1, 3]),), sx.tensor([2.0, 4.0]), True) is z
    np.testing.assert_array_equal(_np(z), [0, 2, 0, 4, 0])
    x = sx.tensor([-1.5, 0.2])
    assert sx.clamp_(x, min=-1.0) is x and _np(x).tolist() == pytest.approx([-1.0, 0.2])


def test_inplace_form_errors():
    with pytest.raises(TypeError, match=r"\[exp_\] expected input to be a Tensor, got list"):
        sx.exp_([1.0])


@pytest.mark.parity
def test_inplace_forms_match_torch(torch):
    for name in ("exp_", "sigmoid_", "tanh_", "square_", "frac_", "nan_to_num_", "sinc_", "deg2rad_"):
        a = _inplace_input(name)
        x, tx = sx.tensor(a), torch.tensor(a)
        assert getattr(sx, name)(x) is x and getattr(torch, name)(tx) is tx
        np.testing.assert_allclose(_np(x), tx.numpy(), rtol=1e-6, atol=1e-12, err_msg=name)


# ---------------------------------------------------------------- predicates and dtype helpers
def test_predicates():
    f, i, b = sx.ones((2, 3)), sx.ones(3, dtype=sx.int64), sx.ones(1, dtype=sx.bool_)
    assert sx.is_floating_point(f) and not sx.is_floating_point(i)
    assert not sx.is_complex(f)
    assert sx.is_nonzero(sx.tensor([2.0])) and not sx.is_nonzero(sx.tensor(0))
    assert sx.is_same_size(f, sx.zeros((2, 3))) and not sx.is_same_size(f, i)
    assert sx.is_signed(i) and not sx.is_signed(b) and not sx.is_signed(sx.ones(1, dtype=sx.uint8))
    assert not sx.is_inference(f)
    assert sx.is_storage(f) is False and sx.is_storage([1]) is False
    assert sx.get_default_dtype() == sx.float32 == sx.ones(1).dtype
    assert sx.positive(f) is f
    with pytest.raises(TypeError, match=r"\[positive\].*bool"):
        sx.positive(b)
    with pytest.raises(TypeError, match=r"\[is_floating_point\]"):
        sx.is_floating_point(1.0)


def test_promote_types_and_can_cast_match_numpy():
    for a in DTYPES:
        for b in DTYPES:
            da, db = getattr(sx, a), getattr(sx, b)
            na, nb = np.dtype(a.rstrip("_")) if a != "bfloat16" else None, None
            if a != "bfloat16" and b != "bfloat16":
                na, nb = np.dtype(a.rstrip("_")), np.dtype(b.rstrip("_"))
                expected = np.promote_types(na, nb)
                # numpy widens integer + float16 and int64 + uint8 beyond PyTorch's category rules
                if na.kind == nb.kind or (na.kind in "iu" and nb.kind in "iu" and "int64" not in (a, b)):
                    assert str(sx.promote_types(da, db)).endswith(str(expected)), (a, b)
                # numpy's 'same_kind' only differs on signed -> unsigned, which PyTorch allows
                if not (na.kind == "i" and nb.kind == "u"):
                    assert sx.can_cast(da, db) == np.can_cast(na, nb, "same_kind"), (a, b)
    assert sx.promote_types(sx.float16, sx.bfloat16) == sx.float32
    assert sx.can_cast(sx.int64, sx.uint8) and not sx.can_cast(sx.float32, sx.int64)
    with pytest.raises(TypeError, match=r"\[promote_types\] expected type2 to be a dtype"):
        sx.promote_types(sx.float32, "float64")


@pytest.mark.parity
def test_promote_types_and_can_cast_match_torch(torch):
    names = {"bool_": "bool"}
    for a in DTYPES:
        for b in DTYPES:
            ta, tb = getattr(torch, names.get(a, a)), getattr(torch, names.get(b, b))
            got = sx.promote_types(getattr(sx, a), getattr(sx, b))
            assert str(got).split(".")[-1] == str(torch.promote_types(ta, tb)).split(".")[-1], (a, b)
            assert sx.can_cast(getattr(sx, a), getattr(sx, b)) == torch.can_cast(ta, tb), (a, b)


def test_fill():
    x = sx.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    out = sx.fill(x, 7.5)
    assert out is not x and out.shape == x.shape and np.all(_np(out) == 7.5) and np.all(_np(x)[0] == [1, 2])
    v = sx.tensor(3.0, requires_grad=True)
    (sx.fill(x, v) * sx.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    assert v.grad.item() == 10.0 and not np.any(_np(x.grad))
    assert sx.fill(sx.ones(3, dtype=sx.int64), 2.7).dtype == sx.int64
    with pytest.raises(ValueError, match=r"\[fill\].*0-d"):
        sx.fill(x, sx.ones(1))


# ---------------------------------------------------------------- chain_matmul, frobenius_norm
def test_chain_matmul_matches_multi_dot():
    shapes = [(3, 7), (7, 2), (2, 9), (9, 4)]
    arrays = [RNG.standard_normal(s) for s in shapes]
    got = sx.chain_matmul(*[sx.tensor(a) for a in arrays])
    np.testing.assert_allclose(_np(got), np.linalg.multi_dot(arrays), rtol=1e-10)
    one = sx.tensor(arrays[0])
    single = sx.chain_matmul(one)
    assert single is not one and np.array_equal(_np(single), arrays[0])
    out = sx.empty((3, 2), dtype=sx.float64)
    assert sx.chain_matmul(sx.tensor(arrays[0]), sx.tensor(arrays[1]), out=out) is out
    np.testing.assert_allclose(_np(out), arrays[0] @ arrays[1], rtol=1e-12)
    with pytest.raises(ValueError, match=r"\[chain_matmul\] matrices 0 and 1 cannot be multiplied"):
        sx.chain_matmul(sx.ones((2, 3)), sx.ones((2, 3)))
    with pytest.raises(ValueError, match=r"\[chain_matmul\] matrix 0 has shape \(3,\)"):
        sx.chain_matmul(sx.ones(3))
    with pytest.raises(ValueError, match="one or more"):
        sx.chain_matmul()


def test_frobenius_norm_matches_numpy():
    a = RNG.standard_normal((3, 4, 5))
    np.testing.assert_allclose(_np(sx.frobenius_norm(sx.tensor(a), (0, 2))),
                               np.linalg.norm(a.transpose(1, 0, 2).reshape(4, -1), axis=1), rtol=1e-12)
    np.testing.assert_allclose(_np(sx.frobenius_norm(sx.tensor(a), 1, True)),
                               np.linalg.norm(a, axis=1, keepdims=True), rtol=1e-12)
    with pytest.raises(ValueError, match=r"\[frobenius_norm\]"):
        sx.frobenius_norm(sx.tensor(a), (0, 1, 2))


@pytest.mark.parity
@pytest.mark.filterwarnings("ignore:at::frobenius_norm is deprecated")
def test_chain_matmul_and_frobenius_norm_match_torch(torch):
    arrays = [RNG.standard_normal(s) for s in [(3, 5), (5, 2), (2, 4)]]
    with pytest.warns(UserWarning):
        matches_torch(torch, lambda lib, a, b, c: lib.chain_matmul(a, b, c), arrays, _seed,
                      rtol=1e-12, atol=1e-12, grad_rtol=1e-12, grad_atol=1e-12, name="chain_matmul")
    matches_torch(torch, lambda lib, a: lib.frobenius_norm(a, (0, 1), True), [RNG.standard_normal((3, 4, 2))], _seed,
                  rtol=1e-12, atol=1e-12, grad_rtol=1e-12, grad_atol=1e-12, name="frobenius_norm")


# ---------------------------------------------------------------- gradient
@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_matches_numpy(edge_order):
    a = RNG.standard_normal((5, 6, 4))
    x = sx.tensor(a)
    for got, ref in zip(sx.gradient(x, edge_order=edge_order), np.gradient(a, edge_order=edge_order)):
        np.testing.assert_allclose(_np(got), ref, rtol=1e-12, atol=1e-12)
    got = sx.gradient(x, spacing=[0.5, 2.0], dim=[0, 2], edge_order=edge_order)
    ref = np.gradient(a, 0.5, 2.0, axis=(0, 2), edge_order=edge_order)
    assert len(got) == 2
    for g, r in zip(got, ref):
        np.testing.assert_allclose(_np(g), r, rtol=1e-12, atol=1e-12)
    coords = np.array([0.0, 0.3, 1.1, 1.5, 2.8, 3.0])
    (got,) = sx.gradient(x, spacing=[sx.tensor(coords)], dim=1, edge_order=edge_order)
    np.testing.assert_allclose(_np(got), np.gradient(a, coords, axis=1, edge_order=edge_order), rtol=1e-10)
    (got,) = sx.gradient(x, spacing=3.0, dim=-1, edge_order=edge_order)
    np.testing.assert_allclose(_np(got), np.gradient(a, 3.0, axis=-1, edge_order=edge_order), rtol=1e-12)


def test_gradient_small_and_integer_inputs_and_errors():
    (g,) = sx.gradient(sx.tensor([1.0, 4.0]))
    np.testing.assert_allclose(_np(g), [3.0, 3.0])
    (g,) = sx.gradient(sx.arange(5) ** 2)
    assert g.dtype == sx.float32
    np.testing.assert_allclose(_np(g), np.gradient(np.arange(5) ** 2))
    x = sx.ones((3, 4))
    with pytest.raises(ValueError, match=r"\[gradient\].*edge_order \+ 1"):
        sx.gradient(sx.ones(2), edge_order=2)
    with pytest.raises(ValueError, match=r"\[gradient\] only edge_order=1 and edge_order=2"):
        sx.gradient(x, edge_order=3)
    with pytest.raises(ValueError, match=r"\[gradient\] spacing has 2 entries but 1 dims"):
        sx.gradient(x, spacing=[1.0, 2.0], dim=1)
    with pytest.raises(IndexError, match=r"\[gradient\] dim 2 is out of range"):
        sx.gradient(x, dim=2)
    with pytest.raises(ValueError, match=r"\[gradient\] the coordinates along dim 1 must be a 1-d tensor of 4"):
        sx.gradient(x, spacing=[sx.ones(3)], dim=1)
    with pytest.raises(TypeError, match=r"\[gradient\] spacing must be"):
        sx.gradient(x, spacing=sx.ones(4))


@pytest.mark.parity
@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_matches_torch(torch, edge_order):
    a = RNG.standard_normal((4, 5))
    coords = np.array([0.0, 0.5, 0.7, 2.0, 2.5])
    matches_torch(torch, lambda lib, t: lib.gradient(t, spacing=[2.0, 0.5], edge_order=edge_order)[1], [a], _seed,
                  rtol=1e-12, atol=1e-12, grad_rtol=1e-12, grad_atol=1e-12, name="gradient")
    matches_torch(torch, lambda lib, t: lib.gradient(t, spacing=(lib.tensor(coords, dtype=lib.float64),), dim=1,
                                                     edge_order=edge_order)[0],
                  [a], _seed, rtol=1e-10, atol=1e-12, grad_rtol=1e-10, grad_atol=1e-12, name="gradient coords")


# ---------------------------------------------------------------- histogram
def test_histogram_matches_numpy():
    a = RNG.standard_normal(200)
    w = RNG.random(200)
    for kwargs in ({}, {"range": (-1.0, 2.0)}, {"density": True}, {"weight": True}, {"weight": True, "density": True}):
        npkw = dict(kwargs)
        skw = dict(kwargs)
        if "weight" in kwargs:
            npkw["weights"] = w
            del npkw["weight"]
            skw["weight"] = sx.tensor(w)
        hist, edges = sx.histogram(sx.tensor(a), 7, **skw)
        ref_hist, ref_edges = np.histogram(a, 7, **npkw)
        np.testing.assert_allclose(_np(edges), ref_edges, rtol=1e-12, err_msg=str(kwargs))
        np.testing.assert_allclose(_np(hist), ref_hist, rtol=1e-12, err_msg=str(kwargs))
    edges = np.array([-2.0, -0.5, 0.0, 0.1, 3.0])
    hist, out_edges = sx.histogram(sx.tensor(a), sx.tensor(edges))
    np.testing.assert_array_equal(_np(hist), np.histogram(a, edges)[0])
    np.testing.assert_array_equal(_np(out_edges), edges)
    hist, edges = sx.histogram(sx.ones(4), 4)  # equal min and max widen by 0.5
    np.testing.assert_array_equal(_np(edges), np.histogram(np.ones(4), 4)[1])
    np.testing.assert_array_equal(_np(hist), [0, 0, 4, 0])
    res = sx.histogram(sx.tensor(a, dtype=sx.float32))
    hist, edges = res
    assert res.hist is hist and res.bin_edges is edges
    assert hist.dtype == edges.dtype == sx.float32 and hist.shape == (100,) and _np(hist).sum() == 200


def test_histogram_errors():
    with pytest.raises(TypeError, match=r"\[histogram\] expects a floating-point input, got .*int64"):
        sx.histogram(sx.ones(3, dtype=sx.int64), 2)
    with pytest.raises(ValueError, match=r"\[histogram\] bins must be a positive integer"):
        sx.histogram(sx.ones(3), 0)
    with pytest.raises(ValueError, match=r"\[histogram\] weight must have the input's shape"):
        sx.histogram(sx.ones(3), 2, weight=sx.ones(2))
    with pytest.raises(ValueError, match=r"\[histogram\] max .* must be >= min"):
        sx.histogram(sx.ones(3), 2, range=(1.0, 0.0))
    with pytest.raises(TypeError):
        sx.histogram(sx.ones(3), 2, (0.0, 1.0))  # range is keyword-only, as in PyTorch


@pytest.mark.parity
def test_histogram_matches_torch(torch):
    a = RNG.standard_normal(300).astype(np.float32)
    w = RNG.random(300).astype(np.float32)
    for bins in (10, "edges"):
        for kwargs in ({}, {"range": (-1.0, 1.5)}, {"density": True}, {"weight": True}):
            if bins == "edges" and "range" in kwargs:
                continue
            skw, tkw = dict(kwargs), dict(kwargs)
            if "weight" in kwargs:
                skw["weight"], tkw["weight"] = sx.tensor(w), torch.tensor(w)
            sb = sx.tensor([-3.0, -1.0, 0.0, 0.5, 2.0]) if bins == "edges" else bins
            tb = torch.tensor([-3.0, -1.0, 0.0, 0.5, 2.0]) if bins == "edges" else bins
            h, e = sx.histogram(sx.tensor(a), sb, **skw)
            th, te = torch.histogram(torch.tensor(a), tb, **tkw)
            np.testing.assert_allclose(_np(e), te.numpy(), rtol=1e-6, err_msg=str(kwargs))
            np.testing.assert_allclose(_np(h), th.numpy(), rtol=1e-5, err_msg=str(kwargs))


# ---------------------------------------------------------------- neural-network functions against torch
def _pos_parity(torch, name, arrays, *args, grad=True, tol=1e-10):
    """sx.name(*tensors, *args) against torch.name(*tensors, *args), values and gradients (float64)."""

    def fn(lib, *ts):
        return getattr(lib, name)(*ts, *args)

    if grad:
        matches_torch(torch, fn, arrays, _seed, rtol=tol, atol=tol, grad_rtol=tol, grad_atol=tol, name=name)
    else:
        out = fn(sx, *[sx.tensor(a) for a in arrays])
        tout = fn(torch, *[torch.tensor(a) for a in arrays])
        np.testing.assert_allclose(_np(out), tout.numpy(), rtol=tol, atol=tol, err_msg=name)


def _r(*shape):
    return RNG.standard_normal(shape)


@pytest.mark.parity
def test_convolutions_match_torch(torch):
    _pos_parity(torch, "conv1d", [_r(2, 4, 9), _r(6, 2, 3), _r(6)], 2, 1, 1, 2)
    _pos_parity(torch, "conv2d", [_r(2, 4, 7, 6), _r(6, 4, 3, 2), _r(6)], (2, 1), 1, (1, 2), 1)
    _pos_parity(torch, "conv3d", [_r(1, 2, 5, 4, 5), _r(3, 2, 2, 2, 3), _r(3)], 1, (1, 0, 1), 1, 1)
    _pos_parity(torch, "conv_transpose1d", [_r(2, 4, 5), _r(4, 3, 3), _r(3)], 2, 1, 1, 1, 1)
    _pos_parity(torch, "conv_transpose2d", [_r(1, 4, 4, 3), _r(4, 1, 3, 2), _r(2)], 2, 1, 1, 2, 1)
    _pos_parity(torch, "conv_transpose3d", [_r(1, 2, 3, 3, 2), _r(2, 2, 2, 2, 2), _r(2)], 1, 0, 0, 1, 1)
    _pos_parity(torch, "conv_tbc", [_r(7, 2, 3), _r(3, 3, 5), _r(5)], 1)


@pytest.mark.parity
def test_norms_match_torch(torch):
    x, w, b, rm, rv = _r(4, 3, 5), _r(3), _r(3), _r(3), RNG.random(3) + 0.5
    # torch.batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled)
    for training in (False, True):
        srm, srv = sx.tensor(rm), sx.tensor(rv)
        trm, trv = torch.tensor(rm), torch.tensor(rv)
        matches_torch(torch, lambda lib, a, c, d: lib.batch_norm(
            a, c, d, *((srm, srv) if lib is sx else (trm, trv)), training, 0.2, 1e-3, True),
            [x, w, b], _seed, rtol=1e-10, atol=1e-10, grad_rtol=1e-9, grad_atol=1e-10, name="batch_norm")
        np.testing.assert_allclose(_np(srm), trm.numpy(), rtol=1e-12)
        np.testing.assert_allclose(_np(srv), trv.numpy(), rtol=1e-12)
    _pos_parity(torch, "instance_norm", [_r(2, 3, 6), w, b], None, None, True, 0.1, 1e-4, False, tol=1e-9)
    srm, srv, trm, trv = sx.tensor(rm), sx.tensor(rv), torch.tensor(rm), torch.tensor(rv)
    matches_torch(torch, lambda lib, a, c, d: lib.instance_norm(
        a, c, d, *((srm, srv) if lib is sx else (trm, trv)), False, 0.1, 1e-4, False),
        [_r(2, 3, 6), w, b], _seed, rtol=1e-10, atol=1e-10, grad_rtol=1e-9, grad_atol=1e-10, name="instance_norm")
    matches_torch(torch, lambda lib, a, c, d: lib.layer_norm(a, (3, 4), c, d, 1e-3, False),
                  [_r(2, 3, 4), _r(3, 4), _r(3, 4)], _seed, rtol=1e-10, atol=1e-10, grad_rtol=1e-9, grad_atol=1e-10)
    matches_torch(torch, lambda lib, a, c, d: lib.group_norm(a, 2, c, d, 1e-4, True),
                  [_r(2, 4, 5), _r(4), _r(4)], _seed, rtol=1e-10, atol=1e-10, grad_rtol=1e-9, grad_atol=1e-10)


@pytest.mark.parity
def test_embedding_matches_torch(torch):
    ids = [[0, 2, 2], [3, 1, 0]]
    for args in ((), (2,), (-1,), (1, True)):
        matches_torch(torch, lambda lib, w: lib.embedding(w, lib.tensor(ids), *args), [_r(4, 3)], _seed,
                      rtol=1e-12, atol=1e-12, grad_rtol=1e-12, grad_atol=1e-12, name=f"embedding{args}")
    with pytest.raises(NotImplementedError, match="sparse"):
        sx.embedding(sx.ones((3, 2)), sx.tensor([0]), -1, False, True)


@pytest.mark.parity
def test_shape_and_distance_functions_match_torch(torch):
    _pos_parity(torch, "bilinear", [_r(3, 4), _r(3, 5), _r(2, 4, 5), _r(2)])
    _pos_parity(torch, "pixel_shuffle", [_r(1, 8, 2, 3)], 2)
    _pos_parity(torch, "pixel_unshuffle", [_r(1, 2, 4, 6)], 2)
    _pos_parity(torch, "channel_shuffle", [_r(1, 6, 2, 2)], 3)
    _pos_parity(torch, "native_channel_shuffle", [_r(1, 6, 2, 2)], 2, grad=False)
    _pos_parity(torch, "pdist", [_r(5, 3)], 1.5)
    _pos_parity(torch, "pairwise_distance", [_r(4, 3), _r(4, 3)], 3.0, 1e-3, True)
    _pos_parity(torch, "cosine_similarity", [_r(4, 3), _r(4, 3)], 0, 1e-6)
    _pos_parity(torch, "constant_pad_nd", [_r(2, 3, 4)], [1, -1, 2, 0], 1.5)


@pytest.mark.parity
@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_losses_match_torch(torch, reduction):
    sign = np.sign(_r(5)) + (np.sign(_r(5)) == 0)
    _pos_parity(torch, "cosine_embedding_loss", [_r(5, 3), _r(5, 3), sign], 0.2, reduction)
    _pos_parity(torch, "margin_ranking_loss", [_r(5), _r(5), sign], 0.3, reduction)
    _pos_parity(torch, "hinge_embedding_loss", [_r(5), sign], 0.7, reduction)
    lp, tgt = np.log(RNG.dirichlet(np.ones(4), 3)), np.log(RNG.dirichlet(np.ones(4), 3))
    _pos_parity(torch, "kl_div", [lp, np.exp(tgt)], reduction)
    matches_torch(torch, lambda lib, a, b: lib.kl_div(a, b, reduction, log_target=True), [lp, tgt], _seed,
                  rtol=1e-10, atol=1e-10, grad_rtol=1e-10, grad_atol=1e-10, name="kl_div log_target")
    rate = RNG.random(6) * 3
    for x, args in ((_r(6), (True, True, 1e-6)), (RNG.random(6) + 0.1, (False, False, 1e-4))):
        # the target is a constant here: the gradient compared is the input's
        matches_torch(torch, lambda lib, a: lib.poisson_nll_loss(a, lib.tensor(rate), *args, reduction), [x], _seed,
                      rtol=1e-10, atol=1e-10, grad_rtol=1e-10, grad_atol=1e-10, name="poisson_nll_loss")
    y, w, pw = RNG.random((3, 4)), RNG.random(4), RNG.random(4) + 0.5
    matches_torch(torch, lambda lib, a: lib.binary_cross_entropy_with_logits(
        a, lib.tensor(y), lib.tensor(w), lib.tensor(pw), reduction), [_r(3, 4)], _seed,
        rtol=1e-10, atol=1e-10, grad_rtol=1e-10, grad_atol=1e-10, name="binary_cross_entropy_with_logits")
    targets, il, tl = [[1, 2, 2], [3, 4, 0]], [6, 5], [3, 2]
    # through log_softmax: PyTorch's gradient with respect to log_probs assumes they come from one
    matches_torch(torch, lambda lib, a: lib.ctc_loss(lib.log_softmax(a, 2), lib.tensor(targets), lib.tensor(il),
                                                     lib.tensor(tl), 0, reduction, False),
                  [_r(6, 2, 5)], _seed, rtol=1e-9, atol=1e-9, grad_rtol=1e-8, grad_atol=1e-9, name="ctc_loss")


def test_loss_reduction_must_be_an_int():
    with pytest.raises(TypeError, match=r"\[kl_div\] reduction must be the int 0 \(none\), 1 \(mean\) or 2"):
        sx.kl_div(sx.zeros(3), sx.zeros(3), "mean")
    with pytest.raises(TypeError, match=r"\[margin_ranking_loss\] reduction"):
        sx.margin_ranking_loss(sx.zeros(3), sx.zeros(3), sx.ones(3), 0.0, 3)


@pytest.mark.parity
def test_pooling_matches_torch(torch):
    _pos_parity(torch, "max_pool1d", [_r(2, 3, 9)], 3, 2, 1, 1, True)
    _pos_parity(torch, "max_pool1d", [_r(2, 3, 9)], 3)
    _pos_parity(torch, "max_pool2d", [_r(1, 2, 7, 6)], (3, 2), (), 1, 1, False)
    _pos_parity(torch, "max_pool3d", [_r(1, 2, 5, 4, 4)], 2, 1, 0, 2, True)
    _pos_parity(torch, "avg_pool1d", [_r(2, 3, 9)], 3, 2, 1, True, False)
    _pos_parity(torch, "adaptive_avg_pool1d", [_r(2, 3, 9)], 4)
    x = _r(2, 3, 9)
    for name, args in (("max_pool1d_with_indices", (3, (), 1, 1, False)), ("adaptive_max_pool1d", (4,))):
        v, i = getattr(sx, name)(sx.tensor(x), *args)
        tv, ti = getattr(torch, name)(torch.tensor(x), *args)
        np.testing.assert_array_equal(_np(v), tv.numpy(), err_msg=name)
        np.testing.assert_array_equal(_np(i), ti.numpy(), err_msg=name)


@pytest.mark.parity
def test_deterministic_dropouts_and_rrelu_match_torch(torch):
    x = _r(3, 4, 2)
    for name in ("dropout", "alpha_dropout", "feature_alpha_dropout", "feature_dropout"):
        assert getattr(sx, name)(sx.tensor(x), 0.5, False) is not None
        _pos_parity(torch, name, [x], 0.3, False)
    _pos_parity(torch, "rrelu", [x], 0.1, 0.3, False)
    _pos_parity(torch, "rrelu", [x], 0.1, 0.3, False, None)


def test_dropouts_in_training():
    sx.manual_seed(0)
    a = np.abs(_r(8, 6, 5)) + 0.5
    out = _np(sx.dropout(sx.tensor(a), 0.25, True))
    kept = out != 0
    np.testing.assert_allclose(out[kept], a[kept] / 0.75, rtol=1e-12)
    assert 0.5 < kept.mean() < 0.95
    out = _np(sx.feature_dropout(sx.tensor(a), 0.5, True))
    per_channel = (out != 0).reshape(8, 6, 5)
    assert np.all(per_channel.all(axis=2) | ~per_channel.any(axis=2))  # whole channels kept or zeroed
    np.testing.assert_allclose(out[out != 0], (a * 2.0)[out != 0], rtol=1e-12)
    for name in ("dropout_", "feature_dropout_", "alpha_dropout_", "feature_alpha_dropout_"):
        x = sx.tensor(a)
        assert getattr(sx, name)(x, 0.4, True) is x, name
        assert not np.array_equal(_np(x), a), name
        y = sx.tensor(a)
        assert getattr(sx, name)(y, 0.4, False) is y and np.array_equal(_np(y), a), name
    x = sx.tensor(-a)
    assert sx.rrelu_(x, 0.1, 0.3, True) is x
    ratio = _np(x) / -a
    assert np.all((ratio >= 0.1 - 1e-12) & (ratio <= 0.3 + 1e-12))
    with pytest.raises(ValueError, match=r"\[dropout\] dropout probability has to be between 0 and 1, but got 1.5"):
        sx.dropout(sx.tensor(a), 1.5, True)
    with pytest.raises(RuntimeError, match=r"\[feature_dropout\] Feature dropout requires at least 2 dim"):
        sx.feature_dropout(sx.ones(4), 0.5, True)
    with pytest.raises(NotImplementedError, match=r"\[rrelu\] a generator is not supported"):
        sx.rrelu(sx.tensor(a), 0.1, 0.3, True, sx.Generator())
    with pytest.raises(TypeError):
        sx.dropout(sx.tensor(a), 0.5)  # train is required, as in PyTorch


def test_conv_tbc_errors():
    with pytest.raises(ValueError, match=r"\[conv_tbc\] channel mismatch"):
        sx.conv_tbc(sx.ones((5, 2, 3)), sx.ones((2, 4, 6)), sx.ones(6))
