"""``save`` and ``load``: nested containers of tensors and plain values in one safetensors file.

The file is standard safetensors (an 8-byte little-endian header length, a JSON header, then the
raw tensor bytes), written here directly so that core needs no extra package. Tensors are stored
as entries ``"0"``, ``"1"``, ...; the container structure, the plain values and each tensor's
``requires_grad`` and device live in the header's ``__metadata__`` as JSON. Nothing is pickled,
so loading a file never runs code from it. ``load`` also reads files written by PyTorch's
``torch.save`` (``_torch_file``).
"""

from __future__ import annotations

import io
import json
import math
import os
import secrets
import struct

import numpy as np

from . import _torch_file
from ._C_face import Device, Dtype, Tensor

_FORMAT = "sneppx.save"
_CODES = {Dtype.FLOAT32: "F32", Dtype.FLOAT64: "F64", Dtype.FLOAT16: "F16", Dtype.BFLOAT16: "BF16",
          Dtype.INT32: "I32", Dtype.INT64: "I64", Dtype.BOOL: "BOOL", Dtype.UINT8: "U8",
          Dtype.INT8: "I8", Dtype.INT16: "I16", Dtype.COMPLEX64: "C64", Dtype.COMPLEX128: "C128"}
_NUMPY = {"F32": np.float32, "F64": np.float64, "F16": np.float16, "BF16": np.uint16, "I32": np.int32,
          "I64": np.int64, "BOOL": np.bool_, "U8": np.uint8, "I8": np.int8, "I16": np.int16, "C64": np.complex64,
          "C128": np.complex128}


def _raw(t: Tensor) -> memoryview:
    """The tensor's bytes, row-major (a view of its memory when it is a contiguous CPU tensor)."""
    t = t.detach().to("cpu")
    if t.dtype == Dtype.BFLOAT16:  # bfloat16 is the top half of the float32 with the same value
        a = (np.ascontiguousarray(t.float().numpy()).view(np.uint32) >> 16).astype("<u2")
    else:
        a = np.ascontiguousarray(t.numpy())
    return memoryview(a.reshape(-1).view(np.uint8))


class _Encoder:
    """Turns an object into JSON-ready structure, collecting tensors: each once, and once for tensors that are
    the same memory seen through the same geometry (a state dict's tied weights: two ``detach()``es of one
    parameter), which then load as one tensor."""

    def __init__(self):
        self.tensors, self.seen = [], {}

    def tensor(self, t, kind):
        same = (t.data_ptr(), tuple(t.shape), tuple(t.stride()), str(t.dtype), str(t.device)) \
            if kind == "tensor" and t.numel() else id(t)
        key = self.seen.get(same)
        if key is None:
            key = self.seen[same] = len(self.tensors)
            self.tensors.append(t)
        return {kind: key}

    def encode(self, obj, path="obj"):
        if obj is None or isinstance(obj, (bool, int, str)):
            return obj
        if isinstance(obj, float):
            return obj if math.isfinite(obj) else {"float": repr(obj)}
        if isinstance(obj, Tensor):
            out = self.tensor(obj, "tensor")
            out.update(requires_grad=bool(obj.requires_grad), device=str(obj.device))
            return out
        if isinstance(obj, np.ndarray) and obj.dtype.kind in "biuf":
            return self.tensor(Tensor(np.require(obj, requirements="C")), "ndarray")
        if isinstance(obj, np.generic) and obj.dtype.kind in "biuf":
            return self.encode(obj.item(), path)
        if isinstance(obj, Dtype):
            return {"dtype": obj.name}
        if isinstance(obj, Device):
            return {"device": str(obj)}
        if isinstance(obj, (list, tuple)):
            items = [self.encode(v, f"{path}[{i}]") for i, v in enumerate(obj)]
            return {"list" if isinstance(obj, list) else "tuple": items}
        if isinstance(obj, dict):
            for k in obj:
                if not (k is None or isinstance(k, (bool, int, float, str))):
                    raise TypeError(f"[save] {path} has a key of type {type(k).__name__}; only str, int, float, "
                                    "bool and None keys can be stored without pickle")
            return {"dict": [[self.encode(k), self.encode(v, f"{path}[{k!r}]")] for k, v in obj.items()]}
        raise TypeError(f"[save] {path} is a {type(obj).__module__}.{type(obj).__qualname__}, which cannot be stored "
                        "without pickle: save tensors, numbers, strings, None and dicts/lists/tuples of them "
                        "(for a model or optimizer, save its state_dict())")


