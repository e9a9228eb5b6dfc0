// CPU kernels of batch normalisation (slots declared in ops/conv.h). Each channel is one task: its N
// rows of S contiguous values are reduced, then written, while they are still in cache, and every sum
// runs in one fixed order, so results do not depend on the thread count. Row sums are
// cpu/reduce_rows.h's blocked_sum (partial results in the element type over blocks of a row, the blocks and
// rows added in double).
#include <algorithm>
#include <cmath>

#include "core/parallel.h"
#include "cpu/reduce_rows.h"
#include "ops/conv.h"
#include "ops/nn_util.h"

namespace sx::cpu {
namespace {
constexpr int64_t kWork = 32768;  // elements per parallel chunk, roughly

template <typename T> double row_sum(const T* x, int64_t n) {
  return blocked_sum<T>(n, [x](int64_t j) { return x[j]; });
}

// sum (x - mu)^2
template <typename T> double row_sq_dev(const T* x, int64_t n, T mu) {
  return blocked_sum<T>(n, [x, mu](int64_t j) { return (x[j] - mu) * (x[j] - mu); });
}

// sg += sum g, sgx += sum g (x - mu)
template <typename T> void row_grad_sums(const T* g, const T* x, int64_t n, T mu, double& sg, double& sgx) {
  sg += blocked_sum<T>(n, [g](int64_t j) { return g[j]; });
  sgx += blocked_sum<T>(n, [g, x, mu](int64_t j) { return g[j] * (x[j] - mu); });
}

template <typename T>
void bn_fwd(const T* x, const T* w, const T* b, T* rm, T* rv, T* y, T* mean, T* invstd, const BatchNormArgs& a) {
  const int64_t N = a.N, C = a.C, S = a.S, cnt = N * S;
  parallel_for(C, std::max<int64_t>(1, kWork / std::max<int64_t>(cnt, 1)), [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      double mu, is;
      if (a.training) {
        double s = 0, q = 0;
        for (int64_t n = 0; n < N; ++n) s += row_sum(x + (n * C + c) * S, S);
        mu = s / double(cnt);
        for (int64_t n = 0; n < N; ++n) q += row_sq_dev(x + (n * C + c) * S, S, T(mu));
        double var = q / double(cnt);
        is = 1.0 / std::sqrt(var + a.eps);
        if (rm) rm[c] = T((1 - a.momentum) * double(rm[c]) + a.momentum * mu);
        if (rv) rv[c] = T((1 - a.momentum) * double(rv[c]) + a.momentum * var * double(cnt) / double(cnt - 1));
      } else {
        mu = double(rm[c]);
        is = 1.0 / std::sqrt(double(rv[c]) + a.eps);
      }
      mean[c] = T(mu);
      invstd[c] = T(is);
      const T m = T(mu), scale = T(is * (w ? double(w[c]) : 1.0)), shift = b ? b[c] : T(0);
      for (int64_t n = 0; n < N; ++n) {
        const T* xr = x + (n * C + c) * S;
        T* yr = y + (n * C + c) * S;
        for (int64_t j = 0; j < S; ++j) yr[j] = (xr[j] - m) * scale + shift;
      }
    }
  });
}

template <typename T>
void bn_bwd(const T* g, const T* x, const T* w, const T* mean, const T* invstd, T* gx, T* gw, T* gb,
            const BatchNormArgs& a) {
  const int64_t N = a.N, C = a.C, S = a.S, cnt = N * S;
  const bool sums = gw || gb || (gx && a.training);
  parallel_for(C, std::max<int64_t>(1, kWork / std::max<int64_t>(cnt, 1)), [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      const T m = mean[c];
      const double is = double(invstd[c]);
      double sg = 0, sgx = 0;
      if (sums)
        for (int64_t n = 0; n < N; ++n) row_grad_sums(g + (n * C + c) * S, x + (n * C + c) * S, S, m, sg, sgx);
      if (gw) gw[c] = T(sgx * is);
      if (gb) gb[c] = T(sg);
      if (!gx) continue;
      // gx = w is (g - mean(g) - xhat mean(g xhat)), with xhat = (x - m) is; eval: gx = w is g
      const BatchNormGrad k = batch_norm_grad(is, w ? double(w[c]) : 1.0, sg, sgx, cnt, a.training);
      const T kg = T(k.kg), ka = T(k.ka), kx = T(k.kx);
      for (int64_t n = 0; n < N; ++n) {
        const T* gr = g + (n * C + c) * S;
        const T* xr = x + (n * C + c) * S;
        T* o = gx + (n * C + c) * S;
        for (int64_t j = 0; j < S; ++j) o[j] = kg * gr[j] - ka - kx * (xr[j] - m);
      }
    }
  });
}

template <typename T> T* ptr(const Tensor& t) { return t ? t->data<T>() : nullptr; }

void cpu_batch_norm_fwd(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& rm, const Tensor& rv,
                        const Tensor& y, const Tensor& mean, const Tensor& invstd, const BatchNormArgs& a) {
  SX_DISPATCH_F32_F64(x->dtype, "batch_norm", [&] {
    using T = scalar_t;
    bn_fwd<T>(ptr<T>(x), ptr<T>(w), ptr<T>(b), ptr<T>(rm), ptr<T>(rv), ptr<T>(y), ptr<T>(mean), ptr<T>(invstd), a);
  });
}
void cpu_batch_norm_bwd(const Tensor& g, const Tensor& x, const Tensor& w, const Tensor& mean, const Tensor& invstd,
                        const Tensor& gx, const Tensor& gw, const Tensor& gb, const BatchNormArgs& a) {
  SX_DISPATCH_F32_F64(x->dtype, "batch_norm_backward", [&] {
    using T = scalar_t;
    bn_bwd<T>(ptr<T>(g), ptr<T>(x), ptr<T>(w), ptr<T>(mean), ptr<T>(invstd), ptr<T>(gx), ptr<T>(gw), ptr<T>(gb), a);
  });
}
}  // namespace

SX_REGISTER_KERNEL(kern::batch_norm_fwd, CPU, &cpu_batch_norm_fwd);
SX_REGISTER_KERNEL(kern::batch_norm_bwd, CPU, &cpu_batch_norm_bwd);

}  // namespace sx::cpu
