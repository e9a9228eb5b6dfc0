"""Special functions: lgamma, digamma, polygamma, mvlgamma, erfinv, i0 (formula-sheet ops), and the
binary nextafter, ldexp, gcd, lcm and frexp. Values are checked against references written here
(Python's math module, power series, bisection, Euler-Maclaurin sums; mpmath where it is installed),
gradients against float64 finite differences, and everything against PyTorch under ``-m parity``."""

from __future__ import annotations

import math

import numpy as np
import pytest

import sneppx_core as sx
from sneppx_core.testing import gradcheck

try:
    import mpmath
except ImportError:  # the references below do without it
    mpmath = None

INF, NAN = math.inf, math.nan


# ---------------------------------------------------------------- references
def ref_lgamma(x):
    if math.isnan(x):
        return NAN
    if math.isinf(x) or (x <= 0 and x == math.floor(x)):
        return INF
    return math.lgamma(x)


# Bernoulli numbers B2, B4, ..., B20 for the asymptotic and Euler-Maclaurin series.
_B = [1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798, -174611 / 330]


def _digamma_series(x):
    if mpmath is not None:
        return float(mpmath.digamma(mpmath.mpf(x)))
    acc = 0.0
    while x < 30:
        acc -= 1 / x
        x += 1
    s = math.log(x) - 0.5 / x
    for k, b in enumerate(_B, start=1):
        s -= b / (2 * k) * (1 / x) ** (2 * k)  # underflows to 0 for large x where x ** (2 k) would overflow
    return s + acc


def ref_digamma(x):
    if math.isnan(x) or x == -INF:
        return NAN
    if x == INF:
        return INF
    if x == 0:
        return math.copysign(INF, -x)
    if x < 0 and x == math.floor(x):
        return NAN
    if x < 0:
        if mpmath is not None:
            return float(mpmath.digamma(mpmath.mpf(x)))
        return _digamma_series(1 - x) - math.pi / math.tan(math.pi * (x - math.trunc(x)))
    return _digamma_series(x)


def _hurwitz_zeta(s, q):
    """sum_k (q + k)^-s for an integer s >= 2 and q > 0: terms up to q + N >= 40, then Euler-Maclaurin."""
    total = 0.0
    terms = []
    while q < 40:
        terms.append(q ** -s)
        q += 1
    total = math.fsum(terms)
    tail = q ** (1 - s) / (s - 1) + 0.5 * q ** -s
    rising = s  # s (s+1) ... (s+2k-2)
    for k, b in enumerate(_B, start=1):
        tail += b / math.factorial(2 * k) * rising * q ** (-s - 2 * k + 1)
        rising *= (s + 2 * k - 1) * (s + 2 * k)
    return total + tail


def ref_polygamma(n, x):
    if n == 0:
        return ref_digamma(x)
    if mpmath is not None:
        return float(mpmath.polygamma(n, mpmath.mpf(x)))
    assert x > 0
    return (-1) ** (n + 1) * math.factorial(n) * _hurwitz_zeta(n + 1, x)


def ref_erfinv(y):
    """Bisection on erf (erfc in the tails, where erf(x) rounds to 1 long before x is found)."""
    if math.isnan(y) or abs(y) > 1:
        return NAN
    if abs(y) == 1:
        return math.copysign(INF, y)
    if y == 0:
        return y
    a = abs(y)
    lo, hi = 0.0, 30.0
    if a <= 0.5:
        f = lambda x: math.erf(x) - a  # noqa: E731
    else:
        w = 1 - a  # exact
        f = lambda x: w - math.erfc(x)  # noqa: E731
    for _ in range(2000):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if f(mid) < 0:
            lo = mid
        else:
            hi = mid
    x = lo if abs(f(lo)) <= abs(f(hi)) else hi
    return math.copysign(x, y)


def ref_i0(x):
    if math.isnan(x):
        return NAN
    if math.isinf(x):
        return INF
    t, k, terms, peak = 1.0, 0, [1.0], 1.0
    q = (x / 2) ** 2
    while True:  # the terms grow until k is about |x| / 2, then fall
        k += 1
        t *= q / (k * k)
        terms.append(t)
        peak = max(peak, t)
        if k * k > q and t < 1e-18 * peak:
            break
    return math.fsum(terms)


def ref_i1(x):
    t, k, terms = x / 2, 0, [x / 2]
    q = (x / 2) ** 2
    while True:
        k += 1
        t *= q / (k * (k + 1))
        terms.append(t)
        if abs(t) <= 1e-18 * max(abs(v) for v in terms) and k > q:
            break
    return math.fsum(terms)


def vec(fn, a):
    return np.array([fn(float(v)) for v in np.asarray(a, dtype=np.float64).ravel()]).reshape(np.shape(a))


