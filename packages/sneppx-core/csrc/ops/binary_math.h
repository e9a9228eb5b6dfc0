// The binary ops' scalar formulas with Python's semantics (floor division and remainder round
// toward negative infinity, max/min propagate NaN, integer add/sub/mul wrap around), shared by the
// CPU kernels (cpu/elementwise.cpp) and, compiled by nvcc, the CUDA ones (cuda/elementwise.cu).
#pragma once
#include <cmath>
#include <type_traits>

#include "ops/scalar_math.h"

namespace sx::bm {
SX_SHEET_NS {

template <typename C> SX_HD C floordiv(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    if (b == 0) return 0;  // checked by the op before the kernel runs
    // INT_MIN / -1 traps (SIGFPE) on x86: negate with wrap-around instead, as PyTorch's result is
    if constexpr (std::is_signed_v<C>) if (b == C(-1)) return C(std::make_unsigned_t<C>(0) - std::make_unsigned_t<C>(a));
    C q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
  } else {
    return std::floor(a / b);
  }
}
template <typename C> SX_HD C pymod(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<C>) if (b == C(-1)) return 0;  // INT_MIN % -1 traps on x86
    C r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
  } else {
    C r = std::fmod(a, b);
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
  }
}
// C's remainder (the sign of a: truncated division), as PyTorch's fmod.
template <typename C> SX_HD C cfmod(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    if (b == 0) return 0;                                      // checked by the op before the kernel runs
    if constexpr (std::is_signed_v<C>) if (b == C(-1)) return 0;  // INT_MIN % -1 traps on x86
    return C(a % b);
  } else {
    return std::fmod(a, b);
  }
}
template <typename C> SX_HD C ipow(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    if (b < 0) return a == 1 ? 1 : (a == -1 ? (b % 2 ? -1 : 1) : 0);
    C r = 1;
    while (b) {
      if (b & 1) r *= a;
      a *= a;
      b >>= 1;
    }
    return r;
  } else {
    return std::pow(a, b);
  }
}
// NaN from either side propagates. Written as the compare-select (maxps / minps: a NaN in b or a tie gives
// b) and one fix-up for a NaN in a, which compiles to three vector instructions per block.
template <typename C> SX_HD C vmax(C a, C b) {
  C r = a > b ? a : b;
  if constexpr (!std::is_integral_v<C>) if (a != a) return a;
  return r;
}
template <typename C> SX_HD C vmin(C a, C b) {
  C r = a < b ? a : b;
  if constexpr (!std::is_integral_v<C>) if (a != a) return a;
  return r;
}

// Integer add/sub/mul wrap around (two's complement) rather than overflow, which is undefined.
template <typename C> SX_HD C wadd(C x, C y) {
  if constexpr (std::is_integral_v<C>) return C(std::make_unsigned_t<C>(x) + std::make_unsigned_t<C>(y));
  else return x + y;
}
template <typename C> SX_HD C wsub(C x, C y) {
  if constexpr (std::is_integral_v<C>) return C(std::make_unsigned_t<C>(x) - std::make_unsigned_t<C>(y));
  else return x - y;
}
template <typename C> SX_HD C wmul(C x, C y) {
  if constexpr (std::is_integral_v<C>) return C(std::make_unsigned_t<C>(x) * std::make_unsigned_t<C>(y));
  else return x * y;
}

// Shifts as in PyTorch: a count below 0 or at least the width gives 0 (left) or the sign fill
// (right). Integer storage types compute in int64 (acc_t), whose result truncated to the storage
// type is the storage type's own shift, so one formula serves every width.
template <typename C> SX_HD C shl(C x, C y) {
  if (y < 0 || y >= C(8 * sizeof(C))) return C(0);
  return C(std::make_unsigned_t<C>(x) << y);
}
template <typename C> SX_HD C shr(C x, C y) {
  if (y < 0 || y >= C(8 * sizeof(C))) return x < C(0) ? C(-1) : C(0);
  return C(x >> y);
}

// gcd and lcm as PyTorch's (non-negative; gcd(0, 0) = 0, lcm(x, 0) = 0), in the storage type T, whose
// arithmetic wraps as PyTorch's does (the magnitude of the most negative value stays negative).
template <typename T> SX_HD T wabs(T x) {
  if constexpr (std::is_signed_v<T>) return x < T(0) ? T(std::make_unsigned_t<T>(0) - std::make_unsigned_t<T>(x)) : x;
  else return x;
}
template <typename T> SX_HD T gcd(T a, T b) {
  a = wabs(a);
  b = wabs(b);
  while (a != T(0)) {
    T c = a;
    a = T(b % a);
    b = c;
  }
  return b;
}
template <typename T> SX_HD T lcm(T a, T b) {
  T g = gcd(a, b);
  if (g == T(0)) return T(0);
  return wabs(T(std::make_unsigned_t<T>(T(a / g)) * std::make_unsigned_t<T>(b)));
}
// The next representable value after x toward y, for float and double (<cmath>) and, on their bits, for
// the 16-bit floats (1 sign, then exponent and mantissa: float16 and bfloat16 alike).
template <typename C> SX_HD C next_after(C x, C y) { return std::nextafter(x, y); }
SX_HD inline uint16_t next_after_bits16(uint16_t xb, uint16_t yb, bool x_nan, bool y_nan, bool x_lt_y, bool eq) {
  if (x_nan) return xb;
  if (y_nan) return yb;
  if (eq) return yb;
  if ((xb & 0x7fff) == 0) return uint16_t(1 | (x_lt_y ? 0 : 0x8000));  // the smallest subnormal toward y
  bool away = x_lt_y == ((xb & 0x8000) == 0);                           // toward larger magnitude
  return uint16_t(away ? xb + 1 : xb - 1);
}

}  // SX_SHEET_NS
}  // namespace sx::bm
