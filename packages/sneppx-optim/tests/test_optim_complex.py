"""Complex parameters: each optimizer steps them as their (real, imaginary) pairs, so a complex parameter
follows exactly the path of a real parameter holding those pairs (and PyTorch's, in the parity test)."""
import numpy as np
import pytest

import sneppx_core as sx
import sneppx_optim as so

RNG = np.random.default_rng(0)
CASES = [(so.Adam, dict(lr=0.1, weight_decay=0.01)), (so.AdamW, dict(lr=0.1)), (so.SGD, dict(lr=0.1, momentum=0.9)),
         (so.RMSprop, dict(lr=0.01)), (so.Adagrad, dict(lr=0.1))]


def _run(opt_cls, kwargs, param, loss_fn, steps=5):
    opt = opt_cls([param], **kwargs)
    for _ in range(steps):
        opt.zero_grad()
        loss_fn(param).backward()
        opt.step()
    return param


@pytest.mark.parametrize("opt_cls,kwargs", CASES, ids=[c[0].__name__ for c in CASES])
def test_complex_parameter_steps_as_its_real_pairs(opt_cls, kwargs):
    z0 = RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))
    target = RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))
    zt = sx.tensor(target)
    z = _run(opt_cls, kwargs, sx.tensor(z0, requires_grad=True), lambda p: ((p - zt).abs() ** 2).sum())
    pairs = np.stack([z0.real, z0.imag], -1)
    tp = sx.tensor(np.stack([target.real, target.imag], -1))
    r = _run(opt_cls, kwargs, sx.tensor(pairs, requires_grad=True), lambda p: ((p - tp) ** 2).sum())
    np.testing.assert_allclose(sx.view_as_real(z.detach()).numpy(), r.detach().numpy(), rtol=1e-12, atol=1e-12)
    assert z.dtype == sx.complex128


@pytest.mark.parity
def test_complex_parameter_matches_pytorch():
    torch = pytest.importorskip("torch")
    z0 = (RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))).astype(np.complex64)
    w = RNG.standard_normal((3, 4)).astype(np.float32)
    ours = _run(so.Adam, dict(lr=0.05), sx.tensor(z0, requires_grad=True),
                lambda p: ((p * p).real * sx.tensor(w)).sum() + p.abs().sum())
    theirs = _run(torch.optim.Adam, dict(lr=0.05), torch.tensor(z0, requires_grad=True),
                  lambda p: ((p * p).real * torch.tensor(w)).sum() + p.abs().sum())
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
def test_clip_grad_norm_counts_complex_magnitudes(norm_type):
    g = RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))
    r = RNG.standard_normal(5)
    p, q = sx.zeros(3, 4, dtype=sx.complex128, requires_grad=True), sx.zeros(5, dtype=sx.float64, requires_grad=True)
    p.grad, q.grad = sx.tensor(g), sx.tensor(r)
    total = so.clip_grad_norm_([p, q], 0.5, norm_type=norm_type)
    mags = np.concatenate([np.abs(g).ravel(), np.abs(r)])
    want = mags.max() if norm_type == float("inf") else (mags ** norm_type).sum() ** (1 / norm_type)
    np.testing.assert_allclose(total.item(), want, rtol=1e-6)
    np.testing.assert_allclose(p.grad.numpy(), g * 0.5 / (want + 1e-6), rtol=1e-6)