def f64(a):
    return sx.tensor(np.asarray(a, dtype=np.float64), dtype=sx.float64)


def assert_close(got, want, rtol, atol=0.0):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    inf = np.isinf(want)
    np.testing.assert_array_equal(got[inf], want[inf])
    ok = ~np.isnan(want) & ~inf
    np.testing.assert_allclose(got[ok], want[ok], rtol=rtol, atol=atol)


# Points of every kind: near and far from the poles, negative, tiny, huge.
GAMMA_POINTS = np.array([1e-300, 1e-10, 1e-3, 0.1, 0.5, 0.99, 1.0, 1.5, 2.0, 2.5, 3.7, 9.99, 10.0, 10.01, 17.3, 100.5,
                         1e3, 1e5, 1e10, 1e17, 1e20, 1e300, -0.5, -1.5, -2.3, -3.9, -10.5, -100.25, -1e5 + 0.5])


# ---------------------------------------------------------------- lgamma
def test_lgamma_matches_math_over_a_wide_range():
    y = sx.lgamma(f64(GAMMA_POINTS)).numpy()
    assert_close(y, vec(ref_lgamma, GAMMA_POINTS), rtol=1e-13, atol=1e-14)


def test_lgamma_poles_and_non_finite_values():
    x = np.array([0.0, -0.0, -1.0, -2.0, -50.0, INF, -INF, NAN])
    for dt in (sx.float64, sx.float32):
        y = sx.lgamma(sx.tensor(x, dtype=dt)).numpy()
        np.testing.assert_array_equal(y, [INF, INF, INF, INF, INF, INF, INF, NAN])


def _float32_points(name):
    """float32 arguments of every range the float kernels treat apart, with the neighbours of the cuts."""
    rng = np.random.default_rng(0)
    if name == "erfinv":
        near1 = 1 - np.logspace(-7.3, -0.3, 3000)
        v = [rng.uniform(-1, 1, 20000), near1, -near1, np.logspace(-40, -1, 500), [0.99662, 0.9966, 0.9967]]
    elif name == "erfc":  # both sides of the cuts at 0.5 and 4, and the tails the double formula takes
        v = [rng.uniform(-6, 12, 20000), np.logspace(-40, 0, 300), [0.49999997, 0.5, 0.50000006, 3.9999998, 4.0,
                                                                    4.0000005, -0.5, -4.0, -4.0000005]]
    elif name == "i0":
        v = [rng.uniform(-20, 20, 20000), rng.uniform(-720, 720, 5000), np.logspace(-40, 0, 300), [7.9999995, 8.0,
                                                                                                   8.000001, 700.0]]
    else:  # lgamma, digamma: around the zeros at 1, 2 (lgamma) and 1.4616 (digamma), tiny, huge, negative
        near = np.concatenate([1 + np.logspace(-7, -1, 500), 1 - np.logspace(-7, -1, 500),
                               2 + np.logspace(-7, -1, 500), 2 - np.logspace(-7, -1, 500)])
        v = [rng.uniform(0, 10, 20000), rng.uniform(-20, 0, 2000), np.logspace(-44, 38, 3000), near,
             [1.0, 2.0, 7.9999995, 8.0, 8.000001, 1.4616321, 1.4616322]]
    return np.concatenate([np.asarray(a, dtype=np.float64) for a in v]).astype(np.float32)


@pytest.mark.parametrize("name", ["lgamma", "digamma", "erfinv", "i0", "erfc"])
def test_float32_is_the_float64_value_rounded(name):
    """float32 runs its own kernel (computed in double, branch-free); each result is within half an ulp
    (and a hair) of the float64 result, contiguous or strided, and exactly 0 at lgamma's zeros. Next to
    those zeros lgamma's two logs cancel to a few 1e-15 absolute: up to 0.55 ulp there."""
    bound = 0.56 if name == "lgamma" else 0.501
    x = _float32_points(name)
    want = getattr(sx, name)(f64(x.astype(np.float64))).numpy()
    for got in (getattr(sx, name)(sx.tensor(x)).numpy(),
                getattr(sx, name)(sx.tensor(np.stack([x, x], 1))[:, 1]).numpy()):  # strided: the buffered path
        assert got.dtype == np.float32
        with np.errstate(over="ignore"):  # lgamma's largest values overflow float32, as they should
            rounded = want.astype(np.float32)
        np.testing.assert_array_equal(np.isfinite(got), np.isfinite(rounded))
        ok = np.isfinite(rounded)
        np.testing.assert_array_equal(got[~ok], rounded[~ok])
        ulps = np.abs(got[ok] - want[ok]) / np.spacing(np.abs(rounded[ok])).astype(np.float64)
        assert ulps.max() <= bound, (name, float(x[ok][np.argmax(ulps)]), float(want[ok][np.argmax(ulps)]), ulps.max())
    if name == "lgamma":
        np.testing.assert_array_equal(sx.lgamma(sx.tensor([1.0, 2.0])).numpy(), [0.0, 0.0])


