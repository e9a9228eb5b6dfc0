// CUDA kernels of the indexing family (slots in ops/kernels.h): range checks, gather, scatter
// (set, add, max, min, mul), index_select, index_add, advanced indexing of the leading dims, one_hot
// and row sorts. One thread per element of the index (or of the output); a bad index raises a
// device flag that the host reads after the work. Scatters with repeated indices combine through
// atomic read-modify-writes, so a repeated "set" keeps one of the values (PyTorch's CUDA scatter
// leaves that unspecified too) and float additions may be summed in any order.
#include <cub/device/device_scan.cuh>
#include <cub/device/device_segmented_sort.cuh>

#include "cuda/cuda_util.cuh"
#include "cuda/kernels.h"
#include "ops/index_math.h"

namespace sx::cuda {

namespace {

// i wrapped into [0, size), or -1 (the flag raised) when it lies outside [-size, size).
__device__ inline int64_t checked(int64_t i, int64_t size, int* bad) {
  if (i < 0) i += size;
  if (i < 0 || i >= size) {
    *bad = 1;
    return -1;
  }
  return i;
}

// *addr = f(*addr) as one atomic step (compare-and-swap on the aligned word holding it: the 4-byte
// word around a 1- or 2-byte element; the allocator's blocks are multiples of 512 bytes).
template <typename T, typename F> __device__ void atomic_update(T* addr, F f) {
  if constexpr (sizeof(T) < 4) {
    auto* word = reinterpret_cast<unsigned*>(reinterpret_cast<uintptr_t>(addr) & ~uintptr_t(3));
    const unsigned shift = unsigned(reinterpret_cast<uintptr_t>(addr) & 3) * 8;
    const unsigned mask = ((1u << (8 * sizeof(T))) - 1) << shift;
    unsigned old = *word, seen;
    do {
      seen = old;
      unsigned bits = (seen & mask) >> shift;
      T cur, next;
      memcpy(&cur, &bits, sizeof(T));  // little-endian: the low bytes
      next = f(cur);
      bits = 0;
      memcpy(&bits, &next, sizeof(T));
      old = atomicCAS(word, seen, (seen & ~mask) | (bits << shift));
    } while (old != seen);
  } else {
    using W = std::conditional_t<sizeof(T) == 4, unsigned, unsigned long long>;
    auto* word = reinterpret_cast<W*>(addr);
    W old = *word, seen;
    do {
      seen = old;
      T cur, next;
      memcpy(&cur, &seen, sizeof(T));
      next = f(cur);
      W nw;
      memcpy(&nw, &next, sizeof(T));
      old = atomicCAS(word, seen, nw);
    } while (old != seen);
  }
}

template <typename T> __device__ void scatter_one(ScatterOp op, T* dst, T v) {
  if (op == ScatterOp::Set) *dst = v;
  else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (op == ScatterOp::Add) atomicAdd(dst, v);
    else atomic_update(dst, [op, v](T a) { return scatter_value(op, a, v); });
  } else {
    atomic_update(dst, [op, v](T a) { return scatter_value(op, a, v); });
  }
}

// A view of t with idx's shape and t's strides, but stride 0 along dim d (d's position comes from the index).
Tensor along(const Tensor& t, const Shape& shape, int64_t d) {
  Shape st = t->strides;
  st[size_t(d)] = 0;
  return make_view(t, shape, st, t->offset);
}

template <typename T> __global__ void one_hot_kernel(const int64_t* idx, int64_t* out, int64_t n, int64_t c, int* bad) {
  SX_GRID_LOOP(i, n) {
    int64_t k = idx[i];
    if (k >= 0 && k < c) out[i * c + k] = 1;
    else *bad = 1;
  }
}

__global__ void in_range_kernel(const int64_t* idx, int64_t n, int64_t size, int* bad) {
  SX_GRID_LOOP(i, n) checked(idx[i], size, bad);
}

// index_select and index_add see out / src as (outer, n, inner) around dim d.
struct Lines {
  int64_t outer, n, inner;
};
Lines lines(const Shape& s, int64_t d) {
  Lines L{1, s[size_t(d)], 1};
  for (int64_t i = 0; i < d; ++i) L.outer *= s[size_t(i)];
  for (size_t i = size_t(d) + 1; i < s.size(); ++i) L.inner *= s[i];
  return L;
}

// Element offset of (outer o, position k along d, inner j) in a tensor of `shape` and `strides`.
struct Strided {
  int nd = 0, d = 0;
  int64_t size[kMaxDims] = {}, stride[kMaxDims] = {};
  __device__ int64_t at(int64_t o, int64_t k, int64_t j) const {
    int64_t off = k * stride[d];
    for (int i = nd - 1; i > d; --i) off += (j % size[i]) * stride[i], j /= size[i];
    for (int i = d - 1; i >= 0; --i) off += (o % size[i]) * stride[i], o /= size[i];
    return off;
  }
};
Strided strided(const char* op, const Tensor& t, int64_t d) {
  SX_CHECK(t->dim() <= kMaxDims, NotImplementedError, "[", op, "] the CUDA kernel takes at most ", kMaxDims,
           " dimensions, got ", t->dim());
  Strided s;
  s.nd = int(t->dim());
  s.d = int(d);
  for (int i = 0; i < s.nd; ++i) s.size[i] = t->shape[size_t(i)], s.stride[i] = t->strides[size_t(i)];
  return s;
}

template <typename T>
__global__ void index_select_kernel(T* out, const T* x, Strided xs, const int64_t* idx, Lines L, int64_t size) {
  SX_GRID_LOOP(e, L.outer * L.n * L.inner) {
    int64_t j = e % L.inner, k = (e / L.inner) % L.n, o = e / (L.inner * L.n);
    int64_t i = idx[k];
    out[e] = x[xs.at(o, i < 0 ? i + size : i, j)];
  }
}

template <typename T, typename C>
__global__ void index_add_kernel(T* out, Strided os, const T* src, const int64_t* idx, Lines L, int64_t size, C alpha) {
  SX_GRID_LOOP(e, L.outer * L.n * L.inner) {
    int64_t j = e % L.inner, k = (e / L.inner) % L.n, o = e / (L.inner * L.n);
    int64_t i = idx[k];
    T v = src[e];
    T* dst = out + os.at(o, i < 0 ? i + size : i, j);
    if constexpr (std::is_same_v<T, bool>) {
      if (alpha && v) *dst = true;  // or-ing true in: any order gives the same
    } else if constexpr (std::is_floating_point_v<T>) {
      atomicAdd(dst, T(alpha * C(v)));
    } else {
      atomic_update(dst, [alpha, v](T a) { return T(C(a) + alpha * C(v)); });
    }
  }
}

// Advanced indexing of the leading dims: idx holds k device pointers to index arrays of nb entries.
struct Front {
  int k = 0;
  const int64_t* idx[kMaxDims] = {};
  int64_t size[kMaxDims] = {}, stride[kMaxDims] = {};
  __device__ int64_t offset(int64_t i) const {
    int64_t off = 0;
    for (int j = 0; j < k; ++j) {
      int64_t v = idx[j][i];
      off += (v < 0 ? v + size[j] : v) * stride[j];
    }
    return off;
  }
};
Front front(const Tensor& t, const TensorList& idx) {
  SX_CHECK(int(idx.size()) <= kMaxDims, NotImplementedError, "[index] the CUDA kernel takes at most ", kMaxDims,
           " index tensors, got ", idx.size());
  Front f;
  f.k = int(idx.size());
  for (int j = 0; j < f.k; ++j)
    f.idx[j] = idx[size_t(j)]->data<int64_t>(), f.size[j] = t->shape[size_t(j)], f.stride[j] = t->strides[size_t(j)];
  return f;
}

template <typename T> __global__ void index_front_kernel(T* out, const T* x, Front f, int64_t nb, int64_t block) {
  SX_GRID_LOOP(e, nb * block) out[e] = x[f.offset(e / block) + e % block];
}

// Accumulating puts run on one thread in row-major order (repeated positions add up as on the CPU).
template <typename T>
__global__ void index_put_kernel(T* out, const T* v, Front f, int64_t nb, int64_t block, bool accumulate) {
  if (accumulate) {
    if (blockIdx.x == 0 && threadIdx.x == 0)
      for (int64_t e = 0; e < nb * block; ++e) {
        T* dst = out + f.offset(e / block) + e % block;
        *dst = T(acc_t<T>(*dst) + acc_t<T>(v[e]));
      }
    return;
  }
  SX_GRID_LOOP(e, nb * block) out[f.offset(e / block) + e % block] = v[e];
}

// Sort keys of each row (descending: complemented, so one ascending stable sort serves both) and their positions.
template <typename T>
__global__ void sort_keys_kernel(const T* x, uint64_t* keys, int64_t* pos, int64_t total, int64_t n, bool desc) {
  SX_GRID_LOOP(e, total) {
    uint64_t key = sort_key<acc_t<T>>(acc_t<T>(x[e]));
    keys[e] = desc ? ~key : key;
    pos[e] = e % n;
  }
}

__global__ void row_offsets(int64_t* offs, int64_t rows, int64_t n) { SX_GRID_LOOP(r, rows + 1) offs[r] = r * n; }

template <typename T>
__global__ void take_sorted(const T* x, const int64_t* pos, T* values, int64_t* indices, int64_t rows, int64_t n,
                            int64_t k) {
  SX_GRID_LOOP(e, rows * k) {
    int64_t r = e / k, i = pos[r * n + e % k];
    indices[e] = i;
    values[e] = x[r * n + i];
  }
}

// flags[i] = 1 where the bool mask is true.
__global__ void mask_flags(const bool* mask, int64_t* flags, int64_t n) { SX_GRID_LOOP(i, n) flags[i] = mask[i]; }

// The positions of the true entries among the mask's n: pos (exclusive running count) and their number.
struct Compaction {
  Scratch pos;
  int64_t count;
};
Compaction compact(const bool* mask, int64_t n, Device d, const char* op) {
  Scratch flags(size_t(n) * 8, d), pos(size_t(n + 1) * 8, d);
  int64_t* f = flags.as<int64_t>();
  int64_t* p = pos.as<int64_t>();
  mask_flags<<<blocks_for(n), kThreads, 0, stream()>>>(mask, f, n);
  size_t bytes = 0;
  SX_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, bytes, f, p + 1, n, stream()), op);
  Scratch temp(bytes ? bytes : 1, d);
  SX_CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp.as<void>(), bytes, f, p + 1, n, stream()), op);
  SX_CUDA_CHECK(cudaMemsetAsync(p, 0, 8, stream()), op);
  int64_t count = 0;
  SX_CUDA_CHECK(cudaMemcpyAsync(&count, p + n, 8, cudaMemcpyDeviceToHost, stream()), op);
  SX_CUDA_CHECK(cudaStreamSynchronize(stream()), op);
  return {std::move(pos), count};
}

