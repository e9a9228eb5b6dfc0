"""index_copy (and index_copy_), index_put and repeat_interleave: results against NumPy, gradients
against float64 central differences, errors, and the same calls in PyTorch (``pytest -m parity``)."""

from __future__ import annotations

import numpy as np
import pytest
import sneppx_core as sx
from sneppx_core.testing import gradcheck

RNG = np.random.default_rng(41)


def np_index_copy(a, dim, index, source):
    out = a.copy()
    dst = np.moveaxis(out, dim, 0)
    dst[index] = np.moveaxis(source, dim, 0)
    return out


@pytest.mark.parametrize("shape,dim,k", [((6,), 0, 3), ((5, 7), 0, 2), ((5, 7), 1, 4), ((5, 7), -1, 7),
                                         ((3, 4, 5), 1, 2), ((3, 4, 5), 2, 1), ((4, 3), 0, 0), ((300, 64), 1, 40)])
@pytest.mark.parametrize("dtype", [sx.float32, sx.float64, sx.int64, sx.bfloat16])
def test_index_copy_matches_numpy(shape, dim, k, dtype, threads):
    a = RNG.integers(-50, 50, shape).astype(np.float64)
    index = RNG.permutation(shape[dim])[:k]
    src_shape = list(shape)
    src_shape[dim] = k
    source = RNG.integers(-50, 50, src_shape).astype(np.float64)
    x, s, i = sx.tensor(a, dtype=dtype), sx.tensor(source, dtype=dtype), sx.tensor(index)
    want = np_index_copy(a, dim, index, source)
    out = x.index_copy(dim, i, s)
    assert out.dtype == dtype and out.float().numpy().tolist() == want.tolist()
    assert x.float().numpy().tolist() == a.tolist()  # the input is left alone
    view = sx.tensor(np.ascontiguousarray(np.moveaxis(a, 0, -1)), dtype=dtype).movedim(-1, 0)  # not contiguous
    assert view.index_copy(dim, i, s).float().numpy().tolist() == want.tolist()
    got = view.index_copy_(dim, i, s)
    assert got is view and view.float().numpy().tolist() == want.tolist()


def test_index_copy_in_place_writes_through_views():
    base = sx.zeros(4, 6)
    col = base[:, 1:5]  # a strided view of base
    col.index_copy_(1, sx.tensor([3, 0]), sx.tensor([[1.0, 2.0]] * 4))
    assert base.numpy().tolist() == [[0.0, 2.0, 0.0, 0.0, 1.0, 0.0]] * 4
    z = sx.tensor(5.0)
    assert z.index_copy(0, sx.tensor([0]), sx.tensor(3.0)).item() == 3.0


def test_index_copy_gradients():
    i = sx.tensor([2, 0])
    gradcheck(lambda x, s: (x.index_copy(1, i, s) ** 2).sum(dim=0),
              [sx.tensor(RNG.standard_normal((3, 4)), requires_grad=True),
               sx.tensor(RNG.standard_normal((3, 2)), requires_grad=True)])
    x = sx.tensor(np.ones((3, 4)), requires_grad=True)
    s = sx.tensor(np.ones((3, 2)), requires_grad=True)
    x.index_copy(1, i, s).sum().backward()
    assert x.grad.numpy().tolist() == [[0.0, 1.0, 0.0, 1.0]] * 3  # the overwritten slices get nothing
    assert s.grad.numpy().tolist() == [[1.0, 1.0]] * 3


def test_index_copy_errors():
    x = sx.zeros(3, 4)
    with pytest.raises(TypeError, match=r"\[index_copy\].*float64.*float32"):
        x.index_copy(1, sx.tensor([0]), sx.zeros(3, 1, dtype=sx.float64))
    with pytest.raises(ValueError, match=r"\[index_copy\] source of shape \(3, 2\) must have shape \(3, 1\)"):
        x.index_copy(1, sx.tensor([0]), sx.zeros(3, 2))
    with pytest.raises(ValueError, match=r"\[index_copy\] index must be a 1-d"):
        x.index_copy(1, sx.tensor([[0]]), sx.zeros(3, 1))
    with pytest.raises(ValueError, match=r"\[index_copy_\] index must be a 1-d int64"):
        x.index_copy_(1, sx.tensor([0.0]), sx.zeros(3, 1))
    with pytest.raises(IndexError, match=r"\[index_copy\] dim 2"):
        x.index_copy(2, sx.tensor([0]), sx.zeros(3, 1))
    with pytest.raises(IndexError):
        x.index_copy(1, sx.tensor([4]), sx.zeros(3, 1))
    with pytest.raises(IndexError):
        x.index_copy_(1, sx.tensor([-5]), sx.zeros(3, 1))
    assert x.abs().sum().item() == 0  # a rejected write leaves the tensor alone