@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, 16, 17, 25])
def test_float32_polygamma_is_the_float64_value_rounded(n):
    """polygamma's float kernel covers 1 <= n <= 16 and x > 0; n = 0, larger n and x <= 0 take the double
    formula. Either way each result is the float64 one rounded (within a hair)."""
    rng = np.random.default_rng(n)
    x = np.concatenate([rng.uniform(0, 20, 5000), np.logspace(-6, 6, 600), rng.uniform(-5, 0, 200),
                        [8.0, 7.9999995, 1.0, 2.0]]).astype(np.float32)
    want = sx.polygamma(n, f64(x.astype(np.float64))).numpy()
    got = sx.polygamma(n, sx.tensor(x)).numpy()
    with np.errstate(over="ignore"):
        rounded = want.astype(np.float32)
    ok = np.isfinite(rounded) & (rounded != 0)
    np.testing.assert_array_equal(got[~ok], rounded[~ok])
    ulps = np.abs(got[ok] - want[ok]) / np.spacing(np.abs(rounded[ok])).astype(np.float64)
    assert ulps.max() <= 0.501, (n, float(x[ok][np.argmax(ulps)]), ulps.max())


# ---------------------------------------------------------------- digamma and polygamma
def test_digamma_matches_the_reference():
    y = sx.digamma(f64(GAMMA_POINTS)).numpy()
    assert_close(y, vec(ref_digamma, GAMMA_POINTS), rtol=1e-13, atol=1e-13)


def test_digamma_poles_and_non_finite_values():
    x = np.array([0.0, -0.0, -1.0, -7.0, INF, -INF, NAN])
    want = [-INF, INF, NAN, NAN, INF, NAN, NAN]
    for dt in (sx.float64, sx.float32):
        np.testing.assert_array_equal(sx.digamma(sx.tensor(x, dtype=dt)).numpy(), want)


def test_digamma_is_the_derivative_of_lgamma():
    x = np.array([0.3, 1.7, 4.2, 25.0, -0.4, -2.6])
    h = 1e-6
    fd = (vec(math.lgamma, x + h) - vec(math.lgamma, x - h)) / (2 * h)
    np.testing.assert_allclose(sx.digamma(f64(x)).numpy(), fd, rtol=1e-7, atol=1e-7)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7])
def test_polygamma_matches_the_reference(n):
    x = np.array([1e-3, 0.1, 0.5, 1.0, 2.5, 7.3, 10.0, 55.5, 1e3, 1e6])
    y = sx.polygamma(n, f64(x)).numpy()
    assert_close(y, vec(lambda v: ref_polygamma(n, v), x), rtol=1e-12)


@pytest.mark.skipif(mpmath is None, reason="negative arguments need mpmath's polygamma")
def test_polygamma_of_negative_arguments():
    x = np.array([-0.5, -1.25, -3.7])
    for n in (1, 2, 3):
        assert_close(sx.polygamma(n, f64(x)).numpy(), vec(lambda v: ref_polygamma(n, v), x), rtol=1e-9)


def test_polygamma_poles_zero_order_and_bad_n():
    x = f64([0.0, -1.0, -3.0])
    np.testing.assert_array_equal(sx.polygamma(1, x).numpy(), [INF] * 3)
    np.testing.assert_array_equal(sx.polygamma(2, x).numpy(), [-INF] * 3)
    np.testing.assert_array_equal(sx.polygamma(1, f64([NAN, INF])).numpy(), [NAN, 0.0])
    z = f64(GAMMA_POINTS)
    np.testing.assert_array_equal(sx.polygamma(0, z).numpy(), sx.digamma(z).numpy())
    with pytest.raises(RuntimeError, match="negative n"):
        sx.polygamma(-1, z)
    assert z.polygamma(2).shape == z.shape


# ---------------------------------------------------------------- mvlgamma
@pytest.mark.parametrize("p", [1, 2, 3, 5])
def test_mvlgamma_is_a_sum_of_lgammas(p):
    x = np.array([2.6, 3.0, 7.25, 40.0])
    want = [p * (p - 1) / 4 * math.log(math.pi) + math.fsum(math.lgamma(v - i / 2) for i in range(p)) for v in x]
    np.testing.assert_allclose(sx.mvlgamma(f64(x), p).numpy(), want, rtol=1e-13)
    np.testing.assert_allclose(f64(x).mvlgamma(p=p).numpy(), want, rtol=1e-13)


