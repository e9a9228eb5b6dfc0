"""Recurrent layers as ``torch.nn``: ``RNN``, ``LSTM``, ``GRU`` and their single-step cells.

Parameter names, shapes, gate order and initialisation are PyTorch's, so state_dicts move between
the two unchanged. A layer runs one GEMM for the input projection of the whole sequence, then per
step one GEMM for the hidden projection and the gate arithmetic. LSTM and GRU run each layer and
direction as one fused op (``sneppx_core.functional.lstm_sequence`` / ``gru_sequence``): one autograd
node for the whole sequence, whose backward forms the weight gradient in one GEMM over all steps;
packed sequences and LSTM with ``proj_size`` step through ``lstm_cell`` / ``gru_cell`` instead:

- RNN:  ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or relu)
- LSTM: gates ``i, f, g, o`` (in that order) of ``x W_ih^T + b_ih + h W_hh^T + b_hh``;
  ``c' = s(f) c + s(i) tanh(g)``, ``h' = s(o) tanh(c')``
- GRU:  gates ``r, z, n``; ``r = s(x_r + h_r)``, ``z = s(x_z + h_z)``, ``n = tanh(x_n + r h_n)``,
  ``h' = (1 - z) n + z h``, where ``x_*`` and ``h_*`` include their own biases.
"""

from __future__ import annotations

import math

import sneppx_core as sx
import sneppx_core.functional as F

from . import init
from .module import Module
from .parameter import Parameter

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _rnn_step(gi, h, w_hh, b_hh, relu):
    pre = gi + F.linear(h, w_hh, b_hh)
    return sx.relu(pre) if relu else sx.tanh(pre)


def _lstm_step(gi, h, c, w_hh, b_hh):
    return F.lstm_cell(gi + F.linear(h, w_hh, b_hh), c)


def _gru_step(gi, h, w_hh, b_hh):
    return F.gru_cell(gi, F.linear(h, w_hh, b_hh), h)


def _steps(t):
    """The per-step views ``t[0], t[1], ...``. Taken block by block (blocks of about sqrt(2 L)
    steps): the backward of each view writes into a buffer the size of its parent, so views of
    blocks cost about sqrt(L) full-size copies instead of L."""
    block = max(1, math.ceil(math.sqrt(2 * t.shape[0])))
    return [step for part in t.split(block, 0) for step in part.unbind(0)]


def _check_sizes(layer, input_size, hidden_size):
    for name, v in (("input_size", input_size), ("hidden_size", hidden_size)):
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise ValueError(f"[{layer}] {name} must be a positive int, got {v!r}")


