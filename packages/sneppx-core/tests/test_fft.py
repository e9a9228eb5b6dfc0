"""sneppx_core.fft: values against NumPy's transforms, gradients against float64 finite differences (for a real
loss L of z = x + iy the gradient is dL/dx + i dL/dy), and both against torch.fft in the parity test."""
import numpy as np
import pytest

import sneppx_core as sx
import sneppx_core.fft as F

RNG = np.random.default_rng(0)


def _c(shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
def test_one_dim_transforms_match_numpy(norm):
    x, z = RNG.standard_normal((3, 8)), _c((3, 8))
    cases = [(F.fft(sx.tensor(z), norm=norm), np.fft.fft(z, norm=norm)),
             (F.ifft(sx.tensor(z), norm=norm), np.fft.ifft(z, norm=norm)),
             (F.fft(sx.tensor(x), n=11, dim=0, norm=norm), np.fft.fft(x, n=11, axis=0, norm=norm)),
             (F.rfft(sx.tensor(x), norm=norm), np.fft.rfft(x, norm=norm)),
             (F.rfft(sx.tensor(x), n=5, norm=norm), np.fft.rfft(x, n=5, norm=norm)),
             (F.irfft(sx.tensor(z), norm=norm), np.fft.irfft(z, norm=norm)),
             (F.irfft(sx.tensor(z), n=9, norm=norm), np.fft.irfft(z, n=9, norm=norm)),
             (F.hfft(sx.tensor(z), norm=norm), np.fft.hfft(z, norm=norm)),
             (F.ihfft(sx.tensor(x), norm=norm), np.fft.ihfft(x, norm=norm))]
    for got, want in cases:
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)


def test_n_dim_transforms_and_helpers_match_numpy():
    x, z = RNG.standard_normal((2, 6, 5)), _c((2, 6, 5))
    tz, tx = sx.tensor(z), sx.tensor(x)
    cases = [(F.fft2(tz), np.fft.fft2(z)), (F.ifft2(tz), np.fft.ifft2(z)), (F.fftn(tz), np.fft.fftn(z)),
             (F.ifftn(tz, s=(4, 7)), np.fft.ifftn(z, s=(4, 7), axes=(1, 2))), (F.rfft2(tx), np.fft.rfft2(x)),
             (F.rfftn(tx, dim=(0, 2)), np.fft.rfftn(x, axes=(0, 2))), (F.irfft2(tz), np.fft.irfft2(z)),
             (F.irfftn(tz, s=(6, 8)), np.fft.irfftn(z, s=(6, 8), axes=(1, 2))),
             (F.fftshift(sx.tensor(x)), np.fft.fftshift(x)), (F.ifftshift(sx.tensor(x), dim=1), np.fft.ifftshift(x, 1))]
    for got, want in cases:
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(F.fftfreq(7, 0.5).numpy(), np.fft.fftfreq(7, 0.5), rtol=1e-6)
    assert F.rfftfreq(8).dtype == sx.float32 and F.fftfreq(4, dtype=sx.float64).dtype == sx.float64


def test_dtypes_and_errors():
    assert F.fft(sx.ones(4)).dtype == sx.complex64 and F.rfft(sx.ones(4, dtype=sx.float64)).dtype == sx.complex128
    assert F.irfft(sx.ones(3, dtype=sx.complex64)).dtype == sx.float32 and F.fft(sx.arange(4)).dtype == sx.complex64
    with pytest.raises(TypeError, match="real input"):
        F.rfft(sx.ones(4, dtype=sx.complex64))
    with pytest.raises(ValueError, match="norm"):
        F.fft(sx.ones(4), norm="bogus")
    with pytest.raises(ValueError, match="data points"):
        F.fft(sx.ones(4), n=0)
    with pytest.raises(IndexError, match="at least 1 dim"):
        F.fft(sx.tensor(1.0))
    with pytest.raises(ValueError, match="frequencies"):
        sx._C._fft_c2r(sx.ones(4, dtype=sx.complex64), 0, 4, 1.0)
    with pytest.raises(TypeError, match=r"fft\.rfft.*complex64"):
        sx._C._fft_r2c(sx.ones(4, dtype=sx.complex64), 0, 1.0)
    m = F.rfft(sx.empty(3, 10, device="meta"), dim=0)  # meta tensors: the result's geometry
    assert m.device.type == "meta" and tuple(m.shape) == (2, 10) and m.dtype == sx.complex64


# Radices 4, 2, 3, 5, 7, 11, 13 and their products, odd and even real lengths, and primes above 13 (Bluestein).
LENGTHS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 13, 15, 16, 17, 26, 30, 49, 97, 100, 121, 128, 143, 169, 210, 243, 360,
           1000, 1024, 1031, 2048, 2310, 4099]


