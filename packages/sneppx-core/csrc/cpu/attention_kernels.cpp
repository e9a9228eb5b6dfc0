// Tiled attention. Forward: per (unit, query block), loop over key blocks computing S = (scale Q) K^T,
// the running row max m and sum l, P = exp(S - m) and O = O * exp(m_old - m) + P V; never more than one
// (Bq, Bk) tile of scores. Backward: per unit, loop over key blocks (outer) and query blocks (inner),
// recomputing P = exp(S - lse) from the saved log-sum-exp; dV += P^T dO, dP = dO V^T,
// dS = P (dP - rowsum(dO * O)), dQ += dS K, dK += dS^T Q. Tile products use a register-blocked
// AVX2 kernel for float32 (6 x 16 accumulators) and a plain loop otherwise.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <vector>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define SX_ATTN_AVX2 1
#endif

#include "core/generator.h"
#include "core/parallel.h"
#include "cpu/attention_kernels.h"
#include "cpu/nn_math.h"
#include "ops/kernels.h"

namespace sx::cpu {

namespace {
constexpr int64_t kBq = 64, kBk = 64;
inline int64_t pad8(int64_t n) { return (n + 7) & ~int64_t(7); }

// C (M x N) = [C +] A (M x K) B (K x N); A(i, k) = A[i * ars + k * acs]; B, C row-major.
template <typename T>
void gemm_generic(int64_t M, int64_t N, int64_t K, const T* A, int64_t ars, int64_t acs, const T* B, int64_t ldb,
                  T* C, int64_t ldc, bool acc) {
  for (int64_t i = 0; i < M; ++i) {
    T* c = C + i * ldc;
    if (!acc) std::fill(c, c + N, T(0));
    for (int64_t k = 0; k < K; ++k) {
      T av = A[i * ars + k * acs];
      const T* b = B + k * ldb;
      for (int64_t j = 0; j < N; ++j) c[j] += av * b[j];
    }
  }
}

#ifdef SX_ATTN_AVX2
// R x (8 NV) block of C; accumulators are named variables so that they stay in registers. The K terms are
// summed from zero and then added to C (acc), so that an output accumulated over many key or query blocks
// is a sum of block sums: loading C into the accumulators continued one chain of adds over all 2048 keys of
// a long sequence, twice PyTorch's float32 error.
template <int R, int NV>
inline void micro(int64_t K, const float* A, int64_t ars, int64_t acs, const float* B, int64_t ldb, float* C,
                  int64_t ldc, bool acc) {
  const __m256 z = _mm256_setzero_ps();
  __m256 c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z, c30 = z, c31 = z, c40 = z, c41 = z, c50 = z, c51 = z;
  for (int64_t k = 0; k < K; ++k) {
    const float* bk = B + k * ldb;
    const __m256 b0 = _mm256_loadu_ps(bk);
    const __m256 b1 = NV > 1 ? _mm256_loadu_ps(bk + 8) : z;
    const float* ak = A + k * acs;
#define SX_FMA(r)                                                     \
  if constexpr (R > r) {                                             \
    const __m256 a = _mm256_broadcast_ss(ak + r * ars);              \
    c##r##0 = _mm256_fmadd_ps(a, b0, c##r##0);                       \
    if constexpr (NV > 1) c##r##1 = _mm256_fmadd_ps(a, b1, c##r##1); \
  }
    SX_FMA(0) SX_FMA(1) SX_FMA(2) SX_FMA(3) SX_FMA(4) SX_FMA(5)
#undef SX_FMA
  }
#define SX_ADD(r)                                                                               \
  if constexpr (R > r) {                                                                       \
    c##r##0 = _mm256_add_ps(_mm256_loadu_ps(C + r * ldc), c##r##0);                            \
    if constexpr (NV > 1) c##r##1 = _mm256_add_ps(_mm256_loadu_ps(C + r * ldc + 8), c##r##1); \
  }
  if (acc) {
    SX_ADD(0) SX_ADD(1) SX_ADD(2) SX_ADD(3) SX_ADD(4) SX_ADD(5)
  }
#undef SX_ADD
#define SX_STORE(r)                                                   \
  if constexpr (R > r) {                                             \
    _mm256_storeu_ps(C + r * ldc, c##r##0);                          \
    if constexpr (NV > 1) _mm256_storeu_ps(C + r * ldc + 8, c##r##1); \
  }
  SX_STORE(0) SX_STORE(1) SX_STORE(2) SX_STORE(3) SX_STORE(4) SX_STORE(5)
#undef SX_STORE
}

template <int NV>
void gemm_cols(int64_t M, int64_t K, const float* A, int64_t ars, int64_t acs, const float* B, int64_t ldb, float* C,
               int64_t ldc, bool acc) {
  int64_t i = 0;
  for (; i + 6 <= M; i += 6) micro<6, NV>(K, A + i * ars, ars, acs, B, ldb, C + i * ldc, ldc, acc);
  const float* a = A + i * ars;
  float* c = C + i * ldc;
  switch (M - i) {
    case 5: micro<5, NV>(K, a, ars, acs, B, ldb, c, ldc, acc); break;
    case 4: micro<4, NV>(K, a, ars, acs, B, ldb, c, ldc, acc); break;
    case 3: micro<3, NV>(K, a, ars, acs, B, ldb, c, ldc, acc); break;
    case 2: micro<2, NV>(K, a, ars, acs, B, ldb, c, ldc, acc); break;
    case 1: micro<1, NV>(K, a, ars, acs, B, ldb, c, ldc, acc); break;
    default: break;
  }
}
#endif

template <typename T>
void tile_gemm(int64_t M, int64_t N, int64_t K, const T* A, int64_t ars, int64_t acs, const T* B, int64_t ldb, T* C,
               int64_t ldc, bool acc) {
#ifdef SX_ATTN_AVX2
  if constexpr (std::is_same_v<T, float>) {
    if (N % 8 == 0) {
      int64_t j = 0;
      for (; j + 16 <= N; j += 16) gemm_cols<2>(M, K, A, ars, acs, B + j, ldb, C + j, ldc, acc);
      if (j < N) gemm_cols<1>(M, K, A, ars, acs, B + j, ldb, C + j, ldc, acc);
      return;
    }
  }
#endif
  gemm_generic<T>(M, N, K, A, ars, acs, B, ldb, C, ldc, acc);
}

template <typename T> T row_max(const T* s, int64_t n) {  // n % 8 == 0
  T acc[8];
  for (int l = 0; l < 8; ++l) acc[l] = -std::numeric_limits<T>::infinity();
  for (int64_t j = 0; j < n; j += 8)
    for (int l = 0; l < 8; ++l) acc[l] = s[j + l] > acc[l] ? s[j + l] : acc[l];
  T m = acc[0];
  for (int l = 1; l < 8; ++l) m = acc[l] > m ? acc[l] : m;
  return m;
}

// s[j] = exp(s[j] - m); returns the sum.
template <typename T> T exp_row(T* s, T m, int64_t n) { return exp_sum<T>(s, m, s, n); }

// S (nq x NP) = Q K^T by dot products on K's rows (no transpose): the decode case of few queries.
template <typename T>
void scores_direct(const T* Qs, int64_t nq, int64_t D, const T* K, int64_t rs, int64_t nk, int64_t NP, T* S) {
  for (int64_t i = 0; i < nq; ++i) {
    const T* qi = Qs + i * D;
    for (int64_t j = 0; j < nk; ++j) {
      const T* kj = K + j * rs;
      T acc[8] = {};
      int64_t d = 0;
      for (; d + 8 <= D; d += 8)
        for (int l = 0; l < 8; ++l) acc[l] += qi[d + l] * kj[d + l];
      T t = 0;
      for (int l = 0; l < 8; ++l) t += acc[l];
      for (; d < D; ++d) t += qi[d] * kj[d];
      S[i * NP + j] = t;
    }
    std::fill(S + i * NP + nk, S + (i + 1) * NP, T(0));
  }
}

// Kt (D x NP) = K rows [0, nk) transposed, columns nk..NP zero.
template <typename T> void pack_t(const T* K, int64_t rs, int64_t nk, int64_t D, int64_t NP, T* Kt) {
  for (int64_t d = 0; d < D; ++d) std::fill(Kt + d * NP + nk, Kt + (d + 1) * NP, T(0));
  for (int64_t j = 0; j < nk; ++j)
    for (int64_t d = 0; d < D; ++d) Kt[d * NP + j] = K[j * rs + d];
}

// Rows [0, n) of width D into a (n x W) buffer, scaled, zero padded.
template <typename T> void pack_rows(const T* X, int64_t rs, int64_t n, int64_t D, int64_t W, T s, T* out) {
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t d = 0; d < D; ++d) out[i * W + d] = X[i * rs + d] * s;
    std::fill(out + i * W + D, out + (i + 1) * W, T(0));
  }
}

// Sets S[j] = -inf past the last key row i may see, adds the mask row, for one row of a tile.
template <typename T>
void mask_row(T* s, int64_t nk, int64_t NP, int64_t last, const T* mrow) {
  if (mrow)
    for (int64_t j = 0; j < nk; ++j) s[j] += mrow[j];
  for (int64_t j = std::max<int64_t>(last + 1, 0); j < NP; ++j) s[j] = -std::numeric_limits<T>::infinity();
}

// Dropout factors z[j] = keep / (1 - p) for keys [j0, j0 + n) of row `row` (j0 % 4 == 0).
template <typename T> void dropout_row(const AttnArgs& a, int64_t row, int64_t j0, int64_t n, T* z) {
  const uint64_t thr = uint64_t(a.dropout_p * 4294967296.0);
  const T s = T(1) / T(1 - a.dropout_p);
  uint64_t ctr = a.base + uint64_t(row * ((a.Tk + 3) / 4) + j0 / 4);
  for (int64_t j = 0; j < n; j += 4) {
    auto r = philox(a.seed, ctr + uint64_t(j / 4));
    for (int64_t l = 0; l < 4 && j + l < n; ++l) z[j + l] = uint64_t(r[l]) >= thr ? s : T(0);
  }
}

// One row of a backward tile: s holds the scores, dp = dO V^T. Leaves P = exp(s - lse) in s (0 where
// masked, and everywhere for rows that see no key: lse = +inf), dS = P (dP z - delta) in dp and, with
// dropout (z = keep / (1 - p)), the dropped weights P z in pd.
template <typename T>
void bwd_row(const AttnArgs& a, T* s, T* dp, T* pd, T* z, int64_t nk, int64_t NP, int64_t last, const T* mrow,
             T lse, T delta, int64_t row, int64_t j0) {
  mask_row(s, nk, NP, last, mrow);
  exp_row(s, lse, NP);
  if (!pd) {
    for (int64_t j = 0; j < NP; ++j) dp[j] = s[j] * (dp[j] - delta);
    return;
  }
  dropout_row(a, row, j0, nk, z);
  for (int64_t j = 0; j < nk; ++j) {
    pd[j] = s[j] * z[j];
    dp[j] = s[j] * (dp[j] * z[j] - delta);
  }
  for (int64_t j = nk; j < NP; ++j) pd[j] = dp[j] = T(0);
}

// Runs work(u) for u in [0, n) with dynamic scheduling over the pool (causal units differ in cost).
template <typename Init, typename Work> void dynamic_for(int64_t n, Init init, Work work) {
  std::atomic<int64_t> next{0};
  int64_t nt = std::min<int64_t>(get_num_threads(), n);
  parallel_for(std::max<int64_t>(nt, 1), 1, [&](int64_t, int64_t) {
    auto scratch = init();
    for (int64_t u; (u = next.fetch_add(1)) < n;) work(u, scratch);
  });
}
}  // namespace

template <typename T>
void attn_fwd(const AttnArgs& a, const T* q, const T* k, const T* v, const T* mask, T* out, T* lse) {
  const int64_t Tq = a.Tq, Tk = a.Tk, D = a.D, Dv = a.Dv, DvP = pad8(Dv), off = Tk - Tq;
  const int64_t nqb = (Tq + kBq - 1) / kBq, nkb = (Tk + kBk - 1) / kBk;
  const bool v_direct = Dv % 8 == 0;
  // With enough (batch, head) matrices each thread takes whole matrices and transposes K once;
  // otherwise query blocks are the work items and each transposes the key blocks it needs.
  // Fewer than 8 queries (decoding with a KV cache): scores by dot products, K is never transposed.
  const bool direct = Tq < 8;
  const bool per_unit = !direct && a.units >= 2 * int64_t(get_num_threads());
  const T inf = std::numeric_limits<T>::infinity();
  struct Scratch {
    std::vector<T> qs, kt, s, o, vp, m, l, z;
  };
  auto init = [&] {
    Scratch s;
    s.qs.resize(kBq * D);
    s.kt.resize(D * kBk * (per_unit ? nkb : 1));
    s.s.resize(kBq * kBk);
    s.o.resize(kBq * DvP);
    s.vp.resize(v_direct ? 0 : kBk * DvP);
    s.m.resize(kBq);
    s.l.resize(kBq);
    s.z.resize(kBk);
    return s;
  };
  // One query block [i0, i0 + nq) of unit u; kt_all: the unit's K^T as nkb (D x kBk) blocks, or null.
  auto block = [&](int64_t u, int64_t i0, Scratch& sc, const T* kt_all) {
    const int64_t nq = std::min(kBq, Tq - i0);
    const T* Q = q + a.q_off[u] + i0 * a.q_rs;
    const T* K = k + a.k_off[u];
    const T* V = v + a.v_off[u];
    const T* Mk = mask ? mask + a.m_off[u] : nullptr;
    pack_rows(Q, a.q_rs, nq, D, D, T(a.scale), sc.qs.data());
    std::fill(sc.m.begin(), sc.m.end(), -inf);
    std::fill(sc.l.begin(), sc.l.end(), T(0));
    std::fill(sc.o.begin(), sc.o.end(), T(0));
    int64_t kend = a.causal ? std::clamp<int64_t>(i0 + nq + off, 0, Tk) : Tk;
    for (int64_t j0 = 0; j0 < kend; j0 += kBk) {
      const int64_t nk = std::min(kBk, Tk - j0), NP = pad8(nk);
      T* S = sc.s.data();
      if (direct) {
        scores_direct(sc.qs.data(), nq, D, K + j0 * a.k_rs, a.k_rs, nk, NP, S);
      } else {
        const T* Kt = kt_all ? kt_all + (j0 / kBk) * D * kBk : sc.kt.data();
        if (!kt_all) pack_t(K + j0 * a.k_rs, a.k_rs, nk, D, NP, sc.kt.data());
        tile_gemm<T>(nq, NP, D, sc.qs.data(), D, 1, Kt, NP, S, NP, false);
      }
      const T* Vb = V + j0 * a.v_rs;
      int64_t ldv = a.v_rs;
      if (!v_direct) {
        pack_rows(Vb, a.v_rs, nk, Dv, DvP, T(1), sc.vp.data());
        Vb = sc.vp.data();
        ldv = DvP;
      }
      for (int64_t i = 0; i < nq; ++i) {
        const int64_t ig = i0 + i;
        T* s = S + i * NP;
        int64_t last = a.causal ? std::min(ig + off - j0, nk - 1) : nk - 1;
        if (last < nk - 1 || Mk) mask_row(s, nk, NP, last, Mk ? Mk + ig * Tk + j0 : nullptr);
        else for (int64_t j = nk; j < NP; ++j) s[j] = -inf;
        T mnew = std::max(sc.m[i], row_max(s, NP));
        if (mnew == -inf) {  // no visible key so far: contributes nothing
          std::fill(s, s + NP, T(0));
          continue;
        }
        T alpha = sc.m[i] == -inf ? T(0) : sexp<T>(sc.m[i] - mnew);
        sc.l[i] = sc.l[i] * alpha + exp_row(s, mnew, NP);
        sc.m[i] = mnew;
        if (alpha != T(1)) {
          T* o = sc.o.data() + i * DvP;
          for (int64_t d = 0; d < DvP; ++d) o[d] *= alpha;
        }
        if (a.dropout_p > 0) {
          dropout_row(a, u * Tq + ig, j0, nk, sc.z.data());
          for (int64_t j = 0; j < nk; ++j) s[j] *= sc.z[j];
        }
      }
      tile_gemm<T>(nq, DvP, nk, S, NP, 1, Vb, ldv, sc.o.data(), DvP, true);
    }
    T* O = out + (u * Tq + i0) * Dv;
    T* L = lse + u * Tq + i0;
    for (int64_t i = 0; i < nq; ++i) {
      T inv = sc.l[i] > 0 ? T(1) / sc.l[i] : T(0);
      for (int64_t d = 0; d < Dv; ++d) O[i * Dv + d] = sc.o[i * DvP + d] * inv;
      L[i] = sc.l[i] > 0 ? sc.m[i] + std::log(sc.l[i]) : inf;
    }
  };
  if (per_unit) {
    dynamic_for(a.units, init, [&](int64_t u, Scratch& sc) {
      for (int64_t b = 0; b < nkb; ++b) {
        int64_t nk = std::min(kBk, Tk - b * kBk);
        pack_t(k + a.k_off[u] + b * kBk * a.k_rs, a.k_rs, nk, D, pad8(nk), sc.kt.data() + b * D * kBk);
      }
      for (int64_t b = 0; b < nqb; ++b) block(u, b * kBq, sc, sc.kt.data());
    });
  } else {
    dynamic_for(a.units * nqb, init, [&](int64_t w, Scratch& sc) { block(w / nqb, (w % nqb) * kBq, sc, nullptr); });
  }
}

template <typename T>
void attn_bwd(const AttnArgs& a, const T* q, const T* k, const T* v, const T* mask, const T* out, const T* lse,
              const T* dout, T* dq, T* dk, T* dv, T* dmask) {
  const int64_t Tq = a.Tq, Tk = a.Tk, D = a.D, Dv = a.Dv, Dp = pad8(D), DvP = pad8(Dv), off = Tk - Tq;
  const bool k_direct = D % 8 == 0, do_direct = Dv % 8 == 0, drop = a.dropout_p > 0;
  struct Scratch {
    std::vector<T> kt, vt, kp, dkacc, dvacc, qs, dop, s, pd, dp, dqacc, delta, z;
  };
  auto init = [&] {
    Scratch s;
    s.kt.resize(D * kBk);
    s.vt.resize(Dv * kBk);
    s.kp.resize(k_direct ? 0 : kBk * Dp);
    s.dkacc.resize(kBk * Dp);
    s.dvacc.resize(kBk * DvP);
    s.qs.resize(kBq * Dp);
    s.dop.resize(do_direct ? 0 : kBq * DvP);
    s.s.resize(kBq * kBk);
    s.pd.resize(drop ? kBq * kBk : 0);
    s.dp.resize(kBq * kBk);
    s.dqacc.resize(Tq * Dp);
    s.delta.resize(Tq);
    s.z.resize(kBk);
    return s;
  };
  dynamic_for(a.units, init, [&](int64_t u, Scratch& sc) {
    const T* Q = q + a.q_off[u];
    const T* K = k + a.k_off[u];
    const T* V = v + a.v_off[u];
    const T* Mk = mask ? mask + a.m_off[u] : nullptr;
    const T* O = out + u * Tq * Dv;
    const T* dO = dout + u * Tq * Dv;
    const T* L = lse + u * Tq;
    for (int64_t i = 0; i < Tq; ++i) {
      T s = 0;
      for (int64_t d = 0; d < Dv; ++d) s += dO[i * Dv + d] * O[i * Dv + d];
      sc.delta[i] = s;
    }
    std::fill(sc.dqacc.begin(), sc.dqacc.end(), T(0));
    for (int64_t j0 = 0; j0 < Tk; j0 += kBk) {
      const int64_t nk = std::min(kBk, Tk - j0), NP = pad8(nk);
      T* dK = dk + (u * Tk + j0) * D;
      T* dV = dv + (u * Tk + j0) * Dv;
      const int64_t istart = a.causal ? std::max<int64_t>(0, j0 - off) : 0;
      if (istart >= Tq) {  // no query sees these keys
        std::fill(dK, dK + nk * D, T(0));
        std::fill(dV, dV + nk * Dv, T(0));
        continue;
      }
      pack_t(K + j0 * a.k_rs, a.k_rs, nk, D, NP, sc.kt.data());
      pack_t(V + j0 * a.v_rs, a.v_rs, nk, Dv, NP, sc.vt.data());
      const T* Kr = K + j0 * a.k_rs;
      int64_t ldk = a.k_rs;
      if (!k_direct) {
        pack_rows(Kr, a.k_rs, nk, D, Dp, T(1), sc.kp.data());
        Kr = sc.kp.data();
        ldk = Dp;
      }
      std::fill(sc.dkacc.begin(), sc.dkacc.end(), T(0));
      std::fill(sc.dvacc.begin(), sc.dvacc.end(), T(0));
      for (int64_t i0 = istart / kBq * kBq; i0 < Tq; i0 += kBq) {
        const int64_t nq = std::min(kBq, Tq - i0);
        pack_rows(Q + i0 * a.q_rs, a.q_rs, nq, D, Dp, T(a.scale), sc.qs.data());
        const T* dOb = dO + i0 * Dv;
        int64_t lddo = Dv;
        if (!do_direct) {
          pack_rows(dOb, Dv, nq, Dv, DvP, T(1), sc.dop.data());
          dOb = sc.dop.data();
          lddo = DvP;
        }
        T* S = sc.s.data();
        T* dP = sc.dp.data();
        T* PD = drop ? sc.pd.data() : S;
        tile_gemm<T>(nq, NP, D, sc.qs.data(), Dp, 1, sc.kt.data(), NP, S, NP, false);
        tile_gemm<T>(nq, NP, Dv, dO + i0 * Dv, Dv, 1, sc.vt.data(), NP, dP, NP, false);
        for (int64_t i = 0; i < nq; ++i) {
          const int64_t ig = i0 + i;
          int64_t last = a.causal ? std::min(ig + off - j0, nk - 1) : nk - 1;
          bwd_row(a, S + i * NP, dP + i * NP, drop ? PD + i * NP : nullptr, sc.z.data(), nk, NP, last,
                  Mk ? Mk + ig * Tk + j0 : nullptr, L[ig], sc.delta[ig], u * Tq + ig, j0);
          if (dmask) std::copy(dP + i * NP, dP + i * NP + nk, dmask + (u * Tq + ig) * Tk + j0);
        }
        // dV += P^T dO ; dQ += dS K ; dK += dS^T (scale Q)
        tile_gemm<T>(nk, DvP, nq, PD, 1, NP, dOb, lddo, sc.dvacc.data(), DvP, true);
        tile_gemm<T>(nq, Dp, nk, dP, NP, 1, Kr, ldk, sc.dqacc.data() + i0 * Dp, Dp, true);
        tile_gemm<T>(nk, Dp, nq, dP, 1, NP, sc.qs.data(), Dp, sc.dkacc.data(), Dp, true);
      }
      for (int64_t j = 0; j < nk; ++j) {
        std::copy(sc.dkacc.data() + j * Dp, sc.dkacc.data() + j * Dp + D, dK + j * D);
        std::copy(sc.dvacc.data() + j * DvP, sc.dvacc.data() + j * DvP + Dv, dV + j * Dv);
      }
    }
    T* dQ = dq + u * Tq * D;
    const T sc_ = T(a.scale);
    for (int64_t i = 0; i < Tq; ++i)
      for (int64_t d = 0; d < D; ++d) dQ[i * D + d] = sc.dqacc[i * Dp + d] * sc_;
  });
}

template void attn_fwd<float>(const AttnArgs&, const float*, const float*, const float*, const float*, float*, float*);
template void attn_fwd<double>(const AttnArgs&, const double*, const double*, const double*, const double*, double*,
                               double*);
template void attn_bwd<float>(const AttnArgs&, const float*, const float*, const float*, const float*, const float*,
                              const float*, const float*, float*, float*, float*, float*);
template void attn_bwd<double>(const AttnArgs&, const double*, const double*, const double*, const double*,
                               const double*, const double*, const double*, double*, double*, double*, double*);

namespace {
void attn_fwd_cpu(const AttnArgs& a, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                  const Tensor& out, const Tensor& lse) {
  auto run = [&]<typename T>() {
    auto base = [](const Tensor& t) { return t->data<T>() - t->offset; };
    attn_fwd<T>(a, base(q), base(k), base(v), mask ? mask->data<T>() : nullptr, out->data<T>(), lse->data<T>());
  };
  if (q->dtype == DType::Float32) run.template operator()<float>();
  else run.template operator()<double>();
}
void attn_bwd_cpu(const AttnArgs& a, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                  const Tensor& out, const Tensor& lse, const Tensor& dout, const Tensor& dq, const Tensor& dk,
                  const Tensor& dv, const Tensor& dmask) {
  auto run = [&]<typename T>() {
    auto base = [](const Tensor& t) { return t->data<T>() - t->offset; };
    auto ptr = [](const Tensor& t) { return t ? t->data<T>() : nullptr; };
    attn_bwd<T>(a, base(q), base(k), base(v), ptr(mask), out->data<T>(), lse->data<T>(), dout->data<T>(),
                dq->data<T>(), dk->data<T>(), dv->data<T>(), ptr(dmask));
  };
  if (q->dtype == DType::Float32) run.template operator()<float>();
  else run.template operator()<double>();
}
}  // namespace

SX_REGISTER_KERNEL(kern::attn_fwd, CPU, &attn_fwd_cpu);
SX_REGISTER_KERNEL(kern::attn_bwd, CPU, &attn_bwd_cpu);

}  // namespace sx::cpu
