// CPU kernels of the indexing family (slots in ops/kernels.h). Kernels wrap negative indices; gather
// and scatter also check every index as they use it, the others receive indices already checked.
// Ops along one dim (gather, scatter, index_select, index_add) see their operands as (outer, n,
// inner) lines, n along the dim, and (but gather) run in parallel over the (outer, inner) positions:
// every destination slot then belongs to one position, which a single thread visits in the order of
// n, so duplicate indices accumulate (or the last write wins) as in a row-major serial loop, without
// races. gather, which writes each output slot once, splits its output into row-major runs instead.
// index_put runs in row-major order on one thread.
#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <vector>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>
#include <utility>
#include <numeric>

#include "cpu/loops.h"
#include "cpu/transpose.h"
#include "ops/kernels.h"
#include "ops/index_math.h"

namespace sx::cpu {
namespace {

inline int64_t wrap(int64_t i, int64_t n) { return i < 0 ? i + n : i; }

// `t` seen with idx's shape and t's strides, except dim `d`, which stays put (stride 0): the
// element at position c of idx is then view[c] + idx[c] * t.strides[d].
Tensor along(const Tensor& t, const Shape& shape, int64_t d) {
  Shape st = t->strides;
  st[size_t(d)] = 0;
  return make_view(t, shape, st, t->offset);
}

// A shape split at dim d into (outer, n, inner) for N operands with their own strides: the element
// offset of outer position o in operand k is lead[k][o], dim d steps by along[k], and the dims after
// d merge into one of stride tail[k]. Built only when those dims do merge for every operand.
template <int N>
struct Split {
  int64_t outer = 1, n = 1, inner = 1;
  std::array<std::vector<int64_t>, N> lead;
  std::array<int64_t, N> along{}, tail{};
};

template <int N>
bool split_at(const Shape& shape, const std::array<const Shape*, N>& st, int64_t d, Split<N>& s) {
  int64_t nd = int64_t(shape.size());
  s.n = shape[size_t(d)];
  for (int k = 0; k < N; ++k) s.along[size_t(k)] = (*st[size_t(k)])[size_t(d)];
  int64_t last = -1;  // the innermost dim after d of size > 1
  for (int64_t i = nd - 1; i > d; --i) {
    if (shape[size_t(i)] == 1) continue;
    if (last >= 0)
      for (int k = 0; k < N; ++k)
        if ((*st[size_t(k)])[size_t(i)] != (*st[size_t(k)])[size_t(last)] * s.inner) return false;
    if (last < 0) last = i;
    s.inner *= shape[size_t(i)];
  }
  for (int k = 0; k < N; ++k) s.tail[size_t(k)] = last < 0 ? 0 : (*st[size_t(k)])[size_t(last)];
  for (int64_t i = 0; i < d; ++i) s.outer *= shape[size_t(i)];
  Shape pos(size_t(d), 0);
  for (int k = 0; k < N; ++k) s.lead[size_t(k)].assign(size_t(s.outer), 0);
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int k = 0; k < N; ++k) {
      int64_t off = 0;
      for (int64_t i = 0; i < d; ++i) off += pos[size_t(i)] * (*st[size_t(k)])[size_t(i)];
      s.lead[size_t(k)][size_t(o)] = off;
    }
    for (int64_t i = d - 1; i >= 0 && ++pos[size_t(i)] == shape[size_t(i)]; --i) pos[size_t(i)] = 0;
  }
  return true;
}

// Calls fn(o, j0, j1) over disjoint runs of (outer, inner) positions, in parallel; each position
// belongs to exactly one call, and the call walks its positions' n elements itself.
template <typename F>
void over_lines(int64_t outer, int64_t n, int64_t inner, F&& fn) {
  parallel_for(outer * inner, std::max<int64_t>(1, kGrain / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e;) {
      int64_t o = i / inner, j0 = i % inner, j1 = std::min(inner, j0 + (e - i));
      fn(o, j0, j1);
      i += j1 - j0;
    }
  });
}

// Calls f(k, j) for every k of [0, n) and j of [j0, j1), each j's k in increasing order. Short runs
// of j walk each line whole (a loop over one j would cost more to set up than its element).
template <typename F>
inline void walk(int64_t n, int64_t j0, int64_t j1, F&& f) {
  if (j1 - j0 < 8) {
    for (int64_t j = j0; j < j1; ++j)
      for (int64_t k = 0; k < n; ++k) f(k, j);
  } else {
    for (int64_t k = 0; k < n; ++k)
      for (int64_t j = j0; j < j1; ++j) f(k, j);
  }
}

// Wraps a negative index i of a dim of size n in place; false when i lies outside [-n, n).
inline bool wrap_checked(int64_t& i, int64_t n) {
  i += i < 0 ? n : 0;
  return uint64_t(i) < uint64_t(n);
}

// Calls f(m, i) for m < cnt in order, i = ix[m * is] wrapped into [0, size); false at the first
// index out of range (the calls before it have run).
template <typename F>
bool each_index(const int64_t* ix, int64_t is, int64_t cnt, int64_t size, F&& f) {
  for (int64_t m = 0; m < cnt; ++m) {
    int64_t i = ix[m * is];
    if (!wrap_checked(i, size)) return false;
    f(m, i);
  }
  return true;
}

// y[m] = x[ix[m]] for m < cnt, negative indices wrapped; false at the first index outside [-size, size)
// (y then holds part of the line). Four indices at a time share one well-predicted test, and their four
// loads come before the stores, so that the loads overlap; a group holding a negative index (or a bad
// one) takes each_index's way.
template <typename T>
bool gather_line(T* y, const T* x, const int64_t* ix, int64_t cnt, int64_t size) {
  const uint64_t n = uint64_t(size);
  int64_t m = 0;
  for (; m + 4 <= cnt; m += 4) {
    const uint64_t a = uint64_t(ix[m]), b = uint64_t(ix[m + 1]), c = uint64_t(ix[m + 2]), d = uint64_t(ix[m + 3]);
    if (__builtin_expect((a >= n) | (b >= n) | (c >= n) | (d >= n), 0)) {
      if (!each_index(ix + m, 1, 4, size, [&](int64_t k, int64_t i) { y[m + k] = x[i]; })) return false;
      continue;
    }
    const T va = x[a], vb = x[b], vc = x[c], vd = x[d];
    y[m] = va, y[m + 1] = vb, y[m + 2] = vc, y[m + 3] = vd;
  }
  return each_index(ix + m, 1, cnt - m, size, [&](int64_t k, int64_t i) { y[m + k] = x[i]; });
}

