"""GPT-2: learned positions, pre-norm LayerNorm blocks, fused q/k/v, GELU MLP, head tied to ``wte``.

x = wte[ids] + wpe[positions]; x = x + c_proj(attn(c_attn(ln_1(x)))); x = x + mlp(ln_2(x));
logits = ln_f(x) @ wte^T. GPT-2 stores its projections as Conv1D weights (in, out), so they are
applied as x @ W + b with no transposed copy.
"""

from __future__ import annotations

import functools

import sneppx_core.functional as F

from .base import CausalLM, merge_heads

ACTIVATIONS = {"gelu_new": functools.partial(F.gelu, approximate="tanh"),
               "gelu_pytorch_tanh": functools.partial(F.gelu, approximate="tanh"),
               "gelu": F.gelu, "relu": F.relu, "silu": F.silu, "swish": F.silu}


BLOCK_TENSORS = ("ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight",
                 "attn.c_proj.bias", "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias",
                 "mlp.c_proj.weight", "mlp.c_proj.bias")


class GPT2(CausalLM):
    """GPT-2 built from a ``config.json`` dict and :class:`~sneppx_generate._weights.Weights`."""

    model_type = "gpt2"

    def __init__(self, cfg: dict, weights, dtype):
        self.config, self.dtype = cfg, dtype
        self.d = cfg["n_embd"]
        self.n_layers, self.n_heads = cfg["n_layer"], cfg["n_head"]
        self.n_kv_heads, self.head_dim = self.n_heads, self.d // self.n_heads
        self.max_positions, self.eps = cfg["n_positions"], float(cfg.get("layer_norm_epsilon", 1e-5))
        act = cfg.get("activation_function", "gelu_new")
        if act not in ACTIVATIONS:
            raise NotImplementedError(f"[load_model] gpt2: activation_function {act!r} is not supported")
        if cfg.get("scale_attn_by_inverse_layer_idx") or not cfg.get("scale_attn_weights", True):
            raise NotImplementedError("[load_model] gpt2: only the standard 1/sqrt(head_dim) attention scale "
                                      "is supported")
        self.act = ACTIVATIONS[act]
        prefix = "transformer." if "transformer.wte.weight" in weights else ""
        get = lambda name: weights.get(prefix + name, dtype)  # noqa: E731
        self.wte, self.wpe = get("wte.weight"), get("wpe.weight")
        self.blocks = [{name: get(f"h.{i}.{name}") for name in BLOCK_TENSORS} for i in range(self.n_layers)]
        self._block_tuples = [tuple(b[name] for name in BLOCK_TENSORS) for b in self.blocks]
        self.ln_f = get("ln_f.weight"), get("ln_f.bias")
        untied = not cfg.get("tie_word_embeddings", True) and "lm_head.weight" in weights
        self.lm_head = weights.get("lm_head.weight", dtype) if untied else self.wte

    def embed(self, ids, step):
        """Token plus learned position embeddings."""
        return F.embedding(ids, self.wte) + F.embedding(step.position_ids(), self.wpe)

    def layer(self, i, x, cache, step):
        """One GPT-2 block on x (B, T, C)."""
        ln1_w, ln1_b, attn_w, attn_b, proj_w, proj_b, ln2_w, ln2_b, fc_w, fc_b, out_w, out_b = self._block_tuples[i]
        b, t = x.shape[0], x.shape[1]
        h = F.layer_norm(x, self.d, ln1_w, ln1_b, self.eps)
        # (B, T, 3 * C) -> (3, B, H, T, d): q, k and v with their heads split, in two view ops
        q, k, v = (h @ attn_w + attn_b).reshape((b, t, 3, self.n_heads, self.head_dim)).permute(2, 0, 3, 1, 4).unbind(0)
        if cache is not None:
            k, v = cache.update(i, k, v)
        x = x + (merge_heads(step.attend(q, k, v)) @ proj_w + proj_b)
        h = F.layer_norm(x, self.d, ln2_w, ln2_b, self.eps)
        return x + (self.act(h @ fc_w + fc_b) @ out_w + out_b)

    def head(self, x):
        """Final LayerNorm and the tied language-model head."""
        return F.linear(F.layer_norm(x, self.d, *self.ln_f, self.eps), self.lm_head)


FAMILIES = {"gpt2": GPT2}
