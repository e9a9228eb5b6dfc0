"""Reading files written by PyTorch's ``torch.save`` (its zip format), with no PyTorch installed.

The zip holds ``<name>/data.pkl``, the saved object pickled with each tensor's storage replaced by a
key, and ``<name>/data/<key>``, each storage's raw bytes (``<name>/byteorder`` says their byte order).
The pickle is read by an unpickler that resolves only the globals PyTorch's own ``weights_only``
loading resolves (the tensor and parameter rebuilders, storage types, dtypes, ``torch.Size``,
``torch.device``, ``OrderedDict``, sets, bytes) and those allowed with
``serialization.add_safe_globals``; with ``weights_only=False`` any other global is imported, as
PyTorch does then. Each storage becomes one tensor over the file's bytes (one buffer read from the
file, or a copy-on-write mapping with ``mmap=True``) and every tensor is a view of its storage, so
tensors that shared storage when saved (tied weights, views) share it after loading.
"""

from __future__ import annotations

import codecs
import collections
import io
import operator
import os
import pickle
import struct
import zipfile

import numpy as np

from . import _legacy_types
from ._backend import _C
from ._C_face import Device, Dtype, Tensor
from ._factories import _ALIASES
from ._shared import bytes_as

# PyTorch's storage classes and dtype names, as its pickles name them (None: bytes, typed later): the legacy
# tensor types' storages ("CharStorage" for CharTensor's int8) and the names ``dtype=`` takes ("long", "short", ...).
_STORAGES = {**{t.__name__[:-len("Tensor")] + "Storage": t.dtype for t in _legacy_types.TYPES}, "UntypedStorage": None,
             "ComplexFloatStorage": Dtype.COMPLEX64, "ComplexDoubleStorage": Dtype.COMPLEX128}
_DTYPES = {**{name.lower(): d for name, d in Dtype.__members__.items()},
           **{alias: getattr(Dtype, name.upper()) for alias, name in _ALIASES.items()}}
# Storage classes and dtypes PyTorch has and SneppX does not: named in the error.
_NO_DTYPE = {"QInt8Storage": "qint8", "QUInt8Storage": "quint8", "QInt32Storage": "qint32", "uint16": "uint16",
             "uint32": "uint32",
             "uint64": "uint64", "float8_e4m3fn": "float8_e4m3fn", "float8_e5m2": "float8_e5m2"}


class _StorageType:
    """What a pickled storage class (``torch.FloatStorage``, ``torch.UntypedStorage``) resolves to."""

    def __init__(self, name, dtype):
        self.name, self.dtype = name, dtype


class _TypeTag:
    """``torch.Tensor`` / ``torch.nn.Parameter`` as ``_rebuild_from_type_v2`` names them."""

    def __init__(self, name):
        self.name = name


class _Storage:
    """One saved storage: its bytes (a NumPy uint8 array), typed and moved to its device on first use."""

    def __init__(self, raw: np.ndarray, dtype, location: str, where: str):
        self.raw, self.dtype, self.location, self.where = raw, dtype, location, where
        self.typed = {}

    def as_dtype(self, dtype, device):
        if dtype is None:
            raise ValueError(f"[load] {self.where}: a tensor over an untyped storage names no dtype")
        key = (dtype, device)
        if key not in self.typed:
            if self.raw.size % dtype.itemsize:
                raise ValueError(f"[load] {self.where} holds {self.raw.size} bytes, not a whole number of "
                                 f"{dtype.name} elements")
            if dtype == Dtype.BOOL and self.raw.size and self.raw.max() > 1:
                raise ValueError(f"[load] {self.where}: a bool storage holds bytes other than 0 and 1")
            t = bytes_as(self.raw, dtype)
            self.typed[key] = t if device == "cpu" else t.to(device)
        return self.typed[key]


def _latin1(text, encoding="utf-8"):
    # what protocol 2 pickles bytes as: _codecs.encode(str, "latin1")
    if encoding.lower().replace("-", "") != "latin1" or not isinstance(text, str):
        raise pickle.UnpicklingError("[load] _codecs.encode is resolved only as protocol 2's bytes (latin1)")
    return codecs.encode(text, "latin1")


