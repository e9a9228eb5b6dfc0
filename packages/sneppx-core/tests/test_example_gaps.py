"""Gaps found by running pytorch/examples: the rank rules of channel dropout (dropout1d/2d/3d,
feature_alpha_dropout), ``spmm`` and ``Tensor.to_dense`` on dense tensors, and ``size=`` as a keyword of the
basic factories."""

import warnings

import numpy as np
import pytest
import sneppx_core as sx
import sneppx_core.functional as F

RNG = np.random.default_rng(62)


def _rows_all_equal(y, rows):
    """True when ``y`` (as a NumPy array) reshaped to ``rows`` rows holds one value per row."""
    r = y.reshape(rows, -1)
    return bool(np.all(r == r[:, :1]))


def _no_warning(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn()


# ---------------------------------------------------------------- channel dropout: ranks and masks

def test_dropout2d_2d_input_warns_and_drops_elementwise():
    sx.manual_seed(1)
    with pytest.warns(UserWarning, match=r"dropout2d: Received a 2-D input to dropout2d, which is deprecated"):
        y = F.dropout2d(sx.ones(64, 64), 0.5, True).numpy()
    assert set(np.unique(y)) == {0.0, 2.0}
    assert not _rows_all_equal(y, 64) and not _rows_all_equal(y.T, 64)  # a mask per (N, C) = per element
    assert 0.4 < (y == 0).mean() < 0.6


def test_dropout2d_3d_input_is_read_as_n_c_l():
    sx.manual_seed(2)
    with pytest.warns(UserWarning, match=r"dropout2d: Received a 3D input to dropout2d and assuming that "
                                         r"channel-wise 1D dropout behavior is desired"):
        y = F.dropout2d(sx.ones(4, 64, 5), 0.5, True).numpy()
    assert _rows_all_equal(y, 4 * 64) and set(np.unique(y)) == {0.0, 2.0}
    assert not _rows_all_equal(y, 4)


def test_dropout3d_3d_input_is_unbatched_one_mask_per_channel():
    sx.manual_seed(3)
    with pytest.warns(UserWarning, match=r"dropout3d: Received a 3-D input to dropout3d"):
        y = F.dropout3d(sx.ones(8, 6, 5), 0.5, True).numpy()
    assert _rows_all_equal(y, 8) and set(np.unique(y)) == {0.0, 2.0}
    with pytest.warns(UserWarning, match=r"Received a 1-D input"):
        z = F.dropout3d(sx.ones(200), 0.5, True).numpy()  # (1, 200) after the batch dim: elementwise
    assert set(np.unique(z)) == {0.0, 2.0}


def test_dropout1d_batched_unbatched_and_bad_ranks():
    sx.manual_seed(4)
    y = _no_warning(lambda: F.dropout1d(sx.ones(3, 40, 7), 0.5, True)).numpy()
    assert _rows_all_equal(y, 120) and not _rows_all_equal(y, 3)
    z = _no_warning(lambda: F.dropout1d(sx.ones(40, 7), 0.5, True)).numpy()
    assert _rows_all_equal(z, 40) and set(np.unique(z)) == {0.0, 2.0}
    for shape in [(), (5,), (2, 3, 4, 5)]:
        for training in (True, False):  # the rank check comes first, as in PyTorch
            with pytest.raises(RuntimeError, match=rf"dropout1d: Expected 2D or 3D input, but received a "
                                                   rf"{len(shape)}D input"):
                F.dropout1d(sx.ones(shape), 0.5, training)


def test_batched_ranks_give_no_warning_and_eval_returns_the_input():
    for fn, shape in [(F.dropout1d, (2, 3, 4)), (F.dropout2d, (2, 3, 4, 5)), (F.dropout3d, (2, 3, 4, 5, 6)),
                      (F.dropout3d, (3, 4, 5, 6))]:
        x = sx.ones(shape)
        assert _no_warning(lambda f=fn, x=x: f(x, 0.5, False)) is x
        assert _no_warning(lambda f=fn, x=x: f(x, 0.0, True)) is x
        assert tuple(_no_warning(lambda f=fn, x=x: f(x, 0.5, True)).shape) == shape


def test_fewer_than_two_dims_raise_only_in_training():
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match=r"\[dropout2d\] Feature dropout requires"):
        F.dropout2d(sx.ones(5), 0.5, True)
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match=r"\[dropout3d\] Feature dropout requires"):
        F.dropout3d(sx.tensor(1.0), 0.5, True)
    x = sx.ones(5)
    with pytest.warns(UserWarning):
        assert F.dropout2d(x, 0.5, False) is x
    with pytest.raises(RuntimeError, match=r"\[feature_alpha_dropout\] Feature dropout requires at least 2"):
        F.feature_alpha_dropout(x, 0.5, True)
    assert F.feature_alpha_dropout(x, 0.5, False) is x
    with pytest.raises(ValueError, match=r"\[dropout2d\] dropout probability has to be between 0 and 1"):
        F.dropout2d(sx.ones(2, 3, 4, 5), 1.5)


