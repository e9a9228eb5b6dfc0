"""Op-level sweep: every op of sneppx-core's op table at three sizes, SneppX against PyTorch.

The op table (``packages/sneppx-core/tests/optable.py``) gives each op one function
``fn(m, *inputs)`` that runs on ``sneppx_core`` and on ``torch`` alike, and cases made of input
descriptions (shapes, value domains, index ranges). This sweep takes each op's first case in
float32 (or the op's first dtype when it has no float32), scales every dimension of it by a
whole factor (dimensions of size 1 stay 1; index ranges that match a dimension scale with it) until the largest input or the
output holds about 2**10, 2**16 or 2**20 elements (small, medium, large), and times the forward
call in both libraries, interleaved (see ``common.interleaved``), like the perf mode of ggml's
test-backend-ops. Ops whose scaled case is invalid (fixed target shapes, for example) are listed
as skipped.

Rows are sorted by SneppX's speed relative to PyTorch, slowest first, so the ops behind PyTorch
come at the top. Run: ``python benchmarks/bench_ops.py [--filter NAME[,NAME]] [--sizes small,large]
[--dtype DTYPE] [--quick]`` (``--filter`` keeps ops whose name contains one of the strings; ``--dtype``
sweeps the ops that the op table runs in another dtype, such as int64 or bool, in that dtype).
"""

from __future__ import annotations

import argparse
import math
import pathlib
import sys

import numpy as np
import sneppx_core as sx

try:
    from .common import interleaved, set_threads, speed, timing_row, try_torch
except ImportError:  # run as a script
    from common import interleaved, set_threads, speed, timing_row, try_torch

TABLE = pathlib.Path(__file__).resolve().parent.parent / "packages" / "sneppx-core" / "tests"
SIZES = {"small": 2**10, "medium": 2**16, "large": 2**20}
FULL = {"repeat": 5, "min_time": 0.005}
QUICK = {"repeat": 3, "min_time": 0.002}


def op_table() -> list:
    """The op table's specs (imported from core's test folder)."""
    if str(TABLE) not in sys.path:
        sys.path.insert(0, str(TABLE))
    import optable

    return list(optable.OPS)


def _scaled(case, k: int):
    """The case with every dimension multiplied by ``k`` (and index ranges that equal a dimension);
    dimensions of size 1 stay 1, so broadcasting cases stay valid."""
    import optable

    dims = {d for arg in case if isinstance(arg, optable.X) for d in arg.shape}
    out = []
    for arg in case:
        shape = tuple(d if d == 1 else d * k for d in arg.shape)
        if isinstance(arg, optable.I):
            high = arg.high * k if arg.high in dims else arg.high
            out.append(optable.I(shape, high, arg.low, arg.perm_axis))
        elif isinstance(arg, optable.M):
            out.append(optable.M(shape))
        else:
            out.append(optable.X(shape, arg.domain, arg.grad))
    return tuple(out)


def _arrays(case, dtype: str, seed: int = 0) -> list:
    import optable

    rng = np.random.default_rng(seed)
    out = []
    for arg in case:
        a = optable.values(rng, arg, dtype)
        name = optable.arg_dtype(arg, dtype)
        out.append(np.asarray(a).astype("float32" if name == "bfloat16" else name))
    return out


def _inputs(arrays, dtype: str, torch):
    """SneppX and PyTorch tensors holding the same values."""
    ours = [sx.tensor(a, dtype=getattr(sx, str(a.dtype) if a.dtype != np.float32 else dtype)) for a in arrays]
    theirs = None
    if torch is not None:
        theirs = [torch.from_numpy(np.array(a, order="C")) for a in arrays]
        if dtype == "bfloat16":
            theirs = [t.to(torch.bfloat16) if t.is_floating_point() else t for t in theirs]
    return ours, theirs


def _numel(out) -> int:
    if isinstance(out, (tuple, list)):
        return sum(_numel(o) for o in out)
    return out.numel() if isinstance(out, sx.Tensor) else 1


def _footprint(spec, case, dtype: str) -> int:
    """Elements of the largest input or of the whole output, whichever is more."""
    arrays = _arrays(case, dtype)
    ours, _ = _inputs(arrays, dtype, None)
    return max([a.size for a in arrays] + [_numel(spec.fn(sx, *ours))])


