"""``load_model``: pretrained models from Hugging Face folders and SneppX checkpoints."""

from __future__ import annotations

import json
import os

from ._weights import SafetensorsFile, Weights, compute_dtype, weight_paths
from .models import model_class

# Positional constructor arguments of sneppx-nn's Transformer, for checkpoints that recorded them as args.
_TRANSFORMER_ARGS = ("vocab_size", "d_model", "n_heads", "n_layers", "d_ff", "max_seq_len", "dropout", "norm",
                     "positional", "tie_weights", "activation", "bias")


def read_json(path: str) -> dict:
    """A JSON file as a dict ({} when the file does not exist)."""
    if not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def generation_defaults(folder: str, config: dict) -> dict:
    """eos/bos/pad ids from ``generation_config.json``, falling back to ``config.json``; None when absent."""
    gen = read_json(os.path.join(folder, "generation_config.json"))
    return {k: gen.get(k, config.get(k)) for k in ("eos_token_id", "bos_token_id", "pad_token_id")}


def _sneppx_config(meta: dict, path: str) -> dict:
    config = meta.get("config") or {}
    if config.get("class") != "Transformer" or config.get("module") != "sneppx_nn.transformer":
        raise ValueError(f"[load_model] {path} holds a {config.get('module')}.{config.get('class')}; only "
                         "sneppx_nn's Transformer can be loaded for generation")
    cfg = dict(zip(_TRANSFORMER_ARGS, config.get("args", [])))
    cfg.update(config.get("kwargs", {}))
    cfg["model_type"] = "sneppx"
    return cfg


def _sneppx_file(path: str):
    """(config, weights) when ``path`` is a SneppX checkpoint file, else None."""
    f = SafetensorsFile(path)
    raw = f.metadata.get("sneppx")
    if raw is None:
        return None
    return _sneppx_config(json.loads(raw), path), Weights([f])


def load_model(path, dtype=None, device=None):
    """Load a pretrained causal language model that follows the generation protocol.

    Args:
        path: a Hugging Face folder (``config.json`` plus ``model.safetensors`` or shards listed in
            ``model.safetensors.index.json``, or, without those, PyTorch's ``pytorch_model.bin`` or
            shards listed in ``pytorch_model.bin.index.json``), a folder written by ``sneppx train`` or a SneppX
            checkpoint file written by ``Module.save_checkpoint``.
        dtype: compute dtype, ``sneppx_core.float32`` (default), ``bfloat16``, ``float16`` or a name.
        device: where the weights go (``"cuda"`` in a CUDA build); the CPU by default.

    The weight files are memory-mapped (PyTorch's copy-on-write, read weights-only: no code from
    them runs); float32 weights computed in float32 share the mapped
    pages, others are converted tensor by tensor. Returns a model with ``model(ids, cache=None)``,
    ``new_cache(batch, max_len)``, ``config`` (dict), ``generation_defaults`` (eos/bos/pad ids
    that ``generate`` uses when none are given) and ``weights_source`` (the mapped files).
    Unsupported ``model_type``: ValueError; a missing tensor: KeyError naming it.
    """
    model = _load(os.fspath(path), compute_dtype(dtype))
    return model if device is None else model.to(device)


def _load(path: str, dt):
    if os.path.isfile(path):
        found = _sneppx_file(path)
        if found is None:
            raise ValueError(f"[load_model] {path} is a safetensors file without SneppX metadata; pass the folder "
                             "that holds it and its config.json")
        return _build(*found, dt, os.path.dirname(path), {})
    if not os.path.isdir(path):
        raise FileNotFoundError(f"[load_model] no such folder or file: {path}")
    config = read_json(os.path.join(path, "config.json"))
    if not config:
        single = os.path.join(path, "model.safetensors")
        found = _sneppx_file(single) if os.path.isfile(single) else None
        if found is None:
            raise FileNotFoundError(f"[load_model] {path} has no config.json and no SneppX model.safetensors")
        return _build(*found, dt, path, {})
    if "model_type" not in config:
        raise ValueError(f"[load_model] {path}/config.json has no model_type")
    cls = model_class(config["model_type"])
    weights = Weights(weight_paths(path))
    return _build(config, weights, dt, path, generation_defaults(path, config), cls)


def _build(config, weights, dtype, folder, defaults, cls=None):
    cls = cls or model_class(config["model_type"])
    model = cls(config, weights, dtype)
    model.generation_defaults = defaults
    model.path, model.weights_source = folder, weights
    return model


def load_tokenizer(folder):
    """The tokenizer saved with a model: ``sneppx train``'s (as recorded in its ``run.json``) or a
    Hugging Face ``tokenizer.json`` (``Tokenizer.from_pretrained``)."""
    from .simple_tokenizer import SimpleTokenizer
    from .tokenizer import Tokenizer

    folder = os.fspath(folder)
    if os.path.isfile(folder):
        folder = os.path.dirname(folder) or "."
    path = os.path.join(folder, "tokenizer.json")
    run = read_json(os.path.join(folder, "run.json"))
    if run.get("tokenizer") == "char":
        return SimpleTokenizer.from_file(path)
    if run.get("tokenizer") == "bpe":
        return Tokenizer.from_file(path, vocab_size=run.get("vocab_size"))
    return Tokenizer.from_pretrained(folder)
