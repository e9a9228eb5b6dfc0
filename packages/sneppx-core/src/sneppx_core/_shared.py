"""Tensors in shared memory: ``Tensor.share_memory_``, ``is_shared``, and handing them to other processes.

``share_memory_`` moves a CPU tensor's storage into an anonymous memory file (``memfd_create``)
mapped shared, and points the tensor at it. Forked children see the same pages. For spawned
children and multiprocessing queues, a reducer registered with multiprocessing's pickler
(``ForkingPickler``) sends the file's descriptor (``multiprocessing.reduction.DupFd``, as PyTorch's
``file_descriptor`` strategy does) and the receiver maps it again, so writes on either side are seen by
both (Hogwild training). Plain ``pickle`` and ``copy.deepcopy`` still copy the values. The memory is
freed when the last process unmaps it; the file has no name, so nothing is left behind.
"""

from __future__ import annotations

import functools
import mmap
import os
import weakref

import numpy as np

from ._backend import _C
from ._C_face import Dtype, Tensor
from ._tensor_strided import _need_c


class _SharedMap(mmap.mmap):
    """A shared mapping of a memory file; ``fd`` stays open (for handing to other processes) until the map dies."""


_MAPS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # base address -> _SharedMap


def _map(fd: int, size: int):
    """Maps ``size`` bytes of memory file ``fd`` (which the map then owns) and records it."""
    m = _SharedMap(fd, size)
    m.fd = fd
    weakref.finalize(m, os.close, fd)
    arr = np.frombuffer(m, dtype=np.uint8)
    _MAPS[arr.ctypes.data] = m
    return arr


def bytes_as(raw: np.ndarray, dtype) -> Tensor:
    """A NumPy uint8 array's bytes as a 1-D tensor of ``dtype``, sharing them (a bool tensor reads each byte as
    is: the caller vouches that they are 0 or 1)."""
    if dtype == Dtype.BOOL:
        return Tensor.from_numpy(raw.view(np.bool_))
    return Tensor.from_numpy(raw).view(dtype)


def _map_of(t: Tensor):
    """The shared map holding ``t``'s storage, or None."""
    if t.device.type != "cpu" or not _MAPS:
        return None
    return _MAPS.get(t.data_ptr() - t.storage_offset() * t.element_size())


@functools.cache
def _register():
    """Registers :func:`reduce_tensor` with multiprocessing's pickler (once)."""
    from multiprocessing.reduction import ForkingPickler

    ForkingPickler.register(Tensor, reduce_tensor)


def share_memory_(self):
    """Moves the tensor's storage into shared memory and returns the tensor (PyTorch's ``share_memory_``).

    Processes forked afterwards, and processes the tensor is sent to through ``multiprocessing``
    (``Process`` arguments, queues, pipes), share its memory: a write by one is seen by all. A no-op
    for a tensor already shared and for CUDA tensors. Other views of the old storage keep it (they
    are not moved)."""
    if not isinstance(self, Tensor):
        raise TypeError(f"[share_memory_] expected a Tensor, got {type(self).__name__}")
    if self.device.type != "cpu" or _map_of(self) is not None:
        return self
    _need_c("share_memory_")
    if not hasattr(os, "memfd_create"):
        raise NotImplementedError("[share_memory_] needs os.memfd_create (Linux)")
    _register()
    nbytes = _C._storage_nbytes(self)
    fd = os.memfd_create("sneppx-shared", os.MFD_CLOEXEC)
    try:
        os.ftruncate(fd, max(nbytes, 1))
    except OSError:
        os.close(fd)
        raise
    flat = bytes_as(_map(fd, max(nbytes, 1))[:nbytes], self.dtype)
    old = _C._as_strided(self.detach(), [flat.numel()], [1], 0)
    flat.copy_(old)
    self._set_data(_C._as_strided(flat, list(self.shape), list(self.stride()), self.storage_offset()))
    return self


def is_shared(self):
    """True when the tensor's storage is in shared memory (``share_memory_``, or received from another process)."""
    if not isinstance(self, Tensor):
        raise TypeError(f"[is_shared] expected a Tensor, got {type(self).__name__}")
    return _map_of(self) is not None


def reduce_tensor(t: Tensor):
    """How multiprocessing's pickler sends a tensor: a shared one as its memory file's descriptor plus
    its geometry (the receiver maps the same memory), any other as a copy of its values."""
    m = _map_of(t)
    if m is None:
        return t.__reduce__()
    from multiprocessing.reduction import DupFd

    nbytes = _C._storage_nbytes(t)
    return (_rebuild_shared, (DupFd(m.fd), len(m), nbytes, t.dtype, t.storage_offset(), tuple(t.shape),
                              tuple(t.stride()), t.requires_grad))


def _rebuild_shared(dup, size, nbytes, dtype, offset, shape, stride, requires_grad):
    _register()
    flat = bytes_as(_map(dup.detach(), size)[:nbytes], dtype)
    t = _C._as_strided(flat, list(shape), list(stride), offset)
    return t.requires_grad_(True) if requires_grad else t