def test_index_put_matches_numpy(threads):
    a = RNG.standard_normal((4, 5, 3))
    x = sx.tensor(a)
    rows, cols = np.array([3, 0, 3, 1]), np.array([1, 4, 1, 2])
    want = a.copy()
    want[rows, cols] = 7.0
    got = x.index_put((sx.tensor(rows), sx.tensor(cols)), sx.tensor(7.0, dtype=sx.float64))
    np.testing.assert_array_equal(got.numpy(), want)
    v = RNG.standard_normal((4, 3))
    want = a.copy()
    np.add.at(want, (rows, cols), v)  # repeated positions add up
    got = x.index_put((sx.tensor(rows), sx.tensor(cols)), sx.tensor(v), accumulate=True)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    want = a.copy()
    want[rows] = v[:, None, :]  # one index: whole (5, 3) slices, values broadcast; the last write wins
    np.testing.assert_array_equal(x.index_put((sx.tensor(rows),), sx.tensor(v[:, None, :])).numpy(), want)
    mask = RNG.random((4, 5)) < 0.4
    want = a.copy()
    want[mask] = -1.0
    np.testing.assert_array_equal(x.index_put((sx.tensor(mask),), -1.0).numpy(), want)
    want = a.copy()
    want[[2, 0], [1, 1]] = 3.0  # lists and broadcast index tensors
    np.testing.assert_array_equal(x.index_put(([2, 0], sx.tensor([1])), 3.0).numpy(), want)
    np.testing.assert_array_equal(x.numpy(), a)
    y = sx.tensor(a)
    assert y.index_put_((sx.tensor([1]),), sx.tensor(0.0, dtype=sx.float64)) is y and y.numpy()[1].sum() == 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.float16])
@pytest.mark.parametrize("cols", [792, 37])  # 37: ragged pieces (one piece in float16)
def test_large_index_put_splits_columns_in_index_order(threads, dtype, cols):
    """Puts of 64 KiB or more split each block's columns among the threads: a repeated row still ends
    with its last block, accumulated rows sum their blocks, index_copy_ along dim 0 matches NumPy."""
    a = (RNG.standard_normal((300, cols)) * 8).astype(dtype)
    rows = RNG.integers(0, 300, 600)  # many repeats
    v = (RNG.standard_normal((600, cols)) * 8).astype(dtype)
    want = a.copy()
    for i, r in enumerate(rows):  # index order: the last write wins
        want[r] = v[i]
    got = sx.tensor(a).index_put((sx.tensor(rows),), sx.tensor(v))
    np.testing.assert_array_equal(got.numpy(), want)
    want = a.astype(np.float64)
    for i, r in enumerate(rows):  # in index order, rounded to the dtype at each step
        want[r] = (want[r].astype(dtype) + v[i]).astype(np.float64)
    got = sx.tensor(a).index_put((sx.tensor(rows),), sx.tensor(v), accumulate=True)
    np.testing.assert_array_equal(got.numpy(), want.astype(dtype))
    unique = RNG.permutation(300)[:120]
    x = sx.tensor(a)
    x.index_copy_(0, sx.tensor(unique), sx.tensor(v[:120]))
    np.testing.assert_array_equal(x.numpy(), np_index_copy(a, 0, unique, v[:120]))


def test_index_put_gradients_and_errors():
    idx = (sx.tensor([0, 2, 0]), sx.tensor([1, 3, 1]))
    gradcheck(lambda x, v: (x.index_put(idx, v, accumulate=True) ** 2).sum(dim=1),
              [sx.tensor(RNG.standard_normal((3, 4)), requires_grad=True),
               sx.tensor(RNG.standard_normal(3), requires_grad=True)])
    x = sx.tensor(np.ones((3, 4)), requires_grad=True)
    v = sx.tensor(np.ones(2), requires_grad=True)
    x.index_put((sx.tensor([0, 2]), sx.tensor([1, 3])), v).sum().backward()
    assert x.grad.numpy()[[0, 2], [1, 3]].tolist() == [0.0, 0.0] and x.grad.sum().item() == 10
    assert v.grad.numpy().tolist() == [1.0, 1.0]
    with pytest.raises(IndexError, match=r"\[index_put\] too many indices"):
        sx.zeros(3).index_put((sx.tensor([0]), sx.tensor([0])), 1.0)
    with pytest.raises(IndexError):
        sx.zeros(3).index_put((sx.tensor([3]),), 1.0)
    with pytest.raises(ValueError, match=r"\[index_put\] shapes \(2, 2\) and \(4,\) cannot be broadcast"):
        sx.zeros(3, 2).index_put((sx.tensor([0, 1]),), sx.zeros(4))


