"""The public surface, checked in this process without starting MPI."""

import ast
import os
import re
import subprocess
from pathlib import Path

import pytest
import sneppx_core as sx
import sneppx_distributed as dist

SRC = Path(dist.__file__).parent


def test_public_names_exist_and_have_docstrings():
    for name in dist.__all__:
        obj = getattr(dist, name)
        if name != "__version__":
            assert (obj.__doc__ or "").strip(), f"{name} has no docstring"
    assert dist.DistributedWrapper is dist.DistributedDataParallel
    assert re.fullmatch(r"\d+\.\d+\.\d+", dist.__version__)


def test_importing_does_not_start_mpi():
    code = "import sys, sneppx_distributed; print('mpi4py.MPI' in sys.modules)"
    out = subprocess.run([os.sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


def test_state_before_initialisation():
    assert dist.DistributedContext.initialized is False
    assert dist.is_initialized() is False
    for fn in (dist.get_rank, dist.get_world_size, dist.get_local_rank, dist.barrier, dist.destroy_process_group):
        with pytest.raises(RuntimeError, match="not initialised; call init_process_group"):
            fn()
    with pytest.raises(RuntimeError, match="all_reduce: the default process group is not initialised"):
        dist.all_reduce(sx.ones(2))
    with pytest.raises(RuntimeError, match="DistributedDataParallel: the default process group"):
        dist.DistributedDataParallel(object())


def test_backend_choice():
    if not sx.cuda.is_available():
        with pytest.raises(RuntimeError, match=r"no CUDA tensors \(sneppx_core.cuda.is_available\(\) is False\)"):
            dist.init_process_group("nccl")
    with pytest.raises(ValueError, match="backend 'gloo' is not available: SneppX's CPU backend is 'mpi'"):
        dist.init_process_group("gloo")
    with pytest.raises(ValueError, match="unknown backend 'ucc'; supported: mpi, nccl"):
        dist.init_process_group("ucc")
    assert dist.Backend.MPI == "mpi" and dist.Backend.NCCL == "nccl"
    assert not dist.is_initialized()


def test_availability_and_default_backends():
    assert dist.is_available() and dist.is_mpi_available() and not dist.is_gloo_available()
    if not sx.cuda.is_available():
        assert not dist.is_nccl_available()
    assert not dist.is_initialized()  # asking does not start MPI's group
    assert dist.get_default_backend_for_device("cpu") == "mpi"
    assert dist.get_default_backend_for_device(sx.device("cuda", 1)) == "nccl"
    assert dist.get_default_backend_for_device("cuda:0") == "nccl"
    with pytest.raises(ValueError, match="no backend for device 'meta'"):
        dist.get_default_backend_for_device("meta")


def test_mpiexec_matches_the_library_mpi4py_loads():
    launcher = dist.find_mpiexec()
    version = subprocess.run([launcher, "--version"], check=False, capture_output=True, text=True, timeout=30).stdout
    probe = "from mpi4py import MPI; print(MPI.Get_library_version())"
    library = subprocess.run([os.sys.executable, "-c", probe], check=False, capture_output=True, text=True,
                             timeout=60).stdout
    lib_version = re.search(r"MPICH Version:\s*(\S+)", library)
    if lib_version is None:
        pytest.skip("mpi4py does not use MPICH here")
    assert re.search(r"Version:\s*" + re.escape(lib_version.group(1)), version), (launcher, version, library)


def test_sources_import_only_core_among_siblings():
    siblings = {"sneppx_nn", "sneppx_optim", "sneppx_data", "sneppx_generate", "SneppX_ALG"}
    for path in SRC.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                assert name.split(".")[0] not in siblings, f"{path.name} imports {name}"
        assert len(path.read_text().splitlines()) < 300, f"{path.name} is over 300 lines"


def _init_group(rank):
    dist.init_process_group()


def test_processes_of_multiprocessing_spawn_are_not_ranks():
    from sneppx_core import multiprocessing as mp

    with pytest.raises(mp.ProcessRaisedException, match="started by multiprocessing.spawn, which are not MPI ranks"):
        mp.spawn(_init_group, nprocs=2)
