// Reductions. Each finds an (outer, n, inner) layout of its input (copying only when the reduced
// dims are not one contiguous block), runs a kernel, and records a vjp written with public ops.
#include <cmath>

#include "ops/common.h"
#include "ops/complex.h"
#include "core/default_dtype.h"
#include "ops/kernels.h"
#include "ops/unary_defs.h"

namespace sx {

namespace kern {
SX_DEFINE_KERNEL(reduce);
SX_DEFINE_KERNEL(reduce_dims);
SX_DEFINE_KERNEL(arg_reduce);
SX_DEFINE_KERNEL(cumsum);
SX_DEFINE_KERNEL(logsumexp);
}  // namespace kern

namespace {
constexpr int64_t kReduceSegment = 65536;  // the block kernels' segment of a long row

struct Layout {
  Tensor data;  // contiguous
  int64_t outer = 1, n = 1, inner = 1;
  Shape out_shape, keep_shape;
};

Layout layout_for(const Tensor& x, const IntList& dims) {
  Layout L;
  int64_t nd = x->dim();
  std::vector<bool> red(size_t(nd), false);
  for (auto d : dims) red[size_t(d)] = true;
  for (int64_t i = 0; i < nd; ++i) {
    L.keep_shape.push_back(red[size_t(i)] ? 1 : x->shape[i]);
    if (!red[size_t(i)]) L.out_shape.push_back(x->shape[i]);
  }
  bool block = dims.empty() || (dims.back() - dims.front() + 1 == int64_t(dims.size()));
  if (block && x->is_contiguous()) {
    L.data = x;
    int64_t lo = dims.empty() ? nd : dims.front(), hi = dims.empty() ? nd - 1 : dims.back();
    for (int64_t i = 0; i < nd; ++i) (i < lo ? L.outer : (i <= hi ? L.n : L.inner)) *= x->shape[i];
    return L;
  }
  IntList perm;
  for (int64_t i = 0; i < nd; ++i) if (!red[size_t(i)]) perm.push_back(i), L.outer *= x->shape[i];
  for (auto d : dims) perm.push_back(d), L.n *= x->shape[d];
  Shape ps, pst;
  for (auto p : perm) ps.push_back(x->shape[p]), pst.push_back(x->strides[p]);
  L.data = clone_nograd(make_view(x, ps, pst, x->offset));
  return L;
}

// Expands a reduced gradient back to the input's shape.
Tensor expand_back(const Tensor& g, const Shape& keep, const Shape& full_shape) {
  return expand(reshape(g, keep), full_shape);
}

bool is_block(const Tensor& x, const IntList& dims) {
  return x->is_contiguous() && (dims.empty() || dims.back() - dims.front() + 1 == int64_t(dims.size()));
}

// The kept dims of x, then the reduced ones: a view, no copy.
Tensor kept_first(const Tensor& x, const IntList& dims) {
  Shape s, st;
  for (int64_t i = 0; i < x->dim(); ++i)
    if (std::find(dims.begin(), dims.end(), i) == dims.end()) s.push_back(x->shape[i]), st.push_back(x->strides[i]);
  for (auto d : dims) s.push_back(x->shape[d]), st.push_back(x->strides[d]);
  return make_view(x, s, st, x->offset);
}

// Whether the device reduces x in place (kern::reduce_dims) instead of copying it into an
// (outer, n, inner) block first: when the block would need a copy or a wider dtype (sum(dtype=...)),
// unless the whole of a large tensor reduces to a few values (the block path splits long rows over
// the threads).
bool in_place(const Tensor& x, const IntList& dims, DType dt, int64_t outputs) {
  if (!kern::reduce_dims.has(x->device().type)) return false;
  // One-byte inputs (bool, uint8) keep the converting copy: GCC 12 miscompiles their eight-lane
  // widening loop in reduce_dims at -O3 (a contiguous uint8 row of 16 summed to 84 instead of 120).
  if (itemsize(x->dtype) == 1) return false;
  bool widen = dt != x->dtype && (dt == DType::Float64 || (dt == DType::Int64 && !is_floating(x->dtype)));
  if (dt != x->dtype && !widen) return false;
  if (!widen && is_block(x, dims)) return false;
  return outputs >= 16 || x->numel() <= 4 * kReduceSegment;
}

Tensor reduce_impl(ReduceOp op, const Tensor& x, const IntList& dims, bool keepdim, DType dt, const char* name) {
  Shape keep, outs;
  int64_t n = 1, outputs = 1;
  for (int64_t i = 0; i < x->dim(); ++i) {
    bool red = std::find(dims.begin(), dims.end(), i) != dims.end();
    keep.push_back(red ? 1 : x->shape[i]);
    if (!red) outs.push_back(x->shape[i]), outputs *= x->shape[i];
    else n *= x->shape[i];
  }
  SX_CHECK(n > 0 || (op != ReduceOp::Max && op != ReduceOp::Min), IndexError, "[", name,
           "] cannot reduce over an empty dimension of a tensor of shape ", shape_str(x->shape));
  Tensor out = empty(keepdim ? keep : outs, dt, x->device());
  bool sumlike = op == ReduceOp::Sum || op == ReduceOp::Mean || op == ReduceOp::SumSquares || op == ReduceOp::NanSum;
  if ((sumlike || dt == x->dtype) && in_place(x, dims, dt, outputs)) {
    kern::reduce_dims(x->device())(op, kept_first(x, dims), out, int64_t(outs.size()));
    return out;
  }
  bool logical = (op == ReduceOp::Max || op == ReduceOp::Min) && dt == DType::Bool && n > 0 &&  // any, all
                 (!dims.empty() || x->dim() == 0);
  if ((op == ReduceOp::Sum || logical) && x->dtype == DType::Bool && is_block(x, dims) &&
      kern::count_true.has(x->device().type)) {
    Layout B = layout_for(x, dims);  // a contiguous x: a view, no copy
    if (B.inner == 1) {  // count the true bytes of each row (any: a count cast to bool; all: a full count)
      Tensor counts = op == ReduceOp::Min ? empty(out->shape, DType::Int64, x->device()) : out;
      kern::count_true(x->device())(x, counts, B.outer, B.n);
      if (op != ReduceOp::Min) return out;
      return binary(BinaryOp::Eq, counts, scalar_tensor(Scalar(B.n), DType::Int64, x->device()));
    }
  }
  Tensor xc = cast_nograd(x, dt);
  Layout L = layout_for(xc, dims);
  if (dims.empty() && x->dim() > 0) L.n = 1;
  kern::reduce(x->device())(op, L.data, out, L.outer, L.n, L.inner);
  return out;
}
}  // namespace

Tensor sum(const Tensor& x, const OptDims& dims, bool keepdim, std::optional<DType> dt) {
  IntList d = normalize_dims(dims, x->dim(), "sum");
  if (dims && dims->empty()) d = normalize_dims(std::nullopt, x->dim(), "sum");  // sum(dim=[]) = all
  if (is_complex(x->dtype)) [[unlikely]] {
    Tensor s = d.empty() ? clone(x) : complex_sum(x, d, keepdim, false);
    return dt ? to_dtype(s, *dt) : s;
  }
  DType rt = dt ? *dt : (is_floating(x->dtype) ? x->dtype : DType::Int64);
  Tensor out = reduce_impl(ReduceOp::Sum, x, d, keepdim, rt, "sum");
  if (!is_floating(rt) || !needs_grad({&x})) return out;
  Shape keep, xs = x->shape;
  for (int64_t i = 0; i < x->dim(); ++i) keep.push_back(std::find(d.begin(), d.end(), i) != d.end() ? 1 : xs[i]);
  DType xd = x->dtype;
  return record("SumBackward", {x}, out, [keep, xs, xd](const Tensor& g) {
    return TensorList{to_dtype(expand_back(g, keep, xs), xd)};
  });
}

// The diagonal's sum. Where nothing records, the diagonal is handed to the reduction as a plain strided
// view (the recording view and sum's dim handling cost as much as the sum of a small diagonal).
Tensor trace(const Tensor& x) {
  SX_CHECK(x->dim() == 2, ValueError, "[trace] expects a 2-d tensor, got shape ", shape_str(x->shape), " (",
           dtype_name(x->dtype), ")");
  if (needs_grad({&x})) return sum(diagonal(x, 0, 0, 1), std::nullopt, false, std::nullopt);
  Tensor d = make_view(x, {std::min(x->shape[0], x->shape[1])}, {x->strides[0] + x->strides[1]}, x->offset);
  return reduce_impl(ReduceOp::Sum, d, {0}, false, is_floating(x->dtype) ? x->dtype : DType::Int64, "trace");
}

Tensor nansum(const Tensor& x, const OptDims& dims, bool keepdim, std::optional<DType> dt) {
  SX_CHECK(!is_complex(x->dtype), TypeError, "[nansum] is not implemented for complex tensors, got ", describe(x));
  if (!is_floating(x->dtype)) return sum(x, dims, keepdim, dt);  // no NaN to skip
  if (dt && !is_floating(*dt)) return to_dtype(nansum(x, dims, keepdim), *dt);
  IntList d = normalize_dims(dims && dims->empty() ? std::nullopt : dims, x->dim(), "nansum");
  Tensor out = reduce_impl(ReduceOp::NanSum, x, d, keepdim, dt ? *dt : x->dtype, "nansum");
  if (!needs_grad({&x})) return out;
  Shape keep, xs = x->shape;
  for (int64_t i = 0; i < x->dim(); ++i) keep.push_back(std::find(d.begin(), d.end(), i) != d.end() ? 1 : xs[i]);
  Saved sx(x);
  return record("NansumBackward", {x}, out, [sx, keep, xs](const Tensor& g) {
    const Tensor& v = sx.get();
    Tensor gx = to_dtype(expand_back(g, keep, xs), v->dtype);
    Tensor zero = scalar_tensor(Scalar(0.0), gx->dtype, gx->device());
    return TensorList{where(unary(UnaryOp::IsNan, v), zero, gx)};
  });
}

Tensor mean(const Tensor& x, const OptDims& dims, bool keepdim) {
  if (is_complex(x->dtype)) [[unlikely]] {
    IntList d = normalize_dims(dims && dims->empty() ? std::nullopt : dims, x->dim(), "mean");
    return d.empty() ? clone(x) : complex_sum(x, d, keepdim, true);
  }
  SX_CHECK(is_floating(x->dtype), TypeError, "[mean] expected a floating tensor, got ", describe(x),
           "; convert it with .float() first");
  IntList d = normalize_dims(dims && dims->empty() ? std::nullopt : dims, x->dim(), "mean");
  if (!needs_grad({&x})) return reduce_impl(ReduceOp::Mean, x, d, keepdim, x->dtype, "mean");  // one pass, one rounding
  int64_t n = 1;
  for (auto i : d) n *= x->shape[i];
  return mul(sum(x, d, keepdim), Scalar(1.0 / double(n)));
}

Tensor prod(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  IntList d = dim ? IntList{wrap_dim(*dim, x->dim(), "prod")} : normalize_dims(std::nullopt, x->dim(), "prod");
  if (x->dim() == 0) d.clear();
  DType rt = is_floating(x->dtype) ? x->dtype : DType::Int64;
  Tensor out = reduce_impl(ReduceOp::Prod, x, d, keepdim, rt, "prod");
  if (!is_floating(rt) || !needs_grad({&x})) return out;
  Saved sx(x);
  return record("ProdBackward", {x}, out, [sx, d, keepdim](const Tensor& g) {
    // d prod / d x_i = product of the other elements. With z zeros in a slice: z == 0 gives
    // prod / x_i; z == 1 gives the product of the non-zeros at the zero and 0 elsewhere; z > 1 gives 0.
    const Tensor& v = sx.get();
    if (v->dim() == 0) return TensorList{g};
    Tensor gg = g;
    if (!keepdim) for (auto i : d) gg = unsqueeze(gg, i);
    Tensor is_zero = binary(BinaryOp::Eq, v, zeros_like(v));
    Tensor safe = where(is_zero, ones_like(v), v);
    Tensor p_nz = d.size() == 1 ? prod(safe, d[0], true)
                                : reshape(prod(reshape(safe, {-1}), 0, false), IntList(size_t(v->dim()), 1));
    Tensor zeros_in = sum(to_dtype(is_zero, v->dtype), d, true);
    Tensor one_zero = to_dtype(binary(BinaryOp::Eq, zeros_in, ones_like(zeros_in)), v->dtype);
    Tensor no_zero = to_dtype(binary(BinaryOp::Eq, zeros_in, zeros_like(zeros_in)), v->dtype);
    Tensor others = where(is_zero, mul(p_nz, one_zero), mul(div(p_nz, safe), no_zero));
    return TensorList{mul(gg, others)};
  });
}

static Tensor extreme(const Tensor& x, const OptDims& dims, bool keepdim, bool is_max) {
  const char* name = is_max ? "amax" : "amin";
  IntList d = normalize_dims(dims && dims->empty() ? std::nullopt : dims, x->dim(), name);
  Tensor out = reduce_impl(is_max ? ReduceOp::Max : ReduceOp::Min, x, d, keepdim, x->dtype, name);
  if (!is_floating(x->dtype) || !needs_grad({&x})) return out;
  Saved sx(x), so(alias_detached(out));
  return record(is_max ? "AmaxBackward" : "AminBackward", {x}, out, [sx, so, d, keepdim](const Tensor& g) {
    const Tensor& v = sx.get();
    Tensor o = so.get(), gg = g;
    if (!keepdim) for (auto i : d) o = unsqueeze(o, i), gg = unsqueeze(gg, i);
    Tensor mask = to_dtype(binary(BinaryOp::Eq, v, o), g->dtype);  // ties share the gradient evenly
    Tensor count = sum(mask, d, true);
    return TensorList{div(mul(mask, gg), count)};
  });
}
Tensor amax(const Tensor& x, const OptDims& dims, bool keepdim) { return extreme(x, dims, keepdim, true); }
Tensor amin(const Tensor& x, const OptDims& dims, bool keepdim) { return extreme(x, dims, keepdim, false); }

static std::pair<Tensor, Tensor> arg_extreme(const Tensor& x, int64_t dim, bool keepdim, bool is_max) {
  const char* name = is_max ? "max" : "min";
  int64_t d = wrap_dim(dim, x->dim(), name);
  Layout L = layout_for(x, x->dim() ? IntList{d} : IntList{});
  SX_CHECK(L.n > 0, IndexError, "[", name, "] cannot reduce over an empty dimension of a tensor of shape ",
           shape_str(x->shape));
  Shape os = keepdim || x->dim() == 0 ? L.keep_shape : L.out_shape;
  Tensor values = empty(os, x->dtype, x->device()), idx = empty(os, DType::Int64, x->device());
  kern::arg_reduce(x->device())(is_max, L.data, values, idx, L.outer, L.n, L.inner);
  if (is_floating(x->dtype) && needs_grad({&x}) && x->dim() > 0) {
    Shape xs = x->shape;
    Tensor ix = keepdim ? idx : unsqueeze(idx, d);
    record(is_max ? "MaxBackward" : "MinBackward", {x}, values, [xs, ix, d, keepdim](const Tensor& g) {
      Tensor gg = keepdim ? g : unsqueeze(g, d);
      return TensorList{scatter(zeros(xs, g->dtype, g->device()), d, ix, gg)};
    });
  }
  return {values, idx};
}
std::pair<Tensor, Tensor> max_dim(const Tensor& x, int64_t dim, bool keepdim) { return arg_extreme(x, dim, keepdim, true); }
std::pair<Tensor, Tensor> min_dim(const Tensor& x, int64_t dim, bool keepdim) { return arg_extreme(x, dim, keepdim, false); }

Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  if (!dim) return arg_extreme(reshape(detach(x), {-1}), 0, false, true).second;
  return arg_extreme(detach(x), *dim, keepdim, true).second;
}
Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  if (!dim) return arg_extreme(reshape(detach(x), {-1}), 0, false, false).second;
  return arg_extreme(detach(x), *dim, keepdim, false).second;
}

