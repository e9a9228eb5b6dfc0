// linear (one GEMM with the bias in C), embedding (row gather, sparse-accumulating backward) and
// dropout (counter-based mask regenerated in backward instead of saved).
#include <cblas.h>

#include "core/parallel.h"
#include "ops/blas.h"
#include "ops/nn_util.h"

namespace sx::nn {

namespace {
// C (M x N) = alpha * op(A) @ op(B) + beta * C, row-major.
template <typename T>
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb, T beta,
          T* C, int64_t ldc) {
  blas_gemm(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc);  // splits sizes past BLAS's 32-bit ints
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

// Differentiable formulas for create_graph: dx = g W, dW = g^T x, db = sum of g over leading dims.
TensorList linear_public(const Tensor& g, const Tensor& x, const Tensor& w, bool need_x, bool need_w, bool need_b,
                         const Shape& xshape, const Shape& bshape) {
  Tensor g2 = reshape(g, {-1, w->shape[0]}), x2 = reshape(x, {-1, w->shape[1]});
  return {need_x ? reshape(matmul(g2, w), xshape) : nullptr, need_w ? matmul(transpose(g2, 0, 1), x2) : nullptr,
          need_b ? reshape(sum(g2, IntList{0}), bshape) : nullptr};
}
}  // namespace

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b) {
  const char* op = "linear";
  check_floating(x, op, "input");
  check_floating(w, op, "weight");
  SX_CHECK(w->dim() == 2, ValueError, "[linear] weight must be 2-D (out_features, in_features), got ",
           shape_str(w->shape));
  SX_CHECK(x->dim() >= 1 && x->shape.back() == w->shape[1], ValueError, "[linear] input ", shape_str(x->shape),
           " and weight ", shape_str(w->shape), " cannot be multiplied: the last dim of input must be ", w->shape[1]);
  SX_CHECK(x->dtype == w->dtype, TypeError, "[linear] input and weight must have the same dtype, got ",
           dtype_name(x->dtype), " and ", dtype_name(w->dtype));
  int64_t N = w->shape[0], K = w->shape[1];
  if (b) {
    check_floating(b, op, "bias");
    SX_CHECK(b->dim() <= 1 && b->numel() == N, ValueError, "[linear] bias of shape ", shape_str(b->shape),
             " does not match out_features ", N);
  }
  DType dt = x->dtype;
  if (is_half(dt)) {
    auto f = [](const Tensor& t) { return t ? to_dtype(t, DType::Float32) : t; };
    return to_dtype(linear(f(x), f(w), f(b)), dt);
  }
  int64_t M = x->numel() / std::max<int64_t>(K, 1);
  if (K == 0) M = prod(x->shape, 0, x->shape.size() - 1);
  Shape os(x->shape.begin(), x->shape.end() - 1);
  os.push_back(N);
  Tensor xc = contig(x), wc = contig(w), bc = b ? contig(b, dt) : b;
  Tensor out = empty(os, dt);
  SX_DISPATCH_F32_F64(dt, op, [&] {
    using T = scalar_t;
    T* o = out->data<T>();
    if (bc) {
      const T* bp = bc->data<T>();
      parallel_for(M, std::max<int64_t>(1, 16384 / std::max<int64_t>(N, 1)), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) std::copy(bp, bp + N, o + r * N);
      });
    }
    if (M && N) {
      if (K) gemm<T>(false, true, M, N, K, xc->data<T>(), K, wc->data<T>(), K, bc ? T(1) : T(0), o, N);
      else if (!bc) std::fill(o, o + M * N, T(0));
    }
  });
  if (!needs_grad({&x, &w, &b})) return out;
  Saved sx_(xc), sw(wc);
  bool nx = x->requires_grad, nw = w->requires_grad, nb = b && b->requires_grad;
  Shape xshape = x->shape, bshape = b ? b->shape : Shape{};
  return record("LinearBackward", {x, w, b}, out, [sx_, sw, nx, nw, nb, xshape, bshape, M, N, K](const Tensor& g) {
    const Tensor& xs = sx_.get();
    const Tensor& ws = sw.get();
    if (grad_mode::enabled()) return linear_public(g, xs, ws, nx, nw, nb, xshape, bshape);
    DType t = xs->dtype;
    Tensor gc = contig(g, t);
    Tensor gx = nx ? empty(xshape, t) : Tensor(), gw = nw ? empty({N, K}, t) : Tensor(),
           gb = nb ? empty(bshape, t) : Tensor();
    SX_DISPATCH_F32_F64(t, "linear", [&] {
      using T = scalar_t;
      const T* gp = gc->data<T>();
      if (gx) {
        if (M && K && N) gemm<T>(false, false, M, K, N, gp, N, ws->data<T>(), K, T(0), gx->data<T>(), K);
        else cpu::fill(gx, Scalar(0.0));
      }
      if (gw) {
        if (M && K && N) gemm<T>(true, false, N, K, M, gp, N, xs->data<T>(), K, T(0), gw->data<T>(), K);
        else cpu::fill(gw, Scalar(0.0));
      }
      if (gb) {
        if (M && N) col_sums<T>(gp, M, N, gb->data<T>());
        else cpu::fill(gb, Scalar(0.0));
      }
    });
    return TensorList{gx, gw, gb};
  });
}

