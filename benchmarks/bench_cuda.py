"""CUDA rows: SneppX on the GPU against PyTorch on the same GPU (when torch has CUDA).

Cases: elementwise add and a full sum of float32 vectors, square float32 and bfloat16 matrix
products (cuBLAS), softmax over the rows of a square matrix, causal attention forward and backward
(B8 H16 T2048 D64), a small GPT's training step (forward, backward, AdamW), and host-to-device
copies from pageable and pinned memory. Each call is
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
    xs, ts = [t.to(sx.bfloat16) for t in on_sx(A, B)], [t.bfloat16() for t in on_torch(A, B)] if torch else None
    rows.append(_pair(f"matmul {m}x{m} bfloat16", lambda: (lambda: xs[0] @ xs[1]),
                      lambda: (lambda: ts[0] @ ts[1]), torch))
    rows.append(_attention(torch, 512 if quick else 2048))
    rows.append(_gpt_step(torch))
    hs = sx.tensor(host)
    ht = torch.from_numpy(host) if torch else None
    rows.append(_pair("host to device 64 MiB", lambda: (lambda: hs.to("cuda")),
                      lambda: (lambda: ht.to("cuda")), torch))
    hp, tp = hs.pin_memory(), ht.pin_memory() if torch else None
    rows.append(_pair("host to device 64 MiB pinned, non_blocking", lambda: (lambda: hp.to("cuda", non_blocking=True)),
                      lambda: (lambda: tp.to("cuda", non_blocking=True)), torch))
    return rows


def _attention(torch, T: int) -> dict:
    """Causal attention forward and backward, B8 H16 T D64, float32."""
    q = np.random.default_rng(1).standard_normal((3, 8, 16, T, 64), dtype=np.float32)

    def make(lib, F, dev):
        qkv = [lib.tensor(x, device=dev, requires_grad=True) if lib is sx else
               lib.from_numpy(x).to(dev).requires_grad_() for x in q]

        def step():
            F.scaled_dot_product_attention(*qkv, is_causal=True).sum().backward()
        return step

    import sneppx_core.functional as sF
    tF = __import__("torch.nn.functional", fromlist=["x"]) if torch else None
    return _pair(f"attention causal fwd+bwd B8 H16 T{T} D64", lambda: make(sx, sF, "cuda"),
                 (lambda: make(torch, tF, "cuda")) if torch else None, torch)


def _gpt_step(torch) -> dict:
    """One training step of a small GPT (V256 d256 h8 L4 T128 b16): forward, backward, AdamW."""
    from sneppx_nn import Transformer
    from sneppx_optim import AdamW
    import sneppx_nn.functional as F

    ids = np.random.default_rng(2).integers(0, 256, (16, 129))

    def make_sx():
        model = Transformer(256, 256, 8, 4, max_seq_len=128).to("cuda")
        opt = AdamW(model.parameters(), lr=1e-3)
        batch = sx.tensor(ids, device="cuda")

        def step():
            loss = F.cross_entropy(model(batch[:, :-1]).reshape(-1, 256), batch[:, 1:].reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
        return step

    def make_torch():
        nn = torch.nn
        layer = nn.TransformerEncoderLayer(256, 8, 1024, 0.0, activation="gelu", batch_first=True, norm_first=True)
        body = nn.TransformerEncoder(layer, 4).cuda()
        emb, pos, head = nn.Embedding(256, 256).cuda(), nn.Embedding(128, 256).cuda(), nn.Linear(256, 256).cuda()
        params = [*body.parameters(), *emb.parameters(), *pos.parameters(), *head.parameters()]
        opt = torch.optim.AdamW(params, lr=1e-3)
        batch = torch.from_numpy(ids).cuda()
        mask = nn.Transformer.generate_square_subsequent_mask(128, device="cuda")

        def step():
            x = emb(batch[:, :-1]) + pos.weight[:128]
            logits = head(body(x, mask=mask, is_causal=True))
            loss = nn.functional.cross_entropy(logits.reshape(-1, 256), batch[:, 1:].reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
        return step

    return _pair("gpt train step V256 d256 h8 L4 T128 b16", make_sx, make_torch if torch else None, torch)