Tensor var(const Tensor& x, const OptDims& dims, double correction, bool keepdim) {
  SX_CHECK(is_floating(x->dtype), TypeError, "[var] expected a floating tensor, got ", describe(x));
  IntList d = normalize_dims(dims && dims->empty() ? std::nullopt : dims, x->dim(), "var");
  int64_t n = 1;
  for (auto i : d) n *= x->shape[i];
  Tensor c = sub(x, mean(x, d, true));
  Scalar scale(1.0 / std::max(0.0, double(n) - correction));
  if (!needs_grad({&x}))  // the squares summed as they are read (the sum of squares kernel of norm)
    return mul(reduce_impl(ReduceOp::SumSquares, c, d, keepdim, x->dtype, "var"), scale);
  return mul(sum(mul(c, c), d, keepdim), scale);
}

Tensor std_(const Tensor& x, const OptDims& dims, double correction, bool keepdim) {
  return sqrt(var(x, dims, correction, keepdim));
}

Tensor logsumexp(const Tensor& x, const OptDims& dims, bool keepdim) {
  Tensor xf = is_floating(x->dtype) ? x : to_dtype(x, default_float_dtype());
  IntList d = normalize_dims(dims && dims->empty() ? std::nullopt : dims, x->dim(), "logsumexp");
  bool fused = (xf->dtype == DType::Float32 || xf->dtype == DType::Float64) && kern::logsumexp.has(xf->device().type);
  if (fused) {  // one kernel (an empty reduction gives -inf); the gradient softmax(x) by public ops
    Layout L = layout_for(xf, d);
    if (d.empty() && xf->dim() > 0) L.n = 1;
    Tensor out = empty(keepdim ? L.keep_shape : L.out_shape, xf->dtype, xf->device());
    kern::logsumexp(xf->device())(L.data, out, L.outer, L.n, L.inner);
    if (!needs_grad({&xf})) return out;
    Saved sx(xf);
    Shape keep = L.keep_shape, xs = xf->shape;
    return record("LogsumexpBackward", {xf}, out, [sx, d, keep, xs](const Tensor& g) {
      const Tensor& v = sx.get();
      Tensor lse = reshape(logsumexp(v, d, true), keep);
      return TensorList{mul(expand_back(g, keep, xs), exp(sub(v, lse)))};
    });
  }
  Tensor m = detach(amax(xf, d, true));
  m = where(unary(UnaryOp::IsFinite, m), m, zeros_like(m));  // all -inf rows stay -inf, not NaN
  Tensor out = add(log(sum(exp(sub(xf, m)), d, true)), m);
  return keepdim ? out : squeeze(out, d);
}

