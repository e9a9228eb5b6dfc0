// Fused LSTM and GRU kernels: single cells (the elementwise half of a recurrent step; the GEMMs are the
// caller's) and whole sequences of one layer and direction (per step one product with W_hh and one pass
// of the cell; the backward adds one product per step and one GEMM for the gradient of W_hh over all
// steps). The LSTM sequence runs its per-step products on W_hh packed once into column panels, each
// step's product and cell together per block of hidden units.
// Rows of the batch run in parallel; each row's loop over the H units calls only the inline
// sigmoid / tanh of vmath.h so that it vectorises. The CPU entries of ops/nn.h's slots are at the end.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/parallel.h"
#include "cpu/blas.h"
#include "cpu/kernels.h"
#include "cpu/vmath.h"
#include "ops/nn.h"

namespace sx::cpu {
namespace {

constexpr int64_t kWork = 32768;  // elements per parallel chunk, roughly

int64_t row_grain(int64_t row_len) { return std::max<int64_t>(1, kWork / std::max<int64_t>(row_len, 1)); }

template <typename T> T* ptr(const Tensor& t) { return t ? t->data<T>() : nullptr; }

// a[k] + e[k] when the pre-activations come in two parts (Two), else a[k].
template <typename T, bool Two> T sum2(const T* __restrict a, const T* __restrict e, int64_t k) {
  if constexpr (Two) return a[k] + e[k];
  else return a[k];
}

// Units [0, n) of one LSTM row: pre-activations a (gate stride H) (+ e, gate stride es), cp -> h, c;
// w (gate stride H, five parts) when Save.
template <typename T, bool Save, bool Two>
void lstm_row(const T* __restrict a, const T* __restrict e, const T* __restrict cp, T* __restrict h,
              T* __restrict c, T* __restrict w, int64_t n, int64_t H, int64_t es) {
  auto pre = [&](int64_t g, int64_t j) {
    if constexpr (Two) return a[g * H + j] + e[g * es + j];
    else return a[g * H + j];
  };
  for (int64_t j = 0; j < n; ++j) {
    T i = ssigmoid<T>(pre(0, j)), f = ssigmoid<T>(pre(1, j)), gg = stanh<T>(pre(2, j)), o = ssigmoid<T>(pre(3, j));
    T cn = f * cp[j] + i * gg;
    T tc = stanh<T>(cn);
    c[j] = cn;
    h[j] = o * tc;
    if constexpr (Save) {
      w[j] = i;
      w[H + j] = f;
      w[2 * H + j] = gg;
      w[3 * H + j] = o;
      w[4 * H + j] = tc;
    }
  }
}

// B rows: gates a (+ e when set) (B, 4H), c_prev (B, H) -> h, c (B, H); ws (B, 5H) when set.
template <typename T>
void lstm_fwd(const T* a, const T* e, const T* c_prev, T* h, T* c, T* ws, int64_t B, int64_t H) {
  parallel_for(B, row_grain(5 * H), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const T* ab = a + b * 4 * H;
      const T* eb = e ? e + b * 4 * H : nullptr;
      const T* cp = c_prev + b * H;
      T *hb = h + b * H, *cb = c + b * H, *wb = ws ? ws + b * 5 * H : nullptr;
      if (ws && e) lstm_row<T, true, true>(ab, eb, cp, hb, cb, wb, H, H, H);
      else if (ws) lstm_row<T, true, false>(ab, eb, cp, hb, cb, wb, H, H, H);
      else if (e) lstm_row<T, false, true>(ab, eb, cp, hb, cb, wb, H, H, H);
      else lstm_row<T, false, false>(ab, eb, cp, hb, cb, wb, H, H, H);
    }
  });
}

