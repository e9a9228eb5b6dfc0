"""Timing helpers shared by the benchmark modules: medians of repeated runs, both libraries at 2 threads."""

from __future__ import annotations

import statistics
import time


def set_threads(n: int = 2):
    """Puts SneppX and PyTorch (when installed) on ``n`` threads."""
    import sneppx_core as sx

    sx.set_num_threads(n)
    try:
        import torch

        torch.set_num_threads(n)
    except ImportError:
        pass


def median_time(fn, repeat: int = 7, number: int | None = None, min_time: float = 0.02) -> float:
    """Median seconds per call of ``fn`` over ``repeat`` timed batches of ``number`` calls."""
    fn()  # warm up
    if number is None:
        number, t = 1, 0.0
        while True:
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            t = time.perf_counter() - t0
            if t >= min_time or number >= 1 << 20:
                break
            number *= 4
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return statistics.median(times)


def row(name: str, sneppx: float, torch: float | None, unit: str, higher_is_better: bool = False) -> dict:
    """A result row; ``ratio`` is SneppX over PyTorch in the row's unit."""
    ratio = None if not torch else sneppx / torch
    return {"name": name, "sneppx": sneppx, "torch": torch, "ratio": ratio, "unit": unit,
            "higher_is_better": higher_is_better}
