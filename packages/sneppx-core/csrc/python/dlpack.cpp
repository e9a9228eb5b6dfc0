#include "python/dlpack.h"

#include "python/convert.h"

namespace sx {

namespace {
// DLPack ABI v0.8 (dlpack.h), reproduced from the public specification.
struct DLDevice { int32_t device_type; int32_t device_id; };
struct DLDataType { uint8_t code; uint8_t bits; uint16_t lanes; };
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor*);
};
// DLPack 1.0: a version and flags in front. Consumers that get the unversioned struct (NumPy 2)
// must assume the memory is read-only, so exporting this one is what keeps np.from_dlpack writable.
struct DLPackVersion { uint32_t major; uint32_t minor; };
struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned*);
  uint64_t flags;
  DLTensor dl_tensor;
};
constexpr uint64_t kDLFlagReadOnly = 1;
enum { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLComplex = 5, kDLBool = 6 };

struct Ctx {
  Tensor t;
  Shape shape, strides;
};

DLDataType dl_type(DType d) {
  switch (d) {
    case DType::Bool: return {kDLBool, 8, 1};
    case DType::UInt8: return {kDLUInt, 8, 1};
    case DType::Int8: return {kDLInt, 8, 1};
    case DType::Int16: return {kDLInt, 16, 1};
    case DType::Int32: return {kDLInt, 32, 1};
    case DType::Int64: return {kDLInt, 64, 1};
    case DType::Float16: return {kDLFloat, 16, 1};
    case DType::BFloat16: return {kDLBfloat, 16, 1};
    case DType::Float32: return {kDLFloat, 32, 1};
    case DType::Float64: return {kDLFloat, 64, 1};
    case DType::Complex64: return {kDLComplex, 64, 1};
    case DType::Complex128: return {kDLComplex, 128, 1};
  }
  return {};
}

DType from_dl(DLDataType t) {
  SX_CHECK(t.lanes == 1, TypeError, "[from_dlpack] vector dtypes are not supported");
  if (t.code == kDLBool || (t.code == kDLUInt && t.bits == 8 && false)) return DType::Bool;
  if (t.code == kDLUInt && t.bits == 8) return DType::UInt8;
  if (t.code == kDLInt && t.bits == 8) return DType::Int8;
  if (t.code == kDLInt && t.bits == 16) return DType::Int16;
  if (t.code == kDLInt && t.bits == 32) return DType::Int32;
  if (t.code == kDLInt && t.bits == 64) return DType::Int64;
  if (t.code == kDLFloat && t.bits == 16) return DType::Float16;
  if (t.code == kDLBfloat && t.bits == 16) return DType::BFloat16;
  if (t.code == kDLFloat && t.bits == 32) return DType::Float32;
  if (t.code == kDLFloat && t.bits == 64) return DType::Float64;
  if (t.code == kDLComplex && t.bits == 64) return DType::Complex64;
  if (t.code == kDLComplex && t.bits == 128) return DType::Complex128;
  throw TypeError(msg("[from_dlpack] unsupported DLPack dtype code ", int(t.code), " with ", int(t.bits), " bits"));
}

void delete_managed(DLManagedTensor* m) {
  delete static_cast<Ctx*>(m->manager_ctx);
  delete m;
}
void delete_versioned(DLManagedTensorVersioned* m) {
  delete static_cast<Ctx*>(m->manager_ctx);
  delete m;
}

void fill_dl(DLTensor& d, Ctx* ctx) {
  const Tensor& t = ctx->t;
  d.data = t->raw();
  d.device = {t->device().type == DeviceType::CPU ? 1 : 2, t->device().index};
  d.ndim = int32_t(t->dim());
  d.dtype = dl_type(t->dtype);
  d.shape = ctx->shape.data();
  d.strides = ctx->strides.data();
  d.byte_offset = 0;
}

