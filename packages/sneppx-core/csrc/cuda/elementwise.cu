// CUDA kernels for fill, copies (any dtype pair, strided views, broadcast sources), the binary ops
// with broadcasting, where and clamp. Operands arrive validated, broadcast and cast by the op.
#include "cuda/cuda_util.cuh"
#include "cuda/kernels.h"
#include "ops/binary_math.h"

namespace sx::cuda {

namespace {

template <typename O, typename T, typename F>
void map1(const char* op, const Tensor& out, const Tensor& x, F f) {
  for_each<2>(op, out->shape, {out.get(), x.get()}, [f] __device__(char** p) {
    using C = acc_t<T>;
    *reinterpret_cast<O*>(p[0]) = O(f(C(*reinterpret_cast<const T*>(p[1]))));
  });
}

template <typename O, typename T, typename F>
void map2(const char* op, const Tensor& out, const Tensor& a, const Tensor& b, F f) {
  for_each<3>(op, out->shape, {out.get(), a.get(), b.get()}, [f] __device__(char** p) {
    using C = acc_t<T>;
    *reinterpret_cast<O*>(p[0]) = O(f(C(*reinterpret_cast<const T*>(p[1])), C(*reinterpret_cast<const T*>(p[2]))));
  });
}

// Functors (not lambdas) so that one kernel per (op, dtype) is instantiated by name.
#define SX_BINARY_FN(NAME, EXPR)                          \
  struct NAME {                                           \
    template <typename C> __device__ auto operator()(C x, C y) const { return EXPR; } \
  };
SX_BINARY_FN(AddF, bm::wadd(x, y))
SX_BINARY_FN(SubF, bm::wsub(x, y))
SX_BINARY_FN(MulF, bm::wmul(x, y))
SX_BINARY_FN(DivF, x / y)
SX_BINARY_FN(FloorDivF, bm::floordiv(x, y))
SX_BINARY_FN(RemF, bm::pymod(x, y))
SX_BINARY_FN(FmodF, bm::cfmod(x, y))
SX_BINARY_FN(PowF, bm::ipow(x, y))
SX_BINARY_FN(MaxF, bm::vmax(x, y))
SX_BINARY_FN(MinF, bm::vmin(x, y))
SX_BINARY_FN(Atan2F, C(::atan2(double(x), double(y))))
SX_BINARY_FN(NextAfterF, bm::next_after(x, y))
SX_BINARY_FN(GcdF, bm::gcd(x, y))
SX_BINARY_FN(LcmF, bm::lcm(x, y))
SX_BINARY_FN(BitAndF, x & y)
SX_BINARY_FN(BitOrF, x | y)
SX_BINARY_FN(BitXorF, x ^ y)
SX_BINARY_FN(ShlF, bm::shl(x, y))
SX_BINARY_FN(ShrF, bm::shr(x, y))
SX_BINARY_FN(EqF, x == y)
SX_BINARY_FN(NeF, x != y)
SX_BINARY_FN(LtF, x < y)
SX_BINARY_FN(LeF, x <= y)
SX_BINARY_FN(GtF, x > y)
SX_BINARY_FN(GeF, x >= y)
SX_BINARY_FN(AndF, (x != C(0)) && (y != C(0)))
SX_BINARY_FN(OrF, (x != C(0)) || (y != C(0)))
SX_BINARY_FN(XorF, (x != C(0)) != (y != C(0)))
#undef SX_BINARY_FN

// nextafter of float16 / bfloat16: a step on the 16-bit value, not on its float widening.
template <typename T>
void nextafter16(const char* op, const Tensor& out, const Tensor& a, const Tensor& b) {
  for_each<3>(op, out->shape, {out.get(), a.get(), b.get()}, [] __device__(char** p) {
    T x = *reinterpret_cast<const T*>(p[1]), y = *reinterpret_cast<const T*>(p[2]);
    float xf = float(x), yf = float(y);
    T r;
    r.x = bm::next_after_bits16(x.x, y.x, xf != xf, yf != yf, xf < yf, xf == yf);
    *reinterpret_cast<T*>(p[0]) = r;
  });
}

template <typename T>
void binary_t(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  const char* name = binary_name(op);
  switch (op) {
    case BinaryOp::Add: return map2<T, T>(name, out, a, b, AddF{});
    case BinaryOp::Sub: return map2<T, T>(name, out, a, b, SubF{});
    case BinaryOp::Mul: return map2<T, T>(name, out, a, b, MulF{});
    case BinaryOp::Div: return map2<T, T>(name, out, a, b, DivF{});
    case BinaryOp::FloorDiv: return map2<T, T>(name, out, a, b, FloorDivF{});
    case BinaryOp::Rem: return map2<T, T>(name, out, a, b, RemF{});
    case BinaryOp::Fmod: return map2<T, T>(name, out, a, b, FmodF{});
    case BinaryOp::Pow: return map2<T, T>(name, out, a, b, PowF{});
    case BinaryOp::Max: return map2<T, T>(name, out, a, b, MaxF{});
    case BinaryOp::Min: return map2<T, T>(name, out, a, b, MinF{});
    case BinaryOp::Atan2: return map2<T, T>(name, out, a, b, Atan2F{});
    case BinaryOp::NextAfter:
      if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) return nextafter16<T>(name, out, a, b);
      else if constexpr (std::is_floating_point_v<T>) return map2<T, T>(name, out, a, b, NextAfterF{});
      throw TypeError("[nextafter] has no integer kernel");  // binary() rejects integers first
    case BinaryOp::Gcd:
    case BinaryOp::Lcm:
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        if (op == BinaryOp::Gcd) return map2<T, T>(name, out, a, b, GcdF{});
        return map2<T, T>(name, out, a, b, LcmF{});
      }
      throw TypeError(msg("[", name, "] has no kernel for ", dtype_name(out->dtype)));  // binary() rejects first
    case BinaryOp::BitAnd:
    case BinaryOp::BitOr:
    case BinaryOp::BitXor:
    case BinaryOp::Shl:
    case BinaryOp::Shr:
      if constexpr (std::is_integral_v<acc_t<T>>) {
        if (op == BinaryOp::BitAnd) return map2<T, T>(name, out, a, b, BitAndF{});
        if (op == BinaryOp::BitOr) return map2<T, T>(name, out, a, b, BitOrF{});
        if (op == BinaryOp::BitXor) return map2<T, T>(name, out, a, b, BitXorF{});
        if (op == BinaryOp::Shl) return map2<T, T>(name, out, a, b, ShlF{});
        return map2<T, T>(name, out, a, b, ShrF{});
      }
      throw TypeError(msg("[", name, "] has no float kernel"));  // binary() rejects floats first
    case BinaryOp::Eq: return map2<bool, T>(name, out, a, b, EqF{});
    case BinaryOp::Ne: return map2<bool, T>(name, out, a, b, NeF{});
    case BinaryOp::Lt: return map2<bool, T>(name, out, a, b, LtF{});
    case BinaryOp::Le: return map2<bool, T>(name, out, a, b, LeF{});
    case BinaryOp::Gt: return map2<bool, T>(name, out, a, b, GtF{});
    case BinaryOp::Ge: return map2<bool, T>(name, out, a, b, GeF{});
    case BinaryOp::And: return map2<bool, T>(name, out, a, b, AndF{});
    case BinaryOp::Or: return map2<bool, T>(name, out, a, b, OrF{});
    case BinaryOp::Xor: return map2<bool, T>(name, out, a, b, XorF{});
  }
}

}  // namespace

