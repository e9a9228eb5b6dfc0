// The Fourier transform kernel on the CPU (kern::fft, ops/fft.h), on the plans of cpu/fft_plan.h.
//
// The batch (every index but the transformed dim's) is cut into blocks of L transforms (one 256-bit vector
// of lanes); each block is gathered lane-wise into a buffer, transformed there and scattered to out, the
// blocks split over the thread pool. A real transform of even n runs as a complex one of n / 2 points (the
// even samples as real parts, the odd ones as imaginary parts) with one pass that separates the two.
#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "cpu/fft_plan.h"
#include "cpu/transpose.h"
#include "ops/fft.h"

namespace sx::cpu {
namespace {
using fft::Cx;
using fft::Plan;

// The plans of the lengths used last (at most 32 per precision), shared by the calls.
template <typename T> std::shared_ptr<const Plan<T>> plan_for(int64_t n) {
  static std::mutex mu;
  static std::map<int64_t, std::shared_ptr<const Plan<T>>> plans;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = plans.find(n); it != plans.end()) return it->second;
  }
  auto p = fft::make_plan<T>(n);
  std::lock_guard<std::mutex> lock(mu);
  if (plans.size() >= 32) plans.clear();
  plans.emplace(n, p);
  return p;
}

template <typename V, typename T> inline void set(V& v, int l, T x) {
  if constexpr (std::is_same_v<V, T>) v = x;
  else v[l] = x;
}
template <typename V> inline auto get(const V& v, int l) {
  if constexpr (std::is_arithmetic_v<V>) return v;
  else return v[l];
}

// Where the L lanes' points are in memory: lane l's point k is (re, im) at base + off[l] + k * step and
// + gap (complex data: gap 1; a real signal read or written as pairs of samples: gap = the samples' step).
// lane_step: off[l] = off[0] + l * lane_step for every one of the L lanes (0 where they are not so).
template <typename T, int L> struct Side {
  T* base;
  int64_t off[L], step, gap, lane_step;
  int lanes;  // lanes from this one on are padding: zeros in, nothing out

  void set_lane_step() {
    lane_step = lanes == L && L > 1 ? off[1] - off[0] : 0;
    for (int l = 2; l < L && lane_step; ++l)
      if (off[l] != off[0] + l * lane_step) lane_step = 0;
  }
};

template <typename V, typename T> inline V loadu(const T* p) {
  V v;
  std::memcpy(&v, p, sizeof(V));
  return v;
}
template <typename V, typename T> inline void storeu(T* p, const V& v) { std::memcpy(p, &v, sizeof(V)); }

// a[k] = the lanes' points k < count. Three layouts move as whole vectors: points adjacent in each lane
// (L x L register transposes of L / 2 points of L lanes), complex lanes adjacent (two loads, split into
// real and imaginary parts) and real parts adjacent (one load each); others one value at a time.
template <typename T, int L, typename V> void gather(const Side<const T, L>& s, Cx<V>* a, int64_t count) {
  int64_t k = 0;
  if constexpr (L > 1) {
    if (s.step == 2 && s.gap == 1) {
      for (; k + L / 2 <= count; k += L / 2) {
        V m[L];
        for (int l = 0; l < L; ++l) m[l] = l < s.lanes ? loadu<V>(s.base + s.off[l] + 2 * k) : V{};
        transpose_regs(m);
        for (int j = 0; j < L / 2; ++j) a[k + j].re = m[2 * j], a[k + j].im = m[2 * j + 1];
      }
    } else if (s.lane_step == 2 && s.gap == 1) {
      for (; k < count; ++k) {
        const V v0 = loadu<V>(s.base + s.off[0] + k * s.step), v1 = loadu<V>(s.base + s.off[0] + k * s.step + L);
        if constexpr (L == 8) {
          a[k].re = __builtin_shufflevector(v0, v1, 0, 2, 4, 6, 8, 10, 12, 14);
          a[k].im = __builtin_shufflevector(v0, v1, 1, 3, 5, 7, 9, 11, 13, 15);
        } else {
          a[k].re = __builtin_shufflevector(v0, v1, 0, 2, 4, 6);
          a[k].im = __builtin_shufflevector(v0, v1, 1, 3, 5, 7);
        }
      }
    } else if (s.lane_step == 1) {
      for (; k < count; ++k)
        a[k] = {loadu<V>(s.base + s.off[0] + k * s.step), loadu<V>(s.base + s.off[0] + k * s.step + s.gap)};
    }
  }
  for (int l = 0; l < L; ++l)
    for (int64_t j = k; j < count; ++j) {
      const T* p = s.base + s.off[l] + j * s.step;
      set(a[j].re, l, l < s.lanes ? p[0] : T(0));
      set(a[j].im, l, l < s.lanes ? p[s.gap] : T(0));
    }
}

