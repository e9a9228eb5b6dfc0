"""Collectives on Tensors over MPI, in place where PyTorch's are.

Every function takes ``async_op``: false waits (with the group's timeout) and returns None, true
returns a :class:`~sneppx_distributed.work.Work`. Buffers go to MPI without copies when the
tensors are contiguous (see :mod:`sneppx_distributed._tensorbuf`). Before any data moves, the
ranks check that they called the same collective with tensors of the same shape and dtype (and
the same reduction and root); otherwise every rank raises ``RuntimeError`` (see ``_checks``).
"""

from __future__ import annotations

import enum

import numpy as np
import sneppx_core as sx

from . import _nccl_ops as _nccl
from ._checks import header, start_checked
from ._mpi import mpi
from ._ring import RingAllreduce, ring_worthwhile
from ._tensorbuf import Buffer, check_like, check_tensor, stack_arrays, write_array
from .group import default_group
from .p2p import _check_rank


class ReduceOp(enum.Enum):
    """Reductions: ``SUM``, ``AVG`` (sum / world size, floating dtypes), ``PRODUCT``, ``MIN``, ``MAX``,
    and the bitwise ``BAND``, ``BOR``, ``BXOR`` (integer and bool dtypes)."""

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"


_MPI_OP = {"sum": "SUM", "avg": "SUM", "product": "PROD", "min": "MIN", "max": "MAX",
           "band": "BAND", "bor": "BOR", "bxor": "BXOR"}
_BOOL_OP = {"sum": "LOR", "max": "LOR", "bor": "LOR", "product": "LAND", "min": "LAND", "band": "LAND",
            "bxor": "LXOR"}


_OPS: dict = {}  # (op, dtype) -> the MPI op, for checked pairs


def _mpi_op(op, dtype, fn: str):
    if (found := _OPS.get((op, dtype)) if isinstance(op, ReduceOp) else None) is not None:
        return found
    if not isinstance(op, ReduceOp):
        raise TypeError(f"{fn}: op must be a ReduceOp, got {op!r}")
    floating = dtype in (sx.float16, sx.bfloat16, sx.float32, sx.float64)
    if op is ReduceOp.AVG and not floating:
        raise TypeError(f"{fn}: ReduceOp.AVG needs a floating dtype, got {dtype}")
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and floating:
        raise TypeError(f"{fn}: {op} needs an integer or bool dtype, got {dtype}")
    found = _OPS[(op, dtype)] = getattr(mpi(), (_BOOL_OP if dtype == sx.bool_ else _MPI_OP)[op.value])
    return found


def _averaged(array: np.ndarray, op, g) -> None:
    if op is ReduceOp.AVG:
        np.divide(array, g.world_size, out=array)


