// Matrix products of float16/bfloat16 operands, accumulated in float32 and rounded once to the
// operands' dtype, without a float32 copy of either operand:
// - one-row (or one-column) products, decoding one token: the weight streams through registers and
//   small L1 buffers, converted on the fly, split over the thread pool as the float32 one-row
//   products of cpu/gemm.cpp are (the split depends on the sizes alone, not on the thread count);
// - other products: tiles of the output are shared out over the pool; each task converts the tiles
//   of A and B it needs into a scratch of a few hundred KiB and multiplies them with
//   single-threaded float32 BLAS, accumulating over K in a float32 tile.
#include <cblas.h>

#ifdef __F16C__
#include <immintrin.h>
#endif

#include <algorithm>
#include <bit>
#include <memory>
#include <vector>

#include "core/parallel.h"
#include "cpu/blas.h"
#include "cpu/half_convert.h"

namespace sx {

namespace {

// d[i] = float(s[i * inc]) for i < n.
template <typename T>
void widen(const T* s, int64_t inc, float* d, int64_t n) {
  if (inc == 1) return cpu::widen_run(s, d, n);
  for (int64_t i = 0; i < n; ++i) d[i] = float(s[i * inc]);
}

#if defined(__AVX2__) && defined(__F16C__) && defined(__FMA__)
#define SX_HALF_SIMD 1
// Eight float32 values from eight half-precision elements.
inline __m256 load8(const BFloat16* p) {
  __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
inline __m256 load8(const Half* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }

// The widest float vector of the build (16 lanes with AVX-512, else 8), and the few operations the
// one-row products need on it.
#ifdef __AVX512F__
using VecF = __m512;
constexpr int64_t kLanes = 16;
inline VecF vwiden(const BFloat16* p) {
  __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
inline VecF vwiden(const Half* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
inline VecF vload(const float* p) { return _mm512_loadu_ps(p); }
inline void vstore(float* p, VecF v) { _mm512_storeu_ps(p, v); }
inline VecF vset1(float v) { return _mm512_set1_ps(v); }
inline VecF vadd(VecF a, VecF b) { return _mm512_add_ps(a, b); }
inline VecF vmul(VecF a, VecF b) { return _mm512_mul_ps(a, b); }
inline VecF vfma(VecF a, VecF b, VecF c) { return _mm512_fmadd_ps(a, b, c); }
inline __m256 vhalves(VecF v) { return _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1)); }
#else
using VecF = __m256;
constexpr int64_t kLanes = 8;
template <typename T>
inline VecF vwiden(const T* p) { return load8(p); }
inline VecF vload(const float* p) { return _mm256_loadu_ps(p); }
inline void vstore(float* p, VecF v) { _mm256_storeu_ps(p, v); }
inline VecF vset1(float v) { return _mm256_set1_ps(v); }
inline VecF vadd(VecF a, VecF b) { return _mm256_add_ps(a, b); }
inline VecF vmul(VecF a, VecF b) { return _mm256_mul_ps(a, b); }
inline VecF vfma(VecF a, VecF b, VecF c) { return _mm256_fmadd_ps(a, b, c); }
inline __m256 vhalves(VecF v) { return v; }
#endif
// The sum of a vector's lanes, by halves (a fixed order: the same for a column wherever it is summed).
inline float vsum(VecF v) {
  const __m256 a = vhalves(v);
  __m128 b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  b = _mm_add_ps(b, _mm_movehl_ps(b, b));
  return _mm_cvtss_f32(_mm_add_ss(b, _mm_movehdup_ps(b)));
}

// Elements of T in a cache line: the weight streams below fetch the rows they read next a line at a
// time. Rows of a few KB are short streams, and the hardware prefetcher starts each too late to keep
// memory busy (bfloat16 one-row products from memory, 2 threads: 31 -> 40-50 GB/s with the fetches).
template <typename T> constexpr int64_t kLine = 64 / int64_t(sizeof(T));

// out[c] = sum_k x[k] * float(cols[c][k]) for C contiguous columns: a vector of lanes per column,
// its lanes summed by halves, then the tail. The arithmetic of a column does not depend on C.
// `next` (or null): the C columns read after these, fetched line by line meanwhile.
template <int C, typename T>
void dot_cols(const float* x, const T* const* cols, int64_t K, float* out, const T* const* next = nullptr) {
  VecF acc[C];
  for (int c = 0; c < C; ++c) acc[c] = vset1(0.0f);
  int64_t k = 0;
  for (; k + kLanes <= K; k += kLanes) {
    if (next && k % kLine<T> == 0)
      for (int c = 0; c < C; ++c) __builtin_prefetch(next[c] + k);
    const VecF xv = vload(x + k);
    for (int c = 0; c < C; ++c) acc[c] = vfma(xv, vwiden(cols[c] + k), acc[c]);
  }
  for (int c = 0; c < C; ++c) {
    float s = vsum(acc[c]);
    for (int64_t t = k; t < K; ++t) s += x[t] * float(cols[c][t]);
    out[c] = s;
  }
}
#endif

template <typename T>
float bias_at(const T* bias, int64_t j) {
  return bias ? float(bias[j]) : 0.0f;
}

// y[j * incy] = T(sum_k x[k] * B(k, j) + bias[j * binc]) for j < n, with B(k, j) = B[k * sk + j]:
// rows of B contiguous along j (x @ W with W stored (K, n)). Each task streams row pieces (up to
// kTileJ wide) of a range of k, four rows per pass, into float32 partial sums (converted in
// registers, a vector at a time, with AVX2); the partial sums of the k ranges are added in order.
template <typename T>
void gemv_rows(int64_t n, int64_t K, const float* x, const T* B, int64_t sk, T* y, int64_t incy, const T* bias,
               int64_t binc) {
  constexpr int64_t kTileJ = 1024, kTasks = 8;
  const int64_t tiles = (n + kTileJ - 1) / kTileJ;
  const bool share = n * K >= (int64_t(1) << 15);
  const int64_t parts = share ? std::clamp<int64_t>(kTasks / tiles, 1, std::max<int64_t>(K / 16, 1)) : 1;
  std::vector<float> partial(static_cast<size_t>(parts * n));
  auto task = [&](int64_t c) {
    const int64_t tile = c % tiles, part = c / tiles;
    const int64_t j0 = tile * kTileJ, m = std::min(kTileJ, n - j0);
    const int64_t k0 = K * part / parts, k1 = K * (part + 1) / parts;
    float w[4][kTileJ];
    float* acc = partial.data() + part * n + j0;
    std::fill(acc, acc + m, 0.0f);
    int64_t k = k0;
#ifdef SX_HALF_SIMD
    // Whole vectors converted in registers; each pass adds (x0 r0 + x1 r1) + (x2 r2 + x3 r3), two
    // independent chains, to the partial sums. The stride and pointers are locals: the vector stores
    // may alias anything, which made the captured ones reload on every vector.
    const int64_t s = sk, mv = m / kLanes * kLanes;
    const T* const base = B + j0;
    for (; k + 4 <= k1; k += 4) {
      const T* r = base + k * s;
      const T* next = k + 8 <= k1 ? r + 4 * s : nullptr;  // the next four rows, fetched meanwhile
      const float y0 = x[k], y1 = x[k + 1], y2 = x[k + 2], y3 = x[k + 3];
      const VecF x0 = vset1(y0), x1 = vset1(y1), x2 = vset1(y2), x3 = vset1(y3);
      for (int64_t j = 0; j < mv; j += kLanes) {
        if (next && j % kLine<T> == 0)
          for (int i = 0; i < 4; ++i) __builtin_prefetch(next + i * s + j);
        const VecF p = vfma(x1, vwiden(r + s + j), vmul(x0, vwiden(r + j)));
        const VecF q = vfma(x3, vwiden(r + 3 * s + j), vmul(x2, vwiden(r + 2 * s + j)));
        vstore(acc + j, vadd(vload(acc + j), vadd(p, q)));
      }
      for (int64_t j = mv; j < m; ++j)
        acc[j] += (y0 * float(r[j]) + y1 * float(r[s + j])) + (y2 * float(r[2 * s + j]) + y3 * float(r[3 * s + j]));
    }
#endif
    for (; k + 4 <= k1; k += 4) {
      for (int r = 0; r < 4; ++r) widen(B + (k + r) * sk + j0, 1, w[r], m);
      const float x0 = x[k], x1 = x[k + 1], x2 = x[k + 2], x3 = x[k + 3];
      for (int64_t j = 0; j < m; ++j) acc[j] += x0 * w[0][j] + x1 * w[1][j] + x2 * w[2][j] + x3 * w[3][j];
    }
    for (; k < k1; ++k) {
      widen(B + k * sk + j0, 1, w[0], m);
      for (int64_t j = 0; j < m; ++j) acc[j] += x[k] * w[0][j];
    }
  };
  if (share)
    parallel_for(tiles * parts, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) task(c);
    });
  else
    for (int64_t c = 0; c < tiles * parts; ++c) task(c);
  for (int64_t j = 0; j < n; ++j) {
    float s = partial[j];
    for (int64_t p = 1; p < parts; ++p) s += partial[p * n + j];
    y[j * incy] = T(s + bias_at(bias, j * binc));
  }
}

// The same product with B(k, j) = B[k + j * sj]: one dot product of x with each contiguous
// column of B (linear's weight rows), four columns at a time converted in registers (or, without
// AVX2, 256 elements at a time into a buffer).
template <typename T>
void gemv_cols(int64_t n, int64_t K, const float* x, const T* B, int64_t sj, T* y, int64_t incy, const T* bias,
               int64_t binc) {
  constexpr int64_t kChunk = 256;
  const int64_t grain = std::max<int64_t>(16, 65536 / std::max<int64_t>(K, 1));
  parallel_for(n, grain, [&](int64_t j0, int64_t j1) {
    int64_t j = j0;
#ifdef SX_HALF_SIMD
    constexpr int kCols = 8;
    float s[kCols];
    for (; j + kCols <= j1; j += kCols) {
      const T *cols[kCols], *next[kCols];
      for (int c = 0; c < kCols; ++c) cols[c] = B + (j + c) * sj, next[c] = cols[c] + kCols * sj;
      dot_cols<kCols>(x, cols, K, s, j + 2 * kCols <= j1 ? next : nullptr);
      for (int c = 0; c < kCols; ++c) y[(j + c) * incy] = T(s[c] + bias_at(bias, (j + c) * binc));
    }
    for (; j < j1; ++j) {
      const T* cols[1] = {B + j * sj};
      dot_cols<1>(x, cols, K, s);
      y[j * incy] = T(s[0] + bias_at(bias, j * binc));
    }
#endif
    float w[kChunk];
    for (; j < j1; ++j) {
      const T* col = B + j * sj;
      float lanes[8] = {};
      for (int64_t k0 = 0; k0 < K; k0 += kChunk) {
        const int64_t len = std::min(kChunk, K - k0);
        widen(col + k0, 1, w, len);
        const float* xk = x + k0;
        int64_t k = 0;
        for (; k + 8 <= len; k += 8)
          for (int l = 0; l < 8; ++l) lanes[l] += xk[k + l] * w[k + l];
        for (; k < len; ++k) lanes[k % 8] += xk[k] * w[k];
      }
      float acc = 0.0f;
      for (int l = 0; l < 8; ++l) acc += lanes[l];
      y[j * incy] = T(acc + bias_at(bias, j * binc));
    }
  });
}

// Output tiles of kMB x kNB, K in blocks of kKB: the float32 tiles of A, B and C take
// (kMB * kKB + kKB * kNB + kMB * kNB) * 4 bytes = 512 KiB per task running at once.
constexpr int64_t kMB = 128, kNB = 256, kKB = 256;

// C = A @ B (+ bias) for general strides through float32 tiles. A tile whose source has contiguous
// columns (x^T in a weight gradient, W^T in linear) is converted as stored and handed to BLAS as
// transposed, so every conversion reads contiguous runs when the source has any.
template <typename T>
void gemm_tiles(int64_t M, int64_t N, int64_t K, const T* A, int64_t sam, int64_t sak, const T* B, int64_t sbk,
                int64_t sbn, const T* bias, T* C, int64_t ldc) {
  const bool ta = sak != 1 && sam == 1, tb = sbn != 1 && sbk == 1;
  const int64_t tm = (M + kMB - 1) / kMB, tn = (N + kNB - 1) / kNB;
  const int64_t grain = double(M) * double(N) * double(K) < double(1 << 20) ? tm * tn : 1;
  parallel_for(tm * tn, grain, [&](int64_t c0, int64_t c1) {
    const int64_t mcap = std::min(kMB, M), ncap = std::min(kNB, N), kcap = std::min(kKB, K);
    std::unique_ptr<float[]> af(new float[mcap * kcap]), bf(new float[kcap * ncap]), cf(new float[mcap * ncap]);
    for (int64_t c = c0; c < c1; ++c) {
      const int64_t i0 = c / tn * kMB, j0 = c % tn * kNB;
      const int64_t m = std::min(kMB, M - i0), n = std::min(kNB, N - j0);
      for (int64_t k0 = 0; k0 < K; k0 += kKB) {
        const int64_t kb = std::min(kKB, K - k0);
        const T* a = A + i0 * sam + k0 * sak;
        const T* b = B + k0 * sbk + j0 * sbn;
        if (ta) for (int64_t k = 0; k < kb; ++k) widen(a + k * sak, 1, af.get() + k * m, m);
        else for (int64_t i = 0; i < m; ++i) widen(a + i * sam, sak, af.get() + i * kb, kb);
        if (tb) for (int64_t j = 0; j < n; ++j) widen(b + j * sbn, 1, bf.get() + j * kb, kb);
        else for (int64_t k = 0; k < kb; ++k) widen(b + k * sbk, sbn, bf.get() + k * n, n);
        scipy_cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, int(m),
                          int(n), int(kb), 1.0f, af.get(), int(ta ? m : kb), bf.get(), int(tb ? kb : n),
                          k0 == 0 ? 0.0f : 1.0f, cf.get(), int(n));
      }
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) C[(i0 + i) * ldc + j0 + j] = T(cf[i * n + j] + bias_at(bias, j0 + j));
    }
  });
}

