// Indexing ops: gather/scatter along a dim, advanced indexing on leading dims, sorting.
// Every index is checked before any kernel runs, so a bad index raises IndexError.
#include <algorithm>
#include <numeric>

#include "ops/kernels.h"
#include "ops/common.h"

namespace sx {

namespace {
// The indexing family still runs on the host: other devices get the error of an empty kernel slot.
void host_only(const Tensor& t, const char* op) {
  SX_CHECK(t->device().type == DeviceType::CPU, NotImplementedError, "[", op, "] has no kernel for device ",
           t->device().str());
}

Tensor as_index(const Tensor& idx, const char* op) {
  host_only(idx, op);
  SX_CHECK(idx->dtype == DType::Int64 || idx->dtype == DType::Int32 || idx->dtype == DType::UInt8, TypeError, "[", op,
           "] index must be an integer tensor, got ", describe(idx));
  return contiguous(cast_nograd(idx, DType::Int64));
}

void check_range(const Tensor& idx, int64_t n, const char* op, int64_t dim) {
  host_only(idx, op);
  const int64_t* p = idx->data<int64_t>();
  for (int64_t i = 0; i < idx->numel(); ++i)
    SX_CHECK(p[i] >= -n && p[i] < n, IndexError, "[", op, "] index ", p[i], " is out of bounds for dimension ", dim,
             " with size ", n);
}

// Calls fn(coords) for every position of shape, in row-major order.
template <typename F> void for_coords(const Shape& shape, F fn) {
  int64_t n = 1;
  for (auto s : shape) n *= s;
  Shape c(shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    fn(c);
    for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
      if (++c[d] < shape[d]) break;
      c[d] = 0;
    }
  }
}

int64_t offset_of(const Shape& c, const Shape& st) {
  int64_t o = 0;
  for (size_t d = 0; d < c.size(); ++d) o += c[d] * st[d];
  return o;
}

void check_gather_shapes(const Tensor& x, int64_t d, const Tensor& index, const char* op) {
  SX_CHECK(index->dim() == x->dim(), ValueError, "[", op, "] index ", shape_str(index->shape), " and input ",
           shape_str(x->shape), " must have the same number of dims");
  for (int64_t i = 0; i < x->dim(); ++i)
    SX_CHECK(i == d || index->shape[i] <= x->shape[i], ValueError, "[", op, "] index ", shape_str(index->shape),
             " is larger than input ", shape_str(x->shape), " outside dim ", d);
}

// out = x with src written (or added) at index positions along dim.
Tensor scatter_impl(const Tensor& x, int64_t d, const Tensor& idx, const Tensor& src, bool add, const char* op) {
  host_only(x, op);
  Tensor out = clone_nograd(x);
  Tensor s = cast_nograd(src, x->dtype);
  SX_DISPATCH_ALL(x->dtype, op, [&] {
    using T = scalar_t;
    T* o = out->data<T>();
    const int64_t* ip = idx->data<int64_t>();
    int64_t n = x->shape[d], k = 0;
    for_coords(idx->shape, [&](Shape c) {
      T v = *(s->data<T>() + offset_of(c, s->strides));
      int64_t j = ip[k++];
      c[size_t(d)] = j < 0 ? j + n : j;
      T& dst = o[offset_of(c, out->strides)];
      dst = add ? T(acc_t<T>(dst) + acc_t<T>(v)) : v;
    });
  });
  return out;
}
}  // namespace

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  host_only(x, "gather");
  int64_t d = wrap_dim(dim, x->dim(), "gather");
  Tensor idx = as_index(index, "gather");
  check_gather_shapes(x, d, idx, "gather");
  check_range(idx, x->dim() ? x->shape[d] : 1, "gather", d);
  Tensor out = empty(idx->shape, x->dtype);
  SX_DISPATCH_ALL(x->dtype, "gather", [&] {
    using T = scalar_t;
    T* o = out->data<T>();
    const T* xp = x->data<T>();
    const int64_t* ip = idx->data<int64_t>();
    int64_t n = x->dim() ? x->shape[d] : 1, k = 0;
    for_coords(idx->shape, [&](Shape c) {
      int64_t j = ip[k];
      if (x->dim()) c[size_t(d)] = j < 0 ? j + n : j;
      o[k++] = xp[offset_of(c, x->strides)];
    });
  });
  if (!is_floating(x->dtype) || !needs_grad({&x})) return out;
  Shape xs = x->shape;
  return record("GatherBackward", {x}, out, [xs, d, idx](const Tensor& g) {
    return TensorList{scatter_add(zeros(xs, g->dtype), d, idx, g)};
  });
}

