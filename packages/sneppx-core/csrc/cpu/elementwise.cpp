#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "cpu/copy_run.h"
#include "cpu/transpose.h"
#include "cpu/half_convert.h"
#include "cpu/kernels.h"
#include "cpu/loops.h"
#include "ops/binary_math.h"
#include "ops/unary_defs.h"
#include "ops/kernels.h"

namespace sx::cpu {
namespace {
using namespace bm;

// Runs o = f(x, y) over three operands with fast paths for contiguous and scalar operands; f sees
// the operands as C (acc_t<T> unless given).
template <typename O, typename T, typename C = acc_t<T>, typename F>
void run2(const Tensor& out, const Tensor& a, const Tensor& b, F f) {
  for_each_rows<3>(out->shape, {out.get(), a.get(), b.get()},
                   [&](char** p, const int64_t* s, int64_t n, const int64_t* os, int64_t m) {
                     binary_run<O, T, C>(p, s, n, os, m, f);
                   });
}

// run2 for a float formula `f` valid where bad(x, y) is false: the loops note whether any element
// was out of range, and a second pass over the chunk computes those with `exact`.
template <typename F, typename B, typename E>
[[gnu::noinline]] void checked2_contig(float* __restrict o, const float* x, int64_t sx, const float* y, int64_t sy,
                                       int64_t n, F f, B bad, E exact) {
  int any = 0;
  if (sx == 1 && sy == 1) {
    for (int64_t i = 0; i < n; ++i) {
      o[i] = f(x[i], y[i]);
      any |= int(bad(x[i], y[i]));
    }
  } else if (sx == 1) {
    float yv = *y;
    for (int64_t i = 0; i < n; ++i) {
      o[i] = f(x[i], yv);
      any |= int(bad(x[i], yv));
    }
  } else {
    float xv = *x;
    for (int64_t i = 0; i < n; ++i) {
      o[i] = f(xv, y[i]);
      any |= int(bad(xv, y[i]));
    }
  }
  if (any)
    for (int64_t i = 0; i < n; ++i)
      if (bad(x[i * sx], y[i * sy])) o[i] = exact(x[i * sx], y[i * sy]);
}

template <typename F, typename B, typename E>
void run2_checked(const Tensor& out, const Tensor& a, const Tensor& b, F f, B bad, E exact) {
  for_each<3>(out->shape, {out.get(), a.get(), b.get()}, [&](char** p, const int64_t* s, int64_t n) {
    float* o = reinterpret_cast<float*>(p[0]);
    const float* x = reinterpret_cast<const float*>(p[1]);
    const float* y = reinterpret_cast<const float*>(p[2]);
    constexpr int64_t st = sizeof(float);
    bool alias = static_cast<const void*>(o) == x || static_cast<const void*>(o) == y;
    if (!alias && s[0] == st && (s[1] == st || s[1] == 0) && (s[2] == st || s[2] == 0) && (s[1] | s[2]) != 0) {
      checked2_contig(o, x, s[1] / st, y, s[2] / st, n, f, bad, exact);
    } else {
      for (int64_t i = 0; i < n; ++i) {
        float xv = *reinterpret_cast<const float*>(p[1] + i * s[1]);
        float yv = *reinterpret_cast<const float*>(p[2] + i * s[2]);
        *reinterpret_cast<float*>(p[0] + i * s[0]) = bad(xv, yv) ? exact(xv, yv) : f(xv, yv);
      }
    }
  });
}

// Integer a ** b by squaring, in blocks: one pass over the block per bit of the block's largest
// exponent, each a plain loop that vectorises (products wrap, as in two's complement). Negative
// exponents give 1 for a == 1, +-1 for a == -1 and 0 otherwise, as in PyTorch.
template <typename T>
void run_ipow(const Tensor& out, const Tensor& a, const Tensor& b) {
  using U = std::make_unsigned_t<T>;
  for_each<3>(out->shape, {out.get(), a.get(), b.get()}, [&](char** p, const int64_t* s, int64_t n) {
    constexpr int64_t kBlk = 256;
    U r[kBlk], base[kBlk], e[kBlk];
    for (int64_t i0 = 0; i0 < n; i0 += kBlk) {
      int64_t m = std::min(kBlk, n - i0);
      U top = 0;
      for (int64_t i = 0; i < m; ++i) {
        T x = *reinterpret_cast<const T*>(p[1] + (i0 + i) * s[1]), y = *reinterpret_cast<const T*>(p[2] + (i0 + i) * s[2]);
        r[i] = 1;
        base[i] = U(x);
        e[i] = y < T(0) ? U(0) : U(y);
        top |= e[i];
      }
      for (; top; top >>= 1) {
        for (int64_t i = 0; i < m; ++i) {
          r[i] *= (e[i] & 1) ? base[i] : U(1);
          base[i] *= base[i];
          e[i] >>= 1;
        }
      }
      for (int64_t i = 0; i < m; ++i) {
        T x = *reinterpret_cast<const T*>(p[1] + (i0 + i) * s[1]), y = *reinterpret_cast<const T*>(p[2] + (i0 + i) * s[2]);
        T v = T(r[i]);
        if (y < T(0)) v = x == T(1) ? T(1) : (x == T(-1) ? ((y & 1) ? T(-1) : T(1)) : T(0));
        *reinterpret_cast<T*>(p[0] + (i0 + i) * s[0]) = v;
      }
    }
  });
}

// Python's remainder of floats: for |x / y| < 2^23 (and finite y) the quotient t = trunc(x / y)
// computed in double is exact (x and y have 24-bit significands, so x / y is never within
// double rounding of an integer it does not reach) and x - t y is exact, so this is fmod exactly;
// other arguments (y = 0, inf, NaN, huge quotients) go to std::fmod.
inline bool rem_out_of_range(float x, float y) {
  return !(std::fabs(x) < 8388608.0f * std::fabs(y) && std::fabs(y) < INFINITY);
}
inline float rem_fast(float x, float y) {
  double t = std::trunc(double(x) / double(y));
  float r = float(double(x) - t * double(y));
  return (r != 0.0f && ((r < 0.0f) != (y < 0.0f))) ? r + y : r;
}

// C's remainder (fmod) by the same exact steps, valid where rem_fast's are; its sign is always x's.
inline float fmod_fast(float x, float y) {
  double t = std::trunc(double(x) / double(y));
  return std::copysign(float(double(x) - t * double(y)), x);
}

// int32 floor division, Python remainder and fmod in double, where they vectorise (integer division does
// not). For |x|, |y| <= 2^31 the quotient x / y rounded to double never reaches an integer it does not
// equal (a quotient that is not an integer is at least 1/|y| from one; the rounding error is below
// 2^-22/|y|), so trunc and floor of it are exact, and so is x - q y. A zero divisor (rejected by the op
// before the kernel runs) gives 0, as the integer kernels do.
inline double i32_floordiv(double x, double y) {
  const double q = std::floor(x / y);
  return y == 0 ? 0.0 : (q == 2147483648.0 ? -2147483648.0 : q);  // INT_MIN // -1 wraps, as in PyTorch
}
inline double i32_fmod(double x, double y) { return y == 0 ? 0.0 : x - std::trunc(x / y) * y; }
inline double i32_pymod(double x, double y) {
  const double r = i32_fmod(x, y);
  return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
}

// A contiguous float16 / bfloat16 run of run1 (output of the same dtype): blocks widened to float, f
// over them, narrowed back (converting element by element, clamp of float16 ran at a twentieth of
// PyTorch's speed). A block is read before it is written, so in place is safe.
template <typename T, typename F>
[[gnu::noinline, gnu::flatten]] void run1_lowp(T* o, const T* x, int64_t n, F f) {
  constexpr int64_t kB = 256;
  float v[kB];
  for (int64_t i = 0; i < n; i += kB) {
    const int64_t k = std::min(kB, n - i);
    widen_run(x + i, v, k);
    for (int64_t j = 0; j < k; ++j) v[j] = float(f(v[j]));
    narrow_run(v, o + i, k);
  }
}

// out = O(f(C(a))) elementwise (C: the type f takes, by default a's compute type).
template <typename O, typename T, typename C = acc_t<T>, typename F>
void run1(const Tensor& out, const Tensor& a, F f) {
  for_each<2>(out->shape, {out.get(), a.get()}, [&](char** p, const int64_t* s, int64_t n) {
    O* o = reinterpret_cast<O*>(p[0]);
    const T* x = reinterpret_cast<const T*>(p[1]);
    if constexpr (kLowp<T> && std::is_same_v<O, T> && std::is_same_v<C, float>) {
      if (s[0] == int64_t(sizeof(O)) && s[1] == int64_t(sizeof(T))) return run1_lowp(o, x, n, f);
    }
    if (s[0] == int64_t(sizeof(O)) && s[1] == int64_t(sizeof(T))) {
      for (int64_t i = 0; i < n; ++i) o[i] = O(f(load<C>(x, i)));
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<O*>(p[0] + i * s[0]) = O(f(load<C>(reinterpret_cast<const T*>(p[1] + i * s[1]), 0)));
    }
  });
}

// Bitwise ops compute in the storage type (full vector width for int32 and uint8); the results are
// the same as in int64 truncated, shifts included (counts at or past the width give 0 or the sign fill).
template <typename T>
void bitwise_t(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  switch (op) {
    case BinaryOp::BitAnd: return run2<T, T, T>(out, a, b, [](T x, T y) { return T(x & y); });
    case BinaryOp::BitOr: return run2<T, T, T>(out, a, b, [](T x, T y) { return T(x | y); });
    case BinaryOp::BitXor: return run2<T, T, T>(out, a, b, [](T x, T y) { return T(x ^ y); });
    default:
      if constexpr (!std::is_same_v<T, bool>) {
        if (op == BinaryOp::Shl) return run2<T, T, T>(out, a, b, [](T x, T y) { return shl(x, y); });
        return run2<T, T, T>(out, a, b, [](T x, T y) { return shr(x, y); });
      }
      throw TypeError(msg("[", binary_name(op), "] has no bool kernel"));  // binary() rejects bool shifts first
  }
}

// Ops of two bool tensors computed on bools: through int64, bool's compute type, maximum of two masks
// ran at a twentieth of the speed of x | y.
bool bool_binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  auto run = [&](auto f) { run2<bool, bool, bool>(out, a, b, f); };
  switch (op) {
    case BinaryOp::Add:
    case BinaryOp::Max: run([](bool x, bool y) { return x | y; }); return true;
    case BinaryOp::Mul:
    case BinaryOp::Min: run([](bool x, bool y) { return x & y; }); return true;
    case BinaryOp::Eq: run([](bool x, bool y) { return x == y; }); return true;
    case BinaryOp::Ne: run([](bool x, bool y) { return x != y; }); return true;
    case BinaryOp::Lt: run([](bool x, bool y) { return !x & y; }); return true;
    case BinaryOp::Le: run([](bool x, bool y) { return !x | y; }); return true;
    case BinaryOp::Gt: run([](bool x, bool y) { return x & !y; }); return true;
    case BinaryOp::Ge: run([](bool x, bool y) { return x | !y; }); return true;
    default: return false;
  }
}

template <typename T>
void binary_t(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  using C = acc_t<T>;
  if constexpr (std::is_same_v<T, bool>) {
    if (out->dtype == DType::Bool && bool_binary(op, out, a, b)) return;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (op == BinaryOp::Rem)
      return run2_checked(out, a, b, [](float x, float y) { return rem_fast(x, y); },
                          [](float x, float y) { return rem_out_of_range(x, y); },
                          [](float x, float y) { return pymod(x, y); });
    if (op == BinaryOp::Fmod)
      return run2_checked(out, a, b, [](float x, float y) { return fmod_fast(x, y); },
                          [](float x, float y) { return rem_out_of_range(x, y); },
                          [](float x, float y) { return std::fmod(x, y); });
    if (op == BinaryOp::Pow)
      return run2_checked(out, a, b, [](float x, float y) { return vpow(x, y); },
                          [](float x, float y) { return pow_out_of_range(x, y); },
                          [](float x, float y) { return std::pow(x, y); });
    if (op == BinaryOp::Atan2)
      return run2_checked(out, a, b, [](float y, float x) { return vatan2(y, x); },
                          [](float y, float x) { return atan2_out_of_range(y, x); },
                          [](float y, float x) { return float(std::atan2(double(y), double(x))); });
  }
  switch (op) {
    case BinaryOp::Add: return run2<T, T>(out, a, b, [](C x, C y) { return wadd(x, y); });
    case BinaryOp::Sub: return run2<T, T>(out, a, b, [](C x, C y) { return wsub(x, y); });
    case BinaryOp::Mul: return run2<T, T>(out, a, b, [](C x, C y) { return wmul(x, y); });
    case BinaryOp::Div: return run2<T, T>(out, a, b, [](C x, C y) { return x / y; });
    case BinaryOp::FloorDiv:
      if constexpr (std::is_same_v<T, int32_t>)
        return run2<T, T, double>(out, a, b, [](double x, double y) { return i32_floordiv(x, y); });
      else
        return run2<T, T>(out, a, b, [](C x, C y) { return floordiv(x, y); });
    case BinaryOp::Rem:
      if constexpr (std::is_same_v<T, int32_t>)
        return run2<T, T, double>(out, a, b, [](double x, double y) { return i32_pymod(x, y); });
      else
        return run2<T, T>(out, a, b, [](C x, C y) { return pymod(x, y); });
    case BinaryOp::Fmod:
      if constexpr (std::is_same_v<T, int32_t>)
        return run2<T, T, double>(out, a, b, [](double x, double y) { return i32_fmod(x, y); });
      else
        return run2<T, T>(out, a, b, [](C x, C y) { return cfmod(x, y); });
    case BinaryOp::Pow:
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) return run_ipow<T>(out, a, b);
      return run2<T, T>(out, a, b, [](C x, C y) { return ipow(x, y); });
    case BinaryOp::Max: return run2<T, T>(out, a, b, [](C x, C y) { return vmax(x, y); });
    case BinaryOp::Min: return run2<T, T>(out, a, b, [](C x, C y) { return vmin(x, y); });
    case BinaryOp::Atan2: return run2<T, T>(out, a, b, [](C x, C y) { return C(std::atan2(double(x), double(y))); });
    case BinaryOp::NextAfter:
      if constexpr (kLowp<T>) {  // a step on the 16-bit value, not on its float widening
        return run2<T, T, T>(out, a, b, [](T x, T y) {
          float xf = float(x), yf = float(y);
          T r;
          r.x = next_after_bits16(x.x, y.x, xf != xf, yf != yf, xf < yf, xf == yf);
          return r;
        });
      } else if constexpr (std::is_floating_point_v<T>) {
        return run2<T, T>(out, a, b, [](C x, C y) { return next_after(x, y); });
      }
      throw TypeError("[nextafter] has no integer kernel");  // binary() rejects integers first
    case BinaryOp::Gcd:
    case BinaryOp::Lcm:
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        if (op == BinaryOp::Gcd) return run2<T, T, T>(out, a, b, [](T x, T y) { return gcd(x, y); });
        return run2<T, T, T>(out, a, b, [](T x, T y) { return lcm(x, y); });
      }
      // binary() rejects these first
      throw TypeError(msg("[", binary_name(op), "] has no kernel for ", dtype_name(out->dtype)));
    case BinaryOp::BitAnd:
    case BinaryOp::BitOr:
    case BinaryOp::BitXor:
    case BinaryOp::Shl:
    case BinaryOp::Shr:
      if constexpr (std::is_integral_v<C>) return bitwise_t<T>(op, out, a, b);
      throw TypeError(msg("[", binary_name(op), "] has no float kernel"));  // binary() rejects floats first
    case BinaryOp::Eq: return run2<bool, T>(out, a, b, [](C x, C y) { return x == y; });
    case BinaryOp::Ne: return run2<bool, T>(out, a, b, [](C x, C y) { return x != y; });
    case BinaryOp::Lt: return run2<bool, T>(out, a, b, [](C x, C y) { return x < y; });
    case BinaryOp::Le: return run2<bool, T>(out, a, b, [](C x, C y) { return x <= y; });
    case BinaryOp::Gt: return run2<bool, T>(out, a, b, [](C x, C y) { return x > y; });
    case BinaryOp::Ge: return run2<bool, T>(out, a, b, [](C x, C y) { return x >= y; });
    case BinaryOp::And: return run2<bool, T>(out, a, b, [](C x, C y) { return (x != C(0)) && (y != C(0)); });
    case BinaryOp::Or: return run2<bool, T>(out, a, b, [](C x, C y) { return (x != C(0)) || (y != C(0)); });
    case BinaryOp::Xor: return run2<bool, T>(out, a, b, [](C x, C y) { return (x != C(0)) != (y != C(0)); });
  }
}

