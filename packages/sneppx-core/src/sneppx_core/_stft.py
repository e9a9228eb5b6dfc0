"""``stft`` and ``istft`` (``torch.stft`` / ``torch.istft``, also Tensor methods), written with the frame
extraction, ``fft`` and ``fold`` ops, so that they are differentiable. CPU tensors (``fft``'s limit)."""

from __future__ import annotations

from . import fft as _fft
from ._C_face import Tensor
from ._backend import _C
from ._tensor_extra import _windows


def _window(window, win_length, n_fft, like, op):
    """The window (ones by default) zero-padded on both sides to n_fft, as PyTorch centres it."""
    win_length = n_fft if win_length is None else win_length
    if not 0 < win_length <= n_fft:
        raise ValueError(f"[{op}] expected 0 < win_length <= n_fft, got win_length={win_length}, n_fft={n_fft}")
    if window is None:
        window = _C._full([win_length], 1.0, like, None)
    elif window.ndim != 1 or window.shape[0] != win_length:
        raise RuntimeError(f"[{op}] expected a 1-D window of size win_length={win_length}, got shape "
                           f"{tuple(window.shape)}")
    left = (n_fft - win_length) // 2
    if left or win_length < n_fft:
        z = _C._zeros([n_fft], window.dtype, None)
        window = _C.cat([z[:left], window, z[left + win_length:]], 0)
    return window


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
         normalized=False, onesided=None, return_complex=None):
    """The short-time Fourier transform of a 1-d signal or a (batch, time) batch of them: the spectra of
    windows of ``n_fft`` samples every ``hop_length`` (default ``n_fft // 4``), as (batch, frequencies,
    frames). ``center`` pads ``n_fft // 2`` samples on each side first (``pad_mode``); ``normalized`` scales
    by ``n_fft ** -0.5``; ``onesided`` (default for real input and window) keeps the ``n_fft // 2 + 1``
    non-negative frequencies. ``return_complex`` must be given, as in PyTorch (False returns the real pairs)."""
    from .functional import pad

    if not isinstance(input, Tensor):
        raise TypeError(f"[stft] expected a Tensor, got {type(input).__name__}")
    if return_complex is None:
        raise RuntimeError("[stft] stft requires the return_complex parameter be given for real inputs, and will "
                           "further require that return_complex=True in a future PyTorch release")
    if input.ndim not in (1, 2):
        raise RuntimeError(f"[stft] expected a 1D or 2D tensor, got shape {tuple(input.shape)}")
    hop = n_fft // 4 if hop_length is None else hop_length
    if n_fft <= 0 or hop <= 0:
        raise ValueError(f"[stft] expected n_fft > 0 and hop_length > 0, got {n_fft} and {hop}")
    x = input if input.ndim == 2 else input.unsqueeze(0)
    if x.dtype.is_complex:  # linear: the transforms of both parts, two-sided
        if onesided:
            raise RuntimeError("[stft] cannot have onesided output if the window or the input is complex")
        re = stft(x.real, n_fft, hop, win_length, window, center, pad_mode, normalized, False, True)
        out = re + stft(x.imag, n_fft, hop, win_length, window, center, pad_mode, normalized, False, True) * 1j
    else:
        if center:
            x = pad(x.unsqueeze(1), (n_fft // 2, n_fft // 2), mode=pad_mode).squeeze(1)
        if x.shape[-1] < n_fft:
            raise RuntimeError(f"[stft] expected 0 < n_fft <= {x.shape[-1]} (the padded signal's length), got {n_fft}")
        w = _window(window, win_length, n_fft, x.dtype, "stft")
        # (batch, frames, n_fft); without a gradient to x the windows are read through a strided view of x
        need_grad = x.requires_grad and _C.is_grad_enabled()
        frames = (x.unfold(-1, n_fft, hop) if need_grad else _windows(x, x.ndim - 1, n_fft, hop)) * w
        norm = "ortho" if normalized else "backward"
        onesided = (not w.dtype.is_complex) if onesided is None else onesided
        spec = _fft.rfft(frames, dim=-1, norm=norm) if onesided else _fft.fft(frames, dim=-1, norm=norm)
        out = spec.transpose(1, 2)
    out = out if input.ndim == 2 else out.squeeze(0)
    return out if return_complex else _C.view_as_real(out.contiguous())


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
          onesided=None, length=None, return_complex=False):
    """The inverse of ``stft``: each frame's inverse transform, windowed, overlap-added and divided by the
    overlap-added squared window; ``center`` drops the ``n_fft // 2`` padded samples at each end and
    ``length`` trims or zero-pads the result. Raises where the squared window adds up to (nearly) zero."""
    from .functional import fold

    if not isinstance(input, Tensor):
        raise TypeError(f"[istft] expected a Tensor, got {type(input).__name__}")
    if not input.dtype.is_complex:
        raise RuntimeError(f"[istft] requires a complex-valued input tensor, got {input.dtype!r}")
    if input.ndim not in (2, 3):
        raise RuntimeError(f"[istft] expected a tensor with 2 or 3 dimensions of complex values, got shape "
                           f"{tuple(input.shape)}")
    hop = n_fft // 4 if hop_length is None else hop_length
    spec = input if input.ndim == 3 else input.unsqueeze(0)
    n_freq, n_frames = spec.shape[1], spec.shape[2]
    onesided = n_freq != n_fft if onesided is None else onesided
    want = n_fft // 2 + 1 if onesided else n_fft
    if n_freq != want:
        raise RuntimeError(f"[istft] expected the frequency dim to be {want} (n_fft={n_fft}, onesided={onesided}), "
                           f"got {n_freq}")
    w = _window(window, win_length, n_fft, _C.view_as_real(spec).dtype, "istft")
    norm = "ortho" if normalized else "backward"
    frames = spec.transpose(1, 2)
    if return_complex:
        frames = _fft.ifft(frames, dim=-1, norm=norm)
    elif onesided:
        frames = _fft.irfft(frames, n=n_fft, dim=-1, norm=norm)
    else:
        frames = _fft.ifft(frames, dim=-1, norm=norm).real
    frames = frames * w  # (batch, frames, n_fft)
    total = n_fft + hop * (n_frames - 1)

    def overlap_add(t):  # (batch, frames, n_fft) -> (batch, total)
        cols = t.transpose(1, 2)
        return fold(cols, (1, total), (1, n_fft), stride=(1, hop)).reshape(t.shape[0], total)

    if frames.dtype.is_complex:
        y = overlap_add(frames.real) + overlap_add(frames.imag) * 1j
    else:
        y = overlap_add(frames)
    env = overlap_add((w.abs() ** 2 if w.dtype.is_complex else w * w).expand(1, n_frames, n_fft))
    start = n_fft // 2 if center else 0
    end = total - n_fft // 2 if center and length is None else (start + length if length is not None else total)
    end_kept = min(end, total)
    env = env[:, start:end_kept]
    if env.numel() and float(env.abs().min()) < 1e-11:
        raise RuntimeError("[istft] window overlap add min: 1e-11 is not met (the NOLA condition fails: the "
                           "squared window must not add up to zero anywhere)")
    y = y[:, start:end_kept] / env
    if end > end_kept:  # length beyond the signal: zeros, as PyTorch
        y = _C.cat([y, _C._zeros([y.shape[0], end - end_kept], y.dtype, None)], 1)
    return y if input.ndim == 3 else y.squeeze(0)


FUNCTIONS = {"stft": stft, "istft": istft}
