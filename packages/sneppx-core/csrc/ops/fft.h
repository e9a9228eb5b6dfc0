// Discrete Fourier transforms along one dim (sneppx_core.fft builds torch.fft's functions and their
// gradients on these three ops in Python).
#pragma once
#include "ops/ops.h"

namespace sx {

enum class FftKind : uint8_t { Forward, Inverse, RealToComplex, ComplexToReal };

namespace kern {
// out = scale times the unnormalised transform of x along dim, x and out contiguous and alike but along dim:
// Forward / Inverse (e^{-+2 pi i jk / n}): complex x and out of n points; RealToComplex: real x of n points,
// complex out of its n / 2 + 1 non-negative frequencies; ComplexToReal: complex x of n / 2 + 1 frequencies (the
// imaginary parts of the first and, for even n, the last ignored), real out of n = out's size along dim.
SX_KERNEL(fft, void(const Tensor& out, const Tensor& x, int64_t dim, FftKind kind, double scale));
}  // namespace kern

// The transform of complex x along dim (e^{+2 pi i jk / n} when inverse), times scale (no autograd).
Tensor fft_c2c(const Tensor& x, int64_t dim, bool inverse, double scale);
// The n / 2 + 1 non-negative frequencies of real x (float32 or float64) along dim, times scale.
Tensor fft_r2c(const Tensor& x, int64_t dim, double scale);
// The real signal of n points whose n / 2 + 1 non-negative frequencies along dim are complex x's, times
// scale (the unnormalised inverse transform).
Tensor fft_c2r(const Tensor& x, int64_t dim, int64_t n, double scale);

}  // namespace sx
