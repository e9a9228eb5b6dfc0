// Softmax, norms, activations, gated units, embedding and dropout kernels (losses: loss_kernels.cpp).
// Row sums are blocked_sum of cpu/reduce_rows.h (partial results in lanes, so that float loops vectorise
// without -ffast-math); the exp/log/erf calls are the branch-free inline versions of vmath.h / nn_math.h.
#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "core/generator.h"
#include "core/parallel.h"
#include "cpu/nn_kernels.h"
#include "cpu/nn_math.h"
#include "cpu/reduce_rows.h"

namespace sx::cpu {

namespace {
constexpr int64_t kWork = 32768;  // elements per parallel chunk, roughly

int64_t rows_grain(int64_t row_len) { return std::max<int64_t>(1, kWork / std::max<int64_t>(row_len, 1)); }

template <typename T> T lane_max(const T* x, int64_t n) { return max_reduce(x, n); }

template <typename T> void softmax_row(const T* x, T* y, int64_t n, bool log) {
  T m = lane_max(x, n);
  if (log) {  // (x - m) - log(sum): folding m into one constant would lose digits for large |x|
    T ls = std::log(exp_sum<T>(x, m, nullptr, n));
    for (int64_t j = 0; j < n; ++j) y[j] = (x[j] - m) - ls;
  } else {
    T r = T(1) / exp_sum<T>(x, m, y, n);
    for (int64_t j = 0; j < n; ++j) y[j] *= r;
  }
}

// Column-wise softmax of a (n, inner) block for columns [c0, c0 + w).
template <typename T> void softmax_cols(const T* x, T* y, int64_t n, int64_t inner, int64_t w, bool log) {
  std::vector<T> m(w, -std::numeric_limits<T>::infinity()), s(w, T(0));
  for (int64_t j = 0; j < n; ++j) {
    const T* r = x + j * inner;
    for (int64_t c = 0; c < w; ++c) m[c] = r[c] > m[c] ? r[c] : m[c];
  }
  for (int64_t j = 0; j < n; ++j) {
    const T* r = x + j * inner;
    T* o = y + j * inner;
    for (int64_t c = 0; c < w; ++c) {
      T e = sexp_neg<T>(r[c] - m[c]);
      s[c] += e;
      if (!log) o[c] = e;
    }
  }
  for (int64_t c = 0; c < w; ++c) s[c] = log ? std::log(s[c]) : T(1) / s[c];
  for (int64_t j = 0; j < n; ++j) {
    const T* r = x + j * inner;
    T* o = y + j * inner;
    if (log) for (int64_t c = 0; c < w; ++c) o[c] = (r[c] - m[c]) - s[c];
    else for (int64_t c = 0; c < w; ++c) o[c] *= s[c];
  }
}

template <typename T> void softmax_bwd_row(const T* g, const T* y, T* gx, int64_t n, bool log) {
  if (log) {
    T s = row_dot<T>(g, nullptr, n);
    exp_sum<T>(y, T(0), gx, n);  // gx = exp(y) = softmax, then the row stays in L1 for the update
    for (int64_t j = 0; j < n; ++j) gx[j] = g[j] - gx[j] * s;
  } else {
    T s = row_dot(g, y, n);
    for (int64_t j = 0; j < n; ++j) gx[j] = y[j] * (g[j] - s);
  }
}

template <typename T>
void softmax_bwd_cols(const T* g, const T* y, T* gx, int64_t n, int64_t inner, int64_t w, bool log) {
  std::vector<T> s(w, T(0));
  for (int64_t j = 0; j < n; ++j) {
    const T* gr = g + j * inner;
    const T* yr = y + j * inner;
    if (log) for (int64_t c = 0; c < w; ++c) s[c] += gr[c];
    else for (int64_t c = 0; c < w; ++c) s[c] += gr[c] * yr[c];
  }
  for (int64_t j = 0; j < n; ++j) {
    const T* gr = g + j * inner;
    const T* yr = y + j * inner;
    T* o = gx + j * inner;
    if (log) for (int64_t c = 0; c < w; ++c) o[c] = gr[c] - sexp_neg<T>(yr[c]) * s[c];
    else for (int64_t c = 0; c < w; ++c) o[c] = yr[c] * (gr[c] - s[c]);
  }
}

constexpr int64_t kColBlock = 256;

// Runs fn(o, c0, w) over (outer, column block) pairs in parallel.
template <typename F> void for_col_blocks(int64_t outer, int64_t n, int64_t inner, F fn) {
  int64_t nb = (inner + kColBlock - 1) / kColBlock;
  parallel_for(outer * nb, rows_grain(n * std::min(inner, kColBlock)), [&](int64_t b, int64_t e) {
    for (int64_t u = b; u < e; ++u) {
      int64_t o = u / nb, c0 = (u % nb) * kColBlock;
      fn(o, c0, std::min(kColBlock, inner - c0));
    }
  });
}
}  // namespace

template <typename T> void softmax_fwd(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool log) {
  if (inner == 1) {
    parallel_for(outer, rows_grain(n), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) softmax_row(x + i * n, y + i * n, n, log);
    });
    return;
  }
  for_col_blocks(outer, n, inner, [&](int64_t o, int64_t c0, int64_t w) {
    int64_t off = o * n * inner + c0;
    softmax_cols(x + off, y + off, n, inner, w, log);
  });
}