// A copy whose source is read across its rows (a transpose in the last two dims after coalescing)
// runs over square tiles, so that the lines read from the source and written to the destination
// stay in cache while a tile is done. Returns false for other layouts.
template <typename D>
bool copy_transposed(const Tensor& dst, const Tensor& src) {
  Geometry<2> g = coalesce<2>(dst->shape, {dst.get(), src.get()});
  int64_t nd = int64_t(g.shape.size());
  constexpr int64_t es = sizeof(D), B = 32;
  if (nd < 2) return false;
  const Shape &ds = g.strides[0], &ss = g.strides[1];
  int64_t rows = g.shape[nd - 2], cols = g.shape[nd - 1];
  if (ds[nd - 1] != es || ss[nd - 2] != es || ss[nd - 1] == es || rows < 8 || cols < 8) return false;
  int64_t rt = (rows + B - 1) / B, ct = (cols + B - 1) / B, outer = 1;
  for (int64_t d = 0; d < nd - 2; ++d) outer *= g.shape[d];
  char* dbase = dst->raw();
  const char* sbase = src->raw();
  parallel_for(outer * rt * ct, std::max<int64_t>(1, kGrain / (B * B)), [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      int64_t o = t / (rt * ct), r0 = (t / ct) % rt * B, c0 = t % ct * B;
      int64_t doff = 0, soff = 0;
      for (int64_t d = nd - 3, rem = o; d >= 0; --d) {
        int64_t i = rem % g.shape[d];
        rem /= g.shape[d];
        doff += i * ds[d];
        soff += i * ss[d];
      }
      transpose_tile<D>(dbase + doff, ds[nd - 2], sbase + soff, ss[nd - 1], r0, std::min(rows, r0 + B), c0,
                        std::min(cols, c0 + B));
    }
  });
  return true;
}

