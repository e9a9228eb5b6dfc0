"""PyTorch's low-level functional RNNs ``torch.lstm``, ``torch.gru``, ``torch.rnn_tanh`` and ``torch.rnn_relu``:
a multi-layer, optionally bidirectional recurrence over a padded batch or a packed sequence, with the weights
given as one flat list (``nn.LSTM``'s ``_flat_weights`` order: per layer and direction ``w_ih, w_hh[, b_ih,
b_hh][, w_hr]``).

LSTM (without projection) and GRU layers run as the fused ``functional.lstm_sequence`` / ``gru_sequence``;
the Elman RNNs, LSTM with projection and packed input step through the cells, a packed batch padded with a
step mask that keeps each sequence's state once it has ended. Gradients reach the input, the states and
every weight. ``FUNCTIONS`` holds the module-level names.
"""

from __future__ import annotations

import inspect
import numbers

from . import _backend, functional as F
from ._backend import _C
from ._C_face import Dtype, Tensor
from ._factories import arange, tensor, zeros
from ._ops import cat, stack
from ._tensor_extra import _need
from ._torch_reach import _flag

_GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


def _step(mode, gi, state, w_hh, b_hh, w_hr):
    """One time step: the new state list from the input projection ``gi`` (B, G*H) and ``state``."""
    if mode == "lstm":
        h, c = F.lstm_cell(gi + F.linear(state[0], w_hh, b_hh), state[1])
        return [h if w_hr is None else F.linear(h, w_hr), c]
    if mode == "gru":
        return [F.gru_cell(gi, F.linear(state[0], w_hh, b_hh), state[0])]
    pre = gi + F.linear(state[0], w_hh, b_hh)
    return [_C.relu(pre) if mode == "rnn_relu" else _C.tanh(pre)]


def _direction(mode, x, state, weights, reverse, mask):
    """One layer in one direction over ``x`` (T, B, I): ``(out (T, B, H_out), final state list)``."""
    w_ih, w_hh, b_ih, b_hh, w_hr = weights
    fold = b_ih is not None and mode != "gru"  # GRU keeps b_hh inside r * (h W_hn^T + b_hn)
    gi = F.linear(x, w_ih, (b_ih + b_hh) if fold else b_ih)
    b_hh = None if fold else b_hh
    if mask is None and mode == "lstm" and w_hr is None:
        out, h, c = F.lstm_sequence(gi, state[0], state[1], w_hh, reverse)
        return out, [h, c]
    if mask is None and mode == "gru":
        out, h = F.gru_sequence(gi, state[0], w_hh, b_hh, reverse)
        return out, [h]
    steps, keep = gi.unbind(0), None if mask is None else mask.unbind(0)
    outs = [None] * len(steps)
    for t in (range(len(steps) - 1, -1, -1) if reverse else range(len(steps))):
        new = _step(mode, steps[t], state, w_hh, b_hh, w_hr)
        state = new if keep is None else [_C.where(keep[t], n, s) for n, s in zip(new, state)]
        outs[t] = state[0]
    return stack(outs, 0), state


def _weights(op, mode, params, has_biases, num_layers, dirs, sizes):
    """The (w_ih, w_hh, b_ih, b_hh, w_hr) of each layer and direction, shapes checked against
    ``sizes`` = (input_size, hidden_size, proj_size or 0)."""
    if not isinstance(params, (list, tuple)) or not all(isinstance(p, Tensor) for p in params):
        raise TypeError(f"[{op}] params must be a list of tensors, got {type(params).__name__}")
    input_size, hidden, proj = sizes
    per = 2 + 2 * bool(has_biases) + bool(proj)
    if len(params) != per * num_layers * dirs:
        raise ValueError(f"[{op}] expected {per * num_layers * dirs} weights ({per} per layer and direction: w_ih, "
                         f"w_hh{', b_ih, b_hh' if has_biases else ''}{', w_hr' if proj else ''}), got {len(params)}")
    gates, out, groups = _GATES[mode] * hidden, proj or hidden, []
    for j in range(num_layers * dirs):
        p = list(params[j * per:(j + 1) * per])
        w = p[:2] + (p[2:4] if has_biases else [None, None]) + [p[-1] if proj else None]
        want = [(gates, input_size if j < dirs else out * dirs), (gates, out), (gates,), (gates,), (proj, hidden)]
        for name, t, shape in zip(("w_ih", "w_hh", "b_ih", "b_hh", "w_hr"), w, want):
            if t is not None and tuple(t.shape) != shape:
                raise ValueError(f"[{op}] {name} of layer {j // dirs} direction {j % dirs} must have shape {shape}, "
                                 f"got {tuple(t.shape)}")
        groups.append(w)
    return groups


