"""NumPy references shared by the LSTM/GRU cell and sequence tests (float64, PyTorch's gate order)."""

from __future__ import annotations

import numpy as np
import sneppx_core as sx


def t(a, dtype=sx.float64, requires_grad=False):
    """A SneppX tensor of ``dtype`` from ``a`` (read as float64)."""
    return sx.tensor(np.asarray(a, dtype=np.float64), dtype=dtype, requires_grad=requires_grad)


def npy(x):
    """``x`` as a float64 NumPy array (detached)."""
    return np.array(x.detach().to(sx.float64).numpy(), dtype=np.float64)


def sig(a):
    """The logistic function."""
    return 1.0 / (1.0 + np.exp(-a))


def np_lstm(gates, c):
    """One LSTM cell step from its pre-activation gates (i, f, g, o): returns (h, c)."""
    i, f, g, o = np.split(gates, 4, axis=1)
    c2 = sig(f) * c + sig(i) * np.tanh(g)
    return sig(o) * np.tanh(c2), c2


def np_gru(gi, gh, h):
    """One GRU cell step from the input and hidden projections (r, z, n): returns h."""
    (xr, xz, xn), (hr, hz, hn) = np.split(gi, 3, axis=1), np.split(gh, 3, axis=1)
    r, z = sig(xr + hr), sig(xz + hz)
    n = np.tanh(xn + r * hn)
    return (1 - z) * n + z * h
