"""CUDA against the CPU: every op of the op table, its gradient, copies, memory statistics and
errors, run on the GPU and compared with the same computation on the CPU. Marked ``cuda``; every
test skips when no GPU is visible (``sneppx_core.cuda.is_available()`` is False)."""

from __future__ import annotations

import gc
import warnings

import numpy as np
import pytest
import sneppx_core as sx
from opcheck import LAYOUTS, case_inputs, expected_dtype, float_outputs, rng_for, to_np
from optable import OPS, X, tolerance, values

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not sx.cuda.is_available(), reason="no CUDA device is visible")]

DEV = "cuda:0"
DTYPES = ("float32", "float64", "int64", "float16", "bfloat16")  # compared against the CPU on the device
# How an op says it cannot run on the GPU yet: an empty kernel slot, a dtype without a CUDA kernel, or
# an op written in Python over NumPy (host memory only).
NO_KERNEL = ("has no kernel for device cuda", "has no CUDA kernel for", "tensor to NumPy; use .cpu() first")


def _run(spec, xs):
    try:
        return spec.fn(sx, *xs)
    except (NotImplementedError, TypeError) as e:
        if any(s in str(e) for s in NO_KERNEL):
            pytest.skip(f"no CUDA kernel yet: {e}")
        raise


def _outputs(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _tol(spec, dtype):
    rtol, atol = tolerance(spec, dtype)
    if dtype in ("float16", "bfloat16"):  # both devices compute in float32: an ulp of the half apart at most
        return max(rtol, 1e-2), max(atol, 1e-2)
    return (max(rtol, 1e-5), max(atol, 1e-6)) if dtype == "float32" else (max(rtol, 1e-10), max(atol, 1e-12))


def _device_inputs(spec, case, dtype, layout, rng):
    """CPU inputs and their GPU copies with the same layout: the GPU buffers are made first and the
    layout's view (transpose, slice with steps, expand) is taken on the GPU."""
    cpu, _ = case_inputs(spec, case, dtype, layout, rng)
    gpu = []
    for x in cpu:
        if layout == "transposed" and x.dim() >= 2:
            rev = tuple(reversed(range(x.dim())))
            gpu.append(x.permute(*rev).contiguous().to(DEV).permute(*rev))
        elif layout == "sliced" and x.dim() >= 1:
            big = sx.zeros(*[2 * n + 1 for n in x.shape], dtype=x.dtype, device=DEV)
            sl = tuple(slice(1, None, 2) for _ in range(x.dim()))
            big[sl] = x.to(DEV)
            gpu.append(big[sl])
        elif layout == "broadcast" and x.dim() >= 1 and 0 in x.stride():
            d = x.stride().index(0)
            gpu.append(x.narrow(d, 0, 1).contiguous().to(DEV).expand(*x.shape))
        else:
            gpu.append(x.to(DEV))
    return cpu, gpu


FORWARD = [(s, d, lay) for s in OPS for d in DTYPES if d in s.dtypes for lay in LAYOUTS if lay in s.layouts]


@pytest.mark.parametrize("spec,dtype,layout", FORWARD,
                         ids=[f"{s.name}-{d}-{lay}" for s, d, lay in FORWARD])
def test_op_forward_matches_cpu(spec, dtype, layout):
    rng = rng_for("cuda", spec.name, dtype, layout)
    for k, case in enumerate(spec.cases):
        cpu, gpu = _device_inputs(spec, case, dtype, layout, rng)
        want = _outputs(spec.fn(sx, *cpu))
        got = _outputs(_run(spec, gpu))
        assert len(got) == len(want)
        for w, g in zip(want, got):
            assert g.device == DEV, f"{spec.name} case {k}: result on {g.device}"
            assert g.dtype == w.dtype and tuple(g.shape) == tuple(w.shape)
            gw, gg = to_np(w), to_np(g.cpu())
            if w.dtype.is_floating_point:
                rtol, atol = _tol(spec, str(w.dtype).rsplit(".", 1)[-1])  # "sneppx.float32" -> "float32"
                np.testing.assert_allclose(gg, gw, rtol=rtol, atol=atol, equal_nan=True,
                                           err_msg=f"{spec.name} case {k}")
            else:
                np.testing.assert_array_equal(gg, gw, err_msg=f"{spec.name} case {k}")


BACKWARD = [s for s in OPS if s.grad and "float64" in s.dtypes
            and expected_dtype(s, s.cases[0], "float64") in ("float64", ("float64", "int64"))]


@pytest.mark.parametrize("spec", BACKWARD, ids=[s.name for s in BACKWARD])
def test_op_gradient_matches_cpu(spec):
    rng = rng_for("cuda-grad", spec.name)
    for k, case in enumerate(spec.cases):
        grads = []
        arrays = [values(rng, arg, "float64") for arg in case]
        weights = None
        for dev in ("cpu", DEV):
            xs = []
            for arg, a in zip(case, arrays):
                is_data = isinstance(arg, X)
                dt = sx.float64 if is_data else (sx.int64 if a.dtype.kind == "i" else sx.bool)
                xs.append(sx.tensor(a, dtype=dt, device=dev, requires_grad=is_data and arg.grad))
            if not any(x.requires_grad for x in xs):
                break
            out = float_outputs(_run(spec, xs) if dev != "cpu" else spec.fn(sx, *xs))
            if weights is None:
                weights = np.random.default_rng(k).standard_normal(tuple(out.shape))
            (out * sx.tensor(weights, dtype=sx.float64, device=dev)).sum().backward()
            grads.append([to_np(x.grad.cpu()) if x.grad is not None else None for x in xs])
            for x in xs:
                if x.grad is not None:
                    assert x.grad.device == dev
        if len(grads) == 2:
            for gc_, gg in zip(*grads):
                if gc_ is not None:
                    np.testing.assert_allclose(gg, gc_, rtol=1e-9, atol=1e-12, err_msg=f"{spec.name} case {k}")


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int32", "int64", "float32", "float64"])
def test_copies_between_host_and_device(dtype):
    a = np.arange(24).reshape(2, 3, 4) % 5
    x = sx.tensor(a, dtype=getattr(sx, dtype))
    y = x.to(DEV)
    assert y.device == DEV and y.is_cuda and y.dtype == x.dtype
    np.testing.assert_array_equal(to_np(y.cpu()), to_np(x))
    np.testing.assert_array_equal(to_np(x.permute(2, 0, 1).cuda().cpu()), to_np(x.permute(2, 0, 1)))
    np.testing.assert_array_equal(to_np(y.permute(2, 0, 1).cpu()), to_np(x.permute(2, 0, 1)))
    np.testing.assert_array_equal(to_np(y[:, ::2, 1:].contiguous().cpu()), to_np(x[:, ::2, 1:]))
    z = sx.zeros(2, 3, 4, dtype=x.dtype, device=DEV)
    z.copy_(x)  # host to device
    np.testing.assert_array_equal(to_np(z.cpu()), to_np(x))
    h = sx.zeros(2, 3, 4, dtype=x.dtype)
    h.copy_(y)  # device to host
    np.testing.assert_array_equal(to_np(h), to_np(x))
    sx.cuda.synchronize()


def test_copy_converts_dtypes_and_writes_strided_views():
    a = np.random.default_rng(0).standard_normal((4, 6))
    y = sx.tensor(a, device=DEV)
    for dt in (sx.float64, sx.int64, sx.int32, sx.bool):
        np.testing.assert_array_equal(to_np(y.to(dt).cpu()), to_np(sx.tensor(a).to(dt)))
    z = sx.zeros(4, 6, device=DEV)
    z[:, ::2] = y[:, 1::2]
    z.t()[1::2] = sx.tensor(a.T[1::2].copy(), device=DEV)  # writes through a transposed, stepped view
    r = np.zeros((4, 6), np.float32)
    r[:, ::2] = a[:, 1::2]
    r.T[1::2] = a.T[1::2]
    np.testing.assert_allclose(to_np(z.cpu()), r, rtol=1e-6)


def test_like_factories_and_new_tensors_keep_the_device():
    x = sx.ones(2, 3, dtype=sx.float64, device=DEV)
    for t in (sx.zeros_like(x), sx.ones_like(x), sx.empty_like(x), sx.full_like(x, 2.0), sx.rand_like(x),
              sx.randn_like(x), sx.randint_like(x, 5), x.new_zeros(4), x.new_ones(4), x.new_empty(4),
              x.new_full((4,), 1.0), x.new_tensor([1.0, 2.0])):
        assert t.device == DEV and t.dtype == x.dtype
    assert sx.zeros_like(x, device="cpu").device == "cpu"
    # 0-d CPU tensors take part in where on the GPU as numbers do (PyTorch's rule, as for binary ops)
    m = sx.tensor([True, False], device=DEV)
    r = sx.where(m, sx.tensor(1.0, dtype=sx.float64), sx.tensor(2.0, dtype=sx.float64))
    assert r.device == DEV
    np.testing.assert_array_equal(to_np(r.cpu()), [1.0, 2.0])


def test_gradients_stay_on_the_device_and_to_is_differentiable():
    a = np.random.default_rng(1).standard_normal((3, 4))
    w = sx.tensor(a, requires_grad=True)  # a CPU leaf used on the GPU
    x = sx.tensor(a, device=DEV, requires_grad=True)
    loss = ((x * w.to(DEV)).tanh() @ x.t()).softmax(-1).log().sum()
    loss.backward()
    assert x.grad.device == DEV and w.grad.device == "cpu"
    xc = sx.tensor(a, requires_grad=True)
    wc = sx.tensor(a, requires_grad=True)
    ((xc * wc).tanh() @ xc.t()).softmax(-1).log().sum().backward()
    np.testing.assert_allclose(to_np(x.grad.cpu()), to_np(xc.grad), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(to_np(w.grad), to_np(wc.grad), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [sx.float32, sx.float64])
def test_matmul_layouts_and_batches(dtype):
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((3, 5, 7)), rng.standard_normal((3, 7, 4))
    ga, gb = sx.tensor(a, dtype=dtype, device=DEV), sx.tensor(b, dtype=dtype, device=DEV)
    tol = {"rtol": 1e-4, "atol": 1e-5} if dtype == sx.float32 else {"rtol": 1e-10, "atol": 1e-12}
    np.testing.assert_allclose(to_np((ga @ gb).cpu()), a @ b, **tol)
    np.testing.assert_allclose(to_np((gb.transpose(1, 2) @ ga.transpose(1, 2)).cpu()),
                               b.transpose(0, 2, 1) @ a.transpose(0, 2, 1), **tol)
    np.testing.assert_allclose(to_np((ga[0] @ gb[1]).cpu()), a[0] @ b[1], **tol)
    np.testing.assert_allclose(to_np((ga @ gb[0]).cpu()), a @ b[0], **tol)  # broadcast batch
    np.testing.assert_allclose(to_np((ga[:, ::2] @ gb[:, :, 1::2]).cpu()), a[:, ::2] @ b[:, :, 1::2], **tol)
    np.testing.assert_allclose(to_np(sx.bmm(ga, gb).cpu()), a @ b, **tol)
    e = sx.zeros(3, 5, 0, dtype=dtype, device=DEV) @ sx.zeros(3, 0, 4, dtype=dtype, device=DEV)
    assert to_np(e.cpu()).tolist() == np.zeros((3, 5, 4)).tolist()


def test_reductions_over_dims_and_all():
    a = np.random.default_rng(3).standard_normal((5, 300, 7))
    x = sx.tensor(a, dtype=sx.float64, device=DEV)
    for dims in (None, 0, 1, 2, (0, 2)):
        np.testing.assert_allclose(to_np(x.sum(dims).cpu()) if dims is not None else x.sum().item(),
                                   a.sum(axis=dims), rtol=1e-10)
        np.testing.assert_allclose(to_np(x.mean(dims).cpu()) if dims is not None else x.mean().item(),
                                   a.mean(axis=dims), rtol=1e-10)
    np.testing.assert_array_equal(to_np(x.amax(1).cpu()), a.max(1))
    v, i = x.max(1)
    np.testing.assert_array_equal(to_np(v.cpu()), a.max(1))
    np.testing.assert_array_equal(to_np(i.cpu()), a.argmax(1))
    big = sx.ones(10**6 + 3, device=DEV)
    assert big.sum().item() == 10**6 + 3


def test_memory_statistics_and_the_cache():
    gc.collect()
    sx.cuda.synchronize()
    sx.cuda.empty_cache()
    base = sx.cuda.memory_allocated()
    sx.cuda.reset_peak_memory_stats()
    x = sx.empty(1 << 20, device=DEV)  # 4 MiB: a multiple of the 2 MiB class
    assert sx.cuda.memory_allocated() - base == 4 << 20
    assert sx.cuda.max_memory_allocated() >= base + (4 << 20)
    y = sx.empty(10, device=DEV)  # 40 bytes round up to one 512-byte class
    assert sx.cuda.memory_allocated() - base == (4 << 20) + 512
    del x, y
    gc.collect()
    assert sx.cuda.memory_allocated() == base
    reserved = sx.cuda.memory_reserved()
    assert reserved >= base + (4 << 20) + 512  # freed blocks stay cached
    z = sx.empty(1 << 20, device=DEV)  # reuses the cached block: no new reservation
    assert sx.cuda.memory_reserved() == reserved
    del z
    gc.collect()
    sx.cuda.empty_cache()
    assert sx.cuda.memory_reserved() == sx.cuda.memory_allocated() == base


def test_mixed_devices_raise_as_pytorch_does():
    x, y = sx.ones(3), sx.ones(3, device=DEV)
    for f in (lambda: x + y, lambda: y * x, lambda: sx.ones(3, 3) @ sx.ones(3, 3, device=DEV),
              lambda: sx.where(y > 0, x, y)):
        with pytest.raises(RuntimeError, match=r"expected tensors on the same device, got (cpu and cuda:0|cuda:0 and cpu)"):
            f()


def test_ops_without_a_cuda_kernel_say_so():
    # every kernel slot has a CUDA kernel or a composed fallback; what is left are dtypes cuBLAS lacks
    x = sx.ones(2, 2, dtype=sx.int64, device=DEV)
    with pytest.raises(NotImplementedError, match=r"\[matmul\] has no CUDA kernel for int64"):
        x @ x


def test_device_queries():
    assert sx.cuda.device_count() >= 1
    assert isinstance(sx.cuda.get_device_name(), str) and sx.cuda.get_device_name()
    with pytest.raises(RuntimeError, match=r"\[cuda\] device cuda:99 is out of range"):
        sx.zeros(1, device="cuda:99")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sx.cuda.synchronize(0)
