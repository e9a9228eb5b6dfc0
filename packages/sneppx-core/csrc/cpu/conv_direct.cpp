// Direct float32 convolution on the CPU (slot kern::conv_direct_fwd, ops/conv.h): no patch matrix.
//
// Output channels go in groups of kGroup vectors (V lanes each); output positions go in tiles of up to
// kMaxTile positions: of one output row where the rows are long enough to fill the tiles (the window
// rows that fall in the zero border are then skipped), else of the batch (a tile may run over several
// output rows and images, so maps of any width fill the tiles). For each input channel and tap, the
// tile's (up to kAcc) accumulators take one multiply-add of a broadcast input value with a weight vector:
// every weight vector loaded serves T positions and every input value kGroup V channels, which keeps
// the FMA units busy where one image's GEMM (M = out channels, N = positions) is too thin for BLAS's
// kernels. Padding is a zero border in a copy of the input, so the inner loop has no tests; class tiles,
// which read only the taps inside the input, read the input itself (no copy). Each output
// element is a blocked float32 sum: the input channels go in chunks (about 32 KiB of packed weights: 128
// terms a chunk on the AVX-512 build, 512 on the AVX2 one), each chunk's sum over (channel, tap) in that
// order with one FMA per term (but none for the skipped border terms), the chunks' sums added in order;
// the same whatever the thread count. One float sum over all the terms had 2-5 times PyTorch's RMS error
// against float64 on 1024 to 4608 terms (a DCGAN discriminator's layers); the blocks bring it to PyTorch's
// on the AVX-512 build and to 1.3-1.7 times it on the AVX2 one, whose chunks are four times longer.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <tuple>
#include <utility>
#include <vector>

#include "core/parallel.h"
#include "cpu/copy_run.h"
#include "cpu/transpose.h"
#include "ops/conv.h"