// Wraps the producer's DLTensor (kept alive by owner) as a tensor sharing its memory.
Tensor wrap_dl(const DLTensor& d, std::shared_ptr<void> owner, bool read_only) {
  SX_CHECK(d.device.device_type == 1, RuntimeError, "[from_dlpack] only CPU tensors can be imported in this build");
  DType dt = from_dl(d.dtype);
  SX_CHECK(d.ndim >= 0 && (d.ndim == 0 || d.shape), ValueError, "[from_dlpack] invalid DLTensor with ", d.ndim, " dims");
  Shape shape(d.shape, d.shape + d.ndim);
  Shape strides = d.strides ? Shape(d.strides, d.strides + d.ndim) : contiguous_strides(shape);
  auto t = std::make_shared<TensorImpl>();
  int64_t n = view_numel(shape, "from_dlpack");
  t->storage = Storage::wrap(static_cast<char*>(d.data) + d.byte_offset, size_t(n) * itemsize(dt), Device{}, owner);
  t->storage->read_only = read_only;
  t->shape = shape;
  t->strides = strides;
  t->dtype = dt;
  return t;
}
}  // namespace

py::capsule to_dlpack(const Tensor& t, bool versioned) {
  SX_CHECK(!t->requires_grad, RuntimeError, "[__dlpack__] can't export a tensor that requires grad; use detach()");
  auto* ctx = new Ctx{t, t->shape, t->strides};
  if (versioned) {
    auto* m = new DLManagedTensorVersioned{};
    m->version = {1, 0};
    m->manager_ctx = ctx;
    m->deleter = delete_versioned;
    // Not a copy: the consumer shares this tensor's memory, writable unless ours is read-only.
    m->flags = t->storage->read_only ? kDLFlagReadOnly : 0;
    fill_dl(m->dl_tensor, ctx);
    return py::capsule(m, "dltensor_versioned", [](PyObject* cap) {
      if (PyCapsule_IsValid(cap, "dltensor_versioned")) {  // never consumed: free it here
        auto* mt = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(cap, "dltensor_versioned"));
        if (mt && mt->deleter) mt->deleter(mt);
      }
    });
  }
  auto* m = new DLManagedTensor{};
  fill_dl(m->dl_tensor, ctx);
  m->manager_ctx = ctx;
  m->deleter = delete_managed;
  return py::capsule(m, "dltensor", [](PyObject* cap) {
    // Consumers rename the capsule to "used_dltensor" and own it; otherwise we free it here.
    if (PyCapsule_IsValid(cap, "dltensor")) {
      auto* mt = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap, "dltensor"));
      if (mt && mt->deleter) mt->deleter(mt);
    }
  });
}

Tensor from_dlpack(py::object obj) {
  py::object cap = obj;
  if (py::hasattr(obj, "__dlpack__")) {
    try {  // ask for DLPack 1.0; producers that predate it do not take max_version
      cap = obj.attr("__dlpack__")(py::arg("max_version") = py::make_tuple(1, 0));
    } catch (py::error_already_set& e) {
      if (!e.matches(PyExc_TypeError)) throw;
      cap = obj.attr("__dlpack__")();
    }
  }
  PyObject* c = cap.ptr();
  if (PyCapsule_IsValid(c, "dltensor_versioned")) {
    auto* m = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(c, "dltensor_versioned"));
    PyCapsule_SetName(c, "used_dltensor_versioned");
    std::shared_ptr<void> owner(m, [](void* p) {
      py::gil_scoped_acquire g;  // producers such as NumPy release Python objects in their deleter
      auto* mt = static_cast<DLManagedTensorVersioned*>(p);
      if (mt->deleter) mt->deleter(mt);
    });
    SX_CHECK(m->version.major == 1, TypeError, "[from_dlpack] unsupported DLPack version ", m->version.major, ".",
             m->version.minor);
    return wrap_dl(m->dl_tensor, owner, (m->flags & kDLFlagReadOnly) != 0);
  }
  SX_CHECK(PyCapsule_IsValid(c, "dltensor"), TypeError, "[from_dlpack] expected an object with __dlpack__ or a DLPack capsule");
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(c, "dltensor"));
  PyCapsule_SetName(c, "used_dltensor");
  std::shared_ptr<void> owner(m, [](void* p) {
    py::gil_scoped_acquire g;
    auto* mt = static_cast<DLManagedTensor*>(p);
    if (mt->deleter) mt->deleter(mt);
  });
  return wrap_dl(m->dl_tensor, owner, false);  // unversioned DLPack has no read-only flag
}

}  // namespace sx
