// The unary formula sheet: every elementwise op of one tensor, activations included, is defined
// here once: its name, its dtype rule, its forward formula and its gradient. Everything else follows
// from these definitions: the UnaryOp enum, the CPU kernels (cpu/unary_impl.h instantiates `f`,
// `df` and `d2f`), the op with its autograd (ops/unary.cpp), the Python functions, Tensor methods,
// in-place methods and `functional` entries (python/bind_ops.cpp, functional.py).
//
// A definition is a struct with
//   name                  the op's name (Python function, Tensor method, error messages)
//   rule                  result dtype: Same (input's), Signed (input's, bool rejected),
//                         Float (integers compute in float32), Bool (a predicate)
//   api                   Math: sx.x, Tensor.x, Tensor.x_; Activation: also functional.x;
//                         Internal: reached only through another entry point
//   p0, p1 / d0, d1       names and defaults of up to two float parameters (nullptr: none)
//   f(x, a, b)            the value, on the compute type C (float for float16/bfloat16)
// and one gradient form:
//   vjp(g, x, y, a, b)    written with public ops (differentiable to any order), or
//   df(x, a, b)           f'(x), run by a fused kernel as g * f'(x), and optionally
//   d2f(x, a, b)          f''(x), which makes the fused backward itself differentiable once.
// A float formula valid on part of the line only (the trig polynomials, exp) also declares
//   out_of_range(x)       true where `f` on float is not accurate (out_of_range(x, a, b) where that
//                         depends on the parameters); the CPU kernels compute those elements with the
//                         double formula instead, or with
//   exact(x)              where declared: the formula for those elements, for a definition whose
//                         double `f` is partial too (exp: <cmath>'s) or that has one (erfinv's tails).
// An op that only moves the sign bit (neg, abs) declares
//   sign_keep, sign_flip  float16 / bfloat16 run it on the bits: (bits & sign_keep) ^ sign_flip, exact in
//                         those dtypes (a NaN stays a NaN of the same payload).
// Predicates (rule Bool) have no gradient.
//
// Adding a unary op: add a struct below and its name to SX_UNARY_OPS; add a case to the op table
// in tests/ops_elementwise.py. Nothing else.
#pragma once
#include <cmath>
#include <type_traits>

#include "ops/ops.h"
#include "ops/scalar_math.h"
#include "ops/special_math.h"
#ifndef __CUDACC__
#include "cpu/vspecial.h"
#endif

