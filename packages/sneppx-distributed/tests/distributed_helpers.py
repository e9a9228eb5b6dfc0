"""Models, data and rank functions shared by the tests (imported by every rank through launch)."""

from __future__ import annotations

import numpy as np
import sneppx_core as sx
import sneppx_core.functional as F
import sneppx_distributed as dist

IN, HIDDEN, OUT = 784, 256, 10


def _param(rng, shape, scale):
    return sx.Tensor((rng.standard_normal(shape) * scale).astype(np.float32), requires_grad=True)


class MLP:
    """The guide's 784-256-10 MLP with GELU, written with core ops and a Module-like interface."""

    def __init__(self, seed: int, extra_unused: bool = False) -> None:
        rng = np.random.default_rng(seed)
        self.params = {
            "net.0.weight": _param(rng, (IN, HIDDEN), IN ** -0.5),
            "net.0.bias": _param(rng, (HIDDEN,), 0.1),
            "net.2.weight": _param(rng, (HIDDEN, OUT), HIDDEN ** -0.5),
            "net.2.bias": _param(rng, (OUT,), 0.1),
        }
        if extra_unused:
            self.params["unused.weight"] = _param(rng, (5,), 1.0)
        self.bufs = {"steps": sx.Tensor([float(seed)])}

    def named_parameters(self):
        return list(self.params.items())

    def parameters(self):
        return list(self.params.values())

    def named_buffers(self):
        return list(self.bufs.items())

    def buffers(self):
        return list(self.bufs.values())

    def state_dict(self):
        return {k: v.detach() for k, v in [*self.params.items(), *self.bufs.items()]}

    def __call__(self, x):
        p = self.params
        h = F.gelu(x.reshape((-1, IN)) @ p["net.0.weight"] + p["net.0.bias"])
        return h @ p["net.2.weight"] + p["net.2.bias"]


def nn_mlp(seed: int):
    """The same MLP from sneppx_nn layers (raises ImportError when sneppx_nn lacks them)."""
    from sneppx_nn import GELU, Linear, Sequential

    sx.manual_seed(seed)
    return Sequential(Linear(IN, HIDDEN), GELU(), Linear(HIDDEN, OUT))


def loss_fn(logits, labels):
    """Mean cross-entropy, from log_softmax and a one-hot mask."""
    onehot = sx.Tensor(np.eye(OUT, dtype=np.float32)[labels.numpy()])
    return -(F.log_softmax(logits, dim=-1) * onehot).sum() / logits.shape[0]


def batches(steps: int, batch: int, seed: int = 123):
    """Deterministic (x, y) batches, identical in every process."""
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        x = rng.standard_normal((batch, IN)).astype(np.float32)
        y = rng.integers(0, OUT, batch)
        yield sx.Tensor(x), sx.Tensor(y)


def sgd_step(params, lr: float) -> None:
    """Plain SGD: p -= lr * grad, then clear the gradients."""
    with sx.no_grad():
        for p in params:
            if p.grad is not None:
                p -= lr * p.grad
                p.grad = None


def train_single(model, data, lr: float = 0.1) -> dict:
    """One process on the full batches; returns the final parameters as NumPy arrays."""
    for x, y in data:
        loss_fn(model(x), y).backward()
        sgd_step(model.parameters(), lr)
    return {n: p.detach().numpy().copy() for n, p in model.named_parameters()}


def _in_buckets(model) -> bool:
    """True when every parameter's .grad lies inside one of the reducer's flat buckets."""
    spans = [(b.array.ctypes.data, b.array.ctypes.data + b.array.nbytes) for b in model.reducer.buckets
             if b.array is not None]
    return all(p.grad is not None and any(lo <= p.grad.data_ptr() < hi for lo, hi in spans)
               for p in model.parameters())


def _clear(model, how: str, lr: float, opt=None) -> None:
    """SGD step, then clear the gradients: set to None, zero in place, or replace with new zero tensors;
    ``"optim"``: sneppx_optim's SGD step and ``zero_grad(set_to_none=False)``."""
    if how == "optim":
        opt.step()
        opt.zero_grad(set_to_none=False)
        return
    if how == "none":
        sgd_step(model.parameters(), lr)
        return
    with sx.no_grad():
        for p in model.parameters():
            p -= lr * p.grad
            if how == "replace":
                p.grad = sx.zeros_like(p.grad)
    if how == "inplace":
        model.zero_grad(set_to_none=False)


