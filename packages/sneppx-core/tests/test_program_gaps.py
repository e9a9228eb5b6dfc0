"""What pytorch/examples programs stopped on: Tensor's legacy sizes form, range indices, where() of two numbers,
OMP_NUM_THREADS (against NumPy and hand-computed values, and PyTorch under the parity marker)."""

import os
import subprocess
import sys

import numpy as np
import pytest

import sneppx_core as sx

pytestmark = pytest.mark.skipif(sx._BACKEND != "c", reason="compiled-backend bindings")


def test_tensor_legacy_sizes_form():
    t = sx.Tensor(2, 3)
    assert t.shape == (2, 3) and t.dtype == sx.get_default_dtype() and not t.numpy().any()
    assert sx.Tensor(4, 0, 2).shape == (4, 0, 2)
    e = sx.Tensor()
    assert e.shape == (0,) and e.dtype == sx.float32
    # one argument is data, as tensor(data) (the migration guide's Tensor([...]))
    assert sx.Tensor(5).shape == () and sx.Tensor(5).item() == 5
    assert sx.Tensor([1, 2]).dtype == sx.int64
    t = sx.Tensor(data=[1.5], dtype=sx.float64, requires_grad=True)
    assert t.dtype == sx.float64 and t.requires_grad
    assert sx.Tensor([1.0], sx.float64).dtype == sx.float64
    for bad, match in [(lambda: sx.Tensor([1], foo=1), "unexpected keyword argument 'foo'"),
                       (lambda: sx.Tensor([1], data=[2]), "multiple values for argument 'data'"),
                       (lambda: sx.Tensor(dtype=sx.float32), "missing the data argument"),
                       (lambda: sx.Tensor([1, 2], requires_grad=True), "floating point")]:
        with pytest.raises((TypeError, RuntimeError), match=match):
            bad()


def test_range_indices_are_lists_of_ints():
    x = sx.zeros(3, 4)
    x[range(3), sx.tensor([0, 1, 3])] = 5.0
    ref = np.zeros((3, 4), np.float32)
    ref[range(3), [0, 1, 3]] = 5.0
    np.testing.assert_array_equal(x.numpy(), ref)
    a = np.arange(12.0).reshape(3, 4)
    t = sx.tensor(a)
    for idx in (range(1, 3), (slice(None), range(2)), (range(0, 3, 2), range(2)), range(0)):
        np.testing.assert_array_equal(t[idx].numpy(), a[idx])
    with pytest.raises(IndexError):
        t[range(5)]


def test_where_of_two_numbers():
    c = sx.tensor([0.2, 0.7]) > 0.5
    cases = [((1, 0), sx.int64, [0, 1]), ((1.5, 0), sx.float32, [0.0, 1.5]), ((2, 0.5), sx.float32, [0.5, 2.0]),
             ((True, False), sx.bool, [False, True])]
    for (a, b), dt, want in cases:
        got = sx.where(c, a, b)
        assert got.dtype == dt and got.tolist() == want, (a, b, got)
    with pytest.raises(TypeError, match="where"):
        sx.where(c, "a", 1)


def test_omp_num_threads_sets_the_default_thread_count():
    code = "import sneppx_core as sx; print(sx.get_num_threads())"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1"
    env["OMP_NUM_THREADS"] = "junk"  # ignored: the hardware's count
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert int(out.stdout.strip()) == (os.cpu_count() or 1)


@pytest.mark.parity
def test_program_gaps_match_torch(torch):
    assert tuple(torch.Tensor(2, 3).shape) == tuple(sx.Tensor(2, 3).shape)
    assert torch.Tensor(2, 3).dtype == torch.float32 and tuple(torch.Tensor().shape) == (0,)
    c = np.array([False, True])
    for a, b in [(1, 0), (1.5, 0), (2, 0.5), (True, False)]:
        ours, theirs = sx.where(sx.tensor(c), a, b), torch.where(torch.tensor(c), a, b)
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        assert ours.tolist() == theirs.tolist()
    x = np.arange(12.0).reshape(3, 4)
    for idx in (range(1, 3), (slice(None), range(2)), (range(0, 3, 2), range(2))):
        np.testing.assert_array_equal(sx.tensor(x)[idx].numpy(), torch.tensor(x)[idx].numpy())
