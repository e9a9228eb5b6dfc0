// Strided N-operand iteration: dims are coalesced, the range is split across the thread pool,
// and the innermost dimension is handed to a kernel as (pointers, byte strides, count).
#pragma once
#include <algorithm>
#include <array>
#include <memory>
#include <type_traits>

#include "core/parallel.h"
#include "core/tensor.h"
#include "cpu/half_convert.h"

namespace sx::cpu {

constexpr int64_t kGrain = 32768;

// Element i of p as C. A bool is read as its byte (any nonzero byte is true): GCC does not vectorise a
// loop that widens bool loads (a logical_not of 1M bools took 286 us, 24 read as bytes; a bool to
// float32 conversion 382 against 61).
template <typename C, typename T>
inline C load(const T* p, int64_t i) {
  if constexpr (std::is_same_v<T, bool>) return C(reinterpret_cast<const uint8_t*>(p)[i] != 0);
  else return C(p[i]);
}

template <int N>
struct Geometry {
  Shape shape;
  std::array<Shape, N> strides;  // in bytes
};

// The tensors a loop runs over.
template <int N>
using Operands = std::array<const TensorImpl*, N>;

// Operands must already have `shape` (broadcast operands as stride-0 views).
template <int N>
Geometry<N> coalesce(const Shape& shape, const Operands<N>& ts) {
  Geometry<N> g;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    g.shape.push_back(shape[d]);
    for (int k = 0; k < N; ++k) g.strides[k].push_back(ts[k]->strides[d] * int64_t(itemsize(ts[k]->dtype)));
  }
  // Merge dim i into i+1 when every operand is contiguous across them.
  for (int64_t i = int64_t(g.shape.size()) - 2; i >= 0; --i) {
    bool ok = true;
    for (int k = 0; k < N; ++k) ok = ok && g.strides[k][i] == g.strides[k][i + 1] * g.shape[i + 1];
    if (!ok) continue;
    g.shape[i] *= g.shape[i + 1];
    g.shape.erase(g.shape.begin() + i + 1);
    for (int k = 0; k < N; ++k) {
      g.strides[k][i] = g.strides[k][i + 1];
      g.strides[k].erase(g.strides[k].begin() + i + 1);
    }
  }
  return g;
}

// A for_each_rows kernel with its state behind a pointer: the loop (loops.cpp) is compiled once per
// operand count, not once per kernel.
using RowsFn = void (*)(void* ctx, char** p, const int64_t* s, int64_t n, const int64_t* os, int64_t m);
template <int N>
void for_each_rows_erased(const Shape& shape, const Operands<N>& ts, RowsFn fn, void* ctx, int64_t grain);
extern template void for_each_rows_erased<1>(const Shape&, const Operands<1>&, RowsFn, void*, int64_t);
extern template void for_each_rows_erased<2>(const Shape&, const Operands<2>&, RowsFn, void*, int64_t);
extern template void for_each_rows_erased<3>(const Shape&, const Operands<3>&, RowsFn, void*, int64_t);
extern template void for_each_rows_erased<4>(const Shape&, const Operands<4>&, RowsFn, void*, int64_t);

// fn(char** p, const int64_t* s, int64_t n, const int64_t* os, int64_t m): m rows of n elements, element i
// of row r of operand k at p[k] + r * os[k] + i * s[k] (byte strides). Consecutive rows of the innermost
// outer dim come in one call, so that a kernel over short rows (a broadcast bias, a permuted view) loops
// over them itself instead of being called once per row. The operands are coalesced and the range is
// split over the thread pool (see loops.cpp).
template <int N, typename F>
void for_each_rows(const Shape& shape, const Operands<N>& ts, F&& fn, int64_t grain = kGrain) {
  using Fn = std::remove_reference_t<F>;
  RowsFn call = [](void* c, char** p, const int64_t* s, int64_t n, const int64_t* os, int64_t m) {
    (*static_cast<Fn*>(c))(p, s, n, os, m);
  };
  for_each_rows_erased<N>(shape, ts, call, const_cast<void*>(static_cast<const void*>(std::addressof(fn))), grain);
}

// fn(char* ptrs[N], const int64_t inner_strides[N], int64_t n): for_each_rows one row at a time.
template <int N, typename F>
void for_each(const Shape& shape, const Operands<N>& ts, F&& fn, int64_t grain = kGrain) {
  for_each_rows<N>(
      shape, ts,
      [&](char** p, const int64_t* s, int64_t n, const int64_t* os, int64_t m) {
        if (m == 1) return fn(p, s, n);
        char* q[N];
        for (int64_t r = 0; r < m; ++r) {
          for (int k = 0; k < N; ++k) q[k] = p[k] + r * os[k];
          fn(q, s, n);
        }
      },
      grain);
}

