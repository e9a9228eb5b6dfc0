// GEMM with 64-bit sizes over the 32-bit-int CBLAS interface (cpu/gemm.cpp).
#pragma once
#include <cstdint>

namespace sx {

// C (M x N) = op(A) @ op(B) + beta * C, row-major. Sizes past BLAS's int range are split into blocks;
// a leading dimension past 2**31 - 1 raises RuntimeError naming the op.
void blas_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
               int64_t ldb, float beta, float* C, int64_t ldc);
void blas_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const double* A, int64_t lda, const double* B,
               int64_t ldb, double beta, double* C, int64_t ldc);
// Largest M, N or K handed to one BLAS call: 2**31 - 1, lowered only by tests to exercise the split.
int64_t blas_int_limit();
void set_blas_int_limit(int64_t n);

}  // namespace sx
