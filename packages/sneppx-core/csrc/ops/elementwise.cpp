// Elementwise ops: promotion, broadcasting and the vjp of each op (written with public ops).
#include <cmath>

#include "ops/common.h"
#include "core/default_dtype.h"
#include "ops/kernels.h"
#include "ops/unary_defs.h"

namespace sx {

namespace {
int category(DType d) { return d == DType::Bool ? 0 : is_complex(d) ? 3 : is_floating(d) ? 2 : 1; }

bool is_compare(BinaryOp op) { return op >= BinaryOp::Eq; }
bool is_shift(BinaryOp op) { return op == BinaryOp::Shl || op == BinaryOp::Shr; }
// The bitwise ops have no float form, the shifts no bool form either.
bool bitwise_rejects(BinaryOp op, DType ct) {
  bool bitwise = op >= BinaryOp::BitAnd && op <= BinaryOp::Shr;
  return bitwise && (is_floating(ct) || (is_shift(op) && ct == DType::Bool));
}
// gcd and lcm take integers only, nextafter floats only.
bool number_theory_rejects(BinaryOp op, DType ct) {
  return (op == BinaryOp::Gcd || op == BinaryOp::Lcm) && (is_floating(ct) || ct == DType::Bool);
}
bool nextafter_rejects(BinaryOp op, DType ct) { return op == BinaryOp::NextAfter && !is_floating(ct); }
}  // namespace

namespace kern {
SX_DEFINE_KERNEL(binary);
SX_DEFINE_KERNEL(where);
SX_DEFINE_KERNEL(clamp);
SX_DEFINE_KERNEL(clamp_tensor);
SX_DEFINE_KERNEL(nan_to_num);
SX_DEFINE_KERNEL(tri);
SX_DEFINE_KERNEL(lerp);
SX_DEFINE_KERNEL(copy);
SX_DEFINE_KERNEL(cat);
SX_DEFINE_KERNEL(fill);
SX_DEFINE_KERNEL(add_scaled);
SX_DEFINE_KERNEL(addcmul);
SX_DEFINE_KERNEL(transfer);
}  // namespace kern

const char* binary_name(BinaryOp op) {
  switch (op) {
#define SX_NAME_ENTRY(E, NAME, BW) \
  case BinaryOp::E: return NAME;
    SX_BINARY_OPS(SX_NAME_ENTRY)
#undef SX_NAME_ENTRY
  }
  return "binary";
}

static const char* binary_node_name(BinaryOp op) {
  switch (op) {
#define SX_NAME_ENTRY(E, NAME, BW) \
  case BinaryOp::E: return BW;
    SX_BINARY_OPS(SX_NAME_ENTRY)
#undef SX_NAME_ENTRY
  }
  return "BinaryBackward";
}

DType result_type(const Tensor& a, const Tensor& b) {
  bool a0 = a->dim() == 0, b0 = b->dim() == 0;
  if (a0 == b0) return promote_types(a->dtype, b->dtype);
  const Tensor& dimd = a0 ? b : a;
  const Tensor& zd = a0 ? a : b;
  if (category(zd->dtype) <= category(dimd->dtype)) return dimd->dtype;
  // A complex number with a floating tensor takes the tensor's precision too (complex64 with float64 gives
  // complex128), as in PyTorch.
  return is_complex(zd->dtype) && is_floating(dimd->dtype) ? promote_types(zd->dtype, dimd->dtype) : zd->dtype;
}

DType scalar_result_type(const Tensor& t, const Scalar& s) {
  int sc = s.kind == Scalar::Float ? 2 : (s.kind == Scalar::Int ? 1 : 0);
  if (sc <= category(t->dtype)) return t->dtype;
  return sc == 2 ? default_float_dtype() : DType::Int64;
}

Tensor scalar_tensor(const Scalar& s, DType dtype, Device device) {
  Tensor t = empty({}, dtype, device);
  fill_into(t, s);
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
    case BinaryOp::Fmod:
      return {grad_for(g, a), b->requires_grad ? grad_for(neg(mul(g, unary(UnaryOp::Trunc, div(a, b)))), b) : nullptr};
    case BinaryOp::NextAfter:
      throw RuntimeError("[nextafter] the derivative for 'nextafter' is not implemented");
    default:
      return {nullptr, nullptr};
  }
}

