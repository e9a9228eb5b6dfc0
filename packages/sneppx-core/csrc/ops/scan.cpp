// Running products (cumprod), running log-sum-exp (logcumsumexp) and running maxima/minima (cummax,
// cummin) along one dim, with their gradients. cumsum, the third scan, lives with the reductions
// (ops/reduce.cpp).
#include <limits>

#include "ops/common.h"
#include "ops/kernels.h"

namespace sx::kern {
SX_DEFINE_KERNEL(scan);
SX_DEFINE_KERNEL(cumprod_bwd);
SX_DEFINE_KERNEL(cum_extreme);
}  // namespace sx::kern

namespace sx {
namespace {

// x seen as contiguous (outer, n, inner) lines along dim d.
struct Lines {
  int64_t d = 0, outer = 1, n = 1, inner = 1;
};

Lines lines_of(const Tensor& x, int64_t dim, const char* op) {
  Lines l;
  l.d = wrap_dim(dim, x->dim(), op);
  for (int64_t i = 0; i < x->dim(); ++i) {
    if (i < l.d) l.outer *= x->shape[i];
    if (i == l.d) l.n = x->shape[i];
    if (i > l.d) l.inner *= x->shape[i];
  }
  return l;
}

// The dtype a scan computes in: float16/bfloat16 in float32.
DType compute_type(DType dt) { return dt == DType::Float16 || dt == DType::BFloat16 ? DType::Float32 : dt; }

// A contiguous copy of x in dtype dt (x itself when it already is one), without autograd.
Tensor packed(const Tensor& x, DType dt) {
  Tensor c = cast_nograd(x, dt);
  return c->is_contiguous() ? c : clone_nograd(c);
}

Tensor run_scan(ScanOp op, const Tensor& xc, const Lines& l) {
  Tensor out = empty(xc->shape, xc->dtype, xc->device());
  kern::scan(xc->device())(op, xc, out, l.outer, l.n, l.inner);
  return out;
}

}  // namespace

Tensor cumprod(const Tensor& x, int64_t dim) {
  Lines l = lines_of(x, dim, "cumprod");
  DType rt = is_floating(x->dtype) ? x->dtype : DType::Int64, ct = compute_type(rt);
  Tensor xc = packed(x, ct);
  Tensor out = cast_nograd(run_scan(ScanOp::Prod, xc, l), rt);
  if (!is_floating(rt) || !needs_grad({&x})) return out;
  Saved sxc(xc);
  return record("CumprodBackward", {x}, out, [sxc, l, ct, rt](const Tensor& g) {
    SX_CHECK(!grad_mode::enabled(), RuntimeError,
             "[cumprod] differentiating the backward pass (create_graph=True) is not supported");
    const Tensor& xs = sxc.get();
    Tensor gx = empty(xs->shape, ct, xs->device());
    kern::cumprod_bwd(xs->device())(xs, packed(g, ct), gx, l.outer, l.n, l.inner);
    return TensorList{cast_nograd(gx, rt)};
  });
}

// The gradient is sum_{j >= i} g_j exp(x_i - out_j). Split by the sign of g so that only logs of
// positive values are taken, it is exp(x + R(log g+ - out)) - exp(x + R(log g- - out)), with R the
// logcumsumexp taken from the end of the dim; written with differentiable ops, so it differentiates again.
Tensor logcumsumexp(const Tensor& x, int64_t dim) {
  const char* op = "logcumsumexp";
  SX_CHECK(is_floating(x->dtype), TypeError, "[", op, "] expected a floating tensor, got ", describe(x));
  if (x->dim() == 0) return reshape(logcumsumexp(reshape(x, {1}), 0), {});
  Lines l = lines_of(x, dim, op);
  Tensor out = cast_nograd(run_scan(ScanOp::LogSumExp, packed(x, compute_type(x->dtype)), l), x->dtype);
  if (!needs_grad({&x})) return out;
  Saved sxv(x), so(alias_detached(out));
  int64_t d = l.d;
  return record("LogcumsumexpBackward", {x}, out, [sxv, so, d](const Tensor& g) {
    const Tensor& xv = sxv.get();
    // Under create_graph the output is recomputed, so that its dependence on x is differentiated too.
    Tensor y = grad_mode::enabled() ? logcumsumexp(xv, d) : so.get();
    Tensor zero = scalar_tensor(0.0, g->dtype, g->device()), one = scalar_tensor(1.0, g->dtype, g->device());
    Tensor lowest = scalar_tensor(-std::numeric_limits<double>::infinity(), y->dtype, y->device());
    auto part = [&](const Tensor& mag, const Tensor& keep) {  // exp(x + R(log mag - out)) where keep
      Tensor lg = where(keep, sub(log(where(keep, mag, one)), y), lowest);
      return exp(add(xv, flip(logcumsumexp(flip(lg, {d}), d), {d})));
    };
    return TensorList{sub(part(g, binary(BinaryOp::Gt, g, zero)), part(neg(g), binary(BinaryOp::Lt, g, zero)))};
  });
}

// The gradient goes to the element each running extreme came from: g scattered (added) at the indices.
// A device without the kernel runs it on a CPU copy.
std::pair<Tensor, Tensor> cum_extreme(const Tensor& x, int64_t dim, bool is_max) {
  const char* op = is_max ? "cummax" : "cummin";
  if (x->dim() == 0) {
    auto [v, i] = cum_extreme(reshape(x, {1}), wrap_dim(dim, 1, op), is_max);
    return {reshape(v, {}), reshape(i, {})};
  }
  Lines l = lines_of(x, dim, op);
  const Device dev = x->device();
  Tensor values = empty(x->shape, x->dtype, dev), idx = empty(x->shape, DType::Int64, dev);
  if (kern::cum_extreme.has(dev.type)) {
    kern::cum_extreme(dev)(is_max, packed(x, x->dtype), values, idx, l.outer, l.n, l.inner);
  } else {
    Tensor hv = empty(x->shape, x->dtype, Device{}), hi = empty(x->shape, DType::Int64, Device{});
    Tensor host = packed(to_device(detach(x), Device{}), x->dtype);
    kern::cum_extreme(Device{})(is_max, host, hv, hi, l.outer, l.n, l.inner);
    values = to_device(hv, dev), idx = to_device(hi, dev);
  }
  if (is_floating(x->dtype) && needs_grad({&x})) {
    Shape xs = x->shape;
    int64_t d = l.d;
    record(is_max ? "CummaxBackward" : "CumminBackward", {x}, values, [xs, idx, d](const Tensor& g) {
      return TensorList{scatter_add(zeros(xs, g->dtype, g->device()), d, idx, g)};
    });
  }
  return {values, idx};
}

}  // namespace sx
