"""Shared-memory segments of the DataLoader: bounded while running, gone after any kind of exit."""

import glob
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from sneppx_data import DataLoader, Dataset
from sneppx_data import _segments

pytestmark = pytest.mark.usefixtures("no_shm_leak")


def _named(pid):
    """Segment names in /dev/shm owned by the loader of process ``pid``."""
    return sorted(os.path.basename(p) for p in glob.glob(f"/dev/shm/sxd{pid}_*"))


def _mapped(pid):
    """How many sneppx-data segments of loader ``pid`` this process has mapped."""
    with open("/proc/self/maps") as f:
        return len({w for line in f for w in line.split() if w.startswith(f"/dev/shm/sxd{pid}_")})


class Varying(Dataset):
    """Samples whose sizes jump around, so workers keep retiring segments that are too small."""

    def __len__(self):
        return 120

    def __getitem__(self, i):
        size = (1 + (i * 7919) % 23) << 17  # 128 KiB .. 3 MiB
        return np.full(size // 4, i, np.float32)


def test_unlink_quietly_removes_the_name():
    shm = _segments.create_segment(f"{_segments.segment_prefix()}unit", 4096)
    path = f"/dev/shm/{shm.name}"
    assert os.path.exists(path)
    _segments.unlink_quietly(shm)
    assert not os.path.exists(path)
    _segments.unlink_quietly(shm)  # already gone: no error


def test_live_segments_stay_bounded_during_an_epoch():
    workers, prefetch = 2, 2
    it = iter(DataLoader(Varying(), batch_size=1, num_workers=workers, prefetch_factor=prefetch))
    most_named = most_mapped = count = 0
    for batch in it:
        assert float(batch.numpy()[0, 0]) == count
        count += 1
        most_named = max(most_named, len(_named(os.getpid())))
        most_mapped = max(most_mapped, _mapped(os.getpid()))
    assert count == 120
    assert most_named <= workers * prefetch, most_named
    assert most_mapped <= workers * prefetch, most_mapped
    assert _named(os.getpid()) == [] and _mapped(os.getpid()) == 0


_SCRIPT = textwrap.dedent("""
    import os, sys, time
    import numpy as np
    from sneppx_data import DataLoader, Dataset

    class Big(Dataset):
        def __len__(self):
            return 40

        def __getitem__(self, i):
            return np.full(1 << 18, i, np.float32)

    it = iter(DataLoader(Big(), batch_size=2, num_workers=2, prefetch_factor=2))
    next(it)
    deadline = time.time() + 20
    while not [n for n in os.listdir("/dev/shm") if n.startswith(f"sxd{os.getpid()}_")]:
        if time.time() > deadline:
            sys.exit("no segment in flight")
        time.sleep(0.01)
    print(" ".join(map(str, it.worker_pids)), flush=True)
    time.sleep(60)
""")


def _start_loader_process():
    proc = subprocess.Popen([sys.executable, "-c", _SCRIPT], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    line = proc.stdout.readline()
    if not line:
        proc.wait(30)
        pytest.fail(f"loader process failed with exit code {proc.returncode}")
    return proc, [int(p) for p in line.split()]


def _wait_until(cond, seconds=10.0):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


def test_workers_unlink_their_segments_when_the_main_process_is_killed():
    proc, _ = _start_loader_process()
    try:
        assert _named(proc.pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        assert _wait_until(lambda: not _named(proc.pid)), _named(proc.pid)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        _segments.sweep_segments(f"sxd{proc.pid}_")


def test_next_loader_removes_leftovers_of_a_loader_killed_with_its_workers():
    proc, _ = _start_loader_process()
    mine = _segments.create_segment(f"{_segments.segment_prefix()}live", 4096)  # owner alive: kept
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # main process and workers at once
        proc.wait(10)
        left = _named(proc.pid)
        assert left, "the killed loader should have had segments in flight"
        assert list(DataLoader(list(range(4)), batch_size=2, num_workers=1))
        assert _named(proc.pid) == []
        assert os.path.exists(f"/dev/shm/{mine.name}")
    finally:
        _segments.unlink_quietly(mine)
        _segments.sweep_segments(f"sxd{proc.pid}_")
