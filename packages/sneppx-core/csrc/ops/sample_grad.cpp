// Gamma and Dirichlet draws and the implicit reparameterisation gradients of gamma and beta draws
// (sneppx_core.distributions).
//
// Draws: Marsaglia and Tsang's method in double, one element per step of a parallel loop, each element's tries
// on counters of its own (so the draws do not depend on the thread count), boosted below a = 1 by u^(1/a).
//
// Gradients: for a draw x of a distribution with CDF F(x; a), dx/da = -(dF/da) / (dF/dx). dF/da is
// differentiated exactly, in forward mode (a value and its derivative carried through every step), through the
// series or continued fraction that computes F: the regularised incomplete gamma function for Gamma(a, 1), the
// regularised incomplete beta function for Beta(a, b) (the Dirichlet's marginals). Double precision on the host,
// one element per step of a parallel loop; a sum or fraction stops when its steps fall below the result dtype's
// tolerance (about 1e-13 relative of high-precision references for float64, 1e-12 for float32 results).
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "core/generator.h"

#include "autograd/node.h"
#include "core/parallel.h"
#include "ops/common.h"
#include "ops/sample_grad.h"
#include "ops/special_math.h"

namespace sx {
namespace {

constexpr double kEps64 = 0x1p-53;  // float64 unit roundoff: when a sum or a fraction stops changing
constexpr double kEps32 = 0x1p-40;  // enough for float32 results (cancellation in the final formulas included)
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
inline Dual operator/(Dual a, Dual b) {  // one division: the loops' dependency chains run through them
  double r = 1 / b.v, q = a.v * r;
  return {q, (a.d - q * b.d) * r};
}
inline Dual constant(double v) { return {v, 0.0}; }
inline bool converged(Dual increment, Dual total, double eps) {
  return std::fabs(increment.v) <= eps * std::fabs(total.v) && std::fabs(increment.d) <= eps * std::fabs(total.d);
}

// b0 + a1 / (b1 + a2 / (b2 + ...)) by the modified Lentz method; term(n) gives (a_n, b_n).
template <class Term> Dual continued_fraction(Dual b0, Term term, double eps) {
  auto guard = [](Dual z) { return z.v == 0 ? Dual{kTiny, z.d} : z; };
  Dual f = guard(b0), c = f, d = constant(0.0);
  for (int n = 1; n <= kMaxTerms; ++n) {
    auto [an, bn] = term(n);
    d = constant(1.0) / guard(bn + an * d);
    c = guard(bn + an / c);
    Dual next = f * (c * d);
    bool done = converged(next - f, next, eps);
    f = next;
    if (done) break;
  }
  return f;
}

// dx/da from the series P = x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a + 1) ... (a + n)).
double gamma_grad_series(double alpha, double x, double eps) {
  // The term t_n = x^n / ((a + 1) ... (a + n)) has d t_n / da = -t_n H_n with H_n = sum_k 1 / (a + k): the loop's
  // dependency chains are one multiply (t) and one add (H); the division is off them.
  double t = 1, h = 0, sum = 1, dsum = 0;
  for (int n = 1; n <= kMaxTerms; ++n) {
    double r = 1 / (alpha + n);
    t *= x * r;
    h += r;
    double dt = -t * h;
    sum += t;
    dsum += dt;
    if (t <= eps * sum && std::fabs(dt) <= eps * std::fabs(dsum)) break;
  }
  return -(x / alpha) * ((std::log(x) - spm::digamma(alpha + 1)) * sum + dsum);
}

// dx/da from Legendre's continued fraction of Q = 1 - P (fast for x well past a + 1).
double gamma_grad_continued_fraction(double alpha, double x, double eps) {
  Dual a{alpha, 1.0};
  Dual h = constant(1.0) / continued_fraction(constant(x + 1) - a, [&](int n) {
             return std::pair{constant(-n) * (constant(n) - a), constant(x + 2 * n + 1) - a};
           }, eps);
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

double gamma_grad(double alpha, double x, double eps) {
  if (!(std::isfinite(alpha) && alpha > 0 && x >= 0)) return NAN;
  if (x == 0) return 0.0;  // an underflowed draw
  if (alpha > kAsymptotic) return gamma_grad_asymptotic(alpha, x);
  // The series of P converges at any x, and is cheaper per step than the continued fraction of Q; past the mean
  // the two parts of dP/da cancel in part, but up to a + 1 + sqrt(a + 1) the result stays within 3e-14 of mpmath
  // (a from 1e-4 to 50).
  bool series = x < alpha + 1 + std::sqrt(alpha + 1);
  return series ? gamma_grad_series(alpha, x, eps) : gamma_grad_continued_fraction(alpha, x, eps);
}

// 1 / f with I_x(a, b) = x^a (1-x)^b / (a B(a, b)) / f: the incomplete beta function's continued fraction,
// which converges fast for x < (a + 1) / (a + b + 2).
Dual beta_continued_fraction(Dual a, Dual b, double x, double eps) {
  return constant(1.0) / continued_fraction(constant(1.0), [&](int n) {
           int m = n / 2;
           Dual top = n % 2 ? constant(-x) * (a + constant(m)) * (a + b + constant(m))
                            : constant(m * x) * (b - constant(m));
           Dual bottom = n % 2 ? (a + constant(2 * m)) * (a + constant(2 * m + 1))
                               : (a + constant(2 * m - 1)) * (a + constant(2 * m));
           return std::pair{top / bottom, constant(1.0)};
         }, eps);
}

// -(dI_x(a, b)/da) / pdf(x) / (1 - x) with b = total - a held fixed: the scaled implicit gradient of a
// Beta(a, b) draw x; the continued fraction of I_{1-x}(b, a) past the mean.
double beta_grad(double x, double alpha, double total, double eps) {
  double beta = total - alpha;
  if (!(std::isfinite(alpha) && std::isfinite(beta) && alpha > 0 && beta >= 0 && x >= 0 && x <= 1)) return NAN;
  if (x == 0 || beta == 0) return 0.0;  // a draw at 0, or a one-component Dirichlet (always 1)
  double shared = spm::digamma(alpha + beta) - spm::digamma(alpha);
  if (x > (alpha + 1) / (total + 2)) {
    Dual h = beta_continued_fraction(constant(beta), Dual{alpha, 1.0}, 1 - x, eps);
    return (x / beta) * (h.v * (std::log(x) + shared) + h.d);
  }
  Dual h = beta_continued_fraction(Dual{alpha, 1.0}, constant(beta), x, eps);
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

// The key and the first counter of n elements' draws on g (the default generator when null).
std::pair<uint64_t, uint64_t> reserve_draws(Generator* g, int64_t n) {
  Generator& gen = *gen_or_default(g);
  return {gen.seed, gen.reserve(uint64_t(n) * kPerElement)};
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

// The float32 or float64 CPU tensor t, contiguous (no autograd); TypeError naming op otherwise.
Tensor host_float(const Tensor& t, const char* op) {
  SX_CHECK(t->device().type == DeviceType::CPU && (t->dtype == DType::Float32 || t->dtype == DType::Float64),
           TypeError, "[", op, "] expects a float32 or float64 CPU tensor, got ", describe(t));
  return t->is_contiguous() ? t : clone_nograd(t);
}

// The draw's floor: the smallest normal number of the result type (PyTorch clamps to it too).
template <class T> double tiny() { return double(std::numeric_limits<T>::min()); }
template <class T> double tolerance() { return std::is_same_v<T, float> ? kEps32 : kEps64; }

// The gradient a backward closure returns: computed without recording; under create_graph, a result whose own
// backward raises (these gradients are first order only, as PyTorch's).
Tensor first_order(const char* node, const Tensor& g, Tensor grad) {
  if (!grad_mode::enabled() || !g->requires_grad) return grad;
  return record(node, {g}, grad, [node](const Tensor&) -> TensorList {
    throw RuntimeError(msg("[", node, "] is first order only: its gradient has no gradient"));
  });
}

}  // namespace

Tensor standard_gamma_grad(const Tensor& alpha, const Tensor& x) {
  static const char* const names[] = {"alpha", "x"};
  return map_elements("_standard_gamma_grad", {alpha, x}, names, [](const TensorList& c, int64_t i) {
    return gamma_grad(c[0]->data<double>()[i], c[1]->data<double>()[i], kEps64);
  });
}

Tensor log_standard_gamma(const Tensor& alpha, Generator* g) {
  Tensor a = host_float64(alpha, "_log_standard_gamma", "alpha");
  auto [seed, base] = reserve_draws(g, a->numel());
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
    return beta_grad(c[0]->data<double>()[i], c[1]->data<double>()[i], c[2]->data<double>()[i], kEps64);
  });
}

}  // namespace sx

namespace sx {

Tensor standard_gamma(const Tensor& alpha, Generator* g) {
  const char* op = "_standard_gamma";
  Tensor a = host_float(alpha, op);
  auto [seed, base] = reserve_draws(g, a->numel());
  Tensor out = empty(a->shape, a->dtype);
  SX_DISPATCH_F32_F64(a->dtype, op, [&] {
    const scalar_t* in = a->data<scalar_t>();
    scalar_t* o = out->data<scalar_t>();
    parallel_for(out->numel(), 16, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i)
        o[i] = scalar_t(std::max(std::exp(log_gamma_draw(in[i], seed, base, i)), tiny<scalar_t>()));
    });
  });
  if (!needs_grad({&alpha})) return out;
  Saved sa(a), so(alias_detached(out));
  return record("StandardGammaBackward", {alpha}, out, [sa, so](const Tensor& g) {
    const Tensor &a = sa.get(), &x = so.get();
    Tensor gc = host_float(cast_nograd(g, a->dtype), "_standard_gamma backward"), grad = empty(a->shape, a->dtype);
    SX_DISPATCH_F32_F64(a->dtype, "_standard_gamma backward", [&] {
      const scalar_t *pa = a->data<scalar_t>(), *px = x->data<scalar_t>(), *pg = gc->data<scalar_t>();
      scalar_t* o = grad->data<scalar_t>();
      parallel_for(grad->numel(), 16, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) o[i] = scalar_t(pg[i] * gamma_grad(pa[i], px[i], tolerance<scalar_t>()));
      });
    });
    return TensorList{first_order("StandardGammaBackward", g, grad)};
  });
}