namespace sx::cpu {

namespace {

#if defined(__AVX512F__)
// 24 accumulators, the weight vectors and a broadcast of the 32 vector registers.
constexpr int V = 16, kGroup = 4, kAcc = 24;
#else
// 12 accumulators, the weight vectors and a broadcast of the 16.
constexpr int V = 8, kGroup = 2, kAcc = 12;
#endif
constexpr int kMaxTile = 12;  // positions of a tile: kAcc / (blocks in use), at most this many
typedef float vf __attribute__((vector_size(V * sizeof(float))));

// The kinds of tile (see tile): of one output row, across rows and images, of one border class.
enum class Tiles { Row, Across, Class };

// A tile of positions that share their window's taps inside the input (a border class: corner, edge or
// interior): positions [start, start + len) of the class order, taps of window rows [ky0, ky1) and
// columns [kx0, kx1).
struct ClassTile {
  int64_t start, len, ky0, ky1, kx0, kx1;
};

struct Direct {
  const float* xp;   // the input as (N, C, Hp, Wp): with its zero border, or (class tiles) the input itself
  const float* w;    // (Cout, C, kh, kw), or (C, Cout, kh, kw) flipped in space (`flipped`)
  bool flipped;
  bool skip_border = false;  // row tiles skip window rows in the zero border (every weight finite)
  const float* b;    // bias or null
  float* y;          // (N, Cout, oh, ow)
  int64_t C, Cout, Hp, Wp, L;
  int64_t bh = 0, bw = 0;  // the padding that xp lacks: (ph, pw) where it is the input itself, else 0
  const int64_t* taps;  // each tap's offset in a plane of xp, in window order (kh kw of them)
  const int64_t* order_in = nullptr;   // class tiles: the positions grouped by class, their window corners
  const int64_t* order_out = nullptr;  // and their output elements (of channel 0)
  const ClassTile* ctiles = nullptr;   // class tiles: each tile's positions and taps
  ConvGeom g;
};

// The taps [k0, k1) of a window along one dim whose output o starts at padded input o s + k d, of which
// [p, p + n) is the input: its window rows (or columns) inside the input.
std::pair<int64_t, int64_t> inside(int64_t o, int64_t s, int64_t d, int64_t k, int64_t p, int64_t n) {
  int64_t k0 = 0, k1 = k;
  while (k0 < k1 && o * s + k0 * d < p) ++k0;
  while (k1 > k0 && o * s + (k1 - 1) * d >= p + n) --k1;
  return {k0, k1};
}

inline vf load(const float* p) {
  vf v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// One tile: T output positions from flat position P0 of the batch's N * L, output channels of group q,
// whose first B blocks hold channels below Cout, summed over input channels [c0, c1) with the weights wq
// of those channels packed as (c1 - c0, kh, kw, kGroup V). A row tile lies in one output row of a
// convolution of column stride 1: its window corners are consecutive input elements (constant offsets
// from one pointer, no index per position), and the window rows that fall in the zero border are
// skipped when every weight is finite (their terms are then zeros). Other tiles may span rows and
// images. A tile sums the channels of one chunk from zero; the sums of the chunks before wait in `part`
// ((B, T, V) floats), which takes this chunk's sum while C is not reached, so that the weights of a few
// channels stay in L1 while every tile of a task goes over them. Class tiles (P0 is then the tile's index
// in d.ctiles) sum only the class's taps inside the input (they are made only while every weight is finite).
template <int T, int B, Tiles S>
void tile(const Direct& d, int64_t q, int64_t P0, int64_t c0, int64_t c1, const float* wq, float* part) {
  const ConvGeom& g = d.g;
  const int64_t plane = d.Hp * d.Wp, K = g.kh * g.kw;
  // Each position's window corner in the input and element in the output, stepping from P0's image
  // n and output row and column (oy, ox): one division per call instead of four per position.
  int64_t in[T], out[T];
  int64_t ky0 = 0, ky1 = g.kh, kx0 = 0, kx1 = g.kw;
  if constexpr (S == Tiles::Class) {
    const ClassTile& ct = d.ctiles[P0];  // made only while every weight is finite
    ky0 = ct.ky0, ky1 = ct.ky1, kx0 = ct.kx0, kx1 = ct.kx1;
    for (int t = 0; t < T; ++t) in[t] = d.order_in[ct.start + t], out[t] = d.order_out[ct.start + t];
  } else {
    int64_t n = P0 / d.L, p = P0 % d.L, oy = p / g.ow, ox = p % g.ow;
    if (S == Tiles::Row && d.skip_border)  // the window rows inside the input: a run of taps
      std::tie(ky0, ky1) = inside(oy, g.sh, g.dh, g.kh, g.ph, g.H);
    for (int t = 0; t < T; ++t) {
      in[t] = n * d.C * plane + oy * g.sh * d.Wp + ox * g.sw;
      out[t] = n * d.Cout * d.L + oy * g.ow + ox;
      if (++ox == g.ow) ox = 0, ++oy;
      if (oy == g.oh) oy = 0, ++n;
    }
  }
  vf acc[B][T];
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) acc[b][t] = vf{};
  for (int64_t c = c0; c < c1; ++c) {
    const float* xc = d.xp + c * plane + (S == Tiles::Row ? in[0] : 0);
    const float* wc = wq + (c - c0) * K * kGroup * V;
    // Taps [ka, kb) of the window, in order.
    auto taps = [&](int64_t ka, int64_t kb) __attribute__((always_inline)) {
      const float* wk = wc + ka * kGroup * V;
      for (int64_t k = ka; k < kb; ++k, wk += kGroup * V) {
        const float* r = xc + d.taps[k];
        vf wv[B];
        for (int b = 0; b < B; ++b) wv[b] = load(wk + b * V);
#pragma GCC unroll 16
        for (int t = 0; t < T; ++t) {
          float xv = S == Tiles::Row ? r[t] : r[in[t]];
#pragma GCC unroll 4
          for (int b = 0; b < B; ++b) acc[b][t] += xv * wv[b];
        }
      }
    };
    if (S != Tiles::Class || (kx0 == 0 && kx1 == g.kw)) taps(ky0 * g.kw, ky1 * g.kw);  // whole window rows: one loop
    else
      for (int64_t ky = ky0; ky < ky1; ++ky) taps(ky * g.kw + kx0, ky * g.kw + kx1);
  }
  if (c0)  // the sum of the chunks before
    for (int b = 0; b < B; ++b)
      for (int t = 0; t < T; ++t) acc[b][t] += load(part + (b * T + t) * V);
  if (c1 < d.C) {
    for (int b = 0; b < B; ++b)
      for (int t = 0; t < T; ++t) std::memcpy(part + (b * T + t) * V, &acc[b][t], sizeof(vf));
    return;
  }
  // Lanes are channels: the bias added a vector at a time, then transposed into the (Cout, L) rows of
  // the output.
  for (int b = 0; b < B; ++b) {
    int64_t co0 = (kGroup * q + b) * V, lanes = std::min<int64_t>(V, d.Cout - co0);
    if (d.b) {
      alignas(64) float bias[V] = {};
      std::copy(d.b + co0, d.b + co0 + lanes, bias);
      const vf bv = load(bias);
      for (int t = 0; t < T; ++t) acc[b][t] += bv;
    }
    for (int64_t l = 0; l < lanes; ++l) {
      float* y = d.y + (co0 + l) * d.L;
      for (int t = 0; t < T; ++t) y[S == Tiles::Row ? out[0] + t : out[t]] = acc[b][t][l];
    }
  }
}

template <int B, Tiles S>
void tile_any(const Direct& d, int64_t q, int64_t P0, int T, int64_t c0, int64_t c1, const float* wq, float* part) {
  switch (T) {
#define SX_TILE_CASE(t) \
  case t:               \
    if constexpr (t * B <= kAcc) return tile<t, B, S>(d, q, P0, c0, c1, wq, part);
    SX_TILE_CASE(1) SX_TILE_CASE(2) SX_TILE_CASE(3) SX_TILE_CASE(4) SX_TILE_CASE(5) SX_TILE_CASE(6)
    SX_TILE_CASE(7) SX_TILE_CASE(8) SX_TILE_CASE(9) SX_TILE_CASE(10) SX_TILE_CASE(11) SX_TILE_CASE(12)
#undef SX_TILE_CASE
    default: break;
  }
}

// The tile for the blocks of group q that hold channels.
template <Tiles S>
void tile_of_group(const Direct& d, int64_t q, int64_t P0, int T, int64_t c0, int64_t c1, const float* wq,
                   float* part) {
  int64_t blocks = std::min<int64_t>(kGroup, (d.Cout - kGroup * q * V + V - 1) / V);
  if constexpr (kGroup >= 4) {
    if (blocks == 3) return tile_any<3, S>(d, q, P0, T, c0, c1, wq, part);
    if (blocks == 4) return tile_any<4, S>(d, q, P0, T, c0, c1, wq, part);
  }
  if (blocks == 1) return tile_any<1, S>(d, q, P0, T, c0, c1, wq, part);
  tile_any<2, S>(d, q, P0, T, c0, c1, wq, part);
}

// Whether every float of [p, p + n) is neither infinite nor NaN (as the isfinite op tests it): v - v is 0
// for finite v and NaN otherwise, and a sum of those is 0 only when each is.
bool all_finite(const float* p, int64_t n) {
  typedef float f8 __attribute__((vector_size(32)));
  f8 acc = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    f8 v;
    std::memcpy(&v, p + i, sizeof v);
    acc += v - v;
  }
  float r = 0.0f;
  for (int k = 0; k < 8; ++k) r += acc[k];
  for (; i < n; ++i) r += p[i] - p[i];
  return r == 0.0f;
}

// The weights of group q for input channels [c0, c1) as (c1 - c0, kh, kw, kGroup V), zero past Cout: each
// output channel's run of kh kw weights per input channel spread over its lane, a transpose of the group's
// rows in 8 x 8 register blocks (scalar moves of 256-byte stride took 40% of a 2x2-map layer with 512
// channels). Flipped, the taps of each (input, output) channel pair go in reverse order: the same
// transposes, an input channel at a time. Returns whether every one of those weights is finite.
bool pack_weights(const Direct& d, int64_t q, int64_t c0, int64_t c1, float* dst) {
  constexpr int64_t G = kGroup * V;
  const int64_t K = d.g.kh * d.g.kw, n = d.C * K, lanes = std::min<int64_t>(G, d.Cout - q * G);
  if (!d.flipped) {
    const float* src = d.w + q * G * n + c0 * K;  // the group's rows, from channel c0
    transpose_tile<float>(reinterpret_cast<char*>(dst), G * int64_t(sizeof(float)),
                          reinterpret_cast<const char*>(src), n * int64_t(sizeof(float)), 0, (c1 - c0) * K, 0, lanes);
  } else {
    for (int64_t c = c0; c < c1; ++c) {
      const float* src = d.w + (c * d.Cout + q * G) * K;  // the group's rows for input channel c: one run
      // Tap k to row K - 1 - k: the transpose writes from the last row with a negative row step.
      transpose_tile<float>(reinterpret_cast<char*>(dst + ((c - c0) * K + K - 1) * G), -G * int64_t(sizeof(float)),
                            reinterpret_cast<const char*>(src), K * int64_t(sizeof(float)), 0, K, 0, lanes);
    }
  }
  const int64_t rows = (c1 - c0) * K;
  if (lanes < G)
    for (int64_t i = 0; i < rows; ++i) std::memset(dst + i * G + lanes, 0, size_t(G - lanes) * sizeof(float));
  return all_finite(dst, rows * G);
}

// Asks for the source of pack_weights(d, q, c0, c1): the group's rows are many short runs at a long
// stride, too many streams for the hardware prefetcher.
void prefetch_weights(const Direct& d, int64_t q, int64_t c0, int64_t c1) {
  constexpr int64_t G = kGroup * V;
  const int64_t K = d.g.kh * d.g.kw, n = d.C * K, lanes = std::min<int64_t>(G, d.Cout - q * G);
  auto lines = [](const float* p, int64_t len) {
    const char* c = reinterpret_cast<const char*>(p);
    for (int64_t b = 0; b < len * int64_t(sizeof(float)); b += 64) __builtin_prefetch(c + b);
    __builtin_prefetch(c + len * int64_t(sizeof(float)) - 1);
  };
  if (!d.flipped)
    for (int64_t l = 0; l < lanes; ++l) lines(d.w + (q * G + l) * n + c0 * K, (c1 - c0) * K);
  else
    for (int64_t c = c0; c < c1; ++c) lines(d.w + (c * d.Cout + q * G) * K, lanes * K);
}

// Class tiles, where the zero border holds at least 1/16 of the window terms of the map (else none): the
// batch's positions grouped by the window rows and columns they have inside the input (their window
// corners in `in`, as offsets into d.xp, which may lack the border: then a corner's offset is negative and
// only its taps inside are read; output elements in `out`), each class cut into tiles of at most tile_len
// positions of equal size (within one). At 1/8, (16, 128, 16, 16) into 256 channels by 4x4 windows of
// stride 2 (12% of the terms in the border) took 6.0 ms against 5.0 with class tiles, (16, 64, 14, 14) by
// 3x3 ones (9%) 1.31 against 1.26 (medians of 6 runs); at 1/32 a 7x7 stride-2 stem (5%) lost 4%.
void class_tiles(const Direct& d, int64_t tile_len, std::vector<int64_t>& in, std::vector<int64_t>& out,
                 std::vector<ClassTile>& tiles) {
  const ConvGeom& g = d.g;
  const int64_t L = d.L;
  // The classes along one dim: each distinct run of taps inside, with the outputs o that have it.
  struct Run {
    std::pair<int64_t, int64_t> taps;
    std::vector<int64_t> outs;
  };
  int64_t inside_terms[2] = {0, 0};
  auto runs_of = [&](int dim, int64_t outs, int64_t s, int64_t dl, int64_t k, int64_t p, int64_t n) {
    std::vector<Run> runs;
    for (int64_t o = 0; o < outs; ++o) {
      auto t = inside(o, s, dl, k, p, n);
      inside_terms[dim] += t.second - t.first;
      auto it = std::find_if(runs.begin(), runs.end(), [&](const Run& r) { return r.taps == t; });
      if (it == runs.end()) runs.push_back({t, {o}});
      else it->outs.push_back(o);
    }
    return runs;
  };
  const std::vector<Run> ys = runs_of(0, g.oh, g.sh, g.dh, g.kh, g.ph, g.H);
  const std::vector<Run> xs = runs_of(1, g.ow, g.sw, g.dw, g.kw, g.pw, g.W);
  if (16 * (L * g.kh * g.kw - inside_terms[0] * inside_terms[1]) < L * g.kh * g.kw) return;
  in.reserve(size_t(g.N * L)), out.reserve(size_t(g.N * L));
  for (const Run& cy : ys)
    for (const Run& cx : xs) {
      const int64_t start = int64_t(in.size());
      for (int64_t n = 0; n < g.N; ++n)
        for (int64_t oy : cy.outs)
          for (int64_t ox : cx.outs) {
            in.push_back(n * d.C * d.Hp * d.Wp + (oy * g.sh - d.bh) * d.Wp + ox * g.sw - d.bw);
            out.push_back(n * d.Cout * L + oy * g.ow + ox);
          }
      const int64_t cnt = int64_t(in.size()) - start, nt = (cnt + tile_len - 1) / tile_len;
      for (int64_t i = 0; i < nt; ++i)
        tiles.push_back({start + cnt * i / nt, cnt * (i + 1) / nt - cnt * i / nt, cy.taps.first, cy.taps.second,
                         cx.taps.first, cx.taps.second});
    }
}

void conv_direct_fwd(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y, const ConvGeom& g,
                     bool flipped) {
  Direct d;
  d.g = g;
  d.flipped = flipped;
  d.C = g.C, d.Cout = w->shape[flipped ? 1 : 0], d.L = g.oh * g.ow;
  const int64_t K = g.kh * g.kw, groups = (d.Cout + kGroup * V - 1) / (kGroup * V);
  const bool padded = g.ph || g.pw;
  const float* xs = x->data<float>();
  const float* ws = w->data<float>();
  // The input as the tiles read it: with its zero border (`pad`, when there is padding), made before the pool
  // runs the tiles, or the input itself (class tiles, which read only taps inside it).
  Tensor xpad;
  std::vector<int64_t> taps(static_cast<size_t>(K));
  auto layout = [&](bool pad) {
    if (pad && !xpad) {
      xpad = empty({g.N * g.C * (g.H + 2 * g.ph) * (g.W + 2 * g.pw)}, DType::Float32);
      float* xp = xpad->data<float>();
      const int64_t Wp = g.W + 2 * g.pw, plane = (g.H + 2 * g.ph) * Wp;
      parallel_for(g.N * g.C, std::max<int64_t>(1, 16384 / plane), [&](int64_t p0, int64_t p1) {
        for (int64_t p = p0; p < p1; ++p) {
          float* dst = xp + p * plane;
          const float* src = xs + p * g.H * g.W;
          std::memset(dst, 0, size_t(plane) * sizeof(float));  // the border: one call a plane
          for (int64_t i = 0; i < g.H; ++i)  // short rows: inline moves, not a library call per row
            copy_run(reinterpret_cast<char*>(dst + (g.ph + i) * Wp + g.pw),
                     reinterpret_cast<const char*>(src + i * g.W), size_t(g.W) * sizeof(float));
        }
      });
    }
    d.xp = pad ? xpad->data<float>() : xs;
    d.Hp = pad ? g.H + 2 * g.ph : g.H, d.Wp = pad ? g.W + 2 * g.pw : g.W;
    d.bh = pad ? 0 : g.ph, d.bw = pad ? 0 : g.pw;
    for (int64_t k = 0; k < K; ++k) taps[size_t(k)] = k / g.kw * g.dh * d.Wp + k % g.kw * g.dw;
  };
  d.w = ws;
  d.b = b ? b->data<float>() : nullptr;
  d.y = y->data<float>();
  d.taps = taps.data();
  constexpr int64_t kChunkBytes = 32768, kMaxRun = 64;  // tiles of a run: their partial sums take up to 96 KiB
  constexpr int64_t kPackedMax = int64_t(2) << 20;  // packed weights that stay in L2 (see fused)
  // Tiles as long as the first group's blocks leave accumulators for (a last group with fewer blocks
  // runs the same tiles).
  const int64_t blocks0 = std::min<int64_t>(kGroup, (d.Cout + V - 1) / V);
  const int64_t tile_len = std::min<int64_t>(kMaxTile, kAcc / blocks0);
  const int64_t P = g.N * d.L, per_row = (g.ow + tile_len - 1) / tile_len;
  // Row tiles when they are on average at least 7/8 full, or 2/3 full where the tiles are kMaxTile long
  // (tiles across rows keep so many window indices in memory, not registers).
  // Column stride 2 measured 10% slower in row tiles than across rows (a 7x7 stride-2 stem, 89% full).
  const bool rows = g.sw == 1 && (8 * g.ow >= 7 * per_row * tile_len ||
                                  (tile_len == kMaxTile && 3 * g.ow >= 2 * per_row * tile_len));
  const int64_t cc = std::max<int64_t>(1, kChunkBytes / (K * kGroup * V * int64_t(sizeof(float))));
  const int64_t wgroup = d.C * K * kGroup * V;
  // The tiles over the batch, skipping the zero border's terms (`skip`) or not; returns whether every
  // weight is finite. Tiles of equal size (within one): over each output row when the rows are long
  // enough to fill the tiles (row tiles, column stride 1; see tile); else, when skipping, over the
  // positions of each border class of the batch where the border holds at least 1/16 of the window terms
  // (class tiles: small maps); else over the batch's positions. A task is a run of tiles of one channel
  // group (as few runs as keep every thread busy, of at most kMaxRun tiles), which goes over the input
  // channels a chunk at a time: the chunk's packed weights (about kChunkBytes) stay in L1 while each of
  // its tiles reads them. Tasks of one group are in a row.
  auto run_tiles = [&](bool skip) {
    d.skip_border = skip;
    std::vector<int64_t> order_in, order_out;
    std::vector<ClassTile> ctiles;
    if (!rows && skip) {
      layout(false);
      class_tiles(d, tile_len, order_in, order_out, ctiles);
    }
    const bool classes = !ctiles.empty();
    if (!classes) layout(padded);
    d.order_in = order_in.data(), d.order_out = order_out.data(), d.ctiles = ctiles.data();
    const int64_t tiles = classes ? int64_t(ctiles.size())
                                  : rows ? g.N * g.oh * per_row : (P + tile_len - 1) / tile_len;
    // Tile j's first position (for class tiles: its index) and length.
    auto span = [&](int64_t j) {
      if (classes) return std::pair<int64_t, int>(j, int(ctiles[size_t(j)].len));
      if (!rows) return std::pair<int64_t, int>(P * j / tiles, int(P * (j + 1) / tiles - P * j / tiles));
      int64_t r = j / per_row, i = j % per_row, x0 = g.ow * i / per_row;
      return std::pair<int64_t, int>(r * g.ow + x0, int(g.ow * (i + 1) / per_row - x0));
    };
    const int64_t runs = std::clamp<int64_t>(std::max((4 * get_num_threads() + groups - 1) / groups,
                                                      (tiles + kMaxRun - 1) / kMaxRun), 1, tiles);
    const int64_t per_run = (tiles + runs - 1) / runs;
    // A task packs its group's weights a chunk at a time as it goes (asking for the next chunk's source
    // first) where no other task shares them, or one other task and the weights packed all at once would
    // not stay in L2 until the tiles read them: then they are read once and never stored to memory. On
    // the small maps of a CNN's deep layers, packing a 512-channel layer's 9.4 MB up front took 3.5 times
    // the tiles' time. More tasks a group pack it up front: (32, 256, 8, 8) into 256 channels, 6 tasks a
    // group, measured 4% slower packing as they went.
    const bool fused = runs == 1 || (runs == 2 && groups * wgroup * int64_t(sizeof(float)) > kPackedMax);
    Tensor wpack = fused ? Tensor() : empty({groups * wgroup}, DType::Float32);
    std::atomic<bool> finite{true};
    if (!fused)
      parallel_for(groups, 1, [&](int64_t q0, int64_t q1) {
        for (int64_t q = q0; q < q1; ++q)
          if (!pack_weights(d, q, 0, d.C, wpack->data<float>() + q * wgroup)) finite = false;
      });
    if (!fused && skip && !finite) return false;
    parallel_for(groups * runs, 1, [&](int64_t t0, int64_t t1) {
      thread_local std::vector<float> part, wbuf;
      part.resize(size_t(per_run * kAcc * V));
      if (fused) wbuf.resize(size_t(cc * K * kGroup * V));
      for (int64_t t = t0; t < t1; ++t) {
        int64_t q = t / runs, j0 = t % runs * per_run, j1 = std::min(tiles, j0 + per_run);
        if (fused) prefetch_weights(d, q, 0, std::min(d.C, cc));
        for (int64_t c0 = 0; c0 < d.C; c0 += cc) {
          int64_t c1 = std::min(d.C, c0 + cc);
          const float* wq = fused ? wbuf.data() : wpack->data<float>() + q * wgroup + c0 * K * kGroup * V;
          if (fused) {
            if (c1 < d.C) prefetch_weights(d, q, c1, std::min(d.C, c1 + cc));
            if (!pack_weights(d, q, c0, c1, wbuf.data())) finite = false;
          }
          for (int64_t j = j0; j < j1; ++j) {
            auto [p0, len] = span(j);
            float* pj = part.data() + (j - j0) * kAcc * V;
            if (classes) tile_of_group<Tiles::Class>(d, q, p0, len, c0, c1, wq, pj);
            else if (!rows) tile_of_group<Tiles::Across>(d, q, p0, len, c0, c1, wq, pj);
            else tile_of_group<Tiles::Row>(d, q, p0, len, c0, c1, wq, pj);
          }
        }
      }
    });
    return finite.load();
  };
  // Border terms are skipped only when every weight is finite: a border term 0 * inf or 0 * NaN is NaN,
  // which the output must then get. That is known once the weights are packed: where a weight is not
  // finite, the convolution runs again without skipping (which writes every output again).
  if (!run_tiles(true)) run_tiles(false);
}

// The weight gradient of a convolution with few output channels and column stride 1 (conv_wgrad_few):
// gw[co, c, ky, kx] = sum over n, oy, ox of gy[n, co, oy, ox] xp[n, c, oy sh + ky dh, ox + kx dw], xp the
// input with its zero border. The accumulators are vectors over V output columns, for CB output channels
// by NK taps of a window row: each input vector loaded serves CB channels, each gy vector the NK taps.
#if defined(__AVX512F__)
constexpr int kWgradAcc = 24;
#else
constexpr int kWgradAcc = 10;
#endif
constexpr int kMaxTaps = 12;  // taps of a window row in one pass
typedef int32_t vi __attribute__((vector_size(V * sizeof(int32_t))));

// The multiply-adds of output columns [ox, ox + V) of one row (gy's in gr, channels Lp apart; the window
// row's input in x). gy's rows are whole vectors, zeros past ow; in the last vector of a row (Tail) the
// input's lanes past ow are masked off too: they are the next row's or the plane's slack, and a value
// there that is not finite would make its zero product NaN.
template <int CB, int NK, bool Tail>
inline __attribute__((always_inline)) void wgrad_step(vf (&acc)[CB][NK], const float* gr, int64_t Lp,
                                                      const float* x, int64_t dw, int64_t ox, vi keep) {
  vf gv[CB];
  for (int c = 0; c < CB; ++c) {
    vf v = load(gr + c * Lp + ox);
    __asm__("" : "+v"(v));  // in a register, loaded once (see xv)
    gv[c] = v;
  }
#pragma GCC unroll 12
  for (int k = 0; k < NK; ++k) {
    vf xv = load(x + ox + k * dw);
    __asm__("" : "+v"(xv));  // in a register: folded into each multiply-add, it was loaded CB times
    if constexpr (Tail) xv = keep ? xv : vf{};
#pragma GCC unroll 4
    for (int c = 0; c < CB; ++c) acc[c][k] += gv[c] * xv;
  }
}

// One image's sums for output channels [co0, co0 + CB) (gy: channel co0's plane, rows of owp floats) and
// NK taps of one window row from kx0 (xr: the padded plane's row of that window row at output row 0), a
// vector of V partial sums each, added to out[(co - co0) * ostride + kx - kx0] (64-byte aligned, as the
// allocator's blocks are).
template <int CB, int NK>
void wgrad_taps(const float* gy, int64_t owp, const float* xr, int64_t Wp, const ConvGeom& g, int64_t kx0,
                vf* out, int64_t ostride) {
  vf acc[CB][NK];
  for (int c = 0; c < CB; ++c)
    for (int k = 0; k < NK; ++k) acc[c][k] = vf{};
  const int64_t Lp = g.oh * owp, full = g.ow / V * V;
  vi keep;
  for (int i = 0; i < V; ++i) keep[i] = full + i < g.ow ? -1 : 0;
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    const float* x = xr + oy * g.sh * Wp + kx0 * g.dw;
    const float* gr = gy + oy * owp;
    for (int64_t ox = 0; ox < full; ox += V) wgrad_step<CB, NK, false>(acc, gr, Lp, x, g.dw, ox, keep);
    if (full < g.ow) wgrad_step<CB, NK, true>(acc, gr, Lp, x, g.dw, full, keep);
  }
  for (int c = 0; c < CB; ++c)
    for (int k = 0; k < NK; ++k) out[c * ostride + k] += acc[c][k];
}