// m rows of len elements, di bytes apart, each filled with the one element at sp + i * si (a source
// broadcast along the innermost dim). Short rows get a loop of fixed length.
template <typename D>
void spread_rows(char* dp, const char* sp, int64_t m, int64_t di, int64_t si, int64_t len) {
  auto rows = [&](auto k) {
    constexpr int64_t K = decltype(k)::value;
    const int64_t n = K ? K : len;
    for (int64_t i = 0; i < m; ++i) {
      D v;
      std::memcpy(&v, sp + i * si, sizeof(D));
      D* d = reinterpret_cast<D*>(dp + i * di);
      for (int64_t j = 0; j < n; ++j) d[j] = v;
    }
  };
  switch (len) {
    case 2: return rows(std::integral_constant<int64_t, 2>{});
    case 3: return rows(std::integral_constant<int64_t, 3>{});
    case 4: return rows(std::integral_constant<int64_t, 4>{});
    default: return rows(std::integral_constant<int64_t, 0>{});
  }
}

// A copy whose innermost dimension is contiguous on both sides while the outer ones are permuted
// (the head split of attention, x.transpose(1, 2).contiguous()): whole rows are copied, and the outer
// index advances by pointer increments instead of recomputing both offsets for every row. A source
// broadcast along the innermost dim (stride 0: x.unsqueeze(-1).expand(..., k)) fills each row with its
// element; the generic loop took one call per row, 386 us for a (513, 684, 3) result. Returns false for
// other layouts.
template <typename D>
bool copy_rows(const Tensor& dst, const Tensor& src) {
  Geometry<2> g = coalesce<2>(dst->shape, {dst.get(), src.get()});
  int64_t nd = int64_t(g.shape.size());
  constexpr int64_t es = sizeof(D);
  if (nd < 2) return false;
  const Shape &ds = g.strides[0], &ss = g.strides[1];
  const int64_t len = g.shape[nd - 1];
  const bool spread = ss[nd - 1] == 0;
  if (ds[nd - 1] != es || (spread ? len < 2 : ss[nd - 1] != es || len < 16)) return false;
  int64_t rows = 1;
  for (int64_t d = 0; d < nd - 1; ++d) rows *= g.shape[d];
  char* dbase = dst->raw();
  const char* sbase = src->raw();
  parallel_for(rows, std::max<int64_t>(1, kGrain / len), [&](int64_t r0, int64_t r1) {
    Shape idx(size_t(nd - 1));
    int64_t doff = 0, soff = 0;
    for (int64_t d = nd - 2, rem = r0; d >= 0; --d) {
      idx[d] = rem % g.shape[d];
      rem /= g.shape[d];
      doff += idx[d] * ds[d];
      soff += idx[d] * ss[d];
    }
    const int64_t inner = g.shape[nd - 2], di = ds[nd - 2], si = ss[nd - 2];
    for (int64_t r = r0; r < r1;) {
      // a run of rows along the innermost outer dim, by pointer increments
      int64_t m = std::min(r1 - r, inner - idx[nd - 2]);
      char* dp = dbase + doff;
      const char* sp = sbase + soff;
      if (spread) spread_rows<D>(dp, sp, m, di, si, len);
      else
        for (int64_t i = 0; i < m; ++i, dp += di, sp += si) copy_run(dp, sp, size_t(len * es));
      r += m;
      doff += (m - 1) * di;
      soff += (m - 1) * si;
      idx[nd - 2] += m - 1;
      for (int64_t d = nd - 2; d >= 0; --d) {  // next row: odometer over the outer dims
        doff += ds[d];
        soff += ss[d];
        if (++idx[d] < g.shape[d]) break;
        doff -= g.shape[d] * ds[d];
        soff -= g.shape[d] * ss[d];
        idx[d] = 0;
      }
    }
  });
  return true;
}

}  // namespace

