"""Every collective against NumPy, and SyncBatchNorm against BatchNorm over the whole batch, in 2 and 3 ranks started
with mpiexec."""

import pytest


@pytest.mark.parametrize("n", [2, 3])
def test_collectives_match_numpy(run_mpi, n):
    out = run_mpi(n, "mpi_collectives_program.py")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "CHECKS PASSED" in out.stdout, out.stdout + out.stderr
    assert int(out.stdout.split("CHECKS PASSED")[1].split()[0]) >= 50


def test_ranks_that_disagree_raise_at_once_on_every_rank(run_mpi):
    out = run_mpi(2, "mpi_mismatch_program.py", timeout=90)
    assert out.returncode == 0, out.stdout + out.stderr
    for rank in (0, 1):
        assert f"rank {rank}: MISMATCH CHECKS PASSED 14" in out.stdout, out.stdout + out.stderr


@pytest.mark.parametrize("n", [2, 3])
def test_sync_batch_norm_matches_whole_batch(run_mpi, n):
    pytest.importorskip("sneppx_nn")
    out = run_mpi(n, "mpi_syncbn_program.py")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SYNCBN CHECKS PASSED" in out.stdout, out.stdout + out.stderr
    # per shape: 2 steps of 4 checks, 3 statistics and the eval output
    assert int(out.stdout.split("SYNCBN CHECKS PASSED")[1].split()[0]) == 3 * (2 * 4 + 4)
