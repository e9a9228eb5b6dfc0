// The Tensor class: construction, properties, NumPy exchange, operators and autograd entry points.
#include <algorithm>

#include "python/convert.h"
#include "python/dlpack.h"

#include "core/default_dtype.h"

#include "cpu/kernels.h"
#include "ops/common.h"
#include "ops/unary_defs.h"

namespace sx {
using namespace py_conv;

namespace {

Tensor binop(BinaryOp op, const Tensor& a, py::handle b, bool reverse) {
  // tensor ** number takes the same path as x ** number (one fused pass for the common exponents)
  if (op == BinaryOp::Pow && !reverse && !is_tensor(b)) return pow(a, to_scalar(b, "pow"));
  Tensor bt = operand(b, a, "binary");
  return reverse ? binary(op, bt, a) : binary(op, a, bt);
}

Tensor inplace(BinaryOp op, const Tensor& x, py::handle y) {
  if (op == BinaryOp::Pow && !is_tensor(y)) {  // x ** number: the fused formula of pow, as out of place
    Scalar c = to_scalar(y, "pow");
    if (is_floating(x->dtype) && unary_into(UnaryOp::PowScalar, x, c.to<double>(), 0.0)) return x;
  } else if (binary_into(op, x, operand(y, x, "binary"))) {
    return x;
  }
  std::string name = std::string(binary_name(op)) + "_";
  return inplace_with(name.c_str(), x, [&](const Tensor& src) { return binop(op, src, y, false); });
}

// x += alpha * y (x -= alpha * y): one pass, written straight into x when nothing is recorded.
Tensor inplace_alpha(const Tensor& x, py::handle y, py::handle alpha, bool subtract) {
  if (alpha.is_none()) return inplace(subtract ? BinaryOp::Sub : BinaryOp::Add, x, y);
  const char* op = subtract ? "sub_" : "add_";
  Tensor yt = operand(y, x, op);
  return inplace_with(op, x, [&](const Tensor& src) { return add_alpha(src, yt, alpha, subtract, op, src == x); });
}

void backward(const Tensor& t, py::handle gradient, std::optional<bool> retain_graph, bool create_graph,
              py::handle inputs) {
  Tensor g;
  if (gradient.is_none()) {
    SX_CHECK(!is_complex(t->dtype), RuntimeError, "[backward] grad can be implicitly created only for real outputs, "
             "got ", describe(t), "; pass a gradient, or take .real or .abs() first");
    g = ones(t->shape, t->dtype, t->device());  // non-scalar outputs seed with ones, as the guide does
  } else {
    g = operand(gradient, t, "backward");
    SX_CHECK(g->shape == t->shape, ValueError, "[backward] gradient of shape ", shape_str(g->shape),
             " does not match the output's shape ", shape_str(t->shape));
    SX_CHECK(is_differentiable(g->dtype), TypeError, "[backward] gradient must be floating point or complex, got ",
             describe(g));
    g = to_dtype(g, t->dtype);  // the seed takes the output's dtype, as in PyTorch
  }
  TensorList ins;
  if (!inputs.is_none()) for (auto i : inputs) ins.push_back(i.cast<Tensor>());
  bool keep = retain_graph ? *retain_graph : create_graph;
  if (ins.empty()) {
    run_backward({t}, {g}, keep, create_graph, {}, false);
  } else {  // backward(inputs=...): accumulate only into those
    TensorList gs = run_backward({t}, {g}, keep, create_graph, ins, true);
    for (size_t i = 0; i < ins.size(); ++i)
      if (gs[i]) ins[i]->grad = ins[i]->grad ? add(ins[i]->grad, gs[i]) : gs[i];
  }
}

}  // namespace

Tensor getitem(const Tensor& x, py::handle idx);
void setitem(const Tensor& x, py::handle idx, py::handle value);

void bind_tensor(py::module_& m, py::class_<TensorImpl, Tensor>& cls);
void bind_tensor(py::module_& m, py::class_<TensorImpl, Tensor>& cls) {
  // Tensor(data, dtype=None, device=None, requires_grad=False) is tensor(data). Without arguments, or with two
  // or more ints, it is PyTorch's legacy sizes form: Tensor() is empty, Tensor(2, 3) a (2, 3) tensor of the
  // default float dtype (zeros; PyTorch leaves it uninitialised). One int stays data: Tensor(5) holds 5.
  cls.def(py::init([](const py::args& args, const py::kwargs& kw) {
    auto is_int = [](py::handle h) { return PyLong_Check(h.ptr()) && !PyBool_Check(h.ptr()); };
    if (kw.empty() && args.size() != 1 && std::all_of(args.begin(), args.end(), is_int)) {
      Shape shape = args.size() ? Shape() : Shape{0};
      for (py::handle s : args) shape.push_back(s.cast<int64_t>());
      return zeros(shape, default_float_dtype());
    }
    static const char* const names[] = {"data", "dtype", "device", "requires_grad"};
    py::object v[4];
    SX_CHECK(args.size() <= 4, TypeError, "[Tensor] takes at most 4 positional arguments (data, dtype, device, "
             "requires_grad), got ", args.size());
    for (size_t i = 0; i < args.size(); ++i) v[i] = args[i];
    for (auto [k, val] : kw) {
      std::string key = py::str(k);
      auto at = std::find_if(std::begin(names), std::end(names), [&](const char* n) { return key == n; });
      SX_CHECK(at != std::end(names), TypeError, "[Tensor] unexpected keyword argument '", key, "'");
      size_t i = size_t(at - std::begin(names));
      SX_CHECK(!v[i], TypeError, "[Tensor] got multiple values for argument '", key, "'");
      v[i] = py::reinterpret_borrow<py::object>(val);
    }
    SX_CHECK(v[0], TypeError, "[Tensor] missing the data argument");
    Tensor t = from_data(v[0], opt_dtype(v[1] ? v[1] : py::none()));
    Device d = parse_device(v[2] ? v[2] : py::none());
    if (d != Device{}) t = to_device(t, d);
    bool requires_grad = v[3] && v[3].cast<bool>();
    SX_CHECK(!requires_grad || is_differentiable(t->dtype), RuntimeError,
             "[tensor] only floating point and complex tensors can require gradients, got ", dtype_name(t->dtype));
    t->requires_grad = requires_grad;
    return t;
  }));

  cls.def_property_readonly("shape", [](const Tensor& t) { return py::tuple(py::cast(t->shape)); })
      .def_property_readonly("ndim", [](const Tensor& t) { return t->dim(); })
      .def_property_readonly("T", [](const Tensor& t) {
        IntList dims;
        for (int64_t d = t->dim() - 1; d >= 0; --d) dims.push_back(d);
        return permute(t, dims);
      }, "All dims reversed.")
      .def_property_readonly("mT", [](const Tensor& t) { return transpose(t, -2, -1); }, "The last two dims swapped.")
      .def_property_readonly("dtype", [](const Tensor& t) { return t->dtype; })
      .def_property_readonly("device", [](const Tensor& t) { return t->device(); })
      .def_property_readonly("is_cuda", [](const Tensor& t) { return t->device().type == DeviceType::CUDA; })
      .def_property_readonly("is_leaf", [](const Tensor& t) { return t->is_leaf(); })
      .def("is_inference", [](const Tensor& t) { return t->storage->inference; },
           "True for a tensor allocated inside ``inference_mode()``, and for its views.")
      .def_property_readonly("grad_fn", [](const Tensor& t) { return t->grad_fn; })
      .def_property_readonly("_version", [](const Tensor& t) { return t->version(); })
      .def_property("requires_grad", [](const Tensor& t) { return t->requires_grad; },
                    [](const Tensor& t, bool v) {
                      SX_CHECK(t->is_leaf() || v, RuntimeError,
                               "[requires_grad] you can only change requires_grad flags of leaf tensors; use detach()");
                      SX_CHECK(!v || is_differentiable(t->dtype), RuntimeError,
                               "[requires_grad] only floating point and complex tensors can require gradients, got ", dtype_name(t->dtype));
                      t->requires_grad = v;
                    })
      .def_property("grad", [](const Tensor& t) { return t->grad; },
                    [](const Tensor& t, py::object g) {
                      if (g.is_none()) { t->grad = nullptr; return; }
                      Tensor gt = g.cast<Tensor>();
                      SX_CHECK(gt->shape == t->shape, ValueError, "[grad] assigned gradient of shape ", shape_str(gt->shape),
                               " does not match the tensor's shape ", shape_str(t->shape));
                      t->grad = gt;
                    })
      .def("_set_data", [](const Tensor& t, const Tensor& v) {  // x.data = v: x becomes a detached alias of v
        SX_CHECK(v, TypeError, "[Tensor.data] expected a tensor, got None");
        SX_CHECK(!t->requires_grad || is_differentiable(v->dtype), TypeError, "[Tensor.data] a tensor that requires grad "
                 "needs floating point or complex data, got ", dtype_name(v->dtype));
        t->storage = v->storage, t->offset = v->offset, t->shape = v->shape, t->strides = v->strides;
        t->dtype = v->dtype;
        t->view_base = nullptr;
      }, "Replaces this tensor's data with ``v``'s (shared; shape, dtype and device may change).")
      .def("numel", [](const Tensor& t) { return t->numel(); })
      .def("dim", [](const Tensor& t) { return t->dim(); })
      .def("size", [](const Tensor& t, py::object dim) -> py::object {
             if (dim.is_none()) return py::tuple(py::cast(t->shape));
             SX_CHECK(t->dim() > 0, IndexError, "[size] dimension specified as ", dim.cast<int64_t>(),
                      " but the tensor has no dimensions");
             return py::int_(t->shape[size_t(wrap_dim(dim.cast<int64_t>(), t->dim(), "size"))]);
           }, py::arg("dim") = py::none())
      .def("stride", [](const Tensor& t, py::object dim) -> py::object {
             if (dim.is_none()) return py::tuple(py::cast(t->strides));
             SX_CHECK(t->dim() > 0, IndexError, "[stride] dimension specified as ", dim.cast<int64_t>(),
                      " but the tensor has no dimensions");
             return py::int_(t->strides[size_t(wrap_dim(dim.cast<int64_t>(), t->dim(), "stride"))]);
           }, py::arg("dim") = py::none())
      .def("storage_offset", [](const Tensor& t) { return t->offset; })
      .def("data_ptr", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t->raw()); })
      .def("element_size", [](const Tensor& t) { return itemsize(t->dtype); })
      .def("is_contiguous", [](const Tensor& t) { return t->is_contiguous(); })
      .def("is_floating_point", [](const Tensor& t) { return is_floating(t->dtype); })
      .def("__len__", [](const Tensor& t) {
        SX_CHECK(t->dim() > 0, TypeError, "[len] len() of a 0-d tensor");
        return t->shape[0];
      })
      .def("item", [](const Tensor& t) {
        SX_CHECK(t->numel() == 1, ValueError, "[item] a tensor with ", t->numel(), " elements cannot be converted to a Python number");
        return tolist(reshape(detach(t), {}));
      })
      .def("tolist", [](const Tensor& t) { return tolist(t); })
      .def("numpy", [](const Tensor& t, bool force) {
             SX_CHECK(!t->requires_grad || force, RuntimeError,
                      "[numpy] can't call numpy() on a tensor that requires grad; use tensor.detach().numpy()");
             return to_numpy(t);
           }, py::arg("force") = false)
      .def("__array__", [](const Tensor& t, py::object dtype, py::object copy) {
             py::array a = to_numpy(detach(t->dtype == DType::BFloat16 ? cast_nograd(t, DType::Float32) : t));
             // NumPy 2 passes copy=True for np.array(t, copy=True): the result must not alias t.
             bool want_copy = !copy.is_none() && copy.cast<bool>();
             if (!dtype.is_none()) return a.attr("astype")(dtype, py::arg("copy") = want_copy);
             return want_copy ? a.attr("copy")() : py::object(a);
           }, py::arg("dtype") = py::none(), py::arg("copy") = py::none())
      .def_static("from_numpy", [](py::array a) { return from_numpy(a); }, "Wraps a NumPy array without copying.")
      .def("__dlpack__", [](const Tensor& t, py::handle stream, py::handle max_version, py::handle dl_device,
                            py::handle copy) {
             (void)stream;  // CPU only: there is no stream to synchronise with
             if (!dl_device.is_none()) {
               auto dev = dl_device.cast<std::pair<int, int>>();
               SX_CHECK(dev.first == 1, RuntimeError, "[__dlpack__] can only export to the CPU (device type 1), got ",
                        dev.first);
             }
             bool versioned = !max_version.is_none() && max_version.cast<std::pair<int, int>>().first >= 1;
             bool want_copy = !copy.is_none() && copy.cast<bool>();
             return to_dlpack(want_copy ? clone_nograd(detach(t)) : t, versioned);
           }, py::kw_only(), py::arg("stream") = py::none(), py::arg("max_version") = py::none(),
           py::arg("dl_device") = py::none(), py::arg("copy") = py::none())
      .def("__dlpack_device__", [](const Tensor& t) {
        SX_CHECK(!is_meta(t), NotImplementedError, "[__dlpack_device__] DLPack has no meta device");
        return py::make_tuple(t->device().type == DeviceType::CPU ? 1 : 2, t->device().index);
      })
      .def("backward", &backward, py::arg("gradient") = py::none(), py::arg("retain_graph") = py::none(),
           py::arg("create_graph") = false, py::arg("inputs") = py::none())
      .def("detach", [](const Tensor& t) { return detach(t); })
      .def("detach_", [](const Tensor& t) {
        t->grad_fn = nullptr;
        t->requires_grad = false;
        return t;
      })
      .def("requires_grad_", [](const Tensor& t, bool v) {
             SX_CHECK(t->is_leaf() || v, RuntimeError, "[requires_grad_] only leaf tensors can stop requiring grad; use detach()");
             SX_CHECK(!v || is_differentiable(t->dtype), RuntimeError, "[requires_grad_] only floating point and complex tensors can require gradients");
             t->requires_grad = v;
             return t;
           }, py::arg("requires_grad") = true)
      .def("retain_grad", [](const Tensor& t) {
        SX_CHECK(t->requires_grad, RuntimeError, "[retain_grad] can't retain_grad on a tensor that does not require grad");
        if (t->grad_fn) t->grad_fn->retained = t;
      })
      .def_property_readonly("retains_grad", [](const Tensor& t) { return t->grad_fn && t->grad_fn->retained.lock() == t; })
      .def("_register_hook", [](const Tensor& t, py::function fn) {
        SX_CHECK(t->requires_grad, RuntimeError, "[register_hook] cannot register a hook on a tensor that does not require grad");
        GradHook h = PyGradHook{py_ref(fn)};
        auto& list = t->grad_fn ? t->grad_fn->pre_hooks : t->hooks;
        list.push_back(h);
        return list.size() - 1;
      })
      .def("_remove_hook", [](const Tensor& t, size_t i) {
        auto& list = t->grad_fn ? t->grad_fn->pre_hooks : t->hooks;
        if (i < list.size()) list[i] = [](const Tensor&) -> Tensor { return nullptr; };
      })
      .def("_register_post_acc_hook", [](const Tensor& t, py::function fn) {
        SX_CHECK(t->is_leaf() && t->requires_grad, RuntimeError,
                 "[register_post_accumulate_grad_hook] only leaf tensors that require grad take this hook");
        t->post_acc_hooks.push_back(PyPostAccHook{py_ref(fn)});
        return t->post_acc_hooks.size() - 1;
      })
      .def("_remove_post_acc_hook", [](const Tensor& t, size_t i) {
        if (i < t->post_acc_hooks.size()) t->post_acc_hooks[i] = [](const Tensor&) {};
      })
      .def("__getitem__", &getitem)
      .def("__setitem__", &setitem)
      .def("__hash__", [](py::handle self) { return py::hash(py::int_(reinterpret_cast<uintptr_t>(self.ptr()))); })
      .def("__bool__", [](const Tensor& t) {
        SX_CHECK(t->numel() == 1, RuntimeError, "[bool] the truth value of a tensor with ", t->numel(),
                 " elements is ambiguous; use .any() or .all()");
        return tolist(reshape(detach(t), {})).cast<bool>();
      })
      .def("__float__", [](const Tensor& t) { return py::float_(tolist(reshape(detach(t), {}))); })
      .def("__int__", [](const Tensor& t) { return py::int_(tolist(reshape(detach(t), {}))); })
      .def("__index__", [](const Tensor& t) {
        SX_CHECK(!is_floating(t->dtype) && t->numel() == 1, TypeError, "[index] only integer tensors of a single element can be used as an index");
        return tolist(reshape(t, {})).cast<int64_t>();
      });

  // Arithmetic and comparison operators.
