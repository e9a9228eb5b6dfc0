"""The collectives of backend "nccl" on CUDA tensors (``collectives`` hands a call here when its group
has an NCCL communicator). Arguments are checked here; the data moves through :mod:`._nccl`."""

from __future__ import annotations

import sneppx_core as sx

from ._nccl import dtype_code, op_code
from ._tensorbuf import mark_written

_FLOATING = (sx.float16, sx.bfloat16, sx.float32, sx.float64)


class DoneWork:
    """The ``Work`` of an NCCL collective: queued on the device's stream, so later work on the device
    is already ordered after it and there is nothing to wait for on the host."""

    def __init__(self, name: str, outputs=(), source=None) -> None:
        self._name, self._outputs, self.source = name, list(outputs), source

    def wait(self, timeout=None) -> bool:
        """Returns at once: later CUDA work runs after the collective (synchronize to wait on the host)."""
        return True

    def is_completed(self) -> bool:
        """True: the collective is queued in order on the device's stream."""
        return True

    def result(self) -> list:
        """The output tensors."""
        return list(self._outputs)

    def __repr__(self) -> str:
        return f"Work({self._name!r}, nccl)"


def on_device(t, g, fn: str, what: str = "tensor") -> None:
    """Raise unless ``t`` is a contiguous tensor on this rank's GPU."""
    if not isinstance(t, sx.Tensor):
        raise TypeError(f"{fn}: {what} must be a sneppx_core.Tensor, got {type(t).__name__}")
    if t.device != g.device:
        raise RuntimeError(f"{fn}: {what} is on {t.device}; the NCCL backend of this rank handles tensors on "
                           f"{g.device} (use backend='mpi' for CPU tensors)")
    if not t.is_contiguous():
        raise ValueError(f"{fn}: {what} must be contiguous for NCCL")


def _reduction(op, dtype, fn: str) -> int:
    value = op.value if hasattr(op, "value") else None
    if value is None:
        raise TypeError(f"{fn}: op must be a ReduceOp, got {op!r}")
    if value == "avg" and dtype not in _FLOATING:
        raise TypeError(f"{fn}: ReduceOp.AVG needs a floating dtype, got {dtype}")
    return op_code(value, dtype, fn)


def _done(name: str, async_op: bool, outputs) -> DoneWork | None:
    for t in outputs:  # NCCL wrote the memory: bump the version counters autograd checks
        mark_written(t)
    return DoneWork(name, outputs) if async_op else None


def check_sizes(big, small, blocks: int, fn: str, what: str) -> None:
    """Raise unless ``big`` holds ``blocks`` blocks of ``small``'s size, of one dtype."""
    if not isinstance(big, sx.Tensor) or not isinstance(small, sx.Tensor):
        raise TypeError(f"{fn}: expected sneppx_core Tensors, got {type(big).__name__} and {type(small).__name__}")
    if big.dtype != small.dtype:
        raise TypeError(f"{fn}: dtypes differ: {big.dtype} and {small.dtype}")
    if big.numel() != blocks * small.numel():
        raise ValueError(f"{fn}: {what} has shape {tuple(big.shape)}, which is not {blocks} block(s) of shape "
                         f"{tuple(small.shape)}")


def root_list(lst, root: int, g, ref, fn: str, what: str) -> None:
    """On the root rank, ``lst`` must hold ``world_size`` tensors like ``ref``."""
    if g.rank != root:
        return
    if lst is None or len(lst) != g.world_size:
        raise ValueError(f"{fn}: {what} on the root rank {root} needs {g.world_size} tensors")
    for i, t in enumerate(lst):
        check_sizes(t, ref, 1, fn, f"{what}[{i}]")


def all_reduce(g, tensor, op, async_op: bool):
    """In-place all-reduce of a CUDA tensor."""
    on_device(tensor, g, "all_reduce")
    code = _reduction(op, tensor.dtype, "all_reduce")
    ptr = tensor.data_ptr()
    g.nccl.all_reduce(ptr, ptr, tensor.numel(), dtype_code(tensor.dtype, "all_reduce"), code)
    return _done("all_reduce", async_op, [tensor])


def reduce(g, tensor, dst: int, op, async_op: bool):
    """Reduce into rank ``dst``'s tensor."""
    on_device(tensor, g, "reduce")
    code = _reduction(op, tensor.dtype, "reduce")
    g.nccl.reduce(tensor.data_ptr(), tensor.numel(), dtype_code(tensor.dtype, "reduce"), code, dst)
    return _done("reduce", async_op, [tensor] if g.rank == dst else [])


def broadcast(g, tensor, src: int, async_op: bool):
    """Copy rank ``src``'s tensor to every rank."""
    on_device(tensor, g, "broadcast")
    g.nccl.broadcast(tensor.data_ptr(), tensor.numel(), dtype_code(tensor.dtype, "broadcast"), src)
    return _done("broadcast", async_op, [tensor])


def all_gather_into_tensor(g, output, input, async_op: bool):
    """Rank r's input becomes block r of every rank's output."""
    check_sizes(output, input, g.world_size, "all_gather_into_tensor", "output_tensor")
    on_device(output, g, "all_gather_into_tensor", "output_tensor")
    on_device(input, g, "all_gather_into_tensor", "input_tensor")
    g.nccl.all_gather(input.data_ptr(), output.data_ptr(), input.numel(),
                      dtype_code(input.dtype, "all_gather_into_tensor"))
    return _done("all_gather_into_tensor", async_op, [output])


