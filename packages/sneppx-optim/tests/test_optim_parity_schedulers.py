"""Schedulers against torch.optim.lr_scheduler, step for step (``pytest -m parity``)."""

import warnings

import numpy as np
import pytest
import sneppx_core as sx

import sneppx_optim as so

pytestmark = pytest.mark.parity

LRS = (0.1, 0.03)
CASES = {
    "step": ("StepLR", dict(step_size=4, gamma=0.3)),
    "multistep": ("MultiStepLR", dict(milestones=[3, 8, 8, 20], gamma=0.5)),
    "exponential": ("ExponentialLR", dict(gamma=0.93)),
    "linear": ("LinearLR", dict(start_factor=0.2, end_factor=0.9, total_iters=11)),
    "lambda": ("LambdaLR", dict(lr_lambda=lambda t: 1.0 / (1 + 0.3 * t))),
    "multiplicative": ("MultiplicativeLR", dict(lr_lambda=lambda t: 0.97 if t % 3 else 0.8)),
    "constant": ("ConstantLR", dict(factor=0.25, total_iters=7)),
    "polynomial": ("PolynomialLR", dict(total_iters=25, power=1.7)),
    "cyclic": ("CyclicLR", dict(base_lr=0.01, max_lr=[0.1, 0.05], step_size_up=5, step_size_down=3)),
    "cyclic2": ("CyclicLR", dict(base_lr=[0.01, 0.02], max_lr=0.1, step_size_up=4, mode="triangular2")),
    "cyclic_exp": ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=6, mode="exp_range", gamma=0.97,
                                    base_momentum=0.85, max_momentum=0.95)),
    "cyclic_fn": ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=3, scale_fn=lambda x: 0.9 ** x,
                                   scale_mode="iterations", cycle_momentum=False)),
    "cosine": ("CosineAnnealingLR", dict(T_max=9, eta_min=0.002)),
    "onecycle": ("OneCycleLR", dict(max_lr=[0.5, 0.2], total_steps=40, pct_start=0.3)),
    "onecycle3": ("OneCycleLR", dict(max_lr=0.4, total_steps=40, three_phase=True, anneal_strategy="linear")),
}


def _pair(torch, optimizer):
    tp = [torch.zeros(2, requires_grad=True) for _ in LRS]
    sp = [sx.zeros(2, requires_grad=True) for _ in LRS]
    if optimizer == "sgd":
        t_opt = torch.optim.SGD([{"params": [p], "lr": lr} for p, lr in zip(tp, LRS)], lr=0.1, momentum=0.9)
        s_opt = so.SGD([{"params": [p], "lr": lr} for p, lr in zip(sp, LRS)], lr=0.1, momentum=0.9)
    else:
        t_opt = torch.optim.Adam([{"params": [p], "lr": lr} for p, lr in zip(tp, LRS)], betas=(0.9, 0.99))
        s_opt = so.Adam([{"params": [p], "lr": lr} for p, lr in zip(sp, LRS)], betas=(0.9, 0.99))
    return t_opt, s_opt


def _trace(opt, sched, steps, metrics=None):
    rows = []
    for i in range(steps):
        opt.step()
        if metrics is None:
            sched.step()
        else:
            sched.step(metrics[i])
        groups = opt.param_groups
        rows.append([g["lr"] for g in groups] + [g.get("momentum", g.get("betas", (0,))[0]) for g in groups]
                    + list(sched.get_last_lr()))
    return np.array(rows, dtype=np.float64)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_scheduler_matches_torch(case, optimizer):
    torch = pytest.importorskip("torch")
    name, kwargs = CASES[case]
    t_opt, s_opt = _pair(torch, optimizer)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_sched = getattr(torch.optim.lr_scheduler, name)(t_opt, **kwargs)
        want = _trace(t_opt, t_sched, 39)
    s_sched = getattr(so, name)(s_opt, **kwargs)
    got = _trace(s_opt, s_sched, 39)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


SEQUENCES = {  # schedulers (name, kwargs) and milestones
    "warmup_cosine": ([("LinearLR", dict(start_factor=0.1, total_iters=5)), ("CosineAnnealingLR", dict(T_max=20))],
                      [5]),
    "three": ([("ConstantLR", dict(factor=0.5, total_iters=3)), ("ExponentialLR", dict(gamma=0.9)),
               ("StepLR", dict(step_size=4, gamma=0.5))], [6, 15]),
    "lambda_poly": ([("LambdaLR", dict(lr_lambda=lambda t: 1.0 / (1 + t))),
                     ("PolynomialLR", dict(total_iters=10, power=2.0))], [7]),
    "multistep_linear": ([("MultiStepLR", dict(milestones=[2, 4], gamma=0.5)),
                          ("LinearLR", dict(start_factor=0.5, end_factor=1.0, total_iters=8)),
                          ("MultiplicativeLR", dict(lr_lambda=lambda t: 0.9))], [9, 9]),
}


def _sequence(lib, opt, case):
    specs, milestones = SEQUENCES[case]
    sched = lib.optim.lr_scheduler if hasattr(lib, "optim") else lib.lr_scheduler
    return sched.SequentialLR(opt, [getattr(sched, n)(opt, **kw) for n, kw in specs], milestones)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
@pytest.mark.parametrize("case", sorted(SEQUENCES))
def test_sequential_matches_torch(case, optimizer):
    """SequentialLR (each scheduler restarted at its milestone, two at one step in the last case) through
    the lr_scheduler module's names, as torch code reaches them."""
    torch = pytest.importorskip("torch")
    t_opt, s_opt = _pair(torch, optimizer)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = _trace(t_opt, _sequence(torch, t_opt, case), 39)
    got = _trace(s_opt, _sequence(so, s_opt, case), 39)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


def test_reduce_on_plateau_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    metrics = list(np.cumsum(rng.standard_normal(60) * 0.1) + 5)
    kwargs = dict(factor=0.5, patience=3, threshold=0.01, cooldown=2, min_lr=[0.001, 0.0])
    for mode, thr_mode in [("min", "rel"), ("max", "abs")]:
        t_opt, s_opt = _pair(torch, "sgd")
        want = _trace(t_opt, torch.optim.lr_scheduler.ReduceLROnPlateau(t_opt, mode=mode, threshold_mode=thr_mode,
                                                                         **kwargs), 60, metrics)
        got = _trace(s_opt, so.ReduceLROnPlateau(s_opt, mode=mode, threshold_mode=thr_mode, **kwargs), 60, metrics)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
        assert got[-1, 0] < LRS[0]  # it did reduce
