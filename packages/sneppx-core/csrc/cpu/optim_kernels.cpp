// Fused optimizer loops. Formulas follow torch.optim (SGD, Adam/AdamW) and the Lion and LAMB papers;
// see _functional_optim.py for the maths.
#include <algorithm>
#include <cmath>

#include "cpu/optim_kernels.h"

namespace sx::cpu {

// SGD and Adam repeat torch.optim's sequence of tensor ops with the same roundings: contraction into
// FMA is off in this file, and std::fma appears where PyTorch's CPU kernels fuse (add with alpha, lerp,
// addcmul), so that long runs stay within float32 rounding of torch.optim instead of drifting apart.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace {
// grad = -grad if maximize; grad = grad + weight_decay * param (torch: grad.add(param, alpha=wd)).
template <typename T, bool WD> inline T decayed_grad(T g, T p, T gs, T wd) {
  T d = gs * g;
  if constexpr (WD) d = std::fma(p, wd, d);
  return d;
}

template <typename T, bool WD> void sgd_loop(T* p, const T* g, T* buf, int64_t n, const SgdK& k) {
  const T nlr = T(-k.lr), mom = T(k.momentum), keep = T(1 - k.dampening), wd = T(k.weight_decay);
  const T gs = k.maximize ? T(-1) : T(1);
  if (k.momentum == 0) {
    for (int64_t i = 0; i < n; ++i) p[i] = std::fma(decayed_grad<T, WD>(g[i], p[i], gs, wd), nlr, p[i]);
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    T d = decayed_grad<T, WD>(g[i], p[i], gs, wd);
    T b = k.first_step ? d : std::fma(d, keep, buf[i] * mom);  // buf.mul_(momentum).add_(grad, alpha=1-damp)
    buf[i] = b;
    T step = k.nesterov ? std::fma(b, mom, d) : b;               // grad.add(buf, alpha=momentum)
    p[i] = std::fma(step, nlr, p[i]);                            // param.add_(grad, alpha=-lr)
  }
}
}  // namespace

template <typename T> void sgd_range(T* p, const T* g, T* buf, int64_t n, const SgdK& k) {
  if (k.weight_decay != 0) sgd_loop<T, true>(p, g, buf, n, k);
  else sgd_loop<T, false>(p, g, buf, n, k);
}

namespace {
template <typename T, bool AMS, bool L2>
void adam_loop(T* p, const T* g, T* m, T* v, T* vmax, int64_t n, const AdamK& k) {
  const T gs = k.maximize ? T(-1) : T(1), wd = T(k.weight_decay);
  const T decay = k.decoupled ? T(1 - k.lr * k.weight_decay) : T(1);
  // exp_avg.lerp_(grad, w): PyTorch computes start + w (end - start) for |w| < 0.5, else end - (1 - w)(end - start)
  const T w1 = T(1 - k.beta1);
  const bool low = std::abs(1 - k.beta1) < 0.5;
  const T coeff = low ? w1 : T(w1 - T(1));
  const T b2 = T(k.beta2), w2 = T(1 - k.beta2);
  const T step = T(-k.step_size), bc2s = T(k.bc2_sqrt), eps = T(k.eps);
  for (int64_t i = 0; i < n; ++i) {
    T gi = decayed_grad<T, L2>(g[i], p[i], gs, wd);
    T pi = p[i] * decay;
    T mi = std::fma(coeff, gi - m[i], low ? m[i] : gi);
    T vi = v[i] * b2;
    vi = std::fma(w2 * gi, gi, vi);  // exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1-beta2)
    m[i] = mi;
    v[i] = vi;
    if constexpr (AMS) {
      vi = vmax[i] > vi ? vmax[i] : vi;
      vmax[i] = vi;
    }
    T den = std::sqrt(vi) / bc2s + eps;
    p[i] = pi + step * mi / den;  // param.addcdiv_(exp_avg, denom, value=-step_size): self + v * t1 / t2
  }
}
}  // namespace

template <typename T> void adam_range(T* p, const T* g, T* m, T* v, T* vmax, int64_t n, const AdamK& k) {
  bool l2 = !k.decoupled && k.weight_decay != 0;
  if (k.amsgrad && l2) adam_loop<T, true, true>(p, g, m, v, vmax, n, k);
  else if (k.amsgrad) adam_loop<T, true, false>(p, g, m, v, vmax, n, k);
  else if (l2) adam_loop<T, false, true>(p, g, m, v, vmax, n, k);
  else adam_loop<T, false, false>(p, g, m, v, vmax, n, k);
}

template <typename T>
void lion_range(T* p, const T* g, T* m, int64_t n, double lr, double beta1, double beta2, double weight_decay) {
  const T decay = T(1 - lr * weight_decay), step = T(lr), b1 = T(beta1), w1 = T(1 - beta1), b2 = T(beta2),
          w2 = T(1 - beta2);
  for (int64_t i = 0; i < n; ++i) {
    T c = b1 * m[i] + w1 * g[i];
    T s = T(c > 0) - T(c < 0);
    p[i] = p[i] * decay - step * s;
    m[i] = b2 * m[i] + w2 * g[i];
  }
}

