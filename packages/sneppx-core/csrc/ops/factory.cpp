// Tensor factories and random numbers. Random draws use the counter-based generator, so element
// i of a draw is the same whatever the thread count.
#include <algorithm>
#include <cmath>

#include "ops/kernels.h"
#include "core/default_dtype.h"
#include "ops/common.h"

namespace sx {

SX_DEFINE_KERNEL(kern::arange);
SX_DEFINE_KERNEL(kern::random);
SX_DEFINE_KERNEL(kern::randint);
SX_DEFINE_KERNEL(kern::randperm);
SX_DEFINE_KERNEL(kern::multinomial);

// PyTorch refuses a Python number that the tensor's dtype cannot hold (int32 fill_(2**40) used to
// store zeros); NaN and infinities are fine for floating dtypes, any value is fine for bool.
void check_scalar_fits(const Scalar& v, DType dt, const char* op) {
  dt = real_part_dtype(dt);  // a complex dtype: its parts'
  if (dt == DType::Bool || dt == DType::Float64 || v.kind == Scalar::Bool) return;
  double x = v.kind == Scalar::Float ? v.d : double(v.i);
  bool ok = true;
  if (is_floating(dt)) {
    double hi = dt == DType::Float16 ? 65504.0 : dt == DType::BFloat16 ? 3.3895313892515355e38 : 3.4028234663852886e38;
    ok = !std::isfinite(x) || std::fabs(x) <= hi;
  } else {  // a float truncates toward zero, like the cast
    auto [lo, hi] = int_range(dt);
    if (v.kind == Scalar::Float)
      ok = std::isfinite(x) && x > double(lo) - 1 && x < double(hi) + 1;
    else
      ok = v.i >= lo && v.i <= hi;
  }
  if (!ok) {
    std::string shown = v.kind == Scalar::Float ? msg(v.d) : msg(v.i);
    throw RuntimeError(msg("[", op, "] value ", shown, " cannot be converted to ", dtype_name(dt), " without overflow"));
  }
}

Generator& default_generator() {
  static Generator g;
  return g;
}
Generator* gen_or_default(Generator* g) { return g ? g : &default_generator(); }

Tensor full(const Shape& s, const Scalar& v, DType dt, Device dev) {
  if (is_integral(dt, false)) check_scalar_fits(v, dt, "full");  // as PyTorch (internal float fills may be huge)
  Tensor t = empty(s, dt, dev);
  fill_into(t, v);
  return t;
}
Tensor zeros(const Shape& s, DType dt, Device dev) { return full(s, Scalar(int64_t(0)), dt, dev); }
Tensor ones(const Shape& s, DType dt, Device dev) { return full(s, Scalar(int64_t(1)), dt, dev); }
Tensor zeros_like(const Tensor& t) { return zeros(t->shape, t->dtype, t->device()); }
Tensor ones_like(const Tensor& t) { return ones(t->shape, t->dtype, t->device()); }
void fill_(const Tensor& t, const Scalar& v) {
  SX_CHECK(!(grad_mode::enabled() && t->requires_grad && t->is_leaf()), RuntimeError,
           "[fill_] a leaf tensor that requires grad is being used in an in-place operation");
  check_scalar_fits(v, t->dtype, "fill_");
  if (grad_mode::enabled() && t->requires_grad) {  // a tensor with history: the fill cuts it (gradient 0)
    assign_inplace(t, scalar_tensor(v, t->dtype, t->device()), "fill_");
    return;
  }
  t->check_writable("fill_");
  fill_into(t, v);
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
  kern::arange(t->device())(t, start, step, end, false);
  return t;
}

Tensor linspace(double start, double end, int64_t steps, DType dt) {
  SX_CHECK(steps >= 0, ValueError, "[linspace] number of steps must be non-negative, got ", steps);
  Tensor t = empty({steps}, dt);
  double step = steps > 1 ? (end - start) / double(steps - 1) : 0;
  kern::arange(t->device())(t, start, step, end, true);  // from both ends, as PyTorch: the end point is exact
  return t;
}

Tensor eye(int64_t n, int64_t m, DType dt) {
  SX_CHECK(n >= 0 && m >= 0, ValueError, "[eye] sizes must be non-negative, got ", n, " and ", m);
  Tensor t = zeros({n, m}, dt);
  Tensor diag = make_view(t, {std::min(n, m)}, {m + 1}, 0);
  kern::fill(t->device())(diag, Scalar(int64_t(1)));
  return t;
}

Tensor tri_indices(int64_t row, int64_t col, int64_t offset, bool upper) {
  const char* op = upper ? "triu_indices" : "tril_indices";
  constexpr int64_t kMax = int64_t(1) << 31;
  SX_CHECK(row >= 0 && col >= 0 && row < kMax && col < kMax, ValueError, "[", op,
           "] row and col must lie in [0, 2^31), got ", row, " and ", col);
  if (col == 0) return empty({2, 0}, DType::Int64);
  offset = std::clamp(offset, -row - 1, col + 1);  // any offset beyond selects what these do
  // Row r keeps the columns [lo(r), hi(r)): lower [0, clamp(r + offset + 1)), upper [clamp(r + offset), col).
  auto clampc = [col](int64_t t) { return std::clamp<int64_t>(t, 0, col); };
  // Rows with no column are skipped: lower ones before -offset, upper ones from col - offset on.
  const int64_t r0 = upper ? 0 : std::clamp<int64_t>(-offset, 0, row);
  const int64_t r1 = upper ? std::clamp<int64_t>(col - offset, 0, row) : row;
  int64_t n = 0;
  for (int64_t r = r0; r < r1; ++r) n += upper ? col - clampc(r + offset) : clampc(r + offset + 1);
  Tensor out = empty({2, n}, DType::Int64);
  int64_t *rows = out->data<int64_t>(), *cols = rows + n;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t lo = upper ? clampc(r + offset) : 0, hi = upper ? col : clampc(r + offset + 1);
    for (int64_t c = lo; c < hi; ++c) *rows++ = r, *cols++ = c;
  }
  return out;
}

