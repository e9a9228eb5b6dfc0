// Matrix products on the CPU: float32/float64 and complex64/complex128 through BLAS (sizes past its
// 32-bit ints split into blocks), float16/bfloat16 through half_gemm (cpu/gemm_half.cpp), integers with
// a plain loop. BLAS runs single-threaded; a large product is cut into independent pieces that the
// thread pool runs (see gemm_split).
#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <complex>
#include <cstring>
#include <limits>
#include <vector>

#include "core/parallel.h"
#include "cpu/blas.h"
#include "cpu/kernels.h"
#include "ops/common.h"
#include "ops/complex.h"

namespace sx {

namespace {
std::atomic<int64_t> g_blas_limit{std::numeric_limits<int>::max()};
}  // namespace

int64_t blas_int_limit() { return g_blas_limit.load(std::memory_order_relaxed); }
void set_blas_int_limit(int64_t n) {
  SX_CHECK(n >= 1 && n <= std::numeric_limits<int>::max(), ValueError, "[set_blas_int_limit] limit ", n,
           " must be in [1, 2**31 - 1]");
  g_blas_limit.store(n);
}

namespace {

// How a 2-D matrix view can be handed to BLAS without a copy: leading dim and transpose flag.
bool blas_layout(const Shape& st, int64_t rows, int64_t cols, bool& trans, int64_t& ld) {
  int64_t s0 = rows == 1 ? cols : st[0], s1 = cols == 1 ? 1 : st[1];
  if (s1 == 1 && s0 >= std::max<int64_t>(cols, 1)) {
    trans = false;
    ld = s0;
    return true;
  }
  s0 = rows == 1 ? 1 : st[0];
  s1 = cols == 1 ? rows : st[1];
  if (s0 == 1 && s1 >= std::max<int64_t>(rows, 1)) {
    trans = true;
    ld = s1;
    return true;
  }
  return false;
}

template <typename T>
void gemm_call(bool ta, bool tb, int M, int N, int K, const T* A, int lda, const T* B, int ldb, T beta, T* C, int ldc) {
  if constexpr (std::is_same_v<T, float>) {
    if (gemm_direct_fits(ta, tb, M, N, K)) return gemm_direct(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc);
    scipy_cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, 1.0f, A,
                      lda, B, ldb, beta, C, ldc);
  } else if constexpr (std::is_same_v<T, double>) {
    scipy_cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, 1.0, A,
                      lda, B, ldb, beta, C, ldc);
  } else {
    const T one(1);
    auto gemm_fn = std::is_same_v<T, std::complex<float>> ? scipy_cblas_cgemm : scipy_cblas_zgemm;
    gemm_fn(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, &one, A, lda, B,
            ldb, &beta, C, ldc);
  }
}

// Products below this many multiply-adds run as one BLAS call.
constexpr double kSplitWork = 1 << 20;
// K-sliced products use slices of about this many k, at most kMaxSlices of them.
constexpr int64_t kSliceK = 2048, kMaxSlices = 8;
// M- or N-pieces are at least this many rows or columns.
constexpr int64_t kMinPiece = 32;

extern "C" void scipy_openblas_set_num_threads(int);
// BLAS's own threads synchronise with each other several times per call (once per block of K it
// packs), and a thread that is descheduled on a shared core stalls all of them; so BLAS runs on the
// calling thread and the pool splits the work (gemm_split). Its idle threads would also keep polling
// for work for about 0.1 s after every call, competing with the pool (and other libraries) for the cores.
[[maybe_unused]] const bool blas_single_threaded = (scipy_openblas_set_num_threads(1), true);