// ---- embedding
Tensor embedding(const Tensor& ids, const Tensor& w, std::optional<int64_t> padding_idx, bool scale_grad_by_freq) {
  const char* op = "embedding";
  SX_CHECK(ids && (ids->dtype == DType::Int64 || ids->dtype == DType::Int32 || ids->dtype == DType::UInt8),
           TypeError, "[embedding] indices must be an integer tensor, got ", ids ? describe(ids) : "None");
  check_floating(w, op, "weight");
  SX_CHECK(w->dim() == 2, ValueError, "[embedding] weight must be 2-D (num_embeddings, embedding_dim), got ",
           shape_str(w->shape));
  int64_t V = w->shape[0], D = w->shape[1];
  int64_t pad = -1;
  if (padding_idx) {
    pad = *padding_idx < 0 ? *padding_idx + V : *padding_idx;
    SX_CHECK(pad >= 0 && pad < V, ValueError, "[embedding] padding_idx ", *padding_idx,
             " must be within the table of ", V, " rows");
  }
  Tensor idc = contig(ids, DType::Int64);
  const int64_t* ip = idc->data<int64_t>();
  int64_t n = idc->numel();
  for (int64_t i = 0; i < n; ++i)
    SX_CHECK(ip[i] >= 0 && ip[i] < V, IndexError, "[embedding] index ", ip[i], " is out of range for a table of ", V,
             " rows (valid ids are 0..", V - 1, ")");
  Shape os = ids->shape;
  os.push_back(D);
  Tensor wc = contig(w);
  Tensor out = empty(os, w->dtype);
  int64_t row_bytes = D * int64_t(itemsize(w->dtype));
  if (n && D) cpu::embedding_fwd(ip, n, wc->raw(), row_bytes, out->raw());
  if (!needs_grad({&w})) return out;
  DType wdt = w->dtype;
  return record("EmbeddingBackward", {ids, w}, out, [idc, n, V, D, pad, scale_grad_by_freq, wdt](const Tensor& g) {
    if (grad_mode::enabled()) {  // differentiable in g: a scatter-add of its rows
      if (pad >= 0 || scale_grad_by_freq) no_double_backward("embedding");
      Tensor gw = index_add(zeros({V, D}, g->dtype), 0, reshape(idc, {n}), reshape(g, {n, D}), 1.0);
      return TensorList{nullptr, to_dtype(gw, wdt)};
    }
    DType t = is_half(wdt) ? DType::Float32 : wdt;
    Tensor gc = contig(g, t);
    Tensor gw = empty({V, D}, t);
    SX_DISPATCH_F32_F64(t, "embedding", [&] {
      using T = scalar_t;
      cpu::embedding_bwd<T>(idc->data<int64_t>(), n, gc->data<T>(), V, D, pad, scale_grad_by_freq, gw->data<T>());
    });
    return TensorList{nullptr, cast_nograd(gw, wdt)};
  });
}

// ---- dropout
namespace {
// y = x * keep / (1 - p) with the Philox stream (seed, base); x must be contiguous float32/float64.
Tensor apply_mask(const Tensor& x, double p, uint64_t seed, uint64_t base) {
  Tensor y = empty(x->shape, x->dtype);
  SX_DISPATCH_F32_F64(x->dtype, "dropout", [&] {
    cpu::dropout_apply<scalar_t>(x->data<scalar_t>(), y->data<scalar_t>(), x->numel(), p, seed, base);
  });
  return y;
}
}  // namespace

Tensor dropout(const Tensor& x, double p, bool training, Generator* gen) {
  SX_CHECK(p >= 0 && p <= 1, ValueError, "[dropout] probability has to be between 0 and 1, but got ", p);
  check_floating(x, "dropout", "input");
  if (!training || p == 0) return x;
  if (is_half(x->dtype)) return to_dtype(dropout(to_dtype(x, DType::Float32), p, training, gen), x->dtype);
  Generator* g = gen_or_default(gen);
  int64_t n = x->numel();
  uint64_t seed = g->seed, base = g->reserve(uint64_t((n + 3) / 4));
  Tensor out = apply_mask(contig(x), p, seed, base);
  Shape shape = x->shape;
  DType dt = x->dtype;
  return record("DropoutBackward", {x}, out, [p, seed, base, shape, dt](const Tensor& g) {
    if (grad_mode::enabled()) return TensorList{mul(g, apply_mask(ones(shape, dt), p, seed, base))};
    return TensorList{apply_mask(contig(g, dt), p, seed, base)};
  });
}

}  // namespace sx::nn
