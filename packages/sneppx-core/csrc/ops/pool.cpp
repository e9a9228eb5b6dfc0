// Pooling (max, average, adaptive) and the batch-statistics norms (batch_norm, group_norm).
// The pooling backward passes are themselves recorded ops (max: a scatter whose vjp is a gather;
// average: the adjoint kernel whose vjp is the forward), so higher-order gradients work. batch_norm runs
// fused kernels with a hand-written backward (public ops under create_graph, and on devices without the
// kernels); group_norm is a composition of public ops, so its gradient comes from the tape.
#include "ops/conv.h"
#include "ops/unary_defs.h"
#include "ops/nn_util.h"

#include <mutex>
#include <set>
#include <string>

namespace sx::nn {
namespace {

// The op's name from its kind and rank: ("max", 2) -> "max_pool2d". Names live as long as the process.
const char* pool_name(const char* kind, size_t nsp) {
  static std::mutex mu;
  static std::set<std::string> names;
  std::lock_guard<std::mutex> lock(mu);
  return names.insert(std::string(kind) + "_pool" + std::to_string(nsp) + "d").first->c_str();
}

// Validates (N, C, spatial...) input for a pool over nsp dims and returns its geometry (image part).
ConvGeom pool_input(const Tensor& x, size_t nsp, const char* op) {
  SX_CHECK(x, ValueError, "[", op, "] input is missing");
  SX_CHECK(is_floating(x->dtype), TypeError, "[", op, "] expected a floating input, got ", describe(x));
  SX_CHECK(nsp == 1 || nsp == 2, ValueError, "[", op, "] pools over 1 or 2 dims, got ", nsp);
  SX_CHECK(x->dim() == int64_t(nsp) + 2, ValueError, "[", op, "] expected ", nsp + 2, "-D input (N, C, ",
           nsp == 1 ? "L" : "H, W", "), got ", describe(x));
  ConvGeom g;
  g.N = x->shape[0], g.C = x->shape[1];
  g.H = nsp == 1 ? 1 : x->shape[2], g.W = x->shape.back();
  SX_CHECK(g.H > 0 && g.W > 0, ValueError, "[", op, "] input ", describe(x), " has an empty spatial dim");
  return g;
}

Shape pool_out(const ConvGeom& g, size_t nsp) { return nsp == 1 ? Shape{g.N, g.C, g.ow} : Shape{g.N, g.C, g.oh, g.ow}; }

void pool_window(ConvGeom& g, size_t nsp, const IntList& k, const IntList& s, const IntList& p, const IntList& d,
                 bool ceil_mode, const char* op, const Shape& xshape) {
  auto two = [&](const IntList& v, int64_t fill, const char* what) {
    SX_CHECK(v.size() == nsp, ValueError, "[", op, "] ", what, " must have ", nsp, " value(s), got ", shape_str(v));
    return nsp == 1 ? std::pair{fill, v[0]} : std::pair{v[0], v[1]};
  };
  std::tie(g.kh, g.kw) = two(k, 1, "kernel_size");
  std::tie(g.sh, g.sw) = two(s.empty() ? k : s, 1, "stride");
  std::tie(g.ph, g.pw) = two(p, 0, "padding");
  std::tie(g.dh, g.dw) = two(d, 1, "dilation");
  SX_CHECK(g.kh > 0 && g.kw > 0 && g.sh > 0 && g.sw > 0 && g.dh > 0 && g.dw > 0, ValueError, "[", op,
           "] kernel_size, stride and dilation must be positive, got kernel_size ", shape_str(k), ", stride ",
           shape_str(s), ", dilation ", shape_str(d));
  SX_CHECK(g.ph >= 0 && g.pw >= 0 && 2 * g.ph <= g.kh && 2 * g.pw <= g.kw, ValueError, "[", op, "] padding ",
           shape_str(p), " must be non-negative and at most half of kernel_size ", shape_str(k));
  auto out = [&](int64_t n, int64_t kk, int64_t st, int64_t pp, int64_t dd) {
    int64_t span = n + 2 * pp - dd * (kk - 1) - 1;
    if (span < 0) return int64_t(0);
    int64_t o = (ceil_mode ? (span + st - 1) / st : span / st) + 1;
    if (ceil_mode && (o - 1) * st >= n + pp) --o;
    return o;
  };
  g.oh = out(g.H, g.kh, g.sh, g.ph, g.dh), g.ow = out(g.W, g.kw, g.sw, g.pw, g.dw);
  SX_CHECK(g.oh > 0 && g.ow > 0, ValueError, "[", op, "] input ", shape_str(xshape), " is too small for kernel_size ",
           shape_str(k), " (padding ", shape_str(p), ", dilation ", shape_str(d), "): the output would be empty");
}

void adaptive_window(ConvGeom& g, size_t nsp, const IntList& out, const char* op) {
  SX_CHECK(out.size() == nsp, ValueError, "[", op, "] output_size must have ", nsp, " value(s), got ", shape_str(out));
  g.oh = nsp == 1 ? 1 : out[0], g.ow = out.back();
  SX_CHECK(g.oh > 0 && g.ow > 0, ValueError, "[", op, "] output_size must be positive, got ", shape_str(out));
  g.adaptive = true;
}

// Gradient of max pooling: gy scattered to the argmax offsets; vjp: gather of the incoming gradient.
Tensor max_unpool_op(const Tensor& gy, const Tensor& idx, const ConvGeom& g) {
  Tensor gc = contig(gy);
  Tensor gx = empty({g.N, g.C, g.H, g.W}, gy->dtype, gy->device());
  if (gx->numel()) kern::max_pool_bwd(gy->device())(gc, idx, gx, g);
  if (!needs_grad({&gy})) return gx;
  Shape gshape = gy->shape;
  return record("MaxPoolBackwardBackward", {gy}, gx, [idx, g, gshape](const Tensor& gg) {
    Tensor flat = reshape(gg, {g.N, g.C, g.H * g.W});
    return TensorList{reshape(gather(flat, 2, reshape(idx, {g.N, g.C, g.oh * g.ow})), gshape)};
  });
}

Tensor avg_pool_bwd_op(const Tensor& gy, const ConvGeom& g, const AvgOpts& o);

// (N, C, H, W) -> (N, C, oh, ow) window means; vjp: the adjoint kernel.
Tensor avg_pool_op(const Tensor& x, const ConvGeom& g, const AvgOpts& o) {
  Tensor xc = contig(x);
  Tensor y = empty({g.N, g.C, g.oh, g.ow}, x->dtype, x->device());
  if (y->numel()) kern::avg_pool_fwd(x->device())(xc, y, g, o);
  if (!needs_grad({&x})) return y;
  return record("AvgPoolBackward", {x}, y, [g, o](const Tensor& gy) { return TensorList{avg_pool_bwd_op(gy, g, o)}; });
}

Tensor avg_pool_bwd_op(const Tensor& gy, const ConvGeom& g, const AvgOpts& o) {
  Tensor gc = contig(gy);
  Tensor gx = empty({g.N, g.C, g.H, g.W}, gy->dtype, gy->device());
  if (gx->numel()) kern::avg_pool_bwd(gy->device())(gc, gx, g, o);
  if (!needs_grad({&gy})) return gx;
  return record("AvgPoolBackwardBackward", {gy}, gx, [g, o](const Tensor& gg) { return TensorList{avg_pool_op(gg, g, o)}; });
}

std::pair<Tensor, Tensor> max_pool_impl(const Tensor& x, ConvGeom g, size_t nsp, bool indices) {
  DType dt = x->dtype;
  Tensor x4 = nsp == 1 ? unsqueeze(x, 2) : x;
  Tensor xf = is_half(dt) ? to_dtype(x4, DType::Float32) : x4;
  Tensor xc = contig(xf);
  Tensor y = empty({g.N, g.C, g.oh, g.ow}, xc->dtype, x->device());
  Shape os = pool_out(g, nsp);
  // Values alone (half the bytes written) where no one asked for the indices and nothing records.
  if (!indices && !needs_grad({&x}) && x->device().type == DeviceType::CPU) {
    if (y->numel()) kern::max_pool_fwd(x->device())(xc, y, Tensor(), g);
    return {reshape(cast_nograd(y, dt), os), Tensor()};
  }
  Tensor idx = empty({g.N, g.C, g.oh, g.ow}, DType::Int64, x->device());
  if (y->numel()) kern::max_pool_fwd(x->device())(xc, y, idx, g);
  Tensor ind = reshape(idx, os);
  if (!needs_grad({&x})) return {reshape(cast_nograd(y, dt), os), ind};
  Tensor rec = record("MaxPoolBackward", {xf}, y, [idx, g](const Tensor& gy) {
    return TensorList{max_unpool_op(gy, idx, g)};
  });
  return {reshape(to_dtype(rec, dt), os), ind};
}

Tensor avg_pool_impl(const Tensor& x, const ConvGeom& g, const AvgOpts& o, size_t nsp) {
  Tensor x4 = nsp == 1 ? unsqueeze(x, 2) : x;
  Tensor xf = is_half(x->dtype) ? to_dtype(x4, DType::Float32) : x4;
  return reshape(to_dtype(avg_pool_op(xf, g, o), x->dtype), pool_out(g, nsp));
}

}  // namespace

std::pair<Tensor, Tensor> max_pool(const Tensor& x, const IntList& kernel, const IntList& stride,
                                   const IntList& padding, const IntList& dilation, bool ceil_mode, bool indices) {
  size_t nsp = kernel.size();
  const char* op = pool_name("max", nsp);
  ConvGeom g = pool_input(x, nsp, op);
  pool_window(g, nsp, kernel, stride, padding, dilation, ceil_mode, op, x->shape);
  return max_pool_impl(x, g, nsp, indices);
}

Tensor avg_pool(const Tensor& x, const IntList& kernel, const IntList& stride, const IntList& padding, bool ceil_mode,
                bool count_include_pad, std::optional<int64_t> divisor_override) {
  size_t nsp = kernel.size();
  const char* op = pool_name("avg", nsp);
  ConvGeom g = pool_input(x, nsp, op);
  pool_window(g, nsp, kernel, stride, padding, IntList(nsp, 1), ceil_mode, op, x->shape);
  SX_CHECK(!divisor_override || *divisor_override != 0, ValueError, "[", op, "] divisor_override must be non-zero");
  return avg_pool_impl(x, g, AvgOpts{count_include_pad, divisor_override.value_or(0)}, nsp);
}

Tensor adaptive_avg_pool(const Tensor& x, const IntList& output_size) {
  size_t nsp = output_size.size();
  const char* op = pool_name("adaptive_avg", nsp);
  ConvGeom g = pool_input(x, nsp, op);
  adaptive_window(g, nsp, output_size, op);
  return avg_pool_impl(x, g, AvgOpts{}, nsp);
}

std::pair<Tensor, Tensor> adaptive_max_pool(const Tensor& x, const IntList& output_size, bool indices) {
  size_t nsp = output_size.size();
  const char* op = pool_name("adaptive_max", nsp);
  ConvGeom g = pool_input(x, nsp, op);
  adaptive_window(g, nsp, output_size, op);
  return max_pool_impl(x, g, nsp, indices);
}

// ---- batch statistics norms
namespace {
void check_channel_vec(const Tensor& t, int64_t C, const Tensor& x, const char* op, const char* what) {
  if (!t) return;
  SX_CHECK(t->numel() == C && t->dim() == 1, ValueError, "[", op, "] ", what, " ", describe(t),
           " must have shape (", C, ",) to match the channels of input ", describe(x));
  check_same_device(op, x, t);
}
}  // namespace

namespace {
// Batch norm from public ops, for devices without the fused kernels: the tape differentiates it.
Tensor batch_norm_composite(const Tensor& xf, const Tensor& running_mean, const Tensor& running_var,
                            const Tensor& weight, const Tensor& bias, bool training, bool batch_stats,
                            double momentum, double eps, const Shape& cshape, const IntList& dims, int64_t n) {
  int64_t C = cshape[1];
  Tensor mu, var_;
  if (batch_stats) {
    mu = mean(xf, dims, true);
    var_ = var(xf, dims, 0.0, true);
    if (training && running_mean) {
      NoGradGuard ng;
      Tensor m = reshape(detach(mu), {C}), v = reshape(detach(var_), {C});
      Tensor unbiased = mul(v, Scalar(double(n) / double(n - 1)));
      copy_(running_mean, add(mul(running_mean, Scalar(1 - momentum)), mul(to_dtype(m, running_mean->dtype), Scalar(momentum))));
      copy_(running_var, add(mul(running_var, Scalar(1 - momentum)), mul(to_dtype(unbiased, running_var->dtype), Scalar(momentum))));
    }
  } else {
    mu = reshape(to_dtype(running_mean, xf->dtype), cshape);
    var_ = reshape(to_dtype(running_var, xf->dtype), cshape);
  }
  // The per-channel factor weight / sqrt(var + eps) is formed on the (1, C, 1...) statistics, so the
  // full-size tensor sees one subtract, one multiply and one add (eval: a multiply and an add).
  Tensor scale = unary(UnaryOp::Rsqrt, add(var_, Scalar(eps)));
  if (weight) scale = mul(scale, reshape(to_dtype(weight, xf->dtype), cshape));
  Tensor b = bias ? reshape(to_dtype(bias, xf->dtype), cshape) : Tensor();
  if (batch_stats) {
    Tensor y = mul(sub(xf, mu), scale);
    return b ? add(y, b) : y;
  }
  Tensor shift = b ? sub(b, mul(mu, scale)) : neg(mul(mu, scale));
  return add(mul(xf, scale), shift);
}

// The gradient of the fused batch norm written with public ops, so that create_graph=True can
// differentiate it again. Training recomputes the batch statistics from x (they depend on it); eval
// uses the saved running mean and invstd as constants.
TensorList batch_norm_backward_composite(const Tensor& g, const Tensor& x, const Tensor& w, bool want_gw, bool want_gb,
                                         const Tensor& mean_c, const Tensor& invstd_c, bool training, double eps,
                                         const Shape& cshape, const IntList& dims) {
  int64_t C = cshape[1];
  Tensor mu, is;
  if (training) {
    mu = mean(x, dims, true);
    is = unary(UnaryOp::Rsqrt, add(var(x, dims, 0.0, true), Scalar(eps)));
  } else {
    mu = reshape(mean_c, cshape);
    is = reshape(invstd_c, cshape);
  }
  Tensor xhat = mul(sub(x, mu), is);
  Tensor gw = want_gw ? reshape(sum(mul(g, xhat), dims), {C}) : Tensor();
  Tensor gb = want_gb ? reshape(sum(g, dims), {C}) : Tensor();
  Tensor gxhat = w ? mul(g, reshape(to_dtype(w, x->dtype), cshape)) : g;
  Tensor gx = x->requires_grad
                  ? (training ? mul(is, sub(sub(gxhat, mean(gxhat, dims, true)), mul(xhat, mean(mul(gxhat, xhat), dims, true))))
                              : mul(gxhat, is))
                  : Tensor();
  return {gx, gw, gb};
}
}  // namespace

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum, double eps) {
  const char* op = "batch_norm";
  SX_CHECK(x && is_floating(x->dtype), TypeError, "[batch_norm] expected a floating input, got ",
           x ? describe(x) : "None");
  SX_CHECK(x->dim() >= 2, ValueError, "[batch_norm] expected input (N, C, ...) with at least 2 dims, got ", describe(x));
  int64_t C = x->shape[1];
  check_channel_vec(running_mean, C, x, op, "running_mean");
  check_channel_vec(running_var, C, x, op, "running_var");
  check_channel_vec(weight, C, x, op, "weight");
  check_channel_vec(bias, C, x, op, "bias");
  SX_CHECK(bool(running_mean) == bool(running_var), ValueError,
           "[batch_norm] running_mean and running_var must be given together");
  for (const Tensor* t : {&running_mean, &running_var, &weight, &bias})
    SX_CHECK(!*t || is_floating((*t)->dtype), TypeError, "[batch_norm] expected floating running statistics, weight "
             "and bias, got ", describe(*t));
  bool batch_stats = training || !running_mean;
  Shape cshape(size_t(x->dim()), 1);
  cshape[1] = C;
  IntList dims{0};
  for (int64_t d = 2; d < x->dim(); ++d) dims.push_back(d);
  int64_t n = x->numel() / std::max<int64_t>(C, 1);
  if (batch_stats)
    SX_CHECK(n > 1, ValueError, "[batch_norm] expected more than 1 value per channel when training, got input ",
             describe(x));
  DType dt = x->dtype;
  Tensor xf = is_half(dt) ? to_dtype(x, DType::Float32) : x;
  Device dev = x->device();
  if (!kern::batch_norm_fwd.has(dev.type) || !kern::batch_norm_bwd.has(dev.type))
    return to_dtype(batch_norm_composite(xf, running_mean, running_var, weight, bias, training, batch_stats, momentum,
                                         eps, cshape, dims, n), dt);

  DType t = xf->dtype;
  bool update = training && running_mean;
  if (update) {
    running_mean->check_writable(op);
    running_var->check_writable(op);
  }
  BatchNormArgs a;
  a.N = x->shape[0], a.C = C, a.S = C && a.N ? n / a.N : 1;
  a.training = batch_stats, a.momentum = momentum, a.eps = eps;
  Tensor xc = contig(xf), wc = weight ? contig(weight, t) : Tensor(), bc = bias ? contig(bias, t) : Tensor();
  Tensor rm = running_mean && (update || !batch_stats) ? contig(running_mean, t) : Tensor();
  Tensor rv = running_var && (update || !batch_stats) ? contig(running_var, t) : Tensor();
  Tensor y = empty(x->shape, t, dev), mean_c = empty({C}, t, dev), invstd_c = empty({C}, t, dev);
  if (x->numel()) kern::batch_norm_fwd(dev)(xc, wc, bc, rm, rv, y, mean_c, invstd_c, a);
  if (update && x->numel()) {  // write back when the kernel updated a converted copy
    NoGradGuard ng;
    for (auto [dst, src] : {std::pair{running_mean, rm}, std::pair{running_var, rv}}) {
      if (src.get() != dst.get()) copy_(dst, src);
      else dst->bump_version();
    }
  }
  if (!needs_grad({&xf, &weight, &bias})) return to_dtype(y, dt);
  Saved sx_(xf), sw(weight);
  Tensor pb = bias ? alias_detached(bias) : Tensor();
  if (pb) {
    pb->requires_grad = bias->requires_grad;
    pb->storage = nullptr;  // only its shape and dtype are needed
  }
  Tensor rec = record("BatchNormBackward", {xf, weight, bias}, y,
                      [sx_, sw, pb, mean_c, invstd_c, a, cshape, dims](const Tensor& g) {
    const Tensor& xs = sx_.get();
    const Tensor& ws = sw.get();
    bool want_gw = ws && ws->requires_grad, want_gb = pb && pb->requires_grad;
    TensorList out;
    if (grad_mode::enabled()) {
      out = batch_norm_backward_composite(g, xs, ws, want_gw, want_gb, mean_c, invstd_c, a.training, a.eps, cshape, dims);
    } else {
      DType t = xs->dtype;
      Device dev = xs->device();
      Tensor gc = contig(g, t), xc2 = contig(xs), wc2 = ws ? contig(ws, t) : ws;
      Tensor gx = xs->requires_grad ? empty(xs->shape, t, dev) : Tensor();
      Tensor gw = want_gw ? empty({a.C}, t, dev) : Tensor(), gb = want_gb ? empty({a.C}, t, dev) : Tensor();
      if (xs->numel()) {
        kern::batch_norm_bwd(dev)(gc, xc2, wc2, mean_c, invstd_c, gx, gw, gb, a);
      } else {
        for (Tensor* z : {&gw, &gb})
          if (*z) kern::fill(dev)(*z, Scalar(0.0));
      }
      out = {gx, gw, gb};
    }
    if (out[1] && out[1]->dtype != ws->dtype) out[1] = to_dtype(out[1], ws->dtype);
    if (out[2] && out[2]->dtype != pb->dtype) out[2] = to_dtype(out[2], pb->dtype);
    return out;
  });
  return to_dtype(rec, dt);
}

