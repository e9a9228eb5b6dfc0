// CUDA kernels of cross entropy (one block per row of logits) and nll_loss (one thread per row),
// with the formulas of cpu/loss_kernels.cpp: class or probability targets, class weights, label
// smoothing and ignore_index; and the pointwise losses (the formulas of ops/loss_math.h).
#include <type_traits>

#include "cuda/cuda_util.cuh"
#include "cuda/kernels.h"
#include "ops/loss_math.h"
#include "ops/nn.h"

namespace sx::cuda {

namespace {

struct CE {
  int64_t N, C, ignore_index;
  double smoothing;
};

// Row max and log(sum exp(x - max)) of r, on every thread of the block.
template <typename T> __device__ void row_lse(const T* r, int64_t C, T& m, T& ls) {
  m = -INFINITY;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) m = MaxOf{}(m, r[c]);
  m = block_reduce(m, MaxOf{});
  T s = 0;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) s += std::exp(r[c] - m);
  ls = std::log(block_reduce(s, SumOf{}));
}

// sum of the class weights (C without weights), on every thread of the block.
template <typename T> __device__ T weight_sum(const T* w, int64_t C) {
  if (!w) return T(C);
  T s = 0;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) s += w[c];
  return block_reduce(s, SumOf{});
}

// The smoothed, weighted target distribution of probability targets at class c.
template <typename T> __device__ T target_weight(const T* p, const T* w, int64_t c, T eps, T sm) {
  return (p[c] * (T(1) - eps) + sm) * (w ? w[c] : T(1));
}

template <typename T>
__global__ void ce_fwd_kernel(CE a, const int64_t* target, const T* x, const T* probs, const T* w, T* lse,
                              double* loss, double* wrow) {
  const int64_t C = a.C;
  const double eps = a.smoothing;
  const T wsum = eps > 0 ? weight_sum(w, C) : T(C);
  for (int64_t i = blockIdx.x; i < a.N; i += gridDim.x) {
    const T* r = x + i * C;
    T m, ls;
    row_lse(r, C, m, ls);
    const double dm = double(m) + double(ls);
    if (threadIdx.x == 0) lse[2 * i] = m, lse[2 * i + 1] = ls;
    if (!probs) {
      const int64_t y = target[i];
      if (y == a.ignore_index) {
        if (threadIdx.x == 0) loss[i] = wrow[i] = 0;
        continue;
      }
      double wy = w ? double(w[y]) : 1.0;
      double l = -(double(r[y]) - dm) * wy * (1 - eps);
      if (eps > 0) {
        T s = 0;
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) s += w ? r[c] * w[c] : r[c];
        l -= eps / double(C) * (double(block_reduce(s, SumOf{})) - dm * double(wsum));
      }
      if (threadIdx.x == 0) loss[i] = l, wrow[i] = wy;
    } else {
      const T* p = probs + i * C;
      const T te = T(eps), sm = T(eps / double(C));
      T sx = 0, st = 0;
      for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
        T tw = target_weight(p, w, c, te, sm);
        sx += r[c] * tw;
        st += tw;
      }
      sx = block_reduce(sx, SumOf{});
      st = block_reduce(st, SumOf{});
      if (threadIdx.x == 0) loss[i] = -(double(sx) - dm * double(st)), wrow[i] = 1;
    }
  }
}

