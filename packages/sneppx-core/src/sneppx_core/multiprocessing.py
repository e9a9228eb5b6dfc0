"""``torch.multiprocessing``'s counterpart: Python's ``multiprocessing``, with tensors in shared memory.

Everything of the standard module is here (``Process``, ``Queue``, ``Pool``, ``set_start_method``,
``get_context``, ...). A tensor moved into shared memory (``Tensor.share_memory_``,
``Module.share_memory``) and passed to a process, through its arguments or a queue, is the same memory
there, under every start method (``_shared`` sends the memory file's descriptor); other tensors are
copied. ``spawn`` and ``start_processes`` run a function in ``nprocs`` processes as PyTorch's do,
re-raising a child's exception in the parent.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import traceback
from multiprocessing import *  # noqa: F401,F403

from . import _shared

_shared._register()
_STRATEGIES = {"file_descriptor", "file_system"}
_strategy = ["file_descriptor"]


def get_all_sharing_strategies() -> set:
    """The sharing strategies ``set_sharing_strategy`` accepts."""
    return set(_STRATEGIES)


def get_sharing_strategy() -> str:
    """The strategy last set (``"file_descriptor"`` by default)."""
    return _strategy[0]


def set_sharing_strategy(new_strategy: str) -> None:
    """Accepts PyTorch's two strategy names. SneppX passes shared tensors as memory-file descriptors
    under both (its files have no name, so ``"file_system"``'s leak of named files cannot happen)."""
    if new_strategy not in _STRATEGIES:
        raise ValueError(f"[set_sharing_strategy] unknown strategy {new_strategy!r}; expected one of "
                         f"{sorted(_STRATEGIES)}")
    _strategy[0] = new_strategy


class ProcessException(Exception):
    """A process started by ``spawn`` failed; ``error_index`` is its rank and ``pid`` its process id."""

    def __init__(self, msg: str, error_index: int, pid: int):
        super().__init__(msg)
        self.msg, self.error_index, self.pid = msg, error_index, pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """The process raised an exception; the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """The process exited with a non-zero code or was killed by a signal, without an exception."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code, self.signal_name)


SPAWN_NPROCS_ENV = "SNEPPX_SPAWN_NPROCS"  # set in the processes of start_processes (sneppx_distributed reads it)


def _wrap(fn, i, args, error_queue, nprocs):
    os.environ[SPAWN_NPROCS_ENV] = str(nprocs)
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass
    except Exception:
        error_queue.put(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The processes ``start_processes`` started: ``processes``, ``pids()`` and ``join()``."""

    def __init__(self, processes, error_queues):
        self.processes, self.error_queues = processes, error_queues

    def pids(self) -> list:
        """The process ids, in rank order."""
        return [p.pid for p in self.processes]

    def join(self, timeout=None) -> bool:
        """Waits up to ``timeout`` seconds (None: until one exits). True when every process has exited
        successfully, False while some still run. When one failed, the others are terminated and its
        exception is raised: ``ProcessRaisedException`` with the child's traceback, or
        ``ProcessExitedException`` with its exit code."""
        running = [p.sentinel for p in self.processes if p.exitcode is None]
        if running:
            multiprocessing.connection.wait(running, timeout=timeout)
        failed = next((i for i, p in enumerate(self.processes) if p.exitcode not in (None, 0)), None)
        if failed is None:
            return all(p.exitcode == 0 for p in self.processes)
        for p in self.processes:
            if p.is_alive():
                p.terminate()
            p.join()
        bad = self.processes[failed]
        if not self.error_queues[failed].empty():
            raise ProcessRaisedException(f"\n\n-- Process {failed} terminated with the following error:\n"
                                         f"{self.error_queues[failed].get()}", failed, bad.pid)
        code = bad.exitcode
        if code < 0:
            name = signal.Signals(-code).name
            raise ProcessExitedException(f"process {failed} terminated with signal {name}", failed, bad.pid, code,
                                         name)
        raise ProcessExitedException(f"process {failed} terminated with exit code {code}", failed, bad.pid, code)


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Runs ``fn(i, *args)`` for ``i`` in ``range(nprocs)``, each in a new process started with
    ``start_method``. With ``join``, waits for all and raises the first failure (see
    ``ProcessContext.join``); else returns the ``ProcessContext``."""
    ctx = multiprocessing.get_context(start_method)
    processes, queues = [], []
    for i in range(nprocs):
        q = ctx.SimpleQueue()
        p = ctx.Process(target=_wrap, args=(fn, i, tuple(args), q, nprocs), daemon=daemon)
        p.start()
        processes.append(p)
        queues.append(q)
    context = ProcessContext(processes, queues)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """``start_processes`` with the ``spawn`` start method by default (PyTorch's ``mp.spawn``)."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)


__all__ = list(multiprocessing.__all__) + [
    "spawn", "start_processes", "ProcessContext", "ProcessException", "ProcessRaisedException",
    "ProcessExitedException", "get_sharing_strategy", "set_sharing_strategy", "get_all_sharing_strategies"]
