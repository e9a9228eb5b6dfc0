// Complex tensors (complex64, complex128): (real, imaginary) pairs of float32 / float64 in one storage.
// The views below show the pairs as a real tensor with a last dim of 2, and each complex op is written with
// real ops on those views (only the product has a kernel of its own, ops/complex.h), so that it runs wherever the real
// kernels run and its gradient comes from theirs: for a real loss L of z = x + iy, z.grad is
// dL/dx + i dL/dy, PyTorch's convention.
#include <cmath>

#include "ops/common.h"
#include "ops/complex.h"
#include "ops/kernels.h"
#include "ops/unary_defs.h"

namespace sx {

namespace {
// t = v through the device's fill kernel (t may be a strided view).
void fill_view(const Tensor& t, const Scalar& v) { kern::fill(t->device())(t, v); }

// x's pairs as a real (..., 2) tensor sharing x's storage, without autograd.
Tensor pairs(const Tensor& x) {
  Shape s = x->shape, st = x->strides;
  for (auto& v : st) v *= 2;
  s.push_back(2);
  st.push_back(1);
  Tensor v = make_view(x, std::move(s), std::move(st), x->offset * 2);
  v->dtype = real_part_dtype(x->dtype);
  return v;
}

// Part k (0 real, 1 imaginary) of x as a real view of x's shape, without autograd.
Tensor part(const Tensor& x, int64_t k) {
  Shape st = x->strides;
  for (auto& v : st) v *= 2;
  Tensor v = make_view(x, x->shape, std::move(st), x->offset * 2 + k);
  v->dtype = real_part_dtype(x->dtype);
  return v;
}

// The complex view of a real (..., 2) tensor whose pairs are adjacent, without autograd.
Tensor as_complex_nograd(const Tensor& x) {
  Shape s(x->shape.begin(), x->shape.end() - 1), st(x->strides.begin(), x->strides.end() - 1);
  for (auto& v : st) v /= 2;
  Tensor v = make_view(x, std::move(s), std::move(st), x->offset / 2);
  v->dtype = complex_of(x->dtype);
  return v;
}

[[noreturn]] void unsupported(const char* op, const Tensor& x) {
  throw TypeError(msg("[", op, "] is not implemented for complex tensors, got ", describe(x),
                      " (the complex ops are listed in docs/pytorch-compatibility.md)"));
}

Tensor cos_(const Tensor& x) { return unary(UnaryOp::Cos, x); }
Tensor sin_(const Tensor& x) { return unary(UnaryOp::Sin, x); }
Tensor both(const Tensor& a, const Tensor& b) { return binary(BinaryOp::And, a, b); }
Tensor either(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Or, a, b); }

// re + i im from two real tensors of one dtype (broadcast together).
Tensor from_parts(const Tensor& re, const Tensor& im) { return view_as_complex(stack({re, im}, -1)); }
}  // namespace

void copy_into(const Tensor& dst, const Tensor& src) {
  if (!is_complex(dst->dtype) && !is_complex(src->dtype)) return kern::copy(dst->device())(dst, src);
  SX_CHECK(is_complex(dst->dtype), TypeError, "[copy] ", describe(src), " cannot be written into ", describe(dst),
           ": the imaginary part would be lost (take .real or .abs() first)");
  if (is_complex(src->dtype)) return kern::copy(dst->device())(pairs(dst), pairs(src));
  kern::copy(dst->device())(part(dst, 0), src);
  fill_view(part(dst, 1), Scalar(0.0));
}

void fill_into(const Tensor& t, const Scalar& v) {
  if (!is_complex(t->dtype)) return fill_view(t, v);
  fill_view(part(t, 0), v);
  fill_view(part(t, 1), Scalar(0.0));
}

Tensor random_complex(const Shape& s, DType dt, Generator* g, bool normal) {
  Shape rs = s;
  rs.push_back(2);
  Tensor r = normal ? randn(rs, real_part_dtype(dt), g) : rand(rs, real_part_dtype(dt), g);
  // PyTorch's complex normal has variance 1: each part is N(0, 1/2).
  if (normal) r = mul(r, Scalar(std::sqrt(0.5)));
  return as_complex_nograd(r);
}

