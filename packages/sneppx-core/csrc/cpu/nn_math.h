// Branch-free float math for the nn kernels (log, log1p, erf), written so that loops calling
// them vectorise; double versions forward to <cmath>. Complements cpu/vmath.h.
#pragma once
#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "cpu/vmath.h"

namespace sx::cpu {

// exp for the softmax-style arguments x - max (x <= 88): rounding by the 1.5 * 2^23 trick, 2^n built
// from the integer bits, the Cephes polynomial; exactly 0 below -87.3 (masked scores), NaN stays NaN.
// Fewer vector operations than vexp, which also handles overflow to inf.
// e^x for x already in [-87.3, 88.3] (the callers clamp): the steps vexp_neg and verf share.
inline float vexp_in_range(float x) {
  float t = x * 1.44269504088896341f + 12582912.0f;
  float n = t - 12582912.0f;
  float scale = std::bit_cast<float>((std::bit_cast<uint32_t>(t) + 127u) << 23);
  float r = x - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  return exp_poly(r) * scale;
}
inline float vexp_neg(float x) {
  float xc = x < -87.3f ? -87.3f : x;
  xc = xc > 88.3f ? 88.3f : xc;
  float y = vexp_in_range(xc);
  return x < -87.3f ? 0.0f : y;
}
template <typename T> inline T sexp_neg(T x) { return std::exp(x); }
template <> inline float sexp_neg<float>(float x) { return vexp_neg(x); }

// e^-x for sigmoid and silu where x >= -kExpHi (their results are normal floats there): -x clamped
// below at kExpLo, where 1 + e^-x is already 1 in float, so the clamp changes no result. The op kernels
// compute x < -kExpHi and NaN (sigmoid_out_of_range) in double.
inline float exp_neg_sigmoid(float x) { return vexp_normal(std::max(-x, kExpLo)); }
inline bool sigmoid_out_of_range(float x) { return !(x >= -kExpHi); }
inline float vsigmoid_normal(float x) { return 1.0f / (1.0f + exp_neg_sigmoid(x)); }
inline float vsilu_normal(float x) { return x / (1.0f + exp_neg_sigmoid(x)); }

// x = 2^e (1 + f) with f in [sqrt(1/2) - 1, sqrt(2) - 1) and log(1 + f) = f + y (Cephes logf
// polynomial; y includes the -f^2/2 term).
struct LogParts {
  float e, f, y;
};
// Every step is a single rounding or an explicit fma, so that the result does not depend on where the
// compiler would otherwise contract a multiply and an add (it did so differently per caller).
inline LogParts log_poly(float e, float m) {
  float f = m - 1.0f, z = f * f;
  float y = 7.0376836292e-2f;
  y = std::fma(y, f, -1.1514610310e-1f);
  y = std::fma(y, f, 1.1676998740e-1f);
  y = std::fma(y, f, -1.2420140846e-1f);
  y = std::fma(y, f, 1.4249322787e-1f);
  y = std::fma(y, f, -1.6668057665e-1f);
  y = std::fma(y, f, 2.0000714765e-1f);
  y = std::fma(y, f, -2.4999993993e-1f);
  y = std::fma(y, f, 3.3333331174e-1f);
  y = std::fma(y * f, z, -0.5f * z);
  return {e, f, y};
}
// Any x > 0: subnormal x are lifted by 2^23 first; a mantissa above sqrt(2) is halved.
inline LogParts log_parts(float x) {
  bool sub = x < FLT_MIN;
  float xs = sub ? x * 8388608.0f : x;
  int32_t ix = std::bit_cast<int32_t>(xs);
  int32_t e = ((ix >> 23) & 0xff) - 127 - (sub ? 23 : 0);
  float m = std::bit_cast<float>((ix & 0x007fffff) | 0x3f800000);
  bool big = m > 1.41421356f;
  m = big ? m * 0.5f : m;
  e = big ? e + 1 : e;
  return log_poly(float(e), m);
}
// The same parts of a normal x > 0 by integer steps alone: adding 1 - m0 to the bits carries into
// the exponent exactly when the mantissa is above sqrt(2) (m0 = 0x3f3504f4, the float after
// sqrt(2) / 2), and the low bits plus m0 give the mantissa, halved where there was a carry.
inline LogParts log_parts_normal(float x) {
  int32_t ix = std::bit_cast<int32_t>(x) + (0x3f800000 - 0x3f3504f4);
  float m = std::bit_cast<float>((ix & 0x007fffff) + 0x3f3504f4);
  return log_poly(float((ix >> 23) - 127), m);
}
// The special values shared by the logs: log(0) = -inf, log(x < 0) = NaN, log(inf) = inf, NaN stays.
inline float log_special(float x, float r) {
  r = x == 0.0f ? -INFINITY : r;
  r = x < 0.0f ? NAN : r;
  r = x == INFINITY ? x : r;
  return x != x ? x : r;
}

// log(2^e (1 + f)) = f + y + e ln 2, ln 2 split in two (for finite x > 0).
inline float log_of(const LogParts& p) {
  return std::fma(0.693359375f, p.e, p.f + std::fma(-2.12194440e-4f, p.e, p.y));
}
// log2(x) = e + (f + y) log2(e), with log2(e) = 1 + 0.44269504 so that f + y enters exactly.
inline float log2_of(const LogParts& p) {
  const float l2ea = 0.44269504088896340736f;
  return std::fma(p.f, l2ea, std::fma(p.y, l2ea, p.y)) + p.f + p.e;
}
// log10(x) = (f + y) log10(e) + e log10(2), each constant split in two.
inline float log10_of(const LogParts& p) {
  const float l10ea = 4.3359375e-1f, l10eb = 7.00731903251827651129e-4f;
  const float l102a = 3.0078125e-1f, l102b = 2.48745663981195213739e-4f;
  float t = std::fma(p.e, l102b, std::fma(p.f, l10eb, p.y * l10eb));
  return std::fma(p.e, l102a, std::fma(p.f, l10ea, std::fma(p.y, l10ea, t)));
}

// Natural log, log2 and log10; ~1 ulp.
inline float vlog(float x) { return log_special(x, log_of(log_parts(x))); }
inline float vlog2(float x) { return log_special(x, log2_of(log_parts(x))); }
inline float vlog10(float x) { return log_special(x, log10_of(log_parts(x))); }

// The same logs of a normal float (FLT_MIN <= x <= FLT_MAX), bit for bit, without the subnormal
// lift and the special values: the op kernels compute the other arguments (zero, subnormal,
// negative, inf, NaN) in double (log_out_of_range).
// (One unsigned compare: the bits of a normal x > 0 lie in [0x00800000, 0x7f7fffff].)
inline bool log_out_of_range(float x) { return std::bit_cast<uint32_t>(x) - 0x00800000u >= 0x7f000000u; }
inline float vlog_normal(float x) { return log_of(log_parts_normal(x)); }
inline float vlog2_normal(float x) { return log2_of(log_parts_normal(x)); }
inline float vlog10_normal(float x) { return log10_of(log_parts_normal(x)); }

// log1p(w) for w > -1: log(1 + w) corrected for the rounding of 1 + w.
inline float vlog1p(float w) {
  float u = 1.0f + w;
  float d = u - 1.0f;
  float r = vlog(u);
  r = d == 0.0f ? w : r * (w / d);
  return w == INFINITY ? w : r;
}

// log1p(w) for w in [0, 1] or NaN (softplus's log(1 + e^-|z|)): u = 1 + w lies in [1, 2], so the
// special values of vlog and its divide are not needed. log(1 + w) = log(u) + log(1 + c / u) with
// c = w - (u - 1) the rounding of 1 + w (|c| <= 2^-24), taken as c / u with 1 / u from a linear guess
// and one Newton step (relative error below (u - 1)^2 / 4, and c / u matters only where u is near 1).
inline float vlog1p_unit(float w) {
  float u = 1.0f + w;
  float c = w - (u - 1.0f);
  float r = 1.5f - 0.5f * u;
  r = r * (2.0f - u * r);
  float l = log_of(log_parts_normal(u)) + c * r;
  return w != w ? w : l;
}

// softplus(z) = log(1 + e^z) = max(z, 0) + log1p(e^-|z|) for float32. e^-|z| through the normal-range
// exp: below kExpLo (|z| > 86, where log1p(w) = w in float) it is e^(20 - |z|) e^-20, one rounding into
// the subnormals, and 0 below e^-106; NaN stays NaN.
inline float vsoftplus(float z) {
  float a = std::fabs(z);
  bool tiny = -a < kExpLo;
  float e = vexp_normal(std::max(tiny ? 20.0f - a : -a, kExpLo));
  float l = tiny ? e * 2.06115362e-9f : vlog1p_unit(e);
  float r = std::max(z, 0.0f) + l;
  return z != z ? z : r;
}

// erf as x P(x^2) / Q(x^2), the rational fit of degrees 13 and 8 on [-4, 4] that Eigen and XLA use
// for float (outside it erf is +-1 in float): one division and eleven multiply-adds, where Abramowitz &
// Stegun 7.1.26 (used before) took an exponential, a division and a polynomial. The fit is within
// 6.5e-8 of erf, and within 4e-7 evaluated in float (A&S: 5e-7, with no relative accuracy near 0).
// The clamp keeps NaN (max, then min, with x first).
inline float verf(float x) {
  const float c = std::min(std::max(x, -4.0f), 4.0f), z = c * c;
  float p = -2.72614225801306e-10f;
  p = std::fma(p, z, 2.77068142495902e-08f);
  p = std::fma(p, z, -2.10102402082508e-06f);
  p = std::fma(p, z, -5.69250639462346e-05f);
  p = std::fma(p, z, -7.34990630326855e-04f);
  p = std::fma(p, z, -2.95459980854025e-03f);
  p = std::fma(p, z, -1.60960333262415e-02f);
  float q = -1.45660718464996e-05f;
  q = std::fma(q, z, -2.13374055278905e-04f);
  q = std::fma(q, z, -1.68282697438203e-03f);
  q = std::fma(q, z, -7.37332916720468e-03f);
  q = std::fma(q, z, -1.42647390514189e-02f);
  return c * p / q;
}

template <typename T> inline T slog(T x) { return std::log(x); }
template <> inline float slog<float>(float x) { return vlog(x); }
template <typename T> inline T slog1p(T x) { return std::log1p(x); }
template <> inline float slog1p<float>(float x) { return vlog1p(x); }
template <typename T> inline T serf(T x) { return std::erf(x); }
template <> inline float serf<float>(float x) { return verf(x); }

#if defined(__AVX2__) && defined(__FMA__)
// Eight lanes of vexp_neg in 19 instructions (GCC's if-conversion of the scalar form needs ~30).
inline __m256 exp_neg8(__m256 x) {
  const __m256 lo = _mm256_set1_ps(-87.3f), magic = _mm256_set1_ps(12582912.0f);
  __m256 keep = _mm256_cmp_ps(x, lo, _CMP_NLT_UQ);  // x >= lo or NaN
  __m256 xc = _mm256_min_ps(_mm256_set1_ps(88.3f), _mm256_max_ps(lo, x));  // NaN passes through
  __m256 t = _mm256_fmadd_ps(xc, _mm256_set1_ps(1.44269504088896341f), magic);
  __m256 n = _mm256_sub_ps(t, magic);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), xc);
  r = _mm256_fmadd_ps(n, _mm256_set1_ps(2.12194440e-4f), r);
  __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(1.9875691500e-4f), r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  __m256 y = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
  __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_castps_si256(t), _mm256_set1_epi32(127)), 23);
  return _mm256_and_ps(_mm256_mul_ps(y, _mm256_castsi256_ps(e)), keep);
}
#endif

