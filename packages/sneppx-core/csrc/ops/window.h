// Sliding-window spans of the pooling kernels, shared by the CPU and CUDA backends.
#pragma once
#include <algorithm>
#include <cstdint>
#include <utility>

#include "core/dtype.h"

namespace sx {

// Input positions [lo, hi) read by output position i along one dim, and the padded window size
// (the count_include_pad divisor). Adaptive windows: [floor(i n / o), ceil((i + 1) n / o)).
struct Span {
  int64_t lo, hi, padded;
};
SX_HD inline Span span(bool adaptive, int64_t i, int64_t n, int64_t o, int64_t k, int64_t s, int64_t p) {
  if (adaptive) {
    int64_t lo = i * n / o, hi = ((i + 1) * n + o - 1) / o;
    return {lo, hi, hi - lo};
  }
  int64_t lo = i * s - p, hi = std::min(lo + k, n + p);
  int64_t padded = hi - lo;
  return {std::max<int64_t>(lo, 0), std::min(hi, n), padded};
}

// Window taps [lo, hi) of a (possibly padded, dilated) window starting at input position `start`
// that land inside [0, n): padding is skipped by the range instead of a test per tap.
SX_HD inline std::pair<int64_t, int64_t> taps_inside(int64_t start, int64_t k, int64_t step, int64_t n) {
  int64_t lo = start >= 0 ? 0 : (-start + step - 1) / step;
  int64_t hi = start >= n ? 0 : std::min(k, (n - 1 - start) / step + 1);
  return {lo, std::max(lo, hi)};
}

}  // namespace sx