def _allowed(module: str, name: str):
    """A global the caller put on ``serialization``'s allow-list, or None."""
    from .serialization import get_safe_globals

    want = f"{module}.{name}"
    for entry in get_safe_globals():
        obj, key = entry if isinstance(entry, tuple) else (entry, None)
        if key is None:
            key = f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', '')}"
        if key == want:
            return obj
    return None


class _Anything:
    """What a legacy file's first, storage-listing pass makes of globals it must not import."""

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        return _Anything()

    def __setstate__(self, state):
        pass

    def __setitem__(self, key, value):
        pass

    def append(self, value):
        pass

    def extend(self, values):
        pass


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, reader, weights_only: bool, dry: bool = False):
        super().__init__(file)
        self.reader, self.weights_only, self.dry = reader, weights_only, dry

    def find_class(self, module, name):
        module = {"__builtin__": "builtins"}.get(module, module)
        known = self.reader.globals.get(f"{module}.{name}")
        if known is not None:
            return known
        if self.dry and not self.weights_only:
            return _Anything
        if module == "torch" and (name in _NO_DTYPE):
            raise TypeError(f"[load] {self.reader.where} holds a tensor of PyTorch's {_NO_DTYPE[name]}, a dtype "
                            "SneppX does not have")
        allowed = _allowed(module, name)
        if allowed is not None:
            return allowed
        if self.weights_only:
            raise pickle.UnpicklingError(
                f"[load] weights-only load of {self.reader.where} failed: it needs the global {module}.{name}, "
                "which is not on the allow-list. If you trust the file, pass weights_only=False (which lets the "
                "file run code) or allow the global with sneppx_core.serialization.add_safe_globals([...]).")
        try:
            return super().find_class(module, name)
        except (ImportError, AttributeError) as e:
            raise pickle.UnpicklingError(f"[load] {self.reader.where} needs {module}.{name}, which cannot be "
                                         f"imported here ({e})") from None

    def persistent_load(self, pid):
        return self.reader.storage(pid)