// The lanes' points k < count = r[k] * scale (gather's layouts, the other way; points adjacent in each lane
// are written two register blocks at a time: whole cache lines of each lane).
template <typename T, int L, typename V> void scatter(const Side<T, L>& s, const Cx<V>* r, int64_t count, T scale) {
  int64_t k = 0;
  if constexpr (L > 1) {
    if (s.step == 2 && s.gap == 1) {
      auto block = [&](int64_t k0, V* m) {  // m[l] = lane l's points k0 .. k0 + L / 2
        for (int j = 0; j < L / 2; ++j) m[2 * j] = r[k0 + j].re * scale, m[2 * j + 1] = r[k0 + j].im * scale;
        transpose_regs(m);
      };
      for (; k + L <= count; k += L) {
        V m[L], q[L];
        block(k, m);
        block(k + L / 2, q);
        for (int l = 0; l < s.lanes; ++l) {
          storeu(s.base + s.off[l] + 2 * k, m[l]);
          storeu(s.base + s.off[l] + 2 * k + L, q[l]);
        }
      }
      for (; k + L / 2 <= count; k += L / 2) {
        V m[L];
        block(k, m);
        for (int l = 0; l < s.lanes; ++l) storeu(s.base + s.off[l] + 2 * k, m[l]);
      }
    } else if (s.lane_step == 2 && s.gap == 1) {
      for (; k < count; ++k) {
        const V re = r[k].re * scale, im = r[k].im * scale;
        if constexpr (L == 8) {
          storeu(s.base + s.off[0] + k * s.step, V(__builtin_shufflevector(re, im, 0, 8, 1, 9, 2, 10, 3, 11)));
          storeu(s.base + s.off[0] + k * s.step + L, V(__builtin_shufflevector(re, im, 4, 12, 5, 13, 6, 14, 7, 15)));
        } else {
          storeu(s.base + s.off[0] + k * s.step, V(__builtin_shufflevector(re, im, 0, 4, 1, 5)));
          storeu(s.base + s.off[0] + k * s.step + L, V(__builtin_shufflevector(re, im, 2, 6, 3, 7)));
        }
      }
    } else if (s.lane_step == 1) {
      for (; k < count; ++k) {
        storeu(s.base + s.off[0] + k * s.step, V(r[k].re * scale));
        storeu(s.base + s.off[0] + k * s.step + s.gap, V(r[k].im * scale));
      }
    }
  }
  for (int l = 0; l < s.lanes; ++l)
    for (int64_t j = k; j < count; ++j) {
      T* p = s.base + s.off[l] + j * s.step;
      p[0] = get(r[j].re, l) * scale;
      p[s.gap] = get(r[j].im, l) * scale;
    }
}

// One block of L transforms from `in` to `out` (as pairs: complex points, or real samples two by two); a and b
// are the two buffers.
template <typename T, int L> struct Block {
  using V = typename fft::Lanes<T, L>::type;
  Side<const T, L> in;
  Side<T, L> out;
  T scale;

  void c2c(const Plan<T>& p, bool inverse, Cx<V>* a, Cx<V>* b) const {
    gather(in, a, p.n);
    scatter(out, inverse ? fft::run<true>(p, a, b) : fft::run<false>(p, a, b), p.n, scale);
  }

  // Real input of n points. Even n: z_k = x_2k + i x_2k+1 (h = n / 2 points), Z = fft(z); the transforms of the
  // even and the odd samples are E_k = (Z_k + conj Z_h-k) / 2 and O_k = (Z_k - conj Z_h-k) / 2i, and
  // X_k = E_k + e^{-2 pi i k / n} O_k for k <= h. Odd n: a complex transform of n points.
  void r2c(const Plan<T>& p, int64_t n, Cx<V>* a, Cx<V>* b) const {
    if (n % 2) {
      for (int l = 0; l < L; ++l)
        for (int64_t k = 0; k < n; ++k) {
          set(a[k].re, l, l < in.lanes ? in.base[in.off[l] + k * in.gap] : T(0));
          set(a[k].im, l, T(0));
        }
      scatter(out, fft::run<false>(p, a, b), n / 2 + 1, scale);
      return;
    }
    const int64_t h = n / 2;
    gather(in, a, h);
    const Cx<V>* z = fft::run<false>(p, a, b);
    Cx<V>* o = z == a ? b : a;
    for (int64_t k = 0; k <= h; ++k) {
      const Cx<V> zk = z[k < h ? k : 0], zc = fft::conj(z[k > 0 ? h - k : 0]);
      const Cx<V> e = zk + zc, d = fft::quarter<false>(zk - zc);  // 2 E_k, 2 O_k
      const Cx<V> t = fft::rotate(d, p.hr[k], p.hi[k]);
      o[k] = {(e.re + t.re) * T(0.5), (e.im + t.im) * T(0.5)};
    }
    scatter(out, o, h + 1, scale);
  }

  // The inverse of r2c. Even n: Z_k = 2 E_k + 2i O_k from X_k and conj X_h-k, z = ifft(Z) holds the even samples
  // (real parts) and the odd ones (imaginary parts), times n. Odd n: the whole Hermitian spectrum, a complex
  // inverse transform, its real parts.
  void c2r(const Plan<T>& p, int64_t n, Cx<V>* a, Cx<V>* b) const {
    const int64_t h = n / 2;
    gather(in, a, h + 1);
    a[0].im = V{};
    if (n % 2) {
      for (int64_t k = h + 1; k < n; ++k) a[k] = fft::conj(a[n - k]);
      const Cx<V>* z = fft::run<true>(p, a, b);
      for (int l = 0; l < out.lanes; ++l)
        for (int64_t k = 0; k < n; ++k) out.base[out.off[l] + k * out.gap] = get(z[k].re, l) * scale;
      return;
    }
    a[h].im = V{};
    for (int64_t k = 0; k < h; ++k) {
      const Cx<V> xk = a[k], xc = fft::conj(a[h - k]);
      b[k] = xk + xc + fft::quarter<true>(fft::rotate(xk - xc, p.hr[k], -p.hi[k]));
    }
    scatter(out, fft::run<true>(p, b, a), h, scale);
  }
};

