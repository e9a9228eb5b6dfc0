"""Gradient buckets for DistributedDataParallel: fill during backward, all-reduce while it runs.

Parameters are laid out in buckets of at most ``cap`` bytes, in reverse registration order (the
order backward usually produces their gradients), one dtype per bucket. A post-accumulate hook
puts each gradient into its bucket slot; a full bucket starts its non-blocking all-reduce right
away, so communication overlaps the rest of backward. Buckets start strictly in index order, which
keeps the sequence of collectives identical on every rank.

With gradient-as-bucket-view (the default for float32, float64 and float16), each bucket is one
flat array and every ``param.grad`` is a view of its slot: a gradient accumulated into such a
view is already in place (the hook has nothing to do), a fresh one (after ``grad = None``) is
copied in and replaced by the view. Such a bucket is averaged by a ring all-reduce whose division
by the world size is fused into its last reduction step (:mod:`._ring`), so no pass over the
gradients is added to the communication, and the result needs no copy back. Other buckets
(bfloat16, or views turned off) copy gradients in, are summed by ``MPI_Iallreduce``, and the sums
divided by the world size are written back into ``param.grad`` after the wait.
"""

from __future__ import annotations

import time
import weakref

import numpy as np
import sneppx_core as sx

from ._mpi import mpi
from ._progress import ProgressThread
from ._ring import RingAllreduce, scratch_size
from ._tensorbuf import mark_written, write_array
from .work import poll, wait_requests

_NP = {sx.float32: np.float32, sx.float64: np.float64, sx.float16: np.float16, sx.bfloat16: np.float32}
_VIEWABLE = (sx.float32, sx.float64, sx.float16)  # dtypes whose bucket NumPy (and so MPI) can hold as is


class _Bucket:
    """Parameters whose gradients are all-reduced together, and the flat buffer they travel in."""

    def __init__(self, dtype, index: int) -> None:
        self.dtype, self.index, self.slots, self.size = dtype, index, [], 0
        self.array, self.buffer, self.request, self.pending = None, None, None, 0
        self.flat, self.views = None, []  # with gradient-as-bucket-view: a tensor over `array`, its slot views
        self.scratch = None  # the ring all-reduce's buffer for partial sums

    def add(self, index: int, param) -> None:
        self.slots.append((index, self.size, param.numel()))
        self.size += param.numel()

    def nbytes(self) -> int:
        return self.size * np.dtype(_NP[self.dtype]).itemsize


def _assign_buckets(params: list, cap_bytes: int) -> list:
    """Buckets in reverse parameter order, one dtype each, closed once they reach ``cap_bytes``;
    a parameter of ``cap_bytes`` or more gets a bucket of its own (reduced in place, without copies)."""
    buckets, open_by_dtype = [], {}
    for i in reversed(range(len(params))):
        p = params[i]
        b = open_by_dtype.get(p.dtype)
        big = p.numel() * np.dtype(_NP[p.dtype]).itemsize >= cap_bytes
        if b is None or b.nbytes() >= cap_bytes or big:
            b = _Bucket(p.dtype, len(buckets))
            buckets.append(b)
            open_by_dtype[p.dtype] = None if big else b
        b.add(i, p)
    return buckets


def _zero_copy(grad) -> bool:
    return grad is not None and grad.is_contiguous() and grad.dtype in (sx.float32, sx.float64, sx.float16)


def _grad_array(grad) -> np.ndarray:
    g = grad.detach()
    return (g.float() if g.dtype == sx.bfloat16 else g).numpy()


def _aliases(grad, view) -> bool:
    """True when ``grad`` is the bucket slot ``view`` (same memory, same contiguous layout)."""
    return grad is not None and grad.data_ptr() == view.data_ptr() and grad.is_contiguous()


def check_complete(reducer) -> None:
    """Raise when the last iteration got some gradients but not all (a parameter outside the graph)."""
    if reducer.partial:
        missing = [reducer.names[i] for i, r in enumerate(reducer.ready) if not r]
        raise RuntimeError(
            "DistributedDataParallel: the previous iteration's gradient reduction did not finish; parameters "
            f"{missing[:8]} got no gradient. Pass find_unused_parameters=True when part of the model is "
            "unused in forward, and make sure every forward with grad enabled is followed by backward"
        )