// y[m * ys] = x[i(m) * step + m * xs] for m < cnt, i(m) = ix[m * is]; false when an index is out of
// range (y then holds part of the run, or other values). Unit compiles the common case of a line along
// the last dim of contiguous operands: ys = is = step = 1, xs = 0.
template <typename T, bool Unit>
bool gather_run(T* y, const T* x, const int64_t* ix, int64_t cnt, int64_t size, int64_t step, int64_t ys,
                int64_t xs, int64_t is) {
  if constexpr (Unit) return gather_line(y, x, ix, cnt, size);
  return each_index(ix, is, cnt, size, [&](int64_t m, int64_t i) { y[m * ys] = x[i * step + m * xs]; });
}

// i + size < 2 size, unsigned, for i in [-size, size): one compare per entry, in vector registers.
bool index_in_range_cpu(const Tensor& idx, int64_t size) {
  const uint64_t* p = reinterpret_cast<const uint64_t*>(idx->data<int64_t>());
  const uint64_t n = uint64_t(size), n2 = 2 * n;
  std::atomic<bool> bad{false};
  parallel_for(idx->numel(), 1 << 16, [&](int64_t b, int64_t e) {
    uint64_t out = 0;
    for (int64_t i = b; i < e; ++i) out |= uint64_t(p[i] + n >= n2);
    if (out) bad.store(true, std::memory_order_relaxed);
  });
  return !bad.load();
}

// Gather has no write conflicts: it splits the index, in row-major order, into runs along rows
// that any thread may take, a row being a whole line along dim d when nothing follows d (inner ==
// 1), else the inner run at one (o, k).
bool gather_cpu(const Tensor& out, const Tensor& x, const Tensor& idx, int64_t d) {
  int64_t size = x->shape[size_t(d)];
  std::atomic<bool> bad{false};
  Split<3> sp;
  if (split_at<3>(idx->shape, {&out->strides, &x->strides, &idx->strides}, d, sp)) {
    bool lines = sp.inner == 1;
    int64_t rows = lines ? sp.outer : sp.outer * sp.n, len = lines ? sp.n : sp.inner;
    SX_DISPATCH_ALL(x->dtype, "gather", [&] {
      using T = scalar_t;
      T* po = out->data<T>();
      const T* px = x->data<T>();
      const int64_t* pi = idx->data<int64_t>();
      const int64_t a0 = sp.along[0], a1 = sp.along[1], a2 = sp.along[2];
      const int64_t ys = lines ? a0 : sp.tail[0], xs = lines ? 0 : sp.tail[1], is = lines ? a2 : sp.tail[2];
      const bool unit = ys == 1 && is == 1 && a1 == 1 && xs == 0;
      over_lines(rows, 1, len, [&](int64_t r, int64_t m0, int64_t m1) {
        int64_t o = lines ? r : r / sp.n, k = lines ? 0 : r % sp.n;
        T* y = po + sp.lead[0][size_t(o)] + k * a0 + m0 * ys;
        const T* xo = px + sp.lead[1][size_t(o)] + m0 * xs;
        const int64_t* io = pi + sp.lead[2][size_t(o)] + k * a2 + m0 * is;
        bool ok = unit ? gather_run<T, true>(y, xo, io, m1 - m0, size, a1, ys, xs, is)
                       : gather_run<T, false>(y, xo, io, m1 - m0, size, a1, ys, xs, is);
        if (!ok) bad.store(true, std::memory_order_relaxed);
      });
    });
    return !bad.load();
  }
  Tensor xv = along(x, idx->shape, d);
  int64_t step = x->strides[size_t(d)];
  SX_DISPATCH_ALL(x->dtype, "gather", [&] {
    using T = scalar_t;
    for_each<3>(idx->shape, {out.get(), idx.get(), xv.get()}, [&](char** p, const int64_t* s, int64_t cnt) {
      bool ok = each_index(reinterpret_cast<const int64_t*>(p[1]), s[1] / int64_t(sizeof(int64_t)), cnt, size,
                           [&](int64_t m, int64_t i) {
                             *reinterpret_cast<T*>(p[0] + m * s[0]) = reinterpret_cast<const T*>(p[2] + m * s[2])[i * step];
                           });
      if (!ok) bad.store(true, std::memory_order_relaxed);
    });
  });
  return !bad.load();
}

// y[ix[m]] receives s[m] for m < cnt in order (a line along the last dim of contiguous operands): one
// element after the other, the out-of-order core overlapping the loads of the next elements with the
// stores before them (a repeated index is a store forwarded to the next load); an index outside
// [0, size) takes each_index's way (negative ones wrap; false at the first out of range).
template <typename T, ScatterOp Op>
bool scatter_line(T* y, const int64_t* ix, const T* s, int64_t cnt, int64_t size) {
  const uint64_t n = uint64_t(size);
  auto one = [&](int64_t m) {
    const uint64_t a = uint64_t(ix[m]);
    if (__builtin_expect(a >= n, 0)) {
      const T* sm = s + m;
      return each_index(ix + m, 1, 1, size, [y, sm](int64_t k, int64_t i) { y[i] = scatter_value<T>(Op, y[i], sm[k]); });
    }
    y[a] = scatter_value<T>(Op, y[a], s[m]);
    return true;
  };
  // Four at a time with one range test: a loop of a few instructions ran 15-20% slower or faster with
  // where the linker placed it (across a 64-byte line of code or not); four elements a pass make the
  // loop's own overhead small either way.
  int64_t m = 0;
  for (; m + 4 <= cnt; m += 4) {
    const uint64_t a0 = uint64_t(ix[m]), a1 = uint64_t(ix[m + 1]), a2 = uint64_t(ix[m + 2]), a3 = uint64_t(ix[m + 3]);
    if (__builtin_expect((a0 >= n) | (a1 >= n) | (a2 >= n) | (a3 >= n), 0)) {
      for (int64_t k = m; k < m + 4; ++k)
        if (!one(k)) return false;
      continue;
    }
    y[a0] = scatter_value<T>(Op, y[a0], s[m]);
    y[a1] = scatter_value<T>(Op, y[a1], s[m + 1]);
    y[a2] = scatter_value<T>(Op, y[a2], s[m + 2]);
    y[a3] = scatter_value<T>(Op, y[a3], s[m + 3]);
  }
  for (; m < cnt; ++m)
    if (!one(m)) return false;
  return true;
}

