// Branch-free float math that the compiler vectorises (no calls in the loop body).
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <utility>

namespace sx::cpu {

// Cephes' expf polynomial: exp(r) for r in [-ln2/2, ln2/2].
inline float exp_poly(float r) {
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  return p * r * r + r + 1.0f;
}

// y * 2^n for n in [-252, 254] in two exact steps, so that results in the subnormal range and
// near the overflow threshold come out right.
inline float ldexp_fast(float y, int32_t n) {
  int32_t n1 = n >> 1, n2 = n - n1;
  return y * std::bit_cast<float>((n1 + 127) << 23) * std::bit_cast<float>((n2 + 127) << 23);
}

// exp with range reduction to [-ln2/2, ln2/2] and a degree-6 polynomial; ~1 ulp, subnormal results
// down to exp(-104) and inf from just above log(FLT_MAX).
inline float vexp(float x) {
  float xc = x < -104.0f ? -104.0f : (x > 89.0f ? 89.0f : x);
  float n = std::floor(xc * 1.44269504088896341f + 0.5f);
  float r = xc - n * 0.693359375f + n * 2.12194440e-4f;
  float res = ldexp_fast(exp_poly(r), int32_t(n));
  res = x < -104.0f ? 0.0f : res;
  return x != x ? x : res;
}

// exp of the arguments whose result is a normal float, kExpLo <= x <= kExpHi: vexp's steps without its
// clamps, and the scale by 2^n as one add to the exponent field (there the same value, so the same bits,
// in 20 vector instructions instead of 33). The caller computes the other arguments (NaN, infinities,
// subnormal or overflowing results) itself: exp_out_of_range.
inline constexpr float kExpLo = -86.0f, kExpHi = 88.0f;
inline bool exp_out_of_range(float x) { return !(x >= kExpLo && x <= kExpHi); }
inline float vexp_normal(float x) {
  float n = std::floor(x * 1.44269504088896341f + 0.5f);
  float r = x - n * 0.693359375f + n * 2.12194440e-4f;
  return std::bit_cast<float>(std::bit_cast<uint32_t>(exp_poly(r)) + (uint32_t(int32_t(n)) << 23));
}

// sum_{k=2..Deg} r^(k-2) / k!, the Taylor series of (e^r - 1 - r) / r^2, by Horner's rule from 1/Deg!
// down to 1/2! (each 1/k! the correctly rounded quotient, as a literal 1.0 / k! would be): the double
// exp and vpow finish it in their own ways.
template <int Deg>
inline double exp_series_tail(double r) {
  constexpr auto inv_fact = [](int k) {
    double f = 1.0;
    for (int i = 2; i <= k; ++i) f *= i;
    return 1.0 / f;
  };
  double p = inv_fact(Deg);
  [&]<int... K>(std::integer_sequence<int, K...>) {
    ((p = p * r + inv_fact(Deg - 1 - K)), ...);
  }(std::make_integer_sequence<int, Deg - 2>{});
  return p;
}

// The double version of vexp_normal, for kExpLoD <= x <= kExpHiD (results from 3.3e-308, normal, to
// 8.2e307): n = round(x / ln2) by the 1.5 * 2^52 shift, whose low bits then hold n (AVX2 has no
// double -> int64 conversion); r = x - n ln2 with ln2 in two parts (fdlibm's: n * kLn2Hi is exact);
// exp(r) by its Taylor series to degree 13 (truncation below 5e-18 on |r| <= ln2 / 2), and 2^n added
// to the exponent field. Within 1 ulp (tested against long double); the caller computes the other
// arguments itself (Exp::exact in ops/unary_defs.h).
inline constexpr double kExpLoD = -708.0, kExpHiD = 709.0;
inline bool exp_out_of_range(double x) { return !(x >= kExpLoD && x <= kExpHiD); }
inline double vexp_normal(double x) {
  constexpr double kShift = 6755399441055744.0;  // 1.5 * 2^52
  const double t = x * 1.4426950408889634074 + kShift;
  const double n = t - kShift;
  const double r = (x - n * 6.93147180369123816490e-01) - n * 1.90821492927058770002e-10;
  const double e = 1.0 + (r + r * r * exp_series_tail<13>(r));
  return std::bit_cast<double>(std::bit_cast<uint64_t>(e) + (std::bit_cast<uint64_t>(t) << 52));
}

// tanh as a rational function (odd degree-13 over even degree-6), clamped where it saturates.
inline float vtanh(float x) {
  const float c = 7.90531110763549805f;
  float xc = x < -c ? -c : (x > c ? c : x);
  float x2 = xc * xc;
  float p = -2.76076847742355e-16f;
  p = p * x2 + 2.00018790482477e-13f;
  p = p * x2 + -8.60467152213735e-11f;
  p = p * x2 + 5.12229709037114e-08f;
  p = p * x2 + 1.48572235717979e-05f;
  p = p * x2 + 6.37261928875436e-04f;
  p = p * x2 + 4.89352455891786e-03f;
  p = p * xc;
  float q = 1.19825839466702e-06f;
  q = q * x2 + 1.18534705686654e-04f;
  q = q * x2 + 2.26843463243900e-03f;
  q = q * x2 + 4.89352518554385e-03f;
  float res = p / q;
  res = std::fabs(xc) < 0.0004f ? xc : res;
  return x != x ? x : res;
}

inline float vsigmoid(float x) { return 1.0f / (1.0f + vexp(-x)); }

// exp(r) - 1 for r in [-ln2/2, ln2/2] (the polynomial of exp_poly without its leading 1).
inline float expm1_poly(float r) {
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  return p * r * r + r;
}

// 2^x: x = n + r with |r| <= 1/2 (exact), 2^r = exp(r ln2); subnormal results and overflow to inf.
// The clamp is max/min (which keep a NaN x, and the NaN then runs through every step), so loops
// vectorise it to two instructions.
inline float vexp2(float x) {
  float xc = std::min(std::max(x, -151.0f), 129.0f);
  float t = xc + 12582912.0f;  // 1.5 * 2^23: rounds to an integer held in the low mantissa bits
  float n = t - 12582912.0f;
  int32_t ni = std::bit_cast<int32_t>(t) - 0x4B400000;
  float y = expm1_poly((xc - n) * 0.693147180559945309f) + 1.0f;
  return ldexp_fast(y, ni);
}

// exp(x) - 1: x = n ln2 + r as in vexp, then 2^n (expm1(r) + 1) - 1 arranged so that no digits are
// lost for small n; exactly -1 below -88, inf above the overflow threshold.
inline float vexpm1(float x) {
  float xc = x < -88.0f ? -88.0f : (x > 89.0f ? 89.0f : x);
  float t = xc * 1.44269504088896341f + 12582912.0f;
  float n = t - 12582912.0f;
  int32_t ni = std::bit_cast<int32_t>(t) - 0x4B400000;
  float r = xc - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  float em = expm1_poly(r);
  int32_t nc = ni < -126 ? -126 : (ni > 24 ? 24 : ni);
  float s = std::bit_cast<float>((nc + 127) << 23);  // 2^n for the branch where it is exact
  float near = s * em + (s - 1.0f);
  float far = ldexp_fast(em + 1.0f, ni) - 1.0f;
  float res = ni > 24 ? far : near;
  res = x == 0.0f ? x : res;  // keeps the sign of zero
  return x != x ? x : res;
}

// ---- sin, cos, tan: x = j pi/2 + r with |r| <= pi/4, reduced in float by three fmas with pi/2 split
// into three floats (72 bits). The first step is exact (x and j * P1 are multiples of the same power
// of two near each other) and each later fma rounds its exact result once, so r is off by a few of
// its own roundings plus j times the 1e-23 left of the split; for |x| < kTrigMax that is far below an
// ulp of r even at the floats closest to multiples of pi/2 (checked on every float below 2^14: the
// same largest errors as with the reduction in double, sin and cos 1.52 ulp, tan 2.75). Larger, infinite
// and NaN arguments give an unspecified value and are left to the caller (trig_out_of_range), which
// computes them with <cmath> in double.
inline constexpr float kTrigMax = 16384.0f;  // 2^14: past it j's product with 2/pi rounds too coarsely for tan
inline bool trig_out_of_range(float x) { return !(std::fabs(x) < kTrigMax); }

inline float trig_reduce(float x, int32_t& q) {
  float j = std::nearbyint(x * 0.636619772367581343f);
  float r = std::fma(-j, 1.5707963705062866f, x);
  r = std::fma(-j, -4.371138828673793e-08f, r);
  r = std::fma(-j, -1.7151245100058819e-15f, r);
  q = int32_t(j) & 3;
  return r;
}
// sin(r) and cos(r) for |r| <= pi/4 (Cephes' sinf/cosf polynomials).
inline float sin_poly(float r) {
  float z = r * r;
  float p = -1.9515295891e-4f;
  p = p * z + 8.3321608736e-3f;
  p = p * z - 1.6666654611e-1f;
  return p * z * r + r;
}
inline float cos_poly(float r) {
  float z = r * r;
  float p = 2.443315711809948e-5f;
  p = p * z - 1.388731625493765e-3f;
  p = p * z + 4.166664568298827e-2f;
  return p * z * z - 0.5f * z + 1.0f;
}
// sin(j pi/2 + r) for q = j mod 4 (cos is the same with q + 1).
inline float sincos_quadrant(float r, int32_t q) {
  float v = (q & 1) ? cos_poly(r) : sin_poly(r);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(v) ^ (uint32_t(q & 2) << 30));
}
inline float vsin(float x) {
  int32_t q;
  float r = trig_reduce(x, q);
  float res = sincos_quadrant(r, q);
  return std::fabs(x) < 2.44140625e-4f ? x : res;  // |x| < 2^-12: sin(x) rounds to x
}
inline float vcos(float x) {
  int32_t q;
  float r = trig_reduce(x, q);
  return sincos_quadrant(r, q + 1);
}
inline float vtan(float x) {
  int32_t q;
  float r = trig_reduce(x, q);
  float z = r * r;
  float p = 9.38540185543e-3f;  // Cephes' tanf polynomial on |r| <= pi/4
  p = p * z + 3.11992232697e-3f;
  p = p * z + 2.44301354525e-2f;
  p = p * z + 5.34112807005e-2f;
  p = p * z + 1.33387994085e-1f;
  p = p * z + 3.33331568548e-1f;
  float t = p * z * r + r;
  float res = (q & 1) ? -1.0f / t : t;
  return std::fabs(x) < 2.44140625e-4f ? x : res;
}