template <typename W>
__global__ void masked_copy(const W* x, W* out, const bool* mask, const int64_t* pos, int64_t m, int64_t block) {
  SX_GRID_LOOP(e, m * block) {
    int64_t i = e / block;
    if (mask[i]) out[pos[i] * block + e % block] = x[e];
  }
}

struct Coords {
  int nd = 0;
  int64_t size[kMaxDims] = {};
};

__global__ void nonzero_kernel(const bool* mask, const int64_t* pos, int64_t* out, int64_t n, Coords c) {
  SX_GRID_LOOP(i, n) {
    if (!mask[i]) continue;
    int64_t* row = out + pos[i] * c.nd, rem = i;
    for (int d = c.nd - 1; d >= 0; --d) row[d] = rem % c.size[d], rem /= c.size[d];
  }
}

}  // namespace

int64_t count_nonzero(const Tensor& x) {
  int64_t n = x->numel();
  if (n == 0) return 0;
  use_device(x->device());
  return compact(x->data<bool>(), n, x->device(), "count_nonzero").count;
}

void masked_select(const Tensor& out, const Tensor& x, const Tensor& mask) {
  const int64_t m = mask->numel(), block = m ? x->numel() / m : 0;
  if (m * block == 0) return;
  use_device(x->device());
  Compaction c = compact(mask->data<bool>(), m, x->device(), "masked_select");
  with_word(itemsize(x->dtype), [&](auto word) {
    using W = decltype(word);
    masked_copy<W><<<blocks_for(m * block), kThreads, 0, stream()>>>(x->data<W>(), out->data<W>(), mask->data<bool>(),
                                                                     c.pos.as<int64_t>(), m, block);
  });
  check_launch("masked_select");
}