def _write_file(obj, out) -> None:
    """Writes ``obj`` to the binary stream ``out`` as SneppX's safetensors file (the tensors'
    bytes go out without being copied into one buffer first)."""
    enc = _Encoder()
    structure = enc.encode(obj)
    header, blobs, offset = {}, [], 0
    for i, t in enumerate(enc.tensors):
        raw = _raw(t)
        header[str(i)] = {"dtype": _CODES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    header["__metadata__"] = {"format": _FORMAT, "version": "1", "structure": json.dumps(structure)}
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    out.write(struct.pack("<Q", len(head)) + head)
    for raw in blobs:
        out.write(raw)


def save(obj, f, pickle_module=None, pickle_protocol=2, _use_new_zipfile_serialization=True, *,
         format: str = "sneppx") -> None:
    """Saves ``obj`` (tensors, numbers, strings, None, dtypes, devices, NumPy arrays and nested
    dicts/lists/tuples of them, such as model and optimizer state_dicts) to ``f``.

    Args:
        obj: the object to store; anything else raises TypeError naming where it sits in ``obj``.
        f: a path (the file is written to a temporary name and renamed into place, so a crash never
            leaves half a file) or a binary file object.
        format: ``"sneppx"`` (default): SneppX's safetensors file, nothing pickled. ``"torch"``:
            PyTorch's zip checkpoint, which ``torch.load`` reads with its default
            ``weights_only=True`` (sets, bytes and ``Size`` too; NumPy arrays are refused, as that
            load would refuse them).
        pickle_module, pickle_protocol: accepted for compatibility.
    """
    if format == "torch":
        from ._torch_write import write_torch_file as write
    elif format == "sneppx":
        write = _write_file
    else:
        raise ValueError(f"[save] format must be 'sneppx' or 'torch', got {format!r}")
    if hasattr(f, "write"):
        if format == "torch" and not (hasattr(f, "seekable") and f.seekable()):
            buf = io.BytesIO()  # the zip writer needs to know where it is in the file
            write(obj, buf)
            f.write(buf.getbuffer())
        else:
            write(obj, f)
        return
    atomic_write(f, lambda out: write(obj, out))


def atomic_write(path, write) -> None:
    """Calls ``write(out)`` with a new binary file beside ``path`` and renames it over ``path``, so a crash or
    an error never leaves half a file (the temporary file is removed). The file is created with mode 0o666,
    so the umask applies as with ``open()``."""
    path = os.fspath(path)
    folder, name = os.path.split(os.path.abspath(path))
    tmp = os.path.join(folder, f".{name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as out:
            write(out)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _target(device: str, map_location):
    """Where a tensor saved from ``device`` goes under ``map_location`` (None, a device or a dict)."""
    if map_location is None:
        return device
    if isinstance(map_location, dict):
        return map_location.get(device, device)
    if callable(map_location):
        raise NotImplementedError("[load] a callable map_location is not supported; pass a device or a dict")
    return str(Device(map_location))


def _decode(node, tensors, map_location):
    if isinstance(node, list):
        raise ValueError("[load] malformed structure in file")
    if not isinstance(node, dict):
        return node
    (kind, value), *_ = node.items()
    if kind == "float":
        return float(value)
    if kind == "tensor":
        t = tensors[value]
        target = _target(node.get("device", "cpu"), map_location)
        if str(target) != "cpu":
            t = t.to(target)
        return t.requires_grad_(True) if node.get("requires_grad") else t
    if kind == "ndarray":
        return tensors[value].numpy()
    if kind == "dtype":
        return getattr(Dtype, value.upper())
    if kind == "device":
        return Device(value)
    if kind in ("list", "tuple"):
        items = [_decode(v, tensors, map_location) for v in value]
        return items if kind == "list" else tuple(items)
    if kind == "dict":
        return {_decode(k, tensors, None): _decode(v, tensors, map_location) for k, v in value}
    raise ValueError(f"[load] unknown entry {kind!r} in the file's structure")


def _read_tensor(info, body) -> Tensor:
    start, stop = info["data_offsets"]
    a = np.frombuffer(body[start:stop], dtype=np.dtype(_NUMPY[info["dtype"]]).newbyteorder("<")).copy()
    a = a.reshape(info["shape"])
    if info["dtype"] == "BF16":
        return Tensor((a.astype(np.uint32) << 16).view(np.float32)).to(Dtype.BFLOAT16)
    return Tensor(a.astype(a.dtype.newbyteorder("=")))


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **kwargs):
    """Loads an object stored by :func:`save`, or by PyTorch's ``torch.save``.

    Args:
        f: a path or a binary file object.
        map_location: where tensors go: None (the device they were saved from), a device or its
            name (``"cpu"``), or a dict mapping saved device names to new ones.
        weights_only: for PyTorch files, as in PyTorch: True or None (the default) resolves only
            the globals a checkpoint of tensors and plain values needs, and those allowed with
            ``serialization.add_safe_globals``; False lets the file import anything (run code from
            it only when you trust it). SneppX's own files are never unpickled.
        mmap: for PyTorch files given by path, map the file copy-on-write instead of reading it
            (tensors share the mapped pages; writing to them never reaches the file).
        pickle_module: accepted for compatibility.
    """
    if not hasattr(f, "read"):
        with open(os.fspath(f), "rb") as fh:
            head = fh.read(4)
    else:
        if not (hasattr(f, "seekable") and f.seekable()):
            f = io.BytesIO(f.read())
        start = f.tell()
        head = f.read(4)
        f.seek(start)
    if _torch_file.is_torch_zip(head):
        return _torch_file.load_torch(f, map_location, weights_only, mmap)
    if _torch_file.is_legacy(head):
        return _torch_file.load_torch(f, map_location, weights_only, mmap, legacy=True)
    if hasattr(f, "read"):
        data = f.read()
    else:
        with open(os.fspath(f), "rb") as fh:
            data = fh.read()
    if len(data) < 8:
        raise ValueError("[load] the file is too short to be a sneppx_core.save file")
    (n,) = struct.unpack("<Q", data[:8])
    try:
        header = json.loads(data[8 : 8 + n])
        meta = header.pop("__metadata__")
        if meta.get("format") != _FORMAT:
            raise KeyError
    except (ValueError, KeyError, AttributeError, UnicodeDecodeError):
        raise ValueError("[load] not a sneppx_core.save file (for a plain safetensors file of a module's weights, "
                         "use sneppx_nn.load)") from None
    body = memoryview(data)[8 + n :]
    tensors = [_read_tensor(header[str(i)], body) for i in range(len(header))]
    return _decode(json.loads(meta["structure"]), tensors, map_location)


__all__ = ["save", "load"]
