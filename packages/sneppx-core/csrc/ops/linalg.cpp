// Matrix products through BLAS (float32/float64); other dtypes take a plain loop.
#include <cblas.h>

#include <atomic>
#include <limits>

#include "core/parallel.h"
#include "ops/blas.h"
#include "cpu/kernels.h"
#include "ops/common.h"

namespace sx {

namespace {
std::atomic<int64_t> g_blas_limit{std::numeric_limits<int>::max()};
}  // namespace

int64_t blas_int_limit() { return g_blas_limit.load(std::memory_order_relaxed); }
void set_blas_int_limit(int64_t n) {
  SX_CHECK(n >= 1 && n <= std::numeric_limits<int>::max(), ValueError, "[set_blas_int_limit] limit ", n,
           " must be in [1, 2**31 - 1]");
  g_blas_limit.store(n);
}

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
void gemm_call(bool ta, bool tb, int M, int N, int K, const T* A, int lda, const T* B, int ldb, T beta, T* C, int ldc) {
  if constexpr (std::is_same_v<T, float>)
    scipy_cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, 1.0f, A,
                      lda, B, ldb, beta, C, ldc);
  else
    scipy_cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, 1.0, A,
                      lda, B, ldb, beta, C, ldc);
}

// C = op(A) @ op(B), row-major. BLAS takes 32-bit ints: sizes past 2**31 - 1 (or the lower block limit
// that tests set) are split into blocks, K blocks accumulating with beta = 1; a leading dimension past
// 2**31 - 1 cannot be expressed and raises.
template <typename T>
void gemm_blocks(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb,
                 T beta, T* C, int64_t ldc) {
  const int64_t lim = blas_int_limit(), imax = std::numeric_limits<int>::max();
  SX_CHECK(lda <= imax && ldb <= imax && ldc <= imax, RuntimeError, "[matmul] a row of ", std::max({lda, ldb, ldc}),
           " elements exceeds the 2**31 - 1 that BLAS's 32-bit leading dimensions can hold (shapes (", M, ", ", K,
           ") and (", K, ", ", N, "))");
  for (int64_t i0 = 0; i0 < M; i0 += lim)
    for (int64_t j0 = 0; j0 < N; j0 += lim)
      for (int64_t k0 = 0; k0 < K; k0 += lim) {
        int64_t m = std::min(lim, M - i0), n = std::min(lim, N - j0), k = std::min(lim, K - k0);
        const T* a = ta ? A + k0 * lda + i0 : A + i0 * lda + k0;
        const T* b = tb ? B + j0 * ldb + k0 : B + k0 * ldb + j0;
        gemm_call<T>(ta, tb, int(m), int(n), int(k), a, int(lda), b, int(ldb), k0 == 0 ? beta : T(1), C + i0 * ldc + j0,
                     int(ldc));
      }
}

template <typename T>
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb,
          T* C, int64_t ldc) {
  gemm_blocks<T>(ta, tb, M, N, K, A, lda, B, ldb, T(0), C, ldc);
}
}  // namespace

void blas_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
               int64_t ldb, float beta, float* C, int64_t ldc) {
  gemm_blocks<float>(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc);
}
void blas_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const double* A, int64_t lda, const double* B,
               int64_t ldb, double beta, double* C, int64_t ldc) {
  gemm_blocks<double>(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc);
}

