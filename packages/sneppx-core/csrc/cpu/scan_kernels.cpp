// Running products and running log-sum-exp along the middle axis of a contiguous (outer, n, inner)
// layout, and the backward of the running product. Each of the outer * inner lines is scanned on its
// own (lines in parallel). float32 accumulates in double, as cumsum does.
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/parallel.h"
#include "cpu/kernels.h"
#include "ops/kernels.h"

namespace sx::cpu {
namespace {

constexpr int64_t kGrain = 32768;

template <typename T> using wide_t = std::conditional_t<std::is_same_v<T, float>, double, T>;

// a * b; int64 products wrap around instead of overflowing (signed overflow is undefined in C++).
template <typename C> C mul_wrap(C a, C b) {
  if constexpr (std::is_integral_v<C>) return C(uint64_t(a) * uint64_t(b));
  else return a * b;
}

// log(exp(a) + exp(b)) without overflow; equal arguments (infinities included) give a + log 2.
template <typename C> C log_add_exp(C a, C b) {
  if (a == b) return a + C(std::log(2.0));
  C m = a > b ? a : b;
  return m + std::log1p(std::exp(-std::abs(a - b)));
}

// Calls f(first element offset) for each of the outer * inner lines, in parallel.
template <typename F> void each_line(int64_t outer, int64_t n, int64_t inner, F f) {
  parallel_for(outer * inner, std::max<int64_t>(1, kGrain / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) f((c / inner) * n * inner + c % inner);
  });
}

void scan_cpu(ScanOp op, const Tensor& in, const Tensor& out, int64_t outer, int64_t n, int64_t inner) {
  auto run = [&](auto zero) {
    using T = decltype(zero);
    using C = wide_t<T>;
    const T* x = in->data<T>();
    T* y = out->data<T>();
    each_line(outer, n, inner, [&](int64_t base) {
      if (n == 0) return;
      C acc = C(x[base]);
      y[base] = T(acc);
      for (int64_t i = 1; i < n; ++i) {
        C v = C(x[base + i * inner]);
        if constexpr (std::is_floating_point_v<T>)
          acc = op == ScanOp::Prod ? acc * v : log_add_exp(acc, v);
        else
          acc = mul_wrap(acc, v);
        y[base + i * inner] = T(acc);
      }
    });
  };
  switch (in->dtype) {
    case DType::Float32: run(float{}); break;
    case DType::Float64: run(double{}); break;
    case DType::Int64:
      SX_CHECK(op == ScanOp::Prod, TypeError, "[logcumsumexp] expected a floating tensor, got int64");
      run(int64_t{});
      break;
    default: SX_CHECK(false, TypeError, "[scan] unsupported dtype ", dtype_name(in->dtype));
  }
}

// gx_i = sum_{j >= i} g_j * prod_{k <= j, k != i} x_k = L_i * R_i with L_i = x_0 ... x_{i-1} and
// R_i = g_i + x_{i+1} * R_{i+1}: exact with zeros in x, and no division.
void cumprod_bwd_cpu(const Tensor& x, const Tensor& g, const Tensor& gx, int64_t outer, int64_t n, int64_t inner) {
  SX_DISPATCH_F32_F64(x->dtype, "cumprod", [&] {
    using T = scalar_t;
    using C = wide_t<T>;
    const T *xp = x->data<T>(), *gp = g->data<T>();
    T* o = gx->data<T>();
    each_line(outer, n, inner,
              [&](int64_t base) { kern::cumprod_grad_line<T, C>(xp + base, gp + base, o + base, n, inner); });
  });
}

}  // namespace

SX_REGISTER_KERNEL(kern::scan, CPU, &scan_cpu);
SX_REGISTER_KERNEL(kern::cumprod_bwd, CPU, &cumprod_bwd_cpu);

}  // namespace sx::cpu
