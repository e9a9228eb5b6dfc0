#include <atomic>
#include <cmath>

#include "cpu/kernels.h"
#include "cpu/loops.h"
#include "cpu/vmath.h"

namespace sx::cpu {
namespace {

// Runs o = f(x, y) over three operands with fast paths for contiguous and scalar operands.
template <typename O, typename T, typename F>
void run2(const Tensor& out, const Tensor& a, const Tensor& b, F f) {
  using C = acc_t<T>;
  for_each<3>(out->shape, {out.get(), a.get(), b.get()}, [&](char** p, const int64_t* s, int64_t n) {
    O* o = reinterpret_cast<O*>(p[0]);
    const T* x = reinterpret_cast<const T*>(p[1]);
    const T* y = reinterpret_cast<const T*>(p[2]);
    constexpr int64_t so = sizeof(O), st = sizeof(T);
    if (s[0] == so && s[1] == st && s[2] == st) {
      for (int64_t i = 0; i < n; ++i) o[i] = O(f(C(x[i]), C(y[i])));
    } else if (s[0] == so && s[1] == st && s[2] == 0) {
      C yv = C(*y);
      for (int64_t i = 0; i < n; ++i) o[i] = O(f(C(x[i]), yv));
    } else if (s[0] == so && s[1] == 0 && s[2] == st) {
      C xv = C(*x);
      for (int64_t i = 0; i < n; ++i) o[i] = O(f(xv, C(y[i])));
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<O*>(p[0] + i * s[0]) =
            O(f(C(*reinterpret_cast<const T*>(p[1] + i * s[1])), C(*reinterpret_cast<const T*>(p[2] + i * s[2]))));
    }
  });
}

template <typename O, typename T, typename F>
void run1(const Tensor& out, const Tensor& a, F f) {
  using C = acc_t<T>;
  for_each<2>(out->shape, {out.get(), a.get()}, [&](char** p, const int64_t* s, int64_t n) {
    O* o = reinterpret_cast<O*>(p[0]);
    const T* x = reinterpret_cast<const T*>(p[1]);
    if (s[0] == int64_t(sizeof(O)) && s[1] == int64_t(sizeof(T))) {
      for (int64_t i = 0; i < n; ++i) o[i] = O(f(C(x[i])));
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<O*>(p[0] + i * s[0]) = O(f(C(*reinterpret_cast<const T*>(p[1] + i * s[1]))));
    }
  });
}

template <typename C> C floordiv(C a, C b) {
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
template <typename C> C pymod(C a, C b) {
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
template <typename C> C ipow(C a, C b) {
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
template <typename C> C vmax(C a, C b) {
  if constexpr (!std::is_integral_v<C>) if (a != a || b != b) return a + b;
  return a > b ? a : b;
}
template <typename C> C vmin(C a, C b) {
  if constexpr (!std::is_integral_v<C>) if (a != a || b != b) return a + b;
  return a < b ? a : b;
}

// Integer add/sub/mul wrap around (two's complement) rather than overflow, which is undefined.
template <typename C, typename F> C wrapping(C x, C y, F f) {
  if constexpr (std::is_integral_v<C>) return C(f(std::make_unsigned_t<C>(x), std::make_unsigned_t<C>(y)));
  else return f(x, y);
}

template <typename T>
void binary_t(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  using C = acc_t<T>;
  switch (op) {
    case BinaryOp::Add: return run2<T, T>(out, a, b, [](C x, C y) { return wrapping(x, y, std::plus<>{}); });
    case BinaryOp::Sub: return run2<T, T>(out, a, b, [](C x, C y) { return wrapping(x, y, std::minus<>{}); });
    case BinaryOp::Mul: return run2<T, T>(out, a, b, [](C x, C y) { return wrapping(x, y, std::multiplies<>{}); });
    case BinaryOp::Div: return run2<T, T>(out, a, b, [](C x, C y) { return x / y; });
    case BinaryOp::FloorDiv: return run2<T, T>(out, a, b, [](C x, C y) { return floordiv(x, y); });
    case BinaryOp::Rem: return run2<T, T>(out, a, b, [](C x, C y) { return pymod(x, y); });
    case BinaryOp::Pow: return run2<T, T>(out, a, b, [](C x, C y) { return ipow(x, y); });
    case BinaryOp::Max: return run2<T, T>(out, a, b, [](C x, C y) { return vmax(x, y); });
    case BinaryOp::Min: return run2<T, T>(out, a, b, [](C x, C y) { return vmin(x, y); });
    case BinaryOp::Atan2: return run2<T, T>(out, a, b, [](C x, C y) { return C(std::atan2(double(x), double(y))); });
    case BinaryOp::Eq: return run2<bool, T>(out, a, b, [](C x, C y) { return x == y; });
    case BinaryOp::Ne: return run2<bool, T>(out, a, b, [](C x, C y) { return x != y; });
    case BinaryOp::Lt: return run2<bool, T>(out, a, b, [](C x, C y) { return x < y; });
    case BinaryOp::Le: return run2<bool, T>(out, a, b, [](C x, C y) { return x <= y; });
    case BinaryOp::Gt: return run2<bool, T>(out, a, b, [](C x, C y) { return x > y; });
    case BinaryOp::Ge: return run2<bool, T>(out, a, b, [](C x, C y) { return x >= y; });
    case BinaryOp::And: return run2<bool, T>(out, a, b, [](C x, C y) { return (x != C(0)) && (y != C(0)); });
    case BinaryOp::Or: return run2<bool, T>(out, a, b, [](C x, C y) { return (x != C(0)) || (y != C(0)); });
    case BinaryOp::Xor: return run2<bool, T>(out, a, b, [](C x, C y) { return (x != C(0)) != (y != C(0)); });
  }
}

constexpr double kSqrt1_2 = 0.70710678118654752440;
constexpr double kSqrt2OverPi = 0.79788456080286535588;

template <typename T>
void float_unary_t(UnaryOp op, const Tensor& out, const Tensor& x) {
  using C = acc_t<T>;
  switch (op) {
    case UnaryOp::Exp: return run1<T, T>(out, x, [](C v) { return sexp(v); });
    case UnaryOp::Log: return run1<T, T>(out, x, [](C v) { return std::log(v); });
    case UnaryOp::Log2: return run1<T, T>(out, x, [](C v) { return std::log2(v); });
    case UnaryOp::Log1p: return run1<T, T>(out, x, [](C v) { return std::log1p(v); });
    case UnaryOp::Expm1: return run1<T, T>(out, x, [](C v) { return std::expm1(v); });
    case UnaryOp::Sqrt: return run1<T, T>(out, x, [](C v) { return std::sqrt(v); });
    case UnaryOp::Rsqrt: return run1<T, T>(out, x, [](C v) { return C(1) / std::sqrt(v); });
    case UnaryOp::Sin: return run1<T, T>(out, x, [](C v) { return std::sin(v); });
    case UnaryOp::Cos: return run1<T, T>(out, x, [](C v) { return std::cos(v); });
    case UnaryOp::Tanh: return run1<T, T>(out, x, [](C v) { return stanh(v); });
    case UnaryOp::Sigmoid: return run1<T, T>(out, x, [](C v) { return ssigmoid(v); });
    case UnaryOp::Gelu: return run1<T, T>(out, x, [](C v) { return C(0.5) * v * (C(1) + std::erf(v * C(kSqrt1_2))); });
    case UnaryOp::GeluTanh:
      return run1<T, T>(out, x, [](C v) {
        return C(0.5) * v * (C(1) + stanh(C(kSqrt2OverPi) * (v + C(0.044715) * v * v * v)));
      });
    case UnaryOp::Silu: return run1<T, T>(out, x, [](C v) { return v * ssigmoid(v); });
    case UnaryOp::Erf: return run1<T, T>(out, x, [](C v) { return std::erf(v); });
    case UnaryOp::Floor: return run1<T, T>(out, x, [](C v) { return std::floor(v); });
    case UnaryOp::Ceil: return run1<T, T>(out, x, [](C v) { return std::ceil(v); });
    case UnaryOp::Round: return run1<T, T>(out, x, [](C v) { return std::nearbyint(v); });
    case UnaryOp::Trunc: return run1<T, T>(out, x, [](C v) { return std::trunc(v); });
    case UnaryOp::Reciprocal: return run1<T, T>(out, x, [](C v) { return C(1) / v; });
    case UnaryOp::IsNan: return run1<bool, T>(out, x, [](C v) { return v != v; });
    case UnaryOp::IsInf: return run1<bool, T>(out, x, [](C v) { return std::isinf(v); });
    case UnaryOp::IsFinite: return run1<bool, T>(out, x, [](C v) { return std::isfinite(v); });
    default: break;
  }
}

template <typename T>
void unary_t(UnaryOp op, const Tensor& out, const Tensor& x) {
  using C = acc_t<T>;
  switch (op) {
    case UnaryOp::Neg: return run1<T, T>(out, x, [](C v) { return -v; });
    case UnaryOp::Abs: return run1<T, T>(out, x, [](C v) { return v < C(0) ? -v : v; });
    case UnaryOp::Square: return run1<T, T>(out, x, [](C v) { return v * v; });
    case UnaryOp::Relu: return run1<T, T>(out, x, [](C v) { return v < C(0) ? C(0) : v; });  // NaN stays NaN
    case UnaryOp::Sign: return run1<T, T>(out, x, [](C v) { return C((C(0) < v) - (v < C(0))); });
    case UnaryOp::Not: return run1<bool, T>(out, x, [](C v) { return v == C(0); });
    default:
      if constexpr (std::is_floating_point_v<C>) return float_unary_t<T>(op, out, x);
      // integers: floor/ceil/round/trunc are the identity; predicates are constant
      switch (op) {
        case UnaryOp::Floor: case UnaryOp::Ceil: case UnaryOp::Round: case UnaryOp::Trunc:
          return run1<T, T>(out, x, [](C v) { return v; });
        case UnaryOp::IsNan: case UnaryOp::IsInf: return run1<bool, T>(out, x, [](C) { return false; });
        case UnaryOp::IsFinite: return run1<bool, T>(out, x, [](C) { return true; });
        default: throw TypeError(msg("[unary] op not supported for ", dtype_name(x->dtype)));
      }
  }
}

}  // namespace

void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  SX_DISPATCH_ALL(a->dtype, "binary", [&] { binary_t<scalar_t>(op, out, a, b); });
}

void unary(UnaryOp op, const Tensor& out, const Tensor& x) {
  SX_DISPATCH_ALL(x->dtype, "unary", [&] { unary_t<scalar_t>(op, out, x); });
}

void copy(const Tensor& dst, const Tensor& src) {
  SX_DISPATCH_ALL(dst->dtype, "copy", [&] {
    using D = scalar_t;
    SX_DISPATCH_ALL(src->dtype, "copy", [&] {
      using S = scalar_t;
      if constexpr (std::is_same_v<D, S>) {
        for_each<2>(dst->shape, {dst.get(), src.get()}, [&](char** p, const int64_t* s, int64_t n) {
          if (s[0] == int64_t(sizeof(D)) && s[1] == int64_t(sizeof(D))) {
            std::memcpy(p[0], p[1], size_t(n) * sizeof(D));
          } else {
            for (int64_t i = 0; i < n; ++i)
              *reinterpret_cast<D*>(p[0] + i * s[0]) = *reinterpret_cast<const D*>(p[1] + i * s[1]);
          }
        });
      } else if constexpr (std::is_same_v<D, bool>) {
        run1<D, S>(dst, src, [](acc_t<S> v) { return v != acc_t<S>(0); });
      } else {
        run1<D, S>(dst, src, [](acc_t<S> v) { return acc_t<D>(v); });
      }
    });
  });
}

void fill(const Tensor& t, const Scalar& v) {
  SX_DISPATCH_ALL(t->dtype, "fill", [&] {
    scalar_t val = scalar_t(v.to<acc_t<scalar_t>>());
    for_each<1>(t->shape, {t.get()}, [&](char** p, const int64_t* s, int64_t n) {
      for (int64_t i = 0; i < n; ++i) *reinterpret_cast<scalar_t*>(p[0] + i * s[0]) = val;
    });
  });
}

void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  SX_DISPATCH_ALL(out->dtype, "where", [&] {
    using T = scalar_t;
    for_each<4>(out->shape, {out.get(), cond.get(), a.get(), b.get()}, [&](char** p, const int64_t* s, int64_t n) {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<T*>(p[0] + i * s[0]) = *reinterpret_cast<const bool*>(p[1] + i * s[1])
                                                     ? *reinterpret_cast<const T*>(p[2] + i * s[2])
                                                     : *reinterpret_cast<const T*>(p[3] + i * s[3]);
    });
  });
}

void param_unary(ParamOp op, const Tensor& out, const Tensor& x, double p0, double p1) {
  SX_DISPATCH_ALL(x->dtype, "param_unary", [&] {
    using T = scalar_t;
    using C = acc_t<T>;
    C a = C(p0), b = C(p1);
    switch (op) {
      case ParamOp::Softplus:  // log(1 + exp(beta x)) / beta, linear above threshold
        if constexpr (std::is_floating_point_v<C>)
          run1<T, T>(out, x, [a, b](C v) { return v * a > b ? v : std::log1p(std::exp(v * a)) / a; });
        break;
      case ParamOp::LeakyRelu: run1<T, T>(out, x, [a](C v) { return v > C(0) ? v : v * a; }); break;
      case ParamOp::Elu:
        if constexpr (std::is_floating_point_v<C>)
          run1<T, T>(out, x, [a](C v) { return v > C(0) ? v : a * std::expm1(v); });
        break;
      case ParamOp::ClampMin: run1<T, T>(out, x, [a](C v) { return v < a ? a : v; }); break;
      case ParamOp::ClampMax: run1<T, T>(out, x, [b](C v) { return v > b ? b : v; }); break;
      case ParamOp::Clamp: run1<T, T>(out, x, [a, b](C v) { return v < a ? a : (v > b ? b : v); }); break;
    }
  });
}

}  // namespace sx::cpu
