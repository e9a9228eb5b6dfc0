"""Rprop, ASGD and Adafactor: against float64 NumPy implementations of their rules, state_dict resume,
argument checks, and step-for-step parity with torch.optim (the ``parity`` tests)."""

import numpy as np
import pytest
import sneppx_core as sx

import sneppx_optim as so
from optim_helpers import grad_sequence, make_params, rel_err, set_grads, step_with, stepped, to_np

SHAPES = [(7, 5), (5,), (3, 4, 2), (), (1, 6), (6, 1)]
STEPS = 40


# ---- references: float64 NumPy, one array per parameter -------------------------------------------------------

def rprop(params, grad_seq, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), maximize=False):
    """Rprop without weight backtracking (iRprop-, Igel & Huesken 2000): a sign change zeroes the gradient."""
    etaminus, etaplus = etas
    p = [a.copy() for a in params]
    prev = [np.zeros_like(a) for a in p]
    size = [np.full_like(a, lr) for a in p]
    for grads in grad_seq:
        for i, g in enumerate(grads):
            g = -g if maximize else g
            prod = g * prev[i]
            size[i] = np.clip(size[i] * np.where(prod > 0, etaplus, np.where(prod < 0, etaminus, 1.0)), *step_sizes)
            g = np.where(prod < 0, 0.0, g)
            p[i] = p[i] - np.sign(g) * size[i]
            prev[i] = g
    return p, {"prev": prev, "step_size": size}


def asgd(params, grad_seq, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0.0, maximize=False):
    """Averaged SGD (Polyak & Juditsky 1992) with eta_t = lr / (1 + lambd lr t)^alpha (Bottou 2012)."""
    p = [a.copy() for a in params]
    ax = [np.zeros_like(a) for a in p]
    for t, grads in enumerate(grad_seq, start=1):
        eta = lr / (1 + lambd * lr * (t - 1)) ** alpha
        mu = 1.0 / max(1.0, t - 1 - t0)
        for i, g in enumerate(grads):
            g = (-g if maximize else g) + weight_decay * p[i]
            p[i] = (1 - lambd * eta) * p[i] - eta * g
            ax[i] = p[i].copy() if mu == 1 else ax[i] + mu * (p[i] - ax[i])
    return p, {"ax": ax}


def adafactor(params, grad_seq, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0,
              maximize=False, dtype=np.float32):
    """Adafactor (Shazeer & Stern 2018, Alg. 4 / 5) with relative step, RMS clipping, beta2_t = 1 - t^decay,
    factored over the last two dims with mean (not sum) factors, and decoupled weight decay."""
    eps1 = float(np.finfo(dtype).eps) if eps[0] is None else eps[0]
    eps2 = eps[1]
    p = [a.copy() for a in params]
    row = [np.zeros(a.shape[:-1] + (1,)) if a.ndim >= 2 else None for a in p]
    col = [np.zeros(a.shape[:-2] + (1,) + a.shape[-1:]) if a.ndim >= 2 else None for a in p]
    var = [np.zeros_like(a) for a in p]

    def rms(x):
        return np.sqrt(np.mean(np.square(x)))

    for t, grads in enumerate(grad_seq, start=1):
        beta = t ** beta2_decay
        for i, g in enumerate(grads):
            g = -g if maximize else g
            step = max(eps2, rms(p[i])) * min(lr, 1 / np.sqrt(t))
            p[i] = p[i] * (1 - lr * weight_decay)
            if g.ndim >= 2:
                row[i] = (1 - beta) * row[i] + beta * np.mean(g * g, axis=-1, keepdims=True)
                col[i] = (1 - beta) * col[i] + beta * np.mean(g * g, axis=-2, keepdims=True)
                v = row[i] * col[i] / np.maximum(np.mean(row[i], axis=-2, keepdims=True), eps1)
            else:
                var[i] = (1 - beta) * var[i] + beta * g * g
                v = var[i]
            u = g / np.sqrt(np.maximum(v, eps1 * eps1))
            p[i] = p[i] - step / max(1.0, rms(u) / d) * u
    return p, {"row_var": [r for r in row if r is not None], "col_var": [c for c in col if c is not None],
               "variance": [v for v, a in zip(var, p) if a.ndim < 2]}