static void check_scatter(const Tensor& x, int64_t d, const Tensor& idx, const Tensor& src, const char* op) {
  check_gather_shapes(x, d, idx, op);
  SX_CHECK(src->dim() == idx->dim(), ValueError, "[", op, "] src ", shape_str(src->shape), " and index ",
           shape_str(idx->shape), " must have the same number of dims");
  for (int64_t i = 0; i < idx->dim(); ++i)
    SX_CHECK(idx->shape[i] <= src->shape[i], ValueError, "[", op, "] index ", shape_str(idx->shape),
             " is larger than src ", shape_str(src->shape));
  check_range(idx, x->shape[d], op, d);
}

// Zero-pads g, placed at the leading corner, up to shape (src may be larger than index in
// scatter/scatter_add); one dim at a time so that each step's own vjp is a slice.
static Tensor pad_corner(const Tensor& g, const Shape& shape) {
  Tensor r = g;
  for (int64_t i = 0; i < r->dim(); ++i) {
    if (r->shape[i] == shape[i]) continue;
    Shape s = r->shape;
    s[i] = shape[i];
    r = slice_backward(r, s, i, 0, 1);
  }
  return r;
}

// A 0-d input scatters as a 1-element 1-d one (its index and src must be 0-d too).
static Tensor scatter_0d(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, bool add) {
  wrap_dim(dim, 0, add ? "scatter_add" : "scatter");
  SX_CHECK(index->dim() == 0 && src->dim() == 0, ValueError, "[", add ? "scatter_add" : "scatter",
           "] a 0-d input needs a 0-d index and src, got ", describe(index), " and ", describe(src));
  Tensor x1 = reshape(x, {1}), i1 = reshape(index, {1}), s1 = reshape(src, {1});
  return reshape(add ? scatter_add(x1, 0, i1, s1) : scatter(x1, 0, i1, s1), {});
}

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  if (x->dim() == 0) return scatter_0d(x, dim, index, src, false);
  int64_t d = wrap_dim(dim, x->dim(), "scatter");
  Tensor idx = as_index(index, "scatter");
  Tensor s = src->dim() == 0 ? expand_view(src, idx->shape) : src;
  check_scatter(x, d, idx, s, "scatter");
  Tensor out = scatter_impl(x, d, idx, s, false, "scatter");
  if (!is_floating(x->dtype) || !needs_grad({&x, &src})) return out;
  Tensor sv = src;
  return record("ScatterBackward", {x, src}, out, [d, idx, sv](const Tensor& g) {
    Tensor gs = sv->dim() == 0 ? sum(gather(g, d, idx)) : pad_corner(gather(g, d, idx), sv->shape);
    return TensorList{scatter(g, d, idx, zeros({}, g->dtype)), grad_for(gs, sv)};
  });
}

Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  if (x->dim() == 0) return scatter_0d(x, dim, index, src, true);
  int64_t d = wrap_dim(dim, x->dim(), "scatter_add");
  Tensor idx = as_index(index, "scatter_add");
  check_scatter(x, d, idx, src, "scatter_add");
  Tensor out = scatter_impl(x, d, idx, src, true, "scatter_add");
  if (!is_floating(x->dtype) || !needs_grad({&x, &src})) return out;
  Tensor sv = src;
  return record("ScatterAddBackward", {x, src}, out, [d, idx, sv](const Tensor& g) {
    Tensor gs = gather(g, d, idx);
    if (gs->shape != sv->shape) gs = pad_corner(gs, sv->shape);
    return TensorList{g, gs};
  });
}

static IntList moved(int64_t nd, int64_t from, int64_t to) {
  IntList p;
  for (int64_t i = 0; i < nd; ++i) if (i != from) p.push_back(i);
  p.insert(p.begin() + to, from);
  return p;
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  SX_CHECK(index->dim() <= 1, ValueError, "[index_select] index must be 1-D, got ", describe(index));
  int64_t d = wrap_dim(dim, x->dim(), "index_select");
  Tensor idx = reshape(as_index(index, "index_select"), {-1});
  Tensor front = permute(x, moved(x->dim(), d, 0));
  Tensor r = index_front(front, {idx});
  return permute(r, moved(x->dim(), 0, d));
}

Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, double alpha) {
  int64_t d = wrap_dim(dim, x->dim(), "index_add");
  Tensor idx = reshape(as_index(index, "index_add"), {-1});
  Shape want = x->shape;
  if (x->dim()) want[size_t(d)] = idx->numel();
  SX_CHECK(src->shape == want, ValueError, "[index_add] source of shape ", shape_str(src->shape), " must have shape ",
           shape_str(want), " for input ", describe(x), " and ", idx->numel(), " indices along dim ", d);
  Tensor xf = permute(x, moved(x->dim(), d, 0));
  Tensor sf = permute(alpha == 1.0 ? src : mul(src, Scalar(alpha)), moved(src->dim(), d, 0));
  Tensor r = index_put_front(xf, {idx}, sf, true);
  return permute(r, moved(x->dim(), 0, d));
}

