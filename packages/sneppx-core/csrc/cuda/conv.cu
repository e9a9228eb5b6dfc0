// CUDA kernels of convolution (im2col and col2im: with them the ops run convolutions, transposed
// convolutions, unfold and fold as GEMMs through cuBLAS), pooling and batch normalisation (slots in
// ops/conv.h). One thread per output element; col2im gathers each image element's patches in the
// CPU's order. The pooling backwards scatter with atomic adds where windows overlap, so their float
// sums may be added in any order. Batch norm runs one block per channel with sums in double.
#include "cuda/cuda_util.cuh"
#include "cuda/kernels.h"
#include "ops/conv.h"
#include "ops/window.h"

namespace sx::cuda {

namespace {

// cols[(r * N + n) * L + l], r = (c, ki, kj), l = (oy, ox): x[n, c, oy sh - ph + ki dh, ox sw - pw + kj dw] or 0.
template <typename T> __global__ void im2col_kernel(const T* x, T* cols, ConvGeom g) {
  const int64_t K = g.kh * g.kw, L = g.oh * g.ow;
  SX_GRID_LOOP(e, g.C * K * g.N * L) {
    int64_t l = e % L, n = (e / L) % g.N, r = e / (L * g.N);
    int64_t c = r / K, ki = (r % K) / g.kw, kj = r % g.kw, oy = l / g.ow, ox = l % g.ow;
    int64_t iy = oy * g.sh - g.ph + ki * g.dh, ix = ox * g.sw - g.pw + kj * g.dw;
    cols[e] = iy >= 0 && iy < g.H && ix >= 0 && ix < g.W ? x[((n * g.C + c) * g.H + iy) * g.W + ix] : T(0);
  }
}

// x[n, c, iy, ix] = the sum of the patch entries that read it, taken in (ki, kj) order.
template <typename T> __global__ void col2im_kernel(const T* cols, T* x, ConvGeom g) {
  const int64_t K = g.kh * g.kw, L = g.oh * g.ow;
  SX_GRID_LOOP(e, g.N * g.C * g.H * g.W) {
    int64_t ix = e % g.W, iy = (e / g.W) % g.H, c = (e / (g.W * g.H)) % g.C, n = e / (g.W * g.H * g.C);
    T acc = 0;
    for (int64_t ki = 0; ki < g.kh; ++ki) {
      int64_t ty = iy + g.ph - ki * g.dh;
      if (ty < 0 || ty % g.sh) continue;
      int64_t oy = ty / g.sh;
      if (oy >= g.oh) continue;
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        int64_t tx = ix + g.pw - kj * g.dw;
        if (tx < 0 || tx % g.sw) continue;
        int64_t ox = tx / g.sw;
        if (ox >= g.ow) continue;
        acc += cols[((c * K + ki * g.kw + kj) * g.N + n) * L + oy * g.ow + ox];
      }
    }
    x[e] = acc;
  }
}

// The first maximum in window order; the first NaN wins; a window wholly in the padding gives -inf at 0.
template <typename T> __global__ void max_pool_kernel(const T* x, T* y, int64_t* idx, ConvGeom g) {
  const int64_t L = g.oh * g.ow, plane = g.H * g.W;
  SX_GRID_LOOP(e, g.N * g.C * L) {
    const int64_t p = e / L, oy = (e % L) / g.ow, ox = e % g.ow;
    const T* xp = x + p * plane;
    Span sy = span(g.adaptive, oy, g.H, g.oh, g.kh, g.sh, g.ph), sx_ = span(g.adaptive, ox, g.W, g.ow, g.kw, g.sw, g.pw);
    const int64_t y0 = g.adaptive ? sy.lo : oy * g.sh - g.ph, ys = g.adaptive ? 1 : g.dh;
    const int64_t x0 = g.adaptive ? sx_.lo : ox * g.sw - g.pw, xs = g.adaptive ? 1 : g.dw;
    auto [a0, a1] = taps_inside(y0, g.adaptive ? sy.hi - sy.lo : g.kh, ys, g.H);
    auto [b0, b1] = taps_inside(x0, g.adaptive ? sx_.hi - sx_.lo : g.kw, xs, g.W);
    T best = -INFINITY;
    int64_t bi = 0;
    if (a0 < a1 && b0 < b1) {
      bi = (y0 + a0 * ys) * g.W + x0 + b0 * xs;
      best = xp[bi];
      for (int64_t a = a0; a < a1 && best == best; ++a)
        for (int64_t b = b0; b < b1; ++b) {
          int64_t i = (y0 + a * ys) * g.W + x0 + b * xs;
          T v = xp[i];
          if (v != v || v > best) best = v, bi = i;
          if (v != v) break;
        }
    }
    y[e] = best;
    idx[e] = bi;
  }
}

template <typename T> __global__ void max_pool_bwd_kernel(const T* gy, const int64_t* idx, T* gx, ConvGeom g) {
  const int64_t L = g.oh * g.ow, plane = g.H * g.W;
  SX_GRID_LOOP(e, g.N * g.C * L) atomicAdd(gx + (e / L) * plane + idx[e], gy[e]);
}

// The divisor of output position (oy, ox), and its spans.
__device__ int64_t avg_divisor(const ConvGeom& g, const AvgOpts& o, const Span& sy, const Span& sx_) {
  int64_t inside = (sy.hi - sy.lo) * (sx_.hi - sx_.lo);
  return g.adaptive ? inside : o.divisor ? o.divisor : o.count_include_pad ? sy.padded * sx_.padded : inside;
}

template <typename T> __global__ void avg_pool_kernel(const T* x, T* y, ConvGeom g, AvgOpts o) {
  const int64_t L = g.oh * g.ow, plane = g.H * g.W;
  SX_GRID_LOOP(e, g.N * g.C * L) {
    const int64_t p = e / L, oy = (e % L) / g.ow, ox = e % g.ow;
    Span sy = span(g.adaptive, oy, g.H, g.oh, g.kh, g.sh, g.ph), sx_ = span(g.adaptive, ox, g.W, g.ow, g.kw, g.sw, g.pw);
    const int64_t div = avg_divisor(g, o, sy, sx_);
    T acc = 0;
    for (int64_t iy = sy.lo; iy < sy.hi; ++iy)
      for (int64_t ix = sx_.lo; ix < sx_.hi; ++ix) acc += x[p * plane + iy * g.W + ix];
    y[e] = div > 0 ? acc / T(div) : T(0);
  }
}

template <typename T> __global__ void avg_pool_bwd_kernel(const T* gy, T* gx, ConvGeom g, AvgOpts o) {
  const int64_t L = g.oh * g.ow, plane = g.H * g.W;
  SX_GRID_LOOP(e, g.N * g.C * L) {
    const int64_t p = e / L, oy = (e % L) / g.ow, ox = e % g.ow;
    Span sy = span(g.adaptive, oy, g.H, g.oh, g.kh, g.sh, g.ph), sx_ = span(g.adaptive, ox, g.W, g.ow, g.kw, g.sw, g.pw);
    const int64_t div = avg_divisor(g, o, sy, sx_);
    if (div <= 0) continue;
    const T v = gy[e] / T(div);
    for (int64_t iy = sy.lo; iy < sy.hi; ++iy)
      for (int64_t ix = sx_.lo; ix < sx_.hi; ++ix) atomicAdd(gx + p * plane + iy * g.W + ix, v);
  }
}

// sum over the N rows of S values of channel c of f(element offset), on every thread of the block.
template <typename F> __device__ double channel_sum(const BatchNormArgs& a, int64_t c, F f) {
  double s = 0;
  for (int64_t k = threadIdx.x; k < a.N * a.S; k += blockDim.x) s += f((k / a.S * a.C + c) * a.S + k % a.S);
  return block_reduce(s, SumOf{});
}

template <typename T>
__global__ void bn_fwd_kernel(const T* x, const T* w, const T* b, T* rm, T* rv, T* y, T* mean, T* invstd,
                              BatchNormArgs a) {
  const int64_t cnt = a.N * a.S;
  for (int64_t c = blockIdx.x; c < a.C; c += gridDim.x) {
    double mu, is;
    if (a.training) {
      mu = channel_sum(a, c, [&](int64_t i) { return double(x[i]); }) / double(cnt);
      const T m = T(mu);
      double var = channel_sum(a, c, [&](int64_t i) { return double(x[i] - m) * double(x[i] - m); }) / double(cnt);
      is = 1.0 / std::sqrt(var + a.eps);
      if (threadIdx.x == 0) {
        if (rm) rm[c] = T((1 - a.momentum) * double(rm[c]) + a.momentum * mu);
        if (rv) rv[c] = T((1 - a.momentum) * double(rv[c]) + a.momentum * var * double(cnt) / double(cnt - 1));
      }
    } else {
      mu = double(rm[c]);
      is = 1.0 / std::sqrt(double(rv[c]) + a.eps);
    }
    if (threadIdx.x == 0) mean[c] = T(mu), invstd[c] = T(is);
    const T m = T(mu), scale = T(is * (w ? double(w[c]) : 1.0)), shift = b ? b[c] : T(0);
    for (int64_t k = threadIdx.x; k < cnt; k += blockDim.x) {
      int64_t i = (k / a.S * a.C + c) * a.S + k % a.S;
      y[i] = (x[i] - m) * scale + shift;
    }
  }
}

template <typename T>
__global__ void bn_bwd_kernel(const T* g, const T* x, const T* w, const T* mean, const T* invstd, T* gx, T* gw, T* gb,
                              BatchNormArgs a) {
  const int64_t cnt = a.N * a.S;
  const bool sums = gw || gb || (gx && a.training);
  for (int64_t c = blockIdx.x; c < a.C; c += gridDim.x) {
    const T m = mean[c];
    const double is = double(invstd[c]);
    double sg = 0, sgx = 0;
    if (sums) {
      sg = channel_sum(a, c, [&](int64_t i) { return double(g[i]); });
      sgx = channel_sum(a, c, [&](int64_t i) { return double(g[i]) * double(x[i] - m); });
    }
    if (threadIdx.x == 0) {
      if (gw) gw[c] = T(sgx * is);
      if (gb) gb[c] = T(sg);
    }
    if (!gx) continue;
    const BatchNormGrad k = batch_norm_grad(is, w ? double(w[c]) : 1.0, sg, sgx, cnt, a.training);
    const T kg = T(k.kg), ka = T(k.ka), kx = T(k.kx);
    for (int64_t e = threadIdx.x; e < cnt; e += blockDim.x) {
      int64_t i = (e / a.S * a.C + c) * a.S + e % a.S;
      gx[i] = kg * g[i] - ka - kx * (x[i] - m);
    }
  }
}

void zero(const Tensor& t) {
  SX_CUDA_CHECK(cudaMemsetAsync(t->raw(), 0, size_t(t->numel()) * itemsize(t->dtype), stream()), "pool");
}

}  // namespace

