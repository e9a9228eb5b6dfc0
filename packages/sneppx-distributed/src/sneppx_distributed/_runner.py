"""Rank entry point of :func:`sneppx_distributed.launch`.

``python -m sneppx_distributed._runner module:function FOLDER`` imports the function, loads
``(args, kwargs)`` from ``FOLDER/args.pkl``, calls it, and on rank 0 writes the return value to
``FOLDER/result.pkl``. On an exception it writes the traceback to ``FOLDER/error-rank<R>.txt``
and calls ``MPI_Abort`` so that no other rank is left waiting.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import pickle
import sys
import traceback
from pathlib import Path


def _import_target(spec: dict):
    if spec["main_path"]:
        path = spec["main_path"]
        sys.path.insert(0, os.path.dirname(path))
        mod_spec = importlib.util.spec_from_file_location("__mp_main__", path)
        module = importlib.util.module_from_spec(mod_spec)
        sys.modules["__mp_main__"] = sys.modules["__main__"] = module
        mod_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(spec["module"])
    obj = module
    for part in spec["qualname"].split("."):
        obj = getattr(obj, part)
    return obj


def _set_threads(nprocs: int) -> None:
    import sneppx_core as sx

    env = os.environ.get("SNEPPX_NUM_THREADS")
    sx.set_num_threads(int(env) if env else max(1, (os.cpu_count() or 1) // max(1, nprocs)))


def _write(path: Path, data: bytes) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def main(argv: list) -> None:
    """Run the target named in ``argv[1]`` with the arguments stored in folder ``argv[2]``."""
    from mpi4py import MPI

    folder = Path(argv[2])
    rank = MPI.COMM_WORLD.Get_rank()
    try:
        spec = json.loads((folder / "spec.json").read_text())
        _set_threads(spec["nprocs"])
        fn = _import_target(spec)
        args, kwargs = pickle.loads((folder / "args.pkl").read_bytes())
        result = fn(*args, **kwargs)
        if rank == 0:
            _write(folder / "result.pkl", pickle.dumps(result))
    except BaseException as exc:  # noqa: BLE001  (report anything, then abort every rank)
        if isinstance(exc, SystemExit) and exc.code in (0, None):
            return
        text = traceback.format_exc()
        _write(folder / f"error-rank{rank}.txt", text.encode())
        sys.stderr.write(f"[rank {rank}] {text}")
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(1)
    from .group import destroy_process_group, is_initialized

    if is_initialized():
        destroy_process_group()


if __name__ == "__main__":
    main(sys.argv)