Tensor one_hot(const Tensor& x, int64_t num_classes) {
  host_only(x, "one_hot");
  Tensor idx = as_index(x, "one_hot");
  int64_t n = num_classes;
  if (n < 0) {
    n = 0;
    const int64_t* p = idx->data<int64_t>();
    for (int64_t i = 0; i < idx->numel(); ++i) n = std::max(n, p[i] + 1);
  }
  const int64_t* p = idx->data<int64_t>();
  for (int64_t i = 0; i < idx->numel(); ++i)
    SX_CHECK(p[i] >= 0 && p[i] < n, IndexError, "[one_hot] class ", p[i], " is out of range for ", n, " classes");
  Shape s = idx->shape;
  s.push_back(n);
  Tensor out = zeros(s, DType::Int64);
  int64_t* o = out->data<int64_t>();
  for (int64_t i = 0; i < idx->numel(); ++i) o[i * n + p[i]] = 1;
  return out;
}

// Sorts each row of the last dim (after moving `dim` last); returns values and indices.
static std::pair<Tensor, Tensor> sort_rows(const Tensor& x, int64_t dim, bool descending, int64_t k, bool stable) {
  int64_t d = x->dim() ? wrap_dim(dim, x->dim(), "sort") : 0;
  Tensor xt = x->dim() ? contiguous(detach(transpose(x, d, -1))) : reshape(detach(x), {1});
  int64_t n = xt->shape.back(), rows = n ? xt->numel() / n : 0;
  Shape os = xt->shape;
  os.back() = k;
  Tensor vals = empty(os, x->dtype), idx = empty(os, DType::Int64);
  SX_DISPATCH_ALL(x->dtype, "sort", [&] {
    using T = scalar_t;
    using C = acc_t<T>;
    const T* p = xt->data<T>();
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t r = 0; r < rows; ++r) {
      const T* row = p + r * n;
      std::iota(order.begin(), order.end(), 0);
      auto less = [&](int64_t a, int64_t b) {  // NaN sorts as the largest value
        C va = C(row[a]), vb = C(row[b]);
        bool na = va != va, nb = vb != vb;
        if (descending) return na != nb ? na : (!na && va > vb);
        return na != nb ? nb : (!na && va < vb);
      };
      if (stable || k == n) std::stable_sort(order.begin(), order.end(), less);
      else std::partial_sort(order.begin(), order.begin() + k, order.end(), less);
      for (int64_t j = 0; j < k; ++j) {
        vals->data<T>()[r * k + j] = row[order[size_t(j)]];
        idx->data<int64_t>()[r * k + j] = order[size_t(j)];
      }
    }
  });
  if (x->dim() == 0) return {reshape(vals, {}), reshape(idx, {})};
  vals = transpose(vals, d, -1);
  idx = contiguous(transpose(idx, d, -1));
  vals = contiguous(vals);
  if (is_floating(x->dtype) && needs_grad({&x})) {
    Shape xs = x->shape;
    record("SortBackward", {x}, vals, [xs, d, idx](const Tensor& g) {
      return TensorList{scatter(zeros(xs, g->dtype), d, idx, g)};
    });
  }
  return {vals, idx};
}

std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending, bool stable) {
  host_only(x, "sort");
  int64_t n = x->dim() ? x->shape[wrap_dim(dim, x->dim(), "sort")] : 1;
  return sort_rows(x, dim, descending, n, stable);
}

std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest, bool sorted) {
  host_only(x, "topk");
  int64_t n = x->dim() ? x->shape[wrap_dim(dim, x->dim(), "topk")] : 1;
  SX_CHECK(k >= 0 && k <= n, IndexError, "[topk] k=", k, " is out of range for a dimension of size ", n);
  (void)sorted;  // results are always sorted, which satisfies both settings
  return sort_rows(x, dim, largest, k, false);
}

Tensor nonzero(const Tensor& x) {
  host_only(x, "nonzero");
  Tensor b = contiguous(cast_nograd(x, DType::Bool));
  const bool* p = b->data<bool>();
  std::vector<int64_t> coords;
  int64_t count = 0, nd = x->dim();
  for_coords(x->shape, [&](const Shape& c) {
    if (p[offset_of(c, b->strides)]) {
      coords.insert(coords.end(), c.begin(), c.end());
      ++count;
    }
  });
  Tensor out = empty({count, nd}, DType::Int64);
  std::copy(coords.begin(), coords.end(), out->data<int64_t>());
  return out;
}