void im2col(const Tensor& x, const Tensor& cols, const ConvGeom& g) {
  int64_t n = cols->numel();
  if (n == 0) return;
  use_device(x->device());
  SX_CUDA_DISPATCH_FLOAT(x->dtype, "im2col", [&] {
    using T = scalar_t;
    im2col_kernel<T><<<blocks_for(n), kThreads, 0, stream()>>>(x->data<T>(), cols->data<T>(), g);
  });
  check_launch("im2col");
}

void col2im(const Tensor& cols, const Tensor& x, const ConvGeom& g) {
  int64_t n = x->numel();
  if (n == 0) return;
  use_device(x->device());
  SX_CUDA_DISPATCH_FLOAT(x->dtype, "col2im", [&] {
    using T = scalar_t;
    col2im_kernel<T><<<blocks_for(n), kThreads, 0, stream()>>>(cols->data<T>(), x->data<T>(), g);
  });
  check_launch("col2im");
}

void max_pool_fwd(const Tensor& x, const Tensor& y, const Tensor& idx, const ConvGeom& g) {
  int64_t n = y->numel();
  if (n == 0) return;
  use_device(x->device());
  SX_CUDA_DISPATCH_FLOAT(x->dtype, "max_pool", [&] {
    using T = scalar_t;
    max_pool_kernel<T><<<blocks_for(n), kThreads, 0, stream()>>>(x->data<T>(), y->data<T>(), idx->data<int64_t>(), g);
  });
  check_launch("max_pool");
}

