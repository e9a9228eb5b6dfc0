"""The default process group: initialisation, rank queries and :class:`DistributedContext`.

Rank and world size always come from MPI (``MPI.COMM_WORLD``), so the same script runs under
``mpiexec -n N python train.py``, ``srun python train.py`` on a cluster, or :func:`launch`. The
group talks through its own duplicates of ``COMM_WORLD`` (one for the collectives' data, one for
everything else), which :func:`destroy_process_group` frees (MPI itself stays initialised until
the process exits, so a group can be created again).
"""

from __future__ import annotations

import datetime
import importlib.util
import os
from dataclasses import dataclass

import sneppx_core as sx

from ._mpi import mpi
from ._ring import tag_limit

RANK_ENV, WORLD_SIZE_ENV, LOCAL_RANK_ENV = "SNEPPX_RANK", "SNEPPX_WORLD_SIZE", "SNEPPX_LOCAL_RANK"
TIMEOUT_ENV = "SNEPPX_DIST_TIMEOUT"
DEFAULT_TIMEOUT = datetime.timedelta(minutes=30)
BACKENDS = ("mpi", "nccl")


class Backend:
    """Names of the communication backends: ``Backend.MPI`` (CPU tensors) and ``Backend.NCCL`` (CUDA)."""

    MPI = "mpi"
    NCCL = "nccl"


@dataclass
class _Group:
    comm: object
    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    backend: str
    timeout: float
    data_comm: object = None  # collectives' data transfers; their agreement headers go on ``comm``
    ring_calls: int = 0  # ring all-reduces started on data_comm (each takes its own range of tags)
    nccl: object = None  # the NCCL communicator of backend "nccl" (collectives on CUDA tensors)
    device: object = None  # the CUDA device of this rank with backend "nccl"

    def next_ring_tag(self) -> int:
        """A tag for the next ring all-reduce on ``data_comm``; collectives start in the same order on
        every rank, so every rank draws the same tags. They repeat only after a whole range of them,
        far more than can be in flight at once."""
        span = max(1, tag_limit() // (2 * self.world_size) - 1)
        self.ring_calls += 1
        return (self.ring_calls - 1) % span


_default: _Group | None = None


def _timeout_seconds(timeout, fn: str) -> float:
    if timeout is None:
        env = os.environ.get(TIMEOUT_ENV)
        timeout = float(env) if env else DEFAULT_TIMEOUT
    if isinstance(timeout, datetime.timedelta):
        timeout = timeout.total_seconds()
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"{fn}: timeout must be a positive number of seconds or a timedelta, got {timeout!r}")
    return float(timeout)


def is_available() -> bool:
    """True when collectives can run here: mpi4py (the MPI backend) is installed. MPI is not started."""
    return importlib.util.find_spec("mpi4py") is not None


def is_mpi_available() -> bool:
    """True when the MPI backend (mpi4py) is installed."""
    return is_available()


def is_nccl_available() -> bool:
    """True when the NCCL backend can run: CUDA tensors and the NCCL library are present."""
    if not sx.cuda.is_available():
        return False
    from . import _nccl

    try:
        _nccl.library_path()
    except RuntimeError:
        return False
    return True


def is_gloo_available() -> bool:
    """False: SneppX's CPU backend is MPI, not Gloo."""
    return False


def get_default_backend_for_device(device) -> str:
    """The backend for tensors on ``device``: ``"mpi"`` for the CPU, ``"nccl"`` for CUDA."""
    kind = device.split(":")[0] if isinstance(device, str) else getattr(device, "type", None)
    if kind not in ("cpu", "cuda"):
        raise ValueError(f"get_default_backend_for_device: no backend for device {device!r} (cpu: mpi, cuda: nccl)")
    return "mpi" if kind == "cpu" else "nccl"


def _check_backend(backend) -> str:
    name = "mpi" if backend is None else str(backend).lower()
    if name == "gloo":
        raise ValueError("init_process_group: backend 'gloo' is not available: SneppX's CPU backend is 'mpi' "
                         "(mpi4py and MPICH); start the ranks with mpiexec or sneppx_distributed.launch() and pass "
                         "backend='mpi' (or None)")
    if name not in BACKENDS:
        raise ValueError(f"init_process_group: unknown backend {backend!r}; supported: {', '.join(BACKENDS)}")
    if name == "nccl" and not sx.cuda.is_available():
        raise RuntimeError(
            "init_process_group: backend 'nccl' needs CUDA tensors, but this build of sneppx-core has no "
            "CUDA tensors (sneppx_core.cuda.is_available() is False); use backend='mpi' for CPU tensors"
        )
    return name


