// Strided N-operand iteration: dims are coalesced, the range is split across the thread pool,
// and the innermost dimension is handed to a kernel as (pointers, byte strides, count).
#pragma once
#include <array>

#include "core/parallel.h"
#include "core/tensor.h"

namespace sx::cpu {

constexpr int64_t kGrain = 32768;

template <int N>
struct Geometry {
  Shape shape;
  std::array<Shape, N> strides;  // in bytes
};

// Operands must already have `shape` (broadcast operands as stride-0 views).
template <int N>
Geometry<N> coalesce(const Shape& shape, const std::array<const TensorImpl*, N>& ts) {
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

// fn(char** p, const int64_t* s, int64_t n, const int64_t* os, int64_t m): m rows of n elements, element i
// of row r of operand k at p[k] + r * os[k] + i * s[k] (byte strides). Consecutive rows of the innermost
// outer dim come in one call, so that a kernel over short rows (a broadcast bias, a permuted view) loops
// over them itself instead of being called once per row.
template <int N, typename F>
void for_each_rows(const Shape& shape, const std::array<const TensorImpl*, N>& ts, F&& fn, int64_t grain = kGrain) {
  int64_t zero[N] = {};
  // Fast path: every operand is contiguous with the full shape, so the loop is one flat range.
  bool flat = true;
  for (int k = 0; k < N && flat; ++k) flat = ts[k]->shape == shape && ts[k]->is_contiguous();
  if (flat) {
    int64_t total = 1;
    for (auto s : shape) total *= s;
    int64_t st[N];
    for (int k = 0; k < N; ++k) st[k] = int64_t(itemsize(ts[k]->dtype));
    auto run = [&](int64_t b, int64_t e) {
      char* p[N];
      for (int k = 0; k < N; ++k) p[k] = ts[k]->raw() + b * st[k];
      fn(p, st, e - b, zero, int64_t(1));
    };
    if (total <= grain) {
      if (total > 0) run(0, total);
    } else {
      parallel_for(total, grain, run);
    }
    return;
  }
  Geometry<N> g = coalesce<N>(shape, ts);
  std::array<char*, N> base;
  for (int k = 0; k < N; ++k) base[k] = ts[k]->raw();
  int64_t nd = int64_t(g.shape.size());
  if (nd == 0) {
    char* p[N];
    for (int k = 0; k < N; ++k) p[k] = base[k];
    int64_t numel = 1;
    for (auto s : shape) numel *= s;
    if (numel) fn(p, zero, int64_t(1), zero, int64_t(1));
    return;
  }
  int64_t total = 1;
  for (auto s : g.shape) total *= s;
  const int64_t inner = g.shape[nd - 1], rows = nd > 1 ? g.shape[nd - 2] : 1;
  int64_t istr[N], ostr[N];
  for (int k = 0; k < N; ++k) istr[k] = g.strides[k][nd - 1], ostr[k] = nd > 1 ? g.strides[k][nd - 2] : 0;
  parallel_for(total, grain, [&](int64_t b, int64_t e) {
    // multi-index of b
    Shape idx(nd);
    int64_t rem = b;
    for (int64_t d = nd - 1; d >= 0; --d) {
      idx[d] = rem % g.shape[d];
      rem /= g.shape[d];
    }
    char* row[N];  // each operand at the start of the current row (its outer dims at idx)
    for (int k = 0; k < N; ++k) {
      row[k] = base[k];
      for (int64_t d = 0; d < nd - 1; ++d) row[k] += idx[d] * g.strides[k][d];
    }
    for (int64_t pos = b, col = idx[nd - 1]; pos < e; col = 0) {
      char* p[N];
      for (int k = 0; k < N; ++k) p[k] = row[k] + col * istr[k];
      // whole rows from here along dim nd - 2, or else the part of one row left in the row or the chunk
      int64_t m = col == 0 && nd > 1 ? std::min(rows - idx[nd - 2], (e - pos) / inner) : 0;
      int64_t n = m ? inner : std::min(inner - col, e - pos);
      fn(p, istr, n, ostr, std::max<int64_t>(m, 1));
      pos += n * std::max<int64_t>(m, 1);
      if (m > 1) {
        idx[nd - 2] += m - 1;
        for (int k = 0; k < N; ++k) row[k] += (m - 1) * ostr[k];
      }
      // The next row: step the outer dims like an odometer, moving the row pointers along.
      for (int64_t d = nd - 2; d >= 0 && pos < e; --d) {
        for (int k = 0; k < N; ++k) row[k] += g.strides[k][d];
        if (++idx[d] < g.shape[d]) break;
        for (int k = 0; k < N; ++k) row[k] -= g.shape[d] * g.strides[k][d];
        idx[d] = 0;
      }
    }
  });
}

// fn(char* ptrs[N], const int64_t inner_strides[N], int64_t n): for_each_rows one row at a time.
template <int N, typename F>
void for_each(const Shape& shape, const std::array<const TensorImpl*, N>& ts, F&& fn, int64_t grain = kGrain) {
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
      for (int64_t i = 0; i < n; ++i) o[i] = O(f(C(x[i]), C(y[i])));
    } else if (sx == 1) {
      const C yv = C(*y);
      for (int64_t i = 0; i < n; ++i) o[i] = O(f(C(x[i]), yv));
    } else {
      const C xv = C(*x);
      for (int64_t i = 0; i < n; ++i) o[i] = O(f(xv, C(y[i])));
    }
  }
}

// The body of a for_each_rows<3> over (out, x, y) of dtypes (O, T, T): o = O(f(C(x), C(y))) for each
// element of m rows (pointers p, byte strides s, rows os apart), contiguous and scalar operands through
// binary_run_contig.
template <typename O, typename T, typename C, typename F>
inline void binary_run(char** p, const int64_t* s, int64_t n, const int64_t* os, int64_t m, F f) {
  constexpr int64_t so = sizeof(O), st = sizeof(T);
  if (s[0] == so && (s[1] == st || s[1] == 0) && (s[2] == st || s[2] == 0) && (s[1] | s[2]) != 0) {
    binary_run_contig<O, T, C>(reinterpret_cast<O*>(p[0]), reinterpret_cast<const T*>(p[1]), s[1] / st,
                               reinterpret_cast<const T*>(p[2]), s[2] / st, n, f, m, os[0] / so, os[1] / st,
                               os[2] / st);
    return;
  }
  for (int64_t r = 0; r < m; ++r)
    for (int64_t i = 0; i < n; ++i)
      *reinterpret_cast<O*>(p[0] + r * os[0] + i * s[0]) = O(f(C(*reinterpret_cast<const T*>(p[1] + r * os[1] + i * s[1])),
                                                               C(*reinterpret_cast<const T*>(p[2] + r * os[2] + i * s[2]))));
}

}  // namespace sx::cpu
