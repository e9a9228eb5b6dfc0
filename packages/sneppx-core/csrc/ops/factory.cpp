// Tensor factories and random numbers. Random draws use the counter-based generator, so element
// i of a draw is the same whatever the thread count.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/parallel.h"
#include "ops/kernels.h"
#include "ops/common.h"

namespace sx {

namespace {
// PyTorch refuses a Python number that the tensor's dtype cannot hold (int32 fill_(2**40) used to
// store zeros); NaN and infinities are fine for floating dtypes, any value is fine for bool.
void check_scalar_fits(const Scalar& v, DType dt, const char* op) {
  if (dt == DType::Bool || dt == DType::Float64 || v.kind == Scalar::Bool) return;
  double x = v.kind == Scalar::Float ? v.d : double(v.i);
  bool ok = true;
  if (is_floating(dt)) {
    double hi = dt == DType::Float16 ? 65504.0 : dt == DType::BFloat16 ? 3.3895313892515355e38 : 3.4028234663852886e38;
    ok = !std::isfinite(x) || std::fabs(x) <= hi;
  } else if (v.kind == Scalar::Float) {  // truncates toward zero, like the cast
    double lo = dt == DType::UInt8 ? 0.0 : dt == DType::Int32 ? -2147483648.0 : -9223372036854775808.0;
    double hi = dt == DType::UInt8 ? 256.0 : dt == DType::Int32 ? 2147483648.0 : 9223372036854775808.0;
    ok = std::isfinite(x) && x > lo - 1 && x < hi;
  } else if (dt == DType::UInt8) {
    ok = v.i >= 0 && v.i <= 255;
  } else if (dt == DType::Int32) {
    ok = v.i >= INT32_MIN && v.i <= INT32_MAX;
  }
  if (!ok) {
    std::string shown = v.kind == Scalar::Float ? msg(v.d) : msg(v.i);
    throw RuntimeError(msg("[", op, "] value ", shown, " cannot be converted to ", dtype_name(dt), " without overflow"));
  }
}
}  // namespace

Generator& default_generator() {
  static Generator g;
  return g;
}
Generator* gen_or_default(Generator* g) { return g ? g : &default_generator(); }

Tensor full(const Shape& s, const Scalar& v, DType dt, Device dev) {
  Tensor t = empty(s, dt, dev);
  kern::fill(t->device())(t, v);
  return t;
}
Tensor zeros(const Shape& s, DType dt, Device dev) {
  Tensor t = empty(s, dt, dev);
  if (dev.type == DeviceType::CPU) std::memset(t->raw(), 0, size_t(t->numel()) * itemsize(dt));
  else kern::fill(dev)(t, Scalar(int64_t(0)));
  return t;
}
Tensor ones(const Shape& s, DType dt, Device dev) { return full(s, Scalar(int64_t(1)), dt, dev); }
Tensor zeros_like(const Tensor& t) { return zeros(t->shape, t->dtype, t->device()); }
Tensor ones_like(const Tensor& t) { return ones(t->shape, t->dtype, t->device()); }
void fill_(const Tensor& t, const Scalar& v) {
  SX_CHECK(!(grad_mode::enabled() && t->requires_grad && t->is_leaf()), RuntimeError,
           "[fill_] a leaf tensor that requires grad is being used in an in-place operation");
  t->check_writable("fill_");
  check_scalar_fits(v, t->dtype, "fill_");
  kern::fill(t->device())(t, v);
  t->bump_version();
}

Tensor arange(double start, double end, double step, DType dt) {
  SX_CHECK(step != 0 && std::isfinite(start) && std::isfinite(end) && std::isfinite(step), ValueError,
           "[arange] start, end and step must be finite and step non-zero, got ", start, ", ", end, ", ", step);
  SX_CHECK((end - start) / step >= 0, ValueError, "[arange] upper bound and step sign are inconsistent: start=",
           start, " end=", end, " step=", step);
  double n = std::ceil((end - start) / step);
  SX_CHECK(n < 1e15, MemoryError, "[arange] ", n, " elements are too many to allocate");
  Tensor t = empty({int64_t(n)}, dt);
  SX_DISPATCH_ALL(dt, "arange", [&] {
    auto* p = t->data<scalar_t>();
    for (int64_t i = 0; i < int64_t(n); ++i) p[i] = scalar_t(acc_t<scalar_t>(start + double(i) * step));
  });
  return t;
}

Tensor linspace(double start, double end, int64_t steps, DType dt) {
  SX_CHECK(steps >= 0, ValueError, "[linspace] number of steps must be non-negative, got ", steps);
  Tensor t = empty({steps}, dt);
  double step = steps > 1 ? (end - start) / double(steps - 1) : 0;
  SX_DISPATCH_ALL(dt, "linspace", [&] {
    auto* p = t->data<scalar_t>();
    int64_t half = steps / 2;  // fill from both ends, as PyTorch does, so the end point is exact
    for (int64_t i = 0; i < steps; ++i)
      p[i] = scalar_t(acc_t<scalar_t>(i < half ? start + step * double(i) : end - step * double(steps - 1 - i)));
  });
  return t;
}

Tensor eye(int64_t n, int64_t m, DType dt) {
  SX_CHECK(n >= 0 && m >= 0, ValueError, "[eye] sizes must be non-negative, got ", n, " and ", m);
  Tensor t = zeros({n, m}, dt);
  SX_DISPATCH_ALL(dt, "eye", [&] {
    auto* p = t->data<scalar_t>();
    for (int64_t i = 0; i < std::min(n, m); ++i) p[i * m + i] = scalar_t(acc_t<scalar_t>(1));
  });
  return t;
}

// Fills t (contiguous) with f(bits0, bits1, bits2, bits3 of counter base+i/.., index).
template <typename F>
static uint64_t fill_random(const Tensor& t, Generator* g, F f) {
  Generator* gen = gen_or_default(g);
  int64_t n = t->numel();
  uint64_t base = gen->reserve(uint64_t(n));
  uint64_t seed = gen->seed;
  SX_DISPATCH_ALL(t->dtype, "random", [&] {
    auto* p = t->data<scalar_t>();
    parallel_for(n, 16384, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) p[i] = scalar_t(acc_t<scalar_t>(f(philox(seed, base + uint64_t(i)))));
    });
  });
  return base;  // the first counter of this draw
}