Tensor norm(const Tensor& x, double p, const OptDims& dims, bool keepdim) {
  if (is_complex(x->dtype)) [[unlikely]] return complex_norm(x, p, dims, keepdim);
  SX_CHECK(is_floating(x->dtype), TypeError, "[norm] expected a floating tensor, got ", describe(x));
  if (p == 2 && !needs_grad({&x})) {  // squares summed in one pass, without an x * x temporary
    IntList d = normalize_dims(dims && dims->empty() ? std::nullopt : dims, x->dim(), "norm");
    return sqrt(reduce_impl(ReduceOp::SumSquares, x, d, keepdim, x->dtype, "norm"));
  }
  if (p == 2) return sqrt(sum(mul(x, x), dims, keepdim));
  if (p == 1) return sum(unary(UnaryOp::Abs, x), dims, keepdim);
  if (std::isinf(p)) return p > 0 ? amax(unary(UnaryOp::Abs, x), dims, keepdim) : amin(unary(UnaryOp::Abs, x), dims, keepdim);
  if (p == 0) {  // the count of nonzeros, in x's dtype
    Tensor nonzero = binary(BinaryOp::Ne, x, scalar_tensor(Scalar(0.0), x->dtype, x->device()));
    return sum(nonzero, dims, keepdim, x->dtype);
  }
  return pow(sum(pow(unary(UnaryOp::Abs, x), Scalar(p)), dims, keepdim), Scalar(1.0 / p));
}

