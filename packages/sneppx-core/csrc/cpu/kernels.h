// CPU kernels. Callers pass operands already broadcast to out's shape and cast to the compute
// dtype; kernels never allocate and never throw from inside the thread pool.
#pragma once
#include "ops/ops.h"

namespace sx::cpu {

void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b);
void unary(UnaryOp op, const Tensor& out, const Tensor& x);
void copy(const Tensor& dst, const Tensor& src);  // any dtypes, src broadcast to dst
void fill(const Tensor& t, const Scalar& v);
void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b);
// Float-only parametric maps: out = f(x; p0, p1).
enum class ParamOp : uint8_t { Softplus, LeakyRelu, Elu, ClampMin, ClampMax, Clamp };
void param_unary(ParamOp op, const Tensor& out, const Tensor& x, double p0, double p1);

}  // namespace sx::cpu
