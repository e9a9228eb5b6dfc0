"""special.airy_ai, the legacy autograd names (set_multithreading_enabled, enforce_grad_layout_policy, variable,
NestedIOFunction), empty_permuted, from_file, the ipu/xla autocast functions and the removed Tensor methods."""

from __future__ import annotations

import math
import re
import threading
import warnings

import numpy as np
import pytest
import sneppx_core as sx
from sneppx_core.autograd import _legacy

# ---------------------------------------------------------------- airy_ai
AI0 = 3.0 ** (-2.0 / 3.0) / math.gamma(2.0 / 3.0)
AI_ZEROS = [-2.338107410459767, -4.087949444130971, -5.520559828095551, -6.786708090071759]  # DLMF 9.9(i)


def ai(x):
    return sx.special.airy_ai(sx.tensor(np.asarray(x, dtype=np.float64))).numpy()


def envelope_error(got, want, x):
    """|got - want| relative to |want| on the right, to the envelope 1 / (sqrt(pi) |x|^(1/4)) on the left."""
    scale = np.where(x < -1.0, 1.0 / (math.sqrt(math.pi) * np.maximum(np.abs(x), 1.0) ** 0.25), np.abs(want))
    return np.abs(got - want) / scale


def test_airy_ai_against_mpmath():
    mpmath = pytest.importorskip("mpmath")
    rng = np.random.default_rng(1)
    x = np.concatenate([np.linspace(-12.0, 12.0, 241), rng.uniform(-150.0, 103.0, 200), [9.99, 10.0, 10.01, -10.01],
                        -(10.0 ** rng.uniform(1.0, 9.0, 30))])
    with mpmath.workdps(40):
        want = np.array([float(mpmath.airyai(v)) for v in x])
    assert envelope_error(ai(x), want, x).max() < 2e-15


def test_airy_ai_far_left_phase_is_exact():
    mpmath = pytest.importorskip("mpmath")
    x = np.array([-1e5, -4.5e9, -2.0 ** 32 * 1.5, -3e12, -1.234e40, -1e100])
    with mpmath.workdps(200):  # the phase (2/3) |x|^(3/2) of x = -1e100 has 150 digits before the point
        want = np.array([float(mpmath.airyai(mpmath.mpf(float(v)))) for v in x])
    assert envelope_error(ai(x), want, x).max() < 2e-15


def test_airy_ai_identities():
    assert ai([0.0])[0] == pytest.approx(AI0, rel=2e-16)
    # zeros: |Ai| at the tabulated zeros is below the rounding of x times |Ai'| (about 0.7)
    assert np.abs(ai(AI_ZEROS)).max() < 1e-15
    # Ai'' = x Ai, by central differences across the region boundaries
    h = 1e-3
    x = np.array([-10.2, -10.0, -9.8, -3.3, 0.7, 9.8, 10.0, 10.2, 20.0])
    second = (ai(x + h) - 2.0 * ai(x) + ai(x - h)) / h ** 2
    assert np.all(np.abs(second - x * ai(x)) <= 2e-6 * np.abs(x * ai(x)) + 1e-9)
    # int_0^inf Ai = 1/3 (Simpson's rule; Ai(30) is 1e-48)
    grid = np.linspace(0.0, 30.0, 30001)
    y = ai(grid)
    simpson = (y[0] + y[-1] + 4.0 * y[1:-1:2].sum() + 2.0 * y[2:-1:2].sum()) * (grid[1] - grid[0]) / 3.0
    assert simpson == pytest.approx(1.0 / 3.0, rel=1e-12)


