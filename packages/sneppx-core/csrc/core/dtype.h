// Element types, their C++ storage types and the dtype switch used by every kernel family.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include "core/error.h"

// Marks a function callable from host and device code (formula sheets compiled by nvcc for the
// CUDA kernels and by the C++ compiler for the CPU ones).
#ifdef __CUDACC__
#define SX_HD __host__ __device__
#else
#define SX_HD
#endif

namespace sx {

// Complex64 / Complex128 hold (real, imaginary) pairs of float32 / float64. The complex ops (ops/complex.cpp)
// run the real kernels on the pairs (view_as_real); only the product has a kernel of its own (ops/complex.h),
// and every dtype switch below raises TypeError for them.
enum class DType : uint8_t { Bool, UInt8, Int8, Int16, Int32, Int64, Float16, BFloat16, Float32, Float64, Complex64,
                             Complex128 };

// The bits of a float and back (memcpy: no aliasing questions; nvcc compiles it for the device too).
SX_HD inline uint32_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
SX_HD inline float bits_float(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

// IEEE half precision, stored as bits; arithmetic happens in float.
struct Half {
  uint16_t x = 0;
  Half() = default;
  SX_HD Half(float f) : x(from_float(f)) {}
  SX_HD operator float() const { return to_float(x); }
  SX_HD static uint16_t from_float(float f) {
    uint32_t u = float_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t mag = u & 0x7fffffffu;
    if (mag >= 0x7f800000u) return uint16_t(sign | 0x7c00u | (mag > 0x7f800000u ? 0x200u : 0u));
    if (mag >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // overflow to inf
    if (mag < 0x38800000u) {                                  // subnormal or zero
#ifdef __CUDA_ARCH__
      uint32_t r = __float2uint_rn(bits_float(mag) * 16777216.0f);  // a / 2^-24, to nearest even
#else
      uint32_t r = uint32_t(std::nearbyint(bits_float(mag) * 16777216.0f));
#endif
      return uint16_t(sign | r);
    }
    uint32_t e = mag - 0x38000000u;  // rebias exponent
    uint32_t r = (e + 0x0fffu + ((e >> 13) & 1u)) >> 13;  // round to nearest even
    return uint16_t(sign | r);
  }
  SX_HD static float to_float(uint16_t h) {
    uint32_t sign = uint32_t(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    uint32_t u;
    if (exp == 0) {
      u = float_bits(float(man) * 5.9604644775390625e-8f) | sign;  // 2^-24
    } else if (exp == 31) {
      u = sign | 0x7f800000u | (man << 13);
    } else {
      u = sign | ((exp + 112u) << 23) | (man << 13);
    }
    return bits_float(u);
  }
};

// bfloat16: the top half of a float32, rounded to nearest even.
struct BFloat16 {
  uint16_t x = 0;
  BFloat16() = default;
  SX_HD BFloat16(float f) {
    uint32_t u = float_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
      x = uint16_t((u >> 16) | 0x40u);
    } else {
      x = uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
  }
  SX_HD operator float() const { return bits_float(uint32_t(x) << 16); }
};

// Accumulation / compute type for a storage type (halves compute in float).
template <typename T> struct Acc { using type = T; };
template <> struct Acc<Half> { using type = float; };
template <> struct Acc<BFloat16> { using type = float; };
template <> struct Acc<bool> { using type = int64_t; };
template <> struct Acc<uint8_t> { using type = int64_t; };
template <> struct Acc<int8_t> { using type = int64_t; };
template <> struct Acc<int16_t> { using type = int64_t; };
template <> struct Acc<int32_t> { using type = int64_t; };
template <typename T> using acc_t = typename Acc<T>::type;

inline size_t itemsize(DType d) {
  switch (d) {
    case DType::Bool: case DType::UInt8: case DType::Int8: return 1;
    case DType::Int16: case DType::Float16: case DType::BFloat16: return 2;
    case DType::Int32: case DType::Float32: return 4;
    case DType::Complex128: return 16;
    default: return 8;
  }
}
inline bool is_floating(DType d) { return d >= DType::Float16 && d <= DType::Float64; }
inline bool is_complex(DType d) { return d >= DType::Complex64; }
// Whether a tensor of dtype d can carry a gradient (floating and complex dtypes).
inline bool is_differentiable(DType d) { return d >= DType::Float16; }
// The dtype of a complex dtype's parts (float32 for complex64); d itself for a real dtype.
inline DType real_part_dtype(DType d) {
  return d == DType::Complex64 ? DType::Float32 : d == DType::Complex128 ? DType::Float64 : d;
}
// The complex dtype whose parts are d (float32 -> complex64; float16/bfloat16 -> complex64, as PyTorch's
// promotion of a half tensor with a complex scalar gives complex64 here, there being no complex32).
inline DType complex_of(DType d) {
  return d == DType::Float64 || d == DType::Complex128 ? DType::Complex128 : DType::Complex64;
}
// The smallest and largest value of an integer dtype (bool: 0 and 1).
inline std::pair<int64_t, int64_t> int_range(DType d) {
  switch (d) {
    case DType::Bool: return {0, 1};
    case DType::UInt8: return {0, 255};
    case DType::Int8: return {INT8_MIN, INT8_MAX};
    case DType::Int16: return {INT16_MIN, INT16_MAX};
    case DType::Int32: return {INT32_MIN, INT32_MAX};
    default: return {INT64_MIN, INT64_MAX};
  }
}
inline bool is_integral(DType d, bool include_bool) {
  return d == DType::Bool ? include_bool : d <= DType::Int64;
}

inline const char* dtype_name(DType d) {
  switch (d) {
    case DType::Bool: return "bool";
    case DType::UInt8: return "uint8";
    case DType::Int8: return "int8";
    case DType::Int16: return "int16";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::Float16: return "float16";
    case DType::BFloat16: return "bfloat16";
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Complex64: return "complex64";
    case DType::Complex128: return "complex128";
  }
  return "?";
}

// PyTorch's promotion lattice: bool < uint8, int8 < int16 < int32 < int64 < float16/bfloat16 < float32 <
// float64 < complex64 < complex128, with uint8 and int8 promoting to int16, float16 and bfloat16 to float32,
// and a complex dtype with float64 to complex128.
inline DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (is_complex(a) || is_complex(b)) {
    DType c = is_complex(a) ? a : b, o = is_complex(a) ? b : a;
    return o == DType::Float64 || o == DType::Complex128 ? DType::Complex128 : c;
  }
  if ((a == DType::UInt8 && b == DType::Int8) || (a == DType::Int8 && b == DType::UInt8)) return DType::Int16;
  if ((a == DType::Float16 && b == DType::BFloat16) || (a == DType::BFloat16 && b == DType::Float16))
    return DType::Float32;
  return a > b ? a : b;
}

[[noreturn, gnu::cold]] inline void no_complex_kernel(const char* op, DType d) {
  throw TypeError(std::string("[") + op + "] is not implemented for " + dtype_name(d) +
                  " tensors (the complex ops are listed in docs/pytorch-compatibility.md)");
}

// Calls fn with a value of the C++ type matching dtype (used once per kernel family).
#define SX_DISPATCH_CASE(ENUM, TYPE, ...) \
  case ::sx::DType::ENUM: {               \
    using scalar_t = TYPE;                \
    __VA_ARGS__();                        \
    break;                                \
  }

#define SX_DISPATCH_ALL(DT, NAME, ...)                                                   \
  switch (DT) {                                                                          \
    SX_DISPATCH_CASE(Bool, bool, __VA_ARGS__)                                            \
    SX_DISPATCH_CASE(UInt8, uint8_t, __VA_ARGS__)                                        \
    SX_DISPATCH_CASE(Int8, int8_t, __VA_ARGS__)                                          \
    SX_DISPATCH_CASE(Int16, int16_t, __VA_ARGS__)                                        \
    SX_DISPATCH_CASE(Int32, int32_t, __VA_ARGS__)                                        \
    SX_DISPATCH_CASE(Int64, int64_t, __VA_ARGS__)                                        \
    SX_DISPATCH_CASE(Float16, ::sx::Half, __VA_ARGS__)                                   \
    SX_DISPATCH_CASE(BFloat16, ::sx::BFloat16, __VA_ARGS__)                              \
    SX_DISPATCH_CASE(Float32, float, __VA_ARGS__)                                        \
    SX_DISPATCH_CASE(Float64, double, __VA_ARGS__)                                       \
    default: ::sx::no_complex_kernel(NAME, DT);                                          \
  }

#define SX_DISPATCH_FLOAT(DT, NAME, ...)                                                 \
  switch (DT) {                                                                          \
    SX_DISPATCH_CASE(Float16, ::sx::Half, __VA_ARGS__)                                   \
    SX_DISPATCH_CASE(BFloat16, ::sx::BFloat16, __VA_ARGS__)                              \
    SX_DISPATCH_CASE(Float32, float, __VA_ARGS__)                                        \
    SX_DISPATCH_CASE(Float64, double, __VA_ARGS__)                                       \
    default: throw ::sx::TypeError(std::string("[") + NAME + "] expected a floating dtype, got " + ::sx::dtype_name(DT)); \
  }

// Calls the lambda with scalar_t = float or double.
#define SX_DISPATCH_F32_F64(DT, NAME, ...)                                                                 \
  switch (DT) {                                                                                            \
    SX_DISPATCH_CASE(Float32, float, __VA_ARGS__)                                                          \
    SX_DISPATCH_CASE(Float64, double, __VA_ARGS__)                                                         \
    default:                                                                                               \
      throw ::sx::TypeError(std::string("[") + NAME + "] expected float32 or float64, got " + ::sx::dtype_name(DT)); \
  }

}  // namespace sx
