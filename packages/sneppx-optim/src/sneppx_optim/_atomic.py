"""Atomic checkpoint writes: a temporary file beside the target, fsync, then ``os.replace``.

A temporary file is named ``.<target name>.<pid>@<host>.<random>.tmp``. A save killed in the
middle (SIGKILL, power loss) leaves its temporary file behind; the next save of the same target
removes it when its writer is gone: the process ``pid`` no longer runs on this host, or, for a
file written from another host (a shared file system), when it is older than a day. Temporary
files from before this naming (``.checkpoint-<random>.tmp``) are removed after an hour.
"""

from __future__ import annotations

import os
import re
import secrets
import socket
import time

_HOST = socket.gethostname()
_FOREIGN_AGE_S = 24 * 3600.0
_LEGACY_AGE_S = 3600.0
_LEGACY = re.compile(r"^\.checkpoint-[a-z0-9_]{8}\.tmp$")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:  # a zombie has finished writing for good
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def remove_stale_temps(path: str) -> list[str]:
    """Delete the temporary files that dead saves of ``path`` left behind; return their names."""
    folder, base = os.path.split(os.path.abspath(path))
    pattern = re.compile(rf"^\.{re.escape(base)}\.(\d+)@(.+)\.[a-z0-9_]{{8}}\.tmp$")
    removed = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    now = time.time()
    for name in names:
        m = pattern.match(name)
        if m is None and not _LEGACY.match(name):
            continue
        full = os.path.join(folder, name)
        pid, host = (m.group(1), m.group(2)) if m else (None, None)
        if pid is not None and host == _HOST:
            stale = not _pid_alive(int(pid))
        else:
            try:
                age = now - os.stat(full).st_mtime
            except OSError:
                continue
            stale = age > (_FOREIGN_AGE_S if pid is not None else _LEGACY_AGE_S)
        if stale:
            try:
                os.remove(full)
                removed.append(name)
            except OSError:
                pass
    return removed


def atomic_write(path: str, data: bytes) -> None:
    """Writes ``data`` to a temporary file, fsyncs it and renames it over ``path``.

    Stale temporary files of ``path`` are removed first. A failed write (a full disk, say)
    raises ``OSError`` with ``path`` as its filename and leaves no temporary file.
    """
    path = os.fspath(path)
    folder, base = os.path.split(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    remove_stale_temps(path)
    tmp = os.path.join(folder, f".{base}.{os.getpid()}@{_HOST}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies, as with open()
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if not isinstance(exc, OSError):
            raise
        reason = exc.strerror or str(exc)
        raise OSError(exc.errno, f"save_checkpoint: could not write {path!r}: {reason}", path) from exc