template <typename T>
void softmax_bwd(const T* g, const T* y, T* gx, int64_t outer, int64_t n, int64_t inner, bool log) {
  if (inner == 1) {
    parallel_for(outer, rows_grain(n), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) softmax_bwd_row(g + i * n, y + i * n, gx + i * n, n, log);
    });
    return;
  }
  for_col_blocks(outer, n, inner, [&](int64_t o, int64_t c0, int64_t w) {
    int64_t off = o * n * inner + c0;
    softmax_bwd_cols(g + off, y + off, gx + off, n, inner, w, log);
  });
}

// ---- layer norm and RMS norm
namespace {
// The mean is kept as mu + c: mu the float mean, c the remainder that float cannot hold (0 for rms_norm). With
// x - mu exact for x near the mean, ((x - mu) - c) keeps the digits that the rounding of mu would take from
// every element of a row alike (a row of mean 30 and deviation 0.5 lost about 1e-6 of its spread).
template <typename T>
void norm_row(const T* x, const T* w, const T* b, T* y, T& mean_out, T& rstd_out, int64_t N, T eps, bool rms) {
  T mu = 0, c = 0, ss;
  if (rms) {
    ss = T(blocked_sum<T>(N, [x](int64_t j) { return x[j] * x[j]; }) / double(N));
  } else {
    const double m = blocked_sum<T>(N, [x](int64_t j) { return x[j]; }) / double(N);
    mu = T(m);
    c = T(m - double(mu));
    ss = T(blocked_sum<T>(N, [x, mu, c](int64_t j) { return ((x[j] - mu) - c) * ((x[j] - mu) - c); }) / double(N));
  }
  T r = T(1) / std::sqrt(ss + eps);
  mean_out = mu;
  rstd_out = r;
  if (w && b) for (int64_t j = 0; j < N; ++j) y[j] = ((x[j] - mu) - c) * r * w[j] + b[j];
  else if (w) for (int64_t j = 0; j < N; ++j) y[j] = ((x[j] - mu) - c) * r * w[j];
  else if (b) for (int64_t j = 0; j < N; ++j) y[j] = ((x[j] - mu) - c) * r + b[j];
  else for (int64_t j = 0; j < N; ++j) y[j] = ((x[j] - mu) - c) * r;
}

// Row i of the input gradient (gx may be null), adding g * xhat and g to the column partials pw, pb (COLS). It
// takes xhat = (x - mu) r with the saved float mean: finding the mean's remainder again (see norm_row) was one
// more pass over each row, which cost 14-21% of the forward and backward at 2 threads.
template <typename T, bool HAS_W, bool COLS>
void norm_bwd_row(const T* g, const T* x, const T* w, T mu, T r, T* gx, T* pw, T* pb, int64_t N, bool rms) {
  auto xh = [x, mu, r](int64_t k) { return (x[k] - mu) * r; };
  if constexpr (COLS) {
    for (int64_t k = 0; k < N; ++k) {
      pw[k] += g[k] * xh(k);
      pb[k] += g[k];
    }
  }
  if (!gx) return;
  auto gh = [g, w](int64_t k) { return HAS_W ? g[k] * w[k] : g[k]; };
  const double sa = rms ? 0.0 : blocked_sum<T>(N, gh);
  const double sb = blocked_sum<T>(N, [&gh, &xh](int64_t k) { return gh(k) * xh(k); });
  const T ca = T(sa / double(N)), cb = T(sb / double(N));
  for (int64_t j = 0; j < N; ++j) gx[j] = r * (gh(j) - ca - xh(j) * cb);
}
}  // namespace

