#include <atomic>
#include <cmath>

#include "cpu/kernels.h"
#include "cpu/loops.h"
#include "ops/binary_math.h"
#include "ops/kernels.h"

namespace sx::cpu {
namespace {
using namespace bm;

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

template <typename T>
void binary_t(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  using C = acc_t<T>;
  switch (op) {
    case BinaryOp::Add: return run2<T, T>(out, a, b, [](C x, C y) { return wadd(x, y); });
    case BinaryOp::Sub: return run2<T, T>(out, a, b, [](C x, C y) { return wsub(x, y); });
    case BinaryOp::Mul: return run2<T, T>(out, a, b, [](C x, C y) { return wmul(x, y); });
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

}  // namespace

void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  SX_DISPATCH_ALL(a->dtype, "binary", [&] { binary_t<scalar_t>(op, out, a, b); });
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

void clamp(const Tensor& out, const Tensor& x, double lo, double hi, bool has_lo, bool has_hi) {
  SX_DISPATCH_ALL(x->dtype, "clamp", [&] {
    using T = scalar_t;
    using C = acc_t<T>;
    C a = C(lo), b = C(hi);
    if (has_lo && has_hi) run1<T, T>(out, x, [a, b](C v) { return v < a ? a : (v > b ? b : v); });
    else if (has_lo) run1<T, T>(out, x, [a](C v) { return v < a ? a : v; });
    else run1<T, T>(out, x, [b](C v) { return v > b ? b : v; });
  });
}

SX_REGISTER_KERNEL(kern::binary, CPU, &binary);
SX_REGISTER_KERNEL(kern::where, CPU, &where);
SX_REGISTER_KERNEL(kern::clamp, CPU, &clamp);
SX_REGISTER_KERNEL(kern::copy, CPU, &copy);
SX_REGISTER_KERNEL(kern::fill, CPU, &fill);

}  // namespace sx::cpu
