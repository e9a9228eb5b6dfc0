// The unary op, generic over the formula sheet (ops/unary_defs.h): dtype rule, output, kernel
// through the device's table, and autograd from the definition's gradient form.
#include "ops/unary_defs.h"
#include "core/default_dtype.h"

#include "ops/common.h"
#include "ops/kernels.h"

namespace sx {

namespace kern {
SX_DEFINE_KERNEL(unary);
SX_DEFINE_KERNEL(unary_grad);
}  // namespace kern

namespace {

DType compute_dtype(const UnaryInfo& u, const Tensor& x) {
  DType ct = x->dtype;
  if (u.rule == DRule::Float && !is_floating(ct)) ct = default_float_dtype();
  SX_CHECK(!(u.rule == DRule::Signed && ct == DType::Bool), TypeError, "[", u.name, "] is not supported for ",
           describe(x), "; use logical_not");
  return ct;
}

// The vjp of `op` at x with output y, dispatched to the definition's gradient form.
Tensor unary_vjp(UnaryOp op, const Tensor& g, const Tensor& x, const Tensor& y, double p0, double p1) {
  return visit_unary(op, [&]<typename D>() -> Tensor {
    if constexpr (kFusedGrad<D>) {
      return unary_grad(op, g, x, p0, p1, 1);
    } else if constexpr (requires { D::vjp(g, x, y, p0, p1); }) {
      // Under create_graph the output is recomputed so that its own history is part of the graph.
      return D::vjp(g, x, grad_mode::enabled() ? unary(op, x, p0, p1) : y, p0, p1);
    } else {
      throw RuntimeError(msg("[", D::name, "] has no gradient"));
    }
  });
}

}  // namespace

Tensor unary(UnaryOp op, const Tensor& x, double p0, double p1) {
  if (is_complex(x->dtype)) [[unlikely]] return complex_unary(op, x);
  const UnaryInfo& u = unary_info(op);
  DType ct = compute_dtype(u, x);
  Tensor xc = cast_nograd(x, ct);
  Tensor out = empty(x->shape, u.rule == DRule::Bool ? DType::Bool : ct, x->device());
  kern::unary(x->device())(op, out, xc, p0, p1);
  if (u.rule == DRule::Bool || !is_floating(ct) || !needs_grad({&x})) return out;
  Saved sx_(x), so(u.fused_grad ? Tensor() : alias_detached(out));
  return record(u.name, {x}, out, [op, sx_, so, p0, p1](const Tensor& g) {
    return TensorList{unary_vjp(op, g, sx_.get(), so.get(), p0, p1)};
  });
}

Tensor unary(UnaryOp op, const Tensor& x) {
  const UnaryInfo& u = unary_info(op);
  return unary(op, x, u.d0, u.d1);
}

bool unary_into(UnaryOp op, const Tensor& x, double p0, double p1) {
  const UnaryInfo& u = unary_info(op);
  if (is_complex(x->dtype)) return false;  // complex_unary: the general path
  if (u.rule == DRule::Bool || compute_dtype(u, x) != x->dtype || needs_grad({&x}) || !elements_distinct(x))
    return false;
  x->check_writable(u.name);
  kern::unary(x->device())(op, x, x, p0, p1);  // the kernels read each element before writing it
  x->bump_version();
  return true;
}

Tensor unary_grad(UnaryOp op, const Tensor& g, const Tensor& x, double p0, double p1, int order) {
  const UnaryInfo& u = unary_info(op);
  check_same_device(u.name, g, x);
  SX_CHECK(order == 1 || u.has_d2f, RuntimeError, "[", u.name,
           "] differentiating its gradient twice (create_graph through a second derivative) is not supported");
  SX_CHECK(order < 3, RuntimeError, "[", u.name, "] derivatives above the third are not supported");
  DType dt = promote_types(g->dtype, x->dtype);
  Shape shape = broadcast_shapes(g->shape, x->shape, u.name);
  Tensor gc = expand_view(cast_nograd(g, dt), shape), xc = expand_view(cast_nograd(x, dt), shape);
  Tensor gx = empty(shape, dt, x->device());
  kern::unary_grad(x->device())(op, gx, gc, xc, p0, p1, order);
  if (!needs_grad({&g, &x})) return gx;
  // d(g f'(x)) = dg f'(x) + g f''(x) dx, and likewise one order up.
  Saved sg(g), sx_(x);
  return record("unary_grad", {g, x}, gx, [op, sg, sx_, p0, p1, order](const Tensor& gg) {
    const Tensor& gs = sg.get();
    const Tensor& xs = sx_.get();
    Tensor dg = gs->requires_grad ? grad_for(unary_grad(op, gg, xs, p0, p1, order), gs) : Tensor();
    Tensor dx = xs->requires_grad ? grad_for(unary_grad(op, mul(gg, gs), xs, p0, p1, order + 1), xs) : Tensor();
    return TensorList{dg, dx};
  });
}

Tensor neg(const Tensor& x) { return unary(UnaryOp::Neg, x); }
Tensor exp(const Tensor& x) { return unary(UnaryOp::Exp, x); }
Tensor log(const Tensor& x) { return unary(UnaryOp::Log, x); }
Tensor sqrt(const Tensor& x) { return unary(UnaryOp::Sqrt, x); }
Tensor tanh(const Tensor& x) { return unary(UnaryOp::Tanh, x); }
Tensor sigmoid(const Tensor& x) { return unary(UnaryOp::Sigmoid, x); }
Tensor relu(const Tensor& x) { return unary(UnaryOp::Relu, x); }
Tensor sign(const Tensor& x) { return unary(UnaryOp::Sign, x); }

Tensor polygamma(int64_t n, const Tensor& x) {
  SX_CHECK(n >= 0, RuntimeError, "[polygamma] polygamma(n, x) does not support negative n, got ", n);
  return unary(UnaryOp::Polygamma, x, double(n), 0.0);
}

Tensor mvlgamma(const Tensor& x, int64_t p) {
  SX_CHECK(p >= 1, RuntimeError, "[mvlgamma] p has to be greater than or equal to 1, got ", p);
  Tensor xf = is_floating(x->dtype) ? x : to_dtype(x, default_float_dtype());
  // PyTorch's domain check: every element above (p - 1) / 2 (NaN passes, as there)
  Tensor bad = binary(BinaryOp::Le, xf, scalar_tensor(Scalar(0.5 * double(p - 1)), xf->dtype, xf->device()));
  if (bad->numel() > 0) {
    Tensor any_bad = empty({}, DType::Bool, bad->device());
    kern::reduce(bad->device())(ReduceOp::Max, bad, any_bad, 1, bad->numel(), 1);
    SX_CHECK(!item_bool(any_bad), RuntimeError, "[mvlgamma] all elements must be greater than (p-1)/2 = ",
             0.5 * double(p - 1));
  }
  // PyTorch's form: the p terms lgamma(x - i/2) in one broadcast op, so a huge p fails to allocate (numel * p
  // elements, as there) instead of looping p times
  Tensor halves = to_device(mul(arange(0, double(p), 1, xf->dtype), Scalar(-0.5)), xf->device());
  Tensor s = sum(unary(UnaryOp::Lgamma, add(unsqueeze(xf, -1), halves)), IntList{-1});
  return add(s, Scalar(double(p) * double(p - 1) / 4 * 1.14472988584940017414));  // log(pi)
}

std::pair<Tensor, Tensor> frexp(const Tensor& x) {
  SX_CHECK(is_floating(x->dtype), TypeError, "[frexp] only supports floating-point dtypes, got ", describe(x));
  Tensor e = unary(UnaryOp::FrexpExponent, detach(x));
  return {unary(UnaryOp::FrexpMantissa, x), to_dtype(e, DType::Int32)};
}

}  // namespace sx
