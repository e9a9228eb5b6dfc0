// CUDA kernels of the recurrent cells and sequences (slots in ops/nn.h), with the CPU kernels'
// layouts (cpu/rnn_kernels.cpp). A cell runs one thread per (row, unit). A sequence is a loop on the
// host over its steps: each step's recurrent product h W_hh^T goes to cuBLAS, then the cell kernel;
// the backward carries dh through dgates W_hh the same way and forms the gradient of W_hh in one
// product over all steps at the end.
#include "cuda/cuda_util.cuh"
#include "cuda/kernels.h"
#include "ops/nn.h"

namespace sx::cuda {

namespace {

template <typename T> __device__ T sigmoid(T x) { return T(1) / (T(1) + std::exp(-x)); }

// LSTM rows: pre-activations a (B, 4H) (+ e (B, 4H) when set), c_prev -> h, c; ws (B, 5H) when set.
template <typename T>
__global__ void lstm_fwd_kernel(const T* a, const T* e, const T* cp, T* h, T* c, T* ws, int64_t B, int64_t H) {
  SX_GRID_LOOP(k, B * H) {
    const int64_t b = k / H, j = k % H, r = b * 4 * H + j;
    auto pre = [&](int g) { return a[r + g * H] + (e ? e[r + g * H] : T(0)); };
    T i = sigmoid(pre(0)), f = sigmoid(pre(1)), gg = std::tanh(pre(2)), o = sigmoid(pre(3));
    T cn = f * cp[k] + i * gg, tc = std::tanh(cn);
    c[k] = cn;
    h[k] = o * tc;
    if (ws) {
      T* w = ws + b * 5 * H + j;
      w[0] = i, w[H] = f, w[2 * H] = gg, w[3 * H] = o, w[4 * H] = tc;
    }
  }
}

// dh (+ dh2 when set) and dc (B, H), the saved c_prev and ws -> dgates (B, 4H), dc_prev (B, H).
template <typename T>
__global__ void lstm_bwd_kernel(const T* dh, const T* dh2, const T* dc, const T* cp, const T* ws, T* dg, T* dcp,
                                int64_t B, int64_t H) {
  SX_GRID_LOOP(k, B * H) {
    const int64_t b = k / H, j = k % H;
    const T* w = ws + b * 5 * H + j;
    T i = w[0], f = w[H], gg = w[2 * H], o = w[3 * H], tc = w[4 * H];
    T dhj = dh[k] + (dh2 ? dh2[k] : T(0));
    T dct = dc[k] + dhj * o * (T(1) - tc * tc);
    T* d = dg + b * 4 * H + j;
    d[0] = dct * gg * i * (T(1) - i);
    d[H] = dct * cp[k] * f * (T(1) - f);
    d[2 * H] = dct * i * (T(1) - gg * gg);
    d[3 * H] = dhj * tc * o * (T(1) - o);
    dcp[k] = dct * f;
  }
}

// GRU rows: gi, gh (B, 3H) (+ the bias bh (3H) when set), h_prev -> h; ws (B, 4H) when set.
template <typename T>
__global__ void gru_fwd_kernel(const T* gi, const T* gh, const T* bh, const T* hp, T* h, T* ws, int64_t B, int64_t H) {
  SX_GRID_LOOP(k, B * H) {
    const int64_t b = k / H, j = k % H;
    const T *a = gi + b * 3 * H + j, *e = gh + b * 3 * H + j;
    T er = e[0] + (bh ? bh[j] : T(0)), ez = e[H] + (bh ? bh[H + j] : T(0)), en = e[2 * H] + (bh ? bh[2 * H + j] : T(0));
    T r = sigmoid(a[0] + er), z = sigmoid(a[H] + ez), n = std::tanh(a[2 * H] + r * en);
    h[k] = n + z * (hp[k] - n);
    if (ws) {
      T* w = ws + b * 4 * H + j;
      w[0] = r, w[H] = z, w[2 * H] = n, w[3 * H] = en;
    }
  }
}

// dh (+ dh2 when set), the saved h_prev and ws -> dgi, dgh (B, 3H) and dh_prev's part through z.
template <typename T>
__global__ void gru_bwd_kernel(const T* dh, const T* dh2, const T* hp, const T* ws, T* dgi, T* dgh, T* dhp, int64_t B,
                               int64_t H) {
  SX_GRID_LOOP(k, B * H) {
    const int64_t b = k / H, j = k % H;
    const T* w = ws + b * 4 * H + j;
    T r = w[0], z = w[H], n = w[2 * H], ghn = w[3 * H];
    T dhj = dh[k] + (dh2 ? dh2[k] : T(0));
    T dz = dhj * (hp[k] - n) * z * (T(1) - z);
    T dn = dhj * (T(1) - z) * (T(1) - n * n);
    T dr = dn * ghn * r * (T(1) - r);
    T *gi = dgi + b * 3 * H + j, *gh = dgh + b * 3 * H + j;
    gi[0] = dr, gi[H] = dz, gi[2 * H] = dn;
    gh[0] = dr, gh[H] = dz, gh[2 * H] = dn * r;
    dhp[k] = dhj * z;
  }
}

// out[j] = sum over the rows of a row-major (rows, cols) matrix (one thread per column, rows in order).
template <typename T> __global__ void sum_rows(const T* x, T* out, int64_t rows, int64_t cols) {
  SX_GRID_LOOP(j, cols) {
    T s = 0;
    for (int64_t r = 0; r < rows; ++r) s += x[r * cols + j];
    out[j] = s;
  }
}

// Row-major products of the sequences: y (B, G) = h (B, H) W^T for W (G, H) ...
template <typename T> void times_wt(Device d, const T* h, const T* w, T* y, int64_t B, int64_t G, int64_t H) {
  gemm(d, float_dtype<T>(), "rnn", CUBLAS_OP_T, CUBLAS_OP_N, G, B, H, w, H, 0, h, H, 0, 0.0, y, G, 0, 1);
}

// ... y (B, H) (+)= g (B, G) W ...
template <typename T>
void times_w(Device d, const T* g, const T* w, T* y, int64_t B, int64_t G, int64_t H, double beta) {
  gemm(d, float_dtype<T>(), "rnn", CUBLAS_OP_N, CUBLAS_OP_N, H, B, G, w, H, 0, g, G, 0, beta, y, H, 0, 1);
}

// ... and dW (G, H) = g^T (G, M) h (M, H) over M rows.
template <typename T> void weight_grad(Device d, const T* g, const T* h, T* dw, int64_t M, int64_t G, int64_t H) {
  gemm(d, float_dtype<T>(), "rnn", CUBLAS_OP_N, CUBLAS_OP_T, H, G, M, h, H, 0, g, G, 0, 0.0, dw, H, 0, 1);
}

void copy_rows(void* dst, const void* src, size_t bytes) {
  SX_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream()), "rnn");
}

