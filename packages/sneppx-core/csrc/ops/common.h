// Helpers shared by the op families (not part of the public op set).
#pragma once
#include "ops/ops.h"

namespace sx {

// A stride-0 broadcast view of t with the given shape (no autograd, no checks beyond shape).
Tensor expand_view(const Tensor& t, const Shape& shape);
// Converts to dtype without recording autograd (returns t when it already matches).
Tensor cast_nograd(const Tensor& t, DType dt);
Tensor clone_nograd(const Tensor& t);  // contiguous copy without autograd
// Gradient for input t from a gradient of the broadcast output: reduce and cast back.
Tensor grad_for(const Tensor& g, const Tensor& t);
void check_same_device(const char* op, const Tensor& a, const Tensor& b);
// Positive dims, sorted and unique; nullopt means all dims.
IntList normalize_dims(const OptDims& dims, int64_t ndim, const char* op);

}  // namespace sx