void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  SX_CUDA_DISPATCH(a->dtype, binary_name(op), [&] { binary_t<scalar_t>(op, out, a, b); });
}

void copy(const Tensor& dst, const Tensor& src) {
  if (dst->dtype == src->dtype && dst->is_contiguous() && src->is_contiguous() && dst->shape == src->shape) {
    size_t n = size_t(dst->numel()) * itemsize(dst->dtype);
    if (n == 0) return;
    use_device(dst->device());
    SX_CUDA_CHECK(cudaMemcpyAsync(dst->raw(), src->raw(), n, cudaMemcpyDeviceToDevice, stream()), "copy");
    return;
  }
  SX_CUDA_DISPATCH(dst->dtype, "copy", [&] {
    using D = scalar_t;
    SX_CUDA_DISPATCH(src->dtype, "copy", [&] {
      using S = scalar_t;
      if constexpr (std::is_same_v<D, bool>) map1<D, S>("copy", dst, src, [] __device__(acc_t<S> v) { return v != acc_t<S>(0); });
      else map1<D, S>("copy", dst, src, [] __device__(acc_t<S> v) { return acc_t<D>(v); });
    });
  });
}

void fill(const Tensor& t, const Scalar& v) {
  SX_CUDA_DISPATCH(t->dtype, "fill", [&] {
    using T = scalar_t;
    T val = T(v.to<acc_t<T>>());
    for_each<1>("fill", t->shape, {t.get()}, [val] __device__(char** p) { *reinterpret_cast<T*>(p[0]) = val; });
  });
}

void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  SX_CUDA_DISPATCH(out->dtype, "where", [&] {
    using T = scalar_t;
    for_each<4>("where", out->shape, {out.get(), cond.get(), a.get(), b.get()}, [] __device__(char** p) {
      *reinterpret_cast<T*>(p[0]) =
          *reinterpret_cast<const bool*>(p[1]) ? *reinterpret_cast<const T*>(p[2]) : *reinterpret_cast<const T*>(p[3]);
    });
  });
}

void clamp(const Tensor& out, const Tensor& x, double lo, double hi, bool has_lo, bool has_hi) {
  SX_CUDA_DISPATCH(x->dtype, "clamp", [&] {
    using T = scalar_t;
    using C = acc_t<T>;
    C a = C(lo), b = C(hi);
    bool l = has_lo, h = has_hi;
    map1<T, T>("clamp", out, x, [a, b, l, h] __device__(C v) { return l && v < a ? a : (h && v > b ? b : v); });
  });
}

}  // namespace sx::cuda