CASES = [
    ("rprop", so.Rprop, rprop, dict()),
    ("rprop_tight_sizes", so.Rprop, rprop, dict(lr=0.01, etas=(0.3, 1.5), step_sizes=(2e-3, 0.03))),
    ("rprop_maximize", so.Rprop, rprop, dict(lr=0.05, maximize=True)),
    ("asgd", so.ASGD, asgd, dict()),
    ("asgd_averaging", so.ASGD, asgd, dict(lr=0.05, lambd=1e-2, alpha=0.6, t0=10, weight_decay=0.1)),
    ("asgd_maximize", so.ASGD, asgd, dict(lr=0.02, lambd=0.05, t0=0, maximize=True)),
    ("adafactor", so.Adafactor, adafactor, dict()),
    ("adafactor_big_lr_decay", so.Adafactor, adafactor, dict(lr=0.5, weight_decay=0.1)),
    ("adafactor_options", so.Adafactor, adafactor, dict(beta2_decay=-0.5, eps=(1e-20, 1e-2), d=1.5,
                                                        maximize=True)),
    ("adafactor_clip", so.Adafactor, adafactor, dict(lr=0.2, d=1.0, eps=(1e-3, 1e-3), weight_decay=0.01)),
]


def _run(cls, kwargs, dtype, shapes=SHAPES, steps=STEPS):
    params, start = make_params(shapes, dtype=dtype)
    grads = grad_sequence(shapes, steps, dtype=dtype)
    opt = cls(params, **kwargs)
    for g in grads:
        set_grads(params, g, dtype)
        opt.step()
    return opt, params, start, grads


def _check(cls, reference, kwargs, dtype, tol):
    opt, params, start, grads = _run(cls, kwargs, dtype)
    extra = dict(dtype=dtype) if cls is so.Adafactor else {}
    want, want_state = reference(start, grads, **kwargs, **extra)
    for i, (p, w) in enumerate(zip(params, want)):
        assert rel_err(to_np(p), w) < tol, (i, p.shape)
    for key, arrays in want_state.items():
        got = [to_np(opt.state[p][key]) for p in params if key in opt.state[p]]
        assert len(got) == len(arrays) > 0, key
        for g, w in zip(got, arrays):
            assert rel_err(g, w) < tol, key


@pytest.mark.parametrize("name, cls, reference, kwargs", CASES, ids=[c[0] for c in CASES])
def test_matches_reference_float32(name, cls, reference, kwargs):
    _check(cls, reference, kwargs, np.float32, 2e-5)


@pytest.mark.parametrize("name, cls, reference, kwargs", CASES, ids=[c[0] for c in CASES])
def test_matches_reference_float64(name, cls, reference, kwargs):
    _check(cls, reference, kwargs, np.float64, 1e-12)


def _tiny_grads(shapes, dtype):
    """Gradients that are tiny for a whole (4, 3) parameter, one (3, 4) slice of a 3-D one and two vector
    entries, so that both eps1 floors (on the row-factor mean and on v) act."""
    grads = grad_sequence(shapes, 10, dtype=dtype)
    for g in grads:
        g[0] *= 1e-9
        g[1][0] *= 1e-9
        g[2][:2] *= 1e-10
        for a in g:
            a[...] = a.astype(dtype)  # exactly representable, as set_grads will store them
    return grads


TINY_SHAPES = [(4, 3), (2, 3, 4), (5,)]


# the moves of the tiny-gradient parameters are ~1e-4 of their values: float32 rounds them to ~1e-3
@pytest.mark.parametrize("dtype, tol", [(np.float32, 1e-2), (np.float64, 1e-10)])
@pytest.mark.parametrize("eps", [(None, 1e-3), (1e-6, 1e-3)])
def test_adafactor_eps1_floors(dtype, tol, eps):
    params, start = make_params(TINY_SHAPES, dtype=dtype)
    grads = _tiny_grads(TINY_SHAPES, dtype)
    opt = so.Adafactor(params, eps=eps)  # eps1 = None: the machine epsilon of the dtype
    for g in grads:
        set_grads(params, g, dtype)
        opt.step()
    want, _ = adafactor(start, grads, eps=eps, dtype=dtype)
    for p, a, w in zip(params, start, want):  # the moves, which are small next to the values
        assert rel_err(to_np(p) - a, w - a) < tol, p.shape


def test_rprop_steps_grow_shrink_and_skip():
    p = sx.Tensor([0.0, 0.0, 0.0], requires_grad=True)
    opt = so.Rprop([p], lr=0.1, etas=(0.5, 2.0), step_sizes=(0.04, 0.3))
    for g in ([1.0, 1.0, 0.0], [1.0, -1.0, 0.0], [1.0, 1.0, 0.0], [1.0, 1.0, 0.0]):
        p.grad = sx.Tensor(g)
        opt.step()
    # element 0: +0.1, then 0.2, then 0.3 (clamped), 0.3; element 1: 0.1, sign flip (size 0.05, no move),
    # prev 0 so size stays 0.05, then 0.1; element 2: zero gradient never moves
    np.testing.assert_allclose(p.tolist(), [-0.9, -0.1 - 0.05 - 0.1, 0.0], rtol=1e-6)
    np.testing.assert_allclose(opt.state[p]["step_size"].tolist(), [0.3, 0.1, 0.1], rtol=1e-6)


