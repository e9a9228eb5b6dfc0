"""``torch.utils.benchmark``: ``Timer`` (``timeit`` with a warm-up, a thread count and labels), the
``Measurement`` it returns (median, mean, IQR, a readable summary) and ``Compare`` (a table of several).

Statements are Python (``stmt``, ``setup`` and ``globals`` as for ``timeit``); while a Timer runs, the core's
thread count is ``num_threads`` (1 by default, as in PyTorch). Block sizes are found as PyTorch's Timer finds
them: grown tenfold until the timer's own overhead is negligible.
"""

from __future__ import annotations

import dataclasses
import enum
import statistics
import textwrap
import timeit

from .._C_face import get_num_threads, set_num_threads


class Language(enum.Enum):
    """The language of a statement: only ``PYTHON`` runs here (``CPP`` needs PyTorch's C++ toolchain)."""

    PYTHON = 0
    CPP = 1


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """What was timed, and the labels it is reported under."""

    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        """The label, or the statement."""
        return self.label if self.label is not None else self.stmt


def _unit(seconds: float) -> tuple:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return unit, scale
    return "ns", 1e-9


@dataclasses.dataclass
class Measurement:
    """The times of ``number_per_run`` executions, once per entry of ``raw_times`` (seconds)."""

    number_per_run: int
    raw_times: list
    task_spec: TaskSpec
    metadata: dict | None = None

    @property
    def times(self) -> list:
        """Seconds per execution, one per block."""
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def median(self) -> float:
        """Median seconds per execution."""
        return statistics.median(self.times)

    @property
    def mean(self) -> float:
        """Mean seconds per execution."""
        return statistics.fmean(self.times)

    @property
    def iqr(self) -> float:
        """Interquartile range of the seconds per execution (0 with fewer than two blocks)."""
        if len(self.times) < 2:
            return 0.0
        q = statistics.quantiles(self.times, n=4, method="inclusive")
        return q[2] - q[0]

    @property
    def has_warnings(self) -> bool:
        """True when the blocks vary by more than a tenth of the median (with four or more blocks)."""
        return len(self.times) >= 4 and self.iqr > 0.1 * self.median

    @property
    def title(self) -> str:
        """The task's label, or its statement."""
        return self.task_spec.title

    @property
    def significant_figures(self) -> int:
        """How many figures of the median the spread leaves meaningful (1 to 4)."""
        if self.iqr == 0 or self.median == 0:
            return 4
        n = len(self.times)
        spread = self.iqr / self.median / max(n, 1) ** 0.5
        digits = 1
        while digits < 4 and spread < 10 ** -digits:
            digits += 1
        return digits

    def __getattr__(self, name):
        spec = self.__dict__.get("task_spec")
        if spec is not None and name in ("stmt", "setup", "label", "sub_label", "description", "env", "num_threads"):
            return getattr(spec, name)
        raise AttributeError(name)

    def __repr__(self):
        unit, scale = _unit(self.median)
        spec = self.task_spec
        head = ": ".join(x for x in (spec.label, spec.sub_label) if x) or spec.stmt
        lines = [f"<sneppx_core.utils.benchmark.Measurement object at {hex(id(self))}>", head]
        if spec.description:
            lines.append(spec.description)
        if spec.setup.strip() not in ("", "pass"):
            lines.append("setup: " + spec.setup.strip())
        lines.append(f"  Median: {self.median / scale:.4g} {unit}")
        if len(self.times) > 1:
            q = statistics.quantiles(self.times, n=4, method="inclusive")
            lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} ({q[0] / scale:.2f} to {q[2] / scale:.2f})")
        threads = f"{spec.num_threads} thread" + ("s" if spec.num_threads != 1 else "")
        lines.append(f"  {len(self.times)} measurement{'s' if len(self.times) != 1 else ''}, "
                     f"{self.number_per_run} runs per measurement, {threads}")
        if self.has_warnings:
            lines.append(f"  WARNING: Interquartile range is {100 * self.iqr / self.median:.1f}% of the median "
                         "measurement.\n           This could indicate system fluctuation.")
        return "\n".join(lines)

    @staticmethod
    def merge(measurements) -> list:
        """Measurements of the same task joined into one each (their blocks pooled, per execution)."""
        out = {}
        for m in measurements:
            key = m.task_spec
            if key in out:
                merged = out[key]
                merged.raw_times.extend(t * merged.number_per_run for t in m.times)
            else:
                out[key] = Measurement(m.number_per_run, list(m.raw_times), m.task_spec, m.metadata)
        return list(out.values())