def test_mvlgamma_checks_its_domain():
    with pytest.raises(RuntimeError, match=r"greater than \(p-1\)/2"):
        sx.mvlgamma(f64([3.0, 1.0]), 3)
    with pytest.raises(RuntimeError, match="p has to be"):
        sx.mvlgamma(f64([3.0]), 0)


# ---------------------------------------------------------------- erfinv
def test_erfinv_matches_bisection_including_the_tails():
    y = np.array([0.0, -0.0, 1e-300, 1e-20, 1e-8, 0.1, -0.3, 0.5, 0.69, 0.7, 0.71, 0.9, -0.99, 0.999999,
                  1 - 1e-10, -(1 - 1e-13), 1 - 2**-52, 1 - 2**-53, -(1 - 2**-53)])
    got = sx.erfinv(f64(y)).numpy()
    assert_close(got, vec(ref_erfinv, y), rtol=2e-15, atol=0)
    assert np.signbit(got[1]) and not np.signbit(got[0])


def test_erfinv_inverts_erf():
    x = np.linspace(-5.5, 5.5, 1001)
    y = sx.erf(f64(x))
    back = sx.erfinv(y).numpy()
    fine = np.abs(x) < 3  # beyond, erf(x) is within a few ulps of +-1 and no longer tells x apart
    np.testing.assert_allclose(back[fine], x[fine], rtol=1e-13, atol=1e-15)


def test_erfinv_edges_and_float32():
    x = np.array([1.0, -1.0, 1.5, -2.0, INF, NAN])
    for dt in (sx.float64, sx.float32):
        np.testing.assert_array_equal(sx.erfinv(sx.tensor(x, dtype=dt)).numpy(), [INF, -INF, NAN, NAN, NAN, NAN])
    y32 = np.linspace(-0.9999, 0.9999, 301).astype(np.float32)
    got = sx.erfinv(sx.tensor(y32)).numpy()
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, vec(ref_erfinv, y32), rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------- erfc
def test_erfc_keeps_the_right_tail():
    """erfc is not 1 - erf: its tail keeps its digits (1 - erf gave 0 from x = 4 in float32, 6 in float64)."""
    x = np.array([-30.0, -5.0, -0.5, -1e-3, 0.0, 1e-3, 0.3, 0.5, 0.7, 2.0, 4.0, 4.01, 5.0, 9.0, 15.0, 26.5, 27.5, INF,
                  -INF, NAN])
    want = vec(math.erfc, x)
    assert_close(sx.erfc(f64(x)).numpy(), want, rtol=1e-15)
    x32 = x.astype(np.float32)
    got = sx.erfc(sx.tensor(x32)).numpy()
    assert got.dtype == np.float32
    assert_close(got, vec(math.erfc, x32.astype(np.float64)).astype(np.float32), rtol=6e-8, atol=0)
    assert got[13] == pytest.approx(4.137031746513810e-37, rel=1e-6, abs=0)  # erfc(9) in float32; 1 - erf gave 0


def test_erfc_gradient_and_in_place():
    x = np.array([-3.0, -0.4, 0.0, 0.45, 0.55, 1.3, 3.9, 4.2])
    t = f64(x).requires_grad_()
    (g,) = sx.autograd.grad(sx.erfc(t).sum(), [t])
    np.testing.assert_allclose(g.numpy(), -2 / math.sqrt(math.pi) * np.exp(-x * x), rtol=1e-14)
    assert gradcheck(sx.erfc, [f64(x).requires_grad_()], eps=1e-6, atol=1e-8, rtol=1e-6)
    y = f64(x)
    assert y.erfc_() is y
    np.testing.assert_array_equal(y.numpy(), sx.erfc(f64(x)).numpy())


# ---------------------------------------------------------------- i0
def test_i0_matches_its_power_series():
    x = np.array([0.0, 1e-8, 0.3, -1.0, 2.5, 7.9, 8.0, 8.1, -15.0, 30.0, 100.0, -250.0, 700.0])
    assert_close(sx.i0(f64(x)).numpy(), vec(ref_i0, x), rtol=5e-15)


def test_i0_non_finite_and_float32():
    np.testing.assert_array_equal(sx.i0(f64([INF, -INF, NAN, 800.0])).numpy(), [INF, INF, NAN, INF])
    x = np.linspace(-60, 60, 241).astype(np.float32)
    got = sx.i0(sx.tensor(x)).numpy()
    np.testing.assert_allclose(got, vec(ref_i0, x), rtol=1e-6)


def test_i0_gradient_is_i1():
    x = np.array([-12.0, -3.5, -0.25, 0.0, 0.25, 1.0, 5.0, 9.0, 40.0])
    t = f64(x).requires_grad_()
    (g,) = sx.autograd.grad(sx.i0(t).sum(), [t])
    np.testing.assert_allclose(g.numpy(), vec(ref_i1, x), rtol=1e-14, atol=1e-300)


