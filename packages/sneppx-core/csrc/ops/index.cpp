// Indexing ops: gather/scatter along a dim, advanced indexing on leading dims, sorting.
// A bad index raises IndexError: the gather and scatter kernels check indices as they use them
// (sparing a pass over the index), the others run only after the op has checked them. The kernels
// (slots in ops/kernels.h) do the data movement on the tensors' device.
#include <algorithm>
#include <numeric>

#include "ops/kernels.h"
#include "ops/common.h"
#include "ops/complex.h"

namespace sx {

SX_DEFINE_KERNEL(kern::index_in_range);
SX_DEFINE_KERNEL(kern::gather);
SX_DEFINE_KERNEL(kern::scatter);
SX_DEFINE_KERNEL(kern::index_front);
SX_DEFINE_KERNEL(kern::index_put_front);
SX_DEFINE_KERNEL(kern::index_select);
SX_DEFINE_KERNEL(kern::index_add);
SX_DEFINE_KERNEL(kern::masked_select);
SX_DEFINE_KERNEL(kern::sort_rows);
SX_DEFINE_KERNEL(kern::kth_dim);
SX_DEFINE_KERNEL(kern::sort_dim);
SX_DEFINE_KERNEL(kern::count_nonzero);
SX_DEFINE_KERNEL(kern::count_true);
SX_DEFINE_KERNEL(kern::nonzero);
SX_DEFINE_KERNEL(kern::one_hot);

namespace {
Tensor as_index(const Tensor& idx, const char* op) {
  SX_CHECK(idx->dtype == DType::Int64 || idx->dtype == DType::Int32 || idx->dtype == DType::UInt8, TypeError, "[", op,
           "] index must be an integer tensor, got ", describe(idx));
  return contiguous(cast_nograd(idx, DType::Int64));
}

// Smallest and largest entry of a non-empty int64 index (through the device's reduce kernel).
std::pair<int64_t, int64_t> bounds(const Tensor& idx) {
  Tensor lo = empty({}, DType::Int64, idx->device()), hi = empty({}, DType::Int64, idx->device());
  kern::reduce(idx->device())(ReduceOp::Min, idx, lo, 1, idx->numel(), 1);
  kern::reduce(idx->device())(ReduceOp::Max, idx, hi, 1, idx->numel(), 1);
  return {item_int(lo), item_int(hi)};
}

void check_range(const Tensor& idx, int64_t n, const char* op, int64_t dim) {
  if (idx->numel() == 0 || is_meta(idx)) return;
  if (kern::index_in_range.has(idx->device().type) && kern::index_in_range(idx->device())(idx, n)) return;
  auto [lo, hi] = bounds(idx);
  SX_CHECK(lo >= -n && hi < n, IndexError, "[", op, "] index ", hi >= n ? hi : lo, " is out of bounds for dimension ",
           dim, " with size ", n);
}

// Raises the IndexError of an index outside [-n, n) that a gather or scatter kernel reported.
[[noreturn]] void range_error(const Tensor& idx, int64_t n, const char* op, int64_t dim) {
  check_range(idx, n, op, dim);
  throw RuntimeError(msg("[", op, "] the kernel reported an index out of range that the check did not find"));
}

// out with src (idx's positions, of out's dtype) written or reduced in at idx along d. float16 and
// bfloat16 sums accumulate in float32 and round once, as PyTorch's scatter_add does (a running sum in the
// narrow type stops growing: 256 + 1 is 256 in bfloat16).
void run_scatter(const Tensor& out, const Tensor& idx, const Tensor& src, int64_t d, ScatterOp how, const char* op) {
  if (how == ScatterOp::Add && (out->dtype == DType::Float16 || out->dtype == DType::BFloat16)) {
    Tensor acc = cast_nograd(out, DType::Float32);
    run_scatter(acc, idx, cast_nograd(src, DType::Float32), d, how, op);
    copy_into(out, acc);
    return;
  }
  if (!kern::scatter(out->device())(out, idx, src, d, how)) range_error(idx, out->shape[size_t(d)], op, d);
}

void check_gather_shapes(const Tensor& x, int64_t d, const Tensor& index, const char* op) {
  SX_CHECK(index->dim() == x->dim(), ValueError, "[", op, "] index ", shape_str(index->shape), " and input ",
           shape_str(x->shape), " must have the same number of dims");
  for (int64_t i = 0; i < x->dim(); ++i)
    SX_CHECK(i == d || index->shape[i] <= x->shape[i], ValueError, "[", op, "] index ", shape_str(index->shape),
             " is larger than input ", shape_str(x->shape), " outside dim ", d);
}

// out = x with src written (or added) at index positions along dim.
Tensor scatter_impl(const Tensor& x, int64_t d, const Tensor& idx, const Tensor& src, bool add) {
  Tensor out = clone_nograd(x);
  run_scatter(out, idx, cast_nograd(src, x->dtype), d, add ? ScatterOp::Add : ScatterOp::Set,
              add ? "scatter_add" : "scatter");
  return out;
}
}  // namespace

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  check_same_device("gather", x, index);
  if (x->dim() == 0) {  // a 0-d input gathers as a 1-element 1-d one
    wrap_dim(dim, 0, "gather");
    SX_CHECK(index->dim() == 0, ValueError, "[gather] a 0-d input needs a 0-d index, got ", describe(index));
    return reshape(gather(reshape(x, {1}), 0, reshape(index, {1})), {});
  }
  int64_t d = wrap_dim(dim, x->dim(), "gather");
  if (is_complex(x->dtype)) [[unlikely]] return complex_gather(x, d, index);
  Tensor idx = as_index(index, "gather");
  check_gather_shapes(x, d, idx, "gather");
  Tensor out = empty(idx->shape, x->dtype, x->device());
  if (!kern::gather(x->device())(out, x, idx, d)) range_error(idx, x->shape[d], "gather", d);
  if (!is_floating(x->dtype) || !needs_grad({&x})) return out;
  Shape xs = x->shape;
  return record("GatherBackward", {x}, out, [xs, d, idx](const Tensor& g) {
    return TensorList{scatter_add(zeros(xs, g->dtype, g->device()), d, idx, g)};
  });
}

