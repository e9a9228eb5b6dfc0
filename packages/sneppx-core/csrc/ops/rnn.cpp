// Fused LSTM and GRU cells and whole-sequence recurrences: validation, dtype handling and autograd
// around the kernels of cpu/rnn_kernels.cpp. A recurrent step is then its GEMMs plus one of these
// kernels (and one kernel for its backward); a sequence is one node for all its steps.
#include "ops/nn_util.h"

namespace sx::kern {
SX_DEFINE_KERNEL(lstm_cell_fwd);
SX_DEFINE_KERNEL(lstm_cell_bwd);
SX_DEFINE_KERNEL(gru_cell_fwd);
SX_DEFINE_KERNEL(gru_cell_bwd);
SX_DEFINE_KERNEL(lstm_seq_fwd);
SX_DEFINE_KERNEL(lstm_seq_bwd);
SX_DEFINE_KERNEL(gru_seq_fwd);
SX_DEFINE_KERNEL(gru_seq_bwd);
}  // namespace sx::kern

namespace sx::nn {
namespace {

// A shape-and-dtype stand-in for an input, for grad_for (no storage kept alive).
Tensor proto(const Tensor& t) {
  Tensor p = alias_detached(t);
  p->storage = nullptr;
  return p;
}

// Rows [start, start + count) of a (R, B, H) result as a (count, B, H) view, or row `start` as a (B, H)
// view when count is 0; its backward places the gradient in those rows.
Tensor rows_view(const Tensor& packed, int64_t start, int64_t count, const char* name) {
  int64_t B = packed->shape[1], H = packed->shape[2];
  bool one = count == 0;
  Tensor v = make_view(packed, one ? Shape{B, H} : Shape{count, B, H}, one ? Shape{H, 1} : Shape{B * H, H, 1},
                       packed->offset + start * B * H);
  if (!packed->requires_grad) return v;
  Shape full = packed->shape;
  return record(name, {packed}, v, [one, full, start](const Tensor& g) {
    return TensorList{slice_backward(one ? unsqueeze(g, 0) : g, full, 0, start, 1)};
  });
}

// Checks the operands of a sequence op: gi (T, B, G*H) with T >= 1, states (B, H), w_hh (G*H, H).
void check_sequence(const char* op, int64_t G, const Tensor& gi, const Tensor& w_hh,
                    std::initializer_list<const Tensor*> states) {
  check_floating(gi, op, "gi");
  check_floating(w_hh, op, "w_hh");
  for (const Tensor* s : states) {
    check_floating(*s, op, "the initial state");
    check_same_device(op, gi, *s);
  }
  check_same_device(op, gi, w_hh);
  bool ok = gi->dim() == 3 && w_hh->dim() == 2 && gi->shape[0] >= 1 && w_hh->shape[0] == G * w_hh->shape[1] &&
            gi->shape[2] == w_hh->shape[0];
  for (const Tensor* s : states)
    ok = ok && (*s)->dim() == 2 && gi->dim() == 3 && w_hh->dim() == 2 && (*s)->shape[0] == gi->shape[1] &&
         (*s)->shape[1] == w_hh->shape[1];
  if (ok) return;
  std::string got = "gi " + describe(gi) + ", w_hh " + describe(w_hh);
  for (const Tensor* s : states) got += ", state " + describe(*s);
  SX_CHECK(false, ValueError, "[", op, "] expected gi of shape (T, B, ", G, "*H) with T >= 1, w_hh of shape (", G,
           "*H, H) and initial states of shape (B, H), got ", got);
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
  return {rows_view(hc, 0, 0, "LstmCellHBackward"), rows_view(hc, 1, 0, "LstmCellCBackward")};
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

std::tuple<Tensor, Tensor, Tensor> lstm_sequence(const Tensor& gi, const Tensor& h0, const Tensor& c0,
                                                 const Tensor& w_hh, bool reverse) {
  const char* op = "lstm_sequence";
  check_sequence(op, 4, gi, w_hh, {&h0, &c0});
  DType dt = promote_types(promote_types(gi->dtype, w_hh->dtype), promote_types(h0->dtype, c0->dtype));
  if (is_half(dt)) {
    auto f = [](const Tensor& t) { return to_dtype(t, DType::Float32); };
    auto [o, h, c] = lstm_sequence(f(gi), f(h0), f(c0), f(w_hh), reverse);
    return {to_dtype(o, dt), to_dtype(h, dt), to_dtype(c, dt)};
  }
  int64_t T = gi->shape[0], B = gi->shape[1], H = w_hh->shape[1];
  Device dev = gi->device();
  Tensor gc = contig(gi, dt), wc = contig(w_hh, dt), h0c = contig(h0, dt), c0c = contig(c0, dt);
  bool grad = needs_grad({&gi, &h0, &c0, &w_hh});
  Tensor packed = empty({T + 1, B, H}, dt, dev), hp = empty({T, B, H}, dt, dev), cp = empty({T, B, H}, dt, dev);
  Tensor ws = grad ? empty({T, B, 5 * H}, dt, dev) : Tensor();
  if (B && H) kern::lstm_seq_fwd(dev)(gc, wc, h0c, c0c, packed, hp, cp, ws, T, B, H, reverse);
  if (grad) {
    Saved sw(wc);
    Tensor pg = proto(gi), ph = proto(h0), pc = proto(c0), pw = proto(w_hh);
    bool want_h = h0->requires_grad, want_c = c0->requires_grad, want_w = w_hh->requires_grad;
    packed = record("LstmSequenceBackward", {gi, h0, c0, w_hh}, packed,
                    [sw, hp, cp, ws, pg, ph, pc, pw, want_h, want_c, want_w, T, B, H, dt, reverse, op](const Tensor& g) {
      no_double_backward(op);
      const Tensor& w = sw.get();
      Device d = w->device();
      Tensor dgi = empty({T, B, 4 * H}, dt, d), dh0 = empty({B, H}, dt, d), dc0 = empty({B, H}, dt, d);
      Tensor dw = want_w ? zeros({4 * H, H}, dt, d) : Tensor();
      if (B && H)
        kern::lstm_seq_bwd(d)(contig(g, dt), w, hp, cp, ws, dgi, dh0, dc0, empty({B, H}, dt, d), dw, T, B, H, reverse);
      return TensorList{grad_for(dgi, pg), want_h ? grad_for(dh0, ph) : Tensor(), want_c ? grad_for(dc0, pc) : Tensor(),
                        want_w ? grad_for(dw, pw) : Tensor()};
    });
  }
  return {rows_view(packed, 0, T, "LstmSequenceOutBackward"),
          rows_view(packed, reverse ? 0 : T - 1, 0, "LstmSequenceHBackward"),
          rows_view(packed, T, 0, "LstmSequenceCBackward")};
}

std::pair<Tensor, Tensor> gru_sequence(const Tensor& gi, const Tensor& h0, const Tensor& w_hh, const Tensor& b_hh,
                                       bool reverse) {
  const char* op = "gru_sequence";
  check_sequence(op, 3, gi, w_hh, {&h0});
  DType dt = promote_types(promote_types(gi->dtype, w_hh->dtype), h0->dtype);
  if (b_hh) {
    check_floating(b_hh, op, "b_hh");
    check_same_device(op, gi, b_hh);
    SX_CHECK(b_hh->dim() == 1 && b_hh->shape[0] == w_hh->shape[0], ValueError, "[", op, "] expected b_hh of shape (",
             w_hh->shape[0], ",), got ", describe(b_hh));
    dt = promote_types(dt, b_hh->dtype);
  }
  if (is_half(dt)) {
    auto f = [](const Tensor& t) { return t ? to_dtype(t, DType::Float32) : t; };
    auto [o, h] = gru_sequence(f(gi), f(h0), f(w_hh), f(b_hh), reverse);
    return {to_dtype(o, dt), to_dtype(h, dt)};
  }
  int64_t T = gi->shape[0], B = gi->shape[1], H = w_hh->shape[1];
  Device dev = gi->device();
  Tensor gc = contig(gi, dt), wc = contig(w_hh, dt), h0c = contig(h0, dt), bc = b_hh ? contig(b_hh, dt) : Tensor();
  bool grad = needs_grad({&gi, &h0, &w_hh, &b_hh});
  Tensor out = empty({T, B, H}, dt, dev), hp = empty({T, B, H}, dt, dev);
  Tensor ws = grad ? empty({T, B, 4 * H}, dt, dev) : Tensor();
  if (B && H) kern::gru_seq_fwd(dev)(gc, wc, bc, h0c, out, hp, empty({B, 3 * H}, dt, dev), ws, T, B, H, reverse);
  if (grad) {
    Saved sw(wc);
    Tensor pg = proto(gi), ph = proto(h0), pw = proto(w_hh), pb = b_hh ? proto(b_hh) : Tensor();
    bool want_h = h0->requires_grad, want_w = w_hh->requires_grad, want_b = b_hh && b_hh->requires_grad;
    out = record("GruSequenceBackward", {gi, h0, w_hh, b_hh}, out,
                 [sw, hp, ws, pg, ph, pw, pb, want_h, want_w, want_b, T, B, H, dt, reverse, op](const Tensor& g) {
      no_double_backward(op);
      const Tensor& w = sw.get();
      Device d = w->device();
      Tensor dgi = empty({T, B, 3 * H}, dt, d), dh0 = empty({B, H}, dt, d);
      Tensor dw = want_w ? zeros({3 * H, H}, dt, d) : Tensor(), db = want_b ? zeros({3 * H}, dt, d) : Tensor();
      if (B && H)
        kern::gru_seq_bwd(d)(contig(g, dt), w, hp, ws, dgi, empty({T, B, 3 * H}, dt, d), dh0, empty({B, H}, dt, d),
                             dw, db, T, B, H, reverse);
      return TensorList{grad_for(dgi, pg), want_h ? grad_for(dh0, ph) : Tensor(), want_w ? grad_for(dw, pw) : Tensor(),
                        want_b ? grad_for(db, pb) : Tensor()};
    });
  }
  return {out, rows_view(out, reverse ? 0 : T - 1, 0, "GruSequenceHBackward")};
}

}  // namespace sx::nn
