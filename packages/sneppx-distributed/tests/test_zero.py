"""ZeroRedundancyOptimizer and the object collectives in 2 and 3 ranks started with mpiexec (see
mpi_zero_program.py: the reference is one AdamW over all parameters)."""

import pytest


@pytest.mark.parametrize("n", [2, 3])
def test_zero_redundancy_optimizer_matches_one_optimizer(run_mpi, n):
    pytest.importorskip("sneppx_optim")
    out = run_mpi(n, "mpi_zero_program.py", timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "ZERO CHECKS PASSED" in out.stdout, out.stdout + out.stderr
    assert int(out.stdout.split("ZERO CHECKS PASSED")[1].split()[0]) >= 25


def test_zero_redundancy_optimizer_refuses_overlap_with_ddp():
    import sneppx_distributed as dist

    with pytest.raises(NotImplementedError, match="overlap_with_ddp"):
        dist.optim.ZeroRedundancyOptimizer([], object, overlap_with_ddp=True)
