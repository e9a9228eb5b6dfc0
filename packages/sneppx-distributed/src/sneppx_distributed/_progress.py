"""A helper thread that drives MPI's progress engine while non-blocking collectives are in flight.

MPI implementations such as MPICH advance a non-blocking collective only inside MPI calls. The
main thread spends backward in compiled code that holds the GIL, so polling from Python cannot
keep buckets moving. This thread instead sits inside a *blocking* ``MPI_Wait`` (mpi4py releases
the GIL there) on a receive from its own rank over a private communicator; while it waits, MPI's
progress engine runs and moves every outstanding request. ``stop()`` sends the message that ends
the wait. It is active only between the first bucket's start and the end of the reduction, and
needs ``MPI_THREAD_MULTIPLE``.
"""

from __future__ import annotations

import threading

import numpy as np

from ._mpi import mpi


def available() -> bool:
    """True when MPI was initialised with ``MPI_THREAD_MULTIPLE``."""
    MPI = mpi()
    return MPI.Query_thread() == MPI.THREAD_MULTIPLE


class ProgressThread:
    """Start with :meth:`start`, end with :meth:`stop`; reusable across iterations."""

    def __init__(self, comm) -> None:
        self.comm = comm.Dup()  # collective: every rank creates its reducer at the same point
        self.rank = self.comm.Get_rank()
        self._go, self._inside = threading.Event(), threading.Event()
        # separate send and receive buffers: MPICH aborts on a message to self whose buffers coincide
        self._token, self._send_token = np.zeros(1, np.uint8), np.zeros(1, np.uint8)
        self._request, self.running = None, False
        self._thread = threading.Thread(target=self._loop, name="sneppx-mpi-progress", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            self._go.wait()
            self._go.clear()
            request = self._request
            if request is None:
                return
            self._inside.set()
            request.Wait()  # blocks in MPI without the GIL: progress for every pending request

    def start(self) -> None:
        """Begin driving progress (returns once the thread is inside MPI)."""
        if self.running:
            return
        self._request = self.comm.Irecv(self._token, source=self.rank, tag=1)
        self._inside.clear()
        self._go.set()
        self._inside.wait()  # releases the GIL so the thread can enter MPI right now
        self.running = True

    def stop(self) -> None:
        """End the wait and let the thread go idle."""
        if self.running:
            self.comm.Send(self._send_token, dest=self.rank, tag=1)
            self.running = False

    def close(self) -> None:
        """Stop the thread for good."""
        self.stop()
        self._request = None
        self._go.set()
