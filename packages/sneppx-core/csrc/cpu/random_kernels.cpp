// CPU kernels of the factories and random draws (slots in ops/kernels.h). Draw i uses Philox
// counter base + i, so every element is the same whatever the thread count.
#include <algorithm>
#include <bit>
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

// ln x for a normal double x in (0, 1]: x = 2^k (1 + f) with 1 + f in [sqrt(2)/2, sqrt(2)), then
// fdlibm's log(1 + f) = f - f^2/2 + s (f^2/2 + R(s^2)), s = f / (2 + f); within 1 ulp. Branch-free, and k
// becomes a double through the exponent bits (AVX2 has no int64 -> double vector conversion), so that
// loops over it vectorise.
inline double log_unit(double x) {
  const uint64_t ix = std::bit_cast<uint64_t>(x) + (0x3ff0000000000000ull - 0x3fe6a09e00000000ull);
  const double k = std::bit_cast<double>(0x4330000000000000ull | (ix >> 52)) - (4503599627370496.0 + 1023.0);
  const double f = std::bit_cast<double>((ix & 0x000fffffffffffffull) + 0x3fe6a09e00000000ull) - 1.0;
  const double hfsq = 0.5 * f * f, s = f / (2.0 + f), z = s * s, w = z * z;
  const double t1 = w * (3.999999999940941908e-01 + w * (2.222219843214978396e-01 + w * 1.531383769920937332e-01));
  const double t2 = z * (6.666666666666735130e-01 +
                         w * (2.857142874366239149e-01 + w * (1.818357216161805012e-01 + w * 1.479819860511658591e-01)));
  return s * (hfsq + t2 + t1) + k * 1.90821492927058770002e-10 - hfsq + f + k * 6.93147180369123816490e-01;
}

// cos(2 pi u) for u in [0, 1): the quadrant q = round(4u) and t = u - q/4 come exactly from u itself, then
// fdlibm's sine and cosine polynomials on x = 2 pi t, |x| <= pi/4 (absolute error about 1e-16: closer
// than cos of the rounded product 2 pi u). Branch-free, for the same reason as log_unit.
inline double cos_2pi(double u) {
  const double big = 4.0 * u + 6755399441055744.0;  // 1.5 * 2^52: 4u rounded to an integer in the low bits
  const double q = big - 6755399441055744.0;
  const double x = (u - 0.25 * q) * 6.28318530717958647692, z = x * x;
  const double sr = 8.33333333332248946124e-03 +
                    z * (-1.98412698298579493134e-04 +
                         z * (2.75573137070700676789e-06 + z * (-2.50507602534068634195e-08 + z * 1.58969099521155010221e-10)));
  const double sn = x + z * x * (-1.66666666666666324348e-01 + z * sr);
  const double cr = z * (4.16666666666666019037e-02 +
                         z * (-1.38888888888741095749e-03 +
                              z * (2.48015872894767294178e-05 +
                                   z * (-2.75573143513906633035e-07 +
                                        z * (2.08757232129817482790e-09 + z * -1.13596475577881948265e-11)))));
  const double hz = 0.5 * z, w = 1.0 - hz;
  const double cs = w + (((1.0 - w) - hz) + z * cr);
  // cos(q pi/2 + x): quadrants 1 and 3 take the sine, 1 and 2 flip the sign; on the bits
  const uint64_t qi = std::bit_cast<uint64_t>(big) & 3, odd = 0 - (qi & 1), neg = ((qi + 1) & 2) << 62;
  return std::bit_cast<double>(((std::bit_cast<uint64_t>(sn) & odd) | (std::bit_cast<uint64_t>(cs) & ~odd)) ^ neg);
}

// Draws [lo, hi): uniforms from Philox (scalar) into a block, then Box-Muller on 53-bit uniforms,
// sqrt(-2 ln u1) cos(2 pi u2) with u1 in (0, 1], as one vector loop over the block.
template <typename T>
void normal_block(T* p, int64_t lo, int64_t hi, uint64_t seed, uint64_t base, double a, double b) {
  constexpr int64_t kBlock = 64;
  double u1[kBlock], u2[kBlock];
  for (int64_t i0 = lo; i0 < hi; i0 += kBlock) {
    const int64_t m = std::min(kBlock, hi - i0);
    for (int64_t j = 0; j < m; ++j) {
      auto r = philox(seed, base + uint64_t(i0 + j));
      u1[j] = 1.0 - u01d(r[0], r[1]);
      u2[j] = u01d(r[2], r[3]);
    }
    for (int64_t j = 0; j < m; ++j)
      p[i0 + j] = T(acc_t<T>(a + b * (std::sqrt(-2.0 * log_unit(u1[j])) * cos_2pi(u2[j]))));
  }
}

void random_cpu(Distribution dist, const Tensor& out, uint64_t seed, uint64_t base, double a, double b) {
  int64_t n = out->numel();
  SX_DISPATCH_FLOAT(out->dtype, "random", [&] {
    using T = scalar_t;
    T* p = out->data<T>();
    parallel_for(n, kRandomGrain, [&](int64_t lo, int64_t hi) {
      if (dist == Distribution::Normal) return normal_block(p, lo, hi, seed, base, a, b);
      for (int64_t i = lo; i < hi; ++i) {
        auto r = philox(seed, base + uint64_t(i));
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