def hook_gradients(reducer) -> None:
    """Call ``reducer.mark_ready(i)`` as each parameter's gradient is accumulated (while the reducer lives)."""
    ref = weakref.ref(reducer)
    for i, p in enumerate(reducer.params):
        p.register_post_accumulate_grad_hook(lambda t, i=i: (r := ref()) is not None and r.mark_ready(i))


def start_iteration(reducer, nbytes: int, unused: set | None) -> None:
    """The per-iteration state both reducers start ``prepare`` from: no gradient in, no bucket launched,
    fresh stats; with ``unused``, those parameters' agreement and zero gradients begin (:func:`mark_unused`)."""
    reducer.ready = [False] * len(reducer.params)
    reducer.next_launch, reducer.active, reducer.partial = 0, True, False
    reducer.used_mask, reducer.mask_request = None, None
    reducer.stats = {"buckets": len(reducer.buckets), "bytes": nbytes}
    if unused is not None:
        mark_unused(reducer, unused)


def mark_unused(reducer, unused: set) -> None:
    """Start agreeing (over MPI, in host memory) which parameters some rank used, and give the ones this
    rank did not use zero gradients."""
    reducer.used_mask = np.array([i not in unused for i in range(len(reducer.params))], np.uint8)
    reducer.mask_request = reducer.group.comm.Iallreduce(mpi().IN_PLACE, reducer.used_mask, mpi().MAX)
    for i in sorted(unused):
        reducer.mark_ready(i, zero=True)


def arrive(reducer, i: int, zero: bool) -> bool:
    """Record that parameter ``i``'s gradient (or its zero stand-in) is in; False outside an iteration."""
    if not reducer.active:
        return False
    if reducer.ready[i]:
        raise RuntimeError(f"DistributedDataParallel: parameter {reducer.names[i]!r} received a gradient twice "
                           "in one iteration (backward called twice without no_sync()?)")
    reducer.ready[i], reducer.partial = True, reducer.partial or not zero
    return True


