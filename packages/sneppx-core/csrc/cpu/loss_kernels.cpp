// Loss kernels: pointwise losses (forward and both input gradients in one pass) and the fused
// cross entropy, which reads the logits once forward (max, then sum of exponentials) and once
// backward, keeping only the per-row log-sum-exp in between.
#include <algorithm>
#include <limits>
#include <vector>

#include "core/parallel.h"
#include "cpu/nn_kernels.h"
#include "cpu/nn_math.h"
#include "cpu/reduce_rows.h"
#include "ops/kernels.h"
#include "ops/loss_math.h"

namespace sx::cpu {

namespace {
constexpr int64_t kWork = 32768;

// exp, log and log1p of the loss formulas (ops/loss_math.h): the vectorisable float versions.
struct CpuMath {
  template <typename T> static T exp(T x) { return sexp<T>(x); }
  template <typename T> static T log(T x) { return slog<T>(x); }
  template <typename T> static T log1p(T x) { return slog1p<T>(x); }
};

template <PLoss K, typename T> void ploss_fwd_t(const T* x, const T* t, const T* w, T* out, int64_t n, T beta) {
  parallel_for(n, kWork, [&](int64_t b, int64_t e) {
    if (w) for (int64_t i = b; i < e; ++i) out[i] = nn::loss_f<K, CpuMath, T>(x[i], t[i], w[i], beta);
    else for (int64_t i = b; i < e; ++i) out[i] = nn::loss_f<K, CpuMath, T>(x[i], t[i], T(1), beta);
  });
}

template <PLoss K, typename T>
void ploss_bwd_t(const T* g, const T* x, const T* t, const T* w, T* gx, T* gt, T* gw, int64_t n, T beta) {
  parallel_for(n, kWork, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      T dx, dt, dw;
      nn::loss_df<K, CpuMath, T>(x[i], t[i], w ? w[i] : T(1), beta, dx, dt, dw);
      if (gx) gx[i] = g[i] * dx;
      if (gt) gt[i] = g[i] * dt;
      if (gw) gw[i] = g[i] * dw;
    }
  });
}

#define SX_PLOSS_SWITCH(K, CALL)                     \
  switch (K) {                                       \
    case PLoss::Mse: CALL(PLoss::Mse); break;        \
    case PLoss::L1: CALL(PLoss::L1); break;          \
    case PLoss::SmoothL1: CALL(PLoss::SmoothL1); break; \
    case PLoss::Huber: CALL(PLoss::Huber); break;    \
    case PLoss::Bce: CALL(PLoss::Bce); break;        \
    case PLoss::BceLogits: CALL(PLoss::BceLogits); break; \
    case PLoss::KlDiv: CALL(PLoss::KlDiv); break;    \
    case PLoss::KlDivLog: CALL(PLoss::KlDivLog); break; \
  }
}  // namespace

template <typename T> void ploss_fwd(PLoss k, const T* x, const T* t, const T* w, T* out, int64_t n, double beta) {
#define SX_CALL(K) ploss_fwd_t<K, T>(x, t, w, out, n, T(beta))
  SX_PLOSS_SWITCH(k, SX_CALL)
#undef SX_CALL
}

template <typename T>
void ploss_bwd(PLoss k, const T* g, const T* x, const T* t, const T* w, T* gx, T* gt, T* gw, int64_t n, double beta) {
#define SX_CALL(K) ploss_bwd_t<K, T>(g, x, t, w, gx, gt, gw, n, T(beta))
  SX_PLOSS_SWITCH(k, SX_CALL)
#undef SX_CALL
}

// ---- cross entropy
namespace {
// Row max m and log(sum exp(x - m)), kept apart so that x - m - ls keeps its digits for large |x|.
template <typename T> void row_lse(const T* x, int64_t n, T& m_out, T& ls_out) {
  const T m = max_reduce(x, n);
  m_out = m;
  ls_out = std::log(exp_sum<T>(x, m, nullptr, n));
}

}  // namespace