Tensor view_as_real(const Tensor& x) {
  SX_CHECK(is_complex(x->dtype), TypeError, "[view_as_real] is only supported for complex tensors, got ",
           describe(x));
  Tensor out = pairs(x);
  if (!x->requires_grad || !grad_mode::enabled()) return out;
  return record("ViewAsRealBackward", {x}, out, [](const Tensor& g) { return TensorList{view_as_complex(contiguous(g))}; });
}

Tensor view_as_complex(const Tensor& x) {
  SX_CHECK(x->dtype == DType::Float32 || x->dtype == DType::Float64, TypeError,
           "[view_as_complex] is only supported for float32 and float64 tensors, got ", describe(x));
  SX_CHECK(x->dim() > 0 && x->shape.back() == 2, RuntimeError,
           "[view_as_complex] the last dim must have size 2, got shape ", shape_str(x->shape));
  SX_CHECK(x->strides.back() == 1, RuntimeError, "[view_as_complex] the last dim must have stride 1, got strides ",
           shape_str(x->strides));
  bool even = x->offset % 2 == 0;
  for (int64_t d = 0; d + 1 < x->dim(); ++d) even = even && (x->strides[d] % 2 == 0 || x->shape[d] == 1);
  SX_CHECK(even, RuntimeError, "[view_as_complex] the other strides and the storage offset must be even, got strides ",
           shape_str(x->strides), " and offset ", x->offset, "; call .contiguous() first");
  Tensor out = as_complex_nograd(x);
  if (!x->requires_grad || !grad_mode::enabled()) return out;
  return record("ViewAsComplexBackward", {x}, out, [](const Tensor& g) { return TensorList{view_as_real(g)}; });
}

Tensor real(const Tensor& x) { return is_complex(x->dtype) ? select(view_as_real(x), -1, 0) : x; }

Tensor imag(const Tensor& x) {
  SX_CHECK(is_complex(x->dtype), RuntimeError, "[imag] imag is not implemented for tensors with non-complex dtypes, got ",
           describe(x));
  return select(view_as_real(x), -1, 1);
}

// |z| = sqrt(x^2 + y^2) (no rescaling: parts beyond about 1.8e19 in float32 overflow, as their squares do),
// with PyTorch's gradient 0 at z = 0 (sqrt's would be 0 * inf): where s = 0 the root of 1 is taken and not used.
Tensor complex_abs(const Tensor& x) {
  Tensor re = real(x), im = imag(x);
  Tensor s = add(mul(re, re), mul(im, im));
  Tensor zero = binary(BinaryOp::Eq, s, zeros({}, s->dtype, s->device()));
  return where(zero, zeros({}, s->dtype, s->device()), sqrt(where(zero, ones({}, s->dtype, s->device()), s)));
}
// arg z = atan2(y, x).
Tensor complex_angle(const Tensor& x) { return binary(BinaryOp::Atan2, imag(x), real(x)); }

Tensor complex(const Tensor& re, const Tensor& im) {
  SX_CHECK(re->dtype == im->dtype && (re->dtype == DType::Float32 || re->dtype == DType::Float64), TypeError,
           "[complex] expected float32 or float64 real and imaginary parts of one dtype, got ", describe(re), " and ",
           describe(im));
  check_same_device("complex", re, im);
  Shape s = broadcast_shapes(re->shape, im->shape, "complex");
  return from_parts(expand(re, s), expand(im, s));
}

Tensor polar(const Tensor& abs, const Tensor& angle) {
  SX_CHECK(abs->dtype == angle->dtype && (abs->dtype == DType::Float32 || abs->dtype == DType::Float64), TypeError,
           "[polar] expected float32 or float64 abs and angle of one dtype, got ", describe(abs), " and ",
           describe(angle));
  return complex(mul(abs, cos_(angle)), mul(abs, sin_(angle)));
}

Tensor conj(const Tensor& x) {
  if (!is_complex(x->dtype)) return x;
  return from_parts(real(x), neg(imag(x)));
}

namespace kern {
SX_DEFINE_KERNEL(complex_mul);
}  // namespace kern

