"""CUDA device queries, device memory statistics and the ``torch.cuda`` functions training scripts call.

This build reports what it was compiled with, never a simulated device: in a build without CUDA
(the default) and in a CUDA build on a machine without a visible GPU, ``is_available()`` is False.
The seed functions and ``empty_cache`` are then accepted silently and the memory statistics of the
current device are 0 (as in PyTorch, so scripts can call them unconditionally); functions that need a
GPU raise RuntimeError, saying either that this build of sneppx-core has no CUDA or that no CUDA device
is visible.
"""

from __future__ import annotations

from ._backend import _C


def is_available() -> bool:
    """True when this build has CUDA and a GPU is visible."""
    return bool(_C._HAS_CUDA and _C.cuda_is_available())


def device_count() -> int:
    """Number of visible GPUs (0 in builds without CUDA)."""
    return int(_C.cuda_device_count()) if _C._HAS_CUDA else 0


def is_initialized() -> bool:
    """True once a GPU is in use (False without CUDA)."""
    return is_available()


def _need_gpu(op: str) -> None:
    if not _C._HAS_CUDA:
        raise RuntimeError(f"[cuda.{op}] this build of sneppx-core has no CUDA")
    if not is_available():
        raise RuntimeError(f"[cuda.{op}] no CUDA device is visible")


def manual_seed(seed) -> None:
    """Seeds the random numbers drawn on the GPU; a no-op without a GPU.

    One generator serves every device in this build, so with a GPU this seeds it as
    ``sneppx_core.manual_seed`` does.
    """
    from ._factories import manual_seed as _seed

    if is_available():
        _seed(seed)
    elif isinstance(seed, bool) or not hasattr(seed, "__index__") and not isinstance(seed, (int, float)):
        raise TypeError(f"[cuda.manual_seed] seed must be an integer, got {seed!r}")


def manual_seed_all(seed) -> None:
    """Seeds the random numbers of every GPU; a no-op without a GPU."""
    manual_seed(seed)


def seed() -> None:
    """Seeds the GPU generator from the operating system's entropy; a no-op without a GPU."""
    if is_available():
        from ._factories import seed as _seed

        _seed()


def seed_all() -> None:
    """Seeds every GPU generator from the operating system's entropy; a no-op without a GPU."""
    seed()


def _index(device) -> int:
    from ._C_face import Device

    if isinstance(device, int) and not isinstance(device, bool):
        return device
    d = Device(device)
    if d.type != "cuda":
        raise ValueError(f"[cuda.set_device] expected a cuda device, got {device!r}")
    return 0 if d.index is None else int(d.index)


def set_device(device) -> None:
    """Makes ``device`` (an index, ``"cuda:1"`` or a device) the current GPU: the one a bare ``"cuda"``
    names (``x.cuda()``, ``x.to("cuda")``) and the one NCCL's communicators of this process use."""
    index = _index(device)
    if index < 0:
        return
    _need_gpu("set_device")
    if index >= device_count():
        raise ValueError(f"[cuda.set_device] device index {index} is out of range: {device_count()} GPU(s) visible")
    _C.cuda_set_device(index)


def current_device() -> int:
    """Index of the current GPU."""
    return _device_index(None, "current_device")


def _device_index(device, op: str) -> int:
    _need_gpu(op)
    index = int(_C.cuda_current_device()) if device is None else _index(device)
    if not 0 <= index < device_count():
        raise ValueError(f"[cuda.{op}] device index {index} is out of range: {device_count()} GPU(s) visible")
    return index


def synchronize(device=None) -> None:
    """Waits until all work queued on the GPU (the current one by default) has finished."""
    _C.cuda_synchronize(_device_index(device, "synchronize"))


def _nothing_in_use(device) -> bool:
    """Whether statistics of the current device are asked for and there is no GPU: PyTorch reports them as
    before CUDA is initialised (zeros), so scripts can log them on any machine."""
    return device is None and not is_available()


def _memory(device, op: str) -> tuple:
    """(allocated, peak allocated, reserved) bytes; all 0 when ``_nothing_in_use``."""
    if _nothing_in_use(device):
        return 0, 0, 0
    return _C.cuda_memory_stats(_device_index(device, op))


def memory_allocated(device=None) -> int:
    """Bytes of GPU memory held by live tensors on ``device`` (rounded to the allocator's size classes); 0
    without a GPU."""
    return int(_memory(device, "memory_allocated")[0])


def max_memory_allocated(device=None) -> int:
    """The most ``memory_allocated(device)`` has been since start or ``reset_peak_memory_stats``; 0 without a
    GPU."""
    return int(_memory(device, "max_memory_allocated")[1])


def memory_reserved(device=None) -> int:
    """Bytes the caching allocator holds on ``device``: in use by tensors plus cached for reuse; 0 without a
    GPU."""
    return int(_memory(device, "memory_reserved")[2])


def max_memory_reserved(device=None) -> int:
    """0 without a GPU (as PyTorch before CUDA is initialised); with one, NotImplementedError: the allocator keeps
    no peak of its reserved bytes (``memory_reserved`` is the current value)."""
    if _nothing_in_use(device):
        return 0
    _device_index(device, "max_memory_reserved")
    raise NotImplementedError("[cuda.max_memory_reserved] the caching allocator keeps no peak of its reserved "
                              "bytes; memory_reserved() gives the current value")


def memory_stats(device=None) -> dict:
    """PyTorch's statistics keys this allocator keeps (``allocated_bytes.all.current``, ``.peak``,
    ``reserved_bytes.all.current``); empty without a GPU, as in PyTorch before CUDA is initialised."""
    if _nothing_in_use(device):
        return {}
    allocated, peak, reserved = _memory(device, "memory_stats")
    return {"allocated_bytes.all.current": int(allocated), "allocated_bytes.all.peak": int(peak),
            "reserved_bytes.all.current": int(reserved)}


