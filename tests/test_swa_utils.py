"""SneppX_ALG.optim.swa_utils (AveragedModel, SWALR, update_bn, the averaging functions) against NumPy and the
closed-form annealing, and against torch.optim.swa_utils (the ``parity`` tests). It lives in the meta-package,
which has sneppx-nn and sneppx-optim both."""

import copy
import json
import math

import numpy as np
import pytest
import sneppx_core as sx

import sneppx_nn as nn
import sneppx_optim as so

from SneppX_ALG.optim.swa_utils import (
    SWALR, AveragedModel, get_ema_avg_fn, get_ema_multi_avg_fn, get_swa_avg_fn, get_swa_multi_avg_fn, update_bn,
)


def _np(t):
    return np.array(t.detach().numpy(), dtype=np.float64)


def _model(dtype=sx.float32):
    sx.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4, momentum=0.3), nn.ReLU(), nn.Linear(4, 2)).to(dtype)


def _states(model, k, seed=0):
    """``k`` random float32-representable values for every parameter and buffer of ``model`` (by name)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(k):
        state = {}
        for name, t in [*model.named_parameters(), *model.named_buffers()]:
            if sx.is_floating_point(t):
                state[name] = rng.standard_normal(tuple(t.shape)).astype(np.float32).astype(np.float64)
            else:
                state[name] = np.array(rng.integers(0, 50), dtype=np.int64)
        out.append(state)
    return out


def _load(model, state):
    with sx.no_grad():
        for name, t in [*model.named_parameters(), *model.named_buffers()]:
            t.copy_(sx.tensor(state[name].astype(np.float32) if sx.is_floating_point(t) else state[name]))


def _fold(swa, model, states):
    for state in states:
        _load(model, state)
        swa.update_parameters(model)


# ---- import paths -------------------------------------------------------------------------------------------------

def test_module_paths():
    import SneppX_ALG as torch
    import SneppX_ALG.optim.swa_utils as su
    import SneppX_ALG.swa_utils

    assert su is SneppX_ALG.swa_utils and su.AveragedModel is AveragedModel
    assert torch.optim.swa_utils is su  # as an attribute too: torch.optim.swa_utils.AveragedModel(model)
    assert not {"AveragedModel", "SWALR", "update_bn", "swa_utils"} & (set(so.__all__) | set(torch.__all__))
    assert all(getattr(su, name).__doc__ for name in su.__all__)


# ---- AveragedModel ------------------------------------------------------------------------------------------------

def test_deepcopy_and_forward():
    model = _model()
    swa = AveragedModel(model, device="cpu")
    assert swa.n_averaged.item() == 0 and swa.n_averaged.dtype == sx.int64
    assert all(a is not b for a, b in zip(swa.parameters(), model.parameters()))
    x = sx.tensor(np.random.default_rng(1).standard_normal((5, 3)).astype(np.float32))
    model.eval()
    swa.eval()
    np.testing.assert_array_equal(_np(swa(x)), _np(model(x)))
    with sx.no_grad():
        next(model.parameters()).add_(1.0)  # the copy is independent
    assert not np.allclose(_np(next(swa.parameters())), _np(next(model.parameters())))
    assert swa.state_dict()["n_averaged"].item() == 0
    assert {k for k in swa.state_dict() if k != "n_averaged"} == {"module." + k for k in model.state_dict()}


def test_swa_is_the_mean_and_buffers_follow_the_model():
    model = _model()
    swa = AveragedModel(model)
    states = _states(model, 5)
    _fold(swa, model, states)
    assert swa.n_averaged.item() == 5
    mine = dict(swa.module.named_parameters())
    for name, _ in model.named_parameters():
        np.testing.assert_allclose(_np(mine[name]), np.mean([s[name] for s in states], axis=0), rtol=1e-6, atol=1e-6)
    for name, b in swa.module.named_buffers():  # use_buffers=False: copied from the last model
        np.testing.assert_array_equal(_np(b), states[-1][name].astype(np.float32))


@pytest.mark.parametrize("make", [lambda: dict(avg_fn=get_ema_avg_fn(0.8)),
                                  lambda: dict(multi_avg_fn=get_ema_multi_avg_fn(0.8))], ids=["avg_fn", "multi"])
def test_ema(make):
    model = _model()
    swa = AveragedModel(model, **make())
    states = _states(model, 6, seed=2)
    _fold(swa, model, states)
    mine = dict(swa.module.named_parameters())
    for name, _ in model.named_parameters():
        want = states[0][name]
        for s in states[1:]:
            want = 0.8 * want + 0.2 * s[name]
        np.testing.assert_allclose(_np(mine[name]), want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kwargs", [{}, dict(multi_avg_fn=get_swa_multi_avg_fn()), dict(avg_fn=get_swa_avg_fn())],
                         ids=["default", "multi", "avg_fn"])
def test_use_buffers_averages_the_buffers(kwargs):
    model = _model()
    swa = AveragedModel(model, use_buffers=True, **kwargs)
    states = _states(model, 4, seed=3)
    _fold(swa, model, states)
    for name, t in [*swa.module.named_parameters(), *swa.module.named_buffers()]:
        if sx.is_floating_point(t):
            np.testing.assert_allclose(_np(t), np.mean([s[name] for s in states], axis=0), rtol=1e-6, atol=1e-6)
        else:  # num_batches_tracked: the running mean, truncated at each step
            want = states[0][name]
            for n, s in enumerate(states[1:], start=1):
                want = np.int64(want + (s[name] - want) / (n + 1))
            assert t.item() == want


def test_multi_avg_fn_groups_by_dtype_and_gets_n_averaged():
    model = _model()
    calls = []

    def record(averaged, current, n):
        calls.append((len(averaged), {str(a.dtype) for a in averaged}, n.item()))

    swa = AveragedModel(model, multi_avg_fn=record, use_buffers=True)
    _fold(swa, model, _states(model, 3))
    n_float = len(list(model.parameters())) + 2  # + running_mean, running_var
    assert calls == [(n_float, {str(sx.float32)}, 1), (1, {str(sx.int64)}, 1),
                     (n_float, {str(sx.float32)}, 2), (1, {str(sx.int64)}, 2)]


def test_avg_fn_float64_and_state_dict_round_trip():
    model = _model(sx.float64)
    swa = AveragedModel(model, avg_fn=lambda avg, cur, n: avg + (cur - avg) / (n + 1))
    states = _states(model, 3, seed=5)
    _fold(swa, model, states)
    mine = dict(swa.module.named_parameters())
    for name, _ in model.named_parameters():
        np.testing.assert_allclose(_np(mine[name]), np.mean([s[name] for s in states], axis=0), rtol=1e-14)
    other = AveragedModel(_model(sx.float64))
    other.load_state_dict(swa.state_dict())
    assert other.n_averaged.item() == 3
    for a, b in zip(other.parameters(), swa.parameters()):
        np.testing.assert_array_equal(_np(a), _np(b))
    clone = copy.deepcopy(swa)
    assert clone.n_averaged.item() == 3 and clone.avg_fn is swa.avg_fn


def test_argument_checks():
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
        AveragedModel(_model(), avg_fn=get_swa_avg_fn(), multi_avg_fn=get_swa_multi_avg_fn())
    for fn in (get_ema_avg_fn, get_ema_multi_avg_fn):
        with pytest.raises(ValueError, match=r"Invalid decay value 1.5"):
            fn(1.5)
        with pytest.raises(ValueError, match=r"Invalid decay value -0.1"):
            fn(-0.1)


# ---- update_bn ----------------------------------------------------------------------------------------------------

def _bn_batches(rng, n, shape):
    return [rng.standard_normal(shape).astype(np.float32) * 2 + 1 for _ in range(n)]


@pytest.mark.parametrize("wrap", ["tuple", "tensor"])
def test_update_bn_is_the_mean_of_the_batch_statistics(wrap):
    rng = np.random.default_rng(7)
    model = _model()
    model.eval()
    lin = model[0]
    batches = _bn_batches(rng, 4, (6, 3)) + _bn_batches(rng, 1, (3, 3))  # a short last batch
    loader = [(sx.tensor(b), sx.zeros(len(b))) if wrap == "tuple" else sx.tensor(b) for b in batches]
    feats = [(b.astype(np.float64) @ _np(lin.weight).T + _np(lin.bias)) for b in batches]
    update_bn(loader, model)
    bn = model[1]
    np.testing.assert_allclose(_np(bn.running_mean), np.mean([f.mean(0) for f in feats], axis=0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(bn.running_var), np.mean([f.var(0, ddof=1) for f in feats], axis=0),
                               rtol=1e-5, atol=1e-6)
    assert bn.num_batches_tracked.item() == len(batches)
    assert bn.momentum == 0.3 and not model.training and not bn.training


def test_update_bn_2d_through_averaged_model_and_without_batchnorm():
    rng = np.random.default_rng(8)
    sx.manual_seed(1)
    net = nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.BatchNorm2d(3))
    swa = AveragedModel(net)
    swa.update_parameters(net)
    batches = _bn_batches(rng, 3, (4, 2, 5, 5))
    update_bn([[sx.tensor(b)] for b in batches], swa)
    bn = swa.module[1]
    feats = [_np(net[0](sx.tensor(b))) for b in batches]
    np.testing.assert_allclose(_np(bn.running_mean), np.mean([f.mean((0, 2, 3)) for f in feats], axis=0),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(bn.running_var), np.mean([f.var((0, 2, 3), ddof=1) for f in feats], axis=0),
                               rtol=1e-5, atol=1e-6)
    assert swa.training and bn.momentum == 0.1

    def unread():
        raise AssertionError("read")
        yield

    update_bn(unread(), nn.Linear(2, 2))  # no BatchNorm: nothing to do, the loader is not read


# ---- SWALR --------------------------------------------------------------------------------------------------------

def _anneal(strategy, t, n):
    x = 1.0 if n == 0 else min(1.0, t / n)
    return (1 - math.cos(math.pi * x)) / 2 if strategy == "cos" else x


def _opt(lrs=(0.1, 0.02)):
    return so.SGD([{"params": [sx.zeros(2, requires_grad=True)], "lr": lr} for lr in lrs], lr=lrs[0], momentum=0.9)


def _lrs(opt, sched, steps):
    out = [list(sched.get_last_lr())]
    for _ in range(steps):
        opt.step()
        sched.step()
        out.append(list(sched.get_last_lr()))
    return np.array(out)


@pytest.mark.parametrize("strategy", ["cos", "linear"])
@pytest.mark.parametrize("epochs", [0, 1, 7])
def test_swalr_closed_form(strategy, epochs):
    opt = _opt()
    sched = SWALR(opt, swa_lr=[0.05, 0.001], anneal_epochs=epochs, anneal_strategy=strategy)
    got = _lrs(opt, sched, 12)
    want = [[swa * _anneal(strategy, t, epochs) + lr0 * (1 - _anneal(strategy, t, epochs))
             for swa, lr0 in [(0.05, 0.1), (0.001, 0.02)]] for t in range(13)]
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-16)
    assert [g["swa_lr"] for g in opt.param_groups] == [0.05, 0.001]
    np.testing.assert_allclose(got[-1], [0.05, 0.001], rtol=1e-15)


def test_swalr_starts_from_the_current_lr():
    opt = _opt((0.1,))
    first = so.ExponentialLR(opt, gamma=0.5)
    for _ in range(3):
        opt.step()
        first.step()
    sched = SWALR(opt, swa_lr=0.01, anneal_epochs=4, anneal_strategy="linear")
    got = _lrs(opt, sched, 5)[:, 0]
    want = [0.01 * min(1, t / 4) + 0.0125 * (1 - min(1, t / 4)) for t in range(6)]
    np.testing.assert_allclose(got, want, rtol=1e-13)


def test_swalr_state_dict_round_trip():
    opt = _opt()
    sched = SWALR(opt, swa_lr=0.03, anneal_epochs=6)
    full = _lrs(opt, sched, 10)
    opt2 = _opt()
    sched2 = SWALR(opt2, swa_lr=0.03, anneal_epochs=6)
    _lrs(opt2, sched2, 3)
    state = json.loads(json.dumps(sched2.state_dict()))
    assert "anneal_func" not in state and state["_anneal_strategy"] == "cos" and state["anneal_epochs"] == 6
    opt3 = _opt()
    opt3.load_state_dict(opt2.state_dict())
    sched3 = SWALR(opt3, swa_lr=0.03, anneal_epochs=1, anneal_strategy="linear")
    sched3.load_state_dict(state)
    assert sched3.anneal_epochs == 6 and sched3.anneal_func(0.5) == pytest.approx(0.5)
    np.testing.assert_allclose(_lrs(opt3, sched3, 7)[1:], full[4:], rtol=1e-13)


def test_swalr_argument_checks():
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear', instead got cosine"):
        SWALR(_opt(), 0.01, anneal_strategy="cosine")
    for bad in (-1, 2.0, True):
        with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0"):
            SWALR(_opt(), 0.01, anneal_epochs=bad)
    with pytest.raises(ValueError, match="swa_lr"):
        SWALR(_opt(), [0.01])
    with pytest.raises(TypeError, match="not an Optimizer"):
        SWALR(object(), 0.01)


# ---- against torch.optim.swa_utils --------------------------------------------------------------------------------

def _torch_pair(torch, dtype):
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(3, 6), torch.nn.BatchNorm1d(6, momentum=0.2), torch.nn.ReLU(),
                             torch.nn.Linear(6, 1)).to(dtype)
    sm = nn.Sequential(nn.Linear(3, 6), nn.BatchNorm1d(6, momentum=0.2), nn.ReLU(), nn.Linear(6, 1))
    sm = sm.to(sx.float64 if dtype == torch.float64 else sx.float32)
    sm.load_state_dict({k: sx.tensor(v.detach().numpy().copy()) for k, v in tm.state_dict().items()})
    return tm, sm


def _close(a, b, dtype_is_64):
    tol = dict(rtol=1e-12, atol=1e-13) if dtype_is_64 else dict(rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), **tol)


@pytest.mark.parity
@pytest.mark.parametrize("precision", ["float32", "float64"])
@pytest.mark.parametrize("strategy", ["cos", "linear"])
def test_swa_training_matches_torch(precision, strategy):
    """SGD with CosineAnnealingLR, then SWALR with SWA and EMA averages, then update_bn, in both libraries."""
    torch = pytest.importorskip("torch")
    from torch.optim import swa_utils as tsu

    tdtype = getattr(torch, precision)
    is64 = precision == "float64"
    tm, sm = _torch_pair(torch, tdtype)
    rng = np.random.default_rng(11)
    data = [(rng.standard_normal((8, 3)), rng.standard_normal((8, 1))) for _ in range(4)]
    npdtype = np.float64 if is64 else np.float32
    t_data = [(torch.tensor(x, dtype=tdtype), torch.tensor(y, dtype=tdtype)) for x, y in data]
    s_data = [(sx.tensor(x.astype(npdtype)), sx.tensor(y.astype(npdtype))) for x, y in data]

    t_opt = torch.optim.SGD(tm.parameters(), lr=0.1, momentum=0.9)
    s_opt = so.SGD(sm.parameters(), lr=0.1, momentum=0.9)
    t_sched, s_sched = torch.optim.lr_scheduler.CosineAnnealingLR(t_opt, T_max=20), so.CosineAnnealingLR(s_opt, 20)
    t_swa, s_swa = tsu.AveragedModel(tm), AveragedModel(sm)
    t_ema = tsu.AveragedModel(tm, multi_avg_fn=tsu.get_ema_multi_avg_fn(0.7), use_buffers=True)
    s_ema = AveragedModel(sm, multi_avg_fn=get_ema_multi_avg_fn(0.7), use_buffers=True)
    t_swalr, s_swalr = None, None
    t_lrs, s_lrs = [], []
    for epoch in range(7):
        for (tx, ty), (sx_, sy) in zip(t_data, s_data):
            t_opt.zero_grad()
            ((tm(tx) - ty) ** 2).mean().backward()
            t_opt.step()
            s_opt.zero_grad()
            ((sm(sx_) - sy) ** 2).mean().backward()
            s_opt.step()
        if epoch < 2:
            t_sched.step()
            s_sched.step()
        else:
            if t_swalr is None:
                t_swalr = tsu.SWALR(t_opt, swa_lr=0.02, anneal_epochs=3, anneal_strategy=strategy)
                s_swalr = SWALR(s_opt, swa_lr=0.02, anneal_epochs=3, anneal_strategy=strategy)
            for t_avg, s_avg in ((t_swa, s_swa), (t_ema, s_ema)):
                t_avg.update_parameters(tm)
                s_avg.update_parameters(sm)
            t_swalr.step()
            s_swalr.step()
        t_lrs.append(t_opt.param_groups[0]["lr"])
        s_lrs.append(s_opt.param_groups[0]["lr"])
    np.testing.assert_allclose(s_lrs, t_lrs, rtol=1e-13)
    assert s_swa.n_averaged.item() == t_swa.n_averaged.item() == 5
    for t_avg, s_avg in ((t_swa, s_swa), (t_ema, s_ema)):
        t_state, s_state = t_avg.state_dict(), s_avg.state_dict()
        assert set(s_state) == set(t_state)
        for k, v in t_state.items():
            _close(_np(s_state[k]), v.detach().double().numpy(), is64)
    tsu.update_bn([x for x, _ in t_data], t_swa)
    update_bn([x for x, _ in s_data], s_swa)
    t_bn, s_bn = t_swa.module[1], s_swa.module[1]
    for name in ("running_mean", "running_var"):
        _close(_np(getattr(s_bn, name)), getattr(t_bn, name).double().numpy(), is64)
    assert s_bn.num_batches_tracked.item() == t_bn.num_batches_tracked.item() == len(data)
    t_swa.eval()
    s_swa.eval()
    with torch.no_grad():
        _close(_np(s_swa(s_data[0][0])), t_swa(t_data[0][0]).double().numpy(), is64)


@pytest.mark.parity
@pytest.mark.parametrize("fns", ["swa_avg", "ema_avg", "swa_multi", "ema_multi"])
def test_averaging_functions_match_torch_with_buffers(fns):
    """Each averaging function, float64, buffers averaged too (num_batches_tracked is an int64 buffer)."""
    torch = pytest.importorskip("torch")
    from torch.optim import swa_utils as tsu

    name = {"swa_avg": "get_swa_avg_fn", "ema_avg": "get_ema_avg_fn", "swa_multi": "get_swa_multi_avg_fn",
            "ema_multi": "get_ema_multi_avg_fn"}[fns]
    kwarg = "multi_avg_fn" if "multi" in fns else "avg_fn"
    args = (0.6,) if "ema" in fns else ()
    buffers = fns != "swa_multi"  # torch's get_swa_multi_avg_fn raises on integer tensors (num_batches_tracked)
    tm, sm = _torch_pair(torch, torch.float64)
    t_avg = tsu.AveragedModel(tm, use_buffers=buffers, **{kwarg: getattr(tsu, name)(*args)})
    s_avg = AveragedModel(sm, use_buffers=buffers, **{kwarg: globals()[name](*args)})
    for state in _states(sm, 4, seed=9):
        _load(sm, state)
        tm.load_state_dict({k: torch.tensor(v) for k, v in state.items()})
        t_avg.update_parameters(tm)
        s_avg.update_parameters(sm)
    for k, v in t_avg.state_dict().items():
        np.testing.assert_allclose(_np(s_avg.state_dict()[k]), v.double().numpy(), rtol=1e-12, atol=1e-13)


@pytest.mark.parity
@pytest.mark.parametrize("strategy", ["cos", "linear"])
@pytest.mark.parametrize("epochs", [0, 1, 5])
def test_swalr_matches_torch(strategy, epochs):
    """Two groups with their own swa_lr, started after a StepLR, and inside a SequentialLR."""
    torch = pytest.importorskip("torch")
    from torch.optim import swa_utils as tsu

    def run(lib, opt, swalr, sequential):
        if sequential:
            sched = lib.SequentialLR(opt, [lib.StepLR(opt, step_size=2, gamma=0.5),
                                           swalr(opt, swa_lr=[0.05, 0.001], anneal_epochs=epochs,
                                                 anneal_strategy=strategy)], milestones=[5])
        else:
            first = lib.StepLR(opt, step_size=2, gamma=0.5)
            for _ in range(5):
                opt.step()
                first.step()
            sched = swalr(opt, swa_lr=[0.05, 0.001], anneal_epochs=epochs, anneal_strategy=strategy)
        return _lrs(opt, sched, 14)

    for sequential in (False, True):
        t_opt = torch.optim.SGD([{"params": [torch.zeros(2, requires_grad=True)], "lr": lr} for lr in (0.1, 0.02)])
        want = run(torch.optim.lr_scheduler, t_opt, tsu.SWALR, sequential)
        got = run(so, _opt(), SWALR, sequential)
        np.testing.assert_allclose(got, want, rtol=1e-15, atol=0)
