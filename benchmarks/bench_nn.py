"""Training-step speed of ``sneppx_nn`` models against the same models in ``torch.nn``.

Cases (one training step = forward, cross-entropy loss, backward, AdamW update):

* ``mlp``: the migration guide's MLP (784-256-10, GELU), batch 64;
* ``gpt``: a small decoder-only language model (vocab 256, d_model 128, 4 heads, 2 layers,
  learned positions, tied head), sequences of 64 tokens, batch 8;
* ``gpt scaling``: the same model at d_model 128, 256, 512, 768 and 1024 (heads of 64 channels,
  at least 4), depth and sequence fixed, to show how the step cost grows with the width (the
  rows carry ``d_model``; the runner draws them as a chart).

Both libraries run in this process with 2 threads. SneppX's AdamW is the fused
``sneppx_core.functional.adam_step``; PyTorch's is ``torch.optim.AdamW``. Rows report the median
milliseconds per step (steps of the two libraries alternate, so background load hits both alike)
and ``ratio = sneppx / torch`` (lower is better; target <= 0.8).

Run: ``python benchmarks/bench_nn.py [--quick]``.
"""

from __future__ import annotations

import sys

import numpy as np
import sneppx_core as sx
import sneppx_core.functional as F

import sneppx_nn as nn

try:
    from .common import interleaved, set_threads, timing_row, try_torch
except ImportError:  # run as a script
    from common import interleaved, set_threads, timing_row, try_torch

FULL = {"warmup": 10, "steps": 100}
QUICK = {"warmup": 3, "steps": 15}
SCALING = {"warmup": 1, "steps": 6}  # per width of the model-size series (the wide models are slow)
WIDTHS = (128, 256, 512, 768, 1024)
LR, BETAS, EPS, WD = 1e-3, (0.9, 0.999), 1e-8, 0.01
GPT = {"vocab": 256, "d_model": 128, "heads": 4, "layers": 2, "seq": 64, "batch": 8}


