// Shared by the CUDA kernels: error checks, the device guard, launch sizes and N-operand strided
// iteration (the GPU counterpart of cpu/loops.h).
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <array>

#include "core/cuda_api.h"
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

// The grid-stride loop of a kernel over [0, n): each thread takes i, i + all threads, ...
#define SX_GRID_LOOP(i, n) \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); i += int64_t(gridDim.x) * blockDim.x)

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

// Grid size for kernels that give each of `rows` rows one block (block-stride loops cover the rest).
inline unsigned row_grid(int64_t rows) { return unsigned(rows < 65535 * 8 ? (rows < 1 ? 1 : rows) : 65535 * 8); }

struct SumOf {
  template <typename T> __device__ T operator()(T a, T b) const { return a + b; }
};
struct MaxOf {  // a NaN, once seen, sticks
  template <typename T> __device__ T operator()(T a, T b) const { return (b > a || b != b) ? b : a; }
};

// Reduces v over a warp; every lane gets the result.
template <typename T, typename Op> __device__ T warp_reduce(T v, Op op) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Reduces v over the block; every thread gets the result. blockDim.x is a multiple of 32; every
// thread of the block must call it.
template <typename T, typename Op> __device__ T block_reduce(T v, Op op) {
  __shared__ T warp_part[32];
  v = warp_reduce(v, op);
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarps = blockDim.x / 32;
  __syncthreads();  // warp_part may still be read by a previous call
  if (lane == 0) warp_part[warp] = v;
  __syncthreads();
  v = warp_part[0];
  for (int w = 1; w < nwarps; ++w) v = op(v, warp_part[w]);
  return v;
}

// Device scratch memory from the caching allocator of `d`, returned to it when the buffer goes out
// of scope (stream-ordered: work queued later on the device's stream may reuse it).
class Scratch {
 public:
  Scratch(size_t nbytes, Device d) : n_(nbytes), dev_(d.index), p_(cuda_alloc(nbytes, d.index)) {}
  ~Scratch() { cuda_free(p_, n_, dev_); }
  Scratch(Scratch&& o) noexcept : n_(o.n_), dev_(o.dev_), p_(o.p_) { o.p_ = nullptr; }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  template <typename T> T* as() const { return static_cast<T*>(p_); }

 private:
  size_t n_;
  int dev_;
  void* p_;
};

// Copies n host values to a new scratch buffer on `d` (kernel arguments too large for a launch).
template <typename T> Scratch to_device(const T* host, size_t n, Device d) {
  Scratch s(n * sizeof(T), d);
  if (n) check(cudaMemcpyAsync(s.as<T>(), host, n * sizeof(T), cudaMemcpyHostToDevice, stream()), "to_device");
  return s;
}

// A flag a kernel sets when it meets a bad value (an index out of range); read back after the work.
class DeviceFlag {
 public:
  explicit DeviceFlag(Device d) : buf_(sizeof(int), d) {
    check(cudaMemsetAsync(buf_.as<int>(), 0, sizeof(int), stream()), "flag");
  }
  int* ptr() const { return buf_.as<int>(); }
  bool raised() const {
    int v = 0;
    check(cudaMemcpyAsync(&v, buf_.as<int>(), sizeof(int), cudaMemcpyDeviceToHost, stream()), "flag");
    check(cudaStreamSynchronize(stream()), "flag");
    return v != 0;
  }

 private:
  Scratch buf_;
};

// The cuBLAS handle of device `d` for the calling thread (bound to the device's stream).
cublasHandle_t blas_handle(Device d);
// Raises RuntimeError naming the op when a cuBLAS call failed.
void check_blas(cublasStatus_t s, const char* op, const char* what);
// C = op(A) op(B) + beta C on column-major matrices, `batch` of them `sa`, `sb`, `sc` elements apart,
// all of dtype dt (float64; float32, TF32 when allowed; float16 / bfloat16 accumulating in float32).
void gemm(Device d, DType dt, const char* op, cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n,
          int64_t k, const void* A, int64_t lda, int64_t sa, const void* B, int64_t ldb, int64_t sb, double beta,
          void* C, int64_t ldc, int64_t sc, int64_t batch);

// Calls f(W{}) with W the unsigned integer type of `bytes` (1, 2, 4 or 8): kernels that only move
// elements move them as words of their size, whatever the dtype.
template <typename F> void with_word(size_t bytes, F f) {
  switch (bytes) {
    case 2: return f(uint16_t());
    case 4: return f(uint32_t());
    case 8: return f(uint64_t());
    default: return f(uint8_t());
  }
}

// The DType of float / double (the fused kernels' two compute types).
template <typename T> constexpr DType float_dtype() { return std::is_same_v<T, float> ? DType::Float32 : DType::Float64; }

// The data of an optional operand (null when absent).
template <typename T> T* ptr(const Tensor& t) { return t ? t->data<T>() : nullptr; }

// Throws for dtypes that have no CUDA kernel in this build.
[[noreturn]] void no_dtype(const char* op, DType dt);

// The dtypes of the CUDA kernels: every dtype; the floating ones (halves compute in float); and
// float32/float64 alone (the fused nn kernels, whose ops run halves in float32).
#define SX_CUDA_DISPATCH(DT, NAME, ...)                        \
  switch (DT) {                                                \
    SX_DISPATCH_CASE(Bool, bool, __VA_ARGS__)                  \
    SX_DISPATCH_CASE(UInt8, uint8_t, __VA_ARGS__)              \
    SX_DISPATCH_CASE(Int32, int32_t, __VA_ARGS__)              \
    SX_DISPATCH_CASE(Int64, int64_t, __VA_ARGS__)              \
    SX_DISPATCH_CASE(Float16, ::sx::Half, __VA_ARGS__)         \
    SX_DISPATCH_CASE(BFloat16, ::sx::BFloat16, __VA_ARGS__)    \
    SX_DISPATCH_CASE(Float32, float, __VA_ARGS__)              \
    SX_DISPATCH_CASE(Float64, double, __VA_ARGS__)             \
    default: ::sx::cuda::no_dtype(NAME, DT);                   \
  }
#define SX_CUDA_DISPATCH_FLOATING(DT, NAME, ...)               \
  switch (DT) {                                                \
    SX_DISPATCH_CASE(Float16, ::sx::Half, __VA_ARGS__)         \
    SX_DISPATCH_CASE(BFloat16, ::sx::BFloat16, __VA_ARGS__)    \
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