static void check_scatter(const Tensor& x, int64_t d, const Tensor& idx, const Tensor& src, const char* op) {
  check_gather_shapes(x, d, idx, op);
  SX_CHECK(src->dim() == idx->dim(), ValueError, "[", op, "] src ", shape_str(src->shape), " and index ",
           shape_str(idx->shape), " must have the same number of dims");
  for (int64_t i = 0; i < idx->dim(); ++i)
    SX_CHECK(idx->shape[i] <= src->shape[i], ValueError, "[", op, "] index ", shape_str(idx->shape),
             " is larger than src ", shape_str(src->shape));
}

// Zero-pads g, placed at the leading corner, up to shape (src may be larger than index in
// scatter/scatter_add); one dim at a time so that each step's own vjp is a slice.
static Tensor pad_corner(const Tensor& g, const Shape& shape) {
  Tensor r = g;
  for (int64_t i = 0; i < r->dim(); ++i) {
    if (r->shape[i] == shape[i]) continue;
    Shape s = r->shape;
    s[i] = shape[i];
    r = slice_backward(r, s, i, 0, 1);
  }
  return r;
}

// A 0-d input scatters as a 1-element 1-d one (its index and src must be 0-d too).
static Tensor scatter_0d(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, bool add) {
  wrap_dim(dim, 0, add ? "scatter_add" : "scatter");
  SX_CHECK(index->dim() == 0 && src->dim() == 0, ValueError, "[", add ? "scatter_add" : "scatter",
           "] a 0-d input needs a 0-d index and src, got ", describe(index), " and ", describe(src));
  Tensor x1 = reshape(x, {1}), i1 = reshape(index, {1}), s1 = reshape(src, {1});
  return reshape(add ? scatter_add(x1, 0, i1, s1) : scatter(x1, 0, i1, s1), {});
}

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  check_same_device("scatter", x, index);
  if (src->dim()) check_same_device("scatter", x, src);
  if (x->dim() == 0) return scatter_0d(x, dim, index, src, false);
  int64_t d = wrap_dim(dim, x->dim(), "scatter");
  Tensor idx = as_index(index, "scatter");
  Tensor s = src->dim() == 0 ? expand_view(to_device(src, x->device()), idx->shape) : src;
  check_scatter(x, d, idx, s, "scatter");
  Tensor out = scatter_impl(x, d, idx, s, false);
  if (!is_floating(x->dtype) || !needs_grad({&x, &src})) return out;
  Tensor sv = src;
  return record("ScatterBackward", {x, src}, out, [d, idx, sv](const Tensor& g) {
    Tensor gs = sv->dim() == 0 ? sum(gather(g, d, idx)) : pad_corner(gather(g, d, idx), sv->shape);
    return TensorList{scatter(g, d, idx, zeros({}, g->dtype, g->device())), grad_for(gs, sv)};
  });
}

Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  check_same_device("scatter_add", x, index);
  check_same_device("scatter_add", x, src);
  if (x->dim() == 0) return scatter_0d(x, dim, index, src, true);
  int64_t d = wrap_dim(dim, x->dim(), "scatter_add");
  Tensor idx = as_index(index, "scatter_add");
  check_scatter(x, d, idx, src, "scatter_add");
  Tensor out = scatter_impl(x, d, idx, src, true);
  if (!is_floating(x->dtype) || !needs_grad({&x, &src})) return out;
  Tensor sv = src;
  return record("ScatterAddBackward", {x, src}, out, [d, idx, sv](const Tensor& g) {
    Tensor gs = gather(g, d, idx);
    if (gs->shape != sv->shape) gs = pad_corner(gs, sv->shape);
    return TensorList{g, gs};
  });
}

