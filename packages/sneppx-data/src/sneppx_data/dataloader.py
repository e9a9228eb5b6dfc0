"""DataLoader: batches from a dataset, in this process or in worker processes."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Mapping
from typing import Callable

import numpy as np
import sneppx_core as sx

from ._fetch import FetchSpec, make_fetcher
from ._multiprocess import MultiProcessIter
from ._rng import draw_seed
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler


def _index_batches(sampler, batch_sampler):
    """A fresh iterator over the epoch's indices (batches of them with auto-collation)."""
    if batch_sampler is None:
        return iter(sampler)
    if type(batch_sampler).__iter__ is BatchSampler.__iter__:
        return batch_sampler._index_batches()
    return iter(batch_sampler)


def _no_indices():
    return None


def _check_workers(num_workers, prefetch_factor, persistent_workers, timeout) -> None:
    if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
        raise ValueError(f"DataLoader: num_workers must be an int >= 0, got {num_workers!r}")
    if isinstance(prefetch_factor, bool) or not isinstance(prefetch_factor, int) or prefetch_factor < 1:
        raise ValueError(f"DataLoader: prefetch_factor must be an int >= 1, got {prefetch_factor!r}")
    if persistent_workers and num_workers == 0:
        raise ValueError("DataLoader: persistent_workers=True needs num_workers > 0")
    if not isinstance(timeout, (int, float)) or timeout < 0:
        raise ValueError(f"DataLoader: timeout must be a number >= 0, got {timeout!r}")


class _SingleProcessIter:
    """Batches fetched in the calling process."""

    def __init__(self, loader, index_fn: Callable) -> None:
        # Drawn as in the multi-process case so the global RNG advances identically whatever
        # num_workers is (the shuffle order then does not depend on it).
        self._base_seed = draw_seed(loader._seed_source)
        self._fetcher = make_fetcher(loader._fetch_spec())
        self._indices = index_fn()
        self._length = len(loader) if hasattr(loader.dataset, "__len__") else None

    def __iter__(self):
        return self

    def __next__(self):
        if self._indices is None:
            return self._fetcher.fetch(None)
        return self._fetcher.fetch(next(self._indices))

    def __len__(self) -> int:
        if self._length is None:
            raise TypeError("DataLoader: the dataset has no __len__")
        return self._length


def pin_memory(data):
    """``data`` with every tensor in it copied to page-locked memory (``Tensor.pin_memory``), recursing into
    dicts, lists, tuples and named tuples; other objects with a ``pin_memory()`` method are pinned by it,
    anything else is returned as is. This is what ``DataLoader(pin_memory=True)`` does to each batch."""
    if isinstance(data, sx.Tensor):
        return data.pin_memory()
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, Mapping):
        items = {k: pin_memory(v) for k, v in data.items()}
        try:
            return type(data)(items)
        except TypeError:
            return items
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(pin_memory(v) for v in data))
    if isinstance(data, (list, tuple)):
        return type(data)(pin_memory(v) for v in data)
    if hasattr(data, "pin_memory"):
        return data.pin_memory()
    return data


class _PinnedIter:
    """Wraps a batch iterator so that each batch comes out in pinned memory."""

    def __init__(self, it) -> None:
        self._it = it

    def __iter__(self):
        return self

    def __next__(self):
        return pin_memory(next(self._it))

    def __len__(self) -> int:
        return len(self._it)