class Reducer:
    """Bucketed gradient averaging for a list of ``(name, parameter)`` pairs."""

    def __init__(self, named_params: list, cap_bytes: int, group, progress_thread: bool = False,
                 gradient_as_bucket_view: bool = True) -> None:
        self.names = [n for n, _ in named_params]
        self.params = [p for _, p in named_params]
        self.group, self.buckets = group, _assign_buckets(self.params, cap_bytes)
        self.where = {i: (b.index, k) for b in self.buckets for k, (i, _, _) in enumerate(b.slots)}
        for b in self.buckets:
            if gradient_as_bucket_view and b.dtype in _VIEWABLE:
                # NumPy memory (large arrays get transparent huge pages, which speeds MPI's copies)
                b.array = np.zeros(b.size, _NP[b.dtype])
                b.flat = sx.Tensor.from_numpy(b.array)
                b.views = [b.flat[off:off + n].reshape(tuple(self.params[i].shape)) for i, off, n in b.slots]
            elif len(b.slots) > 1:
                b.array = np.zeros(b.size, _NP[b.dtype])
        # the ring all-reduces' messages travel apart from any other traffic of the group
        self.ring_comm = group.comm.Dup() if any(b.flat is not None for b in self.buckets) else None
        self.active, self.stats = False, {}
        self.progress = ProgressThread(group.comm) if progress_thread else None
        hook_gradients(self)

    def prepare(self, unused: set | None = None) -> None:
        """Start an iteration; ``unused`` holds the indices of parameters outside this rank's graph."""
        self.check_finished()
        for b in self.buckets:
            b.pending, b.request, b.buffer = len(b.slots), None, b.array
        start_iteration(self, sum(b.nbytes() for b in self.buckets), unused)

    def check_finished(self) -> None:
        """Complete what the previous iteration started; raise if its reduction never finished."""
        if not self.active:
            return
        self.active = False
        reqs = [b.request for b in self.buckets if b.request is not None]
        reqs += [self.mask_request] if self.mask_request is not None else []
        wait_requests(reqs, self.group.timeout, "DistributedDataParallel forward", self.group.rank)
        if self.progress is not None:
            self.progress.stop()
        check_complete(self)

    def mark_ready(self, i: int, zero: bool = False) -> None:
        """Record parameter ``i``'s gradient in its bucket; start full buckets in order."""
        if not arrive(self, i, zero):
            return
        b = self.buckets[self.where[i][0]]
        grad = self.params[i].grad
        if b.flat is not None:
            self._fill_view(b, self.where[i][1], zero)
        elif b.array is None and not zero and _zero_copy(grad):
            b.buffer = grad.detach().numpy().reshape(-1)  # a bucket of its own: reduce the gradient in place
        else:
            if b.array is None:
                b.array = b.buffer = np.zeros(b.size, _NP[b.dtype])
            _, off, n = b.slots[self.where[i][1]]
            slot = b.array[off:off + n]
            if zero or grad is None:
                slot.fill(0)
            else:
                np.copyto(slot.reshape(grad.shape), _grad_array(grad), casting="unsafe")
        b.pending -= 1
        self._launch_ready()

    def _fill_view(self, b: _Bucket, k: int, zero: bool) -> None:
        """Put the gradient of slot ``k`` into bucket ``b`` and make ``param.grad`` the slot's view."""
        i, off, size = b.slots[k]
        p, view, slot = self.params[i], b.views[k], b.array[off:off + size]
        grad = p.grad
        if zero:  # not in this rank's graph: contributes zeros; a stale local gradient moves out of the slot
            if _aliases(grad, view):
                p.grad = grad.clone()
            slot.fill(0)
        elif not _aliases(grad, view):  # a fresh gradient: copy it in, then the slot becomes param.grad
            np.copyto(slot, _grad_array(grad).reshape(-1), casting="unsafe")
            p.grad = view

    def _launch_ready(self) -> None:
        MPI = mpi()
        while self.next_launch < len(self.buckets) and self.buckets[self.next_launch].pending == 0:
            b = self.buckets[self.next_launch]
            if "first_launch" not in self.stats:
                self.stats["first_launch"] = time.perf_counter()
                if self.progress is not None:
                    self.progress.start()
            if b.flat is not None:  # averaged in place; 1 / world_size is exact for powers of two
                if b.scratch is None and self.group.world_size > 1:  # partial sums' buffer, kept across iterations
                    b.scratch = np.empty(scratch_size(b.size, self.group.world_size), b.array.dtype)
                b.request = RingAllreduce(self.ring_comm, b.array, 1.0 / self.group.world_size, b.index, b.scratch)
            else:
                b.request = self.group.comm.Iallreduce(MPI.IN_PLACE, b.buffer, MPI.SUM)
            self.next_launch += 1
        started = [b.request for b in self.buckets[: self.next_launch]]
        if self.next_launch == len(self.buckets):
            self.finalize()
        elif started:
            poll(started)  # drive MPI progress so launched buckets move while backward runs

    def finalize(self) -> None:
        """Wait for every bucket; then ``param.grad`` is the view of its slot (already averaged), or, for
        buckets without views, receives the sum divided by the world size."""
        t0 = time.perf_counter()
        reqs = [b.request for b in self.buckets] + ([self.mask_request] if self.mask_request is not None else [])
        wait_requests(reqs, self.group.timeout, "DistributedDataParallel backward all_reduce", self.group.rank)
        if self.progress is not None:
            self.progress.stop()
        self.stats["exposed_wait_s"] = time.perf_counter() - t0
        self.stats["overlap_window_s"] = t0 - self.stats.get("first_launch", t0)
        self.active, self.mask_request = False, None
        n = self.group.world_size
        for b in self.buckets:
            if b.flat is not None:  # the averages are already in the slots that param.grad views
                mark_written(b.flat)
            for k, (i, off, size) in enumerate(b.slots):
                if self.used_mask is not None and not self.used_mask[i]:
                    continue
                if b.flat is not None:
                    self.params[i].grad = b.views[k]
                else:
                    self._write_grad(self.params[i], b.buffer[off:off + size], n, b.buffer is not b.array)

    @staticmethod
    def _write_grad(p, total: np.ndarray, n: int, in_place: bool) -> None:
        """``p.grad = total / n``, in one pass over the memory."""
        if in_place:
            np.divide(total, n, out=total)
            mark_written(p.grad)
        elif p.grad is None:
            p.grad = sx.Tensor.from_numpy((total / n).reshape(p.shape)).to(p.dtype)
        elif _zero_copy(p.grad):
            np.divide(total, n, out=p.grad.detach().numpy().reshape(-1), casting="unsafe")
            mark_written(p.grad)
        else:
            write_array(p.grad, total / n)