def test_airy_ai_dtypes_edges_and_out():
    f = sx.special.airy_ai
    assert f(sx.tensor([1, 2])).dtype == sx.float32
    assert f(sx.tensor([True])).dtype == sx.float32
    assert f(sx.tensor([1.0])).dtype == sx.float32
    with pytest.raises(NotImplementedError, match="airy_ai"):
        f(sx.tensor([1.0], dtype=sx.float16))
    with pytest.raises(TypeError, match="airy_ai"):
        f(1.0)
    edges = f(sx.tensor([math.inf, -math.inf, math.nan, 200.0], dtype=sx.float64)).numpy()
    assert edges[0] == 0.0 and np.isnan(edges[1]) and np.isnan(edges[2]) and edges[3] == 0.0
    x = sx.tensor([0.5, -3.0], dtype=sx.float64, requires_grad=True)
    assert not f(x).requires_grad  # no gradient is recorded, as in PyTorch
    out = sx.empty(2, dtype=sx.float64)
    assert f(x, out=out) is out
    np.testing.assert_array_equal(out.numpy(), f(x).numpy())
    with pytest.raises(RuntimeError, match="can't be cast"):
        f(x, out=sx.empty(2, dtype=sx.int64))
    with pytest.raises(ValueError, match="shape"):
        f(x, out=sx.empty(3, dtype=sx.float64))


