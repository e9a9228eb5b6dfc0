// The CPU entries of the fused nn kernels' slots (ops/nn.h): dtype dispatch around the kernels of
// cpu/nn_kernels.cpp and cpu/loss_kernels.cpp, and linear's BLAS calls.
#include <cblas.h>

#include <algorithm>
#include <vector>

#include "core/parallel.h"
#include "cpu/blas.h"
#include "cpu/kernels.h"
#include "cpu/nn_kernels.h"

namespace sx::cpu {
namespace {

template <typename T> T* ptr(const Tensor& t) { return t ? t->data<T>() : nullptr; }

// C (M x N) = op(A) @ op(B) + beta * C, row-major (sizes past BLAS's 32-bit ints split).
template <typename T>
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb, T beta,
          T* C, int64_t ldc) {
  blas_gemm(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc);
}

// Column sums of a row-major (M, N) matrix as ones^T @ g; sizes past BLAS's ints go through the
// splitting GEMM instead.
template <typename T> void col_sums(const T* g, int64_t M, int64_t N, T* out) {
  std::vector<T> ones(size_t(std::max<int64_t>(M, 1)), T(1));
  if (M > blas_int_limit() || N > blas_int_limit()) return blas_gemm(true, false, 1, N, M, ones.data(), 1, g, N, T(0), out, N);
  if constexpr (std::is_same_v<T, float>)
    scipy_cblas_sgemv(CblasRowMajor, CblasTrans, int(M), int(N), 1.0f, g, int(N), ones.data(), 1, 0.0f, out, 1);
  else
    scipy_cblas_dgemv(CblasRowMajor, CblasTrans, int(M), int(N), 1.0, g, int(N), ones.data(), 1, 0.0, out, 1);
}

void softmax_fwd_cpu(const Tensor& x, const Tensor& y, int64_t outer, int64_t n, int64_t inner, bool log) {
  SX_DISPATCH_F32_F64(x->dtype, "softmax", [&] { softmax_fwd<scalar_t>(ptr<scalar_t>(x), ptr<scalar_t>(y), outer, n, inner, log); });
}
void softmax_bwd_cpu(const Tensor& g, const Tensor& y, const Tensor& gx, int64_t outer, int64_t n, int64_t inner,
                     bool log) {
  SX_DISPATCH_F32_F64(y->dtype, "softmax", [&] {
    using T = scalar_t;
    softmax_bwd<T>(ptr<T>(g), ptr<T>(y), ptr<T>(gx), outer, n, inner, log);
  });
}
void norm_fwd_cpu(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y, const Tensor& mean,
                  const Tensor& rstd, int64_t M, int64_t N, double eps, bool rms) {
  SX_DISPATCH_F32_F64(x->dtype, "layer_norm", [&] {
    using T = scalar_t;
    norm_fwd<T>(ptr<T>(x), ptr<T>(w), ptr<T>(b), ptr<T>(y), ptr<T>(mean), ptr<T>(rstd), M, N, eps, rms);
  });
}
void norm_bwd_cpu(const Tensor& g, const Tensor& x, const Tensor& w, const Tensor& mean, const Tensor& rstd,
                  const Tensor& gx, const Tensor& gw, const Tensor& gb, int64_t M, int64_t N, bool rms) {
  SX_DISPATCH_F32_F64(x->dtype, "layer_norm", [&] {
    using T = scalar_t;
    norm_bwd<T>(ptr<T>(g), ptr<T>(x), ptr<T>(w), ptr<T>(mean), ptr<T>(rstd), ptr<T>(gx), ptr<T>(gw), ptr<T>(gb), M, N,
                rms);
  });
}
void gate_fwd_cpu(nn::Gate k, const Tensor& a, int64_t a_off, const Tensor& b, int64_t b_off, const Tensor& y,
                  int64_t outer, int64_t len, int64_t in_stride) {
  SX_DISPATCH_F32_F64(y->dtype, "glu", [&] {
    using T = scalar_t;
    gate_fwd<T>(k, ptr<T>(a) + a_off, ptr<T>(b) + b_off, ptr<T>(y), outer, len, in_stride);
  });
}
void gate_bwd_cpu(nn::Gate k, const Tensor& g, const Tensor& a, int64_t a_off, const Tensor& b, int64_t b_off,
                  const Tensor& ga, const Tensor& gb, int64_t outer, int64_t len, int64_t in_stride) {
  SX_DISPATCH_F32_F64(g->dtype, "glu", [&] {
    using T = scalar_t;
    gate_bwd<T>(k, ptr<T>(g), ptr<T>(a) + a_off, ptr<T>(b) + b_off, ptr<T>(ga), ptr<T>(gb), outer, len, in_stride);
  });
}
void ploss_fwd_cpu(nn::PLoss k, const Tensor& x, const Tensor& t, const Tensor& w, const Tensor& out, double beta) {
  SX_DISPATCH_F32_F64(x->dtype, "loss", [&] {
    using T = scalar_t;
    ploss_fwd<T>(k, ptr<T>(x), ptr<T>(t), ptr<T>(w), ptr<T>(out), x->numel(), beta);
  });
}
void ploss_bwd_cpu(nn::PLoss k, const Tensor& g, const Tensor& x, const Tensor& t, const Tensor& w, const Tensor& gx,
                   const Tensor& gt, const Tensor& gw, double beta) {
  SX_DISPATCH_F32_F64(x->dtype, "loss", [&] {
    using T = scalar_t;
    ploss_bwd<T>(k, ptr<T>(g), ptr<T>(x), ptr<T>(t), ptr<T>(w), ptr<T>(gx), ptr<T>(gt), ptr<T>(gw), x->numel(), beta);
  });
}
void linear_fwd_cpu(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& out, int64_t M, int64_t N,
                    int64_t K) {
  auto half = [&](auto* type) {  // the bias joins the float32 sums
    using T = std::remove_pointer_t<decltype(type)>;
    half_gemm(M, N, K, x->data<T>(), K, 1, w->data<T>(), 1, K, b ? b->data<T>() : nullptr, out->data<T>(), N);
  };
  if (x->dtype == DType::Float16) return half(static_cast<Half*>(nullptr));
  if (x->dtype == DType::BFloat16) return half(static_cast<BFloat16*>(nullptr));
  SX_DISPATCH_F32_F64(x->dtype, "linear", [&] {
    using T = scalar_t;
    T* o = out->data<T>();
    if (b) {
      const T* bp = b->data<T>();
      parallel_for(M, std::max<int64_t>(1, 16384 / std::max<int64_t>(N, 1)), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) std::copy(bp, bp + N, o + r * N);
      });
    }
    if (M && N) {
      if (K) gemm<T>(false, true, M, N, K, x->data<T>(), K, w->data<T>(), K, b ? T(1) : T(0), o, N);
      else if (!b) std::fill(o, o + M * N, T(0));
    }
  });
}
void linear_bwd_cpu(const Tensor& g, const Tensor& x, const Tensor& w, const Tensor& gx, const Tensor& gw,
                    const Tensor& gb, int64_t M, int64_t N, int64_t K) {
  SX_DISPATCH_F32_F64(g->dtype, "linear", [&] {
    using T = scalar_t;
    const T* gp = g->data<T>();
    if (gx) {
      if (M && K && N) gemm<T>(false, false, M, K, N, gp, N, w->data<T>(), K, T(0), gx->data<T>(), K);
      else fill(gx, Scalar(0.0));
    }
    if (gw) {
      if (M && K && N) gemm<T>(true, false, N, K, M, gp, N, x->data<T>(), K, T(0), gw->data<T>(), K);
      else fill(gw, Scalar(0.0));
    }
    if (gb) {
      if (M && N) col_sums<T>(gp, M, N, gb->data<T>());
      else fill(gb, Scalar(0.0));
    }
  });
}
void embedding_fwd_cpu(const Tensor& ids, const Tensor& w, const Tensor& out) {
  int64_t row_bytes = w->shape[1] * int64_t(itemsize(w->dtype));
  embedding_fwd(ids->data<int64_t>(), ids->numel(), w->raw(), row_bytes, out->raw());
}
void embedding_bwd_cpu(const Tensor& ids, const Tensor& g, const Tensor& gw, int64_t padding_idx, bool scale_by_freq) {
  SX_DISPATCH_F32_F64(gw->dtype, "embedding", [&] {
    using T = scalar_t;
    embedding_bwd<T>(ids->data<int64_t>(), ids->numel(), g->data<T>(), gw->shape[0], gw->shape[1], padding_idx,
                     scale_by_freq, gw->data<T>());
  });
}
void dropout_cpu(const Tensor& x, const Tensor& y, double p, uint64_t seed, uint64_t base) {
  SX_DISPATCH_F32_F64(x->dtype, "dropout", [&] {
    dropout_apply<scalar_t>(x->data<scalar_t>(), y->data<scalar_t>(), x->numel(), p, seed, base);
  });
}

}  // namespace

