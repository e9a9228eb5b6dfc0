"""sneppx_nn.init: orthogonal_, dirac_, eye_, sparse_, the deprecated aliases, calculate_gain, and
sneppx_nn.utils.skip_init."""

import math
import warnings

import numpy as np
import pytest
import sneppx_core as sx

import sneppx_nn as nn
import sneppx_nn.functional as F
from sneppx_nn import init
from conftest import to_np


@pytest.mark.parametrize("shape", [(4, 4), (6, 3), (3, 7), (4, 2, 3, 3), (5, 1)])
def test_orthogonal_gives_orthonormal_rows_or_columns(shape):
    t = init.orthogonal_(sx.empty(*shape, dtype=sx.float64), gain=2.5)
    m = to_np(t).reshape(shape[0], -1)
    gram = m @ m.T if m.shape[0] <= m.shape[1] else m.T @ m
    np.testing.assert_allclose(gram, 2.5 ** 2 * np.eye(gram.shape[0]), atol=1e-10)


def test_orthogonal_is_seeded_and_checks_dims():
    sx.manual_seed(3)
    a = to_np(init.orthogonal_(sx.empty(5, 5)))
    sx.manual_seed(3)
    np.testing.assert_array_equal(a, to_np(init.orthogonal_(sx.empty(5, 5))))
    with pytest.raises(ValueError, match=r"\[orthogonal_\].*\(5,\)"):
        init.orthogonal_(sx.empty(5))
    assert init.orthogonal_(sx.empty(0, 3)).shape == (0, 3)


def test_orthogonalize_sign_correction_makes_r_diagonal_positive():
    rng = np.random.default_rng(1)
    for shape in [(5, 3), (3, 5)]:
        a = rng.standard_normal(shape)
        q = to_np(init._orthogonalize(sx.tensor(a)))
        tall = a if shape[0] >= shape[1] else a.T
        qt = q if shape[0] >= shape[1] else q.T
        r = qt.T @ tall  # a = Q R with R upper triangular and a positive diagonal
        np.testing.assert_allclose(np.tril(r, -1), 0, atol=1e-10)
        assert (np.diag(r) > 0).all()


@pytest.mark.parametrize("shape,groups", [((4, 4, 3), 1), ((6, 2, 3, 3), 3), ((4, 3, 3, 3, 3), 2), ((2, 5, 1, 1), 1)])
def test_dirac_conv_passes_channels_through(shape, groups):
    w = init.dirac_(sx.empty(*shape), groups=groups)
    a = to_np(w)
    assert a.sum() == groups * min(shape[0] // groups, shape[1])
    if len(shape) == 4:
        x = sx.randn(1, shape[1] * groups, 5, 5)
        y = to_np(F.conv2d(x, w, padding=shape[2] // 2, groups=groups))
        per = shape[0] // groups
        for g in range(groups):
            for d in range(min(per, shape[1])):
                np.testing.assert_allclose(y[0, g * per + d], to_np(x)[0, g * shape[1] + d], atol=1e-6)


def test_dirac_eye_sparse_errors_name_the_function():
    with pytest.raises(ValueError, match=r"\[dirac_\]"):
        init.dirac_(sx.empty(3, 3))
    with pytest.raises(ValueError, match=r"\[dirac_\].*divisible"):
        init.dirac_(sx.empty(5, 2, 3), groups=2)
    with pytest.raises(ValueError, match=r"\[eye_\].*\(2, 2, 2\)"):
        init.eye_(sx.empty(2, 2, 2))
    with pytest.raises(ValueError, match=r"\[sparse_\]"):
        init.sparse_(sx.empty(3), 0.5)


def test_eye_and_sparse():
    np.testing.assert_array_equal(to_np(init.eye_(sx.empty(3, 5))), np.eye(3, 5))
    t = init.sparse_(sx.empty(40, 30), sparsity=0.3, std=0.5)
    a = to_np(t)
    zeros = (a == 0).sum(0)
    assert (zeros == math.ceil(0.3 * 40)).all()
    assert abs(a[a != 0].std() - 0.5) < 0.05


NAMES = ["uniform", "normal", "constant", "xavier_uniform", "xavier_normal", "kaiming_uniform", "kaiming_normal",
         "orthogonal", "sparse", "dirac", "eye"]
ARGS = {"constant": (0.5,), "sparse": (0.5,)}


@pytest.mark.parametrize("name", NAMES)
def test_deprecated_aliases_warn_and_do_the_same(name):
    shape = (4, 2, 3) if name == "dirac" else (4, 6)
    sx.manual_seed(5)
    expected = to_np(getattr(init, name + "_")(sx.empty(*shape), *ARGS.get(name, ())))
    sx.manual_seed(5)
    with pytest.warns(FutureWarning, match=f"nn.init.{name}` is now deprecated in favor of `nn.init.{name}_`"):
        got = getattr(init, name)(sx.empty(*shape), *ARGS.get(name, ()))
    np.testing.assert_array_equal(to_np(got), expected)
    assert getattr(init, name).__name__ == name and getattr(init, name).__doc__


def test_skip_init_leaves_parameters_uninitialised_and_restores_init():
    sx.manual_seed(0)
    before = sx.randn(3)
    sx.manual_seed(0)
    m = nn.utils.skip_init(nn.Linear, 5, 4)
    np.testing.assert_array_equal(to_np(sx.randn(3)), to_np(before))  # no random draw happened
    assert m.weight.shape == (4, 5) and m.bias.shape == (4,)
    assert to_np(init.constant_(sx.empty(2), 3.0)).tolist() == [3.0, 3.0]  # initialisers work again
    with pytest.raises(RuntimeError, match=r"\[skip_init\]"):
        nn.utils.skip_init(int)


@pytest.mark.parity
def test_init_parity_with_torch():
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                     "conv_transpose3d", "sigmoid", "tanh", "relu", "leaky_relu", "selu"]:
            assert init.calculate_gain(name) == pytest.approx(torch.nn.init.calculate_gain(name), rel=1e-15), name
        for slope in [0, 0.2, 3, 1.5]:
            assert init.calculate_gain("leaky_relu", slope) == torch.nn.init.calculate_gain("leaky_relu", slope)
        for bad in ["gelu", "silu", "softmax"]:
            with pytest.raises(ValueError):
                torch.nn.init.calculate_gain(bad)
            with pytest.raises(ValueError):
                init.calculate_gain(bad)
        with pytest.raises(ValueError):
            init.calculate_gain("leaky_relu", True)
        for name in NAMES:
            assert hasattr(torch.nn.init, name) and hasattr(torch.nn.init, name + "_")
    rng = np.random.default_rng(2)
    for shape in [(6, 4), (4, 6)]:  # the same Gaussian matrix through QR gives torch's Q
        a = rng.standard_normal(shape)
        flat = torch.tensor(a.T if shape[0] < shape[1] else a)
        q, r = torch.linalg.qr(flat)
        q = q * torch.diag(r).sign()
        q = q.T if shape[0] < shape[1] else q
        np.testing.assert_allclose(to_np(init._orthogonalize(sx.tensor(a))), q.numpy(), atol=1e-12)
    tw = torch.nn.init.dirac_(torch.empty(6, 2, 3, 3), groups=3)
    np.testing.assert_array_equal(to_np(init.dirac_(sx.empty(6, 2, 3, 3), groups=3)), tw.numpy())
    np.testing.assert_array_equal(to_np(init.eye_(sx.empty(3, 5))), torch.nn.init.eye_(torch.empty(3, 5)).numpy())