struct Seq {
  int64_t T, B, H;
  bool rev;
  int64_t time(int64_t k) const { return rev ? T - 1 - k : k; }  // time of forward step k
  int64_t next(int64_t t) const { return rev ? t - 1 : t + 1; }
};

// The forward steps of a sequence in order: h0 goes to hp at the first step's time, step(t, last) runs
// step t, and its output h (out at t) becomes hp at the next step's time.
template <typename T, typename F> void forward_steps(const Seq& s, const T* h0, T* hp, const T* out, F step) {
  const size_t bytes = size_t(s.B * s.H) * sizeof(T);
  copy_rows(hp + s.time(0) * s.B * s.H, h0, bytes);
  for (int64_t k = 0; k < s.T; ++k) {
    const int64_t t = s.time(k);
    step(t, k == s.T - 1);
    if (k < s.T - 1) copy_rows(hp + s.next(t) * s.B * s.H, out + t * s.B * s.H, bytes);
  }
}

}  // namespace

void lstm_cell_fwd(const Tensor& gates, const Tensor& c_prev, const Tensor& hc, const Tensor& ws, int64_t B,
                   int64_t H) {
  use_device(hc->device());
  SX_CUDA_DISPATCH_FLOAT(hc->dtype, "lstm_cell", [&] {
    using T = scalar_t;
    lstm_fwd_kernel<T><<<blocks_for(B * H), kThreads, 0, stream()>>>(ptr<T>(gates), nullptr, ptr<T>(c_prev),
                                                                      ptr<T>(hc), ptr<T>(hc) + B * H, ptr<T>(ws), B, H);
  });
  check_launch("lstm_cell");
}

