// The Tensor attributes that Python code reads on every layer call (dtype, device, shape, ndim) and
// the argument-free methods contiguous(), dim(), numel() and is_contiguous(), as plain CPython
// descriptors. pybind11's dispatcher (argument vectors, overload loop, a fresh enum or Device object
// per read) costs 100-200 ns a call, more than these take themselves; a method descriptor with
// METH_NOARGS is called by the interpreter without building a bound method. dtype and device return
// shared objects (`x.dtype is sneppx.float32`, as in PyTorch), and contiguous() returns the tensor
// itself when it is already contiguous. Installed over the pybind11 definitions at the end of module
// initialisation; the module functions (sneppx.contiguous, ...) keep their pybind11 bindings.
#include <array>
#include <vector>

#include "python/convert.h"

namespace sx {
namespace {

// The Tensor held by a Python Tensor (or subclass) object; the descriptors have checked the type.
const Tensor& self_tensor(PyObject* self) {
  auto v_h = reinterpret_cast<py::detail::instance*>(self)->get_value_and_holder();
  SX_CHECK(v_h.holder_constructed(), TypeError, "[Tensor] the object was not initialised by Tensor.__init__");
  return v_h.holder<Tensor>();
}

// Runs f, turning a C++ exception into the Python one the module's translators give.
template <typename F>
PyObject* guarded(F f) {
  try {
    return f();
  } catch (...) {
    py::detail::try_translate_exceptions();
    return nullptr;
  }
}

// Shared result objects, owned for the life of the process (never released: they may be read until
// the interpreter is gone).
std::array<PyObject*, 8> g_dtypes{};  // the Dtype enum's members, by DType value
PyObject* g_cpu = nullptr;            // Device('cpu')
std::vector<PyObject*> g_cuda;        // Device('cuda', i), made on first use

PyObject* new_ref(PyObject* o) {
  Py_INCREF(o);
  return o;
}

PyObject* get_dtype(PyObject* self, void*) {
  return guarded([&] {
    DType d = self_tensor(self)->dtype;
    size_t i = size_t(d);
    return i < g_dtypes.size() && g_dtypes[i] ? new_ref(g_dtypes[i]) : py::cast(d).release().ptr();
  });
}

PyObject* get_device(PyObject* self, void*) {
  return guarded([&] {
    Device d = self_tensor(self)->device();
    if (d.type == DeviceType::CPU) return new_ref(g_cpu);
    size_t i = size_t(d.index);
    if (i >= g_cuda.size()) g_cuda.resize(i + 1);
    if (!g_cuda[i]) g_cuda[i] = py::cast(d).release().ptr();
    return new_ref(g_cuda[i]);
  });
}

PyObject* get_shape(PyObject* self, void*) {
  return guarded([&] {
    const auto& shape = self_tensor(self)->shape;
    py::tuple t(shape.size());
    for (size_t i = 0; i < shape.size(); ++i) PyTuple_SET_ITEM(t.ptr(), i, PyLong_FromLongLong(shape[i]));
    return t.release().ptr();
  });
}

PyObject* get_ndim(PyObject* self, void*) {
  return guarded([&] { return PyLong_FromLongLong(self_tensor(self)->dim()); });
}

PyObject* m_dim(PyObject* self, PyObject*) { return get_ndim(self, nullptr); }

PyObject* m_numel(PyObject* self, PyObject*) {
  return guarded([&] { return PyLong_FromLongLong(self_tensor(self)->numel()); });
}

PyObject* m_is_contiguous(PyObject* self, PyObject*) {
  return guarded([&] { return PyBool_FromLong(self_tensor(self)->is_contiguous()); });
}

PyObject* m_contiguous(PyObject* self, PyObject*) {
  return guarded([&]() -> PyObject* {
    const Tensor& x = self_tensor(self);
    if (x->is_contiguous()) return new_ref(self);
    Tensor r;
    {
      py_conv::ReleaseGilIf nogil(py_conv::heavy(x));
      r = contiguous(x);
    }
    return py::cast(std::move(r)).release().ptr();
  });
}

PyGetSetDef g_getters[] = {
    {"dtype", get_dtype, nullptr, "The element type (a Dtype: sneppx.float32, ...).", nullptr},
    {"device", get_device, nullptr, "The device holding the data (Device('cpu'), Device('cuda', 0), ...).", nullptr},
    {"shape", get_shape, nullptr, "The size of each dim, as a tuple.", nullptr},
    {"ndim", get_ndim, nullptr, "Number of dims.", nullptr},
};

PyMethodDef g_methods[] = {
    {"contiguous", m_contiguous, METH_NOARGS,
     "The tensor itself when contiguous, else a contiguous copy (recorded for autograd)."},
    {"dim", m_dim, METH_NOARGS, "Number of dims."},
    {"numel", m_numel, METH_NOARGS, "Number of elements."},
    {"is_contiguous", m_is_contiguous, METH_NOARGS, "Whether the elements lie in row-major order without gaps."},
};

}  // namespace

void install_fast_methods(py::module_& m, py::handle tensor_type);
void install_fast_methods(py::module_& m, py::handle tensor_type) {
  for (auto item : py::dict(m.attr("Dtype").attr("__members__"))) {
    auto d = size_t(item.second.cast<DType>());
    if (d < g_dtypes.size() && !g_dtypes[d]) g_dtypes[d] = new_ref(item.second.ptr());
  }
  if (!g_cpu) g_cpu = py::cast(Device{}).release().ptr();
  auto* type = reinterpret_cast<PyTypeObject*>(tensor_type.ptr());
  auto install = [&](const char* name, PyObject* descr) {
    if (!descr) throw py::error_already_set();
    tensor_type.attr(name) = py::reinterpret_steal<py::object>(descr);
  };
  for (auto& g : g_getters) install(g.name, PyDescr_NewGetSet(type, &g));
  for (auto& f : g_methods) install(f.ml_name, PyDescr_NewMethod(type, &f));
}

}  // namespace sx