bool scatter_into(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, bool add) {
  const char* op = add ? "scatter_add_" : "scatter_";
  if (x->dim() == 0 || index->device() != x->device() || !writes_into(x, {&index, &src})) return false;
  int64_t d = wrap_dim(dim, x->dim(), op);
  Tensor idx = as_index(index, op);
  Tensor s = src->dim() == 0 && !add ? expand_view(src, idx->shape) : src;
  check_scatter(x, d, idx, s, op);
  check_range(idx, x->shape[size_t(d)], op, d);  // every index before the first write
  x->check_writable(op);
  run_scatter(x, idx, cast_nograd(s, x->dtype), d, add ? ScatterOp::Add : ScatterOp::Set, op);
  x->bump_version();
  return true;
}

// A 1-d idx repeated over `shape`, its values along dim d: a view.
static Tensor spread_index(const Tensor& idx, int64_t d, const Shape& shape) {
  Shape s(shape.size(), 1);
  s[size_t(d)] = -1;
  return expand_view(reshape(idx, s), shape);
}

bool index_put_into(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& v) {
  const Device dev = x->device();
  if (x->dim() == 0 || index->dtype != DType::Int64 || index->dim() != 1 || !index->is_contiguous() ||
      index->device() != dev || !kern::index_in_range.has(dev.type))
    return false;
  const int64_t d = wrap_dim(dim, x->dim(), "setitem");
  if (!kern::index_in_range(dev)(index, x->shape[size_t(d)])) return false;
  Shape res = x->shape;
  res[size_t(d)] = index->numel();
  if (broadcast_shapes(res, v->shape, "setitem") != res) return false;
  Tensor src = expand_view(cast_nograd(v, x->dtype), res);
  if (!writes_into(x, {&index, &src})) return false;
  x->check_writable("setitem");
  // The index was checked above, so neither path checks it again (scatter_into would, over the whole
  // repeated index).
  if (d == 0 && x->is_contiguous() && kern::index_put_front.has(dev.type))
    kern::index_put_front(dev)(x, {index}, contiguous(src), false);
  else
    run_scatter(x, contiguous(spread_index(index, d, res)), src, d, ScatterOp::Set, "setitem");
  x->bump_version();
  return true;
}

// index_copy's checks; returns dim wrapped.
static int64_t index_copy_dim(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, const char* op) {
  check_same_device(op, x, index);
  check_same_device(op, x, src);
  const int64_t d = wrap_dim(dim, x->dim(), op);
  SX_CHECK(index->dim() <= 1 && (index->dtype == DType::Int64 || index->dtype == DType::Int32), ValueError, "[", op,
           "] index must be a 1-d int64 or int32 tensor, got ", describe(index));
  SX_CHECK(src->dtype == x->dtype, TypeError, "[", op, "] source dtype ", dtype_name(src->dtype),
           " must match the input's ", dtype_name(x->dtype));
  Shape want = x->shape;
  if (x->dim()) want[size_t(d)] = index->numel();
  bool fits = x->dim() ? src->shape == want : src->numel() == 1 && index->numel() == 1;
  SX_CHECK(fits, ValueError, "[", op, "] source of shape ", shape_str(src->shape), " must have shape ",
           shape_str(want), " for input ", describe(x), " and ", index->numel(), " indices along dim ", d);
  return d;
}

Tensor index_copy(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  const int64_t d = index_copy_dim(x, dim, index, src, "index_copy");
  Tensor idx = reshape(as_index(index, "index_copy"), {-1});
  if (x->dim() == 0) return scatter(x, 0, reshape(idx, {}), reshape(src, {}));
  check_range(idx, x->shape[size_t(d)], "index_copy", d);
  if (d == 0) return index_put_front(x, {idx}, src, false);  // whole leading slices: block copies
  return scatter(x, d, spread_index(idx, d, src->shape), src);
}

