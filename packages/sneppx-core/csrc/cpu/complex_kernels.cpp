// The complex product on the CPU (kern::complex_mul, ops/complex.h).
#include "cpu/loops.h"
#include "ops/complex.h"

namespace sx::cpu {
namespace {
// T: the parts' type (float for complex64). Contiguous runs have compile-time strides (vector code).
template <typename T, bool Conj>
void complex_mul_t(const Tensor& out, const Tensor& a, const Tensor& b) {
  for_each<3>(out->shape, {out.get(), a.get(), b.get()}, [](char** p, const int64_t* s, int64_t n) {
    auto mul = [](T* o, const T* x, const T* y) {
      const T xr = x[0], xi = x[1], yr = y[0], yi = Conj ? -y[1] : y[1];
      o[0] = xr * yr - xi * yi;
      o[1] = xr * yi + xi * yr;
    };
    constexpr int64_t es = 2 * sizeof(T);
    T* o = reinterpret_cast<T*>(p[0]);
    const T* x = reinterpret_cast<const T*>(p[1]);
    const T* y = reinterpret_cast<const T*>(p[2]);
    if (s[0] == es && s[1] == es && s[2] == es) {
      for (int64_t i = 0; i < n; ++i) mul(o + 2 * i, x + 2 * i, y + 2 * i);
    } else if (s[0] == es && s[1] == es && s[2] == 0) {
      for (int64_t i = 0; i < n; ++i) mul(o + 2 * i, x + 2 * i, y);
    } else {
      for (int64_t i = 0; i < n; ++i)
        mul(reinterpret_cast<T*>(p[0] + i * s[0]), reinterpret_cast<const T*>(p[1] + i * s[1]),
            reinterpret_cast<const T*>(p[2] + i * s[2]));
    }
  });
}

void complex_mul(const Tensor& out, const Tensor& a, const Tensor& b, bool conj_b) {
  if (out->dtype == DType::Complex64)
    conj_b ? complex_mul_t<float, true>(out, a, b) : complex_mul_t<float, false>(out, a, b);
  else
    conj_b ? complex_mul_t<double, true>(out, a, b) : complex_mul_t<double, false>(out, a, b);
}
}  // namespace

SX_REGISTER_KERNEL(kern::complex_mul, CPU, &complex_mul);
}  // namespace sx::cpu
