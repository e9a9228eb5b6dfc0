"""DistributedDataParallel on 2 ranks matches one process trained on the full batches."""

import pytest
import sneppx_distributed as dist
from distributed_helpers import ddp_overlap, ddp_train, ddp_unused

TOL = 1e-5


@pytest.mark.parametrize("mode, cap, thread", [("halves", 0.004, False), ("halves", 0.004, True), ("no_sync", 25, None)])
def test_ddp_matches_single_process(mode, cap, thread):
    kwargs = {"bucket_cap_mb": cap, "progress_thread": thread}
    res = dist.launch(ddp_train, nprocs=2, args=(mode,), kwargs=kwargs, timeout=60)
    assert res["max_diff"] < TOL
    assert (res["buckets"] > 2) if cap < 0.01 else (res["buckets"] == 1)  # 4 KB buckets split the MLP
    assert res["keys"] == ["net.0.bias", "net.0.weight", "net.2.bias", "net.2.weight"]


@pytest.mark.parametrize("zero", ["none", "inplace", "replace"])
@pytest.mark.parametrize("mode", ["halves", "no_sync"])
def test_ddp_gradients_are_bucket_views(mode, zero):
    """After each synced backward every .grad is a view into a bucket, whether the gradients were set to
    None, zeroed in place or replaced by new tensors since the last step; training still matches."""
    res = dist.launch(ddp_train, nprocs=2, args=(mode,), kwargs={"bucket_cap_mb": 0.004, "zero": zero}, timeout=60)
    assert res["max_diff"] < TOL
    assert res["grads_in_buckets"]


def test_ddp_bucket_views_with_sneppx_optim():
    pytest.importorskip("sneppx_optim")
    res = dist.launch(ddp_train, nprocs=2, args=("halves",), kwargs={"bucket_cap_mb": 0.004, "zero": "optim"},
                      timeout=60)
    assert res["max_diff"] < TOL
    assert res["grads_in_buckets"]


def test_ddp_without_bucket_views_copies():
    res = dist.launch(ddp_train, nprocs=2, args=("halves",), kwargs={"gradient_as_bucket_view": False}, timeout=60)
    assert res["max_diff"] < TOL
    assert res["grads_outside_buckets"]


def test_ddp_with_distributed_sampler():
    pytest.importorskip("sneppx_data")
    res = dist.launch(ddp_train, nprocs=2, args=("sampler",), timeout=60)
    assert res["max_diff"] < TOL


def test_ddp_with_sneppx_nn_layers():
    nn = pytest.importorskip("sneppx_nn")
    if not all(hasattr(nn, name) for name in ("Linear", "GELU", "Sequential")):
        pytest.skip("sneppx_nn has no Linear/GELU/Sequential yet")
    res = dist.launch(ddp_train, nprocs=2, args=("halves",), kwargs={"use_nn": True}, timeout=60)
    assert res["max_diff"] < TOL


def test_ddp_find_unused_parameters():
    res = dist.launch(ddp_unused, nprocs=2, args=(True, True), timeout=60, job_timeout=60)
    assert res["error"] is None
    assert res["diff"] < TOL  # averaged gradients of rank 0's weights over both ranks' data
    assert res["unused_grad_is_none"]
    assert res["buffers"] == [0.0, 0.0]  # rank 1 started with 1.0 and received rank 0's buffer
    assert res["state_keys"]


@pytest.mark.parametrize("thread", [False, True])
def test_ddp_unused_parameter_without_find_unused_raises(thread):
    res = dist.launch(ddp_unused, nprocs=2, args=(False, thread), timeout=60, job_timeout=60)
    assert "find_unused_parameters=True" in res["error"] and "unused.weight" in res["error"]


def test_ddp_overlaps_communication_with_backward():
    """Over a link where each bucket's all-reduce takes 50 ms, buckets start while backward still
    runs: only about the last bucket's time is left to wait for once backward ends."""
    res = dist.launch(ddp_overlap, nprocs=2, timeout=60, job_timeout=120)
    assert res["buckets"] == 4
    assert res["diff"] < TOL
    assert res["comm_s"] >= 0.2 - 1e-9
    assert res["exposed_s"] < 0.5 * res["comm_s"], res


@pytest.mark.parametrize("thread", [False, True])
def test_ddp_on_one_rank(thread):
    res = dist.launch(ddp_train, nprocs=1, args=("halves",), kwargs={"progress_thread": thread}, timeout=60)
    assert res["max_diff"] < TOL
    assert res["grads_in_buckets"]
