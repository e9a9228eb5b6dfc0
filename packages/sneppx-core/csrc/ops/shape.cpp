// Shape ops. Views share storage with their input; the vjp of each view undoes its geometry.
#include <algorithm>
#include <limits>

#include "ops/kernels.h"
#include "ops/common.h"

namespace sx {

namespace {
Shape infer_shape(const IntList& shape, int64_t numel, const char* op, const Shape& from) {
  Shape out(shape.begin(), shape.end());
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      SX_CHECK(infer < 0, ValueError, "[", op, "] only one dimension can be -1, got ", shape_str(shape));
      infer = int64_t(i);
    } else {
      SX_CHECK(out[i] >= 0, ValueError, "[", op, "] invalid shape ", shape_str(shape), " for input of shape ",
               shape_str(from));
      // A product past int64 cannot equal numel: report it instead of wrapping around.
      SX_CHECK(out[i] == 0 || known <= std::numeric_limits<int64_t>::max() / out[i], ValueError, "[", op, "] shape ",
               shape_str(shape), " is invalid for input of shape ", shape_str(from), " (", numel, " elements)");
      known *= out[i];
    }
  }
  if (infer >= 0) {
    SX_CHECK(known != 0 && numel % known == 0, ValueError, "[", op, "] shape ", shape_str(shape),
             " is invalid for input of shape ", shape_str(from));
    out[size_t(infer)] = numel / known;
  }
  SX_CHECK(shape_numel(out, op) == numel, ValueError, "[", op, "] shape ", shape_str(shape),
           " is invalid for input of shape ", shape_str(from), " (", numel, " elements)");
  return out;
}

// Strides that view (oldshape, oldstride) as newshape without copying, if any exist.
bool view_strides(const Shape& os, const Shape& ost, const Shape& ns, Shape& nst) {
  nst.assign(ns.size(), 0);
  int64_t numel = 1;
  for (auto s : os) numel *= s;
  if (numel == 0 || os.empty()) {
    nst = contiguous_strides(ns);
    return true;
  }
  int64_t view_d = int64_t(ns.size()) - 1, base = ost.back(), tn = 1, vn = 1;
  for (int64_t d = int64_t(os.size()) - 1; d >= 0; --d) {
    tn *= os[d];
    if (d == 0 || (os[d - 1] != 1 && ost[d - 1] != tn * base)) {
      while (view_d >= 0 && (vn < tn || ns[view_d] == 1)) {
        nst[view_d] = vn * base;
        vn *= ns[view_d];
        --view_d;
      }
      if (vn != tn) return false;
      if (d > 0) {
        base = ost[d - 1];
        tn = 1;
        vn = 1;
      }
    }
  }
  return view_d == -1;
}

// wrap_dim accepts dim 0 of a 0-d tensor (reductions allow it); ops that read a dim's size check first.
void need_dims(const Tensor& x, const char* op) {
  SX_CHECK(x->dim() > 0, IndexError, "[", op, "] expects a tensor with at least 1 dimension, got a 0-d tensor");
}

// The vjp `bw` becomes a graph node only when x takes part in autograd: a view of a tensor without
// history costs one allocation of the impl and its two geometry vectors.
template <typename F>
Tensor view_op(const char* name, const Tensor& x, Shape shape, Shape strides, int64_t offset, F&& bw) {
  Tensor out = make_view(x, std::move(shape), std::move(strides), offset);
  if (!x->requires_grad || !grad_mode::enabled()) return out;
  return record(name, {x}, out, BackwardFn(std::forward<F>(bw)));
}
}  // namespace

Tensor view(const Tensor& x, const IntList& shape) {
  Shape ns = infer_shape(shape, x->numel(), "view", x->shape), nst;
  SX_CHECK(view_strides(x->shape, x->strides, ns, nst), RuntimeError, "[view] a tensor of shape ",
           shape_str(x->shape), " and strides ", shape_str(x->strides), " cannot be viewed as ", shape_str(ns),
           "; use reshape() instead");
  Shape old = x->shape;
  return view_op("ViewBackward", x, ns, nst, x->offset, [old](const Tensor& g) { return TensorList{reshape(g, old)}; });
}

Tensor reshape(const Tensor& x, const IntList& shape) {
  Shape ns = infer_shape(shape, x->numel(), "reshape", x->shape), nst;
  if (ns == x->shape) return view_op("ViewBackward", x, ns, x->strides, x->offset, [](const Tensor& g) { return TensorList{g}; });
  if (view_strides(x->shape, x->strides, ns, nst)) return view(x, shape);
  return view(clone(x), shape);
}