bool index_copy_into(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  const int64_t d = index_copy_dim(x, dim, index, src, "index_copy_");
  return x->dim() && index_put_into(x, d, reshape(as_index(index, "index_copy_"), {-1}), src);
}

bool index_add_into(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, double alpha) {
  if (x->dim() == 0 || index->device() != x->device() || !writes_into(x, {&index, &src})) return false;
  int64_t d = wrap_dim(dim, x->dim(), "index_add_");
  Tensor idx = reshape(as_index(index, "index_add_"), {-1});
  Shape want = x->shape;
  want[size_t(d)] = idx->numel();
  SX_CHECK(src->shape == want, ValueError, "[index_add_] source of shape ", shape_str(src->shape), " must have shape ",
           shape_str(want), " for input ", describe(x), " and ", idx->numel(), " indices along dim ", d);
  check_range(idx, x->shape[size_t(d)], "index_add_", d);
  x->check_writable("index_add_");
  if (idx->numel() && x->numel())
    kern::index_add(x->device())(x, idx, contiguous(cast_nograd(src, x->dtype)), d, Scalar(alpha));
  x->bump_version();
  return true;
}

// The device checks of a scatter_reduce, and whether x is 0-d (then index and src must be 0-d too and
// the caller reduces the one-element views).
static bool scatter_reduce_0d(const char* op, const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  check_same_device(op, x, index);
  check_same_device(op, x, src);
  if (x->dim() != 0) return false;
  wrap_dim(dim, 0, op);
  SX_CHECK(index->dim() == 0 && src->dim() == 0, ValueError, "[", op, "] a 0-d input needs a 0-d index and src, got ",
           describe(index), " and ", describe(src));
  return true;
}

// out = x with each src element reduced by max (or min) into its index position; without include_self the
// positions that receive elements start from the first of them instead of x (a Set scatter of the same
// elements, whose values the Max/Min scatter then only confirms). The gradient goes to the elements
// equal to the result, shared evenly among ties, as PyTorch does.
Tensor scatter_reduce_extreme(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, bool is_max,
                              bool include_self) {
  const char* op = is_max ? "scatter_reduce(amax)" : "scatter_reduce(amin)";
  if (scatter_reduce_0d(op, x, dim, index, src))
    return reshape(scatter_reduce_extreme(reshape(x, {1}), 0, reshape(index, {1}), reshape(src, {1}), is_max,
                                          include_self), {});
  int64_t d = wrap_dim(dim, x->dim(), op);
  Tensor idx = as_index(index, op);
  check_scatter(x, d, idx, src, op);
  Tensor sv = make_view(src, idx->shape, src->strides, src->offset);  // the part of src that index covers
  Tensor sc = cast_nograd(sv, x->dtype), out = clone_nograd(x);
  if (!include_self) run_scatter(out, idx, sc, d, ScatterOp::Set, op);
  run_scatter(out, idx, sc, d, is_max ? ScatterOp::Max : ScatterOp::Min, op);
  if (!is_floating(x->dtype) || !needs_grad({&x, &src})) return out;
  Tensor hit = zeros(x->shape, DType::Bool, x->device());
  run_scatter(hit, idx, expand_view(full({}, Scalar(true), DType::Bool, x->device()), idx->shape), d, ScatterOp::Set,
              op);
  Saved sx_(x), ss(src), so(alias_detached(out));
  return record("ScatterReduceBackward", {x, src}, out, [sx_, ss, so, hit, idx, d, include_self](const Tensor& g) {
    const Tensor &xv = sx_.get(), &srcv = ss.get(), &y = so.get();
    Tensor one = ones({}, g->dtype, g->device()), zero = zeros({}, g->dtype, g->device());
    Tensor s = make_view(srcv, idx->shape, srcv->strides, srcv->offset);
    Tensor won_src = where(binary(BinaryOp::Eq, s, gather(y, d, idx)), one, zero);
    Tensor won_self = where(hit, include_self ? where(binary(BinaryOp::Eq, xv, y), one, zero) : zero, one);
    Tensor count = scatter_add(won_self, d, idx, won_src);
    Tensor gc = div(g, where(binary(BinaryOp::Gt, count, zero), count, one));
    Tensor gs = mul(gather(gc, d, idx), won_src);
    return TensorList{mul(gc, won_self), gs->shape == srcv->shape ? gs : pad_corner(gs, srcv->shape)};
  });
}

