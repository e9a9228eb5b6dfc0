// The Fourier transform ops (ops/fft.h): checks, the output's geometry, and the device's kernel.
#include "ops/fft.h"

namespace sx {

namespace kern {
SX_DEFINE_KERNEL(fft);
}  // namespace kern

namespace {
// x made contiguous and dim wrapped, after checking that x is at least 1-d and of the dtype kind wanted.
Tensor prepare(const char* op, const Tensor& x, int64_t& dim, bool complex_input) {
  SX_CHECK(complex_input ? is_complex(x->dtype) : (x->dtype == DType::Float32 || x->dtype == DType::Float64),
           TypeError, "[", op, "] expects a ", complex_input ? "complex64 or complex128" : "float32 or float64",
           " tensor, got ", describe(x));
  SX_CHECK(x->dim() >= 1, IndexError, "[", op, "] expects a tensor of at least 1 dim, got ", describe(x));
  dim = wrap_dim(dim, x->dim(), op);
  SX_CHECK(x->shape[dim] >= 1, ValueError, "[", op, "] invalid number of data points (", x->shape[dim],
           ") along dim ", dim, " of ", describe(x));
  return contiguous(x);
}

Tensor run(const Tensor& x, int64_t dim, FftKind kind, double scale, int64_t n_out, DType out_dtype) {
  Shape shape = x->shape;
  shape[dim] = n_out;
  Tensor out = empty(shape, out_dtype, x->device());
  if (out->numel() > 0) kern::fft(x->device())(out, x, dim, kind, scale);
  return out;
}
}  // namespace

Tensor fft_c2c(const Tensor& x_, int64_t dim, bool inverse, double scale) {
  Tensor x = prepare(inverse ? "fft.ifft" : "fft.fft", x_, dim, true);
  return run(x, dim, inverse ? FftKind::Inverse : FftKind::Forward, scale, x->shape[dim], x->dtype);
}

Tensor fft_r2c(const Tensor& x_, int64_t dim, double scale) {
  Tensor x = prepare("fft.rfft", x_, dim, false);
  return run(x, dim, FftKind::RealToComplex, scale, x->shape[dim] / 2 + 1, complex_of(x->dtype));
}

Tensor fft_c2r(const Tensor& x_, int64_t dim, int64_t n, double scale) {
  Tensor x = prepare("fft.irfft", x_, dim, true);
  SX_CHECK(n >= 1 && x->shape[dim] == n / 2 + 1, ValueError, "[fft.irfft] a real signal of ", n,
           " points needs ", n / 2 + 1, " frequencies along dim ", dim, ", got ", describe(x));
  return run(x, dim, FftKind::ComplexToReal, scale, n, real_part_dtype(x->dtype));
}

}  // namespace sx