@pytest.mark.parametrize("repeats", [2, 1, 0, [3], "tensor", "counts"])
@pytest.mark.parametrize("dim", [None, 0, 1, -1])
def test_repeat_interleave_matches_numpy(repeats, dim):
    a = RNG.standard_normal((3, 4, 2))
    n = a.size if dim is None else a.shape[dim]
    r = {"tensor": sx.tensor(3), "counts": sx.tensor(RNG.integers(0, 3, n))}.get(repeats, repeats) \
        if isinstance(repeats, str) else repeats
    want = np.repeat(a, np.asarray(r.tolist() if isinstance(r, sx.Tensor) else r), axis=dim)
    np.testing.assert_array_equal(sx.tensor(a).repeat_interleave(r, dim=dim).numpy(), want)
    gradcheck(lambda x: x.repeat_interleave(r, dim=dim) * sx.arange(want.size, dtype=sx.float64).reshape(want.shape),
              [sx.tensor(a, requires_grad=True)])


@pytest.mark.parametrize("dim,repeats", [(0, 2), (1, 3), (-2, 0), (2, 2)])
def test_repeat_interleave_long_runs(dim, repeats):
    a = RNG.standard_normal((3, 5, 20))  # 20 or more elements after dims 0 and 1: the broadcast copy
    np.testing.assert_array_equal(sx.tensor(a).repeat_interleave(repeats, dim=dim).numpy(),
                                  np.repeat(a, repeats, axis=dim))
    gradcheck(lambda x: x.repeat_interleave(repeats, dim=dim) ** 2, [sx.tensor(a[:2, :3], requires_grad=True)])


def test_repeat_interleave_errors():
    with pytest.raises(IndexError, match=r"\[repeat_interleave\] dim 3"):
        sx.zeros(2, 3).repeat_interleave(2, dim=3)
    with pytest.raises(ValueError, match=r"\[repeat_interleave\] repeats must be >= 0"):
        sx.zeros(2, 3).repeat_interleave(-1, dim=0)
    with pytest.raises(ValueError, match=r"\[repeat_interleave\] repeats must be >= 0"):
        sx.zeros(2, 3).repeat_interleave(sx.tensor([1, -1]), dim=0)
    with pytest.raises(ValueError, match=r"\[repeat_interleave\] repeats must hold one count for each of the 3"):
        sx.zeros(2, 3).repeat_interleave([1, 2], dim=1)
    with pytest.raises(TypeError, match=r"\[repeat_interleave\] repeats must be an integer"):
        sx.zeros(2, 3).repeat_interleave(sx.tensor([1.0, 2.0]), dim=0)
    with pytest.raises(TypeError, match=r"\[repeat_interleave\] repeats must be an integer"):
        sx.zeros(2, 3).repeat_interleave(sx.ones(2, 1, dtype=sx.int64), dim=0)
    with pytest.raises(ValueError, match=r"\[repeat_interleave\] output_size 5 does not match"):
        sx.zeros(2, 3).repeat_interleave(2, dim=0, output_size=5)
    with pytest.raises(ValueError, match=r"\[repeat_interleave\] .*int64"):
        sx.zeros(4).repeat_interleave(2 ** 62)
    with pytest.raises(ValueError, match=r"\[repeat_interleave\] .*int64"):
        sx.zeros(4).repeat_interleave(sx.tensor([2 ** 62, 2 ** 62, 2 ** 62, 1]))


def test_repeat_interleave_forms():
    """The counts-only form, int32 and NumPy counts, output_size, 0-d inputs, and a result that is a copy
    (one repeat included), as in PyTorch."""
    np.testing.assert_array_equal(sx.repeat_interleave(sx.tensor([2, 0, 3])).numpy(), [0, 0, 2, 2, 2])
    a = RNG.standard_normal((3, 4))
    x = sx.tensor(a)
    counts = np.array([1, 0, 2], dtype=np.int32)
    each, twice = np.repeat(a, counts, axis=0), np.repeat(a, 2, axis=0)
    for r, want in ((sx.tensor(counts), each), (counts, each), (counts.tolist(), each), (np.int64(2), twice),
                    (sx.tensor([2]), twice)):
        np.testing.assert_array_equal(sx.repeat_interleave(x, r, dim=0, output_size=want.shape[0]).numpy(), want)
    np.testing.assert_array_equal(sx.tensor(5.0).repeat_interleave(3).numpy(), [5.0, 5.0, 5.0])
    np.testing.assert_array_equal(sx.tensor(5.0).repeat_interleave(2, dim=0).numpy(), [5.0, 5.0])
    y = x.repeat_interleave(1, dim=1)
    y[0, 0] = 100.0
    assert x[0, 0].item() == a[0, 0]
    assert x.repeat_interleave(0, dim=1).shape == (3, 0)