// Whether the dims of x after d (those of size > 1) are contiguous across each other.
static bool tail_merges(const Tensor& x, int64_t d) {
  int64_t want = -1;
  for (int64_t i = x->dim() - 1; i > d; --i) {
    if (x->shape[i] == 1) continue;
    if (want >= 0 && x->strides[i] != want) return false;
    want = x->strides[i] * x->shape[i];
  }
  return true;
}

// base with the src elements s (idx's shape, base's dtype) multiplied in at idx along d; without
// include_self the positions that receive elements start from 1 instead of base. No autograd.
static Tensor scatter_prod(const Tensor& base, int64_t d, const Tensor& idx, const Tensor& s, bool include_self) {
  const char* op = "scatter_reduce(prod)";
  Tensor out = clone_nograd(base);
  if (!include_self)
    run_scatter(out, idx, expand_view(ones({}, out->dtype, out->device()), idx->shape), d, ScatterOp::Set, op);
  run_scatter(out, idx, s, d, ScatterOp::Mul, op);
  return out;
}

// The gradient of each contribution to a product is g times the product of the slot's other
// contributions (the input's own value among them with include_self), formed without dividing by
// a zero: zeros of x are replaced by 1 before the division, and a src element that is the only
// zero of its slot gets the product of the others directly (PyTorch's rule).
Tensor scatter_reduce_prod(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, bool include_self) {
  const char* op = "scatter_reduce(prod)";
  if (scatter_reduce_0d(op, x, dim, index, src))
    return reshape(scatter_reduce_prod(reshape(x, {1}), 0, reshape(index, {1}), reshape(src, {1}), include_self), {});
  int64_t d = wrap_dim(dim, x->dim(), op);
  Tensor idx = as_index(index, op);
  check_scatter(x, d, idx, src, op);
  Tensor sv = make_view(src, idx->shape, src->strides, src->offset);  // the part of src that index covers
  Tensor out = scatter_prod(x, d, idx, cast_nograd(sv, x->dtype), include_self);
  if (!is_floating(x->dtype) || !needs_grad({&x, &src})) return out;
  Saved sx_(x), ss(src), so(alias_detached(out));
  return record("ScatterReduceBackward", {x, src}, out, [sx_, ss, so, idx, d, include_self, op](const Tensor& g) {
    SX_CHECK(!grad_mode::enabled(), RuntimeError, "[", op,
             "] differentiating the backward pass (create_graph=True) is not supported");
    const Tensor &xv = sx_.get(), &srcv = ss.get(), &y = so.get();
    Tensor one = ones({}, g->dtype, g->device()), zero = zeros({}, g->dtype, g->device());
    Tensor s = cast_nograd(make_view(srcv, idx->shape, srcv->strides, srcv->offset), g->dtype);
    Tensor gx;
    if (include_self) {
      Tensor xm = where(binary(BinaryOp::Eq, xv, zero), one, xv);
      gx = div(mul(g, scatter_prod(xm, d, idx, s, true)), xm);
    } else {
      Tensor hit = zeros(xv->shape, g->dtype, g->device());
      run_scatter(hit, idx, expand_view(one, idx->shape), d, ScatterOp::Set, op);
      gx = where(binary(BinaryOp::Eq, hit, one), zero, g);
    }
    Tensor is_zero = binary(BinaryOp::Eq, s, zero);
    Tensor zeros_in_slot = gather(scatter_add(zeros(xv->shape, g->dtype, g->device()), d, idx,
                                              where(is_zero, one, zero)), d, idx);
    Tensor single = binary(BinaryOp::And, is_zero, binary(BinaryOp::Eq, zeros_in_slot, one));
    Tensor others = gather(mul(g, scatter_prod(xv, d, idx, where(single, one, s), include_self)), d, idx);
    Tensor gs = where(single, others, div(gather(mul(g, y), d, idx), where(is_zero, one, s)));
    return TensorList{gx, gs->shape == srcv->shape ? gs : pad_corner(gs, srcv->shape)};
  });
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  SX_CHECK(index->dim() <= 1, ValueError, "[index_select] index must be 1-D, got ", describe(index));
  check_same_device("index_select", x, index);
  if (x->dim() == 0) return reshape(index_select(reshape(x, {1}), dim, index), {});  // as PyTorch: stays 0-d
  int64_t d = wrap_dim(dim, x->dim(), "index_select");
  if (is_complex(x->dtype)) [[unlikely]] return complex_index_select(x, d, index);
  Tensor idx = reshape(as_index(index, "index_select"), {-1});
  check_range(idx, x->shape[d], "index_select", d);
  Shape os = x->shape;
  os[size_t(d)] = idx->numel();
  Tensor out = empty(os, x->dtype, x->device());
  if (out->numel()) kern::index_select(x->device())(out, tail_merges(x, d) ? x : contiguous(detach(x)), idx, d);
  if (!is_floating(x->dtype) || !needs_grad({&x})) return out;
  Shape xs = x->shape;
  return record("IndexSelectBackward", {x}, out, [xs, d, idx](const Tensor& g) {
    return TensorList{index_add(zeros(xs, g->dtype, g->device()), d, idx, g, 1.0)};
  });
}

Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, double alpha) {
  check_same_device("index_add", x, index);
  check_same_device("index_add", x, src);
  int64_t d = wrap_dim(dim, x->dim(), "index_add");
  Tensor idx = reshape(as_index(index, "index_add"), {-1});
  Shape want = x->shape;
  if (x->dim()) want[size_t(d)] = idx->numel();
  SX_CHECK(src->shape == want, ValueError, "[index_add] source of shape ", shape_str(src->shape), " must have shape ",
           shape_str(want), " for input ", describe(x), " and ", idx->numel(), " indices along dim ", d);
  if (x->dim() == 0) {  // a 0-d input adds as a 1-element 1-d one
    SX_CHECK(idx->numel() == 1, ValueError, "[index_add] a 0-d input needs one index, got ", idx->numel());
    return reshape(index_add(reshape(x, {1}), 0, idx, reshape(src, {1}), alpha), {});
  }
  check_range(idx, x->shape[d], "index_add", d);
  Tensor out = clone_nograd(x);
  if (idx->numel() && out->numel())
    kern::index_add(out->device())(out, idx, contiguous(cast_nograd(detach(src), x->dtype)), d, Scalar(alpha));
  if (!is_floating(x->dtype) || !needs_grad({&x, &src})) return out;
  Tensor sv = src;
  return record("IndexAddBackward", {x, src}, out, [d, idx, alpha, sv](const Tensor& g) {
    Tensor gs = index_select(g, d, idx);
    return TensorList{g, grad_for(alpha == 1.0 ? gs : mul(gs, Scalar(alpha)), sv)};
  });
}

