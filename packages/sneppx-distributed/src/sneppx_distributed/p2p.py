"""Point-to-point messages: ``send``/``recv`` and their non-blocking forms, over MPI (CPU tensors)
or NCCL (CUDA tensors)."""

from __future__ import annotations

from . import _nccl_ops as _nccl
from ._mpi import mpi
from ._tensorbuf import Buffer
from .group import default_group
from .work import start


def _check_rank(value, g, fn: str, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < g.world_size:
        raise ValueError(f"{fn}: {what}={value!r} is not a rank in [0, {g.world_size})")
    return value


def isend(tensor, dst: int, group=None, tag: int = 0):
    """Start sending ``tensor`` to rank ``dst``; returns a :class:`Work`."""
    g = default_group("send", group)
    _check_rank(dst, g, "send", "dst")
    if g.nccl is not None:
        return _nccl.send(g, tensor, dst)
    buf = Buffer(tensor, "send")
    return start("send", g, [g.comm.Isend(buf.array, dest=dst, tag=tag)], True, keep=buf)


def irecv(tensor, src: int | None = None, group=None, tag: int = 0):
    """Start receiving into ``tensor`` from rank ``src`` (any rank when None); returns a :class:`Work`
    whose ``wait()`` completes the receive (the sender's rank is then ``work.source``)."""
    g = default_group("recv", group)
    if g.nccl is not None:
        return _nccl.recv(g, tensor, None if src is None else _check_rank(src, g, "recv", "src"))
    MPI = mpi()
    source = MPI.ANY_SOURCE if src is None else _check_rank(src, g, "recv", "src")
    buf, status = Buffer(tensor, "recv"), MPI.Status()
    req = g.comm.Irecv(buf.array, source=source, tag=tag)

    def finish():
        buf.written()
        work.source = status.Get_source()
        return work.source

    work = start("recv", g, [req], True, finish, [tensor], buf, [status])
    return work


def send(tensor, dst: int, group=None, tag: int = 0) -> None:
    """Send ``tensor`` to rank ``dst`` (blocks until the buffer may be reused, with the group timeout)."""
    isend(tensor, dst, group, tag).wait()


def recv(tensor, src: int | None = None, group=None, tag: int = 0) -> int:
    """Receive into ``tensor`` from rank ``src`` (any rank when None); returns the sender's rank."""
    work = irecv(tensor, src, group, tag)
    work.wait()
    return work.source