// C = op(A) @ op(B) + beta C (sizes within BLAS's ints) as independent single-threaded BLAS calls on the
// pool. A long K with small M and N (a weight gradient: K is the batch) is cut into a fixed number of
// K slices, a function of K alone, whose partial products are added in slice order, so the result does
// not depend on the thread count; other products are cut into one piece per thread (see below).
template <typename T>
void gemm_split(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb,
                T beta, T* C, int64_t ldc) {
  auto a_at = [&](int64_t i, int64_t k) { return ta ? A + k * lda + i : A + i * lda + k; };
  auto b_at = [&](int64_t k, int64_t j) { return tb ? B + j * ldb + k : B + k * ldb + j; };
  // A transposed B (x @ W^T) whose rows lie a multiple of 4 KiB apart (K = 1024 floats) is packed by
  // reading 16 of its rows side by side, all in the same sets of the 8-way L1: OpenBLAS's SkylakeX
  // kernels ran 10-55% slower than with any other row length. A call of 64 or more rows of A whose part
  // of B fits in L2 (1 MiB) first copies that part to rows 64 bytes longer, on its own thread (256 x 256
  // x 1024: 890 -> 767 us). Larger parts, or fewer rows to amortise the copy over, measured slower
  // with the copy (64 x 1024 x 1024, cut into two column pieces: 1.2 -> 1.7 ms).
  // (Real products only: complex ones were not measured with the copy.)
  const bool pad = std::is_floating_point_v<T> && tb && (ldb * int64_t(sizeof(T))) % 4096 == 0 &&
                   K < std::numeric_limits<int>::max() - 64;
  auto call = [&](int64_t m, int64_t n, int64_t k, const T* a, const T* b, T bt, T* c, int64_t ld) {
    const bool direct = std::is_same_v<T, float> && gemm_direct_fits(ta, tb, m, n, k);  // it packs B itself
    if (!pad || direct || m < 64 || n < 2 || n * k * int64_t(sizeof(T)) > (1 << 20))
      return gemm_call<T>(ta, tb, int(m), int(n), int(k), a, int(lda), b, int(ldb), bt, c, int(ld));
    const int64_t lp = k + 64 / int64_t(sizeof(T));
    // Uninitialised memory from the tensor allocator's block cache: no fresh pages per call.
    Tensor rows = empty({n * lp}, std::is_same_v<T, float> ? DType::Float32 : DType::Float64);
    T* p = rows->data<T>();
    for (int64_t j = 0; j < n; ++j) std::memcpy(p + j * lp, b + j * ldb, size_t(k) * sizeof(T));
    gemm_call<T>(ta, tb, int(m), int(n), int(k), a, int(lda), p, int(lp), bt, c, int(ld));
  };
  if (double(M) * double(N) * double(K) < kSplitWork) {
    call(M, N, K, A, B, beta, C, ldc);
    return;
  }
  if (K >= 2 * kSliceK && K >= 8 * std::max(M, N)) {
    const int64_t slices = std::min(K / kSliceK, kMaxSlices), mn = M * N;
    std::vector<T> part(size_t((slices - 1) * mn));
    parallel_for(slices, 1, [&](int64_t s0, int64_t s1) {
      for (int64_t s = s0; s < s1; ++s) {
        int64_t k0 = K * s / slices, k1 = K * (s + 1) / slices;
        if (s == 0) call(M, N, k1 - k0, a_at(0, k0), b_at(k0, 0), beta, C, ldc);
        else call(M, N, k1 - k0, a_at(0, k0), b_at(k0, 0), T(0), part.data() + (s - 1) * mn, N);
      }
    });
    for (int64_t s = 1; s < slices; ++s)
      for (int64_t i = 0; i < M; ++i) {
        const T* p = part.data() + (s - 1) * mn + i * N;
        T* c = C + i * ldc;
        for (int64_t j = 0; j < N; ++j) c[j] += p[j];
      }
    return;
  }
  // One piece per thread, cut along M unless N is much longer: measured with OpenBLAS's SkylakeX
  // kernels at 2 threads, two row pieces ran 5-20% faster than four (each piece repacks the whole
  // other operand) and than two column pieces, except where N >= 4 M.
  const bool by_cols = N >= 4 * M;
  const int64_t len = by_cols ? N : M;
  const int64_t pieces = std::min<int64_t>(get_num_threads(), len / kMinPiece);
  if (pieces < 2) {
    call(M, N, K, A, B, beta, C, ldc);
    return;
  }
  parallel_for(pieces, 1, [&](int64_t p0, int64_t p1) {
    int64_t lo = len * p0 / pieces, hi = len * p1 / pieces;
    if (by_cols) call(M, hi - lo, K, A, b_at(0, lo), beta, C + lo, ldc);
    else call(hi - lo, N, K, a_at(lo, 0), B, beta, C + lo * ldc, ldc);
  });
}