namespace {
// a * b, or a * conj(b) when conj_b, for a and b of one complex dtype on one device (broadcast): the device's
// kernel where it has one, else real ops on the parts. Differentiable (PyTorch's convention: the gradient of
// a * b is g * conj(b) for a, g * conj(a) for b).
Tensor cmul(const Tensor& a, const Tensor& b, bool conj_b) {
  check_same_device("mul", a, b);
  const Device dev = a->device();
  if (!kern::complex_mul.has(dev.type)) {
    Tensor ar = real(a), ai = imag(a), br = real(b), bi = conj_b ? neg(imag(b)) : imag(b);
    return from_parts(sub(mul(ar, br), mul(ai, bi)), add(mul(ar, bi), mul(ai, br)));
  }
  Shape shape = broadcast_shapes(a->shape, b->shape, "mul");
  Tensor out = empty(shape, a->dtype, dev);
  kern::complex_mul(dev)(out, expand_view(a, shape), expand_view(b, shape), conj_b);
  if (!needs_grad({&a, &b})) return out;
  Saved sa(a), sb(b);
  return record("MulBackward", {a, b}, out, [sa, sb, conj_b](const Tensor& g) {
    const Tensor &x = sa.get(), &y = sb.get();
    // out = x * y: g * conj(y), g * conj(x); out = x * conj(y): g * y, x * conj(g).
    Tensor gx = x->requires_grad ? grad_for(cmul(g, y, !conj_b), x) : nullptr;
    Tensor gy = y->requires_grad ? grad_for(conj_b ? cmul(x, g, true) : cmul(g, x, true), y) : nullptr;
    return TensorList{gx, gy};
  });
}
}  // namespace

Tensor complex_binary(BinaryOp op, const Tensor& a_in, const Tensor& b_in) {
  const Tensor& c = is_complex(a_in->dtype) ? a_in : b_in;
  DType ct = result_type(a_in, b_in);
  if (op == BinaryOp::Eq || op == BinaryOp::Ne) {
    Tensor a = cast_nograd(a_in, ct), b = cast_nograd(b_in, ct);
    Tensor same = both(binary(BinaryOp::Eq, real(a), real(b)), binary(BinaryOp::Eq, imag(a), imag(b)));
    return op == BinaryOp::Eq ? same : unary(UnaryOp::Not, same);
  }
  if (op == BinaryOp::Pow) {  // a ** b = exp(b log a); a real b stays real, so that 0 ** b is 0 for b > 0
    Tensor la = log(to_dtype(a_in, ct));
    return exp(is_complex(b_in->dtype) ? mul(to_dtype(b_in, ct), la) : mul(la, b_in));
  }
  if (op != BinaryOp::Add && op != BinaryOp::Sub && op != BinaryOp::Mul && op != BinaryOp::Div)
    unsupported(binary_name(op), c);
  // A real operand scales both parts (mul, div) without becoming complex first.
  if ((op == BinaryOp::Mul || op == BinaryOp::Div) && !is_complex(b_in->dtype)) {
    Tensor a = to_dtype(a_in, ct), b = to_dtype(b_in, real_part_dtype(ct));
    return view_as_complex(binary(op, view_as_real(a), unsqueeze(b, -1)));
  }
  if (op == BinaryOp::Mul && !is_complex(a_in->dtype)) return complex_binary(op, b_in, a_in);
  Tensor a = to_dtype(a_in, ct), b = to_dtype(b_in, ct);
  if (op == BinaryOp::Mul) return cmul(a, b, false);
  if (op == BinaryOp::Add || op == BinaryOp::Sub) {
    broadcast_shapes(a->shape, b->shape, binary_name(op));  // the error names x's shapes, not the pairs'
    Tensor ra = view_as_real(a), rb = view_as_real(b);
    return view_as_complex(op == BinaryOp::Add ? add(ra, rb) : sub(ra, rb));
  }
  Tensor ar = real(a), ai = imag(a), br = real(b), bi = imag(b);
  Tensor den = add(mul(br, br), mul(bi, bi));
  return from_parts(div(add(mul(ar, br), mul(ai, bi)), den), div(sub(mul(ai, br), mul(ar, bi)), den));
}