def test_unbatched_dropout1d_inplace_and_gradient():
    sx.manual_seed(5)
    x = sx.ones(30, 4, dtype=sx.float64)
    assert F.dropout1d(x, 0.25, True, inplace=True) is x
    assert _rows_all_equal(x.numpy(), 30) and set(np.unique(x.numpy())) == {0.0, 4.0 / 3.0}
    a = sx.tensor(RNG.standard_normal((30, 4)), requires_grad=True)
    y = F.dropout1d(a, 0.25, True)
    y.sum().backward()
    kept = y.detach().numpy() != 0  # a.grad is the mask scaled by 1 / (1 - p)
    np.testing.assert_allclose(a.grad.numpy(), np.where(kept, 4.0 / 3.0, 0.0), rtol=1e-15)
    np.testing.assert_allclose(y.detach().numpy()[kept], a.detach().numpy()[kept] * 4.0 / 3.0, rtol=1e-15)


# ---------------------------------------------------------------- spmm and to_dense

def test_spmm_is_the_matrix_product_of_dense_tensors():
    a, b = RNG.standard_normal((3, 5)), RNG.standard_normal((5, 2))
    got = sx.spmm(sx.tensor(a), sx.tensor(b))
    np.testing.assert_allclose(got.numpy(), a @ b, rtol=1e-13)
    out = sx.empty(3, 2, dtype=sx.float64)
    assert sx.spmm(input=sx.tensor(a), mat2=sx.tensor(b), out=out) is out
    np.testing.assert_allclose(out.numpy(), a @ b, rtol=1e-13)
    assert sx.autograd.gradcheck(sx.spmm, (sx.tensor(a, requires_grad=True), sx.tensor(b, requires_grad=True)))


def test_spmm_errors():
    a = sx.randn(2, 3)
    with pytest.raises(TypeError, match=r"\[spmm\] expected mat2 to be a Tensor, got int"):
        sx.spmm(a, 3)
    with pytest.raises(ValueError, match=r"\(2, 3\) and \(4, 2\)"):
        sx.spmm(a, sx.randn(4, 2))
    with pytest.raises(ValueError, match=r"2-D"):
        sx.spmm(a, sx.randn(3))
    with pytest.raises(ValueError, match=r"\[spmm\] out has shape \(3, 3\), the result \(2, 2\)"):
        sx.spmm(a, sx.randn(3, 2), out=sx.empty(3, 3))


def test_to_dense_returns_the_tensor_itself():
    x = sx.tensor(RNG.standard_normal((2, 3)), requires_grad=True)
    assert x.to_dense() is x and x.to_dense(sx.float64) is x and x.to_dense(masked_grad=False) is x
    y = x.to_dense(sx.float32)
    assert y.dtype == sx.float32 and y is not x
    np.testing.assert_allclose(y.detach().numpy(), x.detach().numpy(), rtol=1e-7)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((2, 3)))
    with pytest.raises(TypeError, match=r"\[to_dense\] expected dtype to be a dtype"):
        x.to_dense("float32")
    with pytest.raises(TypeError):
        x.to_dense(None, True)  # masked_grad is keyword-only


# ---------------------------------------------------------------- size= of the factories

FACTORIES = ["zeros", "ones", "empty", "rand", "randn"]


@pytest.mark.parametrize("name", FACTORIES)
def test_size_keyword(name):
    fn = getattr(sx, name)
    for size, shape in [((2, 3), (2, 3)), ([2, 3], (2, 3)), ((4,), (4,)), ((), ()), ([], ())]:
        t = fn(size=size, dtype=sx.float64)
        assert tuple(t.shape) == shape and t.dtype == sx.float64
    assert fn(size=(1, 2), requires_grad=True).requires_grad
    for args in [(2, 3), ((2, 3),)]:
        with pytest.raises(TypeError, match=rf"{name}\(\) got multiple values for argument 'size'"):
            fn(*args, size=(2, 3))
    with pytest.raises(TypeError, match=rf"\[{name}\] argument 'size' must be a tuple of ints, not int"):
        fn(size=2)
    with pytest.raises(TypeError, match=rf"\[{name}\] sizes must be integers, got 2.0"):
        fn(size=(2.0,))