// y[i(m) * step + m * ys] receives s[m * ss] for m < cnt in order, i(m) = ix[m * is]; false at the
// first index out of range (y then holds part of the run). Unit compiles the common case of a line
// along the last dim of contiguous operands: step = is = ss = 1, ys = 0.
template <typename T, ScatterOp Op, bool Unit>
bool scatter_run(T* y, const int64_t* ix, const T* s, int64_t cnt, int64_t size, int64_t step, int64_t ys,
                 int64_t is, int64_t ss) {
  if constexpr (Unit) return scatter_line<T, Op>(y, ix, s, cnt, size);
  return each_index(ix, is, cnt, size, [&](int64_t m, int64_t i) {
    T& dst = y[i * step + m * ys];
    dst = scatter_value<T>(Op, dst, s[m * ss]);
  });
}

// Destination lines up to this many bytes are prefetched one outer position ahead (scatter_lines).
constexpr int64_t kPrefetchLine = 32768;

// Each (outer, inner) position's line is visited by one thread in the order of k, so duplicate
// indices meet in a fixed order whatever the thread count. A short run of positions walks each
// line whole; a longer one walks the run at each k in turn.
template <typename T, ScatterOp Op>
bool scatter_lines(const Split<3>& sp, int64_t size, T* po, const int64_t* pi, const T* ps) {
  const int64_t a0 = sp.along[0], a1 = sp.along[1], a2 = sp.along[2];
  const int64_t t0 = sp.tail[0], t1 = sp.tail[1], t2 = sp.tail[2];
  const bool unit = a0 == 1 && a1 == 1 && a2 == 1;
  std::atomic<bool> bad{false};
  over_lines(sp.outer, sp.n, sp.inner, [&](int64_t o, int64_t j0, int64_t j1) {
    T* yo = po + sp.lead[0][size_t(o)];
    const int64_t* io = pi + sp.lead[1][size_t(o)];
    const T* so = ps + sp.lead[2][size_t(o)];
    bool ok = true;
    if (unit && o + 1 < sp.outer && size * int64_t(sizeof(T)) <= kPrefetchLine) {
      // The destinations of a line are random, which the hardware prefetcher does not follow: ask for
      // the next outer position's line while this one is scattered.
      const char* next = reinterpret_cast<const char*>(po + sp.lead[0][size_t(o + 1)] + j0 * t0);
      for (int64_t b = 0; b < size * int64_t(sizeof(T)); b += 64) __builtin_prefetch(next + b, 1);
    }
    if (j1 - j0 < 8) {
      for (int64_t j = j0; j < j1 && ok; ++j)
        ok = unit ? scatter_run<T, Op, true>(yo + j * t0, io + j * t1, so + j * t2, sp.n, size, a0, 0, a1, a2)
                  : scatter_run<T, Op, false>(yo + j * t0, io + j * t1, so + j * t2, sp.n, size, a0, 0, a1, a2);
    } else {
      for (int64_t k = 0; k < sp.n && ok; ++k)
        ok = scatter_run<T, Op, false>(yo + j0 * t0, io + k * a1 + j0 * t1, so + k * a2 + j0 * t2, j1 - j0, size,
                                       a0, t0, t1, t2);
    }
    if (!ok) bad.store(true, std::memory_order_relaxed);
  });
  return !bad.load();
}

bool scatter_cpu(const Tensor& out, const Tensor& idx, const Tensor& src, int64_t d, ScatterOp op) {
  Split<3> sp;
  Shape ost = out->strides;
  ost[size_t(d)] = 0;  // out's lines start at dim d's origin; the index picks the position
  int64_t size = out->shape[size_t(d)];
  bool ok = true;
  if (split_at<3>(idx->shape, {&ost, &idx->strides, &src->strides}, d, sp)) {
    sp.along[0] = out->strides[size_t(d)];
    SX_DISPATCH_ALL(out->dtype, "scatter", [&] {
      using T = scalar_t;
      T* po = out->data<T>();
      const int64_t* pi = idx->data<int64_t>();
      const T* ps = src->data<T>();
      switch (op) {
        case ScatterOp::Set: ok = scatter_lines<T, ScatterOp::Set>(sp, size, po, pi, ps); break;
        case ScatterOp::Add: ok = scatter_lines<T, ScatterOp::Add>(sp, size, po, pi, ps); break;
        case ScatterOp::Max: ok = scatter_lines<T, ScatterOp::Max>(sp, size, po, pi, ps); break;
        case ScatterOp::Min: ok = scatter_lines<T, ScatterOp::Min>(sp, size, po, pi, ps); break;
        case ScatterOp::Mul: ok = scatter_lines<T, ScatterOp::Mul>(sp, size, po, pi, ps); break;
      }
    });
    return ok;
  }
  Tensor ov = along(out, idx->shape, d);
  Tensor sv = make_view(src, idx->shape, src->strides, src->offset);
  int64_t step = out->strides[size_t(d)];
  SX_DISPATCH_ALL(out->dtype, "scatter", [&] {
    using T = scalar_t;
    auto body = [&](char** p, const int64_t* s, int64_t cnt) {
      ok = ok && each_index(reinterpret_cast<const int64_t*>(p[1]), s[1] / int64_t(sizeof(int64_t)), cnt, size,
                            [&](int64_t m, int64_t i) {
                              T* dst = reinterpret_cast<T*>(p[0] + m * s[0]) + i * step;
                              *dst = scatter_value<T>(op, *dst, *reinterpret_cast<const T*>(p[2] + m * s[2]));
                            });
    };
    for_each<3>(idx->shape, {ov.get(), idx.get(), sv.get()}, body, INT64_MAX);  // one thread: duplicates
  });
  return ok;
}