void nonzero(const Tensor& out, const Tensor& x) {
  const int64_t n = x->numel();
  if (n == 0 || out->numel() == 0) return;
  SX_CHECK(x->dim() <= kMaxDims, NotImplementedError, "[nonzero] the CUDA kernel takes at most ", kMaxDims,
           " dimensions, got ", x->dim());
  use_device(x->device());
  Compaction c = compact(x->data<bool>(), n, x->device(), "nonzero");
  Coords k;
  k.nd = int(x->dim());
  for (int d = 0; d < k.nd; ++d) k.size[d] = x->shape[size_t(d)];
  nonzero_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(x->data<bool>(), c.pos.as<int64_t>(), out->data<int64_t>(),
                                                           n, k);
  check_launch("nonzero");
}

bool index_in_range(const Tensor& idx, int64_t size) {
  int64_t n = idx->numel();
  if (n == 0) return true;
  use_device(idx->device());
  DeviceFlag bad(idx->device());
  in_range_kernel<<<blocks_for(n), kThreads, 0, stream()>>>(idx->data<int64_t>(), n, size, bad.ptr());
  check_launch("index");
  return !bad.raised();
}

bool gather(const Tensor& out, const Tensor& x, const Tensor& idx, int64_t d) {
  if (idx->numel() == 0) return true;
  use_device(x->device());
  DeviceFlag bad(x->device());
  const int64_t size = x->shape[size_t(d)], step = x->strides[size_t(d)] * int64_t(itemsize(x->dtype));
  Tensor xv = along(x, idx->shape, d);
  int* flag = bad.ptr();
  SX_CUDA_DISPATCH(x->dtype, "gather", [&] {
    using T = scalar_t;
    for_each<3>("gather", idx->shape, {out.get(), idx.get(), xv.get()}, [=] __device__(char** p) {
      int64_t i = checked(*reinterpret_cast<const int64_t*>(p[1]), size, flag);
      if (i >= 0) *reinterpret_cast<T*>(p[0]) = *reinterpret_cast<const T*>(p[2] + i * step);
    });
  });
  return !bad.raised();
}

