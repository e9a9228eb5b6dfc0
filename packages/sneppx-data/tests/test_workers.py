"""DataLoader with worker processes: order, seeds, sharding, errors, shutdown and cleanup."""

import gc
import os
import random
import signal
import time

import numpy as np
import pytest
import sneppx_core as sx
from conftest import to_np

from sneppx_data import DataLoader, Dataset, IterableDataset, TensorDataset, get_worker_info

pytestmark = pytest.mark.usefixtures("no_shm_leak", "alarm")


@pytest.fixture
def alarm():
    """Turn a hang into a failure: SIGALRM after 30 s."""
    def on_alarm(signum, frame):
        raise TimeoutError("test hung")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(30)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


class Records(Dataset):
    """Item i: a dict with an array, a string and the worker's view of itself."""

    def __len__(self):
        return 37

    def __getitem__(self, i):
        info = get_worker_info()
        return {
            "x": np.arange(3, dtype=np.float32) + i,
            "name": f"item{i}",
            "worker": -1 if info is None else info.id,
            "seed": -1 if info is None else info.seed,
            "np": int(np.random.randint(1 << 30)),
            "py": random.random(),
        }


class Failing(Dataset):
    def __init__(self, bad, how="raise"):
        self.bad, self.how = bad, how

    def __len__(self):
        return 20

    def __getitem__(self, i):
        if i == self.bad:
            if self.how == "raise":
                raise ValueError(f"bad sample {i}")
            if self.how == "exit":
                os._exit(3)
            if self.how == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            if self.how == "sleep":
                time.sleep(5)
        return i


class Sharded(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        wid, nw = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(wid, self.n, nw))


