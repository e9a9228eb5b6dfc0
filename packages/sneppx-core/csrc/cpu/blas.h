// GEMM with 64-bit sizes over the 32-bit-int CBLAS interface (cpu/gemm.cpp).
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace sx {

// C (M x N) = op(A) @ op(B) + beta * C, row-major. Sizes past BLAS's int range are split into blocks;
// a leading dimension past 2**31 - 1 raises RuntimeError naming the op.
void blas_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
               int64_t ldb, float beta, float* C, int64_t ldc);
void blas_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const double* A, int64_t lda, const double* B,
               int64_t ldb, double beta, double* C, int64_t ldc);
// C (M x N, row stride ldc) = A @ B (+ bias[j] on column j when bias is not null) for float16/bfloat16
// operands of any strides, A(i, k) = A[i * sam + k * sak] and B(k, j) = B[k * sbk + j * sbn]: float32
// accumulation, one rounding to the dtype, no float32 copy of either operand (cpu/gemm_half.cpp).
void half_gemm(int64_t M, int64_t N, int64_t K, const Half* A, int64_t sam, int64_t sak, const Half* B, int64_t sbk,
               int64_t sbn, const Half* bias, Half* C, int64_t ldc);
void half_gemm(int64_t M, int64_t N, int64_t K, const BFloat16* A, int64_t sam, int64_t sak, const BFloat16* B,
               int64_t sbk, int64_t sbn, const BFloat16* bias, BFloat16* C, int64_t ldc);
// C (M x N) = op(A) @ op(B) + beta * C for float32, read in place (only a transposed B is repacked)
// instead of through BLAS (cpu/gemm_direct.cpp, AVX-512 builds only). gemm_direct_fits says where it
// is used instead of BLAS: where it measured faster.
bool gemm_direct_fits(bool ta, bool tb, int64_t M, int64_t N, int64_t K);
void gemm_direct(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                 int64_t ldb, float beta, float* C, int64_t ldc);
// Largest M, N or K handed to one BLAS call: 2**31 - 1, lowered only by tests to exercise the split.
int64_t blas_int_limit();
void set_blas_int_limit(int64_t n);

}  // namespace sx
