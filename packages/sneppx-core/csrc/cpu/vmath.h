// Branch-free float math that the compiler vectorises (no calls in the loop body).
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>

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

// exp with range reduction to [-ln2/2, ln2/2] and a degree-6 polynomial; ~1 ulp.
inline float vexp(float x) {
  float xc = x < -87.33654f ? -87.33654f : (x > 88.72283f ? 88.72283f : x);
  float n = std::floor(xc * 1.44269504088896341f + 0.5f);
  float r = xc - n * 0.693359375f + n * 2.12194440e-4f;
  float y = exp_poly(r);
  float scale = std::bit_cast<float>((int32_t(n) + 127) << 23);
  float res = y * scale;
  res = x < -87.33654f ? 0.0f : res;
  res = x > 88.72283f ? INFINITY : res;
  return x != x ? x : res;
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

template <typename T> inline T sexp(T x) { return std::exp(x); }
template <> inline float sexp<float>(float x) { return vexp(x); }
template <typename T> inline T stanh(T x) { return std::tanh(x); }
template <> inline float stanh<float>(float x) { return vtanh(x); }
template <typename T> inline T ssigmoid(T x) { return T(1) / (T(1) + std::exp(-x)); }
template <> inline float ssigmoid<float>(float x) { return vsigmoid(x); }

}  // namespace sx::cpu
