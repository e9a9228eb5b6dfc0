// scaled_dot_product_attention: argument checks, broadcasting of batch dims (and grouped-query
// heads), mask conversion, and the autograd record around the tiled kernels.
#include <memory>

#include "ops/nn_util.h"

namespace sx::kern {
SX_DEFINE_KERNEL(attn_fwd);
SX_DEFINE_KERNEL(attn_bwd);
}  // namespace sx::kern

namespace sx::nn {

namespace {
const char* kOp = "scaled_dot_product_attention";

Shape lead(const Tensor& t) { return Shape(t->shape.begin(), t->shape.end() - 2); }

// True when `from` broadcasts to exactly `to`.
bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  size_t off = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[off + i]) return false;
  return true;
}

// Element offset of every unit (flat index over `batch`) into t, whose leading dims are right-aligned to
// batch and broadcast where 1. `group` > 1 divides the index of the last batch dim (grouped-query heads).
std::vector<int64_t> unit_offsets(const Shape& batch, const Shape& tshape, const Shape& tstrides, int64_t base,
                                  int64_t group) {
  int64_t units = prod(batch, 0, batch.size()), nb = int64_t(batch.size());
  int64_t shift = nb - int64_t(tshape.size());
  std::vector<int64_t> off(size_t(units), base);
  for (int64_t u = 0; u < units; ++u) {
    int64_t rem = u;
    for (int64_t d = nb - 1; d >= 0; --d) {
      int64_t idx = rem % batch[d];
      rem /= batch[d];
      int64_t td = d - shift;
      if (td < 0 || tshape[td] == 1) continue;
      if (d == nb - 1 && group > 1) idx /= group;
      off[size_t(u)] += idx * tstrides[td];
    }
  }
  return off;
}

// q, k or v with a unit-stride last dim (a copy only when needed).
Tensor rows_ok(const Tensor& t, DType dt) {
  Tensor c = cast_nograd(t, dt);
  return c->strides.back() == 1 || c->shape.back() <= 1 ? c : clone_nograd(c);
}

struct Prepared {
  Tensor q, k, v, mask;  // compute-dtype operands; mask additive and contiguous (mlead..., Tq, Tk)
  Shape batch, mlead;
  int64_t group = 1;
  AttnArgs args;
  std::shared_ptr<std::vector<int64_t>> offs;  // q, k, v, mask offsets, units each
};

