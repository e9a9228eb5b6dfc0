// Fused neural-network ops (sx::nn): softmax, norms, activations, linear, embedding, dropout, losses,
// attention and the fused optimizer steps. Each op validates (errors name the op, shapes and dtypes),
// computes with a kernel from cpu/nn_kernels.h and records a hand-written backward. float16/bfloat16
// inputs compute in float32. Backward closures call the *_backward ops below; under create_graph they
// fall back to public ops where that is cheap and otherwise raise.
#pragma once
#include <optional>
#include <string>

#include "cpu/nn_kernels.h"
#include "ops/ops.h"

namespace sx::nn {

enum class Reduction : uint8_t { None, Mean, Sum, BatchMean };
Reduction parse_reduction(const std::string& r, const char* op, bool allow_batchmean = false);

// ---- softmax (nn.cpp)
Tensor softmax(const Tensor& x, int64_t dim, bool log);
Tensor softmax_backward(const Tensor& g, const Tensor& y, int64_t dim, bool log);

// ---- normalisation (nn.cpp); weight / bias may be null, eps < 0 for rms_norm means dtype epsilon
Tensor layer_norm(const Tensor& x, const IntList& normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps);
Tensor rms_norm(const Tensor& x, const IntList& normalized_shape, const Tensor& weight, double eps);

// ---- activations (nn.cpp): y = f(x; p0, p1), parameters as in PyTorch
Tensor activation(cpu::Act a, const Tensor& x, double p0 = 0, double p1 = 0);
Tensor activation_backward(cpu::Act a, const Tensor& g, const Tensor& x, double p0, double p1);
// glu(x, dim) = a * sigmoid(b), swiglu(x, dim) = silu(a) * b with (a, b) the halves of x along dim;
// gated(k, a, b) is the same on two tensors of equal shape.
Tensor glu(const Tensor& x, int64_t dim, cpu::Gate k = cpu::Gate::Glu);
Tensor gated(cpu::Gate k, const Tensor& a, const Tensor& b);

// ---- linear, embedding, dropout (nn_layers.cpp)
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias);
Tensor embedding(const Tensor& ids, const Tensor& weight, std::optional<int64_t> padding_idx, bool scale_grad_by_freq);
Tensor dropout(const Tensor& x, double p, bool training, Generator* gen);

// ---- losses (loss.cpp)
Tensor cross_entropy(const Tensor& logits, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                     Reduction red, double label_smoothing);
Tensor nll_loss(const Tensor& logp, const Tensor& target, const Tensor& weight, int64_t ignore_index, Reduction red);
// Pointwise losses with broadcasting; extra = pos_weight (BCE with logits), weight multiplies the
// elementwise loss (BCE variants). beta: SmoothL1 beta / Huber delta.
Tensor pointwise_loss(cpu::PLoss k, const Tensor& x, const Tensor& t, const Tensor& extra, const Tensor& weight,
                      Reduction red, double beta);

// ---- attention (attention.cpp)
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                                    double dropout_p, bool is_causal, std::optional<double> scale, bool enable_gqa,
                                    Generator* gen);

// ---- fused optimizer steps (optim.cpp): in place, no autograd, version bumped on every written tensor
struct SgdOpts {
  double lr = 0, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false, maximize = false, first_step = false;
};
void sgd_step(const TensorList& params, const TensorList& grads, const TensorList& bufs, const SgdOpts& o);
struct AdamOpts {
  int64_t step = 1;
  double lr = 0, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
  bool amsgrad = false, decoupled = false, maximize = false;
};
void adam_step(const TensorList& params, const TensorList& grads, const TensorList& m, const TensorList& v,
               const TensorList& vmax, const AdamOpts& o);
void lion_step(const TensorList& params, const TensorList& grads, const TensorList& m, double lr, double beta1,
               double beta2, double weight_decay);
void lamb_step(const TensorList& params, const TensorList& grads, const TensorList& m, const TensorList& v,
               int64_t step, double lr, double beta1, double beta2, double eps, double weight_decay);
Tensor total_norm(const TensorList& ts, double norm_type);
void scale_(const TensorList& ts, double factor);

}  // namespace sx::nn
