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

// Complex tensors (complex.cpp). dst = src through the copy kernel, complex dtypes copied as their
// real pairs (a real src fills the real parts and zeroes the imaginary ones; a complex src into a
// real dst raises).
void copy_into(const Tensor& dst, const Tensor& src);
void fill_into(const Tensor& t, const Scalar& v);  // t = v through the fill kernel (complex t: v + 0i)
Tensor random_complex(const Shape& s, DType dt, Generator* g, bool normal);
// The ops' complex forms: binary (add, sub, mul, div, eq, ne), unary (neg, abs, square, reciprocal, exp,
// log, sqrt, isnan, isinf, isfinite), sum and mean over dims (normalized), where, matmul; others raise TypeError.
Tensor complex_binary(BinaryOp op, const Tensor& a, const Tensor& b);
Tensor complex_unary(UnaryOp op, const Tensor& x);
Tensor complex_sum(const Tensor& x, const IntList& dims, bool keepdim, bool average);
Tensor complex_where(const Tensor& cond, const Tensor& a, const Tensor& b);  // a and b of one complex dtype
Tensor complex_matmul(const Tensor& a, const Tensor& b);  // matmul's shapes; a and b of one complex dtype

}  // namespace sx