Tensor transpose(const Tensor& x, int64_t d0, int64_t d1) {
  int64_t a = wrap_dim(d0, x->dim(), "transpose"), b = wrap_dim(d1, x->dim(), "transpose");
  if (x->dim() == 0) return x;
  Shape s = x->shape, st = x->strides;
  std::swap(s[a], s[b]);
  std::swap(st[a], st[b]);
  return view_op("TransposeBackward", x, s, st, x->offset, [a, b](const Tensor& g) { return TensorList{transpose(g, a, b)}; });
}

Tensor permute(const Tensor& x, const IntList& dims) {
  SX_CHECK(int64_t(dims.size()) == x->dim(), ValueError, "[permute] expected ", x->dim(), " dims, got ", shape_str(dims));
  IntList d = normalize_dims(dims, x->dim(), "permute"), p(dims.size()), inv(dims.size());
  Shape s, st;
  for (size_t i = 0; i < dims.size(); ++i) {
    p[i] = wrap_dim(dims[i], x->dim(), "permute");
    s.push_back(x->shape[p[i]]);
    st.push_back(x->strides[p[i]]);
    inv[size_t(p[i])] = int64_t(i);
  }
  return view_op("PermuteBackward", x, s, st, x->offset, [inv](const Tensor& g) { return TensorList{permute(g, inv)}; });
}

Tensor squeeze(const Tensor& x, const OptDims& dims) {
  IntList d = normalize_dims(dims, x->dim(), "squeeze");
  Shape s, st;
  for (int64_t i = 0; i < x->dim(); ++i) {
    bool drop = x->shape[i] == 1 && std::find(d.begin(), d.end(), i) != d.end();
    if (!drop) s.push_back(x->shape[i]), st.push_back(x->strides[i]);
  }
  Shape old = x->shape;
  return view_op("SqueezeBackward", x, s, st, x->offset, [old](const Tensor& g) { return TensorList{reshape(g, old)}; });
}

Tensor unsqueeze(const Tensor& x, int64_t dim) {
  int64_t d = wrap_dim(dim, x->dim() + 1, "unsqueeze");
  Shape s = x->shape, st = x->strides;
  int64_t stride = d < x->dim() ? x->shape[d] * x->strides[d] : 1;
  s.insert(s.begin() + d, 1);
  st.insert(st.begin() + d, stride);
  return view_op("UnsqueezeBackward", x, s, st, x->offset, [d](const Tensor& g) { return TensorList{squeeze(g, IntList{d})}; });
}

Tensor expand(const Tensor& x, const IntList& shape) {
  SX_CHECK(int64_t(shape.size()) >= x->dim(), ValueError, "[expand] the number of sizes ", shape.size(),
           " must be at least the number of dims ", x->dim());
  Shape s(shape.begin(), shape.end());
  int64_t off = int64_t(s.size()) - x->dim();
  for (int64_t i = 0; i < int64_t(s.size()); ++i) {
    int64_t have = i < off ? 1 : x->shape[i - off];
    if (s[i] == -1) {
      SX_CHECK(i >= off, ValueError, "[expand] -1 is not allowed in a new leading dimension");
      s[i] = have;
    }
    SX_CHECK(s[i] >= 0, ValueError, "[expand] size ", s[i], " at dim ", i, " is negative (only -1, keep the size, is "
             "allowed): shape ", shape_str(x->shape), " to ", shape_str(shape));
    SX_CHECK(have == s[i] || have == 1, ValueError, "[expand] the expanded size ", s[i], " must match the existing size ",
             have, " at dim ", i, " (shape ", shape_str(x->shape), " to ", shape_str(shape), ")");
  }
  view_numel(s, "expand");
  if (s == x->shape) return x;
  Tensor v = expand_view(x, s);
  Shape old = x->shape;
  return view_op("ExpandBackward", x, v->shape, v->strides, x->offset, [old](const Tensor& g) { return TensorList{sum_to(g, old)}; });
}

