// The kernel table of the core op families: one typed slot per kernel (see core/dispatch.h).
// Ops call `kern::name(device)(args...)`; cpu/ fills every slot for the CPU, and another backend
// fills the ones it implements. Unary kernels are declared with their formula sheet
// (ops/unary_defs.h) and the fused nn kernels with their ops (ops/nn.h).
//
// Contract for every kernel: operands are validated and already broadcast to the output's shape
// and cast to the compute dtype by the op (except where a signature says otherwise); a kernel
// never allocates tensors and never throws from inside the thread pool.
#pragma once
#include "ops/ops.h"

namespace sx {

enum class ReduceOp : uint8_t { Sum, Prod, Max, Min };

namespace kern {
// ---- elementwise
SX_KERNEL(binary, void(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b));
SX_KERNEL(where, void(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b));
// out = clamp(x, lo, hi); a bound is used only when its flag is set.
SX_KERNEL(clamp, void(const Tensor& out, const Tensor& x, double lo, double hi, bool has_lo, bool has_hi));
// dst = src for any pair of dtypes; src broadcast to dst's shape; dst may be any strided view.
SX_KERNEL(copy, void(const Tensor& dst, const Tensor& src));
SX_KERNEL(fill, void(const Tensor& t, const Scalar& v));
// dst = src across devices (at least one of them not the CPU): same shape and dtype, both
// contiguous. Reached through the slot of the device that is not the CPU (dst's when both are not).
SX_KERNEL(transfer, void(const Tensor& dst, const Tensor& src));

// ---- reductions over a contiguous (outer, n, inner) layout into (outer, inner) outputs
SX_KERNEL(reduce, void(ReduceOp op, const Tensor& in, const Tensor& out, int64_t outer, int64_t n, int64_t inner));
SX_KERNEL(arg_reduce, void(bool is_max, const Tensor& in, const Tensor& values, const Tensor& indices, int64_t outer,
                           int64_t n, int64_t inner));
SX_KERNEL(cumsum, void(const Tensor& in, const Tensor& out, int64_t outer, int64_t n, int64_t inner));

// ---- linear algebra: out[b] = a[b] @ b[b] for (batch..., m, k) and (batch..., k, n) operands
// (any strides), out contiguous (batch..., m, n) of the same dtype (float16/bfloat16 not included).
SX_KERNEL(matmul, void(const Tensor& a, const Tensor& b, const Tensor& out));
}  // namespace kern

// The value of a one-element tensor on any device (read back through a copy off the CPU).
bool item_bool(const Tensor& t);
int64_t item_int(const Tensor& t);
double item_double(const Tensor& t);

}  // namespace sx
