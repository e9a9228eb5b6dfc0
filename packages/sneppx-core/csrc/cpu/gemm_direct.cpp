// A float32 GEMM kernel that reads its operands in place, for the AVX-512 build:
// C = op(A) @ op(B) + beta C. BLAS packs both operands into its own layout on every call; for the
// small and medium products of a batched matmul (a few hundred rows and columns, K up to a few
// hundred) that copy costs a fifth of the arithmetic. Here a block of 6 rows of C by up to 64
// columns lives in 24 vector registers: each k loads the 64 floats of B's row k once (from B
// itself, the last vector of a narrower panel masked) and broadcasts the 6 values A(i, k) from A
// itself. K is cut into blocks of kBlockK so that a panel of B (kBlockK x 64 floats, 32 KiB) stays
// in L1 while the row blocks pass over it, and the rows in chunks of kChunkM so that theirs of A stay
// in L2 while the panels pass over them. A B stored transposed ((N, K), as a linear layer's weight
// or attention's keys) is copied: each panel once per K block, transposed 16 x 16 in registers; so is
// a B whose rows lie a multiple of 1 KiB apart (see gemm_direct). gemm_direct_fits keeps the kernel
// to the sizes where it measured faster than OpenBLAS's SkylakeX kernels, the rest going to BLAS;
// where OpenBLAS runs AVX2 kernels instead (its CPU detection, or OPENBLAS_CORETYPE, chose them), to
// every product of 32 rows or more and every product of 16-47 columns with 16 rows or more.
#include "cpu/blas.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "core/error.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace sx {

#if defined(__AVX512F__)
namespace {
constexpr int W = 16;             // floats per vector
constexpr int MR = 6;             // rows of C per block
constexpr int kPanel = 4 * W;     // columns of C per block
constexpr int64_t kBlockK = 128;  // k per pass over C
constexpr int64_t kChunkM = 384;  // rows of A per pass over B's panels (see gemm_direct)
typedef float V __attribute__((vector_size(W * sizeof(float))));

// The mask of the first n lanes, 1 <= n <= W.
inline __mmask16 first_lanes(int n) { return __mmask16(n == W ? 0xFFFF : (1u << n) - 1); }
// The floats of p in the lanes set in `lanes` (a masked load: nothing else is read), the rest zero.
inline V load(const float* p, __mmask16 lanes = 0xFFFF) { return V(_mm512_maskz_loadu_ps(lanes, p)); }
inline void put(float* p, V v) { std::memcpy(p, &v, sizeof v); }  // v by value: acc stays in registers
inline void store(float* p, V v, __mmask16 lanes = 0xFFFF) { _mm512_mask_storeu_ps(p, lanes, __m512(v)); }

// C block (rows x w, rows <= MR, (NV - 1) W < w <= NV W) = first ? beta C + S : C + S, where
// S = sum_{k < K} A(r, k) B(k, :), A(r, k) = a[r * sar + k * sak], B(k, :) = b + k * ldb. The last
// vector of each row of B and C is masked to the block's width (none of the columns past it is read or
// written); rows past `rows` read the last row again and their sums are dropped.
template <int NV>
void block(int64_t K, const float* a, int64_t sar, int64_t sak, const float* b, int64_t ldb, float* c, int64_t ldc,
           int rows, int w, bool first, float beta) {
  const __mmask16 last = first_lanes(w - (NV - 1) * W);
  const float* ar[MR];
  for (int r = 0; r < MR; ++r) ar[r] = a + std::min(r, rows - 1) * sar;
  for (int r = 0; r < rows; ++r)  // C's block is read after the K loop: ask for it now
    for (int v = 0; v < NV; ++v) _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + v * W), _MM_HINT_T0);
  V acc[MR][NV];
  for (auto& row : acc)
    for (auto& v : row) v = V{};
  for (int64_t k = 0; k < K; ++k) {
    V bv[NV];
    for (int v = 0; v < NV; ++v) bv[v] = load(b + k * ldb + v * W, v == NV - 1 ? last : 0xFFFF);
    for (int r = 0; r < MR; ++r) {
      const float x = ar[r][k * sak];
      for (int v = 0; v < NV; ++v) acc[r][v] += bv[v] * x;
    }
  }
  // Out of the registers first, by constant indices: an epilogue indexing acc by a row up to `rows`
  // made the compiler keep acc in memory, stored on every k.
  alignas(64) float out[MR][NV * W];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) put(out[r] + v * W, acc[r][v]);
  const float scale = first ? beta : 1.0f;  // what C's old value is multiplied by
  for (int r = 0; r < rows; ++r)
    for (int v = 0; v < NV; ++v) {
      float* cv = c + r * ldc + v * W;
      const __mmask16 m = v == NV - 1 ? last : 0xFFFF;
      const V o = load(out[r] + v * W);
      store(cv, scale == 0.0f ? o : o + load(cv, m) * scale, m);
    }
}

