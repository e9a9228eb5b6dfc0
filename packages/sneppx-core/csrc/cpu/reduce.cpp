// Reduction kernels over a contiguous (outer, n, inner) layout: the reduced axis is `n`.
// inner == 1 reduces rows; inner > 1 accumulates whole rows (vectorises over inner).
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "cpu/kernels.h"
#include "cpu/loops.h"
#include "cpu/reduce.h"

namespace sx::cpu {
namespace {

template <typename T, typename C, typename Init, typename Step, typename Fin>
void reduce_loop(const T* in, T* out, int64_t outer, int64_t n, int64_t inner, Init init, Step step, Fin fin) {
  parallel_for(outer * inner, std::max<int64_t>(1, kGrain / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
    if (inner == 1) {
      for (int64_t o = b; o < e; ++o) {
        const T* p = in + o * n;
        C acc[8];
        for (int k = 0; k < 8; ++k) acc[k] = init();
        int64_t i = 0;
        for (; i + 8 <= n; i += 8)
          for (int k = 0; k < 8; ++k) acc[k] = step(acc[k], C(p[i + k]));
        for (; i < n; ++i) acc[0] = step(acc[0], C(p[i]));
        C r = acc[0];
        for (int k = 1; k < 8; ++k) r = step(r, acc[k]);
        out[o] = T(fin(r));
      }
    } else {
      std::vector<C> acc;
      for (int64_t idx = b; idx < e;) {
        int64_t o = idx / inner, j0 = idx % inner, j1 = std::min(inner, j0 + (e - idx));
        acc.assign(size_t(j1 - j0), init());
        for (int64_t i = 0; i < n; ++i) {
          const T* p = in + (o * n + i) * inner;
          for (int64_t j = j0; j < j1; ++j) acc[size_t(j - j0)] = step(acc[size_t(j - j0)], C(p[j]));
        }
        for (int64_t j = j0; j < j1; ++j) out[o * inner + j] = T(fin(acc[size_t(j - j0)]));
        idx += j1 - j0;
      }
    }
  });
}

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

// Sum in blocks: eight lanes accumulate kSumBlock elements (16 each) in the compute type (fast, and
// vectorised), and the block results add up in double, as accurate as NumPy's pairwise sum. A plain
// running sum in float drifts with n (100,001 copies of e summed to 271,796 instead of 271,831).
constexpr int64_t kSumBlock = 128;

template <typename T, typename C>
void sum_loop(const T* in, T* out, int64_t outer, int64_t n, int64_t inner) {
  using W = std::conditional_t<std::is_floating_point_v<C>, double, C>;
  parallel_for(outer * inner, std::max<int64_t>(1, kGrain / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
    if (inner == 1) {
      for (int64_t o = b; o < e; ++o) {
        const T* p = in + o * n;
        W total = W(0);
        for (int64_t s = 0; s < n; s += kSumBlock) {
          const T* q = p + s;
          int64_t m = std::min(kSumBlock, n - s), i = 0;
          C acc[8] = {C(0), C(0), C(0), C(0), C(0), C(0), C(0), C(0)};
          for (; i + 8 <= m; i += 8)
            for (int k = 0; k < 8; ++k) acc[k] = wrap_add(acc[k], C(q[i + k]));
          for (; i < m; ++i) acc[0] = wrap_add(acc[0], C(q[i]));
          C r = wrap_add(wrap_add(wrap_add(acc[0], acc[1]), wrap_add(acc[2], acc[3])),
                         wrap_add(wrap_add(acc[4], acc[5]), wrap_add(acc[6], acc[7])));
          total = wrap_add(total, W(r));
        }
        out[o] = T(total);
      }
    } else {
      std::vector<C> acc;
      std::vector<W> tot;
      for (int64_t idx = b; idx < e;) {
        int64_t o = idx / inner, j0 = idx % inner, j1 = std::min(inner, j0 + (e - idx)), w = j1 - j0;
        acc.assign(size_t(w), C(0));
        tot.assign(size_t(w), W(0));
        for (int64_t i = 0; i < n; ++i) {
          const T* p = in + (o * n + i) * inner + j0;
          for (int64_t j = 0; j < w; ++j) acc[size_t(j)] = wrap_add(acc[size_t(j)], C(p[j]));
          if ((i + 1) % 16 == 0 || i + 1 == n)  // each column is one lane: flush every 16 rows
            for (int64_t j = 0; j < w; ++j) tot[size_t(j)] = wrap_add(tot[size_t(j)], W(acc[size_t(j)])), acc[size_t(j)] = C(0);
        }
        for (int64_t j = 0; j < w; ++j) out[o * inner + j0 + j] = T(tot[size_t(j)]);
        idx += w;
      }
    }
  });
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
// does not turn NaN-propagating max into vector code). NaN anywhere gives NaN, as in PyTorch.
template <typename C, bool IsMax>
C row_extreme(const C* p, int64_t n) {
  constexpr int L = 32 / sizeof(C);
  typedef C vec __attribute__((vector_size(32)));
  C init = IsMax ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity();
  vec acc, bad;
  for (int k = 0; k < L; ++k) acc[k] = init, bad[k] = 0;
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    vec v;
    std::memcpy(&v, p + i, sizeof(vec));
    acc = IsMax ? (v > acc ? v : acc) : (v < acc ? v : acc);
    bad = (v != v) ? v : bad;
  }
  C r = init;
  bool nan = false;
  for (int k = 0; k < L; ++k) {
    r = IsMax ? (acc[k] > r ? acc[k] : r) : (acc[k] < r ? acc[k] : r);
    nan = nan || bad[k] != bad[k];
  }
  for (; i < n; ++i) {
    r = IsMax ? (p[i] > r ? p[i] : r) : (p[i] < r ? p[i] : r);
    nan = nan || p[i] != p[i];
  }
  return nan ? std::numeric_limits<C>::quiet_NaN() : r;
}

template <typename T>
bool fast_extreme(ReduceOp op, const T* p, T* o, int64_t outer, int64_t n, int64_t inner) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (inner != 1 || (op != ReduceOp::Max && op != ReduceOp::Min)) return false;
    bool mx = op == ReduceOp::Max;
    parallel_for(outer, std::max<int64_t>(1, kGrain / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) o[r] = mx ? row_extreme<T, true>(p + r * n, n) : row_extreme<T, false>(p + r * n, n);
    });
    return true;
  }
  return false;
}

}  // namespace