Tensor mask_front(const Tensor& x, const Tensor& mask) {
  int64_t k = mask->dim();
  SX_CHECK(mask->dtype == DType::Bool, TypeError, "[index] mask must be bool, got ", describe(mask));
  SX_CHECK(k >= 1 && k <= x->dim(), IndexError, "[index] boolean mask of shape ", shape_str(mask->shape),
           " does not fit a tensor of shape ", shape_str(x->shape));
  for (int64_t i = 0; i < k; ++i)
    SX_CHECK(mask->shape[i] == x->shape[i], IndexError, "[index] boolean mask of shape ", shape_str(mask->shape),
             " does not match the indexed shape at dim ", i, " (size ", x->shape[i], ")");
  check_same_device("index", x, mask);
  Tensor mc = contiguous(detach(mask));
  Shape os{kern::count_nonzero(mc->device())(mc)};
  os.insert(os.end(), x->shape.begin() + k, x->shape.end());
  Tensor out = empty(os, x->dtype, x->device());
  if (out->numel()) kern::masked_select(x->device())(out, contiguous(detach(x)), mc);
  if (!is_floating(x->dtype) || !needs_grad({&x})) return out;
  Shape xs = x->shape;
  return record("MaskBackward", {x}, out, [xs, mc, k](const Tensor& g) {
    Tensor nz = nonzero(mc);
    TensorList idx;
    for (int64_t i = 0; i < k; ++i) idx.push_back(select(nz, 1, i));
    return TensorList{index_put_front(zeros(xs, g->dtype, g->device()), idx, g, true)};
  });
}

Tensor one_hot(const Tensor& x, int64_t num_classes) {
  Tensor idx = as_index(x, "one_hot");
  auto check = [&](int64_t n) {
    auto [lo, hi] = idx->numel() ? bounds(idx) : std::pair<int64_t, int64_t>{0, -1};
    n = n < 0 ? hi + 1 : n;
    SX_CHECK(lo >= 0 && hi < n, IndexError, "[one_hot] class ", lo < 0 ? lo : hi, " is out of range for ", n,
             " classes");
    return n;
  };
  Shape s = idx->shape;
  if (kern::one_hot.has(x->device().type)) {
    // One pass writes the rows and checks the range; the bounds are looked up only for the message.
    s.push_back(num_classes < 0 ? check(num_classes) : num_classes);
    Tensor out = empty(s, DType::Int64, x->device());
    if (idx->numel() && !kern::one_hot(out->device())(out, idx)) check(num_classes);
    return out;
  }
  int64_t n = check(num_classes);
  s.push_back(n);
  Tensor out = zeros(s, DType::Int64, x->device());
  if (idx->numel() == 0 || n == 0) return out;
  Shape is = idx->shape;
  is.push_back(1);
  Tensor one = expand_view(full({}, Scalar(int64_t(1)), DType::Int64, x->device()), is);
  run_scatter(out, reshape(idx, is), one, int64_t(is.size()) - 1, ScatterOp::Set, "one_hot");
  return out;
}

