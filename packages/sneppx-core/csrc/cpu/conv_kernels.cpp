// CPU kernels for convolution and pooling (slots declared in ops/conv.h). Each plane (or each row of the
// patch matrix, or each group of images) is an independent task for parallel_for; scratch buffers are
// allocated before the pool runs.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <tuple>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "cpu/blas.h"
#include "cpu/kernels.h"
#include "cpu/loops.h"
#include "cpu/reduce_rows.h"
#include "cpu/transpose.h"
#include "ops/conv.h"
#include "ops/nn_util.h"
#include "ops/window.h"

namespace sx::cpu {

namespace {
constexpr int64_t kWork = 16384;  // elements per parallel chunk, roughly

int64_t grain_for(int64_t per_task) { return std::max<int64_t>(1, kWork / std::max<int64_t>(per_task, 1)); }

// Input elements the windows of one plane read: kh kw per output, or about the plane for adaptive
// windows (whose kh and kw are unset).
int64_t window_reads(const ConvGeom& g) {
  return g.adaptive ? std::max(g.H * g.W, g.oh * g.ow) : g.oh * g.ow * g.kh * g.kw;
}

// Sums of runs of at least this many elements go through the vectorised row sums (in double).
constexpr int64_t kLongRun = 16;
inline double run_sum(const float* p, int64_t n) { return sum_run_f32<Term::Value>(p, n); }
inline double run_sum(const double* p, int64_t n) { return sum_run_f64<Term::Value>(p, n); }

// Output columns ox whose input column ix0 + ox * sw lies in [0, W): [lo, hi).
std::pair<int64_t, int64_t> inside_cols(int64_t ix0, const ConvGeom& g) {
  int64_t lo = ix0 >= 0 ? 0 : std::min<int64_t>((-ix0 + g.sw - 1) / g.sw, g.ow);
  int64_t hi = g.W - ix0 <= 0 ? 0 : std::min<int64_t>((g.W - ix0 + g.sw - 1) / g.sw, g.ow);
  return {lo, std::max(hi, lo)};
}

// One row of the patch matrix: element (ki, kj) of every window over the plane xp, zero outside it.
template <typename T> void patch_row(const T* xp, T* out, int64_t ki, int64_t kj, const ConvGeom& g) {
  int64_t ix0 = kj * g.dw - g.pw;
  auto [lo, hi] = inside_cols(ix0, g);
  if (g.sh == 1 && g.sw == 1 && g.ow == g.W) {
    // Rows as wide as the image, one apart: the rows inside are one shifted run of the plane (a single
    // copy), then the few columns that fell into the padding are zeroed.
    int64_t iy0 = ki * g.dh - g.ph, oy0 = std::clamp<int64_t>(-iy0, 0, g.oh), oy1 = std::clamp<int64_t>(g.H - iy0, oy0, g.oh);
    int64_t f0 = oy0 * g.W, f1 = oy1 * g.W, src = iy0 * g.W + ix0;  // output span, input offset of output 0
    int64_t c0 = std::clamp<int64_t>(-src, f0, f1), c1 = std::clamp<int64_t>(g.H * g.W - src, c0, f1);
    std::fill(out, out + c0, T(0));
    std::copy(xp + src + c0, xp + src + c1, out + c0);
    std::fill(out + c1, out + g.oh * g.ow, T(0));
    for (int64_t oy = oy0; oy < oy1; ++oy) {
      for (int64_t ox = 0; ox < lo; ++ox) out[oy * g.ow + ox] = T(0);
      for (int64_t ox = hi; ox < g.ow; ++ox) out[oy * g.ow + ox] = T(0);
    }
    return;
  }
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    T* o = out + oy * g.ow;
    int64_t iy = oy * g.sh - g.ph + ki * g.dh;
    if (iy < 0 || iy >= g.H) {
      std::fill(o, o + g.ow, T(0));
      continue;
    }
    const T* row = xp + iy * g.W;
    std::fill(o, o + lo, T(0));
    if (g.sw == 1) std::copy(row + ix0 + lo, row + ix0 + hi, o + lo);
    else
      for (int64_t ox = lo; ox < hi; ++ox) o[ox] = row[ix0 + ox * g.sw];
    std::fill(o + hi, o + g.ow, T(0));
  }
}

// The adjoint of patch_row for one plane: row kidx = ki * kw + kj of the patches, at src + kidx * stride,
// is added back into the plane xp (which the caller has zeroed).
template <typename T> void add_patches(const T* src, int64_t stride, T* xp, const ConvGeom& g) {
  for (int64_t ki = 0; ki < g.kh; ++ki)
    for (int64_t kj = 0; kj < g.kw; ++kj) {
      const T* s = src + (ki * g.kw + kj) * stride;
      int64_t ix0 = kj * g.dw - g.pw;
      auto [lo, hi] = inside_cols(ix0, g);
      for (int64_t oy = 0; oy < g.oh; ++oy, s += g.ow) {
        int64_t iy = oy * g.sh - g.ph + ki * g.dh;
        if (iy < 0 || iy >= g.H) continue;
        T* row = xp + iy * g.W + ix0;
        if (g.sw == 1)
          for (int64_t ox = lo; ox < hi; ++ox) row[ox] += s[ox];
        else
          for (int64_t ox = lo; ox < hi; ++ox) row[ox * g.sw] += s[ox];
      }
    }
}

template <typename T> void im2col_impl(const T* x, T* cols, const ConvGeom& g) {
  int64_t K = g.kh * g.kw, L = g.oh * g.ow, plane = g.H * g.W;
  parallel_for(g.C * K * g.N, grain_for(L), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      int64_t r = t / g.N, n = t % g.N;
      int64_t c = r / K, ki = (r % K) / g.kw, kj = r % g.kw;
      patch_row(x + (n * g.C + c) * plane, cols + t * L, ki, kj, g);
    }
  });
}