def ddp_train(mode: str, steps: int = 20, batch: int = 16, lr: float = 0.1, bucket_cap_mb: float = 0.25,
              use_nn: bool = False, progress_thread=None, zero: str = "none", gradient_as_bucket_view: bool = True) -> dict:
    """Rank function: train with DDP on this rank's share and compare with one process on full batches.

    ``mode``: ``"halves"`` (each rank the r-th slice of every batch), ``"no_sync"`` (two
    micro-batches per step, the first under no_sync), ``"sampler"`` (shares from sneppx_data's
    DistributedSampler). ``zero``: how gradients are cleared after each step (see ``_clear``).
    Returns the largest absolute parameter difference and checks, among them whether the
    gradients were views of the buckets after every synced backward.
    """
    dist.init_process_group()
    r, n = dist.get_rank(), dist.get_world_size()
    make = nn_mlp if use_nn else MLP
    model = dist.DistributedDataParallel(make(seed=r), bucket_cap_mb=bucket_cap_mb, progress_thread=progress_thread,
                                         gradient_as_bucket_view=gradient_as_bucket_view)
    data = list(batches(steps, batch))
    shares = _shares(mode, data, r, n)
    in_buckets = []
    opt = None
    if zero == "optim":
        import sneppx_optim

        opt = sneppx_optim.SGD(model.parameters(), lr=lr)
    for parts in shares:
        for k, (x, y) in enumerate(parts):
            if k < len(parts) - 1:
                with model.no_sync():
                    (loss_fn(model(x), y) / len(parts)).backward()
            else:
                (loss_fn(model(x), y) / len(parts)).backward()
        in_buckets.append(_in_buckets(model))
        _clear(model, zero, lr, opt)
    got = {k: p.detach().numpy().copy() for k, p in model.named_parameters()}
    want = train_single(make(seed=0), data if mode != "sampler" else _sampler_batches(data, n), lr)
    dist.destroy_process_group()
    diff = max(float(np.abs(got[k] - want[k]).max()) for k in want)
    assert diff < 1e-5, f"rank {r}: parameters differ from single-process training by {diff}"
    return {"rank": r, "max_diff": diff, "keys": sorted(got), "buckets": model.last_sync_stats["buckets"],
            "grads_in_buckets": all(in_buckets), "grads_outside_buckets": not any(in_buckets)}


