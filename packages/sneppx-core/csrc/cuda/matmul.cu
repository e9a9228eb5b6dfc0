// Matrix products on CUDA through cuBLAS: one strided-batched GEMM per call, float64 in float64,
// float32 in float32 (TF32 tensor cores when backends.cuda.matmul.allow_tf32 is set), float16 and
// bfloat16 with float32 accumulation. Operands whose matrices or batch dims cuBLAS cannot address
// with one stride are packed first.
#include <map>

#include "cuda/cuda_util.cuh"
#include "cuda/kernels.h"
#include "ops/common.h"

namespace sx::cuda {

void check_blas(cublasStatus_t s, const char* op, const char* what) {
  SX_CHECK(s == CUBLAS_STATUS_SUCCESS, RuntimeError, "[", op, "] cuBLAS error ", int(s), " in ", what);
}

// One handle per device and thread (cuBLAS handles must not be shared between threads at once).
cublasHandle_t blas_handle(Device d) {
  thread_local std::map<int, cublasHandle_t> handles;
  auto it = handles.find(d.index);
  if (it != handles.end()) return it->second;
  use_device(d);
  cublasHandle_t h;
  check_blas(cublasCreate(&h), "matmul", "cublasCreate");
  check_blas(cublasSetStream(h, stream()), "matmul", "cublasSetStream");
  handles[d.index] = h;
  return h;
}

void gemm(Device d, DType dt, const char* op, cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n,
          int64_t k, const void* A, int64_t lda, int64_t sa, const void* B, int64_t ldb, int64_t sb, double beta,
          void* C, int64_t ldc, int64_t sc, int64_t batch) {
  cublasHandle_t h = blas_handle(d);
  if (dt == DType::Float64) {
    const double one = 1;
    check_blas(cublasDgemmStridedBatched_64(h, ta, tb, m, n, k, &one, static_cast<const double*>(A), lda, sa,
                                            static_cast<const double*>(B), ldb, sb, &beta, static_cast<double*>(C),
                                            ldc, sc, batch),
               op, "cublasDgemmStridedBatched");
    return;
  }
  cudaDataType t;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  switch (dt) {
    case DType::Float32:
      t = CUDA_R_32F;
      if (cuda_allow_tf32()) compute = CUBLAS_COMPUTE_32F_FAST_TF32;
      break;
    case DType::Float16: t = CUDA_R_16F; break;
    case DType::BFloat16: t = CUDA_R_16BF; break;
    default: no_dtype(op, dt);
  }
  const float one = 1, b = float(beta);
  check_blas(cublasGemmStridedBatchedEx_64(h, ta, tb, m, n, k, &one, A, t, lda, sa, B, t, ldb, sb, &b, C, t, ldc, sc,
                                           batch, compute, CUBLAS_GEMM_DEFAULT),
             op, "cublasGemmStridedBatchedEx");
}

namespace {

// A row-major (rows, cols) matrix view as BLAS sees it: stored as is (trans = false) or as its
// transpose (trans = true), with leading dimension ld. False when neither fits.
bool blas_layout(int64_t s0, int64_t s1, int64_t rows, int64_t cols, bool& trans, int64_t& ld) {
  int64_t r0 = rows == 1 ? cols : s0, r1 = cols == 1 ? 1 : s1;
  if (r1 == 1 && r0 >= std::max<int64_t>(cols, 1)) {
    trans = false;
    ld = r0;
    return true;
  }
  r0 = rows == 1 ? 1 : s0;
  r1 = cols == 1 ? rows : s1;
  if (r0 == 1 && r1 >= std::max<int64_t>(rows, 1)) {
    trans = true;
    ld = r1;
    return true;
  }
  return false;
}

// The one stride between consecutive matrices of the batch dims, when there is one.
bool batch_stride(const Tensor& t, int64_t nd, int64_t& stride) {
  stride = 0;
  int64_t expect = -1;  // stride the next outer dim needs to continue the run
  for (int64_t i = nd - 3; i >= 0; --i) {
    if (t->shape[i] == 1) continue;
    int64_t s = t->strides[i];
    if (expect < 0) {
      stride = s;
    } else if (s != expect && !(s == 0 && stride == 0)) {
      return false;
    }
    expect = s * t->shape[i];
  }
  return true;
}

struct Operand {
  Tensor t;
  bool trans = false;
  int64_t ld = 0, stride = 0;
};

Operand prepare(const Tensor& t, int64_t rows, int64_t cols) {
  int64_t nd = t->dim();
  Operand o{t};
  if (blas_layout(t->strides[nd - 2], t->strides[nd - 1], rows, cols, o.trans, o.ld) && batch_stride(t, nd, o.stride))
    return o;
  o.t = clone_nograd(t);  // contiguous: packed matrices, one batch stride
  blas_layout(cols, 1, rows, cols, o.trans, o.ld);
  o.stride = rows * cols;
  return o;
}

}  // namespace

void matmul(const Tensor& a, const Tensor& b, const Tensor& out) {
  int64_t nd = a->dim(), M = a->shape[nd - 2], K = a->shape[nd - 1], N = b->shape[nd - 1];
  int64_t batch = 1;
  for (int64_t i = 0; i < nd - 2; ++i) batch *= a->shape[i];
  if (M == 0 || N == 0 || batch == 0) return;
  use_device(out->device());
  if (K == 0) {
    SX_CUDA_CHECK(cudaMemsetAsync(out->raw(), 0, size_t(out->numel()) * itemsize(out->dtype), stream()), "matmul");
    return;
  }
  Operand A = prepare(a, M, K), B = prepare(b, K, N);
  // Row-major out = A @ B is column-major out^T = B^T @ A^T: cuBLAS gets B first.
  cublasOperation_t opb = B.trans ? CUBLAS_OP_T : CUBLAS_OP_N, opa = A.trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  gemm(out->device(), out->dtype, "matmul", opb, opa, N, M, K, B.t->raw(), B.ld, B.stride, A.t->raw(), A.ld, A.stride,
       0.0, out->raw(), N, M * N, batch);
}

}  // namespace sx::cuda