Tensor complex_unary(UnaryOp op, const Tensor& x) {
  switch (op) {
    case UnaryOp::Neg: return view_as_complex(neg(view_as_real(x)));
    case UnaryOp::Abs: return complex_abs(x);
    case UnaryOp::Square: return mul(x, x);
    case UnaryOp::Reciprocal: return div(ones(x->shape, x->dtype, x->device()), x);
    case UnaryOp::Exp: {  // e^x (cos y + i sin y)
      Tensor m = exp(real(x)), y = imag(x);
      return from_parts(mul(m, cos_(y)), mul(m, sin_(y)));
    }
    case UnaryOp::Log:  // log|z| + i arg z
      return from_parts(log(complex_abs(x)), complex_angle(x));
    case UnaryOp::Sqrt: {  // sqrt|z| (cos(arg/2) + i sin(arg/2))
      Tensor r = sqrt(complex_abs(x)), h = mul(complex_angle(x), Scalar(0.5));
      return from_parts(mul(r, cos_(h)), mul(r, sin_(h)));
    }
    case UnaryOp::IsNan: return either(unary(UnaryOp::IsNan, real(x)), unary(UnaryOp::IsNan, imag(x)));
    case UnaryOp::IsInf: return either(unary(UnaryOp::IsInf, real(x)), unary(UnaryOp::IsInf, imag(x)));
    case UnaryOp::IsFinite: return both(unary(UnaryOp::IsFinite, real(x)), unary(UnaryOp::IsFinite, imag(x)));
    default: unsupported(unary_info(op).name, x);
  }
}

Tensor complex_where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  return view_as_complex(contiguous(where(unsqueeze(cond, -1), view_as_real(a), view_as_real(b))));
}

// One real product: a's pairs as a (..., m, 2k) matrix times the (2k, 2n) real form of b, whose 2 x 2 block
// (j, l) is [[re, im], [-im, re]] of b[j, l]; the result's pairs come out interleaved, as complex numbers
// are stored. (Four products of the parts would each copy a strided part first.)
Tensor complex_matmul(const Tensor& a, const Tensor& b) {
  const bool vec_a = a->dim() == 1, vec_b = b->dim() == 1;
  Tensor a2 = vec_a ? unsqueeze(a, 0) : a, b2 = vec_b ? unsqueeze(b, 1) : b;
  Shape as = a2->shape, bs = b2->shape;
  as.back() *= 2;
  bs[bs.size() - 2] *= 2;
  bs.back() *= 2;
  Tensor blocks = stack({view_as_real(b2), stack({neg(imag(b2)), real(b2)}, -1)}, -3);  // (..., k, 2, n, 2)
  Tensor out = matmul(reshape(view_as_real(a2), as), reshape(blocks, bs));          // (..., m, 2n)
  Shape os = out->shape;
  os.back() /= 2;
  os.push_back(2);
  Tensor z = view_as_complex(reshape(out, os));
  if (vec_a) z = squeeze(z, IntList{z->dim() - 2});
  if (vec_b) z = squeeze(z, IntList{z->dim() - 1});
  return z;
}

Tensor complex_index_select(const Tensor& x, int64_t d, const Tensor& index) {
  return view_as_complex(index_select(view_as_real(x), d, index));
}

Tensor complex_gather(const Tensor& x, int64_t d, const Tensor& index) {
  Shape s = index->shape;
  s.push_back(2);
  return view_as_complex(gather(view_as_real(x), d, expand(unsqueeze(index, -1), s)));
}

Tensor complex_cumsum(const Tensor& x, int64_t d) { return view_as_complex(cumsum(view_as_real(x), d)); }

Tensor complex_norm(const Tensor& x, double p, const OptDims& dims, bool keepdim) {
  return norm(complex_abs(x), p, dims, keepdim);
}

Tensor complex_sum(const Tensor& x, const IntList& dims, bool keepdim, bool average) {
  Tensor r = view_as_real(x);  // x's dims keep their numbers; the pairs' dim comes last
  Tensor s = average ? mean(r, dims, keepdim) : sum(r, dims, keepdim);
  return view_as_complex(contiguous(s));
}

}  // namespace sx
