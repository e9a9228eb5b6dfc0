"""Run under ``mpiexec -n N``: SyncBatchNorm over N ranks against BatchNorm over the whole batch in one process;
rank 0 prints ``SYNCBN CHECKS PASSED <k>``.

Every rank builds the whole batch (``default_rng(7)``) and keeps its own slice of rows for the synchronised layer;
the reference is a BatchNorm with the same parameters run on the whole batch, with the whole loss.
"""

import numpy as np
import sneppx_core as sx
import sneppx_distributed as dist
import sneppx_nn as nn

dist.init_process_group(timeout=30)
R, N = dist.get_rank(), dist.get_world_size()
checks = 0


def ok(got, want, what, tol=1e-10):
    global checks
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64), rtol=tol,
                               atol=tol, err_msg=f"rank {R}: {what}")
    checks += 1


for shape in [(4 * N, 3), (2 * N, 3, 5), (2 * N, 2, 3, 4)]:
    rng = np.random.default_rng(7)
    full = rng.standard_normal(shape) * 3 + 1.5
    seed = rng.standard_normal(shape)
    w, b = rng.standard_normal(shape[1]), rng.standard_normal(shape[1])
    rows = shape[0] // N
    mine = slice(R * rows, (R + 1) * rows)

    ref = {2: nn.BatchNorm1d, 3: nn.BatchNorm1d, 4: nn.BatchNorm2d}[len(shape)](shape[1], dtype=sx.float64)
    sync = nn.SyncBatchNorm.convert_sync_batchnorm(
        {2: nn.BatchNorm1d, 3: nn.BatchNorm1d, 4: nn.BatchNorm2d}[len(shape)](shape[1], dtype=sx.float64))
    assert type(sync).__name__ == "SyncBatchNorm"
    for layer in (ref, sync):
        with sx.no_grad():
            layer.weight.copy_(sx.tensor(w))
            layer.bias.copy_(sx.tensor(b))
    for step in range(2):  # two steps: the running statistics move twice
        xr = sx.tensor(full + step, requires_grad=True)
        yr = ref(xr)
        (yr * sx.tensor(seed)).sum().backward()
        xs = sx.tensor(full[mine] + step, requires_grad=True)
        ys = sync(xs)
        (ys * sx.tensor(seed[mine])).sum().backward()
        ok(ys.detach().numpy(), yr.detach().numpy()[mine], f"{shape} output, step {step}")
        ok(xs.grad.numpy(), xr.grad.numpy()[mine], f"{shape} input gradient, step {step}")
        for p_ref, p_sync, name in ((ref.weight, sync.weight, "weight"), (ref.bias, sync.bias, "bias")):
            g = p_sync.grad.clone()
            dist.all_reduce(g)  # each rank's own part; their sum is the whole batch's (DDP averages them)
            ok(g.numpy(), p_ref.grad.numpy(), f"{shape} {name} gradient summed over ranks, step {step}")
            p_ref.grad = p_sync.grad = None
    ok(sync.running_mean.numpy(), ref.running_mean.numpy(), f"{shape} running_mean")
    ok(sync.running_var.numpy(), ref.running_var.numpy(), f"{shape} running_var")
    ok(sync.num_batches_tracked.item(), ref.num_batches_tracked.item(), "num_batches_tracked")
    sync.eval()
    ref.eval()
    ok(sync(sx.tensor(full[mine])).detach().numpy(), ref(sx.tensor(full)).detach().numpy()[mine], "eval output")

dist.barrier()
dist.destroy_process_group()
if R == 0:
    print(f"SYNCBN CHECKS PASSED {checks}", flush=True)