// ---- asin, acos, atan (Cephes' asinf/atanf polynomials). asin(a) for a > 1/2 is
// pi/2 - 2 asin(sqrt((1 - a) / 2)); |x| > 1 gives NaN (the square root of a negative number).
inline constexpr float kPi4Hi = 0.785398185253143310546875f;  // pi/4 = kPi4Hi + kPi4Lo
inline constexpr float kPi4Lo = -2.1855695e-8f;
inline float asin_poly(float s, float z) {  // asin(s) for z = s^2 <= 1/4
  float p = 4.2163199048e-2f;
  p = p * z + 2.4181311049e-2f;
  p = p * z + 4.5470025998e-2f;
  p = p * z + 7.4953002686e-2f;
  p = p * z + 1.6666752422e-1f;
  return p * z * s + s;
}
inline float vasin(float x) {
  float a = std::fabs(x);
  bool big = a > 0.5f;
  float z = big ? 0.5f * (1.0f - a) : a * a;
  float s = big ? std::sqrt(z) : a;
  float p = asin_poly(s, z);
  float res = big ? ((kPi4Hi - p) + kPi4Lo) * 2.0f : p;
  res = std::copysign(res, x);
  return x != x ? x : res;
}
inline float vacos(float x) {
  float a = std::fabs(x);
  bool big = a > 0.5f;
  float z = big ? 0.5f * (1.0f - a) : a * a;
  float s = big ? std::sqrt(z) : a;
  float p = asin_poly(s, z);
  float res_big = x > 0.0f ? 2.0f * p : ((2.0f * kPi4Hi - p) + 2.0f * kPi4Lo) * 2.0f;
  float res = big ? res_big : (2.0f * kPi4Hi - std::copysign(p, x)) + 2.0f * kPi4Lo;
  return x != x ? x : res;
}
// atan: |x| reduced to [0, tan(pi/8)] by atan(a) = pi/4 + atan((a - 1) / (a + 1)) or pi/2 - atan(1 / a).
inline float atan_core(float a) {  // a >= 0 (or NaN)
  bool big = a > 2.414213562373095f, mid = a > 0.4142135623730950f;
  float y0 = big ? 1.57079632679489662f : (mid ? 0.78539816339744831f : 0.0f);
  float t = big ? -1.0f / a : (mid ? (a - 1.0f) / (a + 1.0f) : a);
  float z = t * t;
  float p = 8.05374449538e-2f;
  p = p * z - 1.38776856032e-1f;
  p = p * z + 1.99777106478e-1f;
  p = p * z - 3.33329491539e-1f;
  return p * z * t + t + y0;
}
inline float vatan(float x) {
  float res = std::copysign(atan_core(std::fabs(x)), x);
  return x != x ? x : res;
}
// (atanh(s) / s - 1) / s^2 = 1/3 + s^2/5 + ... + s^18/21 for s2 = s^2, by Horner's rule; for |s| < 0.172 (the
// mantissa range of a log about sqrt(2)) the omitted terms are below 1e-18 of atanh(s) / s.
inline double atanh_tail(double s2) {
  double q = 1.0 / 21;
  q = q * s2 + 1.0 / 19;
  q = q * s2 + 1.0 / 17;
  q = q * s2 + 1.0 / 15;
  q = q * s2 + 1.0 / 13;
  q = q * s2 + 1.0 / 11;
  q = q * s2 + 1.0 / 9;
  q = q * s2 + 1.0 / 7;
  q = q * s2 + 1.0 / 5;
  return q * s2 + 1.0 / 3;
}
// x ** y for x a positive normal float and y finite (pow_out_of_range: the others go to <cmath>),
// evaluated in double: log2 x from x's exponent and an atanh series for its mantissa, then 2^(y log2 x)
// from a polynomial. The double result is within about 1e-15 of the exact power, so its one rounding
// to float (which also gives subnormal results, 0 and inf) is within a hair of half an ulp.
inline bool pow_out_of_range(float x, float y) { return !(x >= 1.17549435e-38f && x < INFINITY) || !(std::fabs(y) < INFINITY); }
inline float vpow(float x, float y) {
  int32_t xb = std::bit_cast<int32_t>(x);
  int32_t e = (xb >> 23) - 127;
  float mf = std::bit_cast<float>((xb & 0x7fffff) | 0x3f800000);  // x = mf 2^e, mf in [1, 2)
  bool high = mf > 1.41421356f;
  mf = high ? 0.5f * mf : mf;  // now in [sqrt(1/2), sqrt(2)]
  e = high ? e + 1 : e;
  double m = double(mf), sd = (m - 1.0) / (m + 1.0), s2 = sd * sd;
  double q = atanh_tail(s2) * s2 + 1.0;  // ln m = 2 s (1 + s^2/3 + s^4/5 + ...), |s| < 0.172
  double t = double(y) * (double(e) + 2.0 * sd * q * 1.4426950408889634);  // y log2 x
  t = t < -1000.0 ? -1000.0 : (t > 1000.0 ? 1000.0 : t);
  constexpr double kRound = 6755399441055744.0;  // 1.5 * 2^52: adding it rounds to an integer
  double tn = t + kRound, n = tn - kRound, g = (t - n) * 0.6931471805599453;  // 2^(t - n) = e^g, |g| <= 0.35
  double p = exp_series_tail<12>(g);  // e^g to degree 12
  p = p * g + 1.0;
  p = p * g + 1.0;
  int64_t ni = std::bit_cast<int64_t>(tn) - std::bit_cast<int64_t>(kRound);
  return float(p * std::bit_cast<double>((ni + 1023) << 52));
}

