"""DistributedDataParallel: the same model on every rank, gradients averaged during backward.

Each rank runs forward and backward on its share of the batch. Gradients are summed across
ranks in buckets while backward is still running and divided by the world size, so after
``loss.backward()`` every rank holds ``grad = (1/N) sum_r grad_r``: with equal shares and a
mean loss, exactly the gradient of the full batch. A plain optimizer step then keeps all
replicas identical.
"""

from __future__ import annotations

import contextlib
import os
import zlib

import sneppx_core as sx

from . import _progress as progress
from ._device_reducer import DeviceReducer
from ._reducer import Reducer
from .collectives import all_gather, broadcast
from .group import default_group


def _named(module, attr: str, plain: str) -> list:
    if hasattr(module, attr):
        return list(getattr(module, attr)())
    if hasattr(module, plain):
        return [(f"{plain}.{i}", t) for i, t in enumerate(getattr(module, plain)())]
    return []


def _reachable_nodes(outputs) -> tuple:
    """ids of the autograd nodes reachable from ``outputs``, and the list that keeps those nodes alive."""
    stack = [t.grad_fn for t in _flatten(outputs) if isinstance(t, sx.Tensor) and t.grad_fn is not None]
    seen, keep = set(), []
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        keep.append(node)
        stack.extend(n for n, _ in node.next_functions if n is not None)
    return seen, keep


def _flatten(obj):
    if isinstance(obj, (list, tuple)):
        for x in obj:
            yield from _flatten(x)
    elif isinstance(obj, dict):
        for x in obj.values():
            yield from _flatten(x)
    else:
        yield obj


