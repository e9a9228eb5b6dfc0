"""Distributed speed: SneppX collectives and DDP on 2 MPI ranks.

Rows (``run()`` starts ``mpiexec -n 2`` on this file and collects rank 0's measurements):

* ``all_reduce 1e6 f32`` / ``all_reduce 1e7 f32``: ``sneppx_distributed.all_reduce`` on a Tensor
  against raw mpi4py ``Allreduce(IN_PLACE)`` on a NumPy buffer of the same size; algorithm
  bandwidth in GB/s (bytes / time, median of several runs); ``ratio = sneppx / reference``.
  A third row repeats 1e7 with a tensor that wraps NumPy-allocated memory: NumPy asks for
  transparent huge pages on large arrays, which speeds MPI's shared-memory copies, so this row
  isolates the cost of the SneppX layer from the memory the tensor lives in.
* ``ddp gradient all-reduce 1e7 f32``: DDP's whole reduction path for 1e7 float32 gradients
  (4 parameters, default 25 MB buckets): the gradient hooks' work (scaling into the bucket), the
  bucket all-reduces and the wait, timed from the hooks of a finished backward to the averaged
  ``.grad``, against raw mpi4py ``Allreduce`` of the same bytes; GB/s. Variants: gradients
  accumulated in their bucket views (no copy; only the scaling pass), the same with the progress
  thread (which keeps a started bucket moving while the next one is scaled), fresh gradients (after
  ``zero_grad()``: copied and scaled in one pass), and ``gradient_as_bucket_view=False`` (copies
  in and out).
* ``ddp step``: one training step (forward, backward with bucketed all-reduce, SGD) with DDP on
  2 ranks against the same step of the plain model on 1 rank (the other rank waits), the two
  interleaved; ms per step; speed 1.0 means DDP costs nothing. Models: a 784-1024-1024-10 MLP
  (batch 64 per rank) and the small GPT of ``bench_nn`` (batch 8 per rank).
* ``ddp overlap``: share of the gradient all-reduce time hidden behind backward:
  ``1 - exposed_wait / standalone_all_reduce_time`` (``sneppx`` column; no reference).

The MLP's DDP rows come twice: progress by polling at each gradient hook, and with the helper
progress thread (``progress_thread=True``).

Every rank runs one core-pool thread so that 2 ranks fit on 2 cores.
Run: ``python benchmarks/bench_distributed.py [--quick]``.
"""

from __future__ import annotations

import itertools
import json
import statistics
import subprocess
import sys
import time

import numpy as np
from common import spread

FULL = {"repeats": 15, "steps": 30, "sizes": (10**6, 10**7)}
QUICK = {"repeats": 5, "steps": 8, "sizes": (10**6, 10**7)}
DDP_FLOATS, DDP_PARAMS = 10**7, 4
MARK = "BENCH_JSON "


def _median_time(fn, repeats: int, barrier) -> float:
    times = []
    for _ in range(repeats):
        barrier()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _bench_all_reduce(cfg, dist, sx, MPI) -> list:
    rows, comm = [], MPI.COMM_WORLD
    cases = [(n, "", lambda n: sx.ones(n)) for n in cfg["sizes"]]
    cases.append((cfg["sizes"][-1], " (tensor over NumPy memory)", lambda n: sx.Tensor.from_numpy(np.ones(n, np.float32))))
    for n, label, make in cases:
        t, a = make(n), np.ones(n, np.float32)
        def mine(t=t):
            dist.all_reduce(t)

        def raw(a=a):
            comm.Allreduce(MPI.IN_PLACE, a, MPI.SUM)

        mine(), raw()
        ts, tr = [], []
        for _ in range(cfg["repeats"]):  # interleaved, so both see the same machine state
            ts.append(_median_time(mine, 1, comm.Barrier))
            tr.append(_median_time(raw, 1, comm.Barrier))
        rows.append(_bandwidth_row(f"all_reduce 1e{len(str(n)) - 1} f32{label}", n * 4, ts, tr))
    return rows


def _bandwidth_row(name: str, nbytes: int, ts: list, tr: list) -> dict:
    gb = nbytes / 1e9
    s, r = gb / statistics.median(ts), gb / statistics.median(tr)
    return {"name": name, "sneppx": s, "reference": r, "ratio": s / r, "unit": "GB/s", "higher_is_better": True,
            "spread": spread(ts), "reference_spread": spread(tr)}


class _Flat:
    """``count`` parameters of ``numel`` float32 values each, with a module's interface."""

    def __init__(self, sx, count: int, numel: int) -> None:
        self.ps = [sx.ones(numel, requires_grad=True) for _ in range(count)]

    def named_parameters(self):
        return [(f"p{i}", p) for i, p in enumerate(self.ps)]

    def parameters(self):
        return list(self.ps)

    def __call__(self, x):
        return sum((p * x).sum() for p in self.ps)


