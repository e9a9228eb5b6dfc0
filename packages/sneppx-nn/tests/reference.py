"""NumPy reference implementations of attention, Transformer blocks and the language model."""

import math

import numpy as np

from conftest import to_np


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def gelu(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


ACTS = {"gelu": gelu, "relu": lambda x: np.maximum(x, 0), "silu": lambda x: x / (1 + np.exp(-x)),
        "gelu_tanh": lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))}


def rope_np(t_len, d, offset=0, base=10000.0):
    """(cos, sin) tables (t_len, d) for positions offset .. offset + t_len - 1 (rotate-half form)."""
    pos = np.arange(offset, offset + t_len)[:, None]
    freqs = base ** (-np.arange(0, d, 2) / d)
    ang = np.concatenate([pos * freqs, pos * freqs], axis=1)
    return np.cos(ang), np.sin(ang)


def _rotate(x, cos, sin):
    h = x.shape[-1] // 2
    return x * cos + np.concatenate([-x[..., h:], x[..., :h]], -1) * sin


def mha_ref(mha, q, k, v, mask=None, rope=None):
    """Batch-first multi-head attention with ``mha``'s weights; additive ``mask`` broadcastable to
    (B, H, L, S); optional rotary tables ``rope``. Returns (output, head-averaged weights)."""
    sd = {n: to_np(t) for n, t in mha.state_dict().items()}
    e, h = mha.embed_dim, mha.num_heads
    if "in_proj_weight" in sd:
        wq, wk, wv = np.split(sd["in_proj_weight"], 3)
    else:
        wq, wk, wv = sd["q_proj_weight"], sd["k_proj_weight"], sd["v_proj_weight"]
    bq, bk, bv = np.split(sd["in_proj_bias"], 3) if "in_proj_bias" in sd else (0.0, 0.0, 0.0)

    def heads(x, w, b):
        y = x @ w.T + b
        return y.reshape(y.shape[0], y.shape[1], h, e // h).transpose(0, 2, 1, 3)

    qh, kh, vh = heads(q, wq, bq), heads(k, wk, bk), heads(v, wv, bv)
    if rope is not None:
        qh, kh = _rotate(qh, *rope), _rotate(kh, *rope)
    s = qh @ kh.transpose(0, 1, 3, 2) / np.sqrt(e // h)
    if mask is not None:
        s = s + mask
    a = softmax(s)
    o = (a @ vh).transpose(0, 2, 1, 3).reshape(q.shape[0], q.shape[1], e)
    return o @ sd["out_proj.weight"].T + sd.get("out_proj.bias", 0.0), a.mean(1)


def norm_ref(mod, x):
    """LayerNorm or RMSNorm ``mod`` (its weights and eps) applied to ``x`` in NumPy."""
    from sneppx_nn import LayerNorm

    w = to_np(mod.weight)
    if isinstance(mod, LayerNorm):
        mu = x.mean(-1, keepdims=True)
        y = (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + mod.eps) * w
        return y + (0.0 if mod.bias is None else to_np(mod.bias))
    return x / np.sqrt((x ** 2).mean(-1, keepdims=True) + mod.eps) * w


def block_ref(blk, x, mask=None, rope=None):
    """TransformerBlock on (B, T, C) in NumPy."""
    sd = {n: to_np(t) for n, t in blk.state_dict().items()}
    act = ACTS[blk.activation]

    def sa(y):
        return mha_ref(blk.self_attn, y, y, y, mask, rope)[0]

    def ff(y):
        h = act(y @ sd["linear1.weight"].T + sd.get("linear1.bias", 0.0))
        return h @ sd["linear2.weight"].T + sd.get("linear2.bias", 0.0)

    def norm(name, y):
        return norm_ref(getattr(blk, name), y)

    if blk.norm_first:
        x = x + sa(norm("norm1", x))
        return x + ff(norm("norm2", x))
    x = norm("norm1", x + sa(x))
    return norm("norm2", x + ff(x))


def causal_np(t):
    return np.where(np.triu(np.ones((t, t), dtype=bool), 1), -np.inf, 0.0)


def gpt_ref(model, ids):
    """Logits of ``sneppx_nn.Transformer`` for ids (B, T), in NumPy."""
    sd = {n: to_np(t) for n, t in model.state_dict().items()}
    t = ids.shape[1]
    x = sd["tok_emb.weight"][ids]
    rope = None
    if model.positional == "learned":
        x = x + sd["pos_emb.weight"][np.arange(t)]
    else:
        rope = rope_np(t, model.d_model // model.n_heads)
    for blk in model.blocks:
        x = block_ref(blk, x, causal_np(t), rope)
    x = norm_ref(model.norm_f, x)
    head = sd["tok_emb.weight"] if model.tie_weights else sd["lm_head.weight"]
    return x @ head.T
