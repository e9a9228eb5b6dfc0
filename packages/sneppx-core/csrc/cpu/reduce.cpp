// Reduction kernels over a contiguous (outer, n, inner) layout: the reduced axis is `n`.
// inner == 1 reduces rows; inner > 1 accumulates whole rows (vectorises over inner).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "cpu/kernels.h"
#include "cpu/loops.h"
#include "cpu/reduce.h"
#include "cpu/nn_math.h"
#include "cpu/reduce_rows.h"

namespace sx::cpu {
namespace {

// A few long rows (fewer than 16 of over kGrain elements) are reduced in segments, in parallel, and the
// segment results combined in order: rows of up to 2 kSumSegment elements in two halves, longer ones in
// segments of kSumSegment. The split depends on the shape only, so results do not change with the number
// of threads. Halves (not one thread's single pass) also for rows of 32K-128K elements: such a row often
// comes straight from an elementwise op that two threads wrote half each, and reading the other core's
// half from one thread cost more than the reduction (the sum of a (30, 40, 50) difference took 24 us
// on one thread after the subtraction, 3.8 us when the data was its own).
constexpr int64_t kSumSegment = 65536;
bool segmented(int64_t outer, int64_t n, int64_t inner) { return inner == 1 && n > kGrain && outer < 16; }
int64_t segment_length(int64_t n) {
  return n > 2 * kSumSegment ? kSumSegment : ((n + 1) / 2 + 63) / 64 * 64;
}

// One contiguous row in lanes of C: four 32-byte registers' worth, so that four independent chains of
// vector multiplies (or maxima) hide each one's latency. The ragged end goes into the first lanes and
// the lanes combine as a tree in W (C, or double for float products): short rows are not one long
// chain of dependent steps.
template <typename T, typename C, typename W, typename Init, typename Step>
W reduce_row(const T* p, int64_t n, Init init, Step step) {
  constexpr int L = 4 * std::max<int>(1, int(32 / sizeof(C)));
  C acc[L];
  for (int k = 0; k < L; ++k) acc[k] = init();
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int k = 0; k < L; ++k) acc[k] = step(acc[k], load<C>(p, i + k));
  for (int k = 0; i + k < n; ++k) acc[k] = step(acc[k], load<C>(p, i + k));
  W w[L];
  for (int k = 0; k < L; ++k) w[k] = W(acc[k]);
  for (int h = L / 2; h >= 1; h /= 2)
    for (int k = 0; k < h; ++k) w[k] = step(w[k], w[k + h]);
  return w[0];
}

// The product of a float row, as reduce_row<float, float, double> computes it (the same lanes, the
// same tree, the same result) in four 8-float vectors, which GCC does not make of the 32 lanes (it
// used two 16-float registers: two chains of dependent multiplies), with the ragged end as one more
// step over a block padded with ones: a row of 627 floats in 38 ns rather than 54.
inline double prod_row_f32(const float* p, int64_t n) {
  typedef float f8 __attribute__((vector_size(32)));
  typedef double d4 __attribute__((vector_size(32)));
  f8 a[4];
  for (auto& v : a) v = f8{} + 1.0f;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int u = 0; u < 4; ++u) {
      f8 v;
      std::memcpy(&v, p + i + 8 * u, sizeof(f8));
      a[u] *= v;
    }
  if (i < n) {
    float t[32];
    for (auto& x : t) x = 1.0f;
    std::memcpy(t, p + i, size_t(n - i) * sizeof(float));
    for (int u = 0; u < 4; ++u) {
      f8 v;
      std::memcpy(&v, t + 8 * u, sizeof(f8));
      a[u] *= v;
    }
  }
  d4 d[8];  // lanes 4j..4j+3 in d[j]
  for (int u = 0; u < 4; ++u) {
    d[2 * u] = __builtin_convertvector(__builtin_shufflevector(a[u], a[u], 0, 1, 2, 3), d4);
    d[2 * u + 1] = __builtin_convertvector(__builtin_shufflevector(a[u], a[u], 4, 5, 6, 7), d4);
  }
  for (int h = 4; h >= 1; h /= 2)
    for (int k = 0; k < h; ++k) d[k] *= d[k + h];
  return (d[0][0] * d[0][2]) * (d[0][1] * d[0][3]);
}