// As in PyTorch, a 0-d CPU tensor takes part in an op on another device as a number would: `number`
// tells such a tensor, `number_on` moves it to the device d of the other operands.
static bool number(const Tensor& t) { return t->dim() == 0 && t->device().type == DeviceType::CPU; }
static Tensor number_on(const Tensor& t, Device d) { return t->device() != d && number(t) ? to_device(t, d) : t; }

Tensor binary(BinaryOp op, const Tensor& a_in, const Tensor& b_in) {
  if (is_complex(a_in->dtype) || is_complex(b_in->dtype)) [[unlikely]] return complex_binary(op, a_in, b_in);
  const char* name = binary_name(op);
  Tensor a = number_on(a_in, b_in->device()), b = number_on(b_in, a->device());
  check_same_device(name, a, b);
  DType ct = result_type(a, b);
  if ((op == BinaryOp::Div || op == BinaryOp::Atan2) && !is_floating(ct)) ct = default_float_dtype();
  if (op == BinaryOp::Sub && ct == DType::Bool)
    throw TypeError(msg("[sub] subtracting bool tensors is not supported (", describe(a), " and ", describe(b),
                        "); use logical_xor"));
  if (bitwise_rejects(op, ct))
    throw TypeError(msg("[", name, "] is only defined for integer", is_shift(op) ? "" : " and bool",
                        " tensors, got ", describe(a), " and ", describe(b)));
  if (number_theory_rejects(op, ct))
    throw TypeError(msg("[", name, "] is only defined for integer tensors, got ", describe(a), " and ", describe(b)));
  if (nextafter_rejects(op, ct))
    throw TypeError(msg("[nextafter] is only defined for floating-point tensors, got ", describe(a), " and ",
                        describe(b)));
  Shape shape = broadcast_shapes(a->shape, b->shape, name);
  Tensor ac = cast_nograd(a, ct), bc = cast_nograd(b, ct);
  if ((op == BinaryOp::FloorDiv || op == BinaryOp::Rem || op == BinaryOp::Fmod) && !is_floating(ct) && !is_meta(bc)) {
    Tensor zero = empty(bc->shape, DType::Bool, bc->device());
    // kernels take operands already broadcast to the output's shape
    kern::binary(bc->device())(BinaryOp::Eq, zero, bc, expand_view(scalar_tensor(Scalar(int64_t(0)), ct, bc->device()), bc->shape));
    Tensor any_zero = empty({}, DType::Bool, zero->device());
    kern::reduce(zero->device())(ReduceOp::Max, zero, any_zero, 1, zero->numel(), 1);
    SX_CHECK(!item_bool(any_zero), RuntimeError, "[", name, "] ZeroDivisionError: integer division by zero");
  }
  Tensor out = empty(shape, is_compare(op) ? DType::Bool : ct, a->device());
  kern::binary(out->device())(op, out, expand_view(ac, shape), expand_view(bc, shape));
  if (is_compare(op) || !is_floating(ct) || !needs_grad({&a, &b})) return out;
  Saved sa(a), sb(b);
  bool save = op != BinaryOp::Add && op != BinaryOp::Sub;
  if (!save) {  // no tensors needed: keep only shapes and dtypes alive
    Tensor pa = alias_detached(a), pb = alias_detached(b);
    pa->requires_grad = a->requires_grad;
    pb->requires_grad = b->requires_grad;
    pa->storage = pb->storage = nullptr;
    return record(binary_node_name(op), {a, b}, out, [op, pa, pb](const Tensor& g) { return binary_vjp(op, g, pa, pb); });
  }
  return record(binary_node_name(op), {a, b}, out,
                [op, sa, sb](const Tensor& g) { return binary_vjp(op, g, sa.get(), sb.get()); });
}

bool elements_distinct(const Tensor& t) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (|stride|, size) of the dims that take steps
  for (int64_t d = 0; d < t->dim(); ++d)
    if (t->shape[d] > 1) dims.push_back({std::abs(t->strides[d]), t->shape[d]});
  std::sort(dims.begin(), dims.end());
  int64_t span = 1;  // elements covered by the dims of smaller stride
  for (auto [stride, size] : dims) {
    if (stride < span) return false;
    span = stride * size;
  }
  return true;
}