template <typename T>
__global__ void ce_bwd_kernel(CE a, const int64_t* target, const T* x, const T* probs, const T* w, const T* lse,
                              const T* grow, T* gx, T* gp) {
  const int64_t C = a.C;
  const T eps = T(a.smoothing), sm = T(a.smoothing / double(a.C));
  const T wsum = a.smoothing > 0 ? weight_sum(w, C) : T(C);
  for (int64_t i = blockIdx.x; i < a.N; i += gridDim.x) {
    const T* r = x + i * C;
    T* o = gx + i * C;
    const T m = lse[2 * i], ls = lse[2 * i + 1], g = grow[i];
    if (!probs) {
      const int64_t y = target[i];
      if (y == a.ignore_index) {
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) o[c] = T(0);
        continue;
      }
      const T wy = w ? w[y] : T(1), A = g * ((T(1) - eps) * wy + sm * wsum), Bs = g * sm;
      for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
        T v = A * std::exp((r[c] - m) - ls) - Bs * (w ? w[c] : T(1));
        if (c == y) v -= g * (T(1) - eps) * wy;
        o[c] = v;
      }
    } else {
      const T* p = probs + i * C;
      T st = 0;
      for (int64_t c = threadIdx.x; c < C; c += blockDim.x) st += target_weight(p, w, c, eps, sm);
      const T B = g * block_reduce(st, SumOf{});
      for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
        const T z = (r[c] - m) - ls;
        o[c] = B * std::exp(z) - g * target_weight(p, w, c, eps, sm);
        if (gp) gp[i * C + c] = -g * (T(1) - eps) * (w ? w[c] : T(1)) * z;
      }
    }
  }
}

template <typename T>
__global__ void nll_fwd_kernel(const int64_t* y, const T* x, const T* w, int64_t ignore, double* loss, double* wrow,
                               int64_t rows, int64_t C) {
  SX_GRID_LOOP(i, rows) {
    if (y[i] == ignore) {
      loss[i] = wrow[i] = 0;
      continue;
    }
    wrow[i] = w ? double(w[y[i]]) : 1.0;
    loss[i] = -wrow[i] * double(x[i * C + y[i]]);
  }
}

template <typename T>
__global__ void nll_bwd_kernel(const int64_t* y, const T* w, const T* grow, int64_t ignore, T* gx, int64_t rows,
                               int64_t C) {
  SX_GRID_LOOP(i, rows)
    if (y[i] != ignore) gx[i * C + y[i]] = -(w ? w[y[i]] : T(1)) * grow[i];
}

}  // namespace

void ce_fwd(const nn::CEArgs& a, const Tensor& target, const Tensor& x, const Tensor& probs, const Tensor& weight,
            const Tensor& lse, const Tensor& loss, const Tensor& wrow) {
  use_device(x->device());
  CE k{a.N, a.C, a.ignore_index, a.smoothing};
  SX_CUDA_DISPATCH_FLOAT(x->dtype, "cross_entropy", [&] {
    using T = scalar_t;
    ce_fwd_kernel<T><<<row_grid(a.N), kThreads, 0, stream()>>>(k, ptr<int64_t>(target), ptr<T>(x), ptr<T>(probs),
                                                                ptr<T>(weight), ptr<T>(lse), ptr<double>(loss),
                                                                ptr<double>(wrow));
  });
  check_launch("cross_entropy");
}

void ce_bwd(const nn::CEArgs& a, const Tensor& target, const Tensor& x, const Tensor& probs, const Tensor& weight,
            const Tensor& lse, const Tensor& grow, const Tensor& gx, const Tensor& gp) {
  use_device(x->device());
  CE k{a.N, a.C, a.ignore_index, a.smoothing};
  SX_CUDA_DISPATCH_FLOAT(x->dtype, "cross_entropy", [&] {
    using T = scalar_t;
    ce_bwd_kernel<T><<<row_grid(a.N), kThreads, 0, stream()>>>(k, ptr<int64_t>(target), ptr<T>(x), ptr<T>(probs),
                                                                ptr<T>(weight), ptr<T>(lse), ptr<T>(grow), ptr<T>(gx),
                                                                ptr<T>(gp));
  });
  check_launch("cross_entropy");
}

void nll_fwd(const Tensor& target, const Tensor& x, const Tensor& weight, int64_t ignore_index, const Tensor& loss,
             const Tensor& wrow) {
  int64_t rows = x->shape[0], C = x->shape[1];
  if (rows == 0) return;
  use_device(x->device());
  SX_CUDA_DISPATCH_FLOAT(x->dtype, "nll_loss", [&] {
    using T = scalar_t;
    nll_fwd_kernel<T><<<blocks_for(rows), kThreads, 0, stream()>>>(target->data<int64_t>(), x->data<T>(),
                                                                    ptr<T>(weight), ignore_index, loss->data<double>(),
                                                                    wrow->data<double>(), rows, C);
  });
  check_launch("nll_loss");
}

