"""float32 transcendentals (the polynomial forms in cpu/vmath.h and cpu/nn_math.h) against NumPy's
float64 results over wide ranges: error in units in the last place (ulp) of the float32 result,
special values (0, -0, inf, NaN, subnormals), and the same values through the contiguous, in-place
and strided kernel paths. The binary ops with float32 fast paths (remainder, atan2, pow) are checked
against NumPy as well, remainder exactly."""

from __future__ import annotations

import numpy as np
import pytest
import sneppx_core as sx

F32 = np.float32
SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1e-40, -3e-39, 1.1754944e-38,
                    3.4028235e38, -3.4028235e38, 1.0, -1.0, 0.5, -0.5, 2.0, 1e-8, -1e-8], dtype=F32)


def log_uniform(rng, lo: float, hi: float, n: int, signed: bool = True) -> np.ndarray:
    """n float32 values with magnitudes spread evenly over the exponents of [lo, hi]."""
    mag = np.exp(rng.uniform(np.log(lo), np.log(hi), n))
    if signed:
        mag *= rng.choice([-1.0, 1.0], n)
    return mag.astype(F32)


def ulp_error(ours: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|ours - ref| in units of the float32 spacing at ref (ref in float64); 0 where both agree on
    NaN or on an infinity, inf where only one of them is NaN or infinite."""
    ours64 = ours.astype(np.float64)
    with np.errstate(over="ignore"):
        ref32 = ref.astype(F32)
    err = np.zeros(ref.shape)
    both_nan = np.isnan(ours64) & np.isnan(ref)
    special = ~np.isfinite(ours64) | ~np.isfinite(ref32.astype(np.float64))
    same_special = special & ((ours64 == ref32) | both_nan)
    finite = ~special
    spacing = np.spacing(np.abs(ref32[finite])).astype(np.float64)
    err[finite] = np.abs(ours64[finite] - ref[finite]) / spacing
    err[special & ~same_special] = np.inf
    return err


def check(name: str, x: np.ndarray, ref_fn, max_ulp: float):
    ours = getattr(sx, name)(sx.tensor(x)).numpy()
    with np.errstate(all="ignore"):
        ref = ref_fn(x.astype(np.float64))
    err = ulp_error(ours, ref)
    worst = int(np.argmax(err))
    assert err[worst] <= max_ulp, (f"{name}({x[worst]!r}) = {ours[worst]!r}, float64 reference {ref[worst]!r}: "
                                   f"{err[worst]:.2f} ulp (limit {max_ulp})")
    return float(err.max())


def near_multiples_of_half_pi(limit: float) -> np.ndarray:
    """The float32 values nearest to k pi/2 (and their neighbours) for k spread up to limit: the
    arguments where a reduction modulo pi/2 loses the most digits."""
    k = np.unique(np.concatenate([np.arange(1, 2000), np.geomspace(2000, limit / 1.5707963, 4000).round()]))
    x = (k * (np.pi / 2)).astype(F32)
    return np.concatenate([x, np.nextafter(x, F32(np.inf)), np.nextafter(x, F32(0))])


RNG = np.random.default_rng(0)
WIDE = log_uniform(RNG, 1e-38, 3e38, 20000)


def trig_inputs():
    return np.concatenate([SPECIAL, WIDE, RNG.uniform(-10, 10, 20000).astype(F32),
                           log_uniform(RNG, 1e3, 1.6e7, 20000), near_multiples_of_half_pi(1.6e7),
                           log_uniform(RNG, 1.6e7, 3e38, 2000)])


CASES = [  # name, inputs, float64 reference, limit in ulp
    ("sin", trig_inputs, np.sin, 2),
    ("cos", trig_inputs, np.cos, 2),
    ("tan", trig_inputs, np.tan, 3),
    ("asin", lambda: np.concatenate([SPECIAL, RNG.uniform(-1.2, 1.2, 40000).astype(F32),
                                     log_uniform(RNG, 1e-30, 1, 10000)]), np.arcsin, 2),
    ("acos", lambda: np.concatenate([SPECIAL, RNG.uniform(-1.2, 1.2, 40000).astype(F32),
                                     1 - log_uniform(RNG, 1e-7, 1, 10000, signed=False)]), np.arccos, 2),
    ("atan", lambda: np.concatenate([SPECIAL, WIDE, RNG.uniform(-5, 5, 20000).astype(F32)]), np.arctan, 3),
    ("sinh", lambda: np.concatenate([SPECIAL, RNG.uniform(-92, 92, 40000).astype(F32),
                                     log_uniform(RNG, 1e-30, 2, 10000)]), np.sinh, 3),
    ("cosh", lambda: np.concatenate([SPECIAL, RNG.uniform(-92, 92, 40000).astype(F32),
                                     log_uniform(RNG, 1e-30, 2, 10000)]), np.cosh, 3),
    ("exp", lambda: np.concatenate([SPECIAL, RNG.uniform(-105, 90, 40000).astype(F32),
                                    log_uniform(RNG, 1e-30, 2, 10000)]), np.exp, 2),
    ("exp2", lambda: np.concatenate([SPECIAL, RNG.uniform(-155, 130, 40000).astype(F32),
                                     log_uniform(RNG, 1e-30, 1, 10000)]), np.exp2, 2),
    ("expm1", lambda: np.concatenate([SPECIAL, RNG.uniform(-100, 90, 40000).astype(F32),
                                      log_uniform(RNG, 1e-30, 2, 20000)]), np.expm1, 2),
    ("log", lambda: np.concatenate([SPECIAL, np.abs(WIDE), RNG.uniform(0.5, 2, 20000).astype(F32)]), np.log, 2),
    ("log2", lambda: np.concatenate([SPECIAL, np.abs(WIDE), RNG.uniform(0.5, 2, 20000).astype(F32)]), np.log2, 2),
    ("log10", lambda: np.concatenate([SPECIAL, np.abs(WIDE), RNG.uniform(0.5, 2, 20000).astype(F32)]), np.log10, 2),
    ("log1p", lambda: np.concatenate([SPECIAL, WIDE, RNG.uniform(-1, 1, 20000).astype(F32),
                                      -1 + log_uniform(RNG, 1e-7, 1, 5000, signed=False)]), np.log1p, 3),
]


@pytest.mark.parametrize("name,inputs,ref,limit", CASES, ids=[c[0] for c in CASES])
def test_float32_within_ulp_limit_of_float64(name, inputs, ref, limit):
    check(name, inputs(), ref, limit)


@pytest.mark.parametrize("name", ["sin", "cos", "tan", "log1p", "expm1"])
def test_signed_zero_and_specials(name):
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan], dtype=F32)
    ours = getattr(sx, name)(sx.tensor(x)).numpy()
    with np.errstate(all="ignore"):
        ref = getattr(np, name)(x)
    np.testing.assert_array_equal(ours, ref)
    if name != "cos":
        np.testing.assert_array_equal(np.signbit(ours[:2]), [False, True])


def test_exp_range_ends_on_every_path():
    """float32 exp takes arguments with a normal result through one formula and the others (NaN,
    infinities, subnormal and overflowing results) through a second pass in double: both kinds mixed in
    one tensor, through the contiguous, in-place and strided paths, within 1 ulp of float64."""
    edges = np.array([-86.0, -86.00001, 88.0, 88.00001, 88.72, 88.73, -103.97, -104.0, -150.0], dtype=F32)
    x = np.concatenate([RNG.uniform(-110, 95, 20000).astype(F32), SPECIAL, edges])
    RNG.shuffle(x)
    full = sx.exp(sx.tensor(x)).numpy()
    with np.errstate(over="ignore"):
        ref = np.exp(x.astype(np.float64))
    assert ulp_error(full, ref).max() <= 1.0
    outside = (x < -86) | (x > 88) | np.isnan(x)
    assert outside.sum() > 1000 and (~outside).sum() > 1000
    t = sx.tensor(x)
    t.exp_()
    np.testing.assert_array_equal(t.numpy(), full)
    np.testing.assert_array_equal(sx.exp(sx.tensor(np.repeat(x, 2))[::2]).numpy(), full)


@pytest.mark.skipif(np.finfo(np.longdouble).nmant < 63, reason="needs x87 long double for the reference")
def test_float64_exp_within_one_ulp_of_long_double_on_every_path():
    """float64 exp takes arguments with a normal result (-708 <= x <= 709) through a vectorised formula
    and the others (NaN, infinities, subnormal and overflowing results) through <cmath>: within
    1 ulp of exp computed in long double, on the contiguous, in-place and strided paths."""
    tiny = np.exp(RNG.uniform(np.log(1e-300), 0.0, 20000)) * RNG.choice([-1.0, 1.0], 20000)
    edges = [0.0, -0.0, np.inf, -np.inf, np.nan, -708.0, np.nextafter(-708.0, -np.inf), 709.0,
             np.nextafter(709.0, np.inf), 709.78, 709.79, -745.13, -745.14, -800.0, 5e-324, -0.5 * np.log(2)]
    x = np.concatenate([RNG.uniform(-760, 720, 100000), RNG.uniform(-1, 1, 20000), tiny, edges])
    RNG.shuffle(x)
    full = sx.exp(sx.tensor(x)).numpy()
    with np.errstate(over="ignore"):
        ref = np.exp(x.astype(np.longdouble))
        ref64 = ref.astype(np.float64)
    finite = np.isfinite(ref64) & (ref64 != 0)
    err = np.abs(full[finite].astype(np.longdouble) - ref[finite]) / np.spacing(ref64[finite])
    worst = int(np.argmax(err))
    assert err[worst] <= 1.0, f"exp({x[finite][worst]!r}): {float(err[worst]):.2f} ulp"
    np.testing.assert_array_equal(full[~finite], ref64[~finite])  # NaN, inf and 0 exactly
    outside = (x < -708) | (x > 709) | np.isnan(x)
    assert outside.sum() > 1000 and (~outside).sum() > 1000
    t = sx.tensor(x)
    t.exp_()
    np.testing.assert_array_equal(t.numpy(), full)
    np.testing.assert_array_equal(sx.exp(sx.tensor(np.repeat(x, 2))[::2]).numpy(), full)


@pytest.mark.parametrize("name", ["log", "log2", "log10"])
def test_log_range_ends_on_every_path(name):
    """float32 logs take normal arguments through one formula and the others (zeros, subnormals,
    negatives, infinities, NaN) through a second pass in double: both kinds mixed in one tensor,
    through the contiguous, in-place and strided paths; the second kind as float64 rounded to float32."""
    tiny = np.float32(1.1754944e-38)
    edges = np.array([tiny, np.nextafter(tiny, F32(0)), np.finfo(F32).max, 1.0, -1.0, -tiny], dtype=F32)
    subnormal = log_uniform(RNG, 1e-45, 1.1e-38, 3000, signed=False)
    x = np.concatenate([np.abs(WIDE), subnormal, -np.abs(WIDE[:3000]), SPECIAL, edges])
    RNG.shuffle(x)
    fn = getattr(np, name)
    with np.errstate(divide="ignore", invalid="ignore"):
        ref = fn(x.astype(np.float64))
    full = getattr(sx, name)(sx.tensor(x)).numpy()
    assert ulp_error(full, ref).max() <= 2.0
    outside = ~((x >= tiny) & (x <= np.finfo(F32).max))
    assert outside.sum() > 5000 and (~outside).sum() > 10000
    np.testing.assert_array_equal(full[outside], ref[outside].astype(F32))
    t = sx.tensor(x)
    getattr(t, name + "_")()
    np.testing.assert_array_equal(t.numpy(), full)
    np.testing.assert_array_equal(getattr(sx, name)(sx.tensor(np.repeat(x, 2))[::2]).numpy(), full)


@pytest.mark.parametrize("name", ["sin", "cos", "tan"])
def test_trig_reduction_range_ends_on_every_path(name):
    """float32 sin, cos, tan reduce |x| < 2**14 in float and take the rest (up to inf, and NaN)
    through a second pass in double: both kinds mixed in one tensor (the floats around 2**14 and
    the multiples of pi/2 next to it included), through the contiguous, in-place and strided paths,
    within the ulp limits of the float64 reference; the second kind as float64 rounded to float32."""
    edge = F32(16384.0)
    around = np.array([edge, np.nextafter(edge, F32(0)), np.nextafter(edge, F32(np.inf)), -edge], dtype=F32)
    k = np.arange(10420, 10440)  # k pi/2 on both sides of 2**14, and their neighbours
    half_pi = (k * (np.pi / 2)).astype(F32)
    x = np.concatenate([around, half_pi, np.nextafter(half_pi, F32(0)), -half_pi, SPECIAL,
                        RNG.uniform(-20000, 20000, 20000).astype(F32), RNG.uniform(-4, 4, 5000).astype(F32)])
    RNG.shuffle(x)
    with np.errstate(invalid="ignore"):
        ref = getattr(np, name)(x.astype(np.float64))
    full = getattr(sx, name)(sx.tensor(x)).numpy()
    assert ulp_error(full, ref).max() <= (3.0 if name == "tan" else 2.0)
    outside = ~(np.abs(x) < edge)
    assert outside.sum() > 3000 and (~outside).sum() > 10000
    np.testing.assert_array_equal(full[outside], ref[outside].astype(F32))
    t = sx.tensor(x)
    getattr(t, name + "_")()
    np.testing.assert_array_equal(t.numpy(), full)
    np.testing.assert_array_equal(getattr(sx, name)(sx.tensor(np.repeat(x, 2))[::2]).numpy(), full)


@pytest.mark.parametrize("name", ["sigmoid", "silu"])
def test_sigmoid_and_silu_range_ends_on_every_path(name):
    """float32 sigmoid and silu take x >= -88 through one formula (e^-x clamped where 1 + e^-x is
    already 1) and x < -88 (subnormal sigmoid, silu down to 0) and NaN through a second pass in double:
    both kinds mixed in one tensor, through the contiguous, in-place and strided paths, against float64;
    the second kind as float64 rounded to float32."""
    import sneppx_core.functional as F

    edges = np.array([-88.0, -88.00001, -87.99999, -86.0, 86.0, 86.00001, 88.72, 88.73, 104.0, -104.0, -150.0],
                     dtype=F32)
    x = np.concatenate([RNG.uniform(-120, 120, 20000).astype(F32), RNG.uniform(-8, 8, 5000).astype(F32),
                        SPECIAL, edges])
    RNG.shuffle(x)
    x64 = x.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        ref = 1.0 / (1.0 + np.exp(-x64))
        ref = x64 * ref if name == "silu" else ref
    fn = sx.sigmoid if name == "sigmoid" else F.silu
    full = fn(sx.tensor(x)).numpy()
    outside = ~(x >= -88)
    assert outside.sum() > 2000 and (~outside).sum() > 10000
    np.testing.assert_array_equal(full[outside], ref[outside].astype(F32))
    normal = ~outside & (np.abs(ref) >= np.finfo(F32).tiny)
    assert ulp_error(full[normal], ref[normal]).max() <= 2.5  # e^-x within 1 ulp, then an add and a divide
    assert np.all(np.abs(full[~outside & ~normal] - ref[~outside & ~normal]) <= np.finfo(F32).tiny)
    np.testing.assert_array_equal(fn(sx.tensor(np.repeat(x, 2))[::2]).numpy(), full)
    t = sx.tensor(x)
    t.sigmoid_() if name == "sigmoid" else F.silu(t, inplace=True)
    np.testing.assert_array_equal(t.numpy(), full)


@pytest.mark.parametrize("name", ["sin", "cos", "tan", "sinh", "expm1", "log2"])
def test_contiguous_inplace_and_strided_paths_agree(name):
    x = trig_inputs()[:30000] if name in ("sin", "cos", "tan") else RNG.uniform(0.1, 80, 30000).astype(F32)
    full = getattr(sx, name)(sx.tensor(x)).numpy()
    t = sx.tensor(x)
    getattr(t, name + "_")()
    np.testing.assert_array_equal(t.numpy(), full)
    strided = getattr(sx, name)(sx.tensor(np.repeat(x, 2))[::2]).numpy()
    np.testing.assert_array_equal(strided, full)


def test_float16_uses_the_float_formulas_with_the_large_argument_path():
    x = np.array([0.5, -3.0, 1000.0, 60000.0, np.inf], dtype=np.float16)
    ours = sx.sin(sx.tensor(x)).numpy()
    with np.errstate(all="ignore"):
        ref = np.sin(x.astype(np.float64)).astype(np.float16)
    np.testing.assert_allclose(ours.astype(np.float64), ref.astype(np.float64), rtol=2e-3, atol=1e-3)


def pairs(n: int):
    a = np.concatenate([log_uniform(RNG, 1e-30, 1e30, n), RNG.uniform(-100, 100, n).astype(F32)])
    b = np.concatenate([log_uniform(RNG, 1e-30, 1e30, n), RNG.uniform(-10, 10, n).astype(F32)])
    s = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 3e38, 1e-40], dtype=F32)
    sa, sb = np.meshgrid(s, s)
    return np.concatenate([a, sa.ravel()]), np.concatenate([b, sb.ravel()])


def test_remainder_float32_is_exact():
    a, b = pairs(20000)
    a = np.concatenate([a, (RNG.integers(-1000, 1000, 2000) * F32(0.1)).astype(F32)])
    b = np.concatenate([b, np.full(2000, 0.1, F32)])
    ours = (sx.tensor(a) % sx.tensor(b)).numpy()
    with np.errstate(all="ignore"):
        ref = np.mod(a, b)
    np.testing.assert_array_equal(ours, ref)
    # scalar on either side (the broadcast loops)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal((sx.tensor(a) % 2.5).numpy(), np.mod(a, F32(2.5)))
        np.testing.assert_array_equal((7.0 % sx.tensor(b)).numpy(), np.mod(F32(7.0), b))


def test_fmod_is_exact_with_the_sign_of_the_dividend():
    """fmod (C's remainder) against NumPy's, bit for bit (signed zeros included): float32 through its
    exact fast path and the std::fmod fallback, float64, and integers (which stay integers)."""
    a, b = pairs(20000)
    a = np.concatenate([a, F32([1e7, 123456.7, -4.0, 4.0, -1e-30, 5.0]), (RNG.integers(-1000, 1000, 2000) * F32(0.1))])
    b = np.concatenate([b, F32([0.1, 0.1, 2.0, -2.0, 1.0, np.inf]), np.full(2000, 0.1, F32)])
    with np.errstate(all="ignore"):
        for x, y in [(a, b), (a.astype(np.float64), b.astype(np.float64))]:
            ours = sx.fmod(sx.tensor(x), sx.tensor(y)).numpy()
            np.testing.assert_array_equal(ours, np.fmod(x, y))
            np.testing.assert_array_equal(np.signbit(ours), np.signbit(np.fmod(x, y)))
        np.testing.assert_array_equal(sx.tensor(a).fmod(2.5).numpy(), np.fmod(a, F32(2.5)))
    i = RNG.integers(-2**31, 2**31, 5000, dtype=np.int64)
    j = RNG.integers(1, 1000, 5000) * RNG.choice([-1, 1], 5000)
    for dt in (np.int32, np.int64):
        x, y = i.astype(dt), j.astype(dt)
        got = sx.fmod(sx.tensor(x), sx.tensor(y))
        assert got.dtype == getattr(sx, np.dtype(dt).name)
        np.testing.assert_array_equal(got.numpy(), np.fmod(x, y))
    with pytest.raises(RuntimeError, match="fmod.*division by zero"):
        sx.fmod(sx.tensor([1, 2]), sx.tensor([1, 0]))


def test_int32_division_ops_are_exact():
    """int32 //, % and fmod compute in double (exact for 32-bit operands): against NumPy's integer results
    over the whole range, every pairing of edge values (INT_MIN // -1 wraps to INT_MIN, as in NumPy and
    PyTorch), small divisors, a scalar on either side and strided operands."""
    lo, hi = np.iinfo(np.int32).min, np.iinfo(np.int32).max
    edge = np.array([lo, lo + 1, -(2**30) - 1, -65537, -7, -3, -2, -1, 1, 2, 3, 7, 65537, 2**30 + 1, hi - 1, hi])
    x = np.concatenate([np.repeat(edge, len(edge)), RNG.integers(lo, hi, 40000, endpoint=True)]).astype(np.int32)
    y = np.concatenate([np.tile(edge, len(edge)), RNG.integers(lo, hi, 20000, endpoint=True),
                        RNG.integers(-300, 300, 20000)]).astype(np.int32)
    y[y == 0] = 5
    sxx, sxy = sx.from_numpy(x), sx.from_numpy(y)
    with np.errstate(all="ignore"):
        for ours, ref in (((sxx // sxy), np.floor_divide(x, y)), ((sxx % sxy), np.remainder(x, y)),
                          (sx.fmod(sxx, sxy), np.fmod(x, y)), ((sxx[::3] % sxy[::3]), np.remainder(x[::3], y[::3])),
                          ((sxx // -7), np.floor_divide(x, np.int32(-7))), ((sxx % 10), np.remainder(x, np.int32(10))),
                          ((123456789 % sxy), np.remainder(np.int32(123456789), y))):
            assert ours.dtype == sx.int32
            np.testing.assert_array_equal(ours.numpy(), ref)
    with pytest.raises(RuntimeError, match="division by zero"):
        sx.tensor([1, 2], dtype=sx.int32) // sx.tensor([1, 0], dtype=sx.int32)


def test_atan2_float32_within_three_ulp():
    y, x = pairs(20000)
    ours = sx.atan2(sx.tensor(y), sx.tensor(x)).numpy()
    ref = np.arctan2(y.astype(np.float64), x.astype(np.float64))
    err = ulp_error(ours, ref)
    assert err.max() <= 3, (y[err.argmax()], x[err.argmax()], ours[err.argmax()], ref[err.argmax()])
    np.testing.assert_array_equal(np.signbit(ours[ref == 0]), np.signbit(ref[ref == 0]))


def test_pow_float32_within_one_ulp_and_specials_exact():
    # bases over the whole positive range, exponents that keep most results finite, integer powers,
    # results in the subnormal range, and every special pairing of base and exponent
    n = 20000
    x = log_uniform(RNG, 1e-30, 1e30, n, signed=False)
    y = RNG.uniform(-4, 4, n).astype(F32)
    xi = RNG.integers(1, 13, 2000).astype(F32)
    yi = RNG.integers(-6, 7, 2000).astype(F32)
    xs = np.repeat(SPECIAL, SPECIAL.size)
    ys = np.tile(np.concatenate([SPECIAL[:12], [3.0, -3.0, 0.5, 200.0, -200.0, -149.5, 1e30]]).astype(F32), SPECIAL.size)
    ys = ys[:xs.size]
    a = np.concatenate([x, xi, F32(2.0) + np.zeros(300, F32), xs])
    b = np.concatenate([y, yi, np.linspace(-160, -120, 300).astype(F32), ys])
    with np.errstate(all="ignore"):
        ref = np.power(a.astype(np.float64), b.astype(np.float64))
    for ours in [(sx.tensor(a) ** sx.tensor(b)).numpy(), (sx.tensor(a).t() ** sx.tensor(b).t()).numpy()]:
        err = ulp_error(ours, ref)
        assert err.max() <= 1, (a[err.argmax()], b[err.argmax()], ours[err.argmax()], ref[err.argmax()])
    whole = yi >= 0  # powers below 2^24: exact in float32
    np.testing.assert_array_equal((sx.tensor(xi[whole]) ** sx.tensor(yi[whole])).numpy(), np.power(xi[whole], yi[whole]))
    with np.errstate(all="ignore"):
        ref_r = np.power(F32(2.0), b.astype(np.float64))
    assert ulp_error((2.0 ** sx.tensor(b)).numpy(), ref_r).max() <= 1  # a number as the base


def test_softplus_and_logsigmoid_float32_within_ulp_limit_of_float64():
    # log(1 + e^-|z|) with the log1p of an argument in [0, 1] (no divide); e^-|z| underflows to subnormals
    # and to zero at the ends of the range.
    import sneppx_core.functional as F

    rng = np.random.default_rng(11)
    z = np.concatenate([SPECIAL, rng.uniform(-110, 110, 40000).astype(F32), rng.uniform(-8, 8, 40000).astype(F32),
                        log_uniform(rng, 1e-30, 30, 20000)])
    z64 = z.astype(np.float64)
    with np.errstate(all="ignore"):
        full = np.maximum(z64, 0) + np.log1p(np.exp(-np.abs(z64)))
    cases = (("softplus", F.softplus(sx.tensor(z)).numpy(), np.where(z64 > 20, z64, full)),  # identity above 20
             ("logsigmoid", F.logsigmoid(sx.tensor(-z)).numpy(), -full))
    for name, ours, ref in cases:
        err = ulp_error(ours, ref)
        worst = int(np.argmax(err))
        assert err[worst] <= 2, f"{name}: {err[worst]:.2f} ulp at {z[worst]!r} ({ours[worst]!r} vs {ref[worst]!r})"