// Units [0, n) of one LSTM row backward: dh (+ dh2) and dc, the saved cp and w (gate stride H) -> dg
// (gate stride H), dcp.
template <typename T, bool Two>
void lstm_bwd_row(const T* __restrict dh, const T* __restrict dh2, const T* __restrict dc, const T* __restrict cp,
                  const T* __restrict w, T* __restrict dg, T* __restrict dcp, int64_t n, int64_t H) {
  for (int64_t j = 0; j < n; ++j) {
    T i = w[j], f = w[H + j], gg = w[2 * H + j], o = w[3 * H + j], tc = w[4 * H + j];
    T dhj = sum2<T, Two>(dh, dh2, j);
    T dct = dc[j] + dhj * o * (T(1) - tc * tc);
    dg[j] = dct * gg * i * (T(1) - i);
    dg[H + j] = dct * cp[j] * f * (T(1) - f);
    dg[2 * H + j] = dct * i * (T(1) - gg * gg);
    dg[3 * H + j] = dhj * tc * o * (T(1) - o);
    dcp[j] = dct * f;
  }
}

template <typename T>
void lstm_bwd(const T* dh, const T* dh2, const T* dc, const T* c_prev, const T* ws, T* dgates, T* dc_prev, int64_t B,
              int64_t H) {
  parallel_for(B, row_grain(10 * H), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const T* d2 = dh2 ? dh2 + b * H : nullptr;
      auto row = dh2 ? &lstm_bwd_row<T, true> : &lstm_bwd_row<T, false>;
      row(dh + b * H, d2, dc + b * H, c_prev + b * H, ws + b * 5 * H, dgates + b * 4 * H, dc_prev + b * H, H, H);
    }
  });
}

// One GRU row: a = gi, e = gh (3H) (plus the bias bh when Bias), hp (H) -> h (H); w (4H) when Save.
template <typename T, bool Save, bool Bias>
void gru_row(const T* __restrict a, const T* __restrict e, const T* __restrict bh, const T* __restrict hp,
             T* __restrict h, T* __restrict w, int64_t H) {
  for (int64_t j = 0; j < H; ++j) {
    T er = sum2<T, Bias>(e, bh, j), ez = sum2<T, Bias>(e, bh, H + j), en = sum2<T, Bias>(e, bh, 2 * H + j);
    T r = ssigmoid<T>(a[j] + er), z = ssigmoid<T>(a[H + j] + ez);
    T n = stanh<T>(a[2 * H + j] + r * en);
    h[j] = n + z * (hp[j] - n);
    if constexpr (Save) {
      w[j] = r;
      w[H + j] = z;
      w[2 * H + j] = n;
      w[3 * H + j] = en;
    }
  }
}

template <typename T>
void gru_fwd(const T* gi, const T* gh, const T* bh, const T* h_prev, T* h, T* ws, int64_t B, int64_t H) {
  parallel_for(B, row_grain(4 * H), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const T* a = gi + b * 3 * H;
      const T* e = gh + b * 3 * H;
      const T* hp = h_prev + b * H;
      T *hb = h + b * H, *wb = ws ? ws + b * 4 * H : nullptr;
      if (ws && bh) gru_row<T, true, true>(a, e, bh, hp, hb, wb, H);
      else if (ws) gru_row<T, true, false>(a, e, bh, hp, hb, wb, H);
      else if (bh) gru_row<T, false, true>(a, e, bh, hp, hb, wb, H);
      else gru_row<T, false, false>(a, e, bh, hp, hb, wb, H);
    }
  });
}

