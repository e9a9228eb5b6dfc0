// Row kernels shared by the reduction kernels (cpu/reduce.cpp, cpu/reduce_dims.cpp) and the row sums of
// the normalisation and loss kernels (cpu/nn_kernels.cpp, cpu/batch_norm_kernels.cpp, cpu/loss_kernels.cpp):
// blocked float sums, wrap-around integer arithmetic and NaN-propagating max/min.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "core/dtype.h"

namespace sx::cpu {

// Addition that wraps around for integers (two's complement, as PyTorch's kernels behave) instead of
// being undefined behaviour on overflow.
template <typename C> inline C wrap_add(C a, C b) {
  if constexpr (std::is_integral_v<C>) return C(std::make_unsigned_t<C>(a) + std::make_unsigned_t<C>(b));
  else return a + b;
}

template <typename C> inline C wrap_mul(C a, C b) {
  if constexpr (std::is_integral_v<C>) return C(std::make_unsigned_t<C>(a) * std::make_unsigned_t<C>(b));
  else return a * b;
}

// The type in which vectorised lanes of integer sums and products accumulate: C's unsigned type (the
// same wrapping as wrap_add and wrap_mul, converted back to C once at the end), else C. Lanes written
// with wrap_add's casts instead were miscompiled by GCC 12's vectoriser at -march=x86-64-v4 (int32 ->
// int64 sums lost lanes).
template <typename C>
using wrap_lane_t = typename std::conditional_t<std::is_integral_v<C>, std::make_unsigned<C>, std::type_identity<C>>::type;

// What a sum adds for each element v: v itself, v * v (the sum of squares: the 2-norm) or v with NaN taken
// as 0 (nansum). Applied to scalars and to vectors of lanes alike.
enum class Term : uint8_t { Value, Square, NonNan };
template <Term M, typename V> inline V term(V v) {
  if constexpr (M == Term::Square) return wrap_mul(v, v);
  else if constexpr (M == Term::NonNan) return v == v ? v : V{};
  else return v;
}

// A vector of eight floats widened into two vectors of four doubles and added to them (lanes 0-3 to lo,
// 4-7 to hi).
typedef float f32x8 __attribute__((vector_size(32)));
typedef double f64x4 __attribute__((vector_size(32)));
inline void add_widened(f64x4& lo, f64x4& hi, f32x8 a) {
  lo += __builtin_convertvector(__builtin_shufflevector(a, a, 0, 1, 2, 3), f64x4);
  hi += __builtin_convertvector(__builtin_shufflevector(a, a, 4, 5, 6, 7), f64x4);
}

// A blocked sum of terms computed from a row: t(j) over j < n (x[j], x[j] - mean, g[j] * y[j];
// sum_run_f32 is slower on rows shorter than its wide blocks, such as layer_norm's rows of 768). Partial
// sums in T, kSumLanes of them in each of four sets (four chains of adds: one chain waits on each add's
// latency; the lanes let float loops vectorise without -ffast-math), restarted every kTermBlock elements;
// each block's sets are added into 16 double lanes, which are added across at the end. One running sum
// per lane over a long row (layer_norm over 65536 values of mean 30, group_norm over 524288 of mean 3) had
// 7 to 12 times PyTorch's float32 error; adding each block's lanes in float, twice it on rows of 768. Two
// sums of one row are faster as two calls than as two chains in one loop, which did not vectorise.
constexpr int kSumLanes = 16;
constexpr int64_t kTermBlock = 64 * kSumLanes;
static_assert(kSumLanes == 16, "blocked_sum adds its 16 double lanes as two vectors of 8");
template <typename T, typename F> double blocked_sum(int64_t n, F t) {
  double d[kSumLanes] = {};
  int64_t j = 0;
  while (j + kSumLanes <= n) {
    T acc[4][kSumLanes] = {};
    const int64_t end = std::min(n, j + kTermBlock);
    for (; j + 4 * kSumLanes <= end; j += 4 * kSumLanes)
      for (int u = 0; u < 4; ++u)
        for (int l = 0; l < kSumLanes; ++l) acc[u][l] += t(j + u * kSumLanes + l);
    for (; j + kSumLanes <= end; j += kSumLanes)
      for (int l = 0; l < kSumLanes; ++l) acc[0][l] += t(j + l);
    // Lane by lane, which the compiler keeps in registers: copying the partials into vector types went
    // through memory on the AVX2 build (twice the time of a row of 1024).
    for (int l = 0; l < kSumLanes; ++l) d[l] += double((acc[0][l] + acc[1][l]) + (acc[2][l] + acc[3][l]));
  }
  // The lanes added as a tree (sixteen scalar adds in a chain cost as much as a row of 768).
  typedef double half __attribute__((vector_size(kSumLanes / 2 * sizeof(double))));
  half h[2];
  std::memcpy(h, d, sizeof h);
  const half u = h[0] + h[1];
  const f64x4 q = __builtin_shufflevector(u, u, 0, 1, 2, 3) + __builtin_shufflevector(u, u, 4, 5, 6, 7);
  double s = (q[0] + q[2]) + (q[1] + q[3]);
  for (; j < n; ++j) s += double(t(j));  // the tail, a term at a time in double
  return s;
}

// sum_j a[j] * b[j] over j < n, or sum_j a[j] when b is null, as blocked_sum adds it, rounded to T.
template <typename T> T row_dot(const T* a, const T* b, int64_t n) {
  if (b) return T(blocked_sum<T>(n, [a, b](int64_t j) { return a[j] * b[j]; }));
  return T(blocked_sum<T>(n, [a](int64_t j) { return a[j]; }));
}

// A float32 run of fewer than 256 elements (a short row, or a long one's remainder): 32 float lanes
// (four AVX vectors), none of which adds more than 8 elements, then into double.
template <Term M>
double sum_short_f32(const float* p, int64_t n) {
  typedef float vec __attribute__((vector_size(32)));
  typedef double dvec __attribute__((vector_size(32)));
  vec a[4] = {};
  auto add = [&](vec& acc, int64_t at) {
    vec v;
    std::memcpy(&v, p + at, sizeof(vec));
    acc += term<M>(v);
  };
  int64_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int k = 0; k < 4; ++k) add(a[k], i + 8 * k);
  for (int k = 0; k < 3 && i + 8 <= n; ++k, i += 8) add(a[k + 1], i);
  dvec d = {};
  for (int k = 0; k < 4; ++k)
    d += __builtin_convertvector(__builtin_shufflevector(a[k], a[k], 0, 1, 2, 3), dvec) +
         __builtin_convertvector(__builtin_shufflevector(a[k], a[k], 4, 5, 6, 7), dvec);
  double r = (d[0] + d[1]) + (d[2] + d[3]);
  for (; i < n; ++i) r += double(term<M>(p[i]));
  return r;
}

