// Fused LSTM and GRU cell kernels (the elementwise half of a recurrent step; the GEMMs are the
// caller's). Rows of the batch run in parallel; each row's loop over the H units calls only the
// inline sigmoid / tanh of vmath.h so that it vectorises. The CPU entries of ops/nn.h's
// lstm_cell_* and gru_cell_* slots are at the end.
#include <algorithm>

#include "core/parallel.h"
#include "cpu/kernels.h"
#include "cpu/vmath.h"
#include "ops/nn.h"

namespace sx::cpu {
namespace {

constexpr int64_t kWork = 32768;  // elements per parallel chunk, roughly

int64_t row_grain(int64_t row_len) { return std::max<int64_t>(1, kWork / std::max<int64_t>(row_len, 1)); }

template <typename T> T* ptr(const Tensor& t) { return t ? t->data<T>() : nullptr; }

// One LSTM row: g (4H) pre-activations, cp (H) -> h, c (H); w (5H) when Save.
template <typename T, bool Save>
void lstm_row(const T* __restrict g, const T* __restrict cp, T* __restrict h, T* __restrict c, T* __restrict w,
              int64_t H) {
  for (int64_t j = 0; j < H; ++j) {
    T i = ssigmoid<T>(g[j]), f = ssigmoid<T>(g[H + j]), gg = stanh<T>(g[2 * H + j]), o = ssigmoid<T>(g[3 * H + j]);
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

template <typename T>
void lstm_fwd(const T* gates, const T* c_prev, T* hc, T* ws, int64_t B, int64_t H) {
  parallel_for(B, row_grain(5 * H), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const T* g = gates + b * 4 * H;
      T* h = hc + b * H;
      T* c = hc + (B + b) * H;
      if (ws) lstm_row<T, true>(g, c_prev + b * H, h, c, ws + b * 5 * H, H);
      else lstm_row<T, false>(g, c_prev + b * H, h, c, nullptr, H);
    }
  });
}

template <typename T>
void lstm_bwd_row(const T* __restrict dh, const T* __restrict dc, const T* __restrict cp, const T* __restrict w,
                  T* __restrict dg, T* __restrict dcp, int64_t H) {
  for (int64_t j = 0; j < H; ++j) {
    T i = w[j], f = w[H + j], gg = w[2 * H + j], o = w[3 * H + j], tc = w[4 * H + j];
    T dct = dc[j] + dh[j] * o * (T(1) - tc * tc);
    dg[j] = dct * gg * i * (T(1) - i);
    dg[H + j] = dct * cp[j] * f * (T(1) - f);
    dg[2 * H + j] = dct * i * (T(1) - gg * gg);
    dg[3 * H + j] = dh[j] * tc * o * (T(1) - o);
    dcp[j] = dct * f;
  }
}

template <typename T>
void lstm_bwd(const T* dhc, const T* c_prev, const T* ws, T* dgates, T* dc_prev, int64_t B, int64_t H) {
  parallel_for(B, row_grain(10 * H), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b)
      lstm_bwd_row<T>(dhc + b * H, dhc + (B + b) * H, c_prev + b * H, ws + b * 5 * H, dgates + b * 4 * H,
                      dc_prev + b * H, H);
  });
}

// One GRU row: a = gi, e = gh (3H), hp (H) -> h (H); w (4H) when Save.
template <typename T, bool Save>
void gru_row(const T* __restrict a, const T* __restrict e, const T* __restrict hp, T* __restrict h, T* __restrict w,
             int64_t H) {
  for (int64_t j = 0; j < H; ++j) {
    T r = ssigmoid<T>(a[j] + e[j]), z = ssigmoid<T>(a[H + j] + e[H + j]);
    T n = stanh<T>(a[2 * H + j] + r * e[2 * H + j]);
    h[j] = n + z * (hp[j] - n);
    if constexpr (Save) {
      w[j] = r;
      w[H + j] = z;
      w[2 * H + j] = n;
      w[3 * H + j] = e[2 * H + j];
    }
  }
}

