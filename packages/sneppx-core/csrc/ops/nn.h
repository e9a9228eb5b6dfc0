// Fused neural-network ops (sx::nn): softmax, norms, activations, linear, embedding, dropout, losses,
// attention and the fused optimizer steps. Each op validates (errors name the op, shapes and dtypes),
// computes with a kernel from cpu/nn_kernels.h and records a hand-written backward. float16/bfloat16
// inputs compute in float32. Backward closures call the *_backward ops below; under create_graph they
// fall back to public ops where that is cheap and otherwise raise.
#pragma once
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "ops/ops.h"

namespace sx::nn {

enum class Gate : uint8_t { Glu, SwiGlu };  // glu: a * sigmoid(b); swiglu: silu(a) * b
// Pointwise losses: (entry, name, backward node name).
#define SX_POINTWISE_LOSSES(X)                                                                              \
  X(Mse, "mse_loss", "MseLossBackward") X(L1, "l1_loss", "L1LossBackward")                                  \
  X(SmoothL1, "smooth_l1_loss", "SmoothL1LossBackward") X(Huber, "huber_loss", "HuberLossBackward")         \
  X(Bce, "binary_cross_entropy", "BinaryCrossEntropyBackward")                                              \
  X(BceLogits, "binary_cross_entropy_with_logits", "BinaryCrossEntropyWithLogitsBackward")                  \
  X(KlDiv, "kl_div", "KlDivBackward") X(KlDivLog, "kl_div", "KlDivBackward")
enum class PLoss : uint8_t {
#define SX_ENUM_ENTRY(E, NAME, BW) E,
  SX_POINTWISE_LOSSES(SX_ENUM_ENTRY)
#undef SX_ENUM_ENTRY
};

enum class Reduction : uint8_t { None, Mean, Sum, BatchMean };
Reduction parse_reduction(const std::string& r, const char* op, bool allow_batchmean = false);

// ---- softmax (nn.cpp)
Tensor softmax(const Tensor& x, int64_t dim, bool log);
Tensor softmax_backward(const Tensor& g, const Tensor& y, int64_t dim, bool log);

// ---- normalisation (nn.cpp); weight / bias may be null, eps < 0 for rms_norm means dtype epsilon
Tensor layer_norm(const Tensor& x, const IntList& normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps);
Tensor rms_norm(const Tensor& x, const IntList& normalized_shape, const Tensor& weight, double eps);

// ---- gated units (nn.cpp)
// glu(x, dim) = a * sigmoid(b), swiglu(x, dim) = silu(a) * b with (a, b) the halves of x along dim;
// gated(k, a, b) is the same on two tensors of equal shape.
Tensor glu(const Tensor& x, int64_t dim, Gate k = Gate::Glu);
Tensor gated(Gate k, const Tensor& a, const Tensor& b);

// ---- recurrent cells (rnn.cpp)
// lstm_cell: gates (B, 4H) pre-activations in the order i, f, g, o and c_prev (B, H) give
// c = sigmoid(f) * c_prev + sigmoid(i) * tanh(g) and h = sigmoid(o) * tanh(c), returned as (h, c).
std::pair<Tensor, Tensor> lstm_cell(const Tensor& gates, const Tensor& c_prev);
// gru_cell: gi, gh (B, 3H) in the order r, z, n and h_prev (B, H) give r = sigmoid(gi_r + gh_r),
// z = sigmoid(gi_z + gh_z), n = tanh(gi_n + r * gh_n) and h = (1 - z) * n + z * h_prev.
Tensor gru_cell(const Tensor& gi, const Tensor& gh, const Tensor& h_prev);
// lstm_sequence: one layer and direction over a whole sequence. gi (T, B, 4H) holds every step's
// x_t W_ih^T + b_ih + b_hh; h0, c0 (B, H); w_hh (4H, H). Step t (t = 0..T-1, or T-1..0 with reverse)
// takes the gates gi[t] + h W_hh^T and the cell above. Returns (out (T, B, H), h_n, c_n).
std::tuple<Tensor, Tensor, Tensor> lstm_sequence(const Tensor& gi, const Tensor& h0, const Tensor& c0,
                                                 const Tensor& w_hh, bool reverse);
// gru_sequence: likewise with gi (T, B, 3H) = x_t W_ih^T + b_ih, gh = h W_hh^T + b_hh (b_hh may be
// null) and the GRU cell above. Returns (out (T, B, H), h_n).
std::pair<Tensor, Tensor> gru_sequence(const Tensor& gi, const Tensor& h0, const Tensor& w_hh, const Tensor& b_hh,
                                       bool reverse);

// ---- linear, embedding, dropout (nn_layers.cpp)
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias);
Tensor embedding(const Tensor& ids, const Tensor& weight, std::optional<int64_t> padding_idx, bool scale_grad_by_freq);
Tensor dropout(const Tensor& x, double p, bool training, Generator* gen);

