"""Variable-length sequences for recurrent layers, as ``torch.nn.utils.rnn``.

A :class:`PackedSequence` stores a batch of sequences time-major without padding: ``data`` holds,
for each step ``t``, the step-``t`` items of the sequences longer than ``t`` (longest first), and
``batch_sizes[t]`` says how many there are.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import sneppx_core as sx


class PackedSequence(NamedTuple):
    """A packed batch: ``data`` (sum of lengths, *), ``batch_sizes`` (int64, one per step),
    ``sorted_indices`` (the batch order used in ``data``) and ``unsorted_indices`` (its inverse);
    the indices are None when the batch was already sorted by decreasing length."""

    data: sx.Tensor
    batch_sizes: sx.Tensor
    sorted_indices: sx.Tensor | None = None
    unsorted_indices: sx.Tensor | None = None


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0, padding_side: str = "right"):
    """Stacks tensors of shape (L_i, *) into one (max L, B, *) tensor ((B, max L, *) with
    ``batch_first``), filling the missing steps with ``padding_value`` on ``padding_side``."""
    if isinstance(sequences, sx.Tensor):
        sequences = list(sequences.unbind(0))
    if not sequences:
        raise ValueError("[pad_sequence] received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise ValueError(f"[pad_sequence] padding_side must be 'left' or 'right', got {padding_side!r}")
    tail = tuple(sequences[0].shape[1:])
    for s in sequences:
        if tuple(s.shape[1:]) != tail:
            raise ValueError(f"[pad_sequence] every sequence must have trailing shape {tail}, got {tuple(s.shape)}")
    longest = max(s.shape[0] for s in sequences)
    rows = []
    for s in sequences:
        missing = longest - s.shape[0]
        if missing:
            pad = sx.full((missing, *tail), padding_value, dtype=s.dtype, device=s.device)
            s = sx.cat([s, pad] if padding_side == "right" else [pad, s], 0)
        rows.append(s)
    return sx.stack(rows, 0 if batch_first else 1)


def _lengths(lengths):
    if isinstance(lengths, sx.Tensor):
        lengths = lengths.tolist()
    return [int(n) for n in lengths]


def _pack(padded, lengths, sorted_indices):
    """Packs (T, B, *) ``padded`` whose sequences have ``lengths`` (original batch order)."""
    order = list(range(len(lengths))) if sorted_indices is None else sorted_indices.tolist()
    ordered = [lengths[i] for i in order]
    x = padded if sorted_indices is None else padded.index_select(1, sorted_indices)
    sizes = [sum(1 for n in ordered if n > t) for t in range(ordered[0])]
    data = sx.cat([x[t].narrow(0, 0, b) for t, b in enumerate(sizes)], 0)
    unsorted = None if sorted_indices is None else sx.tensor(np.argsort(np.array(order)).astype(np.int64),
                                                             device=sorted_indices.device)
    return PackedSequence(data, sx.tensor(sizes, dtype=sx.int64), sorted_indices, unsorted)


def pack_padded_sequence(input, lengths, batch_first: bool = False, enforce_sorted: bool = True) -> PackedSequence:
    """Packs a padded batch (T, B, *) ((B, T, *) with ``batch_first``) of sequences with the given
    ``lengths``. With ``enforce_sorted`` the lengths must already decrease; otherwise the batch is
    sorted here and the order kept in the result."""
    lengths = _lengths(lengths)
    x = input.transpose(0, 1) if batch_first else input
    if len(lengths) != x.shape[1]:
        raise ValueError(f"[pack_padded_sequence] {len(lengths)} lengths for a batch of {x.shape[1]} "
                         f"(input shape {tuple(input.shape)}, batch_first={batch_first})")
    if min(lengths) <= 0 or max(lengths) > x.shape[0]:
        raise ValueError(f"[pack_padded_sequence] lengths must be in [1, {x.shape[0]}], got {lengths}")
    if enforce_sorted:
        if any(a < b for a, b in zip(lengths, lengths[1:])):
            raise RuntimeError(f"[pack_padded_sequence] lengths {lengths} are not sorted in decreasing order; "
                               "sort the batch or pass enforce_sorted=False")
        return _pack(x, lengths, None)
    order = np.argsort(-np.array(lengths), kind="stable").astype(np.int64)
    return _pack(x, lengths, sx.tensor(order, device=x.device))  # the sort order on the data's device, as in PyTorch


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None):
    """Undoes :func:`pack_padded_sequence`: returns the padded batch (T, B, *) and the lengths
    (int64, original batch order); ``total_length`` pads to at least that many steps."""
    data, sizes = sequence.data, sequence.batch_sizes.tolist()
    batch, steps = sizes[0], len(sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError(f"[pad_packed_sequence] total_length {total_length} is shorter than the longest "
                             f"sequence ({steps} steps)")
        steps = total_length
    tail = tuple(data.shape[1:])
    rows, start = [], 0
    for b in sizes:
        row = data.narrow(0, start, b)
        if b < batch:
            row = sx.cat([row, sx.full((batch - b, *tail), padding_value, dtype=data.dtype, device=data.device)], 0)
        rows.append(row)
        start += b
    rows += [sx.full((batch, *tail), padding_value, dtype=data.dtype, device=data.device)] * (steps - len(sizes))
    padded = sx.stack(rows, 0)
    lengths = np.array([sum(1 for s in sizes if s > i) for i in range(batch)], dtype=np.int64)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(1, sequence.unsorted_indices.to(padded.device))
        lengths = lengths[sequence.unsorted_indices.cpu().numpy()]
    return (padded.transpose(0, 1) if batch_first else padded), sx.tensor(lengths)


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Packs a list of tensors (L_i, *) (``pad_sequence`` then ``pack_padded_sequence``)."""
    return pack_padded_sequence(pad_sequence(sequences), [s.shape[0] for s in sequences],
                                enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences, lengths, batch_first: bool = False):
    """Splits a padded batch back into a list of tensors of the given lengths."""
    x = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    return [x[i].narrow(0, 0, n) for i, n in enumerate(_lengths(lengths))]


__all__ = ["PackedSequence", "pad_sequence", "pack_padded_sequence", "pad_packed_sequence", "pack_sequence",
           "unpad_sequence"]
