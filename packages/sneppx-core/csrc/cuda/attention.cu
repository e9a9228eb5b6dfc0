// CUDA kernels of scaled_dot_product_attention (the slots of ops/nn.h), with the CPU kernels'
// contract: additive mask, causal alignment to the end, dropout on the weights from the same
// Philox stream, lse = m + log(l) per query row (+inf for a row that sees no key).
//
// Forward: one warp per query row with an online softmax over blocks of 32 keys (each lane scores
// one key, then the warp adds the 32 weighted value rows into the row's output, each lane owning
// every 32nd column); no score matrix is ever stored. Backward recomputes the weights from lse:
// one warp per query row accumulates dQ, one warp per key row accumulates dK and dV, so every
// gradient element has one writer (no atomics, the same result on every run). Rows live in shared
// memory (the query row, the output accumulator), four warps to a block.
#include "core/generator.h"
#include "cuda/cuda_util.cuh"
#include "cuda/kernels.h"
#include "ops/nn.h"

namespace sx::cuda {

namespace {

constexpr int kWarps = 4;
constexpr unsigned kFull = 0xffffffffu;

struct Attn {
  int64_t units, Tq, Tk, D, Dv, q_rs, k_rs, v_rs;
  double scale;
  bool causal;
  double drop_p;
  uint64_t drop_thr, seed, base;  // with drop_p > 0: weights whose draw is below drop_thr are dropped
  const int64_t *q_off, *k_off, *v_off, *m_off;  // device copies of the per-unit offsets
};

// The keys [0, end) that query i sees.
__device__ inline int64_t key_end(const Attn& a, int64_t i) {
  if (!a.causal) return a.Tk;
  int64_t e = i + a.Tk - a.Tq + 1;
  return e < 0 ? 0 : (e > a.Tk ? a.Tk : e);
}

// The dropout factor of weight (row, j): keep / (1 - p), with the CPU's counters.
template <typename T> __device__ T drop_factor(const Attn& a, int64_t row, int64_t j, T keep_scale) {
  auto r = philox(a.seed, a.base + uint64_t(row * ((a.Tk + 3) / 4) + j / 4));
  return uint64_t(r[j % 4]) >= a.drop_thr ? keep_scale : T(0);
}

// What a warp working on query row `row` (of all units' rows) reads: its unit's keys, values and
// mask row, its own query row, and the keys [0, kend) it sees.
template <typename T> struct QueryRow {
  int64_t u, i, kend;
  const T *Q, *K, *V, *M;
  __device__ QueryRow(const Attn& a, int64_t row, const T* q, const T* k, const T* v, const T* mask)
      : u(row / a.Tq), i(row % a.Tq), kend(key_end(a, i)), Q(q + a.q_off[u] + i * a.q_rs), K(k + a.k_off[u]),
        V(v + a.v_off[u]), M(mask ? mask + a.m_off[u] + i * a.Tk : nullptr) {}
};

template <typename T> __device__ T dot(const T* x, const T* y, int64_t n) {
  T s = 0;
  for (int64_t d = 0; d < n; ++d) s += x[d] * y[d];
  return s;
}

template <typename T>
__global__ void attn_fwd_kernel(Attn a, const T* q, const T* k, const T* v, const T* mask, T* out, T* lse) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  T* qs = reinterpret_cast<T*>(smem) + warp * (a.D + a.Dv);
  T* acc = qs + a.D;
  const T inf = T(INFINITY), keep = T(1) / T(1 - a.drop_p);
  for (int64_t row = int64_t(blockIdx.x) * kWarps + warp; row < a.units * a.Tq; row += int64_t(gridDim.x) * kWarps) {
    const QueryRow<T> r(a, row, q, k, v, mask);
    const int64_t kend = r.kend;
    const T *K = r.K, *V = r.V, *M = r.M;
    for (int64_t d = lane; d < a.D; d += 32) qs[d] = r.Q[d] * T(a.scale);
    for (int64_t d = lane; d < a.Dv; d += 32) acc[d] = 0;
    __syncwarp();
    T m = -inf, l = 0;
    for (int64_t j0 = 0; j0 < kend; j0 += 32) {
      const int64_t j = j0 + lane, nk = kend - j0 < 32 ? kend - j0 : 32;
      T s = -inf;
      if (j < kend) s = dot(qs, K + j * a.k_rs, a.D) + (M ? M[j] : T(0));
      const T mnew = MaxOf{}(m, warp_reduce(s, MaxOf{}));
      if (mnew == -inf) continue;  // no visible key so far (the same on every lane)
      const T alpha = m == -inf ? T(0) : std::exp(m - mnew);
      T p = j < kend ? std::exp(s - mnew) : T(0);
      l = l * alpha + warp_reduce(p, SumOf{});
      m = mnew;
      if (a.drop_p > 0 && j < kend) p *= drop_factor(a, row, j, keep);
      for (int64_t d = lane; d < a.Dv; d += 32) acc[d] *= alpha;
      for (int t = 0; t < nk; ++t) {
        const T pt = __shfl_sync(kFull, p, t);
        const T* Vt = V + (j0 + t) * a.v_rs;
        for (int64_t d = lane; d < a.Dv; d += 32) acc[d] += pt * Vt[d];
      }
    }
    const T inv = l > 0 ? T(1) / l : T(0);
    for (int64_t d = lane; d < a.Dv; d += 32) out[row * a.Dv + d] = acc[d] * inv;
    if (lane == 0) lse[row] = l > 0 ? m + std::log(l) : inf;
    __syncwarp();
  }
}

// delta[row] = sum_d dO[row, d] O[row, d]
template <typename T> __global__ void attn_delta(const T* out, const T* dout, T* delta, int64_t rows, int64_t Dv) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int64_t row = int64_t(blockIdx.x) * kWarps + warp; row < rows; row += int64_t(gridDim.x) * kWarps) {
    T s = 0;
    for (int64_t d = lane; d < Dv; d += 32) s += dout[row * Dv + d] * out[row * Dv + d];
    s = warp_reduce(s, SumOf{});
    if (lane == 0) delta[row] = s;
  }
}