// 32 bytes of T as one vector (an unaligned load).
template <typename T> struct Vec32 {
  typedef T type __attribute__((vector_size(32)));
};
template <typename T> typename Vec32<T>::type load32(const T* p) {
  typename Vec32<T>::type v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// sum_k x[k] * y[k] of contiguous float32/float64 vectors: four vector registers of lanes, added
// pairwise at the end.
template <typename T>
T dot_contig(const T* x, const T* y, int64_t n) {
  constexpr int W = 32 / int(sizeof(T));
  using V = typename Vec32<T>::type;
  auto at = load32<T>;
  V a0{}, a1{}, a2{}, a3{};
  int64_t k = 0;
  for (; k + 4 * W <= n; k += 4 * W) {
    a0 += at(x + k) * at(y + k);
    a1 += at(x + k + W) * at(y + k + W);
    a2 += at(x + k + 2 * W) * at(y + k + 2 * W);
    a3 += at(x + k + 3 * W) * at(y + k + 3 * W);
  }
  for (; k + W <= n; k += W) a0 += at(x + k) * at(y + k);
  V v = (a0 + a1) + (a2 + a3);
  T s = T(0);
  for (int l = 0; l < W; ++l) s += v[l];
  for (; k < n; ++k) s += x[k] * y[k];
  return s;
}

// The one-row (or one-column) product, for j in [0, n):
//   y[j * incy] = beta * y[j * incy] + sum_k x[k * incx] * B(k, j),  B(k, j) = B[k * sk + j * sj].
// BLAS's threaded GEMM pays a synchronisation per call that can cost a hundred times the arithmetic
// when M == 1 (decoding one token), so this memory-bound case runs on the thread pool instead. Both
// layouts read B once, in long contiguous runs: the speed limit is memory bandwidth.

// Rows of B contiguous along j (x @ W with W stored (K, n)): each task streams whole row pieces
// (up to kTileJ wide) of a range of k into partial sums of y; the partial sums of the k ranges are
// added at the end. Four rows per pass halve the loads and stores of the partial sums. The split
// does not depend on the thread count, so neither does the result.
template <typename T>
void gemv_rows(int64_t n, int64_t K, const T* x, int64_t incx, const T* B, int64_t sk, T beta, T* y, int64_t incy) {
  constexpr int64_t kTileJ = 1024;  // partial sums of one tile stay in L1
  constexpr int64_t kTasks = 8;     // tiles x k ranges to aim for
  const int64_t tiles = (n + kTileJ - 1) / kTileJ;
  int64_t parts = 1;  // k ranges; one when the product is too small to share
  if (n * K >= (int64_t(1) << 15)) parts = std::clamp<int64_t>(kTasks / tiles, 1, std::max<int64_t>(K / 16, 1));
  std::vector<T> partial(parts > 1 ? parts * n : 0);
  auto task = [&](int64_t c) {
    const int64_t tile = c % tiles, part = c / tiles;
    const int64_t j0 = tile * kTileJ, m = std::min(kTileJ, n - j0);
    const int64_t k0 = K * part / parts, k1 = K * (part + 1) / parts;
    T local[kTileJ];
    T* acc = parts > 1 ? partial.data() + part * n + j0 : local;
    std::fill(acc, acc + m, T(0));
    int64_t k = k0;
    for (; k + 4 <= k1; k += 4) {
      const T x0 = x[k * incx], x1 = x[(k + 1) * incx], x2 = x[(k + 2) * incx], x3 = x[(k + 3) * incx];
      const T *r0 = B + k * sk + j0, *r1 = r0 + sk, *r2 = r1 + sk, *r3 = r2 + sk;
      for (int64_t j = 0; j < m; ++j) acc[j] += x0 * r0[j] + x1 * r1[j] + x2 * r2[j] + x3 * r3[j];
    }
    for (; k < k1; ++k) {
      const T xk = x[k * incx];
      const T* r = B + k * sk + j0;
      for (int64_t j = 0; j < m; ++j) acc[j] += xk * r[j];
    }
    if (parts == 1)
      for (int64_t j = 0; j < m; ++j) {
        T* o = y + (j0 + j) * incy;
        *o = beta == T(0) ? acc[j] : acc[j] + beta * *o;
      }
  };
  const int64_t tasks = tiles * parts;
  if (n * K < (int64_t(1) << 15)) {
    for (int64_t c = 0; c < tasks; ++c) task(c);
  } else {
    parallel_for(tasks, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) task(c);
    });
  }
  if (parts == 1) return;
  for (int64_t j = 0; j < n; ++j) {
    T s = partial[j];
    for (int64_t p = 1; p < parts; ++p) s += partial[p * n + j];
    T* o = y + j * incy;
    *o = beta == T(0) ? s : s + beta * *o;
  }
}