@pytest.mark.parametrize("n", LENGTHS)
def test_lengths_batches_and_layouts_match_numpy(n):
    # Batches of 1 and 3 run one transform at a time, 9 and 17 in vector lanes (with a partial block); the
    # transformed dim is the last one or the first (then the lanes are neighbours in memory).
    for batch in (1, 3, 9, 17):
        for dt, ct, tol in ((np.float64, np.complex128, 1e-12), (np.float32, np.complex64, 2e-6)):
            x, z = RNG.standard_normal((batch, n)).astype(dt), _c((batch, n)).astype(ct)
            h = _c((batch, n // 2 + 1)).astype(ct)
            for dim in (-1, 0):
                xs, zs, hs = (a if dim == -1 else a.T.copy() for a in (x, z, h))
                cases = [(F.fft(sx.tensor(zs), dim=dim), np.fft.fft(zs, axis=dim)),
                         (F.ifft(sx.tensor(zs), dim=dim, norm="forward"), np.fft.ifft(zs, axis=dim, norm="forward")),
                         (F.rfft(sx.tensor(xs), dim=dim), np.fft.rfft(xs, axis=dim)),
                         (F.irfft(sx.tensor(hs), n=n, dim=dim), np.fft.irfft(hs, n=n, axis=dim))]
                for got, want in cases:
                    assert (got.dtype in (sx.complex64, sx.float32)) == (dt == np.float32)
                    scale = np.abs(want).max() + 1e-30
                    np.testing.assert_allclose(got.numpy(), want, rtol=0, atol=tol * scale * max(1, np.log2(n)),
                                               err_msg=f"n={n} batch={batch} {dt.__name__} dim={dim}")


def test_long_and_strided_inputs_match_numpy():
    # Longer than the lane path takes (one transform at a time), a batch split over the threads, and
    # non-contiguous inputs (a transposed view, a slice with a step).
    x = RNG.standard_normal((3, 70001))
    np.testing.assert_allclose(F.rfft(sx.tensor(x)).numpy(), np.fft.rfft(x), rtol=0, atol=1e-9)
    z = _c((1 << 17,))
    np.testing.assert_allclose(F.ifft(sx.tensor(z)).numpy(), np.fft.ifft(z), rtol=0, atol=1e-12)
    s = RNG.standard_normal((64, 4096)).astype(np.float32)
    want = np.fft.rfft(s.astype(np.float64))
    np.testing.assert_allclose(F.rfft(sx.tensor(s)).numpy(), want, rtol=0, atol=2e-6 * np.abs(want).max() * 12)
    t = sx.tensor(_c((20, 12)))
    np.testing.assert_allclose(F.fft(t.t(), dim=0).numpy(), np.fft.fft(t.numpy().T, axis=0), rtol=0, atol=1e-12)
    np.testing.assert_allclose(F.fft(t[::3, 1::2]).numpy(), np.fft.fft(t.numpy()[::3, 1::2]), rtol=0, atol=1e-12)
    # The imaginary parts of the zero frequency and (even n) of the last one are ignored, as NumPy does.
    h = _c((4, 9))
    np.testing.assert_allclose(F.irfft(sx.tensor(h)).numpy(), np.fft.irfft(h), rtol=0, atol=1e-12)
    np.testing.assert_allclose(F.irfft(sx.tensor(h), n=17).numpy(), np.fft.irfft(h, n=17), rtol=0, atol=1e-12)


def _fd(f, z, eps=1e-6):
    """dL/dRe + i dL/dIm of the real function f at z (NumPy), by central differences."""
    g = np.zeros(z.shape, complex)
    steps = (eps, eps * 1j) if np.iscomplexobj(z) else (eps,)
    for idx in np.ndindex(z.shape):
        for step in steps:
            zp, zm = z.astype(complex), z.astype(complex)
            zp[idx] += step
            zm[idx] -= step
            if not np.iscomplexobj(z):
                zp, zm = zp.real, zm.real
            g[idx] += step / eps * (f(zp) - f(zm)) / (2 * eps)
    return g if np.iscomplexobj(z) else g.real


CASES = [  # (name, our transform, NumPy's, input is complex)
    ("fft", lambda x: F.fft(x, n=7, norm="ortho"), lambda x: np.fft.fft(x, n=7, norm="ortho"), True),
    ("ifft", lambda x: F.ifft(x, dim=0), lambda x: np.fft.ifft(x, axis=0), True),
    ("rfft even", lambda x: F.rfft(x), lambda x: np.fft.rfft(x), False),
    ("rfft odd", lambda x: F.rfft(x, n=5, norm="forward"), lambda x: np.fft.rfft(x, n=5, norm="forward"), False),
    ("irfft even", lambda x: F.irfft(x), lambda x: np.fft.irfft(x), True),
    ("irfft odd", lambda x: F.irfft(x, n=7, norm="ortho"), lambda x: np.fft.irfft(x, n=7, norm="ortho"), True),
    ("rfft2", lambda x: F.rfft2(x), lambda x: np.fft.rfft2(x), False),
    ("irfft2", lambda x: F.irfft2(x, s=(3, 6)), lambda x: np.fft.irfft2(x, s=(3, 6)), True),
    ("hfft", lambda x: F.hfft(x), lambda x: np.fft.hfft(x), True),
]


@pytest.mark.parametrize("name,ours,theirs,complex_in", CASES, ids=[c[0] for c in CASES])
def test_gradients_match_finite_differences(name, ours, theirs, complex_in):
    x = _c((3, 4)) if complex_in else RNG.standard_normal((3, 4))
    w = None

    def loss_np(a):
        y = theirs(a)
        return float((np.abs(y) ** 2 * w).sum() + (y.real * w).sum())

    y0 = theirs(x)
    w = RNG.standard_normal(y0.shape)
    t = sx.tensor(x, requires_grad=True)
    y = ours(t)
    ((y.abs() ** 2 if y.dtype.is_complex else y * y) * sx.tensor(w)).sum().add(
        (sx.real(y) * sx.tensor(w)).sum()).backward()
    np.testing.assert_allclose(t.grad.numpy(), _fd(loss_np, x), rtol=1e-5, atol=1e-6)


@pytest.mark.parity
def test_matches_torch_fft():
    torch = pytest.importorskip("torch")
    x, z = RNG.standard_normal((4, 6)).astype(np.float32), _c((4, 6)).astype(np.complex64)
    w = RNG.standard_normal((4, 12)).astype(np.float32)
    for name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "rfft2", "irfft2", "fftn", "ifftn"):
        src = x if name in ("rfft", "ihfft", "rfft2") else z
        ours, theirs = sx.tensor(src, requires_grad=True), torch.tensor(src, requires_grad=True)
        yo, yt = getattr(F, name)(ours, norm="ortho"), getattr(torch.fft, name)(theirs, norm="ortho")
        np.testing.assert_allclose(yo.detach().numpy(), yt.detach().resolve_conj().numpy(), rtol=1e-5, atol=1e-5,
                                   err_msg=name)
        wn = w[tuple(slice(0, s) for s in yt.shape)]
        (sx.real(yo) * sx.tensor(wn)).sum().backward()
        (torch.real(yt) * torch.tensor(wn)).sum().backward()
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.resolve_conj().numpy(), rtol=1e-5, atol=1e-5,
                                   err_msg=name)