namespace {
// Broadcasts the index tensors, checks them, and returns (indices contiguous int64, batch shape).
std::pair<TensorList, Shape> prep_front(const Tensor& x, const TensorList& indices, const char* op) {
  SX_CHECK(int64_t(indices.size()) <= x->dim(), IndexError, "[", op, "] too many indices (", indices.size(),
           ") for a tensor of ", x->dim(), " dims");
  Shape b = indices.empty() ? Shape{} : indices[0]->shape;
  try {
    for (auto& i : indices) b = broadcast_shapes(b, i->shape, op);
  } catch (const ValueError& e) {  // a bad index, not a bad value: IndexError, as in PyTorch and NumPy
    throw IndexError(msg(e.what(), " (shape mismatch between index tensors)"));
  }
  TensorList out;
  for (size_t j = 0; j < indices.size(); ++j) {
    Tensor i = contiguous(expand_view(as_index(indices[j], op), b));
    check_range(i, x->shape[j], "index", int64_t(j));
    out.push_back(i);
  }
  return {out, b};
}
}  // namespace

Tensor index_front(const Tensor& x, const TensorList& indices) {
  host_only(x, "index");
  auto [idx, b] = prep_front(x, indices, "index");
  int64_t k = int64_t(idx.size());
  Tensor xc = contiguous(detach(x));
  Shape rest(x->shape.begin() + k, x->shape.end()), os = b;
  os.insert(os.end(), rest.begin(), rest.end());
  Tensor out = empty(os, x->dtype);
  int64_t block = 1, nb = 1;
  for (auto s : rest) block *= s;
  for (auto s : b) nb *= s;
  size_t bytes = size_t(block) * itemsize(x->dtype);
  for (int64_t i = 0; i < nb; ++i) {
    int64_t off = 0;
    for (int64_t j = 0; j < k; ++j) {
      int64_t v = idx[size_t(j)]->data<int64_t>()[i];
      off += (v < 0 ? v + x->shape[j] : v) * xc->strides[j];
    }
    std::memcpy(out->raw() + size_t(i) * bytes, xc->raw() + off * int64_t(itemsize(x->dtype)), bytes);
  }
  if (!is_floating(x->dtype) || !needs_grad({&x})) return out;
  Shape xs = x->shape;
  return record("IndexBackward", {x}, out, [xs, idx](const Tensor& g) {
    return TensorList{index_put_front(zeros(xs, g->dtype), idx, g, true)};
  });
}

Tensor index_put_front(const Tensor& x, const TensorList& indices, const Tensor& values, bool accumulate) {
  host_only(x, "index_put");
  auto [idx, b] = prep_front(x, indices, "index_put");
  int64_t k = int64_t(idx.size());
  Shape rest(x->shape.begin() + k, x->shape.end()), vs = b;
  vs.insert(vs.end(), rest.begin(), rest.end());
  Shape bs = broadcast_shapes(vs, values->shape, "index_put");
  SX_CHECK(bs == vs, ValueError, "[index_put] values of shape ", shape_str(values->shape),
           " cannot be broadcast to the indexed shape ", shape_str(vs));
  Tensor out = clone_nograd(x);
  Tensor v = clone_nograd(expand_view(cast_nograd(detach(values), x->dtype), vs));
  int64_t block = 1, nb = 1;
  for (auto s : rest) block *= s;
  for (auto s : b) nb *= s;
  SX_DISPATCH_ALL(x->dtype, "index_put", [&] {
    using T = scalar_t;
    T* o = out->data<T>();
    const T* vp = v->data<T>();
    for (int64_t i = 0; i < nb; ++i) {
      int64_t off = 0;
      for (int64_t j = 0; j < k; ++j) {
        int64_t q = idx[size_t(j)]->data<int64_t>()[i];
        off += (q < 0 ? q + x->shape[j] : q) * out->strides[j];
      }
      for (int64_t e = 0; e < block; ++e)
        o[off + e] = accumulate ? T(acc_t<T>(o[off + e]) + acc_t<T>(vp[i * block + e])) : vp[i * block + e];
    }
  });
  if (!is_floating(x->dtype) || !needs_grad({&x, &values})) return out;
  Tensor val = values;
  return record("IndexPutBackward", {x, values}, out, [idx, accumulate, val](const Tensor& g) {
    Tensor gx = accumulate ? g : index_put_front(g, idx, zeros({}, g->dtype), false);
    return TensorList{gx, grad_for(index_front(g, idx), val)};
  });
}

}  // namespace sx