Tensor group_norm(const Tensor& x, int64_t groups, const Tensor& weight, const Tensor& bias, double eps) {
  const char* op = "group_norm";
  SX_CHECK(x && is_floating(x->dtype), TypeError, "[group_norm] expected a floating input, got ",
           x ? describe(x) : "None");
  SX_CHECK(x->dim() >= 2, ValueError, "[group_norm] expected input (N, C, ...) with at least 2 dims, got ", describe(x));
  int64_t N = x->shape[0], C = x->shape[1];
  SX_CHECK(groups > 0 && C % groups == 0, ValueError, "[group_norm] expected the ", C,
           " channels of input ", describe(x), " to be divisible by num_groups=", groups);
  check_channel_vec(weight, C, x, op, "weight");
  check_channel_vec(bias, C, x, op, "bias");
  DType dt = x->dtype;
  Tensor xf = is_half(dt) ? to_dtype(x, DType::Float32) : x;
  const int64_t per = x->numel() / std::max<int64_t>(N * groups, 1);
  Tensor y;
  if (per > 1) {  // each (sample, group) a channel of a batch norm over (1, N * groups, per): its fused kernels
    Tensor none;
    y = reshape(batch_norm(reshape(xf, {1, N * groups, per}), none, none, none, none, true, 0.0, eps), x->shape);
  } else {
    Tensor xg = reshape(xf, {N, groups, per});
    Tensor mu = mean(xg, IntList{2}, true), v = var(xg, IntList{2}, 0.0, true);
    y = reshape(mul(sub(xg, mu), unary(UnaryOp::Rsqrt, add(v, Scalar(eps)))), x->shape);
  }
  Shape cshape(size_t(x->dim()), 1);
  cshape[1] = C;
  // The affine into y where nothing is recorded (y is this op's own tensor), else out of place.
  Tensor w = weight ? reshape(to_dtype(weight, y->dtype), cshape) : Tensor();
  Tensor b = bias ? reshape(to_dtype(bias, y->dtype), cshape) : Tensor();
  if (w && !binary_into(BinaryOp::Mul, y, w)) y = mul(y, w);
  if (b && !binary_into(BinaryOp::Add, y, b)) y = add(y, b);
  return to_dtype(y, dt);
}

}  // namespace sx::nn