namespace {
// Reserves n counters of the generator (at least one, so that empty draws still advance it).
std::pair<uint64_t, uint64_t> draw(Generator* g, int64_t n) {
  Generator* gen = gen_or_default(g);
  return {gen->seed, gen->reserve(uint64_t(std::max<int64_t>(n, 1)))};
}

Tensor random_tensor(Distribution dist, const Shape& s, DType dt, Generator* g, double a, double b, const char* op) {
  SX_CHECK(is_floating(dt), TypeError, "[", op, "] expected a floating dtype, got ", dtype_name(dt));
  Tensor t = empty(s, dt);
  auto [seed, base] = draw(g, t->numel());
  kern::random(t->device())(dist, t, seed, base, a, b);
  return t;
}
}  // namespace

Tensor rand(const Shape& s, DType dt, Generator* g) {
  if (is_complex(dt)) return random_complex(s, dt, g, false);
  return random_tensor(Distribution::Uniform, s, dt, g, 0, 1, "rand");
}
Tensor randn(const Shape& s, DType dt, Generator* g) {
  if (is_complex(dt)) return random_complex(s, dt, g, true);
  return random_tensor(Distribution::Normal, s, dt, g, 0, 1, "randn");
}

Tensor randint(int64_t low, int64_t high, const Shape& s, DType dt, Generator* g) {
  SX_CHECK(high > low, ValueError, "[randint] expected low < high, got low=", low, " high=", high);
  Tensor t = empty(s, dt);
  auto [seed, base] = draw(g, t->numel());
  kern::randint(t->device())(t, seed, base, low, uint64_t(high) - uint64_t(low));  // no signed overflow
  return t;
}

Tensor randperm(int64_t n, DType dt, Generator* g) {
  SX_CHECK(n >= 0, ValueError, "[randperm] n must be non-negative, got ", n);
  // The permutation is built in the output itself: the tensor allocator reports an impossible n as
  // MemoryError (a std::vector of n would throw bad_alloc, or abort under AddressSanitizer).
  Tensor t = empty({n}, DType::Int64);
  auto [seed, base] = draw(g, n);
  kern::randperm(t->device())(t, seed, base);
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
  {
    NoGradGuard ng;
    Tensor p2 = reshape(p, {rows, k});
    Tensor zero = zeros({}, DType::Float64, p->device());
    Tensor ok = binary(BinaryOp::And, binary(BinaryOp::Eq, sub(p2, p2), zero), binary(BinaryOp::Ge, p2, zero));
    SX_CHECK(item_bool(all(ok, std::nullopt, false)), ValueError,
             "[multinomial] probabilities must be finite and non-negative, got values from ",
             item_double(amin(p2, std::nullopt, false)), " to ", item_double(amax(p2, std::nullopt, false)), " in ",
             describe(probs));
    // Every row needs a positive entry per draw that removes one (one in all with replacement).
    Tensor positive = sum(binary(BinaryOp::Gt, p2, zero), IntList{1}, false, DType::Int64);
    int64_t least = item_int(amin(positive, std::nullopt, false));
    SX_CHECK(least >= (replacement ? 1 : n), ValueError, "[multinomial] a row has ", least,
             " categories of positive probability, too few to draw ", n, replacement ? "" : " without replacement");
  }
  Tensor out = empty({rows, n}, DType::Int64, probs->device());
  auto [seed, base] = draw(g, rows * n);
  kern::multinomial(out->device())(out, reshape(p, {rows, k}), replacement, seed, base);
  return probs->dim() == 2 ? out : reshape(out, {n});
}

Tensor bernoulli(const Tensor& p, Generator* g) {
  Tensor pc = contiguous(cast_nograd(detach(p), DType::Float64));
  Tensor u = rand(p->shape, DType::Float64, g);
  Tensor out = empty(p->shape, is_floating(p->dtype) ? p->dtype : default_float_dtype());
  Tensor mask = empty(p->shape, DType::Bool);
  kern::binary(mask->device())(BinaryOp::Lt, mask, u, pc);
  copy_into(out, mask);
  return out;
}

void uniform_(const Tensor& t, double lo, double hi, Generator* g) {
  SX_CHECK(!is_complex(t->dtype), TypeError, "[uniform_] is not implemented for complex tensors, got ", describe(t),
           "; draw the parts (view_as_real(z).uniform_(lo, hi))");
  Tensor r = random_tensor(Distribution::Uniform, t->shape, is_floating(t->dtype) ? t->dtype : DType::Float64, g, lo,
                           hi, "uniform_");
  NoGradGuard ng;
  assign_inplace(t, r, "uniform_");
}

void normal_(const Tensor& t, double mean, double std, Generator* g) {
  SX_CHECK(!is_complex(t->dtype), TypeError, "[normal_] is not implemented for complex tensors, got ", describe(t),
           "; randn(..., dtype=complex64) draws both parts");
  Tensor r = random_tensor(Distribution::Normal, t->shape, is_floating(t->dtype) ? t->dtype : DType::Float64, g, mean,
                           std, "normal_");
  NoGradGuard ng;
  assign_inplace(t, r, "normal_");
}

}  // namespace sx
