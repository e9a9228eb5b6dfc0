// Convolutions (im2col + one GEMM per group over the whole batch), unfold / fold, and pooling.
// Each primitive here (im2col, col2im, pooling forward and backward) is recorded with a vjp that is
// another primitive or a public op, so gradients of any order run on every device that has the kernels.
#include "ops/conv.h"

#include "ops/nn_util.h"

namespace sx {

SX_DEFINE_KERNEL(kern::im2col);
SX_DEFINE_KERNEL(kern::col2im);
SX_DEFINE_KERNEL(kern::conv_fwd);
SX_DEFINE_KERNEL(kern::conv_direct_fwd);
SX_DEFINE_KERNEL(kern::conv_bwd);
SX_DEFINE_KERNEL(kern::max_pool_fwd);
SX_DEFINE_KERNEL(kern::max_pool_bwd);
SX_DEFINE_KERNEL(kern::avg_pool_fwd);
SX_DEFINE_KERNEL(kern::avg_pool_bwd);
SX_DEFINE_KERNEL(kern::pad_gather);
SX_DEFINE_KERNEL(kern::pad_gather_add);
SX_DEFINE_KERNEL(kern::batch_norm_fwd);
SX_DEFINE_KERNEL(kern::batch_norm_bwd);

namespace nn {
namespace {

void check_float(const Tensor& t, const char* op, const char* what) {
  SX_CHECK(t, ValueError, "[", op, "] ", what, " is missing");
  SX_CHECK(is_floating(t->dtype), TypeError, "[", op, "] expected ", what, " to be a floating tensor, got ",
           describe(t));
}

// Spatial parameters as (h, w): 1-d lists put `fill` in h.
std::pair<int64_t, int64_t> hw(const IntList& v, size_t nsp, int64_t fill, const char* op, const char* what) {
  SX_CHECK(v.size() == nsp, ValueError, "[", op, "] ", what, " must have ", nsp, " value", nsp > 1 ? "s" : "",
           ", got ", shape_str(v));
  return nsp == 1 ? std::pair{fill, v[0]} : std::pair{v[0], v[1]};
}

int64_t out_size(int64_t n, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  int64_t span = n + 2 * p - d * (k - 1) - 1;
  if (span < 0) return 0;
  int64_t o = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (o - 1) * s >= n + p) --o;  // the last window must start inside the input or left padding
  return o;
}

// Fills kernel / stride / padding / dilation of g and the output grid from the image size in g.
void window_geom(ConvGeom& g, size_t nsp, const IntList& k, const IntList& s, const IntList& p, const IntList& d,
                 bool ceil_mode, const char* op, const Shape& xshape) {
  std::tie(g.kh, g.kw) = hw(k, nsp, 1, op, "kernel_size");
  std::tie(g.sh, g.sw) = hw(s.empty() ? k : s, nsp, 1, op, "stride");
  std::tie(g.ph, g.pw) = hw(p, nsp, 0, op, "padding");
  std::tie(g.dh, g.dw) = hw(d, nsp, 1, op, "dilation");
  SX_CHECK(g.kh > 0 && g.kw > 0 && g.sh > 0 && g.sw > 0 && g.dh > 0 && g.dw > 0, ValueError, "[", op,
           "] kernel_size, stride and dilation must be positive, got kernel_size ", shape_str(k), ", stride ",
           shape_str(s), ", dilation ", shape_str(d));
  SX_CHECK(g.ph >= 0 && g.pw >= 0, ValueError, "[", op, "] padding must be non-negative, got ", shape_str(p));
  g.oh = out_size(g.H, g.kh, g.sh, g.ph, g.dh, ceil_mode);
  g.ow = out_size(g.W, g.kw, g.sw, g.pw, g.dw, ceil_mode);
  SX_CHECK(g.oh > 0 && g.ow > 0, ValueError, "[", op, "] input ", shape_str(xshape), " is too small for kernel_size ",
           shape_str(k), " with padding ", shape_str(p), " and dilation ", shape_str(d),
           ": the output would be empty");
}

// The input as (N, C, H, W): 1-d inputs get H = 1.
Tensor as4d(const Tensor& x, size_t nsp) { return nsp == 1 ? unsqueeze(x, 2) : x; }
Shape out_shape(const ConvGeom& g, int64_t C, size_t nsp) {
  return nsp == 1 ? Shape{g.N, C, g.ow} : Shape{g.N, C, g.oh, g.ow};
}

Tensor col2im_op(const Tensor& cols, const ConvGeom& g);

// (N, C, H, W) -> (C * kh * kw, N, oh * ow) patches; vjp: col2im.
Tensor im2col_op(const Tensor& x, const ConvGeom& g) {
  Tensor xc = contig(x);
  Tensor cols = empty({g.C * g.kh * g.kw, g.N, g.oh * g.ow}, x->dtype, x->device());
  if (cols->numel()) kern::im2col(x->device())(xc, cols, g);
  if (!needs_grad({&x})) return cols;
  return record("Im2colBackward", {x}, cols, [g](const Tensor& gc) { return TensorList{col2im_op(gc, g)}; });
}

// The adjoint of im2col: patches summed back into (N, C, H, W); vjp: im2col.
Tensor col2im_op(const Tensor& cols, const ConvGeom& g) {
  Tensor cc = contig(cols);
  Tensor x = empty({g.N, g.C, g.H, g.W}, cols->dtype, cols->device());
  if (x->numel()) kern::col2im(cols->device())(cc, x, g);
  if (!needs_grad({&cols})) return x;
  return record("Col2imBackward", {cols}, x, [g](const Tensor& gx) { return TensorList{im2col_op(gx, g)}; });
}

// Shared checks of conv and conv_transpose; returns the number of spatial dims.
size_t check_conv(const Tensor& x, const Tensor& w, const Tensor& b, int64_t groups, const char* op) {
  check_float(x, op, "input");
  check_float(w, op, "weight");
  size_t nsp = size_t(x->dim()) - 2;
  SX_CHECK(x->dim() == 3 || x->dim() == 4, ValueError, "[", op, "] expected 3-D (N, C, L) or 4-D (N, C, H, W) input, got ",
           describe(x));
  SX_CHECK(w->dim() == x->dim(), ValueError, "[", op, "] weight ", describe(w), " must have as many dims as input ",
           describe(x));
  SX_CHECK(x->dtype == w->dtype && (!b || b->dtype == x->dtype), TypeError, "[", op,
           "] input, weight and bias must have the same dtype, got ", describe(x), ", ", describe(w),
           b ? ", " + describe(b) : std::string());
  check_same_device(op, x, w);
  if (b) check_same_device(op, x, b);
  SX_CHECK(groups > 0, ValueError, "[", op, "] groups must be positive, got ", groups);
  return nsp;
}

// Gradients of a convolution as public (differentiable) ops: patches of the whole batch and GEMMs.
// x4: the (N, C, H, W) input; gy: (N, Cout, oh, ow) or (N, Cout, ow).
TensorList conv_grads_public(const Tensor& gy, const Tensor& x4, const Tensor& w, const ConvGeom& g, int64_t G,
                             bool nx, bool nw, bool nb, const Shape& xshape) {
  int64_t N = g.N, Cout = w->shape[0], L = g.oh * g.ow, K = g.kh * g.kw, CgK = g.C / G * K;
  Tensor gy3 = reshape(gy, {N, Cout, L});
  Tensor gyg = reshape(permute(gy3, {1, 0, 2}), {G, Cout / G, N * L});  // (G, Cout / G, N * L)
  Tensor wg = reshape(w, {G, Cout / G, CgK});
  Tensor gx = nx ? reshape(col2im_op(reshape(matmul(transpose(wg, 1, 2), gyg), {g.C * K, N, L}), g), xshape) : Tensor();
  Tensor gw = nw ? reshape(matmul(gyg, transpose(reshape(im2col_op(x4, g), {G, CgK, N * L}), 1, 2)), w->shape)
                 : Tensor();
  Tensor gb = nb ? sum(gy3, IntList{0, 2}) : Tensor();
  return {gx, gw, gb};
}

// Image by image where one image's product has enough output positions to be an efficient GEMM; the deep
// layers of a CNN (many channels, few positions) read their weight once for the whole batch instead.
constexpr int64_t kMinPositions = 64;

// Whether a direct convolution (float32, groups 1) with C input and Cout output channels pays over
// patches + GEMM: a window larger than 1x1 (a 1x1 one is a GEMM already), at least 64 multiply-adds
// per output element, at least 16 output channels (a vector of them) and images of at least
// kMinPositions outputs (on smaller ones, one GEMM over the whole batch reads the weight better).
// Smaller images with a zero border (the deep layers of a CNN: 4x4 maps lose 31% of a 3x3 window's terms
// to the border, 2x2 maps 56%) take the direct forward too: its class tiles skip those terms, where one
// GEMM over the whole batch's patches multiplies them (direct_small; so does their stride-1 input gradient,
// while the other gradients stay that path's).
constexpr int64_t kDirectMinCout = 16;
bool direct_window(int64_t C, int64_t Cout, const ConvGeom& g) {
  return g.kh * g.kw > 1 && C * g.kh * g.kw >= 64 && Cout >= kDirectMinCout;
}
bool direct_pays(int64_t C, int64_t Cout, const ConvGeom& g) {
  return direct_window(C, Cout, g) && g.oh * g.ow >= kMinPositions;
}
bool direct_small(int64_t C, int64_t Cout, const ConvGeom& g) {
  return direct_window(C, Cout, g) && g.oh * g.ow < kMinPositions && (g.ph || g.pw);
}

// Whether the input gradient of a convolution (as a float32 one with groups 1) can run through
// input_grad_direct: stride 1, padding within the window, a window larger than 1x1 and at least a vector of
// input channels (its output channels). Unlike the forward it needs no multiply-adds per element: the other
// way, conv_bwd, writes a patch matrix of w^T gy per image and sums it back into gx, a product whose depth
// is the convolution's output channels. With 1, 3 or 4 output channels (3x3 windows, 64 x 32 x 32 maps and
// smaller) it took 1.6-2.3x the direct kernel's time.
bool input_grad_direct_fits(const ConvGeom& g) {
  return g.sh == 1 && g.sw == 1 && g.ph <= g.dh * (g.kh - 1) && g.pw <= g.dw * (g.kw - 1) && g.kh * g.kw > 1 &&
         g.C >= kDirectMinCout;
}

// The input gradient of a stride-1 convolution (groups 1) through conv_direct_fwd: gy padded by
// d (k - 1) - p correlated with the weight flipped in space and with its channel dims swapped.
Tensor input_grad_direct(const Tensor& gy, const Tensor& w, const ConvGeom& g) {
  ConvGeom t = g;
  t.C = w->shape[0], t.H = g.oh, t.W = g.ow, t.oh = g.H, t.ow = g.W;
  t.ph = g.dh * (g.kh - 1) - g.ph, t.pw = g.dw * (g.kw - 1) - g.pw;
  Tensor gx = empty({g.N, g.C, g.H, g.W}, gy->dtype, gy->device());
  kern::conv_direct_fwd(gy->device())(gy, w, Tensor(), gx, t, true);
  return gx;
}

// Convolution through the device's kernels: conv_direct_fwd (`direct`) or conv_fwd forward, conv_bwd
// backward (where the device has it) but for a stride-1 input gradient through input_grad_direct where it
// fits (`direct_gx`); create_graph gradients, and with `public_grads` all but that input gradient, use public
// ops (the whole batch's patches and GEMMs).
Tensor conv_kernels(const Tensor& x, const Tensor& w, const Tensor& b, const ConvGeom& g, int64_t G, size_t nsp,
                    bool direct, bool direct_gx, bool public_grads = false) {
  Device dev = x->device();
  int64_t Cout = w->shape[0];
  Tensor xc = contig(as4d(x, nsp)), wc = contig(w), bc = b ? contig(b) : b;
  Tensor y = empty(out_shape(g, Cout, nsp), x->dtype, dev);
  if (direct) kern::conv_direct_fwd(dev)(xc, wc, bc, y, g, false);
  else kern::conv_fwd(dev)(xc, wc, bc, y, g, G);
  if (!needs_grad({&x, &w, &b})) return y;
  Saved sx_(xc), sw(wc);
  bool nx = x->requires_grad, nw = w->requires_grad, nb = b && b->requires_grad;
  Shape xshape = x->shape;
  return record("ConvolutionBackward", {x, w, b}, y,
                [sx_, sw, g, G, nx, nw, nb, xshape, direct_gx, public_grads](const Tensor& gy) {
    const Tensor& xs = sx_.get();
    const Tensor& ws = sw.get();
    if (grad_mode::enabled()) return conv_grads_public(gy, xs, ws, g, G, nx, nw, nb, xshape);
    Device d = xs->device();
    Tensor gyc = contig(gy, xs->dtype);
    // With stride 1 the input gradient is itself a direct convolution (see input_grad_direct), on small
    // maps too, where its class tiles skip the zero border's terms that a GEMM over patches multiplies
    // (the forward's rule on the same positions, its channel counts swapped).
    const bool gx_direct = nx && direct_gx && input_grad_direct_fits(g);
    Tensor gx = gx_direct ? reshape(input_grad_direct(gyc, ws, g), xshape) : Tensor();
    const bool nx_rest = nx && !gx_direct;
    if (!nx_rest && !nw && !nb) return TensorList{gx, Tensor(), Tensor()};
    if (public_grads || !kern::conv_bwd.has(d.type)) {
      TensorList r = conv_grads_public(gy, xs, ws, g, G, nx_rest, nw, nb, xshape);
      if (gx_direct) r[0] = gx;
      return r;
    }
    Tensor gw = nw ? empty(ws->shape, ws->dtype, d) : Tensor();
    Tensor gb = nb ? empty({ws->shape[0]}, ws->dtype, d) : Tensor();
    if (nx_rest) gx = empty(xs->shape, xs->dtype, d);
    kern::conv_bwd(d)(gyc, xs, ws, nx_rest ? gx : Tensor(), gw, gb, g, G);
    return TensorList{nx_rest ? reshape(gx, xshape) : gx, gw, gb};
  });
}

// Whether a transposed convolution runs as a direct convolution (input_grad_direct): float32, groups 1,
// on a device with the direct kernel, where that input gradient fits it.
bool transpose_direct(const Tensor& x, const Tensor& w, const ConvGeom& g, int64_t G) {
  return G == 1 && x->dtype == DType::Float32 && kern::conv_direct_fwd.has(x->device().type) &&
         input_grad_direct_fits(g);
}

// A transposed convolution through the convolution kernels: its output is the input gradient of the
// convolution with weight w from the output's space to x's grid (image by image in conv_bwd, or with
// `direct` a direct convolution), so no patch matrix of the whole batch is built and summed back. Its
// gradients are that convolution's forward (gx, the public conv, which picks its own kernel and records
// under create_graph) and weight gradient (gw, with x in the place of gy).
Tensor conv_transpose_kernels(const Tensor& x, const Tensor& w, const ConvGeom& g, int64_t G, size_t nsp,
                              const IntList& stride, const IntList& padding, const IntList& dilation, bool direct) {
  Device dev = x->device();
  Tensor xc = contig(as4d(x, nsp)), wc = contig(w);
  Tensor y;
  if (direct) {
    y = input_grad_direct(xc, wc, g);
  } else {
    y = empty({g.N, g.C, g.H, g.W}, x->dtype, dev);
    kern::conv_bwd(dev)(xc, xc, wc, y, Tensor(), Tensor(), g, G);  // the images (xc again) are read only for gw
  }
  if (nsp == 1) y = reshape(y, {g.N, g.C, g.W});
  if (!needs_grad({&x, &w})) return y;
  Saved sx_(xc), sw(wc);
  const bool nx = x->requires_grad, nw = w->requires_grad;
  const Shape xshape = x->shape;
  return record("ConvolutionTransposeBackward", {x, w}, y,
                [sx_, sw, g, G, nsp, nx, nw, xshape, stride, padding, dilation](const Tensor& gy) {
    const Tensor& xs = sx_.get();
    const Tensor& ws = sw.get();
    Tensor gyc = contig(as4d(gy, nsp), xs->dtype);
    Tensor gx = nx ? reshape(conv(nsp == 1 ? reshape(gyc, {g.N, g.C, g.W}) : gyc, ws, Tensor(), stride, padding,
                                  dilation, G), xshape)
                   : Tensor();
    if (!nw) return TensorList{gx, Tensor()};
    if (grad_mode::enabled())  // the weight gradient in public ops, which record
      return TensorList{gx, conv_grads_public(xs, gyc, ws, g, G, false, true, false, xshape)[1]};
    Tensor gw = empty(ws->shape, ws->dtype, xs->device());
    kern::conv_bwd(xs->device())(xs, gyc, ws, Tensor(), gw, Tensor(), g, G);
    return TensorList{gx, gw};
  });
}

}  // namespace

Tensor conv(const Tensor& x, const Tensor& w, const Tensor& b, const IntList& stride, const IntList& padding,
            const IntList& dilation, int64_t groups) {
  const char* op = x && x->dim() == 3 ? "conv1d" : "conv2d";
  size_t nsp = check_conv(x, w, b, groups, op);
  int64_t N = x->shape[0], C = x->shape[1], Cout = w->shape[0], G = groups;
  SX_CHECK(C % G == 0 && Cout % G == 0, ValueError, "[", op, "] in_channels ", C, " and out_channels ", Cout,
           " must be divisible by groups ", G);
  SX_CHECK(w->shape[1] * G == C, ValueError, "[", op, "] weight ", shape_str(w->shape), " expects ", w->shape[1] * G,
           " input channels (", w->shape[1], " per group, groups=", G, "), but input ", describe(x), " has ", C);
  SX_CHECK(!b || (b->dim() == 1 && b->shape[0] == Cout), ValueError, "[", op, "] bias ", b ? shape_str(b->shape) : "",
           " must have shape (", Cout, ",)");
  if (is_half(x->dtype)) {
    auto f = [](const Tensor& t) { return t ? to_dtype(t, DType::Float32) : t; };
    return to_dtype(conv(f(x), f(w), f(b), stride, padding, dilation, groups), x->dtype);
  }
  ConvGeom g;
  g.N = N, g.C = C;
  g.H = nsp == 1 ? 1 : x->shape[2], g.W = x->shape.back();
  IntList k(w->shape.begin() + 2, w->shape.end());
  window_geom(g, nsp, k, stride, padding, dilation, false, op, x->shape);
  int64_t L = g.oh * g.ow, CgK = C / G * g.kh * g.kw;
  DeviceType dt = x->device().type;
  if (x->numel() && w->numel() && G == 1 && x->dtype == DType::Float32 && kern::conv_direct_fwd.has(dt)) {
    if (direct_pays(C, Cout, g)) return conv_kernels(x, w, b, g, G, nsp, true, true);
    if (direct_small(C, Cout, g)) return conv_kernels(x, w, b, g, G, nsp, true, true, true);
    if (Cout < kDirectMinCout && direct_pays(C, kDirectMinCout, g)) {
      // Fewer output channels than a vector of them (an image network's last layer): the direct kernel's
      // last vector of channels partly used. The forward takes it where half the vector or more is used, one
      // image's patches exceed 2 MiB (an L2), or 512 KiB with a window larger than 3x3; else patches and a
      // BLAS product with a Cout-row weight. Through them fast_neural_style's Conv2d(32, 3, 9) on
      // (4, 32, 72, 72) took 32.7-33.7 ms forward (PyTorch 4.7, direct 5.5), 3 of 32 3x3 channels on
      // (4, 32, 64, 64) 1.85-1.96 ms (direct 0.75-0.78), 5 of 16 5x5 channels on (8, 16, 28, 28) 0.68-1.27
      // (direct 0.39-0.68); 1 of 32 3x3 channels on (16, 32, 28, 28) (0.9 MiB of patches) took 0.39-0.47
      // (direct 0.45-0.64), 3 of 6 5x5 channels on (8, 6, 28, 28) (0.45 MiB) 0.12 (direct 0.15-0.21). The
      // input gradient takes the direct kernel in both (input_grad_direct_fits).
      const int64_t patches = CgK * L;
      const bool fwd = 2 * Cout >= kDirectMinCout || patches >= (int64_t(1) << 19) ||
                       (g.kh * g.kw > 9 && patches >= (int64_t(1) << 17)) || !kern::conv_fwd.has(dt);
      return conv_kernels(x, w, b, g, G, nsp, fwd, true);
    }
  }
  if (kern::conv_fwd.has(dt) && kern::conv_bwd.has(dt) && x->numel() && w->numel() && L >= kMinPositions)
    return conv_kernels(x, w, b, g, G, nsp, false, false);
  Tensor cols = reshape(im2col_op(as4d(x, nsp), g), {G, CgK, N * L});
  Tensor y = matmul(reshape(w, {G, Cout / G, CgK}), cols);           // (G, Cout / G, N * L)
  y = permute(reshape(y, {Cout, N, L}), {1, 0, 2});                  // (N, Cout, L), strided
  y = b ? add(y, reshape(b, {1, Cout, 1})) : contiguous(y);
  return reshape(y, out_shape(g, Cout, nsp));
}

Tensor conv_transpose(const Tensor& x, const Tensor& w, const Tensor& b, const IntList& stride,
                      const IntList& padding, const IntList& output_padding, const IntList& dilation,
                      int64_t groups) {
  const char* op = x && x->dim() == 3 ? "conv_transpose1d" : "conv_transpose2d";
  size_t nsp = check_conv(x, w, b, groups, op);
  int64_t N = x->shape[0], C = x->shape[1], G = groups;
  SX_CHECK(w->shape[0] == C && C % G == 0, ValueError, "[", op, "] weight ", shape_str(w->shape),
           " expects ", w->shape[0], " input channels divisible by groups ", G, ", but input ", describe(x), " has ", C);
  int64_t Cout = w->shape[1] * G;
  SX_CHECK(!b || (b->dim() == 1 && b->shape[0] == Cout), ValueError, "[", op, "] bias ", b ? shape_str(b->shape) : "",
           " must have shape (", Cout, ",)");
  if (is_half(x->dtype)) {
    auto f = [](const Tensor& t) { return t ? to_dtype(t, DType::Float32) : t; };
    return to_dtype(conv_transpose(f(x), f(w), f(b), stride, padding, output_padding, dilation, groups), x->dtype);
  }
  // Geometry of the adjoint convolution: the image is the output, the grid is the input.
  ConvGeom g;
  g.N = N, g.C = Cout;
  IntList k(w->shape.begin() + 2, w->shape.end());
  std::tie(g.kh, g.kw) = hw(k, nsp, 1, op, "kernel_size");
  std::tie(g.sh, g.sw) = hw(stride, nsp, 1, op, "stride");
  std::tie(g.ph, g.pw) = hw(padding, nsp, 0, op, "padding");
  std::tie(g.dh, g.dw) = hw(dilation, nsp, 1, op, "dilation");
  auto [oph, opw] = hw(output_padding, nsp, 0, op, "output_padding");
  SX_CHECK(g.sh > 0 && g.sw > 0 && g.dh > 0 && g.dw > 0 && g.ph >= 0 && g.pw >= 0, ValueError, "[", op,
           "] stride and dilation must be positive and padding non-negative, got stride ", shape_str(stride),
           ", padding ", shape_str(padding), ", dilation ", shape_str(dilation));
  SX_CHECK(oph >= 0 && opw >= 0 && (oph < g.sh || oph < g.dh) && (opw < g.sw || opw < g.dw), ValueError, "[", op,
           "] output_padding ", shape_str(output_padding), " must be smaller than either stride ", shape_str(stride),
           " or dilation ", shape_str(dilation));
  g.oh = nsp == 1 ? 1 : x->shape[2], g.ow = x->shape.back();
  g.H = (g.oh - 1) * g.sh - 2 * g.ph + g.dh * (g.kh - 1) + oph + 1;
  g.W = (g.ow - 1) * g.sw - 2 * g.pw + g.dw * (g.kw - 1) + opw + 1;
  SX_CHECK(g.H > 0 && g.W > 0, ValueError, "[", op, "] input ", describe(x), " with weight ", shape_str(w->shape),
           ", stride ", shape_str(stride), " and padding ", shape_str(padding), " gives an empty output");
  int64_t L = g.oh * g.ow, Cg = C / G, K = g.kh * g.kw;
  // Through the convolution kernels where the device has them and the output padding stays within a
  // stride (so that conv of the output gradient gives back x's shape), on grids of kMinPositions positions
  // or more at stride 1 (a direct convolution) and of 4 kMinPositions or more otherwise: image by image,
  // each image's product reads the whole weight, which on 8x8 grids ran slower than one product for the
  // whole batch (DCGAN's 256 -> 128 layer, batch 16: 4.9 -> 5.6 ms) and on 16x16 ones faster (6.4 -> 5.5).
  const bool direct = transpose_direct(x, w, g, G);
  if (x->numel() && w->numel() && kern::conv_bwd.has(x->device().type) && oph < g.sh && opw < g.sw &&
      L >= (direct ? kMinPositions : 4 * kMinPositions)) {
    Tensor y = conv_transpose_kernels(x, w, g, G, nsp, stride, padding, dilation, direct);
    return b ? add(y, reshape(b, nsp == 1 ? Shape{1, Cout, 1} : Shape{1, Cout, 1, 1})) : y;
  }
  Tensor xg = reshape(permute(reshape(x, {N, C, L}), {1, 0, 2}), {G, Cg, N * L});
  Tensor cols = matmul(transpose(reshape(w, {G, Cg, Cout / G * K}), 1, 2), xg);  // (G, Cout / G * K, N * L)
  Tensor y = col2im_op(reshape(cols, {Cout * K, N, L}), g);
  if (b) y = add(y, reshape(b, {1, Cout, 1, 1}));
  return nsp == 1 ? reshape(y, {N, Cout, g.W}) : y;
}

Tensor unfold(const Tensor& x, const IntList& kernel, const IntList& dilation, const IntList& padding,
              const IntList& stride) {
  const char* op = "unfold";
  check_float(x, op, "input");
  SX_CHECK(x->dim() == 4, ValueError, "[unfold] expected 4-D (N, C, H, W) input, got ", describe(x));
  if (is_half(x->dtype))
    return to_dtype(unfold(to_dtype(x, DType::Float32), kernel, dilation, padding, stride), x->dtype);
  ConvGeom g;
  g.N = x->shape[0], g.C = x->shape[1], g.H = x->shape[2], g.W = x->shape[3];
  window_geom(g, 2, kernel, stride, padding, dilation, false, op, x->shape);
  return contiguous(permute(im2col_op(x, g), {1, 0, 2}));
}

Tensor fold(const Tensor& cols, const IntList& output_size, const IntList& kernel, const IntList& dilation,
            const IntList& padding, const IntList& stride) {
  const char* op = "fold";
  check_float(cols, op, "input");
  SX_CHECK(cols->dim() == 3, ValueError, "[fold] expected 3-D (N, C * prod(kernel_size), L) input, got ",
           describe(cols));
  SX_CHECK(output_size.size() == 2, ValueError, "[fold] output_size must have 2 values, got ", shape_str(output_size));
  if (is_half(cols->dtype))
    return to_dtype(fold(to_dtype(cols, DType::Float32), output_size, kernel, dilation, padding, stride), cols->dtype);
  ConvGeom g;
  g.N = cols->shape[0], g.H = output_size[0], g.W = output_size[1];
  window_geom(g, 2, kernel, stride, padding, dilation, false, op, Shape{g.H, g.W});
  int64_t K = g.kh * g.kw;
  SX_CHECK(cols->shape[1] % K == 0, ValueError, "[fold] input ", describe(cols), ": dim 1 must be divisible by ",
           "prod(kernel_size) = ", K);
  SX_CHECK(cols->shape[2] == g.oh * g.ow, ValueError, "[fold] input ", describe(cols), " has ", cols->shape[2],
           " blocks, but output_size ", shape_str(output_size), " with these parameters gives ", g.oh * g.ow);
  g.C = cols->shape[1] / K;
  return col2im_op(permute(cols, {1, 0, 2}), g);
}

Tensor pad_constant(const Tensor& x, const IntList& pads, const Scalar& value) {
  const int64_t nd = x->dim(), np = int64_t(pads.size()) / 2;
  SX_CHECK(pads.size() % 2 == 0 && np <= nd, ValueError, "[pad] pad ", shape_str(pads),
           " must have an even length of at most 2 * ndim for input ", describe(x));
  Tensor kept = x;  // x without its cropped parts
  Shape os = x->shape;
  IntList lead(size_t(nd), 0), crops(pads.size(), 0);  // where kept starts in the output; the crops
  for (int64_t k = 0; k < np; ++k) {
    const int64_t d = nd - 1 - k, l = pads[size_t(2 * k)], r = pads[size_t(2 * k + 1)], n = x->shape[size_t(d)];
    const int64_t cl = std::max<int64_t>(-l, 0), cr = std::max<int64_t>(-r, 0);
    SX_CHECK(cl + cr <= n, ValueError, "[pad] padding (", l, ", ", r, ") crops more than dim ", d, " of input ",
             describe(x), " holds");
    if (cl || cr) kept = narrow(kept, d, cl, n - cl - cr);
    crops[size_t(2 * k)] = cl, crops[size_t(2 * k + 1)] = cr;
    lead[size_t(d)] = std::max<int64_t>(l, 0);
    os[size_t(d)] = n - cl - cr + lead[size_t(d)] + std::max<int64_t>(r, 0);
  }
  // Padding the last dim, the output is filled whole (the border would be short runs of each row); else
  // only the border is: the slabs before and after kept along each dim, runs of whole rows at least.
  const Device dev = x->device();
  const Shape ks = kept->shape;
  const bool whole = nd > 0 && os.back() != ks.back();
  Tensor out = whole ? full(os, value, x->dtype, dev) : empty(os, x->dtype, dev);
  int64_t off = 0;
  for (int64_t d = 0; d < nd; ++d) off += lead[size_t(d)] * out->strides[size_t(d)];
  if (kept->numel()) copy_into(make_view(out, ks, out->strides, off), detach(kept));
  for (size_t d = 0; d < size_t(nd) && !whole; ++d) {
    const int64_t after = lead[d] + ks[d];
    for (auto [start, len] : {std::pair{int64_t(0), lead[d]}, std::pair{after, os[d] - after}}) {
      Shape ss = os;
      ss[d] = len;
      if (len) kern::fill(dev)(make_view(out, ss, out->strides, start * out->strides[d]), value);
    }
  }
  if (!is_floating(x->dtype) || !needs_grad({&x})) return out;
  bool cropped = std::any_of(crops.begin(), crops.end(), [](int64_t c) { return c > 0; });
  return record("ConstantPadBackward", {x}, out, [ks, lead, crops, cropped](const Tensor& g) {
    Tensor gi = g;
    for (size_t d = 0; d < ks.size(); ++d)
      if (gi->shape[d] != ks[d]) gi = slice(gi, int64_t(d), lead[d], lead[d] + ks[d], 1);
    return TensorList{cropped ? pad_constant(gi, crops, Scalar(0.0)) : gi};
  });
}

Tensor pad_gather(const Tensor& x, const TensorList& maps) {
  const int64_t nd = x->dim(), k = int64_t(maps.size());
  SX_CHECK(k >= 1 && k <= nd, ValueError, "[pad] ", k, " index maps for input ", describe(x));
  Shape os = x->shape;
  for (int64_t j = 0; j < k; ++j) {
    const Tensor& m = maps[size_t(j)];
    const int64_t d = nd - k + j, n = x->shape[size_t(d)];
    SX_CHECK(m->dtype == DType::Int64 && m->dim() == 1 && m->device().type == DeviceType::CPU && m->is_contiguous(),
             TypeError, "[pad] the index map of dim ", d, " must be a 1-d contiguous int64 CPU tensor, got ",
             describe(m));
    const int64_t* p = m->data<int64_t>();
    int64_t lo = 0, hi = 0;  // the map's range, in one vectorisable pass
    for (int64_t i = 0; i < m->numel(); ++i) lo = std::min(lo, p[i]), hi = std::max(hi, p[i]);
    SX_CHECK(lo >= 0 && (m->numel() == 0 || hi < n), IndexError, "[pad] index ", lo < 0 ? lo : hi,
             " is out of range for dim ", d, " of input ", describe(x));
    os[size_t(d)] = m->numel();
  }
  const Device dev = x->device();
  if (!kern::pad_gather.has(dev.type)) {  // one index_select per dim
    Tensor out = x;
    for (int64_t j = 0; j < k; ++j) out = index_select(out, nd - k + j, to_device(maps[size_t(j)], dev));
    return out;
  }
  Tensor out = empty(os, x->dtype, dev);
  if (out->numel()) kern::pad_gather(dev)(contiguous(detach(x)), out, maps);
  if (!is_floating(x->dtype) || !needs_grad({&x})) return out;
  return record("PadBackward", {x}, out, [maps, xs = x->shape](const Tensor& g) {
    return TensorList{pad_gather_grad(g, maps, xs)};
  });
}

Tensor pad_gather_grad(const Tensor& g, const TensorList& maps, const Shape& xs) {
  Tensor gx = zeros(xs, g->dtype, g->device());
  if (g->numel()) kern::pad_gather_add(g->device())(contiguous(detach(g)), gx, maps);
  if (!needs_grad({&g})) return gx;
  return record("PadGatherGradBackward", {g}, gx, [maps](const Tensor& gg) {
    return TensorList{pad_gather(gg, maps)};
  });
}

}  // namespace nn
}  // namespace sx