# ---------------------------------------------------------------- dtype rules, entry points, in-place
@pytest.mark.parametrize("name", ["lgamma", "digamma", "erfinv", "i0"])
def test_integer_inputs_compute_in_float32(name):
    i = sx.tensor([1, 2, 3])
    y = getattr(sx, name)(i)
    assert y.dtype == sx.float32
    np.testing.assert_array_equal(y.numpy(), getattr(sx, name)(i.float()).numpy())
    assert sx.polygamma(1, i).dtype == sx.float32 and sx.mvlgamma(i + 2, 2).dtype == sx.float32


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("fn", [sx.lgamma, sx.digamma, sx.erfinv, sx.i0, lambda t: sx.polygamma(2, t)],
                         ids=["lgamma", "digamma", "erfinv", "i0", "polygamma"])
def test_half_types_are_the_float32_result_rounded(fn, dtype):
    x = sx.tensor(np.linspace(-3.3, 3.3, 67), dtype=getattr(sx, dtype))
    y = fn(x)
    assert y.dtype == x.dtype
    np.testing.assert_array_equal(y.float().numpy(), fn(x.float()).to(x.dtype).float().numpy())


def test_in_place_forms_and_methods():
    x = np.array([0.3, 1.7, 4.2, 9.0])
    for name in ("lgamma", "digamma", "erfinv", "i0"):
        want = getattr(sx, name)(f64(x / 10)).numpy()
        t = f64(x / 10)
        assert getattr(t, name + "_")() is t
        np.testing.assert_array_equal(t.numpy(), want)
        np.testing.assert_array_equal(getattr(f64(x / 10), name)().numpy(), want)
    t = f64(x)
    assert t.polygamma_(3) is t
    np.testing.assert_array_equal(t.numpy(), sx.polygamma(3, f64(x)).numpy())
    t = f64(x + 2)
    assert t.mvlgamma_(2) is t
    np.testing.assert_array_equal(t.numpy(), sx.mvlgamma(f64(x + 2), 2).numpy())
    with pytest.raises(TypeError, match="lgamma_"):
        sx.tensor([1, 2]).lgamma_()  # a float result cannot be written into an integer tensor


