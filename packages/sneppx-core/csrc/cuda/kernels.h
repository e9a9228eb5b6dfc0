// The CUDA kernels that cuda/register.cu puts in the kernel table (signatures as in ops/kernels.h,
// ops/unary_defs.h and ops/nn.h).
#pragma once
#include "ops/conv.h"
#include "ops/kernels.h"
#include "ops/nn.h"
#include "ops/unary_defs.h"

namespace sx::cuda {

void transfer(const Tensor& dst, const Tensor& src, bool non_blocking);
void fill(const Tensor& t, const Scalar& v);
void copy(const Tensor& dst, const Tensor& src);
void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b);
void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b);
void clamp(const Tensor& out, const Tensor& x, double lo, double hi, bool has_lo, bool has_hi);
void unary(UnaryOp op, const Tensor& out, const Tensor& x, double p0, double p1);
void unary_grad(UnaryOp op, const Tensor& gx, const Tensor& g, const Tensor& x, double p0, double p1, int order);
void reduce(ReduceOp op, const Tensor& in, const Tensor& out, int64_t outer, int64_t n, int64_t inner);
void arg_reduce(bool is_max, const Tensor& in, const Tensor& values, const Tensor& indices, int64_t outer, int64_t n,
                int64_t inner);
void matmul(const Tensor& a, const Tensor& b, const Tensor& out);
void softmax_fwd(const Tensor& x, const Tensor& y, int64_t outer, int64_t n, int64_t inner, bool log);
void softmax_bwd(const Tensor& g, const Tensor& y, const Tensor& gx, int64_t outer, int64_t n, int64_t inner, bool log);

// scans and logsumexp (scan.cu)
void cumsum(const Tensor& in, const Tensor& out, int64_t outer, int64_t n, int64_t inner);
void scan(ScanOp op, const Tensor& in, const Tensor& out, int64_t outer, int64_t n, int64_t inner);
void logsumexp(const Tensor& in, const Tensor& out, int64_t outer, int64_t n, int64_t inner);
void cumprod_bwd(const Tensor& x, const Tensor& g, const Tensor& gx, int64_t outer, int64_t n, int64_t inner);

// factories and random draws (random.cu)
void arange(const Tensor& out, double start, double step, double end, bool from_both_ends);
void random(Distribution dist, const Tensor& out, uint64_t seed, uint64_t base, double a, double b);
void randint(const Tensor& out, uint64_t seed, uint64_t base, int64_t low, uint64_t range);
void randperm(const Tensor& out, uint64_t seed, uint64_t base);
void multinomial(const Tensor& out, const Tensor& probs, bool replacement, uint64_t seed, uint64_t base);

// indexing (index.cu)
bool index_in_range(const Tensor& idx, int64_t size);
bool gather(const Tensor& out, const Tensor& x, const Tensor& idx, int64_t d);
bool scatter(const Tensor& out, const Tensor& idx, const Tensor& src, int64_t d, ScatterOp op);
void index_select(const Tensor& out, const Tensor& x, const Tensor& idx, int64_t d);
void index_add(const Tensor& out, const Tensor& idx, const Tensor& src, int64_t d, const Scalar& alpha);
void index_front(const Tensor& out, const Tensor& x, const TensorList& idx);
void index_put_front(const Tensor& out, const TensorList& idx, const Tensor& values, bool accumulate);
bool one_hot(const Tensor& out, const Tensor& idx);
void sort_rows(const Tensor& rows, const Tensor& values, const Tensor& indices, bool descending);
int64_t count_nonzero(const Tensor& x);
void masked_select(const Tensor& out, const Tensor& x, const Tensor& mask);
void nonzero(const Tensor& out, const Tensor& x);

// fused nn kernels (nn.cu, loss.cu, attention.cu)
void norm_fwd(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y, const Tensor& mean,
              const Tensor& rstd, int64_t M, int64_t N, double eps, bool rms);
void norm_bwd(const Tensor& g, const Tensor& x, const Tensor& w, const Tensor& mean, const Tensor& rstd,
              const Tensor& gx, const Tensor& gw, const Tensor& gb, int64_t M, int64_t N, bool rms);
void gate_fwd(nn::Gate k, const Tensor& a, int64_t a_off, const Tensor& b, int64_t b_off, const Tensor& y,
              int64_t outer, int64_t len, int64_t in_stride);
void gate_bwd(nn::Gate k, const Tensor& g, const Tensor& a, int64_t a_off, const Tensor& b, int64_t b_off,
              const Tensor& ga, const Tensor& gb, int64_t outer, int64_t len, int64_t in_stride);
void linear_fwd(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& out, int64_t M, int64_t N, int64_t K);
void linear_bwd(const Tensor& g, const Tensor& x, const Tensor& w, const Tensor& gx, const Tensor& gw, const Tensor& gb,
                int64_t M, int64_t N, int64_t K);
void embedding_fwd(const Tensor& ids, const Tensor& w, const Tensor& out);
void embedding_bwd(const Tensor& ids, const Tensor& g, const Tensor& gw, int64_t padding_idx, bool scale_by_freq);
void dropout(const Tensor& x, const Tensor& y, double p, uint64_t seed, uint64_t base);
void ce_fwd(const nn::CEArgs& a, const Tensor& target, const Tensor& x, const Tensor& probs, const Tensor& weight,
            const Tensor& lse, const Tensor& loss, const Tensor& wrow);