// One dot product of x with the column B(., j) per j (contiguous when sk == 1: linear's weight rows).
template <typename T>
void gemv_cols(int64_t n, int64_t K, const T* x, int64_t incx, const T* B, int64_t sk, int64_t sj, T beta, T* y,
               int64_t incy) {
  int64_t grain = std::max<int64_t>(16, 65536 / std::max<int64_t>(K, 1));
  parallel_for(n, grain, [&](int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j) {
      const T* col = B + j * sj;
      T acc = T(0);
      if (sk == 1 && incx == 1) acc = dot_contig(x, col, K);
      else
        for (int64_t k = 0; k < K; ++k) acc += x[k * incx] * col[k * sk];
      T* o = y + j * incy;
      *o = beta == T(0) ? acc : acc + beta * *o;
    }
  });
}

template <typename T>
void gemv(int64_t n, int64_t K, const T* x, int64_t incx, const T* B, int64_t sk, int64_t sj, T beta, T* y,
          int64_t incy) {
  if (sj == 1)
    gemv_rows<T>(n, K, x, incx, B, sk, beta, y, incy);
  else
    gemv_cols<T>(n, K, x, incx, B, sk, sj, beta, y, incy);
}

// C = A @ B^T + beta C for a few rows of A and B stored (N, K): the linear layer of a decoding step at
// batch 2-8 (one row goes to gemv). There BLAS's packing of both operands for every call costs more
// than the arithmetic, or its kernel for few rows reads B at a fraction of the memory bandwidth
// (small_m_wins: where this path measured faster than BLAS). A block of R rows and Cn columns keeps
// R * Cn = 8 vector accumulators (enough independent FMA chains to hide their latency) along K; the
// Cn rows of B stay in L1 while the row groups of A pass over them, so B is read from memory once. The split over column
// blocks does not depend on the thread count, so neither does the result.
bool small_m_wins(int64_t M, int64_t N, int64_t K) {
  if (M < 2 || M > 8) return false;
  return M >= 4 ? N >= 256 : double(N) * double(K) >= double(1 << 22);
}

