"""Timing helpers shared by the benchmark modules.

Every comparison runs the SneppX and the PyTorch version in the same process, interleaved: each
round times a batch of calls of every function in turn (the order reversed on alternate rounds),
so that a change in machine load hits both sides alike. A row reports the median time per call,
the spread (interquartile range over the median) of each side, and the ratio of CPU time
(``time.process_time``: every thread of the process) beside the wall-time ratio; CPU time is
less disturbed by other processes competing for the cores.

Before each batch the runner sleeps ``SETTLE`` seconds, so that the worker threads of the library
timed just before have gone to sleep: PyTorch's OpenMP threads poll for new work for a few
milliseconds after each op, and SneppX's pool for a fraction of one. Without the pause each library
is timed while the other's idle threads still spin on the two cores, which can slow a small GEMM
fifty-fold; with it each side is timed as a program that uses only that library would see it.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

THREADS = 2
SETTLE = 0.01  # seconds of sleep before each timed batch of an interleaved comparison


def set_threads(n: int = THREADS):
    """Puts SneppX and PyTorch (when installed) on ``n`` threads."""
    import sneppx_core as sx

    sx.set_num_threads(n)
    try:
        import torch

        torch.set_num_threads(n)
    except ImportError:
        pass


def try_torch():
    """The ``torch`` module, or None when it is not installed."""
    try:
        import torch

        return torch
    except ImportError:
        return None


@dataclass
class Timing:
    """Seconds per call: the median wall time, its relative spread and the median CPU time."""

    seconds: float
    spread: float
    cpu: float


def spread(values: list) -> float:
    """Interquartile range of ``values`` over their median (0 for fewer than two values)."""
    if len(values) < 2:
        return 0.0
    q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    med = statistics.median(values)
    return (q3 - q1) / med if med > 0 else 0.0


def _calibrate(fn, min_time: float) -> int:
    """Calls per batch so that one batch of ``fn`` takes at least ``min_time`` seconds."""
    number = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        if time.perf_counter() - t0 >= min_time or number >= 1 << 20:
            return number
        number *= 4


def interleaved(fns: list, repeat: int = 7, number: int | None = None, min_time: float = 0.01,
                warmup: int = 1) -> list:
    """Times every function of ``fns`` in alternation; returns one :class:`Timing` per function.

    ``warmup`` calls of each come first. Each of the ``repeat`` rounds then times a batch of
    ``number`` calls of every function (by default as many as take ``min_time`` seconds, found
    per function), in turn, the order reversed on odd rounds, each batch after a pause of
    ``SETTLE`` seconds when there is more than one function.
    """
    for _ in range(warmup):
        for fn in fns:
            fn()
    numbers = [number or _calibrate(fn, min_time) for fn in fns]
    wall, cpu = [[] for _ in fns], [[] for _ in fns]
    order = list(range(len(fns)))
    for r in range(repeat):
        for i in (order if r % 2 == 0 else order[::-1]):
            fn, n = fns[i], numbers[i]
            if len(fns) > 1:
                time.sleep(SETTLE)
            c0, t0 = time.process_time(), time.perf_counter()
            for _ in range(n):
                fn()
            t1, c1 = time.perf_counter(), time.process_time()
            wall[i].append((t1 - t0) / n)
            cpu[i].append((c1 - c0) / n)
    return [Timing(statistics.median(w), spread(w), statistics.median(c)) for w, c in zip(wall, cpu)]


def median_time(fn, repeat: int = 7, number: int | None = None, min_time: float = 0.02) -> float:
    """Median seconds per call of ``fn`` alone (for measurements without a second library)."""
    return interleaved([fn], repeat, number, min_time)[0].seconds


_SCALE = {"s": 1.0, "ms": 1e3, "us": 1e6}  # by the unit before any "/" ("ms/step")


def compare(name: str, fs, ft=None, unit: str = "ms", work: float | None = None, **timing) -> dict:
    """Times ``fs`` (SneppX) and ``ft`` (PyTorch, or None) interleaved and returns their row.

    The values are time per call in ``unit`` (``s``, ``ms`` or ``us``; lower is better), or, when
    ``work`` is given, ``work`` per second in ``unit`` (a throughput such as GFLOP/s; higher is
    better). ``timing`` goes to :func:`interleaved`.
    """
    res = interleaved([fs] if ft is None else [fs, ft], **timing)
    return timing_row(name, res[0], res[1] if ft is not None else None, unit, work)


def timing_row(name: str, s: Timing, t: Timing | None, unit: str = "ms", work: float | None = None) -> dict:
    """The row of two timings (see :func:`compare` for ``unit`` and ``work``)."""
    value = (lambda x: work / x.seconds) if work is not None else (lambda x: x.seconds * _SCALE[unit.split("/")[0]])
    r = row(name, value(s), value(t) if t is not None else None, unit, higher_is_better=work is not None)
    r["spread"] = s.spread
    if t is not None:
        r["torch_spread"] = t.spread
        r["cpu_ratio"] = s.cpu / t.cpu if t.cpu > 0 else None
    return r


def case_rows(ours: dict, theirs: dict | None, cfg: dict, unit: str = "us") -> list:
    """Rows of named cases: ``ours[name]`` and ``theirs[name]`` (when PyTorch is installed) run interleaved,
    ``cfg`` giving ``repeat`` and ``warmup``."""
    rows = []
    for name, fn in ours.items():
        fns = [fn] + ([theirs[name]] if theirs else [])
        res = interleaved(fns, repeat=cfg["repeat"], warmup=cfg["warmup"])
        rows.append(timing_row(name, res[0], res[1] if theirs else None, unit))
    return rows


def print_rows(rows: list, width: int = 62) -> None:
    """Prints rows as a plain table: name, SneppX, PyTorch, ratio, unit."""
    for r in rows:
        torch_s = "-" if r["torch"] is None else f"{r['torch']:.1f}"
        ratio_s = "-" if r["ratio"] is None else f"{r['ratio']:.2f}x"
        print(f"{r['name']:{width}s} {r['sneppx']:9.1f} {torch_s:>9s} {ratio_s:>7s}  {r['unit']}")


def row(name: str, sneppx: float, torch: float | None, unit: str, higher_is_better: bool = False) -> dict:
    """A result row; ``ratio`` is SneppX over PyTorch in the row's unit.

    Rows from :func:`compare` also carry ``spread``/``torch_spread`` (relative interquartile
    ranges) and ``cpu_ratio`` (SneppX CPU time over PyTorch CPU time per call).
    """
    ratio = None if not torch else sneppx / torch
    return {"name": name, "sneppx": sneppx, "torch": torch, "ratio": ratio, "unit": unit,
            "higher_is_better": higher_is_better}


def speed(r: dict) -> float | None:
    """SneppX's speed relative to the row's other side (above 1: SneppX is faster), from wall time."""
    if not r.get("ratio"):
        return None
    return r["ratio"] if r.get("higher_is_better") else 1.0 / r["ratio"]