// One GRU row backward: dh (+ dh2) (H), the saved hp and w -> dgi, dgh (3H), dhp (H) (the part of
// the gradient of h_prev that does not pass through gh).
template <typename T, bool Two>
void gru_bwd_row(const T* __restrict dh, const T* __restrict dh2, const T* __restrict hp, const T* __restrict w,
                 T* __restrict dgi, T* __restrict dgh, T* __restrict dhp, int64_t H) {
  for (int64_t j = 0; j < H; ++j) {
    T r = w[j], z = w[H + j], n = w[2 * H + j], ghn = w[3 * H + j];
    T dhj = sum2<T, Two>(dh, dh2, j);
    T dz = dhj * (hp[j] - n) * z * (T(1) - z);
    T dn = dhj * (T(1) - z) * (T(1) - n * n);
    T dr = dn * ghn * r * (T(1) - r);
    dgi[j] = dr;
    dgi[H + j] = dz;
    dgi[2 * H + j] = dn;
    dgh[j] = dr;
    dgh[H + j] = dz;
    dgh[2 * H + j] = dn * r;
    dhp[j] = dhj * z;
  }
}

template <typename T>
void gru_bwd(const T* dh, const T* dh2, const T* h_prev, const T* ws, T* dgi, T* dgh, T* dh_prev, int64_t B,
             int64_t H) {
  parallel_for(B, row_grain(11 * H), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const T* d2 = dh2 ? dh2 + b * H : nullptr;
      auto row = dh2 ? &gru_bwd_row<T, true> : &gru_bwd_row<T, false>;
      row(dh + b * H, d2, h_prev + b * H, ws + b * 4 * H, dgi + b * 3 * H, dgh + b * 3 * H, dh_prev + b * H, H);
    }
  });
}

// ---- whole sequences.
struct Seq {
  int64_t T, B, H;
  bool rev;
  int64_t time(int64_t k) const { return rev ? T - 1 - k : k; }  // time of forward step k
  int64_t next(int64_t t) const { return rev ? t - 1 : t + 1; }
};

// ---- the recurrent product of an LSTM step with few rows (the batch), against a weight that every
// step reuses: the weight is packed once per sequence into panels of kPanel<T> columns, stored k-major
// (panel[k * kPanel + c]), so that a panel is read contiguously and stays in cache while all rows pass
// over it; BLAS would repack the weight at every step. Each task of a step takes one block of kPanel
// hidden units, forms the products for those units and then runs the cell on them, so a step is one
// parallel region.
template <typename T> constexpr int64_t kLanes = 32 / int64_t(sizeof(T));
template <typename T> constexpr int64_t kPanel = 2 * kLanes<T>;

// c[r, 0:cols] = a[r, 0:K] @ panel (K x kPanel) for R rows.
template <typename T, int R>
void panel_rows(const T* __restrict a, int64_t lda, const T* __restrict panel, int64_t K, T* __restrict c,
                int64_t ldc, int64_t cols) {
  typedef T V __attribute__((vector_size(32)));
  constexpr int64_t L = kLanes<T>;
  V lo[R], hi[R];
  for (int r = 0; r < R; ++r) lo[r] = hi[r] = V{};
  for (int64_t k = 0; k < K; ++k) {
    V b0, b1;
    std::memcpy(&b0, panel + k * 2 * L, sizeof(V));
    std::memcpy(&b1, panel + k * 2 * L + L, sizeof(V));
    for (int r = 0; r < R; ++r) {
      const T x = a[r * lda + k];
      lo[r] += x * b0;
      hi[r] += x * b1;
    }
  }
  for (int r = 0; r < R; ++r) {
    T out[2 * L];
    std::memcpy(out, &lo[r], sizeof(V));
    std::memcpy(out + L, &hi[r], sizeof(V));
    std::copy(out, out + cols, c + r * ldc);
  }
}

// c[0:M, 0:cols] = a (M x K) @ panel, five rows at a time.
template <typename T>
void panel_gemm(const T* a, int64_t lda, int64_t M, const T* panel, int64_t K, T* c, int64_t ldc, int64_t cols) {
  int64_t r = 0;
  for (; r + 5 <= M; r += 5) panel_rows<T, 5>(a + r * lda, lda, panel, K, c + r * ldc, ldc, cols);
  switch (M - r) {
    case 4: panel_rows<T, 4>(a + r * lda, lda, panel, K, c + r * ldc, ldc, cols); break;
    case 3: panel_rows<T, 3>(a + r * lda, lda, panel, K, c + r * ldc, ldc, cols); break;
    case 2: panel_rows<T, 2>(a + r * lda, lda, panel, K, c + r * ldc, ldc, cols); break;
    case 1: panel_rows<T, 1>(a + r * lda, lda, panel, K, c + r * ldc, ldc, cols); break;
    default: break;
  }
}