template <typename T>
void half_gemm_impl(int64_t M, int64_t N, int64_t K, const T* A, int64_t sam, int64_t sak, const T* B, int64_t sbk,
                    int64_t sbn, const T* bias, T* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = T(bias_at(bias, j));
    return;
  }
  if (M == 1 && (sbn == 1 || sbk == 1)) {  // one row of A times B
    std::vector<float> x(static_cast<size_t>(K));
    widen(A, sak, x.data(), K);
    if (sbn == 1) gemv_rows<T>(N, K, x.data(), B, sbk, C, 1, bias, 1);
    else gemv_cols<T>(N, K, x.data(), B, sbn, C, 1, bias, 1);
    return;
  }
  if (N == 1 && (sam == 1 || sak == 1)) {  // A times one column of B: the same product, transposed
    std::vector<float> x(static_cast<size_t>(K));
    widen(B, sbk, x.data(), K);
    if (sam == 1) gemv_rows<T>(M, K, x.data(), A, sak, C, ldc, bias, 0);
    else gemv_cols<T>(M, K, x.data(), A, sam, C, ldc, bias, 0);
    return;
  }
  gemm_tiles<T>(M, N, K, A, sam, sak, B, sbk, sbn, bias, C, ldc);
}

}  // namespace

void half_gemm(int64_t M, int64_t N, int64_t K, const Half* A, int64_t sam, int64_t sak, const Half* B, int64_t sbk,
               int64_t sbn, const Half* bias, Half* C, int64_t ldc) {
  half_gemm_impl<Half>(M, N, K, A, sam, sak, B, sbk, sbn, bias, C, ldc);
}
void half_gemm(int64_t M, int64_t N, int64_t K, const BFloat16* A, int64_t sam, int64_t sak, const BFloat16* B,
               int64_t sbk, int64_t sbn, const BFloat16* bias, BFloat16* C, int64_t ldc) {
  half_gemm_impl<BFloat16>(M, N, K, A, sam, sak, B, sbk, sbn, bias, C, ldc);
}

}  // namespace sx
