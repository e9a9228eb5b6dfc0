// Elementwise ops: promotion, broadcasting and the vjp of each op (written with public ops).
#include <cmath>

#include "cpu/kernels.h"
#include "ops/common.h"

namespace sx {

namespace {
int category(DType d) { return d == DType::Bool ? 0 : (is_floating(d) ? 2 : 1); }

const char* binary_name(BinaryOp op) {
  static const char* names[] = {"add", "sub", "mul", "div", "floor_divide", "remainder", "pow", "maximum",
                                "minimum", "atan2", "eq", "ne", "lt", "le", "gt", "ge", "logical_and",
                                "logical_or", "logical_xor"};
  return names[int(op)];
}
const char* unary_name(UnaryOp op) {
  static const char* names[] = {"neg", "abs", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos",
                                "tanh", "sigmoid", "relu", "gelu", "gelu", "silu", "erf", "sign", "floor",
                                "ceil", "round", "trunc", "reciprocal", "logical_not", "isnan", "isinf",
                                "isfinite", "log2", "square"};
  return names[int(op)];
}
bool is_compare(BinaryOp op) { return op >= BinaryOp::Eq; }
// Ops whose result is floating even for integer inputs (PyTorch: exp(int) -> float32).
bool needs_float(UnaryOp op) {
  switch (op) {
    case UnaryOp::Neg: case UnaryOp::Abs: case UnaryOp::Relu: case UnaryOp::Sign: case UnaryOp::Floor:
    case UnaryOp::Ceil: case UnaryOp::Round: case UnaryOp::Trunc: case UnaryOp::Not: case UnaryOp::IsNan:
    case UnaryOp::IsInf: case UnaryOp::IsFinite: case UnaryOp::Square:
      return false;
    default:
      return true;
  }
}
bool bool_result(UnaryOp op) {
  return op == UnaryOp::Not || op == UnaryOp::IsNan || op == UnaryOp::IsInf || op == UnaryOp::IsFinite;
}
}  // namespace

DType result_type(const Tensor& a, const Tensor& b) {
  bool a0 = a->dim() == 0, b0 = b->dim() == 0;
  if (a0 == b0) return promote_types(a->dtype, b->dtype);
  const Tensor& dimd = a0 ? b : a;
  const Tensor& zd = a0 ? a : b;
  return category(zd->dtype) > category(dimd->dtype) ? zd->dtype : dimd->dtype;
}

DType scalar_result_type(const Tensor& t, const Scalar& s) {
  int sc = s.kind == Scalar::Float ? 2 : (s.kind == Scalar::Int ? 1 : 0);
  if (sc <= category(t->dtype)) return t->dtype;
  return sc == 2 ? DType::Float32 : DType::Int64;
}

Tensor scalar_tensor(const Scalar& s, DType dtype, Device device) {
  Tensor t = empty({}, dtype, device);
  cpu::fill(t, s);
  return t;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  if (a == b) return a;
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    SX_CHECK(da == db || da == 1 || db == 1, ValueError, "[", op, "] shapes ", shape_str(a), " and ", shape_str(b),
             " cannot be broadcast together");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

static TensorList binary_vjp(BinaryOp op, const Tensor& g, const Tensor& a, const Tensor& b) {
  switch (op) {
    case BinaryOp::Add: return {grad_for(g, a), grad_for(g, b)};
    case BinaryOp::Sub: return {grad_for(g, a), grad_for(neg(g), b)};
    case BinaryOp::Mul:
      return {a->requires_grad ? grad_for(mul(g, b), a) : nullptr, b->requires_grad ? grad_for(mul(g, a), b) : nullptr};
    case BinaryOp::Div:
      return {a->requires_grad ? grad_for(div(g, b), a) : nullptr,
              b->requires_grad ? grad_for(neg(div(mul(g, a), mul(b, b))), b) : nullptr};
    case BinaryOp::Pow: {
      Tensor ga, gb;
      if (a->requires_grad) ga = grad_for(mul(mul(g, b), pow(a, sub(b, ones_like(b)))), a);
      if (b->requires_grad) {
        Tensor la = where(binary(BinaryOp::Gt, a, zeros_like(a)), log(a), zeros_like(a));
        gb = grad_for(mul(mul(g, pow(a, b)), la), b);
      }
      return {ga, gb};
    }
    case BinaryOp::Max:
    case BinaryOp::Min: {
      Tensor win = to_dtype(binary(op == BinaryOp::Max ? BinaryOp::Gt : BinaryOp::Lt, a, b), g->dtype);
      Tensor tie = mul(to_dtype(binary(BinaryOp::Eq, a, b), g->dtype), Scalar(0.5));
      Tensor wa = add(win, tie);
      Tensor wb = sub(ones_like(wa), wa);
      return {grad_for(mul(g, wa), a), grad_for(mul(g, wb), b)};
    }
    case BinaryOp::Atan2: {
      Tensor den = add(mul(a, a), mul(b, b));
      return {grad_for(div(mul(g, b), den), a), grad_for(neg(div(mul(g, a), den)), b)};
    }
    case BinaryOp::Rem:
      return {grad_for(g, a), b->requires_grad ? grad_for(neg(mul(g, binary(BinaryOp::FloorDiv, a, b))), b) : nullptr};
    default:
      return {nullptr, nullptr};
  }
}

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b) {
  const char* name = binary_name(op);
  check_same_device(name, a, b);
  DType ct = result_type(a, b);
  if ((op == BinaryOp::Div || op == BinaryOp::Atan2) && !is_floating(ct)) ct = DType::Float32;
  if (op == BinaryOp::Sub && ct == DType::Bool)
    throw TypeError(msg("[sub] subtracting bool tensors is not supported (", describe(a), " and ", describe(b),
                        "); use logical_xor"));
  Shape shape = broadcast_shapes(a->shape, b->shape, name);
  Tensor ac = cast_nograd(a, ct), bc = cast_nograd(b, ct);
  if ((op == BinaryOp::FloorDiv || op == BinaryOp::Rem) && !is_floating(ct)) {
    Tensor zero = empty(bc->shape, DType::Bool);
    // kernels take operands already broadcast to the output's shape
    cpu::binary(BinaryOp::Eq, zero, bc, expand_view(scalar_tensor(Scalar(int64_t(0)), ct), bc->shape));
    const bool* z = zero->data<bool>();
    for (int64_t i = 0; i < zero->numel(); ++i)
      SX_CHECK(!z[i], RuntimeError, "[", name, "] ZeroDivisionError: integer division by zero");
  }
  Tensor out = empty(shape, is_compare(op) ? DType::Bool : ct, a->device());
  cpu::binary(op, out, expand_view(ac, shape), expand_view(bc, shape));
  if (is_compare(op) || !is_floating(ct) || !needs_grad({&a, &b})) return out;
  static const char* bw[] = {"AddBackward", "SubBackward", "MulBackward", "DivBackward", "FloorDivBackward",
                             "RemainderBackward", "PowBackward", "MaximumBackward", "MinimumBackward",
                             "Atan2Backward"};
  Saved sa(a), sb(b);
  bool save = op != BinaryOp::Add && op != BinaryOp::Sub;
  if (!save) {  // no tensors needed: keep only shapes and dtypes alive
    Tensor pa = alias_detached(a), pb = alias_detached(b);
    pa->requires_grad = a->requires_grad;
    pb->requires_grad = b->requires_grad;
    pa->storage = pb->storage = nullptr;
    return record(bw[int(op)], {a, b}, out, [op, pa, pb](const Tensor& g) { return binary_vjp(op, g, pa, pb); });
  }
  return record(bw[int(op)], {a, b}, out,
                [op, sa, sb](const Tensor& g) { return binary_vjp(op, g, sa.get(), sb.get()); });
}

Tensor add(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Add, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Sub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Div, a, b); }
Tensor pow(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Pow, a, b); }
Tensor add(const Tensor& a, const Scalar& b) { return add(a, scalar_tensor(b, scalar_result_type(a, b))); }
Tensor mul(const Tensor& a, const Scalar& b) { return mul(a, scalar_tensor(b, scalar_result_type(a, b))); }
Tensor pow(const Tensor& a, const Scalar& b) {
  Tensor e = scalar_tensor(b, scalar_result_type(a, b));
  if (!a->requires_grad || !grad_mode::enabled() || !is_floating(e->dtype)) return pow(a, e);
  // x ** c: the common case gets a cheaper vjp than the general tensor ** tensor one.
  Tensor out;
  {
    NoGradGuard ng;
    out = pow(a, e);
  }
  Saved sa(a);
  double c = b.to<double>();
  return record("PowBackward", {a}, out, [sa, c](const Tensor& g) {
    const Tensor& x = sa.get();
    return TensorList{mul(mul(g, pow(x, Scalar(c - 1))), Scalar(c))};
  });
}

