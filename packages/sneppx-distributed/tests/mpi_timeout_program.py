"""Run under ``mpiexec -n 2``: rank 1 exits at once; rank 0's all_reduce must fail after 2 s."""

import sneppx_core as sx
import sneppx_distributed as dist

dist.init_process_group(timeout=2)
if dist.get_rank() == 0:
    dist.all_reduce(sx.ones(4))