// A few long rows: fixed segments reduced in parallel, then combined in order.
template <typename T, typename C, typename Seg, typename Step, typename Fin>
void segmented_rows(const T* in, T* out, int64_t outer, int64_t n, Seg seg, C init, Step step, Fin fin) {
  const int64_t len = segment_length(n), segs = (n + len - 1) / len;
  std::vector<C> part(size_t(outer * segs));  // allocated before the parallel region
  parallel_for(outer * segs, 1, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      int64_t o = k / segs, s0 = (k % segs) * len;
      part[size_t(k)] = seg(in + o * n + s0, std::min(len, n - s0));
    }
  });
  for (int64_t o = 0; o < outer; ++o) {
    C r = init;
    for (int64_t k = 0; k < segs; ++k) r = step(r, part[size_t(o * segs + k)]);
    out[o] = fin(r);
  }
}

// parallel_for over the outer * inner outputs of a reduction, fn(b, e) on ranges of their flat index.
// Columns (inner > 1) are shared out in blocks of 64, so a task's columns are whole register blocks and
// whole cache lines: split by outputs, a (888, 1184) sum over dim 0 went to 34 tasks of 35 columns,
// each reading 140 bytes of every row, and a second thread gained little (max: lost). Each output is
// reduced in the same order however the columns are grouped.
constexpr int64_t kColBlock = 64;
template <typename F>
void for_outputs(int64_t outer, int64_t n, int64_t inner, F fn) {
  if (inner == 1) return parallel_for(outer, std::max<int64_t>(1, kGrain / std::max<int64_t>(n, 1)), fn);
  const int64_t blocks = (inner + kColBlock - 1) / kColBlock, width = std::min(inner, kColBlock);
  auto flat = [&](int64_t u) { return u / blocks * inner + u % blocks * kColBlock; };
  parallel_for(outer * blocks, std::max<int64_t>(1, kGrain / std::max<int64_t>(n * width, 1)),
               [&](int64_t b, int64_t e) { fn(flat(b), flat(e)); });
}

// Rows reduce in lanes of C and combine in W (see reduce_row; float products by prod_row_f32); `step`
// and `fin` take either type.
template <typename T, typename C, typename W = C, typename Init, typename Step, typename Fin>
void reduce_loop(const T* in, T* out, int64_t outer, int64_t n, int64_t inner, Init init, Step step, Fin fin,
                 bool product = false) {
  auto row = [&](const T* p, int64_t m) -> W {
    if constexpr (std::is_same_v<T, float> && std::is_same_v<W, double>)
      if (product) return prod_row_f32(p, m);
    return reduce_row<T, C, W>(p, m, init, step);
  };
  if (segmented(outer, n, inner)) {
    segmented_rows<T, W>(in, out, outer, n, row, W(init()), step, [&](W r) { return T(fin(r)); });
    return;
  }
  for_outputs(outer, n, inner, [&](int64_t b, int64_t e) {
    if (inner == 1) {
      for (int64_t o = b; o < e; ++o) out[o] = T(fin(row(in + o * n, n)));
    } else {
      std::vector<C> acc;
      for (int64_t idx = b; idx < e;) {
        int64_t o = idx / inner, j0 = idx % inner, j1 = std::min(inner, j0 + (e - idx));
        // Floats and bytes (the maxima and minima of uint8, int8 and bool): whole blocks of kColBlock
        // columns keep their accumulators in registers over all n rows (the same steps, in the same
        // order, as the loop below, which reads and writes them at every row). Not for the wider integer
        // reductions: their remaining loop then ran slower.
        if constexpr (std::is_floating_point_v<C> || sizeof(C) == 1) {
          for (; j1 - j0 >= kColBlock; j0 += kColBlock, idx += kColBlock) {
            C a[kColBlock];
            for (C& v : a) v = init();
            for (int64_t i = 0; i < n; ++i) {
              const T* p = in + (o * n + i) * inner + j0;
              for (int64_t k = 0; k < kColBlock; ++k) a[k] = step(a[k], load<C>(p, k));
            }
            for (int64_t k = 0; k < kColBlock; ++k) out[o * inner + j0 + k] = T(fin(a[k]));
          }
          if (j0 == j1) continue;
        }
        acc.assign(size_t(j1 - j0), init());
        for (int64_t i = 0; i < n; ++i) {
          const T* p = in + (o * n + i) * inner;
          for (int64_t j = j0; j < j1; ++j) acc[size_t(j - j0)] = step(acc[size_t(j - j0)], load<C>(p, j));
        }
        for (int64_t j = j0; j < j1; ++j) out[o * inner + j] = T(fin(acc[size_t(j - j0)]));
        idx += j1 - j0;
      }
    }
  });
}


