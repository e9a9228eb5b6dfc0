// Fused optimizer loops. Formulas follow torch.optim (SGD, Adam/AdamW: the foreach implementation's
// order of operations) and the Lion and LAMB papers; see ops/optim.cpp and functional.py for the maths.
#include <algorithm>
#include <cmath>

#include "cpu/optim_kernels.h"

namespace sx::cpu {

template <typename T> void sgd_range(T* p, const T* g, T* buf, int64_t n, const SgdK& k) {
  const T lr = T(k.lr), mom = T(k.momentum), keep = T(1 - k.dampening), wd = T(k.weight_decay);
  const T gs = k.maximize ? T(-1) : T(1);
  if (k.momentum == 0) {
    for (int64_t i = 0; i < n; ++i) p[i] -= lr * (gs * g[i] + wd * p[i]);
  } else if (k.first_step) {
    if (k.nesterov)
      for (int64_t i = 0; i < n; ++i) {
        T d = gs * g[i] + wd * p[i];
        buf[i] = d;
        p[i] -= lr * (d + mom * d);
      }
    else
      for (int64_t i = 0; i < n; ++i) {
        T d = gs * g[i] + wd * p[i];
        buf[i] = d;
        p[i] -= lr * d;
      }
  } else if (k.nesterov) {
    for (int64_t i = 0; i < n; ++i) {
      T d = gs * g[i] + wd * p[i];
      T b = buf[i] * mom + keep * d;
      buf[i] = b;
      p[i] -= lr * (d + mom * b);
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      T d = gs * g[i] + wd * p[i];
      T b = buf[i] * mom + keep * d;
      buf[i] = b;
      p[i] -= lr * b;
    }
  }
}

namespace {
template <typename T, bool AMS>
void adam_loop(T* p, const T* g, T* m, T* v, T* vmax, int64_t n, const AdamK& k) {
  const T gs = k.maximize ? T(-1) : T(1);
  const T l2 = k.decoupled ? T(0) : T(k.weight_decay);
  const T decay = k.decoupled ? T(1 - k.lr * k.weight_decay) : T(1);
  const T w1 = T(1 - k.beta1), b2 = T(k.beta2), w2 = T(1 - k.beta2);
  const T step = T(-k.step_size), bc2s = T(k.bc2_sqrt), eps = T(k.eps);
  for (int64_t i = 0; i < n; ++i) {
    T pi = p[i];
    T gi = gs * g[i] + l2 * pi;
    pi *= decay;
    T mi = m[i] + w1 * (gi - m[i]);  // exp_avg.lerp_(grad, 1 - beta1)
    T vi = v[i] * b2 + w2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    if constexpr (AMS) {
      vi = vmax[i] > vi ? vmax[i] : vi;
      vmax[i] = vi;
    }
    p[i] = pi + step * (mi / (std::sqrt(vi) / bc2s + eps));
  }
}
}  // namespace

template <typename T> void adam_range(T* p, const T* g, T* m, T* v, T* vmax, int64_t n, const AdamK& k) {
  if (k.amsgrad) adam_loop<T, true>(p, g, m, v, vmax, n, k);
  else adam_loop<T, false>(p, g, m, v, vmax, n, k);
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
