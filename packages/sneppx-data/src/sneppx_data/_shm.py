"""Moving batches from worker processes to the main process through shared memory.

A worker owns a small pool of ``multiprocessing.shared_memory`` segments. It writes every array
of a collated batch into one free segment (NumPy arrays laid out on the segment's buffer) and
sends only a description (segment name, offsets, shapes, dtypes, and the batch's container
structure) through its pipe. The main process keeps each segment attached once, copies the
arrays out into fresh NumPy arrays, wraps them with ``Tensor.from_numpy`` and tells the worker
the segment is free again. So the data is never pickled, segments are reused (no page faults
per batch), and at most ``prefetch_factor`` segments exist per worker.

Segments are created, named and cleaned up in ``_segments``.
"""

from __future__ import annotations

import pickle
from multiprocessing import shared_memory

import numpy as np
import sneppx_core as sx

from ._segments import attach_segment, create_segment, unlink_name, unlink_quietly
from .tensor_dataset import _numpy_view

_ALIGN = 64
_GRANULE = 1 << 20  # segment sizes are rounded up to 1 MiB; untouched pages cost nothing
# Replies larger than this go through shared memory, so a worker never blocks on its pipe.
_INLINE_MAX = 16 * 1024


class Leaf:
    """Placeholder for the ``index``-th array of a flattened batch; ``kind`` says how to rebuild it."""

    __slots__ = ("index", "kind")

    def __init__(self, index: int, kind: str) -> None:
        self.index, self.kind = index, kind

    def __reduce__(self):
        return (Leaf, (self.index, self.kind))


def _tensor_leaf(t, arrays: list):
    view = _numpy_view(t)
    if view is None and str(t.device) == "cpu":
        try:
            view = t.detach().numpy()
        except (TypeError, RuntimeError, ValueError):
            view = None
    if view is not None:
        arrays.append(view)
        return Leaf(len(arrays) - 1, "T")
    if t.dtype == sx.bfloat16:
        arrays.append(t.float().numpy())  # bf16 -> f32 is exact; cast back on arrival
        return Leaf(len(arrays) - 1, "bf16")
    return t


def flatten(obj, arrays: list):
    """Replace every Tensor / NumPy array in ``obj`` by a :class:`Leaf`, appending to ``arrays``."""
    if isinstance(obj, sx.Tensor):
        return _tensor_leaf(obj, arrays)
    if isinstance(obj, np.ndarray) and obj.dtype.kind not in "OV":
        arrays.append(obj)
        return Leaf(len(arrays) - 1, "A")
    if isinstance(obj, dict):
        return type(obj)((k, flatten(v, arrays)) for k, v in obj.items())
    if isinstance(obj, list):
        return [flatten(v, arrays) for v in obj]
    if isinstance(obj, tuple):
        items = [flatten(v, arrays) for v in obj]
        return type(obj)(*items) if hasattr(obj, "_fields") else tuple(items)
    return obj


def unflatten(spec, arrays: list):
    """Inverse of :func:`flatten`: put Tensors / arrays back in place of the leaves."""
    if isinstance(spec, Leaf):
        a = arrays[spec.index]
        if spec.kind == "A":
            return a
        t = sx.Tensor.from_numpy(a)
        return t.to(sx.bfloat16) if spec.kind == "bf16" else t
    if isinstance(spec, dict):
        return type(spec)((k, unflatten(v, arrays)) for k, v in spec.items())
    if isinstance(spec, list):
        return [unflatten(v, arrays) for v in spec]
    if isinstance(spec, tuple):
        items = [unflatten(v, arrays) for v in spec]
        return type(spec)(*items) if hasattr(spec, "_fields") else tuple(items)
    return spec


def _layout(arrays: list) -> tuple[list, int]:
    layout, offset = [], 0
    for a in arrays:
        layout.append((offset, a.shape, a.dtype.str))
        offset += -(-a.nbytes // _ALIGN) * _ALIGN
    return layout, offset


class SegmentPool:
    """A worker's reusable segments: one per batch in flight, released by the main process."""

    def __init__(self, prefix: str) -> None:
        self._prefix, self._count = prefix, 0
        self._free: list = []
        self._busy: dict = {}
        self._retired: list = []

    def _acquire(self, nbytes: int) -> shared_memory.SharedMemory:
        fits = [s for s in self._free if s.size >= nbytes]
        if fits:
            shm = min(fits, key=lambda s: s.size)
            self._free.remove(shm)
        else:
            if self._free:  # too small for this batch: replace it rather than grow the pool
                old = min(self._free, key=lambda s: s.size)
                self._free.remove(old)
                self._retired.append(old.name)
                unlink_quietly(old)
            size = max(_GRANULE, -(-nbytes // _GRANULE) * _GRANULE)
            shm = create_segment(f"{self._prefix}{self._count}", size)
            self._count += 1
        self._busy[shm.name] = shm
        return shm

    def release(self, name: str) -> None:
        """Mark the segment ``name`` free again (the main process has copied it out)."""
        shm = self._busy.pop(name, None)
        if shm is not None:
            self._free.append(shm)

    def write(self, batch) -> tuple:
        """Write ``batch``'s arrays into a free segment; return the picklable description."""
        arrays: list = []
        spec = flatten(batch, arrays)
        blob = pickle.dumps(spec, protocol=pickle.HIGHEST_PROTOCOL)
        if len(blob) > _INLINE_MAX:  # large plain-Python content travels through the segment too
            arrays.append(np.frombuffer(blob, dtype=np.uint8))
            spec = Leaf(len(arrays) - 1, "pickle")
        name, layout = None, []
        if arrays:
            layout, total = _layout(arrays)
            shm = self._acquire(total)
            for (offset, shape, _), a in zip(layout, arrays):
                np.copyto(np.ndarray(shape, dtype=a.dtype, buffer=shm.buf, offset=offset), a)
            name = shm.name
        retired, self._retired = self._retired, []
        return spec, name, layout, retired

    def close(self) -> None:
        """Unlink every segment of this pool."""
        for shm in self._free + list(self._busy.values()):
            unlink_quietly(shm)
        self._free, self._busy = [], {}


class SegmentReader:
    """The main process's side: segments attached once, batches copied out of them."""

    def __init__(self) -> None:
        self._attached: dict = {}

    def read(self, payload) -> object:
        """Rebuild the batch described by a :meth:`SegmentPool.write` payload."""
        spec, name, layout, retired = payload
        for old in retired:
            self._detach(old)
        if name is None:
            return unflatten(spec, [])
        shm = self._attached.get(name)
        if shm is None:
            shm = self._attached[name] = attach_segment(name)
            unlink_name(name)  # both sides hold a mapping now: the name is no longer needed
        buf = shm.buf
        arrays = [np.ndarray(shape, dtype=dt, buffer=buf, offset=off).copy() for off, shape, dt in layout]
        if isinstance(spec, Leaf) and spec.kind == "pickle":
            spec = pickle.loads(arrays[spec.index].tobytes())
        return unflatten(spec, arrays)

    def _detach(self, name: str) -> None:
        shm = self._attached.pop(name, None)
        if shm is not None:
            try:
                shm.close()
            except BufferError:
                pass

    def close(self) -> None:
        """Detach from and unlink every segment seen (a dead worker cannot unlink its own)."""
        for shm in self._attached.values():
            unlink_quietly(shm)
        self._attached = {}
