// The table of CPU unary kernels, one entry per UnaryOp, filled by the unary_part*.cpp files.
#pragma once
#include "core/tensor.h"

namespace sx::cpu {

using UnaryKernel = void (*)(const Tensor& out, const Tensor& x, double p0, double p1);
using UnaryGradKernel = void (*)(const Tensor& gx, const Tensor& g, const Tensor& x, double p0, double p1, int order);
struct UnaryKernels {
  UnaryKernel f = nullptr;
  UnaryGradKernel grad = nullptr;
};
// The unary definitions are instantiated in this many files (unary_part0.cpp, ...), which a build
// compiles in parallel.
constexpr int kUnaryParts = 3;

// Indexed by int(UnaryOp).
UnaryKernels* unary_kernel_table();

}  // namespace sx::cpu