// wgrad_taps for CB channels by 1 to taps_of(CB) taps, indexed by the tap count less one.
constexpr int taps_of(int cb) { return std::min(kMaxTaps, kWgradAcc / cb); }
using TapsFn = void (*)(const float*, int64_t, const float*, int64_t, const ConvGeom&, int64_t, vf*, int64_t);
template <int CB, int... I> constexpr std::array<TapsFn, sizeof...(I)> taps_fns(std::integer_sequence<int, I...>) {
  return {&wgrad_taps<CB, I + 1>...};
}
template <int CB> constexpr auto kTapsFns = taps_fns<CB>(std::make_integer_sequence<int, taps_of(CB)>());

// The taps of every window row for output channels [co0, co0 + CB), in near-equal blocks.
template <int CB>
void wgrad_channels(const float* gy, int64_t owp, const float* xp, int64_t Wp, const ConvGeom& g, vf* out,
                    int64_t ostride) {
  const int64_t blocks = (g.kw + taps_of(CB) - 1) / taps_of(CB);
  for (int64_t ky = 0; ky < g.kh; ++ky)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t k0 = g.kw * b / blocks, k1 = g.kw * (b + 1) / blocks;
      kTapsFns<CB>[size_t(k1 - k0 - 1)](gy, owp, xp + ky * g.dh * Wp, Wp, g, k0, out + ky * g.kw + k0, ostride);
    }
}

}  // namespace

