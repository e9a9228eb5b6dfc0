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


def bench_broadcast(torch):
    """Elementwise ops over many short rows: a broadcast operand or a permuted view, so the kernel sees
    rows of the last dim rather than one flat run (a per-row cost shows here, not in the flat rows above)."""
    rows = []
    x = sx.randn(64, 128, 96)
    cases = [("x + bias (128, 1), x (64, 128, 96)", (128, 1)), ("x + row (1, 96), x (64, 128, 96)", (1, 96))]
    for name, shape in cases:
        b = sx.randn(*shape)
        tx, tb = (torch.from_numpy(x.numpy().copy()), torch.from_numpy(b.numpy().copy())) if torch else (None, None)
        rows.append(compare(name, lambda: x + b, (lambda: tx + tb) if torch else None, unit="us"))
    s, c = sx.randn(49152, 16), sx.randn(49152, 1)
    ts, tc = (torch.from_numpy(s.numpy().copy()), torch.from_numpy(c.numpy().copy())) if torch else (None, None)
    rows.append(compare("x * col (49152, 1), x (49152, 16)", lambda: s * c, (lambda: ts * tc) if torch else None,
                        unit="us"))
    tx = torch.from_numpy(x.numpy().copy()) if torch else None
    rows.append(compare("x.permute(1, 0, 2) + 1, x (64, 128, 96)", lambda: x.permute(1, 0, 2) + 1.0,
                        (lambda: tx.permute(1, 0, 2) + 1.0) if torch else None, unit="us"))
    rows.append(compare("x.permute(1, 0, 2).relu(), x (64, 128, 96)", lambda: x.permute(1, 0, 2).relu(),
                        (lambda: tx.permute(1, 0, 2).relu()) if torch else None, unit="us"))
    return rows


def bench_dtypes(torch):
    """Elementwise ops of the other float dtypes at 1e6 elements: float16 / bfloat16 (which compute in
    float, widened and narrowed on the fly) and float64 (exp, which has its own vectorised formula)."""
    rows = []
    n = 1_000_000
    for dt in ("float16", "bfloat16"):
        a, b = sx.randn(n).to(getattr(sx, dt)), sx.randn(n).to(getattr(sx, dt))
        ta, tb = ((torch.from_numpy(a.float().numpy()).to(getattr(torch, dt)),
                   torch.from_numpy(b.float().numpy()).to(getattr(torch, dt))) if torch else (None, None))
        cases = {"a + b": (lambda: a + b, lambda: ta + tb), "a * 2.0": (lambda: a * 2.0, lambda: ta * 2.0),
                 "relu": (lambda: a.relu(), lambda: ta.relu()), "neg": (lambda: -a, lambda: -ta),
                 "exp": (lambda: a.exp(), lambda: ta.exp())}
        for name, (fs, ft) in cases.items():
            rows.append(compare(f"{name} {dt} n=1e+06", fs, ft if torch else None, unit="Gelem/s", work=n / 1e9))
    x = sx.randn(n).to(sx.float64)
    tx = torch.from_numpy(x.numpy().copy()) if torch else None
    rows.append(compare("exp float64 n=1e+06", lambda: x.exp(), (lambda: tx.exp()) if torch else None,
                        unit="Gelem/s", work=n / 1e9))
    return rows


def bench_masks(torch):
    """Boolean masks and integer data at 1e6 elements: conversions to other dtypes (a mask to float for
    a mean or a product, uint8 pixels to float32), logical_not, all, and a float tensor times a mask."""
    rows = []
    n = 1_000_000
    x = sx.randn(n)
    m = x > 0
    pix = (x.abs() * 60).to(sx.uint8)
    tx, tm, tpix = ((torch.from_numpy(x.numpy().copy()), torch.from_numpy(m.numpy().copy()),
                     torch.from_numpy(pix.numpy().copy())) if torch else (None, None, None))
    cases = {"mask.float()": (lambda: m.float(), lambda: tm.float()),
             "mask.long()": (lambda: m.long(), lambda: tm.long()),
             "~mask": (lambda: ~m, lambda: ~tm),
             "mask.all()": (lambda: m.all(), lambda: tm.all()),
             "x * mask": (lambda: x * m, lambda: tx * tm),
             "uint8 pixels .float()": (lambda: pix.float(), lambda: tpix.float())}
    for name, (fs, ft) in cases.items():
        rows.append(compare(f"{name} n=1e+06", fs, ft if torch else None, unit="us"))
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


def bench_inplace(torch):
    """In-place methods that optimizers and training loops call on whole tensors, on (1024, 1024)."""
    import numpy as np

    rng = np.random.default_rng(0)
    arrays = {k: rng.standard_normal((1024, 1024)).astype(np.float32) for k in "xyz"}
    idx = rng.integers(0, 1024, (1024, 512))
    src = rng.standard_normal((1024, 512)).astype(np.float32)

    def operands(lib):
        t = (lambda a: torch.from_numpy(a.copy())) if lib == "torch" else sx.from_numpy
        return {**{k: t(v) for k, v in arrays.items()}, "i": t(idx), "s": t(src), "z": t(np.abs(arrays["z"]) + 0.5)}

    cases = {
        "zero_()": lambda o: o["x"].zero_(),
        "clamp_(-0.5, 0.5)": lambda o: o["x"].clamp_(-0.5, 0.5),
        "lerp_(y, 0.1)": lambda o: o["x"].lerp_(o["y"], 0.1),
        "addcmul_(y, y, value=0.01)": lambda o: o["x"].addcmul_(o["y"], o["y"], value=0.01),
        "addcdiv_(y, z, value=-1e-3)": lambda o: o["x"].addcdiv_(o["y"], o["z"], value=-1e-3),
        "scatter_add_(1, index (1024, 512), src)": lambda o: o["x"].scatter_add_(1, o["i"], o["s"]),
    }
    ops, tops = operands("sx"), operands("torch") if torch else None
    rows = []
    for name, f in cases.items():
        rows.append(compare(f"x.{name}, x (1024, 1024)", lambda: f(ops), (lambda: f(tops)) if torch else None,
                            unit="us"))
    return rows


def run(quick: bool = False) -> list[dict]:
    """Runs the core benchmarks; returns rows (see common.row)."""
    set_threads()
    torch = try_torch()
    sizes = [256, 512] if quick else [256, 512, 1024, 2048]
    rows = bench_gemm(torch, sizes)
    rows += bench_elementwise(torch, [1_000_000] if quick else [1_000_000, 10_000_000])
    rows += bench_broadcast(torch)
    rows += bench_dtypes(torch)
    rows += bench_masks(torch)
    rows += bench_overhead(torch)
    rows += bench_reduce(torch)
    rows += bench_inplace(torch)
    return rows


if __name__ == "__main__":
    for r in run():
        print(r)
