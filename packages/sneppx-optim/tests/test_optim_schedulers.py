"""Learning-rate schedulers against their closed-form formulas."""

import bisect
import json
import math

import numpy as np
import pytest
import sneppx_core as sx

import sneppx_optim as so


def _opt(lrs=(0.1,), momentum=0.9):
    groups = [{"params": [sx.zeros(2, requires_grad=True)], "lr": lr} for lr in lrs]
    return so.SGD(groups, lr=lrs[0], momentum=momentum)


def _run(sched, steps):
    """LRs of every group for t = 0 .. steps (stepping the optimizer first, as in a real loop)."""
    out = [list(sched.get_last_lr())]
    for _ in range(steps):
        sched.optimizer.step()
        sched.step()
        out.append(list(sched.get_last_lr()))
    return np.array(out)


def _guide_formula(t, lo, hi, warmup, total):
    if t < warmup:
        return hi * (t + 1) / warmup
    if t >= total:
        return lo
    return lo + (hi - lo) * 0.5 * (1 + math.cos(math.pi * (t - warmup) / (total - warmup)))


@pytest.mark.parametrize("warmup", [0, 10])
def test_cosine_guide_form(warmup):
    opt = _opt()
    sched = so.CosineAnnealingLR(opt, min_lr=1e-5, max_lr=2e-4, total_steps=100, warmup_steps=warmup)
    got = _run(sched, 120)[:, 0]
    want = [_guide_formula(t, 1e-5, 2e-4, warmup, 100) for t in range(121)]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert got[100] == pytest.approx(1e-5) and np.all(got[100:] == got[100])  # flat after total_steps
    if warmup:
        assert np.all(np.diff(got[:warmup]) > 0) and got[warmup - 1] == pytest.approx(2e-4)
    assert opt.param_groups[0]["lr"] == got[-1]


def test_cosine_guide_form_defaults_and_groups():
    opt = _opt(lrs=(0.1, 0.01))
    sched = so.CosineAnnealingLR(opt, total_steps=10, min_lr=[0.0, 0.001])
    got = _run(sched, 10)
    for t in range(11):
        assert got[t, 0] == pytest.approx(_guide_formula(t, 0.0, 0.1, 0, 10), rel=1e-12, abs=1e-15)
        assert got[t, 1] == pytest.approx(_guide_formula(t, 0.001, 0.01, 0, 10), rel=1e-12)


