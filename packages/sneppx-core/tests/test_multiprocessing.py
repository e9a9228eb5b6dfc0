"""Shared-memory tensors (``share_memory_``, ``is_shared``) and ``sneppx_core.multiprocessing``: writes made
in another process (spawned, forked, or reached through a queue) are seen here; other tensors are copies."""

import copy
import os
import pickle

import numpy as np
import pytest
import sneppx_core as sx
from sneppx_core import multiprocessing as mp

pytestmark = pytest.mark.skipif(not sx._HAS_C_BACKEND or not hasattr(os, "memfd_create"),
                                reason="needs the compiled core and memfd_create")


def _add_one(t, done):
    t.add_(1)
    done.put(bool(t.is_shared()))


def _times_ten_from_queue(q):
    q.get().mul_(10)


@pytest.mark.parametrize("dtype", [sx.float32, sx.float64, sx.bfloat16, sx.int64, sx.uint8])
def test_share_memory_keeps_values_geometry_and_autograd(dtype):
    base = sx.arange(12).reshape(3, 4).to(dtype)
    t = base.t()  # strided: the whole storage moves, the view keeps its strides
    want = t.float().numpy().copy()
    assert not t.is_shared()
    assert t.share_memory_() is t and t.is_shared()
    assert t.dtype == dtype and t.shape == (4, 3) and t.stride() == (1, 4)
    np.testing.assert_array_equal(t.float().numpy(), want)
    assert not base.is_shared()  # other views keep the old storage
    assert t.share_memory_() is t  # a no-op the second time
    b = sx.tensor([True, False, True]).share_memory_()
    assert b.is_shared() and b.numpy().tolist() == [True, False, True]
    e = sx.zeros(0, 5).share_memory_()
    assert e.is_shared() and e.shape == (0, 5)
    w = sx.randn(3, requires_grad=True)
    w.share_memory_()
    assert w.requires_grad and w.is_leaf and w.is_shared()
    (w * 2).sum().backward()
    assert w.grad.numpy().tolist() == [2.0, 2.0, 2.0]


def test_copies_are_not_shared():
    t = sx.arange(4.0).share_memory_()
    for c in (copy.deepcopy(t), pickle.loads(pickle.dumps(t)), t.clone()):
        assert not c.is_shared() and c.numpy().tolist() == [0.0, 1.0, 2.0, 3.0]
        c.add_(5)
    assert t.numpy().tolist() == [0.0, 1.0, 2.0, 3.0]
    assert t.untyped_storage().is_shared()
    with pytest.raises(NotImplementedError, match="call share_memory_\\(\\) on the tensor"):
        t.untyped_storage().share_memory_()


@pytest.mark.parametrize("method", ["spawn", "fork", "forkserver"])
def test_a_child_writes_into_shared_memory(method):
    ctx = mp.get_context(method)
    shared, private = sx.arange(6.0).reshape(2, 3).share_memory_(), sx.arange(3.0)
    done = ctx.Queue()
    p = ctx.Process(target=_add_one, args=(shared, done))
    p.start()
    p.join(60)
    assert p.exitcode == 0 and done.get(timeout=10) is True
    np.testing.assert_array_equal(shared.numpy(), np.arange(6.0).reshape(2, 3) + 1)
    p = ctx.Process(target=_add_one, args=(private, done))
    p.start()
    p.join(60)
    assert p.exitcode == 0 and done.get(timeout=10) is False
    assert private.numpy().tolist() == [0.0, 1.0, 2.0]  # a copy went over


def test_shared_tensor_through_a_queue():
    ctx = mp.get_context("spawn")
    t = sx.ones(2, 2)[:, 1].share_memory_()
    q = ctx.Queue()
    p = ctx.Process(target=_times_ten_from_queue, args=(q,))
    p.start()
    q.put(t)
    p.join(60)
    assert p.exitcode == 0 and t.numpy().tolist() == [10.0, 10.0]


def _fill_rank(i, out):
    out[i] = i + 1


def _raise_at_one(i):
    if i == 1:
        raise ValueError("rank one fails")


def _exit_three(i):
    os._exit(3)


def test_spawn_runs_every_rank_and_reraises():
    out = sx.zeros(3).share_memory_()
    assert mp.spawn(_fill_rank, args=(out,), nprocs=3) is None
    assert out.numpy().tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(mp.ProcessRaisedException, match="rank one fails") as info:
        mp.spawn(_raise_at_one, nprocs=2)
    assert info.value.error_index == 1 and "Traceback" in str(info.value)
    with pytest.raises(mp.ProcessExitedException, match="exit code 3") as info:
        mp.start_processes(_exit_three, nprocs=1, start_method="fork")
    assert info.value.exit_code == 3
    ctx = mp.spawn(_fill_rank, args=(out,), nprocs=2, join=False)
    assert len(ctx.pids()) == 2
    while not ctx.join():
        pass


def test_sharing_strategies():
    assert mp.get_all_sharing_strategies() == {"file_descriptor", "file_system"}
    mp.set_sharing_strategy("file_system")
    assert mp.get_sharing_strategy() == "file_system"
    mp.set_sharing_strategy("file_descriptor")
    with pytest.raises(ValueError, match="unknown strategy"):
        mp.set_sharing_strategy("cuda_ipc")
    assert mp.Process is not None and mp.Queue is not None and mp.cpu_count() >= 1