def all_reduce(tensor, op: ReduceOp = ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce ``tensor`` across all ranks in place: every rank ends with ``op(t_0, ..., t_{N-1})``.

    SUM and AVG of large contiguous float tensors go round a ring of point-to-point messages
    (:mod:`._ring`), everything else through ``MPI_Iallreduce``."""
    g = default_group("all_reduce", group)
    if g.nccl is not None:
        return _nccl.all_reduce(g, tensor, op, async_op)
    buf, mop = Buffer(tensor, "all_reduce"), _mpi_op(op, tensor.dtype, "all_reduce")
    ring = op in (ReduceOp.SUM, ReduceOp.AVG) and not buf.staged and ring_worthwhile(buf.array)

    def launch(comm):
        if ring:
            scale = 1.0 / g.world_size if op is ReduceOp.AVG else None
            return [RingAllreduce(comm, buf.array, scale, g.next_ring_tag())]
        return [comm.Iallreduce(mpi().IN_PLACE, buf.array, mop)]

    def finish():
        if not ring:
            _averaged(buf.array, op, g)
        buf.written()

    return start_checked("all_reduce", g, header("all_reduce", tensor, op), launch, async_op, finish, [tensor], buf)


def reduce(tensor, dst: int, op: ReduceOp = ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce ``tensor`` across all ranks into rank ``dst``'s tensor (others are left unchanged)."""
    g = default_group("reduce", group)
    _check_rank(dst, g, "reduce", "dst")
    if g.nccl is not None:
        return _nccl.reduce(g, tensor, dst, op, async_op)
    buf, mop = Buffer(tensor, "reduce"), _mpi_op(op, tensor.dtype, "reduce")

    def launch(comm):
        if g.rank == dst:
            return [comm.Ireduce(mpi().IN_PLACE, buf.array, mop, root=dst)]
        return [comm.Ireduce(buf.array, None, mop, root=dst)]

    def finish():
        if g.rank == dst:
            _averaged(buf.array, op, g)
            buf.written()

    return start_checked("reduce", g, header("reduce", tensor, op, dst), launch, async_op, finish, [tensor], buf)


def broadcast(tensor, src: int, group=None, async_op: bool = False):
    """Copy rank ``src``'s ``tensor`` into ``tensor`` on every rank."""
    g = default_group("broadcast", group)
    _check_rank(src, g, "broadcast", "src")
    if g.nccl is not None:
        return _nccl.broadcast(g, tensor, src, async_op)
    buf = Buffer(tensor, "broadcast")

    def launch(comm):
        return [comm.Ibcast(buf.array, root=src)]

    sig = header("broadcast", tensor, root=src)
    return start_checked("broadcast", g, sig, launch, async_op, buf.written, [tensor], buf)


def all_gather(tensor_list: list, tensor, group=None, async_op: bool = False):
    """Fill ``tensor_list[r]`` with rank ``r``'s ``tensor`` on every rank."""
    g = default_group("all_gather", group)
    if len(tensor_list) != g.world_size:
        raise ValueError(f"all_gather: tensor_list has {len(tensor_list)} tensors, world size is {g.world_size}")
    if g.nccl is not None:
        return _nccl.all_gather(g, tensor_list, tensor, async_op)
    check_tensor(tensor, "all_gather")
    for i, t in enumerate(tensor_list):
        check_like(t, tensor, "all_gather", f"tensor_list[{i}]")
    send = Buffer(tensor, "all_gather").array
    recv = np.empty((g.world_size, send.size), send.dtype)

    def launch(comm):
        return [comm.Iallgather(send, recv)]

    def finish():
        for t, row in zip(tensor_list, recv):
            write_array(t, row)

    sig = header("all_gather", tensor)
    return start_checked("all_gather", g, sig, launch, async_op, finish, tensor_list, (send, recv))


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op: bool = False):
    """Concatenate every rank's ``input_tensor`` along dim 0 into ``output_tensor``
    (shape ``(world_size * n, ...)`` or ``(world_size, n, ...)``; rank ``r``'s block is the r-th)."""
    g = default_group("all_gather_into_tensor", group)
    if g.nccl is not None:
        return _nccl.all_gather_into_tensor(g, output_tensor, input_tensor, async_op)
    _check_blocks(output_tensor, input_tensor, g, "all_gather_into_tensor", "output_tensor")
    send = Buffer(input_tensor, "all_gather_into_tensor", "input_tensor")
    recv = Buffer(output_tensor, "all_gather_into_tensor", "output_tensor")

    def launch(comm):
        return [comm.Iallgather(send.array, recv.array)]

    sig = header("all_gather_into_tensor", input_tensor)
    return start_checked("all_gather_into_tensor", g, sig, launch, async_op, recv.written, [output_tensor],
                         (send, recv))


def _check_blocks(big, small, g, fn: str, what: str) -> None:
    check_tensor(big, fn, what)
    check_tensor(small, fn)
    if big.dtype != small.dtype:
        raise TypeError(f"{fn}: dtypes differ: {big.dtype} and {small.dtype}")
    if big.numel() != g.world_size * small.numel():
        raise ValueError(f"{fn}: {what} has shape {tuple(big.shape)}, which is not world_size={g.world_size} "
                         f"blocks of shape {tuple(small.shape)}")


