"""The multi-process DataLoader iterator.

Each worker has one duplex pipe. Tasks (batch indices) go out round-robin, at most
``prefetch_factor`` per worker in flight; since a worker answers its tasks in order, the main
process always knows which pipe holds the next batch and waits on that pipe together with the
worker's process sentinel, so a worker that dies is reported instead of waited for. Batches
come back through shared memory (see ``_shm``) and in sampler order, so the result does not
depend on the number of workers.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sys
import time
import weakref
from multiprocessing.connection import wait

from ._rng import draw_seed
from ._segments import segment_prefix, sweep_orphans, sweep_segments
from ._shm import SegmentReader
from .worker import worker_loop

_JOIN_S = 5.0
_GRACE_S = 2.0


def get_context(context):
    """The multiprocessing context to start workers with (``fork`` on Linux by default)."""
    if context is None:
        if sys.platform.startswith("linux") and "fork" in mp.get_all_start_methods():
            return mp.get_context("fork")
        return mp.get_context()
    if isinstance(context, str):
        return mp.get_context(context)
    return context


def _start_tracker() -> None:
    # Start Python's resource tracker before forking so that all workers share it instead of
    # each starting one (SharedMemory talks to it on Python < 3.13).
    if sys.version_info < (3, 13):
        from multiprocessing import resource_tracker

        resource_tracker.ensure_running()


def shutdown_workers(workers, conns, reader: SegmentReader, prefix: str, grace: list) -> None:
    """Stop the workers, reap them and free shared memory.

    Workers are asked to exit and given ``grace[0]`` seconds (they may be inside a slow
    ``__getitem__``) before being terminated; after a failure the grace is 0.
    """
    for conn in conns:
        try:
            conn.send(None)
        except (OSError, ValueError):
            pass
        conn.close()  # a worker still reading sees the exit message, then end of file
    deadline = time.monotonic() + grace[0]
    for p in workers:
        p.join(max(0.0, deadline - time.monotonic()))
        if p.is_alive():
            p.terminate()
            p.join(_JOIN_S)
    reader.close()
    sweep_segments(prefix)


def _death_message(worker_id: int, proc) -> str:
    code = proc.exitcode
    how = f"exit code {code}"
    if code is not None and code < 0:
        try:
            how = f"signal {signal.Signals(-code).name}"
        except ValueError:
            how = f"signal {-code}"
    return f"DataLoader worker {worker_id} (pid {proc.pid}) exited unexpectedly with {how}"


class MultiProcessIter:
    """Iterator over a DataLoader's batches produced by ``num_workers`` worker processes."""

    def __init__(self, loader, index_batches) -> None:
        self._index_batches = index_batches
        self._n = loader.num_workers
        self._per_worker = loader.prefetch_factor
        self._timeout = loader.timeout
        self._persistent = loader.persistent_workers
        self._length = len(loader) if hasattr(loader.dataset, "__len__") else None
        self._base_seed = draw_seed(loader._seed_source)
        self._reader, self._prefix = SegmentReader(), segment_prefix()
        self._workers, self._conns, self._grace = [], [], [_GRACE_S]
        # Registered before any worker starts, so a failure half-way still cleans up.
        self._finalizer = weakref.finalize(
            self, shutdown_workers, self._workers, self._conns, self._reader, self._prefix, self._grace
        )
        self._closed = False
        try:
            self._start_workers(loader)
        except BaseException:
            self._shutdown(grace=0.0)
            raise
        self._reset(first=True)

    def _start_workers(self, loader) -> None:
        spec = loader._fetch_spec()
        ctx = get_context(loader.multiprocessing_context)
        _start_tracker()
        sweep_orphans()  # segments of loaders killed before they could clean up
        for i in range(self._n):
            parent_conn, child_conn = ctx.Pipe(duplex=True)
            args = (child_conn, spec, i, self._base_seed + i, self._prefix, os.getpid())
            proc = ctx.Process(target=worker_loop, args=args, daemon=True)
            proc.start()
            child_conn.close()
            self._workers.append(proc)
            self._conns.append(parent_conn)

    @property
    def worker_pids(self) -> list[int]:
        """Process ids of this iterator's workers."""
        return [p.pid for p in self._workers]

    def _reset(self, first: bool = False) -> None:
        if not first:  # a new epoch for persistent workers: collect what is still in flight
            while self._rcvd < self._sent:
                self._take_next()
            for w in range(self._n):
                self._send(w, ("reset",))
        self._indices = self._index_batches()
        self._sent = self._rcvd = 0
        self._task_worker: dict = {}
        self._active = [True] * self._n
        self._next_worker = 0
        for _ in range(self._per_worker * self._n):
            if not self._dispatch():
                break

    def _dispatch(self) -> bool:
        for _ in range(self._n):
            w = self._next_worker
            self._next_worker = (w + 1) % self._n
            if self._active[w]:
                break
        else:
            return False
        index = None
        if self._indices is not None:
            index = next(self._indices, None)
            if index is None:
                return False
        self._send(w, ("task", self._sent, index))
        self._task_worker[self._sent] = w
        self._sent += 1
        return True

    def _send(self, w: int, msg) -> None:
        try:
            self._conns[w].send(msg)
        except OSError:
            self._report_death(w)

    def _report_death(self, w: int):
        proc = self._workers[w]
        proc.join(_JOIN_S)
        message = _death_message(w, proc)
        self._shutdown(grace=0.0)
        raise RuntimeError(message)

    def _receive(self, w: int):
        conn, proc = self._conns[w], self._workers[w]
        try:
            if conn.poll():  # already there: skip building a selector
                return conn.recv()
        except (EOFError, OSError):
            self._report_death(w)
        ready = wait([conn, proc.sentinel], timeout=self._timeout if self._timeout > 0 else None)
        if not ready:
            self._shutdown(grace=0.0)
            raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds waiting for worker {w}")
        try:
            if conn.poll():
                return conn.recv()
        except (EOFError, OSError):
            pass
        self._report_death(w)

    def _take_next(self):
        """Receive the result of the oldest task in flight and free its segment."""
        w = self._task_worker.pop(self._rcvd)
        msg = self._receive(w)
        self._rcvd += 1
        if msg[0] == "ok":
            batch = self._reader.read(msg[2])
            if msg[2][1] is not None:
                self._send(w, ("release", msg[2][1]))
            return w, "ok", batch
        return w, msg[0], (msg[2] if msg[0] == "error" else None)

    def __iter__(self):
        return self

    def __next__(self):
        while True:
            if self._closed or self._rcvd >= self._sent:
                if not self._persistent:
                    self._shutdown()
                raise StopIteration
            w, kind, value = self._take_next()
            if kind == "stop":
                self._active[w] = False
                self._dispatch()
                continue
            self._dispatch()
            if kind == "error":
                value.reraise()
            return value

    def __len__(self) -> int:
        if self._length is None:
            raise TypeError("DataLoader: the dataset has no __len__")
        return self._length

    def _shutdown(self, grace: float = _GRACE_S) -> None:
        """Stop and reap the workers and free their shared memory (idempotent)."""
        self._closed = True
        self._grace[0] = grace
        self._finalizer()

    close = _shutdown