SX_REGISTER_KERNEL(kern::softmax_fwd, CPU, &softmax_fwd_cpu);
SX_REGISTER_KERNEL(kern::softmax_bwd, CPU, &softmax_bwd_cpu);
SX_REGISTER_KERNEL(kern::norm_fwd, CPU, &norm_fwd_cpu);
SX_REGISTER_KERNEL(kern::norm_bwd, CPU, &norm_bwd_cpu);
SX_REGISTER_KERNEL(kern::gate_fwd, CPU, &gate_fwd_cpu);
SX_REGISTER_KERNEL(kern::gate_bwd, CPU, &gate_bwd_cpu);
SX_REGISTER_KERNEL(kern::ploss_fwd, CPU, &ploss_fwd_cpu);
SX_REGISTER_KERNEL(kern::ploss_bwd, CPU, &ploss_bwd_cpu);
SX_REGISTER_KERNEL(kern::linear_fwd, CPU, &linear_fwd_cpu);
SX_REGISTER_KERNEL(kern::linear_bwd, CPU, &linear_bwd_cpu);
SX_REGISTER_KERNEL(kern::embedding_fwd, CPU, &embedding_fwd_cpu);
SX_REGISTER_KERNEL(kern::embedding_bwd, CPU, &embedding_bwd_cpu);
SX_REGISTER_KERNEL(kern::dropout, CPU, &dropout_cpu);

}  // namespace sx::cpu