class _Reader:
    """The storages of one checkpoint, and the tensors rebuilt over them (``_record`` reads a storage)."""

    def __init__(self, where: str, map_location):
        self.where, self.map_location = where, map_location
        self.storages, self.collect = {}, None  # collect: key -> (type, location), in a listing pass
        self.globals = self._globals()

    def _globals(self):
        from ._torch_reach import Size

        g = {"collections.OrderedDict": collections.OrderedDict, "builtins.set": set,
             "builtins.frozenset": frozenset, "builtins.slice": slice, "builtins.bytearray": bytearray,
             "_codecs.encode": _latin1, "torch.Size": Size, "torch.device": Device,
             "torch._utils._rebuild_tensor_v2": self.rebuild_v2, "torch._utils._rebuild_tensor_v3": self.rebuild_v3,
             "torch._utils._rebuild_parameter": _rebuild_parameter,
             "torch._utils._rebuild_parameter_with_state": _rebuild_parameter,
             "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2,
             "torch.Tensor": _TypeTag("Tensor"), "torch.nn.parameter.Parameter": _TypeTag("Parameter")}
        g.update({f"torch.{k}": _StorageType(k, v) for k, v in _STORAGES.items()})
        g["torch.storage.UntypedStorage"] = g["torch.UntypedStorage"]
        g.update({f"torch.{k}": v for k, v in _DTYPES.items()})
        return g

    def close(self) -> None:
        """Drops the table of globals (its rebuilders are bound to the reader: a reference cycle) and the
        storages, so that the file's buffer is freed as soon as the loaded tensors are, not at a later
        garbage collection (which made one load in five take 80 ms instead of 11)."""
        self.globals, self.storages = {}, {}

    def storage(self, pid):
        if not (isinstance(pid, tuple) and len(pid) >= 5 and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"[load] {self.where}: unknown persistent id {pid!r}")
        _, kind, key, location, _numel = pid[:5]
        if not isinstance(kind, _StorageType):
            raise pickle.UnpicklingError(f"[load] {self.where}: storage {key!r} has no storage type")
        if self.collect is not None:
            self.collect[key] = (kind, str(location))
            return None
        if key not in self.storages:
            self.storages[key] = self._record(key, kind, str(location), f"{self.where}, storage {key}")
        view = pid[5] if len(pid) > 5 else None
        return self.storages[key] if view is None else self._view(self.storages[key], view, kind)

    def _record(self, key, kind, location, where):
        raise ValueError(f"[load] {where}: the record is missing")

    def _view(self, root, view, kind):
        """A legacy file's storage view: (key, offset, size) in elements of ``root``."""
        key, offset, size = view
        if key not in self.storages:
            n = kind.dtype.itemsize if kind.dtype is not None else 1
            if not (0 <= offset and 0 <= size and (offset + size) * n <= root.raw.size):
                raise ValueError(f"[load] {self.where}: storage view {key} lies outside its storage")
            self.storages[key] = _Storage(root.raw[offset * n:(offset + size) * n], root.dtype, root.location,
                                          f"{self.where}, storage {key}")
        return self.storages[key]

    def device(self, location: str) -> str:
        from ._serialization import _target  # (it imports this module)

        return str(Device(_target(location, self.map_location)))

    def rebuild(self, storage, offset, size, stride, requires_grad, dtype=None):
        if self.collect is not None:
            return None
        if not isinstance(storage, _Storage):
            raise pickle.UnpicklingError(f"[load] {self.where}: a tensor without a storage")
        base = storage.as_dtype(dtype or storage.dtype, self.device(storage.location))
        try:
            geometry = [operator.index(n) for n in size], [operator.index(n) for n in stride], operator.index(offset)
        except TypeError:
            raise ValueError(f"[load] {storage.where}: a tensor's size, stride or offset is not made of ints") from None
        t = _C._as_strided(base, *geometry)  # checks that the view lies inside the storage
        return t.requires_grad_(True) if requires_grad else t

    def rebuild_v2(self, storage, offset, size, stride, requires_grad, backward_hooks=None, metadata=None):
        return self.rebuild(storage, offset, size, stride, requires_grad)

    def rebuild_v3(self, storage, offset, size, stride, requires_grad, backward_hooks, dtype, metadata=None):
        return self.rebuild(storage, offset, size, stride, requires_grad, dtype)


def _typed_bytes(raw: np.ndarray, kind, big: bool) -> np.ndarray:
    """A storage's bytes, byte-swapped from big-endian and copied when misaligned for its element size."""
    size = kind.dtype.itemsize if kind.dtype is not None else 1
    if raw.size == 0:  # nothing to swap or align (and NumPy's copy of an empty array has stride 0)
        return raw
    if big and size > 1:
        return raw[: raw.size - raw.size % size].view(f">u{size}").astype(f"<u{size}").view(np.uint8)
    return raw.copy() if raw.ctypes.data % size else raw  # torch.save aligns its records to 64 bytes


