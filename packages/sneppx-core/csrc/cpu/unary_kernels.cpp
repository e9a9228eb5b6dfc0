// CPU kernels for the unary formula sheet: each definition's f, df and d2f instantiated per dtype,
// over contiguous or strided operands, and registered in the CPU kernel table.
#include <algorithm>

#include "cpu/loops.h"
#include "ops/unary_defs.h"

namespace sx::cpu {
namespace {

// The contiguous inner loops, compiled on their own so that each vectorises like a plain loop.
// `bad(v)` marks inputs where `f` is out of its range (see out_of_range in ops/unary_defs.h); the loop
// only notes whether there were any, and a second pass computes those elements with `exact`.
// m rows of n elements, each operand's rows oo and oa elements apart.
template <typename O, typename T, typename F, typename B, typename E>
[[gnu::noinline, gnu::flatten]] void map1_contig(O* __restrict o, const T* __restrict a, int64_t n, F f, B bad, E exact,
                                                 int64_t m = 1, int64_t oo = 0, int64_t oa = 0) {
  using C = acc_t<T>;
  for (int64_t r = 0; r < m; ++r, o += oo, a += oa) {
    int any = 0;
    for (int64_t i = 0; i < n; ++i) {
      C v = C(a[i]);
      o[i] = O(f(v));
      any |= int(bad(v));
    }
    if (any)
      for (int64_t i = 0; i < n; ++i)
        if (bad(C(a[i]))) o[i] = O(exact(C(a[i])));
  }
}
// map1_contig written into its input: blocks of L1 size, each checked for out-of-range inputs before
// it is overwritten (the check folds away for formulas without a range).
template <typename T, typename F, typename B, typename E>
[[gnu::noinline, gnu::flatten]] void map1_inplace(T* o, int64_t n, F f, B bad, E exact) {
  using C = acc_t<T>;
  constexpr int64_t kBlk = 512;
  for (int64_t i0 = 0; i0 < n; i0 += kBlk) {
    int64_t m = std::min(kBlk, n - i0);
    T* p = o + i0;
    int any = 0;
    for (int64_t i = 0; i < m; ++i) any |= int(bad(C(p[i])));
    if (!any) {
      for (int64_t i = 0; i < m; ++i) p[i] = T(f(C(p[i])));
    } else {
      for (int64_t i = 0; i < m; ++i) p[i] = bad(C(p[i])) ? T(exact(C(p[i]))) : T(f(C(p[i])));
    }
  }
}
template <typename T, typename F>
[[gnu::noinline, gnu::flatten]] void map2_contig(T* __restrict o, const T* __restrict g, const T* __restrict x, int64_t n, F h) {
  using C = acc_t<T>;
  for (int64_t i = 0; i < n; ++i) o[i] = T(C(g[i]) * h(C(x[i])));
}

// o[i] = f(x[i]) over two operands of one shape (elements where bad(x) holds: exact(x)).
template <typename O, typename T, typename F, typename B, typename E>
void map1(const Tensor& out, const Tensor& x, F f, B bad, E exact) {
  using C = acc_t<T>;
  for_each_rows<2>(out->shape, {out.get(), x.get()}, [&](char** p, const int64_t* s, int64_t n, const int64_t* os,
                                                         int64_t m) {
    const bool contig = s[0] == int64_t(sizeof(O)) && s[1] == int64_t(sizeof(T));
    if (contig && static_cast<const void*>(p[0]) != p[1]) {  // distinct operands: all m rows in one call
      map1_contig<O, T>(reinterpret_cast<O*>(p[0]), reinterpret_cast<const T*>(p[1]), n, f, bad, exact, m,
                        os[0] / int64_t(sizeof(O)), os[1] / int64_t(sizeof(T)));
      return;
    }
    for (int64_t r = 0; r < m; ++r) {
      O* o = reinterpret_cast<O*>(p[0] + r * os[0]);
      const T* a = reinterpret_cast<const T*>(p[1] + r * os[1]);
      if (contig && static_cast<const void*>(o) != a) {
        map1_contig<O, T>(o, a, n, f, bad, exact);
      } else if (contig) {  // in place
        if constexpr (std::is_same_v<O, T>) {
          map1_inplace<T>(o, n, f, bad, exact);
        } else {
          constexpr int64_t kBlk = 512;  // in place into another dtype: blocks of the input go through a copy
          T buf[kBlk];
          for (int64_t i = 0; i < n; i += kBlk) {
            int64_t k = std::min(kBlk, n - i);
            std::copy(a + i, a + i + k, buf);
            map1_contig<O, T>(o + i, buf, k, f, bad, exact);
          }
        }
      } else {
        for (int64_t i = 0; i < n; ++i) {
          C v = C(*reinterpret_cast<const T*>(reinterpret_cast<const char*>(a) + i * s[1]));
          *reinterpret_cast<O*>(reinterpret_cast<char*>(o) + i * s[0]) = bad(v) ? O(exact(v)) : O(f(v));
        }
      }
    }
  });
}

// o[i] = g[i] * h(x[i]) over three operands of one shape and dtype.
template <typename T, typename F>
void map2(const Tensor& out, const Tensor& g, const Tensor& x, F h) {
  using C = acc_t<T>;
  for_each<3>(out->shape, {out.get(), g.get(), x.get()}, [&](char** p, const int64_t* s, int64_t n) {
    constexpr int64_t st = sizeof(T);
    T* o = reinterpret_cast<T*>(p[0]);
    const T* gp = reinterpret_cast<const T*>(p[1]);
    const T* xp = reinterpret_cast<const T*>(p[2]);
    if (s[0] == st && s[1] == st && s[2] == st && o != gp && o != xp) {
      map2_contig<T>(o, gp, xp, n, h);
    } else if (s[0] == st && s[1] == st && s[2] == st) {
      for (int64_t i = 0; i < n; ++i) o[i] = T(C(gp[i]) * h(C(xp[i])));
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<T*>(p[0] + i * s[0]) = T(C(*reinterpret_cast<const T*>(p[1] + i * s[1])) *
                                                  h(C(*reinterpret_cast<const T*>(p[2] + i * s[2]))));
    }
  });
}

// A definition with fixed formulas for some parameter values (PowScalar: x ** c for the exponents of
// `half_steps`) runs the formula picked once for the whole call; returns false for other values.
template <typename D, typename T>
bool fixed_form(const Tensor& out, const Tensor& x, double p0) {
  using C = acc_t<T>;
  auto run = [&]<int K>() {
    auto f = [](C v) { return D::template fixed<K, C>(v); };
    map1<T, T>(out, x, f, [](C) { return false; }, f);
    return true;
  };
  switch (D::half_steps(p0)) {
    case 0: return run.template operator()<0>();
    case 1: return run.template operator()<1>();
    case -1: return run.template operator()<-1>();
    case 2: return run.template operator()<2>();
    case -2: return run.template operator()<-2>();
    case 3: return run.template operator()<3>();
    case -3: return run.template operator()<-3>();
    case 5: return run.template operator()<5>();
    case 7: return run.template operator()<7>();
    case 4: return run.template operator()<4>();
    case -4: return run.template operator()<-4>();
    case 6: return run.template operator()<6>();
    case 8: return run.template operator()<8>();
    default: return false;
  }
}

template <typename D> constexpr bool kHasRange = requires(float v) { D::template out_of_range<float>(v); };

// One function per definition (not inlined into the dispatcher), so that each gets the compiler's
// full inlining budget and its loop vectorises.
template <typename D>
[[gnu::noinline]] void unary_def_cpu(const Tensor& out, const Tensor& x, double p0, double p1) {
  SX_DISPATCH_ALL(x->dtype, D::name, [&] {
    using T = scalar_t;
    using C = acc_t<T>;
    if constexpr (D::rule == DRule::Float && !std::is_floating_point_v<C>) {
      throw TypeError(msg("[", D::name, "] kernel called with ", dtype_name(x->dtype)));
    } else {
      if constexpr (std::is_floating_point_v<C> && requires { D::half_steps(0.0); }) {
        if (fixed_form<D, T>(out, x, p0)) return;
      }
      C a = C(p0), b = C(p1);
      auto f = [a, b](C v) { return D::template f<C>(v, a, b); };
      if constexpr (D::rule == DRule::Bool) {
        map1<bool, T>(out, x, f, [](C) { return false; }, f);
      } else if constexpr (kHasRange<D> && std::is_same_v<C, float>) {
        auto bad = [](C v) { return D::template out_of_range<C>(v); };
        auto exact = [p0, p1](C v) { return C(D::template f<double>(double(v), p0, p1)); };
        map1<T, T>(out, x, f, bad, exact);
      } else {
        map1<T, T>(out, x, f, [](C) { return false; }, f);
      }
    }
  });
}

template <typename D>
[[gnu::noinline]] void unary_grad_def_cpu(const Tensor& gx, const Tensor& g, const Tensor& x, double p0, double p1,
                                          int order) {
  if constexpr (kFusedGrad<D>) {
    SX_DISPATCH_FLOAT(x->dtype, D::name, [&] {
      using T = scalar_t;
      using C = acc_t<T>;
      C a = C(p0), b = C(p1);
      if (order == 1) {
        map2<T>(gx, g, x, [a, b](C v) { return D::template df<C>(v, a, b); });
      } else if constexpr (kHasD2f<D>) {
        map2<T>(gx, g, x, [a, b](C v) { return D::template d2f<C>(v, a, b); });
      }
    });
  } else {
    throw RuntimeError(msg("[", D::name, "] has no fused gradient kernel"));
  }
}

void unary_cpu(UnaryOp op, const Tensor& out, const Tensor& x, double p0, double p1) {
  visit_unary(op, [&]<typename D>() { unary_def_cpu<D>(out, x, p0, p1); });
}

void unary_grad_cpu(UnaryOp op, const Tensor& gx, const Tensor& g, const Tensor& x, double p0, double p1, int order) {
  visit_unary(op, [&]<typename D>() { unary_grad_def_cpu<D>(gx, g, x, p0, p1, order); });
}

}  // namespace

SX_REGISTER_KERNEL(kern::unary, CPU, &unary_cpu);
SX_REGISTER_KERNEL(kern::unary_grad, CPU, &unary_grad_cpu);

}  // namespace sx::cpu