void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  SX_DISPATCH_ALL(a->dtype, "binary", [&] { binary_t<scalar_t>(op, out, a, b); });
}

// float32 <-> float16 / bfloat16 over contiguous tensors in parallel runs (cpu/half_convert.h: the
// same rounding as the types' own). False where either is not contiguous (the generic loop then
// converts).
template <typename D, typename S>
bool convert_half(const Tensor& dst, const Tensor& src) {
  if (!dst->is_contiguous() || !src->is_contiguous()) return false;
  const S* x = src->data<S>();
  D* y = dst->data<D>();
  parallel_for(dst->numel(), kGrain, [&](int64_t lo, int64_t hi) {
    if constexpr (kLowp<D>) narrow_run(x + lo, y + lo, hi - lo);
    else widen_run(x + lo, y + lo, hi - lo);
  });
  return true;
}

void copy(const Tensor& dst, const Tensor& src) {
  SX_DISPATCH_ALL(dst->dtype, "copy", [&] {
    using D = scalar_t;
    SX_DISPATCH_ALL(src->dtype, "copy", [&] {
      using S = scalar_t;
      if constexpr (std::is_same_v<D, S>) {
        if (dst->numel() < kGrain && dst->is_contiguous() && src->is_contiguous()) {  // a small block (cat, stack)
          copy_bytes(dst->raw(), src->raw(), size_t(dst->numel()) * sizeof(D));
          return;
        }
        // (a transposing copy pays off from one 8 x 8 block, a copy of whole rows from a few hundred elements)
        if (dst->numel() >= 64 && copy_transposed<D>(dst, src)) return;
        if (dst->numel() >= 1024 && copy_rows<D>(dst, src)) return;
        for_each<2>(dst->shape, {dst.get(), src.get()}, [&](char** p, const int64_t* s, int64_t n) {
          constexpr int64_t es = sizeof(D);
          if (s[0] == es && s[1] == es) {
            copy_bytes(p[0], p[1], size_t(n) * sizeof(D));
          } else if (s[0] == es && s[1] == 0) {  // one value broadcast along the row (a sum's gradient): a fill
            D* d = reinterpret_cast<D*>(p[0]);
            std::fill(d, d + n, *reinterpret_cast<const D*>(p[1]));
          } else if (s[0] == es && s[1] == -es) {  // a flipped row: compile-time strides vectorise
            D* d = reinterpret_cast<D*>(p[0]);
            const D* x = reinterpret_cast<const D*>(p[1]);
            for (int64_t i = 0; i < n; ++i) d[i] = x[-i];
          } else {
            for (int64_t i = 0; i < n; ++i)
              *reinterpret_cast<D*>(p[0] + i * s[0]) = *reinterpret_cast<const D*>(p[1] + i * s[1]);
          }
        });
      } else if constexpr (std::is_same_v<D, bool>) {
        using W = std::conditional_t<std::is_integral_v<S>, S, acc_t<S>>;  // integers tested as they are
        run1<D, S, W>(dst, src, [](W v) { return v != W(0); });
      } else if constexpr ((kLowp<D> && std::is_same_v<S, float>) || (std::is_same_v<D, float> && kLowp<S>)) {
        if (!convert_half<D, S>(dst, src)) run1<D, S>(dst, src, [](acc_t<S> v) { return acc_t<D>(v); });
      } else if constexpr (std::is_integral_v<S> && std::is_floating_point_v<D>) {
        // Through int32 for the narrower types (the same value as through int64): loops that widened a
        // uint8 to int64 first ran at half speed, and bool to float through bool or uint8 at a seventh.
        using W = std::conditional_t<sizeof(S) < 8, int32_t, S>;
        run1<D, S, W>(dst, src, [](W v) { return D(v); });
      } else {
        run1<D, S>(dst, src, [](acc_t<S> v) { return acc_t<D>(v); });
      }
    });
  });
}