// A forward operator given an object whose type has the reflected method (a sparse tensor) returns
// NotImplemented, so that Python calls that method; other objects get operand()'s TypeError.
#define SX_BINOP(PY, OP, REV, RFL)                                                              \
  cls.def(PY, [](const Tensor& a, py::handle b) -> py::object {                                \
    if (RFL && !is_tensor(b) && defers_to(b, RFL)) return py::reinterpret_borrow<py::object>(Py_NotImplemented); \
    return py::cast(binop(BinaryOp::OP, a, b, REV));                                           \
  }, py::is_operator())
  SX_BINOP("__add__", Add, false, "__radd__"); SX_BINOP("__radd__", Add, true, nullptr);
  SX_BINOP("__sub__", Sub, false, "__rsub__"); SX_BINOP("__rsub__", Sub, true, nullptr);
  SX_BINOP("__mul__", Mul, false, "__rmul__"); SX_BINOP("__rmul__", Mul, true, nullptr);
  SX_BINOP("__truediv__", Div, false, "__rtruediv__"); SX_BINOP("__rtruediv__", Div, true, nullptr);
  SX_BINOP("__floordiv__", FloorDiv, false, nullptr); SX_BINOP("__rfloordiv__", FloorDiv, true, nullptr);
  SX_BINOP("__mod__", Rem, false, nullptr); SX_BINOP("__rmod__", Rem, true, nullptr);
  SX_BINOP("__rpow__", Pow, true, nullptr);
  SX_BINOP("__eq__", Eq, false, nullptr); SX_BINOP("__ne__", Ne, false, nullptr);
  SX_BINOP("__lt__", Lt, false, nullptr); SX_BINOP("__le__", Le, false, nullptr);
  SX_BINOP("__gt__", Gt, false, nullptr); SX_BINOP("__ge__", Ge, false, nullptr);
  SX_BINOP("__and__", BitAnd, false, nullptr); SX_BINOP("__or__", BitOr, false, nullptr);
  SX_BINOP("__xor__", BitXor, false, nullptr);
  SX_BINOP("__rand__", BitAnd, true, nullptr); SX_BINOP("__ror__", BitOr, true, nullptr);
  SX_BINOP("__rxor__", BitXor, true, nullptr);
  SX_BINOP("__lshift__", Shl, false, nullptr); SX_BINOP("__rshift__", Shr, false, nullptr);
  SX_BINOP("__rlshift__", Shl, true, nullptr); SX_BINOP("__rrshift__", Shr, true, nullptr);
