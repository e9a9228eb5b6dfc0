// Fused optimizer steps: validate the tensor lists, split every tensor into ranges, run the update
// loops of cpu/optim_kernels.cpp over all ranges at once on the thread pool, bump versions.
#include <string_view>
#include <cmath>

#include "core/parallel.h"
#include "cpu/optim_kernels.h"
#include "ops/nn_util.h"

namespace sx::nn {

namespace {
constexpr int64_t kRange = 1 << 16;  // elements per work item

struct Range {
  size_t t;
  int64_t begin, end;
};

std::vector<Range> ranges_of(const TensorList& ts) {
  std::vector<Range> r;
  for (size_t i = 0; i < ts.size(); ++i)
    for (int64_t b = 0, n = ts[i]->numel(); b < n; b += kRange) r.push_back({i, b, std::min(n, b + kRange)});
  return r;
}

// Runs fn(range) for every range, spread over the pool.
template <typename F> void for_ranges(const std::vector<Range>& rs, F fn) {
  parallel_for(int64_t(rs.size()), 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) fn(rs[size_t(i)]);
  });
}

// Every list has the params' length; every tensor is a contiguous float32/float64 CPU tensor with the
// shape and dtype of its parameter (lists the caller does not use are simply not passed).
using NamedList = std::pair<const char*, const TensorList*>;
void check_lists(const char* op, const TensorList& params, std::initializer_list<NamedList> others) {
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    SX_CHECK(p, TypeError, "[", op, "] params[", i, "] is None");
    SX_CHECK(p->dtype == DType::Float32 || p->dtype == DType::Float64, TypeError, "[", op, "] params[", i,
             "] must be float32 or float64, got ", describe(p));
    SX_CHECK(p->device().type == DeviceType::CPU, RuntimeError, "[", op, "] params[", i, "] is on ",
             p->device().str(), "; fused steps run on cpu");
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
      SX_CHECK(t->device().type == DeviceType::CPU, RuntimeError, "[", op, "] ", name, "[", i, "] is on ",
               t->device().str(), "; fused steps run on cpu");
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

#define SX_RANGE_DISPATCH(T_LIST, OP, ...) \
  SX_DISPATCH_F32_F64((T_LIST).empty() ? DType::Float32 : (T_LIST)[0]->dtype, OP, __VA_ARGS__)

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
  cpu::SgdK k{o.lr, o.momentum, o.dampening, o.weight_decay, o.nesterov, o.maximize, o.first_step};
  auto rs = ranges_of(params);
  SX_RANGE_DISPATCH(params, op, [&] {
    using T = scalar_t;
    for_ranges(rs, [&](const Range& r) {
      T* p = params[r.t]->data<T>() + r.begin;
      T* b = mom ? bufs[r.t]->data<T>() + r.begin : nullptr;
      cpu::sgd_range<T>(p, grads[r.t]->data<T>() + r.begin, b, r.end - r.begin, k);
    });
  });
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
  double bc1 = 1 - std::pow(o.beta1, double(o.step)), bc2 = 1 - std::pow(o.beta2, double(o.step));
  cpu::AdamK k{o.lr, o.beta1, o.beta2, o.eps, o.weight_decay, o.lr / bc1, std::sqrt(bc2), o.amsgrad, o.decoupled,
               o.maximize};
  auto rs = ranges_of(params);
  SX_RANGE_DISPATCH(params, op, [&] {
    using T = scalar_t;
    for_ranges(rs, [&](const Range& r) {
      int64_t b = r.begin;
      T* mx = o.amsgrad ? vmax[r.t]->data<T>() + b : nullptr;
      cpu::adam_range<T>(params[r.t]->data<T>() + b, grads[r.t]->data<T>() + b, m[r.t]->data<T>() + b,
                         v[r.t]->data<T>() + b, mx, r.end - b, k);
    });
  });
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
  auto rs = ranges_of(params);
  SX_RANGE_DISPATCH(params, op, [&] {
    using T = scalar_t;
    for_ranges(rs, [&](const Range& r) {
      int64_t b = r.begin;
      cpu::lion_range<T>(params[r.t]->data<T>() + b, grads[r.t]->data<T>() + b, m[r.t]->data<T>() + b, r.end - b, lr,
                         beta1, beta2, weight_decay);
    });
  });
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
  cpu::LambK k{beta1, beta2, eps, weight_decay, 1 - std::pow(beta1, double(step)), 1 - std::pow(beta2, double(step))};
  auto rs = ranges_of(params);
  std::vector<double> sums(rs.size() * 2, 0.0);
  std::vector<double> ratio(params.size(), 1.0);
  SX_RANGE_DISPATCH(params, op, [&] {
    using T = scalar_t;
    parallel_for(int64_t(rs.size()), 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const Range& r = rs[size_t(i)];
        int64_t o = r.begin;
        cpu::lamb_moments<T>(params[r.t]->data<T>() + o, grads[r.t]->data<T>() + o, m[r.t]->data<T>() + o,
                             v[r.t]->data<T>() + o, r.end - o, k, &sums[size_t(i) * 2]);
      }
    });
    // Per-tensor trust ratio ||p|| / ||r||, summed over the tensor's ranges in order (deterministic).
    std::vector<double> pn(params.size(), 0.0), rn(params.size(), 0.0);
    for (size_t i = 0; i < rs.size(); ++i) pn[rs[i].t] += sums[2 * i], rn[rs[i].t] += sums[2 * i + 1];
    for (size_t t = 0; t < params.size(); ++t)
      ratio[t] = pn[t] > 0 && rn[t] > 0 ? std::sqrt(pn[t]) / std::sqrt(rn[t]) : 1.0;
    for_ranges(rs, [&](const Range& r) {
      int64_t o = r.begin;
      cpu::lamb_apply<T>(params[r.t]->data<T>() + o, m[r.t]->data<T>() + o, v[r.t]->data<T>() + o, r.end - o, k,
                         lr * ratio[r.t]);
    });
  });
  bump({&params, &m, &v});
}

