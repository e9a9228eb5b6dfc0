// Running products, running log-sum-exp and running maxima/minima along the middle axis of a contiguous
// (outer, n, inner) layout, and the backward of the running product. Each of the outer * inner lines is
// scanned on its own (lines in parallel; the maxima/minima of columns in blocks). float32 accumulates in
// double, as cumsum does.
#include <algorithm>
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

// Whether x replaces the running extreme `best` (see kern::cum_extreme): a NaN always, else x >= best
// (x <= best for the minimum) unless best is a NaN.
template <bool IsMax, typename C> inline bool takes(C x, C best) {
  return x != x || (best == best && (IsMax ? x >= best : x <= best));
}

// Running max/min of rows (inner == 1) R at a time, so that R independent chains of compares are in
// flight (one row's chain ran at about 1 ns an element), and of columns in blocks of kColumns, whose
// running values and indices stay in arrays that the compiler keeps in vector registers.
template <typename T, bool IsMax, int R>
void cum_extreme_rows(const T* x, T* v, int64_t* ix, int64_t r0, int64_t n) {
  using C = acc_t<T>;
  C best[R];
  int64_t at[R] = {};
  for (int k = 0; k < R; ++k) best[k] = C(x[(r0 + k) * n]);
  for (int64_t i = 0; i < n; ++i)
    for (int k = 0; k < R; ++k) {
      const int64_t o = (r0 + k) * n + i;
      C c = C(x[o]);
      bool t = takes<IsMax>(c, best[k]);
      best[k] = t ? c : best[k];
      at[k] = t ? i : at[k];
      v[o] = T(best[k]);
      ix[o] = at[k];
    }
}

template <typename T, bool IsMax>
void cum_extreme_lines(const T* x, T* v, int64_t* ix, int64_t outer, int64_t n, int64_t inner) {
  using C = acc_t<T>;
  if (inner == 1) {
    parallel_for(outer, std::max<int64_t>(1, kGrain / n), [&](int64_t b, int64_t e) {
      int64_t r = b;
      for (; r + 4 <= e; r += 4) cum_extreme_rows<T, IsMax, 4>(x, v, ix, r, n);
      for (; r < e; ++r) cum_extreme_rows<T, IsMax, 1>(x, v, ix, r, n);
    });
    return;
  }
  constexpr int64_t kColumns = 32;
  const int64_t blocks = (inner + kColumns - 1) / kColumns;
  const int64_t grain = std::max<int64_t>(1, kGrain / (n * std::min(inner, kColumns)));
  parallel_for(outer * blocks, grain, [&](int64_t b, int64_t e) {
    for (int64_t u = b; u < e; ++u) {
      const int64_t o = u / blocks, j0 = u % blocks * kColumns, w = std::min(kColumns, inner - j0);
      C best[kColumns];
      int64_t at[kColumns] = {};
      const int64_t base = o * n * inner + j0;
      for (int64_t j = 0; j < w; ++j) best[j] = C(x[base + j]);
      for (int64_t i = 0; i < n; ++i) {
        const int64_t row = base + i * inner;
        for (int64_t j = 0; j < w; ++j) {
          C c = C(x[row + j]);
          bool t = takes<IsMax>(c, best[j]);
          best[j] = t ? c : best[j];
          at[j] = t ? i : at[j];
          v[row + j] = T(best[j]);
          ix[row + j] = at[j];
        }
      }
    }
  });
}

void cum_extreme_cpu(bool is_max, const Tensor& in, const Tensor& values, const Tensor& indices, int64_t outer,
                     int64_t n, int64_t inner) {
  if (outer * n * inner == 0) return;
  SX_DISPATCH_ALL(in->dtype, "cummax", [&] {
    using T = scalar_t;
    const T* x = in->data<T>();
    T* v = values->data<T>();
    int64_t* ix = indices->data<int64_t>();
    if (is_max) cum_extreme_lines<T, true>(x, v, ix, outer, n, inner);
    else cum_extreme_lines<T, false>(x, v, ix, outer, n, inner);
  });
}

}  // namespace

SX_REGISTER_KERNEL(kern::scan, CPU, &scan_cpu);
SX_REGISTER_KERNEL(kern::cumprod_bwd, CPU, &cumprod_bwd_cpu);
SX_REGISTER_KERNEL(kern::cum_extreme, CPU, &cum_extreme_cpu);

}  // namespace sx::cpu
