// Matrix products: shapes, broadcasting of batch dims, dtypes and autograd; the kernel (BLAS on
// the CPU) comes from the device's table.
#include "ops/common.h"
#include "ops/complex.h"
#include "ops/kernels.h"

namespace sx {

namespace kern {
SX_DEFINE_KERNEL(matmul);
SX_DEFINE_KERNEL(complex_matmul);
SX_DEFINE_KERNEL(dot);
}  // namespace kern

namespace {

Tensor mm_forward(const Tensor& a, const Tensor& b) {
  const auto& kernel = is_complex(a->dtype) ? kern::complex_matmul : kern::matmul;
  // (batch..., m, k) @ (k, n) with a contiguous: one GEMM over batch*m rows.
  if (a->dim() > 2 && b->dim() == 2 && a->is_contiguous()) {
    int64_t K = a->shape.back();
    Tensor a2 = make_view(a, {a->numel() / std::max<int64_t>(K, 1), K}, {K, 1}, a->offset);
    Shape os(a->shape.begin(), a->shape.end() - 1);
    os.push_back(b->shape[1]);
    Tensor out = empty(os, a->dtype, a->device());
    Tensor o2 = make_view(out, {a2->shape[0], b->shape[1]}, {b->shape[1], 1}, 0);
    kernel(a->device())(a2, b, o2);
    return out;
  }
  int64_t na = a->dim(), nb = b->dim();
  Shape ba(a->shape.begin(), a->shape.end() - 2), bb(b->shape.begin(), b->shape.end() - 2);
  Shape batch = broadcast_shapes(ba, bb, "matmul");
  Shape sa = batch, sb = batch, so = batch;
  sa.insert(sa.end(), {a->shape[na - 2], a->shape[na - 1]});
  sb.insert(sb.end(), {b->shape[nb - 2], b->shape[nb - 1]});
  so.insert(so.end(), {a->shape[na - 2], b->shape[nb - 1]});
  Tensor out = empty(so, a->dtype, a->device());
  kernel(a->device())(expand_view(a, sa), expand_view(b, sb), out);
  return out;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  check_same_device("matmul", a, b);
  SX_CHECK(a->dim() >= 1 && b->dim() >= 1, ValueError, "[matmul] both arguments need at least 1 dimension, got ",
           shape_str(a->shape), " and ", shape_str(b->shape));
  SX_CHECK(a->dtype == b->dtype, TypeError, "[matmul] expected both operands to have the same dtype, got ",
           dtype_name(a->dtype), " and ", dtype_name(b->dtype));
  SX_CHECK(a->dtype != DType::Bool, TypeError, "[matmul] bool tensors are not supported");
  Tensor a2 = a->dim() == 1 ? unsqueeze(a, 0) : a;
  Tensor b2 = b->dim() == 1 ? unsqueeze(b, 1) : b;
  SX_CHECK(a2->shape.back() == b2->shape[b2->dim() - 2], ValueError, "[matmul] shapes ", shape_str(a->shape), " and ",
           shape_str(b->shape), " cannot be multiplied");
  const bool cplx = is_complex(a->dtype);
  if (cplx && !kern::complex_matmul.has(a->device().type)) [[unlikely]] return complex_matmul(a, b);
  if (a->dim() == 1 && b->dim() == 1 && !cplx && kern::dot.has(a->device().type)) return dot(a, b);
  DType dt = a->dtype;
  Tensor out = mm_forward(a2, b2);  // float16/bfloat16: float32 accumulation inside the kernel
  if (a->dim() == 1) out = squeeze(detach(out), IntList{out->dim() - 2});
  if (b->dim() == 1) out = squeeze(detach(out), IntList{out->dim() - 1});
  if (!is_differentiable(dt) || !needs_grad({&a, &b})) return out;
  Saved sa(a), sb(b);
  return record("MatmulBackward", {a, b}, out, [sa, sb](const Tensor& g) {
    // x @ y's gradients are g @ y^H and x^H @ g (conj is the tensor itself for a real one).
    const Tensor& x = sa.get();
    const Tensor& y = sb.get();
    Tensor x2 = x->dim() == 1 ? unsqueeze(x, 0) : x, y2 = y->dim() == 1 ? unsqueeze(y, 1) : y;
    Tensor g2 = g;
    if (x->dim() == 1) g2 = unsqueeze(g2, g2->dim() - (y->dim() == 1 ? 0 : 1));
    if (y->dim() == 1) g2 = unsqueeze(g2, g2->dim());
    Tensor gx, gy;
    if (x->requires_grad) {
      gx = matmul(g2, transpose(conj(y2), -1, -2));
      gx = sum_to(gx, x2->shape);
      if (x->dim() == 1) gx = reshape(gx, x->shape);
    }
    if (y->requires_grad && y2->dim() == 2 && x2->dim() > 2) {
      // (batch..., m, k) @ (k, n): the weight gradient is one GEMM over all rows, not a batch + sum.
      int64_t k = x2->shape.back(), n = y2->shape.back();
      gy = matmul(transpose(reshape(conj(x2), {-1, k}), 0, 1), reshape(g2, {-1, n}));
      if (y->dim() == 1) gy = reshape(gy, y->shape);
    } else if (y->requires_grad) {
      gy = matmul(transpose(conj(x2), -1, -2), g2);
      gy = sum_to(gy, y2->shape);
      if (y->dim() == 1) gy = reshape(gy, y->shape);
    }
    return TensorList{gx, gy};
  });
}

Tensor dot(const Tensor& a, const Tensor& b) {
  check_same_device("dot", a, b);
  SX_CHECK(a->dim() == 1 && b->dim() == 1 && a->shape[0] == b->shape[0], ValueError,
           "[dot] expected 1-D tensors of one length, got ", shape_str(a->shape), " and ", shape_str(b->shape));
  SX_CHECK(a->dtype == b->dtype, TypeError, "[dot] expected both operands to have the same dtype, got ",
           dtype_name(a->dtype), " and ", dtype_name(b->dtype));
  SX_CHECK(a->dtype != DType::Bool, TypeError, "[dot] bool tensors are not supported");
  if (!kern::dot.has(a->device().type) || is_complex(a->dtype)) return matmul(a, b);
  Tensor out = empty({}, a->dtype, a->device());
  kern::dot(out->device())(out, a, b);
  if (!is_floating(a->dtype) || !needs_grad({&a, &b})) return out;
  Saved sa(a), sb(b);
  return record("DotBackward", {a, b}, out, [sa, sb](const Tensor& g) {
    const Tensor& x = sa.get();
    const Tensor& y = sb.get();
    return TensorList{x->requires_grad ? mul(g, y) : nullptr, y->requires_grad ? mul(g, x) : nullptr};
  });
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  SX_CHECK(a->dim() == 3 && b->dim() == 3 && a->shape[0] == b->shape[0], ValueError,
           "[bmm] expected 3-D tensors with the same batch size, got ", shape_str(a->shape), " and ",
           shape_str(b->shape));
  return matmul(a, b);
}

Tensor outer(const Tensor& a, const Tensor& b) {
  SX_CHECK(a->dim() == 1 && b->dim() == 1, ValueError, "[outer] expected 1-D tensors, got ", shape_str(a->shape),
           " and ", shape_str(b->shape));
  return mul(unsqueeze(a, 1), unsqueeze(b, 0));
}

}  // namespace sx
