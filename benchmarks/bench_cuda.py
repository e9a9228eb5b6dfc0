"""CUDA rows: SneppX on the GPU against PyTorch on the same GPU (when torch has CUDA).

Cases: elementwise add and a full sum of float32 vectors, a square float32 matrix product
(cuBLAS), softmax over the rows of a square matrix, and a host-to-device copy. Each call is
followed by a device synchronisation, so rows time finished work. Without a visible GPU the module
returns no rows. Rows report median milliseconds and ``ratio = sneppx / torch`` (lower is better).

Run: ``python benchmarks/run.py --only cuda [--quick]``.
"""

from __future__ import annotations

import statistics

import numpy as np
import sneppx_core as sx
from common import median_time, row


def _torch_cuda():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def _pair(name, make_sx, make_torch, torch, rounds=3):
    """Median ms of a SneppX and a PyTorch callable, measured in alternation."""
    s_times, t_times = [], []
    fs = make_sx()
    ft = make_torch() if torch else None
    for _ in range(rounds):
        s_times.append(median_time(lambda: (fs(), sx.cuda.synchronize()), repeat=5) * 1e3)
        if ft:
            t_times.append(median_time(lambda: (ft(), torch.cuda.synchronize()), repeat=5) * 1e3)
    return row(name, statistics.median(s_times), statistics.median(t_times) if t_times else None, "ms")


def run(quick: bool = False) -> list[dict]:
    if not sx.cuda.is_available():
        print("no CUDA device is visible: no CUDA rows")
        return []
    torch = _torch_cuda()
    n = 10**7 if quick else 10**8
    m = 1024 if quick else 4096
    rng = np.random.default_rng(0)
    a = rng.standard_normal(n, dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    A = rng.standard_normal((m, m), dtype=np.float32)
    B = rng.standard_normal((m, m), dtype=np.float32)
    host = rng.standard_normal(16 * 2**20, dtype=np.float32)  # 64 MiB
    rows = []

    def on_sx(*arrs):
        return [sx.tensor(x, device="cuda") for x in arrs]

    def on_torch(*arrs):
        return [torch.from_numpy(x).cuda() for x in arrs]

    def case(name, fn_sx, fn_torch, arrs):
        xs = on_sx(*arrs)
        ts = on_torch(*arrs) if torch else None
        rows.append(_pair(name, lambda: (lambda: fn_sx(*xs)), lambda: (lambda: fn_torch(*ts)), torch))

    case(f"add {n:.0e} float32", lambda x, y: x + y, lambda x, y: x + y, (a, b))
    case(f"sum {n:.0e} float32", lambda x: x.sum(), lambda x: x.sum(), (a,))
    case(f"matmul {m}x{m} float32", lambda x, y: x @ y, lambda x, y: x @ y, (A, B))
    case(f"softmax ({m}, {m}) float32", lambda x: x.softmax(-1), lambda x: x.softmax(-1), (A,))
    hs = sx.tensor(host)
    ht = torch.from_numpy(host) if torch else None
    rows.append(_pair("host to device 64 MiB", lambda: (lambda: hs.to("cuda")),
                      lambda: (lambda: ht.to("cuda")), torch))
    return rows