template <typename T>
void ce_fwd(const CEArgs& a, const T* x, const T* probs, const T* weight, T* lse, double* loss, double* wrow) {
  const int64_t C = a.C;
  const double eps = a.smoothing;
  const T wsum = weight ? row_dot<T>(weight, nullptr, C) : T(C);
  parallel_for(a.N, std::max<int64_t>(1, kWork / C), [&](int64_t b, int64_t e) {
    std::vector<T> tw(probs ? C : 0);  // weighted, smoothed target distribution
    for (int64_t i = b; i < e; ++i) {
      const T* r = x + i * C;
      T m, ls;
      row_lse(r, C, m, ls);
      lse[2 * i] = m;
      lse[2 * i + 1] = ls;
      const double dm = double(m) + double(ls);  // exact enough in double
      if (!probs) {
        int64_t y = a.target[i];
        if (y == a.ignore_index) {
          loss[i] = wrow[i] = 0;
          continue;
        }
        double wy = weight ? double(weight[y]) : 1.0;
        double l = -(double(r[y]) - dm) * wy * (1 - eps);
        if (eps > 0) l -= eps / double(C) * (double(row_dot<T>(r, weight, C)) - dm * double(wsum));
        loss[i] = l;
        wrow[i] = wy;
      } else {
        const T* p = probs + i * C;
        for (int64_t c = 0; c < C; ++c) tw[c] = (p[c] * T(1 - eps) + T(eps / double(C))) * (weight ? weight[c] : T(1));
        loss[i] = -(double(row_dot<T>(r, tw.data(), C)) - dm * double(row_dot<T>(tw.data(), nullptr, C)));
        wrow[i] = 1;
      }
    }
  });
}

template <typename T>
void ce_bwd(const CEArgs& a, const T* x, const T* probs, const T* weight, const T* lse, const T* grow, T* gx, T* gp) {
  const int64_t C = a.C;
  const T eps = T(a.smoothing), sm = T(a.smoothing / double(a.C));
  const T wsum = weight ? row_dot<T>(weight, nullptr, C) : T(C);
  parallel_for(a.N, std::max<int64_t>(1, kWork / C), [&](int64_t b, int64_t e) {
    std::vector<T> tw(probs ? C : 0);
    for (int64_t i = b; i < e; ++i) {
      const T* r = x + i * C;
      T* o = gx + i * C;
      T m = lse[2 * i], ls = lse[2 * i + 1], g = grow[i];
      if (!probs) {
        int64_t y = a.target[i];
        if (y == a.ignore_index) {
          std::fill(o, o + C, T(0));
          continue;
        }
        T wy = weight ? weight[y] : T(1);
        T A = g * ((T(1) - eps) * wy + sm * wsum), Bs = g * sm;
        for (int64_t c = 0; c < C; ++c) o[c] = (r[c] - m) - ls;
        exp_inplace(o, C);  // softmax, written straight into the gradient
        if (weight) for (int64_t c = 0; c < C; ++c) o[c] = A * o[c] - Bs * weight[c];
        else for (int64_t c = 0; c < C; ++c) o[c] = A * o[c] - Bs;
        o[y] -= g * (T(1) - eps) * wy;
      } else {
        const T* p = probs + i * C;
        for (int64_t c = 0; c < C; ++c) tw[c] = (p[c] * (T(1) - eps) + sm) * (weight ? weight[c] : T(1));
        T B = g * row_dot<T>(tw.data(), nullptr, C);
        for (int64_t c = 0; c < C; ++c) o[c] = (r[c] - m) - ls;
        exp_inplace(o, C);
        for (int64_t c = 0; c < C; ++c) o[c] = B * o[c] - g * tw[c];
        if (gp) {
          T* q = gp + i * C;
          for (int64_t c = 0; c < C; ++c) q[c] = -g * (T(1) - eps) * (weight ? weight[c] : T(1)) * ((r[c] - m) - ls);
        }
      }
    }
  });
}