// Blocks of kPanel hidden units: block u holds units [u * P, u * P + units(u)).
struct UnitBlocks {
  int64_t H, P;
  int64_t count() const { return (H + P - 1) / P; }
  int64_t units(int64_t u) const { return std::min(P, H - u * P); }
};

// W_hh (4H, H) packed for h @ W^T: block u's four panels (gates i, f, g, o) are consecutive; panel
// (u, g) holds W[g * H + u * P + c, k] at [k * P + c] (zero past the last unit).
template <typename T> std::vector<T> pack_rows(const T* w, const UnitBlocks& ub) {
  const int64_t H = ub.H, P = ub.P;
  std::vector<T> out(size_t(ub.count() * 4 * H * P), T(0));
  for (int64_t u = 0; u < ub.count(); ++u)
    for (int64_t g = 0; g < 4; ++g) {
      T* panel = out.data() + (u * 4 + g) * H * P;
      for (int64_t c = 0; c < ub.units(u); ++c) {
        const T* row = w + (g * H + u * P + c) * H;
        for (int64_t k = 0; k < H; ++k) panel[k * P + c] = row[k];
      }
    }
  return out;
}

// W_hh (4H, H) packed for dgates @ W: panel u holds W[k, u * P + c] at [k * P + c], k < 4H.
template <typename T> std::vector<T> pack_cols(const T* w, const UnitBlocks& ub) {
  const int64_t H = ub.H, P = ub.P, G = 4 * H;
  std::vector<T> out(size_t(ub.count() * G * P), T(0));
  for (int64_t u = 0; u < ub.count(); ++u)
    for (int64_t k = 0; k < G; ++k) std::copy(w + k * H + u * P, w + k * H + u * P + ub.units(u), out.data() + (u * G + k) * P);
  return out;
}

// Step k of the forward pass handles time t = k (or T-1-k with `rev`); every per-step buffer (gi, hp,
// cp, ws, out) is indexed by t, so the gradient of W_hh is one GEMM over all T*B rows at the end.
template <typename T>
void lstm_seq_fwd(const Seq& s, const T* gi, const T* w, const T* h0, const T* c0, T* out, T* hp, T* cp, T* ws) {
  const int64_t B = s.B, H = s.H, BH = B * H, G = 4 * H, P = kPanel<T>;
  const UnitBlocks ub{H, P};
  const std::vector<T> packed = pack_rows(w, ub);
  std::vector<T> gh(size_t(ub.count() * B * 4 * P));
  std::copy(h0, h0 + BH, hp + s.time(0) * BH);
  std::copy(c0, c0 + BH, cp + s.time(0) * BH);
  for (int64_t k = 0; k < s.T; ++k) {
    const int64_t t = s.time(k);
    const bool last = k == s.T - 1;
    const T* h = hp + t * BH;
    T* c = last ? out + s.T * BH : cp + s.next(t) * BH;
    parallel_for(ub.count(), 1, [&](int64_t u0, int64_t u1) {
      for (int64_t u = u0; u < u1; ++u) {
        const int64_t j0 = u * P, n = ub.units(u);
        T* e = gh.data() + u * B * 4 * P;  // (B, 4, P): this block's gates of every row
        for (int64_t g = 0; g < 4; ++g)
          panel_gemm<T>(h, H, B, packed.data() + (u * 4 + g) * H * P, H, e + g * P, 4 * P, n);
        for (int64_t b = 0; b < B; ++b) {
          const int64_t o = t * BH + b * H + j0;
          T* wb = ws ? ws + t * B * 5 * H + b * 5 * H + j0 : nullptr;
          if (ws) lstm_row<T, true, true>(gi + t * B * G + b * G + j0, e + b * 4 * P, cp + o, out + o, c + b * H + j0, wb, n, H, P);
          else lstm_row<T, false, true>(gi + t * B * G + b * G + j0, e + b * 4 * P, cp + o, out + o, c + b * H + j0, wb, n, H, P);
          if (!last) std::copy(out + o, out + o + n, hp + s.next(t) * BH + b * H + j0);
        }
      }
    });
  }
}

