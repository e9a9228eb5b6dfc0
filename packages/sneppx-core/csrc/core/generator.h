// Counter-based random numbers (Philox-4x32-10): element i of a draw depends only on
// (seed, offset + i), so results do not depend on the number of threads.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>

#include "core/dtype.h"

namespace sx {

struct Generator {
  uint64_t seed = 67280421310721ull;
  // Counter position, advanced by every draw; atomic because draws may run with the GIL released.
  std::atomic<uint64_t> offset{0};
  Generator() = default;
  Generator(const Generator& o) : seed(o.seed), offset(o.offset.load()) {}
  Generator& operator=(const Generator& o) {
    seed = o.seed;
    offset.store(o.offset.load());
    return *this;
  }
  // Reserves n counters (each gives 4 x 32 random bits) and returns the first.
  uint64_t reserve(uint64_t n) { return offset.fetch_add(n); }
};

Generator& default_generator();
Generator* gen_or_default(Generator* g);

SX_HD inline std::array<uint32_t, 4> philox(uint64_t seed, uint64_t counter) {
  uint32_t c0 = uint32_t(counter), c1 = uint32_t(counter >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = uint32_t(seed), k1 = uint32_t(seed >> 32);
  for (int r = 0; r < 10; ++r) {
    uint64_t p0 = uint64_t(0xD2511F53u) * c0, p1 = uint64_t(0xCD9E8D57u) * c2;
    uint32_t n0 = uint32_t(p1 >> 32) ^ c1 ^ k0, n2 = uint32_t(p0 >> 32) ^ c3 ^ k1;
    c1 = uint32_t(p1);
    c3 = uint32_t(p0);
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return {c0, c1, c2, c3};
}

// Uniform in [0, 1) with 24 (float) or 53 (double) random bits.
SX_HD inline float u01f(uint32_t x) { return float(x >> 8) * (1.0f / 16777216.0f); }
SX_HD inline double u01d(uint32_t a, uint32_t b) {
  return double(((uint64_t(a) << 21) ^ (uint64_t(b) >> 11)) & ((1ull << 53) - 1)) * (1.0 / 9007199254740992.0);
}

}  // namespace sx