def reduce_scatter(output, input_list: list, op: ReduceOp = ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce ``input_list[r]`` across ranks into rank ``r``'s ``output``."""
    g = default_group("reduce_scatter", group)
    if g.nccl is not None:
        return _nccl.reduce_scatter(g, output, input_list, op, async_op)
    check_tensor(output, "reduce_scatter", "output")
    if len(input_list) != g.world_size:
        raise ValueError(f"reduce_scatter: input_list has {len(input_list)} tensors, world size is {g.world_size}")
    send = stack_arrays(input_list, output, "reduce_scatter", "input_list")
    out, mop = Buffer(output, "reduce_scatter", "output"), _mpi_op(op, output.dtype, "reduce_scatter")

    def launch(comm):
        return [comm.Ireduce_scatter_block(send, out.array, mop)]

    def finish():
        _averaged(out.array, op, g)
        out.written()

    sig = header("reduce_scatter", output, op)
    return start_checked("reduce_scatter", g, sig, launch, async_op, finish, [output], (send, out))


def reduce_scatter_tensor(output, input, op: ReduceOp = ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce ``input`` (``world_size`` blocks along dim 0) across ranks; rank ``r`` gets block ``r``."""
    g = default_group("reduce_scatter_tensor", group)
    if g.nccl is not None:
        return _nccl.reduce_scatter_tensor(g, output, input, op, async_op)
    _check_blocks(input, output, g, "reduce_scatter_tensor", "input")
    send = Buffer(input, "reduce_scatter_tensor", "input")
    out, mop = Buffer(output, "reduce_scatter_tensor", "output"), _mpi_op(op, output.dtype, "reduce_scatter_tensor")

    def launch(comm):
        return [comm.Ireduce_scatter_block(send.array, out.array, mop)]

    def finish():
        _averaged(out.array, op, g)
        out.written()

    sig = header("reduce_scatter_tensor", input, op)
    return start_checked("reduce_scatter_tensor", g, sig, launch, async_op, finish, [output], (send, out))


def _root_list(lst, root: int, g, ref, fn: str, what: str):
    if g.rank != root:
        if lst:
            raise ValueError(f"{fn}: {what} must be None or empty on non-root rank {g.rank}")
        return None
    if lst is None or len(lst) != g.world_size:
        n = None if lst is None else len(lst)
        raise ValueError(f"{fn}: {what} on the root rank {root} needs {g.world_size} tensors, got {n}")
    for i, t in enumerate(lst):
        check_like(t, ref, fn, f"{what}[{i}]")
    return lst


def gather(tensor, gather_list=None, dst: int = 0, group=None, async_op: bool = False):
    """Collect every rank's ``tensor`` into ``gather_list`` on rank ``dst``."""
    g = default_group("gather", group)
    _check_rank(dst, g, "gather", "dst")
    if g.nccl is not None:
        return _nccl.gather(g, tensor, gather_list, dst, async_op)
    check_tensor(tensor, "gather")
    outs = _root_list(gather_list, dst, g, tensor, "gather", "gather_list")
    send = Buffer(tensor, "gather").array
    recv = np.empty((g.world_size, send.size), send.dtype) if outs is not None else None

    def launch(comm):
        return [comm.Igather(send, recv, root=dst)]

    def finish():
        for t, row in zip(outs or (), recv if recv is not None else ()):
            write_array(t, row)

    sig = header("gather", tensor, root=dst)
    return start_checked("gather", g, sig, launch, async_op, finish, outs or [], (send, recv))


def scatter(tensor, scatter_list=None, src: int = 0, group=None, async_op: bool = False):
    """Give rank ``r`` the tensor ``scatter_list[r]`` of rank ``src``, written into ``tensor``."""
    g = default_group("scatter", group)
    _check_rank(src, g, "scatter", "src")
    if g.nccl is not None:
        return _nccl.scatter(g, tensor, scatter_list, src, async_op)
    check_tensor(tensor, "scatter")
    ins = _root_list(scatter_list, src, g, tensor, "scatter", "scatter_list")
    send = stack_arrays(ins, tensor, "scatter", "scatter_list") if ins is not None else None
    out = Buffer(tensor, "scatter")

    def launch(comm):
        return [comm.Iscatter(send, out.array, root=src)]

    sig = header("scatter", tensor, root=src)
    return start_checked("scatter", g, sig, launch, async_op, out.written, [tensor], (send, out))