// Rows of o = O(f(C(x), C(y))) where the output is contiguous and each input contiguous (step 1) or a
// scalar (step 0) along a row; m rows, each operand's rows oo, ox, oy elements apart. Compiled on its own
// so that f is inlined and the loops vectorise however many formulas a file instantiates.
template <typename O, typename T, typename C, typename F>
[[gnu::noinline, gnu::flatten]] void binary_run_contig(O* o, const T* x, int64_t sx, const T* y, int64_t sy,
                                                       int64_t n, F f, int64_t m, int64_t oo, int64_t ox,
                                                       int64_t oy) {
  for (int64_t r = 0; r < m; ++r, o += oo, x += ox, y += oy) {
    if (sx == 1 && sy == 1) {
      for (int64_t i = 0; i < n; ++i) o[i] = O(f(load<C>(x, i), load<C>(y, i)));
    } else if (sx == 1) {
      const C yv = load<C>(y, 0);
      for (int64_t i = 0; i < n; ++i) o[i] = O(f(load<C>(x, i), yv));
    } else {
      const C xv = load<C>(x, 0);
      for (int64_t i = 0; i < n; ++i) o[i] = O(f(xv, load<C>(y, i)));
    }
  }
}

// binary_run_contig for short rows (n < kShortBinaryRow; SX, SY: the inputs' steps, 1 or 0): chunks of two
// vectors computed into registers, then stored. The vectorised loop of binary_run_contig checks each row
// for overlap and sets up its trip count, which costs as much as a row of 16 floats (x * col over rows of
// 16: 1.4x the time per element of long rows). A chunk is read before it is written, so in place is safe.
constexpr int64_t kShortBinaryRow = 128;
template <int SX, int SY, typename O, typename T, typename C, typename F>
[[gnu::noinline, gnu::flatten]] void binary_rows_short(O* o, const T* x, const T* y, int64_t n, F f, int64_t m,
                                                       int64_t oo, int64_t ox, int64_t oy) {
  using R = decltype(f(C(), C()));
  constexpr int64_t kW = 64 / sizeof(R);  // 64 bytes of results: two AVX2 vectors, one AVX-512 vector
  for (int64_t r = 0; r < m; ++r, o += oo, x += ox, y += oy) {
    const C xs = load<C>(x, 0), ys = load<C>(y, 0);
    int64_t i = 0;
    for (; i + kW <= n; i += kW) {
      R t[kW];
      for (int64_t j = 0; j < kW; ++j) t[j] = f(SX ? load<C>(x, i + j) : xs, SY ? load<C>(y, i + j) : ys);
      for (int64_t j = 0; j < kW; ++j) o[i + j] = O(t[j]);
    }
    for (; i < n; ++i) o[i] = O(f(SX ? load<C>(x, i) : xs, SY ? load<C>(y, i) : ys));
  }
}

template <typename T> constexpr bool kLowp = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// k elements of a row s bytes apart as float: widened (cpu/half_convert.h) when contiguous; for a
// scalar (s == 0) one element, and the returned step is 0, unless `fill` asks for k copies (the other
// operand is a scalar too, and binary_run_contig needs one of them to step).
template <typename T>
inline int64_t widen_row(float* d, const char* p, int64_t s, int64_t k, bool fill = false) {
  const T* x = reinterpret_cast<const T*>(p);
  if (s == 0) {
    std::fill(d, d + (fill ? k : 1), float(*x));
    return fill ? 1 : 0;
  }
  if (s == int64_t(sizeof(T))) widen_run(x, d, k);
  else for (int64_t i = 0; i < k; ++i) d[i] = float(*reinterpret_cast<const T*>(p + i * s));
  return 1;
}

// A row of binary_run_lowp whose output is contiguous and whose inputs are contiguous or scalars (SX,
// SY: their steps, 1 or 0): blocks of 64 elements widened into registers and L1, computed by a loop that
// vectorises whatever the formula, and narrowed (comparisons store their bools). A block is read before
// any of it is written, so in place is safe.
template <int SX, int SY, typename O, typename T, typename C, typename F>
[[gnu::noinline, gnu::flatten]] void binary_lowp_contig(O* o, const T* x, const T* y, int64_t n, F f) {
  constexpr int64_t kB = 64;
  const float xs = float(*x), ys = float(*y);
  auto block = [&](int64_t i, auto k) {  // k: kB as a constant for whole blocks (no loop tails), else the rest
    float xa[kB], ya[kB];
    if constexpr (SX == 1) widen_run(x + i, xa, k);
    if constexpr (SY == 1) widen_run(y + i, ya, k);
    if constexpr (kLowp<O>) {
      float r[kB];
      for (int64_t j = 0; j < k; ++j) r[j] = float(f(C(SX ? xa[j] : xs), C(SY ? ya[j] : ys)));
      narrow_run(r, o + i, k);
    } else {
      for (int64_t j = 0; j < k; ++j) o[i + j] = O(f(C(SX ? xa[j] : xs), C(SY ? ya[j] : ys)));
    }
  };
  int64_t i = 0;
  for (; i + kB <= n; i += kB) block(i, std::integral_constant<int64_t, kB>{});
  if (i < n) block(i, n - i);
}