// ---- losses (loss.cpp)
// Cross entropy over rows of (N, C) logits; the kernel reads the class ids from `target` (int64).
struct CEArgs {
  int64_t N = 0, C = 0;
  const int64_t* target = nullptr;
  int64_t ignore_index = -100;
  double smoothing = 0;
};

Tensor cross_entropy(const Tensor& logits, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                     Reduction red, double label_smoothing);
Tensor nll_loss(const Tensor& logp, const Tensor& target, const Tensor& weight, int64_t ignore_index, Reduction red);
// Pointwise losses with broadcasting; extra = pos_weight (BCE with logits), weight multiplies the
// elementwise loss (BCE variants). beta: SmoothL1 beta / Huber delta.
Tensor pointwise_loss(PLoss k, const Tensor& x, const Tensor& t, const Tensor& extra, const Tensor& weight,
                      Reduction red, double beta);

// ---- attention (attention.cpp)
// The attention kernels' arguments. Work units are (batch*head) matrices; each unit's q/k/v may sit
// anywhere in its tensor (per-unit element offsets from the start of the storage, and row strides),
// the last dim contiguous. Outputs and gradients are contiguous per unit.
struct AttnArgs {
  int64_t units = 0;  // batch * heads
  int64_t Tq = 0, Tk = 0, D = 0, Dv = 0;
  const int64_t* q_off = nullptr;  // element offset of unit u's matrix, per unit
  const int64_t* k_off = nullptr;
  const int64_t* v_off = nullptr;
  const int64_t* m_off = nullptr;  // additive mask: unit u's (Tq, Tk) block starts here; null = no mask
  int64_t q_rs = 0, k_rs = 0, v_rs = 0;  // row strides in elements
  double scale = 1;
  bool causal = false;  // query i sees keys j <= i + Tk - Tq (aligned to the end)
  double dropout_p = 0;  // dropout on the attention weights, Philox stream (seed, base)
  uint64_t seed = 0, base = 0;
};

// Philox counters used by one call: rows * ceil(Tk / 4).
inline uint64_t attn_dropout_counters(const AttnArgs& a) { return uint64_t(a.units * a.Tq * ((a.Tk + 3) / 4)); }

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

