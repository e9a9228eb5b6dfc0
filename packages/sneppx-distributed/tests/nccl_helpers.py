"""Rank functions of the NCCL tests (launched with one rank per GPU)."""

import numpy as np
import sneppx_core as sx
import sneppx_distributed as dist


def collectives():
    """Every collective of the NCCL backend once; returns what rank 0 saw, as host lists."""
    dist.init_process_group("nccl")
    r, n, dev = dist.get_rank(), dist.get_world_size(), f"cuda:{dist.get_local_rank() % sx.cuda.device_count()}"
    out = {"device": str(sx.tensor([0.0], device="cuda").device), "backend": dist.get_backend()}
    x = sx.full((5,), float(r + 1), device=dev)
    dist.all_reduce(x)
    out["sum"] = x.cpu().tolist()
    y = sx.full((3,), float(r + 1), device=dev)
    dist.all_reduce(y, op=dist.ReduceOp.AVG)
    out["avg"] = y.cpu().tolist()
    m = sx.tensor([r, -r], dtype=sx.int64, device=dev)
    dist.all_reduce(m, op=dist.ReduceOp.MAX)
    out["max"] = m.cpu().tolist()
    b = sx.arange(4, dtype=sx.float32, device=dev) * (r + 1)
    dist.broadcast(b, src=n - 1)
    out["broadcast"] = b.cpu().tolist()
    rows = [sx.zeros(2, device=dev) for _ in range(n)]
    dist.all_gather(rows, sx.full((2,), float(r), device=dev))
    out["all_gather"] = [t.cpu().tolist() for t in rows]
    big = sx.zeros(2 * n, device=dev)
    dist.all_gather_into_tensor(big, sx.full((2,), float(r), device=dev))
    out["all_gather_into_tensor"] = big.cpu().tolist()
    part = sx.zeros(2, device=dev)
    dist.reduce_scatter_tensor(part, sx.arange(2 * n, dtype=sx.float32, device=dev))
    out["reduce_scatter_tensor"] = part.cpu().tolist()
    if n > 1:
        buf = sx.full((3,), float(r), device=dev)
        if r == 0:
            dist.send(buf + 10, dst=1)
        elif r == 1:
            assert dist.recv(buf, src=0) == 0
            assert buf.cpu().tolist() == [10.0, 10.0, 10.0]
    try:
        dist.all_reduce(sx.ones(2))
    except RuntimeError as e:
        out["cpu_error"] = str(e)
    dist.barrier()
    dist.destroy_process_group()
    return out


def ddp_steps(steps: int, seed: int):
    """A small MLP trained with DDP on NCCL, each rank on its own half of a fixed batch; returns the losses
    and rank 0's final weights."""
    dist.init_process_group("nccl")
    from sneppx_nn import Linear, ReLU, Sequential
    from sneppx_optim import SGD

    dev = f"cuda:{dist.get_local_rank() % sx.cuda.device_count()}"
    sx.manual_seed(seed)
    model = Sequential(Linear(6, 16), ReLU(), Linear(16, 1)).to(dev)
    ddp = dist.DistributedDataParallel(model, device_ids=[sx.device(dev).index], bucket_cap_mb=0.0001)
    opt = SGD(ddp.parameters(), lr=0.1)
    data = np.random.default_rng(seed).standard_normal((8, 7))
    n, r = dist.get_world_size(), dist.get_rank()
    share = data[r * 8 // n:(r + 1) * 8 // n]
    x, y = sx.tensor(share[:, :6], device=dev), sx.tensor(share[:, 6:], device=dev)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = ((ddp(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    weights = [p.detach().cpu().numpy().tolist() for p in model.parameters()]
    dist.destroy_process_group()
    return {"losses": losses, "weights": weights}
