// CUDA kernels of the fused optimizer steps (SGD, Adam/AdamW, Lion, LAMB), the total norm of a tensor list
// and its in-place scaling, with the update formulas of cpu/optim_kernels.cpp (torch.optim's order
// of operations; the fused multiply-adds of PyTorch's kernels as fma). One launch per tensor.
// total_norm adds per-block partial sums in a fixed order, so its result does not vary run to run.
#include <vector>

#include "cuda/cuda_util.cuh"
#include "cuda/kernels.h"
#include "ops/nn.h"

namespace sx::cuda {

namespace {

template <typename T> struct SgdK {
  T nlr, mom, keep, wd, gs;
  bool momentum, nesterov, first_step;
};

template <typename T> __global__ void sgd_kernel(T* p, const T* g, T* buf, int64_t n, SgdK<T> k) {
  SX_GRID_LOOP(i, n) {
    T d = k.gs * g[i];  // negated if maximize
    if (k.wd != T(0)) d = std::fma(p[i], k.wd, d);  // grad.add(param, alpha=weight_decay)
    if (k.momentum) {
      T b = k.first_step ? d : std::fma(d, k.keep, buf[i] * k.mom);
      buf[i] = b;
      d = k.nesterov ? std::fma(b, k.mom, d) : b;
    }
    p[i] = std::fma(d, k.nlr, p[i]);
  }
}

template <typename T> struct AdamK {
  T gs, wd, decay, coeff, b2, w2, step, bc2s, eps;
  bool low, amsgrad, l2;
};

template <typename T> __global__ void adam_kernel(T* p, const T* g, T* m, T* v, T* vmax, int64_t n, AdamK<T> k) {
  SX_GRID_LOOP(i, n) {
    T gi = k.gs * g[i];
    if (k.l2) gi = std::fma(p[i], k.wd, gi);
    T pi = p[i] * k.decay;
    T mi = std::fma(k.coeff, gi - m[i], k.low ? m[i] : gi);  // exp_avg.lerp_(grad, 1 - beta1)
    T vi = std::fma(k.w2 * gi, gi, v[i] * k.b2);            // exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1 - beta2)
    m[i] = mi;
    v[i] = vi;
    if (k.amsgrad) {
      vi = vmax[i] > vi ? vmax[i] : vi;
      vmax[i] = vi;
    }
    p[i] = pi + k.step * mi / (std::sqrt(vi) / k.bc2s + k.eps);
  }
}

template <typename T>
__global__ void lion_kernel(T* p, const T* g, T* m, int64_t n, T decay, T lr, T b1, T w1, T b2, T w2) {
  SX_GRID_LOOP(i, n) {
    T c = b1 * m[i] + w1 * g[i];
    p[i] = p[i] * decay - lr * (T(c > 0) - T(c < 0));
    m[i] = b2 * m[i] + w2 * g[i];
  }
}

// LAMB phase 1: m, v updated; per block the sums of p^2 and r^2 (r the raw update) into part[2 b], part[2 b + 1].
template <typename T> struct LambK {
  T b1, w1, b2, w2, ibc1, ibc2, eps, wd;
};
template <typename T> __device__ T lamb_update(const LambK<T>& k, T m, T v, T p) {
  return (m * k.ibc1) / (std::sqrt(v * k.ibc2) + k.eps) + k.wd * p;
}
template <typename T>
__global__ void lamb_moments(const T* p, const T* g, T* m, T* v, int64_t n, LambK<T> k, double* part) {
  double sp = 0, sr = 0;
  SX_GRID_LOOP(i, n) {
    T mi = k.b1 * m[i] + k.w1 * g[i], vi = k.b2 * v[i] + k.w2 * g[i] * g[i];
    T r = lamb_update(k, mi, vi, p[i]);
    m[i] = mi;
    v[i] = vi;
    sp += double(p[i] * p[i]);
    sr += double(r * r);
  }
  sp = block_reduce(sp, SumOf{});
  sr = block_reduce(sr, SumOf{});
  if (threadIdx.x == 0) part[2 * blockIdx.x] = sp, part[2 * blockIdx.x + 1] = sr;
}

// One block: the trust ratio ||p|| / ||r|| of a tensor from its blocks' sums (1 where either is 0).
__global__ void lamb_ratio(const double* part, int64_t blocks, double lr, double* ratio) {
  double sp = 0, sr = 0;
  for (int64_t b = threadIdx.x; b < blocks; b += blockDim.x) sp += part[2 * b], sr += part[2 * b + 1];
  sp = block_reduce(sp, SumOf{});
  sr = block_reduce(sr, SumOf{});
  if (threadIdx.x == 0) *ratio = lr * (sp > 0 && sr > 0 ? std::sqrt(sp) / std::sqrt(sr) : 1.0);
}

template <typename T> __global__ void lamb_apply(T* p, const T* m, const T* v, int64_t n, LambK<T> k, const double* s) {
  const T step = T(*s);
  SX_GRID_LOOP(i, n) p[i] -= step * lamb_update(k, m[i], v[i], p[i]);
}

// The p-th powers of |x| summed (p = inf: the largest |x|, NaN winning) per block into part[blockIdx.x].
template <typename T> __global__ void norm_part(const T* x, int64_t n, double p, double* part) {
  const bool inf = std::isinf(p);
  double acc = 0;
  SX_GRID_LOOP(i, n) {
    double a = std::fabs(double(x[i]));
    if (inf) acc = MaxOf{}(acc, a);
    else acc += p == 2 ? a * a : (p == 1 ? a : std::pow(a, p));
  }
  acc = inf ? block_reduce(acc, MaxOf{}) : block_reduce(acc, SumOf{});
  if (threadIdx.x == 0) part[blockIdx.x] = acc;
}

// One block: the partials combined in index order (each thread a fixed stride), then the root.
__global__ void norm_final(const double* part, int64_t n, double p, double* out) {
  const bool inf = std::isinf(p);
  double acc = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) acc = inf ? MaxOf{}(acc, part[i]) : acc + part[i];
  acc = inf ? block_reduce(acc, MaxOf{}) : block_reduce(acc, SumOf{});
  if (threadIdx.x == 0) *out = inf || p == 1 ? acc : (p == 2 ? std::sqrt(acc) : std::pow(acc, 1.0 / p));
}

template <typename T> __global__ void scale_kernel(T* x, int64_t n, T f) {
  SX_GRID_LOOP(i, n) x[i] *= f;
}

constexpr unsigned kNormBlocks = 256;  // partial sums per tensor at most

}  // namespace