namespace sx {

#define SX_UNARY_OPS(X)                                                                                   \
  X(Neg) X(Abs) X(Square) X(Sign) X(Floor) X(Ceil) X(Round) X(Trunc) X(Frac) X(Not) X(IsNan) X(IsInf)     \
  X(IsFinite) X(SignBit) X(NanToNum)                                                                      \
  X(Exp) X(Exp2) X(Expm1) X(Log) X(Log2) X(Log10) X(Log1p) X(Sqrt) X(Rsqrt) X(Reciprocal)                 \
  X(Sin) X(Cos) X(Tan) X(Asin) X(Acos) X(Atan) X(Sinh) X(Cosh) X(Erf) X(Erfc)                             \
  X(Tanh) X(Sigmoid) X(Relu) X(Gelu) X(GeluTanh) X(Silu) X(LeakyRelu) X(Elu) X(Celu) X(Selu)             \
  X(Softplus) X(Mish) X(Hardtanh) X(Hardsigmoid) X(Hardswish) X(Relu6) X(LogSigmoid) X(Softsign) X(PowScalar)   \
  X(Lgamma) X(Digamma) X(Polygamma) X(Erfinv) X(I0) X(I1) X(FrexpMantissa) X(FrexpExponent) X(BitNot)

enum class UnaryOp : uint8_t {
#define SX_ENUM_ENTRY(D) D,
  SX_UNARY_OPS(SX_ENUM_ENTRY)
#undef SX_ENUM_ENTRY
};

enum class DRule : uint8_t { Same, Signed, Float, Bool };
Tensor unary(UnaryOp op, const Tensor& x, double p0, double p1);
enum class Api : uint8_t { Math, Activation, Internal };

namespace unary_def {
SX_SHEET_NS {

struct Base {
  static constexpr DRule rule = DRule::Float;
  static constexpr Api api = Api::Math;
  static constexpr const char* p0 = nullptr;
  static constexpr const char* p1 = nullptr;
  static constexpr double d0 = 0, d1 = 0;
};
template <typename C> constexpr bool is_int = std::is_integral_v<C>;

// ---- sign-like and integer-valued: gradient zero almost everywhere
struct Neg : Base {
  static constexpr const char* name = "neg";
  static constexpr DRule rule = DRule::Signed;
  static constexpr uint16_t sign_keep = 0xffff, sign_flip = 0x8000;
  template <typename C> SX_HD static C f(C x, C, C) { return -x; }
  static Tensor vjp(const Tensor& g, const Tensor&, const Tensor&, double, double) { return neg(g); }
};
struct Abs : Base {
  static constexpr const char* name = "abs";
  static constexpr DRule rule = DRule::Same;
  static constexpr uint16_t sign_keep = 0x7fff, sign_flip = 0;
  template <typename C> SX_HD static C f(C x, C, C) {
    if constexpr (std::is_floating_point_v<C>) return std::fabs(x);  // |-0.0| is +0.0
    else return x < C(0) ? -x : x;
  }
  static Tensor vjp(const Tensor& g, const Tensor& x, const Tensor&, double, double) { return mul(g, sign(x)); }
};
struct Square : Base {
  static constexpr const char* name = "square";
  static constexpr DRule rule = DRule::Same;
  template <typename C> SX_HD static C f(C x, C, C) { return x * x; }
  static Tensor vjp(const Tensor& g, const Tensor& x, const Tensor&, double, double) {
    return mul(g, mul(x, Scalar(2.0)));
  }
};
#define SX_ZERO_GRAD(NAME, EXPR, INT_EXPR)                        \
  static constexpr const char* name = NAME;                       \
  static constexpr DRule rule = DRule::Same;                      \
  template <typename C> SX_HD static C f(C x, C, C) {                   \
    if constexpr (is_int<C>) return INT_EXPR;                     \
    else return EXPR;                                             \
  }                                                               \
  template <typename C> SX_HD static C df(C, C, C) { return C(0); }     \
  template <typename C> SX_HD static C d2f(C, C, C) { return C(0); }
struct Sign : Base { SX_ZERO_GRAD("sign", C((C(0) < x) - (x < C(0))), C((C(0) < x) - (x < C(0)))) };
struct Floor : Base { SX_ZERO_GRAD("floor", std::floor(x), x) };
struct Ceil : Base { SX_ZERO_GRAD("ceil", std::ceil(x), x) };
struct Round : Base { SX_ZERO_GRAD("round", std::nearbyint(x), x) };
struct Trunc : Base { SX_ZERO_GRAD("trunc", std::trunc(x), x) };
#undef SX_ZERO_GRAD
struct Frac : Base {  // x - trunc(x), of x's sign; integers have none
  static constexpr const char* name = "frac";
  static constexpr DRule rule = DRule::Same;
  template <typename C> SX_HD static C f(C x, C, C) {
    if constexpr (is_int<C>) return C(0);
    else return x - std::trunc(x);
  }
  template <typename C> SX_HD static C df(C, C, C) { return C(1); }
  template <typename C> SX_HD static C d2f(C, C, C) { return C(0); }
};
// nan_to_num in one pass where the infinities go to -b and b (the defaults: the dtype's extremes):
// NaN -> a, +inf -> b, -inf -> -b; reached through nan_to_num, which composes the uneven case. The
// gradient flows where x is finite, as PyTorch's.
struct NanToNum : Base {
  static constexpr const char* name = "nan_to_num";
  static constexpr DRule rule = DRule::Same;
  static constexpr Api api = Api::Internal;
  static constexpr const char* p0 = "nan";
  static constexpr const char* p1 = "bound";
  template <typename C> SX_HD static C f(C x, C a, C b) {
    if constexpr (is_int<C>) return x;
    else return map(x, a, b, -b);
  }
  // NaN -> a, +inf -> p, -inf -> m, one select after another: vectorised as blends (nested choices were
  // not). Also the formula of kern::nan_to_num, which takes -inf to a value of its own.
  template <typename C> SX_HD static C map(C x, C a, C p, C m) {
    C y = x == C(INFINITY) ? p : x;
    y = x == C(-INFINITY) ? m : y;
    return x != x ? a : y;
  }
  template <typename C> SX_HD static C df(C x, C, C) {
    if constexpr (is_int<C>) return C(1);
    else return x - x == C(0) ? C(1) : C(0);
  }
  template <typename C> SX_HD static C d2f(C, C, C) { return C(0); }
};

// ---- predicates
#define SX_PREDICATE(NAME, EXPR)                                  \
  static constexpr const char* name = NAME;                       \
  static constexpr DRule rule = DRule::Bool;                      \
  template <typename C> SX_HD static bool f(C x, C, C) { return EXPR; }
struct Not : Base { SX_PREDICATE("logical_not", x == C(0)) };
// ~x of an integer tensor, reached through bitwise_not (which takes bool tensors to Not and refuses
// floating ones): one pass, where an xor with a tensor of -1 made a scalar tensor and broadcast it.
struct BitNot : Base {
  static constexpr const char* name = "bitwise_not";
  static constexpr DRule rule = DRule::Same;
  static constexpr Api api = Api::Internal;
  template <typename C> SX_HD static C f(C x, C, C) {
    if constexpr (std::is_same_v<C, bool>) return !x;
    else if constexpr (is_int<C>) return C(~x);
    else return x;  // not reached: no floating kernel is asked for
  }
  template <typename C> SX_HD static C df(C, C, C) { return C(0); }
  template <typename C> SX_HD static C d2f(C, C, C) { return C(0); }
};
struct IsNan : Base { SX_PREDICATE("isnan", x != x) };
// x - x is 0 for a finite x and NaN for an infinite or NaN one: one test, no branch (a chain of ||
// compiles to branches that go either way at random on data with many non-finite values).
struct IsInf : Base { SX_PREDICATE("isinf", !is_int<C> && ((x - x != C(0)) & (x == x))) };
struct IsFinite : Base { SX_PREDICATE("isfinite", is_int<C> || x - x == C(0)) };
struct SignBit : Base {  // set for negative values, -0.0 and a NaN of negative sign
  static constexpr const char* name = "signbit";
  static constexpr DRule rule = DRule::Bool;
  template <typename C> SX_HD static bool f(C x, C, C) {
    if constexpr (is_int<C>) return std::is_signed_v<C> && x < C(0);
    else return std::signbit(x);
  }
};
#undef SX_PREDICATE

// ---- exponentials and logarithms (integers compute in float32)
struct Exp : Base {
  static constexpr const char* name = "exp";
  template <typename C> SX_HD static C f(C x, C, C) { return sm::sexp_normal(x); }
  template <typename C> SX_HD static bool out_of_range(C x) { return sm::exp_out_of_range(x); }
  static double exact(double x) { return std::exp(x); }
  static Tensor vjp(const Tensor& g, const Tensor&, const Tensor& y, double, double) { return mul(g, y); }
};
struct Exp2 : Base {
  static constexpr const char* name = "exp2";
  template <typename C> SX_HD static C f(C x, C, C) { return sm::sexp2(x); }
  static Tensor vjp(const Tensor& g, const Tensor&, const Tensor& y, double, double) {
    return mul(g, mul(y, Scalar(sm::kLn2)));
  }
};
struct Expm1 : Base {
  static constexpr const char* name = "expm1";
  template <typename C> SX_HD static C f(C x, C, C) { return sm::sexpm1(x); }
  static Tensor vjp(const Tensor& g, const Tensor&, const Tensor& y, double, double) {
    return mul(g, add(y, Scalar(1.0)));
  }
};
struct Log : Base {
  static constexpr const char* name = "log";
  template <typename C> SX_HD static C f(C x, C, C) { return sm::slog_normal(x); }
  template <typename C> SX_HD static bool out_of_range(C x) { return sm::log_out_of_range(x); }
  static Tensor vjp(const Tensor& g, const Tensor& x, const Tensor&, double, double) { return div(g, x); }
};
struct Log2 : Base {
  static constexpr const char* name = "log2";
  template <typename C> SX_HD static C f(C x, C, C) { return sm::slog2_normal(x); }
  template <typename C> SX_HD static bool out_of_range(C x) { return sm::log_out_of_range(x); }
  static Tensor vjp(const Tensor& g, const Tensor& x, const Tensor&, double, double) {
    return div(g, mul(x, Scalar(sm::kLn2)));
  }
};
struct Log10 : Base {
  static constexpr const char* name = "log10";
  template <typename C> SX_HD static C f(C x, C, C) { return sm::slog10_normal(x); }
  template <typename C> SX_HD static bool out_of_range(C x) { return sm::log_out_of_range(x); }
  static Tensor vjp(const Tensor& g, const Tensor& x, const Tensor&, double, double) {
    return div(g, mul(x, Scalar(sm::kLn10)));
  }
};
struct Log1p : Base {
  static constexpr const char* name = "log1p";
  template <typename C> SX_HD static C f(C x, C, C) { return sm::slog1p(x); }
  static Tensor vjp(const Tensor& g, const Tensor& x, const Tensor&, double, double) {
    return div(g, add(x, Scalar(1.0)));
  }
};
struct Sqrt : Base {
  static constexpr const char* name = "sqrt";
  template <typename C> SX_HD static C f(C x, C, C) { return std::sqrt(x); }
  static Tensor vjp(const Tensor& g, const Tensor&, const Tensor& y, double, double) {
    return div(g, mul(y, Scalar(2.0)));
  }
};
struct Rsqrt : Base {
  static constexpr const char* name = "rsqrt";
  template <typename C> SX_HD static C f(C x, C, C) { return C(1) / std::sqrt(x); }
  static Tensor vjp(const Tensor& g, const Tensor&, const Tensor& y, double, double) {
    return mul(mul(g, mul(y, mul(y, y))), Scalar(-0.5));
  }
};
struct Reciprocal : Base {
  static constexpr const char* name = "reciprocal";
  template <typename C> SX_HD static C f(C x, C, C) { return C(1) / x; }
  static Tensor vjp(const Tensor& g, const Tensor&, const Tensor& y, double, double) { return neg(mul(g, mul(y, y))); }
};

// ---- trigonometric and hyperbolic
struct Sin : Base {
  static constexpr const char* name = "sin";
  template <typename C> SX_HD static C f(C x, C, C) { return sm::ssin(x); }
  template <typename C> SX_HD static bool out_of_range(C x) { return sm::trig_out_of_range(x); }
  static Tensor vjp(const Tensor& g, const Tensor& x, const Tensor&, double, double) {
    return mul(g, unary(UnaryOp::Cos, x));
  }
};
struct Cos : Base {
  static constexpr const char* name = "cos";
  template <typename C> SX_HD static C f(C x, C, C) { return sm::scos(x); }
  template <typename C> SX_HD static bool out_of_range(C x) { return sm::trig_out_of_range(x); }
  static Tensor vjp(const Tensor& g, const Tensor& x, const Tensor&, double, double) {
    return neg(mul(g, unary(UnaryOp::Sin, x)));
  }
};
struct Tan : Base {
  static constexpr const char* name = "tan";
  template <typename C> SX_HD static C f(C x, C, C) { return sm::stan(x); }
  template <typename C> SX_HD static bool out_of_range(C x) { return sm::trig_out_of_range(x); }
  static Tensor vjp(const Tensor& g, const Tensor&, const Tensor& y, double, double) {
    return mul(g, add(mul(y, y), Scalar(1.0)));
  }
};
struct Asin : Base {
  static constexpr const char* name = "asin";
  template <typename C> SX_HD static C f(C x, C, C) { return sm::sasin(x); }
  static Tensor vjp(const Tensor& g, const Tensor& x, const Tensor&, double, double) {
    return mul(g, unary(UnaryOp::Rsqrt, sub(ones_like(x), mul(x, x))));
  }
};
struct Acos : Base {
  static constexpr const char* name = "acos";
  template <typename C> SX_HD static C f(C x, C, C) { return sm::sacos(x); }
  static Tensor vjp(const Tensor& g, const Tensor& x, const Tensor&, double, double) {
    return neg(mul(g, unary(UnaryOp::Rsqrt, sub(ones_like(x), mul(x, x)))));
  }
};
struct Atan : Base {
  static constexpr const char* name = "atan";
  template <typename C> SX_HD static C f(C x, C, C) { return sm::satan(x); }
  static Tensor vjp(const Tensor& g, const Tensor& x, const Tensor&, double, double) {
    return div(g, add(mul(x, x), Scalar(1.0)));
  }
};
struct Sinh : Base {
  static constexpr const char* name = "sinh";
  template <typename C> SX_HD static C f(C x, C, C) { return sm::ssinh(x); }
  static Tensor vjp(const Tensor& g, const Tensor& x, const Tensor&, double, double) {
    return mul(g, unary(UnaryOp::Cosh, x));
  }
};
struct Cosh : Base {
  static constexpr const char* name = "cosh";
  template <typename C> SX_HD static C f(C x, C, C) { return sm::scosh(x); }
  static Tensor vjp(const Tensor& g, const Tensor& x, const Tensor&, double, double) {
    return mul(g, unary(UnaryOp::Sinh, x));
  }
};
struct Erf : Base {
  static constexpr const char* name = "erf";
  template <typename C> SX_HD static C f(C x, C, C) { return sm::serf(x); }
  static Tensor vjp(const Tensor& g, const Tensor& x, const Tensor&, double, double) {
    return mul(g, mul(exp(neg(mul(x, x))), Scalar(sm::k2InvSqrtPi)));
  }
};
// erfc(x) = 1 - erf(x) without the cancellation in the right tail: float (on the host) takes
// cpu/vspecial.h's kernel for |x| <= 4, everything else <cmath>'s erfc in double.
struct Erfc : Base {
  static constexpr const char* name = "erfc";
#ifdef __CUDACC__
  template <typename C> SX_HD static C f(C x, C, C) { return C(::erfc(double(x))); }
#else
  template <typename C> static C f(C x, C, C) {
    if constexpr (std::is_same_v<C, float>) return cpu::verfc(x);
    else return C(std::erfc(double(x)));
  }
  template <typename C> static bool out_of_range(C x) {
    if constexpr (std::is_same_v<C, float>) return cpu::erfc_out_of_range(x);
    else return false;
  }
#endif
  static Tensor vjp(const Tensor& g, const Tensor& x, const Tensor&, double, double) {
    return mul(g, mul(exp(neg(mul(x, x))), Scalar(-sm::k2InvSqrtPi)));
  }
};

// ---- activations: fused forward and backward; d2f makes the backward differentiable
struct Tanh : Base {
  static constexpr const char* name = "tanh";
  template <typename C> SX_HD static C f(C x, C, C) { return sm::stanh(x); }
  template <typename C> SX_HD static C df(C x, C, C) {
    C t = sm::stanh(x);
    return C(1) - t * t;
  }
  template <typename C> SX_HD static C d2f(C x, C, C) {
    C t = sm::stanh(x);
    return C(-2) * t * (C(1) - t * t);
  }
};
struct Sigmoid : Base {
  static constexpr const char* name = "sigmoid";
  template <typename C> SX_HD static C f(C x, C, C) { return sm::sigmoid_normal(x); }
  template <typename C> SX_HD static bool out_of_range(C x) { return sm::sigmoid_out_of_range(x); }
  template <typename C> SX_HD static C df(C x, C, C) {
    C s = sm::sigmoid(x);
    return s * (C(1) - s);
  }
  template <typename C> SX_HD static C d2f(C x, C, C) {
    C s = sm::sigmoid(x);
    return s * (C(1) - s) * (C(1) - C(2) * s);
  }
};
struct Relu : Base {
  static constexpr const char* name = "relu";
  static constexpr DRule rule = DRule::Same;
  static constexpr Api api = Api::Activation;
  template <typename C> SX_HD static C f(C x, C, C) { return x < C(0) ? C(0) : x; }  // NaN stays NaN
  template <typename C> SX_HD static C df(C x, C, C) { return x > C(0) ? C(1) : C(0); }
  template <typename C> SX_HD static C d2f(C, C, C) { return C(0); }
};
struct Gelu : Base {  // x * Phi(x)
  static constexpr const char* name = "gelu";
  static constexpr Api api = Api::Internal;  // bound by hand: gelu(x, approximate="none" | "tanh")
  template <typename C> SX_HD static C f(C x, C, C) { return C(0.5) * x * (C(1) + sm::serf(x * C(sm::kSqrt1_2))); }
  template <typename C> SX_HD static C df(C x, C, C) {
    C cdf = C(0.5) * (C(1) + sm::serf(x * C(sm::kSqrt1_2)));
    return cdf + x * C(sm::kInvSqrt2Pi) * sm::sexp(C(-0.5) * x * x);
  }
  template <typename C> SX_HD static C d2f(C x, C, C) {  // phi(x) (2 - x^2)
    return C(sm::kInvSqrt2Pi) * sm::sexp(C(-0.5) * x * x) * (C(2) - x * x);
  }
};
struct GeluTanh : Base {  // 0.5 x (1 + tanh(u)), u = k (x + c x^3)
  static constexpr const char* name = "gelu";
  static constexpr Api api = Api::Internal;
  template <typename C> SX_HD static C f(C x, C, C) {
    return C(0.5) * x * (C(1) + sm::stanh(C(sm::kGeluK) * (x + C(sm::kGeluC) * x * x * x)));
  }
  template <typename C> SX_HD static C df(C x, C, C) {
    C x2 = x * x, t = sm::stanh(C(sm::kGeluK) * (x + C(sm::kGeluC) * x2 * x));
    return C(0.5) * (C(1) + t) + C(0.5) * x * (C(1) - t * t) * C(sm::kGeluK) * (C(1) + C(3 * sm::kGeluC) * x2);
  }
  template <typename C> SX_HD static C d2f(C x, C, C) {  // (1 - t^2) (u' - x t u'^2 + x u'' / 2)
    C x2 = x * x, t = sm::stanh(C(sm::kGeluK) * (x + C(sm::kGeluC) * x2 * x));
    C u1 = C(sm::kGeluK) * (C(1) + C(3 * sm::kGeluC) * x2), u2 = C(6 * sm::kGeluK * sm::kGeluC) * x;
    return (C(1) - t * t) * (u1 - x * t * u1 * u1 + C(0.5) * x * u2);
  }
};
struct Silu : Base {
  static constexpr const char* name = "silu";
  static constexpr Api api = Api::Activation;
  template <typename C> SX_HD static C f(C x, C, C) { return sm::silu_normal(x); }
  template <typename C> SX_HD static bool out_of_range(C x) { return sm::sigmoid_out_of_range(x); }
  template <typename C> SX_HD static C df(C x, C, C) {
    C s = sm::sigmoid(x);
    return s * (C(1) + x * (C(1) - s));
  }
  template <typename C> SX_HD static C d2f(C x, C, C) {
    C s = sm::sigmoid(x);
    return s * (C(1) - s) * (C(2) + x * (C(1) - C(2) * s));
  }
};
struct LeakyRelu : Base {
  static constexpr const char* name = "leaky_relu";
  static constexpr Api api = Api::Activation;
  static constexpr const char* p0 = "negative_slope";
  static constexpr double d0 = 0.01;
  template <typename C> SX_HD static C f(C x, C a, C) { return x > C(0) ? x : x * a; }
  template <typename C> SX_HD static C df(C x, C a, C) { return x > C(0) ? C(1) : a; }
  template <typename C> SX_HD static C d2f(C, C, C) { return C(0); }
};
struct Elu : Base {
  static constexpr const char* name = "elu";
  static constexpr Api api = Api::Activation;
  static constexpr const char* p0 = "alpha";
  static constexpr double d0 = 1.0;
  template <typename C> SX_HD static C f(C x, C a, C) { return x > C(0) ? x : a * (sm::sexp(x) - C(1)); }
  template <typename C> SX_HD static C df(C x, C a, C) { return x > C(0) ? C(1) : a * sm::sexp(x); }
  template <typename C> SX_HD static C d2f(C x, C a, C) { return x > C(0) ? C(0) : a * sm::sexp(x); }
};
struct Celu : Base {
  static constexpr const char* name = "celu";
  static constexpr Api api = Api::Activation;
  static constexpr const char* p0 = "alpha";
  static constexpr double d0 = 1.0;
  template <typename C> SX_HD static C f(C x, C a, C) { return x > C(0) ? x : a * (sm::sexp(x / a) - C(1)); }
  template <typename C> SX_HD static C df(C x, C a, C) { return x > C(0) ? C(1) : sm::sexp(x / a); }
  template <typename C> SX_HD static C d2f(C x, C a, C) { return x > C(0) ? C(0) : sm::sexp(x / a) / a; }
};
struct Selu : Base {
  static constexpr const char* name = "selu";
  static constexpr Api api = Api::Activation;
  template <typename C> SX_HD static C f(C x, C, C) {
    return C(sm::kSeluScale) * (x > C(0) ? x : C(sm::kSeluAlpha) * (sm::sexp(x) - C(1)));
  }
  template <typename C> SX_HD static C df(C x, C, C) {
    return C(sm::kSeluScale) * (x > C(0) ? C(1) : C(sm::kSeluAlpha) * sm::sexp(x));
  }
  template <typename C> SX_HD static C d2f(C x, C, C) {
    return x > C(0) ? C(0) : C(sm::kSeluScale * sm::kSeluAlpha) * sm::sexp(x);
  }
};
struct Softplus : Base {  // log(1 + exp(beta x)) / beta, the identity where beta x > threshold
  static constexpr const char* name = "softplus";
  static constexpr Api api = Api::Activation;
  static constexpr const char* p0 = "beta";
  static constexpr const char* p1 = "threshold";
  static constexpr double d0 = 1.0, d1 = 20.0;
  template <typename C> SX_HD static C f(C x, C b, C t) {
    // softplus of min(x b, t) (NaN kept): the lanes that return x then stay in its normal range (without the
    // clamp the vectorised select ran twice as slow where most lanes pass the threshold).
    C z = x * b, s = sm::softplus(t < z ? t : z) / b;
    return z > t ? x : s;
  }
  template <typename C> SX_HD static C df(C x, C b, C t) { return x * b > t ? C(1) : sm::sigmoid(x * b); }
  template <typename C> SX_HD static C d2f(C x, C b, C t) {
    C s = sm::sigmoid(x * b);
    return x * b > t ? C(0) : b * s * (C(1) - s);
  }
};
struct Mish : Base {  // x tanh(softplus(x))
  static constexpr const char* name = "mish";
  static constexpr Api api = Api::Activation;
  template <typename C> SX_HD static C f(C x, C, C) { return x * sm::stanh(sm::softplus(x)); }
  template <typename C> SX_HD static C df(C x, C, C) {
    C t = sm::stanh(sm::softplus(x));
    return t + x * (C(1) - t * t) * sm::sigmoid(x);
  }
  template <typename C> SX_HD static C d2f(C x, C, C) {
    C t = sm::stanh(sm::softplus(x)), s = sm::sigmoid(x), sech2 = C(1) - t * t;
    return sech2 * s * (C(2) - C(2) * x * t * s + x * (C(1) - s));
  }
};
struct Hardtanh : Base {
  static constexpr const char* name = "hardtanh";
  static constexpr DRule rule = DRule::Same;
  static constexpr Api api = Api::Activation;
  static constexpr const char* p0 = "min_val";
  static constexpr const char* p1 = "max_val";
  static constexpr double d0 = -1.0, d1 = 1.0;
  template <typename C> SX_HD static C f(C x, C lo, C hi) { return x < lo ? lo : (x > hi ? hi : x); }
  template <typename C> SX_HD static C df(C x, C lo, C hi) { return x > lo && x < hi ? C(1) : C(0); }
  template <typename C> SX_HD static C d2f(C, C, C) { return C(0); }
};
struct Relu6 : Base {
  static constexpr const char* name = "relu6";
  static constexpr DRule rule = DRule::Same;
  static constexpr Api api = Api::Activation;
  template <typename C> SX_HD static C f(C x, C, C) { return x < C(0) ? C(0) : (x > C(6) ? C(6) : x); }
  template <typename C> SX_HD static C df(C x, C, C) { return x > C(0) && x < C(6) ? C(1) : C(0); }
  template <typename C> SX_HD static C d2f(C, C, C) { return C(0); }
};
struct Hardsigmoid : Base {  // relu6(x + 3) / 6
  static constexpr const char* name = "hardsigmoid";
  static constexpr Api api = Api::Activation;
  template <typename C> SX_HD static C f(C x, C, C) { return x <= C(-3) ? C(0) : (x >= C(3) ? C(1) : x / C(6) + C(0.5)); }
  template <typename C> SX_HD static C df(C x, C, C) { return x > C(-3) && x < C(3) ? C(1) / C(6) : C(0); }
  template <typename C> SX_HD static C d2f(C, C, C) { return C(0); }
};
struct Hardswish : Base {  // x relu6(x + 3) / 6
  static constexpr const char* name = "hardswish";
  static constexpr Api api = Api::Activation;
  template <typename C> SX_HD static C f(C x, C, C) { return x <= C(-3) ? C(0) : (x >= C(3) ? x : x * (x + C(3)) / C(6)); }
  template <typename C> SX_HD static C df(C x, C, C) {
    return x < C(-3) ? C(0) : (x > C(3) ? C(1) : (C(2) * x + C(3)) / C(6));
  }
  template <typename C> SX_HD static C d2f(C x, C, C) { return x > C(-3) && x < C(3) ? C(1) / C(3) : C(0); }
};
struct LogSigmoid : Base {  // -softplus(-x)
  static constexpr const char* name = "logsigmoid";
  static constexpr Api api = Api::Activation;
  template <typename C> SX_HD static C f(C x, C, C) { return -sm::softplus(-x); }
  template <typename C> SX_HD static C df(C x, C, C) { return sm::sigmoid(-x); }
  template <typename C> SX_HD static C d2f(C x, C, C) {
    C s = sm::sigmoid(x);
    return -s * (C(1) - s);
  }
};
struct Softsign : Base {  // x / (1 + |x|)
  static constexpr const char* name = "softsign";
  static constexpr Api api = Api::Activation;
  template <typename C> SX_HD static C f(C x, C, C) { return x / (C(1) + (x < C(0) ? -x : x)); }
  template <typename C> SX_HD static C df(C x, C, C) {
    C d = C(1) + (x < C(0) ? -x : x);
    return C(1) / (d * d);
  }
  template <typename C> SX_HD static C d2f(C x, C, C) {
    C d = C(1) + (x < C(0) ? -x : x);
    return (x < C(0) ? C(2) : C(-2)) / (d * d * d);
  }
};

// ---- x ** c for a floating x and a number c. The exponents c = K / 2 with K in kFixed have a formula of
// products and at most one square root (`fixed<K>`); the CPU kernel picks that formula once per call
// instead of per element, so its loop vectorises. Other exponents call pow.
struct PowScalar : Base {
  static constexpr const char* name = "pow";
  static constexpr DRule rule = DRule::Same;
  static constexpr Api api = Api::Internal;  // reached through pow(tensor, number)
  static constexpr int kNone = 99;
  // 2 c when c is one of the exponents with a formula, else kNone.
  SX_HD static int half_steps(double c) {
    double k = 2 * c;
    int ki = int(k);
    if (!(k >= -4 && k <= 8) || double(ki) != k) return kNone;
    return ki;
  }
  template <int K, typename C> SX_HD static C fixed(C x) {
    if constexpr (K == 0) return C(1);
    else if constexpr (K == 1) return std::sqrt(x);
    else if constexpr (K == -1) return C(1) / std::sqrt(x);
    else if constexpr (K == 2) return x;
    else if constexpr (K == -2) return C(1) / x;
    else if constexpr (K == 3) return x == C(-INFINITY) ? C(INFINITY) : x * std::sqrt(x);  // pow(-inf, 1.5) = inf
    else if constexpr (K == -3) {
      if (x == C(-INFINITY)) return C(0);
      if constexpr (std::is_same_v<C, float>) {  // in double: one rounding, and x sqrt(x) cannot overflow
        double xd = x;
        return C(1.0 / (xd * std::sqrt(xd)));
      } else {  // (1 / sqrt x)^3: no overflow of x sqrt(x) where the result is tiny
        if (x == C(0)) return C(INFINITY);  // pow(-0, -1.5) = inf (1 / sqrt(-0) is -inf)
        C r = C(1) / std::sqrt(x);
        return r * r * r;
      }
    } else if constexpr (K == 5) {  // pow(-inf, 2.5) = inf, pow(-0, 2.5) = +0
      return x == C(-INFINITY) ? C(INFINITY) : x == C(0) ? C(0) : x * x * std::sqrt(x);
    }
    else if constexpr (K == 7) return x == C(-INFINITY) ? C(INFINITY) : x * x * x * std::sqrt(x);
    else if constexpr (K == 4) return x * x;
    else if constexpr (K == -4) return C(1) / (x * x);
    else if constexpr (K == 6) return x * x * x;
    else {
      static_assert(K == 8, "no formula for this exponent");
      C x2 = x * x;
      return x2 * x2;
    }
  }
  template <typename C> SX_HD static C f(C x, C c, C) {
    switch (half_steps(double(c))) {
      case 0: return fixed<0>(x);
      case 1: return fixed<1>(x);
      case -1: return fixed<-1>(x);
      case 2: return fixed<2>(x);
      case -2: return fixed<-2>(x);
      case 3: return fixed<3>(x);
      case -3: return fixed<-3>(x);
      case 5: return fixed<5>(x);
      case 7: return fixed<7>(x);
      case 4: return fixed<4>(x);
      case -4: return fixed<-4>(x);
      case 6: return fixed<6>(x);
      case 8: return fixed<8>(x);
      default: return std::pow(x, c);
    }
  }
  static Tensor vjp(const Tensor& g, const Tensor& x, const Tensor&, double c, double) {
    return mul(mul(g, pow(x, Scalar(c - 1))), Scalar(c));
  }
};

// ---- special functions (ops/special_math.h): computed in double for every floating dtype, integers
// in float32. Their gradients are vjps of other sheet entries, so they differentiate to any order.
// On the host, float (and float16 / bfloat16) take the vectorising kernels of cpu/vspecial.h where they
// apply and the double formula elsewhere (out_of_range); double tensors and CUDA take the double formula.
#ifdef __CUDACC__
#define SX_SPECIAL_FORMULA(FN) \
  template <typename C> SX_HD static C f(C x, C, C) { return C(spm::FN(double(x))); }
#else
#define SX_SPECIAL_FORMULA(FN)                                                 \
  template <typename C> static C f(C x, C, C) {                                \
    if constexpr (std::is_same_v<C, float>) return cpu::v##FN(x);             \
    else return C(spm::FN(double(x)));                                         \
  }                                                                            \
  template <typename C> static bool out_of_range(C x) {                        \
    if constexpr (std::is_same_v<C, float>) return cpu::FN##_out_of_range(x); \
    else return false;                                                         \
  }
#endif
struct Lgamma : Base {
  static constexpr const char* name = "lgamma";
  SX_SPECIAL_FORMULA(lgamma)
  static Tensor vjp(const Tensor& g, const Tensor& x, const Tensor&, double, double) {
    return mul(g, unary(UnaryOp::Digamma, x));
  }
};
struct Digamma : Base {
  static constexpr const char* name = "digamma";
  SX_SPECIAL_FORMULA(digamma)
  static Tensor vjp(const Tensor& g, const Tensor& x, const Tensor&, double, double) {
    return mul(g, unary(UnaryOp::Polygamma, x, 1.0, 0.0));
  }
};
// polygamma(n, x), n >= 0 an integer held in the parameter (checked by the op); bound by hand for
// PyTorch's argument order.
struct Polygamma : Base {
  static constexpr const char* name = "polygamma";
  static constexpr Api api = Api::Internal;
  static constexpr const char* p0 = "n";
#ifdef __CUDACC__
  template <typename C> SX_HD static C f(C x, C n, C) { return C(spm::polygamma(double(x), double(n))); }
#else  // float: cpu/vspecial.h's kernel where it applies
  template <typename C> static C f(C x, C n, C) {
    if constexpr (std::is_same_v<C, float>) return cpu::vpolygamma(x, n);
    else return C(spm::polygamma(double(x), double(n)));
  }
  template <typename C> static bool out_of_range(C x, C n, C) {
    if constexpr (std::is_same_v<C, float>) return cpu::polygamma_out_of_range(x, n);
    else return false;
  }
#endif
  static Tensor vjp(const Tensor& g, const Tensor& x, const Tensor&, double n, double) {
    return mul(g, unary(UnaryOp::Polygamma, x, n + 1, 0.0));
  }
};
struct Erfinv : Base {  // d/dy erfinv(y) = sqrt(pi) / 2 exp(erfinv(y)^2)
  static constexpr const char* name = "erfinv";
  SX_SPECIAL_FORMULA(erfinv)
#ifndef __CUDACC__
  static double exact(double y) { return cpu::erfinv_rest(y); }  // float's tails
#endif
  static Tensor vjp(const Tensor& g, const Tensor&, const Tensor& y, double, double) {
    return mul(g, mul(exp(mul(y, y)), Scalar(0.88622692545275801365)));
  }
};
struct I0 : Base {
  static constexpr const char* name = "i0";
  SX_SPECIAL_FORMULA(i0)
  static Tensor vjp(const Tensor& g, const Tensor& x, const Tensor&, double, double) {
    return mul(g, unary(UnaryOp::I1, x));
  }
};
#undef SX_SPECIAL_FORMULA
struct I1 : Base {  // i1'(x) = i0(x) - i1(x) / x, 1/2 at 0
  static constexpr const char* name = "i1";
  static constexpr Api api = Api::Internal;  // the gradient of i0
  template <typename C> SX_HD static C f(C x, C, C) { return C(spm::i1(double(x))); }
  static Tensor vjp(const Tensor& g, const Tensor& x, const Tensor& y, double, double) {
    Tensor at0 = binary(BinaryOp::Eq, x, zeros_like(x));
    Tensor xs = where(at0, ones_like(x), x);
    Tensor d = sub(unary(UnaryOp::I0, x), div(y, xs));
    return mul(g, where(at0, mul(ones_like(x), Scalar(0.5)), d));
  }
};
// frexp's mantissa and exponent (the exponent as a float value; the op casts it to int32).
struct FrexpMantissa : Base {
  static constexpr const char* name = "frexp";
  static constexpr Api api = Api::Internal;
  template <typename C> SX_HD static C f(C x, C, C) { return C(spm::frexp_mantissa(double(x))); }
  // m = x 2^-e, e constant almost everywhere
  template <typename C> SX_HD static C df(C x, C, C) {
    return C(::ldexp(1.0, -int(spm::frexp_exponent(double(x)))));
  }
  template <typename C> SX_HD static C d2f(C, C, C) { return C(0); }
};
struct FrexpExponent : Base {
  static constexpr const char* name = "frexp";
  static constexpr Api api = Api::Internal;
  template <typename C> SX_HD static C f(C x, C, C) { return C(spm::frexp_exponent(double(x))); }
  template <typename C> SX_HD static C df(C, C, C) { return C(0); }
  template <typename C> SX_HD static C d2f(C, C, C) { return C(0); }
};

}  // SX_SHEET_NS
}  // namespace unary_def

// ---- the table the rest of the engine reads
struct UnaryInfo {
  const char* name;
  DRule rule;
  Api api;
  const char* p0;
  const char* p1;
  double d0, d1;
  bool fused_grad;  // gradient from df (fused kernel) rather than a composite vjp
  bool has_d2f;
};

template <typename D> constexpr bool kFusedGrad = requires(float v) { D::template df<float>(v, v, v); };
template <typename D> constexpr bool kHasD2f = requires(float v) { D::template d2f<float>(v, v, v); };

inline const UnaryInfo& unary_info(UnaryOp op) {
  static constexpr UnaryInfo table[] = {
#define SX_INFO_ENTRY(D)                                                                                   \
  {unary_def::D::name, unary_def::D::rule, unary_def::D::api, unary_def::D::p0, unary_def::D::p1,        \
   unary_def::D::d0, unary_def::D::d1, kFusedGrad<unary_def::D>, kHasD2f<unary_def::D>},
      SX_UNARY_OPS(SX_INFO_ENTRY)
#undef SX_INFO_ENTRY
  };
  return table[int(op)];
}

#define SX_COUNT_ENTRY(D) +1
inline constexpr int kNumUnaryOps = 0 SX_UNARY_OPS(SX_COUNT_ENTRY);
#undef SX_COUNT_ENTRY

// Calls fn.template operator()<Def>() with the definition of `op`.
template <typename F>
decltype(auto) visit_unary(UnaryOp op, F&& fn) {
  switch (op) {
#define SX_VISIT_ENTRY(D) \
  case UnaryOp::D: return fn.template operator()<unary_def::D>();
    SX_UNARY_OPS(SX_VISIT_ENTRY)
#undef SX_VISIT_ENTRY
  }
  throw RuntimeError("[unary] unknown op");
}

// ---- the fused gradient kernels' ops (ops/unary.cpp): gx = g * f'(x) (order 1) or g * f''(x) (order 2)
Tensor unary_grad(UnaryOp op, const Tensor& g, const Tensor& x, double p0, double p1, int order);
// The op with its parameters: unary(op, x) uses the defaults.
Tensor unary(UnaryOp op, const Tensor& x, double p0, double p1);

namespace kern {
SX_KERNEL(unary, void(UnaryOp op, const Tensor& out, const Tensor& x, double p0, double p1));
// gx = g * f'(x) (order 1) or g * f''(x) (order 2); all operands of one shape and dtype.
SX_KERNEL(unary_grad, void(UnaryOp op, const Tensor& gx, const Tensor& g, const Tensor& x, double p0, double p1,
                           int order));
}  // namespace kern

}  // namespace sx
