// Bindings of the convolution, pooling and batch-statistics norm ops as _SNEPPX_c._conv;
// sneppx_core._functional_conv wraps them with PyTorch's signatures and docstrings.
#include "python/convert.h"

#include "ops/conv.h"

namespace sx {
using namespace py_conv;
using namespace pybind11::literals;

namespace {
Tensor maybe(py::handle h, const char* op, const char* name) {
  if (h.is_none()) return Tensor();
  SX_CHECK(is_tensor(h), TypeError, "[", op, "] ", name, " must be a Tensor or None, got ",
           std::string(py::str(py::type::of(h).attr("__name__"))));
  return h.cast<Tensor>();
}
}  // namespace

void bind_conv(py::module_& m) {
  auto c = m.def_submodule("_conv", "Convolution, pooling and batch-norm kernels (wrapped by sneppx_core.functional).");
  c.def("conv", [](const Tensor& x, const Tensor& w, py::handle b, const IntList& s, const IntList& p,
                   const IntList& d, int64_t groups) {
    auto bt = maybe(b, "conv", "bias");
    ReleaseGilIf nogil(heavy(x) || heavy(w));
    return nn::conv(x, w, bt, s, p, d, groups);
  }, "input"_a, "weight"_a, "bias"_a, "stride"_a, "padding"_a, "dilation"_a, "groups"_a);
  c.def("conv_transpose", [](const Tensor& x, const Tensor& w, py::handle b, const IntList& s, const IntList& p,
                             const IntList& op, const IntList& d, int64_t groups) {
    auto bt = maybe(b, "conv_transpose", "bias");
    ReleaseGilIf nogil(heavy(x) || heavy(w));
    return nn::conv_transpose(x, w, bt, s, p, op, d, groups);
  }, "input"_a, "weight"_a, "bias"_a, "stride"_a, "padding"_a, "output_padding"_a, "dilation"_a, "groups"_a);
  c.def("unfold", &nn::unfold, "input"_a, "kernel_size"_a, "dilation"_a, "padding"_a, "stride"_a);
  c.def("fold", &nn::fold, "input"_a, "output_size"_a, "kernel_size"_a, "dilation"_a, "padding"_a, "stride"_a);
  c.def("max_pool", &nn::max_pool, "input"_a, "kernel_size"_a, "stride"_a, "padding"_a, "dilation"_a, "ceil_mode"_a,
        "indices"_a = true);
  c.def("avg_pool", &nn::avg_pool, "input"_a, "kernel_size"_a, "stride"_a, "padding"_a, "ceil_mode"_a,
        "count_include_pad"_a, "divisor_override"_a);
  c.def("adaptive_avg_pool", &nn::adaptive_avg_pool, "input"_a, "output_size"_a);
  c.def("adaptive_max_pool", &nn::adaptive_max_pool, "input"_a, "output_size"_a, "indices"_a = true);
  c.def("pad_constant", [](const Tensor& x, const IntList& pads, py::handle value) {
    return nn::pad_constant(x, pads, to_scalar(value, "pad"));
  }, "input"_a, "pad"_a, "value"_a);
  c.def("pad_gather", [](const Tensor& x, const TensorList& maps) {
    ReleaseGilIf nogil(heavy(x));
    return nn::pad_gather(x, maps);
  }, "input"_a, "maps"_a);
  c.def("batch_norm", [](const Tensor& x, py::handle rm, py::handle rv, py::handle w, py::handle b, bool training,
                         double momentum, double eps) {
    const char* op = "batch_norm";
    return nn::batch_norm(x, maybe(rm, op, "running_mean"), maybe(rv, op, "running_var"), maybe(w, op, "weight"),
                          maybe(b, op, "bias"), training, momentum, eps);
  }, "input"_a, "running_mean"_a, "running_var"_a, "weight"_a, "bias"_a, "training"_a, "momentum"_a, "eps"_a);
  c.def("group_norm", [](const Tensor& x, int64_t groups, py::handle w, py::handle b, double eps) {
    return nn::group_norm(x, groups, maybe(w, "group_norm", "weight"), maybe(b, "group_norm", "bias"), eps);
  }, "input"_a, "num_groups"_a, "weight"_a, "bias"_a, "eps"_a);
}

}  // namespace sx