// Sorts x along `dim`; returns the first k values and their indices. A backend with the strided kernel
// (sort_dim) sorts a contiguous x where it lies; otherwise `dim` is moved last and copied, and the
// results are moved back. A non-contiguous x whose moved view is contiguous takes that view as is.
static std::pair<Tensor, Tensor> sort_rows(const Tensor& x, int64_t dim, bool descending, int64_t k) {
  const int64_t d = x->dim() ? wrap_dim(dim, x->dim(), "sort") : 0;
  const Device dev = x->device();
  Tensor xd = x->dim() ? detach(x) : reshape(detach(x), {1}), moved = transpose(xd, d, -1);
  const bool by_dim = kern::sort_dim.has(dev.type);
  const bool strided = by_dim && (xd->is_contiguous() || !moved->is_contiguous());
  Tensor src = contiguous(strided ? xd : moved);
  const size_t at = size_t(strided ? d : src->dim() - 1);  // the sorted dim of src
  const int64_t n = src->shape[at];
  Shape os = src->shape;
  os[at] = k;
  Tensor vals = empty(os, x->dtype, dev), idx = empty(os, DType::Int64, dev);
  if (src->numel()) {
    int64_t in = 1;
    for (size_t a = at + 1; a < os.size(); ++a) in *= os[a];
    const int64_t outer = src->numel() / (n * in);
    if (by_dim)
      kern::sort_dim(dev)(reshape(src, {outer, n, in}), reshape(vals, {outer, k, in}), reshape(idx, {outer, k, in}),
                          descending);
    else
      kern::sort_rows(dev)(reshape(src, {outer, n}), reshape(vals, {outer, k}), reshape(idx, {outer, k}), descending);
  }
  if (x->dim() == 0) return {reshape(vals, {}), reshape(idx, {})};
  if (!strided) {
    vals = contiguous(transpose(vals, d, -1));
    idx = contiguous(transpose(idx, d, -1));
  }
  if (is_floating(x->dtype) && needs_grad({&x})) {
    Shape xs = x->shape;
    record("SortBackward", {x}, vals, [xs, d, idx](const Tensor& g) {
      return TensorList{scatter(zeros(xs, g->dtype, g->device()), d, idx, g)};
    });
  }
  return {vals, idx};
}

std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending, bool stable) {
  int64_t n = x->dim() ? x->shape[wrap_dim(dim, x->dim(), "sort")] : 1;
  (void)stable;  // every sort keeps the order of ties
  return sort_rows(x, dim, descending, n);
}

std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest, bool sorted) {
  int64_t n = x->dim() ? x->shape[wrap_dim(dim, x->dim(), "topk")] : 1;
  SX_CHECK(k >= 0 && k <= n, IndexError, "[topk] k=", k, " is out of range for a dimension of size ", n);
  (void)sorted;  // results are always sorted, which satisfies both settings
  return sort_rows(x, dim, largest, k);
}

std::pair<Tensor, Tensor> kthvalue(const Tensor& x, int64_t k, int64_t dim, bool keepdim, bool nan_wins) {
  const int64_t d = x->dim() ? wrap_dim(dim, x->dim(), "kthvalue") : 0;
  const int64_t n = x->dim() ? x->shape[size_t(d)] : 1;
  SX_CHECK(k >= 1 && k <= n, IndexError, "[kthvalue] k=", k, " is out of range for a dim of size ", n);
  if (x->dim() == 0) return {clone(x), zeros({}, DType::Int64, x->device())};
  const Device dev = x->device();
  Shape ks = x->shape;
  ks[size_t(d)] = 1;
  Tensor vals, idx;
  if (kern::kth_dim.has(dev.type)) {  // a selection per row
    Tensor src = contiguous(detach(x));
    int64_t inner = 1;
    for (int64_t a = d + 1; a < x->dim(); ++a) inner *= x->shape[size_t(a)];
    const int64_t outer = n && inner ? x->numel() / (n * inner) : 0;
    vals = empty(ks, x->dtype, dev), idx = empty(ks, DType::Int64, dev);
    if (vals->numel()) kern::kth_dim(dev)(reshape(src, {outer, n, inner}), reshape(vals, {outer, 1, inner}),
                                          reshape(idx, {outer, 1, inner}), k, nan_wins && is_floating(x->dtype));
  } else {
    idx = narrow(sort(detach(x), d, false, true).second, d, k - 1, 1);
    if (nan_wins && is_floating(x->dtype) && x->numel()) {  // the first NaN of a slice that holds one
      Tensor nan = binary(BinaryOp::Ne, detach(x), detach(x));
      Tensor first = argmax(to_dtype(nan, DType::UInt8), d, true);
      idx = where(any(nan, IntList{d}, true), first, idx);
    }
  }
  if (!vals || (is_floating(x->dtype) && needs_grad({&x}))) vals = gather(x, d, idx);
  if (keepdim) return {vals, idx};
  return {squeeze(vals, IntList{d}), squeeze(idx, IntList{d})};
}

