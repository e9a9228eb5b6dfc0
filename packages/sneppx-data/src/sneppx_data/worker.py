"""The DataLoader worker process: its loop, its seed and what it can learn about itself."""

from __future__ import annotations

import os
import pickle
import random
import traceback
from dataclasses import dataclass
from typing import Any

import numpy as np
import sneppx_core as sx

from ._fetch import FetchSpec, make_fetcher
from ._shm import SegmentPool

_POLL_S = 1.0  # how often an idle worker checks that its parent is still alive


@dataclass(frozen=True)
class WorkerInfo:
    """What a DataLoader worker knows about itself (see :func:`get_worker_info`).

    Attributes:
        id: this worker's index in ``[0, num_workers)``.
        num_workers: how many workers the loader runs.
        seed: this worker's seed (``base_seed + id``, with ``base_seed`` drawn once per iterator).
        dataset: this worker's copy of the dataset.
    """

    id: int
    num_workers: int
    seed: int
    dataset: Any


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """Return the :class:`WorkerInfo` inside a DataLoader worker process, ``None`` elsewhere.

    An :class:`~sneppx_data.IterableDataset` uses it in ``__iter__`` to yield only its share of
    the stream, e.g. every ``num_workers``-th item starting at ``id``.
    """
    return _worker_info


class _PlainMessage(str):
    def __repr__(self) -> str:
        return str(self)


class ExceptionWrapper:
    """An exception raised in a worker, carried to the main process with its traceback."""

    def __init__(self, exc: BaseException, where: str) -> None:
        self.exc_type = type(exc)
        try:
            pickle.dumps(self.exc_type)
        except Exception:
            self.exc_type = RuntimeError
        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        self.message = f"Caught {type(exc).__name__} {where}.\nOriginal {tb}"

    def reraise(self):
        """Raise the exception again, same type when possible, with the worker's traceback."""
        # KeyError's str() is the repr of its argument; keep the traceback readable.
        msg = _PlainMessage(self.message) if self.exc_type is KeyError else self.message
        try:
            exc = self.exc_type(msg)
        except Exception:
            exc = RuntimeError(self.message)
        raise exc


def seed_worker(seed: int, worker_id: int) -> None:
    """Seed ``random``, NumPy's global generator and sneppx_core's generator in a worker."""
    random.seed(seed)
    sx.manual_seed(seed)
    np.random.seed(np.random.SeedSequence([worker_id, seed]).generate_state(4))


def _receive(conn, parent_pid: int):
    """The next message from the main process, or None when it is gone or says to stop."""
    while True:
        try:
            if conn.poll(_POLL_S):
                return conn.recv()
        except (EOFError, OSError):
            return None
        if os.getppid() != parent_pid:
            return None


def _run_task(spec: FetchSpec, fetcher, pool: SegmentPool, task_id: int, index, where: str):
    try:
        batch = fetcher.fetch(index)
    except StopIteration:
        if spec.is_iterable:
            return ("stop", task_id)
        return ("error", task_id, ExceptionWrapper(RuntimeError("StopIteration in __getitem__"), where))
    except Exception as exc:  # noqa: BLE001 - every failure goes back to the main process
        return ("error", task_id, ExceptionWrapper(exc, where))
    try:
        return ("ok", task_id, pool.write(batch))
    except Exception as exc:  # noqa: BLE001
        return ("error", task_id, ExceptionWrapper(exc, where))


def worker_loop(conn, spec: FetchSpec, worker_id: int, seed: int, prefix: str, parent_pid: int) -> None:
    """Body of a worker process: serve ``task`` messages until told to stop.

    Messages from the main process: ``("task", id, index)``, ``("release", segment_name)``,
    ``("reset",)`` (a new epoch of a persistent worker) and ``None`` (exit). Replies:
    ``("ok", id, payload)``, ``("stop", id)`` (iterable dataset exhausted) and
    ``("error", id, ExceptionWrapper)``.
    """
    global _worker_info
    _worker_info = WorkerInfo(worker_id, spec.num_workers, seed, spec.dataset)
    where = f"in DataLoader worker process {worker_id}"
    init_error, fetcher = None, None
    try:
        # One intra-op thread per worker, as in PyTorch: N workers each running the parent's
        # thread count would oversubscribe the cores. worker_init_fn may raise it again.
        sx.set_num_threads(1)
        seed_worker(seed, worker_id)
        if spec.worker_init_fn is not None:
            spec.worker_init_fn(worker_id)
        fetcher = make_fetcher(spec)
    except Exception as exc:  # noqa: BLE001
        init_error = ("error", None, ExceptionWrapper(exc, where))
    pool = SegmentPool(f"{prefix}{worker_id}_")
    try:
        while True:
            msg = _receive(conn, parent_pid)
            if msg is None:
                break
            if msg[0] == "task":
                reply = (init_error[0], msg[1], init_error[2]) if init_error else None
                conn.send(reply or _run_task(spec, fetcher, pool, msg[1], msg[2], where))
            elif msg[0] == "release":
                pool.release(msg[1])
            elif msg[0] == "reset" and init_error is None:
                fetcher = make_fetcher(spec)
    except (KeyboardInterrupt, BrokenPipeError, EOFError):
        pass
    finally:
        pool.close()
        conn.close()
