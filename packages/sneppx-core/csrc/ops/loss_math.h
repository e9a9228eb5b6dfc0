// The pointwise losses' formulas (MSE, L1, smooth L1, Huber, BCE, BCE with logits, KL divergence)
// and their derivatives, shared by the CPU and CUDA kernels. M supplies exp, log and log1p (the CPU's
// vectorisable float versions, or the device's).
#pragma once
#include "ops/nn.h"

namespace sx::nn {

template <typename T> SX_HD inline T sgn(T v) { return T(v > 0) - T(v < 0); }
template <typename M, typename T> SX_HD inline T softplus_neg(T x) {  // log(1 + exp(-x)), stable
  T a = x < 0 ? -x : x;
  return (x < 0 ? -x : T(0)) + M::log1p(M::exp(-a));
}
template <typename M, typename T> SX_HD inline T clamp_log(T v) {  // log(v) clamped at -100 as PyTorch's BCE does
  T l = M::log(v);
  return l < T(-100) ? T(-100) : l;
}
template <typename M, typename T> SX_HD inline T clamp_log1m(T v) {  // log(1 - v) clamped at -100
  T l = M::log1p(-v);
  return l < T(-100) ? T(-100) : l;
}

template <PLoss K, typename M, typename T> SX_HD inline T loss_f(T x, T t, T w, T beta) {
  T d = x - t, a = d < 0 ? -d : d;
  if constexpr (K == PLoss::Mse) return d * d;
  if constexpr (K == PLoss::L1) return a;
  if constexpr (K == PLoss::SmoothL1) return a < beta ? T(0.5) * d * d / beta : a - T(0.5) * beta;
  if constexpr (K == PLoss::Huber) return a < beta ? T(0.5) * d * d : beta * (a - T(0.5) * beta);
  if constexpr (K == PLoss::Bce) return -(t * clamp_log<M>(x) + (T(1) - t) * clamp_log1m<M>(x));
  if constexpr (K == PLoss::BceLogits) return (T(1) - t) * x + (T(1) + (w - T(1)) * t) * softplus_neg<M>(x);
  // PyTorch's xlogy(t, t) - t x: 0 log 0 is 0, a negative (or NaN) target gives NaN
  if constexpr (K == PLoss::KlDiv) return t == 0 ? -t * x : t * (M::log(t) - x);
  if constexpr (K == PLoss::KlDivLog) return M::exp(t) * (t - x);
  return T(0);
}

// d loss / dx, d loss / dt and d loss / dw (pos_weight) at one element.
template <PLoss K, typename M, typename T> SX_HD inline void loss_df(T x, T t, T w, T beta, T& dx, T& dt, T& dw) {
  T d = x - t, a = d < 0 ? -d : d;
  dw = 0;
  if constexpr (K == PLoss::Mse) dx = T(2) * d;
  if constexpr (K == PLoss::L1) dx = sgn(d);
  if constexpr (K == PLoss::SmoothL1) dx = a < beta ? d / beta : sgn(d);
  if constexpr (K == PLoss::Huber) dx = a < beta ? d : beta * sgn(d);
  if constexpr (K <= PLoss::Huber) dt = -dx;
  if constexpr (K == PLoss::Bce) {
    T den = (T(1) - x) * x;
    dx = (x - t) / (den > T(1e-12) ? den : T(1e-12));
    dt = clamp_log1m<M>(x) - clamp_log<M>(x);
  }
  if constexpr (K == PLoss::BceLogits) {
    T lw = T(1) + (w - T(1)) * t, sp = softplus_neg<M>(x);
    dx = (T(1) - t) - lw / (T(1) + M::exp(x));
    dt = -x + (w - T(1)) * sp;
    dw = t * sp;
  }
  if constexpr (K == PLoss::KlDiv) {  // NaN in t at t = 0, as xlogy's gradient in its second argument (0 / 0)
    dx = -t;
    dt = t == 0 ? T(NAN) : M::log(t) + T(1) - x;
  }
  if constexpr (K == PLoss::KlDivLog) {
    T e = M::exp(t);
    dx = -e;
    dt = e * (t - x + T(1));
  }
}

}  // namespace sx::nn