// Float sums in blocks: each of 32 float lanes (four AVX vectors) adds 8 elements in float, then
// moves its partial into a double lane, so a block costs little more than a plain float sum and
// the result is as accurate as NumPy's pairwise sum. A running float sum drifts with n (100,001
// copies of e summed to 271,796 instead of 271,831). M says what each element adds (see Term).
template <Term M>
double sum_blocks_f32(const float* p, int64_t n) {
  constexpr int64_t kLanes = 32, kBlock = 8 * kLanes;
  if (n < kBlock) return sum_short_f32<M>(p, n);
  f64x4 t[kLanes / 4] = {};  // lane 4 q + m of the 32 is element m of t[q]
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    f32x8 a[4] = {};
    for (int64_t j = 0; j < kBlock; j += kLanes)
      for (int k = 0; k < 4; ++k) {
        f32x8 v;
        std::memcpy(&v, p + i + j + 8 * k, sizeof(v));
        a[k] += term<M>(v);
      }
    // Widened in registers: through a float array in memory, the compiler's wider loads of the four
    // stored vectors could not be forwarded from the stores (a stall per block at -march=x86-64-v4).
    for (int k = 0; k < 4; ++k) add_widened(t[2 * k], t[2 * k + 1], a[k]);
  }
  double tot[kLanes];
  std::memcpy(tot, t, sizeof(tot));
  double r = sum_short_f32<M>(p + i, n - i);
  for (int w = kLanes / 2; w > 0; w /= 2)
    for (int k = 0; k < w; ++k) tot[k] += tot[k + w];
  return tot[0] + r;
}

