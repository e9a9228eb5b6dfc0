"""Discrete Fourier transforms (``torch.fft``): ``fft``, ``ifft``, ``rfft``, ``irfft``, ``hfft``, ``ihfft``,
their 2-d and n-d forms, ``fftfreq``, ``rfftfreq``, ``fftshift`` and ``ifftshift``.

The transforms run the core's kernel (``_C._fft_c2c``, ``_fft_r2c``, ``_fft_c2r``: mixed-radix Stockham passes,
Bluestein's algorithm for lengths with a prime factor above 13, several transforms at once in the lanes of a
vector; float32 and complex64 stay single precision) and are differentiable: each one-dimensional transform is one
autograd node whose gradient is the adjoint transform, in PyTorch's convention for complex tensors (for a real
loss L of z = x + iy, ``z.grad`` is dL/dx + i dL/dy). The n-d forms apply the one-dimensional ones dim by dim;
``n`` / ``s`` pad with zeros or trim first, as PyTorch does. CPU and meta tensors; other devices raise
NotImplementedError.
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from ._C_face import Dtype, Tensor
from ._backend import _C
from .autograd.function import Function

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn",
           "rfftn", "irfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

_NORMS = ("backward", "ortho", "forward")
_ADJOINT = {"backward": "forward", "ortho": "ortho", "forward": "backward"}  # the norm of the adjoint transform
_COMPLEX_OF = {Dtype.FLOAT64: Dtype.COMPLEX128, Dtype.COMPLEX128: Dtype.COMPLEX128}


def _check(x, op, norm):
    if not isinstance(x, Tensor):
        raise TypeError(f"[fft.{op}] expected a Tensor, got {type(x).__name__}")
    if x.device.type not in ("cpu", "meta"):
        raise NotImplementedError(f"[fft.{op}] runs on CPU tensors only, got one on {x.device}")
    if norm is not None and norm not in _NORMS:
        raise ValueError(f"[fft.{op}] norm must be one of {_NORMS} or None, got {norm!r}")
    return norm or "backward"


def _as_complex(x):
    """x as complex64 (complex128 for float64 and complex128), as PyTorch promotes the input of a c2c transform."""
    dt = _COMPLEX_OF.get(x.dtype, Dtype.COMPLEX64)
    return x if x.dtype == dt else x.to(dt)


def _as_real(x, op):
    if x.dtype.is_complex:
        raise TypeError(f"[fft.{op}] expects a real input tensor, got {x.dtype!r}")
    return x if x.dtype in (Dtype.FLOAT32, Dtype.FLOAT64) else x.to(Dtype.FLOAT32)


def _resize(x, dim, n, op):
    """x trimmed or zero-padded to n elements along dim (differentiable)."""
    if n is None or n == x.shape[dim]:
        return x
    if n < 1:
        raise ValueError(f"[fft.{op}] invalid number of data points ({n}) specified")
    if n < x.shape[dim]:
        return x.narrow(dim, 0, n)
    pad = list(x.shape)
    pad[dim] = n - x.shape[dim]
    return _C.cat([x, _C._zeros(pad, x.dtype, None)], dim)


def _scale(norm, n, inverse):
    """The factor of a transform of n points under ``norm`` (the inverse of "backward" divides by n)."""
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    return 1.0 / n if (norm == "forward") != inverse else 1.0


def _call(fn, x, *args):
    """``fn.apply(x, *args)`` where a gradient is to be recorded, else the transform alone (``fn.run``)."""
    return fn.apply(x, *args) if x.requires_grad and _C.is_grad_enabled() else fn.run(x, *args)


class _C2C(Function):
    """y = fft(x) (or ifft) along one dim, x complex, no resizing."""

    @staticmethod
    def run(x, dim, norm, inverse):
        return _C._fft_c2c(x, dim, inverse, _scale(norm, x.shape[dim], inverse))

    @staticmethod
    def forward(ctx, x, dim, norm, inverse):
        ctx.args = (dim, norm, inverse)
        return _C2C.run(x, dim, norm, inverse)

    @staticmethod
    def backward(ctx, g):
        dim, norm, inverse = ctx.args
        return _call(_C2C, _as_complex(g), dim, _ADJOINT[norm], not inverse), None, None, None


class _R2C(Function):
    """y = rfft(x) along one dim, x real: the n // 2 + 1 non-negative frequencies."""

    @staticmethod
    def run(x, dim, norm):
        return _C._fft_r2c(x, dim, _scale(norm, x.shape[dim], False))

    @staticmethod
    def forward(ctx, x, dim, norm):
        ctx.args = (dim, norm, x.shape[dim])
        return _R2C.run(x, dim, norm)

    @staticmethod
    def backward(ctx, g):
        dim, norm, n = ctx.args
        # d/dx of sum_k Re(conj(g_k) y_k): the adjoint c2c transform of g padded with zeros, real part.
        full = _call(_C2C, _resize(_as_complex(g), dim, n, "rfft"), dim, _ADJOINT[norm], True)
        return _C._real(full).contiguous(), None, None


