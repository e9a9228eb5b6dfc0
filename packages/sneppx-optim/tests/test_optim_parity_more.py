"""Adagrad, Adadelta, RMSprop, Adamax, NAdam, RAdam, Rprop, ASGD, Adafactor and LBFGS against torch.optim
(``pytest -m parity``), plus state_dict keys and argument checks."""

import numpy as np
import pytest
import sneppx_core as sx

import sneppx_optim as so
from optim_helpers import grad_sequence, make_params, set_grads, to_np

SHAPES = [(6, 4), (5,), (), (3, 4, 5)]  # Adafactor factors the last two dims of the 3-d one
CASES = [
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.5, maximize=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, weight_decay=0.05)),
    ("RMSprop", dict(lr=1e-2)),
    ("RMSprop", dict(lr=1e-2, momentum=0.9, centered=True, weight_decay=0.01)),
    ("RMSprop", dict(lr=1e-3, alpha=0.9, momentum=0.5, maximize=True)),
    ("Adamax", dict()),
    ("Adamax", dict(lr=1e-2, betas=(0.8, 0.99), weight_decay=0.1, maximize=True)),
    ("NAdam", dict()),
    ("NAdam", dict(lr=1e-2, weight_decay=0.1, momentum_decay=1e-2)),
    ("NAdam", dict(lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict()),
    ("RAdam", dict(lr=1e-2, weight_decay=0.1)),
    ("RAdam", dict(lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("Rprop", dict()),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2), maximize=True)),
    ("ASGD", dict()),
    ("ASGD", dict(lr=0.05, lambd=1e-2, alpha=0.6, t0=5, weight_decay=0.1)),
    ("ASGD", dict(lr=0.02, t0=0, maximize=True)),
    ("Adafactor", dict()),
    ("Adafactor", dict(lr=0.5, weight_decay=0.1, d=2.0)),
    ("Adafactor", dict(beta2_decay=-0.5, eps=(1e-3, 1e-2), maximize=True)),
]


@pytest.mark.parity
@pytest.mark.parametrize("name, kwargs", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_twenty_steps_match_torch(name, kwargs):
    torch = pytest.importorskip("torch")
    params, start = make_params(SHAPES, seed=3)
    tparams = [torch.tensor(a, dtype=torch.float32, requires_grad=True) for a in start]
    ours = getattr(so, name)(params, **kwargs)
    theirs = getattr(torch.optim, name)(tparams, **kwargs)
    for grads in grad_sequence(SHAPES, 20, seed=4):
        set_grads(params, grads)
        for t, g in zip(tparams, grads):
            t.grad = torch.tensor(g, dtype=torch.float32)
        ours.step()
        theirs.step()
        for p, t in zip(params, tparams):
            np.testing.assert_allclose(to_np(p), t.detach().double().numpy(), rtol=1e-5, atol=1e-6)
    ours_sd, theirs_sd = ours.state_dict(), theirs.state_dict()
    assert [sorted(s) for s in ours_sd["state"].values()] == [sorted(s) for s in theirs_sd["state"].values()]
    for a, b in zip(ours_sd["state"].values(), theirs_sd["state"].values()):
        for k in a:
            assert tuple(np.shape(to_np(a[k]))) == tuple(b[k].shape), k
            np.testing.assert_allclose(np.asarray(to_np(a[k])), b[k].double().numpy(), rtol=1e-5, atol=1e-6)
    assert set(ours_sd["param_groups"][0]) == set(theirs_sd["param_groups"][0])


def _rosenbrock(lib, x):
    return ((1 - x[:-1]) ** 2).sum() + (100 * (x[1:] - x[:-1] ** 2) ** 2).sum()


@pytest.mark.parity
@pytest.mark.parametrize("kwargs", [dict(), dict(line_search_fn="strong_wolfe"),
                                    dict(lr=0.1, history_size=3, max_iter=7)])
def test_lbfgs_matches_torch(kwargs):
    torch = pytest.importorskip("torch")
    start = np.array([-1.2, 1.0, 0.5, -0.3], dtype=np.float64)
    x, tx = sx.tensor(start, requires_grad=True), torch.tensor(start, requires_grad=True)
    ours, theirs = so.LBFGS([x], **kwargs), torch.optim.LBFGS([tx], **kwargs)

    def closure(opt, lib, v):
        def run():
            opt.zero_grad()
            loss = _rosenbrock(lib, v)
            loss.backward()
            return loss
        return run

    for _ in range(4):
        a = ours.step(closure(ours, sx, x))
        b = theirs.step(closure(theirs, torch, tx))
        assert float(a) == pytest.approx(float(b.detach()), rel=1e-6, abs=1e-9)
        np.testing.assert_allclose(x.detach().numpy(), tx.detach().numpy(), rtol=1e-6, atol=1e-9)
    assert ours.state[x]["func_evals"] == theirs.state[tx]["func_evals"]


def test_lbfgs_minimises_a_quadratic_without_torch():
    a = np.array([[3.0, 0.5], [0.5, 1.0]])
    b = np.array([1.0, -2.0])
    x = sx.zeros(2, dtype=sx.float64, requires_grad=True)
    opt = so.LBFGS([x], line_search_fn="strong_wolfe", max_iter=50, tolerance_grad=1e-12, tolerance_change=1e-15)
    A, B = sx.tensor(a), sx.tensor(b)

    def closure():
        opt.zero_grad()
        loss = 0.5 * (x @ A @ x) - (B * x).sum()
        loss.backward()
        return loss

    opt.step(closure)
    np.testing.assert_allclose(x.detach().numpy(), np.linalg.solve(a, b), rtol=1e-6)


def test_adagrad_first_steps_by_hand():
    p = sx.tensor([1.0, -2.0], dtype=sx.float64, requires_grad=True)
    opt = so.Adagrad([p], lr=0.5, eps=0.0)
    p.grad = sx.tensor([0.5, 2.0], dtype=sx.float64)
    opt.step()  # sum = g^2, update = lr * g / |g| = lr * sign(g)
    np.testing.assert_allclose(p.detach().numpy(), [0.5, -2.5])


def test_argument_errors():
    p = [sx.zeros(2, requires_grad=True)]
    with pytest.raises(ValueError, match="RMSprop: lr must be >= 0"):
        so.RMSprop(p, lr=-1)
    with pytest.raises(ValueError, match="Adadelta: rho must be in"):
        so.Adadelta(p, rho=1.5)
    with pytest.raises(ValueError, match="NAdam: betas"):
        so.NAdam(p, betas=(0.9,))
    with pytest.raises(ValueError, match="line_search_fn"):
        so.LBFGS(p, line_search_fn="armijo")
    with pytest.raises(RuntimeError, match="needs a closure"):
        so.LBFGS(p).step(None)