bool scatter(const Tensor& out, const Tensor& idx, const Tensor& src, int64_t d, ScatterOp op) {
  if (idx->numel() == 0) return true;
  use_device(out->device());
  DeviceFlag bad(out->device());
  const int64_t size = out->shape[size_t(d)], step = out->strides[size_t(d)] * int64_t(itemsize(out->dtype));
  Tensor ov = along(out, idx->shape, d), sv = make_view(src, idx->shape, src->strides, src->offset);
  int* flag = bad.ptr();
  SX_CUDA_DISPATCH(out->dtype, "scatter", [&] {
    using T = scalar_t;
    for_each<3>("scatter", idx->shape, {ov.get(), idx.get(), sv.get()}, [=] __device__(char** p) {
      int64_t i = checked(*reinterpret_cast<const int64_t*>(p[1]), size, flag);
      if (i >= 0) scatter_one<T>(op, reinterpret_cast<T*>(p[0] + i * step), *reinterpret_cast<const T*>(p[2]));
    });
  });
  return !bad.raised();
}

void index_select(const Tensor& out, const Tensor& x, const Tensor& idx, int64_t d) {
  Lines L = lines(out->shape, d);
  int64_t total = L.outer * L.n * L.inner;
  if (total == 0) return;
  use_device(x->device());
  Strided xs = strided("index_select", x, d);
  SX_CUDA_DISPATCH(x->dtype, "index_select", [&] {
    using T = scalar_t;
    index_select_kernel<T><<<blocks_for(total), kThreads, 0, stream()>>>(
        out->data<T>(), x->data<T>(), xs, idx->data<int64_t>(), L, x->shape[size_t(d)]);
  });
  check_launch("index_select");
}

void index_add(const Tensor& out, const Tensor& idx, const Tensor& src, int64_t d, const Scalar& alpha) {
  Lines L = lines(src->shape, d);
  int64_t total = L.outer * L.n * L.inner;
  if (total == 0) return;
  use_device(out->device());
  Strided os = strided("index_add", out, d);
  SX_CUDA_DISPATCH(out->dtype, "index_add", [&] {
    using T = scalar_t;
    using C = acc_t<T>;
    index_add_kernel<T, C><<<blocks_for(total), kThreads, 0, stream()>>>(
        out->data<T>(), os, src->data<T>(), idx->data<int64_t>(), L, out->shape[size_t(d)], alpha.to<C>());
  });
  check_launch("index_add");
}