// y[j] = exp(x[j] - m) for x - m <= 88 (y may be null or x itself); returns the sum of the exponentials.
template <typename T> inline T exp_sum(const T* x, T m, T* y, int64_t n) {
  T s = 0;
  for (int64_t j = 0; j < n; ++j) {
    T e = sexp_neg<T>(x[j] - m);
    if (y) y[j] = e;
    s += e;
  }
  return s;
}
// x[j] = exp(x[j]) for x <= 88.
template <typename T> inline void exp_inplace(T* x, int64_t n) {
  for (int64_t j = 0; j < n; ++j) x[j] = sexp_neg<T>(x[j]);
}
#if defined(__AVX2__) && defined(__FMA__)
template <> inline float exp_sum<float>(const float* x, float m, float* y, int64_t n) {
  const __m256 mv = _mm256_set1_ps(m);
  __m256 a0 = _mm256_setzero_ps(), a1 = a0;
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    __m256 e0 = exp_neg8(_mm256_sub_ps(_mm256_loadu_ps(x + j), mv));
    __m256 e1 = exp_neg8(_mm256_sub_ps(_mm256_loadu_ps(x + j + 8), mv));
    if (y) {
      _mm256_storeu_ps(y + j, e0);
      _mm256_storeu_ps(y + j + 8, e1);
    }
    a0 = _mm256_add_ps(a0, e0);
    a1 = _mm256_add_ps(a1, e1);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, _mm256_add_ps(a0, a1));
  float s = 0;
  for (int l = 0; l < 8; ++l) s += lanes[l];
  for (; j < n; ++j) {
    float e = vexp_neg(x[j] - m);
    if (y) y[j] = e;
    s += e;
  }
  return s;
}
template <> inline void exp_inplace<float>(float* x, int64_t n) {
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) _mm256_storeu_ps(x + j, exp_neg8(_mm256_loadu_ps(x + j)));
  for (; j < n; ++j) x[j] = vexp_neg(x[j]);
}
#endif

