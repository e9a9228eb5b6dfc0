// Tiled attention with online softmax (FlashAttention-2 style) on the CPU. Work units are
// (batch*head) matrices; each unit's q/k/v may sit anywhere in its tensor (per-unit element offsets
// and row strides), the last dim must be contiguous. Outputs and gradients are contiguous per unit.
#pragma once
#include <cstdint>

#include "ops/nn.h"

namespace sx::cpu {

using nn::AttnArgs;


// out: (units, Tq, Dv); lse: (units, Tq) log-sum-exp of the scaled scores, +inf for rows that see no key
// (their output is 0).
template <typename T>
void attn_fwd(const AttnArgs& a, const T* q, const T* k, const T* v, const T* mask, T* out, T* lse);

// dout, out: (units, Tq, Dv) contiguous. dq (units, Tq, D), dk (units, Tk, D), dv (units, Tk, Dv) are
// written; dmask (units, Tq, Tk), when non-null, receives the gradient of the additive mask.
template <typename T>
void attn_bwd(const AttnArgs& a, const T* q, const T* k, const T* v, const T* mask, const T* out, const T* lse,
              const T* dout, T* dq, T* dk, T* dv, T* dmask);

}  // namespace sx::cpu