bool binary_into(BinaryOp op, const Tensor& x, const Tensor& b) {
  // Rem, Fmod and Atan2 re-read their inputs after writing (a second pass for out-of-range elements),
  // and integer division and floor division check for zero divisors or change the dtype: those keep
  // the general path.
  if (is_compare(op) || op == BinaryOp::Rem || op == BinaryOp::Fmod || op == BinaryOp::Atan2) return false;
  if (is_complex(x->dtype) || is_complex(b->dtype)) return false;  // complex_binary: the general path
  if (x->device() != b->device() || result_type(x, b) != x->dtype || needs_grad({&x, &b})) return false;
  if ((op == BinaryOp::Div || op == BinaryOp::FloorDiv) && !is_floating(x->dtype)) return false;
  if (op == BinaryOp::Sub && x->dtype == DType::Bool) return false;
  if (bitwise_rejects(op, x->dtype) || number_theory_rejects(op, x->dtype) || nextafter_rejects(op, x->dtype))
    return false;  // binary() raises
  bool same_view = b->offset == x->offset && b->shape == x->shape && b->strides == x->strides;
  if (b->storage == x->storage && !same_view) return false;  // b overlaps x in another layout
  if (broadcast_shapes(x->shape, b->shape, binary_name(op)) != x->shape || !elements_distinct(x)) return false;
  x->check_writable(binary_name(op));
  kern::binary(x->device())(op, x, x, expand_view(cast_nograd(b, x->dtype), x->shape));
  x->bump_version();
  return true;
}

bool writes_into(const Tensor& x, std::initializer_list<const Tensor*> operands) {
  if (needs_grad({&x})) return false;
  for (const Tensor* t : operands)
    if (needs_grad({t}) || (*t)->storage == x->storage || (*t)->device() != x->device()) return false;
  return elements_distinct(x);
}

// The dtype of clamp(x, lo, hi) with scalar bounds: x's, promoted as by x + bound (an integer tensor
// clamped to a float bound gives float32, as in PyTorch).
static DType clamp_type(const Tensor& x, const std::optional<Scalar>& lo, const std::optional<Scalar>& hi) {
  DType t = x->dtype;
  if (lo) t = promote_types(t, scalar_result_type(x, *lo));
  if (hi) t = promote_types(t, scalar_result_type(x, *hi));
  return t;
}

bool clamp_into(const Tensor& x, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  if (!(lo || hi) || !writes_into(x, {})) return false;
  if (clamp_type(x, lo, hi) != x->dtype) return false;  // the general path raises (or casts back) as PyTorch
  x->check_writable("clamp_");
  kern::clamp(x->device())(x, x, lo ? lo->to<double>() : 0, hi ? hi->to<double>() : 0, bool(lo), bool(hi));
  x->bump_version();
  return true;
}

bool lerp_into(const Tensor& x, const Tensor& end, const Tensor& w) {
  if (!kern::lerp.has(x->device().type) || !is_floating(x->dtype) || end->dtype != x->dtype || w->dtype != x->dtype ||
      !writes_into(x, {&end, &w}))
    return false;
  if (broadcast_shapes(broadcast_shapes(x->shape, end->shape, "lerp_"), w->shape, "lerp_") != x->shape) return false;
  x->check_writable("lerp_");
  kern::lerp(x->device())(x, x, expand_view(end, x->shape), expand_view(w, x->shape));
  x->bump_version();
  return true;
}

bool addcmul_into(const Tensor& x, const Tensor& t1, const Tensor& t2, const Scalar& value, bool divide) {
  const char* op = divide ? "addcdiv_" : "addcmul_";
  if (!kern::addcmul.has(x->device().type) || !is_floating(x->dtype) || t1->dtype != x->dtype ||
      t2->dtype != x->dtype || scalar_result_type(t1, value) != x->dtype || !writes_into(x, {&t1, &t2}))
    return false;
  if (broadcast_shapes(broadcast_shapes(x->shape, t1->shape, op), t2->shape, op) != x->shape) return false;
  x->check_writable(op);
  kern::addcmul(x->device())(x, x, expand_view(t1, x->shape), expand_view(t2, x->shape), value, divide);
  x->bump_version();
  return true;
}

Tensor bitwise_not(const Tensor& x) {
  SX_CHECK(!is_floating(x->dtype), TypeError, "[bitwise_not] is only defined for integer and bool tensors, got ",
           describe(x));
  return unary(x->dtype == DType::Bool ? UnaryOp::Not : UnaryOp::BitNot, x);
}

Tensor add(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Add, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Sub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Div, a, b); }
Tensor pow(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Pow, a, b); }
Tensor add(const Tensor& a, const Scalar& b) { return add(a, scalar_tensor(b, scalar_result_type(a, b), a->device())); }
Tensor mul(const Tensor& a, const Scalar& b) { return mul(a, scalar_tensor(b, scalar_result_type(a, b), a->device())); }