template <typename T>
void gru_fwd(const T* gi, const T* gh, const T* h_prev, T* h, T* ws, int64_t B, int64_t H) {
  parallel_for(B, row_grain(4 * H), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const T* a = gi + b * 3 * H;
      const T* e = gh + b * 3 * H;
      if (ws) gru_row<T, true>(a, e, h_prev + b * H, h + b * H, ws + b * 4 * H, H);
      else gru_row<T, false>(a, e, h_prev + b * H, h + b * H, nullptr, H);
    }
  });
}

template <typename T>
void gru_bwd_row(const T* __restrict dh, const T* __restrict hp, const T* __restrict w, T* __restrict dgi,
                 T* __restrict dgh, T* __restrict dhp, int64_t H) {
  for (int64_t j = 0; j < H; ++j) {
    T r = w[j], z = w[H + j], n = w[2 * H + j], ghn = w[3 * H + j];
    T dz = dh[j] * (hp[j] - n) * z * (T(1) - z);
    T dn = dh[j] * (T(1) - z) * (T(1) - n * n);
    T dr = dn * ghn * r * (T(1) - r);
    dgi[j] = dr;
    dgi[H + j] = dz;
    dgi[2 * H + j] = dn;
    dgh[j] = dr;
    dgh[H + j] = dz;
    dgh[2 * H + j] = dn * r;
    dhp[j] = dh[j] * z;
  }
}

template <typename T>
void gru_bwd(const T* dh, const T* h_prev, const T* ws, T* dgi, T* dgh, T* dh_prev, int64_t B, int64_t H) {
  parallel_for(B, row_grain(11 * H), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b)
      gru_bwd_row<T>(dh + b * H, h_prev + b * H, ws + b * 4 * H, dgi + b * 3 * H, dgh + b * 3 * H, dh_prev + b * H,
                     H);
  });
}

void lstm_cell_fwd_cpu(const Tensor& gates, const Tensor& c_prev, const Tensor& hc, const Tensor& ws, int64_t B,
                       int64_t H) {
  SX_DISPATCH_F32_F64(hc->dtype, "lstm_cell", [&] {
    using T = scalar_t;
    lstm_fwd<T>(ptr<T>(gates), ptr<T>(c_prev), ptr<T>(hc), ptr<T>(ws), B, H);
  });
}
void lstm_cell_bwd_cpu(const Tensor& dhc, const Tensor& c_prev, const Tensor& ws, const Tensor& dgates,
                       const Tensor& dc_prev, int64_t B, int64_t H) {
  SX_DISPATCH_F32_F64(dhc->dtype, "lstm_cell", [&] {
    using T = scalar_t;
    lstm_bwd<T>(ptr<T>(dhc), ptr<T>(c_prev), ptr<T>(ws), ptr<T>(dgates), ptr<T>(dc_prev), B, H);
  });
}
void gru_cell_fwd_cpu(const Tensor& gi, const Tensor& gh, const Tensor& h_prev, const Tensor& h, const Tensor& ws,
                      int64_t B, int64_t H) {
  SX_DISPATCH_F32_F64(h->dtype, "gru_cell", [&] {
    using T = scalar_t;
    gru_fwd<T>(ptr<T>(gi), ptr<T>(gh), ptr<T>(h_prev), ptr<T>(h), ptr<T>(ws), B, H);
  });
}
void gru_cell_bwd_cpu(const Tensor& dh, const Tensor& h_prev, const Tensor& ws, const Tensor& dgi, const Tensor& dgh,
                      const Tensor& dh_prev, int64_t B, int64_t H) {
  SX_DISPATCH_F32_F64(dh->dtype, "gru_cell", [&] {
    using T = scalar_t;
    gru_bwd<T>(ptr<T>(dh), ptr<T>(h_prev), ptr<T>(ws), ptr<T>(dgi), ptr<T>(dgh), ptr<T>(dh_prev), B, H);
  });
}

}  // namespace

SX_REGISTER_KERNEL(kern::lstm_cell_fwd, CPU, &lstm_cell_fwd_cpu);
SX_REGISTER_KERNEL(kern::lstm_cell_bwd, CPU, &lstm_cell_bwd_cpu);
SX_REGISTER_KERNEL(kern::gru_cell_fwd, CPU, &gru_cell_fwd_cpu);
SX_REGISTER_KERNEL(kern::gru_cell_bwd, CPU, &gru_cell_bwd_cpu);

}  // namespace sx::cpu
