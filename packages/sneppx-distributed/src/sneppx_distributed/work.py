"""Handles of non-blocking collectives, and waiting on MPI requests with a deadline.

MPI's blocking calls have no timeout, so every collective here is started as a non-blocking MPI
request and completed by polling ``MPI_Testall``, which is also what drives MPI's progress
engine: one second of busy polling (as MPI's own blocking calls do; yielding the CPU between
tests measurably slows large transfers on a loaded machine), then sleeps that grow to 1 ms,
until the group's deadline. A timed-out rank raises ``RuntimeError``; the
group's communicator is then unusable, so a process that exits after a timeout calls
``MPI_Abort`` to take the whole job down instead of hanging in ``MPI_Finalize``.
"""

from __future__ import annotations

import atexit
import sys
import time

from ._mpi import mpi

_SPIN_S, _MAX_SLEEP_S = 1.0, 1e-3
_ABORT_GRACE_S = 0.5
_broken = False


def _abort_if_broken() -> None:
    if _broken:
        sys.stderr.write("sneppx_distributed: aborting the MPI job after a collective timed out\n")
        sys.stderr.flush()
        # MPI_Abort makes mpiexec kill every process at once, and output still on its way from this
        # rank through mpiexec's forwarding is lost: give the traceback above a moment to get out.
        time.sleep(_ABORT_GRACE_S)
        mpi().COMM_WORLD.Abort(1)


def _mark_broken() -> None:
    global _broken
    if not _broken:
        _broken = True
        atexit.register(_abort_if_broken)


def poll(requests: list, statuses: list | None = None) -> bool:
    """Drive MPI progress once; True when every request has completed.

    Besides MPI requests, ``requests`` may hold operations made of several steps (objects with an
    ``advance()`` method, such as :class:`~sneppx_distributed._ring.RingAllreduce`), which post their
    next messages here."""
    if len(requests) == 1 and statuses is None and not hasattr(requests[0], "advance"):
        return requests[0].Test()  # one MPI request: no list to build or scan
    MPI = mpi()
    if any(hasattr(r, "advance") for r in requests):
        stepped = [r.advance() for r in requests if hasattr(r, "advance")]
        plain = [r for r in requests if not hasattr(r, "advance")]
        return MPI.Request.Testall(plain) and all(stepped)
    return MPI.Request.Testall(requests, statuses) if statuses is not None else MPI.Request.Testall(requests)


def wait_requests(requests: list, timeout: float, what: str, rank: int, statuses: list | None = None) -> None:
    """Poll ``requests`` until all complete, or raise ``RuntimeError`` after ``timeout`` seconds."""
    start = time.monotonic()
    spin_until, pause = start + _SPIN_S, 2e-5
    while not poll(requests, statuses):
        now = time.monotonic()
        if now - start > timeout:
            _mark_broken()
            raise RuntimeError(
                f"{what}: rank {rank} timed out after {timeout:g} s waiting for its peers (a peer has "
                "exited, crashed, hung or called a different collective); the job must be aborted"
            )
        if now > spin_until:
            time.sleep(pause)
            pause = min(pause * 1.5, _MAX_SLEEP_S)


class Work:
    """A collective in flight, returned by every collective called with ``async_op=True``.

    ``wait()`` blocks until it completes (raising ``RuntimeError`` after the group timeout),
    ``is_completed()`` tests without blocking, ``result()`` gives the output tensors. The input
    and output buffers must not be touched until the work has completed.
    """

    def __init__(self, name: str, group, requests: list, finish=None, outputs=(), keep=(), statuses=None):
        self._name, self._group, self._requests = name, group, requests
        self._finish, self._outputs, self._keep = finish, list(outputs), keep
        self._statuses, self._done, self._value = statuses, False, None

    def _complete(self) -> None:
        self._done = True
        if self._finish is not None:
            self._value = self._finish()
        self._finish, self._keep = None, ()

    def is_completed(self) -> bool:
        """Drive progress once and return True when the operation has finished."""
        if not self._done and poll(self._requests, self._statuses):
            self._complete()
        return self._done

    def wait(self, timeout=None) -> bool:
        """Block until the operation has finished; ``timeout`` (seconds) overrides the group's."""
        if not self._done:
            limit = self._group.timeout if timeout is None else float(getattr(timeout, "total_seconds", lambda: timeout)())
            wait_requests(self._requests, limit, self._name, self._group.rank, self._statuses)
            self._complete()
        return True

    def result(self) -> list:
        """The output tensors of the operation (waits for it first)."""
        self.wait()
        return list(self._outputs)

    def __repr__(self) -> str:
        return f"Work({self._name!r}, completed={self._done})"


def start(name: str, group, requests: list, async_op: bool, finish=None, outputs=(), keep=(), statuses=None,
          timeout=None):
    """Wrap started requests in a :class:`Work`; wait at once unless ``async_op``.

    Returns the ``Work`` when ``async_op`` is true, else the value of ``finish`` (usually None).
    """
    work = Work(name, group, requests, finish, outputs, keep, statuses)
    if async_op:
        return work
    work.wait(timeout)
    return work._value