Tensor flatten(const Tensor& x, int64_t start, int64_t end) {
  if (x->dim() == 0) return reshape(x, {1});
  int64_t a = wrap_dim(start, x->dim(), "flatten"), b = wrap_dim(end, x->dim(), "flatten");
  SX_CHECK(a <= b, ValueError, "[flatten] start_dim ", start, " cannot come after end_dim ", end);
  IntList s(x->shape.begin(), x->shape.begin() + a);
  int64_t n = 1;
  for (int64_t i = a; i <= b; ++i) n *= x->shape[i];
  s.push_back(n);
  s.insert(s.end(), x->shape.begin() + b + 1, x->shape.end());
  return reshape(x, s);
}

Tensor unflatten(const Tensor& x, int64_t dim, const IntList& sizes) {
  need_dims(x, "unflatten");
  int64_t d = wrap_dim(dim, x->dim(), "unflatten");
  Shape inner = infer_shape(sizes, x->shape[d], "unflatten", x->shape);
  IntList s(x->shape.begin(), x->shape.begin() + d);
  s.insert(s.end(), inner.begin(), inner.end());
  s.insert(s.end(), x->shape.begin() + d + 1, x->shape.end());
  return reshape(x, s);
}

Tensor slice(const Tensor& x, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> stop, int64_t step) {
  need_dims(x, "slice");
  int64_t d = wrap_dim(dim, x->dim(), "slice");
  SX_CHECK(step > 0, ValueError, "[slice] step must be positive, got ", step);
  int64_t n = x->shape[d];
  auto clampi = [n](int64_t v) { return v < 0 ? std::max<int64_t>(v + n, 0) : std::min(v, n); };
  int64_t b = start ? clampi(*start) : 0, e = stop ? clampi(*stop) : n;
  int64_t len = e > b ? 1 + (e - b - 1) / step : 0;  // no overflow for steps near 2**63
  Shape s = x->shape, st = x->strides;
  s[d] = len;
  if (len > 1) st[d] *= step;  // a huge step with one element left must not overflow the stride
  Shape old = x->shape;
  return view_op("SliceBackward", x, s, st, x->offset + b * x->strides[d],
                 [old, d, b, step](const Tensor& g) { return TensorList{slice_backward(g, old, d, b, step)}; });
}

Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length) {
  need_dims(x, "narrow");
  int64_t d = wrap_dim(dim, x->dim(), "narrow");
  int64_t n = x->shape[d], b = start < 0 ? start + n : start;
  SX_CHECK(b >= 0 && length >= 0 && b + length <= n, IndexError, "[narrow] start ", start, " and length ", length,
           " are out of range for dim ", d, " of size ", n);
  return slice(x, d, b, b + length, 1);
}

// The vjp of x.select(d, i) for a dim d of n: g in row i of zeros. It captures no vector, so that a
// view outside autograd allocates nothing for it.
static auto select_vjp(int64_t d, int64_t i, int64_t n) {
  return [d, i, n](const Tensor& g) {
    Tensor gu = unsqueeze(g, d);
    Shape old = gu->shape;
    old[size_t(d)] = n;
    return TensorList{slice_backward(gu, old, d, i, 1)};
  };
}

Tensor select(const Tensor& x, int64_t dim, int64_t index) {
  SX_CHECK(x->dim() > 0, IndexError, "[select] cannot index a 0-d tensor");
  int64_t d = wrap_dim(dim, x->dim(), "select");
  int64_t n = x->shape[d];
  SX_CHECK(index >= -n && index < n, IndexError, "[index] index ", index, " is out of bounds for dimension ", d,
           " with size ", n);
  int64_t i = index < 0 ? index + n : index;
  Shape s = x->shape, st = x->strides;
  s.erase(s.begin() + d);
  st.erase(st.begin() + d);
  return view_op("SelectBackward", x, std::move(s), std::move(st), x->offset + i * x->strides[d], select_vjp(d, i, n));
}

TensorList unbind(const Tensor& x, int64_t dim) {
  SX_CHECK(x->dim() > 0, IndexError, "[unbind] expects a tensor with at least 1 dimension, got a 0-d tensor");
  int64_t d = wrap_dim(dim, x->dim(), "unbind");
  const int64_t n = x->shape[d], step = x->strides[d];
  Shape s = x->shape, st = x->strides;
  s.erase(s.begin() + d);
  st.erase(st.begin() + d);
  TensorList out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    out[size_t(i)] = view_op("SelectBackward", x, s, st, x->offset + i * step, select_vjp(d, i, n));
  return out;
}

