// The Tensor attributes that Python code reads on every layer call (dtype, device, shape, ndim) and
// the methods contiguous(), dim(), numel() and is_contiguous(), as plain CPython descriptors.
// pybind11's dispatcher (argument vectors, overload loop, a fresh enum or Device object per read)
// costs 100-200 ns a call, more than these take themselves; a method descriptor is called by the
// interpreter without building a bound method. contiguous() and is_contiguous() given a memory_format
// hand the call to their Python forms. dtype and device return
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
std::array<PyObject*, size_t(DType::Float64) + 1> g_dtypes{};  // the Dtype enum's members, by DType value
PyObject* g_cpu = nullptr;            // Device('cpu')
std::vector<PyObject*> g_cuda;        // Device('cuda', i), made on first use
PyObject* g_meta = nullptr;           // Device('meta'), made on first use

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
    if (d.type == DeviceType::Meta) {
      if (!g_meta) g_meta = py::cast(d).release().ptr();
      return new_ref(g_meta);
    }
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

// contiguous(memory_format=...) and is_contiguous(memory_format=...): with an argument, the Python forms
// registered by _C._set_format_methods (sneppx_core._tensor_props) take the call; without, the fast paths below.
PyObject* g_format_methods = nullptr;  // {"contiguous": fn, "is_contiguous": fn}

PyObject* with_format(const char* name, PyObject* self, PyObject* args, PyObject* kwargs) {
  PyObject* fn = g_format_methods ? PyDict_GetItemString(g_format_methods, name) : nullptr;  // borrowed
  if (!fn) {
    PyErr_Format(PyExc_TypeError, "[%s] takes no arguments here", name);
    return nullptr;
  }
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  PyObject* full = PyTuple_New(n + 1);
  if (!full) return nullptr;
  PyTuple_SET_ITEM(full, 0, new_ref(self));
  for (Py_ssize_t i = 0; i < n; ++i) PyTuple_SET_ITEM(full, i + 1, new_ref(PyTuple_GET_ITEM(args, i)));
  PyObject* r = PyObject_Call(fn, full, kwargs);
  Py_DECREF(full);
  return r;
}

bool has_arguments(PyObject* args, PyObject* kwargs) {
  return PyTuple_GET_SIZE(args) || (kwargs && PyDict_GET_SIZE(kwargs));
}

PyObject* m_is_contiguous(PyObject* self, PyObject* args, PyObject* kwargs) {
  if (has_arguments(args, kwargs)) return with_format("is_contiguous", self, args, kwargs);
  return guarded([&] {  // an empty tensor counts as contiguous, as in PyTorch
    const Tensor& x = self_tensor(self);
    return PyBool_FromLong(x->is_contiguous() || x->numel() == 0);
  });
}

PyObject* m_contiguous(PyObject* self, PyObject* args, PyObject* kwargs) {
  if (has_arguments(args, kwargs)) return with_format("contiguous", self, args, kwargs);
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
    {"contiguous", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(m_contiguous)),
     METH_VARARGS | METH_KEYWORDS,
     "The tensor itself when laid out in memory_format (default: row-major), else a copy so laid out (recorded for "
     "autograd)."},
    {"dim", m_dim, METH_NOARGS, "Number of dims."},
    {"numel", m_numel, METH_NOARGS, "Number of elements."},
    {"is_contiguous", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(m_is_contiguous)),
     METH_VARARGS | METH_KEYWORDS,
     "Whether the elements lie in memory_format's order (default: row-major) without gaps."},
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
  m.def("_set_format_methods", [](py::dict methods) {
    Py_XSETREF(g_format_methods, new_ref(methods.ptr()));
  }, "Registers the Python forms of contiguous/is_contiguous that take memory_format (sneppx_core._tensor_props).");
}

}  // namespace sx
