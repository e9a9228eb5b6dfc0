// CUDA kernels of the fused nn ops (slots in ops/nn.h): layer / RMS norm, gated units, linear
// (cuBLAS), embedding and dropout. Operands are contiguous float32/float64 buffers, as on the CPU.
// Column sums (norm and linear backward) run one thread column per output column over all rows,
// then add the row groups in a fixed order, so results do not depend on scheduling.
#include "core/generator.h"
#include "cuda/cuda_util.cuh"
#include "cuda/kernels.h"
#include "ops/nn.h"

namespace sx::cuda {

namespace {

// ---- layer norm and RMS norm: one block per row
template <typename T>
__global__ void norm_fwd_kernel(const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, int64_t M, int64_t N,
                                T eps, bool rms) {
  for (int64_t i = blockIdx.x; i < M; i += gridDim.x) {
    const T* xr = x + i * N;
    T mu = 0;
    if (!rms) {
      T s = 0;
      for (int64_t j = threadIdx.x; j < N; j += blockDim.x) s += xr[j];
      mu = block_reduce(s, SumOf{}) / T(N);
    }
    T ss = 0;
    for (int64_t j = threadIdx.x; j < N; j += blockDim.x) ss += (xr[j] - mu) * (xr[j] - mu);
    T r = T(1) / std::sqrt(block_reduce(ss, SumOf{}) / T(N) + eps);
    if (threadIdx.x == 0) {
      rstd[i] = r;
      if (mean) mean[i] = mu;
    }
    T* yr = y + i * N;
    for (int64_t j = threadIdx.x; j < N; j += blockDim.x) {
      T v = (xr[j] - mu) * r;
      if (w) v *= w[j];
      if (b) v += b[j];
      yr[j] = v;
    }
  }
}

template <typename T>
__global__ void norm_bwd_rows(const T* g, const T* x, const T* w, const T* mean, const T* rstd, T* gx, int64_t M,
                              int64_t N, bool rms) {
  for (int64_t i = blockIdx.x; i < M; i += gridDim.x) {
    const T *gr = g + i * N, *xr = x + i * N;
    const T mu = rms ? T(0) : mean[i], r = rstd[i];
    T a = 0, bsum = 0;
    for (int64_t j = threadIdx.x; j < N; j += blockDim.x) {
      T gh = w ? gr[j] * w[j] : gr[j];
      a += gh;
      bsum += gh * (xr[j] - mu) * r;
    }
    a = block_reduce(a, SumOf{});
    bsum = block_reduce(bsum, SumOf{});
    const T ca = rms ? T(0) : a / T(N), cb = bsum / T(N);
    for (int64_t j = threadIdx.x; j < N; j += blockDim.x)
      gx[i * N + j] = r * ((w ? gr[j] * w[j] : gr[j]) - ca - (xr[j] - mu) * r * cb);
  }
}

// out[j] = sum over rows i of f(i, j): blocks of 32 columns x 8 row lanes, the lanes added in order.
template <typename T, typename F>
__global__ void column_sums(int64_t M, int64_t N, T* out, F f) {
  __shared__ T part[8][33];
  const int64_t j = int64_t(blockIdx.x) * 32 + threadIdx.x;
  T s = 0;
  if (j < N)
    for (int64_t i = threadIdx.y; i < M; i += 8) s += f(i, j);
  part[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && j < N) {
    T t = part[0][threadIdx.x];
    for (int y = 1; y < 8; ++y) t += part[y][threadIdx.x];
    out[j] = t;
  }
}

template <typename T, typename F> void launch_column_sums(int64_t M, int64_t N, T* out, F f) {
  if (N == 0) return;
  column_sums<T><<<unsigned((N + 31) / 32), dim3(32, 8), 0, stream()>>>(M, N, out, f);
}

// ---- gated units over `outer` blocks of `len` elements (see ops/nn.h)
template <typename T>
__global__ void gate_fwd_kernel(bool glu, const T* a, const T* b, T* y, int64_t outer, int64_t len, int64_t in_stride) {
  SX_GRID_LOOP(e, outer * len) {
    int64_t o = e / len, j = e % len, k = o * in_stride + j;
    y[e] = glu ? a[k] / (T(1) + std::exp(-b[k])) : a[k] / (T(1) + std::exp(-a[k])) * b[k];
  }
}

template <typename T>
__global__ void gate_bwd_kernel(bool glu, const T* g, const T* a, const T* b, T* ga, T* gb, int64_t outer, int64_t len,
                                int64_t in_stride) {
  SX_GRID_LOOP(e, outer * len) {
    int64_t o = e / len, j = e % len, k = o * in_stride + j;
    if (glu) {
      T s = T(1) / (T(1) + std::exp(-b[k]));
      ga[k] = g[e] * s;
      gb[k] = g[e] * a[k] * s * (T(1) - s);
    } else {
      T s = T(1) / (T(1) + std::exp(-a[k]));
      ga[k] = g[e] * b[k] * s * (T(1) + a[k] * (T(1) - s));
      gb[k] = g[e] * a[k] * s;
    }
  }
}

// ---- linear through cuBLAS (column-major: a row-major (r, c) matrix is a (c, r) one)
template <typename T>
void gemm2(Device d, cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n, int64_t k, const T* A,
           int64_t lda, const T* B, int64_t ldb, T beta, T* C, int64_t ldc) {
  gemm(d, float_dtype<T>(), "linear", ta, tb, m, n, k, A, lda, 0, B, ldb, 0, double(beta), C, ldc, 0, 1);
}

template <typename T> __global__ void fill_rows(T* out, const T* b, int64_t M, int64_t N) {
  SX_GRID_LOOP(e, M * N)
    out[e] = b[e % N];
}

// ---- embedding rows, copied as words of the weight's item size
template <typename W> __global__ void embedding_rows(const int64_t* ids, const W* w, W* out, int64_t n, int64_t D) {
  SX_GRID_LOOP(e, n * D)
    out[e] = w[ids[e / D] * D + e % D];
}

__global__ void count_ids(const int64_t* ids, int64_t n, int* count) {
  SX_GRID_LOOP(i, n)
    atomicAdd(count + ids[i], 1);
}

// Rows of the same id add up through atomics: the order of the additions is not fixed.
template <typename T>
__global__ void embedding_grad(const int64_t* ids, const T* g, T* gw, int64_t n, int64_t D, int64_t pad,
                               const int* count) {
  SX_GRID_LOOP(e, n * D) {
    int64_t id = ids[e / D];
    if (id == pad) continue;
    T v = g[e];
    if (count) v *= T(1) / T(count[id]);
    atomicAdd(gw + id * D + e % D, v);
  }
}

// ---- dropout: group q of four elements takes Philox counter base + q, as on the CPU
template <typename T>
__global__ void dropout_kernel(const T* x, T* y, int64_t n, uint64_t thr, T scale, uint64_t seed, uint64_t base) {
  int64_t groups = (n + 3) / 4;
  SX_GRID_LOOP(q, groups) {
    auto r = philox(seed, base + uint64_t(q));
    for (int64_t l = 0; l < 4 && q * 4 + l < n; ++l) y[q * 4 + l] = uint64_t(r[l]) >= thr ? x[q * 4 + l] * scale : T(0);
  }
}

}  // namespace

void norm_fwd(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y, const Tensor& mean,
              const Tensor& rstd, int64_t M, int64_t N, double eps, bool rms) {
  if (M == 0) return;
  use_device(x->device());
  SX_CUDA_DISPATCH_FLOAT(x->dtype, "layer_norm", [&] {
    using T = scalar_t;
    norm_fwd_kernel<T><<<row_grid(M), kThreads, 0, stream()>>>(ptr<T>(x), ptr<T>(w), ptr<T>(b), ptr<T>(y),
                                                                ptr<T>(mean), ptr<T>(rstd), M, N, T(eps), rms);
  });
  check_launch("layer_norm");
}

void norm_bwd(const Tensor& g, const Tensor& x, const Tensor& w, const Tensor& mean, const Tensor& rstd,
              const Tensor& gx, const Tensor& gw, const Tensor& gb, int64_t M, int64_t N, bool rms) {
  use_device(x->device());
  SX_CUDA_DISPATCH_FLOAT(x->dtype, "layer_norm", [&] {
    using T = scalar_t;
    const T *pg = ptr<T>(g), *px = ptr<T>(x), *pm = ptr<T>(mean), *pr = ptr<T>(rstd);
    if (gx && M)
      norm_bwd_rows<T><<<row_grid(M), kThreads, 0, stream()>>>(pg, px, ptr<T>(w), pm, pr, ptr<T>(gx), M, N, rms);
    if (gw)
      launch_column_sums<T>(M, N, ptr<T>(gw), [=] __device__(int64_t i, int64_t j) {
        return pg[i * N + j] * (px[i * N + j] - (rms ? T(0) : pm[i])) * pr[i];
      });
    if (gb) launch_column_sums<T>(M, N, ptr<T>(gb), [=] __device__(int64_t i, int64_t j) { return pg[i * N + j]; });
  });
  check_launch("layer_norm");
}

void gate_fwd(nn::Gate k, const Tensor& a, int64_t a_off, const Tensor& b, int64_t b_off, const Tensor& y,
              int64_t outer, int64_t len, int64_t in_stride) {
  if (outer * len == 0) return;
  use_device(y->device());
  SX_CUDA_DISPATCH_FLOAT(y->dtype, "glu", [&] {
    using T = scalar_t;
    gate_fwd_kernel<T><<<blocks_for(outer * len), kThreads, 0, stream()>>>(
        k == nn::Gate::Glu, ptr<T>(a) + a_off, ptr<T>(b) + b_off, ptr<T>(y), outer, len, in_stride);
  });
  check_launch("glu");
}

void gate_bwd(nn::Gate k, const Tensor& g, const Tensor& a, int64_t a_off, const Tensor& b, int64_t b_off,
              const Tensor& ga, const Tensor& gb, int64_t outer, int64_t len, int64_t in_stride) {
  if (outer * len == 0) return;
  use_device(g->device());
  SX_CUDA_DISPATCH_FLOAT(g->dtype, "glu", [&] {
    using T = scalar_t;
    gate_bwd_kernel<T><<<blocks_for(outer * len), kThreads, 0, stream()>>>(
        k == nn::Gate::Glu, ptr<T>(g), ptr<T>(a) + a_off, ptr<T>(b) + b_off, ptr<T>(ga), ptr<T>(gb), outer, len,
        in_stride);
  });
  check_launch("glu");
}

void linear_fwd(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& out, int64_t M, int64_t N, int64_t K) {
  if (M == 0 || N == 0) return;
  Device d = x->device();
  use_device(d);
  SX_CUDA_DISPATCH_FLOAT(x->dtype, "linear", [&] {
    using T = scalar_t;
    T* o = out->data<T>();
    if (b) fill_rows<T><<<blocks_for(M * N), kThreads, 0, stream()>>>(o, b->data<T>(), M, N);
    else if (K == 0) SX_CUDA_CHECK(cudaMemsetAsync(o, 0, size_t(M * N) * sizeof(T), stream()), "linear");
    // out^T (N, M) = w (N, K) x^T (K, M)
    if (K) gemm2<T>(d, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, w->data<T>(), K, x->data<T>(), K, b ? T(1) : T(0), o, N);
  });
  check_launch("linear");
}

void linear_bwd(const Tensor& g, const Tensor& x, const Tensor& w, const Tensor& gx, const Tensor& gw, const Tensor& gb,
                int64_t M, int64_t N, int64_t K) {
  Device d = g->device();
  use_device(d);
  SX_CUDA_DISPATCH_FLOAT(g->dtype, "linear", [&] {
    using T = scalar_t;
    const T* pg = g->data<T>();
    auto zero = [](const Tensor& t) {
      SX_CUDA_CHECK(cudaMemsetAsync(t->raw(), 0, size_t(t->numel()) * sizeof(T), stream()), "linear");
    };
    if (gx) {  // gx^T (K, M) = w^T (K, N) g^T (N, M)
      if (M && K && N) gemm2<T>(d, CUBLAS_OP_N, CUBLAS_OP_N, K, M, N, w->data<T>(), K, pg, N, T(0), gx->data<T>(), K);
      else zero(gx);
    }
    if (gw) {  // gw^T (K, N) = x^T (K, M) g (M, N)
      if (M && K && N) gemm2<T>(d, CUBLAS_OP_N, CUBLAS_OP_T, K, N, M, x->data<T>(), K, pg, N, T(0), gw->data<T>(), K);
      else zero(gw);
    }
    if (gb) launch_column_sums<T>(M, N, gb->data<T>(), [=] __device__(int64_t i, int64_t j) { return pg[i * N + j]; });
  });
  check_launch("linear");
}

void embedding_fwd(const Tensor& ids, const Tensor& w, const Tensor& out) {
  int64_t n = ids->numel(), D = w->shape[1];
  if (n * D == 0) return;
  use_device(w->device());
  const int64_t* pi = ids->data<int64_t>();
  with_word(itemsize(w->dtype), [&](auto word) {
    using W = decltype(word);
    embedding_rows<W><<<blocks_for(n * D), kThreads, 0, stream()>>>(pi, w->data<W>(), out->data<W>(), n, D);
  });
  check_launch("embedding");
}

void embedding_bwd(const Tensor& ids, const Tensor& g, const Tensor& gw, int64_t padding_idx, bool scale_by_freq) {
  int64_t n = ids->numel(), V = gw->shape[0], D = gw->shape[1];
  Device d = gw->device();
  use_device(d);
  SX_CUDA_CHECK(cudaMemsetAsync(gw->raw(), 0, size_t(V * D) * itemsize(gw->dtype), stream()), "embedding");
  if (n * D == 0) return;
  const int64_t* pi = ids->data<int64_t>();
  Scratch count(scale_by_freq ? size_t(V) * sizeof(int) : 1, d);
  if (scale_by_freq) {
    SX_CUDA_CHECK(cudaMemsetAsync(count.as<int>(), 0, size_t(V) * sizeof(int), stream()), "embedding");
    count_ids<<<blocks_for(n), kThreads, 0, stream()>>>(pi, n, count.as<int>());
  }
  SX_CUDA_DISPATCH_FLOAT(gw->dtype, "embedding", [&] {
    using T = scalar_t;
    embedding_grad<T><<<blocks_for(n * D), kThreads, 0, stream()>>>(pi, g->data<T>(), gw->data<T>(), n, D, padding_idx,
                                                                    scale_by_freq ? count.as<int>() : nullptr);
  });
  check_launch("embedding");
}

void dropout(const Tensor& x, const Tensor& y, double p, uint64_t seed, uint64_t base) {
  int64_t n = x->numel();
  if (n == 0) return;
  use_device(x->device());
  SX_CUDA_DISPATCH_FLOAT(x->dtype, "dropout", [&] {
    using T = scalar_t;
    dropout_kernel<T><<<blocks_for((n + 3) / 4), kThreads, 0, stream()>>>(
        x->data<T>(), y->data<T>(), n, uint64_t(p * 4294967296.0), T(1) / T(1 - p), seed, base);
  });
  check_launch("dropout");
}

}  // namespace sx::cuda
