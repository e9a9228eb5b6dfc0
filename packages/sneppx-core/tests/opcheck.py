"""Helpers that turn op-table cases into tensors in a chosen memory layout and compare results."""

from __future__ import annotations

import zlib

import numpy as np
import sneppx_core as sx

from optable import FLOATS, X, arg_dtype, tolerance, values

LAYOUTS = ("contiguous", "transposed", "sliced", "broadcast")


def rng_for(*parts):
    """A generator seeded from the test's identity, so every run sees the same inputs."""
    return np.random.default_rng(zlib.crc32("/".join(map(str, parts)).encode()))


def rms_rel_err(got, ref):
    """RMS error of got against the float64 reference ref, relative to ref's RMS."""
    return np.sqrt(((np.asarray(got, np.float64) - ref) ** 2).mean()) / np.sqrt((ref ** 2).mean())


def to_np(t):
    """The stored values of a sneppx tensor as a NumPy array (bfloat16 as float32, exactly)."""
    t = t.detach()
    if t.dtype == sx.bfloat16:
        t = t.float()
    return np.array(t.numpy())


def _broadcast_source(a):
    """(small, dim) with ``small`` of size 1 along the first dim of size > 1, or (None, None)."""
    for d, n in enumerate(a.shape):
        if n > 1:
            return np.take(a, [0], axis=d), d
    return None, None


def make_input(a, dtype, layout):
    """A sneppx tensor whose logical value is ``a`` cast to ``dtype``, stored in ``layout``.

    transposed: a permuted view of a contiguous buffer; sliced: every other element of a larger
    buffer (steps in every dim); broadcast: a stride-0 expand of a size-1 slice (so the values
    themselves repeat along that dim).
    """
    dt = getattr(sx, dtype)
    nd = a.ndim
    if layout == "transposed" and nd >= 2:
        rev = tuple(reversed(range(nd)))
        return sx.tensor(np.ascontiguousarray(a.transpose(rev)), dtype=dt).permute(*rev)
    if layout == "sliced" and nd >= 1:
        big = np.zeros(tuple(2 * n + 1 for n in a.shape), dtype=a.dtype)
        sl = tuple(slice(1, None, 2) for _ in range(nd))
        big[sl] = a
        return sx.tensor(big, dtype=dt)[sl]
    if layout == "broadcast":
        small, _ = _broadcast_source(a)
        if small is not None:
            return sx.tensor(small, dtype=dt).expand(*a.shape)
    return sx.tensor(a, dtype=dt)


def case_inputs(spec, case, dtype, layout, rng):
    """The sneppx inputs of one case and the NumPy arrays a reference should see."""
    xs = [make_input(values(rng, arg, dtype), arg_dtype(arg, dtype), layout) for arg in case]
    arrays = [to_np(x) for x in xs]
    out_dt = expected_dtype(spec, case, dtype)
    first_out = out_dt[0] if isinstance(out_dt, tuple) else out_dt
    refs = []
    for arg, a in zip(case, arrays):
        if isinstance(arg, X) and a.dtype.kind == "f":
            a = a.astype(np.float64)
        elif isinstance(arg, X) and first_out in FLOATS:
            a = a.astype(np.float64)  # integer inputs of ops with floating results
        refs.append(a)
    return xs, refs


def expected_dtype(spec, case, dtype):
    return spec.out(*[arg_dtype(arg, dtype) for arg in case if isinstance(arg, X)])


def assert_matches(out, ref, expected, spec, label=""):
    """Checks dtype, shape and values of ``out`` (a tensor or tuple) against a NumPy reference."""
    if isinstance(ref, (tuple, list)):
        assert isinstance(out, (tuple, list)), f"{label}: expected a tuple, got {type(out)}"
        assert len(out) == len(ref), f"{label}: {len(out)} results, expected {len(ref)}"
        for k, (o, r) in enumerate(zip(out, ref)):
            e = expected[k] if isinstance(expected, tuple) else expected
            assert_matches(o, r, e, spec, f"{label}[{k}]")
        return
    assert isinstance(out, sx.Tensor), f"{label}: expected a Tensor, got {type(out)}"
    assert out.dtype == getattr(sx, expected), f"{label}: dtype {out.dtype}, expected {expected}"
    ref = np.asarray(ref)
    assert tuple(out.shape) == ref.shape, f"{label}: shape {tuple(out.shape)}, expected {ref.shape}"
    got = to_np(out)
    if expected in FLOATS:
        rtol, atol = tolerance(spec, expected)
        with np.errstate(invalid="ignore"):
            np.testing.assert_allclose(got.astype(np.float64), ref.astype(np.float64), rtol=rtol, atol=atol,
                                       equal_nan=True, err_msg=label)
    else:
        np.testing.assert_array_equal(got, ref, err_msg=label)


def float_outputs(out):
    """One tensor made of every floating result (tuple results are flattened and joined)."""
    if isinstance(out, (tuple, list)):
        parts = [o.reshape(-1) for o in out if o.dtype.is_floating_point]
        return sx.cat(parts) if len(parts) > 1 else parts[0]
    return out


def matches_torch(torch, fn, arrays, seed_for, *, rtol, atol, grad_rtol, grad_atol, name=""):
    """``fn(lib, *leaves)`` on float64 leaves made from ``arrays``, in SneppX and in torch: the values agree,
    then the gradients of sum(out * seed) with seed = ``seed_for(shape)`` (an input torch gives no gradient
    gets none or zeros)."""
    ts = [sx.tensor(a, dtype=sx.float64, requires_grad=True) for a in arrays]
    tts = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    out, tout = fn(sx, *ts), fn(torch, *tts)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=rtol, atol=atol, err_msg=name)
    w = seed_for(tuple(tout.shape))
    (out * sx.tensor(w)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    for a, b in zip(ts, tts):
        if b.grad is None:
            assert a.grad is None or not np.any(a.grad.numpy()), name
        else:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=grad_rtol, atol=grad_atol, err_msg=name)