void index_select_cpu(const Tensor& out, const Tensor& x, const Tensor& idx, int64_t d) {
  Split<2> sp;
  bool ok = split_at<2>(out->shape, {&out->strides, &x->strides}, d, sp);  // out contiguous: always splits
  SX_CHECK(ok, RuntimeError, "[index_select] the output must be contiguous");
  int64_t size = x->shape[size_t(d)];
  const int64_t* pi = idx->data<int64_t>();
  SX_DISPATCH_ALL(x->dtype, "index_select", [&] {
    using T = scalar_t;
    T* po = out->data<T>();
    const T* px = x->data<T>();
    const int64_t a0 = sp.along[0], a1 = sp.along[1], t1 = sp.tail[1];
    if (sp.inner == 1) {  // one element per index: a gather along each line, through offsets wrapped once
      std::vector<int64_t> off(size_t(sp.n));
      for (int64_t k = 0; k < sp.n; ++k) off[size_t(k)] = wrap(pi[k], size) * a1;
      const int64_t* of = off.data();
      over_lines(sp.outer, sp.n, 1, [&](int64_t o, int64_t, int64_t) {
        T* __restrict yo = po + sp.lead[0][size_t(o)];
        const T* __restrict xo = px + sp.lead[1][size_t(o)];
        if (a0 != 1) {
          for (int64_t k = 0; k < sp.n; ++k) yo[k * a0] = xo[of[k]];
          return;
        }
        // Four per step: a loop of one load pair and a store ran 1.4x slower when the linker placed it
        // across a 64-byte line, which the unrolled body does not notice.
        int64_t k = 0;
        for (; k + 4 <= sp.n; k += 4) {
          T v0 = xo[of[k]], v1 = xo[of[k + 1]], v2 = xo[of[k + 2]], v3 = xo[of[k + 3]];
          yo[k] = v0, yo[k + 1] = v1, yo[k + 2] = v2, yo[k + 3] = v3;
        }
        for (; k < sp.n; ++k) yo[k] = xo[of[k]];
      });
      return;
    }
    if (t1 == 1 && sp.outer * sp.n >= 64) {
      // Many rows: each task copies whole rows. Splitting a short row between threads (over_lines' split
      // of `inner`) had them write halves of one cache line, 10x slower for rows of 16 floats.
      const int64_t inner = sp.inner, n = sp.n;
      parallel_for(sp.outer * n, std::max<int64_t>(1, kGrain / inner), [&](int64_t b, int64_t e) {
        for (int64_t o = b / n, k = b % n, i = b; i < e; ++o, k = 0) {  // line o, from index k
          const T* xo = px + sp.lead[1][size_t(o)];
          T* yo = po + sp.lead[0][size_t(o)];
          for (; k < n && i < e; ++k, ++i) {
            const T* __restrict xr = xo + wrap(pi[k], size) * a1;
            T* __restrict y = yo + k * a0;
            if (inner <= 64) {  // a loop the compiler vectorises: a call to memmove cost more than short rows
              for (int64_t j = 0; j < inner; ++j) y[j] = xr[j];
            } else {
              std::copy(xr, xr + inner, y);
            }
          }
        }
      });
      return;
    }
    over_lines(sp.outer, sp.n, sp.inner, [&](int64_t o, int64_t j0, int64_t j1) {
      T* yo = po + sp.lead[0][size_t(o)];
      const T* xo = px + sp.lead[1][size_t(o)];
      if (j1 - j0 == 1) {  // one element of a line
        for (int64_t k = 0; k < sp.n; ++k) yo[k * a0 + j0] = xo[wrap(pi[k], size) * a1 + j0 * t1];
        return;
      }
      for (int64_t k = 0; k < sp.n; ++k) {
        T* y = yo + k * a0;
        const T* xr = xo + wrap(pi[k], size) * a1;
        if (t1 == 1) std::copy(xr + j0, xr + j1, y + j0);  // out's tail is contiguous
        else for (int64_t j = j0; j < j1; ++j) y[j] = xr[j * t1];
      }
    });
  });
}

void index_add_cpu(const Tensor& out, const Tensor& idx, const Tensor& src, int64_t d, const Scalar& alpha) {
  Split<2> sp;
  Shape ost = out->strides;
  ost[size_t(d)] = 0;
  bool ok = split_at<2>(src->shape, {&ost, &src->strides}, d, sp);
  SX_CHECK(ok, RuntimeError, "[index_add] the source must be contiguous after dim ", d);
  sp.along[0] = out->strides[size_t(d)];
  int64_t size = out->shape[size_t(d)];
  const int64_t* pi = idx->data<int64_t>();
  SX_DISPATCH_ALL(out->dtype, "index_add", [&] {
    using T = scalar_t;
    using C = acc_t<T>;
    T* po = out->data<T>();
    const T* ps = src->data<T>();
    C a = alpha.to<C>();
    const int64_t a0 = sp.along[0], a1 = sp.along[1], t0 = sp.tail[0], t1 = sp.tail[1];
    if constexpr (!std::is_same_v<T, bool>) {
      if (sp.inner == 1 && sp.outer >= 8) {  // one element per index on many lines: offsets wrapped once
        std::vector<int64_t> off(size_t(sp.n));
        for (int64_t k = 0; k < sp.n; ++k) off[size_t(k)] = wrap(pi[k], size) * a0;
        const int64_t* of = off.data();
        over_lines(sp.outer, sp.n, 1, [&](int64_t o, int64_t, int64_t) {
          T* yo = po + sp.lead[0][size_t(o)];
          const T* so = ps + sp.lead[1][size_t(o)];
          for (int64_t k = 0; k < sp.n; ++k) yo[of[k]] = T(C(yo[of[k]]) + a * C(so[k * a1]));
        });
        return;
      }
    }
    if (sp.outer == 1 && t0 == 1 && t1 == 1 && sp.inner < 1024 && size >= 2) {
      // Short rows along dim 0: each task owns a range of the output's rows and adds, in index order, the
      // source rows aimed at them (every task reads the whole index). Splitting the short rows themselves
      // had threads writing parts of one cache line; the result is the same as one thread's. Rows under 8
      // elements run on one thread: there the index scan, not the adds, is the work.
      const int64_t inner = sp.inner, n = sp.n;
      int64_t threads = inner >= 8 && n * inner > kGrain ? get_num_threads() : 1;
      int64_t grain = (size + threads - 1) / threads;
      parallel_for(size, std::max<int64_t>(1, grain), [&](int64_t b, int64_t e) {
        for (int64_t k = 0; k < n; ++k) {
          int64_t r = wrap(pi[k], size);
          if (r < b || r >= e) continue;
          T* y = po + r * a0;
          const T* x = ps + k * a1;
          if constexpr (std::is_same_v<T, bool>) {
            for (int64_t j = 0; j < inner; ++j) y[j] = y[j] || (a && x[j]);
          } else {
            for (int64_t j = 0; j < inner; ++j) y[j] = T(C(y[j]) + a * C(x[j]));
          }
        }
      });
      return;
    }
    over_lines(sp.outer, sp.n, sp.inner, [&](int64_t o, int64_t j0, int64_t j1) {
      T* yo = po + sp.lead[0][size_t(o)];
      const T* so = ps + sp.lead[1][size_t(o)];
      walk(sp.n, j0, j1, [&](int64_t k, int64_t j) {
        T& y = yo[wrap(pi[k], size) * a0 + j * t0];
        if constexpr (std::is_same_v<T, bool>) y = y || (a && so[k * a1 + j * t1]);
        else y = T(C(y) + a * C(so[k * a1 + j * t1]));
      });
    });
  });
}

