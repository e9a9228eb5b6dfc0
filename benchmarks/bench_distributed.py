"""Distributed speed: SneppX collectives and DDP on 2 MPI ranks.

Rows (``run()`` starts ``mpiexec -n 2`` on this file and collects rank 0's measurements):

* ``all_reduce 1e6 f32`` / ``all_reduce 1e7 f32``: ``sneppx_distributed.all_reduce`` on a Tensor
  against raw mpi4py ``Allreduce(IN_PLACE)`` on a NumPy buffer of the same size; algorithm
  bandwidth in GB/s (bytes / time, median of several runs); ``ratio = sneppx / reference``.
  A third row repeats 1e7 with a tensor that wraps NumPy-allocated memory: NumPy asks for
  transparent huge pages on large arrays, which speeds MPI's shared-memory copies, so this row
  isolates the cost of the SneppX layer from the memory the tensor lives in.
* ``ddp step``: one training step (forward, backward with bucketed all-reduce, SGD) of a
  784-1024-1024-10 MLP with DDP on 2 ranks (batch 64 per rank) against the same step of the
  plain model on 1 rank; ms per step; ``ratio = reference / sneppx`` (1.0: DDP costs nothing).
* ``ddp overlap``: share of the gradient all-reduce time hidden behind backward:
  ``1 - exposed_wait / standalone_all_reduce_time`` (``sneppx`` column; no reference).

The DDP rows come twice: progress by polling at each gradient hook, and with the helper
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

FULL = {"repeats": 15, "steps": 30, "sizes": (10**6, 10**7)}
QUICK = {"repeats": 5, "steps": 8, "sizes": (10**6, 10**7)}
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
        gb = n * 4 / 1e9
        s, r = gb / statistics.median(ts), gb / statistics.median(tr)
        rows.append({"name": f"all_reduce 1e{len(str(n)) - 1} f32{label}", "sneppx": s, "reference": r, "ratio": s / r,
                     "unit": "GB/s"})
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


def _bench_ddp(cfg, dist, sx, MPI, progress_thread: bool) -> list:
    comm, rank = MPI.COMM_WORLD, MPI.COMM_WORLD.Get_rank()
    rng = np.random.default_rng(rank)
    x = sx.Tensor(rng.standard_normal((64, 784)).astype(np.float32))
    y = sx.Tensor(np.eye(10, dtype=np.float32)[rng.integers(0, 10, 64)])
    model = dist.DistributedDataParallel(_MLP(sx), bucket_cap_mb=1, progress_thread=progress_thread)
    _step(model, sx, x, y)
    times, exposed = [], []
    for _ in range(cfg["steps"]):
        times.append(_median_time(lambda: _step(model, sx, x, y), 1, comm.Barrier))
        exposed.append(model.last_sync_stats["exposed_wait_s"])
    sizes = [b.size for b in model.reducer.buckets]
    bufs = [sx.ones(n) for n in sizes]
    alone = _median_time(lambda: [dist.all_reduce(b) for b in bufs], cfg["steps"], comm.Barrier)
    plain, single = _MLP(sx), []
    _step(plain, sx, x, y)
    for _ in range(cfg["steps"]):
        if rank == 0:
            t0 = time.perf_counter()
            _step(plain, sx, x, y)
            single.append(time.perf_counter() - t0)
    comm.Barrier()
    if rank != 0:
        return []
    d, s = statistics.median(times) * 1e3, statistics.median(single) * 1e3
    share = max(0.0, min(1.0, 1 - statistics.median(exposed) / alone))
    tag = "progress thread" if progress_thread else "polling"
    return [{"name": f"ddp step 784-1024-1024-10 b64/rank, {tag}", "sneppx": d, "reference": s, "ratio": s / d,
             "unit": "ms"},
            {"name": f"ddp overlap, {tag} ({len(sizes)} buckets, all-reduce {alone * 1e3:.1f} ms alone)",
             "sneppx": share, "reference": None, "ratio": None, "unit": "share"}]


def _worker(quick: bool) -> None:
    import sneppx_core as sx
    import sneppx_distributed as dist
    from mpi4py import MPI

    sx.set_num_threads(1)
    cfg = QUICK if quick else FULL
    dist.init_process_group(timeout=120)
    rows = _bench_all_reduce(cfg, dist, sx, MPI)
    for progress_thread in (False, True):
        rows += _bench_ddp(cfg, dist, sx, MPI, progress_thread)
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