def _stft_numpy(x, n_fft, hop, window):
    """The reference: reflect-padded frames, windowed, one-sided spectra, as (frequencies, frames)."""
    p = np.pad(x, n_fft // 2, mode="reflect")
    frames = np.stack([p[i:i + n_fft] for i in range(0, len(p) - n_fft + 1, hop)])
    return np.fft.rfft(frames * window, axis=-1).T


def test_stft_matches_numpy_and_istft_inverts_it():
    x = RNG.standard_normal(100)
    win = np.hanning(16)
    spec = sx.stft(sx.tensor(x), 16, hop_length=4, window=sx.tensor(win), return_complex=True)
    np.testing.assert_allclose(spec.numpy(), _stft_numpy(x, 16, 4, win), rtol=1e-12, atol=1e-12)
    back = sx.istft(spec, 16, hop_length=4, window=sx.tensor(win), length=100)
    np.testing.assert_allclose(back.numpy(), x, rtol=1e-10, atol=1e-10)
    batch = sx.tensor(RNG.standard_normal((2, 64)), requires_grad=True)
    s = batch.stft(32, window=sx.ones(32, dtype=sx.float64), return_complex=True)
    assert s.shape == (2, 17, 9)
    s.abs().sum().backward()
    assert batch.grad.shape == (2, 64)
    assert sx.stft(sx.tensor(x), 16, return_complex=False).shape == (9, 26, 2)
    with pytest.raises(RuntimeError, match="return_complex"):
        sx.stft(sx.tensor(x), 16)
    with pytest.raises(RuntimeError, match="NOLA"):
        sx.istft(spec, 16, hop_length=4, window=sx.zeros(16, dtype=sx.float64))


@pytest.mark.parity
def test_stft_and_istft_match_torch():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((2, 200)).astype(np.float32)
    kw = dict(n_fft=32, hop_length=8, win_length=24, center=True, normalized=True)
    ours, theirs = sx.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    so = sx.stft(ours, window=sx.hann_window(24), return_complex=True, **kw)
    st = torch.stft(theirs, window=torch.hann_window(24), return_complex=True, **kw)
    np.testing.assert_allclose(so.detach().numpy(), st.detach().numpy(), rtol=1e-4, atol=1e-4)
    w = RNG.standard_normal(so.shape).astype(np.float32)
    (so.abs() * sx.tensor(w)).sum().backward()
    (st.abs() * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-3, atol=1e-4)
    yo = sx.istft(so.detach(), window=sx.hann_window(24), length=190, **kw)
    yt = torch.istft(st.detach(), window=torch.hann_window(24), length=190, **kw)
    np.testing.assert_allclose(yo.numpy(), yt.numpy(), rtol=1e-4, atol=1e-4)