# ---------------------------------------------------------------- gradients
@pytest.mark.parametrize("fn,x", [
    (sx.lgamma, [0.3, 1.7, 4.2, -0.4, -2.6, 30.0]),
    (sx.digamma, [0.3, 1.7, 4.2, -0.4, -2.6, 30.0]),
    (lambda t: sx.polygamma(1, t), [0.3, 1.7, 4.2, 12.0]),
    (lambda t: sx.polygamma(3, t), [0.6, 1.7, 4.2, 12.0]),
    (sx.erfinv, [-0.95, -0.4, 0.0, 0.3, 0.8, 0.99]),
    (sx.i0, [-9.5, -2.0, 0.0, 0.7, 3.0, 8.5]),
    (lambda t: sx.mvlgamma(t, 3), [1.2, 2.0, 5.5]),
], ids=["lgamma", "digamma", "polygamma1", "polygamma3", "erfinv", "i0", "mvlgamma"])
def test_gradients_match_finite_differences(fn, x):
    assert gradcheck(fn, [f64(x).requires_grad_()], eps=1e-6, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("fn,x", [
    (sx.lgamma, [0.3, 1.7, 4.2, -0.4]),
    (sx.erfinv, [-0.6, 0.1, 0.5]),
    (sx.i0, [-3.0, 0.4, 2.0, 10.0]),
], ids=["lgamma", "erfinv", "i0"])
def test_second_derivatives_match_finite_differences(fn, x):
    def first(v):
        t = f64(v).requires_grad_()
        (g,) = sx.autograd.grad(fn(t).sum(), [t], create_graph=True)
        return t, g

    t, g = first(x)
    assert g.requires_grad, "the first derivative is not differentiable"
    (h,) = sx.autograd.grad(g.sum(), [t])
    eps = 1e-6
    fd = (first(np.array(x) + eps)[1].detach().numpy() - first(np.array(x) - eps)[1].detach().numpy()) / (2 * eps)
    np.testing.assert_allclose(h.numpy(), fd, rtol=1e-5, atol=1e-6)


def test_gradient_formulas_at_known_points():
    t = f64([0.5]).requires_grad_()
    (g,) = sx.autograd.grad(sx.erfinv(t).sum(), [t])
    e = ref_erfinv(0.5)
    np.testing.assert_allclose(g.numpy(), [math.sqrt(math.pi) / 2 * math.exp(e * e)], rtol=1e-14)
    t = f64([1.0]).requires_grad_()
    (g,) = sx.autograd.grad(sx.digamma(t).sum(), [t])
    np.testing.assert_allclose(g.numpy(), [math.pi**2 / 6], rtol=1e-14)  # trigamma(1) = zeta(2)


# ---------------------------------------------------------------- gcd and lcm
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8"])
def test_gcd_and_lcm_of_integers(dtype):
    vals = [0, 1, 2, 3, 4, 6, 9, 12, 35, 100] if dtype == "uint8" else [0, 1, -1, 2, -4, 6, 9, -12, 35, -100, 7]
    a, b = np.meshgrid(vals, vals)
    a, b = a.ravel(), b.ravel()
    ta, tb = sx.tensor(a, dtype=getattr(sx, dtype)), sx.tensor(b, dtype=getattr(sx, dtype))
    g = sx.gcd(ta, tb)
    assert g.dtype == ta.dtype
    np.testing.assert_array_equal(g.numpy(), [math.gcd(int(x), int(y)) for x, y in zip(a, b)])
    lcm = [0 if x == 0 or y == 0 else abs(int(x) * int(y)) // math.gcd(int(x), int(y)) for x, y in zip(a, b)]
    if dtype == "uint8":
        lcm = [v % 256 for v in lcm]
    np.testing.assert_array_equal(sx.lcm(ta, tb).numpy(), lcm)
    np.testing.assert_array_equal(ta.gcd(tb).numpy(), g.numpy())


def test_gcd_lcm_broadcast_in_place_and_dtype_rules():
    a = sx.tensor([[12, -18, 0], [7, 14, 21]])
    np.testing.assert_array_equal(sx.gcd(a, sx.tensor([6, 4, 5])).numpy(), [[6, 2, 5], [1, 2, 1]])
    np.testing.assert_array_equal(sx.lcm(a, sx.tensor(4)).numpy(), [[12, 36, 0], [28, 28, 84]])
    np.testing.assert_array_equal(sx.gcd(sx.tensor([4], dtype=sx.int32), sx.tensor([6])).numpy(), [2])
    assert sx.gcd(sx.tensor([4], dtype=sx.int32), sx.tensor([6])).dtype == sx.int64
    b = a.clone()
    assert b.gcd_(sx.tensor([6, 4, 5])) is b
    np.testing.assert_array_equal(b.numpy(), [[6, 2, 5], [1, 2, 1]])
    b.lcm_(sx.tensor([2, 3, 4]))
    np.testing.assert_array_equal(b.numpy(), [[6, 6, 20], [2, 6, 4]])
    with pytest.raises(TypeError, match=r"\[gcd\].*integer"):
        sx.gcd(sx.tensor([1.0]), sx.tensor([2.0]))
    with pytest.raises(TypeError, match=r"\[lcm\].*integer"):
        sx.lcm(sx.tensor([True]), sx.tensor([False]))


# ---------------------------------------------------------------- nextafter
def test_nextafter_float64_and_float32():
    x = np.array([0.0, -0.0, 1.0, 1.0, -1.0, 1e-308, 5e-324, 1.7e308, INF, -INF, NAN, 2.0, 3.0])
    y = np.array([1.0, -1.0, 2.0, 0.0, -INF, 0.0, -1.0, INF, 0.0, 0.0, 1.0, NAN, 3.0])
    got = sx.nextafter(f64(x), f64(y)).numpy()
    want = np.array([math.nextafter(a, b) for a, b in zip(x, y)])
    np.testing.assert_array_equal(got, want)
    x32, y32 = x.astype(np.float32), y.astype(np.float32)
    got32 = sx.nextafter(sx.tensor(x32), sx.tensor(y32)).numpy()
    assert got32.dtype == np.float32
    np.testing.assert_array_equal(got32, np.nextafter(x32, y32))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_nextafter_steps_in_the_16_bit_type(dtype):
    x = sx.tensor([1.0, 1.0, 0.0, -0.0, 65504.0 if dtype == "float16" else 1.0, -2.0, 3.0], dtype=getattr(sx, dtype))
    y = sx.tensor([2.0, 0.0, 1.0, -1.0, INF, -INF, 3.0], dtype=getattr(sx, dtype))
    got = sx.nextafter(x, y).float().numpy()
    if dtype == "float16":
        want = np.nextafter(x.float().numpy().astype(np.float16), y.float().numpy().astype(np.float16))
        np.testing.assert_array_equal(got, want.astype(np.float32))
    else:
        eps = 2.0**-7
        np.testing.assert_array_equal(got, [1 + eps, 1 - eps / 2, 2.0**-133, -(2.0**-133), 1 + eps,
                                            -(2 + 2 * eps), 3.0])


def test_nextafter_in_place_errors_and_no_gradient():
    a = f64([1.0, 2.0])
    assert a.nextafter_(f64([0.0, 3.0])) is a
    np.testing.assert_array_equal(a.numpy(), [math.nextafter(1.0, 0.0), math.nextafter(2.0, 3.0)])
    with pytest.raises(TypeError, match="nextafter"):
        sx.nextafter(sx.tensor([1, 2]), sx.tensor([3, 4]))
    t = f64([1.0]).requires_grad_()
    y = sx.nextafter(t, f64([2.0]))
    with pytest.raises(RuntimeError, match="nextafter"):
        y.sum().backward()


# ---------------------------------------------------------------- ldexp and frexp
def test_ldexp_values_and_dtypes():
    x = np.array([1.0, -3.5, 0.75, 1e-300, 0.0, INF])
    e = np.array([3, -2, 10, 100, 5, -4])
    got = sx.ldexp(f64(x), sx.tensor(e)).numpy()
    np.testing.assert_array_equal(got, [math.ldexp(a, int(b)) for a, b in zip(x, e)])
    assert sx.ldexp(sx.tensor([1, 2]), sx.tensor([3, 4])).dtype == sx.float32
    np.testing.assert_array_equal(sx.ldexp(sx.tensor([1, 2]), sx.tensor([3, 4])).numpy(), [8.0, 32.0])
    assert sx.ldexp(sx.tensor([1.0], dtype=sx.float16), sx.tensor([2])).dtype == sx.float16
    t = f64([1.5, 2.0])
    assert t.ldexp_(sx.tensor([1, -1])) is t
    np.testing.assert_array_equal(t.numpy(), [3.0, 1.0])
    np.testing.assert_array_equal(f64([1.5]).ldexp(sx.tensor([2])).numpy(), [6.0])


def test_ldexp_gradients():
    assert gradcheck(lambda a, b: sx.ldexp(a, b), [f64([0.3, -1.2, 2.0]).requires_grad_(),
                                                     f64([1.0, -0.5, 2.5]).requires_grad_()])


def test_frexp_values_specials_and_gradient():
    x = np.array([1.0, -3.5, 0.75, 1e-310, 5e-324, 1.7e308, 0.0, -0.0, 8.0, INF, -INF, NAN])
    m, e = sx.frexp(f64(x))
    assert e.dtype == sx.int32 and m.dtype == sx.float64
    wm, we = np.frexp(x)
    np.testing.assert_array_equal(m.numpy(), wm)
    np.testing.assert_array_equal(e.numpy()[np.isfinite(x)], we[np.isfinite(x)])
    np.testing.assert_array_equal(e.numpy()[~np.isfinite(x)], 0)
    m2, e2 = f64(x).frexp()
    np.testing.assert_array_equal(m2.numpy(), wm)
    r = sx.frexp(f64([6.0]))
    assert r.mantissa.item() == 0.75 and r.exponent.item() == 3
    for dt in ("float32", "float16", "bfloat16"):
        v = np.array([1.0, -3.5, 0.75, 1e-3, 0.0, 100.0], dtype=np.float32)
        mm, ee = sx.frexp(sx.tensor(v).to(getattr(sx, dt)))
        assert mm.dtype == getattr(sx, dt) and ee.dtype == sx.int32
        back = mm.double().numpy() * 2.0 ** ee.numpy()
        np.testing.assert_array_equal(back, sx.tensor(v).to(getattr(sx, dt)).double().numpy())
    assert gradcheck(lambda a: sx.frexp(a)[0], [f64([0.3, -1.2, 5.0]).requires_grad_()])
    with pytest.raises(TypeError, match="frexp"):
        sx.frexp(sx.tensor([1, 2]))


# ---------------------------------------------------------------- parity with PyTorch
PARITY_X = np.array([-7.5, -2.3, -0.5, 1e-4, 0.3, 1.0, 2.5, 9.99, 10.0, 33.3, 1e4, 0.0, -3.0, INF, -INF, NAN])
PARITY_U = np.array([-1.0, -0.999999, -0.7, -0.2, 0.0, 1e-9, 0.4, 0.7, 0.71, 0.9999, 1.0, 1.2, NAN])


@pytest.mark.parity
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name,xs", [("lgamma", PARITY_X), ("digamma", PARITY_X),
                                     ("i0", PARITY_X[~np.isinf(PARITY_X)]),  # torch's i0(+-inf) is NaN, ours inf
                                     ("erfinv", PARITY_U)])