static TensorList unary_vjp(UnaryOp op, const Tensor& g, const Tensor& x, const Tensor& out_saved) {
  // Under create_graph the output is recomputed so that its own history is part of the graph.
  auto out = [&] { return grad_mode::enabled() ? unary(op, x) : out_saved; };
  switch (op) {
    case UnaryOp::Neg: return {neg(g)};
    case UnaryOp::Abs: return {mul(g, sign(x))};
    case UnaryOp::Exp: return {mul(g, out())};
    case UnaryOp::Log: return {div(g, x)};
    case UnaryOp::Log2: return {div(g, mul(x, Scalar(M_LN2)))};
    case UnaryOp::Log1p: return {div(g, add(x, Scalar(1.0)))};
    case UnaryOp::Expm1: return {mul(g, add(out(), Scalar(1.0)))};
    case UnaryOp::Sqrt: return {div(g, mul(out(), Scalar(2.0)))};
    case UnaryOp::Rsqrt: { Tensor o = out(); return {mul(mul(g, mul(o, mul(o, o))), Scalar(-0.5))}; }
    case UnaryOp::Sin: return {mul(g, unary(UnaryOp::Cos, x))};
    case UnaryOp::Cos: return {neg(mul(g, unary(UnaryOp::Sin, x)))};
    case UnaryOp::Tanh: { Tensor o = out(); return {mul(g, sub(ones_like(o), mul(o, o)))}; }
    case UnaryOp::Sigmoid: { Tensor o = out(); return {mul(g, mul(o, sub(ones_like(o), o)))}; }
    case UnaryOp::Relu: return {mul(g, to_dtype(binary(BinaryOp::Gt, x, zeros_like(x)), g->dtype))};
    case UnaryOp::Gelu: {  // Phi(x) + x phi(x)
      Tensor cdf = mul(add(unary(UnaryOp::Erf, mul(x, Scalar(M_SQRT1_2))), Scalar(1.0)), Scalar(0.5));
      Tensor pdf = mul(exp(mul(mul(x, x), Scalar(-0.5))), Scalar(0.3989422804014327));
      return {mul(g, add(cdf, mul(x, pdf)))};
    }
    case UnaryOp::GeluTanh: {
      const double k = 0.7978845608028654, c = 0.044715;
      Tensor x2 = mul(x, x);
      Tensor inner = mul(mul(x, add(mul(x2, Scalar(c)), Scalar(1.0))), Scalar(k));
      Tensor t = tanh(inner);
      Tensor dinner = mul(add(mul(x2, Scalar(3 * c)), Scalar(1.0)), Scalar(k));
      Tensor left = mul(add(t, Scalar(1.0)), Scalar(0.5));
      Tensor right = mul(mul(mul(x, sub(ones_like(t), mul(t, t))), dinner), Scalar(0.5));
      return {mul(g, add(left, right))};
    }
    case UnaryOp::Silu: {
      Tensor s = sigmoid(x);
      return {mul(g, mul(s, add(mul(x, sub(ones_like(s), s)), Scalar(1.0))))};
    }
    case UnaryOp::Erf: return {mul(g, mul(exp(neg(mul(x, x))), Scalar(1.1283791670955126)))};
    case UnaryOp::Reciprocal: { Tensor o = out(); return {neg(mul(g, mul(o, o)))}; }
    case UnaryOp::Square: return {mul(g, mul(x, Scalar(2.0)))};
    default: return {zeros_like(g)};  // sign, floor, ceil, round, trunc: zero almost everywhere
  }
}