namespace {
constexpr int kLanes = 16;
constexpr int64_t kBlock = 1024;  // float partial sums are flushed to double every block
}  // namespace

template <typename T> void lamb_moments(const T* p, const T* g, T* m, T* v, int64_t n, const LambK& k, double* sums) {
  const T b1 = T(k.beta1), w1 = T(1 - k.beta1), b2 = T(k.beta2), w2 = T(1 - k.beta2);
  const T ibc1 = T(1 / k.bc1), ibc2 = T(1 / k.bc2), eps = T(k.eps), wd = T(k.weight_decay);
  auto step = [&](int64_t i, T& pp, T& rr) {
    T mi = b1 * m[i] + w1 * g[i], vi = b2 * v[i] + w2 * g[i] * g[i];
    T r = (mi * ibc1) / (std::sqrt(vi * ibc2) + eps) + wd * p[i];
    m[i] = mi;
    v[i] = vi;
    pp = p[i] * p[i];
    rr = r * r;
  };
  double sp = 0, sr = 0;
  for (int64_t b0 = 0; b0 < n; b0 += kBlock) {
    int64_t len = std::min(kBlock, n - b0), j = 0;
    T ap[kLanes] = {}, ar[kLanes] = {};
    for (; j + kLanes <= len; j += kLanes)
      for (int l = 0; l < kLanes; ++l) {
        T pp, rr;
        step(b0 + j + l, pp, rr);
        ap[l] += pp;
        ar[l] += rr;
      }
    for (int l = 0; l < kLanes; ++l) sp += double(ap[l]), sr += double(ar[l]);
    for (; j < len; ++j) {
      T pp, rr;
      step(b0 + j, pp, rr);
      sp += double(pp);
      sr += double(rr);
    }
  }
  sums[0] = sp;
  sums[1] = sr;
}

template <typename T> void lamb_apply(T* p, const T* m, const T* v, int64_t n, const LambK& k, double lr_ratio) {
  const T ibc1 = T(1 / k.bc1), ibc2 = T(1 / k.bc2), eps = T(k.eps), wd = T(k.weight_decay), s = T(lr_ratio);
  for (int64_t i = 0; i < n; ++i) p[i] -= s * ((m[i] * ibc1) / (std::sqrt(v[i] * ibc2) + eps) + wd * p[i]);
}

template <typename T> double norm_range(const T* x, int64_t n, double p) {
  double total = 0;
  for (int64_t b0 = 0; b0 < n; b0 += kBlock) {
    int64_t len = std::min(kBlock, n - b0);
    const T* xb = x + b0;
    T acc[kLanes] = {};
    int64_t j = 0;
    if (std::isinf(p)) {
      for (; j + kLanes <= len; j += kLanes)
        for (int l = 0; l < kLanes; ++l) {
          T a = std::abs(xb[j + l]);
          acc[l] = a > acc[l] || a != a ? a : acc[l];
        }
      double mx = 0;
      for (int l = 0; l < kLanes; ++l) mx = double(acc[l]) > mx || acc[l] != acc[l] ? double(acc[l]) : mx;
      for (; j < len; ++j) mx = std::abs(double(xb[j])) > mx || xb[j] != xb[j] ? std::abs(double(xb[j])) : mx;
      total = mx > total || mx != mx ? mx : total;
      continue;
    }
    if (p == 2) {
      for (; j + kLanes <= len; j += kLanes)
        for (int l = 0; l < kLanes; ++l) acc[l] += xb[j + l] * xb[j + l];
      for (int l = 0; l < kLanes; ++l) total += double(acc[l]);
      for (; j < len; ++j) total += double(xb[j]) * double(xb[j]);
    } else if (p == 1) {
      for (; j + kLanes <= len; j += kLanes)
        for (int l = 0; l < kLanes; ++l) acc[l] += std::abs(xb[j + l]);
      for (int l = 0; l < kLanes; ++l) total += double(acc[l]);
      for (; j < len; ++j) total += std::abs(double(xb[j]));
    } else {
      for (; j < len; ++j) total += std::pow(std::abs(double(xb[j])), p);
    }
  }
  return total;
}

template <typename T> void scale_range(T* x, int64_t n, double factor) {
  const T f = T(factor);
  for (int64_t i = 0; i < n; ++i) x[i] *= f;
}

#define SX_INSTANTIATE(T)                                                                          \
  template void sgd_range<T>(T*, const T*, T*, int64_t, const SgdK&);                              \
  template void adam_range<T>(T*, const T*, T*, T*, T*, int64_t, const AdamK&);                    \
  template void lion_range<T>(T*, const T*, T*, int64_t, double, double, double, double);          \
  template void lamb_moments<T>(const T*, const T*, T*, T*, int64_t, const LambK&, double*);       \
  template void lamb_apply<T>(T*, const T*, const T*, int64_t, const LambK&, double);              \
  template double norm_range<T>(const T*, int64_t, double);                                        \
  template void scale_range<T>(T*, int64_t, double);
SX_INSTANTIATE(float)
SX_INSTANTIATE(double)
#undef SX_INSTANTIATE

}  // namespace sx::cpu
