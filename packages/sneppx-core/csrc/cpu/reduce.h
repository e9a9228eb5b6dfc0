// Reduction kernels on contiguous (outer, n, inner) data; results are (outer, inner).
#pragma once
#include "ops/kernels.h"

namespace sx::cpu {

void reduce(ReduceOp op, const Tensor& in, const Tensor& out, int64_t outer, int64_t n, int64_t inner);
void arg_reduce(bool is_max, const Tensor& in, const Tensor& values, const Tensor& indices, int64_t outer, int64_t n,
                int64_t inner);
void cumsum(const Tensor& in, const Tensor& out, int64_t outer, int64_t n, int64_t inner);
void logsumexp(const Tensor& in, const Tensor& out, int64_t outer, int64_t n, int64_t inner);

}  // namespace sx::cpu