#undef SX_BINOP
#define SX_IOP(PY, OP) cls.def(PY, [](const Tensor& a, py::handle b) { return inplace(BinaryOp::OP, a, b); }, py::is_operator())
  SX_IOP("__iadd__", Add); SX_IOP("__isub__", Sub); SX_IOP("__imul__", Mul); SX_IOP("__itruediv__", Div);
  SX_IOP("__ifloordiv__", FloorDiv); SX_IOP("__imod__", Rem); SX_IOP("__ipow__", Pow);
  SX_IOP("__iand__", BitAnd); SX_IOP("__ior__", BitOr); SX_IOP("__ixor__", BitXor);
  SX_IOP("__ilshift__", Shl); SX_IOP("__irshift__", Shr);
#undef SX_IOP
  cls.def("__pow__", [](const Tensor& a, py::handle b) {
       if (is_tensor(b)) return pow(a, b.cast<Tensor>());
       return pow(a, to_scalar(b, "pow"));
     }, py::is_operator())
      // Heavy kernels run with the GIL released: they touch no Python state (hooks and foreign owners
      // take the GIL themselves) and version counters, generators and accumulators are thread-safe.
      .def("__matmul__", [](const Tensor& a, const Tensor& b) { return matmul(a, b); }, py::is_operator(),
           py::call_guard<py::gil_scoped_release>())
      .def("__rmatmul__", [](const Tensor& a, const Tensor& b) { return matmul(b, a); }, py::is_operator(),
           py::call_guard<py::gil_scoped_release>())
      .def("__neg__", [](const Tensor& a) { return neg(a); })
      .def("__pos__", [](const Tensor& a) { return a; })
      .def("__abs__", [](const Tensor& a) { return unary(UnaryOp::Abs, a); })
      .def("__invert__", [](const Tensor& a) { return bitwise_not(a); });
  // In-place named forms.
  cls.def("add_", [](const Tensor& a, py::handle b, py::handle alpha) { return inplace_alpha(a, b, alpha, false); },
          py::arg("other"), py::arg("alpha") = py::none())
      .def("sub_", [](const Tensor& a, py::handle b, py::handle alpha) { return inplace_alpha(a, b, alpha, true); },
           py::arg("other"), py::arg("alpha") = py::none())
      .def("mul_", [](const Tensor& a, py::handle b) { return inplace(BinaryOp::Mul, a, b); })
      .def("div_", [](const Tensor& a, py::handle b) { return inplace(BinaryOp::Div, a, b); })
      .def("pow_", [](const Tensor& a, py::handle b) { return inplace(BinaryOp::Pow, a, b); })
      .def("bitwise_and_", [](const Tensor& a, py::handle b) { return inplace(BinaryOp::BitAnd, a, b); })
      .def("bitwise_or_", [](const Tensor& a, py::handle b) { return inplace(BinaryOp::BitOr, a, b); })
      .def("bitwise_xor_", [](const Tensor& a, py::handle b) { return inplace(BinaryOp::BitXor, a, b); })
      .def("bitwise_left_shift_", [](const Tensor& a, py::handle b) { return inplace(BinaryOp::Shl, a, b); })
      .def("bitwise_right_shift_", [](const Tensor& a, py::handle b) { return inplace(BinaryOp::Shr, a, b); })
      .def("gcd_", [](const Tensor& a, py::handle b) { return inplace(BinaryOp::Gcd, a, b); }, py::arg("other"))
      .def("lcm_", [](const Tensor& a, py::handle b) { return inplace(BinaryOp::Lcm, a, b); }, py::arg("other"))
      .def("nextafter_", [](const Tensor& a, py::handle b) { return inplace(BinaryOp::NextAfter, a, b); },
           py::arg("other"))
      .def("bitwise_not_", [](const Tensor& a) { return inplace_with("bitwise_not_", a, [](const Tensor& src) { return bitwise_not(src); }); })
      .def("copy_", [](const Tensor& a, const Tensor& b) { copy_(a, b); return a; },
           py::call_guard<py::gil_scoped_release>())
      .def("fill_", [](const Tensor& a, py::handle v) { fill_(a, to_scalar(v, "fill_")); return a; })
      .def("zero_", [](const Tensor& a) { fill_(a, Scalar(int64_t(0))); return a; })
      .def("uniform_", [](const Tensor& a, double lo, double hi, py::handle g) { uniform_(a, lo, hi, opt_generator(g)); return a; },
           py::arg("a") = 0.0, py::arg("b") = 1.0, py::arg("generator") = py::none())
      .def("normal_", [](const Tensor& a, double mean, double std, py::handle g) { normal_(a, mean, std, opt_generator(g)); return a; },
           py::arg("mean") = 0.0, py::arg("std") = 1.0, py::arg("generator") = py::none());
}

}  // namespace sx
