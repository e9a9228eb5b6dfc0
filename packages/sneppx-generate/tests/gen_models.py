"""Small language models for the generation tests, written with sneppx_core ops only."""

import math

import numpy as np
import sneppx_core as sx
import sneppx_core.functional as F


def _param(rng, *shape, scale=0.5):
    return sx.Tensor.from_numpy((rng.normal(size=shape) * scale).astype(np.float32))


class BigramLM:
    """logits[b, t] = table[input_ids[b, t]]: an embedding lookup, no cache, no context."""

    def __init__(self, table):
        self.table = table if isinstance(table, sx.Tensor) else sx.Tensor.from_numpy(np.asarray(table, np.float32))
        self.calls = []

    def __call__(self, input_ids, cache=None):
        self.calls.append(tuple(input_ids.shape))
        return F.embedding(input_ids, self.table)


class EmbedMatmulLM:
    """logits = emb[input_ids] @ w: an embedding table and a matmul (bigram, low rank)."""

    def __init__(self, vocab, dim, seed=0):
        rng = np.random.default_rng(seed)
        self.emb, self.w = _param(rng, vocab, dim), _param(rng, dim, vocab)

    def __call__(self, input_ids, cache=None):
        return F.embedding(input_ids, self.emb) @ self.w


def cycle_table(vocab, scale=10.0):
    """Table whose greedy continuation of token t is (t + 1) % vocab."""
    table = np.zeros((vocab, vocab), dtype=np.float32)
    table[np.arange(vocab), (np.arange(vocab) + 1) % vocab] = scale
    return table


class KVCache:
    """Keys and values of the tokens fed so far; ``length`` counts them."""

    def __init__(self, batch_size, max_len):
        self.batch_size, self.max_len, self.length = batch_size, max_len, 0
        self.k = self.v = None

    def append(self, k, v):
        self.k = k if self.k is None else sx.cat([self.k, k], dim=1)
        self.v = v if self.v is None else sx.cat([self.v, v], dim=1)
        self.length = self.k.shape[1]
        if self.length > self.max_len:
            raise RuntimeError(f"KVCache: {self.length} tokens exceed max_len={self.max_len}")
        return self.k, self.v


class TinyAttentionLM:
    """One causal self-attention layer with learned positions and a residual connection.

    ``x = emb[ids] + pos[positions]``, ``h = softmax(q k^T / sqrt(d) + causal) v + x``,
    ``logits = h @ w_out``. With ``new_cache`` it keeps keys and values between calls.
    """

    def __init__(self, vocab=29, dim=16, max_pos=128, seed=0):
        rng = np.random.default_rng(seed)
        self.emb, self.pos = _param(rng, vocab, dim, scale=1.0), _param(rng, max_pos, dim)
        self.wq, self.wk, self.wv = (_param(rng, dim, dim) for _ in range(3))
        self.w_out = _param(rng, dim, vocab, scale=1.0)
        self.dim, self.calls, self.grad_modes = dim, [], []

    def new_cache(self, batch_size, max_len):
        return KVCache(batch_size, max_len)

    def __call__(self, input_ids, cache=None, **kwargs):
        self.calls.append(tuple(input_ids.shape))
        self.grad_modes.append(sx.is_grad_enabled())
        return self.forward(input_ids, cache=cache, **kwargs)

    def forward(self, input_ids, cache=None):
        offset = cache.length if cache is not None else 0
        positions = sx.arange(offset, offset + input_ids.shape[1], dtype=sx.int64)
        return self._attend(input_ids, positions, cache, None)

    def _attend(self, input_ids, positions, cache, key_mask):
        t = input_ids.shape[1]
        x = F.embedding(input_ids, self.emb) + F.embedding(positions, self.pos)
        q, k, v = x @ self.wq, x @ self.wk, x @ self.wv
        offset = cache.length if cache is not None else 0
        if cache is not None:
            k, v = cache.append(k, v)
        s = k.shape[1]
        att = (q @ k.transpose(1, 2)) * (1.0 / math.sqrt(self.dim))
        future = sx.arange(s, dtype=sx.int64).reshape(1, s) > (sx.arange(t, dtype=sx.int64).reshape(t, 1) + offset)
        att = att.masked_fill(future, -1e9)
        if key_mask is not None:
            att = att.masked_fill((key_mask == 0).unsqueeze(1), -1e9)
        h = F.softmax(att, dim=-1) @ v + x
        return h @ self.w_out


class MaskedTinyAttentionLM(TinyAttentionLM):
    """``TinyAttentionLM`` that takes ``attention_mask`` (B, tokens so far): padded keys are masked
    and positions count only real tokens, so a left-padded row computes what it would alone."""

    def forward(self, input_ids, cache=None, attention_mask=None):
        if attention_mask is None:
            return super().forward(input_ids, cache)
        t = input_ids.shape[1]
        positions = (attention_mask.cumsum(dim=1) - 1).clamp(min=0)
        positions = positions[:, positions.shape[1] - t:]
        return self._attend(input_ids, positions, cache, attention_mask)


class NoCache:
    """Wraps a model and hides its ``new_cache``: the model then always sees the whole sequence."""

    def __init__(self, model):
        self.model = model

    def __call__(self, input_ids, cache=None):
        return self.model(input_ids)


def greedy_by_hand(model, prompt, steps, eos=None):
    """Reference: re-run the model on the whole sequence, take argmax of the last position."""
    seq = list(prompt)
    for _ in range(steps):
        logits = model(sx.Tensor([seq], dtype=sx.int64)).numpy()
        seq.append(int(np.argmax(logits[0, -1])))
        if seq[-1] == eos:
            break
    return seq
