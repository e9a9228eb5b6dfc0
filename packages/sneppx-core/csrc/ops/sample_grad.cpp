// Gamma draws and the implicit reparameterisation gradients of gamma and beta draws (sneppx_core.distributions).
//
// Draws: Marsaglia and Tsang's method in double, one element per step of a parallel loop, each element's tries
// on counters of its own (so the draws do not depend on the thread count), boosted below a = 1 by u^(1/a).
//
// Gradients: for a draw x of
// a distribution with CDF F(x; a), dx/da = -(dF/da) / (dF/dx). dF/da is differentiated exactly, in forward
// mode (a value and its derivative carried through every step), through the series or continued fraction that
// computes F: the regularised incomplete gamma function for Gamma(a, 1), the regularised incomplete beta
// function for Beta(a, b) (the Dirichlet's marginals). Double precision on the host, one element per step of
// a parallel loop; results within about 1e-13 relative of high-precision references.
#include <cmath>

#include "core/generator.h"

#include "core/parallel.h"
#include "ops/common.h"
#include "ops/sample_grad.h"
#include "ops/special_math.h"

namespace sx {
namespace {

constexpr double kEps = 0x1p-53;   // float64 unit roundoff: when a sum or a fraction stops changing
constexpr double kTiny = 1e-300;   // Lentz's stand-in for a zero denominator
constexpr int kMaxTerms = 20000;   // steps per element (a <= 1e5 needs under 3000)
constexpr double kAsymptotic = 1e5;  // above it, the gamma gradient comes from the Cornish-Fisher expansion

// A value and its derivative along one direction.
struct Dual {
  double v, d;
};
inline Dual operator+(Dual a, Dual b) { return {a.v + b.v, a.d + b.d}; }
inline Dual operator-(Dual a, Dual b) { return {a.v - b.v, a.d - b.d}; }
inline Dual operator*(Dual a, Dual b) { return {a.v * b.v, a.d * b.v + a.v * b.d}; }
inline Dual operator/(Dual a, Dual b) {
  double q = a.v / b.v;
  return {q, (a.d - q * b.d) / b.v};
}
inline Dual constant(double v) { return {v, 0.0}; }
inline bool converged(Dual increment, Dual total) {
  return std::fabs(increment.v) <= kEps * std::fabs(total.v) &&
         std::fabs(increment.d) <= kEps * std::fabs(total.d);
}

// b0 + a1 / (b1 + a2 / (b2 + ...)) by the modified Lentz method; term(n) gives (a_n, b_n).
template <class Term> Dual continued_fraction(Dual b0, Term term) {
  auto guard = [](Dual z) { return z.v == 0 ? Dual{kTiny, z.d} : z; };
  Dual f = guard(b0), c = f, d = constant(0.0);
  for (int n = 1; n <= kMaxTerms; ++n) {
    auto [an, bn] = term(n);
    d = constant(1.0) / guard(bn + an * d);
    c = guard(bn + an / c);
    Dual next = f * (c * d);
    bool done = converged(next - f, next);
    f = next;
    if (done) break;
  }
  return f;
}

// dx/da for x < a + 1: P = x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a + 1) ... (a + n)).
double gamma_grad_series(double alpha, double x) {
  Dual a{alpha, 1.0}, total = constant(1.0), term = constant(1.0);
  for (int n = 1; n <= kMaxTerms; ++n) {
    term = term * constant(x) / (a + constant(n));
    Dual next = total + term;
    bool done = converged(term, next);
    total = next;
    if (done) break;
  }
  return -(x / alpha) * ((std::log(x) - spm::digamma(alpha + 1)) * total.v + total.d);
}

// dx/da for x >= a + 1, from Legendre's continued fraction of Q = 1 - P.
double gamma_grad_continued_fraction(double alpha, double x) {
  Dual a{alpha, 1.0};
  Dual h = constant(1.0) / continued_fraction(constant(x + 1) - a, [&](int n) {
             return std::pair{constant(-n) * (constant(n) - a), constant(x + 2 * n + 1) - a};
           });
  return x * (h.v * (std::log(x) - spm::digamma(alpha)) + h.d);
}

// dx/da for large a by the Cornish-Fisher expansion x = a + sqrt(a) z + (z^2 - 1)/3 + ... at fixed normal
// quantile z (found from x by Newton's method); the terms kept leave O(a^-2.5).
double gamma_grad_asymptotic(double alpha, double x) {
  double s = std::sqrt(alpha), z = (x - alpha) / s;
  for (int i = 0; i < 4; ++i) {
    double z2 = z * z;
    double f = s * z + (z2 - 1) / 3 + (z2 * z - 7 * z) / (36 * s) - (3 * z2 * z2 + 7 * z2 - 16) / (810 * alpha);
    double slope = s + 2 * z / 3 + (3 * z2 - 7) / (36 * s) - (12 * z2 * z + 14 * z) / (810 * alpha);
    z -= (f - (x - alpha)) / slope;
  }
  double z2 = z * z;
  return 1 + z / (2 * s) - (z2 * z - 7 * z) / (72 * alpha * s) + (3 * z2 * z2 + 7 * z2 - 16) / (810 * alpha * alpha);
}

double gamma_grad(double alpha, double x) {
  if (!(std::isfinite(alpha) && alpha > 0 && x >= 0)) return NAN;
  if (x == 0) return 0.0;  // an underflowed draw
  if (alpha > kAsymptotic) return gamma_grad_asymptotic(alpha, x);
  return x < alpha + 1 ? gamma_grad_series(alpha, x) : gamma_grad_continued_fraction(alpha, x);
}

// 1 / f with I_x(a, b) = x^a (1-x)^b / (a B(a, b)) / f: the incomplete beta function's continued fraction,
// which converges fast for x < (a + 1) / (a + b + 2).
Dual beta_continued_fraction(Dual a, Dual b, double x) {
  return constant(1.0) / continued_fraction(constant(1.0), [&](int n) {
           int m = n / 2;
           Dual top = n % 2 ? constant(-x) * (a + constant(m)) * (a + b + constant(m))
                            : constant(m * x) * (b - constant(m));
           Dual bottom = n % 2 ? (a + constant(2 * m)) * (a + constant(2 * m + 1))
                               : (a + constant(2 * m - 1)) * (a + constant(2 * m));
           return std::pair{top / bottom, constant(1.0)};
         });
}

// -(dI_x(a, b)/da) / pdf(x) / (1 - x) with b = total - a held fixed: the scaled implicit gradient of a
// Beta(a, b) draw x; the continued fraction of I_{1-x}(b, a) past the mean.
double beta_grad(double x, double alpha, double total) {
  double beta = total - alpha;
  if (!(std::isfinite(alpha) && std::isfinite(beta) && alpha > 0 && beta >= 0 && x >= 0 && x <= 1)) return NAN;
  if (x == 0 || beta == 0) return 0.0;  // a draw at 0, or a one-component Dirichlet (always 1)
  double shared = spm::digamma(alpha + beta) - spm::digamma(alpha);
  if (x > (alpha + 1) / (total + 2)) {
    Dual h = beta_continued_fraction(constant(beta), Dual{alpha, 1.0}, 1 - x);
    return (x / beta) * (h.v * (std::log(x) + shared) + h.d);
  }
  Dual h = beta_continued_fraction(Dual{alpha, 1.0}, constant(beta), x);
  return -(x / alpha) * (h.v * (std::log(x) - 1 / alpha + shared) + h.d);
}

constexpr int kTries = 15;             // tries per element on its own counters (each accepts with p >= 0.95)
constexpr uint64_t kPerElement = 2 * kTries + 1;  // two counters per try, one for the boost
constexpr uint64_t kSpareKey = 0x9E3779B97F4A7C15ull;  // the key of further tries (p < 1e-19 per element)

inline double unit_open(uint32_t a, uint32_t b) { return 1.0 - u01d(a, b); }  // in (0, 1]

// log of a Gamma(alpha, 1) draw for element i (counters base + i * kPerElement + ...).
double log_gamma_draw(double alpha, uint64_t seed, uint64_t base, int64_t i) {
  if (std::isnan(alpha) || alpha < 0) return NAN;
  if (std::isinf(alpha)) return INFINITY;
  double a = alpha < 1 ? alpha + 1 : alpha, d = a - 1.0 / 3.0, c = 1 / std::sqrt(9 * d);
  uint64_t first = base + uint64_t(i) * kPerElement;
  double out = NAN;
  for (uint64_t t = 0;; ++t) {
    uint64_t key = t < kTries ? seed : seed ^ kSpareKey;
    auto w = philox(key, first + 2 * t), r = philox(key, first + 2 * t + 1);
    double z = std::sqrt(-2 * std::log(unit_open(w[0], w[1]))) * std::cos(2 * spm::kPi * u01d(w[2], w[3]));
    double v = 1 + c * z;
    v = v * v * v;
    if (v <= 0) continue;
    double log_v = std::log(v);
    if (std::log(unit_open(r[0], r[1])) < 0.5 * z * z + d - d * v + d * log_v) {
      out = std::log(d) + log_v;
      break;
    }
  }
  if (alpha < 1) {
    auto b = philox(seed, first + kPerElement - 1);
    out += std::log(unit_open(b[0], b[1])) / alpha;
  }
  return out;
}

Tensor host_float64(const Tensor& t, const char* op, const char* name) {
  SX_CHECK(t->dtype == DType::Float64 && t->device().type == DeviceType::CPU, TypeError, "[", op, "] ", name,
           " must be a float64 CPU tensor, got ", describe(t));
  return t->is_contiguous() ? t : clone_nograd(t);
}

// out[i] = fn(in[0][i], in[1][i], ...) over float64 CPU tensors of one shape.
template <class Fn> Tensor map_elements(const char* op, const TensorList& in, const char* const* names, Fn fn) {
  TensorList c;
  for (size_t i = 0; i < in.size(); ++i) {
    SX_CHECK(in[i]->shape == in[0]->shape, ValueError, "[", op, "] ", names[i], " has shape ", describe(in[i]),
             " where ", names[0], " has ", describe(in[0]));
    c.push_back(host_float64(in[i], op, names[i]));
  }
  Tensor out = empty(in[0]->shape, DType::Float64);
  double* o = out->data<double>();
  parallel_for(out->numel(), 16, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) o[i] = fn(c, i);
  });
  return out;
}

}  // namespace

