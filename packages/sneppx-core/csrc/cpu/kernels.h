// CPU kernels shared inside cpu/ (the ops reach them through the kernel table, ops/kernels.h).
// Callers pass operands already broadcast to out's shape and cast to the compute dtype; kernels
// never allocate and never throw from inside the thread pool.
#pragma once
#include "ops/kernels.h"

namespace sx::cpu {

void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b);
void copy(const Tensor& dst, const Tensor& src);  // any dtypes, src broadcast to dst
bool cat(const Tensor& out, const TensorList& xs, int64_t d);  // small contiguous cases (kern::cat)
void fill(const Tensor& t, const Scalar& v);
void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b);
void clamp(const Tensor& out, const Tensor& x, double lo, double hi, bool has_lo, bool has_hi);

}  // namespace sx::cpu
