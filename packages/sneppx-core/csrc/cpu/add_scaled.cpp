// a + alpha * b in one pass (add and sub with alpha), and x + value * (t1 * t2) (addcmul, addcdiv).
// This file is compiled without FMA contraction (CMakeLists.txt): each product is rounded before the
// add, so the results have the bits of the separate multiplies and adds.
#include "cpu/kernels.h"
#include "cpu/loops.h"
#include "ops/binary_math.h"
#include "ops/kernels.h"

namespace sx::cpu {
namespace {

template <typename T, bool Sub>
void add_scaled_t(const Tensor& out, const Tensor& a, const Tensor& b, acc_t<T> w) {
  using C = acc_t<T>;
  auto f = [w](C x, C y) {
    C p = C(T(bm::wmul(y, w)));  // rounded to the dtype, as mul's result would be
    return T(Sub ? bm::wsub(x, p) : bm::wadd(x, p));
  };
  for_each_rows<3>(out->shape, {out.get(), a.get(), b.get()},
                   [&](char** p, const int64_t* s, int64_t n, const int64_t* os, int64_t m) {
                     binary_run<T, T, C>(p, s, n, os, m, f);
                   });
}

void add_scaled(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha, bool subtract) {
  SX_DISPATCH_ALL(out->dtype, "add", [&] {
    using C = acc_t<scalar_t>;
    const C w = C(scalar_t(alpha.to<C>()));  // alpha as a scalar tensor of the dtype holds it
    if (subtract) add_scaled_t<scalar_t, true>(out, a, b, w);
    else add_scaled_t<scalar_t, false>(out, a, b, w);
  });
}
template <typename T, bool Divide>
void addcmul_t(const Tensor& out, const Tensor& x, const Tensor& t1, const Tensor& t2, acc_t<T> v) {
  using C = acc_t<T>;
  auto f = [v](C a, C b, C c) {
    C q = C(T(Divide ? b / c : b * c));  // each step rounded to the dtype, as t1 * t2 * value + x would be
    return T(a + C(T(q * v)));
  };
  for_each<4>(out->shape, {out.get(), x.get(), t1.get(), t2.get()}, [&](char** p, const int64_t* s, int64_t n) {
    constexpr int64_t st = sizeof(T);
    T* o = reinterpret_cast<T*>(p[0]);
    const T* a = reinterpret_cast<const T*>(p[1]);
    const T* b = reinterpret_cast<const T*>(p[2]);
    const T* c = reinterpret_cast<const T*>(p[3]);
    if (s[0] == st && s[1] == st && s[2] == st && s[3] == st) {
      for (int64_t i = 0; i < n; ++i) o[i] = f(C(a[i]), C(b[i]), C(c[i]));
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<T*>(p[0] + i * s[0]) = f(C(*reinterpret_cast<const T*>(p[1] + i * s[1])),
                                                   C(*reinterpret_cast<const T*>(p[2] + i * s[2])),
                                                   C(*reinterpret_cast<const T*>(p[3] + i * s[3])));
    }
  });
}

void addcmul(const Tensor& out, const Tensor& x, const Tensor& t1, const Tensor& t2, const Scalar& value, bool divide) {
  SX_DISPATCH_FLOAT(out->dtype, "addcmul", [&] {
    using C = acc_t<scalar_t>;
    const C v = C(scalar_t(value.to<C>()));
    if (divide) addcmul_t<scalar_t, true>(out, x, t1, t2, v);
    else addcmul_t<scalar_t, false>(out, x, t1, t2, v);
  });
}
}  // namespace

SX_REGISTER_KERNEL(kern::add_scaled, CPU, &add_scaled);
SX_REGISTER_KERNEL(kern::addcmul, CPU, &addcmul);

}  // namespace sx::cpu
