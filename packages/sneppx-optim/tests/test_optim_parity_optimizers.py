"""50 steps of SGD, Adam and AdamW against torch.optim (``pytest -m parity``)."""

import numpy as np
import pytest

import sneppx_optim as so
from optim_helpers import grad_sequence, make_params, rel_err, set_grads, to_np

pytestmark = pytest.mark.parity

SHAPES = [(16, 8), (8,), (3, 5, 4), ()]
CASES = [
    ("SGD", dict(lr=0.05)),
    ("SGD", dict(lr=0.05, momentum=0.9, weight_decay=1e-3)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, maximize=True)),
    ("SGD", dict(lr=0.02, momentum=0.95, nesterov=True, weight_decay=1e-2)),
    ("Adam", dict(lr=1e-2)),
    ("Adam", dict(lr=1e-2, betas=(0.8, 0.95), weight_decay=0.1, amsgrad=True)),
    ("Adam", dict(lr=3e-3, eps=1e-6, maximize=True)),
    ("AdamW", dict(lr=1e-2)),
    ("AdamW", dict(lr=1e-2, weight_decay=0.1, amsgrad=True)),
    ("AdamW", dict(lr=2e-4, betas=(0.9, 0.95), weight_decay=0.01)),
]


@pytest.mark.parametrize("name, kwargs", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_fifty_steps_match_torch(name, kwargs):
    torch = pytest.importorskip("torch")
    params, start = make_params(SHAPES, seed=3)
    tparams = [torch.tensor(a, dtype=torch.float32, requires_grad=True) for a in start]
    ours = getattr(so, name)(params, **kwargs)
    theirs = getattr(torch.optim, name)(tparams, **kwargs)
    for grads in grad_sequence(SHAPES, 50, seed=4):
        set_grads(params, grads)
        for t, g in zip(tparams, grads):
            t.grad = torch.tensor(g, dtype=torch.float32)
        ours.step()
        theirs.step()
    for p, t in zip(params, tparams):
        want = t.detach().double().numpy()
        assert rel_err(to_np(p), want) < 1e-6
        np.testing.assert_allclose(to_np(p), want, rtol=1e-5, atol=1e-6)


def test_lr_changed_between_steps_matches_torch():
    torch = pytest.importorskip("torch")
    params, start = make_params(SHAPES, seed=5)
    tparams = [torch.tensor(a, dtype=torch.float32, requires_grad=True) for a in start]
    ours = so.AdamW(params, lr=1e-2, weight_decay=0.05)
    theirs = torch.optim.AdamW(tparams, lr=1e-2, weight_decay=0.05)
    s1 = so.CosineAnnealingLR(ours, T_max=50, eta_min=1e-4)
    s2 = torch.optim.lr_scheduler.CosineAnnealingLR(theirs, T_max=50, eta_min=1e-4)
    for grads in grad_sequence(SHAPES, 50, seed=6):
        set_grads(params, grads)
        for t, g in zip(tparams, grads):
            t.grad = torch.tensor(g, dtype=torch.float32)
        ours.step()
        theirs.step()
        s1.step()
        s2.step()
    for p, t in zip(params, tparams):
        assert rel_err(to_np(p), t.detach().double().numpy()) < 1e-6