// The transforms of x (outer, nx, inner) into out (outer, nout, inner), L at a time.
template <typename T, int L>
void fft_lanes(const Tensor& out, const Tensor& x, int64_t dim, FftKind kind, double scale) {
  using V = typename fft::Lanes<T, L>::type;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= x->shape[d];
  for (int64_t d = dim + 1; d < x->dim(); ++d) inner *= x->shape[d];
  const int64_t nx = x->shape[dim], nout = out->shape[dim];
  const int64_t n = kind == FftKind::ComplexToReal ? nout : nx;  // the transform's length
  const bool half = (kind == FftKind::RealToComplex || kind == FftKind::ComplexToReal) && n % 2 == 0;
  const auto plan = plan_for<T>(half ? n / 2 : n);
  const int64_t cx = kind == FftKind::RealToComplex ? 1 : 2, co = kind == FftKind::ComplexToReal ? 1 : 2;
  const int64_t batch = outer * inner, blocks = (batch + L - 1) / L;
  const int64_t room = std::max(plan->work(), n) + 1;
  // Threads only for enough work to pay for them; each gets its buffers here (the pool must not allocate).
  const int64_t workers = std::min<int64_t>(blocks * L * n >= 16384 ? get_num_threads() : 1, blocks);
  std::vector<std::unique_ptr<Cx<V>[]>> bufs(workers);  // uninitialised: every element is written before it is read
  for (auto& b : bufs) b.reset(new Cx<V>[2 * room]);
  const T* xd = x->data<T>();
  T* od = out->data<T>();
  parallel_for(workers, 1, [&](int64_t w0, int64_t w1) {
    for (int64_t w = w0; w < w1; ++w) {
      Cx<V>* a = bufs[w].get();
      Cx<V>* b = a + room;
      for (int64_t blk = blocks * w / workers; blk < blocks * (w + 1) / workers; ++blk) {
        // Complex data and real data read as pairs of samples: a point every 2 * inner values, its two parts
        // 1 apart (complex) or inner apart (real); an odd real length is read one sample at a time (gap inner).
        const int lanes = int(std::min<int64_t>(L, batch - blk * L));
        Block<T, L> bl{{xd, {}, 2 * inner, cx == 2 ? 1 : inner, 0, lanes},
                       {od, {}, 2 * inner, co == 2 ? 1 : inner, 0, lanes}, T(scale)};
        for (int l = 0; l < L; ++l) {
          const int64_t i = std::min(blk * L + l, batch - 1), o = i / inner, j = i % inner;
          bl.in.off[l] = (o * nx * inner + j) * cx;
          bl.out.off[l] = (o * nout * inner + j) * co;
        }
        bl.in.set_lane_step();
        bl.out.set_lane_step();
        if (kind == FftKind::Forward || kind == FftKind::Inverse) bl.c2c(*plan, kind == FftKind::Inverse, a, b);
        else if (kind == FftKind::RealToComplex) bl.r2c(*plan, n, a, b);
        else bl.c2r(*plan, n, a, b);
      }
    }
  });
}

// Vectors of lanes for batches of a few transforms or more of moderate length; one transform at a time else
// (a lone long transform would fill only one lane, and a long one's buffers would outgrow the caches).
template <typename T> void fft_t(const Tensor& out, const Tensor& x, int64_t dim, FftKind kind, double scale) {
  constexpr int L = 32 / sizeof(T);
  const int64_t batch = x->numel() / x->shape[dim];
  const int64_t n = std::max(x->shape[dim], out->shape[dim]);
  if (batch >= L / 2 && n <= 65536) fft_lanes<T, L>(out, x, dim, kind, scale);
  else fft_lanes<T, 1>(out, x, dim, kind, scale);
}

void fft_cpu(const Tensor& out, const Tensor& x, int64_t dim, FftKind kind, double scale) {
  const DType real = is_complex(x->dtype) ? real_part_dtype(x->dtype) : x->dtype;
  if (real == DType::Float32) fft_t<float>(out, x, dim, kind, scale);
  else fft_t<double>(out, x, dim, kind, scale);
}
}  // namespace

SX_REGISTER_KERNEL(kern::fft, CPU, &fft_cpu);
}  // namespace sx::cpu