class _ZipReader(_Reader):
    """``torch.save``'s zip format: ``<name>/data.pkl``, one record ``<name>/data/<key>`` per storage."""

    def __init__(self, zf: zipfile.ZipFile, buf, where: str, map_location):
        super().__init__(where, map_location)
        self.zf, self.buf = zf, buf
        pkls = [n for n in zf.namelist() if n.count("/") == 1 and n.endswith("/data.pkl")]
        if len(pkls) != 1:
            hint = " (a TorchScript archive: jit.load does not read those either)" if any(
                n.endswith("/constants.pkl") for n in zf.namelist()) else ""
            raise ValueError(f"[load] {where} is a zip file but not a torch.save checkpoint{hint}")
        self.prefix = pkls[0][: -len("data.pkl")]
        order = self.prefix + "byteorder"
        self.big = order in set(zf.namelist()) and zf.read(order).strip() == b"big"

    def _bytes(self, name: str):
        """The raw bytes of record ``name`` as a NumPy uint8 array over the buffer (copied when compressed)."""
        info = self.zf.getinfo(name)
        if info.compress_type != zipfile.ZIP_STORED:
            return np.frombuffer(bytearray(self.zf.read(name)), dtype=np.uint8)
        head = bytes(self.buf[info.header_offset:info.header_offset + 30])
        if len(head) != 30 or head[:4] != b"PK\x03\x04":
            raise ValueError(f"[load] {self.where}: record {name} has a broken zip header")
        n, m = struct.unpack("<HH", head[26:30])
        start = info.header_offset + 30 + n + m
        if start + info.file_size > len(self.buf):
            raise ValueError(f"[load] {self.where}: record {name} runs past the end of the file")
        return np.frombuffer(self.buf, dtype=np.uint8, count=info.file_size, offset=start)

    def _record(self, key, kind, location, where):
        try:
            raw = self._bytes(f"{self.prefix}data/{key}")
        except KeyError:
            raise ValueError(f"[load] {where}: the record is missing") from None
        return _Storage(_typed_bytes(raw, kind, self.big), kind.dtype, location, where)


def _rebuild_parameter(data, requires_grad, backward_hooks=None, state=None):
    # sneppx_core has no Parameter class (sneppx_nn's wraps a tensor): a leaf that requires grad
    if not isinstance(data, Tensor):  # None in a legacy file's listing pass
        return data
    return data.requires_grad_(bool(requires_grad)) if data.dtype.is_floating_point else data


def _rebuild_from_type_v2(func, new_type, args, state=None):
    if not isinstance(new_type, _TypeTag):
        raise pickle.UnpicklingError(f"[load] a tensor subclass {new_type!r} cannot be rebuilt")
    return func(*args)


def _buffer(f, mmap):
    """(buffer, zip file, name) of a checkpoint given as a path or a binary file object."""
    if mmap:
        if hasattr(f, "read"):
            if not isinstance(getattr(f, "name", None), (str, bytes, os.PathLike)):
                raise ValueError("[load] mmap=True needs a path or a file opened from a path")
            f = f.name
        path = os.fspath(f)
        buf = np.memmap(path, dtype=np.uint8, mode="c")
    else:
        buf, path = _read_all(f)
    return buf, zipfile.ZipFile(_View(buf)), path


class _View:
    """A read-only, seekable file over a buffer, without copying it (zipfile reads the directory)."""

    def __init__(self, buf):
        self.mv, self.pos = memoryview(buf), 0

    def seek(self, pos, whence=0):
        self.pos = pos if whence == 0 else self.pos + pos if whence == 1 else len(self.mv) + pos
        return self.pos

    def tell(self):
        return self.pos

    def seekable(self):
        return True

    def read(self, n=-1):
        end = len(self.mv) if n is None or n < 0 else min(self.pos + n, len(self.mv))
        out = bytes(self.mv[self.pos:end])
        self.pos = max(self.pos, end)
        return out

    def readinto(self, b):
        data = self.read(len(b))
        b[:len(data)] = data
        return len(data)

    def readline(self, n=-1):
        end = len(self.mv) if n is None or n < 0 else min(self.pos + n, len(self.mv))
        nl = bytes(self.mv[self.pos:end]).find(b"\n")
        return self.read(end - self.pos if nl < 0 else nl + 1)


_LEGACY_MAGIC = 0x1950a86a20f9469cfc6c