void index_front(const Tensor& out, const Tensor& x, const TensorList& idx) {
  int64_t nb = idx.empty() ? 1 : idx[0]->numel();
  if (nb == 0 || out->numel() == 0) return;
  int64_t block = out->numel() / nb;
  use_device(x->device());
  Front f = front(x, idx);
  SX_CUDA_DISPATCH(x->dtype, "index", [&] {
    using T = scalar_t;
    index_front_kernel<T><<<blocks_for(nb * block), kThreads, 0, stream()>>>(out->data<T>(), x->data<T>(), f, nb, block);
  });
  check_launch("index");
}

void index_put_front(const Tensor& out, const TensorList& idx, const Tensor& values, bool accumulate) {
  int64_t nb = idx.empty() ? 1 : idx[0]->numel();
  if (nb == 0 || values->numel() == 0) return;
  int64_t block = values->numel() / nb;
  use_device(out->device());
  Front f = front(out, idx);
  SX_CUDA_DISPATCH(out->dtype, "index_put", [&] {
    using T = scalar_t;
    index_put_kernel<T><<<accumulate ? 1 : blocks_for(nb * block), kThreads, 0, stream()>>>(
        out->data<T>(), values->data<T>(), f, nb, block, accumulate);
  });
  check_launch("index_put");
}

bool one_hot(const Tensor& out, const Tensor& idx) {
  const int64_t n = idx->numel(), c = out->shape.back();
  use_device(out->device());
  SX_CUDA_CHECK(cudaMemsetAsync(out->raw(), 0, size_t(out->numel()) * sizeof(int64_t), stream()), "one_hot");
  if (n == 0) return true;
  DeviceFlag bad(out->device());
  one_hot_kernel<int64_t><<<blocks_for(n), kThreads, 0, stream()>>>(idx->data<int64_t>(), out->data<int64_t>(), n, c,
                                                                    bad.ptr());
  check_launch("one_hot");
  return !bad.raised();
}

void sort_rows(const Tensor& rows, const Tensor& values, const Tensor& indices, bool descending) {
  const int64_t nrows = rows->shape[0], n = rows->shape[1], k = values->shape[1], total = nrows * n;
  if (k == 0 || total == 0) return;
  Device d = rows->device();
  use_device(d);
  Scratch keys(size_t(total) * 8, d), keys_out(size_t(total) * 8, d), pos(size_t(total) * 8, d),
      pos_out(size_t(total) * 8, d), offs(size_t(nrows + 1) * 8, d);
  row_offsets<<<blocks_for(nrows + 1), kThreads, 0, stream()>>>(offs.as<int64_t>(), nrows, n);
  SX_CUDA_DISPATCH(rows->dtype, "sort", [&] {
    using T = scalar_t;
    sort_keys_kernel<T><<<blocks_for(total), kThreads, 0, stream()>>>(rows->data<T>(), keys.as<uint64_t>(),
                                                                      pos.as<int64_t>(), total, n, descending);
  });
  const int64_t* o = offs.as<int64_t>();
  size_t bytes = 0;
  SX_CUDA_CHECK(cub::DeviceSegmentedSort::StableSortPairs(nullptr, bytes, keys.as<uint64_t>(), keys_out.as<uint64_t>(),
                                                          pos.as<int64_t>(), pos_out.as<int64_t>(), total, nrows, o,
                                                          o + 1, stream()),
                "sort");
  Scratch temp(bytes ? bytes : 1, d);
  SX_CUDA_CHECK(cub::DeviceSegmentedSort::StableSortPairs(temp.as<void>(), bytes, keys.as<uint64_t>(),
                                                          keys_out.as<uint64_t>(), pos.as<int64_t>(),
                                                          pos_out.as<int64_t>(), total, nrows, o, o + 1, stream()),
                "sort");
  SX_CUDA_DISPATCH(rows->dtype, "sort", [&] {
    using T = scalar_t;
    take_sorted<T><<<blocks_for(nrows * k), kThreads, 0, stream()>>>(rows->data<T>(), pos_out.as<int64_t>(),
                                                                      values->data<T>(), indices->data<int64_t>(),
                                                                      nrows, n, k);
  });
  check_launch("sort");
}

}  // namespace sx::cuda