// Where each chunk's results start, for results written chunk by chunk in parallel: count(c) of every
// chunk c < chunks, counted over the pool, summed into start[c] (start[chunks] is the total). Allocated
// before the parallel regions that use it.
template <typename Count>
std::vector<int64_t> chunk_starts(int64_t chunks, Count count) {
  std::vector<int64_t> start(size_t(chunks) + 1, 0);
  parallel_for(chunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) start[size_t(c) + 1] = count(c);
  });
  for (int64_t c = 0; c < chunks; ++c) start[size_t(c) + 1] += start[size_t(c)];
  return start;
}

// Chunks of the mask counted (then copied) in parallel; the split depends on the size only.
constexpr int64_t kMaskChunk = 16384;

void masked_select_cpu(const Tensor& out, const Tensor& x, const Tensor& mask) {
  int64_t m = mask->numel(), block = m ? x->numel() / m : 0;
  int64_t chunks = (m + kMaskChunk - 1) / kMaskChunk;
  const bool* pm = mask->data<bool>();
  const std::vector<int64_t> start = chunk_starts(chunks, [&](int64_t c) {
    const bool* q = pm + c * kMaskChunk;
    return int64_t(std::count(q, q + std::min(kMaskChunk, m - c * kMaskChunk), true));
  });
  size_t item = itemsize(x->dtype), bytes = size_t(block) * item;
  const char* px = x->raw();
  char* po = out->raw();
  SX_DISPATCH_ALL(x->dtype, "masked_select", [&] {
    using T = scalar_t;
    parallel_for(chunks, 1, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) {
        int64_t at = start[size_t(c)], end = std::min(m, (c + 1) * kMaskChunk);
        if (block == 1) {  // one element per mask position: a branch-free compaction
          const T* xs = reinterpret_cast<const T*>(px);
          T* ys = reinterpret_cast<T*>(po);
          int64_t stop = start[size_t(c) + 1];  // never write past this chunk's share of out
          for (int64_t i = c * kMaskChunk; i < end && at < stop; ++i) {
            ys[at] = xs[i];
            at += pm[i];
          }
        } else {
          for (int64_t i = c * kMaskChunk; i < end; ++i)
            if (pm[i]) std::memcpy(po + size_t(at++) * bytes, px + size_t(i) * bytes, bytes);
        }
      }
    });
  });
}

// Element offset into a contiguous tensor of the leading dims named by the index tensors, at
// broadcast index position i.
inline int64_t front_offset(const Tensor& t, const TensorList& idx, int64_t i) {
  int64_t off = 0;
  for (size_t j = 0; j < idx.size(); ++j) off += wrap(idx[j]->data<int64_t>()[i], t->shape[j]) * t->strides[j];
  return off;
}

void index_front_cpu(const Tensor& out, const Tensor& x, const TensorList& idx) {
  int64_t nb = idx.empty() ? 1 : idx[0]->numel();
  size_t item = itemsize(x->dtype), bytes = nb ? size_t(out->numel() / nb) * item : 0;
  parallel_for(nb, std::max<int64_t>(1, kGrain / std::max<int64_t>(int64_t(bytes / item), 1)), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      std::memcpy(out->raw() + size_t(i) * bytes, x->raw() + front_offset(x, idx, i) * int64_t(item), bytes);
  });
}

// Blocks are written in index order, so that a repeated index ends with its last block (or sums its
// blocks in order). Large puts split the blocks' columns among the threads (pieces a multiple of 64 bytes
// wide): every element still sees its writes in index order, so the result does not depend on the split
// (528 rows of 792 floats put into (1320, 792) at 2 threads: 115 -> 78-84 us).
constexpr int64_t kPutSplitBytes = 1 << 16;
void index_put_front_cpu(const Tensor& out, const TensorList& idx, const Tensor& values, bool accumulate) {
  int64_t nb = idx.empty() ? 1 : idx[0]->numel();
  int64_t block = nb ? values->numel() / nb : 0;
  std::vector<int64_t> dst_at(size_t(nb), 0);  // each block's offset in out
  for (int64_t i = 0; i < nb; ++i) dst_at[size_t(i)] = front_offset(out, idx, i);
  SX_DISPATCH_ALL(out->dtype, "index_put", [&] {
    using T = scalar_t;
    T* o = out->data<T>();
    const T* v = values->data<T>();
    auto columns = [&](int64_t c0, int64_t c1) {
      for (int64_t i = 0; i < nb; ++i) {
        T* dst = o + dst_at[size_t(i)];
        const T* src = v + i * block;
        if (!accumulate) std::copy(src + c0, src + c1, dst + c0);
        else for (int64_t e = c0; e < c1; ++e) dst[e] = T(acc_t<T>(dst[e]) + acc_t<T>(src[e]));
      }
    };
    constexpr int64_t line = std::max<int64_t>(1, 64 / int64_t(sizeof(T)));  // elements per 64 bytes
    const int64_t pieces = values->numel() * int64_t(sizeof(T)) < kPutSplitBytes
                               ? 1 : std::min<int64_t>(get_num_threads(), block / line);
    if (pieces <= 1) return columns(0, block);
    parallel_for(pieces, 1, [&](int64_t p0, int64_t p1) {
      columns(block * p0 / pieces / line * line, p1 == pieces ? block : block * p1 / pieces / line * line);
    });
  });
}

// Rows at least this long take the radix sort: its four passes of 256 counts cost more than std::sort
// on short rows (48 values: 0.9 against 0.3 us a row).
constexpr int64_t kRadixRow = 128;

