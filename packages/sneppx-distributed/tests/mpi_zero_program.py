"""Run under ``mpiexec -n N``: ZeroRedundancyOptimizer against one AdamW over all parameters (every rank), the
sharded state, state_dict consolidation and loading, and the object collectives; rank 0 prints
``ZERO CHECKS PASSED <k>``."""

import numpy as np
import sneppx_core as sx
import sneppx_distributed as dist
import sneppx_optim as optim
from sneppx_distributed.optim import ZeroRedundancyOptimizer

dist.init_process_group(timeout=30)
R, N = dist.get_rank(), dist.get_world_size()
SHAPES = [(7, 5), (5,), (3, 3), (11,), (2, 2, 2)]
checks = 0


def params():
    rng = np.random.default_rng(0)  # the same on every rank
    return [sx.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True) for s in SHAPES]


def grads(step):
    rng = np.random.default_rng(10 + step)
    return [rng.standard_normal(s).astype(np.float32) for s in SHAPES]


def ok(cond, what):
    global checks
    assert cond, f"rank {R}: {what}"
    checks += 1


def run(opt, ps, steps, start=0):
    for step in range(start, start + steps):
        for p, g in zip(ps, grads(step)):
            p.grad = sx.tensor(g)
        opt.step()
        opt.zero_grad()


ref = params()
ref_opt = optim.AdamW([{"params": ref[:3]}, {"params": ref[3:], "lr": 0.02}], lr=0.01, weight_decay=0.1)
zp = params()
zero = ZeroRedundancyOptimizer([{"params": zp[:3]}, {"params": zp[3:], "lr": 0.02}], optim.AdamW, lr=0.01,
                               weight_decay=0.1)
run(ref_opt, ref, 3)
run(zero, zp, 3)
for a, b in zip(ref, zp):
    ok(np.allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-7), "parameters equal one AdamW's")
owners = [zero.owner[id(p)] for p in zp]
ok(sorted(set(owners)) == list(range(min(N, len(zp)))), f"every rank owns parameters: {owners}")
ok(len(zero.state) == owners.count(R), "only the own parameters' state is kept")
ok(owners[0] == 0, "the largest parameter goes to rank 0")

zero.param_groups[1]["lr"] = 0.005  # a scheduler's change reaches the wrapped optimizer
ref_opt.param_groups[1]["lr"] = 0.005
run(ref_opt, ref, 1, start=3)
run(zero, zp, 1, start=3)
ok(all(np.allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-7) for a, b in zip(ref, zp)),
   "a changed lr applies")

zero.consolidate_state_dict(to=0)
if R == 0:
    sd, want = zero.state_dict(), ref_opt.state_dict()
    ok(sorted(sd["state"]) == sorted(want["state"]), "every parameter's state is consolidated")
    for k in want["state"]:
        for name in ("exp_avg", "exp_avg_sq"):
            ok(np.allclose(sd["state"][k][name].numpy(), want["state"][k][name].numpy(), rtol=1e-6, atol=1e-8),
               f"{name} of parameter {k}")
    ok([g["params"] for g in sd["param_groups"]] == [g["params"] for g in want["param_groups"]], "group indices")
else:
    try:
        zero.state_dict()
        ok(False, "state_dict without consolidation raises")
    except RuntimeError:
        ok(True, "")
full = [ref_opt.state_dict()]
dist.broadcast_object_list(full, src=0)
fresh = params()
for p, q in zip(fresh, zp):
    p.detach().copy_(q.detach())
loaded = ZeroRedundancyOptimizer([{"params": fresh[:3]}, {"params": fresh[3:]}], optim.AdamW, lr=0.01,
                                 weight_decay=0.1)
loaded.load_state_dict(full[0])
ok(loaded.param_groups[1]["lr"] == 0.005, "hyperparameters load")
run(loaded, fresh, 2, start=4)
run(ref_opt, ref, 2, start=4)
ok(all(np.allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-7) for a, b in zip(ref, fresh)),
   "a loaded state continues as the original")

got = [None] * N
dist.all_gather_object(got, {"rank": R, "sq": R * R})
ok(got == [{"rank": r, "sq": r * r} for r in range(N)], "all_gather_object")
box = [None]
dist.scatter_object_list(box, [f"to {r}" for r in range(N)] if R == 0 else None, src=0)
ok(box == [f"to {R}"], "scatter_object_list")
gathered = [None] * N if R == N - 1 else None
dist.gather_object(R + 0.5, gathered, dst=N - 1)
ok(R != N - 1 or gathered == [r + 0.5 for r in range(N)], "gather_object")
dist.destroy_process_group()
if R == 0:
    print(f"ZERO CHECKS PASSED {checks}")