def all_gather(g, tensor_list: list, tensor, async_op: bool):
    """Rank r's tensor lands in ``tensor_list[r]`` on every rank."""
    on_device(tensor, g, "all_gather")
    for i, t in enumerate(tensor_list):
        on_device(t, g, "all_gather", f"tensor_list[{i}]")
        if t.dtype != tensor.dtype or tuple(t.shape) != tuple(tensor.shape):
            raise ValueError(f"all_gather: tensor_list[{i}] is {t.dtype} {tuple(t.shape)}, expected {tensor.dtype} "
                             f"{tuple(tensor.shape)}")
    rows = sx.empty(g.world_size, tensor.numel(), dtype=tensor.dtype, device=g.device)
    g.nccl.all_gather(tensor.data_ptr(), rows.data_ptr(), tensor.numel(), dtype_code(tensor.dtype, "all_gather"))
    with sx.no_grad():
        for t, row in zip(tensor_list, rows):
            t.copy_(row.reshape(t.shape))
    return DoneWork("all_gather", tensor_list) if async_op else None


def reduce_scatter_tensor(g, output, input, op, async_op: bool):
    """Block r of the reduced input lands in rank r's output."""
    check_sizes(input, output, g.world_size, "reduce_scatter_tensor", "input")
    on_device(output, g, "reduce_scatter_tensor", "output")
    on_device(input, g, "reduce_scatter_tensor", "input")
    code = _reduction(op, output.dtype, "reduce_scatter_tensor")
    g.nccl.reduce_scatter(input.data_ptr(), output.data_ptr(), output.numel(),
                          dtype_code(output.dtype, "reduce_scatter_tensor"), code)
    return _done("reduce_scatter_tensor", async_op, [output])


def reduce_scatter(g, output, input_list: list, op, async_op: bool):
    """The reduction of ``input_list[r]`` over the ranks lands in rank r's output."""
    if len(input_list) != g.world_size:
        raise ValueError(f"reduce_scatter: input_list has {len(input_list)} tensors, world size is {g.world_size}")
    for i, t in enumerate(input_list):
        check_sizes(t, output, 1, "reduce_scatter", f"input_list[{i}]")
    for i, t in enumerate(input_list):
        on_device(t, g, "reduce_scatter", f"input_list[{i}]")
    with sx.no_grad():
        stacked = sx.cat([t.reshape(-1) for t in input_list])
    return reduce_scatter_tensor(g, output, stacked, op, async_op)


def gather(g, tensor, gather_list, dst: int, async_op: bool):
    """Every rank's tensor into ``gather_list`` on rank ``dst`` (an all-gather: every rank receives them)."""
    root_list(gather_list, dst, g, tensor, "gather", "gather_list")
    on_device(tensor, g, "gather")
    rows = sx.empty(g.world_size, tensor.numel(), dtype=tensor.dtype, device=g.device)
    g.nccl.all_gather(tensor.data_ptr(), rows.data_ptr(), tensor.numel(), dtype_code(tensor.dtype, "gather"))
    outs = list(gather_list or ()) if g.rank == dst else []
    with sx.no_grad():
        for t, row in zip(outs, rows):
            t.copy_(row.reshape(t.shape))
    return DoneWork("gather", outs) if async_op else None


def scatter(g, tensor, scatter_list, src: int, async_op: bool):
    """Rank ``src``'s ``scatter_list[r]`` into rank r's tensor (a broadcast of the whole list)."""
    root_list(scatter_list, src, g, tensor, "scatter", "scatter_list")
    on_device(tensor, g, "scatter")
    with sx.no_grad():
        if g.rank == src:
            rows = sx.cat([t.reshape(1, -1) for t in scatter_list])
        else:
            rows = sx.empty(g.world_size, tensor.numel(), dtype=tensor.dtype, device=g.device)
    g.nccl.broadcast(rows.data_ptr(), rows.numel(), dtype_code(tensor.dtype, "scatter"), src)
    with sx.no_grad():
        tensor.copy_(rows[g.rank].reshape(tensor.shape))
    return DoneWork("scatter", [tensor]) if async_op else None


def send(g, tensor, dst: int) -> DoneWork:
    """Send to rank ``dst`` (which posts the matching receive)."""
    on_device(tensor, g, "send")
    g.nccl.send(tensor.data_ptr(), tensor.numel(), dtype_code(tensor.dtype, "send"), dst)
    return DoneWork("send")


def recv(g, tensor, src) -> DoneWork:
    """Receive from rank ``src`` (NCCL needs the sender's rank)."""
    on_device(tensor, g, "recv")
    if src is None:
        raise NotImplementedError("recv: the NCCL backend needs the sender's rank (src=None is MPI only)")
    g.nccl.recv(tensor.data_ptr(), tensor.numel(), dtype_code(tensor.dtype, "recv"), src)
    _done("recv", False, [tensor])
    return DoneWork("recv", [tensor], source=src)