def test_asgd_average_starts_after_t0():
    p = sx.Tensor([1.0], dtype=sx.float64, requires_grad=True)
    opt = so.ASGD([p], lr=0.1, lambd=0.0, t0=2)
    values = []
    for _ in range(6):
        p.grad = sx.Tensor([1.0], dtype=sx.float64)
        opt.step()
        values.append(p.item())
    # a step uses mu = 1 / max(1, (step - 1) - t0): 1 up to step 4 (ax = p), then 1/2, 1/3: the mean from step 4 on
    assert opt.state[p]["ax"].item() == pytest.approx(np.mean(values[3:]), rel=1e-12)
    assert opt.state[p]["eta"].item() == pytest.approx(0.1) and opt.state[p]["mu"].item() == pytest.approx(1 / 4)


def test_adafactor_state_shapes_and_rms_clipping():
    params = [sx.Tensor(np.ones(s, dtype=np.float32), requires_grad=True) for s in [(3, 4), (2, 3, 4), (4,), ()]]
    opt = so.Adafactor(params, lr=0.1)
    for p in params:
        p.grad = sx.ones_like(p)
    opt.step()
    shapes = [{k: tuple(v.shape) for k, v in opt.state[p].items()} for p in params]
    assert shapes == [{"step": (), "row_var": (3, 1), "col_var": (1, 4)},
                      {"step": (), "row_var": (2, 3, 1), "col_var": (2, 1, 4)},
                      {"step": (), "variance": (4,)}, {"step": (), "variance": ()}]
    # rms(p) = 1, rho = min(0.1, 1) and u = 1 everywhere: every element moves by exactly 0.1
    for p in params:
        np.testing.assert_allclose(to_np(p), 0.9, rtol=1e-6)
    v = sx.Tensor(np.ones(4), dtype=sx.float64, requires_grad=True)
    opt = so.Adafactor([v], lr=0.1)
    for g in (0.1, 10.0):
        v.grad = sx.full_like(v, g)
        opt.step()
    # step 1 moves by 0.1 * rms(p) = 0.1; at step 2 variance = (1 - b) 0.01 + b 100 < 10^2 (b = 2^-0.8),
    # so u = 10 / sqrt(variance) > 1 everywhere, and clipping scales it back to 1: the move is 0.1 * rms(p)
    assert 10 / np.sqrt(opt.state[v]["variance"].tolist()[0]) > 1.3
    np.testing.assert_allclose(to_np(v), 0.81, rtol=1e-12)


def test_params_without_grad_are_skipped():
    shapes = [(4, 3), (3,)]
    for cls in (so.Rprop, so.ASGD, so.Adafactor):
        params, start = make_params(shapes)
        opt = cls(params)
        params[0].grad = sx.ones_like(params[0])
        opt.step()
        opt.step()
        assert params[1] not in opt.state and opt.state[params[0]]["step"].item() == 2
        np.testing.assert_array_equal(to_np(params[1]), start[1])


# ---- state dicts and arguments ---------------------------------------------------------------------------------

RESUME = [(so.Rprop, dict(lr=0.03, etas=(0.4, 1.3))), (so.ASGD, dict(lr=0.05, t0=5, weight_decay=0.01)),
          (so.Adafactor, dict(weight_decay=0.05)), (so.Adafactor, dict(lr=0.3, maximize=True))]


@pytest.mark.parametrize("cls, kwargs", RESUME, ids=[f"{c.__name__}-{i}" for i, (c, _) in enumerate(RESUME)])
def test_state_dict_resume_is_bit_exact(cls, kwargs):
    shapes = [(5, 3), (3,), (2, 3, 4)]
    grads = grad_sequence(shapes, 20)
    full, _ = stepped(cls, kwargs, shapes, grads)
    half, opt = stepped(cls, kwargs, shapes, grads[:10])
    saved = opt.state_dict()
    resumed = [sx.Tensor(to_np(p).astype(np.float32), requires_grad=True) for p in half]
    opt2 = cls(resumed, lr=0.5)
    opt2.load_state_dict(saved)
    step_with(half, opt, grads[10:15])  # the source keeps stepping: the loaded state must be a copy
    assert opt2.param_groups[0] == {**opt.param_groups[0], "params": resumed}
    step_with(resumed, opt2, grads[10:])
    for a, b in zip(resumed, full):
        np.testing.assert_array_equal(to_np(a), to_np(b))