Tensor rand(const Shape& s, DType dt, Generator* g) {
  SX_CHECK(is_floating(dt), TypeError, "[rand] expected a floating dtype, got ", dtype_name(dt));
  Tensor t = empty(s, dt);
  fill_random(t, g, [](const std::array<uint32_t, 4>& r) { return u01d(r[0], r[1]); });
  return t;
}

static double normal_from(const std::array<uint32_t, 4>& r) {
  double u1 = 1.0 - u01d(r[0], r[1]), u2 = u01d(r[2], r[3]);  // u1 in (0, 1]
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

Tensor randn(const Shape& s, DType dt, Generator* g) {
  SX_CHECK(is_floating(dt), TypeError, "[randn] expected a floating dtype, got ", dtype_name(dt));
  Tensor t = empty(s, dt);
  fill_random(t, g, normal_from);
  return t;
}

Tensor randint(int64_t low, int64_t high, const Shape& s, DType dt, Generator* g) {
  SX_CHECK(high > low, ValueError, "[randint] expected low < high, got low=", low, " high=", high);
  uint64_t range = uint64_t(high) - uint64_t(low);  // no signed overflow for the widest ranges
  Tensor t = empty(s, dt);
  uint64_t base = fill_random(t, g, [=](const std::array<uint32_t, 4>& r) {
    uint64_t bits = (uint64_t(r[0]) << 32) | r[1];
    return double(low + int64_t(bits % range));
  });
  if (dt == DType::Int64) {  // exact for ranges beyond 2^53
    Generator* gen = gen_or_default(g);
    auto* p = t->data<int64_t>();
    for (int64_t i = 0; i < t->numel(); ++i) {
      auto r = philox(gen->seed, base + uint64_t(i));
      p[i] = int64_t(uint64_t(low) + ((uint64_t(r[0]) << 32) | r[1]) % range);
    }
  }
  return t;
}

Tensor randperm(int64_t n, DType dt, Generator* g) {
  SX_CHECK(n >= 0, ValueError, "[randperm] n must be non-negative, got ", n);
  // Shuffle in the output itself: the tensor allocator reports an impossible n as MemoryError
  // (a std::vector of n would throw bad_alloc, or abort under AddressSanitizer).
  Tensor t = empty({n}, DType::Int64);
  int64_t* perm = t->data<int64_t>();
  Generator* gen = gen_or_default(g);
  uint64_t base = gen->reserve(uint64_t(std::max<int64_t>(n, 1)));
  std::iota(perm, perm + n, int64_t(0));
  for (int64_t i = n - 1; i > 0; --i) {  // Fisher-Yates
    auto r = philox(gen->seed, base + uint64_t(i));
    int64_t j = int64_t(((uint64_t(r[0]) << 32) | r[1]) % uint64_t(i + 1));
    std::swap(perm[i], perm[j]);
  }
  return cast_nograd(t, dt);
}

Tensor multinomial(const Tensor& probs, int64_t n, bool replacement, Generator* g) {
  SX_CHECK(probs->dim() == 1 || probs->dim() == 2, ValueError, "[multinomial] expected a 1-D or 2-D tensor, got ",
           describe(probs));
  int64_t rows = probs->dim() == 2 ? probs->shape[0] : 1, k = probs->shape.back();
  SX_CHECK(k > 0, ValueError, "[multinomial] number of categories cannot be zero");
  SX_CHECK(n > 0 && (replacement || n <= k), ValueError, "[multinomial] cannot draw ", n,
           " samples without replacement from ", k, " categories");
  Tensor p = contiguous(cast_nograd(detach(probs), DType::Float64));
  const double* pp = p->data<double>();
  for (int64_t i = 0; i < rows * k; ++i)
    SX_CHECK(std::isfinite(pp[i]) && pp[i] >= 0, ValueError,
             "[multinomial] probabilities must be finite and non-negative, got ", pp[i]);
  Generator* gen = gen_or_default(g);
  uint64_t base = gen->reserve(uint64_t(rows * n));
  Tensor out = empty(probs->dim() == 2 ? Shape{rows, n} : Shape{n}, DType::Int64);
  int64_t* o = out->data<int64_t>();
  std::vector<double> w(static_cast<size_t>(k));
  for (int64_t r = 0; r < rows; ++r) {
    std::copy(pp + r * k, pp + (r + 1) * k, w.begin());
    for (int64_t s = 0; s < n; ++s) {
      double total = 0;
      for (double v : w) total += v;
      SX_CHECK(total > 0, ValueError, "[multinomial] row ", r, " has no probability mass left");
      auto bits = philox(gen->seed, base + uint64_t(r * n + s));
      double u = u01d(bits[0], bits[1]) * total, acc = 0;
      int64_t pick = k - 1;
      for (int64_t c = 0; c < k; ++c) {
        acc += w[size_t(c)];
        if (u < acc && w[size_t(c)] > 0) { pick = c; break; }
      }
      while (w[size_t(pick)] <= 0 && pick > 0) --pick;  // rounding at the top end
      o[r * n + s] = pick;
      if (!replacement) w[size_t(pick)] = 0;
    }
  }
  return out;
}

Tensor bernoulli(const Tensor& p, Generator* g) {
  Tensor pc = contiguous(cast_nograd(detach(p), DType::Float64));
  Tensor u = rand(p->shape, DType::Float64, g);
  Tensor out = empty(p->shape, is_floating(p->dtype) ? p->dtype : DType::Float32);
  Tensor mask = empty(p->shape, DType::Bool);
  kern::binary(mask->device())(BinaryOp::Lt, mask, u, pc);
  kern::copy(out->device())(out, mask);
  return out;
}

void uniform_(const Tensor& t, double lo, double hi, Generator* g) {
  Tensor r = rand(t->shape, DType::Float64, g);
  NoGradGuard ng;
  assign_inplace(t, add(mul(r, Scalar(hi - lo)), Scalar(lo)), "uniform_");
}

void normal_(const Tensor& t, double mean, double std, Generator* g) {
  Tensor r = randn(t->shape, DType::Float64, g);
  NoGradGuard ng;
  assign_inplace(t, add(mul(r, Scalar(std)), Scalar(mean)), "normal_");
}

}  // namespace sx