template <typename T> void col2im_impl(const T* cols, T* x, const ConvGeom& g) {
  int64_t K = g.kh * g.kw, L = g.oh * g.ow, plane = g.H * g.W;
  parallel_for(g.N * g.C, grain_for(K * L), [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      int64_t n = p / g.C, c = p % g.C;
      T* xp = x + p * plane;
      std::fill(xp, xp + plane, T(0));
      add_patches(cols + (c * K * g.N + n) * L, g.N * L, xp, g);
    }
  });
}

// ---- convolution, one image at a time: its patch matrix (C * kh * kw, oh * ow) is built in a per-task
// buffer that stays in cache for the GEMMs that read it, instead of one matrix for the whole batch.
// Images are split into a fixed number of tasks (not one per thread). The weight gradient is split
// otherwise (conv_wgrad), into at most as many slices of the batch.
constexpr int64_t kConvTasks = 8;

struct ConvDims {
  int64_t G, Cout, Cog, CgK, K, L, rows, plane;
  bool direct;  // a 1x1 window with stride 1 and no padding: the image is its own patch matrix
};
ConvDims conv_dims(const ConvGeom& g, int64_t groups, int64_t cout) {
  ConvDims d;
  d.G = groups, d.Cout = cout, d.Cog = cout / groups, d.K = g.kh * g.kw, d.CgK = g.C / groups * d.K;
  d.L = g.oh * g.ow, d.rows = g.C * d.K, d.plane = g.H * g.W;
  d.direct = d.K == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0 && d.L == d.plane;
  return d;
}

// Rows [r0, r1) (all by default) of image xn's patch matrix, each at its place in cols.
template <typename T>
void patches_of_image(const T* xn, T* cols, const ConvGeom& g, const ConvDims& d, int64_t r0 = 0, int64_t r1 = -1) {
  for (int64_t r = r0; r < (r1 < 0 ? d.rows : r1); ++r) {
    int64_t c = r / d.K, k = r % d.K;
    patch_row(xn + c * d.plane, cols + r * d.L, k / g.kw, k % g.kw, g);
  }
}

// Calls fn(task, first image, end image, scratch) for each of the tasks over the batch.
template <typename T, typename Fn> void per_image_tasks(const ConvGeom& g, int64_t tasks, T* scratch, int64_t per, Fn&& fn) {
  parallel_for(tasks, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) fn(t, g.N * t / tasks, g.N * (t + 1) / tasks, scratch + t * per);
  });
}

// Uninitialised working memory from the tensor allocator's cache (a std::vector would zero it and
// take fresh pages from the system on every call).
template <typename T> Tensor scratch_of(int64_t n) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  return empty({n}, std::is_same_v<T, float> ? DType::Float32 : DType::Float64);
}

template <typename T> void conv_fwd_impl(const T* x, const T* w, const T* b, T* y, const ConvGeom& g, const ConvDims& d) {
  const int64_t tasks = std::min(g.N, kConvTasks), per = d.direct ? 0 : d.rows * d.L;
  Tensor scratch = scratch_of<T>(tasks * per);
  per_image_tasks(g, tasks, scratch->data<T>(), per, [&](int64_t, int64_t n0, int64_t n1, T* cols) {
    for (int64_t n = n0; n < n1; ++n) {
      const T* xn = x + n * g.C * d.plane;
      if (!d.direct) patches_of_image(xn, cols, g, d);
      const T* src = d.direct ? xn : cols;
      T* yn = y + n * d.Cout * d.L;
      for (int64_t gi = 0; gi < d.G; ++gi)
        blas_gemm(false, false, d.Cog, d.L, d.CgK, w + gi * d.Cog * d.CgK, d.CgK, src + gi * d.CgK * d.L, d.L, T(0),
                  yn + gi * d.Cog * d.L, d.L);
      if (b)
        for (int64_t co = 0; co < d.Cout; ++co) {
          T* r = yn + co * d.L;
          for (int64_t l = 0; l < d.L; ++l) r[l] += b[co];
        }
    }
  });
}