Tensor sample_dirichlet(const Tensor& alpha, Generator* g) {
  const char* op = "_sample_dirichlet";
  SX_CHECK(alpha->dim() >= 1, ValueError, "[", op, "] concentration must have at least one dim, got ", describe(alpha));
  Tensor a = host_float(alpha, op);
  int64_t k = a->shape.back(), rows = k ? a->numel() / k : 0;
  auto [seed, base] = reserve_draws(g, a->numel());
  Tensor out = empty(a->shape, a->dtype);
  SX_DISPATCH_F32_F64(a->dtype, op, [&] {
    const scalar_t* in = a->data<scalar_t>();
    scalar_t* o = out->data<scalar_t>();
    parallel_for(rows, 4, [&](int64_t lo, int64_t hi) {
      std::vector<double> logs(static_cast<size_t>(k));
      for (int64_t r = lo; r < hi; ++r) {  // normalised gammas, from their logs (tiny concentrations underflow)
        double top = -INFINITY, total = 0;
        for (int64_t j = 0; j < k; ++j)
          top = std::max(top, logs[j] = log_gamma_draw(in[r * k + j], seed, base, r * k + j));
        for (int64_t j = 0; j < k; ++j) total += logs[j] = std::exp(logs[j] - top);
        for (int64_t j = 0; j < k; ++j) o[r * k + j] = scalar_t(std::max(logs[j] / total, tiny<scalar_t>()));
      }
    });
  });
  if (!needs_grad({&alpha})) return out;
  Saved sa(a), so(alias_detached(out));
  return record("DirichletBackward", {alpha}, out, [sa, so, k, rows](const Tensor& g) {
    const Tensor &a = sa.get(), &x = so.get();
    Tensor gc = host_float(cast_nograd(g, a->dtype), "_sample_dirichlet backward"), grad = empty(a->shape, a->dtype);
    SX_DISPATCH_F32_F64(a->dtype, "_sample_dirichlet backward", [&] {
      const scalar_t *pa = a->data<scalar_t>(), *px = x->data<scalar_t>(), *pg = gc->data<scalar_t>();
      scalar_t* o = grad->data<scalar_t>();
      parallel_for(rows, 4, [&](int64_t lo, int64_t hi) {
        for (int64_t r = lo; r < hi; ++r) {  // g_j (grad_j - sum_i x_i grad_i), g_j the Beta marginal's gradient
          const scalar_t *ar = pa + r * k, *xr = px + r * k, *gr = pg + r * k;
          double total = 0, dot = 0;
          for (int64_t j = 0; j < k; ++j) total += ar[j], dot += double(xr[j]) * gr[j];
          for (int64_t j = 0; j < k; ++j)
            o[r * k + j] = scalar_t(beta_grad(xr[j], ar[j], total, tolerance<scalar_t>()) * (gr[j] - dot));
        }
      });
    });
    return TensorList{first_order("DirichletBackward", g, grad)};
  });
}

}  // namespace sx
