// The kernels of the complex ops (ops/complex.cpp): the elementwise product, which written with real ops on
// the (real, imaginary) pairs took seven passes, and the matrix product, which as one real product of the
// pairs needed a copy of b four times its size. Backends without them use those compositions.
#pragma once
#include "ops/ops.h"

namespace sx {
namespace kern {
// out = a * b (a * conj(b) when conj_b), all of out's complex dtype and broadcast to out's shape.
SX_KERNEL(complex_mul, void(const Tensor& out, const Tensor& a, const Tensor& b, bool conj_b));
// matmul's product (ops/linalg.cpp, the operands and out as kern::matmul's) for complex64/complex128.
SX_KERNEL(complex_matmul, void(const Tensor& a, const Tensor& b, const Tensor& out));
}  // namespace kern

// The complex forms of index_select, gather and cumsum (the real op on the pairs; d is wrapped already, x is
// at least 1-d) and of norm (the norm of the magnitudes), called by those ops for a complex x.
Tensor complex_index_select(const Tensor& x, int64_t d, const Tensor& index);
Tensor complex_gather(const Tensor& x, int64_t d, const Tensor& index);
Tensor complex_cumsum(const Tensor& x, int64_t d);
Tensor complex_norm(const Tensor& x, double p, const OptDims& dims, bool keepdim);
}  // namespace sx
