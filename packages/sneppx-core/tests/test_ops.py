"""Op-table tests: forward against NumPy, backward against finite differences, both against PyTorch."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import sneppx_core as sx
from sneppx_core.testing import gradcheck

from opcheck import LAYOUTS, assert_matches, case_inputs, expected_dtype, float_outputs, rng_for, to_np
from optable import FLOATS, OPS, X, values

FORWARD = [(s, d, lay) for s in OPS for d in s.dtypes for lay in LAYOUTS if lay in s.layouts]
BACKWARD = [(s, lay) for s in OPS if s.grad and s.fd and "float64" in s.dtypes
            and expected_dtype(s, s.cases[0], "float64") in ("float64", ("float64", "int64"))
            for lay in ("contiguous", "transposed")]


def _ids(params):
    return ["-".join(p.name if hasattr(p, "name") else str(p) for p in ps) for ps in params]


@pytest.mark.parametrize("spec,dtype,layout", FORWARD, ids=_ids(FORWARD))
def test_forward_matches_numpy(spec, dtype, layout):
    rng = rng_for(spec.name, dtype, layout)
    for k, case in enumerate(spec.cases):
        xs, refs = case_inputs(spec, case, dtype, layout, rng)
        out = spec.fn(sx, *xs)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            ref = spec.ref(*refs)
        assert_matches(out, ref, expected_dtype(spec, case, dtype), spec, f"{spec.name} case {k}")


def _grad_inputs(case, rng, transposed):
    """float64 inputs for a gradient check; differentiable data inputs require grad."""
    xs, perms = [], []
    for arg in case:
        a = values(rng, arg, "float64")
        is_data = isinstance(arg, X)
        if is_data:
            a = a.astype(np.float64)
        perm = tuple(reversed(range(a.ndim))) if transposed and a.ndim >= 2 else None
        stored = np.ascontiguousarray(a.transpose(perm)) if perm else a
        dt = sx.float64 if is_data else (sx.int64 if stored.dtype.kind == "i" else sx.bool)
        xs.append(sx.tensor(stored, dtype=dt, requires_grad=is_data and arg.grad))
        perms.append(perm)
    return xs, perms


@pytest.mark.parametrize("spec,layout", BACKWARD, ids=_ids(BACKWARD))
def test_backward_matches_finite_differences(spec, layout):
    rng = rng_for("grad", spec.name, layout)
    for case in spec.cases:
        xs, perms = _grad_inputs(case, rng, layout == "transposed")
        if not any(x.requires_grad for x in xs):
            continue

        def f(*ts):
            ts = [t.permute(*p) if p else t for t, p in zip(ts, perms)]
            return float_outputs(spec.fn(sx, *ts))

        rtol, atol = spec.grad_tol
        assert gradcheck(f, xs, eps=1e-6, rtol=rtol, atol=atol)


def test_float32_gradients_agree_with_float64():
    """The float32 backward of a composite expression matches the float64 one."""
    rng = rng_for("f32grad")
    a = rng.standard_normal((4, 5))
    grads = []
    for dt in (sx.float32, sx.float64):
        x = sx.tensor(a, dtype=dt, requires_grad=True)
        y = ((x.tanh() * x.exp()).sum(1) ** 2).mean() + x.sigmoid().logsumexp(dim=0).sum()
        y.backward()
        grads.append(to_np(x.grad).astype(np.float64))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- PyTorch parity
def _torch_input(torch, x):
    t = torch.from_numpy(np.array(to_np(x), order="C"))  # (ascontiguousarray would make 0-d 1-d)
    if x.dtype == sx.bfloat16:
        t = t.to(torch.bfloat16)
    return t


def _torch_to_np(torch, t):
    t = t.detach()
    if t.dtype == torch.bfloat16:
        t = t.float()
    return t.numpy()


def _torch_dtype_name(t):
    return str(t.dtype).replace("torch.", "")


PARITY = [(s, d) for s in OPS for d in s.dtypes]


@pytest.mark.parity
@pytest.mark.parametrize("spec,dtype", PARITY, ids=_ids(PARITY))
def test_parity_with_torch(spec, dtype, torch):
    fn = spec.torch_fn or spec.fn
    rng = rng_for("parity", spec.name, dtype)
    for k, case in enumerate(spec.cases):
        for layout in ("contiguous", "transposed"):
            xs, _ = case_inputs(spec, case, dtype, layout, rng)
            ts = [_torch_input(torch, x) for x in xs]
            out_dt = expected_dtype(spec, case, dtype)
            grad_on = spec.grad and spec.torch_grad and dtype in FLOATS and (out_dt[0] if isinstance(out_dt, tuple)
                                                                            else out_dt) in FLOATS
            for x, t, arg in zip(xs, ts, case):
                if grad_on and isinstance(arg, X) and arg.grad:
                    x.requires_grad_(True)
                    t.requires_grad_(True)
            out, tout = spec.fn(sx, *xs), fn(torch, *ts)
            touts = tuple(tout) if isinstance(tout, (tuple, list)) else tout
            expect = (tuple(_torch_dtype_name(t) for t in touts) if isinstance(touts, tuple)
                      else _torch_dtype_name(touts))
            ref = tuple(_torch_to_np(torch, t) for t in touts) if isinstance(touts, tuple) else _torch_to_np(torch, touts)
            assert_matches(out, ref, expect, spec, f"{spec.name} case {k} {layout}")
            if grad_on:
                _compare_grads(torch, spec, xs, ts, float_outputs(out), _torch_float_outputs(torch, tout), dtype)


def _torch_float_outputs(torch, out):
    if isinstance(out, (tuple, list)):
        parts = [o.reshape(-1) for o in out if o.dtype.is_floating_point]
        return torch.cat(parts) if len(parts) > 1 else parts[0]
    return out


def _compare_grads(torch, spec, xs, ts, out, tout, dtype):
    seed = np.random.default_rng(1).standard_normal(tuple(out.shape))
    out.backward(sx.tensor(seed, dtype=out.dtype))
    tout.backward(torch.from_numpy(seed).to(tout.dtype))
    rtol, atol = {"float64": (1e-7, 1e-9), "float32": (1e-4, 1e-5), "float16": (1e-2, 1e-2),
                  "bfloat16": (6e-2, 6e-2)}[dtype]
    for i, (x, t) in enumerate(zip(xs, ts)):
        if not t.requires_grad:
            continue
        if t.grad is None:
            assert x.grad is None or not to_np(x.grad).any(), f"{spec.name}: input {i} has a gradient, torch has none"
            continue
        assert x.grad is not None, f"{spec.name}: input {i} got no gradient"
        np.testing.assert_allclose(to_np(x.grad).astype(np.float64), _torch_to_np(torch, t.grad).astype(np.float64),
                                   rtol=rtol, atol=atol, err_msg=f"{spec.name} grad of input {i}")


# ---------------------------------------------------------------- empty tensors
EMPTY = [
    ("sum0", lambda m, x: x.sum(0), lambda a: a.sum(0)), ("sum1", lambda m, x: x.sum(1), lambda a: a.sum(1)),
    ("sum_all", lambda m, x: x.sum(), lambda a: a.sum()), ("prod0", lambda m, x: x.prod(0), lambda a: a.prod(0)),
    ("amax1", lambda m, x: x.amax(1), lambda a: a.max(1)), ("cumsum0", lambda m, x: x.cumsum(0), lambda a: a.cumsum(0)),
    ("exp", lambda m, x: x.exp(), np.exp), ("add", lambda m, x: x + 1, lambda a: a + 1),
    ("matmul", lambda m, x: x @ m.ones(3, 4), lambda a: a @ np.ones((3, 4))),
    ("matmul_k0", lambda m, x: x.T @ x, lambda a: a.T @ a), ("T", lambda m, x: x.T, lambda a: a.T),
    ("reshape", lambda m, x: x.reshape(3, 0), lambda a: a.reshape(3, 0)), ("slice", lambda m, x: x[:, 1:], lambda a: a[:, 1:]),
    ("mask", lambda m, x: x[x > 0], lambda a: a[a > 0]), ("sort", lambda m, x: x.sort(1).values, lambda a: np.sort(a, 1)),
    ("all", lambda m, x: x.all(), lambda a: a.all()), ("any", lambda m, x: x.any(), lambda a: a.any()),
    ("all0", lambda m, x: x.all(0), lambda a: a.all(0)), ("any1", lambda m, x: x.any(1), lambda a: a.any(1)),
    ("logsumexp1", lambda m, x: x.logsumexp(1), lambda a: np.log(np.exp(a).sum(1))),
    ("cat", lambda m, x: m.cat([x, x]), lambda a: np.concatenate([a, a])),
    ("stack", lambda m, x: m.stack([x, x]), lambda a: np.stack([a, a])),
    ("repeat", lambda m, x: x.repeat(2, 2), lambda a: np.tile(a, (2, 2))), ("flip", lambda m, x: x.flip(0), lambda a: a[::-1]),
    ("nonzero", lambda m, x: x.nonzero(), lambda a: np.argwhere(a)),
    ("softmax", lambda m, x: x.softmax(1), lambda a: a),
]


@pytest.mark.parametrize("name,f,ref", EMPTY, ids=[e[0] for e in EMPTY])
def test_empty_tensors_match_numpy(name, f, ref):
    out = f(sx, sx.zeros(0, 3))
    with np.errstate(all="ignore"):
        expected = np.asarray(ref(np.zeros((0, 3), dtype=np.float32)))
    assert tuple(out.shape) == expected.shape
    np.testing.assert_array_equal(to_np(out), expected)


@pytest.mark.parity
@pytest.mark.parametrize("name,f,ref", EMPTY, ids=[e[0] for e in EMPTY])
def test_empty_tensors_match_torch(name, f, ref, torch):
    out, tout = f(sx, sx.zeros(0, 3)), f(torch, torch.zeros(0, 3))
    assert tuple(out.shape) == tuple(tout.shape) and str(out.dtype).split(".")[-1] == str(tout.dtype).split(".")[-1]
    np.testing.assert_array_equal(to_np(out), tout.numpy())


# ---------------------------------------------------------------- NaN propagation
NAN_DATA = [[1.0, float("nan"), 3.0, -1.0], [2.0, 0.5, float("nan"), float("nan")], [4.0, 1.0, 2.0, 0.0]]
NAN_CASES = [
    ("amax", lambda m, x: x.amax(1), lambda a: a.max(1)), ("amin", lambda m, x: x.amin(0), lambda a: a.min(0)),
    ("max_values", lambda m, x: x.max(1).values, lambda a: a.max(1)),
    ("argmax", lambda m, x: x.argmax(1), lambda a: a.argmax(1)), ("argmin", lambda m, x: x.argmin(0), lambda a: a.argmin(0)),
    ("max_all", lambda m, x: x.max(), lambda a: a.max()),
    ("maximum", lambda m, x: m.maximum(x, x.flip(1)), lambda a: np.maximum(a, a[:, ::-1])),
    ("minimum", lambda m, x: m.minimum(x, m.zeros(4)), lambda a: np.minimum(a, 0)),
    ("clamp", lambda m, x: x.clamp(0, 2), lambda a: np.clip(a, 0, 2)),
    ("clamp_tensor", lambda m, x: x.clamp(x.flip(1), None), lambda a: np.maximum(a, a[:, ::-1])),
    ("sort", lambda m, x: x.sort(1).values, lambda a: np.sort(a, 1)),
    ("sort_desc", lambda m, x: x.sort(1, descending=True).values, lambda a: np.sort(a, 1)[:, ::-1]),  # NaN first
    ("sum", lambda m, x: x.sum(1), lambda a: a.sum(1)), ("cumsum", lambda m, x: x.cumsum(1), lambda a: a.cumsum(1)),
    ("relu", lambda m, x: x.relu(), lambda a: np.where(a < 0, 0, a)), ("sign", lambda m, x: x.sign(), lambda a: np.nan_to_num(np.sign(a))),  # PyTorch: sign(nan) = 0
    ("eq", lambda m, x: x == x, lambda a: a == a), ("ne", lambda m, x: x != x, lambda a: a != a),
    ("round", lambda m, x: x.round(), np.round), ("softmax", lambda m, x: x.softmax(1), None),
    ("logsumexp", lambda m, x: x.logsumexp(1), None), ("norm", lambda m, x: x.norm(dim=1), lambda a: np.sqrt((a * a).sum(1))),
    ("any", lambda m, x: x.any(1), lambda a: (a != 0).any(1)), ("bool", lambda m, x: x.bool(), lambda a: a != 0),
]


@pytest.mark.parametrize("name,f,ref", [c for c in NAN_CASES if c[2] is not None],
                         ids=[c[0] for c in NAN_CASES if c[2] is not None])
def test_nan_propagation_matches_numpy(name, f, ref):
    a = np.array(NAN_DATA, dtype=np.float32)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(to_np(f(sx, sx.tensor(a))), ref(a))


@pytest.mark.parity
@pytest.mark.parametrize("name,f,ref", NAN_CASES, ids=[c[0] for c in NAN_CASES])
def test_nan_propagation_matches_torch(name, f, ref, torch):
    np.testing.assert_array_equal(to_np(f(sx, sx.tensor(NAN_DATA))), f(torch, torch.tensor(NAN_DATA)).numpy())