namespace {
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
    // A view whose row stride BLAS cannot hold in an int is copied to a packed layout first.
    const int64_t imax = std::numeric_limits<int>::max();
    if (!blas_layout(sa, M, K, ta, lda) || lda > imax) { ac = clone_nograd(a); sa = {K, 1}; blas_layout(sa, M, K, ta, lda); }
    if (!blas_layout(sb, K, N, tb, ldb) || ldb > imax) { bc = clone_nograd(b); sb = {N, 1}; blas_layout(sb, K, N, tb, ldb); }
    if (K == 0) { cpu::fill(out, Scalar(0.0)); return; }
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

Tensor mm_forward(const Tensor& a, const Tensor& b) {
  // (batch..., m, k) @ (k, n) with a contiguous: one GEMM over batch*m rows.
  if (a->dim() > 2 && b->dim() == 2 && a->is_contiguous()) {
    int64_t K = a->shape.back();
    Tensor a2 = make_view(a, {a->numel() / std::max<int64_t>(K, 1), K}, {K, 1}, a->offset);
    Shape os(a->shape.begin(), a->shape.end() - 1);
    os.push_back(b->shape[1]);
    Tensor out = empty(os, a->dtype);
    Tensor o2 = make_view(out, {a2->shape[0], b->shape[1]}, {b->shape[1], 1}, 0);
    batched_mm(a2, b, o2);
    return out;
  }
  int64_t na = a->dim(), nb = b->dim();
  Shape ba(a->shape.begin(), a->shape.end() - 2), bb(b->shape.begin(), b->shape.end() - 2);
  Shape batch = broadcast_shapes(ba, bb, "matmul");
  Shape sa = batch, sb = batch, so = batch;
  sa.insert(sa.end(), {a->shape[na - 2], a->shape[na - 1]});
  sb.insert(sb.end(), {b->shape[nb - 2], b->shape[nb - 1]});
  so.insert(so.end(), {a->shape[na - 2], b->shape[nb - 1]});
  Tensor out = empty(so, a->dtype);
  batched_mm(expand_view(a, sa), expand_view(b, sb), out);
  return out;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  check_same_device("matmul", a, b);
  SX_CHECK(a->dim() >= 1 && b->dim() >= 1, ValueError, "[matmul] both arguments need at least 1 dimension, got ",
           shape_str(a->shape), " and ", shape_str(b->shape));
  SX_CHECK(a->dtype == b->dtype, TypeError, "[matmul] expected both operands to have the same dtype, got ",
           dtype_name(a->dtype), " and ", dtype_name(b->dtype));
  SX_CHECK(a->dtype != DType::Bool, TypeError, "[matmul] bool tensors are not supported");
  Tensor a2 = a->dim() == 1 ? unsqueeze(a, 0) : a;
  Tensor b2 = b->dim() == 1 ? unsqueeze(b, 1) : b;
  SX_CHECK(a2->shape.back() == b2->shape[b2->dim() - 2], ValueError, "[matmul] shapes ", shape_str(a->shape), " and ",
           shape_str(b->shape), " cannot be multiplied");
  Tensor out;
  DType dt = a->dtype;
  if (dt == DType::Float16 || dt == DType::BFloat16) {
    out = cast_nograd(mm_forward(cast_nograd(a2, DType::Float32), cast_nograd(b2, DType::Float32)), dt);
  } else {
    out = mm_forward(a2, b2);
  }
  if (a->dim() == 1) out = squeeze(detach(out), IntList{out->dim() - 2});
  if (b->dim() == 1) out = squeeze(detach(out), IntList{out->dim() - 1});
  if (!is_floating(dt) || !needs_grad({&a, &b})) return out;
  Saved sa(a), sb(b);
  return record("MatmulBackward", {a, b}, out, [sa, sb](const Tensor& g) {
    const Tensor& x = sa.get();
    const Tensor& y = sb.get();
    Tensor x2 = x->dim() == 1 ? unsqueeze(x, 0) : x, y2 = y->dim() == 1 ? unsqueeze(y, 1) : y;
    Tensor g2 = g;
    if (x->dim() == 1) g2 = unsqueeze(g2, g2->dim() - (y->dim() == 1 ? 0 : 1));
    if (y->dim() == 1) g2 = unsqueeze(g2, g2->dim());
    Tensor gx, gy;
    if (x->requires_grad) {
      gx = matmul(g2, transpose(y2, -1, -2));
      gx = sum_to(gx, x2->shape);
      if (x->dim() == 1) gx = reshape(gx, x->shape);
    }
    if (y->requires_grad && y2->dim() == 2 && x2->dim() > 2) {
      // (batch..., m, k) @ (k, n): the weight gradient is one GEMM over all rows, not a batch + sum.
      int64_t k = x2->shape.back(), n = y2->shape.back();
      gy = matmul(transpose(reshape(x2, {-1, k}), 0, 1), reshape(g2, {-1, n}));
      if (y->dim() == 1) gy = reshape(gy, y->shape);
    } else if (y->requires_grad) {
      gy = matmul(transpose(x2, -1, -2), g2);
      gy = sum_to(gy, y2->shape);
      if (y->dim() == 1) gy = reshape(gy, y->shape);
    }
    return TensorList{gx, gy};
  });
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  SX_CHECK(a->dim() == 3 && b->dim() == 3 && a->shape[0] == b->shape[0], ValueError,
           "[bmm] expected 3-D tensors with the same batch size, got ", shape_str(a->shape), " and ",
           shape_str(b->shape));
  return matmul(a, b);
}

Tensor outer(const Tensor& a, const Tensor& b) {
  SX_CHECK(a->dim() == 1 && b->dim() == 1, ValueError, "[outer] expected 1-D tensors, got ", shape_str(a->shape),
           " and ", shape_str(b->shape));
  return mul(unsqueeze(a, 1), unsqueeze(b, 0));
}

}  // namespace sx
