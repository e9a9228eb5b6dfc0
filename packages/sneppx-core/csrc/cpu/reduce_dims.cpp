// Reductions read in place from a strided view (kern::reduce_dims): the kept dims come first, the
// reduced dims after them, with any strides. Instead of a permuting copy, the kernel walks the input
// in one of two orders, each parallel over the outputs:
// - rows: the innermost reduced dim is reduced as a row (contiguous rows go through the blocked
//   row sums and the vectorised max/min), and the rows of one output are combined in a fixed order;
// - columns (the innermost kept dim is contiguous): whole rows of outputs accumulate side by side.
// The order of additions depends on the shape only, never on the thread count.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "cpu/loops.h"
#include "cpu/reduce_rows.h"
#include "ops/kernels.h"

namespace sx::cpu {
namespace {

// Dims of a group (kept or reduced) with their strides, size-1 dims dropped and dims that are
// contiguous across each other merged.
struct Dims {
  Shape size, stride;
  int64_t numel() const {
    int64_t n = 1;
    for (auto s : size) n *= s;
    return n;
  }
};

Dims merged(const Tensor& t, int64_t lo, int64_t hi) {
  Dims g;
  for (int64_t d = lo; d < hi; ++d) {
    if (t->shape[size_t(d)] == 1) continue;
    if (!g.size.empty() && g.stride.back() == t->strides[size_t(d)] * t->shape[size_t(d)]) {
      g.size.back() *= t->shape[size_t(d)];
      g.stride.back() = t->strides[size_t(d)];
    } else {
      g.size.push_back(t->shape[size_t(d)]);
      g.stride.push_back(t->strides[size_t(d)]);
    }
  }
  return g;
}

// Element offset of flat position i over dims (row-major).
int64_t offset_of(const Dims& g, int64_t i) {
  int64_t off = 0;
  for (int64_t d = int64_t(g.size.size()) - 1; d >= 0 && i; --d) {
    off += (i % g.size[size_t(d)]) * g.stride[size_t(d)];
    i /= g.size[size_t(d)];
  }
  return off;
}

// What a reduction does, in the compute type C (element steps) and the total type W (combining
// partial results); `row` reduces n elements at a stride.
template <typename T, typename O, typename C, typename W, ReduceOp op>
struct Reducer {
  double scale = 1.0;
  static constexpr bool sumlike() {
    return op == ReduceOp::Sum || op == ReduceOp::Mean || op == ReduceOp::SumSquares || op == ReduceOp::NanSum;
  }
  // What a sum adds per element (see Term).
  static constexpr Term kTerm = op == ReduceOp::SumSquares ? Term::Square : op == ReduceOp::NanSum ? Term::NonNan
                                                                                                 : Term::Value;
  static C init_c() {
    if constexpr (op == ReduceOp::Prod) return C(1);
    else if constexpr (op == ReduceOp::Max) return std::numeric_limits<C>::lowest();
    else if constexpr (op == ReduceOp::Min) return std::numeric_limits<C>::max();
    else return C(0);
  }
  static W init_w() { return W(init_c()); }
  static C step(C a, C x) {
    if constexpr (op == ReduceOp::Prod) return wrap_mul(a, x);
    else if constexpr (op == ReduceOp::Max) return nan_max(a, x);
    else if constexpr (op == ReduceOp::Min) return nan_min(a, x);
    else return wrap_add(a, term<kTerm>(x));
  }
  static W merge(W a, W b) {
    if constexpr (op == ReduceOp::Prod) return wrap_mul(a, b);
    else if constexpr (op == ReduceOp::Max) return nan_max(a, b);
    else if constexpr (op == ReduceOp::Min) return nan_min(a, b);
    else return wrap_add(a, b);
  }
  // The lanes of `row`: integer sums and products in wrap_lane_t (see there), max and min in C.
  static constexpr bool kUnsignedLanes = std::is_integral_v<C> && op != ReduceOp::Max && op != ReduceOp::Min;
  using L = std::conditional_t<kUnsignedLanes, wrap_lane_t<C>, C>;
  static L lane_step(L a, C x) {
    if constexpr (!kUnsignedLanes) return step(a, x);
    else if constexpr (op == ReduceOp::Prod) return a * L(x);
    else return a + term<kTerm>(L(x));
  }
  O finish(W t) const {
    if constexpr (op == ReduceOp::Mean) return O(double(t) * scale);
    else return O(t);
  }
  // Rows k < count at at(k), each result handed to put(k, total): short float rows eight at a time.
  template <typename At, typename Put>
  void rows(int64_t count, int64_t n, int64_t stride, At at, Put put) const {
    if constexpr (std::is_same_v<T, float> && std::is_same_v<O, float>) {
      if (stride == 1 && n < kShortRow) {
        if constexpr (sumlike()) return sum_rows_f32<kTerm>(count, n, at, put);
        if constexpr (op == ReduceOp::Max || op == ReduceOp::Min)
          return extreme_rows_f32<op == ReduceOp::Max>(count, n, at, put);
      }
    }
    for (int64_t k = 0; k < count; ++k) put(k, row(at(k), n, stride));
  }
  W row(const T* p, int64_t n, int64_t stride) const {
    if (stride == 1) {
      if constexpr (std::is_same_v<T, float> && std::is_same_v<O, float> && sumlike()) return sum_run_f32<kTerm>(p, n);
      if constexpr (std::is_same_v<T, double> && sumlike()) return sum_run_f64<kTerm>(p, n);
      if constexpr (std::is_same_v<T, O> && (std::is_same_v<T, float> || std::is_same_v<T, double>)) {
        if constexpr (op == ReduceOp::Max) return row_extreme<T, true>(p, n);
        if constexpr (op == ReduceOp::Min) return row_extreme<T, false>(p, n);
      }
    }
    // Blocks of kSumBlock in eight lanes of C, block results combined in W.
    W total = init_w();
    for (int64_t s = 0; s < n; s += kSumBlock) {
      int64_t m = std::min(kSumBlock, n - s), i = 0;
      const T* q = p + s * stride;
      L acc[8];
      for (int k = 0; k < 8; ++k) acc[k] = L(init_c());
      for (; i + 8 <= m; i += 8)
        for (int k = 0; k < 8; ++k) acc[k] = lane_step(acc[k], C(q[(i + k) * stride]));
      for (; i < m; ++i) acc[0] = lane_step(acc[0], C(q[i * stride]));
      for (int k = 0; k < 8; ++k) total = merge(total, W(C(acc[k])));
    }
    return total;
  }
};

// Offsets of every position of the reduced dims but the innermost (which `row` walks).
std::vector<int64_t> row_offsets(const Dims& red) {
  Dims outer{Shape(red.size.begin(), red.size.end() - 1), Shape(red.stride.begin(), red.stride.end() - 1)};
  std::vector<int64_t> offs(size_t(outer.numel()));
  for (size_t i = 0; i < offs.size(); ++i) offs[i] = offset_of(outer, int64_t(i));
  return offs;
}

// Position i = o m + k of a list of m-row blocks, followed without a division where i steps by one
// (the row loops ask for rows in order, now and then the same one again).
struct Cursor {
  int64_t m, i = 0, k = 0, o = 0;
  Cursor& at(int64_t j) {
    if (j == i + 1) {
      if (++k == m) k = 0, ++o;
    } else if (j != i) {
      k = j % m, o = j / m;
    }
    i = j;
    return *this;
  }
};

template <typename T, typename O, typename C, typename W, ReduceOp Op>
void by_rows(const Reducer<T, O, C, W, Op>& r, const T* p, O* out, const Dims& kept, const Dims& red) {
  std::vector<int64_t> offs = row_offsets(red);
  int64_t n = red.size.back(), st = red.stride.back(), work = n * int64_t(offs.size());
  // Outputs go eight at a time, each taking its rows in order. When an outer reduced dim is further
  // apart than the kept dims (a sum over dims 0 and 2), one output's rows lie far apart: then each
  // row position goes over all outputs of the chunk, so that the reads go through memory in order.
  bool across = offs.size() > 1 && !kept.size.empty() && red.stride[red.size.size() - 2] > kept.stride.back();
  parallel_for(kept.numel(), std::max<int64_t>(1, kGrain / std::max<int64_t>(work, 1)), [&](int64_t b, int64_t e) {
    std::vector<const T*> base(size_t(e - b));
    std::vector<W> t(size_t(e - b), r.init_w());
    for (int64_t o = b; o < e; ++o) base[size_t(o - b)] = p + offset_of(kept, o);
    int64_t step = across ? e - b : 8;
    for (int64_t k0 = 0; k0 < e - b; k0 += step) {
      // The m outputs' rows as one list, row position by row position (a row's result does not
      // depend on the rows summed beside it, and each output takes its rows in order).
      int64_t m = std::min(step, e - b - k0);
      Cursor in{m}, to{m};
      r.rows(m * int64_t(offs.size()), n, st, [&](int64_t i) { return base[size_t(k0 + in.at(i).k)] + offs[size_t(in.o)]; },
             [&](int64_t i, W v) { W& d = t[size_t(k0 + to.at(i).k)]; d = r.merge(d, v); });
    }
    for (int64_t o = b; o < e; ++o) out[o] = r.finish(t[size_t(o - b)]);
  });
}

// The innermost kept dim is contiguous: each chunk of outputs adds whole input rows; C partials
// move into W every 16 rows (each column is one lane).
template <typename T, typename O, typename C, typename W, ReduceOp Op>
void by_columns(const Reducer<T, O, C, W, Op>& r, const T* p, O* out, const Dims& kept, const Dims& red) {
  std::vector<int64_t> offs = red.size.empty() ? std::vector<int64_t>{0} : row_offsets(red);
  int64_t n = red.size.empty() ? 1 : red.size.back(), st = red.size.empty() ? 0 : red.stride.back();
  int64_t w = kept.size.back(), rows = n * int64_t(offs.size());
  Dims lead{Shape(kept.size.begin(), kept.size.end() - 1), Shape(kept.stride.begin(), kept.stride.end() - 1)};
  parallel_for(kept.numel(), std::max<int64_t>(1, kGrain / std::max<int64_t>(rows, 1)), [&](int64_t b, int64_t e) {
    std::vector<C> acc;
    std::vector<W> tot;
    for (int64_t idx = b; idx < e;) {
      int64_t o = idx / w, j0 = idx % w, cnt = std::min(w - j0, e - idx);
      const T* base = p + offset_of(lead, o) + j0;
      if constexpr (std::is_same_v<T, float> && std::is_same_v<O, float> && std::is_same_v<C, float> &&
                    Reducer<T, O, C, W, Op>::sumlike()) {
        if (offs.size() == 1) {  // one reduced dim: whole blocks of 64 or 32 columns in registers
          int64_t full = sum_column_blocks_f32<Reducer<T, O, C, W, Op>::kTerm>(base + offs[0], n, st, out + o * w + j0,
                                                                                 cnt, r.scale);
          base += full, j0 += full, idx += full, cnt -= full;
          if (cnt == 0) continue;
        }
      }
      acc.assign(size_t(cnt), r.init_c());
      tot.assign(size_t(cnt), r.init_w());
      int64_t done = 0;
      for (int64_t off : offs)
        for (int64_t i = 0; i < n; ++i) {
          const T* q = base + off + i * st;
          for (int64_t j = 0; j < cnt; ++j) acc[size_t(j)] = r.step(acc[size_t(j)], C(q[j]));
          if (++done % 16 == 0 || done == rows)
            for (int64_t j = 0; j < cnt; ++j) tot[size_t(j)] = r.merge(tot[size_t(j)], W(acc[size_t(j)])), acc[size_t(j)] = r.init_c();
        }
      for (int64_t j = 0; j < cnt; ++j) out[o * w + j0 + j] = r.finish(tot[size_t(j)]);
      idx += cnt;
    }
  });
}

template <typename T, typename O, typename C, typename W, ReduceOp Op>
void run_op(const Tensor& in, const Tensor& out, int64_t kept_dims) {
  Reducer<T, O, C, W, Op> r;
  Dims kept = merged(in, 0, kept_dims), red = merged(in, kept_dims, in->dim());
  int64_t n = red.numel();
  if (Op == ReduceOp::Mean) r.scale = 1.0 / double(n);
  const T* p = in->data<T>();
  O* o = out->data<O>();
  if (n == 0 || red.size.empty()) {  // nothing to reduce, or one element per output
    parallel_for(kept.numel(), kGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) o[i] = r.finish(n ? r.step(r.init_c(), C(p[offset_of(kept, i)])) : r.init_w());
    });
    return;
  }
  bool columns = !kept.size.empty() && kept.stride.back() == 1 && red.stride.back() != 1 && kept.size.back() >= 8;
  if (columns) by_columns(r, p, o, kept, red);
  else by_rows(r, p, o, kept, red);
}