def _states(op, mode, hx, layers, batch):
    """The initial states as a list (``[h0, c0]`` for LSTM), shapes checked; ``(hidden, proj)`` sizes."""
    if mode == "lstm":
        if not isinstance(hx, (list, tuple)) or len(hx) != 2:
            raise ValueError(f"[{op}] hx must be a pair (h_0, c_0) of tensors, got {type(hx).__name__}")
        states = [_need(hx[0], op, "h_0"), _need(hx[1], op, "c_0")]
    else:
        states = [_need(hx, op, "hx")]
    hidden = states[-1].shape[-1] if states[-1].ndim else 0
    out = states[0].shape[-1] if states[0].ndim else 0
    for s, width in zip(states, (out, hidden)):
        if tuple(s.shape) != (layers, batch, width) or width == 0:
            raise ValueError(f"[{op}] hidden states must be (num_layers * num_directions, batch, hidden) = "
                             f"({layers}, {batch}, H), got {[tuple(t.shape) for t in states]}")
    return states, hidden, (out if out != hidden else 0)


def _run(op, mode, x, hx, params, options, mask=None):
    """The stacked recurrence over ``x`` (T, B, I): ``(output, [h_n] or [h_n, c_n])``."""
    has_biases, num_layers, dropout, train, bidirectional = options
    if _backend.NAME != "c":
        _C.unsupported(op)
    has_biases, train = _flag(has_biases, op, "has_biases"), _flag(train, op, "train")
    bidirectional = _flag(bidirectional, op, "bidirectional")
    if isinstance(num_layers, bool) or not isinstance(num_layers, numbers.Integral) or num_layers < 1:
        raise ValueError(f"[{op}] num_layers must be an int >= 1, got {num_layers!r}")
    if isinstance(dropout, bool) or not isinstance(dropout, numbers.Real) or not 0.0 <= float(dropout) <= 1.0:
        raise ValueError(f"[{op}] dropout must be in [0, 1], got {dropout!r}")
    if x.dtype not in (Dtype.FLOAT32, Dtype.FLOAT64) or x.shape[0] == 0:
        raise ValueError(f"[{op}] expects a float32 or float64 input with at least one step, got {x.dtype} of shape "
                         f"{tuple(x.shape)}")
    dirs = 2 if bidirectional else 1
    states, hidden, proj = _states(op, mode, hx, num_layers * dirs, x.shape[1])
    layers = _weights(op, mode, params, has_biases, num_layers, dirs, (x.shape[2], hidden, proj))
    finals = [[] for _ in states]
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            j = layer * dirs + d
            seq, last = _direction(mode, x, [s[j] for s in states], layers[j], d == 1, mask)
            outs.append(seq)
            for f, s in zip(finals, last):
                f.append(s)
        x = outs[0] if dirs == 1 else cat(outs, 2)
        if dropout and train and layer < num_layers - 1:
            x = F.dropout(x, float(dropout), True)
    return x, [stack(f, 0) for f in finals]


