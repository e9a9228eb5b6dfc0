// Helpers shared by the nn op files (not part of the public op set).
#pragma once
#include "ops/common.h"
#include "ops/kernels.h"
#include "ops/nn.h"

namespace sx::nn {

inline bool is_half(DType d) { return d == DType::Float16 || d == DType::BFloat16; }

inline void check_floating(const Tensor& t, const char* op, const char* what) {
  SX_CHECK(t, ValueError, "[", op, "] ", what, " is missing");
  SX_CHECK(is_floating(t->dtype), TypeError, "[", op, "] expected ", what, " to be a floating tensor, got ",
           describe(t));
}

// A contiguous tensor with t's values and dtype dt, sharing t when possible (no autograd).
inline Tensor contig(const Tensor& t, DType dt) {
  Tensor c = cast_nograd(t, dt);
  return c->is_contiguous() ? c : clone_nograd(c);
}
inline Tensor contig(const Tensor& t) { return contig(t, t->dtype); }

// Backward closures run their fused kernel only for first-order gradients.
inline void no_double_backward(const char* op) {
  SX_CHECK(!grad_mode::enabled(), RuntimeError, "[", op,
           "] differentiating the backward pass (create_graph=True) is not supported by this fused kernel");
}

inline int64_t prod(const Shape& s, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t i = from; i < to; ++i) n *= s[i];
  return n;
}

}  // namespace sx::nn