#define SX_INSTANTIATE(T)                                                                                 \
  template void ploss_fwd<T>(PLoss, const T*, const T*, const T*, T*, int64_t, double);                   \
  template void ploss_bwd<T>(PLoss, const T*, const T*, const T*, const T*, T*, T*, T*, int64_t, double); \
  template void ce_fwd<T>(const CEArgs&, const T*, const T*, const T*, T*, double*, double*);             \
  template void ce_bwd<T>(const CEArgs&, const T*, const T*, const T*, const T*, const T*, T*, T*);
SX_INSTANTIATE(float)
SX_INSTANTIATE(double)
#undef SX_INSTANTIATE

namespace {
template <typename T> T* ptr(const Tensor& t) { return t ? t->data<T>() : nullptr; }

template <typename F> void f32_f64(DType dt, const char* op, F f) {
  if (dt == DType::Float32) f.template operator()<float>();
  else if (dt == DType::Float64) f.template operator()<double>();
  else throw TypeError(msg("[", op, "] expected float32 or float64, got ", dtype_name(dt)));
}

void ce_fwd_cpu(const CEArgs& a0, const Tensor& target, const Tensor& x, const Tensor& probs, const Tensor& weight,
                const Tensor& lse, const Tensor& loss, const Tensor& wrow) {
  CEArgs a = a0;
  a.target = ptr<int64_t>(target);
  f32_f64(x->dtype, "cross_entropy", [&]<typename T>() {
    ce_fwd<T>(a, ptr<T>(x), ptr<T>(probs), ptr<T>(weight), ptr<T>(lse), ptr<double>(loss), ptr<double>(wrow));
  });
}
void ce_bwd_cpu(const CEArgs& a0, const Tensor& target, const Tensor& x, const Tensor& probs, const Tensor& weight,
                const Tensor& lse, const Tensor& grow, const Tensor& gx, const Tensor& gp) {
  CEArgs a = a0;
  a.target = ptr<int64_t>(target);
  f32_f64(x->dtype, "cross_entropy", [&]<typename T>() {
    ce_bwd<T>(a, ptr<T>(x), ptr<T>(probs), ptr<T>(weight), ptr<T>(lse), ptr<T>(grow), ptr<T>(gx), ptr<T>(gp));
  });
}
void nll_fwd_cpu(const Tensor& target, const Tensor& x, const Tensor& weight, int64_t ignore_index,
                 const Tensor& loss, const Tensor& wrow) {
  int64_t rows = x->shape[0], C = x->shape[1];
  const int64_t* y = target->data<int64_t>();
  double* l = loss->data<double>();
  double* wr = wrow->data<double>();
  f32_f64(x->dtype, "nll_loss", [&]<typename T>() {
    const T* p = x->data<T>();
    const T* w = ptr<T>(weight);
    for (int64_t i = 0; i < rows; ++i) {
      if (y[i] == ignore_index) continue;
      wr[i] = w ? double(w[y[i]]) : 1.0;
      l[i] = -wr[i] * double(p[i * C + y[i]]);
    }
  });
}
void nll_bwd_cpu(const Tensor& target, const Tensor& weight, const Tensor& grow, int64_t ignore_index,
                 const Tensor& gx) {
  int64_t rows = gx->shape[0], C = gx->shape[1];
  const int64_t* y = target->data<int64_t>();
  f32_f64(gx->dtype, "nll_loss", [&]<typename T>() {
    const T* w = ptr<T>(weight);
    const T* gr = grow->data<T>();
    T* o = gx->data<T>();
    for (int64_t i = 0; i < rows; ++i)
      if (y[i] != ignore_index) o[i * C + y[i]] = -(w ? w[y[i]] : T(1)) * gr[i];
  });
}
}  // namespace

SX_REGISTER_KERNEL(kern::ce_fwd, CPU, &ce_fwd_cpu);
SX_REGISTER_KERNEL(kern::ce_bwd, CPU, &ce_bwd_cpu);
SX_REGISTER_KERNEL(kern::nll_fwd, CPU, &nll_fwd_cpu);
SX_REGISTER_KERNEL(kern::nll_bwd, CPU, &nll_bwd_cpu);

}  // namespace sx::cpu