void sgd_step(const TensorList& params, const TensorList& grads, const TensorList& bufs, const nn::SgdOpts& o) {
  use_device(params[0]->device());
  SX_CUDA_DISPATCH_FLOAT(params[0]->dtype, "sgd_step", [&] {
    using T = scalar_t;
    SgdK<T> k{T(-o.lr), T(o.momentum), T(1 - o.dampening), T(o.weight_decay), o.maximize ? T(-1) : T(1),
              o.momentum != 0, o.nesterov, o.first_step};
    for (size_t t = 0; t < params.size(); ++t) {
      int64_t n = params[t]->numel();
      if (n == 0) continue;
      T* b = k.momentum ? bufs[t]->data<T>() : nullptr;
      sgd_kernel<T><<<blocks_for(n), kThreads, 0, stream()>>>(params[t]->data<T>(), grads[t]->data<T>(), b, n, k);
    }
  });
  check_launch("sgd_step");
}

void adam_step(const TensorList& params, const TensorList& grads, const TensorList& m, const TensorList& v,
               const TensorList& vmax, const nn::AdamOpts& o) {
  use_device(params[0]->device());
  const double bc1 = 1 - std::pow(o.beta1, double(o.step)), bc2 = 1 - std::pow(o.beta2, double(o.step));
  const bool low = std::abs(1 - o.beta1) < 0.5;
  SX_CUDA_DISPATCH_FLOAT(params[0]->dtype, "adam_step", [&] {
    using T = scalar_t;
    const T w1 = T(1 - o.beta1);
    AdamK<T> k{o.maximize ? T(-1) : T(1),
               T(o.weight_decay),
               o.decoupled ? T(1 - o.lr * o.weight_decay) : T(1),
               low ? w1 : T(w1 - T(1)),
               T(o.beta2),
               T(1 - o.beta2),
               T(-(o.lr / bc1)),
               T(std::sqrt(bc2)),
               T(o.eps),
               low,
               o.amsgrad,
               !o.decoupled && o.weight_decay != 0};
    for (size_t t = 0; t < params.size(); ++t) {
      int64_t n = params[t]->numel();
      if (n == 0) continue;
      T* mx = o.amsgrad ? vmax[t]->data<T>() : nullptr;
      adam_kernel<T><<<blocks_for(n), kThreads, 0, stream()>>>(params[t]->data<T>(), grads[t]->data<T>(),
                                                                m[t]->data<T>(), v[t]->data<T>(), mx, n, k);
    }
  });
  check_launch("adam_step");
}