def _shares(mode: str, data, r: int, n: int):
    if mode == "halves":
        return [[(x[r * len(x) // n:(r + 1) * len(x) // n], y[r * len(y) // n:(r + 1) * len(y) // n])]
                for x, y in data]
    if mode == "no_sync":
        out = []
        for x, y in data:
            q = len(x) // (2 * n)
            out.append([(x[(2 * r + k) * q:(2 * r + k + 1) * q], y[(2 * r + k) * q:(2 * r + k + 1) * q])
                        for k in range(2)])
        return out
    if mode == "sampler":
        from sneppx_data import DistributedSampler

        return [[_take(x, y, list(_sampler(DistributedSampler, x, epoch)))] for epoch, (x, y) in enumerate(data)]
    raise ValueError(mode)


def _sampler(cls, x, epoch, **kw):
    s = cls(list(range(len(x))), shuffle=True, seed=7, **kw)
    s.set_epoch(epoch)
    return s


def _take(x, y, idx):
    i = sx.Tensor(np.asarray(idx, dtype=np.int64))
    return x[i], y[i]


def _sampler_batches(data, n: int):
    """The full batches the sampler's shards add up to: every rank's indices in rank order."""
    from sneppx_data import DistributedSampler

    out = []
    for epoch, (x, y) in enumerate(data):
        idx = [i for k in range(n) for i in _sampler(DistributedSampler, x, epoch, num_replicas=n, rank=k)]
        out.append(_take(x, y, idx))
    return out


def raise_on_rank(bad: int) -> None:
    """Rank function: rank ``bad`` raises while the others wait in an all_reduce."""
    dist.init_process_group()
    if dist.get_rank() == bad:
        raise ValueError(f"boom from rank {bad}")
    dist.all_reduce(sx.ones(3))


def leave_early(timeout: float) -> str:
    """Rank function: rank 1 returns without the collective that the others call."""
    dist.init_process_group(timeout=timeout)
    if dist.get_rank() != 1:
        dist.all_reduce(sx.ones(3))
    return "finished"


def sleep_all(seconds: float) -> None:
    """Rank function: every rank sleeps (a hung job)."""
    import time

    time.sleep(seconds)


def describe(a, b=0, *, scale=1) -> dict:
    """Rank function: returns its arguments and the group's view of itself."""
    import os

    dist.init_process_group()
    info = {"value": (a + b) * scale, "rank": dist.get_rank(), "world": dist.get_world_size(),
            "local": dist.get_local_rank(), "env": os.environ.get("SNEPPX_WORLD_SIZE"),
            "ctx": dist.DistributedContext.initialized, "backend": dist.DistributedContext.backend}
    total = sx.Tensor([float(info["rank"])])
    dist.all_reduce(total)
    info["rank_sum"] = total.item()
    return info


def ddp_unused(find_unused: bool, progress_thread=None) -> dict:
    """Rank function: a model with a parameter outside the graph; rank 0's buffer reaches every rank."""
    dist.init_process_group(timeout=20)
    r, n = dist.get_rank(), dist.get_world_size()
    model = dist.DistributedDataParallel(MLP(seed=r, extra_unused=True), find_unused_parameters=find_unused,
                                         progress_thread=progress_thread)
    params = dict(model.named_parameters())
    x, y = next(batches(1, 4 * n, seed=r))  # different data per rank
    result = {}
    try:
        loss_fn(model(x), y).backward()
        mine = {k: p.grad.numpy().copy() for k, p in params.items() if p.grad is not None}
        model(x)  # the next forward checks that the reduction finished
        result["error"] = None
    except RuntimeError as exc:
        result["error"] = str(exc)
        mine = {}
    local = MLP(seed=0, extra_unused=True)  # the broadcast weights, on every rank's data
    for k in range(n):
        xk, yk = next(batches(1, 4 * n, seed=k))
        loss_fn(local(xk), yk).backward()
    result["diff"] = max((float(np.abs(mine[k] - local.params[k].grad.numpy() / n).max()) for k in mine), default=None)
    every = [sx.zeros(1) for _ in range(n)]
    dist.all_gather(every, model.module.bufs["steps"])
    result["buffers"] = [t.item() for t in every]
    result["unused_grad_is_none"] = params["unused.weight"].grad is None
    result["state_keys"] = sorted(model.state_dict()) == sorted(model.module.state_dict())
    return result


def env_of(keys) -> dict:
    """Rank function: the values of environment variables ``keys`` in the rank (None where unset)."""
    import os

    return {k: os.environ.get(k) for k in keys}


def env_cycle() -> list:
    """Rank function: the SNEPPX_* variables exist exactly while a group is initialised; groups can be re-created."""
    import os

    keys = ("SNEPPX_RANK", "SNEPPX_WORLD_SIZE", "SNEPPX_LOCAL_RANK")
    seen = []
    for _ in range(2):
        seen.append([os.environ.get(k) for k in keys])
        dist.init_process_group()
        seen.append([os.environ.get(k) for k in keys])
        t = sx.ones(2)
        dist.all_reduce(t)
        seen.append(t.tolist())
        dist.destroy_process_group()
    seen.append([os.environ.get(k) for k in keys])
    seen.append(dist.DistributedContext.initialized)
    return seen


class _Delayed:
    """An MPI request that counts as complete only once it is done and ``ready_at`` has passed."""

    def __init__(self, request, ready_at: float) -> None:
        self.request, self.ready_at = request, ready_at


class _SlowLink:
    """Wraps a communicator: each all-reduce takes ``delay`` seconds on a link that carries one
    all-reduce at a time (so a bucket started while another is in flight waits for it). DDP's ring
    all-reduce sends two messages per rank on two ranks: each takes half the delay."""

    def __init__(self, comm, delay: float) -> None:
        self.comm, self.delay, self.free_at, self.busy_s = comm, delay, 0.0, 0.0

    def _delayed(self, request, seconds: float):
        import time

        self.free_at = max(time.perf_counter(), self.free_at) + seconds
        self.busy_s += seconds
        return _Delayed(request, self.free_at)

    def Iallreduce(self, *args):
        return self._delayed(self.comm.Iallreduce(*args), self.delay)

    def Isend(self, *args, **kwargs):
        return self._delayed(self.comm.Isend(*args, **kwargs), self.delay / 2)

    def __getattr__(self, name):
        return getattr(self.comm, name)


def _slow_testall(requests) -> bool:
    import time

    from mpi4py import MPI

    real = [r.request if isinstance(r, _Delayed) else r for r in requests]
    done = MPI.Request.Testall(real)
    return done and all(time.perf_counter() >= r.ready_at for r in requests if isinstance(r, _Delayed))


def _slow_poll(requests, statuses=None) -> bool:
    stepped = [r.advance() for r in requests if hasattr(r, "advance")]
    return _slow_testall([r for r in requests if not hasattr(r, "advance")]) and all(stepped)


def _slow_wait(requests, timeout, what, rank, statuses=None) -> None:
    import time

    end = time.perf_counter() + timeout
    while not _slow_poll(requests):
        if time.perf_counter() > end:
            raise RuntimeError(f"{what}: timed out")
        time.sleep(1e-4)


def ddp_overlap(delay: float = 0.05, layers: int = 4, width: int = 32, steps: int = 3) -> dict:
    """Rank function: DDP over a link where every bucket's all-reduce takes ``delay`` seconds.

    A chain of ``layers`` weight matrices, one bucket each; a hook between layers holds backward
    for ``1.5 * delay`` before the next layer's gradient, as a slower layer would. Returns the
    exposed wait at the end of backward, the total time the link was busy, and the largest
    difference of the averaged gradients from gradients computed locally over both ranks' data.
    """
    import time

    import sneppx_distributed._reducer as reducer_mod
    import sneppx_distributed._ring as ring_mod

    dist.init_process_group()
    r, n = dist.get_rank(), dist.get_world_size()
    rng = np.random.default_rng(0)
    ws = {f"w{k}": _param(rng, (width, width), width ** -0.5) for k in range(layers)}

    class Chain:
        def named_parameters(self):
            return list(ws.items())

        def parameters(self):
            return list(ws.values())

        def __call__(self, x):
            for k, w in enumerate(ws.values()):
                x = x @ w
                if k < layers - 1:
                    x = x.tanh()
                    x.register_hook(lambda g: time.sleep(1.5 * delay))
            return x

    model = dist.DistributedDataParallel(Chain(), bucket_cap_mb=width * width * 4 / 2**20, progress_thread=False)
    link = _SlowLink(model.reducer.ring_comm, delay)  # float32 buckets: averaged by the ring all-reduce
    model.reducer.ring_comm = link
    saved = reducer_mod.poll, reducer_mod.wait_requests, ring_mod._testall
    reducer_mod.poll, reducer_mod.wait_requests, ring_mod._testall = _slow_poll, _slow_wait, _slow_testall
    xs = [sx.Tensor(np.random.default_rng(100 + k).standard_normal((8, width)).astype(np.float32)) for k in range(n)]
    exposed, busy = [], []
    try:
        for _ in range(steps):
            model.zero_grad()
            link.busy_s = 0.0
            model(xs[r]).square().sum().backward()
            exposed.append(model.last_sync_stats["exposed_wait_s"])
            busy.append(link.busy_s)
    finally:
        reducer_mod.poll, reducer_mod.wait_requests, ring_mod._testall = saved
    got = {k: p.grad.numpy().copy() for k, p in ws.items()}
    for p in ws.values():
        p.grad = None
    for x in xs:
        model.module(x).square().sum().backward()
    diff = max(float(np.abs(got[k] - p.grad.numpy() / n).max()) for k, p in ws.items())
    dist.destroy_process_group()
    return {"buckets": model.last_sync_stats["buckets"], "exposed_s": sorted(exposed)[len(exposed) // 2],
            "comm_s": sorted(busy)[len(busy) // 2], "diff": diff}


def ring_average(sizes: tuple, dtype: str, concurrent: bool) -> dict:
    """Rank function: the ring all-reduce of DDP's buckets on arrays of each size in ``sizes`` (rank
    ``r``'s array holds values drawn from seed ``r``), against the float64 mean computed locally from
    every rank's data (the largest error over the ranks), and whether every rank got the same bits. With ``concurrent``
    all the arrays are in flight at once (distinct tags), as buckets are."""
    from sneppx_distributed._mpi import mpi
    from sneppx_distributed._ring import RingAllreduce, scratch_size
    from sneppx_distributed.work import wait_requests

    dist.init_process_group()
    r, n = dist.get_rank(), dist.get_world_size()
    comm = mpi().COMM_WORLD.Dup()
    data = [[np.random.default_rng(100 * k + q).standard_normal(size).astype(dtype) for q in range(n)]
            for k, size in enumerate(sizes)]
    mine = [d[r].copy() for d in data]
    rings = []
    for k, a in enumerate(mine):
        scratch = np.full(scratch_size(a.size, n), np.nan, a.dtype) if k % 2 else None  # given, or made inside
        rings.append(RingAllreduce(comm, a, 1.0 / n, tag=k, scratch=scratch))
        if not concurrent:
            wait_requests(rings[-1:], 30, "ring", r)
    wait_requests(rings, 30, "ring", r)
    err = max((float(np.abs(a.astype(np.float64) - np.mean(np.array(d, np.float64), axis=0)).max(initial=0.0))
               for a, d in zip(mine, data)), default=0.0)
    same = len(set(comm.allgather(b"".join(a.tobytes() for a in mine)))) == 1
    err = comm.allreduce(err, op=mpi().MAX)
    dist.destroy_process_group()
    return {"err": err, "same_bits": same}
