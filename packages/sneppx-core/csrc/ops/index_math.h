// Element functions of the indexing kernels, shared by the CPU and CUDA backends: the value a
// scatter leaves, and sort keys.
#pragma once
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "core/dtype.h"

namespace sx {

SX_HD inline uint64_t double_bits(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof(u));
  return u;
}

enum class ScatterOp : uint8_t { Set, Add, Max, Min, Mul };  // of kern::scatter

// The value a scatter leaves at a destination holding a when v arrives (NaN wins max and min).
template <typename T> SX_HD T scatter_value(ScatterOp op, T a, T v) {
  using C = acc_t<T>;
  const C ca = C(a), cv = C(v);
  switch (op) {
    case ScatterOp::Set: return v;
    case ScatterOp::Add: return T(ca + cv);
    case ScatterOp::Mul: return T(ca * cv);
    case ScatterOp::Max: return (cv != cv || cv > ca) ? v : a;
    case ScatterOp::Min: return (cv != cv || cv < ca) ? v : a;
  }
  return v;
}

// Unsigned keys with the order of sort's comparisons (NaN above everything, all NaNs equal; -0.0
// equal to 0.0): sorting keys as integers sorts the values.
template <typename C> SX_HD uint64_t sort_key(C v) {
  if constexpr (std::is_same_v<C, bool>) {
    return uint64_t(v);
  } else if constexpr (std::is_integral_v<C>) {
    return std::is_signed_v<C> ? uint64_t(int64_t(v)) ^ (uint64_t(1) << 63) : uint64_t(v);
  } else {
    double d = v != v ? std::numeric_limits<double>::quiet_NaN() : (v == 0 ? 0.0 : double(v));
    uint64_t u = double_bits(d);
    return u ^ (uint64_t(int64_t(u) >> 63) | (uint64_t(1) << 63));  // ~u for negatives, else the sign bit set: no branch
  }
}

// sort_key for values of at most 32 bits (float32, float16, bfloat16 as floats; int32, uint8, bool as
// integers), in 32 bits.
template <typename C> SX_HD uint32_t sort_key32(C v) {
  if constexpr (std::is_integral_v<C>) {
    return uint32_t(int32_t(v)) ^ (uint32_t(1) << 31);
  } else {
    float f = v != v ? std::numeric_limits<float>::quiet_NaN() : (v == 0 ? 0.0f : float(v));
    uint32_t u = float_bits(f);
    return u ^ (uint32_t(int32_t(u) >> 31) | (uint32_t(1) << 31));
  }
}

}  // namespace sx
