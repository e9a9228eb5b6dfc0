// Branch-free float math for the nn kernels (log, log1p, erf), written so that loops calling
// them vectorise; double versions forward to <cmath>. Complements cpu/vmath.h.
#pragma once
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>

#include "cpu/vmath.h"

namespace sx::cpu {

// Natural log (Cephes logf polynomial on a mantissa in [sqrt(1/2), sqrt(2))); ~1 ulp.
inline float vlog(float x) {
  bool sub = x < FLT_MIN;
  float xs = sub ? x * 8388608.0f : x;  // lift subnormals by 2^23
  int32_t ix = std::bit_cast<int32_t>(xs);
  int32_t e = ((ix >> 23) & 0xff) - 127 - (sub ? 23 : 0);
  float m = std::bit_cast<float>((ix & 0x007fffff) | 0x3f800000);
  bool big = m > 1.41421356f;
  m = big ? m * 0.5f : m;
  e = big ? e + 1 : e;
  float f = m - 1.0f, z = f * f;
  float y = 7.0376836292e-2f;
  y = y * f - 1.1514610310e-1f;
  y = y * f + 1.1676998740e-1f;
  y = y * f - 1.2420140846e-1f;
  y = y * f + 1.4249322787e-1f;
  y = y * f - 1.6668057665e-1f;
  y = y * f + 2.0000714765e-1f;
  y = y * f - 2.4999993993e-1f;
  y = y * f + 3.3333331174e-1f;
  y = y * f * z;
  float fe = float(e);
  y += -2.12194440e-4f * fe - 0.5f * z;
  float r = f + y + 0.693359375f * fe;
  r = x == 0.0f ? -INFINITY : r;
  r = x < 0.0f ? NAN : r;
  r = x == INFINITY ? x : r;
  return x != x ? x : r;
}

// log1p(w) for w > -1: log(1 + w) corrected for the rounding of 1 + w.
inline float vlog1p(float w) {
  float u = 1.0f + w;
  float d = u - 1.0f;
  float r = vlog(u);
  return d == 0.0f ? w : r * (w / d);
}

// erf by Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7), the same formula PyTorch vectorises.
inline float verf(float x) {
  float a = x < 0 ? -x : x;
  float t = 1.0f / (1.0f + 0.3275911f * a);
  float p = 1.061405429f;
  p = p * t - 1.453152027f;
  p = p * t + 1.421413741f;
  p = p * t - 0.284496736f;
  p = p * t + 0.254829592f;
  float r = 1.0f - p * t * vexp(-a * a);
  r = x < 0 ? -r : r;
  return x != x ? x : r;
}

template <typename T> inline T slog(T x) { return std::log(x); }
template <> inline float slog<float>(float x) { return vlog(x); }
template <typename T> inline T slog1p(T x) { return std::log1p(x); }
template <> inline float slog1p<float>(float x) { return vlog1p(x); }
template <typename T> inline T serf(T x) { return std::erf(x); }
template <> inline float serf<float>(float x) { return verf(x); }

}  // namespace sx::cpu