// Sums (sum, mean, squares, nansum) in W, the others (W == C) in the compute type.
template <typename T, typename O, typename C, typename W>
void run(ReduceOp op, const Tensor& in, const Tensor& out, int64_t kept) {
  switch (op) {
    case ReduceOp::Sum: return run_op<T, O, C, W, ReduceOp::Sum>(in, out, kept);
    case ReduceOp::Mean: return run_op<T, O, C, W, ReduceOp::Mean>(in, out, kept);
    case ReduceOp::SumSquares: return run_op<T, O, C, W, ReduceOp::SumSquares>(in, out, kept);
    case ReduceOp::NanSum: return run_op<T, O, C, W, ReduceOp::NanSum>(in, out, kept);
    default: break;
  }
  if constexpr (std::is_same_v<W, C> && std::is_same_v<T, O>) {
    switch (op) {
      case ReduceOp::Prod: return run_op<T, O, C, C, ReduceOp::Prod>(in, out, kept);
      case ReduceOp::Max: return run_op<T, O, C, C, ReduceOp::Max>(in, out, kept);
      case ReduceOp::Min: return run_op<T, O, C, C, ReduceOp::Min>(in, out, kept);
      default: break;
    }
  }
}

void reduce_dims(ReduceOp op, const Tensor& in, const Tensor& out, int64_t kept) {
  bool sum = op == ReduceOp::Sum || op == ReduceOp::Mean || op == ReduceOp::SumSquares || op == ReduceOp::NanSum;
  SX_DISPATCH_ALL(in->dtype, "reduce", [&] {
    using T = scalar_t;
    if (out->dtype == DType::Float64 && in->dtype != DType::Float64 && sum) {
      run<T, double, double, double>(op, in, out, kept);
    } else if (out->dtype == DType::Int64 && in->dtype != DType::Int64 && !is_floating(in->dtype) && sum) {
      run<T, int64_t, int64_t, int64_t>(op, in, out, kept);
    } else {
      SX_CHECK(out->dtype == in->dtype, TypeError, "[reduce] cannot reduce ", dtype_name(in->dtype), " into ",
               dtype_name(out->dtype));
      using C = std::conditional_t<std::is_same_v<T, bool>, int64_t, acc_t<T>>;
      using W = std::conditional_t<std::is_floating_point_v<C>, double, C>;
      if (sum) run<T, T, C, W>(op, in, out, kept);
      else run<T, T, C, C>(op, in, out, kept);
    }
  });
}

}  // namespace

SX_REGISTER_KERNEL(kern::reduce_dims, CPU, &reduce_dims);

}  // namespace sx::cpu
