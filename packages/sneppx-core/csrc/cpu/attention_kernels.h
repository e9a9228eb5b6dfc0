// Tiled attention with online softmax (FlashAttention-2 style) on the CPU. Work units are
// (batch*head) matrices; each unit's q/k/v may sit anywhere in its tensor (per-unit element offsets
// and row strides), the last dim must be contiguous. Outputs and gradients are contiguous per unit.
#pragma once
#include <cstdint>

namespace sx::cpu {

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
