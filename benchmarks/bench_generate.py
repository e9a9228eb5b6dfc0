"""Generation speed: ``sneppx_generate.generate`` against a hand-written PyTorch decoding loop.

Both sides run the same tiny GPT (pre-LayerNorm blocks, causal multi-head attention with a KV
cache, GELU MLP, tied embeddings) with the same weights: on the SneppX side written with
sneppx_core ops and decoded by ``generate`` through the generation protocol, on the PyTorch side
an ``nn.Module`` with a hand-written cache and a plain greedy/sampling loop. Rows report
milliseconds per generated token (lower is better) and ``ratio = sneppx / torch``.

``bench_protocol_model`` times any model that follows the generation protocol, so a larger model
(e.g. a ``Transformer``) can be passed in place of the tiny GPT.

The pretrained-model rows (``bench_pretrained``: a GPT-2-shaped model saved with transformers,
loaded by ``load_model``, against transformers' own ``generate``) are appended when transformers
is installed.

Run: ``python benchmarks/bench_generate.py [--quick]``.
"""

from __future__ import annotations

import math
import sys

import numpy as np
import sneppx_core as sx
import sneppx_core.functional as F

from sneppx_generate import GenerationConfig, generate

try:
    from .common import interleaved, timing_row
except ImportError:  # run as a script
    from common import interleaved, timing_row

CONFIG = {"vocab": 512, "dim": 128, "heads": 4, "layers": 2, "max_pos": 256}
QUICK = {"vocab": 256, "dim": 64, "heads": 4, "layers": 2, "max_pos": 128}


def make_weights(cfg: dict, seed: int = 0) -> dict:
    """GPT-2-style weights as float32 NumPy arrays (PyTorch layout: Linear weights are (out, in))."""
    rng = np.random.default_rng(seed)
    c, v = cfg["dim"], cfg["vocab"]

    def w(*shape, scale=0.02):
        return (rng.normal(size=shape) * scale).astype(np.float32)

    weights = {"wte": w(v, c), "wpe": w(cfg["max_pos"], c), "lnf.w": np.ones(c, np.float32),
               "lnf.b": np.zeros(c, np.float32)}
    for i in range(cfg["layers"]):
        p = f"h{i}."
        weights.update({p + "ln1.w": np.ones(c, np.float32), p + "ln1.b": np.zeros(c, np.float32),
                        p + "qkv.w": w(3 * c, c), p + "qkv.b": w(3 * c), p + "proj.w": w(c, c),
                        p + "proj.b": w(c), p + "ln2.w": np.ones(c, np.float32),
                        p + "ln2.b": np.zeros(c, np.float32), p + "fc.w": w(4 * c, c), p + "fc.b": w(4 * c),
                        p + "out.w": w(c, 4 * c), p + "out.b": w(c)})
    return weights


class SxCache:
    """Per-layer keys/values (B, H, S, hd) grown with ``cat``; ``length`` = tokens fed so far."""

    def __init__(self, layers: int):
        self.k, self.v, self.length = [None] * layers, [None] * layers, 0