// Sorts words (key << 32 | position), built in position order, by their keys: a least-significant-digit
// radix sort of the key's four bytes (each pass a stable counting sort, skipped when every word has
// the same byte there), so equal keys keep their position order and the result is that of sorting the
// words as integers. `tmp` holds n words.
void radix_sort_keys(uint64_t* w, uint64_t* tmp, int64_t n) {
  for (int shift = 32; shift < 64; shift += 8) {
    int64_t count[256] = {};
    for (int64_t i = 0; i < n; ++i) ++count[(w[i] >> shift) & 0xff];
    if (count[(w[0] >> shift) & 0xff] == n) continue;  // one digit value: the pass would change nothing
    int64_t at = 0;
    for (int64_t& c : count) {
      int64_t m = c;
      c = at, at += m;
    }
    for (int64_t i = 0; i < n; ++i) tmp[count[(w[i] >> shift) & 0xff]++] = w[i];
    std::copy(tmp, tmp + n, w);
  }
}

// Rows of values of at most 32 bits: each (key, position) pair packed into one 64-bit word, sorted as
// plain integers (a radix sort of the keys when most of a long row is wanted).
template <typename T, typename C>
void sort_packed(const T* row, int64_t n, int64_t k, bool descending, std::vector<uint64_t>& keyed,
                 std::vector<uint64_t>& tmp, T* vo, int64_t* io) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t key = sort_key32<C>(C(row[i]));
    keyed[size_t(i)] = (uint64_t(descending ? ~key : key) << 32) | uint64_t(i);
  }
  if (n >= kRadixRow && 2 * k >= n) {
    tmp.resize(size_t(n));
    radix_sort_keys(keyed.data(), tmp.data(), n);
  } else if (k == n) {
    std::sort(keyed.begin(), keyed.end());
  } else {
    std::partial_sort(keyed.begin(), keyed.begin() + k, keyed.end());
  }
  for (int64_t j = 0; j < k; ++j) {
    io[j] = int64_t(keyed[size_t(j)] & 0xffffffffu);
    vo[j] = row[io[j]];
  }
}

// The k (<= kFewBest) best of a row in one pass, kept sorted in `best` (key, position): keys a block
// at a time, and a block with none below the k-th best is skipped. K is the key width (32 bits for
// values of at most 32 bits, so that the block's keys and their minimum vectorise).
template <typename K, typename T, typename KeyFn>
void few_best(const T* row, int64_t n, int64_t k, bool descending, std::vector<std::pair<uint64_t, int64_t>>& best,
              T* vo, int64_t* io, KeyFn key_of) {
  using C = std::conditional_t<std::is_same_v<T, bool>, bool, acc_t<T>>;
  constexpr int64_t kBlk = 64;
  const K flip = descending ? ~K(0) : K(0);
  K block[kBlk];
  int64_t m = 0;
  for (int64_t i0 = 0; i0 < n; i0 += kBlk) {
    int64_t len = std::min(kBlk, n - i0);
    K lo = ~K(0);
    for (int64_t i = 0; i < len; ++i) {
      block[i] = K(key_of(C(row[i0 + i]))) ^ flip;
      lo = std::min(lo, block[i]);
    }
    if (m == k && lo >= best[size_t(k - 1)].first) continue;
    for (int64_t i = 0; i < len; ++i) {
      uint64_t key = block[i];
      if (m == k && key >= best[size_t(k - 1)].first) continue;  // equal keys keep the earlier position
      int64_t j = m < k ? m++ : k - 1;
      for (; j > 0 && best[size_t(j - 1)].first > key; --j) best[size_t(j)] = best[size_t(j - 1)];
      best[size_t(j)] = {key, i0 + i};
    }
  }
  for (int64_t j = 0; j < k; ++j) io[j] = best[size_t(j)].second, vo[j] = row[io[j]];
}

// Each row is sorted as (key, position) pairs: positions break ties, so every sort is stable, and the
// comparisons read no row data. A top-k of a few (k <= kFewBest) keeps them in one pass instead.
constexpr int64_t kFewBest = 16;

// Sorts one row of n into its first k values and positions, with scratch kept across rows.
template <typename T>
struct RowSorter {
  using C = std::conditional_t<std::is_same_v<T, bool>, bool, acc_t<T>>;
  std::vector<std::pair<uint64_t, int64_t>> keyed;
  std::vector<uint64_t> keyed64, tmp64;

  void operator()(const T* row, int64_t n, int64_t k, bool descending, T* vo, int64_t* io) {
    if constexpr (sizeof(T) <= 4) {
      if (k > kFewBest && n <= int64_t(UINT32_MAX)) {
        keyed64.resize(size_t(n));
        sort_packed<T, C>(row, n, k, descending, keyed64, tmp64, vo, io);
        return;
      }
    }
    if (k <= kFewBest) {  // a few best: one pass keeping them sorted, a compare per element
      keyed.resize(size_t(k));
      if constexpr (sizeof(T) <= 4) few_best<uint32_t>(row, n, k, descending, keyed, vo, io, sort_key32<C>);
      else few_best<uint64_t>(row, n, k, descending, keyed, vo, io, sort_key<C>);
      return;
    }
    keyed.resize(size_t(n));
    for (int64_t i = 0; i < n; ++i) {
      uint64_t key = sort_key<C>(C(row[i]));
      keyed[size_t(i)] = {descending ? ~key : key, i};
    }
    if (k == n) std::sort(keyed.begin(), keyed.end());
    else std::partial_sort(keyed.begin(), keyed.begin() + k, keyed.end());
    for (int64_t j = 0; j < k; ++j) {
      io[j] = keyed[size_t(j)].second;
      vo[j] = row[io[j]];
    }
  }
};

// Elements a gathered group of strided rows may hold: G rows of n, G at most kSortCols.
constexpr int64_t kSortTile = 1 << 15, kSortCols = 16;