def reset_peak_memory_stats(device=None) -> None:
    """Starts ``max_memory_allocated(device)`` again from the current allocation (nothing to do without a
    GPU)."""
    if _nothing_in_use(device):
        return
    _C.cuda_reset_peak_memory(_device_index(device, "reset_peak_memory_stats"))


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether the current GPU computes in bfloat16 (False without a GPU)."""
    return is_available()


def get_device_name(device=None) -> str:
    """Name of a GPU, as the driver reports it."""
    return str(_C.cuda_device_name(_device_index(device, "get_device_name")))


def empty_cache() -> None:
    """Returns the GPU blocks cached for reuse to the driver (a no-op without a GPU)."""
    if is_available():
        _C.cuda_empty_cache()


class Event:
    """A CUDA event (``torch.cuda.Event``): marks a point in a GPU's work, to wait for it or time it.

    Every kernel and copy of a device runs on its one default stream, so ``record()`` marks the point
    after everything queued on the device so far. ``elapsed_time`` needs ``enable_timing=True``.
    """

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        if interprocess:
            raise NotImplementedError("[cuda.Event] interprocess events are not supported")
        self._handle, self._device, self.enable_timing = None, None, bool(enable_timing)

    def record(self, stream=None) -> None:
        """Marks the current end of the work queued on ``stream``'s device (the current GPU by default)."""
        index = stream.device_index if stream is not None else _device_index(None, "Event.record")
        if self._handle is None:
            self._handle, self._device = _C.cuda_event_create(index, self.enable_timing), index
        elif index != self._device:
            raise ValueError(f"[cuda.Event.record] the event belongs to cuda:{self._device}, not cuda:{index}")
        _C.cuda_event_record(self._handle, index)

    def synchronize(self) -> None:
        """Waits until the work before the recorded point has finished (returns at once if never recorded)."""
        if self._handle is not None:
            _C.cuda_event_synchronize(self._handle)

    def query(self) -> bool:
        """True when the work before the recorded point has finished (or the event was never recorded)."""
        return True if self._handle is None else bool(_C.cuda_event_query(self._handle))

    def wait(self, stream=None) -> None:
        """Makes later work wait for this event; with one stream per device that order already holds."""

    def elapsed_time(self, end_event: "Event") -> float:
        """Milliseconds between this event and ``end_event`` (both recorded, both with timing)."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("[cuda.Event.elapsed_time] both events need enable_timing=True")
        if self._handle is None or end_event._handle is None:
            raise RuntimeError("[cuda.Event.elapsed_time] both events must be recorded first")
        return float(_C.cuda_event_elapsed_ms(self._handle, end_event._handle))

    def __del__(self):
        handle, self._handle = getattr(self, "_handle", None), None
        if handle is not None:
            _C.cuda_event_destroy(handle)


class Stream:
    """The default stream of a GPU (``torch.cuda.Stream``). Every kernel and copy of a device runs on
    this one stream, in order; other streams are not supported (``Stream()`` is the default stream of
    the current device, and ``stream(s)`` accepts only it)."""

    def __init__(self, device=None, priority: int = 0):
        self.device_index = _device_index(device, "Stream")

    @property
    def device(self):
        """The stream's device."""
        from ._C_face import Device

        return Device(f"cuda:{self.device_index}")

    def synchronize(self) -> None:
        """Waits until the work queued on the stream has finished."""
        _C.cuda_synchronize(self.device_index)

    def query(self) -> bool:
        """True when the stream has no unfinished work."""
        e = Event()
        e.record(self)
        return e.query()

    def record_event(self, event: Event | None = None) -> Event:
        """Records ``event`` (a new one by default) on the stream and returns it."""
        event = Event() if event is None else event
        event.record(self)
        return event

    def wait_event(self, event: Event) -> None:
        """Orders later work after ``event``: always true with one stream per device."""

    def wait_stream(self, stream: "Stream") -> None:
        """Orders later work after ``stream``'s: always true with one stream per device."""

    def __eq__(self, other) -> bool:
        return isinstance(other, Stream) and other.device_index == self.device_index

    def __hash__(self) -> int:
        return hash(("cuda-stream", self.device_index))

    def __repr__(self) -> str:
        return f"<sneppx_core.cuda.Stream device=cuda:{self.device_index} (default stream)>"


def current_stream(device=None) -> Stream:
    """The stream work on ``device`` runs on: its default stream."""
    return Stream(device)


def default_stream(device=None) -> Stream:
    """The default stream of ``device`` (the current GPU by default)."""
    return Stream(device)


class stream:  # noqa: N801  (torch.cuda.stream is a lower-case context manager)
    """``with cuda.stream(s):`` runs the block's work on ``s``; only a device's default stream exists."""

    def __init__(self, s: Stream | None):
        if s is not None and not isinstance(s, Stream):
            raise TypeError(f"[cuda.stream] expected a cuda.Stream or None, got {type(s).__name__}")
        self.stream = s

    def __enter__(self):
        return self.stream

    def __exit__(self, *exc) -> None:
        return None


__all__ = ["is_available", "device_count", "is_initialized", "manual_seed", "manual_seed_all", "seed", "seed_all",
           "set_device", "current_device", "synchronize", "is_bf16_supported", "get_device_name", "empty_cache",
           "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved", "memory_stats",
           "reset_peak_memory_stats",
           "Event",
           "Stream", "current_stream", "default_stream", "stream"]