class SxTinyGPT:
    """The tiny GPT on sneppx_core ops; follows the generation protocol (with ``new_cache``)."""

    def __init__(self, cfg: dict, weights: dict):
        self.cfg = cfg
        self.p = {k: sx.Tensor.from_numpy(a.copy()) for k, a in weights.items()}

    def new_cache(self, batch_size: int, max_len: int) -> SxCache:
        return SxCache(self.cfg["layers"])

    def _attn(self, x, i, cache, offset):
        b, t, c = x.shape
        h = self.cfg["heads"]
        p = self.p
        q, k, v = F.linear(x, p[f"h{i}.qkv.w"], p[f"h{i}.qkv.b"]).split(c, dim=-1)
        q, k, v = (z.reshape(b, t, h, c // h).transpose(1, 2) for z in (q, k, v))
        if cache is not None:
            if cache.k[i] is not None:
                k, v = sx.cat([cache.k[i], k], dim=2), sx.cat([cache.v[i], v], dim=2)
            cache.k[i], cache.v[i] = k, v
        mask = None
        if t > 1 and offset > 0:
            s = k.shape[2]
            mask = sx.arange(s).reshape(1, s) <= (sx.arange(t).reshape(t, 1) + offset)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=(t > 1 and offset == 0))
        return F.linear(y.transpose(1, 2).reshape(b, t, c), p[f"h{i}.proj.w"], p[f"h{i}.proj.b"])

    def __call__(self, input_ids, cache=None):
        p, c = self.p, self.cfg["dim"]
        offset = cache.length if cache is not None else 0
        t = input_ids.shape[1]
        x = F.embedding(input_ids, p["wte"]) + F.embedding(sx.arange(offset, offset + t), p["wpe"])
        for i in range(self.cfg["layers"]):
            x = x + self._attn(F.layer_norm(x, (c,), p[f"h{i}.ln1.w"], p[f"h{i}.ln1.b"]), i, cache, offset)
            hdn = F.gelu(F.linear(F.layer_norm(x, (c,), p[f"h{i}.ln2.w"], p[f"h{i}.ln2.b"]),
                                  p[f"h{i}.fc.w"], p[f"h{i}.fc.b"]))
            x = x + F.linear(hdn, p[f"h{i}.out.w"], p[f"h{i}.out.b"])
        if cache is not None:
            cache.length = offset + t
        return F.linear(F.layer_norm(x, (c,), p["lnf.w"], p["lnf.b"]), p["wte"])


def make_torch_gpt(cfg: dict, weights: dict):
    """The same GPT as a torch ``nn.Module`` with a hand-written KV cache."""
    import torch
    import torch.nn.functional as tF

    class TorchTinyGPT(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.p = {k: torch.from_numpy(a.copy()) for k, a in weights.items()}

        def new_cache(self, batch_size, max_len):
            return SxCache(cfg["layers"])

        def _attn(self, x, i, cache, offset):
            b, t, c = x.shape
            h, p = cfg["heads"], self.p
            q, k, v = tF.linear(x, p[f"h{i}.qkv.w"], p[f"h{i}.qkv.b"]).split(c, dim=-1)
            q, k, v = (z.reshape(b, t, h, c // h).transpose(1, 2) for z in (q, k, v))
            if cache is not None:
                if cache.k[i] is not None:
                    k, v = torch.cat([cache.k[i], k], dim=2), torch.cat([cache.v[i], v], dim=2)
                cache.k[i], cache.v[i] = k, v
            mask = None
            if t > 1 and offset > 0:
                s = k.shape[2]
                mask = torch.arange(s).reshape(1, s) <= (torch.arange(t).reshape(t, 1) + offset)
            y = tF.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=(t > 1 and offset == 0))
            return tF.linear(y.transpose(1, 2).reshape(b, t, c), p[f"h{i}.proj.w"], p[f"h{i}.proj.b"])

        def forward(self, input_ids, cache=None):
            p, c = self.p, cfg["dim"]
            offset = cache.length if cache is not None else 0
            t = input_ids.shape[1]
            x = tF.embedding(input_ids, p["wte"]) + tF.embedding(torch.arange(offset, offset + t), p["wpe"])
            for i in range(cfg["layers"]):
                x = x + self._attn(tF.layer_norm(x, (c,), p[f"h{i}.ln1.w"], p[f"h{i}.ln1.b"]), i, cache, offset)
                hdn = tF.gelu(tF.linear(tF.layer_norm(x, (c,), p[f"h{i}.ln2.w"], p[f"h{i}.ln2.b"]),
                                        p[f"h{i}.fc.w"], p[f"h{i}.fc.b"]))
                x = x + tF.linear(hdn, p[f"h{i}.out.w"], p[f"h{i}.out.b"])
            if cache is not None:
                cache.length = offset + t
            return tF.linear(tF.layer_norm(x, (c,), p["lnf.w"], p["lnf.b"]), p["wte"])

    return TorchTinyGPT().eval()


def torch_decode(model, ids: np.ndarray, max_new_tokens: int, use_cache: bool, top_p: float = 1.0,
                 temperature: float = 1.0, seed: int = 0) -> np.ndarray:
    """Greedy (top_p=1, temperature=1) or nucleus-sampled decoding, written directly in torch."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    seq = torch.from_numpy(ids.astype(np.int64))
    cache = model.new_cache(seq.shape[0], seq.shape[1] + max_new_tokens) if use_cache else None
    feed = seq
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = model(feed, cache=cache)[:, -1, :].float()
            if top_p >= 1.0 and temperature == 1.0:
                nxt = logits.argmax(dim=-1, keepdim=True)
            else:
                logits = logits / temperature
                srt, idx = torch.sort(logits, dim=-1)
                cum = torch.softmax(srt, dim=-1).cumsum(dim=-1)
                srt = srt.masked_fill(cum <= 1 - top_p, -math.inf)
                logits = torch.full_like(logits, -math.inf).scatter(-1, idx, srt)
                nxt = torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=gen)
            seq = torch.cat([seq, nxt], dim=1)
            feed = nxt if use_cache else seq
    return seq.numpy()


def bench_protocol_model(model, vocab_size: int, torch_model=None, quick: bool = False, seed: int = 0) -> list:
    """Time ``generate`` on ``model`` (any object following the generation protocol) and, when a
    torch model with the same weights and ``new_cache`` is given, ``torch_decode`` on it.

    Returns rows ``{"name", "sneppx", "torch", "ratio", "unit"}`` in ms per generated token, with
    ``"match"``: whether greedy decoding produced the same tokens on both sides (None without torch).
    """
    rng = np.random.default_rng(seed)
    prompt, new, repeats = (8, 16, 2) if quick else (32, 64, 3)
    cases = [("greedy B=1 cached", 1, True, {}), ("greedy B=8 cached", 8, True, {}),
             ("greedy B=1 no cache", 1, False, {}),
             ("sample top_p=0.9 T=0.8 B=1 cached", 1, True, {"top_p": 0.9, "temperature": 0.8})]
    rows = []
    for name, batch, use_cache, knobs in cases:
        ids = rng.integers(0, vocab_size, size=(batch, prompt))
        cfg = GenerationConfig(max_new_tokens=new, use_cache=use_cache, seed=seed, **knobs)
        tokens = batch * new
        ours, theirs = {}, {}
        fns = [lambda: ours.setdefault("out", generate(model, ids, generation_config=cfg))]
        if torch_model is not None:
            fns.append(lambda: theirs.setdefault("out", torch_decode(torch_model, ids, new, use_cache, **knobs)))
        res = interleaved(fns, repeat=repeats, number=1)
        row = timing_row(f"generate {name} prompt={prompt} new={new}", res[0], res[1] if len(res) > 1 else None,
                         "ms/token")
        row["sneppx"] /= tokens
        row["match"] = None
        if torch_model is not None:
            row["torch"] /= tokens
            if not knobs:
                row["match"] = ours["out"]["output_ids"].tolist() == theirs["out"].tolist()
        rows.append(row)
    return rows


def run(quick: bool = False) -> list:
    """Benchmark the tiny GPT on both sides; returns rows with name, sneppx, torch, ratio, unit."""
    cfg = QUICK if quick else CONFIG
    weights = make_weights(cfg)
    try:
        import torch  # noqa: F401
        torch_model = make_torch_gpt(cfg, weights)
    except ImportError:
        torch_model = None
    rows = bench_protocol_model(SxTinyGPT(cfg, weights), cfg["vocab"], torch_model, quick=quick)
    from bench_pretrained import run as run_pretrained

    return rows + bench_nn_transformer(quick) + run_pretrained(quick)


def bench_nn_transformer(quick: bool = False) -> list:
    """sneppx_nn's Transformer (the nn issue's small GPT: vocab 256, d_model 128, 4 heads, 2 layers)
    through ``generate`` with its preallocated KV cache, against the hand-cached torch GPT of the same
    architecture and size (weights differ; greedy decoding does the same work either way)."""
    try:
        from sneppx_nn import Transformer
    except ImportError:
        return []
    cfg = {"vocab": 256, "dim": 128, "heads": 4, "layers": 2, "max_pos": 256}
    sx.manual_seed(0)
    model = Transformer(cfg["vocab"], cfg["dim"], cfg["heads"], cfg["layers"], max_seq_len=cfg["max_pos"]).eval()
    try:
        torch_model = make_torch_gpt(cfg, make_weights(cfg))
    except ImportError:
        torch_model = None
    rows = bench_protocol_model(model, cfg["vocab"], torch_model, quick=quick)
    rows = [r for r in rows if "cached" in r["name"] and "sample" not in r["name"]]
    for r in rows:
        r["name"] = r["name"].replace("generate", "nn.Transformer")
        r["match"] = None  # different weights: only the speed is compared
    return rows


def main(argv=None) -> None:
    rows = run(quick="--quick" in (argv if argv is not None else sys.argv[1:]))
    print(f"{'benchmark':58s} {'sneppx':>10s} {'torch':>10s} {'ratio':>7s}  unit      match")
    for r in rows:
        torch_s = "-" if r["torch"] is None else f"{r['torch']:.3f}"
        ratio_s = "-" if r["ratio"] is None else f"{r['ratio']:.2f}"
        print(f"{r['name']:58s} {r['sneppx']:10.3f} {torch_s:>10s} {ratio_s:>7s}  {r['unit']:8s}  {r['match']}")


if __name__ == "__main__":
    main()