Tensor slice_backward(const Tensor& g, const Shape& shape, int64_t dim, int64_t start, int64_t step) {
  Tensor out = zeros(shape, g->dtype, g->device());
  Shape st = out->strides;
  if (g->shape[dim] > 1) st[dim] *= step;
  Tensor dst = make_view(out, g->shape, st, start * out->strides[dim]);
  copy_into(dst, g);
  return record("SliceScatterBackward", {g}, out, [dim, start, step, n = g->shape[dim]](const Tensor& gg) {
    return TensorList{slice(gg, dim, start, start + (n - 1) * step + 1, step)};
  });
}

// The geometry of the diagonal view: dims d1 and d2 of (shape, strides) replaced by a last dim that
// steps along both; d1, d2 are wrapped.
struct Diag {
  Shape shape, strides;
  int64_t offset;
};
static Diag diag_geom(const Shape& shape, const Shape& strides, int64_t base, int64_t offset, int64_t d1,
                      int64_t d2) {
  const int64_t rows = shape[size_t(d1)], cols = shape[size_t(d2)];
  int64_t n = 0;  // an offset beyond the matrix (any int64) leaves it empty
  if (offset >= 0 && offset < cols) n = std::min(rows, cols - offset);
  if (offset < 0 && offset > -rows) n = std::min(rows + offset, cols);
  Diag v{{}, {}, base};
  for (size_t i = 0; i < shape.size(); ++i)
    if (int64_t(i) != d1 && int64_t(i) != d2) v.shape.push_back(shape[i]), v.strides.push_back(strides[i]);
  v.shape.push_back(n);
  v.strides.push_back(strides[size_t(d1)] + strides[size_t(d2)]);
  if (n > 0) v.offset += offset >= 0 ? offset * strides[size_t(d2)] : -offset * strides[size_t(d1)];
  return v;
}
static std::pair<int64_t, int64_t> diag_dims(int64_t nd, int64_t d1, int64_t d2, const char* op) {
  SX_CHECK(nd >= 2, ValueError, "[", op, "] expects a tensor with at least 2 dimensions, got ", nd);
  int64_t a = wrap_dim(d1, nd, op), b = wrap_dim(d2, nd, op);
  SX_CHECK(a != b, ValueError, "[", op, "] dim1 and dim2 cannot be the same dim, got ", d1, " and ", d2);
  return {a, b};
}

Tensor diagonal(const Tensor& x, int64_t offset, int64_t d1, int64_t d2) {
  auto [a, b] = diag_dims(x->dim(), d1, d2, "diagonal");
  Diag v = diag_geom(x->shape, x->strides, x->offset, offset, a, b);
  auto bw = [xs = x->shape, offset, a, b](const Tensor& g) {
    return TensorList{diagonal_backward(g, xs, offset, a, b)};
  };
  return view_op("DiagonalBackward", x, v.shape, v.strides, v.offset, bw);
}

Tensor diagonal_backward(const Tensor& g, const Shape& shape, int64_t offset, int64_t d1, int64_t d2) {
  auto [a, b] = diag_dims(int64_t(shape.size()), d1, d2, "diag_embed");
  Tensor out = zeros(shape, g->dtype, g->device());
  Diag v = diag_geom(out->shape, out->strides, 0, offset, a, b);
  SX_CHECK(v.shape == g->shape, ValueError, "[diag_embed] the diagonal of shape ", shape_str(shape), " is ",
           shape_str(v.shape), ", got values of shape ", shape_str(g->shape));
  if (g->numel()) copy_into(make_view(out, v.shape, v.strides, v.offset), g);
  if (!needs_grad({&g})) return out;
  return record("DiagEmbedBackward", {g}, out, [offset, a, b](const Tensor& gg) {
    return TensorList{diagonal(gg, offset, a, b)};
  });
}

Tensor diag_embed(const Tensor& x, int64_t offset, int64_t d1, int64_t d2) {
  SX_CHECK(x->dim() >= 1, ValueError, "[diag_embed] expects a tensor with at least 1 dimension, got a 0-d tensor");
  auto [a, b] = diag_dims(x->dim() + 1, d1, d2, "diag_embed");
  constexpr int64_t kMaxOffset = int64_t(1) << 31;  // beyond it the matrices could not be allocated
  SX_CHECK(offset > -kMaxOffset && offset < kMaxOffset, ValueError, "[diag_embed] offset ", offset, " is too large");
  const int64_t n = x->shape.back() + (offset < 0 ? -offset : offset);
  Shape s;
  auto lead = x->shape.begin();
  for (int64_t i = 0; i <= x->dim(); ++i) s.push_back(i == a || i == b ? n : *lead++);
  return diagonal_backward(x, s, offset, a, b);
}