Tensor unary(UnaryOp op, const Tensor& x) {
  DType ct = x->dtype;
  if (needs_float(op) && !is_floating(ct)) ct = DType::Float32;
  if (op == UnaryOp::Neg) SX_CHECK(ct != DType::Bool, TypeError, "[neg] negation of a bool tensor is not supported; use logical_not");
  Tensor xc = cast_nograd(x, ct);
  Tensor out = empty(x->shape, bool_result(op) ? DType::Bool : ct, x->device());
  cpu::unary(op, out, xc);
  if (bool_result(op) || !is_floating(ct) || !needs_grad({&x})) return out;
  Saved sx(x), so(alias_detached(out));
  return record(unary_name(op), {x}, out, [op, sx, so](const Tensor& g) { return unary_vjp(op, g, sx.get(), so.get()); });
}

Tensor neg(const Tensor& x) { return unary(UnaryOp::Neg, x); }
Tensor exp(const Tensor& x) { return unary(UnaryOp::Exp, x); }
Tensor log(const Tensor& x) { return unary(UnaryOp::Log, x); }
Tensor sqrt(const Tensor& x) { return unary(UnaryOp::Sqrt, x); }
Tensor tanh(const Tensor& x) { return unary(UnaryOp::Tanh, x); }
Tensor sigmoid(const Tensor& x) { return unary(UnaryOp::Sigmoid, x); }
Tensor relu(const Tensor& x) { return unary(UnaryOp::Relu, x); }
Tensor sign(const Tensor& x) { return unary(UnaryOp::Sign, x); }

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  SX_CHECK(cond->dtype == DType::Bool, TypeError, "[where] condition must be a bool tensor, got ", describe(cond));
  DType ct = result_type(a, b);
  Shape shape = broadcast_shapes(broadcast_shapes(cond->shape, a->shape, "where"), b->shape, "where");
  Tensor out = empty(shape, ct, a->device());
  cpu::where(out, expand_view(cond, shape), expand_view(cast_nograd(a, ct), shape),
             expand_view(cast_nograd(b, ct), shape));
  if (!is_floating(ct) || !needs_grad({&a, &b})) return out;
  Tensor c = cond, pa = alias_detached(a), pb = alias_detached(b);
  pa->storage = pb->storage = nullptr;  // only shapes and dtypes are needed
  return record("WhereBackward", {a, b}, out, [c, pa, pb](const Tensor& g) {
    Tensor z = zeros_like(g);
    return TensorList{grad_for(where(c, g, z), pa), grad_for(where(c, z, g), pb)};
  });
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& v) {
  SX_CHECK(mask->dtype == DType::Bool, TypeError, "[masked_fill] mask must be a bool tensor, got ", describe(mask));
  Shape shape = broadcast_shapes(x->shape, mask->shape, "masked_fill");
  SX_CHECK(shape == x->shape, ValueError, "[masked_fill] mask of shape ", shape_str(mask->shape),
           " does not broadcast to the input's shape ", shape_str(x->shape));
  return where(mask, scalar_tensor(v, x->dtype, x->device()), x);
}

