#include "python/convert.h"
#include "core/default_dtype.h"

#include "core/cuda_api.h"

#include "cpu/kernels.h"
#include "ops/common.h"

namespace sx::py_conv {

namespace {
const char* np_char(DType d) {
  switch (d) {
    case DType::Bool: return "?";
    case DType::UInt8: return "u1";
    case DType::Int8: return "i1";
    case DType::Int16: return "i2";
    case DType::Int32: return "i4";
    case DType::Int64: return "i8";
    case DType::Float16: return "f2";
    case DType::Float32: return "f4";
    case DType::Float64: return "f8";
    case DType::Complex64: return "c8";
    case DType::Complex128: return "c16";
    default: throw TypeError(msg("[numpy] NumPy has no ", dtype_name(d), " type; convert with .float() first"));
  }
}

DType from_np_dtype(const py::dtype& dt) {
  char kind = dt.kind();
  size_t sz = size_t(dt.itemsize());
  if (kind == 'b') return DType::Bool;
  if (kind == 'u' && sz == 1) return DType::UInt8;
  if (kind == 'i' && sz == 1) return DType::Int8;
  if (kind == 'i' && sz == 2) return DType::Int16;
  if (kind == 'i' && sz == 4) return DType::Int32;
  if (kind == 'i' && sz == 8) return DType::Int64;
  if ((kind == 'i' || kind == 'u') && sz <= 8) return DType::Int64;  // uint16/32/64 -> int64
  if (kind == 'f' && sz == 2) return DType::Float16;
  if (kind == 'f' && sz == 4) return DType::Float32;
  if (kind == 'f' && sz == 8) return DType::Float64;
  if (kind == 'c' && sz == 8) return DType::Complex64;
  if (kind == 'c' && sz == 16) return DType::Complex128;
  throw TypeError(msg("[tensor] unsupported NumPy dtype '", std::string(py::str(dt)), "'"));
}
}  // namespace

DType parse_dtype(py::handle h) {
  if (py::isinstance<DType>(h)) return h.cast<DType>();
  if (py::isinstance<py::str>(h)) {
    std::string s = h.cast<std::string>();
    if (s.rfind("sneppx.", 0) == 0) s = s.substr(7);
    static const std::pair<const char*, DType> names[] = {
        {"float32", DType::Float32}, {"float", DType::Float32}, {"float64", DType::Float64},
        {"double", DType::Float64}, {"float16", DType::Float16}, {"half", DType::Float16},
        {"bfloat16", DType::BFloat16}, {"int32", DType::Int32}, {"int", DType::Int32},
        {"int64", DType::Int64}, {"long", DType::Int64}, {"bool", DType::Bool}, {"uint8", DType::UInt8},
        {"int8", DType::Int8}, {"int16", DType::Int16}, {"short", DType::Int16},
        {"complex64", DType::Complex64}, {"cfloat", DType::Complex64}, {"complex128", DType::Complex128},
        {"cdouble", DType::Complex128}};
    for (auto& [n, d] : names) if (s == n) return d;
    throw TypeError("[dtype] unknown dtype '" + s + "'");
  }
  if (h.ptr() == reinterpret_cast<PyObject*>(&PyFloat_Type)) return DType::Float64;  // as in PyTorch
  if (h.ptr() == reinterpret_cast<PyObject*>(&PyLong_Type)) return DType::Int64;
  if (h.ptr() == reinterpret_cast<PyObject*>(&PyBool_Type)) return DType::Bool;
  if (h.ptr() == reinterpret_cast<PyObject*>(&PyComplex_Type)) return DType::Complex128;
  try {
    return from_np_dtype(py::dtype::from_args(py::reinterpret_borrow<py::object>(h)));
  } catch (py::error_already_set&) {
  }
  throw TypeError("[dtype] expected a dtype such as sneppx.float32 or 'float32', got " +
                  std::string(py::repr(h)));
}

std::optional<DType> opt_dtype(py::handle h) {
  if (h.is_none()) return std::nullopt;
  return parse_dtype(h);
}

Device parse_device(py::handle h) {
  if (h.is_none()) return {};
  if (py::isinstance<Device>(h)) return h.cast<Device>();
  if (py::isinstance<py::str>(h)) {
    std::string s = h.cast<std::string>();
    if (s == "cuda") return {DeviceType::CUDA, cuda_current_device()};  // the current GPU, as in PyTorch
    return Device::parse(s);
  }
  throw TypeError("[device] expected 'cpu', 'cuda', 'meta' or a Device, got " + std::string(py::repr(h)));
}

bool is_tensor(py::handle h) { return py::isinstance<TensorImpl>(h); }

bool is_scalar(py::handle h) {
  return PyBool_Check(h.ptr()) || PyLong_Check(h.ptr()) || PyFloat_Check(h.ptr()) ||
         (py::hasattr(h, "dtype") && py::hasattr(h, "item") && !is_tensor(h) && py::getattr(h, "ndim", py::int_(1)).cast<int>() == 0);
}

Scalar to_scalar(py::handle h, const char* op) {
  PyObject* o = h.ptr();
  if (PyBool_Check(o)) return Scalar(o == Py_True);
  if (PyLong_Check(o)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    SX_CHECK(!overflow, ValueError, "[", op, "] integer ", std::string(py::str(h)), " does not fit in int64");
    return Scalar(int64_t(v));
  }
  if (PyFloat_Check(o)) return Scalar(PyFloat_AS_DOUBLE(o));
  if (is_tensor(h)) {
    Tensor t = h.cast<Tensor>();
    SX_CHECK(t->numel() == 1, ValueError, "[", op, "] expected a number or a one-element tensor, got ", describe(t));
    return to_scalar(tolist(reshape(t, {})), op);
  }
  if (py::hasattr(h, "item") && py::hasattr(h, "dtype")) return to_scalar(h.attr("item")(), op);
  throw TypeError(msg("[", op, "] expected a number, got ", std::string(py::str(py::type::of(h).attr("__name__")))));
}

bool defers_to(py::handle h, const char* reflected) {
  PyObject* o = h.ptr();
  if (is_tensor(h) || PyBool_Check(o) || PyLong_Check(o) || PyFloat_Check(o) || PyComplex_Check(o) ||
      py::isinstance<py::array>(h) || PyList_Check(o) || PyTuple_Check(o) || is_scalar(h))
    return false;
  return PyObject_HasAttrString(reinterpret_cast<PyObject*>(Py_TYPE(o)), reflected) == 1;
}

namespace {
PyObject* g_sparse_call = nullptr;  // sneppx_core._sparse's handler; owned reference
}

void set_sparse_call(py::handle fn) {
  Py_XINCREF(fn.ptr());
  Py_XSETREF(g_sparse_call, fn.ptr());
}

py::object sparse_call(const char* op, py::handle a, py::handle b) {
  if (g_sparse_call) {
    py::object r = py::reinterpret_borrow<py::object>(g_sparse_call)(op, a, b);
    if (!r.is(py::reinterpret_borrow<py::object>(Py_NotImplemented))) return r;
  }
  auto name = [](py::handle h) { return std::string(py::str(py::type::of(h).attr("__name__"))); };
  throw TypeError(msg("[", op, "] expected two tensors, got ", name(a), " and ", name(b)));
}

Tensor operand(py::handle h, const Tensor& other, const char* op) {
  if (is_tensor(h)) return h.cast<Tensor>();
  if (PyBool_Check(h.ptr()) || PyLong_Check(h.ptr()) || PyFloat_Check(h.ptr()) || is_scalar(h)) {
    Scalar s = to_scalar(h, op);
    return scalar_tensor(s, scalar_result_type(other, s), other->device());
  }
  if (PyComplex_Check(h.ptr())) {  // complex64 with a float32 or integer tensor, complex128 with a float64 one
    DType dt = is_complex(other->dtype) ? other->dtype
                                        : complex_of(is_floating(other->dtype) ? other->dtype : default_float_dtype());
    Tensor t = cast_nograd(from_data(h, std::nullopt), dt);
    return other->device() == Device{} ? t : to_device(t, other->device());
  }
  if (py::isinstance<py::array>(h) || py::isinstance<py::list>(h) || py::isinstance<py::tuple>(h))
    return from_data(h, std::nullopt);
  throw TypeError(msg("[", op, "] unsupported operand type ", std::string(py::str(py::type::of(h).attr("__name__"))),
                      " for a tensor of ", describe(other)));
}

void check_inplace_cast(const char* op, DType result, DType out) {
  bool ok = result == out || ((is_floating(out) || !is_floating(result)) && (out != DType::Bool || result == DType::Bool));
  SX_CHECK(ok, TypeError, "[", op, "] result type ", dtype_name(result), " can't be cast to the output type ",
           dtype_name(out), " of an in-place op");
}

Tensor inplace_source(const Tensor& x) {
  return grad_mode::enabled() && x->requires_grad && !x->is_leaf() ? clone(x) : x;
}

Tensor add_alpha(const Tensor& x, const Tensor& y, py::handle alpha, bool subtract, const char* op, bool into_x) {
  if (is_scalar(alpha))
    return add_scaled(x, y, to_scalar(alpha, op), subtract, into_x);
  Tensor scaled = binary(BinaryOp::Mul, y, operand(alpha, y, op));
  return subtract ? sub(x, scaled) : add(x, scaled);
}

IntList int_list(py::handle h, const char* op) {
  if (PyLong_Check(h.ptr())) return {h.cast<int64_t>()};
  if (is_tensor(h)) {
    Tensor t = h.cast<Tensor>();
    if (t->device().type != DeviceType::CPU) t = to_device(t, Device{});
    t = contiguous(cast_nograd(t, DType::Int64));
    return IntList(t->data<int64_t>(), t->data<int64_t>() + t->numel());
  }
  IntList out;
  try {
    for (auto item : py::iter(h)) {
      SX_CHECK(PyLong_Check(item.ptr()) || py::hasattr(item, "__index__"), TypeError, "[", op,
               "] expected integers, got ", std::string(py::repr(item)));
      out.push_back(py::int_(py::reinterpret_borrow<py::object>(item)).cast<int64_t>());
    }
  } catch (py::error_already_set&) {
    throw TypeError(msg("[", op, "] expected an int or a sequence of ints, got ", std::string(py::repr(h))));
  }
  return out;
}

IntList shape_args(const py::args& args, const char* op) {
  if (args.size() == 1 && !PyLong_Check(args[0].ptr())) return int_list(args[0], op);
  IntList out;
  for (auto a : args) {
    SX_CHECK(PyLong_Check(a.ptr()), TypeError, "[", op, "] sizes must be integers, got ", std::string(py::repr(a)));
    out.push_back(a.cast<int64_t>());
  }
  return out;
}

OptDims opt_dims(py::handle h, const char* op) {
  if (h.is_none()) return std::nullopt;
  return int_list(h, op);
}

Generator* opt_generator(py::handle h) {
  if (h.is_none()) return nullptr;
  return h.cast<Generator*>();
}

Tensor from_numpy(py::array a) {
  DType dt = from_np_dtype(a.dtype());
  SX_CHECK(dt == DType::Bool || dt == DType::UInt8 || size_t(a.itemsize()) == itemsize(dt), TypeError,
           "[from_numpy] NumPy dtype ", std::string(py::str(a.dtype())), " cannot be shared; use Tensor(array) to copy");
  SX_CHECK(a.dtype().attr("isnative").cast<bool>(), TypeError, "[from_numpy] NumPy dtype ",
           std::string(py::str(a.dtype())), " has a non-native byte order and cannot be shared; use Tensor(array) to copy");
  Shape shape, strides;
  for (py::ssize_t i = 0; i < a.ndim(); ++i) {
    shape.push_back(a.shape(i));
    SX_CHECK(a.strides(i) % a.itemsize() == 0, ValueError, "[from_numpy] strides that are not a multiple of the item size are not supported");
    strides.push_back(a.strides(i) / a.itemsize());
  }
  auto* keep = new py::object(a);
  std::shared_ptr<void> owner(keep, [](void* p) {
    py::gil_scoped_acquire g;
    delete static_cast<py::object*>(p);
  });
  auto t = std::make_shared<TensorImpl>();
  t->storage = Storage::wrap(const_cast<void*>(a.data()), size_t(a.nbytes()), Device{}, owner);
  t->storage->read_only = !a.writeable();  // np.frombuffer(bytes), np.load(mmap_mode="r"), broadcast views
  t->shape = shape;
  t->strides = strides;
  t->dtype = dt;
  return t;
}

py::array to_numpy(const Tensor& t) {
  SX_CHECK(!is_meta(t), TypeError, "[numpy] can't convert a meta tensor (", describe(t),
           ") to NumPy: it has no data");
  SX_CHECK(t->device().type == DeviceType::CPU, TypeError, "[numpy] can't convert a ", t->device().str(),
           " tensor to NumPy; use .cpu() first");
  std::vector<py::ssize_t> shape(t->shape.begin(), t->shape.end()), strides;
  for (auto s : t->strides) strides.push_back(py::ssize_t(s * int64_t(itemsize(t->dtype))));
  auto* keep = new std::shared_ptr<Storage>(t->storage);
  py::capsule base(keep, [](void* p) { delete static_cast<std::shared_ptr<Storage>*>(p); });
  py::array a(py::dtype(np_char(t->dtype)), shape, strides, t->raw(), base);
  // Memory that was read-only when it came in stays read-only on the way out.
  if (t->storage->read_only) a.attr("flags").attr("writeable") = false;
  return a;
}

Tensor from_data(py::handle data, std::optional<DType> dtype) {
  if (is_tensor(data)) {
    Tensor src = data.cast<Tensor>();
    Tensor out = clone_nograd(src);
    return dtype ? cast_nograd(out, *dtype) : out;
  }
  py::module_ np = py::module_::import("numpy");
  py::object arr;
  // NumPy arrays and NumPy scalars (np.float64(2.5)) keep their dtype, as in PyTorch.
  bool from_array = py::isinstance<py::array>(data) || py::isinstance(data, np.attr("generic"));
  try {
    arr = np.attr("asarray")(data);
  } catch (py::error_already_set& e) {
    throw TypeError(msg("[tensor] could not convert data to a tensor: ", e.what()));
  }
  py::array a = arr.cast<py::array>();
  char kind = a.dtype().kind();
  SX_CHECK(kind == 'b' || kind == 'i' || kind == 'u' || kind == 'f' || kind == 'c', TypeError,
           "[tensor] could not infer a numeric dtype from ", std::string(py::repr(data)).substr(0, 80));
  DType natural = from_np_dtype(a.dtype());
  if (kind == 'u' && a.itemsize() == 8 && a.size() > 0)
    SX_CHECK(np.attr("max")(a).cast<uint64_t>() <= uint64_t(INT64_MAX), ValueError, "[tensor] value ",
             std::string(py::str(np.attr("max")(a))), " does not fit in int64");
  // NumPy converts first what has no tensor twin (int8, int16, wider unsigned types) or a non-native
  // byte order; asarray(order="C") keeps 0-d arrays 0-d (ascontiguousarray would make them 1-d).
  py::array c = np.attr("asarray")(a, py::arg("dtype") = np_char(natural), py::arg("order") = "C").cast<py::array>();
  // Python floats take the default dtype (float32 unless set), as in PyTorch; NumPy arrays keep their dtype.
  if (!from_array && natural == DType::Float64) natural = default_float_dtype();
  if (!from_array && natural == DType::Complex128) natural = complex_of(default_float_dtype());
  DType target = dtype ? *dtype : natural;
  // Python ints that the asked integer dtype cannot hold are refused, as PyTorch does (NumPy data is cast).
  if (!from_array && dtype && !is_floating(target) && kind == 'i' && a.size() > 0)
    for (const char* end : {"min", "max"}) check_scalar_fits(Scalar(np.attr(end)(a).cast<int64_t>()), target, "tensor");
  Tensor shared = from_numpy(c);
  Tensor out = empty(shared->shape, target);
  copy_into(out, shared);
  return out;
}

PyRef py_ref(py::object o) {
  return PyRef(new py::object(std::move(o)), [](py::object* p) {
    py::gil_scoped_acquire gil;
    delete p;
  });
}

Tensor PyGradHook::operator()(const Tensor& g) const {
  py::gil_scoped_acquire gil;
  py::object r = (*fn)(g);
  if (r.is_none()) return nullptr;
  SX_CHECK(is_tensor(r), TypeError, "[hook] a gradient hook must return a Tensor or None, got ",
           std::string(py::str(py::type::of(r).attr("__name__"))));
  Tensor t = r.cast<Tensor>();
  SX_CHECK(t->shape == g->shape, RuntimeError, "[hook] the hook changed the gradient's shape from ",
           shape_str(g->shape), " to ", shape_str(t->shape));
  return t;
}

void PyPostAccHook::operator()(const Tensor& leaf) const {
  py::gil_scoped_acquire gil;
  (*fn)(leaf);
}

py::object tolist(const Tensor& t) {
  Tensor c = t->device().type == DeviceType::CPU ? t : to_device(detach(t), Device{});  // as PyTorch: a copy back
  if (c->dtype == DType::Float16 || c->dtype == DType::BFloat16) c = cast_nograd(c, DType::Float32);
  py::array a = to_numpy(c);
  return a.attr("tolist")();
}

}  // namespace sx::py_conv