void max_pool_bwd(const Tensor& gy, const Tensor& idx, const Tensor& gx, const ConvGeom& g) {
  use_device(gx->device());
  zero(gx);
  int64_t n = gy->numel();
  if (n == 0) return;
  SX_CUDA_DISPATCH_FLOAT(gx->dtype, "max_pool", [&] {
    using T = scalar_t;
    max_pool_bwd_kernel<T><<<blocks_for(n), kThreads, 0, stream()>>>(gy->data<T>(), idx->data<int64_t>(), gx->data<T>(), g);
  });
  check_launch("max_pool");
}

void avg_pool_fwd(const Tensor& x, const Tensor& y, const ConvGeom& g, const AvgOpts& o) {
  int64_t n = y->numel();
  if (n == 0) return;
  use_device(x->device());
  SX_CUDA_DISPATCH_FLOAT(x->dtype, "avg_pool", [&] {
    using T = scalar_t;
    avg_pool_kernel<T><<<blocks_for(n), kThreads, 0, stream()>>>(x->data<T>(), y->data<T>(), g, o);
  });
  check_launch("avg_pool");
}

void avg_pool_bwd(const Tensor& gy, const Tensor& gx, const ConvGeom& g, const AvgOpts& o) {
  use_device(gx->device());
  zero(gx);
  int64_t n = gy->numel();
  if (n == 0) return;
  SX_CUDA_DISPATCH_FLOAT(gx->dtype, "avg_pool", [&] {
    using T = scalar_t;
    avg_pool_bwd_kernel<T><<<blocks_for(n), kThreads, 0, stream()>>>(gy->data<T>(), gx->data<T>(), g, o);
  });
  check_launch("avg_pool");
}

