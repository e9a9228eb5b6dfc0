// Fused optimizer steps: validate the tensor lists, run the device's step kernel over all of them at
// once, bump versions.
#include <string_view>
#include <cmath>

#include "ops/nn_util.h"

namespace sx::kern {
SX_DEFINE_KERNEL(sgd_step);
SX_DEFINE_KERNEL(adam_step);
SX_DEFINE_KERNEL(lion_step);
SX_DEFINE_KERNEL(lamb_step);
SX_DEFINE_KERNEL(total_norm);
SX_DEFINE_KERNEL(scale);
}  // namespace sx::kern

namespace sx::nn {

namespace {

// Every list has the params' length; every tensor is a contiguous float32/float64 tensor on params' device, with the
// shape and dtype of its parameter (lists the caller does not use are simply not passed).
using NamedList = std::pair<const char*, const TensorList*>;
void check_lists(const char* op, const TensorList& params, std::initializer_list<NamedList> others) {
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    SX_CHECK(p, TypeError, "[", op, "] params[", i, "] is None");
    SX_CHECK(p->dtype == DType::Float32 || p->dtype == DType::Float64, TypeError, "[", op, "] params[", i,
             "] must be float32 or float64, got ", describe(p));
    SX_CHECK(p->device() == params[0]->device(), RuntimeError, "[", op, "] params[", i, "] is on ",
             p->device().str(), " but params[0] is on ", params[0]->device().str());
    SX_CHECK(p->is_contiguous(), ValueError, "[", op, "] params[", i, "] must be contiguous");
    p->check_writable(op);  // the step writes params in place
  }
  for (auto& [name, list] : others) {
    SX_CHECK(list->size() == params.size(), ValueError, "[", op, "] ", name, " has ", list->size(),
             " tensors but params has ", params.size());
    for (size_t i = 0; i < params.size(); ++i) {
      const Tensor& t = (*list)[i];
      SX_CHECK(t, TypeError, "[", op, "] ", name, "[", i, "] is None");
      SX_CHECK(t->shape == params[i]->shape, ValueError, "[", op, "] ", name, "[", i, "] has shape ",
               shape_str(t->shape), " but params[", i, "] has shape ", shape_str(params[i]->shape));
      SX_CHECK(t->dtype == params[i]->dtype, TypeError, "[", op, "] ", name, "[", i, "] is ", dtype_name(t->dtype),
               " but params[", i, "] is ", dtype_name(params[i]->dtype));
      SX_CHECK(t->device() == params[i]->device(), RuntimeError, "[", op, "] ", name, "[", i, "] is on ",
               t->device().str(), " but params[", i, "] is on ", params[i]->device().str());
      SX_CHECK(t->is_contiguous(), ValueError, "[", op, "] ", name, "[", i, "] must be contiguous");
      if (std::string_view(name) != "grads") t->check_writable(op);  // state buffers are updated too
    }
  }
}

void bump(std::initializer_list<const TensorList*> lists) {
  for (auto* l : lists)
    for (auto& t : *l) t->bump_version();
}

void check_beta(const char* op, const char* name, double b) {
  SX_CHECK(b >= 0 && b < 1, ValueError, "[", op, "] ", name, " must be in [0, 1), got ", b);
}

Device device_of(const TensorList& ts) { return ts.empty() ? Device{} : ts[0]->device(); }

void check_uniform_dtype(const char* op, const TensorList& ps) {
  for (size_t i = 1; i < ps.size(); ++i)
    SX_CHECK(ps[i]->dtype == ps[0]->dtype, TypeError, "[", op, "] all params must share one dtype; params[0] is ",
             dtype_name(ps[0]->dtype), " and params[", i, "] is ", dtype_name(ps[i]->dtype));
}
}  // namespace

void sgd_step(const TensorList& params, const TensorList& grads, const TensorList& bufs, const SgdOpts& o) {
  const char* op = "sgd_step";
  bool mom = o.momentum != 0;
  if (mom) check_lists(op, params, {{"grads", &grads}, {"momentum_buffers", &bufs}});
  else check_lists(op, params, {{"grads", &grads}});
  check_uniform_dtype(op, params);
  SX_CHECK(!o.nesterov || (mom && o.dampening == 0), ValueError,
           "[sgd_step] nesterov momentum requires a momentum and zero dampening");
  if (!params.empty()) kern::sgd_step(device_of(params))(params, grads, bufs, o);
  bump({&params});
  if (mom) bump({&bufs});
}

void adam_step(const TensorList& params, const TensorList& grads, const TensorList& m, const TensorList& v,
               const TensorList& vmax, const AdamOpts& o) {
  const char* op = "adam_step";
  if (o.amsgrad)
    check_lists(op, params, {{"grads", &grads}, {"exp_avgs", &m}, {"exp_avg_sqs", &v}, {"max_exp_avg_sqs", &vmax}});
  else
    check_lists(op, params, {{"grads", &grads}, {"exp_avgs", &m}, {"exp_avg_sqs", &v}});
  check_uniform_dtype(op, params);
  SX_CHECK(o.step >= 1, ValueError, "[adam_step] step must be >= 1 (the count after increment), got ", o.step);
  check_beta(op, "beta1", o.beta1);
  check_beta(op, "beta2", o.beta2);
  if (!params.empty()) kern::adam_step(device_of(params))(params, grads, m, v, vmax, o);
  bump({&params, &m, &v});
  if (o.amsgrad) bump({&vmax});
}

void lion_step(const TensorList& params, const TensorList& grads, const TensorList& m, double lr, double beta1,
               double beta2, double weight_decay) {
  const char* op = "lion_step";
  check_lists(op, params, {{"grads", &grads}, {"exp_avgs", &m}});
  check_uniform_dtype(op, params);
  check_beta(op, "beta1", beta1);
  check_beta(op, "beta2", beta2);
  if (!params.empty()) kern::lion_step(device_of(params))(params, grads, m, lr, beta1, beta2, weight_decay);
  bump({&params, &m});
}

void lamb_step(const TensorList& params, const TensorList& grads, const TensorList& m, const TensorList& v,
               int64_t step, double lr, double beta1, double beta2, double eps, double weight_decay) {
  const char* op = "lamb_step";
  check_lists(op, params, {{"grads", &grads}, {"exp_avgs", &m}, {"exp_avg_sqs", &v}});
  check_uniform_dtype(op, params);
  SX_CHECK(step >= 1, ValueError, "[lamb_step] step must be >= 1 (the count after increment), got ", step);
  check_beta(op, "beta1", beta1);
  check_beta(op, "beta2", beta2);
  if (!params.empty())
    kern::lamb_step(device_of(params))(params, grads, m, v, step, lr, beta1, beta2, eps, weight_decay);
  bump({&params, &m, &v});
}

Tensor total_norm(const TensorList& ts, double p) {
  const char* op = "total_norm";
  SX_CHECK(p > 0 || std::isinf(p), ValueError, "[total_norm] norm_type must be positive or inf, got ", p);
  SX_CHECK(!(std::isinf(p) && p < 0), ValueError, "[total_norm] norm_type -inf is not supported");
  check_lists(op, ts, {});
  double total = ts.empty() ? 0.0 : kern::total_norm(device_of(ts))(ts, p);
  return scalar_tensor(Scalar(total), DType::Float32, device_of(ts));
}

void scale_(const TensorList& ts, double factor) {
  const char* op = "scale_";
  check_lists(op, ts, {});
  if (!ts.empty()) kern::scale(device_of(ts))(ts, factor);
  bump({&ts});
}

}  // namespace sx::nn
