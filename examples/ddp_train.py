"""Data-parallel training on several MPI ranks with DistributedDataParallel and Trainer.

Run it on one machine with two ranks:

    mpiexec -n 2 python examples/ddp_train.py

or on a cluster, with one line per machine in a hostfile (``node1:4`` runs four ranks on node1):

    mpiexec -f hostfile -n 8 python examples/ddp_train.py --out /shared/ddp-run

Every rank trains the same model on its own share of each epoch (DistributedSampler); gradients
are averaged across ranks during backward (DistributedDataParallel), so every rank takes the same
optimizer step. Rank 0 writes the checkpoints and metrics.jsonl.
"""

from __future__ import annotations

import argparse
import os

import numpy as np
import sneppx_core as sx
import sneppx_distributed as dist
from sneppx_data import DataLoader, DistributedSampler, TensorDataset
from sneppx_nn import GELU, Linear, MSELoss, Sequential
from sneppx_optim import AdamW, CosineAnnealingLR, Trainer


def make_data(n: int = 4096, seed: int = 0):
    """A regression task every rank builds identically: y = sin(x @ a) @ b plus a little noise."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 16)).astype(np.float32)
    a, b = rng.standard_normal((16, 32)) / 4, rng.standard_normal((32, 1)) / 6
    y = (np.sin(x @ a) @ b + 0.01 * rng.standard_normal((n, 1))).astype(np.float32)
    return TensorDataset(sx.Tensor(x), sx.Tensor(y))


def main(argv=None) -> float:
    """Trains on every rank and returns rank 0's final held-out loss (other ranks return it too)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--batch-size", type=int, default=64, help="per rank; the global batch is N times larger")
    p.add_argument("--out", default="ddp-run", help="rank 0's checkpoint and metrics folder")
    args = p.parse_args(argv)

    dist.init_process_group()                      # rank and world size come from mpiexec
    rank, world = dist.get_rank(), dist.get_world_size()
    sx.manual_seed(0)                              # DDP copies rank 0's weights anyway
    data = make_data()
    train_ds, eval_ds = data_split(data)
    sampler = DistributedSampler(train_ds, shuffle=True, seed=0)   # reads rank and size from the group
    train = DataLoader(train_ds, batch_size=args.batch_size, sampler=sampler, drop_last=True)
    held_out = DataLoader(eval_ds, batch_size=256)

    model = dist.DistributedDataParallel(Sequential(Linear(16, 64), GELU(), Linear(64, 64), GELU(),
                                                    Linear(64, 1)))
    opt = AdamW(model.parameters(), lr=3e-3 * world ** 0.5)     # a larger global batch takes a larger step
    steps = args.epochs * len(train)
    trainer = Trainer(model, opt, MSELoss(), scheduler=CosineAnnealingLR(opt, T_max=steps), max_epochs=args.epochs,
                      eval_every=max(1, steps // 4), progress=rank == 0,
                      checkpoint_dir=os.path.join(args.out, "checkpoints") if rank == 0 else None)
    history = trainer.fit(train, eval_loader=held_out)
    final = trainer.evaluate(held_out)

    # Every replica must hold the same weights: compare a checksum across ranks.
    checksum = sx.tensor([sum(p.detach().sum().item() for p in model.parameters())])
    sums = [sx.zeros(1) for _ in range(world)]
    if world > 1:
        dist.all_gather(sums, checksum)
    else:
        sums = [checksum]
    same = all(abs(s.item() - sums[0].item()) < 1e-4 for s in sums)
    if rank == 0:
        print(f"{world} ranks, {len(train)} steps per epoch of {args.batch_size} x {world} samples")
        print(f"train loss {history.loss[0]:.4f} -> {history.loss[-1]:.4f}; held-out loss {final:.4f}")
        print(f"replicas identical: {same}; metrics: {os.path.join(args.out, 'checkpoints', 'metrics.jsonl')}")
    dist.destroy_process_group()
    if not same:
        raise SystemExit("the replicas diverged")
    return final


def data_split(data):
    """The first 7/8 of the samples for training, the rest held out (the same split on every rank)."""
    from sneppx_data import Subset

    cut = len(data) * 7 // 8
    return Subset(data, range(cut)), Subset(data, range(cut, len(data)))


if __name__ == "__main__":
    main()