// ---- the fused nn kernels' slots (see core/dispatch.h). Operands are contiguous buffers of one
// float dtype (float32 or float64); an absent optional operand is a null Tensor.
namespace sx::kern {
// softmax over the middle axis of (outer, n, inner)
SX_KERNEL(softmax_fwd, void(const Tensor& x, const Tensor& y, int64_t outer, int64_t n, int64_t inner, bool log));
SX_KERNEL(softmax_bwd, void(const Tensor& g, const Tensor& y, const Tensor& gx, int64_t outer, int64_t n, int64_t inner,
                            bool log));
// layer / RMS norm over the rows of (M, N); w, b and mean may be null (mean is null for RMS)
SX_KERNEL(norm_fwd, void(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y, const Tensor& mean,
                         const Tensor& rstd, int64_t M, int64_t N, double eps, bool rms));
SX_KERNEL(norm_bwd, void(const Tensor& g, const Tensor& x, const Tensor& w, const Tensor& mean, const Tensor& rstd,
                         const Tensor& gx, const Tensor& gw, const Tensor& gb, int64_t M, int64_t N, bool rms));
// gated units over `outer` blocks of `len` elements; block o of a starts at element a_off + o * in_stride
// of a (likewise b, ga, gb), block o of y / g at o * len
SX_KERNEL(gate_fwd, void(nn::Gate k, const Tensor& a, int64_t a_off, const Tensor& b, int64_t b_off, const Tensor& y,
                         int64_t outer, int64_t len, int64_t in_stride));
SX_KERNEL(gate_bwd, void(nn::Gate k, const Tensor& g, const Tensor& a, int64_t a_off, const Tensor& b, int64_t b_off,
                         const Tensor& ga, const Tensor& gb, int64_t outer, int64_t len, int64_t in_stride));
// recurrent cells over B rows of H units. lstm: hc (2, B, H) receives h then c; ws (B, 5H), null when no
// backward follows, keeps sigmoid(i), sigmoid(f), tanh(g), sigmoid(o), tanh(c). The backward reads
// dhc (2, B, H) and writes dgates (B, 4H) and dc_prev (B, H).
SX_KERNEL(lstm_cell_fwd, void(const Tensor& gates, const Tensor& c_prev, const Tensor& hc, const Tensor& ws, int64_t B,
                              int64_t H));
SX_KERNEL(lstm_cell_bwd, void(const Tensor& dhc, const Tensor& c_prev, const Tensor& ws, const Tensor& dgates,
                              const Tensor& dc_prev, int64_t B, int64_t H));
// gru: h (B, H); ws (B, 4H), null when no backward follows, keeps r, z, n and gh_n. The backward writes
// dgi, dgh (B, 3H) and dh_prev (B, H).
SX_KERNEL(gru_cell_fwd, void(const Tensor& gi, const Tensor& gh, const Tensor& h_prev, const Tensor& h,
                             const Tensor& ws, int64_t B, int64_t H));
SX_KERNEL(gru_cell_bwd, void(const Tensor& dh, const Tensor& h_prev, const Tensor& ws, const Tensor& dgi,
                             const Tensor& dgh, const Tensor& dh_prev, int64_t B, int64_t H));
// whole sequences of one layer and direction (T >= 1, B, H >= 1), step t taken in the order 0..T-1 or,
// with rev, T-1..0. Every per-step buffer is indexed by t: hp, cp (T, B, H) receive the h and c that
// step t reads (h0, c0 for the first), ws (null when no backward follows) the cell's saved values
// ((T, B, 5H) lstm, (T, B, 4H) gru), gh (B, G*H) is scratch. lstm: gi (T, B, 4H) with both biases,
// out (T+1, B, H): the outputs h_t, then the last c. The backward reads dout (T+1, B, H), writes dgi,
// dh0, dc0 (dcs (B, H) is scratch) and, when set, dw (4H, H).
SX_KERNEL(lstm_seq_fwd, void(const Tensor& gi, const Tensor& w_hh, const Tensor& h0, const Tensor& c0,
                             const Tensor& out, const Tensor& hp, const Tensor& cp, const Tensor& ws,
                             int64_t T, int64_t B, int64_t H, bool rev));
SX_KERNEL(lstm_seq_bwd, void(const Tensor& dout, const Tensor& w_hh, const Tensor& hp, const Tensor& cp,
                             const Tensor& ws, const Tensor& dgi, const Tensor& dh0, const Tensor& dc0,
                             const Tensor& dcs, const Tensor& dw, int64_t T, int64_t B, int64_t H, bool rev));
// gru: gi (T, B, 3H) with b_ih, b_hh (3H) or null, out (T, B, H). The backward reads dout (T, B, H),
// writes dgi, dgh (T, B, 3H), dh0 (dhs (B, H) is scratch) and, when set, dw (3H, H) and db (3H).
SX_KERNEL(gru_seq_fwd, void(const Tensor& gi, const Tensor& w_hh, const Tensor& b_hh, const Tensor& h0,
                            const Tensor& out, const Tensor& hp, const Tensor& gh, const Tensor& ws, int64_t T,
                            int64_t B, int64_t H, bool rev));
SX_KERNEL(gru_seq_bwd, void(const Tensor& dout, const Tensor& w_hh, const Tensor& hp, const Tensor& ws,
                            const Tensor& dgi, const Tensor& dgh, const Tensor& dh0, const Tensor& dhs, const Tensor& dw,
                            const Tensor& db, int64_t T, int64_t B, int64_t H, bool rev));
// pointwise losses on equal-length buffers (w: pos_weight for BCE with logits, may be null)
SX_KERNEL(ploss_fwd, void(nn::PLoss k, const Tensor& x, const Tensor& t, const Tensor& w, const Tensor& out, double beta));
SX_KERNEL(ploss_bwd, void(nn::PLoss k, const Tensor& g, const Tensor& x, const Tensor& t, const Tensor& w,
                          const Tensor& gx, const Tensor& gt, const Tensor& gw, double beta));
// linear: out (M, N) = x (M, K) @ w (N, K)^T + b; backward gx = g w, gw = g^T x, gb = column sums of g
SX_KERNEL(linear_fwd, void(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& out, int64_t M, int64_t N,
                           int64_t K));
SX_KERNEL(linear_bwd, void(const Tensor& g, const Tensor& x, const Tensor& w, const Tensor& gx, const Tensor& gw,
                           const Tensor& gb, int64_t M, int64_t N, int64_t K));
// embedding rows out[i] = w[ids[i]] (ids int64, any weight dtype); backward accumulates into gw
SX_KERNEL(embedding_fwd, void(const Tensor& ids, const Tensor& w, const Tensor& out));
SX_KERNEL(embedding_bwd, void(const Tensor& ids, const Tensor& g, const Tensor& gw, int64_t padding_idx,
                              bool scale_by_freq));
// y = x * keep / (1 - p), keep from the Philox stream (seed, base)
SX_KERNEL(dropout, void(const Tensor& x, const Tensor& y, double p, uint64_t seed, uint64_t base));
// fused optimizer steps over whole tensor lists (validated by the op: same shapes, dtypes, device)
SX_KERNEL(sgd_step, void(const TensorList& params, const TensorList& grads, const TensorList& bufs,
                         const nn::SgdOpts& o));
SX_KERNEL(adam_step, void(const TensorList& params, const TensorList& grads, const TensorList& m,
                          const TensorList& v, const TensorList& vmax, const nn::AdamOpts& o));
SX_KERNEL(lion_step, void(const TensorList& params, const TensorList& grads, const TensorList& m, double lr,
                          double beta1, double beta2, double weight_decay));
SX_KERNEL(lamb_step, void(const TensorList& params, const TensorList& grads, const TensorList& m,
                          const TensorList& v, int64_t step, double lr, double beta1, double beta2, double eps,
                          double weight_decay));
// the p-norm of all elements of all tensors together (inf: the largest magnitude)
SX_KERNEL(total_norm, double(const TensorList& ts, double p));
SX_KERNEL(scale, void(const TensorList& ts, double factor));
// tiled attention: q, k, v and mask are addressed from the start of their storage (AttnArgs offsets);
// out (units, Tq, Dv) and lse (units, Tq) contiguous; backward writes dq, dk, dv (and dmask if set)
SX_KERNEL(attn_fwd, void(const nn::AttnArgs& a, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                         const Tensor& out, const Tensor& lse));
SX_KERNEL(attn_bwd, void(const nn::AttnArgs& a, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                         const Tensor& out, const Tensor& lse, const Tensor& dout, const Tensor& dq, const Tensor& dk,
                         const Tensor& dv, const Tensor& dmask));
// cross entropy over rows of (N, C): exactly one of target (int64 class ids, (N,)) and probs is set.
// Per row: lse (N, 2) = (max, log sum exp(x - max)), loss (N,) float64 with smoothing and class weights
// applied, wrow (N,) float64: the row's share of the "mean" denominator (0 for ignored rows).
SX_KERNEL(ce_fwd, void(const nn::CEArgs& a, const Tensor& target, const Tensor& x, const Tensor& probs,
                       const Tensor& weight, const Tensor& lse, const Tensor& loss, const Tensor& wrow));
// gx = grow[i] * d loss_i / d x_i; gp (probability targets, may be null) = grow[i] * d loss_i / d probs_i
SX_KERNEL(ce_bwd, void(const nn::CEArgs& a, const Tensor& target, const Tensor& x, const Tensor& probs,
                       const Tensor& weight, const Tensor& lse, const Tensor& grow, const Tensor& gx,
                       const Tensor& gp));
// nll over rows of (N, C) log-probabilities: loss[i] = -w[y_i] x[i, y_i], wrow[i] = w[y_i] (0 where ignored);
// backward writes gx[i, y_i] = -w[y_i] grow[i] into a zeroed gx
SX_KERNEL(nll_fwd, void(const Tensor& target, const Tensor& x, const Tensor& weight, int64_t ignore_index,
                        const Tensor& loss, const Tensor& wrow));
SX_KERNEL(nll_bwd, void(const Tensor& target, const Tensor& weight, const Tensor& grow, int64_t ignore_index,
                        const Tensor& gx));
}  // namespace sx::kern
