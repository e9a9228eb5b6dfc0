"""Runs the benchmark groups side by side with PyTorch and writes the results page.

Usage: python benchmarks/run.py [--quick] [--only core,ops] [--no-write]

Before the run the 1-minute load average is sampled; above 0.75 per core (1.5 on two cores) the runner waits up
to a minute for it to fall. During each group it records how much CPU other processes took (from
/proc/stat, minus this process and its children), since the run's own threads count in the load
average. If the machine was still loaded when the run
started, or other processes took more than half a core during a group, the page opens with a
banner saying so, with the numbers seen. The load checks cannot see a host slowed from outside this
machine (another guest on the same cores, a lower clock), so a fixed CPU-bound probe is also timed
before the first group and after each one; when its slowest time is more than a quarter above its
fastest, the banner says that the host's speed changed during the run. The runner prints a table of
medians and ratios per group, writes benchmarks/results/latest.json and rewrites docs/benchmarks.md (machine, versions,
load) with charts drawn by matplotlib when it is installed, unless --no-write is given. A run
with --only keeps the other groups of the last run.

Each group runs in a fresh Python process: what a group leaves behind (worker threads, loaded models,
a fragmented heap, imported modules) slowed the small ops of later groups down by up to half in a
single process, more for one library than the other.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import os
import pathlib
import platform
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import THREADS, speed  # noqa: E402

MODULES = ["core", "functional", "nn", "conv", "rnn", "optim", "distributions", "sparse", "complex", "io", "data",
           "generate", "distributed", "cuda", "ops"]
DOCS = HERE.parent / "docs"
CHARTS = {"speed": "assets/benchmarks-speed.png", "width": "assets/benchmarks-gpt-width.png",
          "ops": "assets/benchmarks-ops.png"}
# The load limit scales with the cores: 1.5 on the two-core machines the page is measured on.
LOAD_LIMIT, LOAD_WAIT_S, FOREIGN_LIMIT = 0.75 * (os.cpu_count() or 2), 60.0, 0.5
PROBE_SPREAD = 1.25  # slowest / fastest probe time above which the page says the host's speed changed


def openblas_core() -> str:
    """The kernel set OpenBLAS (scipy-openblas32, sneppx-core's BLAS) picked for this CPU (or was told to by
    ``OPENBLAS_CORETYPE``)."""
    import ctypes

    import scipy_openblas32 as ob

    try:
        lib = ctypes.CDLL(os.path.join(ob.get_lib_dir(), ob.get_library(True)))
        lib.scipy_openblas_get_corename.restype = ctypes.c_char_p
        name = lib.scipy_openblas_get_corename().decode()
    except (OSError, AttributeError):
        return "unknown"
    forced = os.environ.get("OPENBLAS_CORETYPE")
    return f"{name} kernels as OPENBLAS_CORETYPE={forced} asks" if forced else f"{name} kernels"


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

        tv = f"{torch.__version__} ({torch.backends.cpu.get_cpu_capability()} kernels)"
    except ImportError:
        tv = "not installed"
    return (f"{cpu}, {os.cpu_count()} logical cores, Python {platform.python_version()}, "
            f"sneppx-core {sneppx_core.__version__} ({sneppx_core.backends.cpu.get_cpu_capability()} build, "
            f"OpenBLAS {openblas_core()}), "
            f"torch {tv}; both libraries at {THREADS} threads")


# ---------------------------------------------------------------- load
def wait_for_quiet(limit: float = LOAD_LIMIT, wait_s: float = LOAD_WAIT_S, step_s: float = 5.0) -> float:
    """The 1-minute load average, re-checked every ``step_s`` seconds for up to ``wait_s`` while above ``limit``."""
    load, waited = os.getloadavg()[0], 0.0
    while load > limit and waited < wait_s:
        if waited == 0:
            print(f"load average {load:.2f} > {limit}: waiting up to {wait_s:.0f} s for it to fall", flush=True)
        time.sleep(step_s)
        waited += step_s
        load = os.getloadavg()[0]
    return load


def host_probe() -> float:
    """Milliseconds of a fixed CPU-bound loop of Python, the best of five: the same on the same host at the
    same speed, whatever the load checks see."""
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        x = 0
        for i in range(200_000):
            x += i * i
        best = min(best, time.perf_counter() - t0)
    return best * 1e3


class ForeignCpu:
    """CPU time taken by other processes between :meth:`start` and :meth:`cores`, in cores.

    Busy time of the whole machine (``/proc/stat``) minus this process's and its reaped children's
    CPU time, over the wall time. None where ``/proc/stat`` cannot be read.
    """

    @staticmethod
    def _busy():
        try:
            with open("/proc/stat") as f:
                fields = [int(v) for v in f.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
        return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")

    @staticmethod
    def _own() -> float:
        t = os.times()
        return t.user + t.system + t.children_user + t.children_system

    def start(self) -> None:
        self.t0, self.busy0, self.own0 = time.perf_counter(), self._busy(), self._own()

    def cores(self):
        busy, wall = self._busy(), time.perf_counter() - self.t0
        if busy is None or self.busy0 is None or wall <= 0:
            return None
        return max(0.0, (busy - self.busy0 - (self._own() - self.own0)) / wall)


def loaded(meta: dict) -> bool:
    """True when a group was measured on a loaded machine (see the module docstring)."""
    return meta.get("load_before", 0) > LOAD_LIMIT or (meta.get("foreign_cores") or 0) > FOREIGN_LIMIT


def banner(sections: dict, metas: dict) -> str:
    """The warning that opens the page when any group was measured under load ("" otherwise)."""
    bad = {n: metas[n] for n in sections if n in metas and loaded(metas[n])}
    unknown = [n for n in sections if n not in metas]
    lines = []
    if bad:
        worst_load = max(m.get("load_before", 0) for m in bad.values())
        worst = max(bad, key=lambda n: bad[n].get("foreign_cores") or 0)
        lines.append(
            f"> **Measured under load** ({', '.join(bad)}). These groups ran on a busy machine: the 1-minute load "
            f"average was up to {worst_load:.2f} when their run started (the runner waits up to a minute for it to "
            f"fall below {LOAD_LIMIT}), and other processes took up to "
            f"{bad[worst].get('foreign_cores') or 0:.2f} cores during a group ({worst}). Wall-time ratios are "
            "unreliable under load, and so are CPU-time ratios when the load is heavy (threads that wait for a core "
            "spin and count as busy). Regenerate on a quiet machine before quoting.")
    probes = {n: metas[n]["probe_ms"] for n in sections if n in metas and metas[n].get("probe_ms")}
    if probes:
        fast = min(min(v) for v in probes.values())
        slow = max(probes, key=lambda n: max(probes[n]))
        if max(probes[slow]) > PROBE_SPREAD * fast:
            lines.append(
                f"> **The host's speed changed during the run.** A fixed CPU-bound loop took {fast:.1f} to "
                f"{max(probes[slow]):.1f} ms between groups (slowest around {slow}), with no load seen on this "
                "machine: the host was slowed from outside it. Both libraries ran slower while it lasted and "
                "ratios are noisier; regenerate before quoting a single row.")
    if unknown:
        lines.append(f"> No load was recorded for {', '.join(unknown)} (an older run); treat them as unchecked.")
    return "\n>\n".join(lines) + ("\n" if lines else "")


# ---------------------------------------------------------------- tables
def fmt(v) -> str:
    if v is None:
        return "-"
    return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"


def _pct(v) -> str:
    return "-" if v is None else f"{100 * v:.0f}%"


def _x(v) -> str:
    return "-" if not v else f"{v:.2f}x"


def table(rows) -> str:
    out = ["| benchmark | SneppX | PyTorch (or reference) | unit | spread SneppX / other | speed vs other (wall) "
           "| speed (CPU time) |", "| --- | --- | --- | --- | --- | --- | --- |"]
    skipped = []
    for r in rows:
        if "skipped" in r:
            skipped.append(f"- {r['name']}: {r['skipped']}")
            continue
        other = r.get("torch", r.get("reference"))
        spreads = f"{_pct(r.get('spread'))} / {_pct(r.get('torch_spread', r.get('reference_spread')))}"
        cpu = 1.0 / r["cpu_ratio"] if r.get("cpu_ratio") else None
        out.append(f"| {r['name']} | {fmt(r['sneppx'])} | {fmt(other)} | {r['unit']} | {spreads} | "
                   f"{_x(speed(r))} | {_x(cpu)} |")
    if skipped:
        out.append("\nNot measured (the op's case does not scale):\n\n" + "\n".join(skipped))
    return "\n".join(out)


# ---------------------------------------------------------------- charts
def charts(sections: dict) -> dict:
    """Draws the charts into docs/assets; returns {chart: relative path} of those drawn, or raises
    ImportError when matplotlib is missing."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    drawn = {}
    (DOCS / "assets").mkdir(parents=True, exist_ok=True)
    rows = [(f"{name}: {r['name']}", speed(r)) for name, rs in sections.items() if name != "ops"
            for r in rs if r.get("torch") and speed(r)]
    if rows:
        fig, ax = plt.subplots(figsize=(9, 0.5 + 0.2 * len(rows)))
        labels, values = zip(*rows)
        y = range(len(rows))
        ax.barh(y, [v - 1 for v in values], left=1, color=["tab:green" if v >= 1 else "tab:red" for v in values])
        ax.set_xscale("log")
        ax.axvline(1.0, color="black", linewidth=1)
        ax.set_yticks(list(y), [lab[:70] for lab in labels], fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel("SneppX speed relative to PyTorch (wall time; above 1: SneppX faster)")
        ax.grid(axis="x", which="both", alpha=0.3)
        drawn["speed"] = _save(fig, "speed")
    width = [r for r in sections.get("nn", []) if "d_model" in r]
    if width:
        fig, ax = plt.subplots(figsize=(6, 4))
        d = [r["d_model"] for r in width]
        ax.plot(d, [r["sneppx"] for r in width], "o-", label="SneppX")
        if all(r.get("torch") for r in width):
            ax.plot(d, [r["torch"] for r in width], "s-", label="PyTorch")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(d, [str(v) for v in d])
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.yaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.yaxis.set_minor_formatter(matplotlib.ticker.ScalarFormatter())
        ax.set_xlabel("d_model")
        ax.set_ylabel("ms per train step")
        ax.set_title("GPT train step (2 layers, 64 tokens, batch 8) against width", fontsize=9)
        ax.legend()
        ax.grid(which="both", alpha=0.3)
        drawn["width"] = _save(fig, "width")
    ops = [r for r in sections.get("ops", []) if r.get("torch") and speed(r)]
    if ops:
        fig, ax = plt.subplots(figsize=(9, 4))
        for size in ("small", "medium", "large"):
            vals = sorted(speed(r) for r in ops if r.get("size") == size)
            if vals:
                ax.plot(range(len(vals)), vals, ".", label=size)
        ax.set_yscale("log")
        ax.axhline(1.0, color="black", linewidth=1)
        ax.set_xlabel("ops of the op table, sorted by speed (each size on its own)")
        ax.set_ylabel("SneppX speed relative to PyTorch")
        ax.legend(title="size")
        ax.grid(axis="y", which="both", alpha=0.3)
        drawn["ops"] = _save(fig, "ops")
    return drawn


def _save(fig, key: str) -> str:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(DOCS / CHARTS[key], dpi=110)
    plt.close(fig)
    return CHARTS[key]


CAPTIONS = {"speed": "Every row's SneppX speed relative to PyTorch (log scale; the line is 1.0)",
            "width": "GPT train-step time against model width, both libraries",
            "ops": "The op sweep: every op's speed relative to PyTorch at each size, sorted"}


def page(stamp: str, sections: dict, metas: dict) -> str:
    body = [f"# Benchmarks\n\n{banner(sections, metas)}\nMeasured {stamp} on: {machine()}.\n",
            "Produced by `python benchmarks/run.py` (`nox -s bench`); this page is rewritten by the runner. "
            "Each row runs SneppX and PyTorch 2.13 CPU interleaved in one process (a fresh process per group) and "
            "reports medians; "
            "\"spread\" is the interquartile range over the median; \"speed\" is SneppX's speed relative to the "
            "other side (above 1.00x SneppX is faster), from wall time and from CPU time (all threads of the "
            "process). Rows of the distributed group compare against raw mpi4py or a single rank.\n"]
    for name, m in metas.items():
        if name in sections:
            fc, probe = m.get("foreign_cores"), m.get("probe_ms")
            body.append(f"- {name}: run of {m.get('date', '?')}, load average {m.get('load_before', 0):.2f} at its "
                        f"start, other processes {'-' if fc is None else f'{fc:.2f}'} cores during the group, "
                        f"{m.get('seconds', 0):.0f} s" + (" (--quick)" if m.get("quick") else "")
                        + (f", probe {probe[0]:.1f} ms before / {probe[1]:.1f} ms after" if probe else ""))
    body.append("")
    try:
        drawn = charts(sections)
        for key, path in drawn.items():
            body.append(f"![{CAPTIONS[key]}]({path})\n")
    except ImportError:
        body.append("Charts are missing: matplotlib is not installed (`nox -s bench` installs it).\n")
    for name, rows in sections.items():
        body.append(f"## {name}\n\n{table(rows)}\n")
    return "\n".join(body)


def run_group(name: str, quick: bool):
    """The rows of one group, measured in a fresh Python process (None when the group failed)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "rows.json"
        cmd = [sys.executable, str(HERE / "run.py"), "--group", name, "--rows-to", str(out)]
        cmd += ["--quick"] if quick else []
        if subprocess.run(cmd).returncode != 0 or not out.exists():
            return None
        return json.loads(out.read_text())


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--only", default="", help="comma-separated groups: " + ",".join(MODULES))
    p.add_argument("--no-write", action="store_true")
    p.add_argument("--group", help=argparse.SUPPRESS)  # internal: run one group in this process
    p.add_argument("--rows-to", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.group:
        rows = importlib.import_module(f"bench_{args.group}").run(quick=args.quick)
        pathlib.Path(args.rows_to).write_text(json.dumps(rows))
        return
    only = [g for g in args.only.split(",") if g]
    unknown = [g for g in only if g not in MODULES]
    if unknown:
        p.error(f"unknown group(s) {unknown}; choose from {MODULES}")
    wanted = [m for m in MODULES if not only or m in only]
    sections, metas = {}, {}
    # Sampled once: during the run this process's own threads count in the load average, so each
    # group's share of other processes' CPU time is measured instead (ForeignCpu).
    load = wait_for_quiet()
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"load average {load:.2f} at the start", flush=True)
    probe = host_probe()
    for name in wanted:
        if not (HERE / f"bench_{name}.py").exists():
            continue
        print(f"== {name}", flush=True)
        watch = ForeignCpu()
        watch.start()
        t0 = time.perf_counter()
        rows = run_group(name, args.quick)  # a failing group prints its error and must not hide the others
        if not rows:  # failed, or nothing to measure here (the CUDA rows without a GPU)
            continue
        sections[name] = rows
        metas[name] = {"load_before": load, "foreign_cores": watch.cores(), "seconds": time.perf_counter() - t0,
                       "quick": args.quick, "date": stamp}
        before, probe = probe, host_probe()
        metas[name]["probe_ms"] = [before, probe]
        print(table(rows), flush=True)
        print(f"({metas[name]['seconds']:.0f} s; other processes {metas[name]['foreign_cores'] or 0:.2f} cores; "
              f"probe {before:.1f} -> {probe:.1f} ms)", flush=True)
    if args.no_write:
        return
    (HERE / "results").mkdir(exist_ok=True)
    latest = HERE / "results" / "latest.json"
    if only and latest.exists():  # a partial run keeps the other groups of the last one
        old = json.loads(latest.read_text())
        sections = {**old.get("sections", {}), **sections}
        metas = {**old.get("meta", {}), **metas}
        sections = {n: sections[n] for n in MODULES if n in sections}
    latest.write_text(json.dumps({"machine": machine(), "date": stamp, "sections": sections, "meta": metas},
                                 indent=1))
    DOCS.mkdir(exist_ok=True)
    (DOCS / "benchmarks.md").write_text(page(stamp, sections, metas))


if __name__ == "__main__":
    main()
