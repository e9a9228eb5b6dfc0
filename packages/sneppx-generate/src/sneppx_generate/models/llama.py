"""Llama-style decoders: ``llama``, ``mistral``, ``qwen2`` (bias on q/k/v) and ``qwen3`` (q/k RMSNorm).

x = x + o_proj(attn(rope(q), rope(k), v)) on rms_norm(x); x = x + down(act(gate(h)) * up(h)) on
rms_norm(x); logits = lm_head(rms_norm(x)) (lm_head = embed_tokens when embeddings are tied).
Grouped-query attention shares each key/value head among n_heads / n_kv_heads query heads.
"""

from __future__ import annotations

import functools

import sneppx_core.functional as F

from .base import CausalLM, apply_rope, merge_heads, rope_inv_freq, rope_tables, split_heads

ACTIVATIONS = {"silu": F.silu, "gelu": F.gelu, "gelu_pytorch_tanh": functools.partial(F.gelu, approximate="tanh"),
               "gelu_new": functools.partial(F.gelu, approximate="tanh"), "relu": F.relu}


def rope_settings(cfg: dict) -> tuple:
    """(theta, scaling dict or None) from ``rope_parameters`` (newer configs) or ``rope_theta``/``rope_scaling``."""
    params = cfg.get("rope_parameters")
    if params:
        return float(params.get("rope_theta", cfg.get("rope_theta", 10000.0))), params
    return float(cfg.get("rope_theta", 10000.0)), cfg.get("rope_scaling")


def layer_windows(cfg: dict, n_layers: int) -> list:
    """Sliding-window size of each layer (None = full attention)."""
    window = cfg.get("sliding_window")
    if cfg.get("layer_types"):
        return [window if kind == "sliding_attention" else None for kind in cfg["layer_types"]]
    if "use_sliding_window" in cfg:  # qwen2/qwen3: layers from max_window_layers on slide
        slide = cfg["use_sliding_window"] and window is not None
        return [window if slide and i >= cfg.get("max_window_layers", 0) else None for i in range(n_layers)]
    return [window] * n_layers


class Llama(CausalLM):
    """A Llama-family decoder built from a ``config.json`` dict and :class:`~sneppx_generate._weights.Weights`."""

    qkv_bias = False  # qwen2 forces biases on q, k and v
    qk_norm = False   # qwen3 normalises each head of q and k

    def __init__(self, cfg: dict, weights, dtype):
        self.config, self.dtype, self.model_type = cfg, dtype, cfg.get("model_type", "llama")
        d = cfg["hidden_size"]
        self.n_layers, self.n_heads = cfg["num_hidden_layers"], cfg["num_attention_heads"]
        self.n_kv_heads = cfg.get("num_key_value_heads") or self.n_heads
        self.head_dim = cfg.get("head_dim") or d // self.n_heads
        self.eps = float(cfg.get("rms_norm_eps", 1e-6))
        self.max_positions = cfg.get("max_position_embeddings", 2048)
        act = cfg.get("hidden_act", "silu")
        if act not in ACTIVATIONS:
            raise NotImplementedError(f"[load_model] {self.model_type}: hidden_act {act!r} is not supported")
        self.act = ACTIVATIONS[act]
        self.windows = layer_windows(cfg, self.n_layers)
        theta, scaling = rope_settings(cfg)
        self.cos, self.sin = rope_tables(self.max_positions, rope_inv_freq(self.head_dim, theta, scaling), dtype)
        get = functools.partial(weights.get, dtype=dtype)
        bias = self.qkv_bias or cfg.get("attention_bias", False)
        mlp_bias = cfg.get("mlp_bias", False)
        self.embed_tokens = get("model.embed_tokens.weight")
        self.layers = [self._layer(get, f"model.layers.{i}.", bias, mlp_bias) for i in range(self.n_layers)]
        self.norm = get("model.norm.weight")
        self.lm_head = self.embed_tokens if cfg.get("tie_word_embeddings", False) else get("lm_head.weight")

    def _layer(self, get, p: str, bias: bool, mlp_bias: bool) -> dict:
        w = {"ln1": get(p + "input_layernorm.weight"), "ln2": get(p + "post_attention_layernorm.weight")}
        for name in ("q", "k", "v", "o"):
            w[name] = get(f"{p}self_attn.{name}_proj.weight")
            use = bias if name != "o" else self.config.get("attention_bias", False)
            w[name + "_b"] = get(f"{p}self_attn.{name}_proj.bias") if use else None
        for name in ("gate", "up", "down"):
            w[name] = get(f"{p}mlp.{name}_proj.weight")
            w[name + "_b"] = get(f"{p}mlp.{name}_proj.bias") if mlp_bias else None
        if self.qk_norm:
            w["q_norm"], w["k_norm"] = get(p + "self_attn.q_norm.weight"), get(p + "self_attn.k_norm.weight")
        return w

    def embed(self, ids, step):
        """Token embeddings (positions enter through the rotary tables)."""
        return F.embedding(ids, self.embed_tokens)

    def layer(self, i, x, cache, step):
        """One decoder layer on x (B, T, C) (``step``: positions and masks of the call)."""
        w = self.layers[i]
        h = F.rms_norm(x, x.shape[-1], w["ln1"], self.eps)
        q = split_heads(F.linear(h, w["q"], w["q_b"]), self.n_heads, self.head_dim)
        k = split_heads(F.linear(h, w["k"], w["k_b"]), self.n_kv_heads, self.head_dim)
        v = split_heads(F.linear(h, w["v"], w["v_b"]), self.n_kv_heads, self.head_dim)
        if self.qk_norm:
            q = F.rms_norm(q, self.head_dim, w["q_norm"], self.eps)
            k = F.rms_norm(k, self.head_dim, w["k_norm"], self.eps)
        cos, sin = step.rope(self.cos, self.sin)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        if cache is not None:
            k, v = cache.update(i, k, v)
        x = x + F.linear(merge_heads(step.attend(q, k, v, self.windows[i])), w["o"], w["o_b"])
        h = F.rms_norm(x, x.shape[-1], w["ln2"], self.eps)
        gated = self.act(F.linear(h, w["gate"], w["gate_b"])) * F.linear(h, w["up"], w["up_b"])
        return x + F.linear(gated, w["down"], w["down_b"])

    def head(self, x):
        """Final RMSNorm and the language-model head."""
        return F.linear(F.rms_norm(x, x.shape[-1], self.norm, self.eps), self.lm_head)


class Qwen2(Llama):
    """Qwen2: Llama with biases on the q, k and v projections."""

    qkv_bias = True


class Qwen3(Llama):
    """Qwen3: Llama with RMSNorm on each query and key head before the rotation, explicit ``head_dim``."""

    qk_norm = True


FAMILIES = {"llama": Llama, "mistral": Llama, "qwen2": Qwen2, "qwen3": Qwen3}