class _LegacyReader(_Reader):
    """PyTorch's legacy format (its default before 1.6): four pickles (a magic number, the protocol
    version, system information, the object) and the list of storage keys, then each storage as an
    8-byte little-endian element count and its bytes. The storages come after the object, so the
    object is unpickled twice: once to list the storages (rebuilding nothing), once for real."""

    def load(self, buf, weights_only):
        view = _View(buf)
        head = [_Unpickler(view, self, True).load() for _ in range(3)]
        if head[0] != _LEGACY_MAGIC or head[1] != 1001 or not isinstance(head[2], dict):
            raise ValueError(f"[load] {self.where} is a pickle but not a torch.save checkpoint")
        if not head[2].get("little_endian", True):
            raise NotImplementedError(f"[load] {self.where} was written on a big-endian machine in PyTorch's legacy "
                                      "format; save it again with torch.save's default")
        start, self.collect = view.tell(), {}
        _Unpickler(view, self, weights_only, dry=True).load()
        keys = _Unpickler(view, self, True).load()
        pos, found, self.collect = view.tell(), self.collect, None
        if not isinstance(keys, list) or set(keys) != set(found):
            raise ValueError(f"[load] {self.where}: the storage list does not match the object's storages")
        for key in keys:
            kind, location = found[key]
            size = kind.dtype.itemsize if kind.dtype is not None else 1
            if pos + 8 > len(buf):
                raise ValueError(f"[load] {self.where}: storage {key} runs past the end of the file")
            (count,) = struct.unpack("<q", bytes(buf[pos:pos + 8]))
            if count < 0 or pos + 8 + count * size > len(buf):
                raise ValueError(f"[load] {self.where}: storage {key} runs past the end of the file")
            raw = np.frombuffer(buf, dtype=np.uint8, count=count * size, offset=pos + 8)
            self.storages[key] = _Storage(_typed_bytes(raw, kind, False), kind.dtype, location,
                                          f"{self.where}, storage {key}")
            pos += 8 + count * size
        view.seek(start)
        return _Unpickler(view, self, weights_only).load()


def is_legacy(head: bytes) -> bool:
    """Whether a file starting with ``head`` is in PyTorch's legacy format (pickle protocol 2, then the
    10-byte magic number)."""
    return head[:4] == b"\x80\x02\x8a\x0a"


def is_torch_zip(head: bytes) -> bool:
    """Whether a file starting with ``head`` is a zip archive (PyTorch's checkpoint format)."""
    return head[:4] == b"PK\x03\x04"


def _read_all(f):
    """(buffer, name) of a whole file given as a path or a binary file object; the buffer is a
    writable NumPy byte array (not zero-filled first: that doubled the time of a read)."""
    if hasattr(f, "read"):
        data = f.read()
        buf = np.empty(len(data), dtype=np.uint8)
        buf[:] = np.frombuffer(data, dtype=np.uint8)
        return buf, getattr(f, "name", "the file object")
    path = os.fspath(f)
    with open(path, "rb") as fh:
        buf = np.empty(os.fstat(fh.fileno()).st_size, dtype=np.uint8)
        if fh.readinto(memoryview(buf)) != buf.size:
            raise ValueError(f"[load] {path} changed size while it was read")
    return buf, path


def load_torch(f, map_location=None, weights_only=None, mmap=None, legacy=False):
    """Loads a file written by ``torch.save`` (``legacy``: in its pre-1.6 format); see :func:`sneppx_core.load`."""
    safe = weights_only is not False
    if legacy:
        if mmap:
            raise ValueError("[load] mmap=True needs torch.save's zip format; the file is in PyTorch's legacy format")
        buf, where = _read_all(f)
        reader = _LegacyReader(str(where), map_location)
        try:
            return _guarded(lambda: reader.load(buf, safe), where)
        finally:
            reader.close()
    buf, zf, where = _buffer(f, bool(mmap))
    with zf:
        reader = _ZipReader(zf, buf, str(where), map_location)
        data = io.BytesIO(zf.read(reader.prefix + "data.pkl"))
        try:
            return _guarded(lambda: _Unpickler(data, reader, safe).load(), where)
        finally:
            reader.close()


def _guarded(run, where):
    try:
        return run()
    except (pickle.UnpicklingError, TypeError, ValueError, NotImplementedError, RuntimeError):
        raise
    except Exception as e:  # a truncated or damaged pickle: EOFError, IndexError, struct.error, ...
        raise pickle.UnpicklingError(f"[load] {where}: the pickled object is damaged ({type(e).__name__}: "
                                     f"{e})") from None