void conv_wgrad_few(const float* gy, const float* x, float* gw, const ConvGeom& g, int64_t Cout) {
  const int64_t K = g.kh * g.kw, owp = (g.ow + V - 1) / V * V, Lp = g.oh * owp;
  const int64_t Hp = std::max(g.H + g.ph, (g.oh - 1) * g.sh + (g.kh - 1) * g.dh + 1);
  const int64_t Wp = std::max(g.W + g.pw, g.ow + (g.kw - 1) * g.dw), plane = Hp * Wp + V;  // V: slack for the tail
  const int64_t tasks = std::min<int64_t>(g.C, 16), cblocks = (Cout + 3) / 4;
  // Scratch before the pool runs: gy with its rows padded to whole vectors (unless they are), each task's
  // padded input plane and its channel's vectors of partial sums.
  Tensor gyp = owp == g.ow ? Tensor() : empty({g.N * Cout * Lp}, DType::Float32);
  Tensor planes = empty({tasks * plane}, DType::Float32), sums = empty({tasks * Cout * K * V}, DType::Float32);
  if (gyp) {
    float* dst = gyp->data<float>();
    parallel_for(g.N * Cout * g.oh, std::max<int64_t>(1, 16384 / owp), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        std::memcpy(dst + r * owp, gy + r * g.ow, size_t(g.ow) * sizeof(float));
        std::fill(dst + r * owp + g.ow, dst + (r + 1) * owp, 0.0f);
      }
    });
  }
  const float* gys = gyp ? gyp->data<float>() : gy;
  parallel_for(tasks, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      float* xp = planes->data<float>() + t * plane;
      vf* acc = reinterpret_cast<vf*>(sums->data<float>()) + t * Cout * K;
      std::memset(xp, 0, size_t(plane) * sizeof(float));  // the border stays zero: only the inside is copied
      for (int64_t c = g.C * t / tasks; c < g.C * (t + 1) / tasks; ++c) {
        std::fill(acc, acc + Cout * K, vf{});
        for (int64_t n = 0; n < g.N; ++n) {
          const float* src = x + (n * g.C + c) * g.H * g.W;
          for (int64_t i = 0; i < g.H; ++i)
            copy_run(reinterpret_cast<char*>(xp + (g.ph + i) * Wp + g.pw),
                     reinterpret_cast<const char*>(src + i * g.W), size_t(g.W) * sizeof(float));
          for (int64_t b = 0; b < cblocks; ++b) {  // output channels in near-equal blocks of up to 4
            const int64_t co0 = Cout * b / cblocks, nc = Cout * (b + 1) / cblocks - co0;
            const float* gyb = gys + (n * Cout + co0) * Lp;
            vf* out = acc + co0 * K;
            if (nc == 4) wgrad_channels<4>(gyb, owp, xp, Wp, g, out, K);
            else if (nc == 3) wgrad_channels<3>(gyb, owp, xp, Wp, g, out, K);
            else if (nc == 2) wgrad_channels<2>(gyb, owp, xp, Wp, g, out, K);
            else wgrad_channels<1>(gyb, owp, xp, Wp, g, out, K);
          }
        }
        for (int64_t co = 0; co < Cout; ++co)
          for (int64_t k = 0; k < K; ++k) {  // the lanes summed in double
            double s = 0;
            for (int i = 0; i < V; ++i) s += double(acc[co * K + k][i]);
            gw[(co * g.C + c) * K + k] = float(s);
          }
      }
    }
  });
}

SX_REGISTER_KERNEL(kern::conv_direct_fwd, CPU, &conv_direct_fwd);

}  // namespace sx::cpu
