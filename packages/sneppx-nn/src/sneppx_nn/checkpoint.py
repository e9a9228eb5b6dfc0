"""Checkpoints: safetensors files with a JSON metadata entry, written atomically, loaded without pickle.

File layout: a standard safetensors file (PyTorch's ``safetensors.torch.load_file`` reads it, and
files it writes load here). The header metadata holds one entry, ``"sneppx"``, a JSON object::

    {"format": "sneppx-checkpoint", "format_version": 1,
     "versions": {"sneppx_core": ..., "sneppx_nn": ..., "safetensors": ..., "numpy": ...},
     "config": {"class": "Transformer", "module": "sneppx_nn.transformer", "args": [], "kwargs": {...}},
     ...extra entries...}

bfloat16 tensors are stored with the safetensors dtype ``BF16`` (bit-exact).
"""

from __future__ import annotations

import inspect
import json
import os
from collections import OrderedDict

import numpy as np
import safetensors
import safetensors.numpy as stnp
import sneppx_core as sx
from sneppx_core import Dtype, Tensor

from ._atomic import atomic_write
from ._preflight import read_header

FORMAT = "sneppx-checkpoint"
FORMAT_VERSION = 1
METADATA_KEY = "sneppx"
_LOADABLE = {np.dtype(t) for t in (np.float64, np.float32, np.float16, np.int64, np.int32, np.int16, np.int8, np.uint8,
                                     np.bool_)}


class _NotRecordable(Exception):
    pass


def _jsonable(v):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, Dtype):
        return v.name.lower()
    if isinstance(v, sx.Device):
        return str(v)
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict) and all(isinstance(k, str) for k in v):
        return {k: _jsonable(x) for k, x in v.items()}
    raise _NotRecordable(type(v).__name__)


def capture_config(cls, sig: inspect.Signature, self, args, kwargs):
    """The JSON form of the constructor call ``cls(*args, **kwargs)``, or None when an argument
    is not a JSON value, dtype or device (or the call does not bind)."""
    try:
        bound = sig.bind(self, *args, **kwargs)
    except TypeError:
        return None
    bound.apply_defaults()
    kinds = {p.kind for p in sig.parameters.values()}
    try:
        if inspect.Parameter.VAR_POSITIONAL in kinds or inspect.Parameter.POSITIONAL_ONLY in kinds:
            pos, named = list(bound.args[1:]), dict(bound.kwargs)
        else:
            pos, named = [], {}
            for name, value in list(bound.arguments.items())[1:]:
                is_var_kw = sig.parameters[name].kind is inspect.Parameter.VAR_KEYWORD
                named.update(value) if is_var_kw else named.__setitem__(name, value)
        return {"class": cls.__qualname__, "module": cls.__module__, "args": _jsonable(pos), "kwargs": _jsonable(named)}
    except _NotRecordable:
        return None


def _versions() -> dict:
    import sneppx_nn

    return {"sneppx_core": sx.__version__, "sneppx_nn": sneppx_nn.__version__,
            "safetensors": safetensors.__version__, "numpy": np.__version__}


def _to_array(key: str, t) -> tuple[str, np.ndarray]:
    """(safetensors dtype name, contiguous little-endian array) for one tensor."""
    if isinstance(t, np.ndarray):
        return t.dtype.name, np.ascontiguousarray(t)
    if not isinstance(t, Tensor):
        raise TypeError(f"[save] value for {key!r} must be a Tensor or NumPy array, got {type(t).__name__}")
    t = t.detach()
    if str(t.device) != "cpu":
        t = t.to("cpu")
    if t.dtype == sx.bfloat16:
        bits = np.ascontiguousarray(t.float().numpy()).view(np.uint32) >> 16  # bf16 -> f32 is exact
        return "bfloat16", bits.astype(np.uint16)
    a = np.array(t.numpy(), copy=True, order="C")
    return a.dtype.name, a


def _spec(dtype: str, a: np.ndarray):
    if hasattr(safetensors, "TensorSpec"):
        return safetensors.TensorSpec(dtype=dtype, shape=a.shape, data_ptr=a.ctypes.data, data_len=a.nbytes)
    return {"dtype": dtype, "shape": list(a.shape), "data": a.tobytes()}


