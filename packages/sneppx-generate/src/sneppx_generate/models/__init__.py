"""Forward-only language models built from sneppx_core ops, one file per architecture family.

Each family module defines classes and a ``FAMILIES`` dict mapping ``config.json``'s
``model_type`` to a class ``cls(config: dict, weights: Weights, dtype)`` that follows the
generation protocol. Adding a family is one such file plus one line in ``FAMILY_MODULES``.
"""

from __future__ import annotations

import importlib

from .base import CausalLM, KVCache, Step

FAMILY_MODULES = {
    "gpt2": "gpt2",
    "llama": "llama",
    "mistral": "llama",
    "qwen2": "llama",
    "qwen3": "llama",
    "sneppx": "sneppx",
}


def model_class(model_type: str):
    """The class that implements ``model_type``; ValueError listing the supported types otherwise."""
    if model_type not in FAMILY_MODULES:
        raise ValueError(f"[load_model] model_type {model_type!r} is not supported; supported types: "
                         f"{sorted(FAMILY_MODULES)}")
    module = importlib.import_module(f"{__name__}.{FAMILY_MODULES[model_type]}")
    return module.FAMILIES[model_type]


__all__ = ["CausalLM", "KVCache", "Step", "FAMILY_MODULES", "model_class"]
