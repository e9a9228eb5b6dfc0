// Shared by the CUDA kernels: error checks, the device guard, launch sizes and N-operand strided
// iteration (the GPU counterpart of cpu/loops.h).
#pragma once
#include <cuda_runtime.h>

#include <array>

#include "core/tensor.h"
#include "cpu/loops.h"

namespace sx::cuda {

// Raises RuntimeError naming the op and CUDA's message when a runtime call fails.
void check(cudaError_t e, const char* what);
#define SX_CUDA_CHECK(call, what) ::sx::cuda::check((call), (what))

// Makes `d` the current device of the calling thread (kernels run on their tensors' device).
void use_device(Device d);

// The stream every kernel and copy of a device runs on (one default stream per device).
inline cudaStream_t stream() { return cudaStreamLegacy; }

constexpr int kThreads = 256;
inline unsigned blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return unsigned(b < 65535 * 8 ? (b < 1 ? 1 : b) : 65535 * 8);  // grid-stride loops cover the rest
}

// Raises after a launch when the launch itself failed (bad configuration, no kernel image for the GPU).
void check_launch(const char* op);

constexpr int kMaxDims = 10;

// Geometry of N operands broadcast to one shape, dims coalesced; byte strides.
template <int N>
struct Geom {
  int nd = 0;
  bool flat = false;  // every operand contiguous: element i sits at base + i * itemsize
  int64_t size[kMaxDims] = {};
  int64_t stride[N][kMaxDims] = {};
  int64_t item[N] = {};
  char* base[N] = {};

  // Byte addresses of element i of every operand.
  __device__ void at(int64_t i, char** p) const {
    if (flat) {
      for (int k = 0; k < N; ++k) p[k] = base[k] + i * item[k];
      return;
    }
    int64_t off[N] = {};
    for (int d = nd - 1; d >= 0; --d) {
      int64_t idx = i % size[d];
      i /= size[d];
      for (int k = 0; k < N; ++k) off[k] += idx * stride[k][d];
    }
    for (int k = 0; k < N; ++k) p[k] = base[k] + off[k];
  }
};

// Operands must already have `shape` (broadcast operands as stride-0 views).
template <int N>
Geom<N> make_geom(const char* op, const Shape& shape, const std::array<const TensorImpl*, N>& ts) {
  Geom<N> g;
  bool flat = true;
  for (int k = 0; k < N; ++k) {
    g.base[k] = ts[k]->raw();
    g.item[k] = int64_t(itemsize(ts[k]->dtype));
    flat = flat && ts[k]->shape == shape && ts[k]->is_contiguous();
  }
  g.flat = flat;
  if (flat) return g;
  cpu::Geometry<N> c = cpu::coalesce<N>(shape, ts);
  SX_CHECK(int(c.shape.size()) <= kMaxDims, NotImplementedError, "[", op, "] the CUDA kernels take at most ",
           kMaxDims, " dimensions after merging contiguous ones, got ", c.shape.size());
  g.nd = int(c.shape.size());
  for (int d = 0; d < g.nd; ++d) {
    g.size[d] = c.shape[d];
    for (int k = 0; k < N; ++k) g.stride[k][d] = c.strides[k][d];
  }
  return g;
}

template <int N, typename F>
__global__ void elementwise_kernel(Geom<N> g, int64_t n, F f) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    char* p[N];
    g.at(i, p);
    f(p);
  }
}

// Runs f(char* p[N]) for every element of `shape` on the operands' device.
template <int N, typename F>
void for_each(const char* op, const Shape& shape, const std::array<const TensorImpl*, N>& ts, F f) {
  int64_t n = 1;
  for (auto s : shape) n *= s;
  if (n == 0) return;
  use_device(ts[0]->device());
  Geom<N> g = make_geom<N>(op, shape, ts);
  elementwise_kernel<N><<<blocks_for(n), kThreads, 0, stream()>>>(g, n, f);
  check_launch(op);
}

// Throws for dtypes that have no CUDA kernel in this build.
[[noreturn]] void no_dtype(const char* op, DType dt);

// The dtypes the CUDA kernels are compiled for (float16/bfloat16 not yet).
#define SX_CUDA_DISPATCH(DT, NAME, ...)                        \
  switch (DT) {                                                \
    SX_DISPATCH_CASE(Bool, bool, __VA_ARGS__)                  \
    SX_DISPATCH_CASE(UInt8, uint8_t, __VA_ARGS__)              \
    SX_DISPATCH_CASE(Int32, int32_t, __VA_ARGS__)              \
    SX_DISPATCH_CASE(Int64, int64_t, __VA_ARGS__)              \
    SX_DISPATCH_CASE(Float32, float, __VA_ARGS__)              \
    SX_DISPATCH_CASE(Float64, double, __VA_ARGS__)             \
    default: ::sx::cuda::no_dtype(NAME, DT);                   \
  }
#define SX_CUDA_DISPATCH_FLOAT(DT, NAME, ...)                  \
  switch (DT) {                                                \
    SX_DISPATCH_CASE(Float32, float, __VA_ARGS__)              \
    SX_DISPATCH_CASE(Float64, double, __VA_ARGS__)             \
    default: ::sx::cuda::no_dtype(NAME, DT);                   \
  }

}  // namespace sx::cuda