def test_defaults_and_state_names():
    p = sx.Tensor(np.ones((2, 3), dtype=np.float32), requires_grad=True)
    groups = {cls.__name__: {k: v for k, v in cls([p]).param_groups[0].items() if k != "params"}
              for cls in (so.Rprop, so.ASGD, so.Adafactor)}
    assert groups["Rprop"] == dict(lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), foreach=None, maximize=False,
                                   differentiable=False, capturable=False)
    assert groups["ASGD"] == dict(lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0.0, foreach=None,
                                  maximize=False, differentiable=False, capturable=False)
    assert groups["Adafactor"] == dict(lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0,
                                       foreach=None, maximize=False)
    names = {}
    for cls in (so.Rprop, so.ASGD, so.Adafactor):
        opt = cls([p])
        p.grad = sx.ones_like(p)
        opt.step()
        names[cls.__name__] = sorted(opt.state_dict()["state"][0])
    assert names == {"Rprop": ["prev", "step", "step_size"], "ASGD": ["ax", "eta", "mu", "step"],
                     "Adafactor": ["col_var", "row_var", "step"]}


BAD = [
    (so.Rprop, dict(lr=-0.1), r"Rprop: lr must be >= 0"),
    (so.Rprop, dict(etas=(1.0, 1.2)), r"Rprop: etas\[0\] \(etaminus\) must be in \(0, 1\)"),
    (so.Rprop, dict(etas=(0.0, 1.2)), r"Rprop: etas\[0\] \(etaminus\) must be in \(0, 1\)"),
    (so.Rprop, dict(etas=(0.5, 1.0)), r"Rprop: etas\[1\] \(etaplus\) must be > 1"),
    (so.Rprop, dict(etas=0.5), r"Rprop: etas must be a pair"),
    (so.Rprop, dict(step_sizes=(-1e-6, 50)), r"Rprop: step_sizes\[0\] \(min\) must be >= 0"),
    (so.Rprop, dict(step_sizes=(1.0, 0.5)), r"Rprop: step_sizes\[1\] \(max\) must be >= 1"),
    (so.ASGD, dict(lr=-1.0), r"ASGD: lr must be >= 0"),
    (so.ASGD, dict(weight_decay=-0.1), r"ASGD: weight_decay must be >= 0"),
    (so.ASGD, dict(lambd=-1e-4), r"ASGD: lambd must be >= 0"),
    (so.ASGD, dict(alpha=float("nan")), r"ASGD: alpha must be >= 0"),
    (so.ASGD, dict(t0=-1), r"ASGD: t0 must be >= 0"),
    (so.Adafactor, dict(lr=-1e-2), r"Adafactor: lr must be >= 0"),
    (so.Adafactor, dict(beta2_decay=0.5), r"Adafactor: beta2_decay must be in \[-inf, 0\]"),
    (so.Adafactor, dict(eps=(-1.0, 1e-3)), r"Adafactor: eps\[0\] \(eps1\) must be >= 0"),
    (so.Adafactor, dict(eps=(None, -1e-3)), r"Adafactor: eps\[1\] \(eps2\) must be >= 0"),
    (so.Adafactor, dict(eps=1e-3), r"Adafactor: eps must be a pair"),
    (so.Adafactor, dict(d=0.5), r"Adafactor: d must be >= 1"),
    (so.Adafactor, dict(weight_decay=-0.1), r"Adafactor: weight_decay must be >= 0"),
]


@pytest.mark.parametrize("cls, kwargs, match", BAD, ids=[f"{c.__name__}-{next(iter(k))}" for c, k, _ in BAD])
def test_bad_arguments_raise(cls, kwargs, match):
    p = sx.Tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match=match):
        cls([p], **kwargs)
    opt = cls([p])
    with pytest.raises(ValueError, match=match):  # per-group values are checked too
        opt.add_param_group({"params": [sx.Tensor([2.0], requires_grad=True)], **kwargs})


# ---- parity with torch.optim -----------------------------------------------------------------------------------

@pytest.mark.parity
@pytest.mark.parametrize("name", ["Rprop", "ASGD", "Adafactor"])
def test_defaults_match_torch(name):
    torch = pytest.importorskip("torch")
    ours = getattr(so, name)([sx.Tensor([1.0], requires_grad=True)]).param_groups[0]
    theirs = getattr(torch.optim, name)([torch.ones(1, requires_grad=True)]).param_groups[0]
    assert {k: v for k, v in ours.items() if k != "params"} == {k: v for k, v in theirs.items() if k != "params"}


@pytest.mark.parity
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_adafactor_eps1_floors_match_torch(dtype):
    torch = pytest.importorskip("torch")
    params, start = make_params(TINY_SHAPES, dtype=dtype)
    tparams = [torch.tensor(a.astype(dtype), requires_grad=True) for a in start]
    ours, theirs = so.Adafactor(params), torch.optim.Adafactor(tparams)
    for grads in _tiny_grads(TINY_SHAPES, dtype):
        set_grads(params, grads, dtype)
        for t, g in zip(tparams, grads):
            t.grad = torch.tensor(g.astype(dtype))
        ours.step()
        theirs.step()
    for p, t, a in zip(params, tparams, start):
        assert rel_err(to_np(p) - a, t.detach().double().numpy() - a) < (1e-2 if dtype == np.float32 else 1e-10)
