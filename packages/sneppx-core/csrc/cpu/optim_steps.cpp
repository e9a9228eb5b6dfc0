// The CPU entries of the fused optimizer steps' slots (ops/nn.h): every tensor is split into ranges and
// the update loops of cpu/optim_kernels.cpp run over all ranges at once on the thread pool.
#include <cmath>
#include <vector>

#include "core/parallel.h"
#include "cpu/optim_kernels.h"
#include "ops/nn.h"

namespace sx::cpu {
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

void sgd_step_cpu(const TensorList& params, const TensorList& grads, const TensorList& bufs, const nn::SgdOpts& o) {
  bool mom = o.momentum != 0;
  SgdK k{o.lr, o.momentum, o.dampening, o.weight_decay, o.nesterov, o.maximize, o.first_step};
  auto rs = ranges_of(params);
  SX_DISPATCH_F32_F64(params[0]->dtype, "sgd_step", [&] {
    using T = scalar_t;
    for_ranges(rs, [&](const Range& r) {
      T* p = params[r.t]->data<T>() + r.begin;
      T* b = mom ? bufs[r.t]->data<T>() + r.begin : nullptr;
      sgd_range<T>(p, grads[r.t]->data<T>() + r.begin, b, r.end - r.begin, k);
    });
  });
}

void adam_step_cpu(const TensorList& params, const TensorList& grads, const TensorList& m, const TensorList& v,
                   const TensorList& vmax, const nn::AdamOpts& o) {
  double bc1 = 1 - std::pow(o.beta1, double(o.step)), bc2 = 1 - std::pow(o.beta2, double(o.step));
  AdamK k{o.lr, o.beta1, o.beta2, o.eps, o.weight_decay, o.lr / bc1, std::sqrt(bc2), o.amsgrad, o.decoupled,
          o.maximize};
  auto rs = ranges_of(params);
  SX_DISPATCH_F32_F64(params[0]->dtype, "adam_step", [&] {
    using T = scalar_t;
    for_ranges(rs, [&](const Range& r) {
      int64_t b = r.begin;
      T* mx = o.amsgrad ? vmax[r.t]->data<T>() + b : nullptr;
      adam_range<T>(params[r.t]->data<T>() + b, grads[r.t]->data<T>() + b, m[r.t]->data<T>() + b,
                    v[r.t]->data<T>() + b, mx, r.end - b, k);
    });
  });
}

void lion_step_cpu(const TensorList& params, const TensorList& grads, const TensorList& m, double lr, double beta1,
                   double beta2, double weight_decay) {
  auto rs = ranges_of(params);
  SX_DISPATCH_F32_F64(params[0]->dtype, "lion_step", [&] {
    using T = scalar_t;
    for_ranges(rs, [&](const Range& r) {
      int64_t b = r.begin;
      lion_range<T>(params[r.t]->data<T>() + b, grads[r.t]->data<T>() + b, m[r.t]->data<T>() + b, r.end - b, lr,
                    beta1, beta2, weight_decay);
    });
  });
}

void lamb_step_cpu(const TensorList& params, const TensorList& grads, const TensorList& m, const TensorList& v,
                   int64_t step, double lr, double beta1, double beta2, double eps, double weight_decay) {
  LambK k{beta1, beta2, eps, weight_decay, 1 - std::pow(beta1, double(step)), 1 - std::pow(beta2, double(step))};
  auto rs = ranges_of(params);
  std::vector<double> sums(rs.size() * 2, 0.0);
  std::vector<double> ratio(params.size(), 1.0);
  SX_DISPATCH_F32_F64(params[0]->dtype, "lamb_step", [&] {
    using T = scalar_t;
    parallel_for(int64_t(rs.size()), 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const Range& r = rs[size_t(i)];
        int64_t o = r.begin;
        lamb_moments<T>(params[r.t]->data<T>() + o, grads[r.t]->data<T>() + o, m[r.t]->data<T>() + o,
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
      lamb_apply<T>(params[r.t]->data<T>() + o, m[r.t]->data<T>() + o, v[r.t]->data<T>() + o, r.end - o, k,
                    lr * ratio[r.t]);
    });
  });
}

double total_norm_cpu(const TensorList& ts, double p) {
  auto rs = ranges_of(ts);
  for (const auto& t : ts)  // checked before the pool runs: kernels never throw inside it
    if (t->dtype != DType::Float32 && t->dtype != DType::Float64)
      throw TypeError(msg("[total_norm] expected float32 or float64 tensors, got ", dtype_name(t->dtype)));
  std::vector<double> part(rs.size(), 0.0);
  parallel_for(int64_t(rs.size()), 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const Range& r = rs[size_t(i)];
      if (ts[r.t]->dtype == DType::Float32)
        part[size_t(i)] = norm_range<float>(ts[r.t]->data<float>() + r.begin, r.end - r.begin, p);
      else
        part[size_t(i)] = norm_range<double>(ts[r.t]->data<double>() + r.begin, r.end - r.begin, p);
    }
  });
  double total = 0;
  if (std::isinf(p)) {
    for (double x : part) total = x > total || x != x ? x : total;
  } else {
    for (double x : part) total += x;
    total = p == 2 ? std::sqrt(total) : (p == 1 ? total : std::pow(total, 1.0 / p));
  }
  return total;
}

void scale_cpu(const TensorList& ts, double factor) {
  auto rs = ranges_of(ts);
  for_ranges(rs, [&](const Range& r) {
    if (ts[r.t]->dtype == DType::Float32)
      scale_range<float>(ts[r.t]->data<float>() + r.begin, r.end - r.begin, factor);
    else
      scale_range<double>(ts[r.t]->data<double>() + r.begin, r.end - r.begin, factor);
  });
}

}  // namespace

SX_REGISTER_KERNEL(kern::sgd_step, CPU, &sgd_step_cpu);
SX_REGISTER_KERNEL(kern::adam_step, CPU, &adam_step_cpu);
SX_REGISTER_KERNEL(kern::lion_step, CPU, &lion_step_cpu);
SX_REGISTER_KERNEL(kern::lamb_step, CPU, &lamb_step_cpu);
SX_REGISTER_KERNEL(kern::total_norm, CPU, &total_norm_cpu);
SX_REGISTER_KERNEL(kern::scale, CPU, &scale_cpu);

}  // namespace sx::cpu
