// The strided N-operand loop of for_each_rows (loops.h), compiled once per operand count.
#include "cpu/loops.h"

namespace sx::cpu {

// The operands are coalesced (dims merged where every operand is contiguous across them), the range
// of elements is split over the thread pool, and each chunk steps its row pointers like an odometer.
template <int N>
void for_each_rows_erased(const Shape& shape, const Operands<N>& ts, RowsFn fn, void* ctx,
                          int64_t grain) {
  int64_t zero[N] = {};
  // Fast path: every operand is contiguous with the full shape, so the loop is one flat range.
  bool flat = true;
  for (int k = 0; k < N && flat; ++k) flat = ts[k]->shape == shape && ts[k]->is_contiguous();
  if (flat) {
    int64_t total = 1;
    for (auto s : shape) total *= s;
    int64_t st[N];
    for (int k = 0; k < N; ++k) st[k] = int64_t(itemsize(ts[k]->dtype));
    auto run = [&](int64_t b, int64_t e) {
      char* p[N];
      for (int k = 0; k < N; ++k) p[k] = ts[k]->raw() + b * st[k];
      fn(ctx, p, st, e - b, zero, int64_t(1));
    };
    if (total <= grain) {
      if (total > 0) run(0, total);
    } else {
      parallel_for(total, grain, run);
    }
    return;
  }
  Geometry<N> g = coalesce<N>(shape, ts);
  std::array<char*, N> base;
  for (int k = 0; k < N; ++k) base[k] = ts[k]->raw();
  int64_t nd = int64_t(g.shape.size());
  if (nd == 0) {
    char* p[N];
    for (int k = 0; k < N; ++k) p[k] = base[k];
    int64_t numel = 1;
    for (auto s : shape) numel *= s;
    if (numel) fn(ctx, p, zero, int64_t(1), zero, int64_t(1));
    return;
  }
  int64_t total = 1;
  for (auto s : g.shape) total *= s;
  const int64_t inner = g.shape[nd - 1], rows = nd > 1 ? g.shape[nd - 2] : 1;
  int64_t istr[N], ostr[N];
  for (int k = 0; k < N; ++k) istr[k] = g.strides[k][nd - 1], ostr[k] = nd > 1 ? g.strides[k][nd - 2] : 0;
  parallel_for(total, grain, [&](int64_t b, int64_t e) {
    // multi-index of b
    Shape idx(nd);
    int64_t rem = b;
    for (int64_t d = nd - 1; d >= 0; --d) {
      idx[d] = rem % g.shape[d];
      rem /= g.shape[d];
    }
    char* row[N];  // each operand at the start of the current row (its outer dims at idx)
    for (int k = 0; k < N; ++k) {
      row[k] = base[k];
      for (int64_t d = 0; d < nd - 1; ++d) row[k] += idx[d] * g.strides[k][d];
    }
    for (int64_t pos = b, col = idx[nd - 1]; pos < e; col = 0) {
      char* p[N];
      for (int k = 0; k < N; ++k) p[k] = row[k] + col * istr[k];
      // whole rows from here along dim nd - 2, or else the part of one row left in the row or the chunk
      int64_t m = col == 0 && nd > 1 ? std::min(rows - idx[nd - 2], (e - pos) / inner) : 0;
      int64_t n = m ? inner : std::min(inner - col, e - pos);
      fn(ctx, p, istr, n, ostr, std::max<int64_t>(m, 1));
      pos += n * std::max<int64_t>(m, 1);
      if (m > 1) {
        idx[nd - 2] += m - 1;
        for (int k = 0; k < N; ++k) row[k] += (m - 1) * ostr[k];
      }
      // The next row: step the outer dims like an odometer, moving the row pointers along.
      for (int64_t d = nd - 2; d >= 0 && pos < e; --d) {
        for (int k = 0; k < N; ++k) row[k] += g.strides[k][d];
        if (++idx[d] < g.shape[d]) break;
        for (int k = 0; k < N; ++k) row[k] -= g.shape[d] * g.strides[k][d];
        idx[d] = 0;
      }
    }
  });
}


template void for_each_rows_erased<1>(const Shape&, const Operands<1>&, RowsFn, void*, int64_t);
template void for_each_rows_erased<2>(const Shape&, const Operands<2>&, RowsFn, void*, int64_t);
template void for_each_rows_erased<3>(const Shape&, const Operands<3>&, RowsFn, void*, int64_t);
template void for_each_rows_erased<4>(const Shape&, const Operands<4>&, RowsFn, void*, int64_t);

}  // namespace sx::cpu
