"""Core engine benchmarks: GEMM, elementwise throughput, per-op overhead, reductions."""

from __future__ import annotations


import sneppx_core as sx

try:
    from .common import compare, set_threads, try_torch
except ImportError:  # run as a script
    from common import compare, set_threads, try_torch


def bench_gemm(torch, sizes):
    rows = []
    for n in sizes:
        a, b = sx.randn(n, n), sx.randn(n, n)
        ta, tb = (torch.from_numpy(a.numpy().copy()), torch.from_numpy(b.numpy().copy())) if torch else (None, None)
        rows.append(compare(f"gemm float32 n={n}", lambda: a @ b, (lambda: ta @ tb) if torch else None,
                            unit="GFLOP/s", work=2.0 * n**3 / 1e9, repeat=5))
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
            rows.append(compare(f"{name} n={n:.0e}", fs, ft if torch else None, unit="Gelem/s", work=n / 1e9))
    return rows


def _chain(x):
    y = x
    for _ in range(25):
        y = (y * 1.01 + 0.5).tanh() - 0.1
    y.sum().backward()


def bench_overhead(torch):
    a, b = sx.randn(4), sx.randn(4)
    ta, tb = (torch.randn(4), torch.randn(4)) if torch else (None, None)
    rows = [compare("a + b, shape (4,)", lambda: a + b, (lambda: ta + tb) if torch else None, unit="us",
                    number=20000)]
    x = sx.randn(8, requires_grad=True)
    tx = torch.randn(8, requires_grad=True) if torch else None
    r = compare("100 tiny ops fwd+bwd, per op", lambda: _chain(x), (lambda: _chain(tx)) if torch else None, unit="us")
    r["sneppx"] /= 100
    if torch:
        r["torch"] /= 100
    rows.append(r)
    return rows


def bench_reduce(torch):
    rows = []
    a = sx.randn(1024, 1024)
    ta = torch.from_numpy(a.numpy().copy()) if torch else None
    for name, fs, ft in [("sum", lambda: a.sum(-1), lambda: ta.sum(-1)),
                         ("mean", lambda: a.mean(-1), lambda: ta.mean(-1)),
                         ("max", lambda: a.amax(-1), lambda: ta.amax(-1))]:
        rows.append(compare(f"{name} last dim (1024, 1024)", fs, ft if torch else None, unit="Gelem/s",
                            work=a.numel() / 1e9))
    return rows


def run(quick: bool = False) -> list[dict]:
    """Runs the core benchmarks; returns rows (see common.row)."""
    set_threads()
    torch = try_torch()
    sizes = [256, 512] if quick else [256, 512, 1024, 2048]
    rows = bench_gemm(torch, sizes)
    rows += bench_elementwise(torch, [1_000_000] if quick else [1_000_000, 10_000_000])
    rows += bench_overhead(torch)
    rows += bench_reduce(torch)
    return rows


if __name__ == "__main__":
    for r in run():
        print(r)