Tensor total_norm(const TensorList& ts, double p) {
  const char* op = "total_norm";
  SX_CHECK(p > 0 || std::isinf(p), ValueError, "[total_norm] norm_type must be positive or inf, got ", p);
  SX_CHECK(!(std::isinf(p) && p < 0), ValueError, "[total_norm] norm_type -inf is not supported");
  check_lists(op, ts, {});
  auto rs = ranges_of(ts);
  std::vector<double> part(rs.size(), 0.0);
  parallel_for(int64_t(rs.size()), 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const Range& r = rs[size_t(i)];
      SX_DISPATCH_F32_F64(ts[r.t]->dtype, op, [&] {
        part[size_t(i)] = cpu::norm_range<scalar_t>(ts[r.t]->data<scalar_t>() + r.begin, r.end - r.begin, p);
      });
    }
  });
  double total = 0;
  if (std::isinf(p)) {
    for (double x : part) total = x > total || x != x ? x : total;
  } else {
    for (double x : part) total += x;
    total = p == 2 ? std::sqrt(total) : (p == 1 ? total : std::pow(total, 1.0 / p));
  }
  return scalar_tensor(Scalar(total), DType::Float32);
}

void scale_(const TensorList& ts, double factor) {
  const char* op = "scale_";
  check_lists(op, ts, {});
  auto rs = ranges_of(ts);
  for_ranges(rs, [&](const Range& r) {
    SX_DISPATCH_F32_F64(ts[r.t]->dtype, op, [&] {
      cpu::scale_range<scalar_t>(ts[r.t]->data<scalar_t>() + r.begin, r.end - r.begin, factor);
    });
  });
  bump({&ts});
}

}  // namespace sx::nn
