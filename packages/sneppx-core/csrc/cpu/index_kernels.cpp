// CPU kernels of the indexing family (slots in ops/kernels.h). Indices arrive checked; kernels wrap
// negative ones. Gathers run in parallel; scatters and index_put run in row-major order on one
// thread, so that duplicate indices accumulate (or the last write wins) deterministically.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "cpu/loops.h"
#include "ops/kernels.h"

namespace sx::cpu {
namespace {

inline int64_t wrap(int64_t i, int64_t n) { return i < 0 ? i + n : i; }

// `t` seen with idx's shape and t's strides, except dim `d`, which stays put (stride 0): the
// element at position c of idx is then view[c] + idx[c] * t.strides[d].
Tensor along(const Tensor& t, const Shape& shape, int64_t d) {
  Shape st = t->strides;
  st[size_t(d)] = 0;
  return make_view(t, shape, st, t->offset);
}

void gather_cpu(const Tensor& out, const Tensor& x, const Tensor& idx, int64_t d) {
  Tensor xv = along(x, idx->shape, d);
  int64_t n = x->shape[size_t(d)], step = x->strides[size_t(d)];
  SX_DISPATCH_ALL(x->dtype, "gather", [&] {
    using T = scalar_t;
    for_each<3>(idx->shape, {out.get(), idx.get(), xv.get()}, [&](char** p, const int64_t* s, int64_t cnt) {
      for (int64_t i = 0; i < cnt; ++i) {
        const T* src = reinterpret_cast<const T*>(p[2] + i * s[2]);
        int64_t j = wrap(*reinterpret_cast<const int64_t*>(p[1] + i * s[1]), n);
        *reinterpret_cast<T*>(p[0] + i * s[0]) = src[j * step];
      }
    });
  });
}

// The value a scatter leaves at a destination holding a when v arrives (NaN wins max and min).
template <typename T> T scatter_value(ScatterOp op, T a, T v) {
  using C = acc_t<T>;
  const C ca = C(a), cv = C(v);
  switch (op) {
    case ScatterOp::Set: return v;
    case ScatterOp::Add: return T(ca + cv);
    case ScatterOp::Mul: return T(ca * cv);
    case ScatterOp::Max: return (cv != cv || cv > ca) ? v : a;
    case ScatterOp::Min: return (cv != cv || cv < ca) ? v : a;
  }
  return v;
}

void scatter_cpu(const Tensor& out, const Tensor& idx, const Tensor& src, int64_t d, ScatterOp op) {
  Tensor ov = along(out, idx->shape, d);
  Tensor sv = make_view(src, idx->shape, src->strides, src->offset);
  int64_t n = out->shape[size_t(d)], step = out->strides[size_t(d)];
  SX_DISPATCH_ALL(out->dtype, "scatter", [&] {
    using T = scalar_t;
    auto body = [&](char** p, const int64_t* s, int64_t cnt) {
      for (int64_t i = 0; i < cnt; ++i) {
        T* dst = reinterpret_cast<T*>(p[0] + i * s[0]) + wrap(*reinterpret_cast<const int64_t*>(p[1] + i * s[1]), n) * step;
        T v = *reinterpret_cast<const T*>(p[2] + i * s[2]);
        *dst = scatter_value<T>(op, *dst, v);
      }
    };
    for_each<3>(idx->shape, {ov.get(), idx.get(), sv.get()}, body, INT64_MAX);  // one thread: duplicates
  });
}

// Element offset into a contiguous tensor of the leading dims named by the index tensors, at
// broadcast index position i.
inline int64_t front_offset(const Tensor& t, const TensorList& idx, int64_t i) {
  int64_t off = 0;
  for (size_t j = 0; j < idx.size(); ++j) off += wrap(idx[j]->data<int64_t>()[i], t->shape[j]) * t->strides[j];
  return off;
}

void index_front_cpu(const Tensor& out, const Tensor& x, const TensorList& idx) {
  int64_t nb = idx.empty() ? 1 : idx[0]->numel();
  size_t item = itemsize(x->dtype), bytes = nb ? size_t(out->numel() / nb) * item : 0;
  parallel_for(nb, std::max<int64_t>(1, kGrain / std::max<int64_t>(int64_t(bytes / item), 1)), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      std::memcpy(out->raw() + size_t(i) * bytes, x->raw() + front_offset(x, idx, i) * int64_t(item), bytes);
  });
}

void index_put_front_cpu(const Tensor& out, const TensorList& idx, const Tensor& values, bool accumulate) {
  int64_t nb = idx.empty() ? 1 : idx[0]->numel();
  int64_t block = nb ? values->numel() / nb : 0;
  SX_DISPATCH_ALL(out->dtype, "index_put", [&] {
    using T = scalar_t;
    T* o = out->data<T>();
    const T* v = values->data<T>();
    for (int64_t i = 0; i < nb; ++i) {
      T* dst = o + front_offset(out, idx, i);
      const T* src = v + i * block;
      if (!accumulate) std::copy(src, src + block, dst);
      else for (int64_t e = 0; e < block; ++e) dst[e] = T(acc_t<T>(dst[e]) + acc_t<T>(src[e]));
    }
  });
}

void sort_rows_cpu(const Tensor& rows, const Tensor& values, const Tensor& indices, const Tensor& order, bool descending,
                   bool stable) {
  int64_t n = rows->shape[1], k = values->shape[1], nrows = rows->shape[0];
  SX_DISPATCH_ALL(rows->dtype, "sort", [&] {
    using T = scalar_t;
    using C = acc_t<T>;
    parallel_for(nrows, std::max<int64_t>(1, 4096 / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const T* row = rows->data<T>() + r * n;
        int64_t* ord = order->data<int64_t>() + r * n;
        std::iota(ord, ord + n, int64_t(0));
        auto less = [&](int64_t a, int64_t c) {  // NaN sorts as the largest value
          C va = C(row[a]), vc = C(row[c]);
          bool na = va != va, nc = vc != vc;
          if (descending) return na != nc ? na : (!na && va > vc);
          return na != nc ? nc : (!na && va < vc);
        };
        if (stable || k == n) std::stable_sort(ord, ord + n, less);
        else std::partial_sort(ord, ord + k, ord + n, less);
        T* vo = values->data<T>() + r * k;
        int64_t* io = indices->data<int64_t>() + r * k;
        for (int64_t j = 0; j < k; ++j) {
          vo[j] = row[ord[j]];
          io[j] = ord[j];  // a no-op when order is indices itself
        }
      }
    });
  });
}