// The weight gradient gw = sum_n gy_n @ patches_n^T, per group. Tasks split the rows of the patch matrix
// (gw's columns): each owns rows [r0, r1) of a group, builds those rows of its images' patches and adds
// the images in order. Only a patch matrix of fewer than kSliceRows rows (too few to share out) also
// splits the batch, into `slices` fixed by the shape, whose sums are added in order at the end. With 48
// output channels or more (and fewer than rows) the product runs transposed, gw^T = patches_n @ gy_n^T,
// so that it packs gy_n, the smaller operand. The result does not depend on the thread count: where
// every task's product fits the direct float32 kernel, whose rows and columns are each summed alike
// however the product is cut, a task takes an even share of the rows (one packing of gy_n a thread);
// otherwise BLAS (whose sums can depend on the product's size) gets chunks fixed by the shape. No
// partial gradient is stored per group of images (eight of them cost a fifth of the time on 8x8 maps).
constexpr int64_t kSliceRows = 192;
template <typename T> void conv_wgrad(const T* gy, const T* x, T* gw, const ConvGeom& g, const ConvDims& d) {
  const int64_t rows = d.G * d.CgK, wsize = d.Cout * d.CgK, per = d.direct ? 0 : rows * d.L;
  const int64_t slices = std::clamp<int64_t>((kSliceRows + rows - 1) / rows, 1, std::min(g.N, kConvTasks));
  const bool transposed = d.Cog >= 48 && d.CgK >= d.Cog;
  int64_t chunk = 0, per_group = 0;
  auto cut = [&](int64_t parts) {  // a group's rows in chunks of 48 or more (multiples of 6), for `parts` chunks
    const int64_t pg = (parts + d.G - 1) / d.G, want = (d.CgK + pg - 1) / pg;
    chunk = std::min(d.CgK, std::max<int64_t>(48, (want + 5) / 6 * 6));
    per_group = (d.CgK + chunk - 1) / chunk;
  };
  auto fits = [&](int64_t nr) {
    return transposed ? gemm_direct_fits(false, true, nr, d.Cog, d.L) : gemm_direct_fits(false, true, d.Cog, nr, d.L);
  };
  const int64_t threads = get_num_threads();
  cut(threads / std::gcd(slices, threads));  // an even share of the slices' chunks
  const bool direct = std::is_same_v<T, float> && fits(chunk) && fits(d.CgK - (per_group - 1) * chunk);
  if (!direct) cut(kConvTasks);
  Tensor scratch = scratch_of<T>(slices * per), partial = scratch_of<T>((transposed ? slices : slices - 1) * wsize);
  auto sums = [&](int64_t sl) {
    return transposed ? partial->data<T>() + sl * wsize : sl ? partial->data<T>() + (sl - 1) * wsize : gw;
  };
  // gw's columns [r0, r0 + nr) of group gi: the slices' sums added in order into the first slice's, then
  // transposed back where the product ran transposed.
  auto combine = [&](int64_t gi, int64_t r0, int64_t nr) {
    // The columns are one run of gw^T where transposed, else a run of nr in each of the Cog rows of gw.
    const int64_t runs = slices == 1 ? 0 : transposed ? 1 : d.Cog, len = transposed ? nr * d.Cog : nr;
    for (int64_t co = 0; co < runs; ++co) {
      const int64_t at = transposed ? (gi * d.CgK + r0) * d.Cog : (gi * d.Cog + co) * d.CgK + r0;
      T* out = sums(0) + at;
      for (int64_t i = 0; i < len; ++i) {
        T v = out[i];
        for (int64_t sl = 1; sl < slices; ++sl) v += sums(sl)[at + i];
        out[i] = v;
      }
    }
    if (transposed)
      transpose_tile<T>(reinterpret_cast<char*>(gw + gi * d.Cog * d.CgK), d.CgK * int64_t(sizeof(T)),
                        reinterpret_cast<const char*>(sums(0) + gi * d.CgK * d.Cog), d.Cog * int64_t(sizeof(T)), 0,
                        d.Cog, r0, r0 + nr);
  };
  auto span = [&](int64_t u) {  // unit u's group, first row within it and row count
    const int64_t r0 = u % per_group * chunk;
    return std::make_tuple(u / per_group % d.G, r0, std::min(chunk, d.CgK - r0));
  };
  parallel_for(slices * d.G * per_group, 1, [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      const auto [gi, r0, nr] = span(u);
      const int64_t sl = u / (d.G * per_group), first = gi * d.CgK + r0;  // the task's first row of the patches
      T* cols = scratch->data<T>() + sl * per;
      T* s = sums(sl) + (transposed ? first * d.Cog : gi * d.Cog * d.CgK + r0);
      for (int64_t n = g.N * sl / slices, n0 = n; n < g.N * (sl + 1) / slices; ++n) {
        const T* xn = x + n * g.C * d.plane;
        const T* src = xn + first * d.L;
        if (!d.direct) {
          patches_of_image(xn, cols, g, d, first, first + nr);
          src = cols + first * d.L;
        }
        const T* gyn = gy + (n * d.Cout + gi * d.Cog) * d.L;
        const T beta = n == n0 ? T(0) : T(1);
        const int64_t m = transposed ? nr : d.Cog, nc = transposed ? d.Cog : nr, ldc = transposed ? d.Cog : d.CgK;
        const T* a = transposed ? src : gyn;
        const T* b = transposed ? gyn : src;
        if constexpr (std::is_same_v<T, float>)
          if (direct) {
            gemm_direct(false, true, m, nc, d.L, a, d.L, b, d.L, beta, s, ldc);
            continue;
          }
        blas_gemm(false, true, m, nc, d.L, a, d.L, b, d.L, beta, s, ldc);
      }
      if (slices == 1) combine(gi, r0, nr);  // while the task's sums are in its cache
    }
  });
  if (slices > 1)
    parallel_for(d.G * per_group, 1, [&](int64_t u0, int64_t u1) {
      for (int64_t u = u0; u < u1; ++u) std::apply(combine, span(u));
    });
}

