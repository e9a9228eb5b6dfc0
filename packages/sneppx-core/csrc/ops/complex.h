// The one kernel of the complex ops (ops/complex.cpp): the product, which written with real ops on the
// (real, imaginary) pairs took seven passes. Backends without it use that composition.
#pragma once
#include "ops/ops.h"

namespace sx::kern {
// out = a * b (a * conj(b) when conj_b), all of out's complex dtype and broadcast to out's shape.
SX_KERNEL(complex_mul, void(const Tensor& out, const Tensor& a, const Tensor& b, bool conj_b));
}  // namespace sx::kern
