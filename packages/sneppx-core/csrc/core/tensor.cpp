#include "core/tensor.h"

#include <limits>

namespace sx {

bool TensorImpl::is_contiguous() const {
  int64_t expected = 1;
  for (int64_t i = dim() - 1; i >= 0; --i) {
    if (shape[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

Shape contiguous_strides(const Shape& shape) {
  Shape st(shape.size());
  int64_t s = 1;
  for (int64_t i = int64_t(shape.size()) - 1; i >= 0; --i) {
    st[i] = s;
    s *= std::max<int64_t>(shape[i], 1);
  }
  return st;
}

int64_t shape_numel(const Shape& shape, const char* op) {
  int64_t n = 1;
  for (auto s : shape) {
    SX_CHECK(s >= 0, ValueError, "[", op, "] negative dimension in shape ", shape_str(shape));
    if (s != 0 && n > std::numeric_limits<int64_t>::max() / 16 / s)
      throw MemoryError(msg("[", op, "] shape ", shape_str(shape), " is too large to allocate"));
    n *= s;
  }
  return n;
}

int64_t view_numel(const Shape& shape, const char* op) {
  int64_t n = 1;
  bool zero = false;
  for (auto s : shape) {
    SX_CHECK(s >= 0, ValueError, "[", op, "] negative dimension in shape ", shape_str(shape));
    zero = zero || s == 0;
  }
  if (zero) return 0;
  for (auto s : shape) {
    SX_CHECK(n <= std::numeric_limits<int64_t>::max() / s, ValueError, "[", op, "] shape ", shape_str(shape),
             " has more than 2**63 - 1 elements");
    n *= s;
  }
  return n;
}

void TensorImpl::check_writable(const char* op) const {
  SX_CHECK(!storage->read_only, RuntimeError, "[", op, "] the ", dtype_name(dtype), " ", shape_str(shape),
           " tensor is read-only: it shares memory with a read-only NumPy array or DLPack tensor; write into a "
           "clone() instead (or pass a writeable array)");
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  int64_t n = std::max<int64_t>(ndim, 1);
  SX_CHECK(dim >= -n && dim < n, IndexError, "[", op, "] dim ", dim, " is out of range for a tensor of ",
           ndim, " dimensions");
  return dim < 0 ? dim + n : dim;
}

Tensor empty(const Shape& shape, DType dtype, Device device) {
  int64_t n = shape_numel(shape, "empty");
  auto t = std::make_shared<TensorImpl>();
  t->storage = Storage::allocate(size_t(n) * itemsize(dtype), device);
  t->shape = shape;
  t->strides = contiguous_strides(shape);
  t->dtype = dtype;
  return t;
}

Tensor empty_pinned(const Shape& shape, DType dtype) {
  Tensor t = empty({0}, dtype);
  t->storage = Storage::allocate_pinned(size_t(shape_numel(shape, "pin_memory")) * itemsize(dtype));
  t->shape = shape;
  t->strides = contiguous_strides(shape);
  return t;
}

Tensor make_view(const Tensor& base, Shape shape, Shape strides, int64_t offset) {
  view_numel(shape, "view");  // a view's element count must be representable (expand(2**32, 2**32))
  auto t = std::make_shared<TensorImpl>();
  t->storage = base->storage;
  t->shape = std::move(shape);
  t->strides = std::move(strides);
  t->offset = offset;
  t->dtype = base->dtype;
  t->view_base = base->view_base ? base->view_base : base;
  return t;
}

Tensor alias_detached(const Tensor& t) {
  auto a = std::make_shared<TensorImpl>();
  a->storage = t->storage;
  a->shape = t->shape;
  a->strides = t->strides;
  a->offset = t->offset;
  a->dtype = t->dtype;
  return a;
}

std::string describe(const Tensor& t) { return msg(dtype_name(t->dtype), " ", shape_str(t->shape)); }

void TensorImpl::no_data() const {
  throw NotImplementedError(msg("a meta tensor (", dtype_name(dtype), " ", shape_str(shape),
                                ") has no data: this needs its values"));
}

}  // namespace sx
