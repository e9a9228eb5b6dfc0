"""Fused-kernel speed: ``sneppx_core.functional`` against ``torch.nn.functional`` (CPU, 2 threads each).

Cases (forward + backward unless noted; times are medians of several runs, the two libraries
alternating so that machine load hits both alike):

* softmax / log_softmax over (4096, 1024) along the last dim;
* layer_norm (affine) and rms_norm (weighted) over (8192, 768);
* cross_entropy over (4096, 32000) logits with class-index targets;
* scaled_dot_product_attention, B=8, H=8, D=64, causal, T=256 and T=1024;
* one AdamW step over 10 million float32 parameters in 100 tensors (sneppx: ``F.adam_step`` with
  ``decoupled_weight_decay=True``; torch: ``torch.optim.AdamW(foreach=True).step()``);
* exact gelu over (64, 6, 192) (the MLP activation of a small GPT), ``x ** 3.0`` over (64, 6, 192)
  (forward, and forward + backward) and ``x.transpose(1, 2).contiguous()`` of (8, 256, 8, 64) (the head
  split of attention; forward only): these take tens of microseconds, so each timed batch repeats the
  call for at least 10 ms;
* peak memory of attention forward + backward at T=1024: each library runs in a fresh subprocess that
  warms up on a tiny problem, resets the kernel's peak-RSS counter (``/proc/self/clear_refs``), and
  reports peak RSS (``VmHWM``) minus the RSS just before one forward + backward, i.e. the memory the
  call touched beyond its inputs (falls back to the growth of ``ru_maxrss`` where the reset is not
  allowed, which under-reports when an earlier peak was higher).

Rows: ``{name, sneppx, torch, ratio, unit}`` with ``ratio = sneppx / torch`` (lower is better), in ms.
Run: ``python benchmarks/bench_functional.py [--quick]``.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

try:
    from .common import interleaved, timing_row
except ImportError:  # run as a script
    from common import interleaved, timing_row

THREADS = 2


def _both(shape, sx, torch, rng, requires_grad=True):
    a = rng.standard_normal(shape, dtype=np.float32)
    return sx.tensor(a, requires_grad=requires_grad), torch.tensor(a, requires_grad=requires_grad)


def _fwd_bwd(f, x_list, g):
    def run():
        for x in x_list:
            x.grad = None
        y = f()
        y.backward(g) if g is not None else y.backward()
    return run


def _cases(sx, F, torch, TF, quick):
    """(name, sneppx callable, torch callable, repeats) for every timed case."""
    rng = np.random.default_rng(0)
    reps = 3 if quick else 7
    out = []
    for name, f, tf in (("softmax", F.softmax, TF.softmax), ("log_softmax", F.log_softmax, TF.log_softmax)):
        xs, xt = _both((4096, 1024), sx, torch, rng)
        gs, gt = _both((4096, 1024), sx, torch, rng, False)
        out.append((f"{name} (4096, 1024)", _fwd_bwd(lambda f=f, xs=xs: f(xs, -1), [xs], gs),
                    _fwd_bwd(lambda tf=tf, xt=xt: tf(xt, -1), [xt], gt), reps))
    xs, xt = _both((8192, 768), sx, torch, rng)
    ws, wt = _both((768,), sx, torch, rng)
    bs, bt = _both((768,), sx, torch, rng)
    gs, gt = _both((8192, 768), sx, torch, rng, False)
    out.append(("layer_norm (8192, 768)", _fwd_bwd(lambda: F.layer_norm(xs, (768,), ws, bs), [xs, ws, bs], gs),
                _fwd_bwd(lambda: TF.layer_norm(xt, (768,), wt, bt), [xt, wt, bt], gt), reps))
    out.append(("rms_norm (8192, 768)", _fwd_bwd(lambda: F.rms_norm(xs, (768,), ws), [xs, ws], gs),
                _fwd_bwd(lambda: TF.rms_norm(xt, (768,), wt), [xt, wt], gt), reps))
    ls, lt = _both((4096, 32000), sx, torch, rng)
    y = rng.integers(0, 32000, 4096)
    ys, yt = sx.tensor(y), torch.tensor(y)
    out.append(("cross_entropy (4096, 32000)", _fwd_bwd(lambda: F.cross_entropy(ls, ys), [ls], None),
                _fwd_bwd(lambda: TF.cross_entropy(lt, yt), [lt], None), 3 if quick else 5))
    for T in (256, 1024):
        qkv = [_both((8, 8, T, 64), sx, torch, rng) for _ in range(3)]
        gs, gt = _both((8, 8, T, 64), sx, torch, rng, False)
        s_in, t_in = [p[0] for p in qkv], [p[1] for p in qkv]
        out.append((f"sdpa causal B8 H8 T{T} D64",
                    _fwd_bwd(lambda s_in=s_in: F.scaled_dot_product_attention(*s_in, is_causal=True), s_in, gs),
                    _fwd_bwd(lambda t_in=t_in: TF.scaled_dot_product_attention(*t_in, is_causal=True), t_in, gt),
                    3 if quick else 5))
    out.append(("adamw step 10M params / 100 tensors", *_adamw(sx, F, torch, rng), reps))
    for eq, shapes in (("ij,kj->ik", ((256, 1024), (256, 1024))), ("bhid,bhjd->bhij", ((8, 8, 128, 64),) * 2),
                       ("bn,anm,bm->ba", ((64, 128), (32, 128, 128), (64, 128)))):
        pairs = [_both(sh, sx, torch, rng, False) for sh in shapes]
        s_in, t_in = [p[0] for p in pairs], [p[1] for p in pairs]
        out.append((f"einsum {eq} {' '.join(str(sh) for sh in shapes)}",
                    lambda eq=eq, s_in=s_in: sx.einsum(eq, *s_in), lambda eq=eq, t_in=t_in: torch.einsum(eq, *t_in),
                    reps))
    return out


def _small_cases(sx, F, torch, TF, quick):
    """(name, sneppx callable, torch callable, repeats) for the cases timed in batches of calls."""
    rng = np.random.default_rng(1)
    reps = 5 if quick else 15
    xs, xt = _both((64, 6, 192), sx, torch, rng)
    gs, gt = _both((64, 6, 192), sx, torch, rng, False)
    x0s, x0t = xs.detach(), xt.detach()
    hs, ht = _both((8, 256, 8, 64), sx, torch, rng, False)
    (bs, bt), (cs, ct) = _both((32, 32, 32), sx, torch, rng, False), _both((32, 32, 32), sx, torch, rng, False)
    (ws, wt), (vs, vt) = _both((8, 8, 64, 64), sx, torch, rng, False), _both((8, 8, 64, 32), sx, torch, rng, False)
    ls, lt = _both((64, 128), sx, torch, rng)
    y = rng.integers(0, 128, 64)
    ys, yt = sx.tensor(y), torch.tensor(y)
    return [
        ("cross_entropy (64, 128)", _fwd_bwd(lambda: F.cross_entropy(ls, ys), [ls], None),
         _fwd_bwd(lambda: TF.cross_entropy(lt, yt), [lt], None), reps),
        ("bmm (32, 32, 32) (32, 32, 32) forward", lambda: sx.bmm(bs, cs), lambda: torch.bmm(bt, ct), reps),
        ("weights @ values (8, 8, 64, 64) (8, 8, 64, 32) forward", lambda: ws @ vs, lambda: wt @ vt, reps),
        ("gelu (64, 6, 192)", _fwd_bwd(lambda: F.gelu(xs), [xs], gs), _fwd_bwd(lambda: TF.gelu(xt), [xt], gt), reps),
        ("pow(x, 3.0) (64, 6, 192) forward", lambda: x0s ** 3.0, lambda: x0t ** 3.0, reps),
        ("pow(x, 3.0) (64, 6, 192)", _fwd_bwd(lambda: xs ** 3.0, [xs], gs), _fwd_bwd(lambda: xt ** 3.0, [xt], gt),
         reps),
        ("transpose(1, 2).contiguous() (8, 256, 8, 64)", lambda: hs.transpose(1, 2).contiguous(),
         lambda: ht.transpose(1, 2).contiguous(), reps),
    ]


def _adamw(sx, F, torch, rng):
    n, count = 100_000, 100
    data = [rng.standard_normal(n, dtype=np.float32) for _ in range(count)]
    grads = [rng.standard_normal(n, dtype=np.float32) * 1e-2 for _ in range(count)]
    ps = [sx.tensor(d) for d in data]
    gs = [sx.tensor(g) for g in grads]
    ms = [sx.zeros(n) for _ in range(count)]
    vs = [sx.zeros(n) for _ in range(count)]
    step = [0]

    def sneppx_step():
        step[0] += 1
        F.adam_step(ps, gs, ms, vs, None, step=step[0], lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8,
                    weight_decay=1e-2, decoupled_weight_decay=True)

    pt = [torch.tensor(d, requires_grad=True) for d in data]
    for p, g in zip(pt, grads):
        p.grad = torch.tensor(g)
    opt = torch.optim.AdamW(pt, lr=1e-3, weight_decay=1e-2, foreach=True)
    return sneppx_step, opt.step


_MEM_CHILD = r"""
import resource, sys, numpy as np
lib = sys.argv[1]


