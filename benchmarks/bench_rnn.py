"""Training-step speed of recurrent language models in ``sneppx_nn`` against ``torch.nn``.

Cases (one step = embedding, 2-layer LSTM or GRU, linear decoder, cross-entropy, backward, the
SGD optimizer's step): hidden 256, sequence 35, batch 20, vocabulary 2000 (the word-level language
model of PyTorch's examples). Both libraries run in this process with 2 threads; rows report the
median milliseconds per step and ``ratio = sneppx / torch`` (target <= 1.0).

Run: ``python benchmarks/bench_rnn.py [--quick]``.
"""

from __future__ import annotations

import sys

import numpy as np
import sneppx_core as sx
import sneppx_nn as nn
import sneppx_optim as optim
from bench_nn import FULL, QUICK, _median_ms
from common import set_threads, timing_row, try_torch

LM = {"vocab": 2000, "hidden": 256, "layers": 2, "seq": 35, "batch": 20}
LR = 0.1


def _sx_model(cell):
    class SxLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(LM["vocab"], LM["hidden"])
            self.rnn = getattr(nn, cell)(LM["hidden"], LM["hidden"], LM["layers"])
            self.dec = nn.Linear(LM["hidden"], LM["vocab"])

        def forward(self, ids):
            out, _ = self.rnn(self.emb(ids))
            return self.dec(out)

    return SxLM()


def _torch_model(torch, cell):
    tnn = torch.nn

    class TorchLM(tnn.Module):
        def __init__(self):
            super().__init__()
            self.emb = tnn.Embedding(LM["vocab"], LM["hidden"])
            self.rnn = getattr(tnn, cell)(LM["hidden"], LM["hidden"], LM["layers"])
            self.dec = tnn.Linear(LM["hidden"], LM["vocab"])

        def forward(self, ids):
            out, _ = self.rnn(self.emb(ids))
            return self.dec(out)

    return TorchLM()


def _sx_step(model, ids, targets):
    opt, loss_fn = optim.SGD(model.parameters(), lr=LR), nn.CrossEntropyLoss()

    def step():
        loss = loss_fn(model(ids).reshape((-1, LM["vocab"])), targets)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step


def _torch_step(torch, model, ids, targets):
    opt, loss_fn = torch.optim.SGD(model.parameters(), lr=LR), torch.nn.CrossEntropyLoss()

    def step():
        loss = loss_fn(model(ids).reshape(-1, LM["vocab"]), targets)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step


def run(quick: bool = False) -> list:
    """Times one training step of each case in both libraries; rows name, sneppx, torch, ratio, unit."""
    cfg = QUICK if quick else FULL
    torch = try_torch()
    set_threads()
    rng = np.random.default_rng(0)
    ids = rng.integers(0, LM["vocab"], (LM["seq"] + 1, LM["batch"]))
    x, y = ids[:-1].copy(), ids[1:].reshape(-1).copy()
    rows = []
    for cell in ("LSTM", "GRU"):
        steps = [_sx_step(_sx_model(cell), sx.Tensor(x), sx.Tensor(y))]
        if torch is not None:
            steps.append(_torch_step(torch, _torch_model(torch, cell), torch.from_numpy(x), torch.from_numpy(y)))
        res = _median_ms(steps, cfg)
        rows.append(timing_row(f"{cell.lower()} LM step V2000 H256 L2 T35 batch 20", res[0],
                               res[1] if torch is not None else None, "ms/step"))
    return rows


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
