"""Dataset base classes and combinators (the semantics of ``torch.utils.data``)."""

from __future__ import annotations

import bisect
import math
import warnings
from typing import Iterable, Sequence

from ._rng import draw_seed, torch_randperm


class Dataset:
    """A map-style dataset: ``len(ds)`` samples reachable as ``ds[i]``.

    Subclasses implement ``__getitem__`` (and usually ``__len__``). They may also implement
    ``__getitems__(indices)``, returning the samples for a whole list of indices at once; the
    :class:`~sneppx_data.DataLoader` calls it when present, which lets array-backed datasets
    fetch a batch with one indexing operation.
    """

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __add__(self, other: "Dataset") -> "ConcatDataset":
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset that is a stream: iterate it, do not index it.

    With ``num_workers > 0`` every worker process iterates its own copy; use
    :func:`sneppx_data.get_worker_info` inside ``__iter__`` to give each worker its share,
    otherwise every sample is produced once per worker.
    """

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")

    def __add__(self, other: "IterableDataset") -> "ChainDataset":
        return ChainDataset([self, other])


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order.

    Args:
        dataset: a map-style dataset.
        indices: a sequence of indices into ``dataset``.
    """

    def __init__(self, dataset: Dataset, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        """Fetch several samples, delegating to the parent's ``__getitems__`` when it has one."""
        mapped = [self.indices[int(i)] for i in indices]
        getitems = getattr(self.dataset, "__getitems__", None)
        if callable(getitems):
            return getitems(mapped)
        return [self.dataset[i] for i in mapped]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset):
    """Several map-style datasets read one after the other.

    Index ``i`` falls in the dataset whose cumulative size first exceeds ``i``:
    ``cumulative_sizes[k] = len(d_0) + ... + len(d_k)``.

    Args:
        datasets: a non-empty iterable of map-style datasets.
    """

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset: does not support IterableDataset (use ChainDataset)")
        self.cumulative_sizes = []
        total = 0
        for d in self.datasets:
            total += len(d)
            self.cumulative_sizes.append(total)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int):
        n = len(self)
        if idx < 0:
            if -idx > n:
                raise ValueError(f"ConcatDataset: index {idx} is out of range for length {n}")
            idx += n
        if idx >= n:
            raise IndexError(f"ConcatDataset: index {idx} is out of range for length {n}")
        k = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[k - 1] if k > 0 else 0
        return self.datasets[k][idx - start]


class ChainDataset(IterableDataset):
    """Several iterable datasets streamed one after the other.

    Args:
        datasets: iterable datasets (or any iterables).
    """

    def __init__(self, datasets: Iterable[IterableDataset]) -> None:
        self.datasets = list(datasets)

    def __iter__(self):
        for d in self.datasets:
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self.datasets)


def _fraction_lengths(n: int, fractions: Sequence[float]) -> list[int]:
    lengths = []
    for i, frac in enumerate(fractions):
        if frac < 0 or frac > 1:
            raise ValueError(f"random_split: fraction at index {i} is {frac}, not in [0, 1]")
        lengths.append(int(math.floor(n * frac)))
    for i in range(n - sum(lengths)):
        lengths[i % len(lengths)] += 1
    for i, length in enumerate(lengths):
        if length == 0:
            warnings.warn(f"random_split: length of split at index {i} is 0", stacklevel=3)
    return lengths


def random_split(dataset: Dataset, lengths: Sequence[float], generator=None) -> list[Subset]:
    """Split ``dataset`` into non-overlapping random subsets.

    Args:
        dataset: a map-style dataset.
        lengths: the subset sizes (summing to ``len(dataset)``) or fractions summing to 1;
            with fractions, ``floor(len * f)`` items go to each split and the remainder is dealt
            round-robin from the first split, as in PyTorch.
        generator: ``None`` (global sneppx_core generator), an ``int`` seed, a
            ``sneppx_core.Generator`` or a ``numpy.random.Generator``. With an int seed the split
            equals PyTorch's ``random_split(..., generator=torch.Generator().manual_seed(seed))``.

    Returns:
        A list of :class:`Subset`.
    """
    n = len(dataset)
    lengths = list(lengths)
    if not lengths:
        raise ValueError("random_split: lengths must not be empty")
    total = sum(lengths)
    if math.isclose(total, 1) and total <= 1 and not all(isinstance(x, int) for x in lengths):
        lengths = _fraction_lengths(n, lengths)
    if any(int(x) != x or x < 0 for x in lengths):
        raise ValueError(f"random_split: lengths must be non-negative ints or fractions, got {lengths}")
    if sum(lengths) != n:
        raise ValueError(
            f"random_split: sum of lengths {sum(lengths)} does not equal the dataset length {n}"
        )
    perm = torch_randperm(n, draw_seed(generator))
    subsets, offset = [], 0
    for length in lengths:
        subsets.append(Subset(dataset, perm[offset : offset + int(length)]))
        offset += int(length)
    return subsets