// Swaps the off-diagonal S x S blocks of rows a and c = a + S (lane l of a takes c's lane l - S where
// l & S, lane l of c takes a's lane l + S where not): done for S = 8, 4, 2, 1 over every such pair of
// 16 rows of 16 floats, it transposes them (a block transpose, recursively).
template <int S, size_t... L> void swap_blocks(V& a, V& c, std::index_sequence<L...>) {
  const V x = __builtin_shufflevector(a, c, ((L & S) ? W + L - S : L)...);
  c = __builtin_shufflevector(a, c, ((L & S) ? W + L : L + S)...);
  a = x;
}
template <int S> void transpose_stage(V (&r)[W]) {
  for (int a = 0; a < W; ++a)
    if (!(a & S)) swap_blocks<S>(r[a], r[a + S], std::make_index_sequence<W>());
}

// For B stored (N, K) (op(B) = B^T): packs columns [j0, j0 + w) of op(B) over k in [k0, k0 + kb) into
// p[k * kPanel + j], 16 x 16 tiles transposed in registers (tiles past w repeat B's last row; their
// lanes are never read, block masks them).
void pack_transposed(const float* B, int64_t ldb, int64_t N, int64_t j0, int w, int64_t k0, int64_t kb, float* p) {
  for (int g = 0; g < w; g += W) {
    const float* rows[W];
    for (int i = 0; i < W; ++i) rows[i] = B + std::min<int64_t>(j0 + g + i, N - 1) * ldb + k0;
    for (int64_t k = 0; k < kb; k += W) {
      const int n = int(std::min<int64_t>(W, kb - k));
      const __mmask16 m = first_lanes(n);
      V r[W];
      for (int i = 0; i < W; ++i) r[i] = load(rows[i] + k, m);
      transpose_stage<8>(r);
      transpose_stage<4>(r);
      transpose_stage<2>(r);
      transpose_stage<1>(r);
      for (int i = 0; i < n; ++i) put(p + (k + i) * kPanel + g, r[i]);
    }
  }
}
}  // namespace

// The name of the kernel set OpenBLAS (scipy-openblas32) loaded with.
extern "C" char* scipy_openblas_get_corename(void);

// Whether OpenBLAS runs its AVX-512 kernels.
static bool blas_avx512() {
  static const bool avx512 = [] {
    const char* name = scipy_openblas_get_corename();
    std::string n = name ? name : "";
    return n == "SkylakeX" || n == "Cooperlake" || n == "SapphireRapids";
  }();
  return avx512;
}

bool gemm_direct_fits(bool ta, bool tb, int64_t M, int64_t N, int64_t K) {
  // Either operand transposed or not. Measured against OpenBLAS's AVX2 kernels (Haswell, which its CPU
  // detection or OPENBLAS_CORETYPE chooses on some AVX-512 machines) at 2 threads, interleaved with PyTorch: 1.2-2.1x
  // for every product tried with 32 rows or more (512^3 440 against 119-201 GFLOP/s, 2048^3 278 against
  // 225, 4096^3 308 against 234; a linear layer's 512 x 3072 x 768 with B transposed 325 against 211),
  // but 0.86x for 16 rows of a 4096 x 4096 transposed B (its packing costs as much as the product).
  // Narrow products (16-47 columns: attention's weights times values with heads of 32, small linear
  // layers) 1.2-3.8x from 16 rows on, K up to 4096 and B transposed or not (a batch of 32 x 32 x 32
  // products 24.7 -> 12.3 us, 512 x 256 x 32 44 -> 20 us, 16 x 4096 x 32 with B transposed 60 -> 16 us):
  // there BLAS's packing outweighs the arithmetic.
  if (!blas_avx512() && K >= 16 && ((M >= 32 && N >= 48) || (M >= 16 && N >= 16 && N < 48))) return true;
  // Against the SkylakeX kernels, on one core (sizes M x N x K, medians of interleaved runs): 1.2-1.3x for
  // K <= 128 (128 x 128 x 64, 90 x 150 x 120, 36 x 60 x 48, 32 x 256 x 288 batched), 1.0-1.1x at K = 256-300.
  // On an Intel Xeon with 2 MiB of L2 a core, with the rows taken in chunks (see gemm_direct): 1.05x at K up to
  // 512 (512^3 147 -> 156 GFLOP/s, 256 x 512 x 512 145 -> 153), and beyond up to 256 rows, 1.05-1.12x
  // (256 x 256 x 1024 136 -> 152, 256 x 256 x 4096 130 -> 145, 128 x 1024 x 2048 123 -> 136); but past
  // K = 512 0.95x from 444 rows on (at 2 threads 888 x 592 x 1184 300 -> 287, 1024^3 297 -> 282), and past 2^28
  // multiply-adds (4096 x 2048 x 512 at 2 threads 305-309 -> 281-291). With B transposed (attention's
  // scores, x @ W^T) 1.05-2.0x at any K up to 2^28 multiply-adds (32 x 32 x 32 54 -> 101 GFLOP/s,
  // 128 x 128 x 32 97 -> 141, 128 x 256 x 1024 125 -> 150, 256 x 768 x 768 148 -> 159, 256 x 1024 x 1024
  // 141 -> 148), but 0.94x at 256 x 3072 x 768.
  // Narrow products (16-47 columns) 1.2-1.3x from K = 256 on (512 x 32 x 256 111 -> 145), 0.8-0.9x
  // below (32 x 32 x 32 137 -> 115).
  if (M < 16 || N < 16 || K < 16) return false;
  const double work = double(M) * double(N) * double(K);
  if (tb) return work <= double(1 << 28);
  if (N < 48) return work <= double(1 << 26) && K >= 256;
  // A stored transposed (a weight gradient's gy^T) has the 6 values of one k a row of A apart, so the K
  // values a block reads share few L1 sets; past the limits below it measured 0.87-0.97x (at 2 threads
  // 2048 x 512 x 512 279-296 -> 255 GFLOP/s, 1536 x 512 x 512 296 -> 266, 1024 x 512 x 256 273 -> 266).
  if (ta) return work <= double(1 << 26) && K <= 320;
  return work <= double(1 << 28) && (K <= 512 || M <= 256);
}