void reduce(ReduceOp op, const Tensor& in, const Tensor& out, int64_t outer, int64_t n, int64_t inner) {
  SX_DISPATCH_ALL(in->dtype, "reduce", [&] {
    using T = scalar_t;
    using C = std::conditional_t<std::is_same_v<T, bool>, int64_t, acc_t<T>>;
    const T* p = in->data<T>();
    T* o = out->data<T>();
    if (n > 0 && fast_extreme<T>(op, p, o, outer, n, inner)) return;
    switch (op) {
      case ReduceOp::Sum:
        sum_loop<T, C>(p, o, outer, n, inner);
        break;
      case ReduceOp::Prod:
        reduce_loop<T, C>(p, o, outer, n, inner, [] { return C(1); }, [](C a, C b) { return wrap_mul(a, b); }, [](C a) { return a; });
        break;
      case ReduceOp::Max:
        reduce_loop<T, C>(p, o, outer, n, inner, [] { return std::numeric_limits<C>::lowest(); },
                          [](C a, C b) { return nan_max(a, b); }, [](C a) { return a; });
        break;
      case ReduceOp::Min:
        reduce_loop<T, C>(p, o, outer, n, inner, [] { return std::numeric_limits<C>::max(); },
                          [](C a, C b) { return nan_min(a, b); }, [](C a) { return a; });
        break;
    }
  });
}

void arg_reduce(bool is_max, const Tensor& in, const Tensor& values, const Tensor& indices, int64_t outer, int64_t n,
                int64_t inner) {
  SX_DISPATCH_ALL(in->dtype, "argmax", [&] {
    using T = scalar_t;
    using C = acc_t<T>;
    const T* p = in->data<T>();
    T* v = values->data<T>();
    int64_t* ix = indices->data<int64_t>();
    parallel_for(outer * inner, std::max<int64_t>(1, kGrain / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
      for (int64_t idx = b; idx < e; ++idx) {
        int64_t o = idx / inner, j = idx % inner;
        const T* q = p + o * n * inner + j;
        C best = C(q[0]);
        int64_t bi = 0;
        for (int64_t i = 1; i < n; ++i) {
          C x = C(q[i * inner]);
          if constexpr (!std::is_integral_v<C>) if (best != best) break;  // NaN wins, first one
          bool better = is_max ? (x > best) : (x < best);
          if constexpr (!std::is_integral_v<C>) better = better || (x != x);
          if (better) { best = x; bi = i; }
        }
        v[idx] = T(best);
        ix[idx] = bi;
      }
    });
  });
}

void cumsum(const Tensor& in, const Tensor& out, int64_t outer, int64_t n, int64_t inner) {
  SX_DISPATCH_ALL(in->dtype, "cumsum", [&] {
    using T = scalar_t;
    using C = acc_t<T>;
    const T* p = in->data<T>();
    T* o = out->data<T>();
    parallel_for(outer, std::max<int64_t>(1, kGrain / std::max<int64_t>(n * inner, 1)), [&](int64_t b, int64_t e) {
      std::vector<C> acc(static_cast<size_t>(inner));
      for (int64_t oo = b; oo < e; ++oo) {
        std::fill(acc.begin(), acc.end(), C(0));
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < inner; ++j) {
            int64_t k = (oo * n + i) * inner + j;
            acc[size_t(j)] = wrap_add(acc[size_t(j)], C(p[k]));
            o[k] = T(acc[size_t(j)]);
          }
      }
    });
  });
}

SX_REGISTER_KERNEL(kern::reduce, CPU, &reduce);
SX_REGISTER_KERNEL(kern::arg_reduce, CPU, &arg_reduce);
SX_REGISTER_KERNEL(kern::cumsum, CPU, &cumsum);

}  // namespace sx::cpu
