"""Agreement checks: every rank's collective call is compared with its peers' before any data moves.

MPI does not know what a buffer holds: an all_reduce of a ``(2, 3)`` tensor on one rank and a
``(3,)`` tensor on another reduces garbage or waits until the timeout. So each collective first
exchanges a small header (which collective, reduction, root, dtype and shape; a few int64s per
rank, one ``MPI_Iallgather``) on the group's communicator, and starts its data transfer on a
second communicator only when every rank's header matches. On a mismatch no data moves and
every rank raises ``RuntimeError`` naming its own and the differing rank's call.

The header is non-blocking like the data: a collective called with ``async_op=True`` returns at
once. Data transfers start in call order (a FIFO per group), whatever order the works are waited
in, so the ranks start them in the same order on the data communicator, as MPI requires.
"""

from __future__ import annotations

import collections
import time
import zlib

import numpy as np
import sneppx_core as sx

from .work import Work, wait_requests

_KINDS = ("all_reduce", "reduce", "broadcast", "all_gather", "all_gather_into_tensor", "reduce_scatter",
          "reduce_scatter_tensor", "gather", "scatter")
_DTYPES = [sx.float32, sx.float64, sx.float16, sx.bfloat16, sx.int32, sx.int64, sx.uint8, sx.bool_, sx.int8, sx.int16]
_MAX_DIMS = 8
_WIDTH = 7 + _MAX_DIMS  # kind, op, root, dtype, ndim, numel, crc32(shape), dims
_queues: dict = {}


_headers: dict = {}  # (kind, shape, dtype, op, root) -> its header, read-only (training repeats a few calls)
_HEADERS_MAX = 4096


def header(kind: str, tensor, op=None, root: int = -1) -> np.ndarray:
    """The int64 description of one rank's call that all ranks must agree on (read-only: it is shared by
    every call with the same description)."""
    shape = tuple(tensor.shape)
    key = (kind, shape, tensor.dtype, op, root)
    out = _headers.get(key)
    if out is not None:
        return out
    shape = tuple(int(d) for d in shape)
    dtype = _DTYPES.index(tensor.dtype) if tensor.dtype in _DTYPES else -1
    ops = [None, "sum", "avg", "product", "min", "max", "band", "bor", "bxor"]
    out = np.full(_WIDTH, -1, dtype=np.int64)
    out[:7] = (_KINDS.index(kind), ops.index(None if op is None else op.value), root, dtype, len(shape),
               int(np.prod(shape, dtype=np.int64)), zlib.crc32(repr(shape).encode()))
    out[7:7 + min(len(shape), _MAX_DIMS)] = shape[:_MAX_DIMS]
    out.flags.writeable = False
    if len(_headers) >= _HEADERS_MAX:
        _headers.clear()
    _headers[key] = out
    return out


def _describe(row: np.ndarray) -> str:
    ndim = int(row[4])
    dims = [str(int(d)) for d in row[7:7 + min(ndim, _MAX_DIMS)]] + (["..."] if ndim > _MAX_DIMS else [])
    shape = "(" + ", ".join(dims) + ("," if ndim == 1 else "") + ")"
    dtype = _DTYPES[row[3]].name if 0 <= row[3] < len(_DTYPES) else "?"
    text = f"{_KINDS[row[0]]} of a tensor of shape {shape} and dtype {dtype}"
    ops = [None, "sum", "avg", "product", "min", "max", "band", "bor", "bxor"]
    if row[1] > 0:
        text += f" with ReduceOp.{ops[row[1]].upper()}"
    if row[2] >= 0:
        text += f" rooted at rank {int(row[2])}"
    return text


def mismatch(name: str, table: np.ndarray, rank: int) -> str | None:
    """The error message when the rows of ``table`` (one per rank) differ, else None."""
    rows, width = table.tobytes(), table.shape[1] * table.itemsize
    if rows == rows[rank * width:(rank + 1) * width] * table.shape[0]:  # the usual case, in a microsecond
        return None
    other = int(np.flatnonzero((table != table[rank]).any(axis=1))[0])
    return (f"{name}: the ranks called different collectives or passed tensors of different shapes or dtypes: "
            f"rank {rank} called {_describe(table[rank])}, but rank {other} called {_describe(table[other])}")


class CheckedWork(Work):
    """A collective whose data transfer starts once every rank's header has been seen to match."""

    def __init__(self, name, group, sig, launch, finish=None, outputs=(), keep=(), statuses=None) -> None:
        super().__init__(name, group, [], finish, outputs, keep, statuses)
        self._table = np.empty((group.world_size, _WIDTH), dtype=np.int64)
        self._sig, self._launch, self._error = sig, launch, None
        self._header = group.comm.Iallgather(sig, self._table)
        self._launched = False
        _queues.setdefault(id(group.comm), collections.deque()).append(self)

    def _open(self) -> None:
        """The header exchange is done: check it and start the data transfer (or record the error)."""
        message = mismatch(self._name, self._table, self._group.rank)
        if message is not None:
            self._error = RuntimeError(message)
            self._finish, self._keep = None, ()
        else:
            self._requests = self._launch(self._group.data_comm)
        self._launched, self._launch = True, None

    def _raise_if_failed(self) -> None:
        if self._error is not None:
            raise self._error

    def is_completed(self) -> bool:
        """Drive progress once; True when the operation has finished (raises if the ranks disagreed)."""
        advance(self._group)
        self._raise_if_failed()
        return self._launched and super().is_completed()

    def wait(self, timeout=None) -> bool:
        """Block until the operation has finished; raises ``RuntimeError`` when the ranks disagreed."""
        if not self._launched:
            limit = self._group.timeout if timeout is None else float(getattr(timeout, "total_seconds",
                                                                                lambda: timeout)())
            begin = time.monotonic()
            queue = _queues.get(id(self._group.comm), ())
            ahead = []
            for w in queue:
                ahead.append(w._header)
                if w is self:
                    break
            wait_requests(ahead, limit, self._name, self._group.rank)
            advance(self._group)
            timeout = max(limit - (time.monotonic() - begin), 1e-3)
        self._raise_if_failed()
        return super().wait(timeout)


def advance(group) -> None:
    """Start, in call order, the data transfers whose header exchange has completed."""
    queue = _queues.get(id(group.comm))
    while queue and (queue[0]._launched or queue[0]._header.Test()):
        w = queue.popleft()
        if not w._launched:
            w._open()


def forget(group) -> None:
    """Drop the pending headers of a group that is being destroyed."""
    _queues.pop(id(group.comm), None)


def start_checked(name: str, group, sig, launch, async_op: bool, finish=None, outputs=(), keep=()):
    """Exchange the header ``sig`` and, once all ranks agree, call ``launch(comm)`` for the data
    requests; wait at once unless ``async_op`` (then return the :class:`CheckedWork`)."""
    advance(group)
    work = CheckedWork(name, group, sig, launch, finish, outputs, keep)
    advance(group)
    if async_op:
        return work
    work.wait()
    return work._value
