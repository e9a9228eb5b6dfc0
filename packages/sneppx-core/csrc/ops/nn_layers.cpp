// linear (one GEMM with the bias in C), embedding (row gather, sparse-accumulating backward) and
// dropout (counter-based mask regenerated in backward instead of saved).
#include "ops/nn_util.h"

namespace sx::nn {

namespace {
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
  int64_t M = x->numel() / std::max<int64_t>(K, 1);
  if (K == 0) M = prod(x->shape, 0, x->shape.size() - 1);
  Shape os(x->shape.begin(), x->shape.end() - 1);
  os.push_back(N);
  Tensor xc = contig(x), wc = contig(w), bc = b ? contig(b, dt) : b;
  Tensor out = empty(os, dt, x->device());
  kern::linear_fwd(x->device())(xc, wc, bc, out, M, N, K);
  if (!needs_grad({&x, &w, &b})) return out;
  Saved sx_(xc), sw(wc);
  bool nx = x->requires_grad, nw = w->requires_grad, nb = b && b->requires_grad;
  Shape xshape = x->shape, bshape = b ? b->shape : Shape{};
  return record("LinearBackward", {x, w, b}, out, [sx_, sw, nx, nw, nb, xshape, bshape, M, N, K](const Tensor& g) {
    const Tensor& xs = sx_.get();
    const Tensor& ws = sw.get();
    DType t = xs->dtype;
    // float16/bfloat16 gradients are matrix products with float32 accumulation (matmul's kernels).
    if (grad_mode::enabled() || is_half(t)) return linear_public(g, xs, ws, nx, nw, nb, xshape, bshape);
    Tensor gc = contig(g, t);
    Device dev = xs->device();
    Tensor gx = nx ? empty(xshape, t, dev) : Tensor(), gw = nw ? empty({N, K}, t, dev) : Tensor(),
           gb = nb ? empty(bshape, t, dev) : Tensor();
    kern::linear_bwd(dev)(gc, xs, ws, gx, gw, gb, M, N, K);
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
  int64_t n = idc->numel();
  if (n && !is_meta(idc)) {  // every id must index a row
    Tensor lo = amin(idc, std::nullopt, false), hi = amax(idc, std::nullopt, false);
    Tensor bad = binary(BinaryOp::Lt, lo, scalar_tensor(Scalar(int64_t(0)), DType::Int64, lo->device()));
    int64_t id = item_bool(bad) ? item_int(lo) : item_int(hi);
    SX_CHECK(id >= 0 && id < V, IndexError, "[embedding] index ", id, " is out of range for a table of ", V,
             " rows (valid ids are 0..", V - 1, ")");
  }
  Shape os = ids->shape;
  os.push_back(D);
  Tensor wc = contig(w);
  Tensor out = empty(os, w->dtype, w->device());
  if (n && D) kern::embedding_fwd(w->device())(idc, wc, out);
  if (!needs_grad({&w})) return out;
  DType wdt = w->dtype;
  return record("EmbeddingBackward", {ids, w}, out, [idc, n, V, D, pad, scale_grad_by_freq, wdt](const Tensor& g) {
    if (grad_mode::enabled()) {  // differentiable in g: a scatter-add of its rows
      if (pad >= 0 || scale_grad_by_freq) no_double_backward("embedding");
      Tensor gw = index_add(zeros({V, D}, g->dtype, g->device()), 0, reshape(idc, {n}), reshape(g, {n, D}), 1.0);
      return TensorList{nullptr, to_dtype(gw, wdt)};
    }
    DType t = is_half(wdt) ? DType::Float32 : wdt;
    Tensor gc = contig(g, t);
    Tensor gw = empty({V, D}, t, gc->device());
    kern::embedding_bwd(gc->device())(idc, gc, gw, pad, scale_grad_by_freq);
    return TensorList{nullptr, cast_nograd(gw, wdt)};
  });
}

// ---- dropout
namespace {
// y = x * keep / (1 - p) with the Philox stream (seed, base); x must be contiguous float32/float64.
Tensor apply_mask(const Tensor& x, double p, uint64_t seed, uint64_t base) {
  Tensor y = empty(x->shape, x->dtype, x->device());
  kern::dropout(x->device())(x, y, p, seed, base);
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
    if (grad_mode::enabled()) return TensorList{mul(g, apply_mask(ones(shape, dt, g->device()), p, seed, base))};
    return TensorList{apply_mask(contig(g, dt), p, seed, base)};
  });
}

}  // namespace sx::nn
