// CPU kernels of the factories and random draws (slots in ops/kernels.h). Draw i uses Philox
// counter base + i, so every element is the same whatever the thread count.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>

#include "core/generator.h"
#include "core/parallel.h"
#include "ops/kernels.h"

namespace sx::cpu {
namespace {

constexpr int64_t kRandomGrain = 16384;

void arange_cpu(const Tensor& out, double start, double step, double end, bool from_both_ends) {
  int64_t n = out->numel(), half = from_both_ends ? n / 2 : n;
  SX_DISPATCH_ALL(out->dtype, "arange", [&] {
    auto* p = out->data<scalar_t>();
    for (int64_t i = 0; i < n; ++i)
      p[i] = scalar_t(acc_t<scalar_t>(i < half ? start + step * double(i) : end - step * double(n - 1 - i)));
  });
}

double normal_from(const std::array<uint32_t, 4>& r) {  // Box-Muller on 53-bit uniforms
  double u1 = 1.0 - u01d(r[0], r[1]), u2 = u01d(r[2], r[3]);  // u1 in (0, 1]
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

void random_cpu(Distribution dist, const Tensor& out, uint64_t seed, uint64_t base, double a, double b) {
  int64_t n = out->numel();
  SX_DISPATCH_FLOAT(out->dtype, "random", [&] {
    using T = scalar_t;
    T* p = out->data<T>();
    parallel_for(n, kRandomGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        auto r = philox(seed, base + uint64_t(i));
        if (dist == Distribution::Normal) {
          p[i] = T(acc_t<T>(a + b * normal_from(r)));
          continue;
        }
        T v = T(acc_t<T>(a + (b - a) * u01d(r[0], r[1])));
        if constexpr (std::is_floating_point_v<T>) {  // rounding must not reach the open end b
          if (b > a && double(v) >= b) v = std::nextafter(T(b), T(a));
        }
        p[i] = v;
      }
    });
  });
}

void randint_cpu(const Tensor& out, uint64_t seed, uint64_t base, int64_t low, uint64_t range) {
  int64_t n = out->numel();
  SX_DISPATCH_ALL(out->dtype, "randint", [&] {
    using T = scalar_t;
    T* p = out->data<T>();
    parallel_for(n, kRandomGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        auto r = philox(seed, base + uint64_t(i));
        auto v = int64_t(uint64_t(low) + ((uint64_t(r[0]) << 32) | r[1]) % range);  // wraps, never overflows
        if constexpr (std::is_integral_v<T>) p[i] = T(v);
        else p[i] = T(acc_t<T>(double(v)));
      }
    });
  });
}

void randperm_cpu(const Tensor& out, uint64_t seed, uint64_t base) {
  int64_t n = out->numel();
  int64_t* perm = out->data<int64_t>();
  std::iota(perm, perm + n, int64_t(0));
  for (int64_t i = n - 1; i > 0; --i) {  // Fisher-Yates
    auto r = philox(seed, base + uint64_t(i));
    int64_t j = int64_t(((uint64_t(r[0]) << 32) | r[1]) % uint64_t(i + 1));
    std::swap(perm[i], perm[j]);
  }
}

void multinomial_cpu(const Tensor& out, const Tensor& probs, bool replacement, uint64_t seed, uint64_t base) {
  int64_t rows = probs->shape[0], k = probs->shape[1], n = out->shape[1];
  const double* pp = probs->data<double>();
  int64_t* o = out->data<int64_t>();
  std::vector<double> w(static_cast<size_t>(k));
  for (int64_t r = 0; r < rows; ++r) {
    std::copy(pp + r * k, pp + (r + 1) * k, w.begin());
    for (int64_t s = 0; s < n; ++s) {
      double total = 0;
      for (double v : w) total += v;
      auto bits = philox(seed, base + uint64_t(r * n + s));
      double u = u01d(bits[0], bits[1]) * total, acc = 0;
      int64_t pick = k - 1;
      for (int64_t c = 0; c < k; ++c) {
        acc += w[size_t(c)];
        if (u < acc && w[size_t(c)] > 0) {
          pick = c;
          break;
        }
      }
      while (w[size_t(pick)] <= 0 && pick > 0) --pick;  // rounding at the top end
      o[r * n + s] = pick;
      if (!replacement) w[size_t(pick)] = 0;
    }
  }
}

}  // namespace

SX_REGISTER_KERNEL(kern::arange, CPU, &arange_cpu);
SX_REGISTER_KERNEL(kern::random, CPU, &random_cpu);
SX_REGISTER_KERNEL(kern::randint, CPU, &randint_cpu);
SX_REGISTER_KERNEL(kern::randperm, CPU, &randperm_cpu);
SX_REGISTER_KERNEL(kern::multinomial, CPU, &multinomial_cpu);

}  // namespace sx::cpu