Tensor cat(const TensorList& xs, int64_t dim) {
  SX_CHECK(!xs.empty(), ValueError, "[cat] expected a non-empty list of tensors");
  const Tensor* ref = nullptr;
  for (auto& t : xs) if (!(t->dim() == 1 && t->shape[0] == 0)) { ref = &t; break; }  // legacy empty tensors skip
  if (!ref) return clone(xs[0]);
  SX_CHECK((*ref)->dim() > 0, ValueError, "[cat] zero-dimensional tensors cannot be concatenated; use stack()");
  int64_t d = wrap_dim(dim, (*ref)->dim(), "cat");
  DType dt = xs[0]->dtype;
  Shape s = (*ref)->shape;
  s[d] = 0;
  for (auto& t : xs) {
    dt = promote_types(dt, t->dtype);
    if (t->dim() == 1 && t->shape[0] == 0) continue;
    SX_CHECK(t->dim() == (*ref)->dim(), ValueError, "[cat] tensors must have the same number of dims, got ",
             shape_str((*ref)->shape), " and ", shape_str(t->shape));
    for (int64_t i = 0; i < t->dim(); ++i)
      SX_CHECK(i == d || t->shape[i] == (*ref)->shape[i], ValueError, "[cat] sizes must match except in dim ", d,
               ", got ", shape_str((*ref)->shape), " and ", shape_str(t->shape));
    s[d] += t->shape[d];
  }
  Tensor out = empty(s, dt, (*ref)->device());
  const bool done = kern::cat.has(out->device().type) && kern::cat(out->device())(out, xs, d);
  int64_t off = 0;
  std::vector<int64_t> sizes;
  for (auto& t : xs) {
    int64_t len = t->dim() == 1 && t->shape[0] == 0 && (*ref)->dim() != 1 ? 0 : t->shape[d];
    sizes.push_back(len);
    if (len == 0 || done) continue;
    Shape vs = out->shape;
    vs[d] = len;
    copy_into(make_view(out, vs, out->strides, off * out->strides[d]), t);
    off += len;
  }
  TensorList inputs(xs.begin(), xs.end());
  return record("CatBackward", inputs, out, [sizes, d, inputs](const Tensor& g) {
    TensorList r;
    int64_t o = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      r.push_back(sizes[i] || inputs[i]->dim() ? grad_for(narrow(g, d, o, sizes[i]), inputs[i]) : nullptr);
      o += sizes[i];
    }
    return r;
  });
}

Tensor stack(const TensorList& xs, int64_t dim) {
  SX_CHECK(!xs.empty(), ValueError, "[stack] expected a non-empty list of tensors");
  int64_t d = wrap_dim(dim, xs[0]->dim() + 1, "stack");
  TensorList u;
  for (auto& t : xs) {
    SX_CHECK(t->shape == xs[0]->shape, ValueError, "[stack] expects each tensor to be equal size, got ",
             shape_str(xs[0]->shape), " and ", shape_str(t->shape));
    u.push_back(unsqueeze(t, d));
  }
  return cat(u, d);
}

TensorList split(const Tensor& x, const IntList& sizes, int64_t dim) {
  need_dims(x, "split");
  int64_t d = wrap_dim(dim, x->dim(), "split"), total = 0;
  for (auto s : sizes) total += s;
  SX_CHECK(total == x->shape[d], ValueError, "[split] sizes ", shape_str(sizes), " do not sum to ", x->shape[d],
           " (dim ", d, " of ", shape_str(x->shape), ")");
  TensorList out;
  int64_t o = 0;
  for (auto s : sizes) out.push_back(narrow(x, d, o, s)), o += s;
  return out;
}

TensorList split_size(const Tensor& x, int64_t size, int64_t dim) {
  SX_CHECK(size > 0, ValueError, "[split] split_size must be positive, got ", size);
  need_dims(x, "split");
  int64_t d = wrap_dim(dim, x->dim(), "split"), n = x->shape[d];
  IntList sizes;
  for (int64_t o = 0; o < n; o += size) sizes.push_back(std::min(size, n - o));
  if (sizes.empty()) sizes.push_back(0);
  return split(x, sizes, d);
}

