"""CPU autocasting (``autocast("cpu")``): which ops run in bfloat16 and which in float32, the values (NumPy with
bfloat16 rounding as the reference), gradients, nesting, threads, the cast cache, and PyTorch parity."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import sneppx_core as sx
import sneppx_core.functional as F
from sneppx_core import _autocast


def _bf16(a):
    """``a`` rounded to the nearest bfloat16 (ties to even), as float32 (the reference rounding)."""
    bits = np.ascontiguousarray(a, np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32).view(np.float32)


def test_products_run_in_bfloat16_and_losses_in_float32():
    rng = np.random.default_rng(0)
    a, w = rng.standard_normal((5, 16)).astype(np.float32), rng.standard_normal((16, 7)).astype(np.float32)
    x, y = sx.tensor(a), sx.tensor(w)
    with sx.autocast("cpu"):
        assert sx.is_autocast_enabled("cpu") and sx.is_autocast_cpu_enabled()
        for out in (x @ y, sx.matmul(x, y), x.mm(y), F.linear(x, y.T), sx.linalg.matmul(x, y)):
            assert out.dtype == sx.bfloat16
            want = _bf16(_bf16(a).astype(np.float64) @ _bf16(w).astype(np.float64))
            np.testing.assert_allclose(out.float().numpy(), want, rtol=2 ** -7, atol=1e-6)
        logits = x @ y
        loss = F.cross_entropy(logits, sx.tensor([0, 1, 2, 3, 4]))
        assert loss.dtype == sx.float32  # the float32 list: the bfloat16 logits are cast up
        ref = logits.float().numpy().astype(np.float64)
        ref = np.mean(np.log(np.exp(ref).sum(1)) - ref[np.arange(5), np.arange(5)])
        np.testing.assert_allclose(loss.item(), ref, rtol=1e-5)
        assert (x + x).dtype == sx.float32 and F.gelu(x).dtype == sx.float32  # not on a list: unchanged
        assert sx.cdist(x.bfloat16(), x.bfloat16()).dtype == sx.float32  # its inner products stay float32
        d = sx.tensor(a.astype(np.float64))
        assert (d @ d.T).dtype == sx.float64  # float64 is never cast
    assert not sx.is_autocast_enabled("cpu") and (x @ y).dtype == sx.float32


def test_gradients_flow_to_float32_parameters():
    rng = np.random.default_rng(1)
    w1 = sx.tensor(rng.standard_normal((8, 16)).astype(np.float32) * 0.3, requires_grad=True)
    w2 = sx.tensor(rng.standard_normal((3, 8)).astype(np.float32) * 0.3, requires_grad=True)
    x, t = sx.tensor(rng.standard_normal((4, 16)).astype(np.float32)), sx.tensor([0, 2, 1, 2])
    with sx.autocast("cpu", dtype=sx.bfloat16):
        loss = F.cross_entropy(F.linear(F.relu(F.linear(x, w1)), w2), t)
    loss.backward()
    # the same program with the casts written out, without autocast
    v1, v2 = w1.detach().clone().requires_grad_(), w2.detach().clone().requires_grad_()
    h = F.relu(F.linear(x.bfloat16(), v1.bfloat16()))
    ref = F.cross_entropy(F.linear(h, v2.bfloat16()).float(), t)
    ref.backward()
    assert w1.grad.dtype == sx.float32 and w2.grad.dtype == sx.float32
    assert loss.item() == ref.item()
    assert sx.equal(w1.grad, v1.grad) and sx.equal(w2.grad, v2.grad)


def test_nesting_decorator_threads_and_restored_functions():
    matmul, method = sx.matmul, sx.Tensor.__matmul__
    x = sx.ones(2, 2)
    seen = {}

    def other_thread():
        seen["dtype"] = (x @ x).dtype

    @sx.autocast("cpu")
    def decorated():
        return (x @ x).dtype

    with sx.autocast("cpu"):
        with sx.autocast("cpu", enabled=False):
            assert (x @ x).dtype == sx.float32 and not sx.is_autocast_enabled("cpu")
        assert (x @ x).dtype == sx.bfloat16
        with sx.autocast("cpu", dtype=sx.float16):
            assert (x @ x).dtype == sx.float16 and sx.get_autocast_dtype("cpu") == sx.float16
        th = threading.Thread(target=other_thread)
        th.start()
        th.join()
        assert seen["dtype"] == sx.float32  # the state is per thread
    assert decorated() == sx.bfloat16
    assert sx.matmul is matmul and sx.Tensor.__matmul__ is method  # nothing stays wrapped
    sx.set_autocast_enabled("cpu", True)
    try:
        assert (x @ x).dtype == sx.bfloat16
    finally:
        sx.set_autocast_enabled("cpu", False)
    assert sx.matmul is matmul
    with pytest.warns(UserWarning, match="target dtype is not supported"):
        with sx.autocast("cpu", dtype=sx.float32):
            assert (x @ x).dtype == sx.float32


def test_parameter_casts_are_cached_per_region():
    w = sx.ones(3, 3, requires_grad=True)
    with sx.autocast("cpu"):
        first = _autocast._cast(w, sx.bfloat16)
        assert _autocast._cast(w, sx.bfloat16) is first  # one cast per parameter per region
        with sx.no_grad():
            w.mul_(2)  # a new version: cast again
        again = _autocast._cast(w, sx.bfloat16)
        assert again is not first and again.float().tolist() == [[2.0] * 3] * 3
        with sx.autocast("cpu", cache_enabled=False):
            assert _autocast._cast(w, sx.bfloat16) is not again
    with sx.autocast("cpu"):
        assert _autocast._cast(w, sx.bfloat16) is not again  # the cache ends with the outermost region


@pytest.mark.parity
def test_dtypes_and_values_match_torch(torch):
    import torch.nn.functional as TF

    rng = np.random.default_rng(2)
    data = {k: rng.standard_normal(s).astype(np.float32) for k, s in
            {"x": (4, 8), "w": (8, 8), "b": (8,), "img": (1, 2, 5, 5), "k": (3, 2, 3, 3), "q": (1, 2, 4, 8)}.items()}
    tgt = np.array([1, 2, 3, 4])
    cases = {
        "matmul": lambda m, f, d: d["x"] @ d["w"], "mm": lambda m, f, d: m.mm(d["x"], d["w"]),
        "bmm": lambda m, f, d: m.bmm(d["x"][None], d["w"][None]), "addmm": lambda m, f, d: m.addmm(d["b"], d["x"],
                                                                                                 d["w"]),
        "baddbmm": lambda m, f, d: m.baddbmm(d["x"][None], d["x"][None], d["w"][None]),
        "linear": lambda m, f, d: f.linear(d["x"], d["w"], d["b"]),
        "conv2d": lambda m, f, d: f.conv2d(d["img"], d["k"]),
        "sdpa": lambda m, f, d: f.scaled_dot_product_attention(d["q"], d["q"], d["q"], is_causal=True),
        "einsum": lambda m, f, d: m.einsum("ij,jk->ik", d["x"], d["w"]), "prelu": lambda m, f, d: f.prelu(
            d["x"], m.ones(1) * 0.1), "mv": lambda m, f, d: m.mv(d["w"], d["b"]),
        "cross_entropy": lambda m, f, d: f.cross_entropy(d["x"] @ d["w"], d["t"]),
        "mse": lambda m, f, d: f.mse_loss(d["x"] @ d["w"], d["x"]), "prod": lambda m, f, d: (d["x"] @ d["w"]).prod(1),
        "layer_norm": lambda m, f, d: f.layer_norm(d["x"] @ d["w"], (8,)), "softmax": lambda m, f, d: f.softmax(
            d["x"] @ d["w"], -1), "residual": lambda m, f, d: d["x"] + d["x"] @ d["w"],
        "bce_logits": lambda m, f, d: f.binary_cross_entropy_with_logits(d["x"] @ d["w"], d["x"].sigmoid()),
    }
    tdata = {k: torch.from_numpy(v) for k, v in data.items()} | {"t": torch.from_numpy(tgt)}
    sdata = {k: sx.tensor(v) for k, v in data.items()} | {"t": sx.tensor(tgt)}
    with torch.autocast("cpu", dtype=torch.bfloat16), sx.autocast("cpu", dtype=sx.bfloat16):
        for name, case in cases.items():
            want, got = case(torch, TF, tdata), case(sx, F, sdata)
            assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], (name, got.dtype, want.dtype)
            np.testing.assert_allclose(got.float().numpy(), want.float().numpy(), rtol=0.02, atol=0.05,
                                       err_msg=name)


@pytest.mark.parity
def test_training_step_matches_torch(torch):
    """One step of a two-layer model under autocast: the loss and the float32 gradients agree with PyTorch's
    to bfloat16 precision (both cast the same float32 weights)."""
    rng = np.random.default_rng(3)
    w1, w2 = rng.standard_normal((32, 16)).astype(np.float32) * 0.2, rng.standard_normal((5, 32)).astype(np.float32)
    x, t = rng.standard_normal((8, 16)).astype(np.float32), rng.integers(0, 5, 8)

    def step(m, f, params, inp, target):
        with m.autocast("cpu", dtype=m.bfloat16):
            loss = f.cross_entropy(f.linear(f.gelu(f.linear(inp, params[0])), params[1]), target)
        loss.backward()
        return loss.item(), [p.grad.numpy() for p in params], [str(p.grad.dtype) for p in params]

    import torch.nn.functional as TF

    tp = [torch.tensor(w, requires_grad=True) for w in (w1, w2)]
    sp = [sx.tensor(w, requires_grad=True) for w in (w1, w2)]
    tl, tg, tdt = step(torch, TF, tp, torch.from_numpy(x), torch.from_numpy(t))
    sl, sg, sdt = step(sx, F, sp, sx.tensor(x), sx.tensor(t))
    assert [d.split(".")[-1] for d in sdt] == [d.split(".")[-1] for d in tdt] == ["float32", "float32"]
    np.testing.assert_allclose(sl, tl, rtol=0.01)
    for a, b in zip(sg, tg):
        np.testing.assert_allclose(a, b, rtol=0.05, atol=0.02 * np.abs(b).max())


def test_regions_ending_out_of_order_with_the_profiler_leave_nothing_behind():
    """The profiler and autocast both wrap functions; when their regions end out of order, each takes its wrapper
    out of the other's chain, so the functions come back as they were and a later profile times each call once."""
    from sneppx_core import profiler

    x, matmul = sx.ones(4, 4), sx.matmul
    p = profiler.profile()
    p.start()
    with sx.autocast("cpu"):
        p.stop()  # the profile ends inside the region it began before
        assert (x @ x).dtype == sx.bfloat16 and sx.matmul(x, x).dtype == sx.bfloat16
    assert sx.matmul is matmul
    region = sx.autocast("cpu")
    region.__enter__()
    p = profiler.profile()
    p.start()
    region.__exit__(None, None, None)  # the region ends inside the profile it began before
    assert sx.matmul(x, x).dtype == sx.float32
    p.stop()
    assert sx.matmul is matmul
    with sx.autocast("cpu"), profiler.profile() as prof:
        assert sx.matmul(x, x).dtype == sx.bfloat16
    assert [e.name for e in prof.events()].count("sneppx::matmul") == 1