// Floats per vector of sum_run_f32's wide blocks: 16 on the AVX-512 build, 8 otherwise.
#if defined(__AVX512F__)
constexpr int kRunLanes = 16;
#else
constexpr int kRunLanes = 8;
#endif
typedef float run_f32 __attribute__((vector_size(4 * kRunLanes)));

// A float32 run of any length. Wide blocks of 64 kRunLanes elements (1024 on AVX-512) go through eight
// vectors of lanes, each lane adding 8 elements in float as in sum_blocks_f32; the eight vectors are
// added as a tree (each float partial then holds 64 elements, added in at most 10 rounding steps) and
// move into double (half the lanes in each of two vectors). The rest takes sum_blocks_f32. One long
// stream, and no lane tree per block: the rows of a (1024, 1024) tensor in L3, at 2 threads, in 22 us
// against 25 eight rows at a time; of a (32768, 1024) one, from memory, in 1.9 ms against 2.8.
template <Term M>
double sum_run_f32(const float* p, int64_t n) {
  constexpr int64_t kStep = 8 * kRunLanes, kBlock = 8 * kStep;
  typedef float half_f32 __attribute__((vector_size(2 * kRunLanes)));
  typedef double half_f64 __attribute__((vector_size(4 * kRunLanes)));
  half_f64 lo = {}, hi = {};
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    run_f32 a[8] = {};
    for (int64_t j = 0; j < kBlock; j += kStep)
      for (int k = 0; k < 8; ++k) {
        run_f32 v;
        std::memcpy(&v, p + i + j + kRunLanes * k, sizeof(v));
        a[k] += term<M>(v);
      }
    run_f32 s = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
    half_f32 l, h;
    std::memcpy(&l, &s, sizeof(l));
    std::memcpy(&h, reinterpret_cast<const float*>(&s) + kRunLanes / 2, sizeof(h));
    lo += __builtin_convertvector(l, half_f64);
    hi += __builtin_convertvector(h, half_f64);
  }
  double r = i < n ? sum_blocks_f32<M>(p + i, n - i) : 0.0;
  half_f64 u = lo + hi;
  double t[kRunLanes / 2];
  std::memcpy(t, &u, sizeof(t));
  for (int w = kRunLanes / 4; w > 0; w /= 2)
    for (int k = 0; k < w; ++k) t[k] += t[k + w];
  return t[0] + r;
}

// Rows shorter than this are always summed eight at a time (sum_rows_f32): one row's horizontal sum
// costs as much as the row itself at this length. Longer rows are too where there are many of them.
constexpr int64_t kShortRow = 256;
// Rows of this length or more are summed one at a time (sum_run_f32's wide blocks): eight streams at
// once read slower than one, and the lane tree is paid once a row.
constexpr int64_t kWideRow = 1024;
// Whether `count` float32 rows of n are summed eight at a time (sum_rows_f32): short rows always, rows
// up to kWideRow where there are 64 or more. Decided by the shape alone, so every thread count agrees.
inline bool sums_by_eight(int64_t count, int64_t n) { return n < kShortRow || (count >= 64 && n < kWideRow); }