// dS = P (dP z - delta) for query `row` and key j (P from the saved lse; 0 where masked).
template <typename T> struct Weights {
  T p, pz, ds;
};
template <typename T>
__device__ Weights<T> weights(const Attn& a, T s, T L, T dp, T delta, int64_t row, int64_t j, T keep) {
  Weights<T> w;
  w.p = std::exp(s - L);
  const T z = a.drop_p > 0 ? drop_factor(a, row, j, keep) : T(1);
  w.pz = w.p * z;
  w.ds = w.p * (dp * z - delta);
  return w;
}

// One warp per query row: dQ = scale dS K (and dmask = dS).
template <typename T>
__global__ void attn_dq_kernel(Attn a, const T* q, const T* k, const T* v, const T* mask, const T* lse,
                               const T* dout, const T* delta, T* dq, T* dmask) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  T* qs = reinterpret_cast<T*>(smem) + warp * (2 * a.D + a.Dv);
  T* dos = qs + a.D;
  T* acc = dos + a.Dv;
  const T keep = T(1) / T(1 - a.drop_p);
  for (int64_t row = int64_t(blockIdx.x) * kWarps + warp; row < a.units * a.Tq; row += int64_t(gridDim.x) * kWarps) {
    const QueryRow<T> r(a, row, q, k, v, mask);
    const int64_t kend = r.kend;
    const T *K = r.K, *V = r.V, *M = r.M;
    for (int64_t d = lane; d < a.D; d += 32) qs[d] = r.Q[d] * T(a.scale), acc[d] = 0;
    for (int64_t d = lane; d < a.Dv; d += 32) dos[d] = dout[row * a.Dv + d];
    __syncwarp();
    const T L = lse[row], dl = delta[row];
    for (int64_t j0 = 0; j0 < kend; j0 += 32) {
      const int64_t j = j0 + lane, nk = kend - j0 < 32 ? kend - j0 : 32;
      T ds = 0;
      if (j < kend) {
        T s = dot(qs, K + j * a.k_rs, a.D) + (M ? M[j] : T(0));
        ds = weights(a, s, L, dot(dos, V + j * a.v_rs, a.Dv), dl, row, j, keep).ds;
        if (dmask) dmask[row * a.Tk + j] = ds;
      }
      for (int t = 0; t < nk; ++t) {
        const T dt = __shfl_sync(kFull, ds, t);
        const T* Kt = K + (j0 + t) * a.k_rs;
        for (int64_t d = lane; d < a.D; d += 32) acc[d] += dt * Kt[d];
      }
    }
    for (int64_t d = lane; d < a.D; d += 32) dq[row * a.D + d] = acc[d] * T(a.scale);
    __syncwarp();
  }
}