template <typename T, typename C, Term M>
void sum_loop(const T* in, T* out, int64_t outer, int64_t n, int64_t inner, double scale = 1.0) {
  using W = std::conditional_t<std::is_floating_point_v<C>, double, C>;
  if (segmented(outer, n, inner)) {
    auto seg = [](const T* p, int64_t m) { return W(sum_run<T, C, M>(p, m)); };
    segmented_rows<T, W>(in, out, outer, n, seg, W(0), [](W a, W b) { return wrap_add(a, b); },
                         [&](W t) { return finish_sum<T>(t, scale); });
    return;
  }
  for_outputs(outer, n, inner, [&](int64_t b, int64_t e) {
    if (inner == 1) {
      if constexpr (std::is_same_v<T, float>) {
        if (sums_by_eight(outer, n)) {
          sum_rows_f32<M>(e - b, n, [&](int64_t k) { return in + (b + k) * n; },
                           [&](int64_t k, double t) { out[b + k] = finish_sum<T>(t, scale); });
          return;
        }
      }
      for (int64_t o = b; o < e; ++o) out[o] = finish_sum<T>(sum_run<T, C, M>(in + o * n, n), scale);
    } else {
      std::vector<C> acc;
      std::vector<W> tot;
      for (int64_t idx = b; idx < e;) {
        int64_t o = idx / inner, j0 = idx % inner, j1 = std::min(inner, j0 + (e - idx)), w = j1 - j0;
        if constexpr (std::is_same_v<T, float> && std::is_same_v<C, float>) {
          // Whole blocks of 64 or 32 columns stay in registers over all n rows (the same additions, in the same
          // order, as the loop below, which reads and writes its accumulators at every row).
          int64_t full = sum_column_blocks_f32<M>(in + o * n * inner + j0, n, inner, out + o * inner + j0, w, scale);
          j0 += full, idx += full, w -= full;
          if (w == 0) continue;
        }
        acc.assign(size_t(w), C(0));
        tot.assign(size_t(w), W(0));
        for (int64_t i = 0; i < n; ++i) {
          const T* p = in + (o * n + i) * inner + j0;
          for (int64_t j = 0; j < w; ++j) acc[size_t(j)] = wrap_add(acc[size_t(j)], term<M>(C(p[j])));
          if ((i + 1) % 16 == 0 || i + 1 == n)  // each column is one lane: flush every 16 rows
            for (int64_t j = 0; j < w; ++j) tot[size_t(j)] = wrap_add(tot[size_t(j)], W(acc[size_t(j)])), acc[size_t(j)] = C(0);
        }
        for (int64_t j = 0; j < w; ++j) out[o * inner + j0 + j] = finish_sum<T>(tot[size_t(j)], scale);
        idx += w;
      }
    }
  });
}


template <typename T>
bool fast_extreme(ReduceOp op, const T* p, T* o, int64_t outer, int64_t n, int64_t inner) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (inner != 1 || (op != ReduceOp::Max && op != ReduceOp::Min)) return false;
    bool mx = op == ReduceOp::Max;
    if (segmented(outer, n, inner)) {
      auto seg = [&](const T* q, int64_t m) { return mx ? row_extreme<T, true>(q, m) : row_extreme<T, false>(q, m); };
      auto pick = [&](T a, T b) { return mx ? nan_max(a, b) : nan_min(a, b); };
      segmented_rows<T, T>(p, o, outer, n, seg, mx ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity(),
                           pick, [](T r) { return r; });
      return true;
    }
    parallel_for(outer, std::max<int64_t>(1, kGrain / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
      if constexpr (std::is_same_v<T, float>) {
        if (n < kShortRow) {  // short rows eight at a time
          auto at = [&](int64_t k) { return p + (b + k) * n; };
          auto put = [&](int64_t k, double v) { o[b + k] = float(v); };
          return mx ? extreme_rows_f32<true>(e - b, n, at, put) : extreme_rows_f32<false>(e - b, n, at, put);
        }
      }
      for (int64_t r = b; r < e; ++r) o[r] = mx ? row_extreme<T, true>(p + r * n, n) : row_extreme<T, false>(p + r * n, n);
    });
    return true;
  }
  return false;
}

