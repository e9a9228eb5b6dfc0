"""Atomic checkpoint writes: a temporary file beside the target, fsync, then ``os.replace``.

A temporary file is named ``.<target name>.<pid>@<host>.<random>.tmp``. A save killed in the
middle (SIGKILL, power loss) leaves its temporary file behind; the next save of the same target
removes it when its writer is gone: the process ``pid`` no longer runs on this host, or, for a
file written from another host (a shared file system), when it is older than a day. Temporary
files from before this naming (``.<target name>.<random>.tmp``) are removed after an hour.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import socket
import time

import safetensors

_HOST = socket.gethostname()
_FOREIGN_AGE_S = 24 * 3600.0
_LEGACY_AGE_S = 3600.0
_OS_ERROR = re.compile(r"os error (\d+)")


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
    pattern = re.compile(rf"^\.{re.escape(base)}\.(?:(\d+)@(.+)\.)?[a-z0-9_]{{8}}\.tmp$")
    removed = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    now = time.time()
    for name in names:
        m = pattern.match(name)
        if m is None:
            continue
        full = os.path.join(folder, name)
        pid, host = m.group(1), m.group(2)
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


def _as_os_error(exc: BaseException, op: str, path: str) -> OSError | None:
    """An OSError naming ``path`` for a failed write (safetensors reports I/O as SafetensorError)."""
    if isinstance(exc, OSError):
        code, reason = exc.errno, exc.strerror or str(exc)
    elif isinstance(exc, safetensors.SafetensorError) and ("I/O error" in str(exc) or "os error" in str(exc)):
        m = _OS_ERROR.search(str(exc))
        code = int(m.group(1)) if m else errno.EIO
        reason = os.strerror(code) if m else str(exc)
    else:
        return None
    return OSError(code, f"[{op}] could not write checkpoint {path}: {reason}", path)


def atomic_write(path: str, write, op: str = "save") -> None:
    """Calls ``write(tmp)`` to fill a temporary file, fsyncs it and renames it over ``path``.

    Stale temporary files of ``path`` are removed first. A failed write (a full disk, say)
    raises ``OSError`` with ``path`` as its filename and leaves no temporary file.
    """
    path = os.fspath(path)
    folder, base = os.path.split(os.path.abspath(path))
    remove_stale_temps(path)
    tmp = os.path.join(folder, f".{base}.{os.getpid()}@{_HOST}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies, as with open()
    mode = os.fstat(fd).st_mode & 0o777
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, mode)  # the writer may have replaced the file with one of another mode
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException as exc:
        if os.path.exists(tmp):
            os.remove(tmp)
        converted = _as_os_error(exc, op, path)
        if converted is None:
            raise
        raise converted from exc