def _bench_ddp_all_reduce(cfg, dist, sx, MPI) -> list:
    """DDP's reduction path on 1e7 floats against raw Allreduce: hooks of a finished backward (each
    parameter's ``mark_ready``) to the averaged gradients."""
    comm, rows = MPI.COMM_WORLD, []
    numel = DDP_FLOATS // DDP_PARAMS
    raw_buf = np.ones(DDP_FLOATS, np.float32)

    def raw():
        comm.Allreduce(MPI.IN_PLACE, raw_buf, MPI.SUM)

    for label, as_view, fresh, thread in [("grads in bucket views", True, False, False),
                                          ("grads in bucket views, progress thread", True, False, True),
                                          ("fresh grads, bucket views", True, True, False),
                                          ("fresh grads, copies in and out", False, True, False)]:
        model = dist.DistributedDataParallel(_Flat(sx, DDP_PARAMS, numel), progress_thread=thread,
                                             gradient_as_bucket_view=as_view)
        model(sx.ones(1)).backward()  # gradients become bucket views (as_view) or separate tensors
        red, ps = model.reducer, model.module.ps
        spare = [sx.ones(numel) for _ in ps]

        def mine():
            if fresh:
                for p, g in zip(ps, spare):
                    p.grad = g
            red.prepare()
            for i in reversed(range(len(ps))):
                red.mark_ready(i)

        mine(), raw()
        ts, tr = [], []
        for _ in range(cfg["repeats"]):
            ts.append(_median_time(mine, 1, comm.Barrier))
            tr.append(_median_time(raw, 1, comm.Barrier))
        rows.append(_bandwidth_row(f"ddp gradient all-reduce 1e7 f32 ({label}, {len(red.buckets)} buckets)",
                                   DDP_FLOATS * 4, ts, tr))
    return rows


class _MLP:
    def __init__(self, sx, sizes=(784, 1024, 1024, 10), seed=0):
        rng = np.random.default_rng(seed)
        self.ps = []
        for i, (a, b) in enumerate(itertools.pairwise(sizes)):
            self.ps.append((f"{i}.weight", sx.Tensor((rng.standard_normal((a, b)) * a ** -0.5).astype(np.float32),
                                                     requires_grad=True)))
            self.ps.append((f"{i}.bias", sx.zeros(b, requires_grad=True)))

    def named_parameters(self):
        return list(self.ps)

    def parameters(self):
        return [p for _, p in self.ps]

    def __call__(self, x):
        import sneppx_core.functional as F

        ps = self.parameters()
        for i in range(0, len(ps), 2):
            x = x @ ps[i] + ps[i + 1]
            if i + 2 < len(ps):
                x = F.gelu(x)
        return x


def _step(model, sx, x, y):
    import sneppx_core.functional as F

    loss = -(F.log_softmax(model(x), dim=-1) * y).sum() / x.shape[0]
    loss.backward()
    with sx.no_grad():
        for p in model.parameters():
            p -= 0.01 * p.grad
            p.grad = None


def _ddp_vs_single(ddp_step, plain_step, steps: int, comm) -> tuple:
    """Seconds of ``ddp_step`` (every rank) and ``plain_step`` (rank 0 alone, the others waiting),
    alternating after a warm-up of each."""
    rank = comm.Get_rank()
    ddp_step()
    if rank == 0:
        plain_step()
    td, tp = [], []
    for _ in range(steps):
        td.append(_median_time(ddp_step, 1, comm.Barrier))
        comm.Barrier()
        if rank == 0:
            t0 = time.perf_counter()
            plain_step()
            tp.append(time.perf_counter() - t0)
        comm.Barrier()
    return td, tp


def _step_row(name: str, td: list, tp: list) -> dict:
    d, p = statistics.median(td) * 1e3, statistics.median(tp) * 1e3
    return {"name": name, "sneppx": d, "reference": p, "ratio": d / p, "unit": "ms", "spread": spread(td),
            "reference_spread": spread(tp)}


