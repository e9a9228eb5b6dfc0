// Bindings of the fused nn ops as the submodule _SNEPPX_c._nn; sneppx_core.functional wraps them
// with PyTorch's signatures and docstrings.
#include "python/convert.h"

#include "ops/nn.h"

namespace sx {
using namespace py_conv;
using namespace pybind11::literals;

namespace {
Tensor opt_tensor(py::handle h, const char* op, const char* name) {
  if (h.is_none()) return Tensor();
  SX_CHECK(is_tensor(h), TypeError, "[", op, "] ", name, " must be a Tensor or None, got ",
           std::string(py::str(py::type::of(h).attr("__name__"))));
  return h.cast<Tensor>();
}

// A list of tensors (None entries kept as null for the op to reject by name); None -> empty list.
TensorList tensor_list(py::handle h, const char* op, const char* name) {
  TensorList out;
  if (h.is_none()) return out;
  SX_CHECK(py::isinstance<py::sequence>(h) || py::isinstance<py::iterable>(h), TypeError, "[", op, "] ", name,
           " must be a list of tensors");
  size_t i = 0;
  for (py::handle x : h) {
    SX_CHECK(x.is_none() || is_tensor(x), TypeError, "[", op, "] ", name, "[", i, "] must be a Tensor, got ",
             std::string(py::str(py::type::of(x).attr("__name__"))));
    out.push_back(x.is_none() ? Tensor() : x.cast<Tensor>());
    ++i;
  }
  return out;
}

nn::PLoss parse_ploss(const std::string& s) {
  static const std::pair<const char*, nn::PLoss> table[] = {
      {"mse", nn::PLoss::Mse}, {"l1", nn::PLoss::L1}, {"smooth_l1", nn::PLoss::SmoothL1},
      {"huber", nn::PLoss::Huber}, {"bce", nn::PLoss::Bce}, {"bce_logits", nn::PLoss::BceLogits},
      {"kl_div", nn::PLoss::KlDiv}, {"kl_div_log", nn::PLoss::KlDivLog}};
  for (auto& [n, k] : table)
    if (s == n) return k;
  throw ValueError("[loss] unknown pointwise loss '" + s + "'");
}
}  // namespace

void bind_nn(py::module_& m) {
  auto n = m.def_submodule("_nn", "Fused neural-network kernels (wrapped by sneppx_core.functional).");
  n.def("softmax", [](const Tensor& x, int64_t dim, bool log) {
    ReleaseGilIf nogil(heavy(x));
    return nn::softmax(x, dim, log);
  }, "input"_a, "dim"_a, "log"_a);
  n.def("layer_norm", [](const Tensor& x, const IntList& ns, py::handle w, py::handle b, double eps) {
    auto wt = opt_tensor(w, "layer_norm", "weight");
    auto bt = opt_tensor(b, "layer_norm", "bias");
    ReleaseGilIf nogil(heavy(x));
    return nn::layer_norm(x, ns, wt, bt, eps);
  }, "input"_a, "normalized_shape"_a, "weight"_a, "bias"_a, "eps"_a);
  n.def("rms_norm", [](const Tensor& x, const IntList& ns, py::handle w, py::handle eps) {
    auto wt = opt_tensor(w, "rms_norm", "weight");
    double e = eps.is_none() ? -1.0 : eps.cast<double>();
    ReleaseGilIf nogil(heavy(x));
    return nn::rms_norm(x, ns, wt, e);
  }, "input"_a, "normalized_shape"_a, "weight"_a, "eps"_a);
  n.def("glu", [](const Tensor& x, int64_t dim, bool swiglu) {
    return nn::glu(x, dim, swiglu ? nn::Gate::SwiGlu : nn::Gate::Glu);
  }, "input"_a, "dim"_a, "swiglu"_a);
  n.def("gated", [](const Tensor& a, const Tensor& b, bool swiglu) {
    return nn::gated(swiglu ? nn::Gate::SwiGlu : nn::Gate::Glu, a, b);
  }, "input"_a, "other"_a, "swiglu"_a);
  n.def("lstm_cell", [](const Tensor& gates, const Tensor& c_prev) {
    std::pair<Tensor, Tensor> hc;
    {
      ReleaseGilIf nogil(heavy(gates));
      hc = nn::lstm_cell(gates, c_prev);
    }
    return py::make_tuple(hc.first, hc.second);
  }, "gates"_a, "c_prev"_a);
  n.def("gru_cell", [](const Tensor& gi, const Tensor& gh, const Tensor& h_prev) {
    ReleaseGilIf nogil(heavy(gi));
    return nn::gru_cell(gi, gh, h_prev);
  }, "gi"_a, "gh"_a, "h_prev"_a);
  n.def("lstm_sequence", [](const Tensor& gi, const Tensor& h0, const Tensor& c0, const Tensor& w_hh, bool reverse) {
    std::tuple<Tensor, Tensor, Tensor> r;
    {
      ReleaseGilIf nogil(heavy(gi));
      r = nn::lstm_sequence(gi, h0, c0, w_hh, reverse);
    }
    return py::make_tuple(std::get<0>(r), std::get<1>(r), std::get<2>(r));
  }, "gi"_a, "h0"_a, "c0"_a, "w_hh"_a, "reverse"_a);
  n.def("gru_sequence", [](const Tensor& gi, const Tensor& h0, const Tensor& w_hh, py::handle b_hh, bool reverse) {
    auto bt = opt_tensor(b_hh, "gru_sequence", "b_hh");
    std::pair<Tensor, Tensor> r;
    {
      ReleaseGilIf nogil(heavy(gi));
      r = nn::gru_sequence(gi, h0, w_hh, bt, reverse);
    }
    return py::make_tuple(r.first, r.second);
  }, "gi"_a, "h0"_a, "w_hh"_a, "b_hh"_a, "reverse"_a);
  n.def("linear", [](const Tensor& x, const Tensor& w, py::handle b) {
    auto bt = opt_tensor(b, "linear", "bias");
    ReleaseGilIf nogil(heavy(x) || heavy(w));
    return nn::linear(x, w, bt);
  }, "input"_a, "weight"_a, "bias"_a);
  n.def("embedding", [](const Tensor& ids, const Tensor& w, py::handle pad, bool scale) {
    std::optional<int64_t> p;
    if (!pad.is_none()) p = pad.cast<int64_t>();
    return nn::embedding(ids, w, p, scale);
  }, "input"_a, "weight"_a, "padding_idx"_a, "scale_grad_by_freq"_a);
  n.def("dropout", [](const Tensor& x, double p, bool training, py::handle g) {
    return nn::dropout(x, p, training, opt_generator(g));
  }, "input"_a, "p"_a, "training"_a, "generator"_a);
  n.def("cross_entropy", [](const Tensor& x, const Tensor& t, py::handle w, int64_t ignore_index,
                            const std::string& red, double ls) {
    auto wt = opt_tensor(w, "cross_entropy", "weight");
    auto r = nn::parse_reduction(red, "cross_entropy");
    ReleaseGilIf nogil(heavy(x));
    return nn::cross_entropy(x, t, wt, ignore_index, r, ls);
  }, "input"_a, "target"_a, "weight"_a, "ignore_index"_a, "reduction"_a, "label_smoothing"_a);
  n.def("nll_loss", [](const Tensor& x, const Tensor& t, py::handle w, int64_t ignore_index, const std::string& red) {
    return nn::nll_loss(x, t, opt_tensor(w, "nll_loss", "weight"), ignore_index, nn::parse_reduction(red, "nll_loss"));
  }, "input"_a, "target"_a, "weight"_a, "ignore_index"_a, "reduction"_a);
  n.def("pointwise_loss", [](const std::string& kind, const Tensor& x, const Tensor& t, py::handle extra,
                             py::handle weight, const std::string& red, double beta, const std::string& op) {
    return nn::pointwise_loss(parse_ploss(kind), x, t, opt_tensor(extra, op.c_str(), "pos_weight"),
                              opt_tensor(weight, op.c_str(), "weight"),
                              nn::parse_reduction(red, op.c_str(), kind == "kl_div" || kind == "kl_div_log"), beta);
  }, "kind"_a, "input"_a, "target"_a, "extra"_a, "weight"_a, "reduction"_a, "beta"_a, "op"_a);
  n.def("scaled_dot_product_attention", [](const Tensor& q, const Tensor& k, const Tensor& v, py::handle mask,
                                           double dropout_p, bool is_causal, py::handle scale, bool gqa,
                                           py::handle gen) {
    std::optional<double> s;
    if (!scale.is_none()) s = scale.cast<double>();
    auto mt = opt_tensor(mask, "scaled_dot_product_attention", "attn_mask");
    Generator* g = opt_generator(gen);
    ReleaseGilIf nogil(heavy(q) || heavy(k));
    return nn::scaled_dot_product_attention(q, k, v, mt, dropout_p, is_causal, s, gqa, g);
  }, "query"_a, "key"_a, "value"_a, "attn_mask"_a, "dropout_p"_a, "is_causal"_a, "scale"_a, "enable_gqa"_a,
        "generator"_a);

  // ---- optimizer steps (keyword-only hyper-parameters, as the Python face documents them)
  n.def("sgd_step", [](py::handle p, py::handle g, py::handle b, double lr, double momentum, double dampening,
                       bool nesterov, double wd, bool maximize, bool first_step) {
    const char* op = "sgd_step";
    TensorList ps = tensor_list(p, op, "params"), gs = tensor_list(g, op, "grads");
    TensorList bs = tensor_list(b, op, "momentum_buffers");
    ReleaseGilIf nogil(heavy(ps));
    nn::sgd_step(ps, gs, bs, {lr, momentum, dampening, wd, nesterov, maximize, first_step});
  }, "params"_a, "grads"_a, "momentum_buffers"_a, py::kw_only(), "lr"_a, "momentum"_a, "dampening"_a, "nesterov"_a,
        "weight_decay"_a, "maximize"_a, "first_step"_a);
  n.def("adam_step", [](py::handle p, py::handle g, py::handle m, py::handle v, py::handle vmax, int64_t step,
                        double lr, double b1, double b2, double eps, double wd, bool amsgrad, bool decoupled,
                        bool maximize) {
    const char* op = "adam_step";
    nn::AdamOpts o{step, lr, b1, b2, eps, wd, amsgrad, decoupled, maximize};
    TensorList ps = tensor_list(p, op, "params"), gs = tensor_list(g, op, "grads");
    TensorList ms = tensor_list(m, op, "exp_avgs"), vs = tensor_list(v, op, "exp_avg_sqs");
    TensorList vmaxs = tensor_list(vmax, op, "max_exp_avg_sqs");
    ReleaseGilIf nogil(heavy(ps));
    nn::adam_step(ps, gs, ms, vs, vmaxs, o);
  }, "params"_a, "grads"_a, "exp_avgs"_a, "exp_avg_sqs"_a, "max_exp_avg_sqs"_a, py::kw_only(), "step"_a, "lr"_a,
        "beta1"_a, "beta2"_a, "eps"_a, "weight_decay"_a, "amsgrad"_a, "decoupled_weight_decay"_a, "maximize"_a);
  n.def("lion_step", [](py::handle p, py::handle g, py::handle m, double lr, double b1, double b2, double wd) {
    const char* op = "lion_step";
    TensorList ps = tensor_list(p, op, "params"), gs = tensor_list(g, op, "grads");
    TensorList ms = tensor_list(m, op, "exp_avgs");
    ReleaseGilIf nogil(heavy(ps));
    nn::lion_step(ps, gs, ms, lr, b1, b2, wd);
  }, "params"_a, "grads"_a, "exp_avgs"_a, py::kw_only(), "lr"_a, "beta1"_a, "beta2"_a, "weight_decay"_a);
  n.def("lamb_step", [](py::handle p, py::handle g, py::handle m, py::handle v, int64_t step, double lr, double b1,
                        double b2, double eps, double wd) {
    const char* op = "lamb_step";
    TensorList ps = tensor_list(p, op, "params"), gs = tensor_list(g, op, "grads");
    TensorList ms = tensor_list(m, op, "exp_avgs"), vs = tensor_list(v, op, "exp_avg_sqs");
    ReleaseGilIf nogil(heavy(ps));
    nn::lamb_step(ps, gs, ms, vs, step, lr, b1, b2, eps, wd);
  }, "params"_a, "grads"_a, "exp_avgs"_a, "exp_avg_sqs"_a, py::kw_only(), "step"_a, "lr"_a, "beta1"_a, "beta2"_a,
        "eps"_a, "weight_decay"_a);
  n.def("total_norm", [](py::handle ts, double p) {
    TensorList xs = tensor_list(ts, "total_norm", "tensors");
    ReleaseGilIf nogil(heavy(xs));
    return nn::total_norm(xs, p);
  }, "tensors"_a, "norm_type"_a);
  n.def("scale_", [](py::handle ts, double f) { nn::scale_(tensor_list(ts, "scale_", "tensors"), f); }, "tensors"_a,
        "factor"_a);
}

}  // namespace sx