// max over x[0, n) ignoring NaN (-inf for n = 0). GCC does not vectorise float max reductions
// without -ffast-math, so the float version uses AVX2 directly where it can.
template <typename T> inline T max_reduce(const T* x, int64_t n) {
  T m = -std::numeric_limits<T>::infinity();
  for (int64_t j = 0; j < n; ++j) m = x[j] > m ? x[j] : m;
  return m;
}
#if defined(__AVX2__)
template <> inline float max_reduce<float>(const float* x, int64_t n) {
  __m256 a0 = _mm256_set1_ps(-INFINITY), a1 = a0, a2 = a0, a3 = a0;
  int64_t j = 0;
  for (; j + 32 <= n; j += 32) {  // max_ps(x, acc) returns acc when x is NaN
    a0 = _mm256_max_ps(_mm256_loadu_ps(x + j), a0);
    a1 = _mm256_max_ps(_mm256_loadu_ps(x + j + 8), a1);
    a2 = _mm256_max_ps(_mm256_loadu_ps(x + j + 16), a2);
    a3 = _mm256_max_ps(_mm256_loadu_ps(x + j + 24), a3);
  }
  for (; j + 8 <= n; j += 8) a0 = _mm256_max_ps(_mm256_loadu_ps(x + j), a0);
  a0 = _mm256_max_ps(_mm256_max_ps(a0, a1), _mm256_max_ps(a2, a3));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, a0);
  float m = lanes[0];
  for (int l = 1; l < 8; ++l) m = lanes[l] > m ? lanes[l] : m;
  for (; j < n; ++j) m = x[j] > m ? x[j] : m;
  return m;
}
#endif

}  // namespace sx::cpu
