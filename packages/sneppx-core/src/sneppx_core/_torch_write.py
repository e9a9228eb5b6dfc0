"""Writing PyTorch's checkpoint format (``save(obj, f, format="torch")``): a zip archive that
``torch.load`` reads with its default ``weights_only=True``.

The archive holds ``archive/data.pkl``, the object as a protocol-2 pickle whose tensors are
``torch._utils._rebuild_tensor_v2`` calls over storages named by key, ``archive/data/<key>``, each
storage's bytes (aligned to 64 bytes in the file, as PyTorch aligns them, so ``mmap=True`` works),
and the small records PyTorch's reader expects. The pickle is written opcode by opcode here, naming
only globals on PyTorch's weights-only list; tensors that share a storage are written over one
storage, so views and tied weights stay shared in PyTorch.
"""

from __future__ import annotations

import collections
import io
import secrets
import struct
import zipfile

import numpy as np

from ._backend import _C
from ._C_face import Device, Dtype, Tensor
from ._serialization import _raw
from ._torch_file import _STORAGES

# the storage class PyTorch pickles for each dtype (the reader's table, inverted)
_STORAGE_CLASS = {dtype: name for name, dtype in _STORAGES.items() if dtype is not None}


class _Writer:
    """Pickles one object, collecting the storages of its tensors."""

    def __init__(self):
        self.out = io.BytesIO()
        self.storages = {}  # (device, base address, dtype) -> (key, flat tensor over the whole storage)

    def op(self, code: bytes, payload: bytes = b""):
        self.out.write(code + payload)

    def glob(self, module: str, name: str):
        self.op(b"c", f"{module}\n{name}\n".encode())

    def call(self, module: str, name: str, args: tuple, path: str):
        self.glob(module, name)
        self.value(args, path)
        self.op(b"R")

    def value(self, obj, path: str = "obj"):
        if obj is None:
            self.op(b"N")
        elif obj is True or obj is False:
            self.op(b"\x88" if obj else b"\x89")
        elif isinstance(obj, int) and not isinstance(obj, bool):
            if -2 ** 31 <= obj < 2 ** 31:
                self.op(b"J", struct.pack("<i", obj))
            else:
                raw = obj.to_bytes((obj.bit_length() + 8) // 8, "little", signed=True)
                self.op(b"\x8a", bytes([len(raw)]) + raw)
        elif isinstance(obj, float):
            self.op(b"G", struct.pack(">d", obj))
        elif isinstance(obj, str):
            raw = obj.encode("utf-8", "surrogatepass")
            self.op(b"X", struct.pack("<I", len(raw)) + raw)
        elif isinstance(obj, bytes):
            self.call("_codecs", "encode", (obj.decode("latin1"), "latin1"), path)
        elif isinstance(obj, bytearray):
            self.call("__builtin__", "bytearray", (bytes(obj),), path)
        elif isinstance(obj, Tensor):
            self.tensor(obj, path)
        elif isinstance(obj, Dtype):
            self.glob("torch", obj.name)
        elif isinstance(obj, Device):
            self.call("torch", "device", (str(obj),), path)
        elif isinstance(obj, (set, frozenset)):
            self.call("__builtin__", type(obj).__name__, (sorted(obj, key=repr),), path)
        elif isinstance(obj, tuple) and type(obj).__name__ == "Size":
            self.call("torch", "Size", (tuple(obj),), path)
        elif isinstance(obj, tuple):
            self.sequence(obj, path, b"(", b"t")
        elif isinstance(obj, list):
            self.sequence(obj, path, b"]", b"e")
        elif isinstance(obj, dict):
            self.mapping(obj, path)
        elif isinstance(obj, np.generic) and obj.dtype.kind in "biuf":
            self.value(obj.item(), path)
        else:
            raise TypeError(f"[save] {path} is a {type(obj).__module__}.{type(obj).__qualname__}, which PyTorch's "
                            "weights-only load cannot read: save tensors, numbers, strings, bytes, None, dtypes, "
                            "devices and dicts/lists/tuples/sets of them")

    def sequence(self, items, path, start: bytes, end: bytes):
        if start == b"]":
            self.op(b"]")
            if not items:
                return
        self.op(b"(")
        for i, v in enumerate(items):
            self.value(v, f"{path}[{i}]")
        self.op(end)

    def mapping(self, d: dict, path: str):
        if isinstance(d, collections.OrderedDict):
            self.call("collections", "OrderedDict", (), path)
        else:
            self.op(b"}")
        if d:
            self.op(b"(")
            for k, v in d.items():
                self.value(k, f"{path} key")
                self.value(v, f"{path}[{k!r}]")
            self.op(b"u")

    def tensor(self, t: Tensor, path: str):
        if t.dtype not in _STORAGE_CLASS:
            raise TypeError(f"[save] {path} has dtype {t.dtype.name}, which has no PyTorch storage here")
        itemsize = t.element_size()
        base = (str(t.device), t.data_ptr() - t.storage_offset() * itemsize, t.dtype)
        if base not in self.storages:
            numel = _C._storage_nbytes(t) // itemsize
            self.storages[base] = (str(len(self.storages)), _C._as_strided(t.detach(), [numel], [1], 0))
        key, flat = self.storages[base]
        self.glob("torch._utils", "_rebuild_tensor_v2")
        self.op(b"(")
        self.op(b"(")
        self.value("storage")
        self.glob("torch", _STORAGE_CLASS[t.dtype])
        self.value(key)
        self.value(str(t.device))
        self.value(flat.numel())
        self.op(b"t")
        self.op(b"Q")
        self.value(t.storage_offset())
        self.value(tuple(t.shape))
        self.value(tuple(t.stride()))
        self.value(bool(t.requires_grad))
        self.call("collections", "OrderedDict", (), path)
        self.op(b"t")
        self.op(b"R")


def _record(zf: zipfile.ZipFile, name: str, data, align: int = 64):
    """Adds a stored record whose bytes start at a multiple of ``align`` in the file (the local
    header's extra field pads it, as PyTorch's writer does)."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    start = zf.fp.tell() + 30 + len(name.encode()) + 4
    pad = -start % align
    info.extra = struct.pack("<HH", 0x4246, pad) + b"Z" * pad
    zf.writestr(info, data)


def write_torch_file(obj, out) -> None:
    """Writes ``obj`` to the seekable binary stream ``out`` as a PyTorch zip checkpoint (see the module's note)."""
    w = _Writer()
    w.op(b"\x80\x02")
    w.value(obj)
    w.op(b".")
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
        _record(zf, "archive/data.pkl", w.out.getvalue())
        _record(zf, "archive/.format_version", b"1")
        _record(zf, "archive/.storage_alignment", b"64")
        _record(zf, "archive/byteorder", b"little")
        for key, flat in w.storages.values():
            _record(zf, f"archive/data/{key}", _raw(flat))
        _record(zf, "archive/version", b"3\n")
        _record(zf, "archive/.data/serialization_id", secrets.token_hex(20).encode())
