// Matrix products on the CPU: float32/float64 through BLAS, other dtypes with a plain loop.
#include <cblas.h>

#include "core/parallel.h"
#include "cpu/kernels.h"
#include "ops/common.h"

namespace sx::cpu {
namespace {

// How a 2-D matrix view can be handed to BLAS without a copy: leading dim and transpose flag.
bool blas_layout(const Shape& st, int64_t rows, int64_t cols, bool& trans, int64_t& ld) {
  int64_t s0 = rows == 1 ? cols : st[0], s1 = cols == 1 ? 1 : st[1];
  if (s1 == 1 && s0 >= std::max<int64_t>(cols, 1)) {
    trans = false;
    ld = s0;
    return true;
  }
  s0 = rows == 1 ? 1 : st[0];
  s1 = cols == 1 ? rows : st[1];
  if (s0 == 1 && s1 >= std::max<int64_t>(rows, 1)) {
    trans = true;
    ld = s1;
    return true;
  }
  return false;
}

template <typename T>
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb,
          T* C, int64_t ldc) {
  if constexpr (std::is_same_v<T, float>) {
    scipy_cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(M), int(N),
                      int(K), 1.0f, A, int(lda), B, int(ldb), 0.0f, C, int(ldc));
  } else if constexpr (std::is_same_v<T, double>) {
    scipy_cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(M), int(N),
                      int(K), 1.0, A, int(lda), B, int(ldb), 0.0, C, int(ldc));
  }
}

// out[b] = a[b] @ b[b] for operands already broadcast to (batch..., m, k) and (batch..., k, n).
void batched_mm(const Tensor& a, const Tensor& b, const Tensor& out) {
  int64_t nd = a->dim(), M = a->shape[nd - 2], K = a->shape[nd - 1], N = b->shape[nd - 1];
  int64_t batch = 1;
  for (int64_t i = 0; i < nd - 2; ++i) batch *= a->shape[i];
  if (M == 0 || N == 0 || batch == 0) return;
  DType dt = a->dtype;
  auto offset = [&](const Tensor& t, int64_t bi) {
    int64_t off = 0;
    for (int64_t i = nd - 3; i >= 0; --i) {
      off += (bi % t->shape[i]) * t->strides[i];
      bi /= t->shape[i];
    }
    return off;
  };
  if (dt == DType::Float32 || dt == DType::Float64) {
    bool ta, tb;
    int64_t lda, ldb;
    Shape sa{a->strides[nd - 2], a->strides[nd - 1]}, sb{b->strides[nd - 2], b->strides[nd - 1]};
    Tensor ac = a, bc = b;
    if (!blas_layout(sa, M, K, ta, lda)) { ac = clone_nograd(a); sa = {K, 1}; blas_layout(sa, M, K, ta, lda); }
    if (!blas_layout(sb, K, N, tb, ldb)) { bc = clone_nograd(b); sb = {N, 1}; blas_layout(sb, K, N, tb, ldb); }
    if (K == 0) { fill(out, Scalar(0.0)); return; }
    for (int64_t bi = 0; bi < batch; ++bi) {
      SX_DISPATCH_FLOAT(dt, "matmul", [&] {
        if constexpr (std::is_same_v<scalar_t, float> || std::is_same_v<scalar_t, double>)
          gemm<scalar_t>(ta, tb, M, N, K, ac->data<scalar_t>() + offset(ac, bi), lda,
                         bc->data<scalar_t>() + offset(bc, bi), ldb, out->data<scalar_t>() + bi * M * N, N);
      });
    }
    return;
  }
  SX_DISPATCH_ALL(dt, "matmul", [&] {
    using T = scalar_t;
    using C = acc_t<T>;
    for (int64_t bi = 0; bi < batch; ++bi) {
      const T* A = a->data<T>() + offset(a, bi);
      const T* B = b->data<T>() + offset(b, bi);
      T* O = out->data<T>() + bi * M * N;
      parallel_for(M, 16, [&](int64_t r0, int64_t r1) {
        for (int64_t i = r0; i < r1; ++i)
          for (int64_t j = 0; j < N; ++j) {
            C acc = C(0);
            for (int64_t k = 0; k < K; ++k)
              acc += C(A[i * a->strides[nd - 2] + k * a->strides[nd - 1]]) * C(B[k * b->strides[nd - 2] + j * b->strides[nd - 1]]);
            O[i * N + j] = T(acc);
          }
      });
    }
  });
}

}  // namespace

SX_REGISTER_KERNEL(kern::matmul, CPU, &batched_mm);

}  // namespace sx::cpu