// Index of the first maximum (minimum) of a contiguous float row, where a NaN wins (the first one):
// the extreme by the vectorised scan above, then a search for its first occurrence.
template <typename C, bool IsMax>
int64_t row_arg_extreme(const C* p, int64_t n) {
  C v = row_extreme<C, IsMax>(p, n);
  if (v != v) {
    for (int64_t i = 0; i < n; ++i)
      if (p[i] != p[i]) return i;
  }
  constexpr int L = 32 / sizeof(C);
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    bool hit = false;
    for (int k = 0; k < L; ++k) hit |= p[i + k] == v;
    if (hit) break;
  }
  for (; i < n; ++i)
    if (p[i] == v) return i;
  return 0;
}

template <typename T>
bool fast_arg_extreme(bool is_max, const T* p, T* v, int64_t* ix, int64_t rows, int64_t n) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    parallel_for(rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        int64_t i = is_max ? row_arg_extreme<T, true>(p + r * n, n) : row_arg_extreme<T, false>(p + r * n, n);
        v[r] = p[r * n + i];
        ix[r] = i;
      }
    });
    return true;
  }
  return false;
}

// Index of the first maximum (minimum) down each column (inner > 1) of float rows, a NaN winning (the
// first one): a block of columns side by side, row after row, in selects rather than branches (which
// go either way at random on real data), with unconditional stores.
template <typename T, bool IsMax>
void arg_columns(const T* p, T* v, int64_t* ix, int64_t outer, int64_t n, int64_t inner) {
  using I = std::conditional_t<sizeof(T) == 8, int64_t, int32_t>;  // as wide as T, for the selects
  constexpr int64_t kCols = 256;
  int64_t blocks = (inner + kCols - 1) / kCols;
  parallel_for(outer * blocks, std::max<int64_t>(1, kGrain / (n * kCols)), [&](int64_t b, int64_t e) {
    T best[kCols];
    I bi[kCols];
    for (int64_t t = b; t < e; ++t) {
      int64_t o = t / blocks, j0 = (t % blocks) * kCols, w = std::min(kCols, inner - j0);
      const T* q = p + o * n * inner + j0;
      for (int64_t j = 0; j < w; ++j) best[j] = q[j], bi[j] = 0;
      for (int64_t i = 1; i < n; ++i) {
        const T* row = q + i * inner;
        for (int64_t j = 0; j < w; ++j) {
          T x = row[j], c = best[j];
          bool take = (IsMax ? x > c : x < c) | ((x != x) & (c == c));
          I m = -I(take);
          best[j] = take ? x : c;
          bi[j] = (I(i) & m) | (bi[j] & ~m);
        }
      }
      for (int64_t j = 0; j < w; ++j) v[o * inner + j0 + j] = best[j], ix[o * inner + j0 + j] = bi[j];
    }
  });
}

}  // namespace

void reduce(ReduceOp op, const Tensor& in, const Tensor& out, int64_t outer, int64_t n, int64_t inner) {
  SX_DISPATCH_ALL(in->dtype, "reduce", [&] {
    using T = scalar_t;
    using C = std::conditional_t<std::is_same_v<T, bool>, int64_t, acc_t<T>>;
    // Maxima and minima of integers and bools in their own type (widened to int64, the maximum of a
    // uint8 tensor took 5 times as long as PyTorch's); bools as bytes, since the column loop's
    // accumulators are a std::vector, which packs bools into bits.
    using E = std::conditional_t<std::is_same_v<T, bool>, uint8_t, std::conditional_t<std::is_integral_v<T>, T, C>>;
    const T* p = in->data<T>();
    T* o = out->data<T>();
    if (n > 0 && fast_extreme<T>(op, p, o, outer, n, inner)) return;
    switch (op) {
      case ReduceOp::Sum:
        sum_loop<T, C, Term::Value>(p, o, outer, n, inner);
        break;
      case ReduceOp::Mean:
        sum_loop<T, C, Term::Value>(p, o, outer, n, inner, 1.0 / double(n));
        break;
      case ReduceOp::SumSquares:
        sum_loop<T, C, Term::Square>(p, o, outer, n, inner);
        break;
      case ReduceOp::NanSum:
        sum_loop<T, C, Term::NonNan>(p, o, outer, n, inner);
        break;
      case ReduceOp::Prod: {
        // float32 rows combine their lanes in double: the lanes' products stay moderate on short
        // rows, but the running product of an underflowing row passes through float subnormals,
        // and each multiply into one costs a microcode assist of ~100 cycles on x86 (a row of 300
        // normal draws took 3x as long as one of values near 1).
        using W = std::conditional_t<std::is_same_v<T, float>, double, C>;
        reduce_loop<T, C, W>(p, o, outer, n, inner, [] { return C(1); }, [](auto a, auto b) { return wrap_mul(a, b); },
                             [](auto a) { return a; }, true);
        break;
      }
      case ReduceOp::Max:
        reduce_loop<T, E>(p, o, outer, n, inner, [] { return std::numeric_limits<E>::lowest(); },
                          [](E a, E b) { return nan_max(a, b); }, [](E a) { return a; });
        break;
      case ReduceOp::Min:
        reduce_loop<T, E>(p, o, outer, n, inner, [] { return std::numeric_limits<E>::max(); },
                          [](E a, E b) { return nan_min(a, b); }, [](E a) { return a; });
        break;
    }
  });
}