class _C2R(Function):
    """y = irfft(x, n) along one dim: x holds the n // 2 + 1 non-negative frequencies of a real signal of n."""

    @staticmethod
    def run(x, dim, norm, n):
        return _C._fft_c2r(x, dim, n, _scale(norm, n, True))

    @staticmethod
    def forward(ctx, x, dim, norm, n):
        ctx.args = (dim, norm, n)
        return _C2R.run(x, dim, norm, n)

    @staticmethod
    def backward(ctx, g):
        dim, norm, n = ctx.args
        # Each frequency but 0 (and n / 2 for even n) stands for itself and its conjugate: twice the weight.
        w = np.full(n // 2 + 1, 2.0)
        w[0] = 1.0
        if n % 2 == 0:
            w[-1] = 1.0
        shape = [1] * g.ndim
        shape[dim] = w.size
        w = Tensor.from_numpy(w.reshape(shape).astype(np.float32 if g.dtype == Dtype.FLOAT32 else np.float64))
        return _call(_R2C, g, dim, _ADJOINT[norm]) * w, None, None, None


def _dim(x, dim, op):
    if x.ndim == 0:
        raise IndexError(f"[fft.{op}] expects a tensor of at least 1 dim, got a 0-d tensor")
    if not -builtins.max(x.ndim, 1) <= dim < builtins.max(x.ndim, 1):
        raise IndexError(f"[fft.{op}] dim {dim} is out of range for a tensor of {x.ndim} dims")
    return dim % x.ndim


def fft(input, n=None, dim=-1, norm=None):
    """The discrete Fourier transform along ``dim`` (``n`` points: the input trimmed or zero-padded)."""
    norm = _check(input, "fft", norm)
    d = _dim(input, dim, "fft")
    return _call(_C2C, _resize(_as_complex(input), d, n, "fft"), d, norm, False)


def ifft(input, n=None, dim=-1, norm=None):
    """The inverse discrete Fourier transform along ``dim``."""
    norm = _check(input, "ifft", norm)
    d = _dim(input, dim, "ifft")
    return _call(_C2C, _resize(_as_complex(input), d, n, "ifft"), d, norm, True)


def rfft(input, n=None, dim=-1, norm=None):
    """The transform of a real signal along ``dim``: its ``n // 2 + 1`` non-negative frequencies."""
    norm = _check(input, "rfft", norm)
    d = _dim(input, dim, "rfft")
    return _call(_R2C, _resize(_as_real(input, "rfft"), d, n, "rfft"), d, norm)


def irfft(input, n=None, dim=-1, norm=None):
    """The real signal of ``n`` points (default ``2 * (m - 1)``) whose non-negative frequencies along ``dim``
    are ``input``'s ``m`` (the inverse of ``rfft``)."""
    norm = _check(input, "irfft", norm)
    d = _dim(input, dim, "irfft")
    n = 2 * (input.shape[d] - 1) if n is None else n
    if n < 1:
        raise ValueError(f"[fft.irfft] invalid number of data points ({n}) specified")
    return _call(_C2R, _resize(_as_complex(input), d, n // 2 + 1, "irfft"), d, norm, n)


def hfft(input, n=None, dim=-1, norm=None):
    """The transform of a Hermitian-symmetric signal given by its first half: a real result of ``n`` points."""
    norm = _check(input, "hfft", norm)
    d = _dim(input, dim, "hfft")
    # hfft(x) = irfft(conj(x)) with the adjoint norm (NumPy's and PyTorch's definition).
    return irfft(_C._conj(_as_complex(input)), n, d, _ADJOINT[norm])


def ihfft(input, n=None, dim=-1, norm=None):
    """The inverse of ``hfft``: the ``n // 2 + 1`` non-negative frequencies of a real signal, conjugated."""
    norm = _check(input, "ihfft", norm)
    d = _dim(input, dim, "ihfft")
    return _C._conj(rfft(input, n, d, _ADJOINT[norm]))


def _dims(x, s, dim, op):
    """The dims and sizes of an n-d transform (PyTorch's rules: all dims, or the last len(s))."""
    if dim is None:
        dims = list(range(x.ndim)) if s is None else list(range(x.ndim - len(s), x.ndim))
    else:
        dims = [_dim(x, d, op) for d in ([dim] if isinstance(dim, builtins.int) else dim)]
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"[fft.{op}] dims must be unique, got {dim}")
    if s is not None and len(s) != len(dims):
        raise ValueError(f"[fft.{op}] s and dim must have the same length, got {s} and {dim}")
    return dims, list(s) if s is not None else [None] * len(dims)


def fftn(input, s=None, dim=None, norm=None):
    """The n-d discrete Fourier transform over ``dim`` (default all dims, or the last ``len(s)``)."""
    out = input
    for d, n in zip(*_dims(input, s, dim, "fftn")):
        out = fft(out, n, d, norm)
    return out


def ifftn(input, s=None, dim=None, norm=None):
    """The n-d inverse discrete Fourier transform."""
    out = input
    for d, n in zip(*_dims(input, s, dim, "ifftn")):
        out = ifft(out, n, d, norm)
    return out


def rfftn(input, s=None, dim=None, norm=None):
    """The n-d transform of a real signal: ``rfft`` over the last of ``dim``, then ``fft`` over the others."""
    dims, sizes = _dims(input, s, dim, "rfftn")
    out = rfft(input, sizes[-1], dims[-1], norm)
    for d, n in zip(dims[:-1], sizes[:-1]):
        out = fft(out, n, d, norm)
    return out


def irfftn(input, s=None, dim=None, norm=None):
    """The inverse of ``rfftn``: ``ifft`` over all of ``dim`` but the last, then ``irfft`` over the last."""
    dims, sizes = _dims(input, s, dim, "irfftn")
    out = input
    for d, n in zip(dims[:-1], sizes[:-1]):
        out = ifft(out, n, d, norm)
    return irfft(out, sizes[-1], dims[-1], norm)


def fft2(input, s=None, dim=(-2, -1), norm=None):
    """``fftn`` over two dims (the last two by default)."""
    return fftn(input, s, dim, norm)


def ifft2(input, s=None, dim=(-2, -1), norm=None):
    """``ifftn`` over two dims (the last two by default)."""
    return ifftn(input, s, dim, norm)


def rfft2(input, s=None, dim=(-2, -1), norm=None):
    """``rfftn`` over two dims (the last two by default)."""
    return rfftn(input, s, dim, norm)


def irfft2(input, s=None, dim=(-2, -1), norm=None):
    """``irfftn`` over two dims (the last two by default)."""
    return irfftn(input, s, dim, norm)


def _freq(values, dtype, device, requires_grad):
    from ._factories import tensor
    from ._torch_aliases import get_default_dtype

    return tensor(values, dtype=dtype or get_default_dtype(), device=device, requires_grad=requires_grad)


def fftfreq(n, d=1.0, *, dtype=None, device=None, requires_grad=False, **_):
    """The sample frequencies of ``fft`` of ``n`` points with spacing ``d``: ``[0, 1, ..., -1] / (d * n)``."""
    return _freq(np.fft.fftfreq(n, d), dtype, device, requires_grad)


def rfftfreq(n, d=1.0, *, dtype=None, device=None, requires_grad=False, **_):
    """The sample frequencies of ``rfft`` of ``n`` points: ``[0, 1, ..., n // 2] / (d * n)``."""
    return _freq(np.fft.rfftfreq(n, d), dtype, device, requires_grad)


def _shift(input, dim, sign):
    dims = list(range(input.ndim)) if dim is None else ([dim] if isinstance(dim, builtins.int) else list(dim))
    return input.roll([sign * (input.shape[d] // 2) for d in dims], dims)


def fftshift(input, dim=None):
    """Rolls the zero frequency to the middle of ``dim`` (default all dims), as ``numpy.fft.fftshift``."""
    return _shift(input, dim, 1)


def ifftshift(input, dim=None):
    """The inverse of ``fftshift``."""
    return _shift(input, dim, -1)