template <typename T, int R, int Cn>
void small_m_block(int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb, int64_t cols, T (&out)[4][8]) {
  constexpr int W = 32 / int(sizeof(T));
  using V = typename Vec32<T>::type;
  auto at = load32<T>;
  const T* b[Cn];
  for (int c = 0; c < Cn; ++c) b[c] = B + std::min<int64_t>(c, cols - 1) * ldb;  // short last block: repeats
  V acc[R][Cn] = {};
  int64_t k = 0;
  for (; k + W <= K; k += W) {
    V u[Cn];
    for (int c = 0; c < Cn; ++c) u[c] = at(b[c] + k);
    for (int r = 0; r < R; ++r) {
      const V a = at(A + r * lda + k);
      for (int c = 0; c < Cn; ++c) acc[r][c] += a * u[c];
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < Cn; ++c) {
      T lanes[W];
      std::memcpy(lanes, &acc[r][c], sizeof lanes);
      for (int w = W / 2; w >= 1; w /= 2)  // pairwise: lanes l and l + w
        for (int l = 0; l < w; ++l) lanes[l] += lanes[l + w];
      T s = lanes[0];
      for (int64_t q = k; q < K; ++q) s += A[r * lda + q] * b[c][q];
      out[r][c] = s;
    }
}

template <typename T, int Cn>
void small_m_rows(int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb, T beta, T* C,
                  int64_t ldc) {
  const int64_t blocks = (N + Cn - 1) / Cn;
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(1, Cn * M * K));
  parallel_for(blocks, grain, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t j = p * Cn, cols = std::min<int64_t>(Cn, N - j);
      for (int64_t i0 = 0; i0 < M; i0 += 4) {
        T out[4][8];
        const T *a = A + i0 * lda, *bj = B + j * ldb;
        const int64_t rows = std::min<int64_t>(4, M - i0);
        switch (rows) {
          case 4: small_m_block<T, 4, Cn>(K, a, lda, bj, ldb, cols, out); break;
          case 3: small_m_block<T, 3, Cn>(K, a, lda, bj, ldb, cols, out); break;
          case 2: small_m_block<T, 2, Cn>(K, a, lda, bj, ldb, cols, out); break;
          default: small_m_block<T, 1, Cn>(K, a, lda, bj, ldb, cols, out);
        }
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < cols; ++c) {
            T* o = C + (i0 + r) * ldc + j + c;
            *o = beta == T(0) ? out[r][c] : out[r][c] + beta * *o;
          }
      }
    }
  });
}

template <typename T>
void gemm_small_m(int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb, T beta, T* C,
                  int64_t ldc) {
  if (M == 2) small_m_rows<T, 4>(M, N, K, A, lda, B, ldb, beta, C, ldc);  // 2 x 4 accumulators
  else small_m_rows<T, 2>(M, N, K, A, lda, B, ldb, beta, C, ldc);         // 4 x 2
}

// C = op(A) @ op(B), row-major. BLAS takes 32-bit ints: sizes past 2**31 - 1 (or the lower block limit
// that tests set) are split into blocks, K blocks accumulating with beta = 1; a leading dimension past
// 2**31 - 1 cannot be expressed and raises.
template <typename T>
void gemm_blocks(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb,
                 T beta, T* C, int64_t ldc) {
  if constexpr (std::is_floating_point_v<T>) {  // (complex products: BLAS for every shape)
    if (M == 1 && N > 1) {  // one row of A times op(B)
      gemv<T>(N, K, A, ta ? lda : 1, B, tb ? 1 : ldb, tb ? ldb : 1, beta, C, 1);
      return;
    }
    if (N == 1) {  // op(A) times one column of B: the same product, transposed
      gemv<T>(M, K, B, tb ? 1 : ldb, A, ta ? lda : 1, ta ? 1 : lda, beta, C, ldc);
      return;
    }
    if (!ta && tb && small_m_wins(M, N, K)) {  // x @ W^T for a few rows x
      gemm_small_m<T>(M, N, K, A, lda, B, ldb, beta, C, ldc);
      return;
    }
  }
  const int64_t lim = blas_int_limit(), imax = std::numeric_limits<int>::max();
  SX_CHECK(lda <= imax && ldb <= imax && ldc <= imax, RuntimeError, "[matmul] a row of ", std::max({lda, ldb, ldc}),
           " elements exceeds the 2**31 - 1 that BLAS's 32-bit leading dimensions can hold (shapes (", M, ", ", K,
           ") and (", K, ", ", N, "))");
  for (int64_t i0 = 0; i0 < M; i0 += lim)
    for (int64_t j0 = 0; j0 < N; j0 += lim)
      for (int64_t k0 = 0; k0 < K; k0 += lim) {
        int64_t m = std::min(lim, M - i0), n = std::min(lim, N - j0), k = std::min(lim, K - k0);
        const T* a = ta ? A + k0 * lda + i0 : A + i0 * lda + k0;
        const T* b = tb ? B + j0 * ldb + k0 : B + k0 * ldb + j0;
        gemm_split<T>(ta, tb, m, n, k, a, lda, b, ldb, k0 == 0 ? beta : T(1), C + i0 * ldc + j0, ldc);
      }
}

