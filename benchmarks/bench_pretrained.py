"""Pretrained-model inference: sneppx-generate's ``load_model`` + ``generate`` against transformers.

A GPT-2-shaped model (d_model 512, 8 layers, 8 heads, vocabulary 8192) with random weights is
saved with ``save_pretrained`` and run by both libraries at the same thread count:

- greedy decoding, a 32-token prompt and 64 new tokens, batch 1 and batch 8 (ms per new token);
- the same at batch 1 in bfloat16, beside transformers in bfloat16 and beside SneppX in float32;
- batch-1 decode speed in tokens/s next to the bound that the measured memory bandwidth allows
  for the model's bytes (each new token reads every weight once);
- per-token overhead: the same loop on a model of the same depth but negligible width;
- peak RSS while generating, and its growth over the RSS after import, against the weights' size,
  and the growth in bfloat16 against float32's (each measured in a fresh process);
- time to load the model from disk (files in the page cache).

Run: ``python benchmarks/bench_pretrained.py [--quick]`` (also part of ``bench_generate``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time

import numpy as np

from common import interleaved, median_time, set_threads, timing_row

FULL = {"n_embd": 512, "n_layer": 8, "n_head": 8, "vocab_size": 8192, "n_positions": 1024}
QUICK = {"n_embd": 256, "n_layer": 4, "n_head": 4, "vocab_size": 4096, "n_positions": 256}
THIN = {"n_embd": 32, "n_head": 8, "vocab_size": 64, "n_positions": 256}


def save_gpt2(folder: str, shape: dict) -> int:
    """Random GPT-2 weights saved with transformers; returns the weights' bytes."""
    import torch
    import transformers

    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(**shape))
    model.save_pretrained(folder)
    return sum(p.numel() * p.element_size() for p in model.parameters())


def bandwidth_gbs() -> float:
    """Copy bandwidth of this machine in GB/s (bytes read + written), from a 256 MB copy."""
    src = np.ones(64 << 20, dtype=np.float32)
    dst = np.empty_like(src)
    return 2 * src.nbytes / median_time(lambda: np.copyto(dst, src), repeat=5, number=1) / 1e9


def _decoders(folder: str, dtype: str = "float32"):
    """Greedy decoders (ids, new) -> token ids of SneppX and transformers, both computing in ``dtype``."""
    import torch
    import transformers

    from sneppx_generate import generate, load_model

    ours = load_model(folder, dtype=dtype)
    theirs = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=getattr(torch, dtype)).eval()

    def run_ours(ids, new):
        return generate(ours, ids, max_new_tokens=new, min_new_tokens=new)["output_ids"].numpy()

    def run_theirs(ids, new):
        with torch.no_grad():
            t = torch.from_numpy(ids)
            return theirs.generate(t, attention_mask=torch.ones_like(t), do_sample=False, max_new_tokens=new,
                                   min_new_tokens=new, pad_token_id=0).numpy()

    return run_ours, run_theirs


def bench_decode(folder: str, vocab: int, quick: bool, label: str = "") -> list:
    """ms per new token for greedy decoding at batch 1 and 8; ``match``: same tokens on both sides."""
    run_ours, run_theirs = _decoders(folder)
    rng, rows = np.random.default_rng(0), []
    new = 16 if quick else 64
    for batch in (1, 8):
        ids = rng.integers(0, vocab, (batch, 32))
        repeat = 3 if quick else 5
        res = interleaved([lambda: run_ours(ids, new), lambda: run_theirs(ids, new)], repeat=repeat, number=1)
        r = timing_row(f"pretrained GPT-2{label} greedy B={batch} prompt=32 new={new}", *res, "ms/token")
        r["sneppx"], r["torch"] = r["sneppx"] / new, r["torch"] / new
        r["match"] = run_ours(ids, new).tolist() == run_theirs(ids, new).tolist()
        rows.append(r)
    return rows


def bench_decode_bf16(folder: str, vocab: int, quick: bool) -> list:
    """Batch-1 greedy decoding in bfloat16: ms per new token of SneppX beside transformers in bfloat16,
    and beside SneppX in float32 (bfloat16 reads half the bytes per token, so it should be no slower)."""
    ours16, theirs16 = _decoders(folder, "bfloat16")
    ours32, _ = _decoders(folder)
    ids, new = np.random.default_rng(0).integers(0, vocab, (1, 32)), 16 if quick else 64
    res = interleaved([lambda: ours16(ids, new), lambda: theirs16(ids, new), lambda: ours32(ids, new)],
                      repeat=3 if quick else 5, number=1)
    rows = []
    for other, label in ((res[1], "vs transformers bfloat16"), (res[2], "vs SneppX float32 (target <= 1)")):
        r = timing_row(f"pretrained GPT-2 bfloat16 greedy B=1 prompt=32 new={new}, {label}", res[0], other,
                       "ms/token")
        r["sneppx"], r["torch"] = r["sneppx"] / new, r["torch"] / new
        rows.append(r)
    rows[0]["match"] = ours16(ids, new).tolist() == theirs16(ids, new).tolist()
    return rows


