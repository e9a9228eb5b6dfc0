"""The profiler's records: ``FunctionEvent`` (one timed call or range), ``FunctionEventAvg`` (the events of one
name summed) and ``EventList`` (their tables, averages and Chrome trace), in PyTorch's layout and units
(microseconds, bytes)."""

from __future__ import annotations

import json
import os


def _format_time(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _format_memory(nbytes: int) -> str:
    kb, mb, gb = 1024, 1024 ** 2, 1024 ** 3
    if abs(nbytes) >= gb:
        return f"{nbytes / gb:.2f} Gb"
    if abs(nbytes) >= mb:
        return f"{nbytes / mb:.2f} Mb"
    if abs(nbytes) >= kb:
        return f"{nbytes / kb:.2f} Kb"
    return f"{nbytes} b"


class _Times:
    """The derived fields PyTorch's events and averages share (device times are 0: no device is timed)."""

    count = 1
    device_time_total = self_device_time_total = cuda_time_total = self_cuda_time_total = 0.0
    device_memory_usage = self_device_memory_usage = cuda_memory_usage = self_cuda_memory_usage = 0
    flops = 0

    @property
    def cpu_time(self) -> float:
        """The average CPU time per call, in microseconds."""
        return self.cpu_time_total / max(self.count, 1)

    @property
    def device_time(self) -> float:
        """0.0: no device time is recorded."""
        return 0.0

    cuda_time = device_time


class FunctionEvent(_Times):
    """One recorded call or ``record_function`` range: ``name``, ``thread``, ``time_range`` (start and end, in
    microseconds from the profile's start), ``cpu_time_total``, ``self_cpu_time_total`` (less its children's),
    ``input_shapes``, ``stack`` and memory (bytes of the tensors it returned)."""

    def __init__(self, id: int, name: str, thread: int, start_us: float, input_shapes=None, stack=None,
                 is_user_annotation: bool = False) -> None:
        self.id, self.name, self.thread = id, name, thread
        self.start_us, self.end_us = start_us, start_us
        self.input_shapes = input_shapes or []
        self.stack = stack or []
        self.cpu_children: list = []
        self.cpu_parent = None
        self.cpu_memory_usage = 0
        self.is_user_annotation = is_user_annotation
        self.is_async = False
        self.device_type = "CPU"

    @property
    def key(self) -> str:
        """The name events are grouped by."""
        return self.name

    @property
    def time_range(self) -> tuple:
        """(start, end) in microseconds."""
        return self.start_us, self.end_us

    @property
    def cpu_time_total(self) -> float:
        """Microseconds from the call's start to its end."""
        return self.end_us - self.start_us

    @property
    def self_cpu_time_total(self) -> float:
        """``cpu_time_total`` less the time of the calls made inside it."""
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def self_cpu_memory_usage(self) -> int:
        """Bytes returned less those its inner calls returned."""
        return self.cpu_memory_usage - sum(c.cpu_memory_usage for c in self.cpu_children)

    def __repr__(self) -> str:
        return (f"<FunctionEvent id={self.id} name={self.name} cpu_time={_format_time(self.cpu_time_total)} "
                f"self_cpu_time={_format_time(self.self_cpu_time_total)} input_shapes={self.input_shapes}>")


class FunctionEventAvg(_Times):
    """The events of one key (name, and input shapes or stack when grouped by them), summed: ``count``,
    ``cpu_time_total``, ``self_cpu_time_total``, ``cpu_time`` (the average), memory."""

    def __init__(self) -> None:
        self.key = None
        self.count = 0
        self.cpu_time_total = self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = self.self_cpu_memory_usage = 0
        self.input_shapes = None
        self.stack = None
        self.is_user_annotation = False
        self.cpu_parent = None

    def add(self, other) -> "FunctionEventAvg":
        """Adds an event (or another average) to this one."""
        if self.key is None:
            self.key, self.input_shapes, self.stack = other.key, other.input_shapes, other.stack
            self.is_user_annotation = other.is_user_annotation
        self.count += other.count
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        return self

    __iadd__ = add

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={_format_time(self.self_cpu_time_total)} "
                f"cpu_time={_format_time(self.cpu_time_total)} input_shapes={self.input_shapes}>")