template <typename T>
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb,
          T* C, int64_t ldc) {
  gemm_blocks<T>(ta, tb, M, N, K, A, lda, B, ldb, T(0), C, ldc);
}
}  // namespace

void blas_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
               int64_t ldb, float beta, float* C, int64_t ldc) {
  gemm_blocks<float>(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc);
}
void blas_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const double* A, int64_t lda, const double* B,
               int64_t ldb, double beta, double* C, int64_t ldc) {
  gemm_blocks<double>(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc);
}

namespace {
// Whether the products of a batch run side by side on the pool, each on one thread: products too small
// to split, and batches with at least as many products as threads (and four or more), where splitting
// every product would cost a synchronisation per product. Otherwise the products run one after the
// other, each split over the pool (gemm_split).
bool by_batch(int64_t batch, int64_t M, int64_t N, int64_t K) {
  if (batch <= 1) return false;
  return double(M) * double(N) * double(K) < kSplitWork || batch >= std::max<int64_t>(4, get_num_threads());
}
// Products per chunk of the batch: enough for about a quarter of kSplitWork multiply-adds, so that a
// batch of small products as large as one split product still goes to the pool in four chunks (32
// products of 32 x 32 x 32 ran on one thread in one chunk: 17 us, where PyTorch took 12).
int64_t batch_grain(int64_t M, int64_t N, int64_t K) {
  return std::max<int64_t>(1, int64_t(kSplitWork / 4 / std::max(1.0, double(M) * double(N) * double(K))));
}

// out[b] = a[b] @ b[b] for operands already broadcast to (batch..., m, k) and (batch..., k, n).
void batched_mm(const Tensor& a, const Tensor& b, const Tensor& out) {
  int64_t nd = a->dim(), M = a->shape[nd - 2], K = a->shape[nd - 1], N = b->shape[nd - 1];
  int64_t batch = 1;
  for (int64_t i = 0; i < nd - 2; ++i) batch *= a->shape[i];
  if (M == 0 || N == 0 || batch == 0) return;
  DType dt = a->dtype;
  auto offset = [&](const Tensor& t, int64_t bi) {
    int64_t off = 0;
    for (int64_t i = nd - 3; i >= 0; --i) {
      off += (bi % t->shape[i]) * t->strides[i];
      bi /= t->shape[i];
    }
    return off;
  };
  if (dt == DType::Float32 || dt == DType::Float64 || is_complex(dt)) {
    bool ta, tb;
    int64_t lda, ldb;
    Shape sa{a->strides[nd - 2], a->strides[nd - 1]}, sb{b->strides[nd - 2], b->strides[nd - 1]};
    Tensor ac = a, bc = b;
    // A view whose row stride BLAS cannot hold in an int is copied to a packed layout first.
    const int64_t imax = std::numeric_limits<int>::max();
    if (!blas_layout(sa, M, K, ta, lda) || lda > imax) { ac = clone_nograd(a); sa = {K, 1}; blas_layout(sa, M, K, ta, lda); }
    if (!blas_layout(sb, K, N, tb, ldb) || ldb > imax) { bc = clone_nograd(b); sb = {N, 1}; blas_layout(sb, K, N, tb, ldb); }
    if (K == 0) {  // out is contiguous
      std::memset(out->raw(), 0, size_t(out->numel()) * itemsize(dt));
      return;
    }
    auto typed = [&](auto* type, int64_t b0, int64_t b1) {
      using T = std::remove_pointer_t<decltype(type)>;
      for (int64_t bi = b0; bi < b1; ++bi)
        gemm<T>(ta, tb, M, N, K, ac->data<T>() + offset(ac, bi), lda, bc->data<T>() + offset(bc, bi), ldb,
                out->data<T>() + bi * M * N, N);
    };
    auto run = [&](int64_t b0, int64_t b1) {
      switch (dt) {
        case DType::Float32: return typed(static_cast<float*>(nullptr), b0, b1);
        case DType::Float64: return typed(static_cast<double*>(nullptr), b0, b1);
        case DType::Complex64: return typed(static_cast<std::complex<float>*>(nullptr), b0, b1);
        default: return typed(static_cast<std::complex<double>*>(nullptr), b0, b1);
      }
    };
    if (by_batch(batch, M, N, K)) parallel_for(batch, batch_grain(M, N, K), run);
    else run(0, batch);
    return;
  }
  if (dt == DType::Float16 || dt == DType::BFloat16) {
    auto typed = [&](auto* type, int64_t b0, int64_t b1) {
      using T = std::remove_pointer_t<decltype(type)>;
      for (int64_t bi = b0; bi < b1; ++bi)
        half_gemm(M, N, K, a->data<T>() + offset(a, bi), a->strides[nd - 2], a->strides[nd - 1],
                  b->data<T>() + offset(b, bi), b->strides[nd - 2], b->strides[nd - 1], nullptr,
                  out->data<T>() + bi * M * N, N);
    };
    auto run = [&](int64_t b0, int64_t b1) {
      if (dt == DType::Float16) typed(static_cast<Half*>(nullptr), b0, b1);
      else typed(static_cast<BFloat16*>(nullptr), b0, b1);
    };
    if (by_batch(batch, M, N, K)) parallel_for(batch, batch_grain(M, N, K), run);
    else run(0, batch);
    return;
  }
  SX_DISPATCH_ALL(dt, "matmul", [&] {
    using T = scalar_t;
    using C = acc_t<T>;
    for (int64_t bi = 0; bi < batch; ++bi) {
      const T* A = a->data<T>() + offset(a, bi);
      const T* B = b->data<T>() + offset(b, bi);
      T* O = out->data<T>() + bi * M * N;
      parallel_for(M, 16, [&](int64_t r0, int64_t r1) {
        for (int64_t i = r0; i < r1; ++i)
          for (int64_t j = 0; j < N; ++j) {
            C acc = C(0);
            for (int64_t k = 0; k < K; ++k)
              acc += C(A[i * a->strides[nd - 2] + k * a->strides[nd - 1]]) * C(B[k * b->strides[nd - 2] + j * b->strides[nd - 1]]);
            O[i * N + j] = T(acc);
          }
      });
    }
  });
}

// The inner product of two 1-D tensors. Long contiguous float vectors are cut into blocks of a fixed
// length whose sums, computed in parallel, are added in block order: the result depends on the
// length alone, not on the thread count. Other dtypes and strided vectors take one plain loop.
template <typename T>
void dot_typed(const Tensor& out, const Tensor& a, const Tensor& b) {
  constexpr int64_t kBlock = 1 << 14;
  const int64_t n = a->shape[0], sa = a->strides[0], sb = b->strides[0];
  const T* x = a->data<T>();
  const T* y = b->data<T>();
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (sa == 1 && sb == 1) {
      if (n <= kBlock) {
        *out->data<T>() = dot_contig(x, y, n);
        return;
      }
      const int64_t blocks = (n + kBlock - 1) / kBlock;
      std::vector<T> part(static_cast<size_t>(blocks));
      parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
        for (int64_t i = b0; i < b1; ++i) {
          int64_t k0 = i * kBlock, m = std::min(kBlock, n - k0);
          part[size_t(i)] = dot_contig(x + k0, y + k0, m);
        }
      });
      T s = T(0);
      for (T p : part) s += p;
      *out->data<T>() = s;
      return;
    }
  }
  using C = acc_t<T>;
  C s = C(0);
  for (int64_t k = 0; k < n; ++k) s += C(x[k * sa]) * C(y[k * sb]);
  *out->data<T>() = T(s);
}

void dot_cpu(const Tensor& out, const Tensor& a, const Tensor& b) {
  SX_DISPATCH_ALL(out->dtype, "dot", [&] { dot_typed<scalar_t>(out, a, b); });
}
}  // namespace

namespace cpu {
SX_REGISTER_KERNEL(kern::dot, CPU, &dot_cpu);
SX_REGISTER_KERNEL(kern::matmul, CPU, &batched_mm);
SX_REGISTER_KERNEL(kern::complex_matmul, CPU, &batched_mm);
}  // namespace cpu

}  // namespace sx
