// Losses: fused cross entropy (class indices or probabilities, weights, ignore_index, label
// smoothing), nll_loss, and the pointwise losses (mse, l1, smooth_l1, huber, bce, bce_with_logits, kl_div).
#include "cpu/reduce_rows.h"
#include "ops/nn_util.h"

namespace sx::kern {
SX_DEFINE_KERNEL(ce_fwd);
SX_DEFINE_KERNEL(ce_bwd);
SX_DEFINE_KERNEL(nll_fwd);
SX_DEFINE_KERNEL(nll_bwd);
}  // namespace sx::kern

namespace sx::nn {

namespace {
// Logits (or log-probabilities) as rows of C classes: (C,) -> 1 row, (N, C, d...) -> N*prod(d) rows.
struct ClassLayout {
  int64_t C = 0, rows = 0;
  Shape batch;        // the shape of a per-row result
  bool moved = false; // class dim was moved last (input had spatial dims)
};

ClassLayout class_layout(const char* op, const Tensor& x) {
  SX_CHECK(x->dim() >= 1, ValueError, "[", op, "] input must have at least 1 dimension, got a 0-d tensor");
  ClassLayout L;
  if (x->dim() == 1) {
    L.C = x->shape[0];
    L.rows = 1;
    return L;
  }
  L.C = x->shape[1];
  L.batch = x->shape;
  L.batch.erase(L.batch.begin() + 1);
  L.rows = prod(L.batch, 0, L.batch.size());
  L.moved = x->dim() > 2;
  return L;
}

// x with the class dim last, contiguous, as (rows, C).
Tensor rows_view(const Tensor& x, const ClassLayout& L, DType dt) {
  Tensor t = L.moved ? contig(permute(detach(x), [&] {
    IntList p{0};
    for (int64_t i = 2; i < x->dim(); ++i) p.push_back(i);
    p.push_back(1);
    return p;
  }()), dt) : contig(x, dt);
  return make_view(t, {L.rows, L.C}, {L.C, 1}, t->offset);
}

// (rows, C) gradient back to the layout of x.
Tensor from_rows(const Tensor& g, const ClassLayout& L, const Shape& xshape) {
  if (!L.moved) return reshape(g, xshape);
  Shape s = L.batch;
  s.push_back(L.C);
  Tensor t = reshape(g, s);
  IntList p{0, t->dim() - 1};
  for (int64_t i = 1; i < t->dim() - 1; ++i) p.push_back(i);
  return contig(permute(t, p));
}

Tensor check_class_targets(const char* op, const Tensor& target, const ClassLayout& L, int64_t ignore_index) {
  SX_CHECK(target->shape == L.batch, ValueError, "[", op, "] expected target of shape ", shape_str(L.batch),
           " for class indices, got ", shape_str(target->shape));
  Tensor t = contig(target, DType::Int64);
  if (t->numel() && t->device().type == DeviceType::CPU) {  // read in place: one pass, no temporaries
    const int64_t* p = t->data<int64_t>();
    for (int64_t i = 0; i < t->numel(); ++i)
      SX_CHECK((p[i] >= 0 && p[i] < L.C) || p[i] == ignore_index, IndexError, "[", op, "] target ", p[i],
               " is out of bounds for ", L.C, " classes");
  } else if (t->numel() && !is_meta(t)) {
    auto lit = [&](int64_t v) { return scalar_tensor(Scalar(v), DType::Int64, t->device()); };
    Tensor outside = binary(BinaryOp::Or, binary(BinaryOp::Lt, t, lit(0)), binary(BinaryOp::Ge, t, lit(L.C)));
    Tensor bad = binary(BinaryOp::And, outside, binary(BinaryOp::Ne, t, lit(ignore_index)));
    if (item_bool(any(bad, std::nullopt, false))) {
      Tensor first = argmax(to_dtype(reshape(bad, {t->numel()}), DType::UInt8), std::nullopt, false);
      int64_t v = item_int(index_select(reshape(t, {t->numel()}), 0, reshape(first, {1})));
      throw IndexError(msg("[", op, "] target ", v, " is out of bounds for ", L.C, " classes"));
    }
  }
  return t;
}

Tensor check_weight(const char* op, const Tensor& w, int64_t C, DType dt) {
  if (!w) return w;
  check_floating(w, op, "weight");
  SX_CHECK(w->dim() == 1 && w->shape[0] == C, ValueError, "[", op, "] weight must have shape (", C, ",), got ",
           shape_str(w->shape));
  return contig(w, dt);
}

// The sum of a float64 vector; a CPU one is read in place by the reductions' row sum (a few hundred rows
// cost less than the reduction op's dispatch).
double sum_f64(const Tensor& v) {
  if (v->device().type != DeviceType::CPU || !v->is_contiguous()) return item_double(sum(v));
  return cpu::sum_run_f64<cpu::Term::Value>(v->data<double>(), v->numel());
}

// Reduces per-row losses (float64 (rows,)) to the op result; sets denom to the "mean" denominator (else 1).
Tensor reduce_rows(const Tensor& loss, const Tensor& wrow, const ClassLayout& L, Reduction red, DType dt,
                   double& denom) {
  denom = 1;
  if (red == Reduction::None) return reshape(cast_nograd(loss, dt), L.batch);
  if (is_meta(loss)) return empty({}, dt, loss->device());  // the sums are values
  double s = sum_f64(loss), w = sum_f64(wrow);
  if (red == Reduction::Mean) denom = w;
  return scalar_tensor(Scalar(red == Reduction::Mean ? s / w : s), dt, loss->device());
}

// Per-row upstream gradient: g itself ("none"), or g / denom broadcast.
Tensor row_grads(const Tensor& g, int64_t rows, Reduction red, double denom, DType dt) {
  if (red == Reduction::None) return contig(reshape(g, {rows}), dt);
  if (is_meta(g)) return empty({rows}, dt, g->device());
  double v = item_double(g) / denom;
  return full({rows}, Scalar(v), dt, g->device());
}
}  // namespace

Tensor cross_entropy(const Tensor& x, const Tensor& target, const Tensor& weight, int64_t ignore_index, Reduction red,
                     double ls) {
  const char* op = "cross_entropy";
  check_floating(x, op, "input");
  SX_CHECK(target, ValueError, "[cross_entropy] target is missing");
  SX_CHECK(ls >= 0 && ls <= 1, ValueError, "[cross_entropy] label_smoothing must be between 0.0 and 1.0, got ", ls);
  SX_CHECK(red != Reduction::BatchMean, ValueError, "[cross_entropy] reduction 'batchmean' is only for kl_div");
  bool probs = is_floating(target->dtype);
  DType dt = x->dtype;
  if (is_half(dt)) {
    auto f = [](const Tensor& t) { return t && is_floating(t->dtype) ? to_dtype(t, DType::Float32) : t; };
    return to_dtype(cross_entropy(f(x), f(target), f(weight), ignore_index, red, ls), dt);
  }
  ClassLayout L = class_layout(op, x);
  Tensor tc;
  if (probs)
    SX_CHECK(target->shape == x->shape, ValueError, "[cross_entropy] probability targets must have the input's shape ",
             shape_str(x->shape), ", got ", shape_str(target->shape));
  else
    tc = check_class_targets(op, target, L, ignore_index);
  Tensor xr = rows_view(x, L, dt), pr = probs ? rows_view(target, L, dt) : Tensor();
  Tensor wc = check_weight(op, weight, L.C, dt);
  Device dev = x->device();
  Tensor lse = empty({L.rows, 2}, dt, dev);
  Tensor loss = zeros({L.rows}, DType::Float64, dev), wrow = zeros({L.rows}, DType::Float64, dev);
  CEArgs a{L.rows, L.C, nullptr, ignore_index, ls};
  if (L.rows && L.C) kern::ce_fwd(dev)(a, tc, xr, pr, wc, lse, loss, wrow);
  double denom;
  Tensor out = reduce_rows(loss, wrow, L, red, dt, denom);
  if (!needs_grad({&x, &target})) return out;
  bool need_x = x->requires_grad, need_p = probs && target->requires_grad;
  Saved sx_(xr), sp(pr);
  Shape xshape = x->shape;
  return record("CrossEntropyBackward", {x, target}, out,
                [sx_, sp, wc, lse, tc, a, L, red, denom, dt, need_x, need_p, xshape](const Tensor& g) {
    no_double_backward("cross_entropy");
    const Tensor& xs = sx_.get();
    const Tensor& ps = sp.get();
    Tensor grow = row_grads(g, L.rows, red, denom, dt);
    Device dev = xs->device();
    Tensor gx = empty({L.rows, L.C}, dt, dev), gp = need_p ? empty({L.rows, L.C}, dt, dev) : Tensor();
    if (L.rows && L.C) kern::ce_bwd(dev)(a, tc, xs, ps, wc, lse, grow, gx, gp);
    return TensorList{need_x ? from_rows(gx, L, xshape) : nullptr, gp ? from_rows(gp, L, xshape) : nullptr};
  });
}

Tensor nll_loss(const Tensor& x, const Tensor& target, const Tensor& weight, int64_t ignore_index, Reduction red) {
  const char* op = "nll_loss";
  check_floating(x, op, "input");
  SX_CHECK(target && !is_floating(target->dtype) && target->dtype != DType::Bool, TypeError,
           "[nll_loss] target must be an integer tensor of class indices");
  SX_CHECK(red != Reduction::BatchMean, ValueError, "[nll_loss] reduction 'batchmean' is only for kl_div");
  DType dt = x->dtype;
  if (is_half(dt))
    return to_dtype(nll_loss(to_dtype(x, DType::Float32), target, weight ? to_dtype(weight, DType::Float32) : weight,
                             ignore_index, red), dt);
  ClassLayout L = class_layout(op, x);
  Tensor tc = check_class_targets(op, target, L, ignore_index);
  Tensor xr = rows_view(x, L, dt), wc = check_weight(op, weight, L.C, dt);
  Device dev = x->device();
  Tensor loss = zeros({L.rows}, DType::Float64, dev), wrow = zeros({L.rows}, DType::Float64, dev);
  if (L.rows && L.C) kern::nll_fwd(dev)(tc, xr, wc, ignore_index, loss, wrow);
  double denom;
  Tensor out = reduce_rows(loss, wrow, L, red, dt, denom);
  if (!needs_grad({&x})) return out;
  Shape xshape = x->shape;
  return record("NllLossBackward", {x}, out, [tc, wc, L, red, denom, dt, ignore_index, xshape](const Tensor& g) {
    no_double_backward("nll_loss");
    Tensor grow = row_grads(g, L.rows, red, denom, dt);
    Tensor gx = zeros({L.rows, L.C}, dt, grow->device());
    if (L.rows && L.C) kern::nll_bwd(gx->device())(tc, wc, grow, ignore_index, gx);
    return TensorList{from_rows(gx, L, xshape)};
  });
}

// ---- pointwise losses
namespace {
const char* ploss_name(PLoss k) {
  switch (k) {
#define SX_NAME_ENTRY(E, NAME, BW) \
  case PLoss::E: return NAME;
    SX_POINTWISE_LOSSES(SX_NAME_ENTRY)
#undef SX_NAME_ENTRY
  }
  return "loss";
}
const char* ploss_node_name(PLoss k) {
  switch (k) {
#define SX_NAME_ENTRY(E, NAME, BW) \
  case PLoss::E: return BW;
    SX_POINTWISE_LOSSES(SX_NAME_ENTRY)
#undef SX_NAME_ENTRY
  }
  return "LossBackward";
}
Tensor shape_only(const Tensor& t) {  // keeps shape, dtype and requires_grad for grad_for
  if (!t) return t;
  Tensor p = alias_detached(t);
  p->requires_grad = t->requires_grad;
  p->storage = nullptr;
  return p;
}
}  // namespace

Tensor pointwise_loss(PLoss k, const Tensor& x, const Tensor& t, const Tensor& extra, const Tensor& weight,
                      Reduction red, double beta) {
  const char* op = ploss_name(k);
  check_floating(x, op, "input");
  check_floating(t, op, "target");
  if (extra) check_floating(extra, op, "pos_weight");
  SX_CHECK(red != Reduction::BatchMean || k >= PLoss::KlDiv, ValueError, "[", op,
           "] reduction 'batchmean' is only for kl_div");
  SX_CHECK(k != PLoss::SmoothL1 || beta >= 0, ValueError, "[smooth_l1_loss] beta must be >= 0, got ", beta);
  SX_CHECK(k != PLoss::Huber || beta > 0, ValueError, "[huber_loss] delta must be > 0, got ", beta);
  DType dt = promote_types(x->dtype, t->dtype);
  if (extra) dt = promote_types(dt, extra->dtype);
  if (is_half(dt)) {
    auto f = [](const Tensor& v) { return v ? to_dtype(v, DType::Float32) : v; };
    return to_dtype(pointwise_loss(k, f(x), f(t), f(extra), f(weight), red, beta), dt);
  }
  Shape shape = broadcast_shapes(x->shape, t->shape, op);
  if (extra)
    SX_CHECK(broadcast_shapes(shape, extra->shape, op) == shape, ValueError, "[", op, "] pos_weight of shape ",
             shape_str(extra->shape), " does not broadcast to ", shape_str(shape));
  auto prep = [&](const Tensor& v) { return v ? contig(expand_view(v, shape), dt) : v; };
  Tensor xc = prep(x), tc = prep(t), ec = prep(extra);
  int64_t n = xc->numel();
  if (k == PLoss::Bce && n && !is_meta(xc)) {
    Tensor outside = binary(BinaryOp::Or, binary(BinaryOp::Lt, xc, zeros({}, dt, xc->device())),
                            binary(BinaryOp::Gt, xc, ones({}, dt, xc->device())));
    outside = binary(BinaryOp::Or, outside, binary(BinaryOp::Ne, xc, xc));  // NaN
    if (item_bool(any(outside, std::nullopt, false))) {
      Tensor first = index_select(reshape(xc, {n}), 0, reshape(argmax(to_dtype(outside, DType::UInt8), std::nullopt, false), {1}));
      throw ValueError(msg("[binary_cross_entropy] all elements of input should be between 0 and 1, got ",
                           item_double(first)));
    }
  }
  Tensor elem = empty(shape, dt, x->device());
  kern::ploss_fwd(x->device())(k, xc, tc, ec, elem, beta);
  if (needs_grad({&x, &t, &extra})) {
    Saved sx_(xc), st(tc), se(ec);
    Tensor px = shape_only(x), pt = shape_only(t), pe = shape_only(extra);
    elem = record(ploss_node_name(k), {x, t, extra}, elem, [k, op, sx_, st, se, px, pt, pe, n, dt, beta](const Tensor& g) {
      no_double_backward(op);
      const Tensor& xs = sx_.get();
      const Tensor& ts = st.get();
      const Tensor& es = se.get();
      Tensor gc = contig(g, dt);
      Device dev = xs->device();
      Tensor gx = px->requires_grad ? empty(xs->shape, dt, dev) : Tensor();
      Tensor gt = pt->requires_grad ? empty(xs->shape, dt, dev) : Tensor();
      Tensor ge = pe && pe->requires_grad ? empty(xs->shape, dt, dev) : Tensor();
      kern::ploss_bwd(dev)(k, gc, xs, ts, es, gx, gt, ge, beta);
      return TensorList{grad_for(gx, px), grad_for(gt, pt), pe ? grad_for(ge, pe) : nullptr};
    });
  }
  if (weight) elem = mul(elem, weight);
  switch (red) {
    case Reduction::None: return elem;
    case Reduction::Sum: return sum(elem);
    case Reduction::Mean: return mean(elem);
    case Reduction::BatchMean:
      return mul(sum(elem), Scalar(1.0 / double(x->dim() ? std::max<int64_t>(x->shape[0], 1) : 1)));
  }
  return elem;
}

}  // namespace sx::nn
