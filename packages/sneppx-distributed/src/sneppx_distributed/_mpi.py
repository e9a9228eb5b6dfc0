"""Access to MPI through mpi4py, and the ``mpiexec`` that matches the library mpi4py loads.

``mpi4py.MPI`` is imported lazily: importing ``sneppx_distributed`` never initialises MPI, so a
parent process can call :func:`sneppx_distributed.launch` without becoming an MPI process itself.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

MPIEXEC_ENV = "SNEPPX_MPIEXEC"

_PROBE = (
    "import mpi4py; mpi4py.rc.initialize = False; mpi4py.rc.finalize = False\n"
    "from mpi4py import MPI\n"
    "paths = {l.split()[-1] for l in open('/proc/self/maps') if 'libmpi' in l and '/' in l}\n"
    "print('\\n'.join(sorted(paths)))\n"
)


@functools.lru_cache(maxsize=1)  # every collective asks for it several times; a failed import is not kept
def mpi():
    """Return the ``mpi4py.MPI`` module (initialising MPI on first use).

    Raises:
        RuntimeError: when mpi4py cannot be imported (no MPI library found).
    """
    try:
        from mpi4py import MPI
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise RuntimeError(
            f"sneppx_distributed: mpi4py could not be imported ({exc}); install it with "
            "`pip install mpi4py mpich` or build it against your cluster's MPI"
        ) from exc
    return MPI


@functools.lru_cache(maxsize=1)
def _libmpi_dirs() -> tuple[str, ...]:
    """Directories of the libmpi shared objects that mpi4py loads in this environment."""
    if not sys.platform.startswith("linux"):
        return ()
    try:
        out = subprocess.run([sys.executable, "-c", _PROBE], check=False, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return ()
    return tuple(dict.fromkeys(str(Path(p).parent) for p in out.stdout.split()))


def find_mpiexec() -> str:
    """Return the path of the ``mpiexec`` launcher that matches mpi4py's MPI library.

    Search order: the ``SNEPPX_MPIEXEC`` environment variable; ``bin/mpiexec`` in the prefix of
    the ``libmpi`` that mpi4py loads (the ``mpich`` wheel puts both in the environment's prefix,
    a system MPI keeps them side by side too); the folder of ``sys.executable``; ``PATH``.

    Raises:
        RuntimeError: when no launcher is found.
    """
    explicit = os.environ.get(MPIEXEC_ENV)
    if explicit:
        if not os.access(explicit, os.X_OK):
            raise RuntimeError(f"find_mpiexec: {MPIEXEC_ENV}={explicit!r} is not an executable file")
        return explicit
    candidates = [Path(d).parent / "bin" / "mpiexec" for d in _libmpi_dirs()]
    candidates.append(Path(sys.executable).parent / "mpiexec")
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    found = shutil.which("mpiexec")
    if found:
        return found
    raise RuntimeError(
        "find_mpiexec: no mpiexec found; install the `mpich` wheel (pip install mpich) or set "
        f"{MPIEXEC_ENV} to your MPI's launcher"
    )


def library_version() -> str:
    """The first line of ``MPI.Get_library_version()`` (initialises MPI)."""
    return mpi().Get_library_version().splitlines()[0].strip()
