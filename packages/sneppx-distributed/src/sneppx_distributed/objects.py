"""Collectives on picklable Python objects (``torch.distributed``'s ``*_object`` functions): ``all_gather_object``,
``broadcast_object_list``, ``gather_object``, ``scatter_object_list``. Objects travel pickled over the group's
MPI communicator (under the NCCL backend too: objects stay on the CPU), blocking, with no timeout."""

from __future__ import annotations

from .group import default_group
from .p2p import _check_rank


def all_gather_object(object_list: list, obj, group=None) -> None:
    """Fills ``object_list`` (one slot per rank) with every rank's ``obj``."""
    g = default_group("all_gather_object", group)
    if len(object_list) != g.world_size:
        raise ValueError(f"[all_gather_object] object_list has {len(object_list)} slots for {g.world_size} "
                         "ranks")
    object_list[:] = g.comm.allgather(obj)


def broadcast_object_list(object_list: list, src: int = 0, group=None, device=None) -> None:
    """Replaces the items of ``object_list`` on every rank with those of rank ``src``'s list (same length)."""
    g = default_group("broadcast_object_list", group)
    _check_rank(src, g, "broadcast_object_list", "src")
    got = g.comm.bcast(list(object_list) if g.rank == src else len(object_list), root=src)
    if len(got) != len(object_list):
        raise ValueError(f"[broadcast_object_list] rank {src} sent {len(got)} objects into a list of "
                         f"{len(object_list)} on rank {g.rank}")
    object_list[:] = got


def gather_object(obj, object_gather_list=None, dst: int = 0, group=None) -> None:
    """Rank ``dst``'s ``object_gather_list`` (one slot per rank) receives every rank's ``obj``."""
    g = default_group("gather_object", group)
    _check_rank(dst, g, "gather_object", "dst")
    if g.rank == dst and (object_gather_list is None or len(object_gather_list) != g.world_size):
        raise ValueError(f"[gather_object] rank {dst} needs an object_gather_list of {g.world_size} slots")
    got = g.comm.gather(obj, root=dst)
    if g.rank == dst:
        object_gather_list[:] = got


def scatter_object_list(scatter_object_output_list: list, scatter_object_input_list=None, src: int = 0,
                        group=None) -> None:
    """Rank ``r``'s ``scatter_object_output_list[0]`` receives item ``r`` of rank ``src``'s input list."""
    g = default_group("scatter_object_list", group)
    _check_rank(src, g, "scatter_object_list", "src")
    if g.rank == src and (scatter_object_input_list is None or len(scatter_object_input_list) != g.world_size):
        raise ValueError(f"[scatter_object_list] rank {src} needs a scatter_object_input_list of {g.world_size} "
                         "items")
    if not scatter_object_output_list:
        raise ValueError("[scatter_object_list] scatter_object_output_list needs at least one slot")
    scatter_object_output_list[0] = g.comm.scatter(list(scatter_object_input_list) if g.rank == src else None,
                                                   root=src)