// dout (T+1, B, H): the gradients of the outputs and, in row T, of the last cell state. Each step's
// task forms its units' part of the gradient carried from the later step (dgates of that step @ W_hh)
// and runs the cell backward on them; dc alternates between dc0 and dcs. dh0 is one more product.
template <typename T>
void lstm_seq_bwd(const Seq& s, const T* dout, const T* w, const T* hp, const T* cp, const T* ws, T* dgi, T* dh0,
                  T* dc0, T* dcs, T* dw) {
  const int64_t B = s.B, H = s.H, BH = B * H, G = 4 * H, P = kPanel<T>;
  const UnitBlocks ub{H, P};
  const std::vector<T> packed = pack_cols(w, ub);
  std::vector<T> dh(size_t(ub.count() * B * P));
  const T* dc = dout + s.T * BH;
  const T* dg_later = nullptr;  // dgates of the step processed before (time s.next(t))
  for (int64_t k = s.T - 1; k >= 0; --k) {
    const int64_t t = s.time(k);
    T* dcn = dc == dc0 ? dcs : dc0;
    parallel_for(ub.count(), 1, [&](int64_t u0, int64_t u1) {
      for (int64_t u = u0; u < u1; ++u) {
        const int64_t j0 = u * P, n = ub.units(u);
        T* d2 = dh.data() + u * B * P;
        if (dg_later) panel_gemm<T>(dg_later, G, B, packed.data() + u * G * P, G, d2, P, n);
        for (int64_t b = 0; b < B; ++b) {
          const int64_t o = b * H + j0;
          auto row = dg_later ? &lstm_bwd_row<T, true> : &lstm_bwd_row<T, false>;
          row(dout + t * BH + o, d2 + b * P, dc + o, cp + t * BH + o, ws + t * B * 5 * H + b * 5 * H + j0,
              dgi + t * B * G + b * G + j0, dcn + o, n, H);
        }
      }
    });
    dg_later = dgi + t * B * G;
    dc = dcn;
  }
  blas_gemm(false, false, B, H, G, dg_later, G, w, H, T(0), dh0, H);
  if (dc != dc0) std::copy(dc, dc + BH, dc0);
  if (dw) blas_gemm(true, false, G, H, s.T * B, dgi, G, hp, H, T(0), dw, H);
}

template <typename T>
void gru_seq_fwd(const Seq& s, const T* gi, const T* w, const T* bh, const T* h0, T* out, T* hp, T* gh, T* ws) {
  const int64_t B = s.B, H = s.H, BH = B * H, G = 3 * H;
  std::copy(h0, h0 + BH, hp + s.time(0) * BH);
  for (int64_t k = 0; k < s.T; ++k) {
    const int64_t t = s.time(k);
    blas_gemm(false, true, B, G, H, hp + t * BH, H, w, H, T(0), gh, G);
    gru_fwd<T>(gi + t * B * G, gh, bh, hp + t * BH, out + t * BH, ws ? ws + t * B * 4 * H : nullptr, B, H);
    if (k < s.T - 1) std::copy(out + t * BH, out + (t + 1) * BH, hp + s.next(t) * BH);
  }
}