def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) / 1024.0  # kB -> MiB
    return None


def reset_peak():  # Linux: writing 5 to clear_refs resets VmHWM to the current RSS
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


rng = np.random.default_rng(0)
if lib == "torch":
    import torch, torch.nn.functional as F
    torch.set_num_threads(2)
    mk = lambda s, rg=True: torch.tensor(rng.standard_normal(s, dtype=np.float32), requires_grad=rg)
else:
    import sneppx_core as sx, sneppx_core.functional as F
    sx.set_num_threads(2)
    mk = lambda s, rg=True: sx.tensor(rng.standard_normal(s, dtype=np.float32), requires_grad=rg)


def run(T):
    q, k, v = (mk((8, 8, T, 64)) for _ in range(3))
    g = mk((8, 8, T, 64), False)
    exact = reset_peak()
    before = status("VmRSS") if exact else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    F.scaled_dot_product_attention(q, k, v, is_causal=True).backward(g)
    after = status("VmHWM") if exact else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return after - before


run(64)
print(run(1024))
"""


def _peak_growth(lib):
    """Peak RSS growth in MiB of one attention forward + backward (T=1024) in a fresh process."""
    r = subprocess.run([sys.executable, "-c", _MEM_CHILD, lib], capture_output=True, text=True, check=True)
    return float(r.stdout.strip().splitlines()[-1])


def run(quick=False):
    """Runs every case; returns rows {name, sneppx, torch, ratio, unit}."""
    import sneppx_core as sx
    import sneppx_core.functional as F
    import torch
    import torch.nn.functional as TF

    sx.set_num_threads(THREADS)
    torch.set_num_threads(THREADS)
    rows = []
    for name, fs, ft, reps in _cases(sx, F, torch, TF, quick):
        s, t = interleaved([fs, ft], repeat=reps, min_time=0.01, warmup=2)  # batches of >= 10 ms, as below
        rows.append(timing_row(name, s, t, "ms"))
    for name, fs, ft, reps in _small_cases(sx, F, torch, TF, quick):
        s, t = interleaved([fs, ft], repeat=reps, min_time=0.01, warmup=3)
        rows.append(timing_row(name, s, t, "ms"))
    ms, mt = _peak_growth("sneppx"), _peak_growth("torch")
    rows.append({"name": "sdpa T1024 peak RSS growth", "sneppx": ms, "torch": mt, "ratio": ms / max(mt, 1e-9),
                 "unit": "MiB"})
    return rows


def main(argv):
    rows = run(quick="--quick" in argv)
    if "--json" in argv:
        print(json.dumps(rows, indent=1))
        return
    print(f"{'case':40s} {'sneppx':>10s} {'torch':>10s} {'ratio':>7s}")
    for r in rows:
        print(f"{r['name']:40s} {r['sneppx']:10.4f} {r['torch']:10.4f} {r['ratio']:7.2f}  {r['unit']}")


if __name__ == "__main__":
    main(sys.argv[1:])
