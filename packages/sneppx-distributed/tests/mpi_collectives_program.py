"""Run under ``mpiexec -n N``: checks every collective against NumPy; rank 0 prints ``CHECKS PASSED <k>``.

Every rank draws its own data from ``default_rng(100 + rank)`` and can rebuild any other rank's,
so each expected result is computed with NumPy from all ranks' inputs.
"""

import numpy as np
import sneppx_core as sx
import sneppx_distributed as dist
from mpi4py import MPI
from sneppx_distributed import ReduceOp

dist.init_process_group(timeout=30)
R, N = dist.get_rank(), dist.get_world_size()
NP = {sx.float32: np.float32, sx.float64: np.float64, sx.int32: np.int32, sx.int64: np.int64, sx.float16: np.float16,
      sx.int8: np.int8, sx.int16: np.int16}
INTS = (sx.int8, sx.int16, sx.int32, sx.int64)
checks = 0


def data(rank, shape, dtype):
    rng = np.random.default_rng(100 + rank)
    if dtype in INTS:
        return rng.integers(-5, 6, shape).astype(NP[dtype])
    if dtype == sx.bool_:
        return rng.random(shape) < 0.5
    return (rng.standard_normal(shape) * 2).astype(NP.get(dtype, np.float32))


def all_data(shape, dtype):
    return [data(k, shape, dtype) for k in range(N)]


def ok(got, want, what, tol=1e-5):
    global checks
    got = np.asarray(got)
    np.testing.assert_allclose(got.astype(np.float64), np.asarray(want).astype(np.float64), rtol=tol, atol=tol,
                               err_msg=f"rank {R}: {what}")
    checks += 1


REFS = {ReduceOp.SUM: lambda a: np.sum(a, 0), ReduceOp.AVG: lambda a: np.mean(a, 0),
        ReduceOp.MAX: lambda a: np.max(a, 0), ReduceOp.MIN: lambda a: np.min(a, 0),
        ReduceOp.PRODUCT: lambda a: np.prod(a, 0)}

# all_reduce: every op on several dtypes, blocking and async
for dtype in (sx.float32, sx.float64, sx.int8, sx.int16, sx.int32, sx.int64):
    for op, ref in REFS.items():
        if op is ReduceOp.AVG and dtype in INTS:
            continue
        t = sx.Tensor(data(R, (3, 4), dtype), dtype=dtype)
        v = t._version
        dist.all_reduce(t, op)
        want = ref(np.stack(all_data((3, 4), dtype)))
        ok(t.numpy(), want.astype(NP[dtype]) if dtype in INTS else want, f"all_reduce {op} {dtype}")  # ints wrap
        assert t._version > v, "all_reduce did not bump the tensor's version"
for op, ref in ((ReduceOp.BAND, np.bitwise_and.reduce), (ReduceOp.BOR, np.bitwise_or.reduce),
                (ReduceOp.BXOR, np.bitwise_xor.reduce)):
    t = sx.Tensor(data(R, (6,), sx.int64))
    dist.all_reduce(t, op)
    ok(t.numpy(), ref(np.stack(all_data((6,), sx.int64)), axis=0), f"all_reduce {op}")
t = sx.Tensor(data(R, (7,), sx.bool_))
dist.all_reduce(t, ReduceOp.MAX)
ok(t.numpy(), np.any(all_data((7,), sx.bool_), 0), "all_reduce bool MAX")
t = sx.Tensor(data(R, (5,), sx.float16), dtype=sx.float16)
dist.all_reduce(t)
ok(t.numpy(), np.sum(all_data((5,), sx.float16), 0), "all_reduce float16", tol=1e-2)
t = sx.Tensor(data(R, (5,), sx.float32)).to(sx.bfloat16)
dist.all_reduce(t, ReduceOp.AVG)
ok(t.float().numpy(), np.mean(all_data((5,), sx.float32), 0), "all_reduce bfloat16 AVG", tol=3e-2)
base = sx.Tensor(data(R, (4, 3), sx.float32))
view = base.transpose(0, 1)  # non-contiguous: goes through a staging copy
assert not view.is_contiguous()
dist.all_reduce(view)
ok(base.numpy(), np.sum(all_data((4, 3), sx.float32), 0), "all_reduce into a transposed view")
t = sx.Tensor(data(R, (), sx.float64), dtype=sx.float64)
dist.all_reduce(t, ReduceOp.MAX)
ok(t.numpy(), np.max(all_data((), sx.float64)), "all_reduce 0-d")
t = sx.Tensor(data(R, (1000,), sx.float32))
work = dist.all_reduce(t, async_op=True)
assert isinstance(work, dist.Work)
assert work.wait() and work.is_completed()
ok(t.numpy(), np.sum(all_data((1000,), sx.float32), 0), "all_reduce async")
ok(work.result()[0].numpy(), t.numpy(), "Work.result")

# large float SUM / AVG go round the ring all-reduce: blocking, several in flight at once, odd sizes;
# every rank must hold the same bits
for dtype in (sx.float32, sx.float64):
    for op in (ReduceOp.SUM, ReduceOp.AVG):
        t = sx.Tensor(data(R, ((1 << 20) + 1,), dtype))
        dist.all_reduce(t, op)
        ok(t.numpy(), REFS[op](np.stack(all_data(((1 << 20) + 1,), dtype))), f"ring all_reduce {op} {dtype}")
        assert len(set(MPI.COMM_WORLD.allgather(t.numpy().tobytes()))) == 1, "ring all_reduce: ranks differ"
