"""default_collate and default_convert: samples to batches, as PyTorch does."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import sneppx_core as sx

from .tensor_dataset import StackedSamples, _numpy_view, array_to_tensor

_BAD_KINDS = "OSUV"  # object, bytes, str, void: no tensor for these


def _collate_error(found) -> TypeError:
    return TypeError(
        "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
        f"found {found}"
    )


def _stack_tensors(batch) -> "sx.Tensor":
    shape = tuple(batch[0].shape)
    for k, t in enumerate(batch):
        if tuple(t.shape) != shape:
            raise RuntimeError(
                "default_collate: stack expects each tensor to be equal size, but got "
                f"{list(shape)} at entry 0 and {list(t.shape)} at entry {k}"
            )
    views = [_numpy_view(t) for t in batch]
    if all(v is not None for v in views) and len({v.dtype for v in views}) == 1:
        return array_to_tensor(np.stack(views))
    return sx.stack(list(batch), 0)


def _collate_numbers(batch, elem):
    if isinstance(elem, bool):
        return sx.Tensor.from_numpy(np.array(batch, dtype=np.bool_))
    if isinstance(elem, int):
        return sx.Tensor.from_numpy(np.array(batch, dtype=np.int64))
    return sx.Tensor.from_numpy(np.array(batch, dtype=np.float64))


def _collate_sequence(batch, elem):
    size = len(elem)
    if any(len(e) != size for e in batch):
        raise RuntimeError("default_collate: each element in list of batch should be of equal size")
    transposed = list(zip(*batch))
    if isinstance(elem, tuple):
        return [default_collate(s) for s in transposed]
    try:
        return type(elem)([default_collate(s) for s in transposed])
    except TypeError:
        return [default_collate(s) for s in transposed]


def default_collate(batch):
    """Merge a list of samples into a batch, recursively, like PyTorch's ``default_collate``.

    Rules (by the type of the first sample):

    * ``Tensor`` -> ``stack`` along a new first dimension (all shapes must match);
    * NumPy array -> stacked into one Tensor; NumPy scalar -> 1-D Tensor of its dtype
      (integer types sneppx_core lacks, e.g. uint16, are widened to int32 / int64);
    * ``bool`` -> bool Tensor, ``int`` -> int64 Tensor, ``float`` -> float64 Tensor;
    * ``str`` / ``bytes`` -> the list unchanged;
    * ``Mapping`` -> the same mapping type with each key collated;
    * namedtuple -> the same namedtuple with each field collated;
    * other sequences -> transposed and each position collated (tuples come back as lists).

    A :class:`StackedSamples` batch (from ``__getitems__`` of array datasets) is already
    stacked and comes back as the list of its fields.

    Args:
        batch: a sequence of samples.

    Returns:
        The collated batch.
    """
    if isinstance(batch, StackedSamples):
        return list(batch.fields)
    if len(batch) == 0:
        raise ValueError("default_collate: batch is empty")
    elem = batch[0]
    if isinstance(elem, sx.Tensor):
        return _stack_tensors(batch)
    if isinstance(elem, np.ndarray):
        if elem.dtype.kind in _BAD_KINDS:
            raise _collate_error(f"numpy array of dtype {elem.dtype}")
        return array_to_tensor(np.stack(batch))
    if isinstance(elem, np.generic) and not isinstance(elem, (np.str_, np.bytes_)):
        return array_to_tensor(np.array(batch))
    if isinstance(elem, (bool, int, float)):
        return _collate_numbers(batch, elem)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, Mapping):
        collated = {key: default_collate([d[key] for d in batch]) for key in elem}
        try:
            return type(elem)(collated)
        except TypeError:
            return collated
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(default_collate(s) for s in zip(*batch)))
    if isinstance(elem, Sequence):
        return _collate_sequence(batch, elem)
    raise _collate_error(type(elem))


def default_convert(data):
    """Convert NumPy arrays inside ``data`` to Tensors, recursively, without batching.

    Used as the collate function when automatic batching is off (``batch_size=None``).
    Tensors, numbers and strings pass through; tuples come back as lists, as in PyTorch.

    Args:
        data: one sample.

    Returns:
        The converted sample.
    """
    if isinstance(data, sx.Tensor):
        return data
    if isinstance(data, np.ndarray):
        return data if data.dtype.kind in _BAD_KINDS else array_to_tensor(data)
    if isinstance(data, np.generic) and not isinstance(data, (np.str_, np.bytes_)):
        return array_to_tensor(np.asarray(data))
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, Mapping):
        converted = {key: default_convert(v) for key, v in data.items()}
        try:
            return type(data)(converted)
        except TypeError:
            return converted
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, Sequence):
        try:
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data
