"""Optimizer step speed: ``sneppx_optim`` against ``torch.optim`` (``foreach=True``), 2 threads each.

Cases: one ``step()`` of AdamW and of SGD with momentum over

* ``gpt``: the parameter shapes of a small GPT (vocabulary 256, d_model 128, 4 heads, 2 layers,
  context 128, untied output head): 29 tensors, about 0.5 million parameters;
* ``10M``: 10 million parameters in 100 tensors of shape (250, 400).

Gradients are set once; the timed call is ``opt.step()`` alone (the optimizer state already
exists). The two libraries are timed in alternation (a batch of steps of one, then of the
other, repeated), so both see the same load on a shared machine. Rows report milliseconds per
step (the median over the batches) and ``ratio = sneppx / torch`` (lower is better; the target
is at most 0.8).

Run: ``python benchmarks/bench_optim.py [--quick]``.
"""

from __future__ import annotations

import sys

import numpy as np
import sneppx_core as sx

import sneppx_optim as so
from common import interleaved, set_threads, timing_row

THREADS = 2


def gpt_shapes(vocab: int = 256, d: int = 128, layers: int = 2, context: int = 128) -> list:
    """Parameter shapes of a GPT-2-style model (the number of heads does not change them)."""
    shapes = [(vocab, d), (context, d)]
    for _ in range(layers):
        shapes += [(d,), (d,), (3 * d, d), (3 * d,), (d, d), (d,),  # ln1, qkv, attention output
                   (d,), (d,), (4 * d, d), (4 * d,), (d, 4 * d), (d,)]  # ln2, MLP
    return shapes + [(d,), (d,), (vocab, d)]  # final layer norm, output head


CASES = {"gpt": gpt_shapes(), "10M": [(250, 400)] * 100}
OPTIMIZERS = {
    "adamw": (lambda ps: so.AdamW(ps, lr=1e-3, weight_decay=0.01),
              lambda torch, ps: torch.optim.AdamW(ps, lr=1e-3, weight_decay=0.01, foreach=True)),
    "sgd_momentum": (lambda ps: so.SGD(ps, lr=1e-3, momentum=0.9),
                     lambda torch, ps: torch.optim.SGD(ps, lr=1e-3, momentum=0.9, foreach=True)),
}


def _arrays(shapes: list) -> tuple[list, list]:
    rng = np.random.default_rng(0)
    values = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    grads = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    return values, grads


def _sneppx_opt(make, values, grads):
    params = [sx.Tensor(v, requires_grad=True) for v in values]
    for p, g in zip(params, grads):
        p.grad = sx.Tensor(g)
    return make(params)


def _torch_opt(torch, make, values, grads):
    params = [torch.tensor(v, requires_grad=True) for v in values]
    for p, g in zip(params, grads):
        p.grad = torch.tensor(g)
    return make(torch, params)


def run(quick: bool = False) -> list:
    """Times one step of each optimizer on each case; rows with name, sneppx, torch, ratio, unit."""
    repeat = 5 if quick else 15
    set_threads(THREADS)
    try:
        import torch
    except ImportError:
        torch = None
    rows = []
    for case, shapes in CASES.items():
        values, grads = _arrays(shapes)
        for opt_name, (make_sx, make_torch) in OPTIMIZERS.items():
            steps = [_sneppx_opt(make_sx, values, grads).step]
            if torch is not None:
                steps.append(_torch_opt(torch, make_torch, values, grads).step)
            res = interleaved(steps, repeat=repeat, min_time=0.05, warmup=2)  # warm-up creates the state
            rows.append(timing_row(f"optim_step_{opt_name}_{case}", res[0], res[1] if torch is not None else None,
                                   "ms/step"))
    return rows


def main() -> None:
    rows = run(quick="--quick" in sys.argv)
    print(f"{'case':<22}{'sneppx':>12}{'torch':>12}{'ratio':>8}  unit")
    for r in rows:
        torch_s = "-" if r["torch"] is None else f"{r['torch']:.3f}"
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.2f}"
        print(f"{r['name']:<22}{r['sneppx']:>12.3f}{torch_s:>12}{ratio:>8}  {r['unit']}")


if __name__ == "__main__":
    main()