Tensor clamp(const Tensor& x, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  SX_CHECK(lo || hi, ValueError, "[clamp] at least one of min and max must be given");
  Tensor out = empty(x->shape, x->dtype, x->device());
  auto op = lo && hi ? cpu::ParamOp::Clamp : (lo ? cpu::ParamOp::ClampMin : cpu::ParamOp::ClampMax);
  cpu::param_unary(op, out, x, lo ? lo->to<double>() : 0, hi ? hi->to<double>() : 0);
  if (!is_floating(x->dtype) || !needs_grad({&x})) return out;
  Saved sx(x);
  double l = lo ? lo->to<double>() : -INFINITY, h = hi ? hi->to<double>() : INFINITY;
  return record("ClampBackward", {x}, out, [sx, l, h](const Tensor& g) {
    const Tensor& v = sx.get();
    Tensor inside = binary(BinaryOp::And, binary(BinaryOp::Ge, v, scalar_tensor(l, v->dtype)),
                           binary(BinaryOp::Le, v, scalar_tensor(h, v->dtype)));
    return TensorList{mul(g, to_dtype(inside, g->dtype))};
  });
}

Tensor lerp(const Tensor& a, const Tensor& b, const Tensor& w) { return add(a, mul(w, sub(b, a))); }

static Tensor param_op(cpu::ParamOp op, const char* name, const Tensor& x, double p0, double p1) {
  SX_CHECK(is_floating(x->dtype), TypeError, "[", name, "] expected a floating tensor, got ", describe(x));
  Tensor out = empty(x->shape, x->dtype, x->device());
  cpu::param_unary(op, out, x, p0, p1);
  return out;
}

Tensor softplus(const Tensor& x, double beta, double threshold) {
  Tensor out = param_op(cpu::ParamOp::Softplus, "softplus", x, beta, threshold);
  Saved sx(x);
  return record("SoftplusBackward", {x}, out, [sx, beta, threshold](const Tensor& g) {
    const Tensor& v = sx.get();
    Tensor s = sigmoid(mul(v, Scalar(beta)));
    Tensor lin = binary(BinaryOp::Gt, mul(v, Scalar(beta)), scalar_tensor(threshold, v->dtype));
    return TensorList{mul(g, where(lin, ones_like(s), s))};
  });
}

Tensor leaky_relu(const Tensor& x, double slope) {
  Tensor out = param_op(cpu::ParamOp::LeakyRelu, "leaky_relu", x, slope, 0);
  Saved sx(x);
  return record("LeakyReluBackward", {x}, out, [sx, slope](const Tensor& g) {
    const Tensor& v = sx.get();
    return TensorList{where(binary(BinaryOp::Gt, v, zeros_like(v)), g, mul(g, Scalar(slope)))};
  });
}

Tensor elu(const Tensor& x, double alpha) {
  Tensor out = param_op(cpu::ParamOp::Elu, "elu", x, alpha, 0);
  Saved sx(x);
  return record("EluBackward", {x}, out, [sx, alpha](const Tensor& g) {
    const Tensor& v = sx.get();
    return TensorList{where(binary(BinaryOp::Gt, v, zeros_like(v)), g, mul(g, mul(exp(v), Scalar(alpha))))};
  });
}

}  // namespace sx
