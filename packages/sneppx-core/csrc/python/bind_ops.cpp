// Op bindings: each op is a module function and, where PyTorch has one, a Tensor method.
#include "python/convert.h"
#include "core/default_dtype.h"

#include "ops/common.h"
#include "ops/fft.h"
#include "ops/unary_defs.h"

namespace sx {
using namespace py_conv;

namespace {
using Cls = py::class_<TensorImpl, Tensor>;

// The first annotation names the tensor argument: the method form takes it as self.
template <typename F>
void both(py::module_& m, Cls& cls, const char* name, F f) {
  m.def(name, f);
  cls.def(name, f);
}
template <typename F, typename... Rest>
void both(py::module_& m, Cls& cls, const char* name, F f, const py::arg& self, const Rest&... rest) {
  m.def(name, f, self, rest...);
  cls.def(name, f, rest...);
}

std::optional<int64_t> opt_int(py::handle h) {
  if (h.is_none()) return std::nullopt;
  return h.cast<int64_t>();
}

// x.op_(): into x's memory where unary_into allows; otherwise computed out of place (from
// inplace_source) and copied back with copy_'s checks.
Tensor unary_inplace(UnaryOp op, const Tensor& x, double p0, double p1) {
  if (unary_into(op, x, p0, p1)) return x;
  Tensor r = unary(op, inplace_source(x), p0, p1);
  check_inplace_cast((std::string(unary_info(op).name) + "_").c_str(), r->dtype, x->dtype);
  assign_inplace(x, r, "copy_");
  return x;
}

// Binds one definition of the formula sheet as a module function, a Tensor method and (for all but
// predicates) the method's in-place form, with its parameters as keyword arguments (`functional`
// entries are made in Python from _unary_ops()).
template <typename D>
void bind_unary(py::module_& m, Cls& cls, UnaryOp op) {
  if constexpr (D::api != Api::Internal) {
    std::string doc = std::string("Elementwise ") + D::name + " (defined in the unary formula sheet).";
    std::string name_ = std::string(D::name) + "_", doc_ = "In-place form of ``" + std::string(D::name) + "``.";
    constexpr bool in_place = D::rule != DRule::Bool;  // predicates have no in-place form
    if constexpr (D::p0 == nullptr) {
      auto f = [op](const Tensor& x) { return unary(op, x); };
      m.def(D::name, f, doc.c_str(), py::arg("input"));
      cls.def(D::name, f, doc.c_str());
      if (in_place) cls.def(name_.c_str(), [op](const Tensor& x) { return unary_inplace(op, x, D::d0, D::d1); }, doc_.c_str());
    } else if constexpr (D::p1 == nullptr) {
      auto f = [op](const Tensor& x, double a) { return unary(op, x, a, D::d1); };
      m.def(D::name, f, doc.c_str(), py::arg("input"), py::arg(D::p0) = D::d0);
      cls.def(D::name, f, doc.c_str(), py::arg(D::p0) = D::d0);
      if (in_place)
        cls.def(name_.c_str(), [op](const Tensor& x, double a) { return unary_inplace(op, x, a, D::d1); }, doc_.c_str(),
                py::arg(D::p0) = D::d0);
    } else {
      auto f = [op](const Tensor& x, double a, double b) { return unary(op, x, a, b); };
      m.def(D::name, f, doc.c_str(), py::arg("input"), py::arg(D::p0) = D::d0, py::arg(D::p1) = D::d1);
      cls.def(D::name, f, doc.c_str(), py::arg(D::p0) = D::d0, py::arg(D::p1) = D::d1);
      if (in_place)
        cls.def(name_.c_str(), [op](const Tensor& x, double a, double b) { return unary_inplace(op, x, a, b); },
                doc_.c_str(), py::arg(D::p0) = D::d0, py::arg(D::p1) = D::d1);
    }
  }
}

double correction_of(py::handle unbiased, py::handle correction) {
  if (!correction.is_none()) return correction.cast<double>();
  if (!unbiased.is_none()) return unbiased.cast<bool>() ? 1.0 : 0.0;
  return 1.0;
}

std::optional<Scalar> opt_scalar(py::handle h, const char* op) {
  if (h.is_none()) return std::nullopt;
  return to_scalar(h, op);
}
// x.view(dtype): x's bytes read as dtype, sharing its storage (PyTorch's rules). With another element size the
// last dim must have stride 1; it and the offset and other strides are rescaled (each must divide evenly). Not
// recorded by autograd (the result does not require grad). A non-bool tensor cannot be viewed as bool here: its
// bytes need not be 0 or 1, which the bool kernels assume.
Tensor view_dtype(const Tensor& x, DType dt) {
  if (dt == x->dtype) return alias_detached(x);
  SX_CHECK(dt != DType::Bool, TypeError, "[view] viewing ", describe(x), " as bool is not supported (its bytes need "
           "not be 0 or 1); use x != 0 or x.to(bool)");
  const int64_t from = int64_t(itemsize(x->dtype)), to = int64_t(itemsize(dt));
  Tensor v = alias_detached(x);
  v->dtype = dt;
  if (from == to) return v;
  SX_CHECK(x->dim() > 0, RuntimeError, "[view] a 0-d ", describe(x), " cannot be viewed as ", dtype_name(dt),
           " (another element size)");
  SX_CHECK(x->strides.back() == 1 || x->shape.back() == 1, RuntimeError, "[view] the last dim of ", describe(x),
           " must have stride 1 to be viewed as ", dtype_name(dt), " (another element size), got stride ",
           x->strides.back());
  auto scale = [&](int64_t n, const char* what) {  // n elements of x's dtype, in elements of dt
    SX_CHECK(n * from % to == 0, RuntimeError, "[view] ", what, " (", n, ") of ", describe(x), " must be divisible by ",
             to / std::min(from, to), " to view ", dtype_name(x->dtype), " as ", dtype_name(dt));
    return n * from / to;
  };
  v->shape.back() = scale(x->shape.back(), "the last dim's size");
  for (size_t d = 0; d + 1 < x->shape.size(); ++d) v->strides[d] = scale(x->strides[d], "a stride");
  v->strides.back() = 1;
  v->offset = scale(x->offset, "the storage offset");
  return v;
}

}  // namespace

void bind_ops(py::module_& m, Cls& cls) {
  auto none = py::none();
  // ---- unary ops and activations: generated from the formula sheet (ops/unary_defs.h)
#define SX_BIND_ENTRY(D) bind_unary<unary_def::D>(m, cls, UnaryOp::D);
  SX_UNARY_OPS(SX_BIND_ENTRY)
#undef SX_BIND_ENTRY
  m.def("_unary_ops", [] {
    py::list out;
    for (int i = 0; i < kNumUnaryOps; ++i) {
      const UnaryInfo& u = unary_info(UnaryOp(i));
      if (u.api == Api::Internal) continue;
      py::list params;
      if (u.p0) params.append(py::make_tuple(u.p0, u.d0));
      if (u.p1) params.append(py::make_tuple(u.p1, u.d1));
      out.append(py::make_tuple(u.name, u.api == Api::Activation ? "activation" : "math", u.rule == DRule::Bool,
                                params, u.fused_grad ? (u.has_d2f ? 2 : 1) : -1));
    }
    return out;
  }, "The unary op table: (name, kind, is_predicate, [(param, default)], max order of the fused gradient or -1).");
  both(m, cls, "gelu", [](const Tensor& x, const std::string& approximate) {
    SX_CHECK(approximate == "none" || approximate == "tanh", ValueError,
             "[gelu] approximate must be 'none' or 'tanh', got '", approximate, "'");
    return unary(approximate == "tanh" ? UnaryOp::GeluTanh : UnaryOp::Gelu, x);
  }, py::arg("input"), py::arg("approximate") = "none");
  // ---- special functions bound by hand: PyTorch's argument order (polygamma(n, input)), an integer
  // parameter without a default (mvlgamma's p), two results (frexp), a composite (ldexp)
  m.def("polygamma", [](int64_t n, const Tensor& x) { return polygamma(n, x); },
        "polygamma(n, input): the n-th derivative of digamma (defined in the unary formula sheet).", py::arg("n"),
        py::arg("input"));
  cls.def("polygamma", [](const Tensor& x, int64_t n) { return polygamma(n, x); }, py::arg("n"));
  cls.def("polygamma_", [](const Tensor& x, int64_t n) {
    SX_CHECK(n >= 0, RuntimeError, "[polygamma_] polygamma(n, x) does not support negative n, got ", n);
    return unary_inplace(UnaryOp::Polygamma, x, double(n), 0.0);
  }, py::arg("n"), "In-place form of ``polygamma``.");
  both(m, cls, "mvlgamma", [](const Tensor& x, int64_t p) { return mvlgamma(x, p); }, py::arg("input"), py::arg("p"));
  cls.def("mvlgamma_", [](const Tensor& x, int64_t p) {
    return inplace_with("mvlgamma_", x, [&](const Tensor& src) { return mvlgamma(src, p); });
  }, py::arg("p"), "In-place form of ``mvlgamma``.");
  m.def("_frexp", [](const Tensor& x) {
    auto [mant, e] = frexp(x);
    return py::make_tuple(mant, e);
  }, py::arg("input"));
  auto ldexp_fn = [](const Tensor& x, py::handle e) {
    return ldexp(x, is_tensor(e) ? e.cast<Tensor>() : operand(e, x, "ldexp"));
  };
  both(m, cls, "ldexp", ldexp_fn, py::arg("input"), py::arg("other"));
  cls.def("ldexp_", [ldexp_fn](const Tensor& x, py::handle e) {
    return inplace_with("ldexp_", x, [&](const Tensor& src) { return ldexp_fn(src, e); });
  }, py::arg("other"), "In-place form of ``ldexp``.");
  m.def("_nan_to_num", &nan_to_num, "nan_to_num with the values for NaN, +inf and -inf given.", py::arg("input"),
        py::arg("nan"), py::arg("posinf"), py::arg("neginf"));
  // ---- binary (the other operand may be a Python number)
#define SX_BINARY(NAME, OP) \
  both(m, cls, NAME, [](const Tensor& x, py::handle y) { return binary(BinaryOp::OP, x, operand(y, x, NAME)); }, py::arg("input"), py::arg("other"))
  SX_BINARY("mul", Mul); SX_BINARY("floor_divide", FloorDiv); SX_BINARY("remainder", Rem);
  SX_BINARY("maximum", Max); SX_BINARY("minimum", Min); SX_BINARY("atan2", Atan2); SX_BINARY("fmod", Fmod);
  SX_BINARY("eq", Eq); SX_BINARY("ne", Ne); SX_BINARY("lt", Lt); SX_BINARY("le", Le); SX_BINARY("gt", Gt);
  SX_BINARY("ge", Ge); SX_BINARY("logical_and", And); SX_BINARY("logical_or", Or); SX_BINARY("logical_xor", Xor);
  SX_BINARY("bitwise_and", BitAnd); SX_BINARY("bitwise_or", BitOr); SX_BINARY("bitwise_xor", BitXor);
  SX_BINARY("bitwise_left_shift", Shl); SX_BINARY("bitwise_right_shift", Shr);
  SX_BINARY("nextafter", NextAfter); SX_BINARY("gcd", Gcd); SX_BINARY("lcm", Lcm);
  both(m, cls, "bitwise_not", [](const Tensor& x) { return bitwise_not(x); }, py::arg("input"));
#undef SX_BINARY
  both(m, cls, "add", [](const Tensor& x, py::handle y, py::handle alpha) {
    Tensor o = operand(y, x, "add");
    return alpha.is_none() ? add(x, o) : add_alpha(x, o, alpha, false, "add");
  }, py::arg("input"), py::arg("other"), py::arg("alpha") = none);
  both(m, cls, "sub", [](const Tensor& x, py::handle y, py::handle alpha) {
    Tensor o = operand(y, x, "sub");
    return alpha.is_none() ? sub(x, o) : add_alpha(x, o, alpha, true, "sub");
  }, py::arg("input"), py::arg("other"), py::arg("alpha") = none);
  both(m, cls, "div", [](const Tensor& x, py::handle y, py::handle rounding_mode) {
    Tensor o = operand(y, x, "div");
    if (rounding_mode.is_none()) return div(x, o);
    std::string mode = rounding_mode.cast<std::string>();
    if (mode == "floor") return binary(BinaryOp::FloorDiv, x, o);
    SX_CHECK(mode == "trunc", ValueError, "[div] rounding_mode must be None, 'trunc' or 'floor', got '", mode, "'");
    Tensor q = div(x, o);
    return is_floating(result_type(x, o)) ? unary(UnaryOp::Trunc, q) : cast_nograd(unary(UnaryOp::Trunc, q), result_type(x, o));
  }, py::arg("input"), py::arg("other"), py::arg("rounding_mode") = none);
  both(m, cls, "pow", [](const Tensor& x, py::handle e) {
    if (is_tensor(e)) return pow(x, e.cast<Tensor>());
    return pow(x, to_scalar(e, "pow"));
  }, py::arg("input"), py::arg("exponent"));
  m.def("where", [](const Tensor& c, py::handle x, py::handle y) {
    Tensor xt = is_tensor(x) ? x.cast<Tensor>() : Tensor();
    Tensor yt = is_tensor(y) ? y.cast<Tensor>() : Tensor();
    if (!xt && !yt) {  // two Python scalars: PyTorch's result type (bool, int64, else the default float)
      auto is_bool = [](py::handle h) { return PyBool_Check(h.ptr()); };
      auto is_int = [&](py::handle h) { return is_bool(h) || PyLong_Check(h.ptr()); };
      SX_CHECK(is_int(x) || PyFloat_Check(x.ptr()), TypeError, "[where] input must be a tensor or a number, got ",
               std::string(py::str(py::type::of(x).attr("__name__"))));
      SX_CHECK(is_int(y) || PyFloat_Check(y.ptr()), TypeError, "[where] other must be a tensor or a number, got ",
               std::string(py::str(py::type::of(y).attr("__name__"))));
      DType dt = is_bool(x) && is_bool(y) ? DType::Bool : is_int(x) && is_int(y) ? DType::Int64 : default_float_dtype();
      xt = to_device(from_data(x, dt), c->device());
    }
    if (!xt) xt = operand(x, yt, "where");
    if (!yt) yt = operand(y, xt, "where");
    return where(c, xt, yt);
  }, py::arg("condition"), py::arg("input"), py::arg("other"));
  cls.def("where", [](const Tensor& x, const Tensor& c, py::handle y) { return where(c, x, operand(y, x, "where")); },
          py::arg("condition"), py::arg("other"));
  both(m, cls, "masked_fill", [](const Tensor& x, const Tensor& mask, py::handle v) {
    return masked_fill(x, mask, to_scalar(v, "masked_fill"));
  }, py::arg("input"), py::arg("mask"), py::arg("value"));
  auto clamp_fn = [](const Tensor& x, py::handle lo, py::handle hi) {
    if (is_tensor(lo) || is_tensor(hi)) {
      auto bound = [&](py::handle b) { return b.is_none() ? std::nullopt : std::optional<Tensor>(operand(b, x, "clamp")); };
      return clamp_tensor(x, bound(lo), bound(hi));
    }
    return clamp(x, opt_scalar(lo, "clamp"), opt_scalar(hi, "clamp"));
  };
  both(m, cls, "clamp", clamp_fn, py::arg("input"), py::arg("min") = none, py::arg("max") = none);
  both(m, cls, "clip", clamp_fn, py::arg("input"), py::arg("min") = none, py::arg("max") = none);
  both(m, cls, "lerp", [](const Tensor& s, const Tensor& e, py::handle w) { return lerp(s, e, operand(w, s, "lerp")); },
       py::arg("input"), py::arg("end"), py::arg("weight"));
  // In-place forms: written straight into x where that is safe (see clamp_into), else computed out of
  // place and copied back.
  auto clamp_inplace = [clamp_fn](const Tensor& x, py::handle lo, py::handle hi) {
    if (!is_tensor(lo) && !is_tensor(hi) && clamp_into(x, opt_scalar(lo, "clamp_"), opt_scalar(hi, "clamp_"))) return x;
    return inplace_with("clamp_", x, [&](const Tensor& src) { return clamp_fn(src, lo, hi); });
  };
  cls.def("clamp_", clamp_inplace, py::arg("min") = none, py::arg("max") = none, "In-place form of ``clamp``.");
  cls.def("clip_", clamp_inplace, py::arg("min") = none, py::arg("max") = none, "In-place form of ``clip``.");
  cls.def("clamp_min_", [clamp_inplace](const Tensor& x, py::handle lo) { return clamp_inplace(x, lo, py::none()); },
          py::arg("min"), "In-place form of ``clamp_min``.");
  cls.def("clamp_max_", [clamp_inplace](const Tensor& x, py::handle hi) { return clamp_inplace(x, py::none(), hi); },
          py::arg("max"), "In-place form of ``clamp_max``.");
  cls.def("lerp_", [](const Tensor& x, const Tensor& e, py::handle w) {
    Tensor wt = operand(w, x, "lerp_");
    if (lerp_into(x, e, wt)) return x;
    return inplace_with("lerp_", x, [&](const Tensor& src) { return lerp(src, e, wt); });
  }, py::arg("end"), py::arg("weight"), "In-place form of ``lerp``.");
  auto addc_inplace = [](bool divide) {
    return [divide](const Tensor& x, const Tensor& t1, const Tensor& t2, py::handle value) {
      const char* op = divide ? "addcdiv_" : "addcmul_";
      if (is_scalar(value) && addcmul_into(x, t1, t2, to_scalar(value, op), divide)) return x;
      return inplace_with(op, x, [&](const Tensor& src) {
        Tensor p = binary(divide ? BinaryOp::Div : BinaryOp::Mul, t1, t2);
        return binary(BinaryOp::Add, src, binary(BinaryOp::Mul, p, operand(value, p, op)));
      });
    };
  };
  cls.def("addcmul_", addc_inplace(false), py::arg("tensor1"), py::arg("tensor2"), py::kw_only(),
          py::arg("value") = 1, "In-place form of ``addcmul``: ``self += value * tensor1 * tensor2``.");
  cls.def("addcdiv_", addc_inplace(true), py::arg("tensor1"), py::arg("tensor2"), py::kw_only(),
          py::arg("value") = 1, "In-place form of ``addcdiv``: ``self += value * tensor1 / tensor2``.");

  // ---- reductions
  both(m, cls, "sum", [](const Tensor& x, py::handle dim, bool keepdim, py::handle dtype) {
    auto dims = opt_dims(dim, "sum");
    auto dt = opt_dtype(dtype);
    ReleaseGilIf nogil(heavy(x));
    return sum(x, dims, keepdim, dt);
  }, py::arg("input"), py::arg("dim") = none, py::arg("keepdim") = false, py::kw_only(), py::arg("dtype") = none);
  both(m, cls, "mean", [](const Tensor& x, py::handle dim, bool keepdim, py::handle dtype) {
    auto dt = opt_dtype(dtype);
    auto dims = opt_dims(dim, "mean");
    ReleaseGilIf nogil(heavy(x));
    return mean(dt ? to_dtype(x, *dt) : x, dims, keepdim);
  }, py::arg("input"), py::arg("dim") = none, py::arg("keepdim") = false, py::kw_only(), py::arg("dtype") = none);
  m.def("_nansum", [](const Tensor& x, py::handle dim, bool keepdim, py::handle dtype) {
    auto dims = opt_dims(dim, "nansum");
    auto dt = opt_dtype(dtype);
    ReleaseGilIf nogil(heavy(x));
    return nansum(x, dims, keepdim, dt);
  }, py::arg("input"), py::arg("dim") = none, py::arg("keepdim") = false, py::arg("dtype") = none);
  both(m, cls, "prod", [](const Tensor& x, py::handle dim, bool keepdim) { return prod(x, opt_int(dim), keepdim); },
       py::arg("input"), py::arg("dim") = none, py::arg("keepdim") = false);
  both(m, cls, "amax", [](const Tensor& x, py::handle dim, bool keepdim) { return amax(x, opt_dims(dim, "amax"), keepdim); },
       py::arg("input"), py::arg("dim") = py::tuple(), py::arg("keepdim") = false);
  both(m, cls, "amin", [](const Tensor& x, py::handle dim, bool keepdim) { return amin(x, opt_dims(dim, "amin"), keepdim); },
       py::arg("input"), py::arg("dim") = py::tuple(), py::arg("keepdim") = false);
  m.def("_max_dim", &max_dim);
  m.def("_min_dim", &min_dim);
  both(m, cls, "argmax", [](const Tensor& x, py::handle dim, bool keepdim) { return argmax(x, opt_int(dim), keepdim); },
       py::arg("input"), py::arg("dim") = none, py::arg("keepdim") = false);
  both(m, cls, "argmin", [](const Tensor& x, py::handle dim, bool keepdim) { return argmin(x, opt_int(dim), keepdim); },
       py::arg("input"), py::arg("dim") = none, py::arg("keepdim") = false);
  both(m, cls, "var", [](const Tensor& x, py::handle dim, py::handle unbiased, bool keepdim, py::handle correction) {
    auto dims = opt_dims(dim, "var");
    double c = correction_of(unbiased, correction);
    ReleaseGilIf nogil(heavy(x));
    return var(x, dims, c, keepdim);
  }, py::arg("input"), py::arg("dim") = none, py::arg("unbiased") = none, py::arg("keepdim") = false, py::kw_only(),
       py::arg("correction") = none);
  both(m, cls, "std", [](const Tensor& x, py::handle dim, py::handle unbiased, bool keepdim, py::handle correction) {
    auto dims = opt_dims(dim, "std");
    double c = correction_of(unbiased, correction);
    ReleaseGilIf nogil(heavy(x));
    return std_(x, dims, c, keepdim);
  }, py::arg("input"), py::arg("dim") = none, py::arg("unbiased") = none, py::arg("keepdim") = false, py::kw_only(),
       py::arg("correction") = none);
  both(m, cls, "logsumexp", [](const Tensor& x, py::handle dim, bool keepdim) {
    auto dims = opt_dims(dim, "logsumexp");
    ReleaseGilIf nogil(heavy(x));
    return logsumexp(x, dims, keepdim);
  }, py::arg("input"), py::arg("dim"), py::arg("keepdim") = false);
  both(m, cls, "norm", [](const Tensor& x, py::handle p, py::handle dim, bool keepdim) {
    double pv = p.is_none() ? 2.0 : (py::isinstance<py::str>(p) ? (p.cast<std::string>() == "fro" ? 2.0 : throw ValueError("[norm] unsupported p")) : p.cast<double>());
    auto dims = opt_dims(dim, "norm");
    ReleaseGilIf nogil(heavy(x));
    return norm(x, pv, dims, keepdim);
  }, py::arg("input"), py::arg("p") = 2.0, py::arg("dim") = none, py::arg("keepdim") = false);
  both(m, cls, "all", [](const Tensor& x, py::handle dim, bool keepdim) { return all(x, opt_dims(dim, "all"), keepdim); },
       py::arg("input"), py::arg("dim") = none, py::arg("keepdim") = false);
  both(m, cls, "any", [](const Tensor& x, py::handle dim, bool keepdim) { return any(x, opt_dims(dim, "any"), keepdim); },
       py::arg("input"), py::arg("dim") = none, py::arg("keepdim") = false);
  both(m, cls, "cumsum", [](const Tensor& x, int64_t dim) {
    ReleaseGilIf nogil(heavy(x));
    return cumsum(x, dim);
  }, py::arg("input"), py::arg("dim"));
  m.def("cumprod", [](const Tensor& x, int64_t dim) {
    ReleaseGilIf nogil(heavy(x));
    return cumprod(x, dim);
  }, py::arg("input"), py::arg("dim"));
  m.def("logcumsumexp", [](const Tensor& x, int64_t dim) {
    ReleaseGilIf nogil(heavy(x));
    return logcumsumexp(x, dim);
  }, py::arg("input"), py::arg("dim"));
  m.def("_cum_extreme", [](const Tensor& x, int64_t dim, bool is_max) {
    ReleaseGilIf nogil(heavy(x));
    return cum_extreme(x, dim, is_max);
  }, py::arg("input"), py::arg("dim"), py::arg("is_max"));

  // ---- linear algebra
  both(m, cls, "matmul", [](py::handle a, py::handle b) -> py::object {
    if (!is_tensor(a) || !is_tensor(b)) return sparse_call("matmul", a, b);
    Tensor x = a.cast<Tensor>(), y = b.cast<Tensor>(), r;
    {
      ReleaseGilIf nogil(heavy(x) || heavy(y));
      r = matmul(x, y);
    }
    return py::cast(r);
  }, py::arg("input"), py::arg("other"));
  both(m, cls, "mm", [](py::handle a, py::handle b) -> py::object {
    if (!is_tensor(a) || !is_tensor(b)) return sparse_call("mm", a, b);
    Tensor x = a.cast<Tensor>(), y = b.cast<Tensor>(), r;
    SX_CHECK(x->dim() == 2 && y->dim() == 2, ValueError, "[mm] expected 2-D tensors, got ", shape_str(x->shape), " and ", shape_str(y->shape));
    {
      ReleaseGilIf nogil(heavy(x) || heavy(y));
      r = matmul(x, y);
    }
    return py::cast(r);
  }, py::arg("input"), py::arg("mat2"));
  both(m, cls, "bmm", [](const Tensor& x, const Tensor& y) {
    ReleaseGilIf nogil(heavy(x) || heavy(y));
    return bmm(x, y);
  }, py::arg("input"), py::arg("mat2"));
  both(m, cls, "outer", &outer, py::arg("input"), py::arg("vec2"));
  both(m, cls, "dot", &dot, py::arg("input"), py::arg("other"));

  // ---- shapes
  m.def("reshape", [](const Tensor& x, py::handle s) { return reshape(x, int_list(s, "reshape")); }, py::arg("input"), py::arg("shape"));
  cls.def("reshape", [](const Tensor& x, py::args s) { return reshape(x, shape_args(s, "reshape")); });
  cls.def("view", [](const Tensor& x, py::args s) {
    if (s.size() == 1 && !PyLong_Check(s[0].ptr()) && !py::isinstance<py::tuple>(s[0]) && !py::isinstance<py::list>(s[0]))
      return view_dtype(x, parse_dtype(s[0]));  // the bytes reinterpreted (module.cpp)
    return view(x, shape_args(s, "view"));
  });
  both(m, cls, "transpose", &transpose, py::arg("input"), py::arg("dim0"), py::arg("dim1"));
  both(m, cls, "swapaxes", &transpose, py::arg("input"), py::arg("axis0"), py::arg("axis1"));
  m.def("permute", [](const Tensor& x, py::handle d) { return permute(x, int_list(d, "permute")); }, py::arg("input"), py::arg("dims"));
  cls.def("permute", [](const Tensor& x, py::args d) { return permute(x, shape_args(d, "permute")); });
  both(m, cls, "squeeze", [](const Tensor& x, py::handle dim) { return squeeze(x, opt_dims(dim, "squeeze")); },
       py::arg("input"), py::arg("dim") = none);
  both(m, cls, "unsqueeze", &unsqueeze, py::arg("input"), py::arg("dim"));
  cls.def("expand", [](const Tensor& x, py::args s) { return expand(x, shape_args(s, "expand")); });
  both(m, cls, "broadcast_to", [](const Tensor& x, py::handle s) { return expand(x, int_list(s, "broadcast_to")); },
       py::arg("input"), py::arg("size"));
  cls.def("expand_as", [](const Tensor& x, const Tensor& o) { return expand(x, o->shape); });
  both(m, cls, "flatten", &flatten, py::arg("input"), py::arg("start_dim") = 0, py::arg("end_dim") = -1);
  both(m, cls, "unflatten", [](const Tensor& x, int64_t d, py::handle s) { return unflatten(x, d, int_list(s, "unflatten")); },
       py::arg("input"), py::arg("dim"), py::arg("sizes"));
  both(m, cls, "narrow", &narrow, py::arg("input"), py::arg("dim"), py::arg("start"), py::arg("length"));
  both(m, cls, "select", &select, py::arg("input"), py::arg("dim"), py::arg("index"));
  both(m, cls, "contiguous", [](const Tensor& x) {
    ReleaseGilIf nogil(heavy(x) && !x->is_contiguous());
    return contiguous(x);
  });
  both(m, cls, "clone", [](const Tensor& x) {
    ReleaseGilIf nogil(heavy(x));
    return clone(x);
  });
  m.def("detach", &detach);
  m.def("cat", [](const TensorList& xs, int64_t dim) {
    ReleaseGilIf nogil(heavy(xs));
    return cat(xs, dim);
  }, py::arg("tensors"), py::arg("dim") = 0);
  m.def("concat", [](const TensorList& xs, int64_t dim) { return cat(xs, dim); }, py::arg("tensors"), py::arg("dim") = 0);
  m.def("stack", [](const TensorList& xs, int64_t dim) { return stack(xs, dim); }, py::arg("tensors"), py::arg("dim") = 0);
  both(m, cls, "split", [](const Tensor& x, py::handle s, int64_t dim) {
    TensorList r = PyLong_Check(s.ptr()) ? split_size(x, s.cast<int64_t>(), dim) : split(x, int_list(s, "split"), dim);
    return py::tuple(py::cast(r));
  }, py::arg("tensor"), py::arg("split_size_or_sections"), py::arg("dim") = 0);
  both(m, cls, "chunk", [](const Tensor& x, int64_t c, int64_t dim) { return py::tuple(py::cast(chunk(x, c, dim))); },
       py::arg("input"), py::arg("chunks"), py::arg("dim") = 0);
  both(m, cls, "unbind", [](const Tensor& x, int64_t dim) {
    TensorList views = unbind(x, dim);
    py::tuple out(views.size());
    for (size_t i = 0; i < views.size(); ++i) out[i] = py::cast(std::move(views[i]));
    return out;
  }, py::arg("input"), py::arg("dim") = 0);
  both(m, cls, "tril", &tril, py::arg("input"), py::arg("diagonal") = 0);
  both(m, cls, "triu", &triu, py::arg("input"), py::arg("diagonal") = 0);
  cls.def("tril_", [](const Tensor& x, int64_t k) {
    return tri_into(x, k, true) ? x : inplace_with("tril_", x, [&](const Tensor& src) { return tril(src, k); });
  }, py::arg("diagonal") = 0, "In-place form of ``tril``.");
  cls.def("triu_", [](const Tensor& x, int64_t k) {
    return tri_into(x, k, false) ? x : inplace_with("triu_", x, [&](const Tensor& src) { return triu(src, k); });
  }, py::arg("diagonal") = 0, "In-place form of ``triu``.");
  both(m, cls, "flip", [](const Tensor& x, py::handle d) { return flip(x, int_list(d, "flip")); }, py::arg("input"), py::arg("dims"));
  m.def("_diagonal", &diagonal, py::arg("input"), py::arg("offset"), py::arg("dim1"), py::arg("dim2"));
  m.def("_diag_embed", &diag_embed, py::arg("input"), py::arg("offset"), py::arg("dim1"), py::arg("dim2"));
  both(m, cls, "trace", &trace, py::arg("input"), "Sum of the main diagonal of a matrix.");
  both(m, cls, "repeat_interleave", [](const Tensor& x, py::handle repeats, py::handle dim, py::handle output_size) {
    auto d = opt_int(dim), n = opt_int(output_size);
    if (repeats.is_none())  // repeat_interleave(counts): each position i of counts, counts[i] times
      return repeat_interleave(to_device(arange(0, double(x->numel()), 1, DType::Int64), x->device()), x, 0, n);
    if (PyLong_Check(repeats.ptr())) {
      int overflow = 0;
      const long long r = PyLong_AsLongLongAndOverflow(repeats.ptr(), &overflow);
      SX_CHECK(!overflow, ValueError, "[repeat_interleave] repeats ", std::string(py::str(repeats)),
               " does not fit in an int64");
      return repeat_interleave(x, int64_t(r), d, n);
    }
    return repeat_interleave(x, is_tensor(repeats) ? repeats.cast<Tensor>() : from_data(repeats, std::nullopt), d, n);
  }, py::arg("input"), py::arg("repeats") = none, py::arg("dim") = none, py::kw_only(), py::arg("output_size") = none,
     "Repeats each element (each slice along ``dim``) ``repeats`` times: an int, or one count each as a 1-d "
     "integer tensor or sequence. Without ``dim`` the input is flattened first; with only a 1-d tensor of "
     "counts, repeats each of its positions that many times.");
  both(m, cls, "roll", [](const Tensor& x, py::handle s, py::handle d) {
    return roll(x, int_list(s, "roll"), d.is_none() ? IntList{} : int_list(d, "roll"));
  }, py::arg("input"), py::arg("shifts"), py::arg("dims") = none);
  cls.def("repeat", [](const Tensor& x, py::args r) { return repeat(x, shape_args(r, "repeat")); });
  m.def("movedim", [](const Tensor& x, int64_t src, int64_t dst) {
    int64_t s = wrap_dim(src, x->dim(), "movedim"), d = wrap_dim(dst, x->dim(), "movedim");
    IntList p;
    for (int64_t i = 0; i < x->dim(); ++i) if (i != s) p.push_back(i);
    p.insert(p.begin() + d, s);
    return permute(x, p);
  }, py::arg("input"), py::arg("source"), py::arg("destination"));

  // ---- indexing and sorting
  both(m, cls, "gather", &gather, py::arg("input"), py::arg("dim"), py::arg("index"));
  both(m, cls, "scatter", [](const Tensor& x, int64_t dim, const Tensor& idx, py::handle src) {
    return scatter(x, dim, idx, operand(src, x, "scatter"));
  }, py::arg("input"), py::arg("dim"), py::arg("index"), py::arg("src"));
  both(m, cls, "scatter_add", &scatter_add, py::arg("input"), py::arg("dim"), py::arg("index"), py::arg("src"));
  cls.def("scatter_", [](const Tensor& x, int64_t dim, const Tensor& idx, py::handle src) {
    Tensor s = operand(src, x, "scatter_");
    if (scatter_into(x, dim, idx, s, false)) return x;
    return inplace_with("scatter_", x, [&](const Tensor& in) { return scatter(in, dim, idx, s); });
  }, py::arg("dim"), py::arg("index"), py::arg("src"), "In-place form of ``scatter``.");
  cls.def("scatter_add_", [](const Tensor& x, int64_t dim, const Tensor& idx, const Tensor& src) {
    if (scatter_into(x, dim, idx, src, true)) return x;
    return inplace_with("scatter_add_", x, [&](const Tensor& in) { return scatter_add(in, dim, idx, src); });
  }, py::arg("dim"), py::arg("index"), py::arg("src"), "In-place form of ``scatter_add``.");
  m.def("scatter_reduce_extreme", &scatter_reduce_extreme, py::arg("input"), py::arg("dim"), py::arg("index"),
        py::arg("src"), py::arg("is_max"), py::arg("include_self"));
  m.def("scatter_reduce_prod", &scatter_reduce_prod, py::arg("input"), py::arg("dim"), py::arg("index"),
        py::arg("src"), py::arg("include_self"));
  both(m, cls, "index_select", &index_select, py::arg("input"), py::arg("dim"), py::arg("index"));
  both(m, cls, "index_add", &index_add, py::arg("input"), py::arg("dim"), py::arg("index"), py::arg("source"),
       py::kw_only(), py::arg("alpha") = 1.0);
  cls.def("index_add_", [](const Tensor& x, int64_t dim, const Tensor& idx, const Tensor& src, double alpha) {
    if (index_add_into(x, dim, idx, src, alpha)) return x;
    return inplace_with("index_add_", x, [&](const Tensor& in) { return index_add(in, dim, idx, src, alpha); });
  }, py::arg("dim"), py::arg("index"), py::arg("source"), py::kw_only(), py::arg("alpha") = 1.0,
          "In-place form of ``index_add``.");
  m.def("one_hot", &one_hot, py::arg("tensor"), py::arg("num_classes") = -1);
  m.def("_topk", &topk);
  m.def("_sort", &sort);
  m.def("_kthvalue", &kthvalue, py::arg("input"), py::arg("k"), py::arg("dim"), py::arg("keepdim"),
        py::arg("nan_wins") = false);
  both(m, cls, "argsort", [](const Tensor& x, int64_t dim, bool descending, bool stable) {
    return sort(x, dim, descending, stable).second;
  }, py::arg("input"), py::arg("dim") = -1, py::arg("descending") = false, py::arg("stable") = false);
  both(m, cls, "nonzero", &nonzero);
  both(m, cls, "masked_select", [](const Tensor& x, const Tensor& mask) {
    Shape s = broadcast_shapes(x->shape, mask->shape, "masked_select");
    Tensor xe = expand(x, s), me = contiguous(expand_view(mask, s));
    if (!s.empty() && mask->dtype == DType::Bool) return mask_front(xe, me);
    Tensor nz = nonzero(me);
    TensorList idx;
    for (int64_t i = 0; i < nz->shape[1]; ++i) idx.push_back(select(nz, 1, i));
    return index_front(xe, idx);
  }, py::arg("input"), py::arg("mask"));
  m.def("_index_front", &index_front);
  m.def("_index_put_front", &index_put_front);
  m.def("_index_copy", &index_copy, py::arg("input"), py::arg("dim"), py::arg("index"), py::arg("source"));
  m.def("_index_copy_", [](const Tensor& x, int64_t dim, const Tensor& idx, const Tensor& src) {
    if (index_copy_into(x, dim, idx, src)) return x;
    return inplace_with("index_copy_", x, [&](const Tensor& in) { return index_copy(in, dim, idx, src); });
  }, py::arg("input"), py::arg("dim"), py::arg("index"), py::arg("source"));

  // ---- conversion, factories and random numbers (Python wraps these with PyTorch signatures)
  m.def("_to_dtype", &to_dtype);
  m.def("_to_device", [](const Tensor& x, py::handle d, bool non_blocking) {
    return to_device(x, parse_device(d), non_blocking);
  }, py::arg("x"), py::arg("device"), py::arg("non_blocking") = false);
  m.def("_pin_memory", &pin_memory);
  m.def("_is_pinned", [](const Tensor& x) { return x->storage && x->storage->pinned; });
  m.def("_full", [](const IntList& s, py::handle v, py::handle dt, py::handle dev) {
    Scalar sv = to_scalar(v, "full");
    DType d = dt.is_none() ? (sv.kind == Scalar::Float ? default_float_dtype() : (sv.kind == Scalar::Int ? DType::Int64 : DType::Bool)) : parse_dtype(dt);
    return full(s, sv, d, parse_device(dev));
  });
  m.def("_zeros", [](const IntList& s, py::handle dt, py::handle dev) {
    return zeros(s, dt.is_none() ? default_float_dtype() : parse_dtype(dt), parse_device(dev));
  });
  m.def("_empty", [](const IntList& s, py::handle dt, py::handle dev) {
    return empty(s, dt.is_none() ? default_float_dtype() : parse_dtype(dt), parse_device(dev));
  });
  m.def("_arange", &arange);
  m.def("_linspace", &linspace);
  m.def("_eye", &eye);
  m.def("_tri_indices", &tri_indices, py::arg("row"), py::arg("col"), py::arg("offset"), py::arg("upper"));
  m.def("_rand", [](const IntList& s, DType dt, py::handle g) { return rand(s, dt, opt_generator(g)); });
  m.def("_randn", [](const IntList& s, DType dt, py::handle g) { return randn(s, dt, opt_generator(g)); });
  m.def("_randint", [](int64_t lo, int64_t hi, const IntList& s, DType dt, py::handle g) { return randint(lo, hi, s, dt, opt_generator(g)); });
  m.def("_randperm", [](int64_t n, DType dt, py::handle g) { return randperm(n, dt, opt_generator(g)); });
  both(m, cls, "multinomial", [](const Tensor& p, int64_t n, bool replacement, py::handle g) {
    return multinomial(p, n, replacement, opt_generator(g));
  }, py::arg("input"), py::arg("num_samples"), py::arg("replacement") = false, py::kw_only(), py::arg("generator") = none);
  both(m, cls, "bernoulli", [](const Tensor& p, py::handle g) { return bernoulli(p, opt_generator(g)); },
       py::arg("input"), py::kw_only(), py::arg("generator") = none);
  // ---- complex tensors (ops/complex.cpp); Tensor.real / .imag / .conj / .angle are set in Python
  m.def("view_as_real", &view_as_real, py::arg("input"),
        "The (real, imaginary) pairs of a complex tensor as a real tensor with a last dim of 2, sharing its memory.");
  m.def("view_as_complex", &view_as_complex, py::arg("input"),
        "A float32 / float64 tensor with a last dim of 2 (stride 1) as a complex tensor, sharing its memory.");
  m.def("complex", &complex, py::arg("real"), py::arg("imag"), "real + i imag (float32 or float64 parts, broadcast).");
  m.def("polar", &polar, py::arg("abs"), py::arg("angle"), "abs * (cos(angle) + i sin(angle)).");
  m.def("_real", &real);
  m.def("_imag", &imag);
  m.def("_conj", &conj);
  // ---- Fourier transforms along one dim (ops/fft.h); sneppx_core.fft adds the n-d forms and the gradients
  m.def("_fft_c2c", &fft_c2c, py::arg("input"), py::arg("dim"), py::arg("inverse"), py::arg("scale"));
  m.def("_fft_r2c", &fft_r2c, py::arg("input"), py::arg("dim"), py::arg("scale"));
  m.def("_fft_c2r", &fft_c2r, py::arg("input"), py::arg("dim"), py::arg("n"), py::arg("scale"));
  m.def("_complex_angle", &complex_angle);
  m.def("_grad", [](const TensorList& outs, const TensorList& ins, py::handle grad_outs, py::handle retain, bool create, bool allow_unused) {
    TensorList gs;
    for (size_t i = 0; i < outs.size(); ++i) {
      py::handle g = grad_outs.is_none() ? py::handle(Py_None) : py::handle(py::list(grad_outs.cast<py::sequence>())[i]);
      if (g.is_none()) {
        SX_CHECK(outs[i]->numel() == 1, RuntimeError, "[grad] grad can be implicitly created only for scalar outputs; pass grad_outputs");
        gs.push_back(ones(outs[i]->shape, outs[i]->dtype));
      } else {
        Tensor gt = g.cast<Tensor>();
        SX_CHECK(gt->shape == outs[i]->shape, ValueError, "[grad] grad_outputs[", i, "] has shape ",
                 shape_str(gt->shape), " but the output has shape ", shape_str(outs[i]->shape));
        gs.push_back(to_dtype(gt, outs[i]->dtype));  // seeds take the outputs' dtypes, as in PyTorch
      }
    }
    bool keep = retain.is_none() ? create : retain.cast<bool>();
    return run_backward(outs, gs, keep, create, ins, allow_unused);
  });
}

}  // namespace sx