// The eight lanes of each of eight vectors combined by op (+, max or min), vector r's result in lane r:
// three rounds of shuffles (a transpose that combines as it goes).
template <typename Op>
inline f32x8 lane_reduce8(const f32x8* a, Op op) {
  f32x8 b[4], c[2];
  for (int r = 0; r < 4; ++r)  // lanes: pair results of vectors 2r and 2r+1, interleaved
    b[r] = op(__builtin_shufflevector(a[2 * r], a[2 * r + 1], 0, 8, 2, 10, 4, 12, 6, 14),
              __builtin_shufflevector(a[2 * r], a[2 * r + 1], 1, 9, 3, 11, 5, 13, 7, 15));
  for (int r = 0; r < 2; ++r)  // lanes: quarter results of vectors 4r..4r+3, two halves
    c[r] = op(__builtin_shufflevector(b[2 * r], b[2 * r + 1], 0, 1, 8, 9, 4, 5, 12, 13),
              __builtin_shufflevector(b[2 * r], b[2 * r + 1], 2, 3, 10, 11, 6, 7, 14, 15));
  return op(__builtin_shufflevector(c[0], c[1], 0, 1, 2, 3, 8, 9, 10, 11),
            __builtin_shufflevector(c[0], c[1], 4, 5, 6, 7, 12, 13, 14, 15));
}
inline f32x8 lane_sums8(const f32x8* a) {
  return lane_reduce8(a, [](f32x8 x, f32x8 y) { return x + y; });
}

// While element i of eight rows is read, the cache line at i of each of the eight rows `next` (null:
// none) is fetched, once per 16 floats (a line).
inline void prefetch_next8(const float* const* next, int64_t i) {
  if (next && i % 16 == 0)
    for (int r = 0; r < 8; ++r) __builtin_prefetch(next[r] + i);
}

// Float sums of eight rows of n elements at once, in blocks of 64: a vector of eight lanes per row,
// each lane adding one element in eight (so no float lane adds more than 8 elements, as in
// sum_run_f32), the eight vectors reduced together by lane_sums8 and each row's block sum added
// in double; each row's last n % 8 elements are added in double. M: what each element adds.
// `next` (or null) holds the eight rows summed after these, fetched into the cache line by line as
// these are read: short rows are eight short streams, each over before the hardware's prefetcher
// has followed it (rows of 130 from a 4 MB tensor, one thread: 17 -> 21 Gelem/s).
template <Term M>
void sum_rows8_f32(const float* const* rows, int64_t n, double* out, const float* const* next = nullptr) {
  f64x4 lo = {}, hi = {};
  int64_t i = 0;
  while (i + 8 <= n) {
    f32x8 a[8] = {};
    for (int64_t end = std::min(n - n % 8, i + 64); i < end; i += 8) {
      for (int r = 0; r < 8; ++r) {
        f32x8 v;
        std::memcpy(&v, rows[r] + i, sizeof(v));
        a[r] += term<M>(v);
      }
      prefetch_next8(next, i);
    }
    add_widened(lo, hi, lane_sums8(a));
  }
  for (int r = 0; r < 8; ++r) {
    double t = r < 4 ? lo[r] : hi[r - 4];
    for (int64_t j = i; j < n; ++j) t += double(term<M>(rows[r][j]));
    out[r] = t;
  }
}

// `count` rows of n floats, row k at at(k), reduced by kernel(rows, n, out, next) eight at a time (the
// last group padded with its final row), each result handed to put(k, result). A row's result depends
// on that row alone, so it comes out the same however the rows are grouped (and over however many threads).
template <typename At, typename Put, typename Kernel>
void rows_by_eight_f32(int64_t count, int64_t n, At at, Put put, Kernel kernel) {
  if (count <= 0) return;
  const float *rows[8], *next[8];
  for (int64_t r = 0; r < 8; ++r) next[r] = at(std::min(r, count - 1));
  for (int64_t k = 0; k < count; k += 8) {
    int64_t m = std::min<int64_t>(8, count - k);
    double t[8];
    std::memcpy(rows, next, sizeof(rows));
    for (int64_t r = 0; r < 8; ++r) next[r] = at(std::min(k + 8 + r, count - 1));
    kernel(rows, n, t, n < kShortRow ? next : nullptr);  // long rows: the hardware prefetches
    for (int64_t r = 0; r < m; ++r) put(k + r, t[r]);
  }
}

