"""DistributedSampler: one shard of the dataset per process, PyTorch's partition exactly.

Process-group contract
----------------------
sneppx-data does not import sneppx-distributed. When a process group is initialised, the
distributed package sets, in its own process::

    SNEPPX_RANK        this process's rank, an int in [0, world_size)
    SNEPPX_WORLD_SIZE  the number of processes in the group

and removes both when the group is destroyed. :class:`DistributedSampler` reads them when
``num_replicas`` or ``rank`` is not given, and raises ``RuntimeError`` when they are absent.
"""

from __future__ import annotations

import math
import os
import numpy as np

from ._rng import torch_randperm
from .sampler import Sampler, _array_iter

RANK_ENV = "SNEPPX_RANK"
WORLD_SIZE_ENV = "SNEPPX_WORLD_SIZE"


def _env_int(name: str) -> int:
    value = os.environ.get(name)
    if value is None:
        raise RuntimeError(
            f"DistributedSampler: {name} is not set, so no process group is initialised; "
            "pass num_replicas= and rank= explicitly or initialise a process group first "
            "(sneppx_distributed.init_process_group)"
        )
    try:
        return int(value)
    except ValueError:
        raise RuntimeError(f"DistributedSampler: {name}={value!r} is not an int") from None


def process_group_info() -> tuple[int, int]:
    """Return ``(rank, world_size)`` of the initialised process group, read from the environment.

    Raises:
        RuntimeError: when ``SNEPPX_RANK`` / ``SNEPPX_WORLD_SIZE`` are not set.
    """
    return _env_int(RANK_ENV), _env_int(WORLD_SIZE_ENV)


class DistributedSampler(Sampler):
    """Restricts loading to this process's shard of the dataset, as PyTorch's sampler does.

    With ``n = len(dataset)`` and ``R = num_replicas``::

        num_samples = ceil((n - R) / R) if drop_last and n % R else ceil(n / R)
        total_size  = num_samples * R

    An epoch's index list is ``randperm(n)`` seeded with ``seed + epoch`` (or ``range(n)``
    without shuffle), padded by repeating it cyclically up to ``total_size`` (or truncated to
    it with ``drop_last``), and this rank takes every ``R``-th entry from position ``rank``.
    The permutation is PyTorch's CPU ``randperm`` bit for bit (see ``sneppx_data._rng``), so
    every rank, and a PyTorch job with the same arguments, agree on the partition.

    Args:
        dataset: a sized dataset.
        num_replicas: number of processes; default: ``SNEPPX_WORLD_SIZE`` of the process group.
        rank: this process's rank; default: ``SNEPPX_RANK`` of the process group.
        shuffle: shuffle the indices each epoch.
        seed: base seed, identical on all ranks.
        drop_last: drop the tail so that shards divide evenly instead of padding.

    Call :meth:`set_epoch` before each epoch so the shuffle changes between epochs.
    """

    def __init__(self, dataset, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:
        if num_replicas is None:
            num_replicas = _env_int(WORLD_SIZE_ENV)
        if rank is None:
            rank = _env_int(RANK_ENV)
        if isinstance(num_replicas, bool) or not isinstance(num_replicas, int) or num_replicas < 1:
            raise ValueError(f"DistributedSampler: num_replicas must be a positive int, got {num_replicas!r}")
        if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < num_replicas:
            raise ValueError(
                f"DistributedSampler: invalid rank {rank!r}, rank should be in the interval "
                f"[0, {num_replicas - 1}]"
            )
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.shuffle, self.seed, self.drop_last = bool(shuffle), int(seed), bool(drop_last)
        self.epoch = 0
        n = len(dataset)
        if self.drop_last and n % num_replicas:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch; with ``shuffle=True`` the permutation is seeded with ``seed + epoch``."""
        self.epoch = int(epoch)

    def _index_array(self) -> np.ndarray:
        n = len(self.dataset)
        if self.shuffle:
            order = np.asarray(torch_randperm(n, self.seed + self.epoch), dtype=np.int64)
        else:
            order = np.arange(n, dtype=np.int64)
        if self.total_size == 0:
            return order[:0]
        # np.resize repeats cyclically: PyTorch's padding (indices + indices[:pad], or
        # repeated when pad > n) and its drop_last truncation are both this prefix.
        full = np.resize(order, self.total_size)
        return full[self.rank : self.total_size : self.num_replicas]

    __iter__ = _array_iter

    def __len__(self) -> int:
        return self.num_samples