Prepared prepare(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, bool causal,
                 std::optional<double> scale, bool gqa, DType dt) {
  Prepared p;
  p.q = rows_ok(q, dt);
  p.k = rows_ok(k, dt);
  p.v = rows_ok(v, dt);
  Shape lq = lead(q), lk = lead(k), lv = lead(v);
  if (gqa) {
    SX_CHECK(q->dim() >= 3 && k->dim() >= 3 && v->dim() >= 3, ValueError, "[", kOp,
             "] enable_gqa needs (..., heads, T, D) inputs");
    int64_t hq = lq.back(), hk = lk.back(), hv = lv.back();
    SX_CHECK(hk == hv && hk > 0 && hq % hk == 0, ValueError, "[", kOp, "] with enable_gqa the query heads (", hq,
             ") must be a multiple of the key/value heads (", hk, " and ", hv, ")");
    p.group = hq / hk;
    lk.back() = lv.back() = hq;
  }
  p.batch = broadcast_shapes(broadcast_shapes(lq, lk, kOp), lv, kOp);
  auto& a = p.args;
  a.units = prod(p.batch, 0, p.batch.size());
  a.Tq = q->shape[q->dim() - 2];
  a.Tk = k->shape[k->dim() - 2];
  a.D = q->shape.back();
  a.Dv = v->shape.back();
  a.q_rs = p.q->strides[q->dim() - 2];
  a.k_rs = p.k->strides[k->dim() - 2];
  a.v_rs = p.v->strides[v->dim() - 2];
  a.scale = scale ? *scale : 1.0 / std::sqrt(double(std::max<int64_t>(a.D, 1)));
  a.causal = causal;
  auto strides_lead = [](const Tensor& t) { return Shape(t->strides.begin(), t->strides.end() - 2); };
  auto oq = unit_offsets(p.batch, lead(q), strides_lead(p.q), p.q->offset, 1);
  auto ok = unit_offsets(p.batch, lead(k), strides_lead(p.k), p.k->offset, p.group);
  auto ov = unit_offsets(p.batch, lead(v), strides_lead(p.v), p.v->offset, p.group);
  std::vector<int64_t> om;
  if (mask) {
    SX_CHECK(mask->dtype == DType::Bool || is_floating(mask->dtype), TypeError, "[", kOp,
             "] attn_mask must be bool (True = attend) or floating (added to the scores), got ", describe(mask));
    p.mlead = mask->dim() > 2 ? lead(mask) : Shape{};
    Shape scores = p.batch, full = p.mlead;
    scores.insert(scores.end(), {a.Tq, a.Tk});
    full.insert(full.end(), {a.Tq, a.Tk});
    SX_CHECK(broadcasts_to(mask->shape, scores) && broadcasts_to(full, scores), ValueError, "[", kOp,
             "] attn_mask of shape ", shape_str(mask->shape), " does not broadcast to the scores' shape ",
             shape_str(scores));
    Tensor m = mask->dtype == DType::Bool
                   ? where(mask, scalar_tensor(Scalar(0.0), dt, mask->device()),
                           scalar_tensor(Scalar(-INFINITY), dt, mask->device()))
                   : cast_nograd(detach(mask), dt);
    p.mask = contig(expand_view(m, full));
    om = unit_offsets(p.batch, p.mlead, contiguous_strides(p.mlead), 0, 1);
    for (auto& o : om) o *= a.Tq * a.Tk;
  }
  int64_t U = a.units;
  p.offs = std::make_shared<std::vector<int64_t>>();
  for (auto* src : {&oq, &ok, &ov, &om}) p.offs->insert(p.offs->end(), src->begin(), src->end());
  if (!mask) p.offs->resize(size_t(4 * U), 0);
  a.q_off = p.offs->data();
  a.k_off = a.q_off + U;
  a.v_off = a.k_off + U;
  a.m_off = mask ? a.v_off + U : nullptr;
  return p;
}