def test_size_keyword_values():
    np.testing.assert_array_equal(sx.zeros(size=(2, 3)).numpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(sx.ones(size=[3]).numpy(), np.ones(3))
    g1, g2 = sx.Generator(), sx.Generator()
    g1.manual_seed(7)
    g2.manual_seed(7)
    np.testing.assert_array_equal(sx.randn(size=(4,), generator=g1).numpy(), sx.randn(4, generator=g2).numpy())
    np.testing.assert_array_equal(sx.rand(size=(4,), generator=g1).numpy(), sx.rand((4,), generator=g2).numpy())


# ---------------------------------------------------------------- parity with PyTorch

def _dropout_outcome(lib, op, shape, training):
    """What ``op`` does to ones of ``shape``: the warnings, then the error class and text or the output's
    shape and the dims it is constant along (the dims the mask is shared over)."""
    x = lib.ones(shape, dtype=lib.float64)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            y = getattr(F if lib is sx else lib.nn.functional, op)(x, 0.5, training)
        except RuntimeError as e:
            return [(w.category, str(w.message)) for w in caught], ("RuntimeError", str(e))
    a = np.asarray(y.numpy())
    shared = tuple(d for d in range(a.ndim) if np.all(a == a.take([0], axis=d)))
    return [(w.category, str(w.message)) for w in caught], (a.shape, shared)


DROPOUT_CASES = [("dropout1d", s) for s in [(), (5,), (9, 7), (9, 8, 7), (3, 4, 5, 6)]] + \
    [("dropout2d", s) for s in [(), (5,), (9, 8), (9, 8, 7), (6, 7, 3, 2), (5, 6, 3, 2, 2)]] + \
    [("dropout3d", s) for s in [(), (9,), (9, 8), (9, 8, 3), (7, 6, 3, 2), (5, 6, 3, 2, 2), (6, 5, 2, 2, 2, 2)]] + \
    [("feature_alpha_dropout", s) for s in [(), (5,), (9, 8), (9, 8, 7)]]


@pytest.mark.parity
@pytest.mark.parametrize("op,shape", DROPOUT_CASES)
@pytest.mark.parametrize("training", [True, False])
def test_channel_dropout_rank_rules_match_torch(torch, op, shape, training):
    torch.manual_seed(0)
    sx.manual_seed(0)
    want_warns, want = _dropout_outcome(torch, op, shape, training)
    got_warns, got = _dropout_outcome(sx, op, shape, training)
    assert [c for c, _ in got_warns] == [c for c, _ in want_warns]
    assert [m for _, m in got_warns] == [m for _, m in want_warns]  # the same text
    if want[0] == "RuntimeError":
        assert got[0] == "RuntimeError"
        assert want[1] in got[1] or want[1].split(" (")[0] in got[1]
    else:
        assert got == want


@pytest.mark.parity
def test_spmm_and_to_dense_match_torch(torch):
    a, b = RNG.standard_normal((4, 6)), RNG.standard_normal((6, 3))
    want = torch.spmm(torch.tensor(a), torch.tensor(b)).numpy()
    np.testing.assert_allclose(sx.spmm(sx.tensor(a), sx.tensor(b)).numpy(), want, rtol=1e-12, atol=1e-14)
    ta, xa = torch.tensor(a), sx.tensor(a)
    assert (ta.to_dense() is ta) == (xa.to_dense() is xa) is True
    assert (ta.to_dense(torch.float32) is ta) == (xa.to_dense(sx.float32) is xa) is False
    with pytest.raises(TypeError):
        torch.spmm(ta, 3)


@pytest.mark.parity
@pytest.mark.parametrize("name", FACTORIES)
def test_size_keyword_matches_torch(torch, name):
    for size in [(2, 3), [4], ()]:
        assert tuple(getattr(sx, name)(size=size).shape) == tuple(getattr(torch, name)(size=size).shape)
    for args, kwargs in [((2, 3), {"size": (2, 3)}), ((), {"size": 2})]:
        with pytest.raises(TypeError):
            getattr(torch, name)(*args, **kwargs)
        with pytest.raises(TypeError):
            getattr(sx, name)(*args, **kwargs)
