"""The NCCL backend: collectives on CUDA tensors through NVIDIA's NCCL library.

The library comes from the ``nvidia-nccl-cu13`` wheel (``pip install 'sneppx-distributed[cuda]'``)
and is called through ``ctypes``. MPI still starts the ranks and hands rank 0's NCCL id to the
others; the tensors' memory goes straight to NCCL by address. Every collective is queued on the
device's one stream (the stream all of sneppx-core's CUDA work runs on), so the kernels that come
after it see its result without any host wait; ``Work.wait()`` therefore returns at once, and
``torch.cuda.synchronize()`` is what waits for the data on the host.
"""

from __future__ import annotations

import ctypes
import os

import sneppx_core as sx

_DTYPES = {sx.int8: 0, sx.uint8: 1, sx.bool: 1, sx.int32: 2, sx.int64: 4, sx.float16: 6, sx.float32: 7, sx.float64: 8,
           sx.bfloat16: 9}  # ncclInt8 ... ncclBfloat16 (NCCL has no int16)
_OPS = {"sum": 0, "product": 1, "max": 2, "min": 3, "avg": 4}
_BOOL_OPS = {"sum": 2, "max": 2, "bor": 2, "product": 3, "min": 3, "band": 3}  # logical or / and as max / min
_lib = None


class _UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


def library_path() -> str:
    """Where ``libnccl.so.2`` is: ``SNEPPX_NCCL_LIBRARY``, else the ``nvidia-nccl-cu13`` wheel."""
    path = os.environ.get("SNEPPX_NCCL_LIBRARY")
    if path:
        return path
    try:
        import nvidia.nccl
    except ImportError:
        raise RuntimeError("the NCCL backend needs the nvidia-nccl-cu13 wheel: pip install 'sneppx-distributed[cuda]'"
                           ) from None
    for root in nvidia.nccl.__path__:
        candidate = os.path.join(root, "lib", "libnccl.so.2")
        if os.path.isfile(candidate):
            return candidate
    raise RuntimeError(f"libnccl.so.2 not found in the nvidia-nccl-cu13 wheel ({list(nvidia.nccl.__path__)})")


def library():
    """The loaded NCCL library (loaded once)."""
    global _lib
    if _lib is None:
        lib = ctypes.CDLL(library_path())
        lib.ncclGetErrorString.restype = ctypes.c_char_p
        lib.ncclCommInitRank.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, _UniqueId, ctypes.c_int]
        _lib = lib
    return _lib


def _check(result: int, what: str) -> None:
    if result != 0:
        raise RuntimeError(f"{what}: NCCL error {result}: {library().ncclGetErrorString(result).decode()}")


def version() -> tuple:
    """NCCL's version as (major, minor, patch)."""
    v = ctypes.c_int()
    _check(library().ncclGetVersion(ctypes.byref(v)), "nccl version")
    code = v.value
    return (code // 10000, code // 100 % 100, code % 100) if code >= 10000 else (code // 1000, code // 100 % 10,
                                                                                code % 100)


def unique_id() -> bytes:
    """A new NCCL id (128 bytes), made on one rank and shared with the others before ``Comm``."""
    uid = _UniqueId()
    _check(library().ncclGetUniqueId(ctypes.byref(uid)), "ncclGetUniqueId")
    return bytes(uid)  # all 128 bytes (uid.internal would stop at the first zero byte)


def dtype_code(dtype, fn: str) -> int:
    if dtype not in _DTYPES:
        raise TypeError(f"{fn}: NCCL has no type for {dtype}")
    return _DTYPES[dtype]


def op_code(op: str, dtype, fn: str) -> int:
    """NCCL's reduction for ``op`` (a ReduceOp value) on ``dtype``; bool reduces as logical or / and."""
    table = _BOOL_OPS if dtype == sx.bool else _OPS
    if op not in table:
        raise NotImplementedError(f"{fn}: the NCCL backend has no {op!r} reduction for {dtype} tensors")
    return table[op]


class Comm:
    """An NCCL communicator of ``nranks`` ranks on the current CUDA device (``sneppx_core.cuda.set_device``)."""

    def __init__(self, nranks: int, uid: bytes, rank: int) -> None:
        self._comm = ctypes.c_void_p()
        if len(uid) != ctypes.sizeof(_UniqueId):
            raise ValueError(f"ncclCommInitRank: an NCCL id has {ctypes.sizeof(_UniqueId)} bytes, got {len(uid)}")
        ident = _UniqueId.from_buffer_copy(uid)
        _check(library().ncclCommInitRank(ctypes.byref(self._comm), nranks, ident, rank), "ncclCommInitRank")

    def _call(self, name: str, *args) -> None:
        if self._comm is None:
            raise RuntimeError(f"{name}: the NCCL communicator was destroyed")
        fn = getattr(library(), name)
        _check(fn(*args, self._comm, ctypes.c_void_p(0)), name)  # stream 0: the device's default stream

    def all_reduce(self, send: int, recv: int, count: int, dtype: int, op: int) -> None:
        """recv = op over the ranks of send (count elements; send == recv works in place)."""
        self._call("ncclAllReduce", ctypes.c_void_p(send), ctypes.c_void_p(recv), ctypes.c_size_t(count),
                   ctypes.c_int(dtype), ctypes.c_int(op))

    def broadcast(self, buf: int, count: int, dtype: int, root: int) -> None:
        """buf = root's buf on every rank."""
        self._call("ncclBroadcast", ctypes.c_void_p(buf), ctypes.c_void_p(buf), ctypes.c_size_t(count),
                   ctypes.c_int(dtype), ctypes.c_int(root))

    def reduce(self, buf: int, count: int, dtype: int, op: int, root: int) -> None:
        """root's buf = op over the ranks of buf (the others' buf unchanged)."""
        self._call("ncclReduce", ctypes.c_void_p(buf), ctypes.c_void_p(buf), ctypes.c_size_t(count),
                   ctypes.c_int(dtype), ctypes.c_int(op), ctypes.c_int(root))

    def all_gather(self, send: int, recv: int, count: int, dtype: int) -> None:
        """recv (nranks * count) = every rank's send, in rank order."""
        self._call("ncclAllGather", ctypes.c_void_p(send), ctypes.c_void_p(recv), ctypes.c_size_t(count),
                   ctypes.c_int(dtype))

    def reduce_scatter(self, send: int, recv: int, count: int, dtype: int, op: int) -> None:
        """recv (count) = op over the ranks of block ``rank`` of send (nranks * count)."""
        self._call("ncclReduceScatter", ctypes.c_void_p(send), ctypes.c_void_p(recv), ctypes.c_size_t(count),
                   ctypes.c_int(dtype), ctypes.c_int(op))

    def send(self, buf: int, count: int, dtype: int, peer: int) -> None:
        """Sends buf to rank ``peer`` (which calls ``recv``)."""
        self._call("ncclSend", ctypes.c_void_p(buf), ctypes.c_size_t(count), ctypes.c_int(dtype), ctypes.c_int(peer))

    def recv(self, buf: int, count: int, dtype: int, peer: int) -> None:
        """Receives into buf from rank ``peer``."""
        self._call("ncclRecv", ctypes.c_void_p(buf), ctypes.c_size_t(count), ctypes.c_int(dtype), ctypes.c_int(peer))

    def destroy(self) -> None:
        """Frees the communicator (every rank calls it)."""
        if self._comm is not None:
            comm, self._comm = self._comm, None
            _check(library().ncclCommDestroy(comm), "ncclCommDestroy")
