"""Data-loading speed: ``sneppx_data.DataLoader`` against ``torch.utils.data.DataLoader``.

Cases (batch size 64, shuffled, one full epoch per timed run, worker start-up included):

* ``tensor``: a TensorDataset of 60,000 x 784 float32 inputs and int64 labels;
* ``python50us``: a map-style dataset whose ``__getitem__`` spends 50 us in Python and returns
  ``(784 float32 NumPy row, int label)``; the same object is given to both loaders;

each with ``num_workers`` 0 and 2. The two loaders are timed alternately, run after run, and
rows report batches per second (median of the runs) and ``ratio = sneppx / torch`` (higher is
better; 1.0 means as fast as PyTorch).

Run: ``python benchmarks/bench_data.py [--quick]``.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import sneppx_core as sx

import sneppx_data as sd

try:
    from .common import compare
except ImportError:  # run as a script
    from common import compare

FULL = {"rows": 60000, "slow_items": 64 * 150, "repeats": 7}
QUICK = {"rows": 60000, "slow_items": 64 * 40, "repeats": 3}
BATCH, DIM, COST_S = 64, 784, 50e-6


class SlowDataset:
    """Map-style dataset whose items cost ``COST_S`` seconds of Python each."""

    def __init__(self, x: np.ndarray, y: np.ndarray) -> None:
        self.x, self.y = x, y

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i):
        end = time.perf_counter() + COST_S
        while time.perf_counter() < end:
            pass
        return self.x[i], int(self.y[i])


def _epoch(make_loader):
    """One full epoch of a freshly built loader."""
    def run():
        for _ in make_loader():
            pass
    return run


def _loaders(cfg: dict, torch):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((cfg["rows"], DIM)).astype(np.float32)
    y = rng.integers(0, 10, cfg["rows"]).astype(np.int64)
    sx_tensor = sd.TensorDataset(sx.Tensor.from_numpy(x), sx.Tensor.from_numpy(y))
    slow = SlowDataset(x[: cfg["slow_items"]], y[: cfg["slow_items"]])
    cases = {"tensor": (sx_tensor, None), "python50us": (slow, slow)}
    if torch is not None:
        cases["tensor"] = (sx_tensor, torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y)))
    return cases


def run(quick: bool = False) -> list:
    """Time both loaders on every case; returns rows with name, sneppx, torch, ratio, unit."""
    cfg = QUICK if quick else FULL
    try:
        import torch
    except ImportError:
        torch = None
    rows = []
    for name, (ours, theirs) in _loaders(cfg, torch).items():
        for workers in (0, 2):
            def make_ours(workers=workers, ours=ours):
                return sd.DataLoader(ours, batch_size=BATCH, shuffle=True, num_workers=workers)

            def make_theirs(workers=workers, theirs=theirs):
                return torch.utils.data.DataLoader(theirs, batch_size=BATCH, shuffle=True,
                                                   num_workers=workers)

            batches = -(-len(ours) // BATCH)
            r = compare(f"{name} batch={BATCH} num_workers={workers}", _epoch(make_ours),
                        _epoch(make_theirs) if torch else None, unit="batches/s", work=batches,
                        repeat=cfg["repeats"], number=1)
            if workers:  # the workers' CPU time is not the process's own
                r["cpu_ratio"] = None
            rows.append(r)
    return rows


def main(argv: list) -> None:
    """Print the rows of :func:`run` as a table."""
    rows = run(quick="--quick" in argv)
    print(f"{'benchmark':40s} {'sneppx':>10s} {'torch':>10s} {'ratio':>7s}  unit")
    for r in rows:
        torch_s = "-" if r["torch"] is None else f"{r['torch']:.0f}"
        ratio_s = "-" if r["ratio"] is None else f"{r['ratio']:.2f}x"
        print(f"{r['name']:40s} {r['sneppx']:10.0f} {torch_s:>10s} {ratio_s:>7s}  {r['unit']}")


if __name__ == "__main__":
    main(sys.argv[1:])
