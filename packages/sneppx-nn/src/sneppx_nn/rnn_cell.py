"""Single-step recurrent cells as ``torch.nn``: ``RNNCell``, ``LSTMCell``, ``GRUCell``.

Same parameters (``weight_ih``, ``weight_hh``, ``bias_ih``, ``bias_hh``), gate order and
initialisation as PyTorch; the step maths is that of :mod:`sneppx_nn.rnn`.
"""

from __future__ import annotations

import math

import sneppx_core as sx
import sneppx_core.functional as F

from . import init
from .module import Module
from .parameter import Parameter
from .rnn import _check_sizes, _gru_step, _lstm_step, _rnn_step


class RNNCellBase(Module):
    """Parameters and input checks shared by the cells."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, gates: int, device=None, dtype=None):
        super().__init__()
        _check_sizes(type(self).__name__, input_size, hidden_size)
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        self.weight_ih = Parameter(sx.empty((gates * hidden_size, input_size), dtype=dtype, device=device))
        self.weight_hh = Parameter(sx.empty((gates * hidden_size, hidden_size), dtype=dtype, device=device))
        self.bias_ih = Parameter(sx.empty((gates * hidden_size,), dtype=dtype, device=device)) if bias else None
        self.bias_hh = Parameter(sx.empty((gates * hidden_size,), dtype=dtype, device=device)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draws every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as PyTorch."""
        bound = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            init.uniform_(p, -bound, bound)

    def _prepare(self, input, hx, count):
        name = type(self).__name__
        if not isinstance(input, sx.Tensor) or input.ndim not in (1, 2) or input.shape[-1] != self.input_size:
            shape = tuple(input.shape) if isinstance(input, sx.Tensor) else type(input).__name__
            raise ValueError(f"[{name}] expected input of shape (N, {self.input_size}) or ({self.input_size},), "
                             f"got {shape}")
        unbatched = input.ndim == 1
        x = input.unsqueeze(0) if unbatched else input
        states = hx if isinstance(hx, (tuple, list)) else (hx,) * count
        if hx is not None and len(states) != count:
            raise TypeError(f"[{name}] hx must be a tuple (h, c)")
        want = (x.shape[0], self.hidden_size)
        out = []
        for s in states:
            if s is None:
                out.append(sx.zeros(want, dtype=x.dtype, device=x.device))
                continue
            s = s.unsqueeze(0) if unbatched else s
            if tuple(s.shape) != want:
                raise ValueError(f"[{name}] expected hidden state of shape {want[1:] if unbatched else want}, "
                                 f"got {tuple(s.shape if not unbatched else s.shape[1:])}")
            out.append(s)
        return F.linear(x, self.weight_ih, self.bias_ih), out, unbatched

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}" + ("" if self.bias else ", bias=False")


class RNNCell(RNNCellBase, record_config=True):
    """``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or relu), one step, as ``torch.nn.RNNCell``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"[RNNCell] nonlinearity must be 'tanh' or 'relu', got {nonlinearity!r}")
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        """Next hidden state (N, hidden_size) from input (N, input_size) and ``hx`` (zeros by default)."""
        gi, (h,), unbatched = self._prepare(input, hx, 1)
        h = _rnn_step(gi, h, self.weight_hh, self.bias_hh, self.nonlinearity == "relu")
        return h.squeeze(0) if unbatched else h


class LSTMCell(RNNCellBase, record_config=True):
    """One LSTM step (gates ``i, f, g, o``), as ``torch.nn.LSTMCell``; returns ``(h', c')``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        """``(h', c')`` from input (N, input_size) and ``hx = (h, c)`` (zeros by default)."""
        gi, (h, c), unbatched = self._prepare(input, hx, 2)
        h, c = _lstm_step(gi, h, c, self.weight_hh, self.bias_hh)
        return (h.squeeze(0), c.squeeze(0)) if unbatched else (h, c)


class GRUCell(RNNCellBase, record_config=True):
    """One GRU step (gates ``r, z, n``), as ``torch.nn.GRUCell``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        """Next hidden state (N, hidden_size) from input (N, input_size) and ``hx`` (zeros by default)."""
        gi, (h,), unbatched = self._prepare(input, hx, 1)
        h = _gru_step(gi, h, self.weight_hh, self.bias_hh)
        return h.squeeze(0) if unbatched else h
