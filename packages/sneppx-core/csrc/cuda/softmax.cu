// softmax / log_softmax over the middle axis of a contiguous (outer, n, inner) layout, forward and
// backward: with inner == 1 a block handles a row (warp shuffles, then across warps); otherwise one
// thread runs down each column.
#include "cuda/cuda_util.cuh"
#include "cuda/kernels.h"
#include "ops/nn.h"

namespace sx::cuda {

namespace {

template <typename T>
__global__ void softmax_rows(const T* x, T* y, int64_t outer, int64_t n, bool log) {
  for (int64_t r = blockIdx.x; r < outer; r += gridDim.x) {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    T m = -INFINITY;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) m = MaxOf{}(m, xr[j]);
    m = block_reduce(m, MaxOf{});
    T s = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) s += std::exp(xr[j] - m);
    s = block_reduce(s, SumOf{});
    if (log) {
      T ls = m + std::log(s);
      for (int64_t j = threadIdx.x; j < n; j += blockDim.x) yr[j] = xr[j] - ls;
    } else {
      for (int64_t j = threadIdx.x; j < n; j += blockDim.x) yr[j] = std::exp(xr[j] - m) / s;
    }
  }
}

template <typename T>
__global__ void softmax_cols(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool log) {
  int64_t total = outer * inner;
  for (int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; idx < total; idx += int64_t(gridDim.x) * blockDim.x) {
    int64_t o = idx / inner, c = idx % inner;
    const T* xc = x + o * n * inner + c;
    T* yc = y + o * n * inner + c;
    T m = -INFINITY;
    for (int64_t j = 0; j < n; ++j) m = MaxOf{}(m, xc[j * inner]);
    T s = 0;
    for (int64_t j = 0; j < n; ++j) s += std::exp(xc[j * inner] - m);
    T ls = m + std::log(s);
    for (int64_t j = 0; j < n; ++j) yc[j * inner] = log ? xc[j * inner] - ls : std::exp(xc[j * inner] - m) / s;
  }
}

// log: gx = g - softmax * sum(g); else gx = y * (g - sum(g * y)).
template <typename T>
__global__ void softmax_bwd_rows(const T* g, const T* y, T* gx, int64_t outer, int64_t n, bool log) {
  for (int64_t r = blockIdx.x; r < outer; r += gridDim.x) {
    const T* gr = g + r * n;
    const T* yr = y + r * n;
    T* o = gx + r * n;
    T s = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) s += log ? gr[j] : gr[j] * yr[j];
    s = block_reduce(s, SumOf{});
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) o[j] = log ? gr[j] - std::exp(yr[j]) * s : yr[j] * (gr[j] - s);
  }
}

template <typename T>
__global__ void softmax_bwd_cols(const T* g, const T* y, T* gx, int64_t outer, int64_t n, int64_t inner, bool log) {
  int64_t total = outer * inner;
  for (int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; idx < total; idx += int64_t(gridDim.x) * blockDim.x) {
    int64_t off = (idx / inner) * n * inner + idx % inner;
    T s = 0;
    for (int64_t j = 0; j < n; ++j) s += log ? g[off + j * inner] : g[off + j * inner] * y[off + j * inner];
    for (int64_t j = 0; j < n; ++j) {
      int64_t k = off + j * inner;
      gx[k] = log ? g[k] - std::exp(y[k]) * s : y[k] * (g[k] - s);
    }
  }
}


}  // namespace

void softmax_fwd(const Tensor& x, const Tensor& y, int64_t outer, int64_t n, int64_t inner, bool log) {
  if (outer * n * inner == 0) return;
  use_device(x->device());
  SX_CUDA_DISPATCH_FLOAT(x->dtype, log ? "log_softmax" : "softmax", [&] {
    using T = scalar_t;
    if (inner == 1) softmax_rows<T><<<row_grid(outer), kThreads, 0, stream()>>>(x->data<T>(), y->data<T>(), outer, n, log);
    else softmax_cols<T><<<blocks_for(outer * inner), kThreads, 0, stream()>>>(x->data<T>(), y->data<T>(), outer, n, inner, log);
  });
  check_launch(log ? "log_softmax" : "softmax");
}

void softmax_bwd(const Tensor& g, const Tensor& y, const Tensor& gx, int64_t outer, int64_t n, int64_t inner, bool log) {
  if (outer * n * inner == 0) return;
  use_device(y->device());
  SX_CUDA_DISPATCH_FLOAT(y->dtype, log ? "log_softmax" : "softmax", [&] {
    using T = scalar_t;
    if (inner == 1)
      softmax_bwd_rows<T><<<row_grid(outer), kThreads, 0, stream()>>>(g->data<T>(), y->data<T>(), gx->data<T>(), outer, n, log);
    else
      softmax_bwd_cols<T><<<blocks_for(outer * inner), kThreads, 0, stream()>>>(g->data<T>(), y->data<T>(), gx->data<T>(),
                                                                               outer, n, inner, log);
  });
  check_launch(log ? "log_softmax" : "softmax");
}

}  // namespace sx::cuda