void nll_bwd(const Tensor& target, const Tensor& weight, const Tensor& grow, int64_t ignore_index, const Tensor& gx) {
  int64_t rows = gx->shape[0], C = gx->shape[1];
  if (rows == 0) return;
  use_device(gx->device());
  SX_CUDA_DISPATCH_FLOAT(gx->dtype, "nll_loss", [&] {
    using T = scalar_t;
    nll_bwd_kernel<T><<<blocks_for(rows), kThreads, 0, stream()>>>(target->data<int64_t>(), ptr<T>(weight),
                                                                    grow->data<T>(), ignore_index, gx->data<T>(), rows,
                                                                    C);
  });
  check_launch("nll_loss");
}

}  // namespace sx::cuda

// ---- pointwise losses (ops/loss_math.h), one thread per element
namespace sx::cuda {

namespace {

struct DeviceMath {
  template <typename T> __device__ static T exp(T x) { return std::exp(x); }
  template <typename T> __device__ static T log(T x) { return std::log(x); }
  template <typename T> __device__ static T log1p(T x) { return std::log1p(x); }
};

template <nn::PLoss K, typename T>
__global__ void ploss_fwd_kernel(const T* x, const T* t, const T* w, T* out, int64_t n, T beta) {
  SX_GRID_LOOP(i, n)
    out[i] = nn::loss_f<K, DeviceMath, T>(x[i], t[i], w ? w[i] : T(1), beta);
}

template <nn::PLoss K, typename T>
__global__ void ploss_bwd_kernel(const T* g, const T* x, const T* t, const T* w, T* gx, T* gt, T* gw, int64_t n,
                                 T beta) {
  SX_GRID_LOOP(i, n) {
    T dx, dt, dw;
    nn::loss_df<K, DeviceMath, T>(x[i], t[i], w ? w[i] : T(1), beta, dx, dt, dw);
    if (gx) gx[i] = g[i] * dx;
    if (gt) gt[i] = g[i] * dt;
    if (gw) gw[i] = g[i] * dw;
  }
}

// Calls f(std::integral_constant<PLoss, K>) for the loss k.
template <typename F> void with_loss(nn::PLoss k, F f) {
  switch (k) {
#define SX_CASE(E, NAME, BW) \
  case nn::PLoss::E: return f(std::integral_constant<nn::PLoss, nn::PLoss::E>{});
    SX_POINTWISE_LOSSES(SX_CASE)
#undef SX_CASE
  }
}

}  // namespace

void ploss_fwd(nn::PLoss k, const Tensor& x, const Tensor& t, const Tensor& w, const Tensor& out, double beta) {
  int64_t n = x->numel();
  if (n == 0) return;
  use_device(x->device());
  SX_CUDA_DISPATCH_FLOAT(x->dtype, "loss", [&] {
    using T = scalar_t;
    with_loss(k, [&](auto kind) {
      ploss_fwd_kernel<decltype(kind)::value, T><<<blocks_for(n), kThreads, 0, stream()>>>(
          x->data<T>(), t->data<T>(), ptr<T>(w), out->data<T>(), n, T(beta));
    });
  });
  check_launch("loss");
}

void ploss_bwd(nn::PLoss k, const Tensor& g, const Tensor& x, const Tensor& t, const Tensor& w, const Tensor& gx,
               const Tensor& gt, const Tensor& gw, double beta) {
  int64_t n = x->numel();
  if (n == 0) return;
  use_device(x->device());
  SX_CUDA_DISPATCH_FLOAT(x->dtype, "loss", [&] {
    using T = scalar_t;
    with_loss(k, [&](auto kind) {
      ploss_bwd_kernel<decltype(kind)::value, T><<<blocks_for(n), kThreads, 0, stream()>>>(
          g->data<T>(), x->data<T>(), t->data<T>(), ptr<T>(w), ptr<T>(gx), ptr<T>(gt), ptr<T>(gw), n, T(beta));
    });
  });
  check_launch("loss");
}

}  // namespace sx::cuda
