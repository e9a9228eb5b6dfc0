// The extension module _SNEPPX_c: types, exceptions, grad mode and runtime settings.
#include "python/convert.h"
#include "core/default_dtype.h"
#include "python/dlpack.h"

#include <cmath>
#include <mutex>
#include <set>
#include <string>

#include "autograd/modes.h"
#include "core/cuda_api.h"
#include "core/parallel.h"
#include "ops/sample_grad.h"
#include "cpu/blas.h"

namespace sx {
void bind_tensor(py::module_& m, py::class_<TensorImpl, Tensor>& cls);
void bind_ops(py::module_& m, py::class_<TensorImpl, Tensor>& cls);
void install_fast_methods(py::module_& m, py::handle tensor_type);
void bind_nn(py::module_& m);
void bind_conv(py::module_& m);
}  // namespace sx

using namespace sx;

namespace {
// A seed from Python: an integer in [-2^63, 2^64) (negatives wrap modulo 2^64, as in PyTorch) or a
// finite integral float. Other values raise ValueError/TypeError naming the op.
uint64_t parse_seed(py::handle h, const char* op) {
  PyObject* o = h.ptr();
  if (PyFloat_Check(o)) {
    double d = PyFloat_AS_DOUBLE(o);
    SX_CHECK(std::isfinite(d) && d == std::floor(d), ValueError, "[", op, "] seed must be a finite integer, got ",
             std::string(py::repr(h)));
    return parse_seed(py::int_(py::reinterpret_borrow<py::object>(h)), op);
  }
  SX_CHECK(PyLong_Check(o), TypeError, "[", op, "] seed must be an integer, got ",
           std::string(py::str(py::type::of(h).attr("__name__"))));
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
  if (!overflow) return uint64_t(v);
  unsigned long long u = PyLong_AsUnsignedLongLong(o);
  if (PyErr_Occurred()) {
    PyErr_Clear();
    throw ValueError(msg("[", op, "] seed ", std::string(py::str(h)), " is out of range [-2**63, 2**64)"));
  }
  return uint64_t(u);
}

// Cycle collection for tensors: a hook that captures its own tensor (x.register_hook(lambda g, x=x: g))
// is a cycle wrapper -> TensorImpl -> hook -> function -> wrapper. Only when the wrapper is the sole
// owner of the TensorImpl (and the tensor the sole owner of its grad_fn) does it own those hooks, so
// only then are they reported to the GC and dropped by tp_clear; pybind11's own slots handle __dict__.
traverseproc g_base_traverse = nullptr;
inquiry g_base_clear = nullptr;

Tensor* owned_tensor(PyObject* self) {
  auto* inst = reinterpret_cast<py::detail::instance*>(self);
  auto vh = inst->get_value_and_holder(nullptr, false);
  if (!vh || !vh.holder_constructed()) return nullptr;
  Tensor& t = vh.holder<Tensor>();
  return t && t.use_count() == 1 ? &t : nullptr;
}

// Only callables held once are reported: a copy elsewhere (a hook list being run) is not ours alone.
template <typename F>
void each_hook_object(const Tensor& t, F f) {
  for (auto& h : t->hooks)
    if (auto* p = h.target<py_conv::PyGradHook>(); p && p->fn.use_count() == 1) f(*p->fn);
  for (auto& h : t->post_acc_hooks)
    if (auto* p = h.target<py_conv::PyPostAccHook>(); p && p->fn.use_count() == 1) f(*p->fn);
  if (t->grad_fn && t->grad_fn.use_count() == 1)
    for (auto& h : t->grad_fn->pre_hooks)
      if (auto* p = h.target<py_conv::PyGradHook>(); p && p->fn.use_count() == 1) f(*p->fn);
}

int tensor_traverse(PyObject* self, visitproc visit, void* arg) {
  if (Tensor* t = owned_tensor(self)) {
    int err = 0;
    each_hook_object(*t, [&](const py::object& o) {
      if (!err && o) err = visit(o.ptr(), arg);
    });
    if (err) return err;
  }
  return g_base_traverse ? g_base_traverse(self, visit, arg) : 0;
}

int tensor_clear(PyObject* self) {
  if (Tensor* t = owned_tensor(self)) {
    // Move the hooks out first: dropping a callable may run arbitrary code that touches the tensor.
    std::vector<GradHook> hooks, pre;
    std::vector<PostAccHook> post;
    hooks.swap((*t)->hooks);
    post.swap((*t)->post_acc_hooks);
    if ((*t)->grad_fn && (*t)->grad_fn.use_count() == 1) pre.swap((*t)->grad_fn->pre_hooks);
  }
  return g_base_clear ? g_base_clear(self) : 0;
}

// The geometry of an as_strided view: as many strides as sizes, none negative, and every element inside x's
// storage (PyTorch's rule), else ValueError / RuntimeError naming the op.
void check_strided(const Tensor& x, const IntList& size, const IntList& stride, int64_t offset, const char* op) {
  SX_CHECK(size.size() == stride.size(), ValueError, "[", op, "] mismatch in length of strides and shape: size ",
           shape_str(Shape(size.begin(), size.end())), ", stride ", shape_str(Shape(stride.begin(), stride.end())));
  SX_CHECK(offset >= 0, ValueError, "[", op, "] storage_offset must be >= 0, got ", offset);
  int64_t last = offset;
  bool empty = false;
  for (size_t i = 0; i < size.size(); ++i) {
    SX_CHECK(size[i] >= 0, ValueError, "[", op, "] sizes must be >= 0, got ", size[i], " at dim ", i);
    SX_CHECK(stride[i] >= 0, ValueError, "[", op, "] negative strides are not supported, got ", stride[i],
             " at dim ", i);
    empty = empty || size[i] == 0;
    int64_t step = 0;
    SX_CHECK(size[i] == 0 || (!__builtin_mul_overflow(size[i] - 1, stride[i], &step) &&
                              !__builtin_add_overflow(last, step, &last)),
             ValueError, "[", op, "] the view's extent overflows int64");
  }
  view_numel(Shape(size.begin(), size.end()), op);
  const int64_t avail = x->storage ? int64_t(x->storage->nbytes / itemsize(x->dtype)) : 0;
  SX_CHECK(empty || last < avail, RuntimeError, "[", op, "] size ", shape_str(Shape(size.begin(), size.end())),
           ", stride ", shape_str(Shape(stride.begin(), stride.end())), " and storage offset ", offset,
           " need a storage of ", last + 1, " elements; ", describe(x), "'s storage holds ", avail);
}

void setup_tensor_type(PyHeapTypeObject* heap) {
  auto* type = &heap->ht_type;
  type->tp_flags |= Py_TPFLAGS_HAVE_GC;
  g_base_traverse = type->tp_traverse;
  g_base_clear = type->tp_clear;
  type->tp_traverse = tensor_traverse;
  type->tp_clear = tensor_clear;
}
}  // namespace