big = [sx.Tensor(data(R + 10 * k, ((1 << 20) + 7 * k,), sx.float32)) for k in range(4)]
works = [dist.all_reduce(b, ReduceOp.AVG if k % 2 else ReduceOp.SUM, async_op=True) for k, b in enumerate(big)]
for w in reversed(works):
    w.wait()
for k, b in enumerate(big):
    want = np.stack([data(r + 10 * k, ((1 << 20) + 7 * k,), sx.float32) for r in range(N)])
    ok(b.numpy(), (np.mean if k % 2 else np.sum)(want, 0), f"ring all_reduce async {k}")

# broadcast from every source
for src in range(N):
    t = sx.Tensor(data(R, (2, 5), sx.float32))
    dist.broadcast(t, src=src)
    ok(t.numpy(), data(src, (2, 5), sx.float32), f"broadcast src={src}")
t = sx.Tensor(data(R, (3,), sx.int64))
dist.broadcast(t, src=N - 1, async_op=True).wait()
ok(t.numpy(), data(N - 1, (3,), sx.int64), "broadcast async")

# all_gather / all_gather_into_tensor
outs = [sx.zeros(2, 3) for _ in range(N)]
dist.all_gather(outs, sx.Tensor(data(R, (2, 3), sx.float32)))
for k in range(N):
    ok(outs[k].numpy(), data(k, (2, 3), sx.float32), f"all_gather [{k}]")
out = sx.zeros(N * 2, 3)
dist.all_gather_into_tensor(out, sx.Tensor(data(R, (2, 3), sx.float32)))
ok(out.numpy(), np.concatenate(all_data((2, 3), sx.float32)), "all_gather_into_tensor (N*2, 3)")
out = sx.zeros(N, 2, 3, dtype=sx.int32)
dist.all_gather_into_tensor(out, sx.Tensor(data(R, (2, 3), sx.int32), dtype=sx.int32), async_op=True).wait()
ok(out.numpy(), np.stack(all_data((2, 3), sx.int32)), "all_gather_into_tensor (N, 2, 3) async")

# reduce_scatter / reduce_scatter_tensor
for op in (ReduceOp.SUM, ReduceOp.AVG, ReduceOp.MAX):
    full = np.stack([data(k, (N, 4), sx.float32) for k in range(N)])  # [rank, block, 4]
    out = sx.zeros(4)
    dist.reduce_scatter(out, [sx.Tensor(row) for row in data(R, (N, 4), sx.float32)], op)
    ok(out.numpy(), REFS[op](full)[R], f"reduce_scatter {op}")
    out = sx.zeros(4)
    dist.reduce_scatter_tensor(out, sx.Tensor(data(R, (N, 4), sx.float32).reshape(-1)), op)
    ok(out.numpy(), REFS[op](full)[R], f"reduce_scatter_tensor {op}")

# reduce, gather, scatter to / from the last rank
dst = N - 1
t = sx.Tensor(data(R, (3,), sx.float32))
dist.reduce(t, dst=dst, op=ReduceOp.MIN)
ok(t.numpy(), np.min(all_data((3,), sx.float32), 0) if R == dst else data(R, (3,), sx.float32), "reduce")
glist = [sx.zeros(2, 2) for _ in range(N)] if R == dst else None
dist.gather(sx.Tensor(data(R, (2, 2), sx.float32)), glist, dst=dst)
if R == dst:
    for k in range(N):
        ok(glist[k].numpy(), data(k, (2, 2), sx.float32), f"gather [{k}]")
slist = [sx.Tensor(data(100 + k, (3,), sx.float32)) for k in range(N)] if R == dst else None
t = sx.zeros(3)
dist.scatter(t, slist, src=dst)
ok(t.numpy(), data(100 + R, (3,), sx.float32), "scatter")

# point to point: a ring
t = sx.zeros(4)
if R % 2 == 0:
    dist.send(sx.Tensor(data(R, (4,), sx.float32)), dst=(R + 1) % N)
    sender = dist.recv(t, src=None)
else:
    sender = dist.recv(t, src=(R - 1) % N)
    dist.send(sx.Tensor(data(R, (4,), sx.float32)), dst=(R + 1) % N)
assert sender == (R - 1) % N, f"recv reported sender {sender}"
ok(t.numpy(), data((R - 1) % N, (4,), sx.float32), "send/recv ring")
t = sx.zeros(2, dtype=sx.int64)
works = [dist.isend(sx.Tensor(data(R, (2,), sx.int64)), dst=(R + 1) % N, tag=5), dist.irecv(t, (R - 1) % N, tag=5)]
for w in works:
    w.wait()
ok(t.numpy(), data((R - 1) % N, (2,), sx.int64), "isend/irecv")

# argument errors name the function and the values
for call, exc, text in [
    (lambda: dist.all_gather([sx.zeros(2)], sx.zeros(2)), ValueError, "all_gather: tensor_list has 1"),
    (lambda: dist.all_reduce(sx.zeros(2, dtype=sx.int64), ReduceOp.AVG), TypeError, "AVG needs a floating"),
    (lambda: dist.broadcast(sx.zeros(2), src=N), ValueError, "broadcast: src="),
    (lambda: dist.all_reduce([1.0]), TypeError, "must be a sneppx_core.Tensor"),
    (lambda: dist.all_gather_into_tensor(sx.zeros(3), sx.zeros(2)), ValueError, "all_gather_into_tensor"),
]:
    try:
        call()
    except exc as e:
        assert text in str(e), str(e)
        checks += 1
    else:
        raise AssertionError(f"no {exc.__name__} for {text}")

dist.barrier()
dist.destroy_process_group()
if R == 0:
    print(f"CHECKS PASSED {checks}", flush=True)