Tensor nonzero(const Tensor& x) {
  Tensor b = contiguous(cast_nograd(detach(x), DType::Bool));
  Tensor out = empty({kern::count_nonzero(b->device())(b), x->dim()}, DType::Int64, x->device());
  if (out->numel()) kern::nonzero(b->device())(out, b);
  return out;
}

namespace {
// Broadcasts the index tensors, checks them, and returns (indices contiguous int64, batch shape).
std::pair<TensorList, Shape> prep_front(const Tensor& x, const TensorList& indices, const char* op) {
  SX_CHECK(int64_t(indices.size()) <= x->dim(), IndexError, "[", op, "] too many indices (", indices.size(),
           ") for a tensor of ", x->dim(), " dims");
  Shape b = indices.empty() ? Shape{} : indices[0]->shape;
  try {
    for (auto& i : indices) b = broadcast_shapes(b, i->shape, op);
  } catch (const ValueError& e) {  // a bad index, not a bad value: IndexError, as in PyTorch and NumPy
    throw IndexError(msg(e.what(), " (shape mismatch between index tensors)"));
  }
  TensorList out;
  for (size_t j = 0; j < indices.size(); ++j) {
    // Indices may live on the CPU for a tensor on another device, as in PyTorch.
    Tensor i = contiguous(expand_view(as_index(to_device(indices[j], x->device()), op), b));
    check_range(i, x->shape[j], "index", int64_t(j));
    out.push_back(i);
  }
  return {out, b};
}
}  // namespace

Tensor index_front(const Tensor& x, const TensorList& indices) {
  auto [idx, b] = prep_front(x, indices, "index");
  int64_t k = int64_t(idx.size());
  Tensor xc = contiguous(detach(x));
  Shape rest(x->shape.begin() + k, x->shape.end()), os = b;
  os.insert(os.end(), rest.begin(), rest.end());
  Tensor out = empty(os, x->dtype, x->device());
  if (out->numel()) kern::index_front(x->device())(out, xc, idx);
  if (!is_floating(x->dtype) || !needs_grad({&x})) return out;
  Shape xs = x->shape;
  return record("IndexBackward", {x}, out, [xs, idx](const Tensor& g) {
    return TensorList{index_put_front(zeros(xs, g->dtype, g->device()), idx, g, true)};
  });
}

Tensor index_put_front(const Tensor& x, const TensorList& indices, const Tensor& values, bool accumulate) {
  auto [idx, b] = prep_front(x, indices, "index_put");
  int64_t k = int64_t(idx.size());
  Shape rest(x->shape.begin() + k, x->shape.end()), vs = b;
  vs.insert(vs.end(), rest.begin(), rest.end());
  Shape bs = broadcast_shapes(vs, values->shape, "index_put");
  SX_CHECK(bs == vs, ValueError, "[index_put] values of shape ", shape_str(values->shape),
           " cannot be broadcast to the indexed shape ", shape_str(vs));
  Tensor out = clone_nograd(x);
  Tensor v = contiguous(expand_view(cast_nograd(detach(values), x->dtype), vs));
  if (v->numel()) kern::index_put_front(out->device())(out, idx, v, accumulate);
  if (!is_floating(x->dtype) || !needs_grad({&x, &values})) return out;
  Tensor val = values;
  return record("IndexPutBackward", {x, values}, out, [idx, accumulate, val](const Tensor& g) {
    Tensor gx = accumulate ? g : index_put_front(g, idx, zeros({}, g->dtype, g->device()), false);
    return TensorList{gx, grad_for(index_front(g, idx), val)};
  });
}

}  // namespace sx