// Gradient of a per-unit buffer (batch..., T, D) back to the shape of an input.
Tensor reduce_to(const Tensor& g, const Tensor& like, int64_t group) {
  Tensor r = g;
  if (group > 1) {  // (..., Hq, T, D) -> (..., Hk, group, T, D) summed over group
    Shape s = r->shape;
    int64_t h = int64_t(s.size()) - 3;
    s[h] /= group;
    s.insert(s.begin() + h + 1, group);
    r = sum(reshape(r, IntList(s.begin(), s.end())), IntList{h + 1});
  }
  return grad_for(r, like);
}
}  // namespace

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                                    double dropout_p, bool is_causal, std::optional<double> scale, bool enable_gqa,
                                    Generator* gen) {
  check_floating(q, kOp, "query");
  check_floating(k, kOp, "key");
  check_floating(v, kOp, "value");
  SX_CHECK(q->dtype == k->dtype && q->dtype == v->dtype, TypeError, "[", kOp,
           "] query, key and value must share a dtype, got ", dtype_name(q->dtype), ", ", dtype_name(k->dtype), " and ",
           dtype_name(v->dtype));
  SX_CHECK(q->dim() >= 2 && k->dim() >= 2 && v->dim() >= 2, ValueError, "[", kOp,
           "] expected (..., T, D) inputs, got ", shape_str(q->shape), ", ", shape_str(k->shape), ", ",
           shape_str(v->shape));
  SX_CHECK(q->shape.back() == k->shape.back(), ValueError, "[", kOp, "] query ", shape_str(q->shape), " and key ",
           shape_str(k->shape), " must have the same last dim");
  SX_CHECK(k->shape[k->dim() - 2] == v->shape[v->dim() - 2], ValueError, "[", kOp, "] key ", shape_str(k->shape),
           " and value ", shape_str(v->shape), " must have the same sequence length");
  SX_CHECK(dropout_p >= 0 && dropout_p < 1, ValueError, "[", kOp, "] dropout_p must be in [0, 1), got ", dropout_p);
  SX_CHECK(!(mask && is_causal), ValueError, "[", kOp, "] give either attn_mask or is_causal=True, not both");
  DType dt = q->dtype;
  if (is_half(dt)) {
    auto f = [](const Tensor& t) { return t && is_floating(t->dtype) ? to_dtype(t, DType::Float32) : t; };
    return to_dtype(scaled_dot_product_attention(f(q), f(k), f(v), f(mask), dropout_p, is_causal, scale, enable_gqa,
                                                 gen), dt);
  }
  Prepared p = prepare(q, k, v, mask, is_causal, scale, enable_gqa, dt);
  AttnArgs& a = p.args;
  if (dropout_p > 0) {
    Generator* g = gen_or_default(gen);
    a.dropout_p = dropout_p;
    a.seed = g->seed;
    a.base = g->reserve(attn_dropout_counters(a));
  }
  Shape os = p.batch;
  os.insert(os.end(), {a.Tq, a.Dv});
  Device dev = q->device();
  Tensor out = empty(os, dt, dev), lse = empty({a.units, a.Tq}, dt, dev);
  if (a.units && a.Tq) kern::attn_fwd(dev)(a, p.q, p.k, p.v, p.mask, out, lse);
  bool mask_grad = mask && is_floating(mask->dtype) && mask->requires_grad;
  if (!needs_grad({&q, &k, &v}) && !(mask_grad && grad_mode::enabled())) return out;
  Saved sq(p.q), sk(p.k), sv(p.v), so(alias_detached(out));
  Tensor pq = alias_detached(q), pk = alias_detached(k), pv = alias_detached(v);
  Tensor pm = mask ? alias_detached(mask) : mask;
  for (auto* t : {&pq, &pk, &pv, &pm})
    if (*t) (*t)->storage = nullptr;  // shapes and dtypes only
  return record("ScaledDotProductAttentionBackward", {q, k, v, mask_grad ? mask : Tensor()}, out,
                [p, sq, sk, sv, so, lse, pq, pk, pv, pm, mask_grad, dt](const Tensor& g) {
    no_double_backward(kOp);
    const AttnArgs& a = p.args;
    Tensor gq = contig(g, dt);
    auto full = [&](int64_t T, int64_t D) {
      Shape s = p.batch;
      s.insert(s.end(), {T, D});
      return empty(s, dt, g->device());
    };
    Tensor dq = full(a.Tq, a.D), dk = full(a.Tk, a.D), dv = full(a.Tk, a.Dv);
    Tensor dm = mask_grad ? zeros({a.units, a.Tq, a.Tk}, dt, g->device()) : Tensor();
    const Tensor &qs = sq.get(), &ks = sk.get(), &vs = sv.get(), &os = so.get();
    if (a.units && a.Tq) {
      kern::attn_bwd(qs->device())(a, qs, ks, vs, p.mask, os, lse, gq, dq, dk, dv, dm);
    } else {
      for (Tensor* t : {&dq, &dk, &dv}) kern::fill(qs->device())(*t, Scalar(0.0));
    }
    Tensor gm;
    if (dm) {
      Shape s = p.batch;
      s.insert(s.end(), {a.Tq, a.Tk});
      gm = grad_for(reshape(dm, IntList(s.begin(), s.end())), pm);
    }
    return TensorList{reduce_to(dq, pq, 1), reduce_to(dk, pk, p.group), reduce_to(dv, pv, p.group), gm};
  });
}

}  // namespace sx::nn