// Sums of such rows (see sum_rows8_f32).
template <Term M, typename At, typename Put>
void sum_rows_f32(int64_t count, int64_t n, At at, Put put) {
  rows_by_eight_f32(count, n, at, put, [](auto... a) { sum_rows8_f32<M>(a...); });
}

// Double sums: four vectors of independent lanes, added pairwise at the end.
template <Term M>
double sum_run_f64(const double* p, int64_t n) {
  typedef double vec __attribute__((vector_size(32)));
  vec a[4] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int k = 0; k < 4; ++k) {
      vec v;
      std::memcpy(&v, p + i + 4 * k, sizeof(vec));
      a[k] += term<M>(v);
    }
  vec s = (a[0] + a[1]) + (a[2] + a[3]);
  double r = (s[0] + s[1]) + (s[2] + s[3]);
  for (; i < n; ++i) r += term<M>(p[i]);
  return r;
}

// Other dtypes: eight lanes of the compute type over blocks of kSumBlock, block results added in W.
constexpr int64_t kSumBlock = 128;

template <typename T, typename C, Term M>
auto sum_run(const T* p, int64_t n) {
  using W = std::conditional_t<std::is_floating_point_v<C>, double, C>;
  if constexpr (std::is_same_v<T, float>) {
    return sum_run_f32<M>(p, n);
  } else if constexpr (std::is_same_v<T, double>) {
    return sum_run_f64<M>(p, n);
  } else {
    using A = wrap_lane_t<C>;  // integers wrap as in PyTorch
    W total = W(0);
    for (int64_t s = 0; s < n; s += kSumBlock) {
      const T* q = p + s;
      int64_t m = std::min(kSumBlock, n - s), i = 0;
      A acc[8] = {A(0), A(0), A(0), A(0), A(0), A(0), A(0), A(0)};
      for (; i + 8 <= m; i += 8)
        for (int k = 0; k < 8; ++k) acc[k] += term<M>(A(C(q[i + k])));
      for (; i < m; ++i) acc[0] += term<M>(A(C(q[i])));
      C r = C(((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])));
      total = wrap_add(total, W(r));
    }
    return total;
  }
}

// A sum's result in the output dtype, scaled by 1/n for a mean (floating types only) before the
// single rounding.
template <typename T, typename W> T finish_sum(W total, double scale) {
  if constexpr (std::is_floating_point_v<W>) return T(total * scale);
  else return T(total);
}

// 8K float columns summed down n rows `stride` apart in K registers: each column's lane takes 16 rows,
// then moves into a double total (the order of the column loops of cpu/reduce.cpp and cpu/reduce_dims.cpp,
// so the bits agree with them).
template <Term M, int K>
void sum_columns_f32(const float* p, int64_t n, int64_t stride, float* out, double scale) {
  f32x8 a[K] = {};
  f64x4 t[2 * K] = {};
  for (int64_t i = 0; i < n; ++i) {
    const float* q = p + i * stride;
    for (int k = 0; k < K; ++k) {
      f32x8 v;
      std::memcpy(&v, q + 8 * k, sizeof(v));
      a[k] += term<M>(v);
    }
    if ((i + 1) % 16 == 0 || i + 1 == n) {
      for (int k = 0; k < K; ++k) {
        add_widened(t[2 * k], t[2 * k + 1], a[k]);
        a[k] = f32x8{};
      }
    }
  }
  for (int k = 0; k < 2 * K; ++k)
    for (int l = 0; l < 4; ++l) out[4 * k + l] = finish_sum<float>(t[k][l], scale);
}

