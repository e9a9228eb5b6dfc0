"""The SneppX ``Transformer`` (sneppx-nn) as saved by ``Module.save_checkpoint`` / ``sneppx train``.

Pre-norm blocks: x = x + out_proj(attn(in_proj(norm1(x)))); x = x + linear2(act(linear1(norm2(x))));
logits = norm_f(x) @ W^T with W the token embedding (tied) or ``lm_head``. Positions are a learned
table added to the embeddings or rotary embeddings (base 10000) on q and k.
"""

from __future__ import annotations

import functools

import sneppx_core.functional as F

from .base import CausalLM, apply_rope, merge_heads, rope_inv_freq, rope_tables, split_heads

ACTIVATIONS = {"gelu": F.gelu, "gelu_tanh": functools.partial(F.gelu, approximate="tanh"), "relu": F.relu,
               "silu": F.silu}
EPS = 1e-5  # the norms' epsilon in sneppx-nn's Transformer


class SneppXTransformer(CausalLM):
    """The forward pass of sneppx-nn's ``Transformer`` from its constructor arguments and weights."""

    model_type = "sneppx"

    def __init__(self, cfg: dict, weights, dtype):
        self.config, self.dtype = cfg, dtype
        self.d, self.n_heads, self.n_layers = cfg["d_model"], cfg["n_heads"], cfg["n_layers"]
        self.n_kv_heads, self.head_dim = self.n_heads, self.d // self.n_heads
        self.max_positions, self.norm_kind = cfg.get("max_seq_len", 1024), cfg.get("norm", "layernorm")
        self.positional, bias = cfg.get("positional", "learned"), cfg.get("bias", True)
        self.act = ACTIVATIONS[cfg.get("activation", "gelu")]
        get = functools.partial(weights.get, dtype=dtype)
        with_bias = self.norm_kind == "layernorm" and bias
        norm = lambda p: (get(p + ".weight"), get(p + ".bias") if with_bias else None)  # noqa: E731
        lin = lambda p: (get(p + ".weight"), get(p + ".bias") if bias else None)  # noqa: E731
        self.tok_emb = get("tok_emb.weight")
        self.pos_emb = get("pos_emb.weight") if self.positional == "learned" else None
        if self.positional == "rope":
            self.cos, self.sin = rope_tables(self.max_positions, rope_inv_freq(self.head_dim, 10000.0), dtype)
        self.blocks = []
        for i in range(self.n_layers):
            p = f"blocks.{i}."
            in_proj = (get(p + "self_attn.in_proj_weight"), get(p + "self_attn.in_proj_bias") if bias else None)
            self.blocks.append({"norm1": norm(p + "norm1"), "norm2": norm(p + "norm2"), "in_proj": in_proj,
                                "out_proj": lin(p + "self_attn.out_proj"), "linear1": lin(p + "linear1"),
                                "linear2": lin(p + "linear2")})
        self.norm_f = norm("norm_f")
        self.lm_head = self.tok_emb if cfg.get("tie_weights", True) else get("lm_head.weight")

    def _norm(self, x, wb):
        if self.norm_kind == "rmsnorm":
            return F.rms_norm(x, self.d, wb[0], EPS)
        return F.layer_norm(x, self.d, wb[0], wb[1], EPS)

    def embed(self, ids, step):
        """Token embeddings, plus the learned position table when the model has one."""
        x = F.embedding(ids, self.tok_emb)
        return x if self.pos_emb is None else x + F.embedding(step.position_ids(), self.pos_emb)

    def layer(self, i, x, cache, step):
        """One pre-norm block on x (B, T, C)."""
        w = self.blocks[i]
        q, k, v = F.linear(self._norm(x, w["norm1"]), *w["in_proj"]).chunk(3, -1)
        q, k, v = (split_heads(a, self.n_heads, self.head_dim) for a in (q, k, v))
        if self.positional == "rope":
            cos, sin = step.rope(self.cos, self.sin)
            q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        if cache is not None:
            k, v = cache.update(i, k, v)
        x = x + F.linear(merge_heads(step.attend(q, k, v)), *w["out_proj"])
        h = self.act(F.linear(self._norm(x, w["norm2"]), *w["linear1"]))
        return x + F.linear(h, *w["linear2"])

    def head(self, x):
        """Final norm and the language-model head."""
        return F.linear(self._norm(x, self.norm_f), self.lm_head)


FAMILIES = {"sneppx": SneppXTransformer}