void ce_bwd(const nn::CEArgs& a, const Tensor& target, const Tensor& x, const Tensor& probs, const Tensor& weight,
            const Tensor& lse, const Tensor& grow, const Tensor& gx, const Tensor& gp);
void nll_fwd(const Tensor& target, const Tensor& x, const Tensor& weight, int64_t ignore_index, const Tensor& loss,
             const Tensor& wrow);
void nll_bwd(const Tensor& target, const Tensor& weight, const Tensor& grow, int64_t ignore_index, const Tensor& gx);
void ploss_fwd(nn::PLoss k, const Tensor& x, const Tensor& t, const Tensor& w, const Tensor& out, double beta);
void ploss_bwd(nn::PLoss k, const Tensor& g, const Tensor& x, const Tensor& t, const Tensor& w, const Tensor& gx,
               const Tensor& gt, const Tensor& gw, double beta);
void attn_fwd(const nn::AttnArgs& a, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
              const Tensor& out, const Tensor& lse);
void attn_bwd(const nn::AttnArgs& a, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
              const Tensor& out, const Tensor& lse, const Tensor& dout, const Tensor& dq, const Tensor& dk,
              const Tensor& dv, const Tensor& dmask);

// recurrent cells and sequences (rnn.cu)
void lstm_cell_fwd(const Tensor& gates, const Tensor& c_prev, const Tensor& hc, const Tensor& ws, int64_t B,
                   int64_t H);
void lstm_cell_bwd(const Tensor& dhc, const Tensor& c_prev, const Tensor& ws, const Tensor& dgates,
                   const Tensor& dc_prev, int64_t B, int64_t H);
void gru_cell_fwd(const Tensor& gi, const Tensor& gh, const Tensor& h_prev, const Tensor& h, const Tensor& ws,
                  int64_t B, int64_t H);
void gru_cell_bwd(const Tensor& dh, const Tensor& h_prev, const Tensor& ws, const Tensor& dgi, const Tensor& dgh,
                  const Tensor& dh_prev, int64_t B, int64_t H);
void lstm_seq_fwd(const Tensor& gi, const Tensor& w_hh, const Tensor& h0, const Tensor& c0, const Tensor& out,
                  const Tensor& hp, const Tensor& cp, const Tensor& ws, int64_t T, int64_t B, int64_t H, bool rev);
void lstm_seq_bwd(const Tensor& dout, const Tensor& w_hh, const Tensor& hp, const Tensor& cp, const Tensor& ws,
                  const Tensor& dgi, const Tensor& dh0, const Tensor& dc0, const Tensor& dcs, const Tensor& dw,
                  int64_t T, int64_t B, int64_t H, bool rev);
void gru_seq_fwd(const Tensor& gi, const Tensor& w_hh, const Tensor& b_hh, const Tensor& h0, const Tensor& out,
                 const Tensor& hp, const Tensor& gh, const Tensor& ws, int64_t T, int64_t B, int64_t H, bool rev);
void gru_seq_bwd(const Tensor& dout, const Tensor& w_hh, const Tensor& hp, const Tensor& ws, const Tensor& dgi,
                 const Tensor& dgh, const Tensor& dh0, const Tensor& dhs, const Tensor& dw, const Tensor& db,
                 int64_t T, int64_t B, int64_t H, bool rev);

// convolution, pooling, batch norm (conv.cu)
void im2col(const Tensor& x, const Tensor& cols, const ConvGeom& g);
void col2im(const Tensor& cols, const Tensor& x, const ConvGeom& g);
void max_pool_fwd(const Tensor& x, const Tensor& y, const Tensor& idx, const ConvGeom& g);
void max_pool_bwd(const Tensor& gy, const Tensor& idx, const Tensor& gx, const ConvGeom& g);
void avg_pool_fwd(const Tensor& x, const Tensor& y, const ConvGeom& g, const AvgOpts& o);
void avg_pool_bwd(const Tensor& gy, const Tensor& gx, const ConvGeom& g, const AvgOpts& o);
void batch_norm_fwd(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& rm, const Tensor& rv,
                    const Tensor& y, const Tensor& mean, const Tensor& invstd, const BatchNormArgs& a);
void batch_norm_bwd(const Tensor& g, const Tensor& x, const Tensor& w, const Tensor& mean, const Tensor& invstd,
                    const Tensor& gx, const Tensor& gw, const Tensor& gb, const BatchNormArgs& a);

// fused optimizer steps (optim.cu)
void sgd_step(const TensorList& params, const TensorList& grads, const TensorList& bufs, const nn::SgdOpts& o);
void adam_step(const TensorList& params, const TensorList& grads, const TensorList& m, const TensorList& v,
               const TensorList& vmax, const nn::AdamOpts& o);
void lion_step(const TensorList& params, const TensorList& grads, const TensorList& m, double lr, double beta1,
               double beta2, double weight_decay);
void lamb_step(const TensorList& params, const TensorList& grads, const TensorList& m, const TensorList& v,
               int64_t step, double lr, double beta1, double beta2, double eps, double weight_decay);
double total_norm(const TensorList& ts, double p);
void scale(const TensorList& ts, double factor);

}  // namespace sx::cuda