// Byte step between consecutive blocks of x, each block being x's extent along dims d.. (dense there:
// contiguous, or a narrow of a contiguous tensor), or -1 when x is not dense from d on or its dims
// before d do not collapse into one stride.
static int64_t cat_block_step(const Tensor& x, int64_t d) {
  const int64_t es = int64_t(itemsize(x->dtype));
  int64_t want = 1;
  for (int64_t i = x->dim() - 1; i >= d; --i) {
    if (x->shape[size_t(i)] != 1 && x->strides[size_t(i)] != want) return -1;
    want *= x->shape[size_t(i)];
  }
  int64_t step = -1, next = 0;  // the stride of the innermost leading dim of size > 1; the one it implies above
  for (int64_t i = d - 1; i >= 0; --i) {
    if (x->shape[size_t(i)] == 1) continue;
    if (step >= 0 && x->strides[size_t(i)] != next) return -1;
    if (step < 0) step = x->strides[size_t(i)];
    next = x->strides[size_t(i)] * x->shape[size_t(i)];
  }
  return step < 0 ? 0 : step * es;
}

// n blocks of W bytes (W == 0: `bytes`), src's `ss` bytes apart, to dst's `ds` bytes apart. Pointers and
// steps are by-value parameters: in a lambda capturing them by reference, every store through char*
// (which may alias anything) made the loop reload and store them again (a stack of three (513, 684)
// along the last dim ran at half speed).
template <size_t W>
void move_blocks(char* dst, const char* src, int64_t n, int64_t ss, int64_t ds, int64_t bytes = 0) {
  for (int64_t o = 0; o < n; ++o, src += ss, dst += ds) {
    if constexpr (W > 0) std::memcpy(dst, src, W);
    else copy_run(dst, src, size_t(bytes));
  }
}

// Interleaves N sources of elements of Q 4-byte words: dst[o * N + k] = src[k][o] for o < n (a stack
// along the last dim of inputs contiguous along their rows). A vector of each source at a time: each
// output vector is every source vector permuted by one index vector and blended by source, where
// a strided copy per source would store one element at a time.
#if defined(__AVX512F__)
constexpr int kVectorBytes = 64;
#else
constexpr int kVectorBytes = 32;
#endif
template <int N, int Q> void interleave(char* __restrict dst, const char* const* src, int64_t n) {
  constexpr int VB = kVectorBytes, L = VB / 4;  // bytes and 4-byte words per vector
  typedef uint32_t VU __attribute__((vector_size(VB)));
  static constexpr auto tables = [] {  // per output vector j: the word each lane takes, and from which source
    struct { uint32_t idx[N][L]; uint32_t from[N][L]; } t{};
    for (int j = 0; j < N; ++j)
      for (int l = 0; l < L; ++l) {
        const int e = (j * L + l) / Q;  // the output element of this lane
        t.idx[j][l] = uint32_t(e / N * Q + (j * L + l) % Q);
        t.from[j][l] = uint32_t(e % N);
      }
    return t;
  }();
  VU idx[N], sel[N][N];
  for (int j = 0; j < N; ++j) {
    std::memcpy(&idx[j], tables.idx[j], VB);
    VU from;
    std::memcpy(&from, tables.from[j], VB);
    for (int k = 0; k < N; ++k) sel[j][k] = (VU)(from == uint32_t(k));
  }
  constexpr int64_t per = L / Q, es = 4 * Q;  // elements of each source per vector, bytes per element
  int64_t o = 0;
  for (; o + per <= n; o += per) {
    VU v[N];
    for (int k = 0; k < N; ++k) std::memcpy(&v[k], src[k] + o * es, VB);
    for (int j = 0; j < N; ++j) {
      VU w = __builtin_shuffle(v[0], idx[j]);
      for (int k = 1; k < N; ++k) w = sel[j][k] ? __builtin_shuffle(v[k], idx[j]) : w;
      std::memcpy(dst + (o * N * Q + j * L) * 4, &w, VB);
    }
  }
  for (; o < n; ++o)
    for (int k = 0; k < N; ++k) std::memcpy(dst + (o * N + k) * es, src[k] + o * es, es);
}