@pytest.mark.parity
def test_airy_ai_parity(torch):
    x = np.linspace(-2.0, 25.0, 2701)
    got = ai(x)
    want = torch.special.airy_ai(torch.tensor(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # PyTorch's rational approximations left of -2.09 are good to about 1e-5 of the envelope only
    left = np.linspace(-30.0, -2.1, 500)
    err = envelope_error(ai(left), torch.special.airy_ai(torch.tensor(left)).numpy(), left)
    assert err.max() < 1e-4
    t = torch.tensor([0.5, 1.5], requires_grad=True)
    assert torch.special.airy_ai(t).requires_grad is sx.special.airy_ai(sx.tensor([0.5, 1.5],
                                                                                 requires_grad=True)).requires_grad
    for dt in ("int64", "float32"):
        assert str(torch.special.airy_ai(torch.tensor([1, 2]).to(getattr(torch, dt))).dtype).split(".")[1] == \
            str(sx.special.airy_ai(sx.tensor([1, 2]).to(getattr(sx, dt))).dtype).split(".")[1]


# ---------------------------------------------------------------- autograd switches, variable, NestedIOFunction
@pytest.mark.parametrize("switch, flag", [(sx.autograd.set_multithreading_enabled, _legacy.is_multithreading_enabled),
                                          (sx.autograd.enforce_grad_layout_policy,
                                           _legacy.is_grad_layout_enforcement_enabled)])
def test_autograd_flag_switches(switch, flag):
    assert flag()
    with switch(False):
        assert not flag()
        with switch(True):
            assert flag()
        assert not flag()
    assert flag()
    s = switch(False)  # set at once, as set_grad_enabled
    assert not flag() and s.mode is False and s.prev is True
    with s:
        pass
    assert flag()

    @switch(False)
    def inside():
        return flag()

    assert flag() and inside() is False and flag()
    seen = []
    with switch(False):
        worker = threading.Thread(target=lambda: seen.append(flag()))
        worker.start()
        worker.join()
    assert seen == [True]  # thread-local
    with pytest.raises(TypeError, match="bool"):
        switch(1)


def test_autograd_flags_do_not_change_gradients():
    p = sx.zeros(2, 3, 4).permute(2, 0, 1).requires_grad_()
    with sx.autograd.set_multithreading_enabled(False), sx.autograd.enforce_grad_layout_policy(False):
        (p * 2.0).sum().backward()
    np.testing.assert_array_equal(p.grad.numpy(), np.full((4, 2, 3), 2.0))


def test_autograd_variable():
    with pytest.raises(RuntimeError, match="deprecated"):
        sx.autograd.variable(sx.ones(2))
    assert sx.autograd.variable.Variable is sx.autograd.Variable
    from sneppx_core.autograd.variable import Variable

    assert Variable is sx.autograd.Variable and callable(sx.autograd.variable)
    assert isinstance(sx.ones(1), Variable)


class Nested(sx.autograd.NestedIOFunction):
    """out = (a * b, [a + c]) with inputs (a, (b, c))."""

    def forward_extended(self, a, bc):
        b, c = bc
        self.save_for_backward(a, (b,))
        return a * b, [a + c]

    def backward_extended(self, g_ab, g_ac):
        a, (b,) = self.saved_tensors
        return g_ab * b + g_ac[0], (g_ab * a, g_ac[0])


def test_nested_io_function():
    a, b, c = (sx.tensor(np.random.default_rng(i).normal(size=3), dtype=sx.float64, requires_grad=True)
               for i in range(3))
    ab, (ac,) = Nested()(a, (b, c))
    assert "NestedBackward" in str(ab.grad_fn) and ac.requires_grad
    np.testing.assert_allclose(ab.detach().numpy(), a.detach().numpy() * b.detach().numpy())
    assert sx.autograd.gradcheck(lambda a, b, c: sum(t.sum() * k for k, t in enumerate(
        [Nested()(a, (b, c))[0], Nested()(a, (b, c))[1][0]], start=1)), (a, b, c))
    with pytest.raises(ValueError, match="Auto nesting"):
        Nested()(a, 3)


# ---------------------------------------------------------------- empty_permuted, from_file
def test_empty_permuted():
    t = sx.empty_permuted((2, 3, 5, 7), (0, 2, 3, 1), dtype=sx.float64)
    assert tuple(t.shape) == (2, 3, 5, 7) and tuple(t.stride()) == (105, 1, 21, 3) and t.dtype == sx.float64
    assert tuple(sx.empty_permuted([2, 3], [1, 0]).stride()) == (1, 2)
    g = sx.empty_permuted((2, 3), (1, 0), requires_grad=True)
    assert g.requires_grad and g.is_leaf
    for size, layout, match in [((2, 3), (0,), "does not match"), ((2, 3), (0, 0), "Duplicate"),
                                ((2, 3), (0, 2), "out of range"), ((2, -3), (0, 1), "negative")]:
        with pytest.raises(RuntimeError, match=match):
            sx.empty_permuted(size, layout)


def test_from_file(tmp_path):
    path = str(tmp_path / "data.bin")
    np.arange(10, dtype=np.float64).tofile(path)
    np.testing.assert_array_equal(sx.from_file(path, size=3, dtype=sx.float64).numpy(), [0.0, 1.0, 2.0])
    ints = sx.from_file(path, False, 4, dtype=sx.int32).numpy()
    np.testing.assert_array_equal(ints, np.arange(10, dtype=np.float64).view(np.int32)[:4])
    assert sx.from_file(path).numel() == 0 and sx.from_file(path).dtype == sx.float32
    t = sx.from_file(path, size=2, dtype=sx.float64)
    t += 1.0  # a private copy: the file is unchanged
    np.testing.assert_array_equal(np.fromfile(path, dtype=np.float64), np.arange(10))
    with pytest.raises(RuntimeError, match="smaller than the required"):
        sx.from_file(path, size=11, dtype=sx.float64)
    with pytest.raises(RuntimeError, match="unable to open"):
        sx.from_file(str(tmp_path / "missing.bin"), size=2)
    with pytest.raises(NotImplementedError, match="shared=True"):
        sx.from_file(path, shared=True, size=2)
    with pytest.raises(TypeError, match="filename"):
        sx.from_file(tmp_path / "data.bin", size=1)


# ---------------------------------------------------------------- autocast ipu / xla
@pytest.mark.parametrize("device, default", [("ipu", sx.float16), ("xla", sx.bfloat16)])
def test_autocast_ipu_xla(device, default):
    get, set_ = getattr(sx, f"get_autocast_{device}_dtype"), getattr(sx, f"set_autocast_{device}_dtype")
    is_on, set_on = getattr(sx, f"is_autocast_{device}_enabled"), getattr(sx, f"set_autocast_{device}_enabled")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert get() == default and sx.get_autocast_dtype(device) == default
        other = sx.float16 if default == sx.bfloat16 else sx.bfloat16
        set_(other)
        try:
            assert get() == other and sx.get_autocast_dtype(device) == other
        finally:
            sx.set_autocast_dtype(device, default)
        assert is_on() is False
        set_on(False)
        with pytest.raises(NotImplementedError):
            set_on(True)
    with pytest.warns(DeprecationWarning, match=f"get_autocast_dtype\\('{device}'\\)"):
        get()


# ---------------------------------------------------------------- removed methods, module_load
@pytest.mark.parametrize("name", ["solve", "lstsq", "eig", "symeig"])
def test_removed_linalg(name):
    a = sx.eye(2)
    with pytest.raises(RuntimeError, match="deprecated since version 1.9 and is now removed"):
        getattr(a, name)(a) if name in ("solve", "lstsq") else getattr(a, name)()
    with pytest.raises(RuntimeError, match="now removed"):
        getattr(sx, name)(a, a) if name in ("solve", "lstsq") else getattr(sx, name)(a)


def test_reinforce_and_module_load():
    with pytest.raises(RuntimeError, match=r"reinforce\(\) was removed"):
        sx.ones(2).reinforce(1.0)
    param, value = sx.zeros(3), sx.tensor([1.0, 2.0, 3.0], requires_grad=True)
    kept = param.module_load(value)
    assert kept is not param and not kept.requires_grad
    np.testing.assert_array_equal(param.detach().numpy(), [1.0, 2.0, 3.0])  # copied into self (recorded)
    kept[0] = 9.0
    assert param.detach().numpy()[0] == 9.0  # the result shares self's data
    fresh = sx.zeros(3).module_load(value, assign=True)
    assert not fresh.requires_grad and fresh is not value
    np.testing.assert_array_equal(fresh.numpy(), value.detach().numpy())
    leaf = sx.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        leaf.module_load(value)
    with sx.no_grad():
        leaf.module_load(value)


# ---------------------------------------------------------------- parity
@pytest.mark.parity
def test_legacy_names_parity(torch, tmp_path):
    t, a = torch.eye(2), sx.eye(2)
    for name, args in [("solve", (1,)), ("lstsq", (1,)), ("eig", ()), ("symeig", ()), ("reinforce", (1.0,))]:
        with pytest.raises(RuntimeError) as want:
            getattr(t, name)(*(t if v == 1 else v for v in args))
        with pytest.raises(RuntimeError) as got:
            getattr(a, name)(*(a if v == 1 else v for v in args))
        assert str(got.value) == re.sub(r"\btorch\.", "sneppx_core.", str(want.value))
    for size, layout in [((2, 3, 5, 7), (0, 2, 3, 1)), ((4, 1, 3), (2, 1, 0)), ((), ()), ((0, 2), (1, 0))]:
        assert tuple(sx.empty_permuted(size, layout).stride()) == torch.empty_permuted(size, layout).stride()
    path = str(tmp_path / "raw.bin")
    np.random.default_rng(0).normal(size=8).tofile(path)
    for dtype, n in [("float64", 8), ("float32", 16), ("int32", 5), ("uint8", 64)]:
        np.testing.assert_array_equal(sx.from_file(path, size=n, dtype=getattr(sx, dtype)).numpy(),
                                      torch.from_file(path, size=n, dtype=getattr(torch, dtype)).numpy())
    tp, sp = torch.zeros(3), sx.zeros(3)
    np.testing.assert_array_equal(tp.module_load(torch.ones(3)).numpy(), sp.module_load(sx.ones(3)).numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for dev in ("ipu", "xla"):
            assert str(getattr(torch, f"get_autocast_{dev}_dtype")()).split(".")[1] == \
                str(getattr(sx, f"get_autocast_{dev}_dtype")()).split(".")[1]
    with pytest.raises(RuntimeError, match="deprecated"):
        torch.autograd.variable(1)
    assert torch.autograd.variable.Variable is torch.autograd.Variable
