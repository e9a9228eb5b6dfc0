"""autograd.functional (vjp, jvp, jacobian, hessian, vhp, hvp) and gradcheck/gradgradcheck.

References are closed-form derivatives in NumPy; the parity tests run the same functions through
``torch.autograd.functional`` and ``torch.autograd.gradcheck``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import sneppx_core as sx
from sneppx_core.autograd import functional as AF
from sneppx_core.autograd import GradcheckError, gradcheck, gradgradcheck
from sneppx_core.autograd import grad

RNG = np.random.default_rng(7)
X23 = RNG.standard_normal((2, 3))
Y3 = RNG.standard_normal(3)
A23, B32 = RNG.standard_normal((2, 3)), RNG.standard_normal((3, 2))
V23, V22 = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 2))


def t64(a, requires_grad=False):
    return sx.tensor(np.asarray(a, dtype=np.float64), dtype=sx.float64, requires_grad=requires_grad)


def npy(t):
    return np.array(t.detach().numpy())


def check(result, expected):
    """Same nesting (tuple against tuple, tensor against array) and values."""
    if isinstance(expected, tuple):
        assert isinstance(result, tuple) and len(result) == len(expected), (type(result), result)
        for r, e in zip(result, expected):
            check(r, e)
    else:
        assert isinstance(result, sx.Tensor), type(result)
        e = np.asarray(expected, dtype=np.float64)
        assert tuple(result.shape) == e.shape
        np.testing.assert_allclose(npy(result), e, rtol=1e-10, atol=1e-12)


def diag_jac(d):
    """The jacobian of an elementwise map with derivative ``d``: shape ``d.shape + d.shape``."""
    return np.diag(d.reshape(-1)).reshape(d.shape + d.shape)


def matmul_jacs(a, b):
    """d(AB)/dA and d(AB)/dB: ``[i, k, j, l] = delta_ij B_lk`` and ``[i, k, l, q] = A_il delta_kq``."""
    m, n = a.shape
    p = b.shape[1]
    return np.einsum("ij,lk->ikjl", np.eye(m), b), np.einsum("il,kq->iklq", a, np.eye(p))


# ---------------------------------------------------------------- closed-form values and structures
def test_jacobian_single_tensor_exp():
    check(AF.jacobian(lambda x: x.exp(), t64(X23)), diag_jac(np.exp(X23)))


def test_jacobian_matmul_tuple_inputs_and_outputs():
    ja, jb = matmul_jacs(A23, B32)
    check(AF.jacobian(lambda a, b: a @ b, (t64(A23), t64(B32))), (ja, jb))
    res = AF.jacobian(lambda a, b: (a @ b, (a**2).sum()), (t64(A23), t64(B32)))
    check(res, ((ja, jb), (2 * A23, np.zeros((3, 2)))))
    check(AF.jacobian(lambda x: (x.exp(), x * 3), t64(X23)), (diag_jac(np.exp(X23)), diag_jac(np.full((2, 3), 3.0))))
    check(AF.jacobian(lambda x: x.exp(), (t64(X23),)), (diag_jac(np.exp(X23)),))


def test_jacobian_strategies_and_vectorize_agree():
    args = (t64(A23), t64(B32))
    f = lambda a, b: ((a @ b).exp(), (a**3).sum() * b)  # noqa: E731
    ref = AF.jacobian(f, args)
    ja, jb = matmul_jacs(A23, B32)
    e = np.exp(A23 @ B32)
    check(ref[0], (e[:, :, None, None] * ja, e[:, :, None, None] * jb))
    for kw in ({"vectorize": True}, {"vectorize": True, "strategy": "forward-mode"}):
        check(AF.jacobian(f, args, **kw), tuple(tuple(npy(t) for t in row) for row in ref))


def test_hessian_cube_sum_and_quadratic_form():
    check(AF.hessian(lambda x: (x**3).sum(), t64(X23)), diag_jac(6 * X23))
    m = RNG.standard_normal((3, 3))
    check(AF.hessian(lambda x: x @ (t64(m) @ x), t64(Y3)), m + m.T)
    fwd = AF.hessian(lambda x: (x**3).sum(), t64(X23), vectorize=True, outer_jacobian_strategy="forward-mode")
    check(fwd, diag_jac(6 * X23))


def test_hessian_tuple_inputs_blocks():
    # f(x, y) = sum(x^2 y): H_xx = diag(2y), H_xy = diag(2x), H_yy = 0
    h = AF.hessian(lambda x, y: (x**2 * y).sum(), (t64(Y3), t64(Y3 + 1)))
    check(h, ((np.diag(2 * (Y3 + 1)), np.diag(2 * Y3)), (np.diag(2 * Y3), np.zeros((3, 3)))))


def test_vjp_and_jvp_closed_form():
    out, (ga, gb) = AF.vjp(lambda a, b: a @ b, (t64(A23), t64(B32)), t64(V22))
    check((out, ga, gb), (A23 @ B32, V22 @ B32.T, A23.T @ V22))
    out, j = AF.jvp(lambda x: x.exp(), t64(X23), t64(V23))
    check((out, j), (np.exp(X23), np.exp(X23) * V23))
    out, (j1, j2) = AF.jvp(lambda a, b: (a @ b, (a * a).sum()), (t64(A23), t64(B32)), (t64(V23), t64(B32)))
    check((j1, j2), (V23 @ B32 + A23 @ B32, 2 * (A23 * V23).sum()))
    check(AF.vjp(lambda x: (x**3).sum(), t64(X23))[1], 3 * X23**2)
    check(AF.jvp(lambda x: x**3, t64([2.0]))[1], [12.0])


def test_vhp_hvp_closed_form():
    out, r = AF.vhp(lambda x: (x**3).sum(), t64(X23), t64(V23))
    check((out, r), ((X23**3).sum(), 6 * X23 * V23))
    check(AF.hvp(lambda x: (x**3).sum(), t64(X23), t64(V23))[1], 6 * X23 * V23)
    m = RNG.standard_normal((3, 3))
    check(AF.vhp(lambda x: x @ (t64(m) @ x), t64(Y3), t64(Y3 * 2))[1], (Y3 * 2) @ (m + m.T))
    check(AF.hvp(lambda x: x @ (t64(m) @ x), t64(Y3), t64(Y3 * 2))[1], (m + m.T) @ (Y3 * 2))
    args, v = (t64(Y3), t64(Y3 + 1)), (t64(np.ones(3)), t64(np.ones(3)))
    for fn in (AF.vhp, AF.hvp):
        check(fn(lambda x, y: (x**2).sum() + y.sum(), args, v)[1], (2 * np.ones(3), np.zeros(3)))
    check(AF.hvp(lambda x: (x**3).sum(), t64([2.0]))[1], [12.0])


def test_independent_inputs_and_outputs_give_zeros():
    x, y = t64(X23), t64(Y3)
    check(AF.vjp(lambda a, b: a.exp(), (x, y), t64(V23))[1], (np.exp(X23) * V23, np.zeros(3)))
    check(AF.vjp(lambda a: sx.ones(3, dtype=sx.float64), x, t64(np.ones(3))), (np.ones(3), np.zeros((2, 3))))
    check(AF.jvp(lambda a, b: (a.sum(), b.sum() * 0 + 1), (x, y), (x, y))[1], (X23.sum(), 0.0))
    check(AF.jacobian(lambda a, b: b * 2, (x, y)), (np.zeros((3, 2, 3)), np.diag([2.0] * 3)))
    check(AF.hessian(lambda a: a.sum() * 2, x), np.zeros((2, 3, 2, 3)))


def test_inputs_are_copied_and_results_detached():
    x = t64(X23, requires_grad=True)
    out, g = AF.vjp(lambda a: (a**2).sum(), x)
    assert x.grad is None and not out.requires_grad and not g.requires_grad
    y = t64(X23)
    AF.jacobian(lambda a: a * 2, y)
    assert not y.requires_grad
    for res in (AF.jvp(lambda a: a.exp(), x, t64(V23))[1], AF.hessian(lambda a: (a**3).sum(), x)):
        assert not res.requires_grad


def test_create_graph_gives_differentiable_results():
    x = t64(X23, requires_grad=True)
    j = AF.jacobian(lambda a: a**3, x, create_graph=True)
    assert j.requires_grad
    (g,) = grad(j.sum(), x)  # sum of diag(3 x^2) -> 6 x
    np.testing.assert_allclose(npy(g), 6 * X23)
    _, h = AF.hvp(lambda a: (a**3).sum(), x, t64(V23), create_graph=True)
    (g,) = grad(h.sum(), x)
    np.testing.assert_allclose(npy(g), 6 * V23)
    _, jv = AF.jvp(lambda a: a**3, x, t64(V23), create_graph=True)
    (g,) = grad(jv.sum(), x)
    np.testing.assert_allclose(npy(g), 6 * X23 * V23)


# ---------------------------------------------------------------- errors
def test_v_required_and_validated():
    x = t64(X23)
    with pytest.raises(RuntimeError, match=r"\[vjp\] The vector v can only be None"):
        AF.vjp(lambda a: a * 2, x)
    with pytest.raises(RuntimeError, match=r"\[jvp\] The vector v can only be None"):
        AF.jvp(lambda a: a * 2, x)
    for fn in (AF.vhp, AF.hvp):
        with pytest.raises(RuntimeError, match="The vector v can only be None"):
            fn(lambda a: a.sum(), x)
    with pytest.raises(RuntimeError, match=r"v has invalid size: should be \(2, 3\) but got \(3,\)"):
        AF.vjp(lambda a: a * 2, x, t64(Y3))
    with pytest.raises(RuntimeError, match="Entry 1 in v has invalid size"):
        AF.jvp(lambda a, b: a.sum() * b, (x, t64(Y3)), (x, x))
    with pytest.raises(RuntimeError, match="v is a tuple of invalid length: should be 1 but got 2"):
        AF.vjp(lambda a: (a * 2,), x, (x, x))
    with pytest.raises(RuntimeError, match="should contain a single Tensor"):
        AF.vjp(lambda a: a * 2, x, (x, x))


def test_bad_types_and_non_scalar_hessians():
    x = t64(X23)
    with pytest.raises(TypeError, match=r"\[vjp\] The inputs must be"):
        AF.vjp(lambda a: a.sum(), [x])
    with pytest.raises(TypeError, match=r"\[jacobian\] The outputs of the user-provided function must be"):
        AF.jacobian(lambda a: 3, x)
    with pytest.raises(TypeError, match="index 1"):
        AF.jvp(lambda a, b: a, (x, 2.0), (x, x))
    with pytest.raises(RuntimeError, match=r"\[hessian\] .* should contain a single element"):
        AF.hessian(lambda a: a * 2, x)
    with pytest.raises(RuntimeError, match=r"\[hessian\] The function given to hessian should return a single"):
        AF.hessian(lambda a: (a.sum(),), x)
    with pytest.raises(RuntimeError, match=r"\[vhp\] .* should contain a single element"):
        AF.vhp(lambda a: a, x, x)


def test_strategy_and_vectorize_options():
    x = t64(X23)
    with pytest.raises(ValueError, match="strategy"):
        AF.jacobian(lambda a: a, x, strategy="sideways")
    with pytest.raises(ValueError, match="outer_jacobian_strategy"):
        AF.hessian(lambda a: a.sum(), x, outer_jacobian_strategy="sideways")
    with pytest.raises(NotImplementedError, match="vectorize=True"):
        AF.jacobian(lambda a: a, x, strategy="forward-mode")
    with pytest.raises(NotImplementedError, match="create_graph=True"):
        AF.jacobian(lambda a: a, x, strategy="forward-mode", vectorize=True, create_graph=True)
    with pytest.raises(RuntimeError, match="strict=True and vectorize=True"):
        AF.jacobian(lambda a: a, x, strict=True, vectorize=True)


def test_strict_mode_errors():
    x, y = t64(X23), t64(Y3)
    with pytest.raises(RuntimeError, match=r"\[vjp\] The output of the user-provided function is independent of input"):
        AF.vjp(lambda a, b: a.sum(), (x, y), strict=True)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does not require gradients"):
        AF.vjp(lambda a: sx.ones(3, dtype=sx.float64), x, y, strict=True)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function is independent of input 1"):
        AF.jacobian(lambda a, b: (a * 2, b.sum()), (x, y), strict=True)
    with pytest.raises(RuntimeError, match="independent of input 0. This is not allowed in strict mode when create"):
        AF.jacobian(lambda a: a * 2, x, strict=True, create_graph=True)
    with pytest.raises(RuntimeError, match="independent of input 1"):
        AF.jvp(lambda a, b: a.sum(), (x, y), (x, y), strict=True)
    for fn, args in ((AF.hessian, ()), (AF.vhp, (x,)), (AF.hvp, (x,))):
        with pytest.raises(RuntimeError, match="jacobian of the user-provided function with respect to input 0"):
            fn(lambda a: a.sum() * 2, x, *args, strict=True)
    assert AF.hessian(lambda a: (a**2).sum(), x, strict=True).shape == (2, 3, 2, 3)


# ---------------------------------------------------------------- gradcheck
def doubled_grad(a):
    """exp(a) whose backward is deliberately twice the true derivative."""
    h = a * 1
    h.register_hook(lambda g: g * 2)
    return h.exp()


def doubled_second_grad(a):
    """a^3 with a correct first derivative whose own derivative is doubled."""
    h = a * 1
    h.register_hook(lambda g: g + (g - g.detach()))
    return h**3


def test_gradcheck_accepts_correct_gradients():
    x, y = t64(A23, True), t64(Y3, True)
    f = lambda a, b, k: ((a * b).exp(), (a**3).sum() * b * k)  # noqa: E731
    assert gradcheck(f, (x, y, 2))
    assert gradcheck(f, (x, y, 2), fast_mode=True)
    xt = t64(B32).t().detach().requires_grad_()
    assert not xt.is_contiguous() and gradcheck(lambda a: (a @ a.t()).tanh(), xt)
    assert gradcheck(lambda a, b: a @ b, (x, t64(B32)))  # b is a constant input
    assert gradcheck(lambda a, e: a.exp() + e.sum(), (x, t64(np.zeros((0, 2)), True)))  # an empty input
    assert npy(x).tolist() == A23.tolist()  # perturbations restored exactly


def test_gradcheck_catches_wrong_gradient():
    x = t64(X23, True)
    assert gradcheck(doubled_grad, x, raise_exception=False) is False
    assert gradcheck(doubled_grad, x, raise_exception=False, fast_mode=True) is False
    with pytest.raises(GradcheckError, match=r"(?s)Jacobian mismatch for output 1 with respect to input 2.*numerical"):
        gradcheck(lambda a, k, b: (a * 2, doubled_grad(b)), (x, 3, t64(Y3, True)))
    with pytest.raises(GradcheckError, match="fast mode"):
        gradcheck(doubled_grad, x, fast_mode=True)
    assert isinstance(GradcheckError("m"), RuntimeError)


def test_gradcheck_backward_checks():
    x = t64(X23, True)

    def noisy(a):
        h = a * 1
        h.register_hook(lambda g: g * (1 + RNG.uniform(1e-10, 2e-10)))
        return h.exp()

    with pytest.raises(GradcheckError, match="not reentrant"):
        gradcheck(noisy, x)
    assert gradcheck(noisy, x, nondet_tol=1e-7)

    def shifted(a):
        h = a * 1
        h.register_hook(lambda g: g + 1e-12)
        return h.exp()

    with pytest.raises(GradcheckError, match="backward not multiplied by grad_output"):
        gradcheck(shifted, x)


def test_gradcheck_outputs_without_grad():
    x = t64(X23, True)
    assert gradcheck(lambda a: sx.ones(3, dtype=sx.float64), x)
    with pytest.raises(GradcheckError, match="expected to be zero"):
        gradcheck(lambda a: a.detach() * 2, x)


def test_gradcheck_input_checks_and_options():
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        gradcheck(lambda a: a * 2, t64(Y3))
    with pytest.raises(RuntimeError, match="stride 0"):
        gradcheck(lambda a: a * 2, t64(Y3).expand(2, 3).requires_grad_())
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert gradcheck(lambda a: a * 2, sx.tensor([1.0, 2.0], requires_grad=True), eps=1e-2)
    assert any("Input #0" in str(m.message) and "float64" in str(m.message) for m in w)
    x = t64(Y3, True)
    for name in ("check_batched_grad", "check_forward_ad", "check_batched_forward_grad"):
        with pytest.raises(NotImplementedError, match=name):
            gradcheck(lambda a: a * 2, x, **{name: True})
    for name in ("check_batched_grad", "check_fwd_over_rev"):
        with pytest.raises(NotImplementedError, match=name):
            gradgradcheck(lambda a: a * 2, x, **{name: True})
    with pytest.raises(ValueError, match="check_backward_ad"):
        gradcheck(lambda a: a * 2, x, check_backward_ad=False)
    assert gradcheck(lambda a: a * 2, x, check_undefined_grad=False, check_grad_dtypes=True, masked=False)


def test_gradgradcheck():
    x, y = t64(A23, True), t64(Y3, True)
    f = lambda a, b: ((a * b).exp(), (a**3).sum() * b)  # noqa: E731
    assert gradgradcheck(f, (x, y))
    assert gradgradcheck(f, (x, y), fast_mode=True, gen_non_contig_grad_outputs=True)
    assert gradgradcheck(lambda a: a.exp(), x, t64(V23, True))
    assert gradgradcheck(lambda a: a * 2, x)  # constant first derivative
    assert gradcheck(doubled_second_grad, x)
    assert gradgradcheck(doubled_second_grad, x, raise_exception=False) is False
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        gradgradcheck(doubled_second_grad, x)
    with pytest.raises(ValueError, match="grad_outputs"):
        gradgradcheck(lambda a: a.exp(), x, (t64(V23, True), t64(V23, True)))


# ---------------------------------------------------------------- PyTorch parity
CASES = {  # name: (function, input arrays, tuple input?, v over the outputs, v over the inputs)
    "exp": (lambda x: x.exp(), [X23], False, V23, V23),
    "matmul": (lambda a, b: a @ b, [A23, B32], True, V22, (V23, B32)),
    "tuple_out": (lambda a, b: ((a * b).exp(), (a**3).sum() * b), [A23, Y3], True, (V23, Y3), (V23, Y3)),
    "one_tuple": (lambda x: (x.sin(),), [X23], True, (V23,), (V23,)),
    "unused_input": (lambda a, b: a.tanh() * 2, [X23, Y3], True, V23, (V23, Y3)),
}
SCALAR_CASES = {
    "cube_sum": (lambda x: (x**3).sum(), [X23], False, V23),
    "mixed": (lambda a, b: (a.exp() * b).sum() * (a**2).sum(), [A23, Y3], True, (V23, Y3)),
    "partly_linear": (lambda a, b: (a**2).sum() + b.sum(), [A23, Y3], True, (V23, Y3)),
}


def lib_args(torch, arrays, as_tuple, lib):
    ts = tuple(t64(a) if lib == "sx" else torch.tensor(a, dtype=torch.float64) for a in arrays)
    return ts if as_tuple else ts[0]


def lib_v(torch, v, lib):
    if isinstance(v, tuple):
        return tuple(lib_v(torch, e, lib) for e in v)
    return t64(v) if lib == "sx" else torch.tensor(v, dtype=torch.float64)


def same(ours, theirs, torch, lists_ok=False):
    if isinstance(theirs, (tuple, list)):
        assert isinstance(theirs, tuple) or lists_ok
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            same(o, t, torch, lists_ok)
    else:
        assert isinstance(ours, sx.Tensor) and tuple(ours.shape) == tuple(theirs.shape)
        np.testing.assert_allclose(npy(ours), theirs.detach().numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parity
@pytest.mark.parametrize("name", sorted(CASES))
def test_parity_vjp_jvp_jacobian(torch, name):
    import torch.autograd.functional as TF

    f, arrays, tup, v_out, v_in = CASES[name]
    ours, theirs = lib_args(torch, arrays, tup, "sx"), lib_args(torch, arrays, tup, "torch")
    same(AF.vjp(f, ours, lib_v(torch, v_out, "sx")), TF.vjp(f, theirs, lib_v(torch, v_out, "torch")), torch)
    same(AF.jvp(f, ours, lib_v(torch, v_in, "sx")), TF.jvp(f, theirs, lib_v(torch, v_in, "torch")), torch)
    same(AF.jacobian(f, ours), TF.jacobian(f, theirs), torch)
    same(AF.jacobian(f, ours, vectorize=True), TF.jacobian(f, theirs, vectorize=True), torch)
    kw = {"vectorize": True, "strategy": "forward-mode"}  # PyTorch gives lists here, sneppx_core tuples
    same(AF.jacobian(f, ours, **kw), TF.jacobian(f, theirs, **kw), torch, lists_ok=True)


@pytest.mark.parity
@pytest.mark.parametrize("name", sorted(SCALAR_CASES))
def test_parity_hessian_vhp_hvp(torch, name):
    import torch.autograd.functional as TF

    f, arrays, tup, v = SCALAR_CASES[name]
    ours, theirs = lib_args(torch, arrays, tup, "sx"), lib_args(torch, arrays, tup, "torch")
    same(AF.hessian(f, ours), TF.hessian(f, theirs), torch)
    kw = {"vectorize": True, "outer_jacobian_strategy": "forward-mode"}
    same(AF.hessian(f, ours, **kw), TF.hessian(f, theirs, **kw), torch, lists_ok=True)
    same(AF.vhp(f, ours, lib_v(torch, v, "sx")), TF.vhp(f, theirs, lib_v(torch, v, "torch")), torch)
    same(AF.hvp(f, ours, lib_v(torch, v, "sx")), TF.hvp(f, theirs, lib_v(torch, v, "torch")), torch)


ERROR_CASES = [
    lambda F, x, y: F.vjp(lambda a: a * 2, x),
    lambda F, x, y: F.vjp(lambda a: a * 2, x, y),
    lambda F, x, y: F.vjp(lambda a: (a * 2,), x, (x, x)),
    lambda F, x, y: F.vjp(lambda a, b: a * 2, (x, y), x, strict=True),
    lambda F, x, y: F.vjp(lambda a: a.sum(), [x]),
    lambda F, x, y: F.jvp(lambda a: a * 2, x),
    lambda F, x, y: F.jvp(lambda a, b: a.sum() * 2, (x, y), (x, y), strict=True),
    lambda F, x, y: F.jacobian(lambda a, b: (a * 2, b.sum()), (x, y), strict=True),
    lambda F, x, y: F.jacobian(lambda a: a * 2, x, strict=True, create_graph=True),
    lambda F, x, y: F.jacobian(lambda a: a * 2, x, strategy="forward-mode"),
    lambda F, x, y: F.jacobian(lambda a: a * 2, x, vectorize=True, strict=True),
    lambda F, x, y: F.hessian(lambda a: a * 2, x),
    lambda F, x, y: F.hessian(lambda a: a.sum() * 2, x, strict=True),
    lambda F, x, y: F.vhp(lambda a: a.sum(), x, x, strict=True),
    lambda F, x, y: F.hvp(lambda a: a, x, x),
]


@pytest.mark.parity
@pytest.mark.parametrize("case", range(len(ERROR_CASES)))
def test_parity_errors(torch, case):
    import torch.autograd.functional as TF

    call = ERROR_CASES[case]
    with pytest.raises(Exception) as theirs:
        call(TF, torch.tensor(X23), torch.tensor(Y3))
    with pytest.raises(theirs.type):
        call(AF, t64(X23), t64(Y3))


@pytest.mark.parity
def test_parity_gradcheck(torch):
    from torch.autograd import gradcheck as tgc, gradgradcheck as tggc

    def both(f, arrays, **kw):
        ours = tuple(t64(a, True) for a in arrays)
        theirs = tuple(torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays)
        kw_t = dict(kw, check_undefined_grad=False)  # the hooks below do not handle undefined gradients
        return [fn(f, args, raise_exception=False, **k) for fn, args, k in (
            (gradcheck, ours, kw), (tgc, theirs, kw_t), (gradgradcheck, ours, kw), (tggc, theirs, kw_t))]

    f = lambda a, b: ((a * b).exp(), (a**3).sum() * b)  # noqa: E731
    assert both(f, [A23, Y3]) == [True] * 4
    assert both(f, [A23, Y3], fast_mode=True) == [True] * 4
    assert both(doubled_grad, [X23]) == [False] * 4
    assert both(doubled_second_grad, [X23]) == [True, True, False, False]
    x, xt = t64(X23, True), torch.tensor(X23, requires_grad=True)
    assert gradcheck(lambda a: a.detach() * 2, x, raise_exception=False) is False
    assert tgc(lambda a: a.detach() * 2, xt, raise_exception=False) is False
