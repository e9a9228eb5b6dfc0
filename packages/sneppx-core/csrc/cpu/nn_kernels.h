// Fused neural-network kernels on contiguous float/double buffers. Callers (ops/nn*.cpp) validate,
// cast and make operands contiguous; kernels never allocate tensors and never throw inside the pool.
// Each forward has its backward beside it.
#pragma once
#include <cstdint>

#include "ops/nn.h"

namespace sx::cpu {

using nn::Gate;
using nn::PLoss;

// ---- softmax over the middle axis of contiguous (outer, n, inner) data
template <typename T> void softmax_fwd(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool log);
// softmax:     gx = y * (g - sum(g * y))        log_softmax: gx = g - exp(y) * sum(g)
template <typename T>
void softmax_bwd(const T* g, const T* y, T* gx, int64_t outer, int64_t n, int64_t inner, bool log);

// ---- layer / RMS norm over rows of (M, N); w and b may be null. mean is unused (null) for RMS.
template <typename T>
void norm_fwd(const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, int64_t M, int64_t N, double eps, bool rms);
// gx may be null; gw / gb (length N) are written (not accumulated) when non-null.
template <typename T>
void norm_bwd(const T* g, const T* x, const T* w, const T* mean, const T* rstd, T* gx, T* gw, T* gb, int64_t M,
              int64_t N, bool rms);

// ---- gated units over `outer` blocks of `len` elements: a block at a + o*in_stride, b at b + o*in_stride,
// y at y + o*len. GLU: y = a * sigmoid(b); SwiGLU: y = silu(a) * b.
template <typename T>
void gate_fwd(Gate k, const T* a, const T* b, T* y, int64_t outer, int64_t len, int64_t in_stride);
template <typename T>
void gate_bwd(Gate k, const T* g, const T* a, const T* b, T* ga, T* gb, int64_t outer, int64_t len,
              int64_t in_stride);

// ---- pointwise losses l(x, t; w) on equal-length buffers (w: pos_weight for BCE-with-logits, may be null)
template <typename T> void ploss_fwd(PLoss k, const T* x, const T* t, const T* w, T* out, int64_t n, double beta);
// gx / gt / gw may be null; g has n elements (gw: the pos_weight gradient, per element).
template <typename T>
void ploss_bwd(PLoss k, const T* g, const T* x, const T* t, const T* w, T* gx, T* gt, T* gw, int64_t n, double beta);

// ---- cross entropy over rows of (N, C) logits. Exactly one of target (class ids) and probs is set.
// Per row: lse[2i] = max, lse[2i+1] = log sum exp(x - max), loss[i] (label smoothing and class weights
// applied) and wrow[i], the row's share of the "mean" denominator (weight of the target class, 0 for
// ignored rows; 1 for probability targets).
using nn::CEArgs;
template <typename T>
void ce_fwd(const CEArgs& a, const T* x, const T* probs, const T* weight, T* lse, double* loss, double* wrow);
// gx = grow[i] * d loss_i / d x_i; gp (probability targets only, may be null) = grow[i] * d loss_i / d probs_i.
template <typename T>
void ce_bwd(const CEArgs& a, const T* x, const T* probs, const T* weight, const T* lse, const T* grow, T* gx, T* gp);

// ---- embedding rows: out[i] = w[ids[i]] (any dtype: rows are copied as bytes); backward accumulates
// rows of g into gw (zeroed by the kernel), skipping padding_idx
void embedding_fwd(const int64_t* ids, int64_t n, const char* w, int64_t row_bytes, char* out);
template <typename T>
void embedding_bwd(const int64_t* ids, int64_t n, const T* g, int64_t V, int64_t D, int64_t padding_idx,
                   bool scale_by_freq, T* gw);

// ---- dropout with Philox bits of counter base + i / 4 (word i % 4): keep when the word >= p * 2^32
template <typename T>
void dropout_apply(const T* x, T* y, int64_t n, double p, uint64_t seed, uint64_t base);

}  // namespace sx::cpu