class RNNBase(Module):
    """Shared machinery of :class:`RNN`, :class:`LSTM` and :class:`GRU` (multi-layer, optionally
    bidirectional, with dropout between layers)."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device=None, dtype=None):
        super().__init__()
        name = type(self).__name__
        _check_sizes(name, input_size, hidden_size)
        if isinstance(num_layers, bool) or not isinstance(num_layers, int) or num_layers < 1:
            raise ValueError(f"[{name}] num_layers must be an int >= 1, got {num_layers!r}")
        if not 0.0 <= float(dropout) <= 1.0:
            raise ValueError(f"[{name}] dropout must be in [0, 1], got {dropout!r}")
        if isinstance(proj_size, bool) or not isinstance(proj_size, int) or not 0 <= proj_size < hidden_size:
            raise ValueError(f"[{name}] proj_size must be an int in [0, hidden_size), got {proj_size!r}")
        if proj_size and mode != "LSTM":
            raise ValueError(f"[{name}] proj_size is only supported by LSTM")
        self.mode, self.input_size, self.hidden_size, self.num_layers = mode, input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        gate, out = _GATES[mode] * hidden_size, proj_size or hidden_size
        for layer in range(num_layers):
            for suffix in ("", "_reverse")[: 2 if bidirectional else 1]:
                width = input_size if layer == 0 else out * (2 if bidirectional else 1)
                shapes = {"weight_ih": (gate, width), "weight_hh": (gate, out)}
                if bias:
                    shapes.update(bias_ih=(gate,), bias_hh=(gate,))
                if proj_size:
                    shapes["weight_hr"] = (proj_size, hidden_size)
                for key, shape in shapes.items():
                    setattr(self, f"{key}_l{layer}{suffix}", Parameter(sx.empty(shape, dtype=dtype, device=device)))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draws every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as PyTorch."""
        bound = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            init.uniform_(p, -bound, bound)

    def _weights(self, layer, suffix):
        return tuple(getattr(self, f"{key}_l{layer}{suffix}", None)
                     for key in ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr"))

    def _initial(self, input, hx, batch, unbatched):
        name = type(self).__name__
        layers = self.num_layers * (2 if self.bidirectional else 1)
        shapes = [(layers, batch, self.proj_size or self.hidden_size), (layers, batch, self.hidden_size)]
        count = 2 if self.mode == "LSTM" else 1
        states = hx if isinstance(hx, (tuple, list)) else (hx,) * (count if hx is None else 1)
        if len(states) != count:
            raise TypeError(f"[{name}] hx must be {'a tuple (h_0, c_0)' if self.mode == 'LSTM' else 'a tensor'}")
        out = []
        for s, shape in zip(states, shapes):
            if s is None:
                out.append(sx.zeros(shape, dtype=input.dtype, device=input.device))
                continue
            s = s.unsqueeze(1) if unbatched else s
            if tuple(s.shape) != shape:
                want = (shape[0], shape[2]) if unbatched else shape
                raise ValueError(f"[{name}] expected hidden state of shape {want}, got {tuple(s.shape)}")
            out.append(s)
        return out

    def forward(self, input, hx=None):
        """Runs the layers over a sequence.

        Args:
            input: (L, N, input_size), (N, L, input_size) with ``batch_first``, (L, input_size)
                unbatched, or a :class:`~sneppx_nn.utils.rnn.PackedSequence`.
            hx: initial hidden state (num_layers * num_directions, N, hidden_size), zeros by
                default; for LSTM a tuple ``(h_0, c_0)``.

        Returns:
            ``(output, h_n)`` (``(output, (h_n, c_n))`` for LSTM); ``output`` holds the last
            layer's hidden state at every step, (L, N, num_directions * hidden_size).
        """
        from .utils.rnn import PackedSequence, _pack, pad_packed_sequence

        if isinstance(input, PackedSequence):  # run padded, in the original batch order, with a step mask
            padded, lengths = pad_packed_sequence(input)
            out, state = self._run(padded, hx, lengths.tolist())
            return _pack(out, lengths.tolist(), input.sorted_indices), state
        name = type(self).__name__
        if not isinstance(input, sx.Tensor) or input.ndim not in (2, 3) or input.shape[-1] != self.input_size:
            shape = tuple(input.shape) if isinstance(input, sx.Tensor) else type(input).__name__
            raise ValueError(f"[{name}] expected input of shape (L, N, {self.input_size}) or (L, {self.input_size}), "
                             f"got {shape}")
        unbatched = input.ndim == 2
        x = input.unsqueeze(1) if unbatched else (input.transpose(0, 1) if self.batch_first else input)
        out, state = self._run(x, hx, None, unbatched)
        if unbatched:
            return out.squeeze(1), tuple(s.squeeze(1) for s in state) if self.mode == "LSTM" else state.squeeze(1)
        return (out.transpose(0, 1) if self.batch_first else out), state

    def _run(self, x, hx, lengths, unbatched=False):
        states = self._initial(x, hx, x.shape[1], unbatched)
        mask = None
        if lengths is not None:  # steps past a sequence's end keep its state (and output zeros)
            steps = sx.arange(x.shape[0], device=x.device).unsqueeze(1)
            mask = (steps < sx.tensor(lengths, device=x.device).unsqueeze(0)).unsqueeze(2).to(x.dtype)
        dirs = 2 if self.bidirectional else 1
        finals = [[] for _ in states]
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                init_state = [s[layer * dirs + d] for s in states]
                seq, last = self._direction(x, init_state, self._weights(layer, "_reverse" if d else ""), d == 1, mask)
                outs.append(seq)
                for f, s in zip(finals, last):
                    f.append(s)
            x = outs[0] if dirs == 1 else sx.cat(outs, 2)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        finals = [sx.stack(f, 0) for f in finals]
        return x, (tuple(finals) if self.mode == "LSTM" else finals[0])

    def _direction(self, x, state, weights, reverse, mask):
        w_ih, w_hh, b_ih, b_hh, w_hr = weights
        # One GEMM projects every step's input; RNN and LSTM fold b_hh into it as well (GRU keeps
        # b_hh inside the r * (h W_hn^T + b_hn) term).
        fold = b_ih is not None and self.mode != "GRU"
        gi = F.linear(x, w_ih, (b_ih + b_hh) if fold else b_ih)
        hh_bias = None if fold else b_hh
        if mask is None and w_hr is None and self.mode == "LSTM":
            out, h, c = F.lstm_sequence(gi, state[0], state[1], w_hh, reverse)
            return out, [h, c]
        if mask is None and self.mode == "GRU":
            out, h = F.gru_sequence(gi, state[0], w_hh, hh_bias, reverse)
            return out, [h]
        gi = _steps(gi)
        order = range(len(gi) - 1, -1, -1) if reverse else range(len(gi))
        m = _steps(mask) if mask is not None else None
        outs = [None] * len(gi)
        for t in order:
            new = self._step(gi[t], state, w_hh, hh_bias, w_hr)
            if m is not None:
                new = [s + m[t] * (n - s) for n, s in zip(new, state)]
                outs[t] = new[0] * m[t]
            else:
                outs[t] = new[0]
            state = new
        return sx.stack(outs, 0), state

    def _step(self, gi, state, w_hh, b_hh, w_hr):
        if self.mode == "LSTM":
            h, c = _lstm_step(gi, state[0], state[1], w_hh, b_hh)
            return [h if w_hr is None else F.linear(h, w_hr), c]
        if self.mode == "GRU":
            return [_gru_step(gi, state[0], w_hh, b_hh)]
        return [_rnn_step(gi, state[0], w_hh, b_hh, self.mode == "RNN_RELU")]

    def flatten_parameters(self) -> None:
        """Does nothing: the weights are always used where they are (kept for PyTorch code)."""

    @property
    def all_weights(self) -> list:
        """The parameters of each layer and direction, as lists in PyTorch's order."""
        dirs = ("", "_reverse")[: 2 if self.bidirectional else 1]
        return [[w for w in self._weights(k, d) if w is not None] for k in range(self.num_layers) for d in dirs]

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        for key, default in (("bias", True), ("batch_first", False), ("dropout", 0.0), ("bidirectional", False)):
            if getattr(self, key) != default:
                s += f", {key}={getattr(self, key)}"
        return s


class RNN(RNNBase, record_config=True):
    """Elman RNN, ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (``nonlinearity="relu"``
    uses relu), stacked ``num_layers`` deep. Arguments and results as ``torch.nn.RNN``."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh",
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"[RNN] nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        super().__init__("RNN_" + nonlinearity.upper(), input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, 0, device, dtype)
        self.nonlinearity = nonlinearity


class LSTM(RNNBase, record_config=True):
    """Long short-term memory, gates in PyTorch's order ``i, f, g, o`` (see the module docstring).
    Arguments and results as ``torch.nn.LSTM``; with ``proj_size > 0`` each hidden state is projected,
    ``h = W_hr (o * tanh(c))`` (``weight_hr_l{k}`` of shape (proj_size, hidden_size))."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device, dtype)


class GRU(RNNBase, record_config=True):
    """Gated recurrent unit, gates in PyTorch's order ``r, z, n`` (see the module docstring).
    Arguments and results as ``torch.nn.GRU``."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         0, device, dtype)