void gemm_direct(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
                 int64_t ldb, float beta, float* C, int64_t ldc) {
  const int64_t sar = ta ? 1 : lda, sak = ta ? lda : 1;
  // Tall products in chunks of kChunkM rows where K takes several blocks: a chunk's rows of C and of A for
  // one K block (384 x 128 floats, 192 KiB) stay in L2 from one K block to the next and while the column
  // panels pass over them. With every row at once, they came from L3 again for each block: on one core
  // 4096 x 256 x 256 with B transposed 131-137 -> 157 GFLOP/s, 2048 x 256 x 512 137 -> 156; at 2 threads
  // 4096 x 256 x 256 273-274 -> 299-307. Each chunk packs B again, which cost 1-3% where the rows fit L2
  // without chunks (512-767 rows; a transposed convolution's 512 x 128 x 256 weight gradient per task) or
  // where one K block leaves nothing to keep (its forward, 1024 x 256 x 128 per image).
  if (M >= 2 * kChunkM && K > kBlockK) {
    for (int64_t i0 = 0; i0 < M; i0 += kChunkM)
      gemm_direct(ta, tb, std::min(kChunkM, M - i0), N, K, A + i0 * sar, lda, B, ldb, beta, C + i0 * ldc, ldc);
    return;
  }
  alignas(64) float packed[kBlockK * kPanel];  // a panel of op(B) when B is stored transposed
  for (int64_t k0 = 0; k0 < K; k0 += kBlockK) {
    const int64_t kb = std::min(kBlockK, K - k0);
    const float* a = A + k0 * sak;
    for (int64_t j0 = 0; j0 < N; j0 += kPanel) {
      const int w = int(std::min<int64_t>(kPanel, N - j0));
      const float* b = B + k0 * ldb + j0;
      int64_t lb = ldb;
      if (tb) {
        pack_transposed(B, ldb, N, j0, w, k0, kb, packed);
        b = packed;
        lb = kPanel;
      } else if (M >= 128 && ldb % 256 == 0) {
        // Rows of B a multiple of 1 KiB apart fall in a quarter of L1's sets, which the panel's 128 rows
        // overflow: copied side by side, they stay in L1 (on one core 256^3 137 -> 150-155 GFLOP/s,
        // 1024^3 92 -> 124). Other row lengths, or fewer rows of A to share the copy (32 x 256 x 288:
        // 124 -> 94, 64 x 256 x 288 134 -> 123), measured as fast or faster without it.
        for (int64_t k = 0; k < kb; ++k) std::memcpy(packed + k * kPanel, b + k * ldb, size_t(w) * sizeof(float));
        b = packed;
        lb = kPanel;
      }
      for (int64_t i0 = 0; i0 < M; i0 += MR) {
        const int rows = int(std::min<int64_t>(MR, M - i0));
        const float* ai = a + i0 * sar;
        float* c = C + i0 * ldc + j0;
        switch ((w + W - 1) / W) {
          case 4: block<4>(kb, ai, sar, sak, b, lb, c, ldc, rows, w, k0 == 0, beta); break;
          case 3: block<3>(kb, ai, sar, sak, b, lb, c, ldc, rows, w, k0 == 0, beta); break;
          case 2: block<2>(kb, ai, sar, sak, b, lb, c, ldc, rows, w, k0 == 0, beta); break;
          default: block<1>(kb, ai, sar, sak, b, lb, c, ldc, rows, w, k0 == 0, beta);
        }
      }
    }
  }
}
#else
bool gemm_direct_fits(bool, bool, int64_t, int64_t, int64_t) { return false; }  // BLAS everywhere
void gemm_direct(bool, bool, int64_t, int64_t, int64_t, const float*, int64_t, const float*, int64_t, float, float*,
                 int64_t) {
  throw RuntimeError("[matmul] the direct float32 kernel is only built for AVX-512");
}
#endif

}  // namespace sx