void arg_reduce(bool is_max, const Tensor& in, const Tensor& values, const Tensor& indices, int64_t outer, int64_t n,
                int64_t inner) {
  SX_DISPATCH_ALL(in->dtype, "argmax", [&] {
    using T = scalar_t;
    using C = acc_t<T>;
    const T* p = in->data<T>();
    T* v = values->data<T>();
    int64_t* ix = indices->data<int64_t>();
    if (inner == 1 && fast_arg_extreme<T>(is_max, p, v, ix, outer, n)) return;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      if (inner > 1 && n > 0 && n < std::numeric_limits<int32_t>::max()) {
        is_max ? arg_columns<T, true>(p, v, ix, outer, n, inner) : arg_columns<T, false>(p, v, ix, outer, n, inner);
        return;
      }
    }
    parallel_for(outer * inner, std::max<int64_t>(1, kGrain / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
      for (int64_t idx = b; idx < e; ++idx) {
        int64_t o = idx / inner, j = idx % inner;
        const T* q = p + o * n * inner + j;
        C best = C(q[0]);
        int64_t bi = 0;
        for (int64_t i = 1; i < n; ++i) {
          C x = C(q[i * inner]);
          if constexpr (!std::is_integral_v<C>) if (best != best) break;  // NaN wins, first one
          bool better = is_max ? (x > best) : (x < best);
          if constexpr (!std::is_integral_v<C>) better = better || (x != x);
          if (better) { best = x; bi = i; }
        }
        v[idx] = T(best);
        ix[idx] = bi;
      }
    });
  });
}

// Running sums accumulate in double for float32 (as PyTorch's CPU kernel does) and in the compute
// type otherwise. Rows (inner == 1) are scanned four at a time, so that four independent additions
// are in flight instead of one long chain (eight at a time measured several times slower on
// 1024-long rows: sixteen streams 4 KiB apart). Other layouts scan blocks of columns in parallel.
void cumsum(const Tensor& in, const Tensor& out, int64_t outer, int64_t n, int64_t inner) {
  SX_DISPATCH_ALL(in->dtype, "cumsum", [&] {
    using T = scalar_t;
    using C = std::conditional_t<std::is_same_v<T, float>, double, acc_t<T>>;
    const T* p = in->data<T>();
    T* o = out->data<T>();
    if (inner == 1) {
      parallel_for(outer, std::max<int64_t>(1, kGrain / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
        int64_t r = b;
        for (; r + 4 <= e; r += 4) {
          const T *x0 = p + r * n, *x1 = x0 + n, *x2 = x1 + n, *x3 = x2 + n;
          T *y0 = o + r * n, *y1 = y0 + n, *y2 = y1 + n, *y3 = y2 + n;
          C a0 = C(0), a1 = C(0), a2 = C(0), a3 = C(0);
          for (int64_t i = 0; i < n; ++i) {
            a0 = wrap_add(a0, C(x0[i]));
            y0[i] = T(a0);
            a1 = wrap_add(a1, C(x1[i]));
            y1[i] = T(a1);
            a2 = wrap_add(a2, C(x2[i]));
            y2[i] = T(a2);
            a3 = wrap_add(a3, C(x3[i]));
            y3[i] = T(a3);
          }
        }
        for (; r < e; ++r) {
          C acc = C(0);
          for (int64_t i = 0; i < n; ++i) {
            acc = wrap_add(acc, C(p[r * n + i]));
            o[r * n + i] = T(acc);
          }
        }
      });
      return;
    }
    // Tasks are blocks of W columns of one outer index (so a scan over dim 0 shares out too); each
    // walks its rows in order, W contiguous elements per row.
    constexpr int64_t W = 512;  // columns scanned together; their sums live on the stack
    const int64_t blocks = (inner + W - 1) / W;
    parallel_for(outer * blocks, std::max<int64_t>(1, kGrain / std::max<int64_t>(n * std::min(W, inner), 1)),
                 [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const int64_t oo = t / blocks, j0 = (t % blocks) * W, w = std::min(W, inner - j0);
        const T* x = p + oo * n * inner + j0;
        T* y = o + oo * n * inner + j0;
        C acc[W] = {};
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < w; ++j) {
            acc[j] = wrap_add(acc[j], C(x[i * inner + j]));
            y[i * inner + j] = T(acc[j]);
          }
      }
    });
  });
}

