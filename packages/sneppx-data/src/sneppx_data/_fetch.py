"""Turning one batch of indices into one collated batch, in the main process or a worker."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .token_dataset import TokenDataset
from .tensor_dataset import TensorDataset

# Datasets whose __getitems__ takes an int64 array directly (no list round trip).
_ARRAY_INDEXED = (TensorDataset, TokenDataset)


@dataclass
class FetchSpec:
    """Everything a fetcher (and a worker process) needs to know about the loader."""

    dataset: Any
    is_iterable: bool
    auto_collation: bool
    collate_fn: Callable
    drop_last: bool
    batch_size: int | None
    num_workers: int = 0
    worker_init_fn: Callable | None = None


class MapFetcher:
    """Fetches ``dataset[i]`` for each index of a batch (or one ``__getitems__`` call) and collates."""

    def __init__(self, spec: FetchSpec) -> None:
        self.spec = spec
        self._getitems = getattr(spec.dataset, "__getitems__", None)
        self._takes_array = isinstance(spec.dataset, _ARRAY_INDEXED)

    def fetch(self, index):
        dataset, spec = self.spec.dataset, self.spec
        if not spec.auto_collation:
            return spec.collate_fn(dataset[index])
        if self._takes_array:
            return spec.collate_fn(self._getitems(index))
        if isinstance(index, np.ndarray):
            index = index.tolist()
        if callable(self._getitems):
            return spec.collate_fn(self._getitems(index))
        return spec.collate_fn([dataset[i] for i in index])


class IterableFetcher:
    """Takes the next ``batch_size`` items of the dataset's iterator and collates them.

    ``fetch`` raises ``StopIteration`` when the stream is exhausted (or, with ``drop_last``, when
    fewer than ``batch_size`` items are left).
    """

    def __init__(self, spec: FetchSpec) -> None:
        self.spec = spec
        self._it = iter(spec.dataset)
        self._ended = False

    def fetch(self, index=None):
        spec = self.spec
        if self._ended:
            raise StopIteration
        if not spec.auto_collation:
            try:
                return spec.collate_fn(next(self._it))
            except StopIteration:
                self._ended = True
                raise
        data = list(itertools.islice(self._it, spec.batch_size))
        if not data or (spec.drop_last and len(data) < spec.batch_size):
            self._ended = True
            raise StopIteration
        if len(data) < spec.batch_size:
            self._ended = True
        return spec.collate_fn(data)


def make_fetcher(spec: FetchSpec):
    """A :class:`MapFetcher` or :class:`IterableFetcher` for ``spec``."""
    return IterableFetcher(spec) if spec.is_iterable else MapFetcher(spec)