// The gradient carried to the previous step, dh_prev = dh * z + dgh @ W_hh, alternates between dh0
// and dhs; dgh (T, B, 3H) keeps every step's for the gradients of W_hh and b_hh.
template <typename T>
void gru_seq_bwd(const Seq& s, const T* dout, const T* w, const T* hp, const T* ws, T* dgi, T* dgh, T* dh0, T* dhs,
                 T* dw, T* db) {
  const int64_t B = s.B, H = s.H, BH = B * H, G = 3 * H;
  const T* carry = nullptr;
  for (int64_t k = s.T - 1; k >= 0; --k) {
    const int64_t t = s.time(k);
    T* dhn = carry == dh0 ? dhs : dh0;
    gru_bwd<T>(dout + t * BH, carry, hp + t * BH, ws + t * B * 4 * H, dgi + t * B * G, dgh + t * B * G, dhn, B, H);
    blas_gemm(false, false, B, H, G, dgh + t * B * G, G, w, H, T(1), dhn, H);
    carry = dhn;
  }
  if (carry != dh0) std::copy(carry, carry + BH, dh0);
  if (dw) blas_gemm(true, false, G, H, s.T * B, dgh, G, hp, H, T(0), dw, H);
  if (db) {
    std::fill(db, db + G, T(0));
    for (int64_t r = 0; r < s.T * B; ++r)
      for (int64_t j = 0; j < G; ++j) db[j] += dgh[r * G + j];
  }
}

void lstm_cell_fwd_cpu(const Tensor& gates, const Tensor& c_prev, const Tensor& hc, const Tensor& ws, int64_t B,
                       int64_t H) {
  SX_DISPATCH_F32_F64(hc->dtype, "lstm_cell", [&] {
    using T = scalar_t;
    lstm_fwd<T>(ptr<T>(gates), nullptr, ptr<T>(c_prev), ptr<T>(hc), ptr<T>(hc) + B * H, ptr<T>(ws), B, H);
  });
}
void lstm_cell_bwd_cpu(const Tensor& dhc, const Tensor& c_prev, const Tensor& ws, const Tensor& dgates,
                       const Tensor& dc_prev, int64_t B, int64_t H) {
  SX_DISPATCH_F32_F64(dhc->dtype, "lstm_cell", [&] {
    using T = scalar_t;
    lstm_bwd<T>(ptr<T>(dhc), nullptr, ptr<T>(dhc) + B * H, ptr<T>(c_prev), ptr<T>(ws), ptr<T>(dgates),
                ptr<T>(dc_prev), B, H);
  });
}
void gru_cell_fwd_cpu(const Tensor& gi, const Tensor& gh, const Tensor& h_prev, const Tensor& h, const Tensor& ws,
                      int64_t B, int64_t H) {
  SX_DISPATCH_F32_F64(h->dtype, "gru_cell", [&] {
    using T = scalar_t;
    gru_fwd<T>(ptr<T>(gi), ptr<T>(gh), nullptr, ptr<T>(h_prev), ptr<T>(h), ptr<T>(ws), B, H);
  });
}
void gru_cell_bwd_cpu(const Tensor& dh, const Tensor& h_prev, const Tensor& ws, const Tensor& dgi, const Tensor& dgh,
                      const Tensor& dh_prev, int64_t B, int64_t H) {
  SX_DISPATCH_F32_F64(dh->dtype, "gru_cell", [&] {
    using T = scalar_t;
    gru_bwd<T>(ptr<T>(dh), nullptr, ptr<T>(h_prev), ptr<T>(ws), ptr<T>(dgi), ptr<T>(dgh), ptr<T>(dh_prev), B, H);
  });
}

