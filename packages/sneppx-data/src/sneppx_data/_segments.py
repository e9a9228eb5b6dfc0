"""Shared-memory segments of the DataLoader: creation, naming and cleanup.

Ownership and cleanup: a segment needs its name only until the main process has attached it,
so the main process unlinks the name right after attaching; both mappings stay valid and the
memory goes away with the last of them, whoever dies first. At any moment only the segments
a worker has filled but the main process has not yet read (at most ``prefetch_factor`` per
worker) have a name in ``/dev/shm``. A worker also unlinks a segment it retires (too small
for a batch) and all of its segments when it exits; the main process, on shutdown, unlinks
every name that still carries this loader's prefix (a worker that was killed cannot clean up
after itself). Names start with ``sxd<pid>_`` (``pid`` of the loader's main process), so a
new loader removes the leftovers of loaders whose process no longer exists (killed with
SIGKILL together with its workers). Segments are kept out of Python's resource tracker
because their lifetime is managed here.
"""

from __future__ import annotations

import glob
import os
import re
import secrets
import sys
from multiprocessing import resource_tracker, shared_memory

try:  # POSIX: shm_unlink without going through the resource tracker (Python < 3.13)
    import _posixshmem
except ImportError:  # Windows: a segment disappears with its last handle, there is no name to remove
    _posixshmem = None

_TRACK_ARG = sys.version_info >= (3, 13)
_OWNER = re.compile(r"sxd(\d+)_[0-9a-f]+_")


def segment_prefix() -> str:
    """A name prefix unique to one loader iterator in this process."""
    return f"sxd{os.getpid()}_{secrets.token_hex(4)}_"


def _untrack(shm: shared_memory.SharedMemory) -> None:
    if not _TRACK_ARG:
        resource_tracker.unregister(getattr(shm, "_name", "/" + shm.name), "shared_memory")


def create_segment(name: str, size: int) -> shared_memory.SharedMemory:
    """Create a segment that Python's resource tracker does not manage."""
    if _TRACK_ARG:
        return shared_memory.SharedMemory(name=name, create=True, size=size, track=False)
    shm = shared_memory.SharedMemory(name=name, create=True, size=size)
    _untrack(shm)
    return shm


def attach_segment(name: str) -> shared_memory.SharedMemory:
    """Attach to an existing segment without registering it with the resource tracker."""
    if _TRACK_ARG:
        return shared_memory.SharedMemory(name=name, track=False)
    shm = shared_memory.SharedMemory(name=name)
    _untrack(shm)
    return shm


def unlink_name(name: str) -> bool:
    """Remove the segment ``name`` from the namespace; False when it is already gone.

    Bypasses the resource tracker, which never registered these segments.
    """
    if _posixshmem is None:
        return True
    try:
        _posixshmem.shm_unlink("/" + name.lstrip("/"))
    except FileNotFoundError:
        return False
    return True


def unlink_quietly(shm: shared_memory.SharedMemory) -> None:
    """Close and unlink ``shm``, ignoring a segment that is already gone."""
    try:
        shm.close()
    except BufferError:
        pass
    try:
        unlink_name(shm.name)
    except OSError:
        pass


def sweep_segments(prefix: str) -> int:
    """Unlink every leftover segment named ``prefix*`` (Linux ``/dev/shm``); return how many."""
    removed = 0
    for path in glob.glob(f"/dev/shm/{prefix}*"):
        try:
            os.unlink(path)
            removed += 1
        except OSError:
            pass
    return removed


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        pass
    try:  # a zombie (killed, not yet reaped) no longer owns anything
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def sweep_orphans() -> int:
    """Unlink the segments of loaders whose main process is gone; return how many.

    A loader killed together with its workers (SIGKILL, the OOM killer) cannot unlink the
    segments that were in flight; the next loader on the machine removes them.
    """
    removed = 0
    for path in glob.glob("/dev/shm/sxd*_*"):
        m = _OWNER.match(os.path.basename(path))
        if m is None or _pid_alive(int(m.group(1))):
            continue
        try:
            os.unlink(path)
            removed += 1
        except OSError:
            pass
    return removed