namespace {
// A non-finite maximum is the result itself (-inf: every element -inf; inf; NaN); otherwise every
// x - max <= 0, and exp of it is softmax's exp (0 below e^-87.3, where next to the maximum's term 1
// it no longer counts).
template <typename C> bool finite(C m) { return m - m == C(0); }

// Rows: the maximum by the vectorised scan, then the sum of exp(x - max) in 32 lanes of T (their
// terms lie in [0, 1]), combined in double.
template <typename T>
T lse_row(const T* p, int64_t n) {
  T m = n > 0 ? row_extreme<T, true>(p, n) : -std::numeric_limits<T>::infinity();
  if (!finite(m)) return m;
  constexpr int L = 32;
  T acc[L] = {};
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int k = 0; k < L; ++k) acc[k] += sexp_neg<T>(p[i + k] - m);
  for (int k = 0; i + k < n; ++k) acc[k] += sexp_neg<T>(p[i + k] - m);
  double s = 0;
  for (int k = 0; k < L; ++k) s += double(acc[k]);
  return T(std::log(s) + double(m));
}

template <typename T>
void lse_t(const T* p, T* o, int64_t outer, int64_t n, int64_t inner) {
  if (inner == 1) {
    parallel_for(outer, std::max<int64_t>(1, kGrain / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) o[r] = lse_row(p + r * n, n);
    });
    return;
  }
  // Columns: a block of them side by side, two passes down the n rows (max, then the sum).
  constexpr int64_t kCols = 256;
  int64_t blocks = (inner + kCols - 1) / kCols;
  parallel_for(outer * blocks, std::max<int64_t>(1, kGrain / std::max<int64_t>(n * kCols, 1)), [&](int64_t b, int64_t e) {
    T m[kCols];
    double acc[kCols];  // a column's terms add up one after another: in double
    for (int64_t t = b; t < e; ++t) {
      int64_t oi = t / blocks, j0 = (t % blocks) * kCols, w = std::min(kCols, inner - j0);
      const T* q = p + oi * n * inner + j0;
      for (int64_t j = 0; j < w; ++j) m[j] = -std::numeric_limits<T>::infinity(), acc[j] = 0;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < w; ++j) m[j] = nan_max(m[j], q[i * inner + j]);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < w; ++j) acc[j] += double(sexp_neg<T>(q[i * inner + j] - m[j]));
      for (int64_t j = 0; j < w; ++j) o[oi * inner + j0 + j] = finite(m[j]) ? T(std::log(acc[j]) + double(m[j])) : m[j];
    }
  });
}
}  // namespace

void logsumexp(const Tensor& in, const Tensor& out, int64_t outer, int64_t n, int64_t inner) {
  if (in->dtype == DType::Float32) return lse_t(in->data<float>(), out->data<float>(), outer, n, inner);
  if (in->dtype == DType::Float64) return lse_t(in->data<double>(), out->data<double>(), outer, n, inner);
  throw TypeError(msg("[logsumexp] kernel called with ", dtype_name(in->dtype)));
}

SX_REGISTER_KERNEL(kern::reduce, CPU, &reduce);
SX_REGISTER_KERNEL(kern::logsumexp, CPU, &logsumexp);
SX_REGISTER_KERNEL(kern::arg_reduce, CPU, &arg_reduce);
SX_REGISTER_KERNEL(kern::cumsum, CPU, &cumsum);

}  // namespace sx::cpu
