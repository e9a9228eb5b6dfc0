"""``launch``: run a training function in N MPI ranks from an ordinary Python process.

The parent never becomes an MPI process. It writes the function's location and its pickled
arguments to a temporary folder and runs ``mpiexec -n N python -m sneppx_distributed._runner
module:function folder``. Each rank imports the function (a function of the script being run
is imported from the script's file under the name ``__mp_main__``, as ``multiprocessing``
does, so keep the launching code under ``if __name__ == "__main__":``), calls it, and rank 0
pickles its return value back. A rank that raises writes its traceback to the folder and calls
``MPI_Abort``, which stops every rank; the parent then raises ``RuntimeError`` with that traceback.
"""

from __future__ import annotations

import datetime
import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import sneppx_core as sx

from ._mpi import find_mpiexec
from .group import DEFAULT_TIMEOUT, LOCAL_RANK_ENV, RANK_ENV, TIMEOUT_ENV, WORLD_SIZE_ENV

_MPI_ENV_PREFIXES = ("PMI_", "PMIX_", "HYDRA_", "OMPI_", "MPI_LOCAL", "I_MPI_HYDRA")
# The user's own Open MPI settings, kept: they let Open MPI's mpiexec start ranks as root (containers).
_MPI_ENV_KEPT = ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM")


def _num_ranks(num_gpus, nprocs) -> int:
    for name, v in (("num_gpus", num_gpus), ("nprocs", nprocs)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
            raise ValueError(f"launch: {name} must be a non-negative int, got {v!r}")
    if num_gpus:
        if not sx.cuda.is_available():
            raise RuntimeError(f"launch: num_gpus={num_gpus} but no CUDA device is available (this build of "
                               "sneppx-core has no CUDA tensors or no GPU is visible); use nprocs= for CPU ranks")
        if num_gpus > sx.cuda.device_count():
            raise RuntimeError(f"launch: num_gpus={num_gpus} but only {sx.cuda.device_count()} GPUs are visible")
        if nprocs not in (None, num_gpus):
            raise ValueError(f"launch: nprocs={nprocs} and num_gpus={num_gpus} disagree (one rank per GPU)")
        return num_gpus
    if not nprocs:
        raise ValueError(f"launch: pass nprocs= (number of CPU ranks) or num_gpus=, got nprocs={nprocs!r}, "
                         f"num_gpus={num_gpus!r}")
    return nprocs


def _locate(fn) -> dict:
    """Where the ranks find ``fn``: its module and qualified name (and the script path for ``__main__``)."""
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    if not callable(fn) or module is None or not qualname or "<" in qualname:
        raise ValueError(f"launch: train_fn must be a function defined at module level (found by module and "
                         f"name in every rank), got {fn!r}")
    spec = {"module": module, "qualname": qualname, "main_path": None}
    if module in ("__main__", "__mp_main__"):
        path = getattr(sys.modules.get("__main__"), "__file__", None)
        if not path:
            raise ValueError("launch: train_fn is defined in an interactive session; define it in a module or "
                             "in the script being run")
        spec["main_path"] = str(Path(path).resolve())
    return spec


def _seconds(timeout) -> float:
    if isinstance(timeout, datetime.timedelta):
        timeout = timeout.total_seconds()
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"launch: timeout must be a positive number of seconds or a timedelta, got {timeout!r}")
    return float(timeout)


def _child_env(timeout: float) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_MPI_ENV_PREFIXES) or k in _MPI_ENV_KEPT}
    for key in (RANK_ENV, WORLD_SIZE_ENV, LOCAL_RANK_ENV):
        env.pop(key, None)
    paths = [str(Path(p or os.getcwd()).resolve()) for p in sys.path]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(p for p in paths if os.path.isdir(p)))
    env[TIMEOUT_ENV] = repr(timeout)
    return env


def _run(cmd: list, env: dict, job_timeout) -> int:
    proc = subprocess.Popen(cmd, env=env, start_new_session=True)
    try:
        return proc.wait(timeout=job_timeout)
    except BaseException:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
                proc.wait(timeout=5)
                break
            except (ProcessLookupError, subprocess.TimeoutExpired):
                continue
        raise


def _collect(folder: Path, rc: int, n: int):
    errors = sorted(folder.glob("error-rank*.txt"), key=lambda p: p.stat().st_mtime)
    if errors:
        first = errors[0]
        rank = first.stem.removeprefix("error-rank")
        others = f" ({len(errors)} ranks reported errors)" if len(errors) > 1 else ""
        raise RuntimeError(f"launch: rank {rank} of {n} raised{others}; its traceback:\n{first.read_text()}")
    if rc != 0:
        raise RuntimeError(f"launch: mpiexec exited with status {rc} and no rank reported a Python exception "
                           "(a rank was killed or called MPI_Abort; see the output above)")
    result = folder / "result.pkl"
    if not result.exists():
        raise RuntimeError("launch: rank 0 finished without writing its return value")
    main = sys.modules.get("__main__")
    if main is not None:
        sys.modules.setdefault("__mp_main__", main)  # rank 0 pickles the script's classes under this name
    return pickle.loads(result.read_bytes())


def launch(train_fn, num_gpus: int | None = None, nprocs: int | None = None, args=(), kwargs=None,
           timeout=DEFAULT_TIMEOUT, job_timeout: float | None = None, mpiexec_args=()):
    """Run ``train_fn(*args, **kwargs)`` in N MPI ranks and return rank 0's return value.

    Args:
        train_fn: a module-level function (of an importable module or of the running script).
            It usually calls ``init_process_group()`` first; rank and size come from MPI.
        num_gpus: one rank per GPU (``RuntimeError`` when CUDA is not available).
        nprocs: number of CPU ranks.
        args, kwargs: picklable arguments for ``train_fn``.
        timeout: default collective timeout of the ranks' process groups (seconds or ``timedelta``).
        job_timeout: optional wall-clock limit of the whole job in seconds; the ranks are killed and
            ``RuntimeError`` is raised when it is exceeded.
        mpiexec_args: extra arguments for ``mpiexec`` (``["-hosts", "a,b"]``, for example).

    Each rank's core thread pool gets ``cpu_count // N`` threads unless ``SNEPPX_NUM_THREADS`` is set.

    Raises:
        RuntimeError: with the rank's traceback when any rank raises; on a timeout; when a rank dies.
    """
    n = _num_ranks(num_gpus, nprocs)
    spec, seconds = _locate(train_fn), _seconds(timeout)
    folder = Path(tempfile.mkdtemp(prefix="sneppx-launch-"))
    try:
        (folder / "spec.json").write_text(json.dumps({**spec, "nprocs": n}))
        try:
            (folder / "args.pkl").write_bytes(pickle.dumps((tuple(args), dict(kwargs or {}))))
        except Exception as exc:
            raise TypeError(f"launch: args and kwargs must be picklable ({exc})") from exc
        cmd = [find_mpiexec(), "-n", str(n), *map(str, mpiexec_args), sys.executable, "-m",
               "sneppx_distributed._runner", f"{spec['module']}:{spec['qualname']}", str(folder)]
        try:
            rc = _run(cmd, _child_env(seconds), job_timeout)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"launch: the job ran longer than job_timeout={job_timeout} s; its ranks "
                               "were killed") from None
        return _collect(folder, rc, n)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
