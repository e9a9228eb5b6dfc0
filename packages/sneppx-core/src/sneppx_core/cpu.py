"""``torch.cpu``: the CPU's side of the device-module interface (``get_device_module("cpu")``), so code
written against ``torch.cuda``'s functions runs unchanged on the CPU. Work on the CPU is synchronous:
streams and events exist and do nothing."""

from __future__ import annotations

import contextlib


def is_available() -> bool:
    """True: the CPU is always available."""
    return True


def is_initialized() -> bool:
    """True: the CPU needs no initialisation."""
    return True


def device_count() -> int:
    """1: the CPU counts as one device."""
    return 1


def current_device() -> str:
    """``"cpu"``."""
    return "cpu"


def set_device(device) -> None:
    """Does nothing: there is only one CPU device."""


def synchronize(device=None) -> None:
    """Returns at once: CPU work is finished when its call returns."""


class Event:
    """An event on the CPU stream: always complete."""

    def query(self) -> bool:
        """True: nothing is ever pending."""
        return True

    def record(self, stream=None) -> None:
        """Does nothing."""

    def synchronize(self) -> None:
        """Returns at once."""

    def wait(self, stream=None) -> None:
        """Returns at once."""


class Stream:
    """The CPU's only stream; its methods do nothing (kept for device-agnostic code)."""

    def __init__(self, priority: int = -1) -> None:
        self.priority = priority

    def wait_stream(self, stream) -> None:
        """Returns at once."""

    def wait_event(self, event) -> None:
        """Returns at once."""

    def record_event(self, event=None) -> Event:
        """An already complete :class:`Event`."""
        return event if event is not None else Event()


_STREAM = Stream()


def current_stream(device=None) -> Stream:
    """The CPU stream."""
    return _STREAM


@contextlib.contextmanager
def stream(stream):
    """A context manager that changes nothing (there is one CPU stream)."""
    yield


__all__ = ["is_available", "is_initialized", "device_count", "current_device", "set_device", "synchronize",
           "Event", "Stream", "current_stream", "stream"]
