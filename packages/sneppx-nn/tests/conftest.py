"""Shared helpers for the sneppx-nn tests."""

import numpy as np
import pytest
import sneppx_core as sx


def to_np(t):
    """A float64 (or original integer) NumPy copy of a Tensor, detached; arrays pass through."""
    if isinstance(t, np.ndarray):
        return t
    t = t.detach()
    if t.dtype in (sx.bfloat16, sx.float16):
        t = t.float()
    return np.array(t.numpy(), copy=True)


def tensor(a, requires_grad=False, dtype=None):
    """A Tensor copy of array-like ``a`` (float32 unless ``dtype``/integer data say otherwise)."""
    a = np.asarray(a)
    if dtype is None and a.dtype.kind == "f":
        a = a.astype(np.float32)
    t = sx.Tensor(a, dtype=dtype)
    if requires_grad:
        t.requires_grad_(True)
    return t


def numeric_grad(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central finite differences of the scalar function ``f`` (NumPy float64) at ``x``."""
    g = np.zeros_like(x)
    it = np.nditer(x, flags=["multi_index"])
    for _ in it:
        i = it.multi_index
        old = x[i]
        x[i] = old + eps
        hi = f(x)
        x[i] = old - eps
        lo = f(x)
        x[i] = old
        g[i] = (hi - lo) / (2 * eps)
    return g


@pytest.fixture
def rng():
    """A seeded NumPy generator (also seeds sneppx_core's global generator)."""
    sx.manual_seed(0)
    return np.random.default_rng(0)