// Sorts x (outer, n, inner) along its middle dim into values and indices (outer, k, inner). With
// inner > 1 the rows are strided: G neighbouring ones are gathered at a time (each of the n reads
// takes G contiguous elements), sorted from the buffer, and their k results written back G at a time,
// so the op needs no transposed copies in or out.
void sort_dim_cpu(const Tensor& x, const Tensor& values, const Tensor& indices, bool descending) {
  const int64_t outer = x->shape[0], n = x->shape[1], inner = x->shape[2], k = values->shape[1];
  if (k == 0 || n == 0) return;
  const int64_t G = inner == 1 ? 1 : std::clamp<int64_t>(kSortTile / n, 1, std::min(inner, kSortCols));
  const int64_t groups = (inner + G - 1) / G;
  SX_DISPATCH_ALL(x->dtype, "sort", [&] {
    using T = scalar_t;
    const T* xs = x->data<T>();
    T* vs = values->data<T>();
    int64_t* is = indices->data<int64_t>();
    parallel_for(outer * groups, std::max<int64_t>(1, 4096 / (n * G)), [&](int64_t b, int64_t e) {
      RowSorter<T> sort;
      const size_t tile = inner == 1 ? 0 : size_t(G * (n + k));
      std::unique_ptr<T[]> buf(new T[tile]);  // G gathered rows of n, then their G rows of k values
      std::vector<int64_t> ib(inner == 1 ? 0 : size_t(G * k));
      for (int64_t u = b; u < e; ++u) {
        const int64_t o = u / groups, i0 = u % groups * G, g = std::min(G, inner - i0);
        const T* src = xs + o * n * inner + i0;
        T* vo = vs + o * k * inner + i0;
        int64_t* io = is + o * k * inner + i0;
        if (inner == 1) {
          sort(src, n, k, descending, vo, io);
          continue;
        }
        T* rows = buf.get();
        T* vb = rows + G * n;
        constexpr int64_t es = sizeof(T), is8 = sizeof(int64_t);
        transpose_tile<T>(reinterpret_cast<char*>(rows), n * es, reinterpret_cast<const char*>(src), inner * es, 0, g,
                          0, n);
        for (int64_t c = 0; c < g; ++c) sort(rows + c * n, n, k, descending, vb + c * k, ib.data() + c * k);
        transpose_tile<T>(reinterpret_cast<char*>(vo), inner * es, reinterpret_cast<const char*>(vb), k * es, 0, k, 0, g);
        transpose_tile<int64_t>(reinterpret_cast<char*>(io), inner * is8, reinterpret_cast<const char*>(ib.data()),
                                k * is8, 0, k, 0, g);
      }
    });
  });
}

// Position of the k-th smallest of the row keys [0, n) (ties by position, as in the stable sort) by
// nth_element: 32-bit keys share a 64-bit word with their position (one integer compare, half the bytes
// moved of (key, position) pairs), wider ones go in pairs.
template <typename K> int64_t kth_of(std::vector<K>& keyed, int64_t k) {
  std::nth_element(keyed.begin(), keyed.begin() + (k - 1), keyed.end());
  if constexpr (std::is_same_v<K, uint64_t>) return int64_t(keyed[size_t(k - 1)] & 0xffffffffu);
  else return keyed[size_t(k - 1)].second;
}

// The k-th smallest of each strided row of x (outer, n, inner), ties by position; with nan_wins a row
// holding a NaN gives its first NaN.
void kth_dim_cpu(const Tensor& x, const Tensor& values, const Tensor& indices, int64_t k, bool nan_wins) {
  const int64_t outer = x->shape[0], n = x->shape[1], inner = x->shape[2];
  SX_DISPATCH_ALL(x->dtype, "kthvalue", [&] {
    using T = scalar_t;
    using C = std::conditional_t<std::is_same_v<T, bool>, bool, acc_t<T>>;
    const T* xs = x->data<T>();
    T* vs = values->data<T>();
    int64_t* is = indices->data<int64_t>();
    auto rows = [&]<typename K>(int64_t b, int64_t e) {
      std::vector<K> keyed(static_cast<size_t>(n));
      for (int64_t u = b; u < e; ++u) {
        const T* row = xs + u / inner * n * inner + u % inner;
        int64_t nan = -1;
        for (int64_t i = 0; i < n; ++i) {
          const C v = C(row[i * inner]);
          if (nan < 0 && v != v) nan = i;
          if constexpr (std::is_same_v<K, uint64_t>)
            keyed[size_t(i)] = (uint64_t(sort_key32<C>(v)) << 32) | uint64_t(i);
          else
            keyed[size_t(i)] = {sort_key<C>(v), i};
        }
        const int64_t p = nan_wins && nan >= 0 ? nan : kth_of(keyed, k);
        is[u] = p;
        vs[u] = row[p * inner];
      }
    };
    parallel_for(outer * inner, std::max<int64_t>(1, 4096 / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
      if constexpr (sizeof(T) <= 4)
        if (n <= int64_t(UINT32_MAX)) return rows.template operator()<uint64_t>(b, e);
      rows.template operator()<std::pair<uint64_t, int64_t>>(b, e);
    });
  });
}

// The nonzero bytes among p[0, n), eight at a time in one word: a byte's high bit after
// ((b & 0x7f) + 0x7f) | b is set exactly when b != 0; the 0/1 flags add up in byte lanes for at most
// 255 words, then the lanes are summed in 16-bit lanes and gathered by one multiply.
int64_t count_nonzero_bytes(const uint8_t* p, int64_t n) {
  constexpr uint64_t kLow7 = 0x7f7f7f7f7f7f7f7full, kOnes = 0x0101010101010101ull, kEven = 0x00ff00ff00ff00ffull;
  int64_t total = 0, i = 0;
  while (n - i >= 8) {
    const int64_t words = std::min<int64_t>((n - i) / 8, 255);
    uint64_t lanes = 0;
    for (int64_t k = 0; k < words; ++k) {
      uint64_t w;
      std::memcpy(&w, p + i + 8 * k, 8);
      lanes += ((((w & kLow7) + kLow7) | w) >> 7) & kOnes;
    }
    i += 8 * words;
    lanes = (lanes & kEven) + ((lanes >> 8) & kEven);
    total += int64_t((lanes * 0x0001000100010001ull) >> 48);
  }
  for (; i < n; ++i) total += p[i] != 0;
  return total;
}

// The true bytes of each row of a contiguous bool (rows, n) block: rows longer than a segment are
// counted a segment at a time over the pool (counts are exact integers: any split gives the same total).
std::vector<int64_t> true_counts(const Tensor& x, int64_t rows, int64_t n) {
  const uint8_t* p = reinterpret_cast<const uint8_t*>(x->data<bool>());
  constexpr int64_t kSeg = 1 << 16;
  const int64_t segs = std::max<int64_t>(1, (n + kSeg - 1) / kSeg);  // segments of each row
  std::vector<int64_t> part(size_t(rows * segs), 0), counts(size_t(rows), 0);
  parallel_for(rows * segs, std::max<int64_t>(1, kGrain / std::max<int64_t>(std::min(n, kSeg), 1)),
               [&](int64_t b, int64_t e) {
                 for (int64_t t = b; t < e; ++t) {
                   const int64_t r = t / segs, lo = t % segs * kSeg;
                   part[size_t(t)] = count_nonzero_bytes(p + r * n + lo, std::min(kSeg, n - lo));
                 }
               });
  for (int64_t t = 0; t < rows * segs; ++t) counts[size_t(t / segs)] += part[size_t(t)];
  return counts;
}

