"""``torch.profiler``: time the library calls a program makes.

``with profile() as prof:`` records every call of a public function, functional op or Tensor method (operators
included) with its CPU time, the time of the calls made inside it, and optionally the input shapes
(``record_shapes``), the bytes of the returned tensors (``profile_memory``) and the Python stack
(``with_stack``); ``record_function("name")`` adds a named range. ``prof.key_averages().table(...)`` prints
PyTorch's table, ``export_chrome_trace`` writes a Chrome/Perfetto trace, and ``schedule`` with ``prof.step()``
and ``on_trace_ready`` (``tensorboard_trace_handler``) profiles chosen steps of a training loop::

    with profile(schedule=schedule(wait=1, warmup=1, active=3),
                 on_trace_ready=tensorboard_trace_handler("./log")) as prof:
        for batch in loader:
            train_step(batch)
            prof.step()

Calls are timed where Python calls the library (see ``_profiler_hooks``): ``backward`` is one event, and no
device time is measured (the CUDA activity is accepted; ops on a GPU show their CPU-side time).
"""

from __future__ import annotations

import contextlib
import enum
import os
import socket
import time
import warnings

from . import _profiler_hooks as hooks
from ._profiler_events import EventList, FunctionEvent, FunctionEventAvg

__all__ = ["DeviceType", "ProfilerAction", "ProfilerActivity", "kineto_available", "profile", "record_function",
           "schedule", "supported_activities", "tensorboard_trace_handler", "EventList", "FunctionEvent",
           "FunctionEventAvg"]


class ProfilerActivity(enum.Enum):
    """What a profile records: ``CPU`` (the library's calls); ``CUDA`` adds nothing here (no device timing)."""
    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


class DeviceType(enum.Enum):
    """The device an event ran on (every recorded event is ``CPU``)."""
    CPU = 0
    CUDA = 1


def kineto_available() -> bool:
    """False: SneppX's profiler is its own, not PyTorch's Kineto library."""
    return False


class ProfilerAction(enum.Enum):
    """What a schedule asks for at a step."""
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities() -> set:
    """The activities ``profile`` accepts."""
    return {ProfilerActivity.CPU, ProfilerActivity.CUDA}


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0):
    """A function of the step number giving the ``ProfilerAction``: after ``skip_first`` steps, cycles of ``wait``
    idle steps, ``warmup`` steps and ``active`` recorded steps (the last one saves), ``repeat`` times (0: no
    end). ``skip_first_wait`` skips the first cycle's wait."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise ValueError(f"[profiler.schedule] needs active > 0 and the others >= 0, got wait={wait}, "
                         f"warmup={warmup}, active={active}, repeat={repeat}, skip_first={skip_first}")

    def fn(step: int) -> ProfilerAction:
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait:
            step += wait
        cycle = wait + warmup + active
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        at = step % cycle
        if at < wait:
            return ProfilerAction.NONE
        if at < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if at < cycle - 1 else ProfilerAction.RECORD_AND_SAVE
    return fn


def _always_record(step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None, use_gzip: bool = False):
    """An ``on_trace_ready`` that writes each trace to ``dir_name/<worker>.<ms>.pt.trace.json[.gz]`` (Chrome trace
    format; TensorBoard's profiler plugin and Perfetto read it)."""
    def handler(prof) -> None:
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        path = os.path.join(dir_name, f"{worker}.{time.time_ns() // 1_000_000}.pt.trace.json")
        prof.export_chrome_trace(path)
        if use_gzip:
            import gzip
            with open(path, "rb") as f, gzip.open(path + ".gz", "wb") as g:
                g.write(f.read())
            os.remove(path)
    return handler


class record_function(contextlib.ContextDecorator):
    """A named range in the profile (``with record_function("data"):`` or as a decorator); nothing when no
    profile records."""

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name, self.args = name, args
        self._event = None

    def __enter__(self) -> "record_function":
        rec = hooks.ACTIVE[0]
        if rec is not None:
            self._event = (rec, rec.begin(self.name, user=True))
        return self

    def __exit__(self, *exc) -> bool:
        if self._event is not None:
            rec, e = self._event
            rec.end(e)
            self._event = None
        return False


class _Profile:
    """Recording start and stop shared by ``profile`` and ``autograd.profiler.profile``."""

    def _begin(self, record_shapes: bool, profile_memory: bool, with_stack: bool) -> None:
        if hooks.ACTIVE[0] is not None:
            raise RuntimeError("[profiler] a profile is already recording (profiles do not nest)")
        hooks.install()
        self._recorder = hooks.Recorder(record_shapes, profile_memory, with_stack)
        hooks.ACTIVE[0] = self._recorder

    def _end(self) -> None:
        if hooks.ACTIVE[0] is self._recorder:
            hooks.ACTIVE[0] = None
            hooks.uninstall()
        self._events = self._recorder.event_list()

    def events(self) -> EventList:
        """The recorded events, in the order they started."""
        return getattr(self, "_events", None) or (self._recorder.event_list() if getattr(self, "_recorder", None)
                                                  else EventList())

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0) -> EventList:
        """The events summed per name (see ``EventList.key_averages``)."""
        return self.events().key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path: str) -> None:
        """Writes the events as a Chrome trace (JSON)."""
        rec = getattr(self, "_recorder", None)
        self.events().export_chrome_trace(path, rec.wall_t0_us if rec else 0.0)


