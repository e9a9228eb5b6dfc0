// CUDA kernels of arange and the random draws. Draw i uses Philox counter base + i of the seed, as
// on the CPU (core/generator.h is compiled for both): uniform draws and randint give the CPU's
// values bit for bit; normal draws take the same uniforms through Box-Muller with the GPU's log and
// cospi (within an ulp or two of the CPU's). randperm and multinomial walk their draws in order on
// one thread per row (the same sequence as the CPU's loops).
#include <cmath>

#include "core/generator.h"
#include "cuda/cuda_util.cuh"
#include "cuda/kernels.h"

namespace sx::cuda {

namespace {

template <typename T>
__global__ void arange_kernel(T* p, int64_t n, int64_t half, double start, double step, double end) {
  using C = acc_t<T>;
  SX_GRID_LOOP(i, n) p[i] = T(C(i < half ? start + step * double(i) : end - step * double(n - 1 - i)));
}

template <typename T>
__global__ void uniform_kernel(T* p, int64_t n, uint64_t seed, uint64_t base, double a, double b) {
  SX_GRID_LOOP(i, n) {
    auto r = philox(seed, base + uint64_t(i));
    T v = T(acc_t<T>(a + (b - a) * u01d(r[0], r[1])));
    if constexpr (std::is_floating_point_v<T>) {  // rounding must not reach the open end b
      if (b > a && double(v) >= b) v = std::nextafter(T(b), T(a));
    }
    p[i] = v;
  }
}

template <typename T>
__global__ void normal_kernel(T* p, int64_t n, uint64_t seed, uint64_t base, double a, double b) {
  SX_GRID_LOOP(i, n) {
    auto r = philox(seed, base + uint64_t(i));
    double u1 = 1.0 - u01d(r[0], r[1]), u2 = u01d(r[2], r[3]);
    p[i] = T(acc_t<T>(a + b * (std::sqrt(-2.0 * std::log(u1)) * ::cospi(2.0 * u2))));
  }
}

template <typename T>
__global__ void randint_kernel(T* p, int64_t n, uint64_t seed, uint64_t base, int64_t low, uint64_t range) {
  SX_GRID_LOOP(i, n) {
    auto r = philox(seed, base + uint64_t(i));
    auto v = int64_t(uint64_t(low) + ((uint64_t(r[0]) << 32) | r[1]) % range);  // wraps, never overflows
    if constexpr (std::is_integral_v<T>) p[i] = T(v);
    else p[i] = T(acc_t<T>(double(v)));
  }
}

__global__ void randperm_kernel(int64_t* perm, int64_t n, uint64_t seed, uint64_t base) {
  for (int64_t i = 0; i < n; ++i) perm[i] = i;
  for (int64_t i = n - 1; i > 0; --i) {  // Fisher-Yates, as on the CPU
    auto r = philox(seed, base + uint64_t(i));
    int64_t j = int64_t(((uint64_t(r[0]) << 32) | r[1]) % uint64_t(i + 1));
    int64_t t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
}

// One thread per row; w is the row's scratch copy of its weights (drawn entries zeroed without replacement).
__global__ void multinomial_kernel(int64_t* out, const double* probs, double* w, int64_t rows, int64_t k, int64_t n,
                                   bool replacement, uint64_t seed, uint64_t base) {
  SX_GRID_LOOP(r, rows) {
    double* wr = w + r * k;
    for (int64_t c = 0; c < k; ++c) wr[c] = probs[r * k + c];
    for (int64_t s = 0; s < n; ++s) {
      double total = 0;
      for (int64_t c = 0; c < k; ++c) total += wr[c];
      auto bits = philox(seed, base + uint64_t(r * n + s));
      double u = u01d(bits[0], bits[1]) * total, acc = 0;
      int64_t pick = k - 1;
      for (int64_t c = 0; c < k; ++c) {
        acc += wr[c];
        if (u < acc && wr[c] > 0) {
          pick = c;
          break;
        }
      }
      while (wr[pick] <= 0 && pick > 0) --pick;  // rounding at the top end
      out[r * n + s] = pick;
      if (!replacement) wr[pick] = 0;
    }
  }
}

}  // namespace

void arange(const Tensor& out, double start, double step, double end, bool from_both_ends) {
  int64_t n = out->numel();
  if (n == 0) return;
  use_device(out->device());
  SX_CUDA_DISPATCH(out->dtype, "arange", [&] {
    using T = scalar_t;
    arange_kernel<T><<<blocks_for(n), kThreads, 0, stream()>>>(out->data<T>(), n, from_both_ends ? n / 2 : n, start,
                                                                step, end);
  });
  check_launch("arange");
}

void random(Distribution dist, const Tensor& out, uint64_t seed, uint64_t base, double a, double b) {
  int64_t n = out->numel();
  if (n == 0) return;
  use_device(out->device());
  SX_CUDA_DISPATCH_FLOATING(out->dtype, "random", [&] {
    using T = scalar_t;
    if (dist == Distribution::Normal)
      normal_kernel<T><<<blocks_for(n), kThreads, 0, stream()>>>(out->data<T>(), n, seed, base, a, b);
    else
      uniform_kernel<T><<<blocks_for(n), kThreads, 0, stream()>>>(out->data<T>(), n, seed, base, a, b);
  });
  check_launch("random");
}

void randint(const Tensor& out, uint64_t seed, uint64_t base, int64_t low, uint64_t range) {
  int64_t n = out->numel();
  if (n == 0) return;
  use_device(out->device());
  SX_CUDA_DISPATCH(out->dtype, "randint", [&] {
    using T = scalar_t;
    randint_kernel<T><<<blocks_for(n), kThreads, 0, stream()>>>(out->data<T>(), n, seed, base, low, range);
  });
  check_launch("randint");
}

void randperm(const Tensor& out, uint64_t seed, uint64_t base) {
  if (out->numel() == 0) return;
  use_device(out->device());
  randperm_kernel<<<1, 1, 0, stream()>>>(out->data<int64_t>(), out->numel(), seed, base);
  check_launch("randperm");
}

void multinomial(const Tensor& out, const Tensor& probs, bool replacement, uint64_t seed, uint64_t base) {
  int64_t rows = probs->shape[0], k = probs->shape[1], n = out->shape[1];
  if (rows * n == 0) return;
  Device d = out->device();
  use_device(d);
  Scratch w(size_t(rows * k) * sizeof(double), d);
  multinomial_kernel<<<blocks_for(rows), kThreads, 0, stream()>>>(out->data<int64_t>(), probs->data<double>(),
                                                                   w.as<double>(), rows, k, n, replacement, seed, base);
  check_launch("multinomial");
}

}  // namespace sx::cuda