template <typename T>
void conv_bwd_impl(const T* gy, const T* x, const T* w, T* gx, T* gw, T* gb, const ConvGeom& g, const ConvDims& d) {
  if (gw) {
    // Few output channels: a patch matrix per image would be read for a product only Cout rows high, so
    // the float32 weight gradient sums the input's rows directly (column stride 1, rows of 16 outputs or
    // more). It measured slower on 8x8 maps (half a vector: 2.8x the time of the patches) and, in the
    // AVX2 build, with 15 channels on 16x16 maps (1.15x); even with 12.
    bool few = false;
    if constexpr (std::is_same_v<T, float>) {
      few = d.G == 1 && d.Cout < 12 && d.K > 1 && g.sw == 1 && g.ow >= 16;
      if (few) conv_wgrad_few(gy, x, gw, g, d.Cout);
    }
    if (!few) conv_wgrad(gy, x, gw, g, d);
  }
  const int64_t tasks = std::min(g.N, kConvTasks), per = d.direct ? 0 : d.rows * d.L;
  if (gx) {  // patch gradients W^T @ gy_n, summed back into the image
    Tensor scratch = scratch_of<T>(tasks * per);
    per_image_tasks(g, tasks, scratch->data<T>(), per, [&](int64_t, int64_t n0, int64_t n1, T* cols) {
      for (int64_t n = n0; n < n1; ++n) {
        const T* gyn = gy + n * d.Cout * d.L;
        T* gxn = gx + n * g.C * d.plane;
        T* dst = d.direct ? gxn : cols;
        for (int64_t gi = 0; gi < d.G; ++gi)
          blas_gemm(true, false, d.CgK, d.L, d.Cog, w + gi * d.Cog * d.CgK, d.CgK, gyn + gi * d.Cog * d.L, d.L, T(0),
                    dst + gi * d.CgK * d.L, d.L);
        if (!d.direct) {
          std::fill(gxn, gxn + g.C * d.plane, T(0));
          for (int64_t c = 0; c < g.C; ++c) add_patches(cols + c * d.K * d.L, d.L, gxn + c * d.plane, g);
        }
      }
    });
  }
  if (gb)
    parallel_for(d.Cout, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t co = c0; co < c1; ++co) {
        double s = 0;
        for (int64_t n = 0; n < g.N; ++n) s += run_sum(gy + (n * d.Cout + co) * d.L, d.L);  // in double
        gb[co] = T(s);
      }
    });
}

// One tap (a window row, a window column) over output columns [lo, hi) of a row: output column ox
// reads input index at + ox * s of the plane xp. Selects, not branches: a compare per tap goes either
// way at random on real data. S > 0 is the column stride known at compile time (so that the loop
// becomes vector code), S == 0 takes it at run time.
template <int S, typename T, typename I>
void max_tap(const T* __restrict xp, int64_t at, int64_t s, int64_t lo, int64_t hi, T* __restrict best,
             I* __restrict bi, I* __restrict nan) {
  if constexpr (S > 0) s = S;
  for (int64_t ox = lo; ox < hi; ++ox) {  // every store unconditional: masked stores are slow
    T v = xp[at + ox * s], b = best[ox];
    I m = -I(v > b);
    best[ox] = v > b ? v : b;
    bi[ox] = (I(at + ox * s) & m) | (bi[ox] & ~m);
    nan[ox] |= I(v != v);
  }
}

// The same tap without the argmax (values only): a NaN, once in best, stays.
template <int S, typename T>
void max_tap_value(const T* __restrict xp, int64_t at, int64_t s, int64_t lo, int64_t hi, T* __restrict best) {
  if constexpr (S > 0) s = S;
  for (int64_t ox = lo; ox < hi; ++ox) {
    T v = xp[at + ox * s], b = best[ox], m = v > b ? v : b;
    best[ox] = v != v ? v : m;
  }
}

