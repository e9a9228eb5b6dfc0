// Dtype conversion, copies and in-place assignment (with autograd history rebasing).
#include "ops/kernels.h"
#include "ops/common.h"

namespace sx {

Tensor expand_view(const Tensor& t, const Shape& shape) {
  if (t->shape == shape) return t;
  int64_t nd = int64_t(shape.size()), off = nd - t->dim();
  Shape st(nd, 0);
  for (int64_t i = 0; i < t->dim(); ++i) st[off + i] = t->shape[i] == 1 && shape[off + i] != 1 ? 0 : t->strides[i];
  auto v = make_view(t, shape, st, t->offset);
  return v;
}

Tensor cast_nograd(const Tensor& t, DType dt) {
  if (t->dtype == dt) return t;
  // Unlike PyTorch (which warns and drops the imaginary parts), refused: an op that computes in a real
  // dtype would otherwise take a complex input's real parts silently.
  SX_CHECK(!is_complex(t->dtype) || is_complex(dt), TypeError, "[to] ", describe(t), " cannot be converted to ",
           dtype_name(dt), ": the imaginary parts would be lost (take .real or .abs() first; ops without a complex "
           "form raise this too)");
  Tensor out = empty(t->shape, dt, t->device());
  copy_into(out, t);
  return out;
}

Tensor grad_for(const Tensor& g, const Tensor& t) {
  if (!g) return g;
  Tensor r = g->shape == t->shape ? g : sum_to(g, t->shape);
  if (is_complex(r->dtype) && !is_complex(t->dtype)) r = real(r);  // a real input promoted to complex
  return r->dtype == t->dtype ? r : to_dtype(r, t->dtype);
}

void check_same_device(const char* op, const Tensor& a, const Tensor& b) {
  SX_CHECK(a->device() == b->device(), RuntimeError, "[", op, "] expected tensors on the same device, got ",
           a->device().str(), " and ", b->device().str());
}

IntList normalize_dims(const OptDims& dims, int64_t ndim, const char* op) {
  IntList out;
  if (!dims) {
    for (int64_t i = 0; i < ndim; ++i) out.push_back(i);
    return out;
  }
  for (auto d : *dims) out.push_back(wrap_dim(d, ndim, op));
  std::sort(out.begin(), out.end());
  SX_CHECK(std::adjacent_find(out.begin(), out.end()) == out.end(), ValueError, "[", op, "] dim appears twice in ",
           shape_str(*dims));
  if (ndim == 0) out.clear();
  return out;
}

Tensor to_dtype(const Tensor& x, DType dt) {
  if (x->dtype == dt) return x;
  Tensor out = cast_nograd(x, dt);
  if (!is_differentiable(dt)) return out;  // integer results carry no gradient
  DType src = x->dtype;
  return record("ToCopyBackward", {x}, out, [src](const Tensor& g) {
    return TensorList{to_dtype(is_complex(g->dtype) && !is_complex(src) ? real(g) : g, src)};
  });
}

Tensor clone_nograd(const Tensor& x) {
  Tensor out = empty(x->shape, x->dtype, x->device());
  copy_into(out, x);
  return out;
}

Tensor contiguous(const Tensor& x) { return x->is_contiguous() ? x : clone(x); }

Tensor clone(const Tensor& x) {
  Tensor out = clone_nograd(x);
  return record("CloneBackward", {x}, out, [](const Tensor& g) { return TensorList{g}; });
}

Tensor detach(const Tensor& x) { return alias_detached(x); }

Tensor to_device(const Tensor& x, Device d, bool non_blocking) {
  if (x->device() == d) return x;
  SX_CHECK(!is_meta(x), NotImplementedError, "[to] cannot copy out of a meta tensor (", describe(x),
           "): it has no data (empty_like(x, device=...) makes one of its geometry on ", d.str(), ")");
  // Raises first when d is a GPU this build or machine lacks.
  Tensor out = non_blocking && d.type == DeviceType::CPU ? empty_pinned(x->shape, x->dtype) : empty(x->shape, x->dtype, d);
  Tensor src = x->is_contiguous() ? x : clone_nograd(x);
  kern::transfer(d.type == DeviceType::CPU ? x->device() : d)(out, src, non_blocking);
  if (!is_differentiable(x->dtype)) return out;
  Device from = x->device();
  return record("ToCopyBackward", {x}, out, [from](const Tensor& g) { return TensorList{to_device(g, from)}; });
}

Tensor pin_memory(const Tensor& x) {
  SX_CHECK(x->device().type == DeviceType::CPU, RuntimeError, "[pin_memory] only CPU tensors can be pinned, got one on ",
           x->device().str());
  if (x->storage->pinned) return x;
  Tensor out = empty_pinned(x->shape, x->dtype);
  copy_into(out, x);
  if (!is_differentiable(x->dtype)) return out;
  return record("PinMemoryBackward", {x}, out, [](const Tensor& g) { return TensorList{g}; });
}

namespace {
// Autograd for a write of `value` into the view x of a contiguous base: the base's new history
// takes the gradient outside the written region from its old history and inside it from value
// (PyTorch's CopySlices). Must be recorded before the base's grad_fn is replaced.
void rebase_view_write(const Tensor& x, const Tensor& value, const char* op) {
  Tensor base = x->view_base;
  SX_CHECK(!(base->is_leaf() && base->requires_grad), RuntimeError, "[", op,
           "] a view of a leaf tensor that requires grad is being used in an in-place operation; wrap it in "
           "no_grad() or write into a clone");
  SX_CHECK(base->is_contiguous(), RuntimeError, "[", op,
           "] in-place writes into a view of a non-contiguous tensor are not tracked by autograd; use an "
           "out-of-place op (where, cat, scatter) instead");
  Shape vs = x->shape, vst = x->strides, vals = value->shape;
  int64_t voff = x->offset - base->offset;
  DType vd = value->dtype;
  Tensor tmp = empty({0}, base->dtype);
  Shape bshape = base->shape;
  record("CopySlices", {base, value}, tmp, [vs, vst, voff, vals, vd, bshape](const Tensor& g) {
    // The written region in the base's (contiguous) element order: its flat positions and a mask.
    Tensor pos = clone_nograd(make_view(arange(0, double(shape_numel(bshape, "setitem")), 1, DType::Int64), vs, vst, voff));
    if (g->device() != pos->device()) pos = to_device(pos, g->device());
    Tensor keep = ones(bshape, g->dtype, g->device());
    fill_into(make_view(keep, vs, vst, voff), Scalar(0.0));
    // Differentiable ops only, so that create_graph=True sees through the write.
    Tensor g_base = mul(g, keep);
    Tensor gv = reshape(index_front(reshape(g, {-1}), {reshape(pos, {-1})}), vs);
    gv = gv->shape == vals ? gv : sum_to(gv, vals);
    return TensorList{g_base, gv->dtype == vd ? gv : to_dtype(gv, vd)};
  });
  if (!tmp->grad_fn) return;  // neither the base nor the value takes part in autograd
  base->grad_fn = tmp->grad_fn;
  base->requires_grad = true;
}
}  // namespace

void assign_inplace(const Tensor& x, const Tensor& value, const char* op) {
  x->check_writable(op);
  bool track = grad_mode::enabled() && (x->requires_grad || value->requires_grad);
  if (track) {
    SX_CHECK(!(x->is_leaf() && x->requires_grad && !x->view_base), RuntimeError, "[", op,
             "] a leaf tensor that requires grad is being used in an in-place operation; wrap it in no_grad() "
             "or use an out-of-place op");
  }
  Shape bs = broadcast_shapes(x->shape, value->shape, op);
  SX_CHECK(bs == x->shape, ValueError, "[", op, "] cannot write a value of shape ", shape_str(value->shape),
           " into a tensor of shape ", shape_str(x->shape));
  if (track && x->view_base) rebase_view_write(x, value, op);  // checks run before any write
  Tensor src = value->storage == x->storage ? clone_nograd(value) : value;
  copy_into(x, expand_view(src, x->shape));
  x->bump_version();
  if (track) {
    Shape vs = value->shape;
    DType vd = value->dtype;
    Tensor tmp = empty({0}, x->dtype);
    record(op, {value}, tmp, [vs, vd](const Tensor& g) {
      Tensor r = g->shape == vs ? g : sum_to(g, vs);
      return TensorList{r->dtype == vd ? r : to_dtype(r, vd)};
    });
    x->grad_fn = tmp->grad_fn;
    x->requires_grad = true;
  }
}

void copy_(const Tensor& dst, const Tensor& src) {
  // As in PyTorch, copy_ is the one op that takes its source from another device.
  assign_inplace(dst, src->device() == dst->device() ? src : to_device(src, dst->device()), "copy_");
}

namespace {
// A one-element CPU tensor of dtype dt with t's value.
Tensor item_on_host(const Tensor& t, DType dt, const char* op) {
  SX_CHECK(t->numel() == 1, ValueError, "[", op, "] expected a one-element tensor, got ", describe(t));
  SX_CHECK(!is_meta(t), NotImplementedError, "[", op, "] a meta tensor (", describe(t), ") has no value to read");
  Tensor h = t->device().type == DeviceType::CPU ? t : to_device(t, Device{});
  return cast_nograd(h, dt);
}
}  // namespace

bool item_bool(const Tensor& t) { return *item_on_host(t, DType::Bool, "item")->data<bool>(); }
int64_t item_int(const Tensor& t) { return *item_on_host(t, DType::Int64, "item")->data<int64_t>(); }
double item_double(const Tensor& t) { return *item_on_host(t, DType::Float64, "item")->data<double>(); }

}  // namespace sx