template <typename T>
void norm_fwd(const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, int64_t M, int64_t N, double eps, bool rms) {
  parallel_for(M, rows_grain(N), [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      T mu;
      norm_row(x + i * N, w, b, y + i * N, mu, rstd[i], N, T(eps), rms);
      if (mean) mean[i] = mu;
    }
  });
}

template <typename T>
void norm_bwd(const T* g, const T* x, const T* w, const T* mean, const T* rstd, T* gx, T* gw, T* gb, int64_t M,
              int64_t N, bool rms) {
  // Column sums go through a fixed number of row chunks so that results do not depend on the thread count.
  int64_t chunks = std::clamp<int64_t>(M / 64, 1, 64);
  const bool cols = gw || gb;
  std::vector<T> pw(cols ? chunks * N : 0, T(0)), pb(cols ? chunks * N : 0, T(0));
  auto row = w ? (cols ? norm_bwd_row<T, true, true> : norm_bwd_row<T, true, false>)
               : (cols ? norm_bwd_row<T, false, true> : norm_bwd_row<T, false, false>);
  parallel_for(chunks, 1, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      int64_t lo = M * c / chunks, hi = M * (c + 1) / chunks;
      for (int64_t i = lo; i < hi; ++i)
        row(g + i * N, x + i * N, w, rms ? T(0) : mean[i], rstd[i], gx ? gx + i * N : nullptr,
            cols ? pw.data() + c * N : nullptr, cols ? pb.data() + c * N : nullptr, N, rms);
    }
  });
  for (int64_t c = 0; c < chunks; ++c) {
    if (gw) for (int64_t j = 0; j < N; ++j) gw[j] = (c ? gw[j] : T(0)) + pw[c * N + j];
    if (gb) for (int64_t j = 0; j < N; ++j) gb[j] = (c ? gb[j] : T(0)) + pb[c * N + j];
  }
}

// ---- gated units
template <typename T>
void gate_fwd(Gate k, const T* a, const T* b, T* y, int64_t outer, int64_t len, int64_t in_stride) {
  parallel_for(outer * len, kWork, [&](int64_t lo, int64_t hi) {
    for (int64_t o = lo / len; o * len < hi; ++o) {
      int64_t j0 = std::max(lo - o * len, int64_t(0)), j1 = std::min(hi - o * len, len);
      const T* ar = a + o * in_stride;
      const T* br = b + o * in_stride;
      T* yr = y + o * len;
      if (k == Gate::Glu)
        for (int64_t j = j0; j < j1; ++j) yr[j] = ar[j] / (T(1) + sexp<T>(-br[j]));
      else
        for (int64_t j = j0; j < j1; ++j) yr[j] = ar[j] / (T(1) + sexp<T>(-ar[j])) * br[j];
    }
  });
}

template <typename T>
void gate_bwd(Gate k, const T* g, const T* a, const T* b, T* ga, T* gb, int64_t outer, int64_t len, int64_t in_stride) {
  parallel_for(outer * len, kWork, [&](int64_t lo, int64_t hi) {
    for (int64_t o = lo / len; o * len < hi; ++o) {
      int64_t j0 = std::max(lo - o * len, int64_t(0)), j1 = std::min(hi - o * len, len);
      const T* ar = a + o * in_stride;
      const T* br = b + o * in_stride;
      const T* gr = g + o * len;
      T* gar = ga + o * in_stride;
      T* gbr = gb + o * in_stride;
      if (k == Gate::Glu) {
        for (int64_t j = j0; j < j1; ++j) {
          T s = T(1) / (T(1) + sexp<T>(-br[j]));
          gar[j] = gr[j] * s;
          gbr[j] = gr[j] * ar[j] * s * (T(1) - s);
        }
      } else {
        for (int64_t j = j0; j < j1; ++j) {
          T s = T(1) / (T(1) + sexp<T>(-ar[j]));
          gar[j] = gr[j] * br[j] * s * (T(1) + ar[j] * (T(1) - s));
          gbr[j] = gr[j] * ar[j] * s;
        }
      }
    }
  });
}

