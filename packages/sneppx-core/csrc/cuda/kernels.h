// The CUDA kernels that cuda/register.cu puts in the kernel table (signatures as in ops/kernels.h,
// ops/unary_defs.h and ops/nn.h).
#pragma once
#include "ops/kernels.h"
#include "ops/unary_defs.h"

namespace sx::cuda {

void transfer(const Tensor& dst, const Tensor& src);
void fill(const Tensor& t, const Scalar& v);
void copy(const Tensor& dst, const Tensor& src);
void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b);
void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b);
void clamp(const Tensor& out, const Tensor& x, double lo, double hi, bool has_lo, bool has_hi);
void unary(UnaryOp op, const Tensor& out, const Tensor& x, double p0, double p1);
void unary_grad(UnaryOp op, const Tensor& gx, const Tensor& g, const Tensor& x, double p0, double p1, int order);
void reduce(ReduceOp op, const Tensor& in, const Tensor& out, int64_t outer, int64_t n, int64_t inner);
void arg_reduce(bool is_max, const Tensor& in, const Tensor& values, const Tensor& indices, int64_t outer, int64_t n,
                int64_t inner);
void matmul(const Tensor& a, const Tensor& b, const Tensor& out);
void softmax_fwd(const Tensor& x, const Tensor& y, int64_t outer, int64_t n, int64_t inner, bool log);
void softmax_bwd(const Tensor& g, const Tensor& y, const Tensor& gx, int64_t outer, int64_t n, int64_t inner, bool log);

}  // namespace sx::cuda