void lion_step(const TensorList& params, const TensorList& grads, const TensorList& m, double lr, double beta1,
               double beta2, double weight_decay) {
  use_device(params[0]->device());
  SX_CUDA_DISPATCH_FLOAT(params[0]->dtype, "lion_step", [&] {
    using T = scalar_t;
    for (size_t t = 0; t < params.size(); ++t) {
      int64_t n = params[t]->numel();
      if (n == 0) continue;
      lion_kernel<T><<<blocks_for(n), kThreads, 0, stream()>>>(params[t]->data<T>(), grads[t]->data<T>(),
                                                                m[t]->data<T>(), n, T(1 - lr * weight_decay), T(lr),
                                                                T(beta1), T(1 - beta1), T(beta2), T(1 - beta2));
    }
  });
  check_launch("lion_step");
}

void lamb_step(const TensorList& params, const TensorList& grads, const TensorList& m, const TensorList& v,
               int64_t step, double lr, double beta1, double beta2, double eps, double weight_decay) {
  const Device d = params[0]->device();
  use_device(d);
  const double bc1 = 1 - std::pow(beta1, double(step)), bc2 = 1 - std::pow(beta2, double(step));
  SX_CUDA_DISPATCH_FLOAT(params[0]->dtype, "lamb_step", [&] {
    using T = scalar_t;
    const LambK<T> k{T(beta1), T(1 - beta1), T(beta2), T(1 - beta2), T(1 / bc1), T(1 / bc2), T(eps), T(weight_decay)};
    Scratch part(size_t(2 * kNormBlocks) * sizeof(double), d), ratio(sizeof(double), d);
    for (size_t t = 0; t < params.size(); ++t) {  // in order: the scratch is reused tensor after tensor
      const int64_t n = params[t]->numel();
      if (n == 0) continue;
      const unsigned grid = std::min<unsigned>(blocks_for(n), kNormBlocks);
      T* p = params[t]->data<T>();
      lamb_moments<T><<<grid, kThreads, 0, stream()>>>(p, grads[t]->data<T>(), m[t]->data<T>(), v[t]->data<T>(), n, k,
                                                       part.as<double>());
      lamb_ratio<<<1, kThreads, 0, stream()>>>(part.as<double>(), grid, lr, ratio.as<double>());
      lamb_apply<T><<<blocks_for(n), kThreads, 0, stream()>>>(p, m[t]->data<T>(), v[t]->data<T>(), n, k,
                                                              ratio.as<double>());
    }
  });
  check_launch("lamb_step");
}

double total_norm(const TensorList& ts, double p) {
  for (const auto& t : ts)
    SX_CHECK(t->dtype == DType::Float32 || t->dtype == DType::Float64, TypeError,
             "[total_norm] expected float32 or float64 tensors, got ", dtype_name(t->dtype));
  if (ts.empty()) return 0;
  Device d = ts[0]->device();
  use_device(d);
  std::vector<unsigned> grid(ts.size());
  int64_t parts = 0;
  for (size_t t = 0; t < ts.size(); ++t) {
    int64_t b = (ts[t]->numel() + kThreads - 1) / kThreads;
    grid[t] = unsigned(b < kNormBlocks ? b : kNormBlocks);
    parts += grid[t];
  }
  Scratch part(size_t(parts + 1) * sizeof(double), d);
  double* pp = part.as<double>();
  int64_t at = 0;
  for (size_t t = 0; t < ts.size(); ++t) {
    if (!grid[t]) continue;
    int64_t n = ts[t]->numel();
    if (ts[t]->dtype == DType::Float32)
      norm_part<float><<<grid[t], kThreads, 0, stream()>>>(ts[t]->data<float>(), n, p, pp + at);
    else
      norm_part<double><<<grid[t], kThreads, 0, stream()>>>(ts[t]->data<double>(), n, p, pp + at);
    at += grid[t];
  }
  norm_final<<<1, kThreads, 0, stream()>>>(pp, parts, p, pp + parts);
  check_launch("total_norm");
  double r = 0;
  SX_CUDA_CHECK(cudaMemcpyAsync(&r, pp + parts, sizeof(double), cudaMemcpyDeviceToHost, stream()), "total_norm");
  SX_CUDA_CHECK(cudaStreamSynchronize(stream()), "total_norm");
  return r;
}

void scale(const TensorList& ts, double factor) {
  if (ts.empty()) return;
  use_device(ts[0]->device());
  for (const auto& t : ts) {
    int64_t n = t->numel();
    if (n == 0) continue;
    SX_CUDA_DISPATCH_FLOAT(t->dtype, "scale", [&] {
      using T = scalar_t;
      scale_kernel<T><<<blocks_for(n), kThreads, 0, stream()>>>(t->data<T>(), n, T(factor));
    });
  }
  check_launch("scale");
}

}  // namespace sx::cuda