// A concatenation of inputs dense from d on (contiguous ones, or narrow views such as roll's halves):
// for each index of the dims before d, each input's block (its extent along d times the dims after d)
// is copied to its place in out's row. Rows go input by input in tiles of about 16 KiB of out (blocks
// of a fixed size, as in stacking along the last dim, are one move each); large outputs split the rows
// over threads, or, when there are few rows (cat along dim 0, a flat roll), each row in pieces of 64 KiB.
// The general path would run a strided copy per input, a pass over out for each.
bool cat(const Tensor& out, const TensorList& xs, int64_t d) {
  if (!out->is_contiguous()) return false;
  struct Block {
    const char* src;
    int64_t step, bytes, off;  // bytes between x's blocks, per block, and the block's place in out's row
  };
  std::vector<Block> blocks;
  const int64_t es = int64_t(itemsize(out->dtype));
  int64_t outer = 1, inner = es;
  for (int64_t i = 0; i < d; ++i) outer *= out->shape[size_t(i)];
  for (int64_t i = d + 1; i < out->dim(); ++i) inner *= out->shape[size_t(i)];
  const int64_t row = out->shape[size_t(d)] * inner;  // bytes of out per index of the leading dims
  int64_t off = 0;
  for (auto& x : xs) {
    if (!x->numel()) continue;
    if (x->dtype != out->dtype || x->device() != out->device()) return false;
    const int64_t step = cat_block_step(x, d);
    if (step < 0) return false;
    blocks.push_back({x->raw(), step, x->shape[size_t(d)] * inner, off});
    off += x->shape[size_t(d)] * inner;
  }
  // Stacking 2-4 inputs of 4- or 8-byte elements along the last dim (one element of each per row), each
  // input's rows adjacent: interleaved (AVX2 builds: 2 or 4 inputs; three took longer than the block
  // moves there, 219 -> 233 us for three (513, 684) float32 at 2 threads, where AVX-512 took 150).
  const int64_t nb = int64_t(blocks.size());
  const bool mix = nb >= 2 && nb <= 4 && (kVectorBytes == 64 || nb != 3) && row == nb * es && (es == 4 || es == 8) &&
                   std::all_of(blocks.begin(), blocks.end(), [es](const Block& k) { return k.step == es; });
  char* base = out->raw();
  auto rows = [base, row, &blocks, mix, nb, es](int64_t o0, int64_t o1) {  // rows o0..o1 of out, input by input
    if (mix) {
      const char* src[4];
      for (int64_t k = 0; k < nb; ++k) src[k] = blocks[size_t(k)].src + o0 * es;
      char* dst = base + o0 * row;
      switch (nb * 10 + es / 4) {
        case 21: return interleave<2, 1>(dst, src, o1 - o0);
        case 22: return interleave<2, 2>(dst, src, o1 - o0);
        case 31: return interleave<3, 1>(dst, src, o1 - o0);
        case 32: return interleave<3, 2>(dst, src, o1 - o0);
        case 41: return interleave<4, 1>(dst, src, o1 - o0);
        default: return interleave<4, 2>(dst, src, o1 - o0);
      }
    }
    for (const Block& k : blocks) {
      const char* src = k.src + o0 * k.step;
      char* dst = base + o0 * row + k.off;
      switch (k.bytes) {
        case 1: move_blocks<1>(dst, src, o1 - o0, k.step, row); break;
        case 2: move_blocks<2>(dst, src, o1 - o0, k.step, row); break;
        case 4: move_blocks<4>(dst, src, o1 - o0, k.step, row); break;
        case 8: move_blocks<8>(dst, src, o1 - o0, k.step, row); break;
        case 16: move_blocks<16>(dst, src, o1 - o0, k.step, row); break;
        default: move_blocks<0>(dst, src, o1 - o0, k.step, row, k.bytes);
      }
    }
  };
  const int64_t tile = std::max<int64_t>(1, 16384 / std::max<int64_t>(row, 1));
  auto tiles = [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; o += tile) rows(o, std::min(e, o + tile));
  };
  if (out->numel() < kGrain) {
    tiles(0, outer);
  } else if (outer >= 64) {
    parallel_for(outer, std::max(tile, kGrain * es / std::max<int64_t>(row, 1)), tiles);
  } else {
    constexpr int64_t kPiece = 65536;
    const int64_t pieces = (row + kPiece - 1) / kPiece;
    parallel_for(outer * pieces, 1, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        const int64_t o = p / pieces, lo = (p % pieces) * kPiece, hi = std::min(row, lo + kPiece);
        for (auto& k : blocks) {
          const int64_t s = std::max(lo, k.off), t = std::min(hi, k.off + k.bytes);
          if (s < t) copy_run(base + o * row + s, k.src + o * k.step + (s - k.off), size_t(t - s));
        }
      }
    });
  }
  return true;
}

void fill(const Tensor& t, const Scalar& v) {
  SX_DISPATCH_ALL(t->dtype, "fill", [&] {
    scalar_t val = scalar_t(v.to<acc_t<scalar_t>>());
    // Vector stores for zeros too: glibc's memset of a large run (rep stosb) took as long on two threads
    // as on one here (a (888, 1184) zeros: 65 us at 1 and 2 threads; vector stores 61 -> 35 us).
    for_each<1>(t->shape, {t.get()}, [&](char** p, const int64_t* s, int64_t n) {
      if (s[0] == int64_t(sizeof(scalar_t))) std::fill_n(reinterpret_cast<scalar_t*>(p[0]), n, val);
      else
        for (int64_t i = 0; i < n; ++i) *reinterpret_cast<scalar_t*>(p[0] + i * s[0]) = val;
    });
  });
}

// Both values are read before the choice: a select, not a branch (which goes either way at random on
// a random mask). Contiguous runs, with either value contiguous or one repeated (a scalar), have
// compile-time strides so that they become vector code.
void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  SX_DISPATCH_ALL(out->dtype, "where", [&] {
    using T = scalar_t;
    constexpr int64_t es = sizeof(T);
    for_each<4>(out->shape, {out.get(), cond.get(), a.get(), b.get()}, [&](char** p, const int64_t* s, int64_t n) {
      const uint8_t* c = reinterpret_cast<const uint8_t*>(p[1]);
      auto run = [&](auto ia, auto ib) {  // element steps of x and y: 1 or 0
        // On the bits, with a mask: GCC turns `c[i] ? u : v` back into a branch, and does not vectorise
        // the scalar form of the mask, so the loop is written on 32-byte vectors (any nonzero byte is true).
        using U = std::conditional_t<es == 1, uint8_t, std::conditional_t<es == 2, uint16_t,
                  std::conditional_t<es == 4, uint32_t, uint64_t>>>;
        static_assert(sizeof(U) == es);
        constexpr int W = 32 / es;
        typedef U VU __attribute__((vector_size(32)));
        typedef uint8_t VC __attribute__((vector_size(W)));
        U u0, v0;
        std::memcpy(&u0, p[2], es);
        std::memcpy(&v0, p[3], es);
        const VU us = u0 - VU{}, vs = v0 - VU{};  // the repeated value of a scalar operand
        int64_t i = 0;
        for (; i + W <= n; i += W) {
          VC cv;
          std::memcpy(&cv, c + i, W);
          VU m = __builtin_convertvector(cv != 0, VU), u = us, v = vs, r;  // all ones where set
          if (ia) std::memcpy(&u, p[2] + i * es, 32);
          if (ib) std::memcpy(&v, p[3] + i * es, 32);
          r = (u & m) | (v & ~m);
          std::memcpy(p[0] + i * es, &r, 32);
        }
        for (; i < n; ++i) {
          U u, v, m = U(0) - U(c[i] != 0), r;
          std::memcpy(&u, p[2] + i * ia * es, es);
          std::memcpy(&v, p[3] + i * ib * es, es);
          r = (u & m) | (v & U(~m));
          std::memcpy(p[0] + i * es, &r, es);
        }
      };
      using one = std::integral_constant<int64_t, 1>;
      using zero = std::integral_constant<int64_t, 0>;
      if (s[0] == es && s[1] == 1 && (s[2] == es || s[2] == 0) && (s[3] == es || s[3] == 0)) {
        if (s[2] && s[3]) return run(one{}, one{});
        if (s[2]) return run(one{}, zero{});
        if (s[3]) return run(zero{}, one{});
        return run(zero{}, zero{});
      }
      for (int64_t i = 0; i < n; ++i) {
        T u = *reinterpret_cast<const T*>(p[2] + i * s[2]), v = *reinterpret_cast<const T*>(p[3] + i * s[3]);
        *reinterpret_cast<T*>(p[0] + i * s[0]) = *reinterpret_cast<const bool*>(p[1] + i * s[1]) ? u : v;
      }
    });
  });
}