// One warp per key row: dV = (P z)^T dO, dK = dS^T (scale Q).
template <typename T>
__global__ void attn_dkv_kernel(Attn a, const T* q, const T* k, const T* v, const T* mask, const T* lse,
                                const T* dout, const T* delta, T* dk, T* dv) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  T* ks = reinterpret_cast<T*>(smem) + warp * (2 * a.D + 2 * a.Dv);
  T* vs = ks + a.D;
  T* dka = vs + a.Dv;
  T* dva = dka + a.D;
  const T keep = T(1) / T(1 - a.drop_p);
  const T scale = T(a.scale);
  for (int64_t kr = int64_t(blockIdx.x) * kWarps + warp; kr < a.units * a.Tk; kr += int64_t(gridDim.x) * kWarps) {
    const int64_t u = kr / a.Tk, j = kr % a.Tk;
    const T* Q = q + a.q_off[u];
    const T* M = mask ? mask + a.m_off[u] : nullptr;
    for (int64_t d = lane; d < a.D; d += 32) ks[d] = k[a.k_off[u] + j * a.k_rs + d], dka[d] = 0;
    for (int64_t d = lane; d < a.Dv; d += 32) vs[d] = v[a.v_off[u] + j * a.v_rs + d], dva[d] = 0;
    __syncwarp();
    const int64_t first = a.causal ? (j - (a.Tk - a.Tq) > 0 ? j - (a.Tk - a.Tq) : 0) : 0;
    for (int64_t i0 = first; i0 < a.Tq; i0 += 32) {
      const int64_t i = i0 + lane, nq = a.Tq - i0 < 32 ? a.Tq - i0 : 32;
      T pz = 0, ds = 0;
      if (i < a.Tq) {
        const int64_t row = u * a.Tq + i;
        const T* Qi = Q + i * a.q_rs;
        T s = 0;
        for (int64_t d = 0; d < a.D; ++d) s += (Qi[d] * scale) * ks[d];
        if (M) s += M[i * a.Tk + j];
        Weights<T> w = weights(a, s, lse[row], dot(dout + row * a.Dv, vs, a.Dv), delta[row], row, j, keep);
        pz = w.pz;
        ds = w.ds;
      }
      for (int t = 0; t < nq; ++t) {
        const T pt = __shfl_sync(kFull, pz, t), dt = __shfl_sync(kFull, ds, t);
        const int64_t row = u * a.Tq + i0 + t;
        const T* Qt = Q + (i0 + t) * a.q_rs;
        for (int64_t d = lane; d < a.Dv; d += 32) dva[d] += pt * dout[row * a.Dv + d];
        for (int64_t d = lane; d < a.D; d += 32) dka[d] += dt * (Qt[d] * scale);
      }
    }
    for (int64_t d = lane; d < a.D; d += 32) dk[kr * a.D + d] = dka[d];
    for (int64_t d = lane; d < a.Dv; d += 32) dv[kr * a.Dv + d] = dva[d];
    __syncwarp();
  }
}

