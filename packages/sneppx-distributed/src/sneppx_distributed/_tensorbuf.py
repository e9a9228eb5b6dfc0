"""Tensors as MPI buffers, without copies where the memory layout allows.

A contiguous CPU tensor of a dtype NumPy knows is handed to MPI as ``t.detach().numpy()``,
which shares its memory. Anything else (a non-contiguous view, bfloat16) travels through a
contiguous staging array that is copied back with ``Tensor.copy_`` afterwards. Writing through
the shared NumPy view bypasses the tensor's version counter, so :func:`mark_written` bumps it
with an in-place no-op on a zero-element view of the same storage.
"""

from __future__ import annotations

import numpy as np
import sneppx_core as sx

_NUMPY = {sx.float32, sx.float64, sx.float16, sx.int32, sx.int64, sx.int16, sx.int8, sx.uint8, sx.bool_}


def check_tensor(t, fn: str, what: str = "tensor") -> None:
    """Raise ``TypeError`` unless ``t`` is a Tensor, ``RuntimeError`` unless it lives on the CPU."""
    if not isinstance(t, sx.Tensor):
        raise TypeError(f"{fn}: {what} must be a sneppx_core.Tensor, got {type(t).__name__}")
    if t.device.type != "cpu":
        raise RuntimeError(f"{fn}: {what} is on {t.device}; the MPI backend handles CPU tensors only")


def mark_written(t) -> None:
    """Bump ``t``'s version counter after its memory was written through a NumPy view."""
    with sx.no_grad():
        t.detach().reshape(-1)[:0].zero_()


class Buffer:
    """A tensor's data as a flat contiguous NumPy array that MPI reads or writes."""

    def __init__(self, t, fn: str, what: str = "tensor") -> None:
        check_tensor(t, fn, what)
        self.tensor = t
        self.staged = not (t.is_contiguous() and t.dtype in _NUMPY)
        d = t.detach()
        if self.staged:
            d = d.float() if d.dtype == sx.bfloat16 else d
            self.array = np.ascontiguousarray(d.numpy()).reshape(-1)
        else:
            self.array = d.numpy().reshape(-1)

    def written(self) -> None:
        """Make the tensor reflect what MPI wrote into :attr:`array`."""
        if self.staged:
            write_array(self.tensor, self.array)
        else:
            mark_written(self.tensor)


def write_array(t, array: np.ndarray) -> None:
    """Copy ``array`` (any shape with ``t.numel()`` elements) into tensor ``t`` in place."""
    if t.is_contiguous() and t.dtype in _NUMPY:
        np.copyto(t.detach().numpy().reshape(-1), array.reshape(-1), casting="unsafe")
        mark_written(t)
        return
    with sx.no_grad():
        t.detach().copy_(sx.Tensor.from_numpy(np.ascontiguousarray(array).reshape(t.shape)))


def check_like(t, ref, fn: str, what: str) -> None:
    """Raise unless tensor ``t`` has the shape and dtype of ``ref``."""
    check_tensor(t, fn, what)
    if t.dtype != ref.dtype:
        raise TypeError(f"{fn}: {what} has dtype {t.dtype}, expected {ref.dtype}")
    if tuple(t.shape) != tuple(ref.shape):
        raise ValueError(f"{fn}: {what} has shape {tuple(t.shape)}, expected {tuple(ref.shape)}")


def stack_arrays(tensors, ref, fn: str, what: str) -> np.ndarray:
    """One contiguous ``(len(tensors), numel)`` array from tensors shaped like ``ref``."""
    for i, t in enumerate(tensors):
        check_like(t, ref, fn, f"{what}[{i}]")
    return np.stack([Buffer(t, fn).array for t in tensors]) if tensors else np.empty((0, 0))