// all/any over an empty reduction give their identities (true / false), as in PyTorch and NumPy.
static Tensor empty_logical(const Tensor& x, const IntList& d, bool keepdim, bool value) {
  Shape s;
  for (int64_t i = 0; i < x->dim(); ++i) {
    bool red = std::find(d.begin(), d.end(), i) != d.end();
    if (!red || keepdim) s.push_back(red ? 1 : x->shape[i]);
  }
  return full(s, Scalar(value), x->dtype == DType::UInt8 ? DType::UInt8 : DType::Bool, x->device());
}

static bool reduces_nothing(const Tensor& x, const IntList& d) {
  int64_t n = 1;
  for (auto i : d) n *= x->shape[i];
  return x->dim() > 0 && n == 0;
}

Tensor all(const Tensor& x, const OptDims& dims, bool keepdim) {
  IntList d = normalize_dims(dims && dims->empty() ? std::nullopt : dims, x->dim(), "all");
  if (reduces_nothing(x, d)) return empty_logical(x, d, keepdim, true);
  Tensor r = reduce_impl(ReduceOp::Min, cast_nograd(x, DType::Bool), d, keepdim, DType::Bool, "all");
  return x->dtype == DType::UInt8 ? cast_nograd(r, DType::UInt8) : r;  // PyTorch keeps uint8 here
}