void lstm_cell_bwd(const Tensor& dhc, const Tensor& c_prev, const Tensor& ws, const Tensor& dgates,
                   const Tensor& dc_prev, int64_t B, int64_t H) {
  use_device(dhc->device());
  SX_CUDA_DISPATCH_FLOAT(dhc->dtype, "lstm_cell", [&] {
    using T = scalar_t;
    lstm_bwd_kernel<T><<<blocks_for(B * H), kThreads, 0, stream()>>>(
        ptr<T>(dhc), nullptr, ptr<T>(dhc) + B * H, ptr<T>(c_prev), ptr<T>(ws), ptr<T>(dgates), ptr<T>(dc_prev), B, H);
  });
  check_launch("lstm_cell");
}

void gru_cell_fwd(const Tensor& gi, const Tensor& gh, const Tensor& h_prev, const Tensor& h, const Tensor& ws,
                  int64_t B, int64_t H) {
  use_device(h->device());
  SX_CUDA_DISPATCH_FLOAT(h->dtype, "gru_cell", [&] {
    using T = scalar_t;
    gru_fwd_kernel<T><<<blocks_for(B * H), kThreads, 0, stream()>>>(ptr<T>(gi), ptr<T>(gh), nullptr, ptr<T>(h_prev),
                                                                     ptr<T>(h), ptr<T>(ws), B, H);
  });
  check_launch("gru_cell");
}

void gru_cell_bwd(const Tensor& dh, const Tensor& h_prev, const Tensor& ws, const Tensor& dgi, const Tensor& dgh,
                  const Tensor& dh_prev, int64_t B, int64_t H) {
  use_device(dh->device());
  SX_CUDA_DISPATCH_FLOAT(dh->dtype, "gru_cell", [&] {
    using T = scalar_t;
    gru_bwd_kernel<T><<<blocks_for(B * H), kThreads, 0, stream()>>>(ptr<T>(dh), nullptr, ptr<T>(h_prev), ptr<T>(ws),
                                                                     ptr<T>(dgi), ptr<T>(dgh), ptr<T>(dh_prev), B, H);
  });
  check_launch("gru_cell");
}

void lstm_seq_fwd(const Tensor& gi, const Tensor& w_hh, const Tensor& h0, const Tensor& c0, const Tensor& out,
                  const Tensor& hp, const Tensor& cp, const Tensor& ws, int64_t T_, int64_t B, int64_t H, bool rev) {
  const Device d = out->device();
  use_device(d);
  const Seq s{T_, B, H, rev};
  const int64_t BH = B * H, G = 4 * H;
  SX_CUDA_DISPATCH_FLOAT(out->dtype, "lstm_sequence", [&] {
    using T = scalar_t;
    Scratch gh(size_t(B * G) * sizeof(T), d);
    T *o = ptr<T>(out), *h = ptr<T>(hp), *c = ptr<T>(cp), *w = ptr<T>(ws);
    copy_rows(c + s.time(0) * BH, ptr<T>(c0), size_t(BH) * sizeof(T));
    forward_steps<T>(s, ptr<T>(h0), h, o, [&](int64_t t, bool last) {
      times_wt<T>(d, h + t * BH, ptr<T>(w_hh), gh.as<T>(), B, G, H);
      lstm_fwd_kernel<T><<<blocks_for(BH), kThreads, 0, stream()>>>(
          ptr<T>(gi) + t * B * G, gh.as<T>(), c + t * BH, o + t * BH, last ? o + s.T * BH : c + s.next(t) * BH,
          w ? w + t * B * 5 * H : nullptr, B, H);
    });
  });
  check_launch("lstm_sequence");
}

