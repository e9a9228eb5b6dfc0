// softmax / log_softmax, layer_norm / rms_norm, activations and gated units: validation, dtype
// handling and autograd around the fused kernels of cpu/nn_kernels.cpp.
#include <limits>

#include "ops/nn_util.h"

namespace sx::kern {
SX_DEFINE_KERNEL(softmax_fwd);
SX_DEFINE_KERNEL(softmax_bwd);
SX_DEFINE_KERNEL(norm_fwd);
SX_DEFINE_KERNEL(norm_bwd);
SX_DEFINE_KERNEL(gate_fwd);
SX_DEFINE_KERNEL(gate_bwd);
SX_DEFINE_KERNEL(ploss_fwd);
SX_DEFINE_KERNEL(ploss_bwd);
SX_DEFINE_KERNEL(linear_fwd);
SX_DEFINE_KERNEL(linear_bwd);
SX_DEFINE_KERNEL(embedding_fwd);
SX_DEFINE_KERNEL(embedding_bwd);
SX_DEFINE_KERNEL(dropout);
}  // namespace sx::kern

namespace sx::nn {

Reduction parse_reduction(const std::string& r, const char* op, bool allow_batchmean) {
  if (r == "mean") return Reduction::Mean;
  if (r == "sum") return Reduction::Sum;
  if (r == "none") return Reduction::None;
  if (r == "batchmean" && allow_batchmean) return Reduction::BatchMean;
  throw ValueError(msg("[", op, "] reduction must be 'mean', 'sum'", allow_batchmean ? ", 'batchmean'" : "",
                       " or 'none', got '", r, "'"));
}

// ---- softmax
namespace {
struct Axis {
  int64_t outer = 1, n = 1, inner = 1;
};
Axis split_axis(const Shape& s, int64_t d) {
  Axis a;
  if (s.empty()) return a;
  a.outer = prod(s, 0, size_t(d));
  a.n = s[d];
  a.inner = prod(s, size_t(d) + 1, s.size());
  return a;
}
}  // namespace

Tensor softmax(const Tensor& x, int64_t dim, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  check_floating(x, op, "input");
  if (is_half(x->dtype)) return to_dtype(softmax(to_dtype(x, DType::Float32), dim, log), x->dtype);
  int64_t d = wrap_dim(dim, std::max<int64_t>(x->dim(), 1), op);
  Axis ax = split_axis(x->shape, d);
  Tensor xc = contig(x);
  Tensor out = empty(x->shape, x->dtype, x->device());
  if (x->numel()) kern::softmax_fwd(x->device())(xc, out, ax.outer, ax.n, ax.inner, log);
  if (!needs_grad({&x})) return out;
  Saved sy(alias_detached(out));
  return record(log ? "LogSoftmaxBackward" : "SoftmaxBackward", {x}, out, [sy, d, log](const Tensor& g) {
    return TensorList{softmax_backward(g, sy.get(), d, log)};
  });
}

Tensor softmax_backward(const Tensor& g, const Tensor& y, int64_t dim, bool log) {
  const char* op = log ? "log_softmax_backward" : "softmax_backward";
  no_double_backward(log ? "log_softmax" : "softmax");
  SX_CHECK(g->shape == y->shape, ValueError, "[", op, "] gradient ", shape_str(g->shape), " and output ",
           shape_str(y->shape), " differ in shape");
  int64_t d = wrap_dim(dim, std::max<int64_t>(y->dim(), 1), op);
  Axis ax = split_axis(y->shape, d);
  Tensor gc = contig(g, y->dtype), yc = contig(y);
  Tensor gx = empty(y->shape, y->dtype, y->device());
  if (y->numel()) kern::softmax_bwd(y->device())(gc, yc, gx, ax.outer, ax.n, ax.inner, log);
  return gx;
}

// ---- layer norm / RMS norm
namespace {
void check_norm_args(const char* op, const Tensor& x, const IntList& ns, const Tensor& w, const Tensor& b) {
  check_floating(x, op, "input");
  int64_t k = int64_t(ns.size());
  bool ok = k <= x->dim();
  for (int64_t i = 0; ok && i < k; ++i) ok = x->shape[x->dim() - k + i] == ns[i];
  SX_CHECK(ok, ValueError, "[", op, "] normalized_shape ", shape_str(ns), " does not match the trailing dims of input ",
           shape_str(x->shape));
  for (const Tensor* t : {&w, &b}) {
    if (!*t) continue;
    check_floating(*t, op, t == &w ? "weight" : "bias");
    SX_CHECK((*t)->shape == Shape(ns), ValueError, "[", op, "] ", t == &w ? "weight" : "bias", " of shape ",
             shape_str((*t)->shape), " does not match normalized_shape ", shape_str(ns));
  }
}

Tensor norm_impl(const char* op, const Tensor& x, const IntList& ns, const Tensor& w, const Tensor& b, double eps,
                 bool rms) {
  check_norm_args(op, x, ns, w, b);
  DType dt = x->dtype;
  if (is_half(dt)) {
    auto f = [](const Tensor& t) { return t ? to_dtype(t, DType::Float32) : t; };
    return to_dtype(norm_impl(op, f(x), ns, f(w), f(b), eps, rms), dt);
  }
  if (rms && eps < 0) eps = dt == DType::Float64 ? std::numeric_limits<double>::epsilon()
                                                 : double(std::numeric_limits<float>::epsilon());
  int64_t N = prod(Shape(ns), 0, ns.size()), M = N ? x->numel() / N : 0;
  Tensor xc = contig(x), wc = w ? contig(w, dt) : w, bc = b ? contig(b, dt) : b;
  Device dev = x->device();
  Tensor out = empty(x->shape, dt, dev);
  Tensor mean = rms ? Tensor() : empty({M}, dt, dev), rstd = empty({M}, dt, dev);
  if (M && N) kern::norm_fwd(dev)(xc, wc, bc, out, mean, rstd, M, N, eps, rms);
  if (!needs_grad({&x, &w, &b})) return out;
  Saved sx_(x), sw(w);
  Tensor pb = b ? alias_detached(b) : Tensor();
  if (pb) {
    pb->requires_grad = b->requires_grad;
    pb->storage = nullptr;  // only its shape and dtype are needed
  }
  return record(rms ? "RmsNormBackward" : "LayerNormBackward", {x, w, b}, out,
                [sx_, sw, pb, mean, rstd, op, M, N, rms](const Tensor& g) {
    no_double_backward(op);
    const Tensor& xs = sx_.get();
    const Tensor& ws = sw.get();
    DType t = xs->dtype;
    Tensor gc = contig(g, t), xc2 = contig(xs), wc2 = ws ? contig(ws, t) : ws;
    Device dev = xs->device();
    Tensor gx = xs->requires_grad ? empty(xs->shape, t, dev) : Tensor();
    Tensor gw = ws && ws->requires_grad ? empty(ws->shape, t, dev) : Tensor();
    Tensor gb = pb && pb->requires_grad ? empty(pb->shape, t, dev) : Tensor();
    if (M && N) {
      kern::norm_bwd(dev)(gc, xc2, wc2, mean, rstd, gx, gw, gb, M, N, rms);
    } else {
      for (Tensor* z : {&gx, &gw, &gb})
        if (*z) kern::fill(dev)(*z, Scalar(0.0));
    }
    if (gw && gw->dtype != ws->dtype) gw = to_dtype(gw, ws->dtype);
    if (gb && gb->dtype != pb->dtype) gb = to_dtype(gb, pb->dtype);
    return TensorList{gx, gw, gb};
  });
}
}  // namespace

Tensor layer_norm(const Tensor& x, const IntList& ns, const Tensor& w, const Tensor& b, double eps) {
  return norm_impl("layer_norm", x, ns, w, b, eps, false);
}

Tensor rms_norm(const Tensor& x, const IntList& ns, const Tensor& w, double eps) {
  return norm_impl("rms_norm", x, ns, w, Tensor(), eps, true);
}

// ---- gated units
Tensor glu(const Tensor& x, int64_t dim, Gate k) {
  const char* op = k == Gate::Glu ? "glu" : "swiglu";
  check_floating(x, op, "input");
  SX_CHECK(x->dim() > 0, ValueError, "[", op, "] expected a tensor with at least one dimension");
  if (is_half(x->dtype)) return to_dtype(glu(to_dtype(x, DType::Float32), dim, k), x->dtype);
  int64_t d = wrap_dim(dim, x->dim(), op);
  SX_CHECK(x->shape[d] % 2 == 0, ValueError, "[", op, "] halving dimension must be even, but dimension ", d,
           " of input ", shape_str(x->shape), " is size ", x->shape[d]);
  Axis ax = split_axis(x->shape, d);
  int64_t len = ax.n / 2 * ax.inner, stride = ax.n * ax.inner;
  Shape os = x->shape;
  os[d] /= 2;
  Tensor xc = contig(x);
  Tensor out = empty(os, x->dtype, x->device());
  if (out->numel()) kern::gate_fwd(x->device())(k, xc, 0, xc, len, out, ax.outer, len, stride);
  if (!needs_grad({&x})) return out;
  Saved sx_(xc.get() == x.get() ? x : xc);
  return record(k == Gate::Glu ? "GluBackward" : "SwigluBackward", {x}, out,
                [sx_, k, op, ax, len, stride](const Tensor& g) {
    no_double_backward(op);
    const Tensor& xs = sx_.get();
    Tensor gc = contig(g, xs->dtype);
    Tensor gx = empty(xs->shape, xs->dtype, xs->device());
    if (gx->numel()) {
      // ga and gb are the two halves of gx: views at element offsets 0 and len
      Tensor ga = make_view(gx, gx->shape, gx->strides, gx->offset), gb = make_view(gx, gx->shape, gx->strides, gx->offset + len);
      kern::gate_bwd(xs->device())(k, gc, xs, 0, xs, len, ga, gb, ax.outer, len, stride);
    }
    return TensorList{gx};
  });
}

Tensor gated(Gate k, const Tensor& a, const Tensor& b) {
  const char* op = k == Gate::Glu ? "glu" : "swiglu";
  check_floating(a, op, "input");
  check_floating(b, op, "other");
  SX_CHECK(a->shape == b->shape, ValueError, "[", op, "] input ", shape_str(a->shape), " and other ",
           shape_str(b->shape), " must have the same shape");
  DType dt = promote_types(a->dtype, b->dtype);
  if (is_half(dt)) return to_dtype(gated(k, to_dtype(a, DType::Float32), to_dtype(b, DType::Float32)), dt);
  Tensor ac = contig(a, dt), bc = contig(b, dt);
  Tensor out = empty(a->shape, dt, a->device());
  int64_t n = a->numel();
  if (n) kern::gate_fwd(a->device())(k, ac, 0, bc, 0, out, 1, n, 0);
  if (!needs_grad({&a, &b})) return out;
  Saved sa(ac), sb(bc);
  Tensor pa = alias_detached(a), pb = alias_detached(b);
  pa->storage = pb->storage = nullptr;  // shapes and dtypes for grad_for
  return record(k == Gate::Glu ? "GluBackward" : "SwigluBackward", {a, b}, out,
                [sa, sb, pa, pb, k, op, n, dt](const Tensor& g) {
    no_double_backward(op);
    const Tensor& as = sa.get();
    const Tensor& bs = sb.get();
    Tensor gc = contig(g, dt);
    Tensor ga = empty(as->shape, dt, as->device()), gb = empty(as->shape, dt, as->device());
    if (n) kern::gate_bwd(as->device())(k, gc, as, 0, bs, 0, ga, gb, 1, n, 0);
    return TensorList{grad_for(ga, pa), grad_for(gb, pb)};
  });
}

}  // namespace sx::nn
