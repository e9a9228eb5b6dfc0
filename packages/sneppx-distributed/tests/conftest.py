"""Helpers to run programs under the mpiexec that matches mpi4py's MPI library."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


@pytest.fixture
def run_mpi():
    """``run_mpi(n, program, timeout=60)``: run ``tests/<program>`` in ``n`` ranks; returns the CompletedProcess."""
    from sneppx_distributed import find_mpiexec

    def run(n: int, program: str, timeout: float = 60.0):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        cmd = [find_mpiexec(), "-n", str(n), sys.executable, str(HERE / program)]
        return subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout, env=env)

    return run
