"""Gradient buckets of DistributedDataParallel on CUDA (backend "nccl").

The layout is the MPI reducer's (buckets of at most ``cap`` bytes in reverse parameter order, one
dtype each), but each bucket is a flat tensor on the GPU and every ``param.grad`` is a view of its
slot. A bucket whose gradients are all in starts its NCCL all-reduce with averaging (``ncclAvg``)
right away, in bucket order on every rank. The all-reduces are queued on the device's one stream
between the backward kernels that are still to come, so they do not run beside them: the host
never waits, and the optimizer step that follows reads the averaged slots in stream order.
"""

from __future__ import annotations

import time

import sneppx_core as sx

from . import _nccl_ops
from ._reducer import _aliases, _assign_buckets, arrive, check_complete, hook_gradients, start_iteration
from .collectives import ReduceOp
from .work import wait_requests


class DeviceReducer:
    """Bucketed gradient averaging on the GPU for a list of ``(name, parameter)`` pairs."""

    def __init__(self, named_params: list, cap_bytes: int, group) -> None:
        self.names = [n for n, _ in named_params]
        self.params = [p for _, p in named_params]
        for n, p in named_params:
            if p.device != group.device:
                raise RuntimeError(f"DistributedDataParallel: parameter {n!r} is on {p.device}; with backend 'nccl' "
                                   f"the module must be on this rank's GPU {group.device} (module.to(device))")
        self.group, self.buckets = group, _assign_buckets(self.params, cap_bytes)
        self.where = {i: (b.index, k) for b in self.buckets for k, (i, _, _) in enumerate(b.slots)}
        for b in self.buckets:
            b.flat = sx.zeros(b.size, dtype=b.dtype, device=group.device)
            b.views = [b.flat[off:off + n].reshape(tuple(self.params[i].shape)) for i, off, n in b.slots]
        self.active, self.stats, self.mask_request = False, {}, None
        hook_gradients(self)

    def prepare(self, unused: set | None = None) -> None:
        """Start an iteration; ``unused`` holds the indices of parameters outside this rank's graph."""
        self.check_finished()
        for b in self.buckets:
            b.pending = len(b.slots)
        start_iteration(self, sum(b.flat.numel() * b.flat.element_size() for b in self.buckets), unused)

    def check_finished(self) -> None:
        """Complete what the previous iteration started; raise if its reduction never finished."""
        if not self.active:
            return
        self.active = False
        if self.mask_request is not None:
            wait_requests([self.mask_request], self.group.timeout, "DistributedDataParallel forward", self.group.rank)
            self.mask_request = None
        check_complete(self)

    def mark_ready(self, i: int, zero: bool = False) -> None:
        """Put parameter ``i``'s gradient into its slot; start full buckets in order."""
        if not arrive(self, i, zero):
            return
        bi, k = self.where[i]
        b = self.buckets[bi]
        p, view = self.params[i], b.views[k]
        with sx.no_grad():
            if zero:  # contributes zeros; a stale local gradient moves out of the slot
                if _aliases(p.grad, view):
                    p.grad = p.grad.clone()
                view.zero_()
            elif not _aliases(p.grad, view):  # a fresh gradient: copied in, then the slot becomes param.grad
                view.copy_(p.grad)
                p.grad = view
        b.pending -= 1
        while self.next_launch < len(self.buckets) and self.buckets[self.next_launch].pending == 0:
            b = self.buckets[self.next_launch]
            self.stats.setdefault("first_launch", time.perf_counter())
            _nccl_ops.all_reduce(self.group, b.flat, ReduceOp.AVG, False)
            self.next_launch += 1
        if self.next_launch == len(self.buckets):
            self.finalize()

    def finalize(self) -> None:
        """Every bucket is queued: each ``param.grad`` is the view of its averaged slot."""
        t0 = time.perf_counter()
        if self.mask_request is not None:
            wait_requests([self.mask_request], self.group.timeout, "DistributedDataParallel backward", self.group.rank)
            self.mask_request = None
        self.stats["exposed_wait_s"] = time.perf_counter() - t0
        self.stats["overlap_window_s"] = t0 - self.stats.get("first_launch", t0)
        self.active = False
        for b in self.buckets:
            for k, (i, _, _) in enumerate(b.slots):
                if self.used_mask is None or self.used_mask[i]:
                    self.params[i].grad = b.views[k]
