// Optimizer update loops over one contiguous range of one parameter (ops/optim.cpp splits every
// parameter list into ranges and runs them on the thread pool). Flags are hoisted out of the loops
// so that float32 loops vectorise.
#pragma once
#include <cstdint>

namespace sx::cpu {

struct SgdK {
  double lr, momentum, dampening, weight_decay;
  bool nesterov, maximize, first_step;
};
template <typename T> void sgd_range(T* p, const T* g, T* buf, int64_t n, const SgdK& k);

struct AdamK {
  double lr, beta1, beta2, eps, weight_decay;
  double step_size, bc2_sqrt;  // lr / (1 - beta1^t), sqrt(1 - beta2^t)
  bool amsgrad, decoupled, maximize;
};
template <typename T> void adam_range(T* p, const T* g, T* m, T* v, T* vmax, int64_t n, const AdamK& k);

template <typename T>
void lion_range(T* p, const T* g, T* m, int64_t n, double lr, double beta1, double beta2, double weight_decay);

struct LambK {
  double beta1, beta2, eps, weight_decay, bc1, bc2;  // bc = 1 - beta^t
};
// Phase 1: updates m and v, returns sum(p^2) and sum(r^2) of the raw update r over the range.
template <typename T> void lamb_moments(const T* p, const T* g, T* m, T* v, int64_t n, const LambK& k, double* sums);
// Phase 2: p -= lr_ratio * r (r recomputed from m, v, p).
template <typename T> void lamb_apply(T* p, const T* m, const T* v, int64_t n, const LambK& k, double lr_ratio);

// sum |x|^p (p > 0) or max |x| (p = inf) over a range, accumulated in double.
template <typename T> double norm_range(const T* x, int64_t n, double p);
template <typename T> void scale_range(T* x, int64_t n, double factor);

}  // namespace sx::cpu
