"""Core engine benchmarks: GEMM, elementwise throughput, per-op overhead, reductions."""

from __future__ import annotations

import numpy as np

import sneppx_core as sx

try:
    from .common import median_time, row, set_threads
except ImportError:  # run as a script
    from common import median_time, row, set_threads


def _torch():
    try:
        import torch

        return torch
    except ImportError:
        return None


def bench_gemm(torch, sizes):
    rows = []
    for n in sizes:
        a, b = sx.randn(n, n), sx.randn(n, n)
        flops = 2.0 * n**3
        s = flops / median_time(lambda: a @ b, repeat=5) / 1e9
        t = None
        if torch:
            ta, tb = torch.randn(n, n), torch.randn(n, n)
            t = flops / median_time(lambda: ta @ tb, repeat=5) / 1e9
        rows.append(row(f"gemm float32 n={n}", s, t, "GFLOP/s", higher_is_better=True))
    return rows


def bench_elementwise(torch, sizes):
    rows = []
    for n in sizes:
        a, b = sx.randn(n), sx.randn(n)
        ta, tb = (torch.from_numpy(a.numpy().copy()), torch.from_numpy(b.numpy().copy())) if torch else (None, None)
        cases = {
            "add": (lambda: a + b, lambda: ta + tb),
            "mul": (lambda: a * b, lambda: ta * tb),
            "exp": (lambda: a.exp(), lambda: ta.exp()),
            "tanh": (lambda: a.tanh(), lambda: ta.tanh()),
            "sigmoid": (lambda: a.sigmoid(), lambda: ta.sigmoid()),
        }
        for name, (fs, ft) in cases.items():
            s = n / median_time(fs) / 1e9
            t = n / median_time(ft) / 1e9 if torch else None
            rows.append(row(f"{name} n={n:.0e}", s, t, "Gelem/s", higher_is_better=True))
    return rows


def bench_overhead(torch):
    a, b = sx.randn(4), sx.randn(4)
    rows = []
    s = median_time(lambda: a + b, number=20000)
    t = None
    if torch:
        ta, tb = torch.randn(4), torch.randn(4)
        t = median_time(lambda: ta + tb, number=20000)
    rows.append(row("a + b, shape (4,)", s * 1e6, t * 1e6 if t else None, "us"))

    def chain(lib, x):
        y = x
        for i in range(25):
            y = (y * 1.01 + 0.5).tanh() - 0.1
        y.sum().backward()

    x = sx.randn(8, requires_grad=True)
    s = median_time(lambda: chain(sx, x), repeat=7) / 100
    t = None
    if torch:
        tx = torch.randn(8, requires_grad=True)
        t = median_time(lambda: chain(torch, tx), repeat=7) / 100
    rows.append(row("100 tiny ops fwd+bwd, per op", s * 1e6, t * 1e6 if t else None, "us"))
    return rows


def bench_reduce(torch):
    rows = []
    a = sx.randn(1024, 1024)
    ta = torch.from_numpy(a.numpy().copy()) if torch else None
    for name, fs, ft in [("sum", lambda: a.sum(-1), lambda: ta.sum(-1)),
                         ("mean", lambda: a.mean(-1), lambda: ta.mean(-1)),
                         ("max", lambda: a.amax(-1), lambda: ta.amax(-1))]:
        n = a.numel()
        s = n / median_time(fs) / 1e9
        t = n / median_time(ft) / 1e9 if torch else None
        rows.append(row(f"{name} last dim (1024, 1024)", s, t, "Gelem/s", higher_is_better=True))
    return rows


def run(quick: bool = False) -> list[dict]:
    """Runs the core benchmarks; returns rows (see common.row)."""
    set_threads(2)
    torch = _torch()
    sizes = [256, 512] if quick else [256, 512, 1024, 2048]
    rows = bench_gemm(torch, sizes)
    rows += bench_elementwise(torch, [1_000_000] if quick else [1_000_000, 10_000_000])
    rows += bench_overhead(torch)
    rows += bench_reduce(torch)
    return rows


if __name__ == "__main__":
    for r in run():
        print(r)