class MLP(nn.Module):
    """The guide's MLP."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(784, 256), nn.GELU(), nn.Linear(256, 10))

    def forward(self, x):
        return self.net(x.reshape((-1, 784)))


class SxAdamW:
    """AdamW on ``F.adam_step`` (decoupled weight decay), the update the optimizer package fuses."""

    def __init__(self, params):
        self.params = list(params)
        self.m = [sx.zeros_like(p) for p in self.params]
        self.v = [sx.zeros_like(p) for p in self.params]
        self.t = 0

    def step(self):
        """One AdamW update of every parameter, then clears the gradients."""
        self.t += 1
        grads = [p.grad for p in self.params]
        with sx.no_grad():
            F.adam_step(self.params, grads, self.m, self.v, None, step=self.t, lr=LR, beta1=BETAS[0],
                        beta2=BETAS[1], eps=EPS, weight_decay=WD, decoupled_weight_decay=True)
        for p in self.params:
            p.grad = None


def _median_ms(steps: list, cfg) -> list:
    """Timings (see common.Timing) of each step function; calls alternate between them so that
    load from other processes affects every library alike."""
    return interleaved(steps, repeat=cfg["steps"], number=1, warmup=cfg["warmup"])


def _sx_step(model, x, y):
    opt, loss_fn = SxAdamW(model.parameters()), nn.CrossEntropyLoss()

    def step():
        logits = model(x)
        loss = loss_fn(logits.reshape((-1, logits.shape[-1])), y)
        loss.backward()
        opt.step()

    return step


def _torch_step(torch, model, x, y):
    opt = torch.optim.AdamW(model.parameters(), lr=LR, betas=BETAS, eps=EPS, weight_decay=WD)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        logits = model(x)
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step


def _torch_gpt(torch, g):
    tnn = torch.nn

    class TorchGPT(tnn.Module):
        def __init__(self):
            super().__init__()
            self.tok_emb = tnn.Embedding(g["vocab"], g["d_model"])
            self.pos_emb = tnn.Embedding(g["seq"], g["d_model"])
            self.blocks = tnn.ModuleList(tnn.TransformerEncoderLayer(
                g["d_model"], g["heads"], 4 * g["d_model"], dropout=0.0, activation="gelu", batch_first=True,
                norm_first=True) for _ in range(g["layers"]))
            self.norm_f = tnn.LayerNorm(g["d_model"])
            self.register_buffer("mask", tnn.Transformer.generate_square_subsequent_mask(g["seq"]))

        def forward(self, ids):
            x = self.tok_emb(ids) + self.pos_emb(torch.arange(ids.shape[1]))
            for blk in self.blocks:
                x = blk(x, src_mask=self.mask, is_causal=True)
            return self.norm_f(x) @ self.tok_emb.weight.T

    return TorchGPT()


def _torch_models(torch):
    mlp = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 256), torch.nn.GELU(), torch.nn.Linear(256, 10))
    return mlp, _torch_gpt(torch, GPT)


def _data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 784)).astype(np.float32)
    y = rng.integers(0, 10, 64)
    ids = rng.integers(0, GPT["vocab"], (GPT["batch"], GPT["seq"] + 1))
    return x, y, ids[:, :-1].copy(), ids[:, 1:].reshape(-1).copy()


def _sx_gpt(g):
    return nn.Transformer(g["vocab"], g["d_model"], g["heads"], g["layers"], max_seq_len=g["seq"])


def _gpt_name(g) -> str:
    return f"gpt train step V{g['vocab']} d{g['d_model']} h{g['heads']} L{g['layers']} T{g['seq']} batch {g['batch']}"


def _compare(name, ours, theirs, torch, a, b, cfg) -> dict:
    steps = [_sx_step(ours, sx.Tensor(a), sx.Tensor(b))]
    if torch is not None:
        steps.append(_torch_step(torch, theirs, torch.from_numpy(a), torch.from_numpy(b)))
    res = _median_ms(steps, cfg)
    return timing_row(name, res[0], res[1] if torch is not None else None, "ms/step")


def scaling(torch, cfg=SCALING, widths=WIDTHS) -> list:
    """The GPT train step at each width of ``widths`` (depth, sequence and batch fixed)."""
    rows = []
    _, _, ids, targets = _data()
    for d in widths:
        g = dict(GPT, d_model=d, heads=max(4, d // 64))
        sx.manual_seed(0)
        r = _compare(_gpt_name(g).replace("gpt train step", "gpt width series"), _sx_gpt(g), _torch_gpt(torch, g) if torch is not None else None, torch,
                     ids, targets, cfg)
        r["d_model"] = d
        rows.append(r)
    return rows


def run(quick: bool = False) -> list:
    """Times one training step of each case in both libraries; rows name, sneppx, torch, ratio, unit."""
    cfg = QUICK if quick else FULL
    torch = try_torch()
    set_threads()
    x, y, ids, targets = _data()
    ours = {"mlp train step 784-256-10 batch 64": (MLP(), x, y), _gpt_name(GPT): (_sx_gpt(GPT), ids, targets)}
    theirs = dict(zip(ours, _torch_models(torch))) if torch is not None else {}
    rows = [_compare(name, model, theirs.get(name), torch, a, b, cfg) for name, (model, a, b) in ours.items()]
    return rows + scaling(torch, dict(SCALING, steps=4, warmup=1) if quick else SCALING)


def main(argv: list) -> None:
    """Prints the rows of :func:`run` as a table."""
    rows = run(quick="--quick" in argv)
    print(f"{'benchmark':45s} {'sneppx':>9s} {'torch':>9s} {'ratio':>7s}  unit")
    for r in rows:
        torch_s = "-" if r["torch"] is None else f"{r['torch']:.3f}"
        ratio_s = "-" if r["ratio"] is None else f"{r['ratio']:.2f}x"
        print(f"{r['name']:45s} {r['sneppx']:9.3f} {torch_s:>9s} {ratio_s:>7s}  {r['unit']}")


if __name__ == "__main__":
    main(sys.argv[1:])