@pytest.mark.parametrize("kwargs, match", [
    (dict(total_steps=10, warmup_steps=10), "warmup_steps < total_steps"),
    (dict(total_steps=10, min_lr=1.0, max_lr=0.5), "min_lr <= max_lr"),
    (dict(T_max=10, total_steps=10), "not both"),
    (dict(T_max=10, min_lr=0.1), "need total_steps"),
    (dict(), "T_max"),
    (dict(T_max=0), "T_max must be > 0"),
])
def test_cosine_bad_arguments(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        so.CosineAnnealingLR(_opt(), **kwargs)


def test_cosine_torch_form_matches_closed_form():
    opt = _opt(lrs=(0.1, 0.05))
    got = _run(so.CosineAnnealingLR(opt, T_max=20, eta_min=0.001), 20)
    for t in range(21):
        for g, base in enumerate((0.1, 0.05)):
            want = 0.001 + (base - 0.001) * (1 + math.cos(math.pi * t / 20)) / 2
            assert got[t, g] == pytest.approx(want, rel=1e-9)


def test_step_multistep_exponential_linear_lambda():
    cases = [
        (lambda o: so.StepLR(o, step_size=3, gamma=0.5), lambda t: 0.1 * 0.5 ** (t // 3)),
        (lambda o: so.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.1),
         lambda t: 0.1 * 0.1 ** bisect.bisect_right([2, 5, 5, 9], t)),
        (lambda o: so.ExponentialLR(o, gamma=0.9), lambda t: 0.1 * 0.9 ** t),
        (lambda o: so.LinearLR(o, start_factor=0.25, end_factor=0.75, total_iters=6),
         lambda t: 0.1 * (0.25 + 0.5 * min(t, 6) / 6)),
        (lambda o: so.LambdaLR(o, lambda t: 1.0 / (t + 1)), lambda t: 0.1 / (t + 1)),
        (lambda o: so.MultiplicativeLR(o, lambda t: 0.8), lambda t: 0.1 * 0.8 ** t),
        (lambda o: so.ConstantLR(o, factor=0.3, total_iters=4), lambda t: 0.1 * (0.3 if t < 4 else 1.0)),
        (lambda o: so.ConstantLR(o, factor=0.0, total_iters=4), lambda t: 0.1 * (0.0 if t < 4 else 1.0)),
        (lambda o: so.PolynomialLR(o, total_iters=9, power=1.5), lambda t: 0.1 * (1 - min(t, 9) / 9) ** 1.5),
    ]
    for make, formula in cases:
        got = _run(make(_opt()), 15)[:, 0]
        np.testing.assert_allclose(got, [formula(t) for t in range(16)], rtol=1e-12)


def test_sequential_warmup_then_cosine_formula():
    """A linear warmup for 4 steps, then cosine annealing over 10 restarted at its step 0 at the milestone."""
    opt = _opt(lrs=(0.1, 0.02))
    sched = so.SequentialLR(opt, [so.LinearLR(opt, start_factor=0.25, total_iters=4),
                                  so.CosineAnnealingLR(opt, T_max=10, eta_min=0.001)], milestones=[4])
    got = _run(sched, 14)

    def formula(t, base):
        if t < 4:
            return base * (0.25 + 0.75 * t / 4)
        return 0.001 + (base - 0.001) * (1 + math.cos(math.pi * (t - 4) / 10)) / 2
    want = [[formula(t, b) for b in (0.1, 0.02)] for t in range(15)]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert [g["lr"] for g in opt.param_groups] == list(got[-1])


@pytest.mark.parametrize("kwargs,match", [
    (dict(schedulers=[], milestones=[]), "at least one scheduler"),
    (dict(milestones=[3, 5]), "one milestone fewer"),
])
def test_sequential_bad_arguments(kwargs, match):
    opt = _opt()
    args = dict(schedulers=[so.StepLR(opt, 2), so.ExponentialLR(opt, 0.9)], milestones=[3]) | kwargs
    with pytest.raises(ValueError, match=match):
        so.SequentialLR(opt, **args)


def test_sequential_rejects_foreign_and_plateau_schedulers():
    opt, other = _opt(), _opt()
    with pytest.raises(ValueError, match="another optimizer"):
        so.SequentialLR(opt, [so.StepLR(opt, 2), so.StepLR(other, 2)], [3])
    with pytest.raises(TypeError, match="ReduceLROnPlateau"):
        so.SequentialLR(opt, [so.StepLR(opt, 2), so.ReduceLROnPlateau(opt)], [3])


def test_cyclic_triangle_formula():
    """CyclicLR's triangle (up 4 steps, down 2), its height halved every cycle in triangular2, the momentum
    mirrored; building it sets the learning rate to base_lr."""
    opt = _opt(lrs=(0.5,))
    sched = so.CyclicLR(opt, base_lr=0.1, max_lr=0.4, step_size_up=4, step_size_down=2, mode="triangular2",
                        base_momentum=0.8, max_momentum=0.9)
    got, moms = [], []
    for t in range(14):
        got.append(opt.param_groups[0]["lr"])
        moms.append(opt.param_groups[0]["momentum"])
        opt.step()
        sched.step()
    frac = [min(t % 6 / 4, (6 - t % 6) / 2) for t in range(14)]
    height = [0.5 ** (t // 6) for t in range(14)]
    np.testing.assert_allclose(got, [0.1 + 0.3 * f * h for f, h in zip(frac, height)], rtol=1e-12)
    np.testing.assert_allclose(moms, [0.9 - 0.1 * f * h for f, h in zip(frac, height)], rtol=1e-12)


def test_new_schedulers_bad_arguments():
    with pytest.raises(ValueError, match="ConstantLR: factor"):
        so.ConstantLR(_opt(), factor=1.5)
    with pytest.raises(ValueError, match="PolynomialLR: total_iters"):
        so.PolynomialLR(_opt(), total_iters=0)
    with pytest.raises(TypeError, match="MultiplicativeLR: lr_lambda"):
        so.MultiplicativeLR(_opt(), 0.9)
    with pytest.raises(ValueError, match="CyclicLR: mode"):
        so.CyclicLR(_opt(), 0.1, 1.0, mode="sawtooth")
    with pytest.raises(ValueError, match="CyclicLR: cycle_momentum"):
        so.CyclicLR(so.Adagrad([sx.zeros(2, requires_grad=True)]), 0.1, 1.0)


def test_onecycle_matches_phase_formula():
    opt = _opt()
    sched = so.OneCycleLR(opt, max_lr=1.0, total_steps=20, pct_start=0.25, div_factor=10.0, final_div_factor=100.0)
    lrs, moms = [opt.param_groups[0]["lr"]], [opt.param_groups[0]["momentum"]]
    for _ in range(19):
        opt.step()
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
        moms.append(opt.param_groups[0]["momentum"])
    cos = lambda a, b, pct: b + (a - b) * (1 + math.cos(math.pi * pct)) / 2  # noqa: E731
    end1 = 0.25 * 20 - 1
    for t in range(20):
        if t <= end1:
            pct, lr_ab, m_ab = t / end1, (0.1, 1.0), (0.95, 0.85)
        else:
            pct, lr_ab, m_ab = (t - end1) / (19 - end1), (1.0, 0.001), (0.85, 0.95)
        assert lrs[t] == pytest.approx(cos(*lr_ab, pct), rel=1e-12)
        assert moms[t] == pytest.approx(cos(*m_ab, pct), rel=1e-12)
    with pytest.raises(ValueError, match="total_steps is 20"):
        opt.step()
        sched.step()
        sched.step()


def test_onecycle_cycles_adam_beta1_and_needs_momentum():
    p = sx.zeros(2, requires_grad=True)
    opt = so.Adam([p], betas=(0.9, 0.98))
    so.OneCycleLR(opt, max_lr=0.01, total_steps=10)
    assert opt.param_groups[0]["betas"] == (0.95, 0.98)
    with pytest.raises(ValueError, match="momentum or betas"):
        so.OneCycleLR(so.Optimizer([p], {"lr": 0.1}), max_lr=0.1, total_steps=10)


def test_reduce_on_plateau_hand_worked():
    opt = _opt(lrs=(1.0,))
    sched = so.ReduceLROnPlateau(opt, factor=0.5, patience=2)
    got = []
    for metric in [5, 4, 4, 4, 4, 3, 3, 3, 3]:
        sched.step(metric)
        got.append(sched.get_last_lr()[0])
    assert got == [1, 1, 1, 1, 0.5, 0.5, 0.5, 0.5, 0.25]


def test_reduce_on_plateau_cooldown_min_lr_and_max_mode():
    opt = _opt(lrs=(1.0,))
    sched = so.ReduceLROnPlateau(opt, mode="max", factor=0.1, patience=0, cooldown=1, min_lr=0.05)
    got = []
    for metric in [1, 0, 0, 0, 0]:  # bad, (cooldown), bad, (cooldown), ...
        sched.step(metric)
        got.append(opt.param_groups[0]["lr"])
    assert got == pytest.approx([1.0, 0.1, 0.1, 0.05, 0.05])
    with pytest.raises(ValueError, match="factor"):
        so.ReduceLROnPlateau(opt, factor=1.0)


def _resume_matches(make, steps=12, cut=5):
    full = _run(make(_opt(lrs=(0.1, 0.02))), steps)
    opt = _opt(lrs=(0.1, 0.02))
    sched = make(opt)
    first = _run(sched, cut)
    saved_opt = json.loads(json.dumps({k: v for k, v in opt.state_dict().items()}, default=str))
    saved = json.loads(json.dumps(sched.state_dict()))
    opt2 = _opt(lrs=(0.1, 0.02))
    sched2 = make(opt2)
    opt2.load_state_dict(saved_opt)
    sched2.load_state_dict(saved)
    rest = _run(sched2, steps - cut)
    np.testing.assert_array_equal(np.concatenate([first, rest[1:]]), full)


@pytest.mark.parametrize("make", [
    lambda o: so.StepLR(o, 2, 0.5),
    lambda o: so.MultiStepLR(o, [3, 7]),
    lambda o: so.ExponentialLR(o, 0.8),
    lambda o: so.LinearLR(o, total_iters=8),
    lambda o: so.CosineAnnealingLR(o, T_max=6),
    lambda o: so.CosineAnnealingLR(o, min_lr=0.0, max_lr=0.1, total_steps=9, warmup_steps=3),
    lambda o: so.OneCycleLR(o, max_lr=[0.5, 0.1], total_steps=13),
    lambda o: so.LambdaLR(o, lambda t: 0.9 ** t),
    lambda o: so.MultiplicativeLR(o, lambda t: 0.9),
    lambda o: so.ConstantLR(o, 0.5, total_iters=7),
    lambda o: so.PolynomialLR(o, total_iters=8, power=2.0),
    lambda o: so.SequentialLR(o, [so.ConstantLR(o, 0.5, 2), so.ExponentialLR(o, 0.7), so.StepLR(o, 2, 0.5)], [3, 7]),
    lambda o: so.CyclicLR(o, 0.01, [0.1, 0.2], step_size_up=3, mode="exp_range", gamma=0.9),
])
def test_state_dict_round_trip_through_json(make):
    _resume_matches(make)