def _bench_ddp(cfg, dist, sx, MPI, progress_thread: bool) -> list:
    comm, rank = MPI.COMM_WORLD, MPI.COMM_WORLD.Get_rank()
    rng = np.random.default_rng(rank)
    x = sx.Tensor(rng.standard_normal((64, 784)).astype(np.float32))
    y = sx.Tensor(np.eye(10, dtype=np.float32)[rng.integers(0, 10, 64)])
    model = dist.DistributedDataParallel(_MLP(sx), bucket_cap_mb=1, progress_thread=progress_thread)
    plain, exposed = _MLP(sx), []

    def ddp_step():
        _step(model, sx, x, y)
        exposed.append(model.last_sync_stats["exposed_wait_s"])

    td, tp = _ddp_vs_single(ddp_step, lambda: _step(plain, sx, x, y), cfg["steps"], comm)
    sizes = [b.size for b in model.reducer.buckets]
    bufs = [sx.ones(n) for n in sizes]
    alone = _median_time(lambda: [dist.all_reduce(b) for b in bufs], cfg["steps"], comm.Barrier)
    if rank != 0:
        return []
    share = max(0.0, min(1.0, 1 - statistics.median(exposed) / alone))
    tag = "progress thread" if progress_thread else "polling"
    return [_step_row(f"ddp step 784-1024-1024-10 b64/rank, {tag}", td, tp),
            {"name": f"ddp overlap, {tag} ({len(sizes)} buckets, all-reduce {alone * 1e3:.1f} ms alone)",
             "sneppx": share, "reference": None, "ratio": None, "unit": "share"}]


def _bench_ddp_gpt(cfg, dist, sx, MPI) -> list:
    """The small GPT of bench_nn: a DDP step on 2 ranks against a plain step on 1 rank."""
    import sneppx_nn as nn
    from bench_nn import GPT, _sx_gpt

    comm, rank = MPI.COMM_WORLD, MPI.COMM_WORLD.Get_rank()
    rng = np.random.default_rng(rank)
    ids = rng.integers(0, GPT["vocab"], (GPT["batch"], GPT["seq"] + 1))
    x, y = sx.Tensor(ids[:, :-1].copy()), sx.Tensor(ids[:, 1:].reshape(-1).copy())
    loss_fn = nn.CrossEntropyLoss()
    sx.manual_seed(0)
    model = dist.DistributedDataParallel(_sx_gpt(GPT))
    sx.manual_seed(0)
    plain = _sx_gpt(GPT)

    def step(m):
        logits = m(x)
        loss_fn(logits.reshape((-1, logits.shape[-1])), y).backward()
        with sx.no_grad():
            for p in m.parameters():
                p -= 1e-3 * p.grad
                p.grad = None

    td, tp = _ddp_vs_single(lambda: step(model), lambda: step(plain), cfg["steps"], comm)
    if rank != 0:
        return []
    g = GPT
    return [_step_row(f"ddp step gpt V{g['vocab']} d{g['d_model']} h{g['heads']} L{g['layers']} T{g['seq']} "
                      f"b{g['batch']}/rank, 2 ranks vs 1", td, tp)]


def _worker(quick: bool) -> None:
    import sneppx_core as sx
    import sneppx_distributed as dist
    from mpi4py import MPI

    sx.set_num_threads(1)
    cfg = QUICK if quick else FULL
    dist.init_process_group(timeout=120)
    rows = _bench_all_reduce(cfg, dist, sx, MPI) + _bench_ddp_all_reduce(cfg, dist, sx, MPI)
    for progress_thread in (False, True):
        rows += _bench_ddp(cfg, dist, sx, MPI, progress_thread)
    rows += _bench_ddp_gpt(cfg, dist, sx, MPI)
    dist.destroy_process_group()
    if MPI.COMM_WORLD.Get_rank() == 0:
        print(MARK + json.dumps(rows), flush=True)


def run(quick: bool = False) -> list[dict]:
    """Run the benchmark in 2 MPI ranks and return rank 0's rows."""
    from sneppx_distributed import find_mpiexec

    cmd = [find_mpiexec(), "-n", "2", sys.executable, __file__, "--worker"] + (["--quick"] if quick else [])
    out = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=900)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith(MARK)]
    if out.returncode != 0 or not lines:
        raise RuntimeError(f"bench_distributed: the MPI run failed (status {out.returncode}):\n{out.stderr[-4000:]}")
    return json.loads(lines[-1][len(MARK):])


def _fmt(v) -> str:
    return "-" if v is None else f"{v:.3f}"


def main() -> None:
    if "--worker" in sys.argv:
        _worker("--quick" in sys.argv)
        return
    rows = run(quick="--quick" in sys.argv)
    print(f"{'case':58s} {'sneppx':>9s} {'reference':>10s} {'ratio':>7s}  unit")
    for r in rows:
        print(f"{r['name']:58s} {_fmt(r['sneppx']):>9s} {_fmt(r['reference']):>10s} {_fmt(r['ratio']):>7s}  {r['unit']}")


if __name__ == "__main__":
    main()
