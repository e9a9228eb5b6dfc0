// Register-blocked transposes shared by the CPU kernels (strided copies, the convolution's packed
// weights).
#pragma once
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace sx::cpu {

// Transposes an L x L block held in registers (L = 8 for 4-byte, 4 for 8-byte elements):
// m[k] holds source column k of the block; on return m[j] holds destination row j.
template <typename V>
inline void transpose_regs(V* m) {
  if constexpr (sizeof(m[0][0]) == 4) {
    V t[8], u[8];
    for (int k = 0; k < 8; k += 2) {
      t[k] = __builtin_shufflevector(m[k], m[k + 1], 0, 8, 1, 9, 4, 12, 5, 13);
      t[k + 1] = __builtin_shufflevector(m[k], m[k + 1], 2, 10, 3, 11, 6, 14, 7, 15);
    }
    for (int k = 0; k < 8; k += 4)
      for (int h = 0; h < 2; ++h) {
        u[k + 2 * h] = __builtin_shufflevector(t[k + h], t[k + h + 2], 0, 1, 8, 9, 4, 5, 12, 13);
        u[k + 2 * h + 1] = __builtin_shufflevector(t[k + h], t[k + h + 2], 2, 3, 10, 11, 6, 7, 14, 15);
      }
    for (int k = 0; k < 4; ++k) {
      m[k] = __builtin_shufflevector(u[k], u[k + 4], 0, 1, 2, 3, 8, 9, 10, 11);
      m[k + 4] = __builtin_shufflevector(u[k], u[k + 4], 4, 5, 6, 7, 12, 13, 14, 15);
    }
  } else {
    V t0 = __builtin_shufflevector(m[0], m[1], 0, 4, 2, 6), t1 = __builtin_shufflevector(m[0], m[1], 1, 5, 3, 7);
    V t2 = __builtin_shufflevector(m[2], m[3], 0, 4, 2, 6), t3 = __builtin_shufflevector(m[2], m[3], 1, 5, 3, 7);
    m[0] = __builtin_shufflevector(t0, t2, 0, 1, 4, 5);
    m[1] = __builtin_shufflevector(t1, t3, 0, 1, 4, 5);
    m[2] = __builtin_shufflevector(t0, t2, 2, 3, 6, 7);
    m[3] = __builtin_shufflevector(t1, t3, 2, 3, 6, 7);
  }
}

// dst(r, c) = src(r, c) over rows [r0, r1) and columns [c0, c1) of one tile, where dst rows and src
// columns are contiguous (dst row r at d + r d_row bytes: a negative d_row writes the rows upwards). 4- and
// 8-byte elements move as register-transposed blocks, the rest (and the tile's ragged edges) one by one.
template <typename D>
inline void transpose_tile(char* d, int64_t d_row, const char* s, int64_t s_col, int64_t r0, int64_t r1,
                           int64_t c0, int64_t c1) {
  constexpr int64_t es = sizeof(D);
  auto at = [&](int64_t r, int64_t c) { return reinterpret_cast<const D*>(s + r * es + c * s_col); };
  int64_t rb = r0, cb = c0;
  if constexpr (es == 4 || es == 8) {
    using E = std::conditional_t<es == 4, uint32_t, uint64_t>;
    constexpr int64_t L = 32 / es;
    typedef E vec __attribute__((vector_size(32)));
    rb = r0 + (r1 - r0) / L * L;
    cb = c0 + (c1 - c0) / L * L;
    for (int64_t r = r0; r < rb; r += L)
      for (int64_t c = c0; c < cb; c += L) {
        vec m[L];
        for (int64_t k = 0; k < L; ++k) std::memcpy(&m[k], at(r, c + k), sizeof(vec));
        transpose_regs(m);
        for (int64_t j = 0; j < L; ++j) std::memcpy(d + (r + j) * d_row + c * es, &m[j], sizeof(vec));
      }
  }
  for (int64_t r = r0; r < r1; ++r) {  // the columns right of the blocks, and the rows below them
    D* y = reinterpret_cast<D*>(d + r * d_row);
    for (int64_t c = r < rb ? cb : c0; c < c1; ++c) y[c] = *at(r, c);
  }
}

}  // namespace sx::cpu