def init_process_group(backend=None, init_method=None, timeout=None, world_size: int = -1, rank: int = -1,
                       **unused) -> None:
    """Initialise the default process group over MPI.

    Args:
        backend: ``"mpi"`` (default; CPU tensors) or ``"nccl"`` (CUDA tensors, through NVIDIA's NCCL;
            raises ``RuntimeError`` without a visible GPU). With NCCL, rank r uses GPU
            ``local_rank % device_count()`` (made the current device) and MPI only starts the ranks.
        init_method: ``None`` or ``"env://"``; MPI does the rendezvous itself.
        timeout: seconds (or ``timedelta``) a collective may wait for its peers before raising
            ``RuntimeError``; default ``SNEPPX_DIST_TIMEOUT`` from the environment, else 30 minutes.
        world_size, rank: optional; when given they must equal what MPI reports.

    Sets ``SNEPPX_RANK``, ``SNEPPX_WORLD_SIZE`` and ``SNEPPX_LOCAL_RANK`` in ``os.environ``.
    """
    global _default
    if unused:
        raise TypeError(f"init_process_group: unsupported arguments {sorted(unused)}")
    if _default is not None:
        raise RuntimeError("init_process_group: the default process group is already initialised; "
                           "call destroy_process_group() first")
    name = _check_backend(backend)
    if init_method not in (None, "env://"):
        raise ValueError(f"init_process_group: init_method {init_method!r} is not supported; MPI provides "
                         "the rendezvous (start the ranks with mpiexec, srun or launch())")
    seconds = _timeout_seconds(timeout, "init_process_group")
    MPI = mpi()
    comm = MPI.COMM_WORLD.Dup()
    me, size = comm.Get_rank(), comm.Get_size()
    for arg, value, have in (("world_size", world_size, size), ("rank", rank, me)):
        if value not in (-1, None) and value != have:
            comm.Free()
            raise ValueError(f"init_process_group: {arg}={value} but MPI reports {arg}={have}")
    spawned = os.environ.get("SNEPPX_SPAWN_NPROCS", "1")  # set by sneppx_core.multiprocessing.spawn
    if size == 1 and spawned.isdigit() and int(spawned) > 1:
        comm.Free()
        raise RuntimeError(f"init_process_group: this process is one of {spawned} started by multiprocessing.spawn, "
                           "which are not MPI ranks (each would be a group of one); start the ranks with "
                           "sneppx_distributed.launch(fn, nprocs=N) or mpiexec")
    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    local, local_size = node.Get_rank(), node.Get_size()
    node.Free()
    g = _Group(comm, me, size, local, local_size, name, seconds, comm.Dup())
    if name == "nccl":
        _start_nccl(g)
    _default = g
    os.environ.update({RANK_ENV: str(me), WORLD_SIZE_ENV: str(size), LOCAL_RANK_ENV: str(local)})


def _start_nccl(g: _Group) -> None:
    """Picks this rank's GPU and creates the NCCL communicator (rank 0's id reaches the others over MPI)."""
    from . import _nccl

    index = g.local_rank % sx.cuda.device_count()
    sx.cuda.set_device(index)
    try:
        uid = g.comm.bcast(_nccl.unique_id() if g.rank == 0 else None, root=0)
        g.nccl, g.device = _nccl.Comm(g.world_size, uid, g.rank), sx.device("cuda", index)
    except BaseException:
        g.data_comm.Free()
        g.comm.Free()
        raise


def destroy_process_group(group=None) -> None:
    """Free the default process group and remove the ``SNEPPX_*`` rank variables from ``os.environ``."""
    global _default
    g = default_group("destroy_process_group", group)
    _default = None
    for key in (RANK_ENV, WORLD_SIZE_ENV, LOCAL_RANK_ENV):
        os.environ.pop(key, None)
    from ._checks import forget

    forget(g)
    if g.nccl is not None:
        sx.cuda.synchronize(g.device)
        g.nccl.destroy()
    g.data_comm.Free()
    g.comm.Free()


def default_group(fn: str, group=None) -> _Group:
    """The default group, or ``RuntimeError`` naming ``fn`` when none is initialised."""
    if group is not None:
        raise ValueError(f"{fn}: only the default process group (group=None) is supported, got {group!r}")
    if _default is None:
        raise RuntimeError(f"{fn}: the default process group is not initialised; call init_process_group() first")
    return _default


def is_initialized() -> bool:
    """True when the default process group is initialised."""
    return _default is not None


def get_rank(group=None) -> int:
    """This process's rank in ``[0, world_size)``."""
    return default_group("get_rank", group).rank


def get_world_size(group=None) -> int:
    """Number of processes in the group."""
    return default_group("get_world_size", group).world_size


def get_local_rank() -> int:
    """Rank among the processes on this node (MPI ``COMM_TYPE_SHARED`` split); picks the GPU of a rank."""
    return default_group("get_local_rank").local_rank


def get_backend(group=None) -> str:
    """Name of the group's backend (``"mpi"`` or ``"nccl"``)."""
    return default_group("get_backend", group).backend


def barrier(group=None, async_op: bool = False, timeout=None):
    """Block until every rank has entered the barrier (``MPI_Ibarrier`` polled with the group timeout)."""
    from .work import start

    g = default_group("barrier", group)
    if g.nccl is not None:  # the ranks' queued GPU work is done when they meet
        sx.cuda.synchronize(g.device)
    return start("barrier", g, [g.comm.Ibarrier()], async_op, timeout=timeout)


class _ContextMeta(type):
    """Makes the state readable on the class itself: ``DistributedContext.initialized``."""

    initialized = property(lambda cls: is_initialized(), doc="True when the default process group exists.")
    rank = property(lambda cls: get_rank(), doc="This process's rank.")
    world_size = property(lambda cls: get_world_size(), doc="Number of processes.")
    local_rank = property(lambda cls: get_local_rank(), doc="Rank on this node.")
    backend = property(lambda cls: get_backend(), doc="Backend name.")


class DistributedContext(metaclass=_ContextMeta):
    """The process-group state, readable on the class or an instance.

    ``DistributedContext.initialized`` (as ``torch.distributed.is_initialized()``), ``.rank``,
    ``.world_size``, ``.local_rank`` and ``.backend``; the last four raise ``RuntimeError`` when no
    group is initialised.
    """

    initialized = property(lambda self: is_initialized(), doc="True when the default process group exists.")
    rank = property(lambda self: get_rank(), doc="This process's rank.")
    world_size = property(lambda self: get_world_size(), doc="Number of processes.")
    local_rank = property(lambda self: get_local_rank(), doc="Rank on this node.")
    backend = property(lambda self: get_backend(), doc="Backend name.")