def _padded(op, mode, input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    _need(input, op)
    if input.ndim != 3:
        raise ValueError(f"[{op}] input must be 3-d ({'B, T' if batch_first else 'T, B'}, input_size), got shape "
                         f"{tuple(input.shape)}")
    batch_first = _flag(batch_first, op, "batch_first")
    x = input.transpose(0, 1) if batch_first else input
    out, finals = _run(op, mode, x, hx, params, (has_biases, num_layers, dropout, train, bidirectional))
    return (out.transpose(0, 1) if batch_first else out, *finals)


def _packed(op, mode, data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional):
    _need(data, op, "data")
    _need(batch_sizes, op, "batch_sizes")
    sizes = [int(v) for v in batch_sizes.tolist()] if batch_sizes.ndim == 1 else []
    ok = sizes and batch_sizes.dtype == Dtype.INT64 and sizes[-1] > 0 and data.ndim == 2
    if not ok or any(a < b for a, b in zip(sizes, sizes[1:])) or sum(sizes) != data.shape[0]:
        raise ValueError(f"[{op}] expects data (N, input_size) and int64 batch_sizes, non-increasing and positive, "
                         f"summing to N; got data of shape {tuple(data.shape)} and batch_sizes {sizes}")
    steps, batch = len(sizes), sizes[0]
    pos = [t * batch + b for t, n in enumerate(sizes) for b in range(n)]
    where = [len(pos)] * (steps * batch)  # padded slot -> row of data (the extra zero row for padding)
    for i, p in enumerate(pos):
        where[p] = i
    rows = cat([data, zeros((1, data.shape[1]), dtype=data.dtype, device=data.device)], 0)
    x = rows.index_select(0, tensor(where, device=data.device)).reshape((steps, batch, data.shape[1]))
    lengths = tensor([sum(n > b for n in sizes) for b in range(batch)], device=data.device)
    mask = (arange(steps, device=data.device).unsqueeze(1) < lengths.unsqueeze(0)).unsqueeze(2)
    out, finals = _run(op, mode, x, hx, params, (has_biases, num_layers, dropout, train, bidirectional), mask)
    return (out.reshape((steps * batch, out.shape[2])).index_select(0, tensor(pos, device=data.device)), *finals)


def _dispatch(mode, args, kwargs):
    packed = "batch_sizes" in kwargs or (len(args) > 3 and isinstance(args[3], (list, tuple)))
    fn = _packed if packed else _padded
    try:
        bound = inspect.signature(fn).bind(mode, mode, *args, **kwargs)
    except TypeError as e:
        raise TypeError(f"[{mode}] expected ({_SIGNATURES[0]}) or ({_SIGNATURES[1]}): {e}") from None
    return fn(*bound.args, **bound.kwargs)


_SIGNATURES = ("input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first",
               "data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional")
_DOC = """{title}, as ``torch.{mode}``, in two forms:

    ``{mode}(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)``: ``input``
    (T, B, I) ((B, T, I) with ``batch_first``) and ``hx`` {hx}, shaped (num_layers * num_directions, B, H);
    returns ``(output, {ret})`` with ``output`` (T, B, num_directions * H) ((B, T, ...) with ``batch_first``).

    ``{mode}(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional)``: a packed
    sequence (``data`` (N, I), ``batch_sizes`` int64, the batch sorted by decreasing length, ``hx`` in that
    order); returns ``(output_data, {ret})``, the output packed the same way.

    ``params`` lists per layer and direction (forward, then reverse) ``w_ih`` (G*H, I_layer), ``w_hh`` (G*H, H),
    then ``b_ih``, ``b_hh`` (G*H,) with ``has_biases``{proj}. ``dropout`` applies between layers when
    ``train``. {formula}"""


def lstm(*args, **kwargs):
    return _dispatch("lstm", args, kwargs)


def gru(*args, **kwargs):
    return _dispatch("gru", args, kwargs)


def rnn_tanh(*args, **kwargs):
    return _dispatch("rnn_tanh", args, kwargs)


def rnn_relu(*args, **kwargs):
    return _dispatch("rnn_relu", args, kwargs)


lstm.__doc__ = _DOC.format(
    title="A multi-layer LSTM", mode="lstm", hx="the pair ``(h_0, c_0)``", ret="h_n, c_n",
    proj=", then ``w_hr`` (P, H) for a projection (h_0 then has width P)",
    formula="Gates i, f, g, o: ``c' = s(f) c + s(i) tanh(g)``, ``h' = s(o) tanh(c')`` (times ``w_hr^T``).")
gru.__doc__ = _DOC.format(
    title="A multi-layer GRU", mode="gru", hx="the initial state", ret="h_n", proj="",
    formula="Gates r, z, n: ``n = tanh(x_n + r (h W_hn^T + b_hn))``, ``h' = (1 - z) n + z h``.")
rnn_tanh.__doc__ = _DOC.format(
    title="A multi-layer Elman RNN", mode="rnn_tanh", hx="the initial state", ret="h_n", proj="",
    formula="``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)``.")
rnn_relu.__doc__ = _DOC.format(
    title="A multi-layer Elman RNN with ReLU", mode="rnn_relu", hx="the initial state", ret="h_n", proj="",
    formula="``h' = relu(x W_ih^T + b_ih + h W_hh^T + b_hh)``.")

FUNCTIONS = {f.__name__: f for f in (lstm, gru, rnn_tanh, rnn_relu)}
__all__ = list(FUNCTIONS)
