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
enum { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLBool = 6 };

struct Ctx {
  Tensor t;
  Shape shape, strides;
};

DLDataType dl_type(DType d) {
  switch (d) {
    case DType::Bool: return {kDLBool, 8, 1};
    case DType::UInt8: return {kDLUInt, 8, 1};
    case DType::Int32: return {kDLInt, 32, 1};
    case DType::Int64: return {kDLInt, 64, 1};
    case DType::Float16: return {kDLFloat, 16, 1};
    case DType::BFloat16: return {kDLBfloat, 16, 1};
    case DType::Float32: return {kDLFloat, 32, 1};
    case DType::Float64: return {kDLFloat, 64, 1};
  }
  return {};
}

DType from_dl(DLDataType t) {
  SX_CHECK(t.lanes == 1, TypeError, "[from_dlpack] vector dtypes are not supported");
  if (t.code == kDLBool || (t.code == kDLUInt && t.bits == 8 && false)) return DType::Bool;
  if (t.code == kDLUInt && t.bits == 8) return DType::UInt8;
  if (t.code == kDLInt && t.bits == 32) return DType::Int32;
  if (t.code == kDLInt && t.bits == 64) return DType::Int64;
  if (t.code == kDLFloat && t.bits == 16) return DType::Float16;
  if (t.code == kDLBfloat && t.bits == 16) return DType::BFloat16;
  if (t.code == kDLFloat && t.bits == 32) return DType::Float32;
  if (t.code == kDLFloat && t.bits == 64) return DType::Float64;
  throw TypeError(msg("[from_dlpack] unsupported DLPack dtype code ", int(t.code), " with ", int(t.bits), " bits"));
}

void delete_managed(DLManagedTensor* m) {
  delete static_cast<Ctx*>(m->manager_ctx);
  delete m;
}
}  // namespace

py::capsule to_dlpack(const Tensor& t) {
  SX_CHECK(!t->requires_grad, RuntimeError, "[__dlpack__] can't export a tensor that requires grad; use detach()");
  auto* ctx = new Ctx{t, t->shape, t->strides};
  auto* m = new DLManagedTensor{};
  m->dl_tensor.data = t->raw();
  m->dl_tensor.device = {t->device().type == DeviceType::CPU ? 1 : 2, t->device().index};
  m->dl_tensor.ndim = int32_t(t->dim());
  m->dl_tensor.dtype = dl_type(t->dtype);
  m->dl_tensor.shape = ctx->shape.data();
  m->dl_tensor.strides = ctx->strides.data();
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
  py::object cap = py::hasattr(obj, "__dlpack__") ? obj.attr("__dlpack__")() : obj;
  PyObject* c = cap.ptr();
  SX_CHECK(PyCapsule_IsValid(c, "dltensor"), TypeError, "[from_dlpack] expected an object with __dlpack__ or a DLPack capsule");
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(c, "dltensor"));
  PyCapsule_SetName(c, "used_dltensor");
  std::shared_ptr<void> owner(m, [](void* p) {
    auto* mt = static_cast<DLManagedTensor*>(p);
    if (mt->deleter) mt->deleter(mt);
  });
  const DLTensor& d = m->dl_tensor;
  SX_CHECK(d.device.device_type == 1, RuntimeError, "[from_dlpack] only CPU tensors can be imported in this build");
  DType dt = from_dl(d.dtype);
  Shape shape(d.shape, d.shape + d.ndim);
  Shape strides = d.strides ? Shape(d.strides, d.strides + d.ndim) : contiguous_strides(shape);
  auto t = std::make_shared<TensorImpl>();
  int64_t n = 1;
  for (auto s : shape) n *= s;
  t->storage = Storage::wrap(static_cast<char*>(d.data) + d.byte_offset, size_t(n) * itemsize(dt), Device{}, owner);
  t->shape = shape;
  t->strides = strides;
  t->dtype = dt;
  return t;
}

}  // namespace sx
