"""scatter_reduce with amax / amin: forward against NumPy's maximum.at / minimum.at, gradients
against float64 central differences (distinct values) and PyTorch's even split among ties."""

from __future__ import annotations

import numpy as np
import pytest
import sneppx_core as sx
from sneppx_core.testing import gradcheck

RNG = np.random.default_rng(37)


def np_scatter(a, dim, idx, src, reduce, include_self):
    out = a.copy()
    pos = list(np.indices(idx.shape))
    pos[dim] = idx
    pos = tuple(pos)
    src = src[tuple(slice(0, n) for n in idx.shape)]
    if not include_self:
        hit = np.zeros(a.shape, bool)
        hit[pos] = True
        out[hit] = -np.inf if reduce == "amax" else np.inf
    (np.maximum if reduce == "amax" else np.minimum).at(out, pos, src)
    return out


@pytest.mark.parametrize("reduce", ["amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_forward_matches_numpy(reduce, include_self, dim):
    a, src = RNG.standard_normal((4, 5)), RNG.standard_normal((5, 6))
    idx = RNG.integers(0, 4 if dim == 0 else 5, (3, 4))
    out = sx.scatter_reduce(sx.tensor(a), dim, sx.tensor(idx), sx.tensor(src), reduce, include_self=include_self)
    np.testing.assert_array_equal(out.numpy(), np_scatter(a, dim % 2, idx, src, reduce, include_self))


def test_integers_nan_and_method_form():
    a = sx.tensor(np.array([[5, 1, 7]], dtype=np.int64))
    out = a.scatter_reduce(1, sx.tensor([[0, 0, 2]]), sx.tensor([[9, 3, 2]]), "amax", include_self=False)
    assert out.dtype == sx.int64 and out.tolist() == [[9, 1, 2]]
    out = a.scatter_reduce(1, sx.tensor([[0, 0, 2]]), sx.tensor([[9, 3, 2]]), "amin")
    assert out.tolist() == [[3, 1, 2]]
    nan = float("nan")
    out = sx.scatter_reduce(sx.tensor([0.0, 0.0]), 0, sx.tensor([0, 0, 1]), sx.tensor([nan, 1.0, 2.0]), "amax")
    assert np.isnan(out.numpy()[0]) and out.numpy()[1] == 2.0


@pytest.mark.parametrize("reduce", ["amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_gradients(reduce, include_self):
    a, src = RNG.standard_normal((4, 5)), RNG.standard_normal((5, 5))  # src larger than index along dim 0
    idx = sx.tensor(RNG.integers(0, 5, (3, 5)))
    gradcheck(lambda x, s: sx.scatter_reduce(x, 1, idx, s, reduce, include_self=include_self),
              [sx.tensor(a, requires_grad=True), sx.tensor(src, requires_grad=True)])


def test_ties_share_the_gradient_evenly():
    x = sx.tensor([1.0, 5.0], requires_grad=True)
    s = sx.tensor([1.0, 1.0, 0.5], requires_grad=True)
    out = sx.scatter_reduce(x, 0, sx.tensor([0, 0, 1]), s, "amax")  # position 0: three-way tie at 1.0
    (out * sx.tensor([3.0, 2.0])).sum().backward()
    assert out.tolist() == [1.0, 5.0]
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 2.0])
    np.testing.assert_allclose(s.grad.numpy(), [1.0, 1.0, 0.0])


def test_bad_inputs():
    x = sx.zeros(3, 4)
    with pytest.raises(ValueError, match=r"scatter_reduce\(amax\).*index"):
        sx.scatter_reduce(x, 1, sx.zeros(5, 4, dtype=sx.int64), sx.zeros(5, 4), "amax")
    with pytest.raises(IndexError, match=r"scatter_reduce\(amin\)"):
        sx.scatter_reduce(x, 1, sx.tensor([[4]]), sx.zeros(1, 1), "amin")
    with pytest.raises(ValueError, match="reduce must be"):
        sx.scatter_reduce(x, 1, sx.tensor([[0]]), sx.zeros(1, 1), "max")
