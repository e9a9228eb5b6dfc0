"""Runs every benchmark module side by side with PyTorch and writes the table.

Usage: python benchmarks/run.py [--quick] [--only core,nn] [--no-write]
Prints a table of medians and ratios, writes benchmarks/results/latest.json and rewrites
docs/benchmarks.md (with the machine it ran on) unless --no-write is given.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import os
import pathlib
import platform
import sys
import traceback

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
MODULES = ["core", "functional", "nn", "conv", "rnn", "optim", "data", "generate", "distributed", "cuda"]


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import sneppx_core

    try:
        import torch

        tv = torch.__version__
    except ImportError:
        tv = "not installed"
    return (f"{cpu}, {os.cpu_count()} logical cores, Python {platform.python_version()}, "
            f"sneppx-core {sneppx_core.__version__}, torch {tv}; both libraries at 2 threads")


def fmt(v) -> str:
    if v is None:
        return "-"
    return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"


def verdict(r) -> str:
    if r.get("ratio") is None:
        return "-"
    # Express every ratio as "SneppX speed relative to PyTorch" (>1 means SneppX is faster).
    speed = r["ratio"] if r.get("higher_is_better") else 1.0 / r["ratio"]
    return f"{speed:.2f}x"


def table(rows) -> str:
    out = ["| benchmark | SneppX | PyTorch | unit | SneppX speed vs PyTorch |", "| --- | --- | --- | --- | --- |"]
    for r in rows:
        out.append(f"| {r['name']} | {fmt(r['sneppx'])} | {fmt(r.get('torch', r.get('reference')))} | {r['unit']} | "
                   f"{verdict(r)} |")
    return "\n".join(out)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--only", default="")
    p.add_argument("--no-write", action="store_true")
    args = p.parse_args(argv)
    wanted = [m for m in MODULES if not args.only or m in args.only.split(",")]
    sections = {}
    for name in wanted:
        path = HERE / f"bench_{name}.py"
        if not path.exists():
            continue
        print(f"== {name}", flush=True)
        try:
            mod = importlib.import_module(f"bench_{name}")
            rows = mod.run(quick=args.quick)
        except Exception:  # one broken module must not hide the others
            traceback.print_exc()
            continue
        if not rows:  # nothing to measure here (the CUDA rows without a GPU)
            continue
        sections[name] = rows
        print(table(rows), flush=True)
    if args.no_write:
        return
    (HERE / "results").mkdir(exist_ok=True)
    latest = HERE / "results" / "latest.json"
    if args.only and latest.exists():  # a partial run keeps the other sections of the last one
        sections = {**json.loads(latest.read_text()).get("sections", {}), **sections}
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    (HERE / "results" / "latest.json").write_text(json.dumps({"machine": machine(), "date": stamp,
                                                              "sections": sections}, indent=1))
    docs = HERE.parent / "docs" / "benchmarks.md"
    docs.parent.mkdir(exist_ok=True)
    body = [f"# Benchmarks\n\nMeasured {stamp} on: {machine()}.\n",
            "Medians of several runs, produced by `python benchmarks/run.py`; the last column is SneppX's speed "
            "relative to PyTorch 2.13 CPU (above 1.00x SneppX is faster). This page is rewritten by the runner.\n"]
    for name, rows in sections.items():
        body.append(f"## {name}\n\n{table(rows)}\n")
    docs.write_text("\n".join(body))


if __name__ == "__main__":
    main()
