"""Run under ``mpiexec -n 2``: collectives whose ranks disagree raise at once on every rank.

The group timeout (120 s) is longer than the test's limit, so a disagreement that is not caught
shows up as a hang. Every rank prints ``rank <r>: MISMATCH CHECKS PASSED <k>``.
"""

import numpy as np
import sneppx_core as sx
import sneppx_distributed as dist
from sneppx_distributed import ReduceOp

dist.init_process_group(timeout=120)
R, N = dist.get_rank(), dist.get_world_size()
assert N == 2
checks = 0


def raises(fn, *needles):
    """``fn()`` must raise RuntimeError on this rank, with every needle in the message."""
    global checks
    try:
        fn()
    except RuntimeError as e:
        for needle in needles:
            assert needle in str(e), f"rank {R}: {needle!r} not in {e}"
        checks += 1
        return
    raise AssertionError(f"rank {R}: no error from {fn}")


def still_works():
    """A matching all_reduce after a disagreement: nothing was left half-sent."""
    global checks
    t = sx.Tensor(np.full(4, R + 1.0, np.float32))
    dist.all_reduce(t)
    assert t.numpy().tolist() == [3.0] * 4, t.numpy()
    checks += 1


shape = (2, 3) if R == 0 else (3,)
raises(lambda: dist.all_reduce(sx.zeros(shape)), "all_reduce", "shape (2, 3)", "shape (3,)", "rank 0", "rank 1")
still_works()
dtype = sx.float32 if R == 0 else sx.float64
raises(lambda: dist.all_reduce(sx.zeros((4,), dtype=dtype)), "dtype float32", "dtype float64")
still_works()
raises(lambda: dist.all_reduce(sx.zeros((4,)), ReduceOp.SUM if R == 0 else ReduceOp.MAX),
       "ReduceOp.SUM", "ReduceOp.MAX")
work = dist.all_reduce(sx.zeros((5,) if R == 0 else (6,)), async_op=True)  # async: raises on wait
raises(work.wait, "shape (5,)", "shape (6,)")
still_works()
raises(lambda: dist.broadcast(sx.zeros((2,) if R == 0 else (3,)), src=0), "broadcast", "rooted at rank 0")
raises(lambda: dist.all_gather([sx.zeros(R + 1) for _ in range(N)], sx.zeros(R + 1)), "all_gather")
raises(lambda: dist.reduce_scatter_tensor(sx.zeros(R + 1), sx.zeros(2 * (R + 1))), "reduce_scatter_tensor")
raises(lambda: dist.gather(sx.zeros(R + 2), [sx.zeros(R + 2) for _ in range(N)] if R == 0 else None, dst=0),
       "gather")
if R == 0:  # different collectives on the two ranks
    raises(lambda: dist.all_reduce(sx.zeros(3)), "all_reduce of", "broadcast of")
else:
    raises(lambda: dist.broadcast(sx.zeros(3), src=0), "all_reduce of", "broadcast of")
still_works()

# async works waited out of order still pair up with the right peers' data
a, b = sx.Tensor(np.full(3, R + 1.0, np.float32)), sx.Tensor(np.full(2, 10.0 * (R + 1), np.float32))
wa, wb = dist.all_reduce(a, async_op=True), dist.all_reduce(b, async_op=True)
wb.wait()
wa.wait()
assert a.numpy().tolist() == [3.0] * 3 and b.numpy().tolist() == [30.0] * 2, (a.numpy(), b.numpy())
checks += 1
dist.barrier()
print(f"rank {R}: MISMATCH CHECKS PASSED {checks}", flush=True)
dist.destroy_process_group()
