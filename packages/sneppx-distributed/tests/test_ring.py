"""The ring all-reduce that averages DDP's gradient buckets, against a float64 NumPy mean."""

import numpy as np
import pytest
import sneppx_distributed as dist
from distributed_helpers import ring_average
from sneppx_distributed._ring import reduce_into

SIZES = (0, 1, 2, 3, 7, 1000, 65537, 300_001)  # empty, fewer elements than ranks, uneven chunks, many blocks


@pytest.mark.parametrize("nprocs, concurrent", [(2, False), (2, True), (3, True), (4, False)])
def test_ring_average_matches_the_mean(nprocs, concurrent):
    res = dist.launch(ring_average, nprocs=nprocs, args=(SIZES, "float32", concurrent), timeout=60)
    assert res["err"] < 1e-6 * nprocs, res
    assert res["same_bits"]


def test_ring_average_float64():
    res = dist.launch(ring_average, nprocs=2, args=((5, 100_003), "float64", True), timeout=60)
    assert res["err"] < 1e-15 and res["same_bits"], res


def test_reduce_into_in_blocks():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(200_003).astype(np.float32), rng.standard_normal(200_003).astype(np.float32)
    want = (a + b) * np.float32(0.25)
    got = a.copy()
    reduce_into(got, b, 0.25)
    np.testing.assert_array_equal(got, want)
    got = a.copy()
    reduce_into(got, b, None)
    np.testing.assert_array_equal(got, a + b)