void batch_norm_fwd(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& rm, const Tensor& rv,
                    const Tensor& y, const Tensor& mean, const Tensor& invstd, const BatchNormArgs& a) {
  if (a.C == 0) return;
  use_device(x->device());
  SX_CUDA_DISPATCH_FLOAT(x->dtype, "batch_norm", [&] {
    using T = scalar_t;
    bn_fwd_kernel<T><<<row_grid(a.C), kThreads, 0, stream()>>>(ptr<T>(x), ptr<T>(w), ptr<T>(b), ptr<T>(rm),
                                                                ptr<T>(rv), ptr<T>(y), ptr<T>(mean), ptr<T>(invstd), a);
  });
  check_launch("batch_norm");
}

void batch_norm_bwd(const Tensor& g, const Tensor& x, const Tensor& w, const Tensor& mean, const Tensor& invstd,
                    const Tensor& gx, const Tensor& gw, const Tensor& gb, const BatchNormArgs& a) {
  if (a.C == 0) return;
  use_device(x->device());
  SX_CUDA_DISPATCH_FLOAT(x->dtype, "batch_norm_backward", [&] {
    using T = scalar_t;
    bn_bwd_kernel<T><<<row_grid(a.C), kThreads, 0, stream()>>>(ptr<T>(g), ptr<T>(x), ptr<T>(w), ptr<T>(mean),
                                                                ptr<T>(invstd), ptr<T>(gx), ptr<T>(gw), ptr<T>(gb), a);
  });
  check_launch("batch_norm_backward");
}

}  // namespace sx::cuda