PYBIND11_MODULE(_SNEPPX_c, m) {
  m.doc() = "SneppX compiled core: tensors, kernels and autograd";
  py::register_local_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const sx::ValueError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const sx::TypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const sx::IndexError& e) {
      PyErr_SetString(PyExc_IndexError, e.what());
    } catch (const sx::MemoryError& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    } catch (const sx::NotImplementedError& e) {
      PyErr_SetString(PyExc_NotImplementedError, e.what());
    } catch (const sx::RuntimeError& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    } catch (const std::bad_alloc&) {
      PyErr_SetString(PyExc_MemoryError, "[alloc] out of memory");
    }
  });

  py::enum_<DType>(m, "Dtype", "Element types. Accepted wherever a dtype is: Dtype.FLOAT32, sneppx.float32 or 'float32'.")
      .value("BOOL", DType::Bool)
      .value("UINT8", DType::UInt8)
      .value("INT8", DType::Int8)
      .value("INT16", DType::Int16)
      .value("INT32", DType::Int32)
      .value("INT64", DType::Int64)
      .value("FLOAT16", DType::Float16)
      .value("BFLOAT16", DType::BFloat16)
      .value("FLOAT32", DType::Float32)
      .value("FLOAT64", DType::Float64)
      .value("COMPLEX64", DType::Complex64)
      .value("COMPLEX128", DType::Complex128)
      .def_property_readonly("itemsize", [](DType d) { return itemsize(d); })
      .def_property_readonly("is_floating_point", [](DType d) { return is_floating(d); })
      .def_property_readonly("is_complex", [](DType d) { return is_complex(d); })
      .def_property_readonly("name", [](DType d) { return std::string(dtype_name(d)); })
      .def("__repr__", [](DType d) { return std::string("sneppx.") + dtype_name(d); })
      .def("__str__", [](DType d) { return std::string("sneppx.") + dtype_name(d); })
      .def("__eq__", [](DType d, py::handle o) {
        try { return d == py_conv::parse_dtype(o); } catch (...) { return false; }
      })
      .def("__ne__", [](DType d, py::handle o) {
        try { return d != py_conv::parse_dtype(o); } catch (...) { return true; }
      })
      .def("__hash__", [](DType d) { return int(d); });

  py::class_<Device>(m, "Device", "A device: Device('cpu'), Device('cuda', 0), Device('cuda:1') or Device('meta').")
      .def(py::init([](py::object type, py::object index) {
             Device d = py_conv::parse_device(type);
             if (!index.is_none()) d.index = index.cast<int>();
             return d;
           }), py::arg("type"), py::arg("index") = py::none())
      .def_property_readonly("type", [](const Device& d) { return d.type_name(); })
      .def_property_readonly("index", [](const Device& d) -> py::object {
        if (d.type != DeviceType::CUDA) return py::none();
        return py::int_(d.index);
      })
      .def("__eq__", [](const Device& d, py::handle o) {
        try { return d == py_conv::parse_device(o); } catch (...) { return false; }
      })
      .def("__hash__", [](const Device& d) { return int(d.type) * 1024 + d.index; })
      .def("__str__", &Device::str)
      .def("__repr__", [](const Device& d) { return "device(type='" + std::string(d.type_name()) + "'" + (d.type != DeviceType::CUDA ? "" : ", index=" + std::to_string(d.index)) + ")"; });

  py::class_<Generator>(m, "Generator", "A random-number stream (Philox counter based): Generator(seed).")
      .def(py::init([](py::object seed) {
             Generator g;
             if (!seed.is_none()) g.seed = parse_seed(seed, "Generator");
             return g;
           }), py::arg("seed") = py::none())
      .def("manual_seed", [](Generator& g, py::object seed) {
        g.seed = parse_seed(seed, "manual_seed");
        g.offset = 0;
        return &g;
      }, py::return_value_policy::reference)
      .def("initial_seed", [](const Generator& g) { return g.seed; })
      .def("get_state", [](const Generator& g) { return py::make_tuple(g.seed, g.offset.load()); })
      .def("set_state", [](Generator& g, py::tuple s) {
        SX_CHECK(s.size() == 2, ValueError, "[set_state] expected the (seed, offset) tuple of get_state()");
        g.seed = parse_seed(s[0], "set_state");
        g.offset = parse_seed(s[1], "set_state");
      });
  m.def("default_generator", []() { return &default_generator(); }, py::return_value_policy::reference);

  py::class_<Node, std::shared_ptr<Node>>(m, "Node", "A recorded backward function (Tensor.grad_fn).")
      .def("name", &Node::name)
      .def_property_readonly("next_functions", [](const Node& n) {
        py::list out;
        for (auto& nx : n.next) out.append(py::make_tuple(nx ? py::cast(nx) : py::none(), 0));
        return py::tuple(out);
      })
      .def("__repr__", [](const Node& n) { return "<" + n.name() + ">"; });

  // autograd.Function: records `out` as produced by `inputs` (tensors) with a Python backward, `fn(grad)`,
  // which returns one gradient or None per input (checked in Python). Node names are kept for the life of
  // the module (a node holds a plain pointer to its name); they are the classes' names, a handful.
  m.def("_record_function", [](const std::string& name, const TensorList& inputs, const Tensor& out,
                               py::function fn) {
    static std::mutex mu;
    static std::set<std::string> names;
    const char* nm;
    {
      std::lock_guard<std::mutex> lock(mu);
      nm = names.insert(name).first->c_str();
    }
    py_conv::PyRef f = py_conv::py_ref(fn);
    const size_t n = inputs.size();
    return record(nm, inputs, out, [f, n](const Tensor& g) -> TensorList {
      py::gil_scoped_acquire gil;
      py::sequence r = (*f)(g).cast<py::sequence>();
      TensorList res(n);
      for (size_t i = 0; i < n && i < r.size(); ++i)
        if (!r[i].is_none()) res[i] = r[i].cast<Tensor>();
      return res;
    });
  });
  // A saved output of a Function keeps its data and a weak reference to its node (a strong one would be a
  // cycle: node -> backward -> saved output -> node); during a backward that records a graph the output is
  // rebuilt from the two, so that backward's own graph reaches the node.
  py::class_<std::weak_ptr<Node>>(m, "_WeakNode", "A weak reference to a recorded node.")
      .def("lock", [](const std::weak_ptr<Node>& w) { return w.lock(); });
  m.def("_weak_node", [](const std::shared_ptr<Node>& n) { return std::weak_ptr<Node>(n); });
  m.def("_alias_with_grad_fn", [](const Tensor& t, const std::shared_ptr<Node>& node) {
    SX_CHECK(node, ValueError, "[_alias_with_grad_fn] the node is gone");
    Tensor a = detach(t);
    a->grad_fn = node;
    a->requires_grad = true;
    return a;
  });
  // as_strided: a view of x's storage with any sizes, strides (>= 0) and offset, checked to lie inside the
  // storage; as_strided_ gives x itself that geometry.
  m.def("_as_strided", [](const Tensor& x, const IntList& size, const IntList& stride, int64_t offset) {
    check_strided(x, size, stride, offset, "as_strided");
    return make_view(x, Shape(size.begin(), size.end()), Shape(stride.begin(), stride.end()), offset);
  });
  m.def("_as_strided_", [](const Tensor& x, const IntList& size, const IntList& stride, int64_t offset) {
    check_strided(x, size, stride, offset, "as_strided_");
    x->shape = Shape(size.begin(), size.end());
    x->strides = Shape(stride.begin(), stride.end());
    x->offset = offset;
    return x;
  });
  m.def("_set_sparse_call", [](py::handle fn) { py_conv::set_sparse_call(fn); },
        "Registers the handler of mm/matmul calls that are given a sparse tensor (sneppx_core._sparse_make).");
  m.def("_storage_nbytes", [](const Tensor& x) { return x->storage ? x->storage->nbytes : size_t(0); });
  m.def("_log_standard_gamma", [](const Tensor& alpha, py::handle g) {
    return log_standard_gamma(alpha, py_conv::opt_generator(g));
  }, py::arg("alpha"), py::arg("generator") = py::none());
  m.def("_standard_gamma", [](const Tensor& alpha, py::handle g) {
    return standard_gamma(alpha, py_conv::opt_generator(g));
  }, py::arg("alpha"), py::arg("generator") = py::none());
  m.def("_sample_dirichlet", [](const Tensor& alpha, py::handle g) {
    return sample_dirichlet(alpha, py_conv::opt_generator(g));
  }, py::arg("alpha"), py::arg("generator") = py::none());
  m.def("_standard_gamma_grad", &standard_gamma_grad, py::arg("alpha"), py::arg("x"));
  m.def("_beta_sample_grad", &beta_sample_grad, py::arg("x"), py::arg("alpha"), py::arg("total"));
  m.def("_default_dtype", &default_float_dtype);
  m.def("_set_default_dtype", [](DType d) {
    SX_CHECK(is_floating(d), TypeError, "[set_default_dtype] only floating-point types are supported as the "
             "default type, got ", dtype_name(d));
    set_default_float_dtype(d);
  });
  m.def("_set_anomaly_enabled", &anomaly::set, py::arg("enabled"), py::arg("check_nan") = true);
  m.def("_is_anomaly_enabled", &anomaly::enabled);
  m.def("_is_checkpoint_valid", []() { return !capturing_grads(); });
  m.def("_is_anomaly_check_nan_enabled", &anomaly::check_nan);
  m.def("is_grad_enabled", &grad_mode::enabled);
  m.def("_set_grad_enabled", &grad_mode::set);
  m.def("_inference_mode_enabled", &inference_mode_enabled);
  m.def("_set_inference_mode", &set_inference_mode);
  m.def("get_num_threads", &get_num_threads);
  m.def("set_num_threads", &set_num_threads);
  m.def("empty_cache", &cpu_empty_cache, "Returns cached CPU blocks to the system; returns bytes freed.");
  m.def("cached_bytes", &cpu_cached_bytes);
  m.def("cuda_is_available", &cuda_available);
  m.def("cuda_device_count", &cuda_device_count);
  m.def("cuda_memory_stats", [](int index) {
    CudaMemoryStats s = cuda_memory_stats(index);
    return py::make_tuple(s.allocated, s.peak, s.reserved);
  }, "(allocated, peak allocated, reserved) bytes of a GPU's caching allocator.");
  m.def("cuda_reset_peak_memory", &cuda_reset_peak_memory);
  m.def("cuda_device_name", &cuda_device_name);
  m.def("cuda_empty_cache", &cuda_empty_cache, "Returns cached GPU blocks to the driver; returns bytes freed.");
  m.def("cuda_synchronize", [](int index) {
    py::gil_scoped_release nogil;
    cuda_synchronize(index);
  });
  m.def("cuda_set_device", &cuda_set_device);
  m.def("cuda_current_device", &cuda_current_device);
  m.def("cuda_set_allow_tf32", &cuda_set_allow_tf32);
  m.def("cuda_allow_tf32", &cuda_allow_tf32);
  m.def("cuda_event_create", &cuda_event_create, "A CUDA event on device `index` (an opaque handle).");
  m.def("cuda_event_destroy", &cuda_event_destroy);
  m.def("cuda_event_record", &cuda_event_record);
  m.def("cuda_event_synchronize", [](uintptr_t e) {
    py::gil_scoped_release nogil;
    cuda_event_synchronize(e);
  });
  m.def("cuda_event_query", &cuda_event_query);
  m.def("cuda_event_elapsed_ms", &cuda_event_elapsed_ms);
  m.def("from_dlpack", &from_dlpack);
  m.def("_parallel_raise", [](const std::string& kind) {
    // Throws from every chunk but the first (which the calling thread runs), so a worker throws: the
    // error must come back here as a Python exception rather than terminate the process.
    parallel_for(int64_t(1) << 20, 1, [&](int64_t b, int64_t) {
      if (b == 0) return;
      if (kind == "bad_alloc") throw std::bad_alloc();
      throw ValueError("[parallel_for] error raised inside a chunk");
    });
  }, "Test hook: raises inside a parallel region ('bad_alloc' or 'value').");
  m.def("_blas_int_limit", &blas_int_limit);
  m.def("_set_blas_int_limit", &set_blas_int_limit,
        "Lowers the size at which GEMMs are split into several BLAS calls (tests exercise the split with it).");
#ifdef SNEPPX_WITH_CUDA
  m.attr("_HAS_CUDA") = true;
#else
  m.attr("_HAS_CUDA") = false;
#endif
#ifdef SNEPPX_VERSION_INFO
  m.attr("__version__") = SNEPPX_VERSION_INFO;
#endif

  auto cls = py::class_<TensorImpl, Tensor>(m, "Tensor", py::dynamic_attr(), py::custom_type_setup(setup_tensor_type),
                                           "An n-dimensional array with autograd, PyTorch style.");
  bind_tensor(m, cls);
  bind_ops(m, cls);
  bind_nn(m);
  bind_conv(m);
  install_fast_methods(m, cls);  // last: replaces some of the definitions above
}
