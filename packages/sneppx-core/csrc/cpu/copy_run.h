// Copies of one contiguous run of bytes shared by the CPU kernels (strided copies, cat and roll, the
// convolution's padded input): short runs in inline vector moves, long ones past 4K aliasing.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace sx::cpu {

// memcpy of one run, except where dst lies just above src modulo 4 KiB (a copy into a view shifted
// by a few elements, as in roll and cat): there a forward copy's loads wait on the stores just
// before them (4K aliasing; glibc's memcpy of rows of 4.7 KB ran at half speed). Up to 128 bytes above,
// the run is copied forward in blocks of 128 bytes, each block loaded before the previous one is
// stored, so that no load follows a store it could alias (rows of 4.7 KB: 9% faster than the
// backward copy); up to 256 bytes above, backward in 32-byte pieces.
inline void copy_bytes(char* dst, const char* src, size_t n) {
  size_t delta = (reinterpret_cast<uintptr_t>(dst) - reinterpret_cast<uintptr_t>(src)) & 4095;
  if (n < 1024 || delta == 0 || delta >= 256) {
    std::memcpy(dst, src, n);
    return;
  }
  typedef char vec __attribute__((vector_size(32)));
  if (delta < 128) {
    // Named registers: as arrays, the AVX2 build kept the blocks on the stack and ran at half speed.
    auto ld = [](const char* p) {
      vec v;
      std::memcpy(&v, p, sizeof v);
      return v;
    };
    auto st = [](char* p, vec v) { std::memcpy(p, &v, sizeof v); };
    vec a0 = ld(src), a1 = ld(src + 32), a2 = ld(src + 64), a3 = ld(src + 96);
    size_t i = 0;
    for (; i + 256 <= n; i += 128) {
      const char* q = src + i + 128;
      vec b0 = ld(q), b1 = ld(q + 32), b2 = ld(q + 64), b3 = ld(q + 96);
      st(dst + i, a0), st(dst + i + 32, a1), st(dst + i + 64, a2), st(dst + i + 96, a3);
      a0 = b0, a1 = b1, a2 = b2, a3 = b3;
    }
    st(dst + i, a0), st(dst + i + 32, a1), st(dst + i + 64, a2), st(dst + i + 96, a3);
    std::memcpy(dst + i + 128, src + i + 128, n - i - 128);
    return;
  }
  size_t i = n;
  for (; i >= 32; i -= 32) {
    vec v;
    std::memcpy(&v, src + i - 32, sizeof(vec));
    std::memcpy(dst + i - 32, &v, sizeof(vec));
  }
  std::memcpy(dst, src, i);
}

// A short run (a row of a few hundred bytes) in inline 32-byte moves: a memcpy call per row would
// cost about as much as the row itself. Longer runs go to copy_bytes.
inline void copy_run(char* dst, const char* src, size_t n) {
  if (n >= 1024) return copy_bytes(dst, src, n);
  typedef char vec __attribute__((vector_size(32)));
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    vec v0, v1;
    std::memcpy(&v0, src + i, sizeof(vec));
    std::memcpy(&v1, src + i + 32, sizeof(vec));
    std::memcpy(dst + i, &v0, sizeof(vec));
    std::memcpy(dst + i + 32, &v1, sizeof(vec));
  }
  for (; i + 32 <= n; i += 32) {
    vec v;
    std::memcpy(&v, src + i, sizeof(vec));
    std::memcpy(dst + i, &v, sizeof(vec));
  }
  if (i < n) std::memcpy(dst + i, src + i, n - i);
}

}  // namespace sx::cpu
