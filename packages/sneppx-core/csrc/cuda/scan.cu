// CUDA kernels of the running reductions along the middle axis of a contiguous (outer, n, inner)
// layout (cumsum, cumprod, logcumsumexp: one thread per line, walking it in order, as the CPU does)
// and the gradient of cumprod, and of logsumexp (a block per row, or a thread per column). float32 running sums accumulate in
// double and integer ones wrap around, as on the CPU.
#include <cmath>

#include "cuda/cuda_util.cuh"
#include "cuda/kernels.h"
#include "ops/binary_math.h"

namespace sx::cuda {

namespace {

template <typename T> using wide_t = std::conditional_t<std::is_same_v<T, float>, double, acc_t<T>>;

// log(exp(a) + exp(b)) without overflow; equal arguments (infinities included) give a + log 2.
template <typename C> __device__ C log_add_exp(C a, C b) {
  if (a == b) return a + C(0.69314718055994530942);
  C m = a > b ? a : b;
  return m + std::log1p(std::exp(-std::fabs(a - b)));
}

// op 0: sum, 1: product, 2: log-sum-exp
template <typename T>
__global__ void scan_lines(int op, const T* x, T* y, int64_t outer, int64_t n, int64_t inner) {
  using C = wide_t<T>;
  SX_GRID_LOOP(c, outer * inner) {
    const int64_t base = (c / inner) * n * inner + c % inner;
    C acc = op == 0 ? C(0) : C(x[base]);
    for (int64_t i = 0; i < n; ++i) {
      const C v = C(x[base + i * inner]);
      if (op == 0) acc = bm::wadd(acc, v);
      else if (i == 0) continue;
      else if (op == 1) acc = bm::wmul(acc, v);
      else if constexpr (std::is_floating_point_v<C>) acc = log_add_exp(acc, v);
      y[base + i * inner] = T(acc);
    }
    if (op != 0 && n > 0) y[base] = T(C(x[base]));
  }
}

// The gradient of cumprod along each line (ops/kernels.h's cumprod_grad_line, as on the CPU).
template <typename T>
__global__ void cumprod_bwd_lines(const T* x, const T* g, T* o, int64_t outer, int64_t n, int64_t inner) {
  SX_GRID_LOOP(c, outer * inner) {
    const int64_t base = (c / inner) * n * inner + c % inner;
    kern::cumprod_grad_line<T, wide_t<T>>(x + base, g + base, o + base, n, inner);
  }
}

// max + log(sum(exp(x - max))), or the max itself where it is not finite.
template <typename T> __global__ void lse_rows(const T* x, T* out, int64_t outer, int64_t n) {
  for (int64_t r = blockIdx.x; r < outer; r += gridDim.x) {
    const T* p = x + r * n;
    T m = -INFINITY;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) m = MaxOf{}(m, p[i]);
    m = block_reduce(m, MaxOf{});
    double s = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += double(std::exp(p[i] - m));
    s = block_reduce(s, SumOf{});
    if (threadIdx.x == 0) out[r] = std::isfinite(m) ? T(double(m) + std::log(s)) : m;
  }
}

template <typename T> __global__ void lse_cols(const T* x, T* out, int64_t outer, int64_t n, int64_t inner) {
  SX_GRID_LOOP(c, outer * inner) {
    const T* p = x + (c / inner) * n * inner + c % inner;
    T m = -INFINITY;
    for (int64_t i = 0; i < n; ++i) m = MaxOf{}(m, p[i * inner]);
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += double(std::exp(p[i * inner] - m));
    out[c] = std::isfinite(m) ? T(double(m) + std::log(s)) : m;
  }
}

void run_scan(int op, const char* name, const Tensor& in, const Tensor& out, int64_t outer, int64_t n, int64_t inner) {
  if (outer * n * inner == 0) return;
  use_device(in->device());
  SX_CUDA_DISPATCH(in->dtype, name, [&] {
    using T = scalar_t;
    scan_lines<T><<<blocks_for(outer * inner), kThreads, 0, stream()>>>(op, in->data<T>(), out->data<T>(), outer, n, inner);
  });
  check_launch(name);
}

}  // namespace

void cumsum(const Tensor& in, const Tensor& out, int64_t outer, int64_t n, int64_t inner) {
  run_scan(0, "cumsum", in, out, outer, n, inner);
}

void scan(ScanOp op, const Tensor& in, const Tensor& out, int64_t outer, int64_t n, int64_t inner) {
  if (op == ScanOp::LogSumExp)
    SX_CHECK(is_floating(in->dtype), TypeError, "[logcumsumexp] expected a floating tensor, got ",
             dtype_name(in->dtype));
  run_scan(op == ScanOp::Prod ? 1 : 2, op == ScanOp::Prod ? "cumprod" : "logcumsumexp", in, out, outer, n, inner);
}

void cumprod_bwd(const Tensor& x, const Tensor& g, const Tensor& gx, int64_t outer, int64_t n, int64_t inner) {
  if (outer * n * inner == 0) return;
  use_device(x->device());
  SX_CUDA_DISPATCH_FLOAT(x->dtype, "cumprod", [&] {
    using T = scalar_t;
    cumprod_bwd_lines<T><<<blocks_for(outer * inner), kThreads, 0, stream()>>>(x->data<T>(), g->data<T>(),
                                                                              gx->data<T>(), outer, n, inner);
  });
  check_launch("cumprod");
}

void logsumexp(const Tensor& in, const Tensor& out, int64_t outer, int64_t n, int64_t inner) {
  if (outer * inner == 0) return;
  use_device(in->device());
  SX_CUDA_DISPATCH_FLOAT(in->dtype, "logsumexp", [&] {
    using T = scalar_t;
    if (inner == 1) lse_rows<T><<<row_grid(outer), kThreads, 0, stream()>>>(in->data<T>(), out->data<T>(), outer, n);
    else lse_cols<T><<<blocks_for(outer * inner), kThreads, 0, stream()>>>(in->data<T>(), out->data<T>(), outer, n, inner);
  });
  check_launch("logsumexp");
}

}  // namespace sx::cuda