_RSS_SCRIPT = r"""
import json, sys, numpy as np
def rss(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) * 1024
folder, side, new, dtype = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
ids = np.random.default_rng(0).integers(0, 100, (1, 32))
if side == "sneppx":
    import sneppx_generate
    base = rss("VmRSS")
    model = sneppx_generate.load_model(folder, dtype=dtype)
    sneppx_generate.generate(model, ids, max_new_tokens=new, min_new_tokens=new)
else:
    import torch, transformers
    torch.set_num_threads(2)
    base = rss("VmRSS")
    model = transformers.AutoModelForCausalLM.from_pretrained(folder).eval()
    with torch.no_grad():
        t = torch.from_numpy(ids)
        model.generate(t, attention_mask=torch.ones_like(t), do_sample=False, max_new_tokens=new,
                       min_new_tokens=new, pad_token_id=0)
print(json.dumps({"base": base, "peak": rss("VmHWM")}))
"""


def bench_memory(folder: str, weight_bytes: int, new: int) -> list:
    """Peak RSS of each library generating in a fresh process, and SneppX's growth over its import,
    computing in float32 and in bfloat16 (whose growth should be about half float32's)."""
    res = {}
    for side, dtype in (("sneppx", "float32"), ("torch", "float32"), ("sneppx", "bfloat16")):
        out = subprocess.run([sys.executable, "-c", _RSS_SCRIPT, folder, side, str(new), dtype],
                             capture_output=True, text=True, check=True)
        res[side, dtype] = json.loads(out.stdout.strip().splitlines()[-1])
    mb = 1 << 20
    ours, theirs, ours16 = res["sneppx", "float32"], res["torch", "float32"], res["sneppx", "bfloat16"]
    growth, growth16 = ours["peak"] - ours["base"], ours16["peak"] - ours16["base"]
    return [{"name": "pretrained GPT-2 peak RSS while generating", "sneppx": ours["peak"] / mb,
             "torch": theirs["peak"] / mb, "ratio": ours["peak"] / theirs["peak"], "unit": "MB",
             "higher_is_better": False},
            {"name": "pretrained GPT-2 RSS growth after import / weights (target <= 1.2)",
             "sneppx": growth / weight_bytes, "reference": 1.2, "ratio": growth / weight_bytes / 1.2,
             "unit": "x weights", "higher_is_better": False},
            {"name": "pretrained GPT-2 bfloat16 RSS growth after import, vs float32's (target <= 0.6x)",
             "sneppx": growth16 / mb, "reference": growth / mb, "ratio": growth16 / growth, "unit": "MB",
             "higher_is_better": False}]


def bench_load(folder: str) -> list:
    """Time to build the model from the folder (files already in the page cache)."""
    import transformers

    from sneppx_generate import load_model

    res = interleaved([lambda: load_model(folder), lambda: transformers.AutoModelForCausalLM.from_pretrained(folder)],
                      repeat=5, number=1)
    return [timing_row("pretrained GPT-2 load from disk", *res, "ms")]


def bench_bound(folder: str, weight_bytes: int, vocab: int, quick: bool) -> list:
    """Batch-1 tokens/s against the memory-bandwidth bound bandwidth / weight bytes."""
    from sneppx_generate import generate, load_model

    model, new = load_model(folder), (16 if quick else 64)
    ids = np.random.default_rng(1).integers(0, vocab, (1, 32))
    prefill = median_time(lambda: generate(model, ids, max_new_tokens=1), repeat=3, number=1)
    full = median_time(lambda: generate(model, ids, max_new_tokens=new + 1, min_new_tokens=new + 1), repeat=3, number=1)
    tps, bound = new / (full - prefill), bandwidth_gbs() * 1e9 / weight_bytes
    return [{"name": f"pretrained GPT-2 decode B=1 vs bandwidth bound ({weight_bytes / 1e6:.0f} MB weights)",
             "sneppx": tps, "reference": bound, "ratio": tps / bound, "unit": "tokens/s", "higher_is_better": True}]


def run(quick: bool = False) -> list:
    """All pretrained-model rows (empty without transformers)."""
    try:
        import transformers  # noqa: F401
    except ImportError:
        return []
    set_threads(2)
    shape = QUICK if quick else FULL
    with tempfile.TemporaryDirectory() as big, tempfile.TemporaryDirectory() as thin:
        weight_bytes = save_gpt2(big, shape)
        save_gpt2(thin, {**THIN, "n_layer": shape["n_layer"]})
        rows = bench_load(big) + bench_decode(big, shape["vocab_size"], quick)
        rows += bench_decode_bf16(big, shape["vocab_size"], quick)
        rows += bench_bound(big, weight_bytes, shape["vocab_size"], quick)
        overhead = bench_decode(thin, THIN["vocab_size"], quick, label=" (width 32: per-token overhead)")[:1]
        rows += overhead + bench_memory(big, weight_bytes, 16 if quick else 64)
    return rows


def main(argv=None) -> None:
    t0 = time.perf_counter()
    for r in run(quick="--quick" in (argv if argv is not None else sys.argv[1:])):
        ref = r.get("torch", r.get("reference"))
        print(f"{r['name']:78s} {r['sneppx']:10.3f} {ref:10.3f} {r['ratio']:6.2f} {r['unit']:10s} {r.get('match', '')}")
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