def test_values_match_torch(torch, name, xs, dtype):
    a = xs.astype(dtype)
    got = getattr(sx, name)(sx.tensor(a)).numpy()
    want = getattr(torch, name)(torch.tensor(a)).numpy()
    rtol = 1e-12 if dtype == "float64" else 3e-6
    assert_close(got, want, rtol=rtol, atol=1e-12 if dtype == "float64" else 1e-6)


@pytest.mark.parity
@pytest.mark.parametrize("n", [0, 1, 2, 3, 5])
def test_polygamma_matches_torch(torch, n):
    # inf only for n <= 1: torch's zeta gives NaN at inf where the limit (ours) is 0
    # and the poles only for n != 1: torch's trigamma gives large finite values there, ours inf
    a = np.array([0.1, 0.5, 1.0, 2.5, 9.99, 33.3, 1e3, NAN] + ([INF] if n <= 1 else [])
                 + ([0.0, -1.0] if n != 1 else []))
    got = sx.polygamma(n, f64(a)).numpy()
    want = torch.polygamma(n, torch.tensor(a)).numpy()
    assert_close(got, want, rtol=1e-7 if n == 1 else 1e-12)  # torch's trigamma is accurate to about 1e-8


@pytest.mark.parity
def test_mvlgamma_frexp_ldexp_nextafter_gcd_lcm_match_torch(torch):
    a = np.array([2.6, 3.0, 7.25, 40.0])
    np.testing.assert_allclose(sx.mvlgamma(f64(a), 4).numpy(), torch.mvlgamma(torch.tensor(a), 4).numpy(), rtol=1e-13)
    x = np.array([1.0, -3.5, 0.75, 1e-310, 0.0, 8.0, INF, NAN])
    m, e = sx.frexp(f64(x))
    tm, te = torch.frexp(torch.tensor(x))
    np.testing.assert_array_equal(m.numpy(), tm.numpy())
    np.testing.assert_array_equal(e.numpy(), te.numpy())
    e2 = np.array([3, -2, 10, 100, 5, -4, 1, 0])
    np.testing.assert_array_equal(sx.ldexp(f64(x), sx.tensor(e2)).numpy(),
                                  torch.ldexp(torch.tensor(x), torch.tensor(e2)).numpy())
    i, j = torch.tensor([3, 4]), torch.tensor([5, 6])
    assert sx.ldexp(sx.tensor([3, 4]), sx.tensor([5, 6])).dtype == sx.float32
    assert torch.ldexp(i, j).dtype == torch.float32
    y = np.array([2.0, -INF, 1.0, 0.0, 1.0, 8.0, 0.0, 1.0])
    for dt in ("float64", "float32"):
        np.testing.assert_array_equal(sx.nextafter(sx.tensor(x.astype(dt)), sx.tensor(y.astype(dt))).numpy(),
                                      torch.nextafter(torch.tensor(x.astype(dt)), torch.tensor(y.astype(dt))).numpy())
    vals = np.array([0, 1, -1, 2, -4, 6, 9, -12, 35, -100, 7, 2**40, -(2**62)])
    p, q = np.meshgrid(vals, vals)
    for op in ("gcd", "lcm"):
        np.testing.assert_array_equal(getattr(sx, op)(sx.tensor(p.ravel()), sx.tensor(q.ravel())).numpy(),
                                      getattr(torch, op)(torch.tensor(p.ravel()), torch.tensor(q.ravel())).numpy())