class EventList(list):
    """A list of events (or averages) that prints as PyTorch's profiler table."""

    def __init__(self, *args, profile_memory: bool = False, record_shapes: bool = False,
                 with_stack: bool = False) -> None:
        super().__init__(*args)
        self._profile_memory, self._record_shapes, self._with_stack = profile_memory, record_shapes, with_stack

    @property
    def self_cpu_time_total(self) -> float:
        """The self CPU time of all events, in microseconds."""
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0) -> "EventList":
        """The events summed per name (and per input shapes, or the first ``group_by_stack_n`` stack frames)."""
        groups: dict = {}
        for e in self:
            key = (e.key, str(e.input_shapes) if group_by_input_shape else None,
                   tuple(e.stack[:group_by_stack_n]) if group_by_stack_n else None)
            groups.setdefault(key, FunctionEventAvg()).add(e)
        return EventList(groups.values(), profile_memory=self._profile_memory,
                         record_shapes=group_by_input_shape, with_stack=bool(group_by_stack_n))

    def total_average(self) -> FunctionEventAvg:
        """All events summed into one (key ``Total``)."""
        total = FunctionEventAvg()
        for e in self:
            total.add(e)
        total.key = "Total"
        return total

    def table(self, sort_by: str | None = None, row_limit: int = 100, max_src_column_width: int = 75,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False, time_unit: str | None = None) -> str:
        """The events as PyTorch's text table: name, self and total CPU time and their shares, average time,
        memory (with ``profile_memory``), call count, input shapes (when grouped by them); sorted by the
        attribute ``sort_by`` (descending) and cut to ``row_limit`` rows (negative: all)."""
        events = [e for e in self if not top_level_events_only or e.cpu_parent is None]
        if sort_by is not None:
            events.sort(key=lambda e: getattr(e, sort_by), reverse=True)
        if row_limit is not None and row_limit >= 0:
            events = events[:row_limit]
        total = self.self_cpu_time_total or 1.0
        name_w = min(max([len(e.key) for e in events] + [4]) + 4, max_name_column_width)
        cols = [("Name", name_w), ("Self CPU %", 12), ("Self CPU", 12), ("CPU total %", 12), ("CPU total", 12),
                ("CPU time avg", 12)]
        if self._profile_memory:
            cols += [("CPU Mem", 12), ("Self CPU Mem", 12)]
        cols.append(("# of Calls", 12))
        shapes_w = 0
        if self._record_shapes:
            shapes_w = min(max([len(str(e.input_shapes)) for e in events] + [12]) + 4, max_shapes_column_width)
            cols.append(("Input Shapes", shapes_w))
        line = "  ".join("-" * w for _, w in cols) + "  "
        row = lambda values: "  ".join(str(v)[:w].rjust(w) for v, (_, w) in zip(values, cols)) + "  "  # noqa: E731
        out = [header] if header else []
        out += [line, row([c for c, _ in cols]), line]
        for e in events:
            name = e.key if len(e.key) <= name_w - 4 else e.key[:name_w - 7] + "..."
            values = [name, f"{100 * e.self_cpu_time_total / total:.2f}%", _format_time(e.self_cpu_time_total),
                      f"{100 * e.cpu_time_total / total:.2f}%", _format_time(e.cpu_time_total),
                      _format_time(e.cpu_time)]
            if self._profile_memory:
                values += [_format_memory(e.cpu_memory_usage), _format_memory(e.self_cpu_memory_usage)]
            values.append(e.count)
            if self._record_shapes:
                values.append(str(e.input_shapes)[:shapes_w])
            out.append(row(values))
        out += [line, f"Self CPU time total: {_format_time(self.self_cpu_time_total)}", ""]
        return "\n".join(out)

    def __str__(self) -> str:
        return self.table()

    def export_chrome_trace(self, path: str, base_us: float = 0.0) -> None:
        """Writes the events as a Chrome trace (JSON ``traceEvents``; chrome://tracing and Perfetto read it)."""
        pid = os.getpid()
        trace = []
        for e in self:
            if not isinstance(e, FunctionEvent):
                raise ValueError("[export_chrome_trace] needs events, not averages (export before key_averages)")
            trace.append({"ph": "X", "cat": "user_annotation" if e.is_user_annotation else "cpu_op", "name": e.name,
                          "pid": pid, "tid": e.thread, "ts": base_us + e.start_us, "dur": e.cpu_time_total,
                          "args": {"Input Dims": e.input_shapes} if e.input_shapes else {}})
        with open(path, "w") as f:
            json.dump({"traceEvents": trace, "displayTimeUnit": "ms"}, f)
