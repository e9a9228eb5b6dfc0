"""Memory-mapped reading of checkpoint files (safetensors, or PyTorch's ``pytorch_model.bin``; single or
sharded) into sneppx_core Tensors."""

from __future__ import annotations

import json
import mmap
import os
import struct

import numpy as np
import sneppx_core as sx

_NUMPY = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64, "I32": np.int32,
          "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_, "BF16": np.uint16}
_CHUNK = 1 << 20  # elements converted at a time: bounds the temporaries of a conversion
_DTYPES = {"float32": sx.float32, "bfloat16": sx.bfloat16, "float16": sx.float16, "float64": sx.float64}


def compute_dtype(dtype):
    """The sneppx_core float dtype named by ``dtype`` (a Dtype, a name such as "bfloat16", or None = float32)."""
    if dtype is None:
        return sx.float32
    if isinstance(dtype, str):
        if dtype not in _DTYPES:
            raise ValueError(f"[load_model] dtype must be one of {sorted(_DTYPES)}, got {dtype!r}")
        return _DTYPES[dtype]
    if dtype in _DTYPES.values():
        return dtype
    raise ValueError(f"[load_model] dtype must be a floating dtype such as sneppx_core.bfloat16, got {dtype!r}")


class SafetensorsFile:
    """One safetensors file mapped read-only into memory; ``array(name)`` is a zero-copy NumPy view."""

    def __init__(self, path: str):
        self.path = path
        with open(path, "rb") as fh:
            head = fh.read(8)
            if len(head) != 8:
                raise ValueError(f"[load_model] {path} is not a safetensors file (too short)")
            (n,) = struct.unpack("<Q", head)
            size = os.fstat(fh.fileno()).st_size
            if 8 + n > size:
                raise ValueError(f"[load_model] {path} is not a safetensors file (bad header length {n})")
            try:
                self.header = json.loads(fh.read(n))
            except ValueError as e:
                raise ValueError(f"[load_model] {path} is not a safetensors file ({e})") from None
            self._map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if size else None
        self.base = 8 + n
        self.metadata = self.header.pop("__metadata__", None) or {}

    def keys(self):
        """Names of the tensors in the file."""
        return self.header.keys()

    def array(self, name: str) -> tuple:
        """(NumPy view of the stored bytes, safetensors dtype name) of tensor ``name``; BF16 comes as uint16 bits."""
        entry = self.header[name]
        kind = entry["dtype"]
        if kind not in _NUMPY:
            raise TypeError(f"[load_model] tensor {name!r} in {self.path} has dtype {kind}, which cannot be loaded")
        start, end = self.span(name)
        a = np.frombuffer(self._map, dtype=np.dtype(_NUMPY[kind]).newbyteorder("<"),
                          count=(end - start) // np.dtype(_NUMPY[kind]).itemsize, offset=start)
        return a.reshape(entry["shape"]), kind

    def span(self, name: str) -> tuple:
        """(start, end) byte offsets of tensor ``name`` in the file."""
        start, end = self.header[name]["data_offsets"]
        return self.base + start, self.base + end

    def release(self):
        """Drops the file's mapped pages from this process's resident memory (after a tensor was
        converted). They stay in the page cache; tensors that share the mapping read them again when
        touched. The whole file, not the tensor's bytes: a fault can map a large page-cache folio
        that reaches into the neighbouring tensors."""
        if self._map is not None and hasattr(self._map, "madvise"):
            self._map.madvise(mmap.MADV_DONTNEED)

    def get(self, name: str, dtype):
        """Tensor ``name`` in ``dtype``: the mapped bytes when stored in ``dtype``, else converted in
        chunks of ``_CHUNK`` elements, after which the mapped pages leave resident memory."""
        a, kind = self.array(name)
        if kind == "BF16" and dtype == sx.float32:
            return sx.Tensor.from_numpy((a.astype(np.uint32) << 16).view(np.float32))
        if kind != "BF16":
            t = sx.Tensor.from_numpy(a)
            if t.dtype == dtype:
                return t
        out = sx.empty(a.shape, dtype=dtype)
        src, dst = a.reshape(-1), out.reshape(-1)
        for i in range(0, src.size, _CHUNK):
            piece = src[i:i + _CHUNK]
            if kind == "BF16":
                piece = (piece.astype(np.uint32) << 16).view(np.float32)
            dst[i:i + piece.size] = sx.Tensor.from_numpy(piece)
        self.release()
        return out


class TorchFile:
    """One checkpoint written by PyTorch's ``torch.save`` (``pytorch_model.bin``): its state dict, read
    weights-only by ``sneppx_core.load`` (no code from the file runs). A zip-format file is mapped
    copy-on-write (``mmap=True``); one in PyTorch's legacy format, as older models have, is read."""

    def __init__(self, path: str):
        self.path = path
        with open(path, "rb") as fh:
            zipped = fh.read(4) == b"PK\x03\x04"
        state = sx.load(path, map_location="cpu", mmap=zipped)
        if not isinstance(state, dict) or not all(isinstance(v, sx.Tensor) for v in state.values()):
            raise ValueError(f"[load_model] {path} holds a {type(state).__name__}, not a state dict of tensors")
        self.tensors = state

    def keys(self):
        """Names of the tensors in the file."""
        return self.tensors.keys()

    def get(self, name: str, dtype):
        """Tensor ``name`` in ``dtype``: the mapped storage when stored in ``dtype``, else a converted copy."""
        t = self.tensors[name]
        return t if t.dtype == dtype else t.to(dtype)


def open_weights(path: str):
    """A :class:`TorchFile` for a file ``torch.save`` wrote (a zip archive, or a pickle in its legacy
    format), else a :class:`SafetensorsFile`."""
    with open(path, "rb") as fh:
        head = fh.read(4)
    # the legacy format: pickle protocol 2, then the 10-byte magic number (as a safetensors header length,
    # 177 MB: none has one so long)
    return TorchFile(path) if head in (b"PK\x03\x04", b"\x80\x02\x8a\x0a") else SafetensorsFile(path)


class Weights:
    """The tensors of a checkpoint folder or file, read lazily from memory-mapped files.

    ``get(name, dtype)`` returns a Tensor in ``dtype``: a tensor stored in ``dtype`` shares the mapped
    file (no copy); others are converted (safetensors in chunks of ``_CHUNK`` elements, after which
    the mapped pages they were read from leave the process's resident memory, so the model never
    holds the weights twice).
    """

    def __init__(self, files):
        """``files``: paths or already opened :class:`SafetensorsFile` / :class:`TorchFile` objects
        (later files win on duplicate names)."""
        self.files = [f if isinstance(f, (SafetensorsFile, TorchFile)) else open_weights(f) for f in files]
        self.where = {}
        for f in self.files:
            for k in f.keys():
                self.where[k] = f

    def __contains__(self, name) -> bool:
        return name in self.where

    def keys(self):
        """All tensor names."""
        return self.where.keys()

    def get(self, name: str, dtype=sx.float32):
        """Tensor ``name`` converted to ``dtype``; KeyError naming the tensor and the files when absent."""
        if name not in self.where:
            files = ", ".join(os.path.basename(f.path) for f in self.files)
            raise KeyError(f"[load_model] tensor {name!r} is missing from {files}")
        return self.where[name].get(name, dtype)


def _shards(folder: str, index: str) -> list:
    with open(index, encoding="utf-8") as fh:
        shards = sorted(set(json.load(fh)["weight_map"].values()))
    paths = [os.path.join(folder, s) for s in shards]
    missing = [p for p in paths if not os.path.isfile(p)]
    if missing:
        raise FileNotFoundError(f"[load_model] shards listed in {index} are missing: {missing}")
    return paths


def weight_paths(folder: str) -> list:
    """The weight files of a Hugging Face folder: ``model.safetensors`` or the shards listed in
    ``model.safetensors.index.json``; without those, PyTorch's ``pytorch_model.bin`` or the shards
    listed in ``pytorch_model.bin.index.json``."""
    for name in ("model.safetensors", "pytorch_model.bin"):
        index = os.path.join(folder, name + ".index.json")
        if os.path.isfile(index):
            return _shards(folder, index)
        single = os.path.join(folder, name)
        if os.path.isfile(single):
            return [single]
    raise FileNotFoundError(f"[load_model] {folder} has none of model.safetensors, model.safetensors.index.json, "
                            "pytorch_model.bin and pytorch_model.bin.index.json")
