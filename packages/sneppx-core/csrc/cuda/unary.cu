// CUDA kernels for the unary formula sheet (ops/unary_defs.h): each definition's f, df and d2f,
// compiled for the device, over contiguous or strided operands.
#include "cuda/cuda_util.cuh"
#include "cuda/kernels.h"

namespace sx::cuda {

namespace {

template <typename D, typename C>
struct Forward {
  C a, b;
  __device__ auto operator()(C v) const { return D::template f<C>(v, a, b); }
};
template <typename D, typename C, int Order>
struct Derivative {
  C a, b;
  __device__ C operator()(C v) const {
    if constexpr (Order == 1) return D::template df<C>(v, a, b);
    else return D::template d2f<C>(v, a, b);
  }
};

template <typename O, typename T, typename F>
void map1(const char* op, const Tensor& out, const Tensor& x, F f) {
  for_each<2>(op, out->shape, {out.get(), x.get()}, [f] __device__(char** p) {
    using C = acc_t<T>;
    *reinterpret_cast<O*>(p[0]) = O(f(C(*reinterpret_cast<const T*>(p[1]))));
  });
}

// gx = g * h(x)
template <typename T, typename F>
void map2(const char* op, const Tensor& gx, const Tensor& g, const Tensor& x, F h) {
  for_each<3>(op, gx->shape, {gx.get(), g.get(), x.get()}, [h] __device__(char** p) {
    using C = acc_t<T>;
    *reinterpret_cast<T*>(p[0]) = T(C(*reinterpret_cast<const T*>(p[1])) * h(C(*reinterpret_cast<const T*>(p[2]))));
  });
}

template <typename D>
void unary_def_cuda(const Tensor& out, const Tensor& x, double p0, double p1) {
  SX_CUDA_DISPATCH(x->dtype, D::name, [&] {
    using T = scalar_t;
    using C = acc_t<T>;
    if constexpr (D::rule == DRule::Float && !std::is_floating_point_v<C>) {
      throw TypeError(msg("[", D::name, "] kernel called with ", dtype_name(x->dtype)));
    } else if constexpr (D::rule == DRule::Bool) {
      map1<bool, T>(D::name, out, x, Forward<D, C>{C(p0), C(p1)});
    } else {
      map1<T, T>(D::name, out, x, Forward<D, C>{C(p0), C(p1)});
    }
  });
}

template <typename D>
void unary_grad_def_cuda(const Tensor& gx, const Tensor& g, const Tensor& x, double p0, double p1, int order) {
  if constexpr (kFusedGrad<D>) {
    SX_CUDA_DISPATCH_FLOAT(x->dtype, D::name, [&] {
      using T = scalar_t;
      if (order == 1) {
        map2<T>(D::name, gx, g, x, Derivative<D, T, 1>{T(p0), T(p1)});
      } else if constexpr (kHasD2f<D>) {
        map2<T>(D::name, gx, g, x, Derivative<D, T, 2>{T(p0), T(p1)});
      }
    });
  } else {
    throw RuntimeError(msg("[", D::name, "] has no fused gradient kernel"));
  }
}

}  // namespace

void unary(UnaryOp op, const Tensor& out, const Tensor& x, double p0, double p1) {
  visit_unary(op, [&]<typename D>() { unary_def_cuda<D>(out, x, p0, p1); });
}

void unary_grad(UnaryOp op, const Tensor& gx, const Tensor& g, const Tensor& x, double p0, double p1, int order) {
  visit_unary(op, [&]<typename D>() { unary_grad_def_cuda<D>(gx, g, x, p0, p1, order); });
}

}  // namespace sx::cuda
