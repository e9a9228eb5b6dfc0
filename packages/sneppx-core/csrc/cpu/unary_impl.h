// CPU kernels for the unary formula sheet (ops/unary_defs.h): each definition's f, df and d2f instantiated
// per dtype, over contiguous or strided operands. The definitions are spread over the unary_part*.cpp
// files by their UnaryOp index (SX_UNARY_PART), which compile in parallel and fill the table that
// unary_kernels.cpp dispatches through. float16 and bfloat16 compute in float: contiguous rows widen,
// compute and narrow blocks of 64 elements held in registers and L1; other rows run the float32 loops on blocks
// widened into a buffer.
#pragma once
#include <algorithm>

#include "cpu/half_convert.h"
#include "cpu/loops.h"
#include "cpu/unary_kernels.h"
#include "ops/unary_defs.h"

namespace sx::cpu::unary_impl {

// The formulas as named function objects: a float16 and a float32 kernel of one definition then share
// every loop instantiated on them.
template <typename D, typename C> struct Fn {
  C a, b;
  auto operator()(C v) const { return D::template f<C>(v, a, b); }
};
template <typename D, int K, typename C> struct Fixed {
  C operator()(C v) const { return D::template fixed<K, C>(v); }
};
template <typename D, typename C> struct OutOfRange {
  C a, b;  // the parameters, for a range that depends on them (polygamma's n)
  bool operator()(C v) const {
    if constexpr (requires { D::template out_of_range<C>(v, a, b); }) return D::template out_of_range<C>(v, a, b);
    else return D::template out_of_range<C>(v);
  }
};
// The formula for inputs out of the range of the partial one: the definition's `exact` where it has
// one, else the formula in double (<cmath>).
template <typename D, typename C> struct Exact {
  double p0, p1;
  C operator()(C v) const {
    if constexpr (requires { D::exact(0.0); }) return C(D::exact(double(v)));
    else return C(D::template f<double>(double(v), p0, p1));
  }
};
template <typename D, typename C> struct Df {
  C a, b;
  C operator()(C v) const { return D::template df<C>(v, a, b); }
};
template <typename D, typename C> struct D2f {
  C a, b;
  C operator()(C v) const { return D::template d2f<C>(v, a, b); }
};
struct Never {
  template <typename C> bool operator()(C) const { return false; }
};

constexpr int64_t kBlk = 512;  // elements of a block (the contiguous and buffered loops): it stays in L1

// The contiguous inner loops, compiled on their own so that each vectorises like a plain loop.
// `bad(v)` marks inputs where `f` is out of its range (see out_of_range in ops/unary_defs.h); the loop
// only notes whether there were any, and a second pass computes those elements with `exact`. Both run
// block by block (kBlk elements), so that a rare out-of-range input costs a rescan of its block only; a
// formula without a range runs one plain loop per row.
// m rows of n elements, each operand's rows oo and oa elements apart.
template <typename O, typename T, typename F, typename B, typename E>
[[gnu::noinline, gnu::flatten]] void map1_contig(O* __restrict o, const T* __restrict a, int64_t n, F f, B bad, E exact,
                                                 int64_t m = 1, int64_t oo = 0, int64_t oa = 0) {
  using C = acc_t<T>;
  for (int64_t r = 0; r < m; ++r, o += oo, a += oa) {
    if constexpr (std::is_same_v<B, Never>) {
      for (int64_t i = 0; i < n; ++i) o[i] = O(f(load<C>(a, i)));
      continue;
    }
    for (int64_t i0 = 0; i0 < n; i0 += kBlk) {
      const int64_t k = std::min(kBlk, n - i0);
      O* __restrict ob = o + i0;
      const T* __restrict ab = a + i0;
      int any = 0;
      for (int64_t i = 0; i < k; ++i) {
        C v = load<C>(ab, i);
        ob[i] = O(f(v));
        any |= int(bad(v));
      }
      if (any)
        for (int64_t i = 0; i < k; ++i)
          if (bad(C(ab[i]))) ob[i] = O(exact(C(ab[i])));
    }
  }
}
// map1_contig written into its input: blocks of L1 size, each checked for out-of-range inputs before
// it is overwritten (the check folds away for formulas without a range).
template <typename T, typename F, typename B, typename E>
[[gnu::noinline, gnu::flatten]] void map1_inplace(T* o, int64_t n, F f, B bad, E exact) {
  using C = acc_t<T>;
  for (int64_t i0 = 0; i0 < n; i0 += kBlk) {
    int64_t m = std::min(kBlk, n - i0);
    T* p = o + i0;
    int any = 0;
    for (int64_t i = 0; i < m; ++i) any |= int(bad(load<C>(p, i)));
    if (!any) {
      for (int64_t i = 0; i < m; ++i) p[i] = T(f(load<C>(p, i)));
    } else {
      for (int64_t i = 0; i < m; ++i) p[i] = bad(C(p[i])) ? T(exact(C(p[i]))) : T(f(C(p[i])));
    }
  }
}
// map1_contig for float16 / bfloat16 input (and output of the same dtype, or bool): blocks of 64 elements
// widened into registers and L1, computed by a loop that vectorises whatever the formula (out-of-range
// elements recomputed with `exact`), and narrowed. A block is read before any of it is written, so in
// place is safe.
template <typename O, typename T, typename F, typename B, typename E>
[[gnu::noinline, gnu::flatten]] void map1_lowp_contig(O* o, const T* a, int64_t n, F f, B bad, E exact) {
  constexpr int64_t kB = 64;
  auto block = [&](int64_t i, auto k) {  // k: kB as a constant for whole blocks (no loop tails), else the rest
    float v[kB], r[kB];
    widen_run(a + i, v, k);
    int any = 0;
    for (int64_t j = 0; j < k; ++j) {
      r[j] = float(f(v[j]));
      any |= int(bad(v[j]));
    }
    if (any)
      for (int64_t j = 0; j < k; ++j)
        if (bad(v[j])) r[j] = float(exact(v[j]));
    if constexpr (kLowp<O>) narrow_run(r, o + i, k);
    else for (int64_t j = 0; j < k; ++j) o[i + j] = O(r[j]);
  };
  int64_t i = 0;
  for (; i + kB <= n; i += kB) block(i, std::integral_constant<int64_t, kB>{});
  if (i < n) block(i, n - i);
}
template <typename T, typename F>
[[gnu::noinline, gnu::flatten]] void map2_contig(T* __restrict o, const T* __restrict g, const T* __restrict x, int64_t n,
                                                 F h) {
  using C = acc_t<T>;
  for (int64_t i = 0; i < n; ++i) o[i] = T(C(g[i]) * h(C(x[i])));
}

// Rows that are strided, or in place into another dtype, go through the contiguous loops in blocks
// copied to L1 buffers (float16 / bfloat16 widened to float, the type their formulas compute in): a
// block of the input is read whole before any of its results is written, so in place is safe.
// Contiguous float16 / bfloat16 rows take map1_lowp_contig.
template <typename T> using buf_t = std::conditional_t<kLowp<T>, float, T>;

// n elements s bytes apart into dst, converted to D.
template <typename D, typename T>
inline void gather(D* __restrict dst, const char* src, int64_t s, int64_t n) {
  const T* a = reinterpret_cast<const T*>(src);
  if constexpr (kLowp<T> && std::is_same_v<D, float>) {
    if (s == int64_t(sizeof(T))) return widen_run(a, dst, n);
  }
  if (s == int64_t(sizeof(T))) {
    for (int64_t i = 0; i < n; ++i) dst[i] = D(a[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = D(*reinterpret_cast<const T*>(src + i * s));
  }
}
template <typename O, typename S>
inline void scatter(char* dst, int64_t s, const S* __restrict src, int64_t n) {
  O* o = reinterpret_cast<O*>(dst);
  if constexpr (kLowp<O> && std::is_same_v<S, float>) {
    if (s == int64_t(sizeof(O))) return narrow_run(src, o, n);
  }
  if (s == int64_t(sizeof(O))) {
    for (int64_t i = 0; i < n; ++i) o[i] = O(src[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) *reinterpret_cast<O*>(dst + i * s) = O(src[i]);
  }
}

// o[i] = f(x[i]) over two operands of one shape (elements where bad(x) holds: exact(x)).
template <typename O, typename T, typename F, typename B, typename E>
void map1(const Tensor& out, const Tensor& x, F f, B bad, E exact) {
  using TB = buf_t<T>;
  using OB = std::conditional_t<kLowp<T> && !std::is_same_v<O, bool>, float, O>;
  for_each_rows<2>(out->shape, {out.get(), x.get()}, [&](char** p, const int64_t* s, int64_t n, const int64_t* os,
                                                         int64_t m) {
    const bool contig = s[0] == int64_t(sizeof(O)) && s[1] == int64_t(sizeof(T));
    if constexpr (!kLowp<T>) {
      if (contig && static_cast<const void*>(p[0]) != p[1]) {  // distinct operands: all m rows in one call
        map1_contig<O, T>(reinterpret_cast<O*>(p[0]), reinterpret_cast<const T*>(p[1]), n, f, bad, exact, m,
                          os[0] / int64_t(sizeof(O)), os[1] / int64_t(sizeof(T)));
        return;
      }
      if constexpr (std::is_same_v<O, T>) {
        if (contig && os[0] == os[1]) {  // in place
          for (int64_t r = 0; r < m; ++r) map1_inplace<T>(reinterpret_cast<T*>(p[0] + r * os[0]), n, f, bad, exact);
          return;
        }
      }
    }
    if constexpr (kLowp<T>) {
      if (contig) {
        for (int64_t r = 0; r < m; ++r)
          map1_lowp_contig<O, T>(reinterpret_cast<O*>(p[0] + r * os[0]), reinterpret_cast<const T*>(p[1] + r * os[1]),
                                 n, f, bad, exact);
        return;
      }
    }
    TB in[kBlk];
    OB res[kBlk];
    for (int64_t r = 0; r < m; ++r)
      for (int64_t i = 0; i < n; i += kBlk) {
        const int64_t k = std::min(kBlk, n - i);
        char* o = p[0] + r * os[0] + i * s[0];
        gather<TB, T>(in, p[1] + r * os[1] + i * s[1], s[1], k);
        if constexpr (std::is_same_v<OB, O>) {
          if (s[0] == int64_t(sizeof(O))) {
            map1_contig<O, TB>(reinterpret_cast<O*>(o), in, k, f, bad, exact);
            continue;
          }
        }
        map1_contig<OB, TB>(res, in, k, f, bad, exact);
        scatter<O>(o, s[0], res, k);
      }
  });
}

// o[i] = g[i] * h(x[i]) over three operands of one shape and dtype.
template <typename T, typename F>
void map2(const Tensor& out, const Tensor& g, const Tensor& x, F h) {
  using TB = buf_t<T>;
  for_each<3>(out->shape, {out.get(), g.get(), x.get()}, [&](char** p, const int64_t* s, int64_t n) {
    constexpr int64_t st = sizeof(T);
    if constexpr (!kLowp<T>) {
      if (s[0] == st && s[1] == st && s[2] == st && p[0] != p[1] && p[0] != p[2]) {
        map2_contig<T>(reinterpret_cast<T*>(p[0]), reinterpret_cast<const T*>(p[1]),
                       reinterpret_cast<const T*>(p[2]), n, h);
        return;
      }
    }
    TB gb[kBlk], xb[kBlk], res[kBlk];
    for (int64_t i = 0; i < n; i += kBlk) {
      const int64_t k = std::min(kBlk, n - i);
      gather<TB, T>(gb, p[1] + i * s[1], s[1], k);
      gather<TB, T>(xb, p[2] + i * s[2], s[2], k);
      map2_contig<TB>(res, gb, xb, k, h);
      scatter<T>(p[0] + i * s[0], s[0], res, k);
    }
  });
}

// float16 / bfloat16 ops that only move the sign bit (Neg, Abs): (bits & keep) ^ flip, any layout.
template <typename T>
[[gnu::noinline]] void sign_bits(const Tensor& out, const Tensor& x, uint16_t keep, uint16_t flip) {
  for_each_rows<2>(out->shape, {out.get(), x.get()}, [&](char** p, const int64_t* s, int64_t n, const int64_t* os,
                                                         int64_t m) {
    for (int64_t r = 0; r < m; ++r) {
      char* o = p[0] + r * os[0];
      const char* a = p[1] + r * os[1];
      if (s[0] == int64_t(sizeof(T)) && s[1] == int64_t(sizeof(T))) {
        T* ot = reinterpret_cast<T*>(o);
        const T* at = reinterpret_cast<const T*>(a);
        for (int64_t i = 0; i < n; ++i) ot[i].x = uint16_t((at[i].x & keep) ^ flip);
      } else {
        for (int64_t i = 0; i < n; ++i)
          reinterpret_cast<T*>(o + i * s[0])->x = uint16_t((reinterpret_cast<const T*>(a + i * s[1])->x & keep) ^ flip);
      }
    }
  });
}

// A definition with fixed formulas for some parameter values (PowScalar: x ** c for the exponents of
// `half_steps`) runs the formula picked once for the whole call; returns false for other values.
template <typename D, typename T>
bool fixed_form(const Tensor& out, const Tensor& x, double p0) {
  using C = acc_t<T>;
  auto run = [&]<int K>() {
    map1<T, T>(out, x, Fixed<D, K, C>{}, Never{}, Fixed<D, K, C>{});
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

template <typename D>
constexpr bool kHasRange = requires(float v) { D::template out_of_range<float>(v); } ||
                           requires(float v) { D::template out_of_range<float>(v, v, v); };

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
      if constexpr (kLowp<T> && requires { D::sign_flip; }) {
        sign_bits<T>(out, x, D::sign_keep, D::sign_flip);
        return;
      }
      if constexpr (std::is_floating_point_v<C> && requires { D::half_steps(0.0); }) {
        if (fixed_form<D, T>(out, x, p0)) return;
      }
      Fn<D, C> f{C(p0), C(p1)};
      if constexpr (D::rule == DRule::Bool) {
        map1<bool, T>(out, x, f, Never{}, f);
      } else if constexpr (kHasRange<D> && (std::is_same_v<C, float> || std::is_same_v<C, double>)) {
        map1<T, T>(out, x, f, OutOfRange<D, C>{C(p0), C(p1)}, Exact<D, C>{p0, p1});
      } else {
        map1<T, T>(out, x, f, Never{}, f);
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
      if (order == 1) {
        map2<T>(gx, g, x, Df<D, C>{C(p0), C(p1)});
      } else if constexpr (kHasD2f<D>) {
        map2<T>(gx, g, x, D2f<D, C>{C(p0), C(p1)});
      }
    });
  } else {
    throw RuntimeError(msg("[", D::name, "] has no fused gradient kernel"));
  }
}

// Fills the table entries of the definitions whose UnaryOp index is `part` modulo kUnaryParts.
template <int part>
bool register_part() {
  auto add = [&]<typename D>(UnaryOp op) {
    unary_kernel_table()[int(op)] = {&unary_def_cpu<D>, &unary_grad_def_cpu<D>};
  };
#define SX_UNARY_PART_ENTRY(D) \
  if constexpr (int(UnaryOp::D) % kUnaryParts == part) add.template operator()<unary_def::D>(UnaryOp::D);
  SX_UNARY_OPS(SX_UNARY_PART_ENTRY)
#undef SX_UNARY_PART_ENTRY
  return true;
}

}  // namespace sx::cpu::unary_impl

// In a unary_part*.cpp: registers that part's definitions when the module loads.
#define SX_UNARY_PART(part) \
  [[maybe_unused]] static const bool sx_unary_part_registered = ::sx::cpu::unary_impl::register_part<part>();