class Timer:
    """Times a Python statement, as ``torch.utils.benchmark.Timer``.

    Args:
        stmt, setup: the statement and its setup (source text; dedented).
        global_setup: accepted for C++ statements' sake; must be empty for Python.
        timer: the clock (``timeit.default_timer``).
        globals: names the statement sees.
        label, sub_label, description, env: how ``Compare`` and the summary name the result.
        num_threads: the core's thread count while timing.
        language: ``Language.PYTHON`` (or "py"/"python"); C++ raises NotImplementedError.
    """

    def __init__(self, stmt="pass", setup="pass", global_setup="", timer=timeit.default_timer, globals=None,
                 label=None, sub_label=None, description=None, env=None, num_threads=1,
                 language=Language.PYTHON):
        if language not in (Language.PYTHON, "py", "python"):
            raise NotImplementedError("[Timer] only Python statements can be timed here (C++ ones need PyTorch's "
                                      "C++ toolchain)")
        if global_setup:
            raise ValueError("[Timer] global_setup is for C++ statements")
        if not isinstance(num_threads, int) or isinstance(num_threads, bool) or num_threads < 1:
            raise ValueError(f"[Timer] num_threads must be a positive int, got {num_threads!r}")
        stmt, setup = textwrap.dedent(stmt).strip() or "pass", textwrap.dedent(setup).strip() or "pass"
        self._timer = timeit.Timer(stmt=stmt, setup=setup, timer=timer, globals=dict(globals or {}))
        self._task_spec = TaskSpec(stmt, setup, global_setup, label, sub_label, description, env, num_threads)

    def _timeit(self, number: int) -> float:
        before = get_num_threads()
        set_num_threads(self._task_spec.num_threads)
        try:
            return self._timer.timeit(number)
        finally:
            set_num_threads(before)

    def timeit(self, number: int = 1000000) -> Measurement:
        """One block of ``number`` executions, after a warm-up of ``number // 100`` (at least 2)."""
        self._timeit(max(number // 100, 2))
        return Measurement(number, [self._timeit(number)], self._task_spec)

    def repeat(self, repeat: int = -1, number: int = -1):
        """Not supported (as in PyTorch): use ``blocked_autorange``."""
        raise NotImplementedError("[Timer.repeat] is not supported (nor in PyTorch); use blocked_autorange")

    def autorange(self, callback=None):
        """``timeit.Timer.autorange``: (number, seconds) of the first block size taking 0.2 s or more."""
        return self._timer.autorange(callback)

    def _block_size(self, min_run_time: float) -> int:
        overhead = statistics.median(self._timeit(0) for _ in range(5))
        number = 1
        while True:
            taken = self._timeit(number)
            if (overhead <= 1e-4 * taken and taken >= min_run_time / 1000) or taken > min_run_time:
                return number
            if number * 10 > 2147483647:
                return number
            number *= 10

    def _blocks(self, number: int, done, callback) -> Measurement:
        times, total = [], 0.0
        while not done(times, total):
            t = self._timeit(number)
            times.append(t)
            total += t
            if callback is not None:
                callback(number, t)
        return Measurement(number, times, self._task_spec)

    def blocked_autorange(self, callback=None, min_run_time: float = 0.2) -> Measurement:
        """Blocks of a size found as PyTorch's Timer finds it, until ``min_run_time`` seconds have been spent."""
        number = self._block_size(0.025)
        return self._blocks(number, lambda times, total: total >= min_run_time, callback)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01, max_run_time: float = 10.0,
                           callback=None) -> Measurement:
        """Blocks until the IQR is under ``threshold`` of the median (after ``min_run_time`` seconds and at least
        three blocks), or ``max_run_time`` seconds have been spent."""
        number = self._block_size(0.05)

        def done(times, total):
            if total >= max_run_time:
                return True
            if total < min_run_time or len(times) < 3:
                return False
            m = Measurement(number, times, self._task_spec)
            return m.iqr <= threshold * m.median

        return self._blocks(number, done, callback)

    def collect_callgrind(self, *args, **kwargs):
        """Not supported: it needs valgrind and PyTorch's C++ bindings."""
        raise NotImplementedError("[Timer.collect_callgrind] needs valgrind and PyTorch's bindings; use "
                                  "blocked_autorange")


class Compare:
    """A table of measurements: one per label, rows by sub_label (or statement), columns by description."""

    def __init__(self, results):
        self._results = Measurement.merge(results)

    def __str__(self):
        out = []
        for label in dict.fromkeys(m.task_spec.label or "" for m in self._results):
            group = [m for m in self._results if (m.task_spec.label or "") == label]
            cols = list(dict.fromkeys(m.task_spec.description or "" for m in group))
            rows = list(dict.fromkeys(m.task_spec.sub_label or m.task_spec.stmt for m in group))
            unit, scale = _unit(min(m.median for m in group))
            cell = {(m.task_spec.sub_label or m.task_spec.stmt, m.task_spec.description or ""): m for m in group}
            width = max(len(r) for r in rows) + 2
            lines = [f"[ {label} ]" if label else "[ ]", " " * width + "".join(f"{c:>14}" for c in cols)]
            for r in rows:
                vals = [f"{cell[(r, c)].median / scale:14.1f}" if (r, c) in cell else " " * 14 for c in cols]
                lines.append(f"{r:<{width}}" + "".join(vals))
            lines.append(f"Times are in {'microseconds' if unit == 'us' else unit} ({unit}).")
            out.append("\n".join(lines))
        return "\n\n".join(out) + "\n"

    def print(self) -> None:
        """Prints the table."""
        print(str(self))


__all__ = ["Timer", "Measurement", "Compare", "Language", "TaskSpec"]