class BigText(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return "x" * 10000 + str(i)


def _gone(pid, wait_s=5.0):
    """True once ``pid`` is neither running nor a zombie (its /proc entry is gone)."""
    deadline = time.time() + wait_s
    while time.time() < deadline:
        if not os.path.exists(f"/proc/{pid}"):
            return True
        time.sleep(0.02)
    return False


def _ids(batches):
    return np.concatenate([to_np(b[1]) for b in batches]).tolist()


def _tensor_data(n=203):
    x = np.random.default_rng(0).standard_normal((n, 6)).astype(np.float32)
    return TensorDataset(sx.Tensor(x), sx.Tensor(np.arange(n, dtype=np.int64))), x


@pytest.mark.parametrize("num_workers", [1, 2, 3])
def test_same_batches_and_order_as_single_process(num_workers):
    ds, x = _tensor_data()
    ref = list(DataLoader(ds, batch_size=16, shuffle=True, generator=3))
    got = list(DataLoader(ds, batch_size=16, shuffle=True, generator=3, num_workers=num_workers))
    assert len(got) == len(ref) == 13
    for (a, b), (c, d) in zip(got, ref):
        np.testing.assert_array_equal(to_np(a), to_np(c))
        np.testing.assert_array_equal(to_np(b), to_np(d))
        np.testing.assert_array_equal(to_np(a), x[to_np(b)])


def test_order_follows_manual_seed_whatever_num_workers():
    ds, _ = _tensor_data()
    orders = []
    for nw in (0, 2):
        sx.manual_seed(123)
        orders.append(_ids(DataLoader(ds, batch_size=32, shuffle=True, num_workers=nw)))
    assert orders[0] == orders[1] and sorted(orders[0]) == list(range(203))


def test_each_worker_is_seeded_and_knows_itself():
    assert get_worker_info() is None
    loader = DataLoader(Records(), batch_size=4, num_workers=2, generator=9)
    batches = list(loader)
    names = [n for b in batches for n in b["name"]]
    assert names == [f"item{i}" for i in range(37)]
    np.testing.assert_array_equal(to_np(batches[1]["x"]), np.arange(3) + np.arange(4, 8)[:, None])
    workers = np.concatenate([to_np(b["worker"]) for b in batches])
    seeds = np.concatenate([to_np(b["seed"]) for b in batches])
    assert set(workers.tolist()) == {0, 1}
    assert workers.tolist()[:8] == [0] * 4 + [1] * 4  # round-robin batches
    base = seeds[workers == 0][0]
    assert np.all(seeds == base + workers)
    draws = np.concatenate([to_np(b["np"]) for b in batches])
    first0, first1 = draws[workers == 0][0], draws[workers == 1][0]
    assert first0 != first1  # different NumPy streams per worker
    again = list(DataLoader(Records(), batch_size=4, num_workers=2, generator=9))
    assert np.concatenate([to_np(b["np"]) for b in again]).tolist() == draws.tolist()


def test_iterable_dataset_sharded_by_worker_info():
    loader = DataLoader(Sharded(50), batch_size=4, num_workers=3)
    out = np.concatenate([to_np(b) for b in loader]).tolist()
    assert sorted(out) == list(range(50))
    again = np.concatenate([to_np(b) for b in DataLoader(Sharded(50), batch_size=4, num_workers=3)])
    assert again.tolist() == out


def test_worker_exception_reraised_with_traceback():
    loader = DataLoader(Failing(5), batch_size=2, num_workers=2)
    it = iter(loader)
    assert to_np(next(it)).tolist() == [0, 1]
    assert to_np(next(it)).tolist() == [2, 3]
    with pytest.raises(ValueError) as info:
        next(it)
    text = str(info.value)
    assert "in DataLoader worker process 0" in text
    assert "bad sample 5" in text and "__getitem__" in text and "Traceback" in text
    assert to_np(next(it)).tolist() == [6, 7]  # the loader goes on after the error
    del it


def test_worker_init_fn_runs_and_its_errors_surface():
    def init(worker_id):
        np.random.seed(1000 + worker_id)

    ds = Records()
    batches = list(DataLoader(ds, batch_size=4, num_workers=2, worker_init_fn=init))
    draws = np.concatenate([to_np(b["np"]) for b in batches])
    workers = np.concatenate([to_np(b["worker"]) for b in batches])
    assert draws[workers == 1][0] == np.random.RandomState(1001).randint(1 << 30)

    def broken(worker_id):
        raise KeyError("no config")

    with pytest.raises(KeyError, match="no config"):
        next(iter(DataLoader(ds, batch_size=4, num_workers=1, worker_init_fn=broken)))


@pytest.mark.parametrize("how", ["exit", "kill"])
def test_dead_worker_is_reported_not_waited_for(how):
    it = iter(DataLoader(Failing(7, how), batch_size=2, num_workers=2))
    pids = it.worker_pids
    t0 = time.time()
    with pytest.raises(RuntimeError, match="exited unexpectedly"):
        for _ in it:
            pass
    assert time.time() - t0 < 10
    assert all(_gone(p) for p in pids)


def test_timeout_raises():
    it = iter(DataLoader(Failing(0, "sleep"), batch_size=2, num_workers=1, timeout=0.3))
    pids = it.worker_pids
    with pytest.raises(RuntimeError, match="timed out"):
        next(it)
    assert all(_gone(p, 10) for p in pids)


def test_dropped_iterator_shuts_workers_down():
    ds, _ = _tensor_data()
    it = iter(DataLoader(ds, batch_size=8, num_workers=2))
    next(it)
    pids = it.worker_pids
    del it
    gc.collect()
    assert all(_gone(p) for p in pids)


def test_persistent_workers_reused_and_reaped_when_loader_is_collected():
    ds, _ = _tensor_data()
    loader = DataLoader(ds, batch_size=50, num_workers=2, persistent_workers=True)
    it = iter(loader)
    first = _ids(it)
    pids = it.worker_pids
    second = _ids(iter(loader))
    assert first == second == list(range(203))
    assert iter(loader).worker_pids == pids  # same processes, new epoch
    next(iter(loader))  # leave an epoch unfinished: the next epoch still starts clean
    assert _ids(iter(loader)) == first
    del loader, it
    gc.collect()
    assert all(_gone(p) for p in pids)


def test_persistent_iterable_restarts_each_epoch():
    loader = DataLoader(Sharded(12), batch_size=5, num_workers=2, persistent_workers=True)
    a = sorted(np.concatenate([to_np(b) for b in loader]).tolist())
    b = sorted(np.concatenate([to_np(b) for b in loader]).tolist())
    assert a == b == list(range(12))


def test_large_plain_python_batches_travel_intact():
    out = list(DataLoader(BigText(), batch_size=2, num_workers=2))
    assert out == [["x" * 10000 + "0", "x" * 10000 + "1"], ["x" * 10000 + "2", "x" * 10000 + "3"]]


def test_variable_batch_sizes_reuse_and_replace_segments():
    class Growing(Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return np.full((1 << (16 + 2 * i)) // 4, i, np.float32)  # 64 KiB .. 16 MiB

    loader = DataLoader(Growing(), batch_size=1, num_workers=1)
    sizes = [(b.shape[1], float(to_np(b)[0, -1])) for b in loader]
    assert sizes == [((1 << (16 + 2 * i)) // 4, float(i)) for i in range(5)]


class CoreOps(Dataset):
    """Items computed with sneppx_core ops large enough to use the core's thread pool."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        t = sx.full((512, 512), float(i), dtype=sx.float32)
        return (t * 2.0 + 1.0).sum()


def test_core_ops_work_inside_forked_workers():
    sx.full((512, 512), 1.0, dtype=sx.float32).sum()  # the parent has used the pool before forking
    out = list(DataLoader(CoreOps(), batch_size=2, num_workers=2))
    got = np.concatenate([to_np(b) for b in out])
    np.testing.assert_allclose(got, [(2.0 * i + 1.0) * 512 * 512 for i in range(4)], rtol=1e-6)


class ThreadCount(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return sx.get_num_threads()


def _two_threads(worker_id):
    sx.set_num_threads(2)


def test_workers_run_one_thread_unless_worker_init_fn_says_otherwise():
    before = sx.get_num_threads()
    sx.set_num_threads(2)
    try:
        got = list(DataLoader(ThreadCount(), batch_size=2, num_workers=2))
        assert np.concatenate([to_np(b) for b in got]).tolist() == [1, 1, 1, 1]
        assert sx.get_num_threads() == 2  # the parent keeps its own count
        got = list(DataLoader(ThreadCount(), batch_size=2, num_workers=2, worker_init_fn=_two_threads))
        assert np.concatenate([to_np(b) for b in got]).tolist() == [2, 2, 2, 2]
    finally:
        sx.set_num_threads(before)


class CoreTyped(Dataset):
    """Tensor samples of dtypes NumPy cannot hold (bfloat16) next to ordinary ones."""

    def __len__(self):
        return 6

    def __getitem__(self, i):
        return sx.full((3,), float(i) + 0.5, dtype=sx.bfloat16), sx.Tensor(np.arange(2, dtype=np.int32) + i)


def test_core_dtypes_survive_the_trip_from_workers():
    ref = list(DataLoader(CoreTyped(), batch_size=4))
    got = list(DataLoader(CoreTyped(), batch_size=4, num_workers=2))
    assert len(got) == len(ref) == 2
    for (a, b), (c, d) in zip(got, ref):
        assert a.dtype == c.dtype == sx.bfloat16 and b.dtype == d.dtype == sx.int32
        np.testing.assert_array_equal(to_np(a.float()), to_np(c.float()))
        np.testing.assert_array_equal(to_np(b), to_np(d))


def test_token_dataset_through_workers(tmp_path):
    from sneppx_data import TokenDataset

    tok = np.random.default_rng(0).integers(0, 50000, 5000).astype(np.uint16)
    tok.tofile(tmp_path / "tokens.bin")
    ds = TokenDataset(tmp_path / "tokens.bin", seq_len=32, dtype="uint16")
    ref = list(DataLoader(ds, batch_size=8, shuffle=True, generator=1))
    for context in (None, "spawn"):  # spawn pickles the dataset: it travels as its path
        got = list(DataLoader(ds, batch_size=8, shuffle=True, generator=1, num_workers=1,
                              multiprocessing_context=context))
        assert len(got) == len(ref)
        for (x, y), (x2, y2) in zip(got, ref):
            np.testing.assert_array_equal(to_np(x), to_np(x2))
            np.testing.assert_array_equal(to_np(x)[:, 1:], to_np(y)[:, :-1])


def test_unpicklable_dataset_with_spawn_fails_cleanly():
    ds = Failing(-1)
    ds.hook = lambda: None  # a lambda cannot be pickled for a spawned worker
    with pytest.raises(Exception, match="pickle|Pickl"):
        iter(DataLoader(ds, batch_size=2, num_workers=1, multiprocessing_context="spawn"))
