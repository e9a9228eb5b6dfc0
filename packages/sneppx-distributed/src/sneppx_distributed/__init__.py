"""sneppx_distributed: data-parallel training for SneppX over MPI.

The API follows ``torch.distributed``::

    import sneppx_distributed as dist
    dist.init_process_group()                 # rank and world size come from MPI
    model = dist.DistributedDataParallel(model)
    ...
    dist.destroy_process_group()

Start the ranks with ``mpiexec -n 4 python train.py``, ``srun python train.py`` or, from Python,
``launch(train_fn, nprocs=4)``. Collectives (``all_reduce``, ``broadcast``, ``all_gather``, ...)
work in place on CPU tensors through mpi4py, with a timeout on every wait.

Process-group contract: while a group is initialised, ``SNEPPX_RANK``, ``SNEPPX_WORLD_SIZE`` and
``SNEPPX_LOCAL_RANK`` are set in ``os.environ`` (sneppx-data's ``DistributedSampler`` reads them);
``destroy_process_group`` removes them.
"""

__version__ = "0.1.0"

from sneppx_core import require_core

require_core("0.1", "0.2", "sneppx-distributed")

from ._mpi import find_mpiexec
from .collectives import (
    ReduceOp,
    all_gather,
    all_gather_into_tensor,
    all_reduce,
    broadcast,
    gather,
    reduce,
    reduce_scatter,
    reduce_scatter_tensor,
    scatter,
)
from .ddp import DistributedDataParallel, DistributedWrapper
from .p2p import irecv, isend, recv, send
from .group import (
    Backend,
    DistributedContext,
    barrier,
    destroy_process_group,
    get_backend,
    get_default_backend_for_device,
    get_local_rank,
    get_rank,
    get_world_size,
    init_process_group,
    is_available,
    is_gloo_available,
    is_initialized,
    is_mpi_available,
    is_nccl_available,
)
from .launch import launch
from .objects import all_gather_object, broadcast_object_list, gather_object, scatter_object_list
from . import optim  # noqa: E402  (torch.distributed.optim: ZeroRedundancyOptimizer)
from .work import Work

__all__ = [
    "Backend",
    "DistributedContext",
    "DistributedDataParallel",
    "DistributedWrapper",
    "ReduceOp",
    "Work",
    "__version__",
    "all_gather",
    "all_gather_into_tensor",
    "all_gather_object",
    "all_reduce",
    "barrier",
    "broadcast",
    "broadcast_object_list",
    "destroy_process_group",
    "find_mpiexec",
    "gather",
    "gather_object",
    "get_backend",
    "get_default_backend_for_device",
    "get_local_rank",
    "get_rank",
    "get_world_size",
    "init_process_group",
    "irecv",
    "is_available",
    "is_gloo_available",
    "is_initialized",
    "is_mpi_available",
    "is_nccl_available",
    "isend",
    "launch",
    "recv",
    "reduce",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "scatter",
    "scatter_object_list",
    "send",
]