Tensor add_scaled(const Tensor& a, const Tensor& b, const Scalar& alpha, bool subtract, bool into_a) {
  // One pass when alpha * b keeps b's dtype and b's dtype is the result's; otherwise the two ops.
  DType ct = result_type(a, b);
  if (scalar_result_type(b, alpha) != b->dtype || b->dtype != ct || ct == DType::Bool || is_complex(ct) ||
      a->device() != b->device() || !kern::add_scaled.has(a->device().type)) {
    Tensor scaled = mul(b, alpha);
    return subtract ? sub(a, scaled) : add(a, scaled);
  }
  Shape shape = broadcast_shapes(a->shape, b->shape, subtract ? "sub" : "add");
  bool track = needs_grad({&a, &b});
  if (into_a && !track && a->dtype == ct && shape == a->shape && a->storage != b->storage &&
      std::find(a->strides.begin(), a->strides.end(), 0) == a->strides.end()) {
    a->check_writable(subtract ? "sub_" : "add_");
    kern::add_scaled(a->device())(a, a, expand_view(b, shape), alpha, subtract);
    a->bump_version();
    return a;
  }
  Tensor out = empty(shape, ct, a->device());
  kern::add_scaled(out->device())(out, expand_view(cast_nograd(a, ct), shape), expand_view(b, shape), alpha, subtract);
  if (!is_floating(ct) || !track) return out;
  Tensor pa = alias_detached(a), pb = alias_detached(b);  // only shapes, dtypes and flags are needed
  pa->requires_grad = a->requires_grad;
  pb->requires_grad = b->requires_grad;
  pa->storage = pb->storage = nullptr;
  return record(subtract ? "SubBackward" : "AddBackward", {a, b}, out, [pa, pb, alpha, subtract](const Tensor& g) {
    // b's gradient sums to b's shape before the multiply, as mul's vjp after add's would
    Tensor gb = pb->requires_grad ? mul(grad_for(subtract ? neg(g) : g, pb), alpha) : nullptr;
    return TensorList{pa->requires_grad ? grad_for(g, pa) : nullptr, gb};
  });
}
Tensor pow(const Tensor& a, const Scalar& b) {
  // A floating tensor to a number: one fused pass (x * x * x for 3, ...) with x ** c's own vjp.
  if (is_floating(a->dtype)) return unary(UnaryOp::PowScalar, a, b.to<double>(), 0.0);
  // A complex tensor to a real number: the number stays real (exp(b log a) is then 0 at a = 0 for b > 0).
  DType bt = is_complex(a->dtype) ? real_part_dtype(a->dtype) : scalar_result_type(a, b);
  return pow(a, scalar_tensor(b, bt, a->device()));
}

