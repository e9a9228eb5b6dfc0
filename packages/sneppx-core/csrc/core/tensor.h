// A tensor is (storage, offset, shape, strides, dtype) plus its autograd metadata.
// `Tensor` is a shared pointer so that Python identity (x.grad is x.grad) and views are cheap.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "core/dtype.h"
#include "core/storage.h"

namespace sx {

struct Node;
struct TensorImpl;
using Tensor = std::shared_ptr<TensorImpl>;
using TensorList = std::vector<Tensor>;
using GradHook = std::function<Tensor(const Tensor&)>;       // may return nullptr (keep grad)
using PostAccHook = std::function<void(const Tensor&)>;      // gets the leaf after accumulation

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  int64_t offset = 0;  // in elements
  Shape shape, strides;
  DType dtype = DType::Float32;

  // autograd
  bool requires_grad = false;
  bool retains_grad = false;
  Tensor grad;
  std::shared_ptr<Node> grad_fn;           // null for leaves
  std::weak_ptr<Node> grad_accumulator;    // leaves only
  std::vector<GradHook> hooks;             // leaves: run before accumulation
  std::vector<PostAccHook> post_acc_hooks; // leaves: run after accumulation
  Tensor view_base;                        // set for views of another tensor

  int64_t dim() const { return int64_t(shape.size()); }
  int64_t numel() const {
    int64_t n = 1;
    for (auto s : shape) n *= s;
    return n;
  }
  Device device() const { return storage->device; }
  bool is_leaf() const { return grad_fn == nullptr; }
  bool is_contiguous() const;
  // The first element's address; raises for a meta tensor, which has no memory (kernels never see one:
  // KernelSlot gives the meta device no kernels).
  char* raw() const {
    if (storage->device.type == DeviceType::Meta) [[unlikely]] no_data();
    return static_cast<char*>(storage->data) + offset * int64_t(itemsize(dtype));
  }
  [[noreturn, gnu::cold]] void no_data() const;
  template <typename T> T* data() const { return reinterpret_cast<T*>(raw()); }
  uint32_t version() const { return storage->version.load(std::memory_order_relaxed); }
  void bump_version() { storage->version.fetch_add(1, std::memory_order_relaxed); }
  // Throws before an in-place write into memory that belongs to a read-only producer.
  void check_writable(const char* op) const;
};

Shape contiguous_strides(const Shape& shape);
int64_t shape_numel(const Shape& shape, const char* op);  // checks for overflow and negatives
// Element count of a view's shape: every size >= 0 and the product fits in int64 (views may exceed
// what could be allocated, e.g. expand, but never wrap around).
int64_t view_numel(const Shape& shape, const char* op);
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);

// Uninitialised tensor of the given shape.
Tensor empty(const Shape& shape, DType dtype, Device device = {});
// Uninitialised CPU tensor in page-locked memory (needs a visible GPU).
Tensor empty_pinned(const Shape& shape, DType dtype);
// A tensor sharing `base`'s storage with new geometry (no autograd recorded).
Tensor make_view(const Tensor& base, Shape shape, Shape strides, int64_t offset);
// A new impl aliasing t's data, without autograd history.
Tensor alias_detached(const Tensor& t);
std::string describe(const Tensor& t);  // "float32 (2, 3)" for error messages
// On the meta device (no values): checks of values (index ranges, division by zero) are skipped there.
inline bool is_meta(const Tensor& t) { return t->device().type == DeviceType::Meta; }

}  // namespace sx