TensorList chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  SX_CHECK(chunks > 0, ValueError, "[chunk] chunks must be positive, got ", chunks);
  need_dims(x, "chunk");
  int64_t n = x->shape[wrap_dim(dim, x->dim(), "chunk")];
  return split_size(x, std::max<int64_t>(1, (n + chunks - 1) / chunks), dim);
}

static Tensor tri_mask(const Tensor& x, int64_t k, bool lower) {
  SX_CHECK(x->dim() >= 2, ValueError, "[", lower ? "tril" : "triu", "] expected at least 2 dims, got ", shape_str(x->shape));
  int64_t n = x->shape[x->dim() - 2], m = x->shape[x->dim() - 1];
  Tensor r = unsqueeze(arange(0, double(n), 1, DType::Int64), 1), c = arange(0, double(m), 1, DType::Int64);
  Tensor diff = sub(c, r);  // col - row
  Tensor keep = binary(lower ? BinaryOp::Le : BinaryOp::Ge, diff, scalar_tensor(Scalar(k), DType::Int64));
  if (keep->device() != x->device()) keep = to_device(keep, x->device());
  return where(keep, x, zeros({}, x->dtype, x->device()));
}
// The kernel where the device has one, else the mask composition.
static Tensor tri(const Tensor& x, int64_t k, bool lower) {
  SX_CHECK(x->dim() >= 2, ValueError, "[", lower ? "tril" : "triu", "] expected at least 2 dims, got ", shape_str(x->shape));
  if (!kern::tri.has(x->device().type)) return tri_mask(x, k, lower);
  int64_t n = x->shape[x->dim() - 2], m = x->shape[x->dim() - 1];
  int64_t kc = std::clamp<int64_t>(k, -n - 1, m + 1);  // beyond these every row is whole or empty
  Tensor src = x->is_contiguous() ? x : clone_nograd(x);
  Tensor out = empty(x->shape, x->dtype, x->device());
  kern::tri(out->device())(out, src, kc, lower);
  return record(lower ? "TrilBackward" : "TriuBackward", {x}, out,
                [k, lower](const Tensor& g) { return TensorList{lower ? tril(g, k) : triu(g, k)}; });
}
bool tri_into(const Tensor& x, int64_t k, bool lower) {
  SX_CHECK(x->dim() >= 2, ValueError, "[", lower ? "tril_" : "triu_", "] expected at least 2 dims, got ",
           shape_str(x->shape));
  if (!kern::tri.has(x->device().type) || !x->is_contiguous() || !writes_into(x, {})) return false;
  x->check_writable(lower ? "tril_" : "triu_");
  int64_t n = x->shape[x->dim() - 2], m = x->shape[x->dim() - 1];
  kern::tri(x->device())(x, x, std::clamp<int64_t>(k, -n - 1, m + 1), lower);
  x->bump_version();
  return true;
}

Tensor tril(const Tensor& x, int64_t k) { return tri(x, k, true); }
Tensor triu(const Tensor& x, int64_t k) { return tri(x, k, false); }

Tensor flip(const Tensor& x, const IntList& dims) {
  IntList d = normalize_dims(dims, x->dim(), "flip");
  Shape st = x->strides;
  int64_t off = x->offset;
  for (auto i : d) {
    if (x->shape[i] > 0) off += (x->shape[i] - 1) * st[i];
    st[i] = -st[i];
  }
  Tensor out = clone_nograd(make_view(x, x->shape, st, off));
  return record("FlipBackward", {x}, out, [d](const Tensor& g) { return TensorList{flip(g, d)}; });
}

Tensor roll(const Tensor& x, const IntList& shifts, const IntList& dims) {
  if (dims.empty()) {
    SX_CHECK(shifts.size() == 1, ValueError, "[roll] without dims, shifts must have one element");
    return reshape(roll(flatten(x, 0, -1), shifts, {0}), x->shape);
  }
  SX_CHECK(shifts.size() == dims.size(), ValueError, "[roll] shifts and dims must have the same length");
  need_dims(x, "roll");
  Tensor r = x;
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = wrap_dim(dims[i], x->dim(), "roll"), n = x->shape[d];
    if (n == 0) continue;
    int64_t s = ((shifts[i] % n) + n) % n;
    if (s == 0) continue;
    r = cat({narrow(r, d, n - s, s), narrow(r, d, 0, n - s)}, d);
  }
  return r == x ? clone(x) : r;  // like PyTorch, roll always returns new memory, even for a zero shift
}

