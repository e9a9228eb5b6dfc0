"""Array-backed datasets: TensorDataset and the batch container they return."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import sneppx_core as sx

from .dataset import Dataset


class StackedSamples(Sequence):
    """A batch of samples stored as already-stacked fields.

    ``__getitems__`` of array-backed datasets returns this instead of a list of per-sample
    tuples. It behaves like that list (``len``, indexing, iteration give one tuple per sample),
    and :func:`~sneppx_data.default_collate` returns :attr:`fields` as a list without stacking
    again, which is what makes batch loading from a :class:`TensorDataset` one indexing
    operation per tensor.

    Args:
        fields: tensors that share their first dimension (the batch dimension).
    """

    def __init__(self, fields: Sequence) -> None:
        self.fields = list(fields)
        sizes = {f.shape[0] for f in self.fields}
        if len(sizes) > 1:
            raise ValueError(f"StackedSamples: fields have different batch sizes {sorted(sizes)}")

    def __len__(self) -> int:
        return self.fields[0].shape[0] if self.fields else 0

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return tuple(f[i] for f in self.fields)

    def __repr__(self) -> str:
        shapes = ", ".join(str(tuple(f.shape)) for f in self.fields)
        return f"StackedSamples({shapes})"


# NumPy dtypes sneppx_core has no tensor type for, and the type that holds all their values.
_WIDEN = {np.dtype(np.uint16): np.int32, np.dtype(np.uint32): np.int64, np.dtype(np.uint64): np.int64}


def array_to_tensor(a: np.ndarray):
    """``Tensor.from_numpy(a)`` (shared memory), widening integer types the core lacks.

    uint16 becomes int32 and uint32 / uint64 int64 (a copy); other dtypes the
    core cannot hold raise TypeError.
    """
    wide = _WIDEN.get(a.dtype)
    if wide is not None:
        a = a.astype(wide)
    return sx.Tensor.from_numpy(a)


def _as_tensor(t, where: str):
    if isinstance(t, sx.Tensor):
        return t
    if isinstance(t, np.ndarray):
        return array_to_tensor(np.ascontiguousarray(t))
    raise TypeError(f"{where}: expected sneppx_core.Tensor or numpy.ndarray, got {type(t).__name__}")


def _numpy_view(t):
    """The NumPy array sharing ``t``'s memory, or None when the tensor cannot expose one."""
    try:
        if str(t.device) != "cpu" or t.requires_grad:
            return None
        return t.numpy()
    except (TypeError, RuntimeError, ValueError, AttributeError):
        return None


def take_rows(tensor, view, idx: np.ndarray, where: str):
    """Rows ``idx`` of ``tensor`` (first dimension) as a new tensor.

    Uses the NumPy view when there is one (a single gather), else sneppx_core indexing.
    """
    n = tensor.shape[0]
    if idx.size and (idx.max() >= n or idx.min() < -n):
        bad = idx[(idx >= n) | (idx < -n)][0]
        raise IndexError(f"{where}: index {int(bad)} is out of range for {n} samples")
    if view is not None:
        return array_to_tensor(np.take(view, idx, axis=0))
    return tensor[sx.Tensor.from_numpy(idx.astype(np.int64))]


class TensorDataset(Dataset):
    """Samples are the rows of tensors that share their first dimension.

    ``ds[i] == (t0[i], t1[i], ...)``. ``ds.__getitems__(indices)`` gathers a whole batch with
    one indexing operation per tensor.

    Args:
        *tensors: ``sneppx_core.Tensor`` objects (NumPy arrays are accepted and shared) with
            equal ``shape[0]``.
    """

    def __init__(self, *tensors) -> None:
        if not tensors:
            raise ValueError("TensorDataset: needs at least one tensor")
        self.tensors = tuple(_as_tensor(t, "TensorDataset") for t in tensors)
        sizes = [t.shape[0] if t.ndim else None for t in self.tensors]
        if None in sizes or len(set(sizes)) != 1:
            shapes = [tuple(t.shape) for t in self.tensors]
            raise ValueError(f"TensorDataset: size mismatch between tensors, shapes {shapes}")
        self._views = None

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]

    def __getitems__(self, indices) -> StackedSamples:
        """Return the samples at ``indices`` as :class:`StackedSamples` (one gather per tensor)."""
        if self._views is None:
            self._views = [_numpy_view(t) for t in self.tensors]
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        return StackedSamples(
            [take_rows(t, v, idx, "TensorDataset") for t, v in zip(self.tensors, self._views)]
        )

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_views"] = None
        return state