@pytest.mark.parity
def test_index_writes_match_pytorch(torch):
    a = RNG.standard_normal((5, 6, 4)).astype(np.float32)
    src = RNG.standard_normal((5, 3, 4)).astype(np.float32)
    mask = RNG.random((5, 6)) < 0.5
    for lib, x, s in ((sx, sx.tensor(a), sx.tensor(src)), (torch, torch.tensor(a), torch.tensor(src))):
        i = lib.tensor([4, 0, 2])
        pts = (lib.tensor([1, 3, 1]), lib.tensor([2, 5, 2]))
        res = [x.index_copy(1, i, s), x.index_put(pts, s[0], accumulate=True),
               x.index_put((lib.tensor(mask),), lib.tensor(2.0)), x.repeat_interleave(3, dim=1),
               x.repeat_interleave(lib.tensor([1, 0, 2, 1, 3]), dim=0), lib.repeat_interleave(x[0, 0], 2),
               lib.repeat_interleave(lib.tensor([2, 0, 3])), x.repeat_interleave(2, dim=-1, output_size=8),
               lib.trace(x[0]), lib.trace(lib.tensor([[1, 2], [3, 4]], dtype=lib.int32))]
        y = x.clone()
        y.index_copy_(0, lib.tensor([3]), s[:1, :, :].repeat(1, 2, 1))
        res.append(y)
        if lib is sx:
            mine = [r.numpy() for r in res]
        else:
            for m, r in zip(mine, res):
                np.testing.assert_allclose(m, r.numpy(), rtol=1e-6, atol=1e-6)


def test_setitem_with_one_index_tensor_writes_in_place(threads):
    a = RNG.standard_normal((3, 4, 50, 6))
    cache = sx.tensor(a)
    ptr = cache.data_ptr()
    pos = np.array([7, -1, 20])
    kv = RNG.standard_normal((3, 4, 3, 6))
    cache[:, :, sx.tensor(pos)] = sx.tensor(kv)
    want = a.copy()
    want[:, :, pos] = kv
    assert cache.data_ptr() == ptr and np.array_equal(cache.numpy(), want)
    cache[sx.tensor([2, 0])] = 1.5  # a number, broadcast over the rows
    want[[2, 0]] = 1.5
    np.testing.assert_array_equal(cache.numpy(), want)
    view = cache[1:, :, 10:].transpose(0, 2)  # strided: the write lands in the base
    view[:, sx.tensor([3, 1, 3])] = sx.tensor(np.arange(3.0).reshape(3, 1, 1))  # repeated: the last wins
    w = want[1:, :, 10:].swapaxes(0, 2)
    w[:, [3, 1]] = np.array([2.0, 1.0]).reshape(2, 1, 1)
    np.testing.assert_array_equal(cache.numpy(), want)
    m = np.array([True, False, True, False])
    cache[0, sx.tensor(m)] = sx.tensor(np.float32(-4.0))  # a 1-d mask; the value cast to float64
    want[0, m] = -4.0
    np.testing.assert_array_equal(cache.numpy(), want)
    with pytest.raises(IndexError):
        cache[:, sx.tensor([0, 4])] = 0.0
    with pytest.raises(ValueError, match=r"\[setitem\]"):
        cache[:, sx.tensor([0, 1])] = sx.zeros(5, 4, 2, 50, 6)
    np.testing.assert_array_equal(cache.numpy(), want)  # rejected writes change nothing
    x = sx.tensor(np.arange(6.0))
    x[sx.tensor([1, 2])] = x[sx.tensor([4, 5])]  # the value shares x's memory
    assert x.tolist() == [0.0, 4.0, 5.0, 3.0, 4.0, 5.0]


def test_setitem_rows_of_contiguous_tensor(threads):
    a = RNG.standard_normal((40, 9))
    x = sx.tensor(a)
    rows = np.array([5, 0, 37, 5, -2])
    v = RNG.standard_normal((5, 9))
    x[2:][sx.tensor(rows)] = sx.tensor(v)  # a contiguous view at an offset; row 5 twice: the last wins
    want = a.copy()
    want[2:][rows] = v
    np.testing.assert_array_equal(x.numpy(), want)
    x[sx.tensor([1, 3])] = sx.tensor(np.arange(9.0))  # one row broadcast
    want[[1, 3]] = np.arange(9.0)
    np.testing.assert_array_equal(x.numpy(), want)
    x[sx.tensor(np.zeros(0, np.int64))] = 7.0
    np.testing.assert_array_equal(x.numpy(), want)
    y = x.detach()
    y.requires_grad_(True)
    with sx.no_grad():
        y[sx.tensor([0])] = 0.0  # a leaf that requires grad, written under no_grad
    assert y.detach().numpy()[0].sum() == 0