def _write(arrays: dict, path: str, header: dict) -> None:
    if all(d != "bfloat16" for d, _ in arrays.values()):
        stnp.save_file({k: a for k, (_, a) in arrays.items()}, path, metadata=header)
    else:
        safetensors.serialize_file({k: _spec(d, a) for k, (d, a) in arrays.items()}, path, metadata=header)


def save(state, path, *, config=None, metadata=None) -> None:
    """Writes ``state`` (a mapping of names to Tensors or arrays) to the safetensors file ``path``.

    The file is written to a temporary file in the same directory, flushed to disk and renamed
    over ``path`` (``os.replace``), so a crash never leaves a half-written checkpoint; temporary
    files that killed saves of ``path`` left behind are removed. A failed write (a full disk)
    raises ``OSError`` naming ``path`` and leaves no temporary file.

    Args:
        state: e.g. ``model.state_dict()``.
        path: destination file.
        config: a constructor config (``Module.get_config()``), stored for ``from_checkpoint``.
        metadata: extra JSON-serialisable entries for the metadata object.
    """
    if not hasattr(state, "items"):
        raise TypeError(f"[save] state must be a mapping of names to tensors, got {type(state).__name__}")
    arrays = {}
    for key, t in state.items():
        if not isinstance(key, str):
            raise TypeError(f"[save] keys must be str, got {key!r}")
        arrays[key] = _to_array(key, t)
    meta = {"format": FORMAT, "format_version": FORMAT_VERSION, "versions": _versions(), "config": config}
    meta.update(metadata or {})
    header = {METADATA_KEY: json.dumps(meta)}
    atomic_write(os.fspath(path), lambda tmp: _write(arrays, tmp, header))


def _bf16(path: str, base: int, entry: dict) -> Tensor:
    start, end = entry["data_offsets"]
    bits = np.fromfile(path, dtype="<u2", count=(end - start) // 2, offset=base + start)
    f32 = (bits.astype(np.uint32) << 16).view(np.float32).reshape(entry["shape"])
    return Tensor.from_numpy(f32).to(sx.bfloat16)


def _from_array(key: str, a: np.ndarray) -> Tensor:
    if a.dtype not in _LOADABLE:
        raise TypeError(f"[load] tensor {key!r} has dtype {a.dtype}, which sneppx-core does not support")
    return Tensor(np.array(a, copy=True, order="C"))


def load(path) -> "OrderedDict[str, Tensor]":
    """Reads every tensor of the safetensors file ``path`` into an ordered dict of Tensors.

    Works on files written by ``save`` and by ``safetensors.torch.save_file`` (no pickle involved).
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"[load] no such checkpoint file: {path}")
    base, header = read_header(path)
    out = OrderedDict()
    with safetensors.safe_open(path, framework="np") as f:
        for key in f.keys():
            entry = header[key]
            out[key] = _bf16(path, base, entry) if entry["dtype"] == "BF16" else _from_array(key, f.get_tensor(key))
    return out


def read_metadata(path) -> dict:
    """The metadata of a checkpoint: the parsed ``"sneppx"`` JSON object, or the raw string
    metadata of a safetensors file written elsewhere ({} when it has none)."""
    _, header = read_header(os.fspath(path))
    meta = header.get("__metadata__") or {}
    if METADATA_KEY in meta:
        return json.loads(meta[METADATA_KEY])
    return dict(meta)


def _subclasses(cls):
    yield cls
    for sub in cls.__subclasses__():
        yield from _subclasses(sub)


def build_from_config(cls, meta: dict, path):
    """Constructs the module described by ``meta["config"]``; the class must be ``cls`` or an
    already imported subclass of it (nothing is imported from the file's contents)."""
    config = meta.get("config")
    if not config:
        raise ValueError(f"[from_checkpoint] {path} records no constructor config; build the model "
                         "yourself and call load_checkpoint(path)")
    for klass in _subclasses(cls):
        if klass.__qualname__ == config["class"] and klass.__module__ == config["module"]:
            return klass(*config.get("args", []), **config.get("kwargs", {}))
    raise ValueError(f"[from_checkpoint] {path} holds a {config['module']}.{config['class']}, which is not "
                     f"{cls.__name__} or an imported subclass of it")