// Calls tap(S, at, lo, hi) for each tap of a row of windows, window rows [a0, a1) (starting at input row
// y0, ys apart) by window columns in order: output columns [lo, hi) read input index at + ox * sw. S is
// the column stride as a compile-time constant (1 or 2; 0: taken at run time), for max_tap's loops.
template <typename Fn>
void row_taps(const ConvGeom& g, int64_t y0, int64_t ys, int64_t a0, int64_t a1, Fn&& tap) {
  for (int64_t a = a0; a < a1; ++a)
    for (int64_t b = 0; b < g.kw; ++b) {
      const int64_t off = b * g.dw - g.pw;  // input column of output column 0
      const int64_t at = (y0 + a * ys) * g.W + off;
      auto [lo, hi] = taps_inside(off, g.ow, g.sw, g.W);
      if (g.sw == 1) tap(std::integral_constant<int, 1>(), at, lo, hi);
      else if (g.sw == 2) tap(std::integral_constant<int, 2>(), at, lo, hi);
      else tap(std::integral_constant<int, 0>(), at, lo, hi);
    }
}

// Max pooling: the first maximum in window order, and the first NaN wins. A row of outputs at a
// time, tap by tap over the row (each output still sees its taps in window order), with padding
// skipped by ranges; windows that hold a NaN are looked at again. A window entirely in the padding
// gives -inf. Adaptive windows (and planes too large for the index type) go window by window. Without
// idx (null) only the values are found: the row's taps update its maxima alone, in y. 1-d windows that
// neither cross their row's end nor leave gaps between rows (no padding, W = ow sw) take the rows of a
// task as one long row: max_pool1d(x, 2) of (8, 16, 100) was mostly the fixed costs of 128 short rows.
template <typename T> void max_pool_impl(const T* x, T* y, int64_t* idx, const ConvGeom& g) {
  using I = std::conditional_t<sizeof(T) == 8, int64_t, int32_t>;  // as wide as T, for the selects
  int64_t plane = g.H * g.W, L = g.oh * g.ow;
  bool rows = !g.adaptive && plane < std::numeric_limits<int32_t>::max();
  // The maxima of one row of outputs yo (input rows from y0, ys apart; window rows [a0, a1) inside).
  auto values_row = [](const T* xp, T* yo, const ConvGeom& gr, int64_t y0, int64_t ys, int64_t a0, int64_t a1) {
    std::fill(yo, yo + gr.ow, -std::numeric_limits<T>::infinity());
    row_taps(gr, y0, ys, a0, a1, [&](auto S, int64_t at, int64_t lo, int64_t hi) {
      max_tap_value<decltype(S)::value>(xp, at, gr.sw, lo, hi, yo);
    });
  };
  const bool joined = !idx && rows && g.H == 1 && g.kh == 1 && g.ph == 0 && g.pw == 0 && g.W == g.ow * g.sw &&
                      (g.kw - 1) * g.dw < g.sw;
  parallel_for(g.N * g.C, grain_for(window_reads(g)), [&](int64_t p0, int64_t p1) {
    if (joined) {
      ConvGeom gj = g;
      gj.W = (p1 - p0) * g.W, gj.ow = (p1 - p0) * g.ow;
      return values_row(x + p0 * g.W, y + p0 * g.ow, gj, 0, 1, 0, 1);
    }
    std::vector<T> best(size_t(rows && idx ? g.ow : 0));
    std::vector<I> bi(best.size()), nan(best.size());
    for (int64_t p = p0; p < p1; ++p) {
      const T* xp = x + p * plane;
      for (int64_t oy = 0; oy < g.oh; ++oy) {
        Span sy = span(g.adaptive, oy, g.H, g.oh, g.kh, g.sh, g.ph);
        int64_t y0 = g.adaptive ? sy.lo : oy * g.sh - g.ph, ys = g.adaptive ? 1 : g.dh;
        auto [a0, a1] = taps_inside(y0, g.adaptive ? sy.hi - sy.lo : g.kh, ys, g.H);
        T* yo = y + p * L + oy * g.ow;
        int64_t* io = idx ? idx + p * L + oy * g.ow : nullptr;
        auto window = [&](int64_t ox) {  // one window, tap by tap
          Span sx_ = span(g.adaptive, ox, g.W, g.ow, g.kw, g.sw, g.pw);
          int64_t x0 = g.adaptive ? sx_.lo : ox * g.sw - g.pw, xs = g.adaptive ? 1 : g.dw;
          auto [b0, b1] = taps_inside(x0, g.adaptive ? sx_.hi - sx_.lo : g.kw, xs, g.W);
          if (a0 >= a1 || b0 >= b1) return std::pair<T, int64_t>{-std::numeric_limits<T>::infinity(), 0};
          int64_t first = (y0 + a0 * ys) * g.W + x0 + b0 * xs, bi1 = first;
          T b1v = xp[first];
          for (int64_t a = a0; a < a1; ++a)
            for (int64_t b = b0; b < b1; ++b) {
              int64_t i = (y0 + a * ys) * g.W + x0 + b * xs;
              T v = xp[i];
              if (v != v) return std::pair<T, int64_t>{v, i};
              if (v > b1v) b1v = v, bi1 = i;
            }
          return std::pair<T, int64_t>{b1v, bi1};
        };
        if (!rows) {
          for (int64_t ox = 0; ox < g.ow; ++ox) {
            auto [v, i] = window(ox);
            yo[ox] = v;
            if (io) io[ox] = i;
          }
          continue;
        }
        if (!io) {
          values_row(xp, yo, g, y0, ys, a0, a1);
          continue;
        }
        for (int64_t ox = 0; ox < g.ow; ++ox) {  // the first tap inside (a division only in the padding)
          int64_t x0 = ox * g.sw - g.pw, c = x0 >= 0 ? x0 : x0 + (-x0 + g.dw - 1) / g.dw * g.dw;
          bool any = a0 < a1 && c < g.W && c <= x0 + (g.kw - 1) * g.dw;
          best[size_t(ox)] = -std::numeric_limits<T>::infinity();
          bi[size_t(ox)] = any ? I((y0 + a0 * ys) * g.W + c) : I(0);
          nan[size_t(ox)] = 0;
        }
        row_taps(g, y0, ys, a0, a1, [&](auto S, int64_t at, int64_t lo, int64_t hi) {
          max_tap<decltype(S)::value>(xp, at, g.sw, lo, hi, best.data(), bi.data(), nan.data());
        });
        for (int64_t ox = 0; ox < g.ow; ++ox) {
          if (nan[size_t(ox)]) std::tie(yo[ox], io[ox]) = window(ox);
          else yo[ox] = best[size_t(ox)], io[ox] = bi[size_t(ox)];
        }
      }
    }
  });
}

