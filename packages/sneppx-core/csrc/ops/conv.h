// Convolution, pooling and batch-statistics normalisation (sx::nn), and the kernel slots they call.
//
// Convolutions are im2col + GEMM, or direct where the device has `conv_direct_fwd` (on the CPU: float32,
// groups 1, windows larger than 1x1 with enough channels and positions; see direct_pays in ops/conv.cpp). A device with
// the `conv_fwd` / `conv_bwd` kernels (the CPU) runs the others image by image when an image has at least
// 64 output positions, each image's patch matrix built where
// the GEMMs find it in cache. Otherwise, and for gradients that must themselves be differentiable
// (create_graph), the kernel `im2col` lays the patches of the whole batch out as a
// (C * kh * kw, N * oh * ow) matrix and one GEMM per group (through the public `matmul`) covers every
// sample; `col2im` is its adjoint (patches summed back into the image); each is the other's vjp, so
// convolutions, transposed convolutions, unfold and fold get their gradients, and second-order
// gradients, from public ops. 1-d ops run as 2-d ops with H = 1.
#pragma once
#include <optional>
#include <utility>

#include "core/dispatch.h"
#include "ops/ops.h"

namespace sx {

// Geometry of a sliding window over (N, C, H, W) images producing an (oh, ow) grid. For pools,
// `adaptive` replaces the window by [floor(i H / oh), ceil((i + 1) H / oh)).
struct ConvGeom {
  int64_t N = 1, C = 1, H = 1, W = 1;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  int64_t oh = 1, ow = 1;
  bool adaptive = false;
};

// Batch normalisation over contiguous (N, C, S) data, per channel. `training`: the batch statistics
// normalise (and the running ones, when given, are updated); otherwise the running statistics do.
struct BatchNormArgs {
  int64_t N = 0, C = 0, S = 1;
  bool training = true;
  double momentum = 0.1, eps = 1e-5;
};

// Average-pool divisor rules (PyTorch's count_include_pad and divisor_override; 0 = no override).
struct AvgOpts {
  bool count_include_pad = true;
  int64_t divisor = 0;
};

// Batch norm's input gradient per channel is gx = kg g - ka - kx (x - mean): kg = invstd w, and in
// training (through the batch statistics) ka = kg mean(g), kx = kg invstd^2 mean(g (x - mean)); from the
// channel's sums sg = sum g and sgx = sum g (x - mean) over its cnt elements.
struct BatchNormGrad {
  double kg, ka, kx;
};
SX_HD inline BatchNormGrad batch_norm_grad(double invstd, double w, double sg, double sgx, int64_t cnt, bool training) {
  const double k = invstd * w;
  if (!training) return {k, 0.0, 0.0};
  return {k, k * sg / double(cnt), k * invstd * invstd * sgx / double(cnt)};
}

namespace kern {
// Operands are contiguous float32/float64 of one dtype; outputs are fully overwritten.
// x (N, C, H, W) -> cols (C * kh * kw, N, oh * ow); zero where the window leaves the image.
SX_KERNEL(im2col, void(const Tensor& x, const Tensor& cols, const ConvGeom& g));
// cols (C * kh * kw, N, oh * ow) -> x (N, C, H, W), summing overlapping patches.
SX_KERNEL(col2im, void(const Tensor& cols, const Tensor& x, const ConvGeom& g));
// Convolution of x (N, C, H, W) with w (Cout, C / groups, kh, kw) and optional bias b (Cout) into
// y (N, Cout, oh, ow), and its gradients gx (N, C, H, W), gw (like w) and gb (Cout), each of which may be
// null (not wanted). A backend without these slots gets convolutions from im2col, GEMM and col2im.
SX_KERNEL(conv_fwd, void(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y, const ConvGeom& g,
                         int64_t groups));
// Direct float32 convolution with groups 1 (no patch matrix), the same contract as conv_fwd otherwise.
// `flipped`: w is (C, Cout, kh, kw) and the window is w flipped in space with its channel dims swapped
// (the input gradient of a stride-1 convolution with weight w).
SX_KERNEL(conv_direct_fwd, void(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y, const ConvGeom& g,
                                bool flipped));
SX_KERNEL(conv_bwd, void(const Tensor& gy, const Tensor& x, const Tensor& w, const Tensor& gx, const Tensor& gw,
                         const Tensor& gb, const ConvGeom& g, int64_t groups));
// y (N, C, oh, ow) = window maxima (NaN wins); idx (int64) = argmax as a flat offset in the H * W plane
// (the CPU's kernel also takes a null idx: the values alone).
SX_KERNEL(max_pool_fwd, void(const Tensor& x, const Tensor& y, const Tensor& idx, const ConvGeom& g));
// gx (N, C, H, W) = gy scattered (summed) to idx.
SX_KERNEL(max_pool_bwd, void(const Tensor& gy, const Tensor& idx, const Tensor& gx, const ConvGeom& g));
// out = pad_gather(x, maps) (see there) for x and out contiguous of one dtype (any), maps checked; and
// its adjoint gx += g gathered back, for float g and gx (gx zeroed by the op).
SX_KERNEL(pad_gather, void(const Tensor& x, const Tensor& out, const TensorList& maps));
SX_KERNEL(pad_gather_add, void(const Tensor& g, const Tensor& gx, const TensorList& maps));
// y = window means; gx = the adjoint (each gy spread evenly over its window).
SX_KERNEL(avg_pool_fwd, void(const Tensor& x, const Tensor& y, const ConvGeom& g, const AvgOpts& o));
SX_KERNEL(avg_pool_bwd, void(const Tensor& gy, const Tensor& gx, const ConvGeom& g, const AvgOpts& o));
// Batch norm forward over x (N, C, S): mean / invstd (C) receive the statistics that normalise (batch
// mean and 1 / sqrt(biased var + eps) in training, else running_mean and 1 / sqrt(running_var + eps)),
// y = (x - mean) * invstd * w + b. In training, rm / rv (null: not tracked) are updated in place:
// r = (1 - momentum) r + momentum * stat, the variance unbiased. w, b may be null.
SX_KERNEL(batch_norm_fwd, void(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& rm, const Tensor& rv,
                               const Tensor& y, const Tensor& mean, const Tensor& invstd, const BatchNormArgs& a));
// Its backward from the saved mean / invstd: gx (through the batch statistics in training), gw = sum g * xhat,
// gb = sum g; each output may be null.
SX_KERNEL(batch_norm_bwd, void(const Tensor& g, const Tensor& x, const Tensor& w, const Tensor& mean,
                               const Tensor& invstd, const Tensor& gx, const Tensor& gw, const Tensor& gb,
                               const BatchNormArgs& a));
}  // namespace kern

namespace nn {

// Convolution of (N, C_in, L) or (N, C_in, H, W) input with (C_out, C_in / groups, k...) weight.
// stride / padding / dilation have one entry per spatial dim; padding is symmetric (the Python face
// pads the odd extra of padding="same" itself).
Tensor conv(const Tensor& x, const Tensor& w, const Tensor& b, const IntList& stride, const IntList& padding,
            const IntList& dilation, int64_t groups);
// Transposed convolution (the adjoint of conv in x) with (C_in, C_out / groups, k...) weight.
Tensor conv_transpose(const Tensor& x, const Tensor& w, const Tensor& b, const IntList& stride,
                      const IntList& padding, const IntList& output_padding, const IntList& dilation,
                      int64_t groups);
// Sliding-window patches (N, C * prod(k), L) of (N, C, H, W) input, and the adjoint that sums them
// back into an (N, C, output_size...) image.
Tensor unfold(const Tensor& x, const IntList& kernel, const IntList& dilation, const IntList& padding,
              const IntList& stride);
Tensor fold(const Tensor& cols, const IntList& output_size, const IntList& kernel, const IntList& dilation,
            const IntList& padding, const IntList& stride);
// F.pad(x, pads, value=v) in one pass: pads are (left, right) pairs from the last dim backwards; a
// negative one crops. The gradient is g's interior (a view), with zeros where x was cropped.
Tensor pad_constant(const Tensor& x, const IntList& pads, const Scalar& value);
// reflect / replicate / circular padding: the last maps.size() dims of x gathered through source-index
// maps, out[..., i_1, ..., i_k] = x[..., maps[0][i_1], ..., maps[k - 1][i_k]] (each map 1-d int64 on the
// CPU, entries in range of their dim). pad_gather_grad is its adjoint (g summed back into x's shape,
// xs); each is the other's vjp.
Tensor pad_gather(const Tensor& x, const TensorList& maps);
Tensor pad_gather_grad(const Tensor& g, const TensorList& maps, const Shape& xs);

// Pools over the trailing kernel.size() dims (1 or 2) of (N, C, ...) input. max_pool returns
// (values, indices); indices are flat offsets into each input plane (PyTorch's convention). With
// `indices` false, where nothing records x's gradient, a device that allows it (the CPU) finds only the
// values and returns a null index tensor.
std::pair<Tensor, Tensor> max_pool(const Tensor& x, const IntList& kernel, const IntList& stride,
                                   const IntList& padding, const IntList& dilation, bool ceil_mode,
                                   bool indices = true);
Tensor avg_pool(const Tensor& x, const IntList& kernel, const IntList& stride, const IntList& padding,
                bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override);
Tensor adaptive_avg_pool(const Tensor& x, const IntList& output_size);
std::pair<Tensor, Tensor> adaptive_max_pool(const Tensor& x, const IntList& output_size, bool indices = true);

// Batch normalisation over (N, C, ...) input, per channel C. In training (or without running
// statistics) it normalises with the batch mean and biased variance and, when running_mean /
// running_var are given, updates them in place: r = (1 - momentum) r + momentum * stat (the variance
// unbiased). Otherwise it normalises with the running statistics. weight / bias / running may be null.
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum, double eps);
// Group normalisation: channels split into `groups`, each (sample, group) normalised over its channels
// and spatial positions, then the per-channel affine.
Tensor group_norm(const Tensor& x, int64_t groups, const Tensor& weight, const Tensor& bias, double eps);

}  // namespace nn
}  // namespace sx
