"""Speed of saving and loading checkpoints against PyTorch's: a state dict of a GPT-2-like model (48 float32
tensors, about 8M parameters, 32 MB) written by ``torch.save`` and read by each library's ``load`` (read into
memory, and mapped with ``mmap=True``), and each library's ``save`` of it (SneppX's own format and
``format="torch"``). The files live in a temporary folder (the page cache, as a checkpoint just written is);
both libraries interleaved in this process, median milliseconds per call, ``ratio = sneppx / torch``.

Run: ``python benchmarks/bench_io.py [--quick]``.
"""

from __future__ import annotations

import os
import sys
import tempfile

import numpy as np
import sneppx_core as sx
from common import case_rows, print_rows, set_threads, try_torch

FULL = {"warmup": 2, "repeat": 9}
QUICK = {"warmup": 1, "repeat": 3}
D, LAYERS, VOCAB = 256, 8, 8192


def _state():
    """name -> float32 NumPy array, GPT-2's layout at width D."""
    rng = np.random.default_rng(0)
    shapes = {"wte.weight": (VOCAB, D), "wpe.weight": (1024, D)}
    for i in range(LAYERS):
        p = f"h.{i}."
        shapes.update({p + "ln_1.weight": (D,), p + "attn.c_attn.weight": (D, 3 * D), p + "attn.c_proj.weight": (D, D),
                       p + "ln_2.weight": (D,), p + "mlp.c_fc.weight": (D, 4 * D), p + "mlp.c_proj.weight": (4 * D, D)})
    return {k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}


def run(quick: bool = False) -> list:
    """Times each case in both libraries; rows name, sneppx, torch, ratio, unit (ms per call)."""
    cfg = QUICK if quick else FULL
    torch = try_torch()
    set_threads()
    arrays = _state()
    mb = sum(a.nbytes for a in arrays.values()) / 2 ** 20
    folder = tempfile.mkdtemp(prefix="sneppx-bench-io-")
    src = os.path.join(folder, "torch.pt")
    ours_sd = {k: sx.tensor(v) for k, v in arrays.items()}
    if torch is not None:
        theirs_sd = {k: torch.from_numpy(v.copy()) for k, v in arrays.items()}
        torch.save(theirs_sd, src)
    else:
        sx.save(ours_sd, src, format="torch")
    out_s, out_t = os.path.join(folder, "s.pt"), os.path.join(folder, "t.pt")
    ours = {
        f"load a torch.save state dict ({mb:.0f} MB, {len(arrays)} tensors)": lambda: sx.load(src),
        "load it with mmap=True": lambda: sx.load(src, mmap=True),
        "save the state dict (SneppX's format / torch.save)": lambda: sx.save(ours_sd, out_s),
        "save the state dict with format=\"torch\" / torch.save": lambda: sx.save(ours_sd, out_s, format="torch"),
    }
    theirs = None
    if torch is not None:
        names = list(ours)
        theirs = {names[0]: lambda: torch.load(src), names[1]: lambda: torch.load(src, mmap=True),
                  names[2]: lambda: torch.save(theirs_sd, out_t), names[3]: lambda: torch.save(theirs_sd, out_t)}
    try:
        return case_rows(ours, theirs, cfg, unit="ms")
    finally:
        for name in os.listdir(folder):
            os.remove(os.path.join(folder, name))
        os.rmdir(folder)


def main(argv: list) -> None:
    """Prints the rows of :func:`run` as a table."""
    print_rows(run(quick="--quick" in argv), 64)


if __name__ == "__main__":
    main(sys.argv[1:])