void lstm_seq_fwd_cpu(const Tensor& gi, const Tensor& w_hh, const Tensor& h0, const Tensor& c0, const Tensor& out,
                      const Tensor& hp, const Tensor& cp, const Tensor& ws, int64_t T_, int64_t B, int64_t H,
                      bool rev) {
  SX_DISPATCH_F32_F64(out->dtype, "lstm_sequence", [&] {
    using T = scalar_t;
    lstm_seq_fwd<T>(Seq{T_, B, H, rev}, ptr<T>(gi), ptr<T>(w_hh), ptr<T>(h0), ptr<T>(c0), ptr<T>(out), ptr<T>(hp),
                    ptr<T>(cp), ptr<T>(ws));
  });
}
void lstm_seq_bwd_cpu(const Tensor& dout, const Tensor& w_hh, const Tensor& hp, const Tensor& cp, const Tensor& ws,
                      const Tensor& dgi, const Tensor& dh0, const Tensor& dc0, const Tensor& dcs, const Tensor& dw,
                      int64_t T_, int64_t B, int64_t H, bool rev) {
  SX_DISPATCH_F32_F64(dout->dtype, "lstm_sequence", [&] {
    using T = scalar_t;
    lstm_seq_bwd<T>(Seq{T_, B, H, rev}, ptr<T>(dout), ptr<T>(w_hh), ptr<T>(hp), ptr<T>(cp), ptr<T>(ws), ptr<T>(dgi),
                    ptr<T>(dh0), ptr<T>(dc0), ptr<T>(dcs), ptr<T>(dw));
  });
}
void gru_seq_fwd_cpu(const Tensor& gi, const Tensor& w_hh, const Tensor& b_hh, const Tensor& h0, const Tensor& out,
                     const Tensor& hp, const Tensor& gh, const Tensor& ws, int64_t T_, int64_t B, int64_t H, bool rev) {
  SX_DISPATCH_F32_F64(out->dtype, "gru_sequence", [&] {
    using T = scalar_t;
    gru_seq_fwd<T>(Seq{T_, B, H, rev}, ptr<T>(gi), ptr<T>(w_hh), ptr<T>(b_hh), ptr<T>(h0), ptr<T>(out), ptr<T>(hp),
                   ptr<T>(gh), ptr<T>(ws));
  });
}
void gru_seq_bwd_cpu(const Tensor& dout, const Tensor& w_hh, const Tensor& hp, const Tensor& ws, const Tensor& dgi,
                     const Tensor& dgh, const Tensor& dh0, const Tensor& dhs, const Tensor& dw, const Tensor& db,
                     int64_t T_, int64_t B, int64_t H, bool rev) {
  SX_DISPATCH_F32_F64(dout->dtype, "gru_sequence", [&] {
    using T = scalar_t;
    gru_seq_bwd<T>(Seq{T_, B, H, rev}, ptr<T>(dout), ptr<T>(w_hh), ptr<T>(hp), ptr<T>(ws), ptr<T>(dgi), ptr<T>(dgh),
                   ptr<T>(dh0), ptr<T>(dhs), ptr<T>(dw), ptr<T>(db));
  });
}

}  // namespace

SX_REGISTER_KERNEL(kern::lstm_cell_fwd, CPU, &lstm_cell_fwd_cpu);
SX_REGISTER_KERNEL(kern::lstm_cell_bwd, CPU, &lstm_cell_bwd_cpu);
SX_REGISTER_KERNEL(kern::gru_cell_fwd, CPU, &gru_cell_fwd_cpu);
SX_REGISTER_KERNEL(kern::gru_cell_bwd, CPU, &gru_cell_bwd_cpu);
SX_REGISTER_KERNEL(kern::lstm_seq_fwd, CPU, &lstm_seq_fwd_cpu);
SX_REGISTER_KERNEL(kern::lstm_seq_bwd, CPU, &lstm_seq_bwd_cpu);
SX_REGISTER_KERNEL(kern::gru_seq_fwd, CPU, &gru_seq_fwd_cpu);
SX_REGISTER_KERNEL(kern::gru_seq_bwd, CPU, &gru_seq_bwd_cpu);

}  // namespace sx::cpu