// Integers clamp in their own type (so that the loop vectorises to min/max), the others in acc_t.
template <typename T> using clamp_t = std::conditional_t<std::is_integral_v<T>, T, acc_t<T>>;

void clamp(const Tensor& out, const Tensor& x, double lo, double hi, bool has_lo, bool has_hi) {
  SX_DISPATCH_ALL(x->dtype, "clamp", [&] {
    using T = scalar_t;
    using C = clamp_t<T>;
    C a = C(lo), b = C(hi);
    // min(max(x, lo), hi): lo > hi gives hi everywhere, as in PyTorch; NaN x stays NaN
    if (has_lo && has_hi) run1<T, T>(out, x, [a, b](C v) { C r = v < a ? a : v; return r > b ? b : r; });
    else if (has_lo) run1<T, T>(out, x, [a](C v) { return v < a ? a : v; });
    else run1<T, T>(out, x, [b](C v) { return v > b ? b : v; });
  });
}

// One contiguous run of nan_to_num (the sheet's NanToNum::map), compiled on its own so that it vectorises
// like a plain loop. Through the generic strided loop it did not (451 us for 1e6 floats, against 49 for a
// clamp).
template <typename T, typename C>
[[gnu::noinline]] void nan_to_num_run(T* __restrict o, const T* __restrict x, int64_t n, C a, C p, C m) {
  for (int64_t i = 0; i < n; ++i) o[i] = T(unary_def::NanToNum::map(C(x[i]), a, p, m));
}
void nan_to_num(const Tensor& out, const Tensor& x, double nan, double posinf, double neginf) {
  SX_DISPATCH_FLOAT(x->dtype, "nan_to_num", [&] {
    using T = scalar_t;
    using C = acc_t<T>;
    const T* xp = x->data<T>();
    T* op = out->data<T>();
    parallel_for(out->numel(), kGrain, [&](int64_t b, int64_t e) {
      nan_to_num_run<T, C>(op + b, xp + b, e - b, C(nan), C(posinf), C(neginf));
    });
  });
}

// clamp_tensor's rule for one element: x below lo (or lo NaN) gives lo, then above hi (or hi NaN) gives hi,
// computed in clamp_t; a NaN x stays NaN.
template <typename T, bool L, bool H> T clamp_exact(T xv, T lv, T hv) {
  using C = clamp_t<T>;
  C v = C(xv), l = C(lv), h = C(hv);
  if constexpr (L) v = (v < l || l != l) ? l : v;
  if constexpr (H) v = (v > h || h != h) ? h : v;
  return T(v);
}

// One contiguous row of clamp_tensor with compile-time strides (1: contiguous, 0: broadcast) for the bounds.
// `l > v ? l : v` and `h < v ? h : v` are single max / min instructions and equal the exact rule unless a
// bound is NaN, which the loop notes as it goes; a row with a NaN bound is then redone by the exact rule
// (whose unordered compares and mask merges made the loop compute-bound: (888, 1184) 155 -> 116 us on one
// thread, where negation takes 111).
template <int KL, int KH, bool L, bool H, typename T>
[[gnu::noinline]] void clamp_row(T* __restrict o, const T* __restrict x, const T* l, const T* h, int64_t n) {
  using C = clamp_t<T>;
  if constexpr (kLowp<T>) {  // the exact rule on blocks widened to float and narrowed back
    constexpr int64_t kB = 256;
    float v[kB], lb[kB], hb[kB];
    const float l0 = L ? float(*l) : 0.0f, h0 = H ? float(*h) : 0.0f;
    for (int64_t i = 0; i < n; i += kB) {
      const int64_t k = std::min(kB, n - i);
      widen_run(x + i, v, k);
      if constexpr (L && KL == 1) widen_run(l + i, lb, k);
      if constexpr (H && KH == 1) widen_run(h + i, hb, k);
      for (int64_t j = 0; j < k; ++j) {
        const float lv = L && KL ? lb[j] : l0, hv = H && KH ? hb[j] : h0;
        float r = v[j];
        if constexpr (L) r = (r < lv || lv != lv) ? lv : r;
        if constexpr (H) r = (r > hv || hv != hv) ? hv : r;
        v[j] = r;
      }
      narrow_run(v, o + i, k);
    }
    return;
  }
  int nan_bound = 0;
  for (int64_t i = 0; i < n; ++i) {
    C v = C(x[i]), lv = C(l[i * KL]), hv = C(h[i * KH]);
    if constexpr (L) nan_bound |= int(lv != lv), v = lv > v ? lv : v;
    if constexpr (H) nan_bound |= int(hv != hv), v = hv < v ? hv : v;
    o[i] = T(v);
  }
  if (nan_bound)
    for (int64_t i = 0; i < n; ++i) o[i] = clamp_exact<T, L, H>(x[i], l[i * KL], h[i * KH]);
}