Tensor repeat(const Tensor& x, const IntList& reps) {
  SX_CHECK(int64_t(reps.size()) >= x->dim(), ValueError, "[repeat] number of repeat dims ", reps.size(),
           " cannot be smaller than the number of tensor dims ", x->dim());
  int64_t lead = int64_t(reps.size()) - x->dim();
  IntList unsq, exp_shape, final_shape;
  for (int64_t i = 0; i < int64_t(reps.size()); ++i) {
    SX_CHECK(reps[i] >= 0, ValueError, "[repeat] repeats must be non-negative, got ", shape_str(reps));
    int64_t s = i < lead ? 1 : x->shape[i - lead];
    unsq.push_back(1), unsq.push_back(s);
    exp_shape.push_back(reps[i]), exp_shape.push_back(s);
    final_shape.push_back(reps[i] * s);
  }
  // clone, not contiguous: with every repeat 1 the expand is x itself, and repeat must still copy.
  return reshape(clone(expand(reshape(x, unsq), exp_shape)), final_shape);
}

namespace {
// x flattened when no dim is given (or x is 0-d), and the dim repeated.
std::pair<Tensor, int64_t> interleave_dim(const Tensor& x, std::optional<int64_t> dim) {
  Tensor y = !dim || x->dim() == 0 ? reshape(x, {-1}) : x;
  return {y, wrap_dim(dim.value_or(0), y->dim(), "repeat_interleave")};
}

void check_output_size(std::optional<int64_t> output_size, int64_t n) {
  SX_CHECK(!output_size || *output_size == n, ValueError, "[repeat_interleave] output_size ", output_size.value_or(0),
           " does not match the result's length ", n, " along the repeated dim");
}
}  // namespace

Tensor repeat_interleave(const Tensor& x, int64_t repeats, std::optional<int64_t> dim,
                         std::optional<int64_t> output_size) {
  SX_CHECK(repeats >= 0, ValueError, "[repeat_interleave] repeats must be >= 0, got ", repeats);
  auto [y, d] = interleave_dim(x, dim);
  IntList wide = y->shape, out = y->shape;
  SX_CHECK(repeats == 0 || out[size_t(d)] <= std::numeric_limits<int64_t>::max() / repeats, ValueError,
           "[repeat_interleave] ", out[size_t(d)], " slices repeated ", repeats, " times are more than an int64 can hold");
  wide.insert(wide.begin() + d + 1, repeats);
  out[size_t(d)] *= repeats;
  check_output_size(output_size, out[size_t(d)]);
  // clone, not contiguous: with one repeat the expand is y itself, and the result must still be a copy.
  return reshape(clone(expand(unsqueeze(y, d + 1), wide)), out);
}

Tensor repeat_interleave(const Tensor& x, const Tensor& counts, std::optional<int64_t> dim,
                         std::optional<int64_t> output_size) {
  SX_CHECK(is_integral(counts->dtype, false) && counts->dim() <= 1, TypeError,
           "[repeat_interleave] repeats must be an integer or a 0-d or 1-d integer tensor, got ", describe(counts));
  Tensor c = contiguous(to_dtype(to_device(counts, Device{}), DType::Int64));
  const int64_t* p = c->data<int64_t>();
  if (c->numel() == 1) return repeat_interleave(x, p[0], dim, output_size);
  auto [y, d] = interleave_dim(x, dim);
  const int64_t n = y->shape[size_t(d)];
  SX_CHECK(c->numel() == n, ValueError, "[repeat_interleave] repeats must hold one count for each of the ", n,
           " slices along dim ", d, " of ", describe(y), ", got ", describe(counts));
  int64_t total = 0;
  for (int64_t i = 0; i < n; ++i) {
    SX_CHECK(p[i] >= 0, ValueError, "[repeat_interleave] repeats must be >= 0, got ", p[i], " at position ", i);
    SX_CHECK(p[i] <= std::numeric_limits<int64_t>::max() - total, ValueError,
             "[repeat_interleave] the repeats add up to more than an int64 can hold");
    total += p[i];
  }
  check_output_size(output_size, total);
  Tensor index = empty({total}, DType::Int64, Device{});
  int64_t* q = index->data<int64_t>();
  for (int64_t i = 0; i < n; ++i) q = std::fill_n(q, p[i], i);
  return index_select(y, d, to_device(index, y->device()));
}

}  // namespace sx
