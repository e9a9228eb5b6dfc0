"""A sum or average all-reduce in place, as a ring over point-to-point messages.

``MPI_Allreduce`` followed by a division reads and writes the whole buffer once more after the
communication. This ring is a reduce-scatter in which each rank adds the chunk received from its left
neighbour into its own copy (for an average, the last addition is multiplied by ``scale`` in the same
cache-sized blocks), then an all-gather that passes the finished chunks around the ring. Every chunk
is reduced by one rank only, so every rank ends with the same bits, and the summation order is fixed
(the same result on every run). On one node with MPICH it also moves large buffers faster than
``MPI_Iallreduce`` does.

The steps advance inside :meth:`RingAllreduce.advance`, which tests the pending messages and posts
the next ones; :func:`sneppx_distributed.work.poll` calls it, so DDP's hooks and waits drive it as
they drive MPI's own non-blocking collectives.
"""

from __future__ import annotations

import numpy as np

from ._mpi import mpi

_BLOCK_BYTES = 256 * 1024  # the reduction's block: the addend and the sum stay in the core's cache


def _testall(requests: list) -> bool:
    return mpi().Request.Testall(requests)


def reduce_into(own: np.ndarray, other: np.ndarray, scale: float | None) -> None:
    """``own += other``, then ``own *= scale`` when ``scale`` is given, block by block."""
    step = max(1, _BLOCK_BYTES // own.itemsize)
    for b in range(0, own.size, step):
        o = own[b:b + step]
        np.add(o, other[b:b + step], out=o)
        if scale is not None:
            np.multiply(o, scale, out=o)


# Elements from which a float SUM / AVG all-reduce goes round the ring: at 1e7 floats on 2 ranks it moves
# data about 1.5x as fast as MPICH's MPI_Iallreduce (benchmarks/bench_distributed.py); at 1e6 the two
# measured alike, and smaller messages keep MPI's own algorithms.
RING_MIN = 1 << 20


def ring_worthwhile(array: np.ndarray) -> bool:
    """Whether a collective all-reduce (sum or average) of contiguous ``array`` goes round the ring."""
    return array.size >= RING_MIN and array.dtype in (np.float32, np.float64)


def tag_limit() -> int:
    """The largest MPI tag."""
    return mpi().COMM_WORLD.Get_attr(mpi().TAG_UB)


def scratch_size(count: int, ranks: int) -> int:
    """Elements of the buffer that receives partial sums in a ring all-reduce of ``count`` elements."""
    return -(-count // ranks)


class RingAllreduce:
    """Sums the flat contiguous array ``array`` over ``comm`` in place, times ``scale`` unless it is None.

    ``tag`` must be unique among the ring all-reduces that may be in flight at once on ``comm``;
    each uses the tags ``tag * 2 * size`` to ``tag * 2 * size + 2 * size - 3``. ``scratch`` (optional,
    reused across calls) receives the partial sums: at least :func:`scratch_size` elements of the
    array's dtype.
    """

    def __init__(self, comm, array: np.ndarray, scale: float | None, tag: int,
                 scratch: np.ndarray | None = None) -> None:
        self.comm, self.array, self.scale = comm, array, scale
        self.size, self.rank = comm.Get_size(), comm.Get_rank()
        n = self.size
        self.bounds = [array.size * c // n for c in range(n + 1)]
        self.base = tag * 2 * n
        if self.base + 2 * n > tag_limit():
            raise RuntimeError(f"ring all-reduce: tag {tag} exceeds MPI's tag range")
        self.step, self.requests, self.done = 0, [], n == 1
        if n == 1:
            if scale is not None:
                np.multiply(array, scale, out=array)
            return
        need = scratch_size(array.size, n)
        ok = scratch is not None and scratch.dtype == array.dtype and scratch.size >= need
        self.temp = scratch if ok else np.empty(need, array.dtype)
        self._post()

    def _chunk(self, c: int) -> np.ndarray:
        c %= self.size
        return self.array[self.bounds[c]:self.bounds[c + 1]]

    def _post(self) -> None:
        """Post the messages of the current step: steps ``0 .. n-2`` reduce-scatter, ``n-1 .. 2n-3`` gather.

        At reduce step ``k`` rank ``r`` sends its partial sum of chunk ``r-k-1`` to the right and
        receives the left neighbour's partial sum of chunk ``r-k-2``; after the last one it holds
        the whole sum of chunk ``r``. At gather step ``k`` it passes chunk ``r-k`` on and receives
        chunk ``r-k-1`` straight into the array."""
        n, r, k = self.size, self.rank, self.step
        right, left, tag = (r + 1) % n, (r - 1) % n, self.base + k
        if k < n - 1:
            send, recv = self._chunk(r - k - 1), self.temp[: self._chunk(r - k - 2).size]
        else:
            g = k - (n - 1)
            send, recv = self._chunk(r - g), self._chunk(r - g - 1)
        self.requests = [self.comm.Irecv(recv, source=left, tag=tag), self.comm.Isend(send, dest=right, tag=tag)]

    def advance(self) -> bool:
        """Test the pending messages, do the steps that are ready; True once the result is in place."""
        n = self.size
        while not self.done:
            if not _testall(self.requests):
                return False
            if self.step < n - 1:  # a partial sum arrived: add it (and scale, after the last one)
                own = self._chunk(self.rank - self.step - 2)
                reduce_into(own, self.temp[: own.size], self.scale if self.step == n - 2 else None)
            self.step += 1
            if self.step == 2 * (n - 1):
                self.done, self.requests = True, []
            else:
                self._post()
        return True