template <typename T, bool L, bool H>
void clamp_tensor_t(const Tensor& out, const Tensor& x, const Tensor& lo, const Tensor& hi) {
  for_each<4>(out->shape, {out.get(), x.get(), lo.get(), hi.get()}, [&](char** p, const int64_t* s, int64_t n) {
    constexpr int64_t st = sizeof(T);
    T* o = reinterpret_cast<T*>(p[0]);
    const T* xp = reinterpret_cast<const T*>(p[1]);
    const T* lp = reinterpret_cast<const T*>(p[2]);
    const T* hp = reinterpret_cast<const T*>(p[3]);
    bool fast = s[0] == st && s[1] == st && (s[2] == st || s[2] == 0) && (s[3] == st || s[3] == 0);
    if (fast && s[2] == st && s[3] == st) clamp_row<1, 1, L, H>(o, xp, lp, hp, n);
    else if (fast && s[2] == st) clamp_row<1, 0, L, H>(o, xp, lp, hp, n);
    else if (fast && s[3] == st) clamp_row<0, 1, L, H>(o, xp, lp, hp, n);
    else if (fast) clamp_row<0, 0, L, H>(o, xp, lp, hp, n);
    else
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<T*>(p[0] + i * s[0]) = clamp_exact<T, L, H>(
            *reinterpret_cast<const T*>(p[1] + i * s[1]), *reinterpret_cast<const T*>(p[2] + i * s[2]),
            *reinterpret_cast<const T*>(p[3] + i * s[3]));
  });
}

void clamp_tensor(const Tensor& out, const Tensor& x, const Tensor& lo, const Tensor& hi, bool has_lo, bool has_hi) {
  SX_DISPATCH_ALL(x->dtype, "clamp", [&] {
    using T = scalar_t;
    if (has_lo && has_hi) clamp_tensor_t<T, true, true>(out, x, lo, hi);
    else if (has_lo) clamp_tensor_t<T, true, false>(out, x, lo, hi);
    else clamp_tensor_t<T, false, true>(out, x, lo, hi);
  });
}

// One row of lerp with compile-time strides (1: contiguous, 0: broadcast) for the weight; float16 and
// bfloat16 in blocks widened to float and narrowed back (element by element: a twentieth of PyTorch's
// speed). g is the formula in the compute type.
template <int KW, typename T, typename G>
[[gnu::noinline]] void lerp_row(T* __restrict o, const T* __restrict a, const T* __restrict b, const T* w, int64_t n,
                                G g) {
  using C = acc_t<T>;
  if constexpr (kLowp<T>) {
    constexpr int64_t kB = 256;
    float x[kB], y[kB], t[kB];
    const float w0 = float(*w);
    for (int64_t i = 0; i < n; i += kB) {
      const int64_t k = std::min(kB, n - i);
      widen_run(a + i, x, k);
      widen_run(b + i, y, k);
      if constexpr (KW == 1) widen_run(w + i, t, k);
      for (int64_t j = 0; j < k; ++j) x[j] = g(x[j], y[j], KW ? t[j] : w0);
      narrow_run(x, o + i, k);
    }
  } else {
    for (int64_t i = 0; i < n; ++i) o[i] = T(g(C(a[i]), C(b[i]), C(w[i * KW])));
  }
}

void lerp(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& w) {
  SX_DISPATCH_FLOAT(out->dtype, "lerp", [&] {
    using T = scalar_t;
    using C = acc_t<T>;
    auto g = [](C x, C y, C t) {
      C d = y - x;
      return std::abs(t) < C(0.5) ? x + t * d : y - d * (C(1) - t);
    };
    auto f = [g](T av, T bv, T wv) { return T(g(C(av), C(bv), C(wv))); };
    for_each<4>(out->shape, {out.get(), a.get(), b.get(), w.get()}, [&](char** p, const int64_t* s, int64_t n) {
      constexpr int64_t st = sizeof(T);
      T* o = reinterpret_cast<T*>(p[0]);
      const T* ap = reinterpret_cast<const T*>(p[1]);
      const T* bp = reinterpret_cast<const T*>(p[2]);
      const T* wp = reinterpret_cast<const T*>(p[3]);
      bool fast = s[0] == st && s[1] == st && s[2] == st;
      if (fast && s[3] == st) lerp_row<1>(o, ap, bp, wp, n, g);
      else if (fast && s[3] == 0) lerp_row<0>(o, ap, bp, wp, n, g);
      else
        for (int64_t i = 0; i < n; ++i)
          *reinterpret_cast<T*>(p[0] + i * s[0]) =
              f(*reinterpret_cast<const T*>(p[1] + i * s[1]), *reinterpret_cast<const T*>(p[2] + i * s[2]),
                *reinterpret_cast<const T*>(p[3] + i * s[3]));
    });
  });
}

// Rows of the (..., n, m) output: the kept columns (j <= i + k for tril, j >= i + k for triu) are
// copied, the others zeroed (all-zero bytes are 0 in every dtype).
void tri(const Tensor& out, const Tensor& x, int64_t k, bool lower) {
  int64_t nd = out->dim(), n = out->shape[nd - 2], m = out->shape[nd - 1];
  if (out->numel() == 0) return;
  int64_t rows = out->numel() / m;
  size_t es = itemsize(out->dtype);
  char* o = out->raw();
  const char* src = x->raw();
  parallel_for(rows, std::max<int64_t>(1, kGrain / m), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      int64_t i = r % n;
      int64_t c = std::clamp<int64_t>(lower ? i + k + 1 : i + k, 0, m);  // first column of the second part
      char* orow = o + size_t(r * m) * es;
      const char* srow = src + size_t(r * m) * es;
      const bool copy = orow != srow;  // in place (x.tril_()), only the zeros are written
      if (lower) {
        if (copy) std::memcpy(orow, srow, size_t(c) * es);
        std::memset(orow + size_t(c) * es, 0, size_t(m - c) * es);
      } else {
        std::memset(orow, 0, size_t(c) * es);
        if (copy) std::memcpy(orow + size_t(c) * es, srow + size_t(c) * es, size_t(m - c) * es);
      }
    }
  });
}

SX_REGISTER_KERNEL(kern::binary, CPU, &binary);
SX_REGISTER_KERNEL(kern::where, CPU, &where);
SX_REGISTER_KERNEL(kern::clamp, CPU, &clamp);
SX_REGISTER_KERNEL(kern::clamp_tensor, CPU, &clamp_tensor);
SX_REGISTER_KERNEL(kern::tri, CPU, &tri);
SX_REGISTER_KERNEL(kern::lerp, CPU, &lerp);
SX_REGISTER_KERNEL(kern::copy, CPU, &copy);
SX_REGISTER_KERNEL(kern::nan_to_num, CPU, &nan_to_num);
SX_REGISTER_KERNEL(kern::cat, CPU, &cat);
SX_REGISTER_KERNEL(kern::fill, CPU, &fill);

}  // namespace sx::cpu
