// Fused LSTM and GRU cells: validation, dtype handling and autograd around the kernels of
// cpu/rnn_kernels.cpp. A recurrent step is then its GEMMs plus one of these kernels (and one kernel
// for its backward).
#include "ops/nn_util.h"

namespace sx::kern {
SX_DEFINE_KERNEL(lstm_cell_fwd);
SX_DEFINE_KERNEL(lstm_cell_bwd);
SX_DEFINE_KERNEL(gru_cell_fwd);
SX_DEFINE_KERNEL(gru_cell_bwd);
}  // namespace sx::kern

namespace sx::nn {
namespace {

// A shape-and-dtype stand-in for an input, for grad_for (no storage kept alive).
Tensor proto(const Tensor& t) {
  Tensor p = alias_detached(t);
  p->storage = nullptr;
  return p;
}

// Part k of a (2, B, H) result as a (B, H) view whose backward places its gradient in part k.
Tensor half_view(const Tensor& packed, int64_t k, const char* name) {
  int64_t B = packed->shape[1], H = packed->shape[2];
  Tensor v = make_view(packed, {B, H}, {H, 1}, packed->offset + k * B * H);
  if (!packed->requires_grad) return v;
  return record(name, {packed}, v, [k, B, H](const Tensor& g) {
    return TensorList{slice_backward(unsqueeze(g, 0), Shape{2, B, H}, 0, k, 1)};
  });
}

}  // namespace

std::pair<Tensor, Tensor> lstm_cell(const Tensor& gates, const Tensor& c_prev) {
  const char* op = "lstm_cell";
  check_floating(gates, op, "gates");
  check_floating(c_prev, op, "c_prev");
  check_same_device(op, gates, c_prev);
  SX_CHECK(gates->dim() == 2 && c_prev->dim() == 2 && gates->shape[0] == c_prev->shape[0] &&
               gates->shape[1] == 4 * c_prev->shape[1],
           ValueError, "[", op, "] expected gates of shape (B, 4*H) and c_prev of shape (B, H), got gates ",
           describe(gates), " and c_prev ", describe(c_prev));
  DType dt = promote_types(gates->dtype, c_prev->dtype);
  if (is_half(dt)) {
    auto [h, c] = lstm_cell(to_dtype(gates, DType::Float32), to_dtype(c_prev, DType::Float32));
    return {to_dtype(h, dt), to_dtype(c, dt)};
  }
  int64_t B = c_prev->shape[0], H = c_prev->shape[1];
  Device dev = gates->device();
  Tensor gc = contig(gates, dt), cc = contig(c_prev, dt);
  bool grad = needs_grad({&gates, &c_prev});
  Tensor hc = empty({2, B, H}, dt, dev);
  Tensor ws = grad ? empty({B, 5 * H}, dt, dev) : Tensor();
  if (B && H) kern::lstm_cell_fwd(dev)(gc, cc, hc, ws, B, H);
  if (grad) {
    Saved sc(cc);
    Tensor pg = proto(gates), pc = proto(c_prev);
    bool want_c = c_prev->requires_grad;
    hc = record("LstmCellBackward", {gates, c_prev}, hc, [sc, ws, pg, pc, want_c, B, H, dt, op](const Tensor& g) {
      no_double_backward(op);
      const Tensor& cs = sc.get();
      Tensor gcg = contig(g, dt);
      Tensor dg = empty({B, 4 * H}, dt, cs->device());
      Tensor dcp = empty({B, H}, dt, cs->device());
      if (B && H) kern::lstm_cell_bwd(cs->device())(gcg, cs, ws, dg, dcp, B, H);
      return TensorList{grad_for(dg, pg), want_c ? grad_for(dcp, pc) : Tensor()};
    });
  }
  return {half_view(hc, 0, "LstmCellHBackward"), half_view(hc, 1, "LstmCellCBackward")};
}

Tensor gru_cell(const Tensor& gi, const Tensor& gh, const Tensor& h_prev) {
  const char* op = "gru_cell";
  check_floating(gi, op, "gi");
  check_floating(gh, op, "gh");
  check_floating(h_prev, op, "h_prev");
  check_same_device(op, gi, gh);
  check_same_device(op, gi, h_prev);
  SX_CHECK(gi->dim() == 2 && h_prev->dim() == 2 && gi->shape == gh->shape && gi->shape[0] == h_prev->shape[0] &&
               gi->shape[1] == 3 * h_prev->shape[1],
           ValueError, "[", op, "] expected gi and gh of shape (B, 3*H) and h_prev of shape (B, H), got gi ",
           describe(gi), ", gh ", describe(gh), " and h_prev ", describe(h_prev));
  DType dt = promote_types(promote_types(gi->dtype, gh->dtype), h_prev->dtype);
  if (is_half(dt)) {
    auto f = [](const Tensor& t) { return to_dtype(t, DType::Float32); };
    return to_dtype(gru_cell(f(gi), f(gh), f(h_prev)), dt);
  }
  int64_t B = h_prev->shape[0], H = h_prev->shape[1];
  Device dev = gi->device();
  Tensor ic = contig(gi, dt), hc = contig(gh, dt), pc = contig(h_prev, dt);
  bool grad = needs_grad({&gi, &gh, &h_prev});
  Tensor out = empty({B, H}, dt, dev);
  Tensor ws = grad ? empty({B, 4 * H}, dt, dev) : Tensor();
  if (B && H) kern::gru_cell_fwd(dev)(ic, hc, pc, out, ws, B, H);
  if (!grad) return out;
  Saved sp(pc);
  Tensor pi = proto(gi), ph = proto(gh), pp = proto(h_prev);
  bool wi = gi->requires_grad, wh = gh->requires_grad, wp = h_prev->requires_grad;
  return record("GruCellBackward", {gi, gh, h_prev}, out,
                [sp, ws, pi, ph, pp, wi, wh, wp, B, H, dt, op](const Tensor& g) {
    no_double_backward(op);
    const Tensor& ps = sp.get();
    Device d = ps->device();
    Tensor gcg = contig(g, dt);
    Tensor dgi = empty({B, 3 * H}, dt, d), dgh = empty({B, 3 * H}, dt, d), dhp = empty({B, H}, dt, d);
    if (B && H) kern::gru_cell_bwd(d)(gcg, ps, ws, dgi, dgh, dhp, B, H);
    return TensorList{wi ? grad_for(dgi, pi) : Tensor(), wh ? grad_for(dgh, ph) : Tensor(),
                      wp ? grad_for(dhp, pp) : Tensor()};
  });
}

}  // namespace sx::nn
