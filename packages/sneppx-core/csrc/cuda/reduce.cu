// CUDA reductions over a contiguous (outer, n, inner) layout into (outer, inner) outputs: with
// inner == 1 a block reduces each row (threads stride over it, then a tree in shared memory);
// otherwise each thread runs down one column (neighbouring threads read neighbouring columns).
// Sums accumulate in double for floating types and wrap around for integers, as on the CPU.
#include <limits>

#include "cuda/cuda_util.cuh"
#include "cuda/kernels.h"
#include "ops/binary_math.h"

namespace sx::cuda {

namespace {

template <typename W> struct SumOp {
  __device__ static W init() { return W(0); }
  __device__ static W read(W x) { return x; }
  __device__ static W step(W a, W b) { return bm::wadd(a, b); }
};
template <typename W> struct SquaresOp : SumOp<W> {  // sum of x * x
  __device__ static W read(W x) { return bm::wmul(x, x); }
};
template <typename W> struct NanSumOp : SumOp<W> {  // sum with NaN taken as 0
  __device__ static W read(W x) { return x == x ? x : W(0); }
};
template <typename W> struct ProdOp {
  __device__ static W init() { return W(1); }
  __device__ static W read(W x) { return x; }
  __device__ static W step(W a, W b) { return bm::wmul(a, b); }
};
// Max/min in which a NaN, once seen, sticks.
template <typename W> struct MaxOp {
  __device__ static W init() { return std::numeric_limits<W>::lowest(); }
  __device__ static W read(W x) { return x; }
  __device__ static W step(W a, W b) {
    if constexpr (std::is_integral_v<W>) return a > b ? a : b;
    else return (b > a || b != b) ? b : a;
  }
};
template <typename W> struct MinOp {
  __device__ static W init() { return std::numeric_limits<W>::max(); }
  __device__ static W read(W x) { return x; }
  __device__ static W step(W a, W b) {
    if constexpr (std::is_integral_v<W>) return a < b ? a : b;
    else return (b < a || b != b) ? b : a;
  }
};

// The stored result: the accumulator, times `scale` for a mean (scale 0: none).
template <typename T, typename W> __device__ T finish(W acc, double scale) {
  if constexpr (std::is_floating_point_v<W>) if (scale != 0) return T(acc * W(scale));
  return T(acc);
}

template <typename T, typename W, typename Op>
__global__ void reduce_rows(const T* in, T* out, int64_t outer, int64_t n, double scale) {
  __shared__ W buf[kThreads];
  for (int64_t o = blockIdx.x; o < outer; o += gridDim.x) {
    const T* p = in + o * n;
    W acc = Op::init();
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) acc = Op::step(acc, Op::read(W(p[i])));
    buf[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
      if (int(threadIdx.x) < s) buf[threadIdx.x] = Op::step(buf[threadIdx.x], buf[threadIdx.x + s]);
      __syncthreads();
    }
    if (threadIdx.x == 0) out[o] = finish<T>(buf[0], scale);
    __syncthreads();
  }
}

template <typename T, typename W, typename Op>
__global__ void reduce_cols(const T* in, T* out, int64_t outer, int64_t n, int64_t inner, double scale) {
  int64_t total = outer * inner;
  for (int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; idx < total; idx += int64_t(gridDim.x) * blockDim.x) {
    int64_t o = idx / inner, j = idx % inner;
    const T* p = in + o * n * inner + j;
    W acc = Op::init();
    for (int64_t i = 0; i < n; ++i) acc = Op::step(acc, Op::read(W(p[i * inner])));
    out[idx] = finish<T>(acc, scale);
  }
}

template <typename T, typename W, typename Op>
void launch(const Tensor& in, const Tensor& out, int64_t outer, int64_t n, int64_t inner, double scale = 0) {
  const T* p = in->data<T>();
  T* o = out->data<T>();
  if (inner == 1) {
    unsigned grid = unsigned(outer < 65535 * 8 ? outer : 65535 * 8);
    reduce_rows<T, W, Op><<<grid, kThreads, 0, stream()>>>(p, o, outer, n, scale);
  } else {
    reduce_cols<T, W, Op><<<blocks_for(outer * inner), kThreads, 0, stream()>>>(p, o, outer, n, inner, scale);
  }
}

template <typename T, typename Acc>
__global__ void arg_reduce_kernel(const T* in, T* values, int64_t* indices, int64_t outer, int64_t n, int64_t inner,
                                  bool is_max) {
  int64_t total = outer * inner;
  for (int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; idx < total; idx += int64_t(gridDim.x) * blockDim.x) {
    int64_t o = idx / inner, j = idx % inner;
    const T* q = in + o * n * inner + j;
    Acc best = Acc(q[0]);
    int64_t bi = 0;
    for (int64_t i = 1; i < n; ++i) {
      Acc x = Acc(q[i * inner]);
      if constexpr (!std::is_integral_v<Acc>) if (best != best) break;  // NaN wins, first one
      bool better = is_max ? (x > best) : (x < best);
      if constexpr (!std::is_integral_v<Acc>) better = better || (x != x);
      if (better) {
        best = x;
        bi = i;
      }
    }
    values[idx] = T(best);
    indices[idx] = bi;
  }
}

}  // namespace

void reduce(ReduceOp op, const Tensor& in, const Tensor& out, int64_t outer, int64_t n, int64_t inner) {
  if (outer * inner == 0) return;
  use_device(in->device());
  SX_CUDA_DISPATCH(in->dtype, "reduce", [&] {
    using T = scalar_t;
    using C = std::conditional_t<std::is_same_v<T, bool>, int64_t, acc_t<T>>;
    using W = std::conditional_t<std::is_floating_point_v<C>, double, C>;  // sums of floats in double
    switch (op) {
      case ReduceOp::Sum: launch<T, W, SumOp<W>>(in, out, outer, n, inner); break;
      case ReduceOp::Mean:  // integer means are rejected by the op; n = 0 gives NaN as on the CPU
        launch<T, W, SumOp<W>>(in, out, outer, n, inner, n ? 1.0 / double(n) : NAN);
        break;
      case ReduceOp::SumSquares: launch<T, W, SquaresOp<W>>(in, out, outer, n, inner); break;
      case ReduceOp::NanSum: launch<T, W, NanSumOp<W>>(in, out, outer, n, inner); break;
      case ReduceOp::Prod: launch<T, C, ProdOp<C>>(in, out, outer, n, inner); break;
      case ReduceOp::Max: launch<T, C, MaxOp<C>>(in, out, outer, n, inner); break;
      case ReduceOp::Min: launch<T, C, MinOp<C>>(in, out, outer, n, inner); break;
    }
  });
  check_launch("reduce");
}

void arg_reduce(bool is_max, const Tensor& in, const Tensor& values, const Tensor& indices, int64_t outer, int64_t n,
                int64_t inner) {
  if (outer * inner == 0) return;
  use_device(in->device());
  SX_CUDA_DISPATCH(in->dtype, is_max ? "argmax" : "argmin", [&] {
    using T = scalar_t;
    arg_reduce_kernel<T, acc_t<T>><<<blocks_for(outer * inner), kThreads, 0, stream()>>>(
        in->data<T>(), values->data<T>(), indices->data<int64_t>(), outer, n, inner, is_max);
  });
  check_launch(is_max ? "argmax" : "argmin");
}

}  // namespace sx::cuda