template <typename T> void max_pool_bwd_impl(const T* gy, const int64_t* idx, T* gx, const ConvGeom& g) {
  int64_t plane = g.H * g.W, L = g.oh * g.ow;
  parallel_for(g.N * g.C, grain_for(plane + L), [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      T* xp = gx + p * plane;
      std::fill(xp, xp + plane, T(0));
      for (int64_t l = 0; l < L; ++l) xp[idx[p * L + l]] += gy[p * L + l];
    }
  });
}

// The row and column spans of every output position's window, found once per call (adaptive spans take
// divisions).
struct WindowSpans {
  std::vector<Span> y, x;
  explicit WindowSpans(const ConvGeom& g) {
    for (int64_t oy = 0; oy < g.oh; ++oy) y.push_back(span(g.adaptive, oy, g.H, g.oh, g.kh, g.sh, g.ph));
    for (int64_t ox = 0; ox < g.ow; ++ox) x.push_back(span(g.adaptive, ox, g.W, g.ow, g.kw, g.sw, g.pw));
  }
};

// Calls fn(y-span, x-span, divisor) for every output position of one plane, in order.
template <typename Fn> void avg_windows(const ConvGeom& g, const WindowSpans& ws, const AvgOpts& o, Fn&& fn) {
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    const Span& sy = ws.y[size_t(oy)];
    for (int64_t ox = 0; ox < g.ow; ++ox) {
      const Span& sx_ = ws.x[size_t(ox)];
      int64_t inside = (sy.hi - sy.lo) * (sx_.hi - sx_.lo);
      int64_t div = g.adaptive ? inside : o.divisor ? o.divisor : o.count_include_pad ? sy.padded * sx_.padded : inside;
      fn(oy * g.ow + ox, sy, sx_, div);
    }
  }
}

template <typename T> void avg_pool_impl(const T* x, T* y, const ConvGeom& g, const AvgOpts& o) {
  int64_t plane = g.H * g.W, L = g.oh * g.ow;
  if (g.adaptive && L == 1 && plane > 0) {
    // A global average: one sum per plane, eight planes at a time where the row sums would take them so.
    parallel_for(g.N * g.C, grain_for(plane), [&](int64_t p0, int64_t p1) {
      auto at = [&](int64_t k) { return x + (p0 + k) * plane; };
      auto put = [&](int64_t k, double s) { y[p0 + k] = T(s / double(plane)); };
      if constexpr (std::is_same_v<T, float>) {
        if (sums_by_eight(g.N * g.C, plane)) return sum_rows_f32<Term::Value>(p1 - p0, plane, at, put);
      }
      for (int64_t k = 0; k < p1 - p0; ++k) put(k, run_sum(at(k), plane));
    });
    return;
  }
  const WindowSpans ws(g);
  parallel_for(g.N * g.C, grain_for(window_reads(g)), [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const T* xp = x + p * plane;
      avg_windows(g, ws, o, [&](int64_t l, const Span& sy, const Span& sx_, int64_t div) {
        // Long runs (a window's rows, or its whole span where it covers full rows) in vector sums.
        const int64_t w = sx_.hi - sx_.lo, rows = sy.hi - sy.lo;
        const bool full = w == g.W;
        if ((full ? rows * w : w) >= kLongRun) {
          double s = 0;
          if (full) s = run_sum(xp + sy.lo * g.W, rows * w);
          else
            for (int64_t iy = sy.lo; iy < sy.hi; ++iy) s += run_sum(xp + iy * g.W + sx_.lo, w);
          y[p * L + l] = div > 0 ? T(s / double(div)) : T(0);
          return;
        }
        T acc = 0;
        for (int64_t iy = sy.lo; iy < sy.hi; ++iy)
          for (int64_t ix = sx_.lo; ix < sx_.hi; ++ix) acc += xp[iy * g.W + ix];
        y[p * L + l] = div > 0 ? acc / T(div) : T(0);
      });
    }
  });
}