int64_t count_nonzero_cpu(const Tensor& x) {
  const bool* p = x->data<bool>();
  return std::count(p, p + x->numel(), true);
}

void nonzero_cpu(const Tensor& out, const Tensor& x) {
  const bool* p = x->data<bool>();
  int64_t nd = x->dim();
  int64_t* o = out->data<int64_t>();
  Shape c(size_t(nd), 0);
  for (int64_t i = 0; i < x->numel(); ++i) {
    if (p[i]) o = std::copy(c.begin(), c.end(), o);
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++c[size_t(d)] < x->shape[size_t(d)]) break;
      c[size_t(d)] = 0;
    }
  }
}

}  // namespace

SX_REGISTER_KERNEL(kern::gather, CPU, &gather_cpu);
SX_REGISTER_KERNEL(kern::scatter, CPU, &scatter_cpu);
SX_REGISTER_KERNEL(kern::index_front, CPU, &index_front_cpu);
SX_REGISTER_KERNEL(kern::index_put_front, CPU, &index_put_front_cpu);
SX_REGISTER_KERNEL(kern::sort_rows, CPU, &sort_rows_cpu);
SX_REGISTER_KERNEL(kern::count_nonzero, CPU, &count_nonzero_cpu);
SX_REGISTER_KERNEL(kern::nonzero, CPU, &nonzero_cpu);

}  // namespace sx::cpu