// atan2(y, x) for finite arguments not both zero (atan2_out_of_range: the others go to <cmath>).
inline bool atan2_out_of_range(float y, float x) {
  return !(std::fabs(x) < INFINITY && std::fabs(y) < INFINITY) || (x == 0.0f && y == 0.0f);
}
inline float vatan2(float y, float x) {
  float ay = std::fabs(y), ax = std::fabs(x);
  bool steep = ay > ax;
  float hi = steep ? ay : ax, lo = steep ? ax : ay;
  float a = atan_core(lo / (hi > 0.0f ? hi : 1.0f));
  a = steep ? 1.57079632679489662f - a : a;
  a = x < 0.0f ? 3.14159265358979324f - a : a;
  return std::copysign(a, y);
}

// ---- sinh, cosh from exp(|x|), or exp(|x| / 2)^2 / 2 where exp(|x|) overflows but the result does not.
inline float vsinh(float x) {
  float a = std::fabs(x);
  float z = x * x;
  float p = 2.03721912945e-4f;  // Cephes' sinhf polynomial on |x| < 1
  p = p * z + 8.33028376239e-3f;
  p = p * z + 1.66667160211e-1f;
  float small = p * z * x + x;
  float e = vexp(a < 88.0f ? a : 88.0f);
  float h = vexp(0.5f * a);
  float large = a > 88.0f ? (0.5f * h) * h : 0.5f * e - 0.5f / e;
  float res = a < 1.0f ? small : std::copysign(large, x);
  return x != x ? x : res;
}
inline float vcosh(float x) {
  float a = std::fabs(x);
  float e = vexp(a < 88.0f ? a : 88.0f);
  float h = vexp(0.5f * a);
  float res = a > 88.0f ? (0.5f * h) * h : 0.5f * e + 0.5f / e;
  return x != x ? a : res;
}

template <typename T> inline T sexp(T x) { return std::exp(x); }
template <> inline float sexp<float>(float x) { return vexp(x); }
template <typename T> inline T stanh(T x) { return std::tanh(x); }
template <> inline float stanh<float>(float x) { return vtanh(x); }
template <typename T> inline T ssigmoid(T x) { return T(1) / (T(1) + std::exp(-x)); }
template <> inline float ssigmoid<float>(float x) { return vsigmoid(x); }

}  // namespace sx::cpu
