// The one kernel of the complex ops (ops/complex.cpp): the product, which written with real ops on the
// (real, imaginary) pairs took seven passes. Backends without it use that composition.
#pragma once
#include "ops/ops.h"

namespace sx {
namespace kern {
// out = a * b (a * conj(b) when conj_b), all of out's complex dtype and broadcast to out's shape.
SX_KERNEL(complex_mul, void(const Tensor& out, const Tensor& a, const Tensor& b, bool conj_b));
}  // namespace kern

// The complex forms of index_select, gather and cumsum (the real op on the pairs; d is wrapped already, x is
// at least 1-d) and of norm (the norm of the magnitudes), called by those ops for a complex x.
Tensor complex_index_select(const Tensor& x, int64_t d, const Tensor& index);
Tensor complex_gather(const Tensor& x, int64_t d, const Tensor& index);
Tensor complex_cumsum(const Tensor& x, int64_t d);
Tensor complex_norm(const Tensor& x, double p, const OptDims& dims, bool keepdim);
}  // namespace sx