class DataLoader:
    """Iterates over batches of a dataset, like ``torch.utils.data.DataLoader``.

    Map-style datasets are read through a sampler (sequential, or random with ``shuffle``)
    grouped by a :class:`BatchSampler`; each batch of samples is merged by ``collate_fn``.
    When the dataset has ``__getitems__`` (``TensorDataset``, ``TokenDataset``, ``Subset``) a
    batch is fetched with one call, and for array datasets with one gather per tensor.
    Iterable datasets are read in order; with workers each worker iterates its own copy (shard
    it with :func:`get_worker_info`).

    With ``num_workers > 0``, worker processes produce the batches and send them through
    shared memory; batches come back in sampler order, so for a given seed the result is the
    same whatever ``num_workers`` is. Each worker is seeded with ``base_seed + worker_id``
    (``random``, NumPy and sneppx_core), with ``base_seed`` drawn per iterator from
    ``generator``. An exception in a worker is raised again here with the worker's traceback;
    a worker that dies raises ``RuntimeError``; dropping an iterator stops its workers.

    Args:
        dataset: the dataset.
        batch_size: samples per batch; ``None`` turns batching off (samples are converted with
            :func:`default_convert` unless ``collate_fn`` is given).
        shuffle: random order each epoch (a :class:`RandomSampler`).
        sampler: the order of indices; excludes ``shuffle``.
        batch_sampler: yields lists of indices; excludes batch_size, shuffle, sampler and drop_last.
        num_workers: worker processes; 0 loads in this process.
        collate_fn: merges a list of samples into a batch (default :func:`default_collate`).
        drop_last: drop the last incomplete batch.
        pin_memory: copy each batch's tensors to page-locked memory (:func:`pin_memory`) when a GPU is
            visible, for fast ``.to("cuda", non_blocking=True)``; without one batches stay in ordinary
            memory and a warning says so, as PyTorch's does. pin_memory_device: accepted, unused.
        prefetch_factor: batches in flight per worker (default 2; only with ``num_workers > 0``).
        persistent_workers: keep the workers alive between epochs.
        worker_init_fn: called as ``worker_init_fn(worker_id)`` in each worker after seeding.
            Workers start with ``sneppx_core.set_num_threads(1)``; it may set another count.
        generator: seeds the shuffle and the workers: ``None`` (sneppx_core's global RNG),
            an ``int``, a ``sneppx_core.Generator`` or a ``numpy.random.Generator``.
        timeout: seconds to wait for a batch from a worker before raising (0: no limit).
        multiprocessing_context: start method name or context (default ``fork`` on Linux).
        in_order: accepted; batches always come back in sampler order.
            With ``spawn`` the dataset, collate_fn and worker_init_fn must be picklable.
    """

    def __init__(self, dataset, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler=None, batch_sampler=None, num_workers: int = 0,
                 collate_fn: Callable | None = None, pin_memory: bool = False, drop_last: bool = False,
                 timeout: float = 0, worker_init_fn: Callable | None = None, multiprocessing_context=None,
                 generator=None, *, prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True) -> None:
        if prefetch_factor is not None and num_workers == 0:
            raise ValueError("DataLoader: prefetch_factor option could only be specified in multiprocessing; "
                             "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None")
        prefetch_factor = 2 if prefetch_factor is None else prefetch_factor
        _check_workers(num_workers, prefetch_factor, persistent_workers, timeout)
        self.pin_memory, self.pin_memory_device, self.in_order = bool(pin_memory), pin_memory_device, in_order
        if self.pin_memory and not sx.cuda.is_available():
            warnings.warn("DataLoader: 'pin_memory' argument is set as true but no accelerator is found, then device "
                          "pinned memory won't be used", UserWarning, stacklevel=2)
        self.dataset, self.num_workers, self.prefetch_factor = dataset, num_workers, prefetch_factor
        self.persistent_workers, self.worker_init_fn, self.timeout = persistent_workers, worker_init_fn, timeout
        self.generator, self.multiprocessing_context = generator, multiprocessing_context
        # An int seed becomes one stream so that successive epochs differ.
        int_seed = isinstance(generator, (int, np.integer)) and not isinstance(generator, bool)
        self._seed_source = np.random.default_rng(draw_seed(generator)) if int_seed else generator
        self._is_iterable = isinstance(dataset, IterableDataset)
        if batch_size is None and drop_last:
            raise ValueError("DataLoader: batch_size=None disables batching and excludes drop_last")
        if self._is_iterable:
            if shuffle or sampler is not None or batch_sampler is not None:
                raise ValueError(
                    "DataLoader: an IterableDataset takes no shuffle, sampler or batch_sampler, "
                    f"got shuffle={shuffle}, sampler={sampler}, batch_sampler={batch_sampler}"
                )
            self.sampler = self.batch_sampler = None
            self._auto_collation = batch_size is not None
        else:
            sampler, batch_sampler, batch_size, drop_last = self._samplers(
                sampler, batch_sampler, batch_size, shuffle, drop_last)
            self.sampler, self.batch_sampler = sampler, batch_sampler
            self._auto_collation = batch_sampler is not None
        self.batch_size, self.drop_last = batch_size, drop_last
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self._iterator = None

    def _samplers(self, sampler, batch_sampler, batch_size, shuffle, drop_last):
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("DataLoader: batch_sampler option is mutually exclusive with "
                                 "batch_size, shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        if sampler is not None and shuffle:
            raise ValueError("DataLoader: sampler option is mutually exclusive with shuffle")
        if sampler is None:
            if shuffle:
                sampler = RandomSampler(self.dataset, generator=self._seed_source)
            else:
                sampler = SequentialSampler(self.dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        return sampler, batch_sampler, batch_size, drop_last

    def _fetch_spec(self) -> FetchSpec:
        return FetchSpec(self.dataset, self._is_iterable, self._auto_collation, self.collate_fn,
                         self.drop_last, self.batch_size, self.num_workers, self.worker_init_fn)

    def _index_fn(self) -> Callable:
        if self._is_iterable:
            return _no_indices
        return functools.partial(_index_batches, self.sampler, self.batch_sampler)

    def __iter__(self):
        it = self._batches()
        return _PinnedIter(it) if self.pin_memory and sx.cuda.is_available() else it

    def _batches(self):
        if self.num_workers == 0:
            return _SingleProcessIter(self, self._index_fn())
        if not self.persistent_workers:
            return MultiProcessIter(self, self._index_fn())
        if self._iterator is None or self._iterator._closed:
            self._iterator = MultiProcessIter(self, self._index_fn())
        else:
            self._iterator._reset()
        return self._iterator

    def __len__(self) -> int:
        if self._is_iterable:
            if not hasattr(self.dataset, "__len__"):
                raise TypeError(f"DataLoader: {type(self.dataset).__name__} has no __len__")
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        return len(self.sampler)