// The columns [0, w) of such a sum in register blocks of 64, 32, 16, then 8 columns, and a ragged end of
// fewer than 8 as the last 8 columns again (a column's sum does not depend on its block, so the columns
// done twice get the same bits); returns how many it did: w, or 0 for w < 8 (the caller sums those).
template <Term M>
int64_t sum_column_blocks_f32(const float* p, int64_t n, int64_t stride, float* out, int64_t w, double scale) {
  int64_t j = 0;
  for (; j + 64 <= w; j += 64) sum_columns_f32<M, 8>(p + j, n, stride, out + j, scale);
  for (; j + 32 <= w; j += 32) sum_columns_f32<M, 4>(p + j, n, stride, out + j, scale);
  for (; j + 16 <= w; j += 16) sum_columns_f32<M, 2>(p + j, n, stride, out + j, scale);
  for (; j + 8 <= w; j += 8) sum_columns_f32<M, 1>(p + j, n, stride, out + j, scale);
  if (j < w && w >= 8) {
    sum_columns_f32<M, 1>(p + w - 8, n, stride, out + w - 8, scale);
    j = w;
  }
  return j;
}

// Branch-free (vectorisable) max/min in which a NaN, once seen, sticks.
template <typename C> C nan_max(C a, C b) {
  if constexpr (std::is_integral_v<C>) return a > b ? a : b;
  else return ((b > a) | (b != b)) ? b : a;
}
template <typename C> C nan_min(C a, C b) {
  if constexpr (std::is_integral_v<C>) return a < b ? a : b;
  else return ((b < a) | (b != b)) ? b : a;
}

// Max/min of a contiguous float row with GCC/Clang vector extensions (the auto-vectoriser
// does not turn NaN-propagating max into vector code). NaN anywhere gives NaN, as in PyTorch: the
// lanes' min/max skip NaNs, and NaNs are recorded on the side. The AVX2 build ORs a mask of unordered
// lanes; under AVX-512 a compare gives a mask register that costs two more instructions to widen and
// merge, so that build keeps running sums of the same vectors instead (one add per vector; a NaN sum,
// also from inf + -inf, sends the row to an exact scan for NaN): the max of 1M floats 59 -> 37 us.
// Sums on AVX2 measured slower on rows of 130 (the sums and the mask cost alike there, and GCC spilled
// the longer state). Four independent accumulators, so that the loop runs at the load rate rather than
// at the latency of one chain.
#if defined(__AVX512F__)
constexpr bool kNanBySums = true;  // how max/min rows record NaNs (see row_extreme)
#else
constexpr bool kNanBySums = false;
#endif

template <typename C, bool IsMax>
C row_extreme(const C* p, int64_t n) {
  constexpr bool kSums = kNanBySums;
  constexpr int L = 32 / sizeof(C);
  typedef C vec __attribute__((vector_size(32)));
  using I = std::conditional_t<sizeof(C) == 4, int32_t, int64_t>;
  typedef I mask __attribute__((vector_size(32)));
  C init = IsMax ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity();
  vec acc[4], sum[4];
  mask bad = {};
  for (int u = 0; u < 4; ++u) {  // not `sum[4] = {}`: GCC zeroed that with rep stosq, slow on short rows
    sum[u] = vec{};
    for (int k = 0; k < L; ++k) acc[u][k] = init;
  }
  auto step = [&](int u, const C* q) {
    vec v;
    std::memcpy(&v, q, sizeof(vec));
    acc[u] = IsMax ? (v > acc[u] ? v : acc[u]) : (v < acc[u] ? v : acc[u]);
    if constexpr (kSums) sum[u] += v;
    else bad |= (v != v);
  };
  int64_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L)
    for (int u = 0; u < 4; ++u) step(u, p + i + u * L);
  for (; i + L <= n; i += L) step(0, p + i);
  for (int u = 1; u < 4; ++u) {
    acc[0] = IsMax ? (acc[u] > acc[0] ? acc[u] : acc[0]) : (acc[u] < acc[0] ? acc[u] : acc[0]);
    if constexpr (kSums) sum[0] += sum[u];
  }
  C r = init;
  bool nan = false;  // a NaN lane (of the sums: maybe), or a NaN in the ragged end
  for (int k = 0; k < L; ++k) {
    r = IsMax ? (acc[0][k] > r ? acc[0][k] : r) : (acc[0][k] < r ? acc[0][k] : r);
    if constexpr (kSums) nan |= sum[0][k] != sum[0][k];
    else nan |= bad[k] != 0;
  }
  for (; i < n; ++i) {
    r = IsMax ? (p[i] > r ? p[i] : r) : (p[i] < r ? p[i] : r);
    nan |= p[i] != p[i];
  }
  if (kSums && nan) {  // exact: the sums' NaN may come from inf + -inf
    nan = false;
    for (int64_t j = 0; j < n && !nan; ++j) nan = p[j] != p[j];
  }
  return nan ? std::numeric_limits<C>::quiet_NaN() : r;
}