int64_t count_nonzero_cpu(const Tensor& x) { return true_counts(x, 1, x->numel())[0]; }

void count_true_cpu(const Tensor& x, const Tensor& out, int64_t rows, int64_t n) {
  const std::vector<int64_t> counts = true_counts(x, rows, n);
  SX_DISPATCH_ALL(out->dtype, "sum", [&] {
    scalar_t* o = out->data<scalar_t>();
    for (int64_t r = 0; r < rows; ++r) o[r] = scalar_t(counts[size_t(r)]);
  });
}

// The coordinates of the true elements of a contiguous bool x, row-major, in chunks of kGrain elements over
// the pool: each chunk's true count first, then each chunk writes its rows at its offset. Within a chunk
// the coordinates of the leading dims change once per run along the last dim; only the last one moves
// with the element (it took a carry loop and a copy of every coordinate per element: 6 ns an element).
// Blocks of 64 elements go into a buffer without branches (every element's coordinates are stored, and
// the write position advances only for a true one: a random mask mispredicted every other branch), eight
// zero bytes at a time are skipped, and the buffer's rows are copied out.
void nonzero_cpu(const Tensor& out, const Tensor& x) {
  if (x->dim() == 0) return;  // no coordinates to write
  const uint8_t* p = reinterpret_cast<const uint8_t*>(x->data<bool>());
  const int64_t nd = x->dim(), numel = x->numel(), last = x->shape.back();
  const int64_t chunks = (numel + kGrain - 1) / kGrain;
  const std::vector<int64_t> start = chunk_starts(chunks, [&](int64_t k) {
    return count_nonzero_bytes(p + k * kGrain, std::min(kGrain, numel - k * kGrain));
  });
  int64_t* o0 = out->data<int64_t>();
  constexpr int64_t kBlock = 64;
  parallel_for(chunks, 1, [&](int64_t b, int64_t e) {
    Shape c(size_t(nd), 0);
    std::vector<int64_t> buf(size_t(kBlock * nd));
    for (int64_t k = b; k < e; ++k) {
      const int64_t i0 = k * kGrain, i1 = std::min(numel, i0 + kGrain);
      int64_t* o = o0 + start[size_t(k)] * nd;
      for (int64_t d = nd - 1, t = i0; d >= 0; --d) c[size_t(d)] = t % x->shape[size_t(d)], t /= x->shape[size_t(d)];
      for (int64_t i = i0; i < i1;) {
        const int64_t run = std::min(i1, i + last - c[size_t(nd - 1)]), j0 = c[size_t(nd - 1)] - i;
        while (i < run) {
          const int64_t m = std::min(kBlock, run - i);
          int64_t* q = buf.data();
          for (int64_t t = 0; t < m;) {
            uint64_t w = 1;
            if (m - t >= 8) std::memcpy(&w, p + i + t, 8);
            if (w == 0) {
              t += 8;
              continue;
            }
            for (const int64_t u = std::min<int64_t>(t + 8, m); t < u; ++t) {
              for (int64_t d = 0; d < nd - 1; ++d) q[d] = c[size_t(d)];
              q[nd - 1] = j0 + i + t;
              q += nd * int64_t(p[i + t] != 0);
            }
          }
          std::memcpy(o, buf.data(), size_t(q - buf.data()) * sizeof(int64_t));
          o += q - buf.data();
          i += m;
        }
        c[size_t(nd - 1)] = 0;  // the next run starts a row: carry into the leading dims
        for (int64_t d = nd - 2; d >= 0; --d) {
          if (++c[size_t(d)] < x->shape[size_t(d)]) break;
          c[size_t(d)] = 0;
        }
      }
    }
  });
}

// Rows of the identity: each task zero-fills its block of rows and then sets one entry per row.
bool one_hot_cpu(const Tensor& out, const Tensor& idx) {
  const int64_t n = idx->numel(), c = out->shape.back();
  const int64_t* ix = idx->data<int64_t>();
  int64_t* o = out->data<int64_t>();
  std::atomic<bool> ok{true};
  parallel_for(n, std::max<int64_t>(1, kGrain / std::max<int64_t>(c, 1)), [&](int64_t b, int64_t e) {
    std::memset(o + b * c, 0, size_t((e - b) * c) * sizeof(int64_t));
    bool good = true;
    for (int64_t i = b; i < e; ++i) {
      const int64_t k = ix[i];
      if (k >= 0 && k < c) o[i * c + k] = 1;
      else good = false;
    }
    if (!good) ok.store(false, std::memory_order_relaxed);
  });
  return ok.load();
}

}  // namespace

SX_REGISTER_KERNEL(kern::index_in_range, CPU, &index_in_range_cpu);
SX_REGISTER_KERNEL(kern::one_hot, CPU, &one_hot_cpu);
SX_REGISTER_KERNEL(kern::gather, CPU, &gather_cpu);
SX_REGISTER_KERNEL(kern::scatter, CPU, &scatter_cpu);
SX_REGISTER_KERNEL(kern::index_front, CPU, &index_front_cpu);
SX_REGISTER_KERNEL(kern::index_put_front, CPU, &index_put_front_cpu);
SX_REGISTER_KERNEL(kern::index_select, CPU, &index_select_cpu);
SX_REGISTER_KERNEL(kern::index_add, CPU, &index_add_cpu);
SX_REGISTER_KERNEL(kern::masked_select, CPU, &masked_select_cpu);
SX_REGISTER_KERNEL(kern::sort_dim, CPU, &sort_dim_cpu);
SX_REGISTER_KERNEL(kern::kth_dim, CPU, &kth_dim_cpu);
SX_REGISTER_KERNEL(kern::count_nonzero, CPU, &count_nonzero_cpu);
SX_REGISTER_KERNEL(kern::count_true, CPU, &count_true_cpu);
SX_REGISTER_KERNEL(kern::nonzero, CPU, &nonzero_cpu);

}  // namespace sx::cpu
