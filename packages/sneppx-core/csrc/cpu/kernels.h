// CPU kernels shared inside cpu/ (the ops reach them through the kernel table, ops/kernels.h).
// Callers pass operands already broadcast to out's shape and cast to the compute dtype; kernels
// never allocate and never throw from inside the thread pool.
#pragma once
#include "ops/kernels.h"

namespace sx {
struct ConvGeom;  // ops/conv.h
}

namespace sx::cpu {

void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b);
void copy(const Tensor& dst, const Tensor& src);  // any dtypes, src broadcast to dst
bool cat(const Tensor& out, const TensorList& xs, int64_t d);  // small contiguous cases (kern::cat)
void fill(const Tensor& t, const Scalar& v);
void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b);
void clamp(const Tensor& out, const Tensor& x, double lo, double hi, bool has_lo, bool has_hi);
// The weight gradient (Cout, C, kh, kw) of a float32 convolution (groups 1, column stride 1) with few
// output channels, without a patch matrix (cpu/conv_direct.cpp).
void conv_wgrad_few(const float* gy, const float* x, float* gw, const ConvGeom& g, int64_t Cout);

}  // namespace sx::cpu