Tensor where(const Tensor& cond_in, const Tensor& a_in, const Tensor& b_in) {
  SX_CHECK(cond_in->dtype == DType::Bool, TypeError, "[where] condition must be a bool tensor, got ",
           describe(cond_in));
  // 0-d CPU tensors as numbers (see binary), on the device of the first operand that is not one.
  Device dev = !number(a_in) ? a_in->device() : !number(b_in) ? b_in->device() : cond_in->device();
  Tensor cond = number_on(cond_in, dev), a = number_on(a_in, dev), b = number_on(b_in, dev);
  check_same_device("where", cond, a);
  check_same_device("where", cond, b);
  DType ct = result_type(a, b);
  Shape shape = broadcast_shapes(broadcast_shapes(cond->shape, a->shape, "where"), b->shape, "where");
  if (is_complex(ct)) [[unlikely]] return complex_where(cond, to_dtype(a, ct), to_dtype(b, ct));
  Tensor out = empty(shape, ct, a->device());
  kern::where(out->device())(out, expand_view(cond, shape), expand_view(cast_nograd(a, ct), shape),
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

Tensor nan_to_num(const Tensor& x, double nan, double posinf, double neginf) {
  SX_CHECK(is_floating(x->dtype), TypeError, "[nan_to_num] expected a floating tensor, got ", describe(x));
  // Even bounds: the sheet's op (one pass over any strides, with its gradient).
  if (neginf == -posinf) return unary(UnaryOp::NanToNum, x, nan, posinf);
  const Device dev = x->device();
  if (kern::nan_to_num.has(dev.type) && !needs_grad({&x})) {
    Tensor out = empty(x->shape, x->dtype, dev);
    kern::nan_to_num(dev)(out, contiguous(x), nan, posinf, neginf);
    return out;
  }
  Tensor out = unary(UnaryOp::NanToNum, x, nan, posinf);  // -inf went to -posinf
  Tensor at = binary(BinaryOp::Eq, x, scalar_tensor(Scalar(-INFINITY), x->dtype, dev));
  return where(at, scalar_tensor(Scalar(neginf), x->dtype, dev), out);
}

Tensor clamp(const Tensor& x, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  SX_CHECK(lo || hi, ValueError, "[clamp] at least one of min and max must be given");
  if (DType t = clamp_type(x, lo, hi); t != x->dtype) return clamp(to_dtype(x, t), lo, hi);
  Tensor out = empty(x->shape, x->dtype, x->device());
  kern::clamp(x->device())(out, x, lo ? lo->to<double>() : 0, hi ? hi->to<double>() : 0, bool(lo), bool(hi));
  if (!is_floating(x->dtype) || !needs_grad({&x})) return out;
  Saved sx(x);
  double l = lo ? lo->to<double>() : -INFINITY, h = hi ? hi->to<double>() : INFINITY;
  return record("ClampBackward", {x}, out, [sx, l, h](const Tensor& g) {
    const Tensor& v = sx.get();
    Tensor inside = binary(BinaryOp::And, binary(BinaryOp::Ge, v, scalar_tensor(l, v->dtype)),
                           binary(BinaryOp::Le, v, scalar_tensor(h, v->dtype, v->device())));
    return TensorList{mul(g, to_dtype(inside, g->dtype))};
  });
}

Tensor clamp_tensor(const Tensor& x, const std::optional<Tensor>& lo, const std::optional<Tensor>& hi) {
  SX_CHECK(lo || hi, ValueError, "[clamp] at least one of min and max must be given");
  const Tensor& l = lo ? *lo : x;
  const Tensor& h = hi ? *hi : x;
  bool fused = kern::clamp_tensor.has(x->device().type) && l->dtype == x->dtype && h->dtype == x->dtype &&
               l->device() == x->device() && h->device() == x->device() && !needs_grad({&x, &l, &h});
  if (fused) {
    Shape shape = broadcast_shapes(broadcast_shapes(x->shape, l->shape, "clamp"), h->shape, "clamp");
    Tensor out = empty(shape, x->dtype, x->device());
    kern::clamp_tensor(out->device())(out, expand_view(x, shape), expand_view(l, shape), expand_view(h, shape),
                                      bool(lo), bool(hi));
    return out;
  }
  // where(), not maximum(): at ties x keeps the whole gradient
  Tensor r = x;
  if (lo) r = where(binary(BinaryOp::Or, binary(BinaryOp::Lt, r, l), unary(UnaryOp::IsNan, l)), l, r);
  if (hi) r = where(binary(BinaryOp::Or, binary(BinaryOp::Gt, r, h), unary(UnaryOp::IsNan, h)), h, r);
  return r;
}

// One pass of the lerp kernel when the operands share a floating dtype and no gradient is needed;
// otherwise the composition of public ops, whose tape gives the gradient.
Tensor lerp(const Tensor& a, const Tensor& b, const Tensor& w) {
  bool fused = kern::lerp.has(a->device().type) && is_floating(a->dtype) && b->dtype == a->dtype &&
               w->dtype == a->dtype && b->device() == a->device() && w->device() == a->device() &&
               !needs_grad({&a, &b, &w});
  if (!fused) return add(a, mul(w, sub(b, a)));
  Shape shape = broadcast_shapes(broadcast_shapes(a->shape, b->shape, "lerp"), w->shape, "lerp");
  Tensor out = empty(shape, a->dtype, a->device());
  kern::lerp(out->device())(out, expand_view(a, shape), expand_view(b, shape), expand_view(w, shape));
  return out;
}

// x * 2**e in the operands' promoted dtype (float32 for two integer operands), as PyTorch's; the
// gradient follows from mul and pow.
Tensor ldexp(const Tensor& x, const Tensor& e) {
  DType t = result_type(x, e);
  if (!is_floating(t)) t = default_float_dtype();
  Tensor two = scalar_tensor(Scalar(2.0), t, e->device());
  return mul(to_dtype(x, t), pow(two, to_dtype(e, t)));
}

}  // namespace sx
