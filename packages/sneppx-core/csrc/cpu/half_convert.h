// float16 / bfloat16 widened to float32 and float32 narrowed back, eight elements at a time (the steps
// that fused loops keep in registers; sixteen in AVX-512 builds) and over contiguous runs. float16 uses
// the CPU's conversion instructions (F16C: every x86-64-v3 machine), with the same rounding (to nearest
// even) as Half's own; bfloat16 widens by a shift and narrows by a select (AVX2). Builds without these
// instructions, and the tails of runs, convert through the types' own conversions, so the results are
// the same.
#pragma once
#include <bit>
#include <cstdint>
#if defined(__F16C__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#include "core/dtype.h"

namespace sx::cpu {

// d[k] = float(s[k]) for k < 8.
inline void widen8(const Half* s, float* d) {
#if defined(__F16C__)
  _mm256_storeu_ps(d, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s))));
#else
  for (int k = 0; k < 8; ++k) d[k] = float(s[k]);
#endif
}
inline void widen8(const BFloat16* s, float* d) {
#if defined(__AVX2__)
  __m256i u = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s)));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(d), _mm256_slli_epi32(u, 16));
#else
  for (int k = 0; k < 8; ++k) d[k] = std::bit_cast<float>(uint32_t(s[k].x) << 16);
#endif
}

// d[k] = Half(s[k]) / BFloat16(s[k]) for k < 8.
inline void narrow8(const float* s, Half* d) {
#if defined(__F16C__)
  _mm_storeu_si128(reinterpret_cast<__m128i*>(d), _mm256_cvtps_ph(_mm256_loadu_ps(s), _MM_FROUND_TO_NEAREST_INT));
#else
  for (int k = 0; k < 8; ++k) d[k] = Half(s[k]);
#endif
}
inline void narrow8(const float* s, BFloat16* d) {  // BFloat16(float) as a select
#if defined(__AVX2__)
  const __m256 v = _mm256_loadu_ps(s);
  const __m256i u = _mm256_castps_si256(v), hi = _mm256_srli_epi32(u, 16);
  const __m256i lsb = _mm256_and_si256(hi, _mm256_set1_epi32(1));
  const __m256i rounded =
      _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb), 16);
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  const __m256i r = _mm256_blendv_epi8(rounded, _mm256_or_si256(hi, _mm256_set1_epi32(0x40)), nan);
  const __m128i packed = _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(d), packed);
#else
  for (int k = 0; k < 8; ++k) {
    const uint32_t u = std::bit_cast<uint32_t>(s[k]);
    const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16, nan = (u >> 16) | 0x40u;
    d[k].x = uint16_t((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
  }
#endif
}

#if defined(__AVX512F__)
// widen8 / narrow8 sixteen at a time, for AVX-512 builds: their loops read the widened floats in 512-bit
// loads, and a load that spans two 256-bit stores is not forwarded from them (it waits until both
// reach the cache: float16 x * 2 ran at a third of the AVX2 build's speed).
inline void widen16(const Half* s, float* d) {
  _mm512_storeu_ps(d, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s))));
}
inline void widen16(const BFloat16* s, float* d) {
  const __m512i u = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s)));
  _mm512_storeu_si512(d, _mm512_slli_epi32(u, 16));
}
inline void narrow16(const float* s, Half* d) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(d), _mm512_cvtps_ph(_mm512_loadu_ps(s), _MM_FROUND_TO_NEAREST_INT));
}
inline void narrow16(const float* s, BFloat16* d) {  // narrow8's select on sixteen lanes
  const __m512 v = _mm512_loadu_ps(s);
  const __m512i u = _mm512_castps_si512(v), hi = _mm512_srli_epi32(u, 16);
  const __m512i lsb = _mm512_and_si512(hi, _mm512_set1_epi32(1));
  const __m512i rounded =
      _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb), 16);
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  const __m512i r = _mm512_mask_blend_epi32(nan, rounded, _mm512_or_si512(hi, _mm512_set1_epi32(0x40)));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(d), _mm512_cvtepi32_epi16(r));
}
#endif

// d[i] = float(s[i]) for i < n.
template <typename T>
inline void widen_run(const T* s, float* d, int64_t n) {
  int64_t i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16) widen16(s + i, d + i);
#endif
  for (; i + 8 <= n; i += 8) widen8(s + i, d + i);
  for (; i < n; ++i) d[i] = float(s[i]);
}

// d[i] = T(s[i]) for i < n.
template <typename T>
inline void narrow_run(const float* s, T* d, int64_t n) {
  int64_t i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16) narrow16(s + i, d + i);
#endif
  for (; i + 8 <= n; i += 8) narrow8(s + i, d + i);
  for (; i < n; ++i) d[i] = T(s[i]);
}

}  // namespace sx::cpu
