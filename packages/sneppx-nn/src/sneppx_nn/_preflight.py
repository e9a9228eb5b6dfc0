"""What a checkpoint holds, read from its safetensors header, and the check that the module its
config describes fits in it before the module's parameters are allocated.

``from_checkpoint`` builds the module while a check is set: every ``Parameter`` created must have
the shape of a tensor of the file not yet matched by another, and the first one that has none
raises before its memory is filled. A small or corrupt file can then never make it allocate a
large model.
"""

from __future__ import annotations

import collections
import contextlib
import json
import math
import os
import struct

from .parameter import _PARAMETER_CHECK

# safetensors dtype -> (bytes per element, sneppx-core dtype name, or None when unsupported)
_DTYPES = {
    "F64": (8, "float64"), "F32": (4, "float32"), "F16": (2, "float16"), "BF16": (2, "bfloat16"),
    "I64": (8, "int64"), "I32": (4, "int32"), "U8": (1, "uint8"), "BOOL": (1, "bool"),
    "I16": (2, "int16"), "I8": (1, "int8"), "U16": (2, None), "U32": (4, None), "U64": (8, None),
    "F8_E4M3": (1, None), "F8_E5M2": (1, None),
}


def _bad(path: str, why: str) -> ValueError:
    return ValueError(f"[load] {path} is not a valid safetensors file ({why})")


def read_header(path: str) -> tuple[int, dict]:
    """(byte offset of the data section, parsed JSON header) of a safetensors file, checked:
    every tensor has a dtype, a shape of non-negative ints and a byte range that lies inside the
    file and (for a known dtype) matches its shape. Nothing but the header is read."""
    size = os.path.getsize(path)
    with open(path, "rb") as fh:
        raw = fh.read(8)
        if len(raw) != 8:
            raise ValueError(f"[load] {path} is not a safetensors file (too short)")
        (n,) = struct.unpack("<Q", raw)
        if n > size - 8:
            raise ValueError(f"[load] {path} is not a safetensors file (bad header length {n})")
        try:
            header = json.loads(fh.read(n))
        except ValueError as e:
            raise ValueError(f"[load] {path} is not a safetensors file ({e})") from None
    if not isinstance(header, dict):
        raise _bad(path, "the header is not a JSON object")
    data_size = size - 8 - n
    for key, entry in header.items():
        if key != "__metadata__":
            _check_entry(path, key, entry, data_size)
    return 8 + n, header


def _check_entry(path: str, key: str, entry, data_size: int) -> None:
    if not isinstance(entry, dict) or not isinstance(entry.get("dtype"), str):
        raise _bad(path, f"tensor {key!r} has no dtype")
    shape, offsets = entry.get("shape"), entry.get("data_offsets")
    if not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape):
        raise _bad(path, f"tensor {key!r} has shape {shape!r}")
    if (not isinstance(offsets, list) or len(offsets) != 2
            or not all(type(o) is int for o in offsets) or not 0 <= offsets[0] <= offsets[1] <= data_size):
        raise _bad(path, f"tensor {key!r} has data offsets {offsets!r} outside the {data_size}-byte data section")
    if entry["dtype"] not in _DTYPES:  # a newer format's dtype: loading it reports it as unsupported
        return
    nbytes = math.prod(shape) * _DTYPES[entry["dtype"]][0]
    if offsets[1] - offsets[0] != nbytes:
        raise _bad(path, f"tensor {key!r} of shape {tuple(shape)} and dtype {entry['dtype']} needs {nbytes} "
                   f"bytes, its data offsets span {offsets[1] - offsets[0]}")


def tensors_of(header: dict) -> dict:
    """``{name: (shape tuple, dtype name)}`` of the tensors a checked header describes."""
    return {k: (tuple(e["shape"]), (_DTYPES.get(e["dtype"]) or (0, None))[1] or e["dtype"].lower())
            for k, e in header.items() if k != "__metadata__"}


def _describe(tensors: dict, limit: int = 4) -> str:
    items = [f"{k} {shape} {dtype}" for k, (shape, dtype) in list(tensors.items())[:limit]]
    more = len(tensors) - limit
    return ", ".join(items) + (f" and {more} more" if more > 0 else "") if items else "no tensors"


class _ShapeCheck:
    """Matches each new Parameter's shape against a not yet matched tensor of the checkpoint."""

    def __init__(self, path: str, tensors: dict, config: dict) -> None:
        self.path, self.tensors, self.config = path, tensors, config
        self.left = collections.Counter(shape for shape, _ in tensors.values())

    def __call__(self, data) -> None:
        shape = tuple(int(d) for d in data.shape)
        if self.left[shape] > 0:
            self.left[shape] -= 1
            return
        cfg = self.config
        call = f"{cfg.get('class')}(*{cfg.get('args', [])}, **{cfg.get('kwargs', {})})"
        raise ValueError(
            f"[from_checkpoint] {self.path} does not match its config: {call} creates a parameter of shape "
            f"{shape} and dtype {data.dtype.name}, but the file holds no other tensor of that shape (it holds "
            f"{_describe(self.tensors)})"
        )


@contextlib.contextmanager
def expect_parameters(path: str, tensors: dict, config: dict):
    """Within the block, creating a Parameter whose shape matches no remaining tensor of
    ``tensors`` raises ValueError (naming the shape and the file's tensors) before allocating."""
    token = _PARAMETER_CHECK.set(_ShapeCheck(path, tensors, config))
    try:
        yield
    finally:
        _PARAMETER_CHECK.reset(token)