template <typename T> void avg_pool_bwd_impl(const T* gy, T* gx, const ConvGeom& g, const AvgOpts& o) {
  int64_t plane = g.H * g.W, L = g.oh * g.ow;
  if (g.adaptive && L == 1) {  // a global average: every element of a plane gets its gy / plane
    parallel_for(g.N * g.C, grain_for(plane), [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) std::fill(gx + p * plane, gx + (p + 1) * plane, gy[p] / T(plane));
    });
    return;
  }
  const WindowSpans ws(g);
  parallel_for(g.N * g.C, grain_for(window_reads(g) + plane), [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      T* xp = gx + p * plane;
      std::fill(xp, xp + plane, T(0));
      avg_windows(g, ws, o, [&](int64_t l, const Span& sy, const Span& sx_, int64_t div) {
        if (div <= 0) return;
        T v = gy[p * L + l] / T(div);
        for (int64_t iy = sy.lo; iy < sy.hi; ++iy)
          for (int64_t ix = sx_.lo; ix < sx_.hi; ++ix) xp[iy * g.W + ix] += v;
      });
    }
  });
}

// ---- slot entry points: dtype switch once, then the typed loop
void cpu_im2col(const Tensor& x, const Tensor& cols, const ConvGeom& g) {
  SX_DISPATCH_F32_F64(x->dtype, "im2col", [&] { im2col_impl(x->data<scalar_t>(), cols->data<scalar_t>(), g); });
}
void cpu_col2im(const Tensor& cols, const Tensor& x, const ConvGeom& g) {
  SX_DISPATCH_F32_F64(x->dtype, "col2im", [&] { col2im_impl(cols->data<scalar_t>(), x->data<scalar_t>(), g); });
}
void cpu_conv_fwd(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y, const ConvGeom& g,
                  int64_t groups) {
  ConvDims d = conv_dims(g, groups, w->shape[0]);
  SX_DISPATCH_F32_F64(x->dtype, "conv", [&] {
    conv_fwd_impl(x->data<scalar_t>(), w->data<scalar_t>(), b ? b->data<scalar_t>() : nullptr, y->data<scalar_t>(), g,
                  d);
  });
}
void cpu_conv_bwd(const Tensor& gy, const Tensor& x, const Tensor& w, const Tensor& gx, const Tensor& gw,
                  const Tensor& gb, const ConvGeom& g, int64_t groups) {
  ConvDims d = conv_dims(g, groups, w->shape[0]);
  SX_DISPATCH_F32_F64(x->dtype, "conv_backward", [&] {
    using T = scalar_t;
    conv_bwd_impl(gy->data<T>(), x->data<T>(), w->data<T>(), gx ? gx->data<T>() : nullptr,
                  gw ? gw->data<T>() : nullptr, gb ? gb->data<T>() : nullptr, g, d);
  });
}
void cpu_max_pool_fwd(const Tensor& x, const Tensor& y, const Tensor& idx, const ConvGeom& g) {
  SX_DISPATCH_F32_F64(x->dtype, "max_pool", [&] {
    max_pool_impl(x->data<scalar_t>(), y->data<scalar_t>(), idx ? idx->data<int64_t>() : nullptr, g);
  });
}
void cpu_max_pool_bwd(const Tensor& gy, const Tensor& idx, const Tensor& gx, const ConvGeom& g) {
  SX_DISPATCH_F32_F64(gy->dtype, "max_pool_backward", [&] {
    max_pool_bwd_impl(gy->data<scalar_t>(), idx->data<int64_t>(), gx->data<scalar_t>(), g);
  });
}
void cpu_avg_pool_fwd(const Tensor& x, const Tensor& y, const ConvGeom& g, const AvgOpts& o) {
  SX_DISPATCH_F32_F64(x->dtype, "avg_pool", [&] { avg_pool_impl(x->data<scalar_t>(), y->data<scalar_t>(), g, o); });
}
void cpu_avg_pool_bwd(const Tensor& gy, const Tensor& gx, const ConvGeom& g, const AvgOpts& o) {
  SX_DISPATCH_F32_F64(gy->dtype, "avg_pool_backward", [&] {
    avg_pool_bwd_impl(gy->data<scalar_t>(), gx->data<scalar_t>(), g, o);
  });
}

// ---- reflect / replicate / circular padding: rows gathered through per-dim index maps
// A run of the last dim's map: output positions [o, o + len) read source positions [s, s + len).
struct Run {
  int64_t o, s, len;
};
std::vector<Run> map_runs(const Tensor& map) {
  const int64_t* m = map->data<int64_t>();
  const int64_t n = map->numel();
  std::vector<Run> runs;
  for (int64_t j = 0; j < n;) {  // each run: the longest stretch of consecutive source indices from j
    int64_t e = j + 1;
    while (e < n && m[e] == m[e - 1] + 1) ++e;
    runs.push_back({j, m[j], e - j});
    j = e;
  }
  return runs;
}