// Max/min of eight float rows of n elements at once (short rows, where one row's horizontal step
// costs as much as the row): a vector per row, the eight reduced together by lane_reduce8. NaNs are
// recorded as in row_extreme (running sums under AVX-512, here one per row; an OR of unordered lanes
// for all eight rows on AVX2); any sign of one sends each row to row_extreme. `next` as in
// sum_rows8_f32. The results go out as doubles (exact), as rows_by_eight_f32 hands them on.
template <bool IsMax>
void extreme_rows8_f32(const float* const* rows, int64_t n, double* out, const float* const* next = nullptr) {
  constexpr bool kSums = kNanBySums;
  const float init = IsMax ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  auto pick = [](f32x8 a, f32x8 b) { return IsMax ? (b > a ? b : a) : (b < a ? b : a); };
  f32x8 acc[8], sum[8];
  typedef int32_t i32x8 __attribute__((vector_size(32)));
  i32x8 bad = {};
  for (int r = 0; r < 8; ++r) {
    sum[r] = f32x8{};
    for (int k = 0; k < 8; ++k) acc[r][k] = init;
  }
  int64_t i = 0, end = n - n % 8;
  for (; i < end; i += 8) {
    for (int r = 0; r < 8; ++r) {
      f32x8 v;
      std::memcpy(&v, rows[r] + i, sizeof(v));
      acc[r] = pick(acc[r], v);
      if constexpr (kSums) sum[r] += v;
      else bad |= (v != v);
    }
    prefetch_next8(next, i);
  }
  f32x8 m = lane_reduce8(acc, pick);
  bool nan = false;
  if constexpr (kSums) {
    f32x8 s = lane_sums8(sum);
    for (int r = 0; r < 8; ++r) nan |= s[r] != s[r];
  } else {
    for (int k = 0; k < 8; ++k) nan |= bad[k] != 0;
  }
  for (int r = 0; r < 8; ++r) {
    float x = m[r];
    for (int64_t j = end; j < n; ++j) {
      float y = rows[r][j];
      x = IsMax ? (y > x ? y : x) : (y < x ? y : x);
      nan |= y != y;
    }
    out[r] = x;
  }
  if (nan)  // exact, row by row (a sum's NaN may come from inf + -inf)
    for (int r = 0; r < 8; ++r) out[r] = row_extreme<float, IsMax>(rows[r], n);
}

// Max/min of `count` rows of n floats, eight at a time (see rows_by_eight_f32).
template <bool IsMax, typename At, typename Put>
void extreme_rows_f32(int64_t count, int64_t n, At at, Put put) {
  rows_by_eight_f32(count, n, at, put, [](auto... a) { extreme_rows8_f32<IsMax>(a...); });
}

}  // namespace sx::cpu
