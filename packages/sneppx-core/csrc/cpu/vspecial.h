// Special functions of float arguments for the unary sheet's float kernels (float32, and float16 /
// bfloat16, which compute in float): branch-free, computed in double with arithmetic, sqrt and the
// double log and exp below, so the kernel loops vectorise, and rounded to float once (within a hair of
// the correctly rounded result). Each covers the arguments its *_out_of_range test leaves in; the
// kernels compute the others with the double formulas of ops/special_math.h, which also serve double
// tensors and CUDA.
#pragma once
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>

#include "cpu/vmath.h"
#include "ops/special_math.h"

namespace sx::cpu {

// x = 2^e m for a normal double x > 0, with m in [sqrt(1/2), sqrt(2)) (as nn_math.h's log_parts_normal:
// adding 1 - m0 to the bits carries into the exponent exactly when the mantissa is above sqrt(2)).
inline double log_split(double x, double& e) {
  constexpr uint64_t kM0 = 0x3fe6a09e667f3bcdull;  // sqrt(1/2)
  uint64_t ix = std::bit_cast<uint64_t>(x) + (0x3ff0000000000000ull - kM0);
  // the exponent field (< 2^11) as a double: 2^52 + k read as a double is exact, less 2^52 + 1023
  e = std::bit_cast<double>((ix >> 52) | 0x4330000000000000ull) - (4503599627370496.0 + 1023.0);
  return std::bit_cast<double>((ix & 0x000fffffffffffffull) + kM0);
}

// log(x) for a normal double x > 0: log m = 2 atanh(s) with s = (m - 1) / (m + 1), |s| < 0.172, by its
// series (atanh_tail), and e ln 2 with ln 2 in two parts (fdlibm's).
// ~1 ulp.
inline double vlog_d(double x) {
  double e, m = log_split(x, e);
  double s = (m - 1.0) / (m + 1.0), s2 = s * s;
  return e * 6.93147180369123816490e-01 + (2.0 * s + 2.0 * s * s2 * atanh_tail(s2) + e * 1.90821492927058770002e-10);
}

// The polynomial with coefficients c, the first the highest power's, as two Horner chains in t^2 (the
// even and the odd powers), which run side by side.
template <int N> inline double horner(double t, const double (&c)[N]) {
  double t2 = t * t, even = 0, odd = 0;
#pragma GCC unroll 32
  for (int i = 0; i < N; ++i) {
    if ((N - 1 - i) % 2 == 0) even = even * t2 + c[i];
    else odd = odd * t2 + c[i];
  }
  return even + odd * t;
}

// ---- lgamma for x > 0 (lgamma_out_of_range: x <= 0, inf and NaN). Below 8 the argument is lifted to
// z = x + 8 with lgamma(x) = lgamma(z) - log(x (x + 1) ... (x + 7)); then Stirling's series, whose
// first omitted term at z = 8 is below 1e-16. Near the zeros at 1 and 2 the two logs cancel to an
// absolute error of a few 1e-16, within 1e-8 relative of the result from 1 +- 1e-7 on; 1 and 2
// themselves give 0 exactly.
inline bool lgamma_out_of_range(float x) { return !(x > 0.0f && x < INFINITY); }
inline constexpr double kStirling[8] = {-3617.0 / 122400, 1.0 / 156,    -691.0 / 360360, 1.0 / 1188,
                                        -1.0 / 1680,      1.0 / 1260,   -1.0 / 360,      1.0 / 12};
inline float vlgamma(float x) {
  double v = x;
  bool lift = v < 8.0;
  double p = (v * (v + 1.0)) * ((v + 2.0) * (v + 3.0)) * ((v + 4.0) * (v + 5.0)) * ((v + 6.0) * (v + 7.0));
  double z = lift ? v + 8.0 : v;
  p = lift ? p : 1.0;
  double r = 1.0 / z;
  double series = horner(r * r, kStirling) * r;
  double lg = (z - 0.5) * vlog_d(z) - z + 0.91893853320467274178 + series - vlog_d(p);  // log(2 pi) / 2
  return float(v == 1.0 || v == 2.0 ? 0.0 : lg);
}

// ---- digamma for x > 0 (digamma_out_of_range: x <= 0, inf and NaN): lifted as lgamma,
// psi(x) = psi(x + 8) - sum_k<8 1 / (x + k) with the sum as one fraction (terms of one sign: no
// cancellation), then the asymptotic series (first omitted term at 8 below 2e-16).
inline bool digamma_out_of_range(float x) { return !(x > 0.0f && x < INFINITY); }
inline constexpr double kDigamma[8] = {-3617.0 / 8160, 1.0 / 12,   -691.0 / 32760, 1.0 / 132,
                                       -1.0 / 240,     1.0 / 252,  -1.0 / 120,     1.0 / 12};
inline float vdigamma(float x) {
  double v = x;
  bool lift = v < 8.0;
  double num = 1.0, den = v;  // sum_k 1 / (v + k) = num / den
#pragma GCC unroll 8
  for (int k = 1; k < 8; ++k) {
    num = num * (v + k) + den;
    den = den * (v + k);
  }
  double z = lift ? v + 8.0 : v;
  double r = 1.0 / z, r2 = r * r;
  double psi = vlog_d(z) - 0.5 * r - horner(r2, kDigamma) * r2;
  return float(lift ? psi - num / den : psi);
}

// ---- polygamma(n, x) = (-1)^(n+1) n! zeta(n + 1, x) for x > 0 and 1 <= n <= 16 (polygamma_out_of_range:
// other n, n = 0 included, and other x take the double formula). zeta(s, x) = sum_k<8 (x + k)^-s +
// zeta(s, z), z = x + 8, the tail by Euler-Maclaurin: z^(1-s) / (s - 1) + z^-s / 2 +
// sum_j<=12 s (s + 1) ... (s + 2j - 2) z^(-s-2j+1) B_2j / (2j)! (its terms shrink by at most 0.42 each at
// z = 8 and s = 17). The powers are binary powers of reciprocals; every term is positive but the tail's.
inline bool polygamma_out_of_range(float x, float n) {
  return !(x > 0.0f && x < INFINITY) || !(n >= 1.0f && n <= 16.0f);
}
inline double pow_int(double b, int e) {  // b^e for 0 <= e < 32, by squaring
  double p = 1.0;
#pragma GCC unroll 5
  for (int bit = 0; bit < 5; ++bit) {
    p = (e >> bit) & 1 ? p * b : p;
    b *= b;
  }
  return p;
}
inline constexpr auto kZetaInvA = [] {  // B_2j / (2j)!
  std::array<double, 12> a{SX_ZETA_A};
  for (double& v : a) v = 1.0 / v;
  return a;
}();
inline float vpolygamma(float x, float n) {
  const int s = int(n) + 1;
  const double sd = double(s);
  double v = x, sum = 0.0;
#pragma GCC unroll 8
  for (int k = 0; k < 8; ++k) sum += pow_int(1.0 / (v + k), s);
  double z = v + 8.0, r = 1.0 / z, zs = pow_int(r, s);
  double tail = 0.0, rising = sd, rp = r;  // rising = s (s + 1) ... (s + 2j - 2), rp = z^-(2j-1)
#pragma GCC unroll 12
  for (int j = 0; j < 12; ++j) {
    tail += rising * rp * kZetaInvA[j];
    rising *= (sd + 2 * j + 1) * (sd + 2 * j + 2);
    rp *= r * r;
  }
  double zeta = sum + zs * (z / (sd - 1.0) + 0.5 + tail);
  double fact = 1.0;  // n!
#pragma GCC unroll 16
  for (int k = 2; k <= 16; ++k) fact *= k < s ? double(k) : 1.0;
  return float((s % 2 == 0 ? fact : -fact) * zeta);
}

// ---- i0 for |x| <= 700 (i0_out_of_range: beyond, inf and NaN): Cephes' two Chebyshev series
// (ops/special_math.h) in one Clenshaw recurrence whose coefficients each lane picks by its range (the
// shorter table padded with leading zeros, which leave the recurrence unchanged), times exp(|x|).
inline bool i0_out_of_range(float x) { return !(std::fabs(x) <= 700.0f); }
inline constexpr double kI0A[30] = {SX_I0_A};
inline constexpr double kI0B[30] = {0, 0, 0, 0, 0, SX_I0_B};
inline float vi0(float x) {
  double a = std::fabs(double(x));
  bool big = a > 8.0;
  double t = big ? 32.0 / (big ? a : 8.0) - 2.0 : 0.5 * a - 2.0;
  double b0 = big ? kI0B[0] : kI0A[0], b1 = 0, b2 = 0;
#pragma GCC unroll 30
  for (int i = 1; i < 30; ++i) {
    b2 = b1;
    b1 = b0;
    b0 = t * b1 - b2 + (big ? kI0B[i] : kI0A[i]);
  }
  double r = 0.5 * (b0 - b2);
  r = big ? r / std::sqrt(a) : r;
  return float(vexp_normal(a) * r);
}

// ---- erfc for |x| <= 4 (erfc_out_of_range: beyond, where <cmath>'s erfc in double takes over, and NaN):
// exp(-x^2) erfcx(|x|) (2 minus that for negative x), erfcx a degree-22 polynomial in |x| - 2 fitted in
// float64 on [0, 4] (relative error 2e-12; tools/fit_erfinv.py prints it): no cancellation anywhere, where
// 1 - erf in float lost every digit of the tail (erfc(5) was 0 in float32, erfc(9) 0 in float64).
inline bool erfc_out_of_range(float x) { return !(std::fabs(x) <= 4.0f); }
inline constexpr double kErfcx[23] = {
    7.13561501845251123e-13, -3.17860660739581457e-12, -1.77320881125429265e-12, 6.79475944060104003e-12,
    1.24151327047541795e-10, -5.13542392505965135e-10, 1.28289203273877893e-09, -5.25780419939796996e-09,
    2.37740150140143088e-08, -9.22339786475156370e-08, 3.44102872605429352e-07, -1.27717520940547974e-06,
    4.62902722681700938e-06, -1.62960706491392127e-05, 5.57277065996898346e-05, -1.84776933837720524e-04,
    5.92470251103640482e-04, -1.83166475963707741e-03, 5.44073848207242937e-03, -1.54606376890626257e-02,
    4.18027526082174888e-02, -1.06796461856939029e-01, 2.55395676310440078e-01};
inline float verfc(float x) {
  double v = x, a = std::fabs(v);
  double r = vexp_normal(-a * a) * horner(a - 2.0, kErfcx);
  return float(v < 0 ? 2.0 - r : r);
}

// ---- erfinv for |y| <= 0.9966 (erfinv_out_of_range: the tails beyond, +-1, |y| > 1 and NaN, which
// erfinv_rest computes): erfinv(y) = y P(w - 2.5), w = -log((1 - y) (1 + y)) <= 4.993 (the product is
// exact in double for a float y), P of degree 12 fitted to erfinv in float64. The log is e ln 2 + f Q(f),
// f = m - 1 (log_split), Q of degree 14 fitted to log1p(f) / f: no division. The tails take a second fit,
// of degree 14 in w - 10.8 on [4.9, 16.7]. tools/fit_erfinv.py computes the three tables (relative
// errors 4e-13, 4e-11 and 1.2e-10).
inline bool erfinv_out_of_range(float y) { return !(std::fabs(y) <= 0.9966f); }
inline constexpr double kLog1pRatio[15] = {
    4.38689084994487236e-02, -8.56799508926262693e-02, 8.74133738130643406e-02, -8.29005921417051983e-02,
    8.95148556401029194e-02, -9.99025980022970744e-02, 1.11198513637035951e-01, -1.25009268535997697e-01,
    1.42854340354698739e-01, -1.66666360255122686e-01, 2.00000043617219680e-01, -2.50000003900463619e-01,
    3.33333333069310289e-01, -4.99999999986602939e-01, 1.00000000000027445e+00};
inline constexpr double kErfinvCentral[13] = {
    -2.05302602689786017e-11, 1.22940802806097021e-10, 8.20057114326606046e-10, -1.08528760141485652e-08,
    1.37805506574492273e-08, 4.78635261921426863e-07, -3.41740447773334474e-06, -4.99585510427872940e-06,
    2.18251074304531042e-04, -1.25270811332125792e-03, -4.17731803862508855e-03, 2.46640276794680507e-01,
    1.50140935113072849e+00};
inline constexpr double kErfinvTail[15] = {
    -1.19600591332643191e-16, 1.20756208327295221e-15, 7.54989839596058504e-15, -1.77332742469536661e-13,
    1.95122767925409076e-12, -2.39286594322396487e-11, 2.41237744280281700e-10, -1.46946459472874918e-09,
    -3.52712526601017519e-09, 3.06434977698434437e-07, -7.16538316182466222e-06, 1.46618906811404122e-04,
    -3.42642404000509035e-03, 1.53002475272878830e-01, 3.12041895723217966e+00};
inline float verfinv(float y) {
  double v = y, e;
  double f = log_split((1.0 - v) * (1.0 + v), e) - 1.0;
  double w = -(e * 0.69314718055994530942 + f * horner(f, kLog1pRatio));
  return float(horner(w - 2.5, kErfinvCentral) * v);
}
inline double erfinv_rest(double y) {
  if (!(std::fabs(y) < 1.0)) return spm::erfinv(y);  // +-inf at +-1, NaN beyond
  return horner(-std::log((1.0 - y) * (1.0 + y)) - 10.8, kErfinvTail) * y;
}

}  // namespace sx::cpu
