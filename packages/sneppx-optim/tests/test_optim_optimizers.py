"""Optimizers against float64 NumPy implementations of their update rules (optim_reference.py)."""

import numpy as np
import pytest
import sneppx_core as sx
import sneppx_core.functional as F

import sneppx_optim as so
from optim_helpers import grad_sequence, make_params, rel_err, set_grads, step_with, stepped, to_np
import optim_reference as ref

SHAPES = [(7, 5), (5,), (3, 4, 2), ()]
STEPS = 50

CASES = [
    ("sgd", so.SGD, ref.sgd, dict(lr=0.05)),
    ("sgd_momentum", so.SGD, ref.sgd, dict(lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    ("sgd_nesterov", so.SGD, ref.sgd, dict(lr=0.05, momentum=0.8, nesterov=True, maximize=True)),
    ("adam", so.Adam, ref.adam, dict(lr=0.01, weight_decay=0.05)),
    ("adam_amsgrad", so.Adam, ref.adam, dict(lr=0.01, betas=(0.8, 0.9), amsgrad=True, maximize=True)),
    ("adamw", so.AdamW, lambda p, g, **k: ref.adam(p, g, decoupled=True, **k), dict(lr=0.01, weight_decay=0.1)),
    ("adamw_amsgrad", so.AdamW, lambda p, g, **k: ref.adam(p, g, decoupled=True, **k),
     dict(lr=0.01, eps=1e-6, amsgrad=True, weight_decay=0.01)),
    ("lion", so.Lion, ref.lion, dict(lr=0.003, weight_decay=0.1)),
    ("lion_betas", so.Lion, ref.lion, dict(lr=0.001, betas=(0.95, 0.98))),
    ("lamb", so.LAMB, ref.lamb, dict(lr=0.01, weight_decay=0.01)),
    ("lamb_betas", so.LAMB, ref.lamb, dict(lr=0.02, betas=(0.8, 0.95), eps=1e-4)),
]


def _run(cls, kwargs, dtype, shapes=SHAPES, steps=STEPS):
    params, start = make_params(shapes, dtype=dtype)
    grads = grad_sequence(shapes, steps, dtype=dtype)
    opt = cls(params, **kwargs)
    for g in grads:
        set_grads(params, g, dtype)
        opt.step()
    return [to_np(p) for p in params], start, grads


@pytest.mark.parametrize("name, cls, reference, kwargs", CASES, ids=[c[0] for c in CASES])
def test_matches_reference_float32(name, cls, reference, kwargs):
    got, start, grads = _run(cls, kwargs, np.float32)
    want = reference(start, grads, **kwargs)
    for g, w in zip(got, want):
        assert rel_err(g, w) < 2e-5, name


@pytest.mark.parametrize("name, cls, reference, kwargs", CASES, ids=[c[0] for c in CASES])
def test_matches_reference_float64(name, cls, reference, kwargs):
    got, start, grads = _run(cls, kwargs, np.float64)
    want = reference(start, grads, **kwargs)
    for g, w in zip(got, want):
        assert rel_err(g, w) < 1e-12, name


def test_one_kernel_call_per_group(monkeypatch):
    calls = []
    real = F.adam_step
    monkeypatch.setattr(F, "adam_step", lambda *a, **k: calls.append(len(a[0])) or real(*a, **k))
    params, _ = make_params([(3,), (4,), (2, 2), (5,)])
    opt = so.AdamW([{"params": params[:3]}, {"params": params[3:], "lr": 0.1}])
    for g in grad_sequence([(3,), (4,), (2, 2), (5,)], 3):
        set_grads(params, g)
        opt.step()
    assert calls == [3, 1] * 3


def test_params_without_grad_are_skipped_and_keep_their_own_step():
    shapes = [(4,), (3,)]
    params, start = make_params(shapes)
    grads = grad_sequence(shapes, 6)
    opt = so.Adam(params, lr=0.1)
    for t, g in enumerate(grads):
        set_grads(params, g)
        if t % 2 == 0:
            params[1].grad = None  # the second parameter only trains on odd steps
        opt.step()
    assert opt.state[params[0]]["step"] == 6 and opt.state[params[1]]["step"] == 3
    want0 = ref.adam([start[0]], [[g[0]] for g in grads], lr=0.1)[0]
    want1 = ref.adam([start[1]], [[g[1]] for g in grads[1::2]], lr=0.1)[0]
    assert rel_err(to_np(params[0]), want0) < 2e-5 and rel_err(to_np(params[1]), want1) < 2e-5
    untouched = sx.Tensor([1.0, 2.0], requires_grad=True)
    opt.add_param_group({"params": [untouched]})
    opt.step()
    assert untouched not in opt.state and untouched.tolist() == [1.0, 2.0]


def test_param_groups_use_their_own_hyperparameters():
    shapes = [(6,), (6,)]
    params, start = make_params(shapes)
    grads = grad_sequence(shapes, 10)
    opt = so.SGD([{"params": [params[0]]}, {"params": [params[1]], "lr": 0.5, "momentum": 0.5}], lr=0.1)
    assert opt.param_groups[1]["lr"] == 0.5 and opt.param_groups[0]["momentum"] == 0.0
    for g in grads:
        set_grads(params, g)
        opt.step()
    assert rel_err(to_np(params[0]), ref.sgd([start[0]], [[g[0]] for g in grads], lr=0.1)[0]) < 1e-5
    assert rel_err(to_np(params[1]), ref.sgd([start[1]], [[g[1]] for g in grads], lr=0.5, momentum=0.5)[0]) < 1e-5


@pytest.mark.parametrize("cls, kwargs", [(so.SGD, dict(lr=0.1, momentum=0.9)), (so.AdamW, dict(amsgrad=True)),
                                         (so.Lion, {}), (so.LAMB, dict(weight_decay=0.1))])
def test_state_dict_resume_is_bit_exact(cls, kwargs):
    shapes = [(5, 3), (3,)]
    grads = grad_sequence(shapes, 20)
    full, _ = stepped(cls, kwargs, shapes, grads)
    half, opt = stepped(cls, kwargs, shapes, grads[:10])
    saved = opt.state_dict()
    saved = {"state": {i: {k: (v.clone() if isinstance(v, sx.Tensor) else v) for k, v in s.items()}
                       for i, s in saved["state"].items()}, "param_groups": saved["param_groups"]}
    resumed = [sx.Tensor(to_np(p).astype(np.float32), requires_grad=True) for p in half]
    opt2 = cls(resumed, lr=123.0)
    opt2.load_state_dict(saved)
    assert opt2.param_groups[0]["lr"] == opt.param_groups[0]["lr"]
    step_with(resumed, opt2, grads[10:])
    for a, b in zip(resumed, full):
        np.testing.assert_array_equal(to_np(a), to_np(b))


def test_step_closure_and_zero_grad():
    w = sx.Tensor([1.0, -2.0], requires_grad=True)
    opt = so.SGD([w], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert loss.item() == pytest.approx(5.0)
    np.testing.assert_allclose(w.tolist(), [0.8, -1.6], rtol=1e-6)  # w - 0.1 * 2w
    opt.zero_grad(set_to_none=False)
    assert w.grad.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert w.grad is None


def test_mixed_dtypes_and_non_contiguous_grads():
    p32 = sx.Tensor(np.ones((3, 2), dtype=np.float32), requires_grad=True)
    p64 = sx.Tensor(np.ones((2, 3), dtype=np.float64), requires_grad=True)
    g = np.arange(6, dtype=np.float64).reshape(3, 2)
    p32.grad = sx.Tensor(g.astype(np.float32))
    p64.grad = sx.Tensor(g).transpose(0, 1)  # a non-contiguous (2, 3) view
    assert not p64.grad.is_contiguous()
    opt = so.SGD([p32, p64], lr=0.5, momentum=0.9)
    opt.step()
    np.testing.assert_allclose(to_np(p32), 1 - 0.5 * g, rtol=1e-7)
    np.testing.assert_allclose(to_np(p64), 1 - 0.5 * g.T, rtol=1e-15)
    assert p64.dtype == sx.float64 and opt.state[p64]["momentum_buffer"].dtype == sx.float64
