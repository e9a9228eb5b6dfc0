"""Samplers: which indices a DataLoader reads, and in which order."""

from __future__ import annotations

from typing import Iterator, Sequence

import numpy as np
import sneppx_core as sx

from ._rng import numpy_generator


def _positive_int(value, name: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"{where}: {name} should be a positive integer value, but got {name}={value!r}")
    return int(value)


def _check_bool(value, name: str, where: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{where}: {name} should be a boolean value, but got {name}={value!r}")
    return value


def _array_iter(self) -> Iterator[int]:
    # Shared __iter__ of the built-in samplers; BatchSampler only slices their index chunks when a
    # sampler still uses it (a subclass that overrides __iter__ is iterated instead).
    for chunk in self._index_chunks():
        yield from chunk.tolist()


_CHUNK = 1 << 16  # indices drawn at a time by RandomSampler with replacement


class Sampler:
    """Base class: an iterable of dataset indices (or of lists of indices, for batch samplers).

    Samplers that can produce all their indices as one int64 NumPy array also define
    ``_index_array()``; :class:`BatchSampler` then slices that array instead of looping.
    """

    def __init__(self, data_source=None) -> None:
        pass

    def __iter__(self) -> Iterator:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")

    def _index_chunks(self) -> Iterator[np.ndarray]:
        """The indices as consecutive int64 arrays (by default one: ``_index_array()``)."""
        yield self._index_array()


class SequentialSampler(Sampler):
    """Yields ``0, 1, ..., len(data_source) - 1``."""

    def __init__(self, data_source) -> None:
        self.data_source = data_source

    def _index_array(self) -> np.ndarray:
        return np.arange(len(self.data_source), dtype=np.int64)

    __iter__ = _array_iter

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """Yields the indices of ``data_source`` in random order.

    Without replacement it yields whole permutations of ``range(n)`` (``num_samples // n`` of
    them, then the first ``num_samples % n`` items of one more); with replacement it yields
    ``num_samples`` independent uniform draws from ``range(n)``.

    Args:
        data_source: a sized dataset.
        replacement: draw with replacement.
        num_samples: how many indices per epoch; defaults to ``len(data_source)``.
        generator: ``None`` (a new stream per epoch seeded from sneppx_core's global generator,
            so ``sx.manual_seed`` fixes the order), a ``sneppx_core.Generator`` (same, seeded
            from it), an ``int`` seed or a ``numpy.random.Generator`` (one stream continued
            across epochs).
        seed: alias for an ``int`` ``generator``.

    The permutations come from NumPy's PCG64, so orders differ from PyTorch's for the same seed
    (see :class:`DistributedSampler` and :func:`random_split` for PyTorch-identical ones).
    """

    def __init__(self, data_source, replacement: bool = False, num_samples: int | None = None,
                 generator=None, seed: int | None = None) -> None:
        self.data_source = data_source
        self.replacement = _check_bool(replacement, "replacement", "RandomSampler")
        if seed is not None and generator is not None:
            raise ValueError("RandomSampler: pass either generator= or seed=, not both")
        self.generator = seed if seed is not None else generator
        self._num_samples = num_samples
        _positive_int(self.num_samples, "num_samples", "RandomSampler")
        self._stream = None
        if isinstance(self.generator, (int, np.integer, np.random.Generator)):
            self._stream = numpy_generator(self.generator)

    @property
    def num_samples(self) -> int:
        """Indices per epoch."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def _index_array(self) -> np.ndarray:
        return np.concatenate(list(self._index_chunks()))

    def _index_chunks(self) -> Iterator[np.ndarray]:
        # Drawn lazily, a chunk at a time, so that num_samples may far exceed memory.
        n, k = len(self.data_source), self.num_samples
        rng = self._stream if self._stream is not None else numpy_generator(self.generator)
        if self.replacement:
            for start in range(0, k, _CHUNK):
                yield rng.integers(0, n, size=min(_CHUNK, k - start), dtype=np.int64)
            return
        for _ in range(k // n):
            yield rng.permutation(n).astype(np.int64, copy=False)
        if k % n:
            yield rng.permutation(n)[: k % n].astype(np.int64, copy=False)

    __iter__ = _array_iter

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """Yields the given indices in a random order (a new permutation each epoch).

    Args:
        indices: the indices to sample from.
        generator: as for :class:`RandomSampler`.
    """

    def __init__(self, indices: Sequence[int], generator=None) -> None:
        self.indices = indices
        self.generator = generator
        self._stream = None
        if isinstance(generator, (int, np.integer, np.random.Generator)):
            self._stream = numpy_generator(generator)

    def _index_array(self) -> np.ndarray:
        rng = self._stream if self._stream is not None else numpy_generator(self.generator)
        return np.asarray(self.indices, dtype=np.int64)[rng.permutation(len(self.indices))]

    __iter__ = _array_iter

    def __len__(self) -> int:
        return len(self.indices)


def _weights_array(weights) -> np.ndarray:
    if isinstance(weights, sx.Tensor):
        weights = weights.tolist()
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 1:
        raise ValueError(f"WeightedRandomSampler: weights should be 1-D, got shape {w.shape}")
    if w.size == 0 or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise ValueError(
            "WeightedRandomSampler: weights must be finite, non-negative and have a positive sum"
        )
    return w


class WeightedRandomSampler(Sampler):
    """Yields ``num_samples`` indices drawn with probability ``p_i = w_i / sum(w)``.

    Without replacement, each draw is taken from the items not drawn yet, with probabilities
    renormalised over them (sequential weighted sampling, like ``torch.multinomial``).

    Args:
        weights: a 1-D sequence (or Tensor) of non-negative weights, not necessarily summing to 1.
        num_samples: indices per epoch.
        replacement: draw with replacement; without it ``num_samples`` may not exceed the number
            of non-zero weights.
        generator: as for :class:`RandomSampler`.
    """

    def __init__(self, weights, num_samples: int, replacement: bool = True, generator=None) -> None:
        self.num_samples = _positive_int(num_samples, "num_samples", "WeightedRandomSampler")
        self.replacement = _check_bool(replacement, "replacement", "WeightedRandomSampler")
        self.weights = _weights_array(weights)
        nonzero = int(np.count_nonzero(self.weights))
        if not replacement and self.num_samples > nonzero:
            raise ValueError(
                f"WeightedRandomSampler: cannot draw {self.num_samples} samples without "
                f"replacement from {nonzero} non-zero weights"
            )
        self.generator = generator
        self._stream = None
        if isinstance(generator, (int, np.integer, np.random.Generator)):
            self._stream = numpy_generator(generator)

    def _index_array(self) -> np.ndarray:
        rng = self._stream if self._stream is not None else numpy_generator(self.generator)
        p = self.weights / self.weights.sum()
        out = rng.choice(len(p), size=self.num_samples, replace=self.replacement, p=p)
        return out.astype(np.int64, copy=False)

    __iter__ = _array_iter

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of ``sampler`` into lists of ``batch_size``.

    Args:
        sampler: a sampler or any iterable of indices.
        batch_size: indices per batch.
        drop_last: drop the final batch when it has fewer than ``batch_size`` indices.
    """

    def __init__(self, sampler, batch_size: int, drop_last: bool) -> None:
        self.sampler = sampler
        self.batch_size = _positive_int(batch_size, "batch_size", "BatchSampler")
        if not isinstance(drop_last, bool):
            raise ValueError(f"BatchSampler: drop_last should be a boolean value, but got {drop_last!r}")
        self.drop_last = drop_last

    def _index_batches(self) -> Iterator:
        """Yield each batch as an int64 NumPy array when the sampler allows it, else as a list."""
        if getattr(type(self.sampler), "__iter__", None) is not _array_iter:
            yield from self
            return
        bs, rest = self.batch_size, np.empty(0, np.int64)
        for chunk in self.sampler._index_chunks():
            idx = np.concatenate([rest, chunk]) if len(rest) else chunk
            stop = len(idx) - len(idx) % bs
            for start in range(0, stop, bs):
                yield idx[start : start + bs]
            rest = idx[stop:]
        if len(rest) and not self.drop_last:
            yield rest

    def __iter__(self) -> Iterator[list]:
        batch = []
        for i in self.sampler:
            batch.append(i)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