// binary_run for float16 / bfloat16 inputs, which compute in float: contiguous rows through
// binary_lowp_contig; other rows in blocks widened into L1 buffers, the float loop of binary_run_contig
// over them, results narrowed back. A block is read whole before it is written, so in place is safe.
template <typename O, typename T, typename C, typename F>
[[gnu::noinline]] void binary_run_lowp(char** p, const int64_t* s, int64_t n, const int64_t* os, int64_t m, F f) {
  constexpr int64_t kBlk = 512, so = sizeof(O), st = sizeof(T);
  if (s[0] == so && (s[1] == st || s[1] == 0) && (s[2] == st || s[2] == 0) && (s[1] | s[2]) != 0) {
    for (int64_t r = 0; r < m; ++r) {
      O* o = reinterpret_cast<O*>(p[0] + r * os[0]);
      const T* x = reinterpret_cast<const T*>(p[1] + r * os[1]);
      const T* y = reinterpret_cast<const T*>(p[2] + r * os[2]);
      if (s[1] && s[2]) binary_lowp_contig<1, 1, O, T, C>(o, x, y, n, f);
      else if (s[1]) binary_lowp_contig<1, 0, O, T, C>(o, x, y, n, f);
      else binary_lowp_contig<0, 1, O, T, C>(o, x, y, n, f);
    }
    return;
  }
  using OB = std::conditional_t<kLowp<O>, float, O>;
  float xb[kBlk], yb[kBlk];
  OB ob[kBlk];
  for (int64_t r = 0; r < m; ++r)
    for (int64_t i = 0; i < n; i += kBlk) {
      const int64_t k = std::min(kBlk, n - i);
      const int64_t sx = widen_row<T>(xb, p[1] + r * os[1] + i * s[1], s[1], k, s[2] == 0);
      const int64_t sy = widen_row<T>(yb, p[2] + r * os[2] + i * s[2], s[2], k);
      char* o = p[0] + r * os[0] + i * s[0];
      if constexpr (std::is_same_v<OB, O>) {
        if (s[0] == so) {
          binary_run_contig<O, float, C>(reinterpret_cast<O*>(o), xb, sx, yb, sy, k, f, 1, 0, 0, 0);
          continue;
        }
      }
      binary_run_contig<OB, float, C>(ob, xb, sx, yb, sy, k, f, 1, 0, 0, 0);
      if constexpr (kLowp<O>) {
        if (s[0] == so) {
          narrow_run(ob, reinterpret_cast<O*>(o), k);
          continue;
        }
      }
      for (int64_t j = 0; j < k; ++j) *reinterpret_cast<O*>(o + j * s[0]) = O(ob[j]);
    }
}

// The body of a for_each_rows<3> over (out, x, y) of dtypes (O, T, T): o = O(f(C(x), C(y))) for each
// element of m rows (pointers p, byte strides s, rows os apart), contiguous and scalar operands through
// binary_run_contig.
template <typename O, typename T, typename C, typename F>
inline void binary_run(char** p, const int64_t* s, int64_t n, const int64_t* os, int64_t m, F f) {
  constexpr int64_t so = sizeof(O), st = sizeof(T);
  if constexpr (kLowp<T> && std::is_same_v<C, float>) {
    binary_run_lowp<O, T, C>(p, s, n, os, m, f);
  } else if (s[0] == so && (s[1] == st || s[1] == 0) && (s[2] == st || s[2] == 0) && (s[1] | s[2]) != 0) {
    if (n < kShortBinaryRow) {
      O* o = reinterpret_cast<O*>(p[0]);
      const T* x = reinterpret_cast<const T*>(p[1]);
      const T* y = reinterpret_cast<const T*>(p[2]);
      const int64_t oo = os[0] / so, ox = os[1] / st, oy = os[2] / st;
      if (s[1] && s[2]) binary_rows_short<1, 1, O, T, C>(o, x, y, n, f, m, oo, ox, oy);
      else if (s[1]) binary_rows_short<1, 0, O, T, C>(o, x, y, n, f, m, oo, ox, oy);
      else binary_rows_short<0, 1, O, T, C>(o, x, y, n, f, m, oo, ox, oy);
      return;
    }
    binary_run_contig<O, T, C>(reinterpret_cast<O*>(p[0]), reinterpret_cast<const T*>(p[1]), s[1] / st,
                               reinterpret_cast<const T*>(p[2]), s[2] / st, n, f, m, os[0] / so, os[1] / st,
                               os[2] / st);
  } else {
    for (int64_t r = 0; r < m; ++r)
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<O*>(p[0] + r * os[0] + i * s[0]) =
            O(f(load<C>(reinterpret_cast<const T*>(p[1] + r * os[1] + i * s[1]), 0),
                load<C>(reinterpret_cast<const T*>(p[2] + r * os[2] + i * s[2]), 0)));
  }
}

}  // namespace sx::cpu
