"""Training checkpoints: one safetensors file with a JSON metadata entry, written atomically.

Tensors are stored under ``model/<name>`` (from ``model.state_dict()``) and
``optimizer/<index>/<name>`` (the optimizer's state tensors). The header's ``sneppx_optim``
metadata entry is a JSON document holding everything else: format version, package versions,
the optimizer's param groups and scalar state, the scheduler's state, and the trainer's state
(step, epoch, position in the epoch, RNG states, history). bfloat16 tensors are stored as
float32 (exactly) and converted back on load.
"""

from __future__ import annotations

import json
import os
import re

import numpy as np
import safetensors.numpy as stnp
import sneppx_core as sx
from safetensors import safe_open

from ._atomic import atomic_write

FORMAT_VERSION = 1
META_KEY = "sneppx_optim"
_NAME = re.compile(r"^checkpoint-(\d+)\.safetensors$")


def checkpoint_name(step: int) -> str:
    """The file name of the checkpoint written after ``step``: ``checkpoint-00000042.safetensors``."""
    return f"checkpoint-{step:08d}.safetensors"


def latest_checkpoint(directory: str) -> str | None:
    """The path of the checkpoint with the highest step in ``directory`` (None if there is none)."""
    found = [(int(m.group(1)), name) for name in os.listdir(directory) if (m := _NAME.match(name))]
    return os.path.join(directory, max(found)[1]) if found else None


def _to_numpy(t: sx.Tensor, key: str, bf16: list) -> np.ndarray:
    t = t.detach().to("cpu").contiguous()
    if t.dtype == sx.bfloat16:
        bf16.append(key)
        t = t.float()
    return t.numpy()


def _pack_optimizer(optimizer, tensors: dict, bf16: list) -> dict:
    sd = optimizer.state_dict()
    scalars = {}
    for idx, st in sd["state"].items():
        scalars[str(idx)] = {}
        for name, value in st.items():
            if isinstance(value, sx.Tensor):
                key = f"optimizer/{idx}/{name}"
                tensors[key] = _to_numpy(value, key, bf16)
            else:
                scalars[str(idx)][name] = value
    return {"param_groups": sd["param_groups"], "state": scalars}


def _dumps(meta: dict) -> str:
    try:
        return json.dumps(meta)
    except TypeError as e:
        raise TypeError(f"save_checkpoint: the optimizer, scheduler or trainer state is not JSON-serializable ({e})") \
            from None


def save_checkpoint(path: str, model, optimizer, scheduler=None, trainer_state: dict | None = None) -> str:
    """Writes a checkpoint to ``path`` atomically (a temporary file in the same folder, then ``os.replace``).

    Temporary files that killed saves of ``path`` left behind are removed first. A failed write
    (a full disk) raises ``OSError`` naming ``path`` and leaves no temporary file.

    Args:
        path: the file to write.
        model: an object with ``state_dict()`` returning a dict of Tensors.
        optimizer: an :class:`~sneppx_optim.Optimizer`.
        scheduler: an optional scheduler with ``state_dict()``.
        trainer_state: optional JSON-serializable dict (the Trainer's position and RNG states).

    Returns:
        ``path``.
    """
    from . import __version__

    tensors, bf16 = {}, []
    for name, t in model.state_dict().items():
        tensors[f"model/{name}"] = _to_numpy(t, f"model/{name}", bf16)
    meta = {
        "format_version": FORMAT_VERSION,
        "versions": {"sneppx_core": sx.__version__, "sneppx_optim": __version__},
        "optimizer": _pack_optimizer(optimizer, tensors, bf16),
        "scheduler": None if scheduler is None else scheduler.state_dict(),
        "trainer": trainer_state or {},
        "bfloat16": bf16,
    }
    data = stnp.save(tensors, metadata={META_KEY: _dumps(meta)})
    atomic_write(path, data)
    return path


def read_checkpoint(path: str) -> tuple[dict, dict]:
    """Reads a checkpoint: ``(tensors, meta)`` with Tensors by key and the JSON metadata."""
    if os.path.isdir(path):
        found = latest_checkpoint(path)
        if found is None:
            raise FileNotFoundError(f"read_checkpoint: no checkpoint-*.safetensors file in {path!r}")
        path = found
    if not os.path.isfile(path):
        raise FileNotFoundError(f"read_checkpoint: no checkpoint at {path!r}")
    with safe_open(path, framework="numpy") as f:
        raw = (f.metadata() or {}).get(META_KEY)
    if raw is None:
        raise ValueError(f"read_checkpoint: {path!r} is a safetensors file without {META_KEY!r} metadata")
    meta = json.loads(raw)
    if meta.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"read_checkpoint: {path!r} has format version {meta.get('format_version')}, "
                         f"this sneppx-optim reads version {FORMAT_VERSION}")
    bf16 = set(meta["bfloat16"])
    tensors = {}
    for key, arr in stnp.load_file(path).items():
        t = sx.Tensor.from_numpy(arr)
        tensors[key] = t.to(sx.bfloat16) if key in bf16 else t
    return tensors, meta


def load_checkpoint(path: str, model, optimizer, scheduler=None) -> dict:
    """Restores ``model``, ``optimizer`` and ``scheduler`` from a checkpoint file (or the latest in a folder).

    Returns:
        The trainer state saved with it (an empty dict if none).
    """
    tensors, meta = read_checkpoint(path)
    model.load_state_dict({k[len("model/"):]: t for k, t in tensors.items() if k.startswith("model/")})
    packed = meta["optimizer"]
    state = {int(idx): dict(scalars) for idx, scalars in packed["state"].items()}
    for key, t in tensors.items():
        if key.startswith("optimizer/"):
            _, idx, name = key.split("/", 2)
            state.setdefault(int(idx), {})[name] = t
    optimizer.load_state_dict({"state": state, "param_groups": packed["param_groups"]})
    if scheduler is not None:
        if meta["scheduler"] is None:
            raise ValueError("load_checkpoint: the checkpoint holds no scheduler state but a scheduler was given")
        scheduler.load_state_dict(meta["scheduler"])
    return meta["trainer"]