Tensor any(const Tensor& x, const OptDims& dims, bool keepdim) {
  IntList d = normalize_dims(dims && dims->empty() ? std::nullopt : dims, x->dim(), "any");
  if (reduces_nothing(x, d)) return empty_logical(x, d, keepdim, false);
  Tensor b = cast_nograd(x, DType::Bool);
  Tensor r = reduce_impl(ReduceOp::Max, b, d, keepdim, DType::Bool, "any");
  return x->dtype == DType::UInt8 ? cast_nograd(r, DType::UInt8) : r;  // PyTorch keeps uint8 here
}

Tensor cumsum(const Tensor& x, int64_t dim) {
  int64_t d = wrap_dim(dim, x->dim(), "cumsum");
  if (is_complex(x->dtype) && x->dim() > 0) [[unlikely]] return complex_cumsum(x, d);
  DType rt = is_floating(x->dtype) ? x->dtype : DType::Int64;
  Tensor xc = contiguous(cast_nograd(x, rt));
  Tensor out = empty(x->shape, rt, x->device());
  int64_t outer = 1, inner = 1, n = x->dim() ? x->shape[d] : 1;
  for (int64_t i = 0; i < x->dim(); ++i) {
    if (i < d) outer *= x->shape[i];
    if (i > d) inner *= x->shape[i];
  }
  kern::cumsum(x->device())(xc, out, outer, n, inner);
  if (!is_floating(rt) || !needs_grad({&x})) return out;
  return record("CumsumBackward", {x}, out, [d](const Tensor& g) {
    return TensorList{flip(cumsum(flip(g, {d}), d), {d})};
  });
}

Tensor sum_to(const Tensor& g, const Shape& shape) {
  if (g->shape == shape) return g;
  int64_t lead = g->dim() - int64_t(shape.size());
  SX_CHECK(lead >= 0, ValueError, "[sum_to] cannot reduce shape ", shape_str(g->shape), " to ", shape_str(shape));
  IntList dims;
  for (int64_t i = 0; i < g->dim(); ++i)
    if (i < lead || (shape[i - lead] == 1 && g->shape[i] != 1)) dims.push_back(i);
  Tensor r = dims.empty() ? g : sum(g, dims, true);
  return reshape(r, shape);
}

}  // namespace sx
