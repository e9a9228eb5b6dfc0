// The CPU unary kernels' entry points: a lookup in the table that unary_part*.cpp fill (see unary_impl.h).
#include "cpu/unary_kernels.h"

#include "core/dispatch.h"
#include "ops/unary_defs.h"

namespace sx::cpu {

namespace {
constexpr int kUnaryOps = 0
#define SX_COUNT_ENTRY(D) +1
    SX_UNARY_OPS(SX_COUNT_ENTRY)
#undef SX_COUNT_ENTRY
    ;

const UnaryKernels& entry(UnaryOp op) {
  const UnaryKernels& k = unary_kernel_table()[int(op)];
  if (!k.f) throw RuntimeError(msg("[unary] no CPU kernel for op ", int(op)));
  return k;
}

void unary_cpu(UnaryOp op, const Tensor& out, const Tensor& x, double p0, double p1) {
  entry(op).f(out, x, p0, p1);
}

void unary_grad_cpu(UnaryOp op, const Tensor& gx, const Tensor& g, const Tensor& x, double p0, double p1, int order) {
  entry(op).grad(gx, g, x, p0, p1, order);
}
}  // namespace

UnaryKernels* unary_kernel_table() {
  static UnaryKernels table[kUnaryOps];
  return table;
}

SX_REGISTER_KERNEL(kern::unary, CPU, &unary_cpu);
SX_REGISTER_KERNEL(kern::unary_grad, CPU, &unary_grad_cpu);

}  // namespace sx::cpu