class profile(_Profile):
    """``torch.profiler.profile``: records the library's calls between ``start()`` and ``stop()`` (or in a
    ``with`` block), in the steps ``schedule`` chooses (all, without one); ``on_trace_ready(prof)`` is called when
    a recorded cycle ends. Arguments PyTorch takes that change nothing here (``with_flops``, ``with_modules``,
    ``experimental_config``, ...) are accepted."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, experimental_config=None, execution_trace_observer=None,
                 acc_events: bool = False, use_cuda: bool | None = None, custom_trace_id_callback=None) -> None:
        self.activities = set(activities) if activities else supported_activities()
        unknown = self.activities - set(ProfilerActivity)
        if unknown:
            raise ValueError(f"[profiler.profile] unknown activities {unknown}")
        if ProfilerActivity.CUDA in self.activities and _cuda_available():
            warnings.warn("[profiler.profile] device time is not recorded: ops on a GPU show their CPU-side time",
                          stacklevel=2)
        self.schedule = schedule or _always_record
        self.on_trace_ready = on_trace_ready
        self.record_shapes, self.profile_memory, self.with_stack = record_shapes, profile_memory, with_stack
        self.step_num = 0
        self.current_action = ProfilerAction.NONE
        self._step_event = None

    def __enter__(self) -> "profile":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        """Starts at step 0 of the schedule."""
        self.step_num = 0
        self.current_action = self.schedule(0)
        if self.current_action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
            self._start_recording()

    def stop(self) -> None:
        """Stops; a cycle being recorded is handed to ``on_trace_ready``."""
        if self._recording():
            self._stop_recording(save=True)
        self.current_action = ProfilerAction.NONE

    def step(self) -> None:
        """Marks the end of a step: the schedule's next action starts or ends a recording."""
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        recording = self._recording()
        if recording and (prev == ProfilerAction.RECORD_AND_SAVE
                          or self.current_action not in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)):
            self._stop_recording(save=prev == ProfilerAction.RECORD_AND_SAVE or self.current_action ==
                                 ProfilerAction.NONE)
            recording = False
        if self.current_action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
            if recording:
                self._close_step()
                self._open_step()
            else:
                self._start_recording()

    def _recording(self) -> bool:
        return getattr(self, "_recorder", None) is not None and hooks.ACTIVE[0] is self._recorder

    def _open_step(self) -> None:
        self._step_event = self._recorder.begin(f"ProfilerStep#{self.step_num}", user=True)

    def _close_step(self) -> None:
        if self._step_event is not None:
            self._recorder.end(self._step_event)
            self._step_event = None

    def _start_recording(self) -> None:
        self._events = None
        self._begin(self.record_shapes, self.profile_memory, self.with_stack)
        if self.schedule is not _always_record:
            self._open_step()

    def _stop_recording(self, save: bool) -> None:
        self._close_step()
        self._end()
        if save and self.on_trace_ready is not None:
            self.on_trace_ready(self)


def _cuda_available() -> bool:
    from . import cuda
    return cuda.is_available()