@pytest.mark.parity
@pytest.mark.parametrize("name,xs", [
    ("lgamma", [0.3, 1.7, -0.4, 12.0]), ("digamma", [0.3, 1.7, -0.4, 12.0]), ("erfinv", [-0.9, 0.0, 0.3, 0.99]),
    ("i0", [-9.5, 0.0, 0.7, 8.5]), ("polygamma2", [0.3, 1.7, 12.0]), ("mvlgamma", [1.6, 3.0]),
    ("frexp", [0.3, -5.0, 1024.0]), ("ldexp", [0.3, -5.0, 2.0]),
])
def test_gradients_match_torch(torch, name, xs):
    fns = {
        "polygamma2": lambda m, t: m.polygamma(2, t), "mvlgamma": lambda m, t: m.mvlgamma(t, 3),
        "frexp": lambda m, t: m.frexp(t)[0], "ldexp": lambda m, t: m.ldexp(t, t * 0 + 1.5),
    }
    fn = fns.get(name, lambda m, t: getattr(m, name)(t))
    a = np.array(xs)
    s = f64(a).requires_grad_()
    (gs,) = sx.autograd.grad(fn(sx, s).sum(), [s], create_graph=True)
    (gs2,) = sx.autograd.grad(gs.sum(), [s]) if name not in ("frexp",) else (None,)
    t = torch.tensor(a, requires_grad=True)
    (gt,) = torch.autograd.grad(fn(torch, t).sum(), [t], create_graph=True)
    np.testing.assert_allclose(gs.detach().numpy(), gt.detach().numpy(), rtol=1e-7 if name == "digamma" else 1e-12)
    if gs2 is not None:
        (gt2,) = torch.autograd.grad(gt.sum(), [t])
        np.testing.assert_allclose(gs2.numpy(), gt2.numpy(), rtol=1e-6)
