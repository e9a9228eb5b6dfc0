"""Generation speed of sneppx_core's NumPy backend next to the C backend.

The tiny GPT of ``bench_generate.py`` (vocab 512, dim 128, 4 heads, 2 layers) decodes greedily with
a KV cache through ``sneppx_generate.generate``, once per backend in its own process
(``SNEPPX_BACKEND=c`` / ``numpy``), in interleaved rounds; each row is the median tokens/s over the
rounds and ``ratio = numpy / C``. The load average is printed with the results. ``--threads N``
sets both backends' thread counts (``set_num_threads`` and the BLAS environment variables).

Run: ``python benchmarks/bench_numpy_backend.py [--rounds N] [--new-tokens N] [--threads N]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = """
import sys, time, zlib
import numpy as np
sys.path.insert(0, {here!r})
import sneppx_core as sx
from bench_generate import CONFIG, SxTinyGPT, make_weights
from sneppx_generate import GenerationConfig, generate

assert sx._BACKEND == {backend!r}, sx._BACKEND
if {threads}:
    sx.set_num_threads({threads})
model = SxTinyGPT(CONFIG, make_weights(CONFIG))
for batch in (1, 8):
    ids = np.random.default_rng(0).integers(0, CONFIG["vocab"], size=(batch, 32))
    cfg = GenerationConfig(max_new_tokens={new}, use_cache=True)
    generate(model, ids, generation_config=GenerationConfig(max_new_tokens=4, use_cache=True))  # warm-up
    start = time.perf_counter()
    out = generate(model, ids, generation_config=cfg)["output_ids"]
    seconds = time.perf_counter() - start
    print(batch, batch * {new} / seconds, zlib.crc32(np.ascontiguousarray(out[:, -{new}:].numpy()).tobytes()))
"""


def one_run(backend: str, new: int, threads: int) -> dict:
    """{batch: (tokens per second, CRC32 of the generated ids)} for one process on ``backend``."""
    env = dict(os.environ, SNEPPX_BACKEND=backend)
    if threads:
        env.update(OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    code = CHILD.format(here=HERE, backend=backend, new=new, threads=threads)
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    rows = [line.split() for line in run.stdout.strip().splitlines()]
    return {int(b): (float(tps), int(check)) for b, tps, check in rows}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--new-tokens", type=int, default=64)
    p.add_argument("--threads", type=int, default=0, help="0: each backend's default")
    args = p.parse_args(argv)
    runs = {"c": [], "numpy": []}
    for _ in range(args.rounds):
        for backend in runs:
            runs[backend].append(one_run(backend, args.new_tokens, args.threads))
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}; "
          f"{args.rounds} interleaved rounds, prompt 32, {args.new_tokens} new tokens, greedy with KV cache, "
          f"threads {args.threads or 'default'}")
    print(f"{'batch':>5s} {'C tok/s':>10s} {'NumPy tok/s':>12s} {'ratio':>7s}  same tokens")
    for batch in (1, 8):
        c = statistics.median(r[batch][0] for r in runs["c"])
        n = statistics.median(r[batch][0] for r in runs["numpy"])
        same = runs["c"][0][batch][1] == runs["numpy"][0][batch][1]
        print(f"{batch:5d} {c:10.1f} {n:12.1f} {n / c:7.3f}  {same}")


if __name__ == "__main__":
    main()
