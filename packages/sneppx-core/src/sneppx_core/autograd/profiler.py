"""``torch.autograd.profiler``: the older profiler API over the same recording as ``sneppx_core.profiler``:
``with profile() as prof: ...`` then ``print(prof)`` (every event, in order) or
``prof.key_averages().table(sort_by="self_cpu_time_total")``; ``record_function`` names a range."""

from __future__ import annotations

from .._profiler_events import EventList, FunctionEvent, FunctionEventAvg
from ..profiler import _Profile, record_function

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "profile", "record_function"]


class profile(_Profile):
    """Records the library's calls inside the ``with`` block (nothing when ``enabled`` is False);
    ``function_events``, ``key_averages()``, ``table()``, ``export_chrome_trace()`` read them afterwards.
    ``use_cuda``/``use_device`` add nothing here (no device timing)."""

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device=None, record_shapes: bool = False,
                 with_flops: bool = False, profile_memory: bool = False, with_stack: bool = False,
                 with_modules: bool = False, use_kineto: bool = True, use_cpu: bool = True, experimental_config=None,
                 acc_events: bool = False, custom_trace_id_callback=None) -> None:
        self.enabled = enabled
        self.record_shapes, self.profile_memory, self.with_stack = record_shapes, profile_memory, with_stack

    def __enter__(self) -> "profile":
        if self.enabled:
            self._begin(self.record_shapes, self.profile_memory, self.with_stack)
        return self

    def __exit__(self, *exc) -> None:
        if self.enabled:
            self._end()

    @property
    def function_events(self) -> EventList:
        """The recorded events, in the order they started."""
        return self.events()

    @property
    def self_cpu_time_total(self) -> float:
        """The self CPU time of all events, in microseconds."""
        return self.events().self_cpu_time_total

    def table(self, *args, **kwargs) -> str:
        """``function_events.table(...)``."""
        return self.events().table(*args, **kwargs)

    def total_average(self) -> FunctionEventAvg:
        """All events summed into one."""
        return self.events().total_average()

    def __str__(self) -> str:
        return self.events().table()