Tensor standard_gamma_grad(const Tensor& alpha, const Tensor& x) {
  static const char* const names[] = {"alpha", "x"};
  return map_elements("_standard_gamma_grad", {alpha, x}, names, [](const TensorList& c, int64_t i) {
    return gamma_grad(c[0]->data<double>()[i], c[1]->data<double>()[i]);
  });
}

Tensor log_standard_gamma(const Tensor& alpha, Generator* g) {
  Tensor a = host_float64(alpha, "_log_standard_gamma", "alpha");
  Generator& gen = *gen_or_default(g);
  uint64_t seed = gen.seed, base = gen.reserve(uint64_t(a->numel()) * kPerElement);
  Tensor out = empty(a->shape, DType::Float64);
  const double* in = a->data<double>();
  double* o = out->data<double>();
  parallel_for(out->numel(), 16, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) o[i] = log_gamma_draw(in[i], seed, base, i);
  });
  return out;
}

Tensor beta_sample_grad(const Tensor& x, const Tensor& alpha, const Tensor& total) {
  static const char* const names[] = {"x", "alpha", "total"};
  return map_elements("_beta_sample_grad", {x, alpha, total}, names, [](const TensorList& c, int64_t i) {
    return beta_grad(c[0]->data<double>()[i], c[1]->data<double>()[i], c[2]->data<double>()[i]);
  });
}

}  // namespace sx