def scale_factor(spec, case, dtype: str, target: int) -> int:
    """The whole factor that brings the case's footprint nearest ``target`` elements (from its growth
    between factors 1 and 2)."""
    f1, f2 = _footprint(spec, case, dtype), _footprint(spec, _scaled(case, 2), dtype)
    growth = max(1.0, math.log2(max(f2, 1) / max(f1, 1)))
    return max(1, round((target / max(f1, 1)) ** (1.0 / growth)))


def _shapes(case) -> str:
    return " ".join(str(tuple(arg.shape)).replace(",)", ")") for arg in case)


def bench_op(spec, size: str, torch, cfg, dtype: str | None = None) -> dict:
    """The row of one op at one size (raises when the scaled case is invalid), in ``dtype`` or by
    default float32 (the op's first dtype where it has no float32)."""
    dtype = dtype or ("float32" if "float32" in spec.dtypes else spec.dtypes[0])
    case = _scaled(spec.cases[0], scale_factor(spec, spec.cases[0], dtype, SIZES[size]))
    ours, theirs = _inputs(_arrays(case, dtype), dtype, torch)
    tfn = spec.torch_fn or spec.fn
    fns = [lambda: spec.fn(sx, *ours)]
    if torch is not None:
        fns.append(lambda: tfn(torch, *theirs))
    res = interleaved(fns, repeat=cfg["repeat"], min_time=cfg["min_time"])
    label = f"{spec.name} {size} {_shapes(case)}" + ("" if dtype == "float32" else f" {dtype}")
    r = timing_row(label, res[0], res[1] if torch is not None else None, "us")
    r.update(op=spec.name, size=size)
    return r


def run(quick: bool = False, names=None, sizes=None, dtype: str | None = None) -> list:
    """Rows of every op (whose name contains one of ``names``, if given) at every size of ``sizes``,
    slowest relative to PyTorch first; ops whose scaled case fails come last with ``skipped``. With
    ``dtype``, only the ops that the op table runs in that dtype, in it."""
    set_threads()
    torch = try_torch()
    cfg = QUICK if quick else FULL
    rows, skipped = [], []
    for spec in op_table():
        if names and not any(n in spec.name for n in names):
            continue
        if dtype and dtype not in spec.dtypes:
            continue
        for size in sizes or SIZES:
            try:
                rows.append(bench_op(spec, size, torch, cfg, dtype))
            except Exception as exc:  # a fixed-shape op cannot grow; listed, not fatal
                skipped.append({"name": f"{spec.name} {size}", "sneppx": None, "torch": None, "ratio": None,
                                "unit": "us", "op": spec.name, "size": size,
                                "skipped": f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"})
                break  # the larger sizes would fail alike
    rows.sort(key=lambda r: (speed(r) is None, speed(r) or 0.0))
    return rows + skipped


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--filter", default="", help="comma-separated substrings of op names")
    p.add_argument("--sizes", default="", help="comma-separated subset of small,medium,large")
    p.add_argument("--dtype", default="", help="the ops the op table runs in this dtype (float64, int64, "
                   "bool, ...), in it; by default float32")
    p.add_argument("--quick", action="store_true")
    args = p.parse_args(argv)
    names = [n for n in args.filter.split(",") if n]
    sizes = [s for s in args.sizes.split(",") if s] or None
    rows = run(args.quick, names, sizes, args.dtype or None)
    print(f"{'op, size, input shapes':64s} {'sneppx us':>10s} {'torch us':>10s} {'speed':>7s} {'cpu':>6s}")
    for r in rows:
        if "skipped" in r:
            print(f"{r['name']:64s} skipped: {r['skipped']}")
            continue
        sp, cpu = speed(r), r.get("cpu_ratio")
        print(f"{r['name'][:64]:64s} {r['sneppx']:10.1f} {r['torch'] if r['torch'] is not None else float('nan'):10.1f} "
              f"{sp if sp else float('nan'):6.2f}x {1 / cpu if cpu else float('nan'):5.2f}x")


if __name__ == "__main__":
    main()