class DistributedDataParallel:
    """Wraps a model for data-parallel training over the default process group.

    On construction, rank 0's parameters and buffers are copied to every rank. During backward,
    gradients fill buckets of ``bucket_cap_mb`` megabytes in reverse parameter order; each full
    bucket is all-reduced (non-blocking) while backward goes on, and when the last one is done
    ``param.grad`` holds the averaged gradient.

    Args:
        module: any callable object with ``parameters()`` (and ideally ``named_parameters()``,
            ``buffers()``, ``state_dict()``), such as a ``sneppx_nn.Module``.
        device_ids, output_device: None; with backend "nccl" also ``[local GPU index]`` and that index
            (PyTorch's ``device_ids=[local_rank]``).
        broadcast_buffers: copy rank 0's buffers to all ranks at every forward.
        bucket_cap_mb: bucket size in megabytes.
        find_unused_parameters: walk the autograd graph of the outputs at each forward so that
            parameters that take no part in it do not stall the reduction.
        progress_thread: drive MPI progress from a helper thread while buckets are in flight, so
            that communication really overlaps backward (MPICH moves non-blocking collectives only
            inside MPI calls). Default: on when the node has two cores per local rank and MPI
            runs with ``MPI_THREAD_MULTIPLE``.
        gradient_as_bucket_view: make each ``param.grad`` a view of its slot in the flat bucket
            that is all-reduced (float32, float64 and float16 parameters), so that the reduction
            copies nothing back and a gradient accumulated into the view needs no copy in either.
            ``zero_grad(set_to_none=True)`` still works (the next backward copies the fresh
            gradient into the slot once and puts the view back), as does assigning a new tensor
            to ``.grad``; a reference kept to an old ``.grad`` sees the next reduction's values.
            False copies gradients into the buckets and the averages back out.

    Use :meth:`no_sync` to accumulate gradients locally over several micro-batches.
    """

    def __init__(self, module, device_ids=None, output_device=None, broadcast_buffers: bool = True,
                 bucket_cap_mb: float = 25, find_unused_parameters: bool = False, progress_thread=None,
                 gradient_as_bucket_view: bool = True) -> None:
        self._group = default_group("DistributedDataParallel")
        self._check_devices(device_ids, output_device)
        if not callable(module) or not hasattr(module, "parameters"):
            raise TypeError(f"DistributedDataParallel: module must be callable and have parameters(), got "
                            f"{type(module).__name__}")
        if not bucket_cap_mb > 0:
            raise ValueError(f"DistributedDataParallel: bucket_cap_mb must be positive, got {bucket_cap_mb!r}")
        self.module = module
        self.broadcast_buffers, self.find_unused_parameters = bool(broadcast_buffers), bool(find_unused_parameters)
        self.require_backward_grad_sync = True
        named = [(n, p) for n, p in _named(module, "named_parameters", "parameters") if p.requires_grad]
        self._check_same_layout(named)
        self._sync_from_rank0([p for _, p in _named(module, "named_parameters", "parameters")])
        self._sync_from_rank0(self._buffers())
        if progress_thread is None:  # worth a core only when every local rank has a spare one
            progress_thread = (os.cpu_count() or 1) >= 2 * self._group.local_world_size and progress.available()
        if progress_thread and not progress.available():
            raise RuntimeError("DistributedDataParallel: progress_thread=True needs MPI_THREAD_MULTIPLE")
        if self._group.nccl is not None:
            self.reducer = DeviceReducer(named, int(bucket_cap_mb * 2**20), self._group)
        else:
            self.reducer = Reducer(named, int(bucket_cap_mb * 2**20), self._group, bool(progress_thread),
                                   bool(gradient_as_bucket_view))

    def _check_devices(self, device_ids, output_device) -> None:
        g = self._group
        if g.nccl is None:
            if device_ids is not None or output_device is not None:
                raise ValueError("DistributedDataParallel: device_ids and output_device must be None for CPU modules, "
                                 f"got device_ids={device_ids!r}, output_device={output_device!r}")
            return
        index = g.device.index
        ids = None if device_ids is None else [d if isinstance(d, int) else sx.device(d).index for d in device_ids]
        ok_ids = ids is None or ids == [index]
        ok_out = output_device is None or (output_device if isinstance(output_device, int)
                                           else sx.device(output_device).index) == index
        if not (ok_ids and ok_out):
            raise ValueError(f"DistributedDataParallel: this rank's GPU is {g.device}; device_ids must be None or "
                             f"[{index}] and output_device None or {index}, got {device_ids!r} and {output_device!r}")

    def _buffers(self) -> list:
        return [b for _, b in _named(self.module, "named_buffers", "buffers")]

    def _check_same_layout(self, named) -> None:
        sig = repr([(n, tuple(p.shape), str(p.dtype)) for n, p in named]).encode()
        device = self._group.device or "cpu"  # NCCL moves CUDA tensors only
        mine = sx.tensor([zlib.crc32(sig)], dtype=sx.int64, device=device)
        every = [sx.zeros(1, dtype=sx.int64, device=device) for _ in range(self._group.world_size)]
        all_gather(every, mine)
        if len({int(t.item()) for t in every}) != 1:
            raise RuntimeError("DistributedDataParallel: the ranks' models have different parameter names, "
                               f"shapes or dtypes (this rank has {len(named)} trainable parameters)")

    def _sync_from_rank0(self, tensors) -> None:
        if self._group.world_size > 1:
            for t in tensors:
                broadcast(t, src=0)

    def forward(self, *args, **kwargs):
        """Runs the module; with grad enabled (and not in :meth:`no_sync`) arms the gradient reduction."""
        self.reducer.check_finished()
        if self.broadcast_buffers:
            self._sync_from_rank0(self._buffers())
        out = self.module(*args, **kwargs)
        if sx.is_grad_enabled() and self.require_backward_grad_sync:
            self.reducer.prepare(self._unused(out) if self.find_unused_parameters else None)
        return out

    __call__ = forward

    def _unused(self, out) -> set:
        seen, keep = _reachable_nodes(out)
        unused = set()
        for i, p in enumerate(self.reducer.params):
            probe = p.view(p.shape) if p.ndim else p.reshape(())
            acc = probe.grad_fn.next_functions[0][0] if probe.grad_fn is not None else None
            if acc is None or id(acc) not in seen:
                unused.add(i)
        del keep
        return unused

    @contextlib.contextmanager
    def no_sync(self):
        """Context manager: forwards inside it do not average gradients, which accumulate locally;
        the first synced backward after it averages the accumulated sums."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    @property
    def last_sync_stats(self) -> dict:
        """Numbers from the last synced backward: ``buckets``, ``bytes``, ``exposed_wait_s`` (time spent
        waiting for communication after backward) and ``overlap_window_s`` (time from the first bucket's
        start to the end of backward)."""
        return dict(self.reducer.stats)

    def parameters(self, *args, **kwargs):
        """The wrapped module's parameters."""
        return self.module.parameters(*args, **kwargs)

    def named_parameters(self, *args, **kwargs):
        """The wrapped module's named parameters (same names as the plain module)."""
        return self.module.named_parameters(*args, **kwargs)

    def buffers(self, *args, **kwargs):
        """The wrapped module's buffers."""
        return self.module.buffers(*args, **kwargs)

    def state_dict(self, *args, **kwargs):
        """The wrapped module's state dict: the same keys as the plain module, so checkpoints interchange."""
        return self.module.state_dict(*args, **kwargs)

    def load_state_dict(self, *args, **kwargs):
        """Loads into the wrapped module."""
        return self.module.load_state_dict(*args, **kwargs)

    def train(self, mode: bool = True):
        """Sets the wrapped module's training mode; returns self."""
        self.module.train(mode)
        return self

    def eval(self):
        """Sets the wrapped module to evaluation mode; returns self."""
        return self.train(False)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clears the gradients of every parameter: sets them to None, or zeroes them in place (which
        keeps them bucket views)."""
        for p in self.module.parameters():
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                with sx.no_grad():
                    p.grad.zero_()

    def __repr__(self) -> str:
        return f"DistributedDataParallel({self.module!r})"


DistributedWrapper = DistributedDataParallel