// ---- embedding
void embedding_fwd(const int64_t* ids, int64_t n, const char* w, int64_t row_bytes, char* out) {
  parallel_for(n, rows_grain(row_bytes / 4), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) std::memcpy(out + i * row_bytes, w + ids[i] * row_bytes, size_t(row_bytes));
  });
}

template <typename T>
void embedding_bwd(const int64_t* ids, int64_t n, const T* g, int64_t V, int64_t D, int64_t padding_idx,
                   bool scale_by_freq, T* gw) {
  parallel_for(V * D, kWork * 4, [&](int64_t b, int64_t e) { std::memset(gw + b, 0, size_t(e - b) * sizeof(T)); });
  std::vector<T> inv;
  if (scale_by_freq) {
    std::vector<int64_t> count(V, 0);
    for (int64_t i = 0; i < n; ++i) count[ids[i]]++;
    inv.resize(V);
    for (int64_t v = 0; v < V; ++v) inv[v] = count[v] ? T(1) / T(count[v]) : T(0);
  }
  // Threads own disjoint column ranges, so rows of the same id never race.
  int64_t grain = std::max<int64_t>(16, D / std::max(get_num_threads(), 1));
  parallel_for(D, std::min(grain, D), [&](int64_t c0, int64_t c1) {
    for (int64_t i = 0; i < n; ++i) {
      int64_t id = ids[i];
      if (id == padding_idx) continue;
      const T* gr = g + i * D;
      T* wr = gw + id * D;
      if (scale_by_freq) {
        T s = inv[id];
        for (int64_t c = c0; c < c1; ++c) wr[c] += gr[c] * s;
      } else {
        for (int64_t c = c0; c < c1; ++c) wr[c] += gr[c];
      }
    }
  });
}

// ---- dropout
template <typename T> void dropout_apply(const T* x, T* y, int64_t n, double p, uint64_t seed, uint64_t base) {
  const uint64_t thr = uint64_t(p * 4294967296.0);
  const T scale = T(1) / T(1 - p);
  int64_t groups = (n + 3) / 4;
  parallel_for(groups, kWork / 4, [&](int64_t b, int64_t e) {
    for (int64_t q = b; q < e; ++q) {
      auto r = philox(seed, base + uint64_t(q));
      int64_t i0 = q * 4, m = std::min<int64_t>(4, n - i0);
      for (int64_t l = 0; l < m; ++l) y[i0 + l] = uint64_t(r[l]) >= thr ? x[i0 + l] * scale : T(0);
    }
  });
}

#define SX_INSTANTIATE(T)                                                                                          \
  template void softmax_fwd<T>(const T*, T*, int64_t, int64_t, int64_t, bool);                                     \
  template void softmax_bwd<T>(const T*, const T*, T*, int64_t, int64_t, int64_t, bool);                           \
  template void norm_fwd<T>(const T*, const T*, const T*, T*, T*, T*, int64_t, int64_t, double, bool);             \
  template void norm_bwd<T>(const T*, const T*, const T*, const T*, const T*, T*, T*, T*, int64_t, int64_t, bool); \
  template void gate_fwd<T>(Gate, const T*, const T*, T*, int64_t, int64_t, int64_t);                              \
  template void gate_bwd<T>(Gate, const T*, const T*, const T*, T*, T*, int64_t, int64_t, int64_t);                \
  template void embedding_bwd<T>(const int64_t*, int64_t, const T*, int64_t, int64_t, int64_t, bool, T*);          \
  template void dropout_apply<T>(const T*, T*, int64_t, double, uint64_t, uint64_t);
SX_INSTANTIATE(float)
SX_INSTANTIATE(double)
#undef SX_INSTANTIATE

}  // namespace sx::cpu