// The kernel arguments, with the per-unit offsets copied to the device (`offs` keeps them alive).
struct DeviceArgs {
  Scratch offs;
  Attn a;
};
DeviceArgs device_args(const nn::AttnArgs& a, Device d) {
  use_device(d);
  const int64_t U = a.units;
  Scratch offs(size_t(4 * U + 1) * sizeof(int64_t), d);
  int64_t* p = offs.as<int64_t>();
  const int64_t* src[4] = {a.q_off, a.k_off, a.v_off, a.m_off};
  for (int s = 0; s < 4; ++s)
    if (src[s] && U)
      check(cudaMemcpyAsync(p + s * U, src[s], size_t(U) * sizeof(int64_t), cudaMemcpyHostToDevice, stream()),
            "scaled_dot_product_attention");
  Attn r{a.units, a.Tq, a.Tk, a.D, a.Dv, a.q_rs, a.k_rs, a.v_rs, a.scale, a.causal, a.dropout_p,
         uint64_t(a.dropout_p * 4294967296.0), a.seed, a.base,
         p, p + U, p + 2 * U, a.m_off ? p + 3 * U : nullptr};
  return {std::move(offs), r};
}

// Shared memory of a block whose warps each keep `per_warp` values; raises past the device's default limit.
size_t shared_bytes(int64_t per_warp, size_t item, const nn::AttnArgs& a) {
  size_t n = size_t(kWarps * per_warp) * item;
  SX_CHECK(n <= 48 * 1024, NotImplementedError, "[scaled_dot_product_attention] the CUDA kernel takes head sizes up ",
           "to D + Dv = ", 48 * 1024 / (2 * kWarps * item), " for this dtype, got D = ", a.D, ", Dv = ", a.Dv);
  return n;
}

unsigned warp_grid(int64_t rows) { return row_grid((rows + kWarps - 1) / kWarps); }

template <typename T> const T* base_of(const Tensor& t) { return t->data<T>() - t->offset; }

}  // namespace

void attn_fwd(const nn::AttnArgs& a, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
              const Tensor& out, const Tensor& lse) {
  DeviceArgs args = device_args(a, q->device());
  const Attn& da = args.a;
  SX_CUDA_DISPATCH_FLOAT(q->dtype, "scaled_dot_product_attention", [&] {
    using T = scalar_t;
    size_t sh = shared_bytes(a.D + a.Dv, sizeof(T), a);
    attn_fwd_kernel<T><<<warp_grid(a.units * a.Tq), kWarps * 32, sh, stream()>>>(
        da, base_of<T>(q), base_of<T>(k), base_of<T>(v), mask ? mask->data<T>() : nullptr, out->data<T>(),
        lse->data<T>());
  });
  check_launch("scaled_dot_product_attention");
}

void attn_bwd(const nn::AttnArgs& a, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
              const Tensor& out, const Tensor& lse, const Tensor& dout, const Tensor& dq, const Tensor& dk,
              const Tensor& dv, const Tensor& dmask) {
  DeviceArgs args = device_args(a, q->device());
  const Attn& da = args.a;
  const Device d = q->device();
  SX_CUDA_DISPATCH_FLOAT(q->dtype, "scaled_dot_product_attention", [&] {
    using T = scalar_t;
    const int64_t rows = a.units * a.Tq;
    Scratch delta(size_t(rows) * sizeof(T) + 1, d);
    const T *pq = base_of<T>(q), *pk = base_of<T>(k), *pv = base_of<T>(v), *pm = mask ? mask->data<T>() : nullptr;
    attn_delta<T><<<warp_grid(rows), kWarps * 32, 0, stream()>>>(out->data<T>(), dout->data<T>(), delta.as<T>(), rows,
                                                                 a.Dv);
    attn_dq_kernel<T><<<warp_grid(rows), kWarps * 32, shared_bytes(2 * a.D + a.Dv, sizeof(T), a), stream()>>>(
        da, pq, pk, pv, pm, lse->data<T>(), dout->data<T>(), delta.as<T>(), dq->data<T>(),
        dmask ? dmask->data<T>() : nullptr);
    attn_dkv_kernel<T><<<warp_grid(a.units * a.Tk), kWarps * 32, shared_bytes(2 * (a.D + a.Dv), sizeof(T), a),
                         stream()>>>(da, pq, pk, pv, pm, lse->data<T>(), dout->data<T>(), delta.as<T>(),
                                     dk->data<T>(), dv->data<T>());
  });
  check_launch("scaled_dot_product_attention");
}

}  // namespace sx::cuda
