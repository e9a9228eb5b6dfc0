"""TokenDataset: next-token windows over a memory-mapped token array."""

from __future__ import annotations

import os

import numpy as np
import sneppx_core as sx

from .dataset import Dataset
from .tensor_dataset import StackedSamples


def _open_tokens(path, dtype, offset: int) -> np.ndarray:
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"TokenDataset: no such file {path!r}")
    if path.endswith(".npy"):
        return np.load(path, mmap_mode="r")
    if dtype is None:
        raise ValueError(
            f"TokenDataset: {path!r} is a raw binary file; pass dtype= (e.g. dtype='uint16') "
            "or save it as .npy"
        )
    return np.memmap(path, dtype=np.dtype(dtype), mode="r", offset=offset)


def _check_tokens(tokens) -> np.ndarray:
    if isinstance(tokens, sx.Tensor):
        tokens = tokens.numpy()
    if not isinstance(tokens, np.ndarray):
        raise TypeError(
            f"TokenDataset: expected a path, numpy array or Tensor, got {type(tokens).__name__}"
        )
    if not np.issubdtype(tokens.dtype, np.integer):
        raise TypeError(f"TokenDataset: token ids must have an integer dtype, got {tokens.dtype}")
    if tokens.ndim != 1:
        raise ValueError(f"TokenDataset: token array must be 1-D, got shape {tokens.shape}")
    return tokens


class TokenDataset(Dataset):
    """Language-modelling samples from one long array of token ids, read lazily.

    The tokens stay on disk (a NumPy memmap, any integer dtype), so corpora larger than memory
    train without loading. Sample ``i`` is the pair of int64 tensors::

        s = i * stride
        x = tokens[s : s + seq_len]          # input
        y = tokens[s + 1 : s + seq_len + 1]  # target: the input shifted by one

    and ``len(ds) = (N - seq_len - 1) // stride + 1`` for ``N`` tokens. Samples are copies of
    the windows (``seq_len + 1`` tokens each), so they can be modified in place.

    Args:
        path_or_array: a ``.npy`` file (opened with ``mmap_mode='r'``), a raw binary file of
            token ids (``dtype`` required), or an integer NumPy array / memmap / Tensor.
        seq_len: window length (``>= 1``).
        stride: distance between window starts; defaults to ``seq_len`` (non-overlapping).
        dtype: element type of a raw binary file, e.g. ``'uint16'``.
        offset: byte offset of the first token in a raw binary file.
    """

    def __init__(self, path_or_array, seq_len: int, *, stride: int | None = None,
                 dtype=None, offset: int = 0) -> None:
        if isinstance(seq_len, bool) or not isinstance(seq_len, (int, np.integer)) or seq_len < 1:
            raise ValueError(f"TokenDataset: seq_len must be a positive int, got {seq_len!r}")
        stride = seq_len if stride is None else stride
        if isinstance(stride, bool) or not isinstance(stride, (int, np.integer)) or stride < 1:
            raise ValueError(f"TokenDataset: stride must be a positive int, got {stride!r}")
        self.seq_len, self.stride = int(seq_len), int(stride)
        if isinstance(path_or_array, (str, os.PathLike)):
            self._source = (os.fspath(path_or_array), dtype, int(offset))
            self.tokens = _check_tokens(_open_tokens(*self._source))
        else:
            self._source = None
            self.tokens = _check_tokens(path_or_array)
        n = self.tokens.shape[0]
        if n < self.seq_len + 1:
            raise ValueError(
                f"TokenDataset: needs at least seq_len + 1 = {self.seq_len + 1} tokens, got {n}"
            )
        self._len = (n - self.seq_len - 1) // self.stride + 1

    def __len__(self) -> int:
        return self._len

    def _check_index(self, i: int) -> int:
        if i < -self._len or i >= self._len:
            raise IndexError(f"TokenDataset: index {i} is out of range for {self._len} samples")
        return i % self._len

    def __getitem__(self, i):
        s = self._check_index(int(i)) * self.stride
        # Always a copy: an int64 memmap slice would otherwise reach the tensor as read-only
        # file pages, and writing to the sample would fault.
        window = np.array(self.tokens[s : s + self.seq_len + 1], dtype=np.int64)
        return sx.Tensor.from_numpy(window[:-1]), sx.Tensor.from_numpy(window[1:].copy())

    def __getitems__(self, indices) -> StackedSamples:
        """Gather the windows at ``indices`` with one read: int64 tensors ``(B, seq_len)``."""
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        if idx.size and (idx.max() >= self._len or idx.min() < -self._len):
            bad = idx[(idx >= self._len) | (idx < -self._len)][0]
            self._check_index(int(bad))
        starts = (idx % max(self._len, 1)) * self.stride
        rows = starts[:, None] + np.arange(self.seq_len + 1, dtype=np.int64)
        windows = np.asarray(self.tokens[rows], dtype=np.int64)
        x = np.ascontiguousarray(windows[:, :-1])
        y = np.ascontiguousarray(windows[:, 1:])
        return StackedSamples([sx.Tensor.from_numpy(x), sx.Tensor.from_numpy(y)])

    def __getstate__(self):
        # A file-backed dataset travels to worker processes as its path, not its contents.
        state = self.__dict__.copy()
        if self._source is not None:
            state["tokens"] = None
        return state

    def __setstate__(self, state) -> None:
        self.__dict__.update(state)
        if self.tokens is None:
            self.tokens = _check_tokens(_open_tokens(*self._source))