// What a gather over x's last maps.size() dims reads: for each output row of those dims (all but the
// last), its source offset within a slab of x; the runs of the last dim; the slab sizes of x and out.
struct PadPlan {
  std::vector<int64_t> rows;
  std::vector<Run> runs;
  int64_t slabs = 1, in_slab = 1, out_slab = 1, width = 1;
};
PadPlan pad_plan(const Shape& xs, const TensorList& maps) {
  const size_t nd = xs.size(), k = maps.size();
  PadPlan p;
  p.rows = {0};
  int64_t stride = 1;
  for (size_t d = nd - 1; d >= nd - k + 1; --d) stride *= xs[d];
  for (size_t j = 0; j + 1 < k; ++j) {  // row offsets, dim by dim
    const int64_t* m = maps[j]->data<int64_t>();
    std::vector<int64_t> next;
    next.reserve(p.rows.size() * size_t(maps[j]->numel()));
    for (int64_t base : p.rows)
      for (int64_t i = 0; i < maps[j]->numel(); ++i) next.push_back(base + m[i] * stride);
    p.rows = std::move(next);
    stride /= xs[nd - k + j + 1];
  }
  p.runs = map_runs(maps[k - 1]);
  p.width = maps[k - 1]->numel();
  for (size_t d = 0; d < nd; ++d) (d < nd - k ? p.slabs : p.in_slab) *= xs[d];
  p.out_slab = int64_t(p.rows.size()) * p.width;
  return p;
}

// U: an unsigned integer of the element's size (the gather moves bytes, any dtype).
template <typename U>
void pad_gather_impl(const U* x, U* out, const PadPlan& p) {
  const int64_t R = int64_t(p.rows.size());
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(p.width, 1));
  parallel_for(p.slabs * R, grain, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const U* src = x + t / R * p.in_slab + p.rows[size_t(t % R)];
      U* dst = out + t * p.width;
      for (const Run& r : p.runs) {
        if (r.len == 1) dst[r.o] = src[r.s];
        else std::memcpy(dst + r.o, src + r.s, size_t(r.len) * sizeof(U));
      }
    }
  });
}
void cpu_pad_gather(const Tensor& x, const Tensor& out, const TensorList& maps) {
  PadPlan p = pad_plan(x->shape, maps);
  switch (itemsize(x->dtype)) {
    case 1: return pad_gather_impl(x->data<uint8_t>(), out->data<uint8_t>(), p);
    case 2: return pad_gather_impl(x->data<uint16_t>(), out->data<uint16_t>(), p);
    case 4: return pad_gather_impl(x->data<uint32_t>(), out->data<uint32_t>(), p);
    case 8: return pad_gather_impl(x->data<uint64_t>(), out->data<uint64_t>(), p);
    default: no_complex_kernel("pad", x->dtype);  // complex128's 16 bytes
  }
}
// The adjoint: each slab of gx (independent of the others) adds its output rows back in order.
void cpu_pad_gather_add(const Tensor& g, const Tensor& gx, const TensorList& maps) {
  PadPlan p = pad_plan(gx->shape, maps);
  SX_DISPATCH_FLOAT(g->dtype, "pad_backward", [&] {
    using T = scalar_t;
    using C = acc_t<T>;
    const T* gp = g->data<T>();
    T* xp = gx->data<T>();
    const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(p.out_slab, 1));
    parallel_for(p.slabs, grain, [&](int64_t b, int64_t e) {
      for (int64_t a = b; a < e; ++a)
        for (size_t r = 0; r < p.rows.size(); ++r) {
          T* dst = xp + a * p.in_slab + p.rows[r];
          const T* src = gp + (a * int64_t(p.rows.size()) + int64_t(r)) * p.width;
          for (const Run& u : p.runs)
            for (int64_t i = 0; i < u.len; ++i) dst[u.s + i] = T(C(dst[u.s + i]) + C(src[u.o + i]));
        }
    });
  });
}
}  // namespace

SX_REGISTER_KERNEL(kern::im2col, CPU, &cpu_im2col);
SX_REGISTER_KERNEL(kern::col2im, CPU, &cpu_col2im);
SX_REGISTER_KERNEL(kern::conv_fwd, CPU, &cpu_conv_fwd);
SX_REGISTER_KERNEL(kern::conv_bwd, CPU, &cpu_conv_bwd);
SX_REGISTER_KERNEL(kern::max_pool_fwd, CPU, &cpu_max_pool_fwd);
SX_REGISTER_KERNEL(kern::max_pool_bwd, CPU, &cpu_max_pool_bwd);
SX_REGISTER_KERNEL(kern::avg_pool_fwd, CPU, &cpu_avg_pool_fwd);
SX_REGISTER_KERNEL(kern::avg_pool_bwd, CPU, &cpu_avg_pool_bwd);
SX_REGISTER_KERNEL(kern::pad_gather, CPU, &cpu_pad_gather);
SX_REGISTER_KERNEL(kern::pad_gather_add, CPU, &cpu_pad_gather_add);

}  // namespace sx::cpu
