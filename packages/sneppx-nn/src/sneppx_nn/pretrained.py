"""``Transformer.from_pretrained``: Hugging Face model folders mapped onto sneppx-nn's ``Transformer``.

The Transformer is a GPT-style decoder (LayerNorm or RMSNorm, learned or rotary positions, a plain
MLP, multi-head attention with equal query and key/value heads), so it expresses GPT-2. Llama-style
families (gated MLP, grouped-query attention) are refused with an error that says why; load them for
inference with sneppx-generate's ``load_model``.
"""

from __future__ import annotations

import json
import os

import sneppx_core as sx

from . import checkpoint

_GPT2_ACTIVATIONS = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu", "relu": "relu",
                     "silu": "silu"}
_GPT2_NAMES = [("norm1.weight", "ln_1.weight"), ("norm1.bias", "ln_1.bias"), ("norm2.weight", "ln_2.weight"),
               ("norm2.bias", "ln_2.bias"), ("self_attn.in_proj_weight", "attn.c_attn.weight"),
               ("self_attn.in_proj_bias", "attn.c_attn.bias"), ("self_attn.out_proj.weight", "attn.c_proj.weight"),
               ("self_attn.out_proj.bias", "attn.c_proj.bias"), ("linear1.weight", "mlp.c_fc.weight"),
               ("linear1.bias", "mlp.c_fc.bias"), ("linear2.weight", "mlp.c_proj.weight"),
               ("linear2.bias", "mlp.c_proj.bias")]
_CONV1D = {"attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight"}  # stored (in, out)
_CANNOT = {
    "llama": "a gated (SwiGLU) MLP and grouped-query attention",
    "mistral": "a gated (SwiGLU) MLP, grouped-query and sliding-window attention",
    "qwen2": "a gated (SwiGLU) MLP and grouped-query attention",
    "qwen3": "a gated (SwiGLU) MLP, grouped-query attention and per-head q/k norms",
}


def read_config(folder: str) -> dict:
    """The ``config.json`` of a Hugging Face folder."""
    cfg_path = os.path.join(folder, "config.json")
    if not os.path.isfile(cfg_path):
        raise FileNotFoundError(f"[from_pretrained] {folder} has no config.json")
    with open(cfg_path, encoding="utf-8") as fh:
        return json.load(fh)


def read_tensors(folder: str) -> dict:
    """{name: Tensor} of a Hugging Face folder with one or several safetensors files."""
    index = os.path.join(folder, "model.safetensors.index.json")
    if os.path.isfile(index):
        with open(index, encoding="utf-8") as fh:
            files = sorted(set(json.load(fh)["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    tensors = {}
    for name in files:
        tensors.update(checkpoint.load(os.path.join(folder, name)))
    return tensors


def gpt2_arguments(config: dict) -> dict:
    """Transformer constructor arguments equivalent to a GPT-2 ``config.json``."""
    act = config.get("activation_function", "gelu_new")
    if act not in _GPT2_ACTIVATIONS:
        raise ValueError(f"[from_pretrained] gpt2 activation_function {act!r} has no Transformer equivalent")
    if float(config.get("layer_norm_epsilon", 1e-5)) != 1e-5:
        raise ValueError("[from_pretrained] Transformer's LayerNorms use eps=1e-5, the config asks for "
                         f"{config['layer_norm_epsilon']}")
    if config.get("scale_attn_by_inverse_layer_idx") or not config.get("scale_attn_weights", True):
        raise ValueError("[from_pretrained] only GPT-2's standard 1/sqrt(head_dim) attention scale is supported")
    d = config["n_embd"]
    return {"vocab_size": config["vocab_size"], "d_model": d, "n_heads": config["n_head"],
            "n_layers": config["n_layer"],
            "d_ff": config.get("n_inner") or 4 * d, "max_seq_len": config["n_positions"], "norm": "layernorm",
            "positional": "learned", "tie_weights": True, "activation": _GPT2_ACTIVATIONS[act], "bias": True}


def gpt2_state(config: dict, tensors: dict) -> dict:
    """The Transformer state_dict of GPT-2 weights (Conv1D weights (in, out) are transposed)."""
    prefix = "transformer." if "transformer.wte.weight" in tensors else ""

    def get(name, transpose=False):
        if prefix + name not in tensors:
            raise KeyError(f"[from_pretrained] tensor {prefix + name!r} is missing from the checkpoint")
        t = tensors[prefix + name]
        return t.transpose(0, 1).contiguous() if transpose else t

    state = {"tok_emb.weight": get("wte.weight"), "pos_emb.weight": get("wpe.weight"),
             "norm_f.weight": get("ln_f.weight"), "norm_f.bias": get("ln_f.bias")}
    for i in range(config["n_layer"]):
        h, b = f"h.{i}.", f"blocks.{i}."
        for ours, theirs in _GPT2_NAMES:
            state[b + ours] = get(h + theirs, theirs in _CONV1D)
    return state


def from_pretrained(cls, folder, dtype=None):
    """Build ``cls`` (a Transformer) from a Hugging Face folder (GPT-2) or a SneppX checkpoint folder."""
    folder = os.fspath(folder)
    if not os.path.isfile(os.path.join(folder, "config.json")):
        path = os.path.join(folder, "model.safetensors") if os.path.isdir(folder) else folder
        if os.path.isfile(path):
            model = cls.from_checkpoint(path)
            return model if dtype is None else model.to(dtype)
    config = read_config(folder)
    kind = config.get("model_type")
    if kind in _CANNOT:
        raise ValueError(f"[from_pretrained] {kind} models use {_CANNOT[kind]}, which Transformer cannot express; "
                         "load them for inference with sneppx_generate.load_model")
    if kind != "gpt2":
        raise ValueError(f"[from_pretrained] model_type {kind!r} is not supported (supported: gpt2)")
    model = cls(**gpt2_arguments(config), dtype=dtype or sx.float32)
    model.load_state_dict(gpt2_state(config, read_tensors(folder)), strict=True)
    return model