void lstm_seq_bwd(const Tensor& dout, const Tensor& w_hh, const Tensor& hp, const Tensor& cp, const Tensor& ws,
                  const Tensor& dgi, const Tensor& dh0, const Tensor& dc0, const Tensor& dcs, const Tensor& dw,
                  int64_t T_, int64_t B, int64_t H, bool rev) {
  const Device d = dout->device();
  use_device(d);
  const Seq s{T_, B, H, rev};
  const int64_t BH = B * H, G = 4 * H;
  SX_CUDA_DISPATCH_FLOAT(dout->dtype, "lstm_sequence", [&] {
    using T = scalar_t;
    Scratch carry(size_t(BH) * sizeof(T), d);
    const T *w = ptr<T>(w_hh), *dc = ptr<T>(dout) + s.T * BH, *dg_later = nullptr;
    T *c0 = ptr<T>(dc0), *c1 = ptr<T>(dcs), *g = ptr<T>(dgi);
    for (int64_t k = s.T - 1; k >= 0; --k) {
      const int64_t t = s.time(k);
      T* dcn = dc == c0 ? c1 : c0;
      if (dg_later) times_w<T>(d, dg_later, w, carry.as<T>(), B, G, H, 0.0);  // the gradient from the later step
      lstm_bwd_kernel<T><<<blocks_for(BH), kThreads, 0, stream()>>>(
          ptr<T>(dout) + t * BH, dg_later ? carry.as<T>() : nullptr, dc, ptr<T>(cp) + t * BH,
          ptr<T>(ws) + t * B * 5 * H, g + t * B * G, dcn, B, H);
      dg_later = g + t * B * G;
      dc = dcn;
    }
    times_w<T>(d, dg_later, w, ptr<T>(dh0), B, G, H, 0.0);
    if (dc != c0) copy_rows(c0, dc, size_t(BH) * sizeof(T));
    if (dw) weight_grad<T>(d, g, ptr<T>(hp), ptr<T>(dw), s.T * B, G, H);
  });
  check_launch("lstm_sequence");
}

void gru_seq_fwd(const Tensor& gi, const Tensor& w_hh, const Tensor& b_hh, const Tensor& h0, const Tensor& out,
                 const Tensor& hp, const Tensor& gh, const Tensor& ws, int64_t T_, int64_t B, int64_t H, bool rev) {
  const Device d = out->device();
  use_device(d);
  const Seq s{T_, B, H, rev};
  const int64_t BH = B * H, G = 3 * H;
  SX_CUDA_DISPATCH_FLOAT(out->dtype, "gru_sequence", [&] {
    using T = scalar_t;
    T *o = ptr<T>(out), *h = ptr<T>(hp), *w = ptr<T>(ws);
    forward_steps<T>(s, ptr<T>(h0), h, o, [&](int64_t t, bool) {
      times_wt<T>(d, h + t * BH, ptr<T>(w_hh), ptr<T>(gh), B, G, H);
      gru_fwd_kernel<T><<<blocks_for(BH), kThreads, 0, stream()>>>(ptr<T>(gi) + t * B * G, ptr<T>(gh), ptr<T>(b_hh),
                                                                    h + t * BH, o + t * BH,
                                                                    w ? w + t * B * 4 * H : nullptr, B, H);
    });
  });
  check_launch("gru_sequence");
}

void gru_seq_bwd(const Tensor& dout, const Tensor& w_hh, const Tensor& hp, const Tensor& ws, const Tensor& dgi,
                 const Tensor& dgh, const Tensor& dh0, const Tensor& dhs, const Tensor& dw, const Tensor& db,
                 int64_t T_, int64_t B, int64_t H, bool rev) {
  const Device d = dout->device();
  use_device(d);
  const Seq s{T_, B, H, rev};
  const int64_t BH = B * H, G = 3 * H;
  SX_CUDA_DISPATCH_FLOAT(dout->dtype, "gru_sequence", [&] {
    using T = scalar_t;
    T *h0 = ptr<T>(dh0), *h1 = ptr<T>(dhs), *gh = ptr<T>(dgh);
    const T* carry = nullptr;
    for (int64_t k = s.T - 1; k >= 0; --k) {
      const int64_t t = s.time(k);
      T* dhn = carry == h0 ? h1 : h0;
      gru_bwd_kernel<T><<<blocks_for(BH), kThreads, 0, stream()>>>(ptr<T>(dout) + t * BH, carry, ptr<T>(hp) + t * BH,
                                                                    ptr<T>(ws) + t * B * 4 * H, ptr<T>(dgi) + t * B * G,
                                                                    gh + t * B * G, dhn, B, H);
      times_w<T>(d, gh + t * B * G, ptr<T>(w_hh), dhn, B, G, H, 1.0);
      carry = dhn;
    }
    if (carry != h0) copy_rows(h0, carry, size_t(BH) * sizeof(T));
    if (dw) weight_grad<T>(d, gh, ptr<T>(hp), ptr<T>(dw), s.T * B, G, H);
    if (db) sum_rows<T><<<blocks_for(G), kThreads, 0, stream()>>>(gh, ptr<T>(db), s.T * B, G);
  });
  check_launch("gru_sequence");
}

}  // namespace sx::cuda
