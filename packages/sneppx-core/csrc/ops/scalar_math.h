// Scalar math used by the formula sheets (ops/unary_defs.h, ops/binary_math.h). On the host these
// are the branch-free float versions of cpu/vmath.h and cpu/nn_math.h, which loops vectorise; double
// and integer types forward to <cmath>. Compiled by nvcc, they are the device's <cmath> functions.
#pragma once
#include <cmath>
#include <type_traits>

#include "core/dtype.h"
#ifndef __CUDACC__
#include "cpu/nn_math.h"
#endif

// The device versions live in their own inline namespace so that they never share a symbol with
// the host versions of another translation unit.
#ifdef __CUDACC__
#define SX_SHEET_NS inline namespace device
#else
#define SX_SHEET_NS inline namespace host
#endif

namespace sx::sm {
SX_SHEET_NS {

#ifdef __CUDACC__
template <typename T> SX_HD inline T sexp(T x) { return std::exp(x); }
template <typename T> SX_HD inline T stanh(T x) { return std::tanh(x); }
template <typename T> SX_HD inline T serf(T x) { return std::erf(x); }
template <typename T> SX_HD inline T slog1p(T x) { return std::log1p(x); }
#define SX_STD_MATH(NAME, FN) \
  template <typename T> SX_HD inline T NAME(T x) { return std::FN(x); }
#else
// float: the polynomial in cpu/; other types: <cmath>.
#define SX_STD_MATH(NAME, FN)                                           \
  template <typename T> inline T NAME(T x) {                            \
    if constexpr (std::is_same_v<T, float>) return cpu::v##FN(x);      \
    else return std::FN(x);                                             \
  }

// float: the vectorisable versions; other types: <cmath>.
template <typename T> inline T sexp(T x) {
  if constexpr (std::is_same_v<T, float>) return cpu::vexp(x);
  else return std::exp(x);
}
template <typename T> inline T stanh(T x) {
  if constexpr (std::is_same_v<T, float>) return cpu::vtanh(x);
  else return std::tanh(x);
}
template <typename T> inline T serf(T x) {
  if constexpr (std::is_same_v<T, float>) return cpu::verf(x);
  else return std::erf(x);
}
template <typename T> inline T slog1p(T x) {
  if constexpr (std::is_same_v<T, float>) return cpu::vlog1p(x);
  else return std::log1p(x);
}
#endif
SX_STD_MATH(ssin, sin)
SX_STD_MATH(scos, cos)
SX_STD_MATH(stan, tan)
SX_STD_MATH(sasin, asin)
SX_STD_MATH(sacos, acos)
SX_STD_MATH(satan, atan)
SX_STD_MATH(ssinh, sinh)
SX_STD_MATH(scosh, cosh)
SX_STD_MATH(sexp2, exp2)
SX_STD_MATH(sexpm1, expm1)
SX_STD_MATH(slog, log)
SX_STD_MATH(slog2, log2)
SX_STD_MATH(slog10, log10)
#undef SX_STD_MATH

// Formulas valid on part of the line and the test for the rest (see out_of_range in ops/unary_defs.h).
// On the host, float takes cpu::v<FN>_normal (exp: arguments with a normal result; the logs: normal
// arguments; the trig polynomials: |x| < 2^14), and the CPU kernels compute the elements the test
// marks with <cmath> in double; other types, and CUDA, take <cmath> everywhere.
#ifdef __CUDACC__
#define SX_PARTIAL_MATH(NAME, FN) \
  template <typename T> SX_HD inline T NAME(T x) { return std::FN(x); }
#define SX_RANGE_TEST(NAME) \
  template <typename T> SX_HD inline bool NAME(T) { return false; }
#else
#define SX_PARTIAL_MATH(NAME, FN)                                          \
  template <typename T> inline T NAME(T x) {                               \
    if constexpr (std::is_same_v<T, float>) return cpu::v##FN##_normal(x); \
    else return std::FN(x);                                                \
  }
#define SX_RANGE_TEST(NAME)                                         \
  template <typename T> inline bool NAME(T x) {                     \
    if constexpr (std::is_same_v<T, float>) return cpu::NAME(x);    \
    else return false;                                              \
  }
#endif
SX_PARTIAL_MATH(slog_normal, log)
SX_PARTIAL_MATH(slog2_normal, log2)
SX_PARTIAL_MATH(slog10_normal, log10)
SX_RANGE_TEST(log_out_of_range)
SX_RANGE_TEST(trig_out_of_range)
#undef SX_PARTIAL_MATH
#undef SX_RANGE_TEST

// exp has a partial formula for double too on the host (cpu::vexp_normal).
#ifdef __CUDACC__
template <typename T> SX_HD inline T sexp_normal(T x) { return std::exp(x); }
template <typename T> SX_HD inline bool exp_out_of_range(T) { return false; }
#else
template <typename T> constexpr bool kExpPartial = std::is_same_v<T, float> || std::is_same_v<T, double>;
template <typename T> inline T sexp_normal(T x) {
  if constexpr (kExpPartial<T>) return cpu::vexp_normal(x);
  else return std::exp(x);
}
template <typename T> inline bool exp_out_of_range(T x) {
  if constexpr (kExpPartial<T>) return cpu::exp_out_of_range(x);
  else return false;
}
#endif

template <typename T> SX_HD inline T sigmoid(T x) { return T(1) / (T(1) + sexp<T>(-x)); }
// sigmoid and silu on part of the line (float on the host: x >= -88, see cpu::sigmoid_out_of_range)
// and the test for the rest; other types, and CUDA, take the formula everywhere.
template <typename T> SX_HD inline T sigmoid_normal(T x) {
#ifndef __CUDACC__
  if constexpr (std::is_same_v<T, float>) return cpu::vsigmoid_normal(x);
#endif
  return sigmoid(x);
}
template <typename T> SX_HD inline T silu_normal(T x) {
#ifndef __CUDACC__
  if constexpr (std::is_same_v<T, float>) return cpu::vsilu_normal(x);
#endif
  return x / (T(1) + sexp<T>(-x));
}
template <typename T> SX_HD inline bool sigmoid_out_of_range(T x) {
#ifndef __CUDACC__
  if constexpr (std::is_same_v<T, float>) return cpu::sigmoid_out_of_range(x);
#endif
  return false;
}
// log(1 + exp(z)) without overflow.
template <typename T> SX_HD inline T softplus(T z) {
  T a = z < T(0) ? -z : z;
#ifndef __CUDACC__
  if constexpr (std::is_same_v<T, float>) return cpu::vsoftplus(z);
#endif
  return (z > T(0) ? z : T(0)) + slog1p<T>(sexp<T>(-a));
}

}  // SX_SHEET_NS

inline constexpr double kSqrt1_2 = 0.70710678118654752440;     // 1 / sqrt(2)
inline constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1 / sqrt(2 pi)
inline constexpr double k2InvSqrtPi = 1.12837916709551257390;  // 2 / sqrt(pi)
inline constexpr double kGeluK = 0.79788456080286535588;       // sqrt(2 / pi)
inline constexpr double kGeluC = 0.044715;
inline constexpr double kLn2 = 0.69314718055994530942;
inline constexpr double kLn10 = 2.30258509299404568402;
inline constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
inline constexpr double kSeluScale = 1.0507009873554804934193349852946;

}  // namespace sx::sm
