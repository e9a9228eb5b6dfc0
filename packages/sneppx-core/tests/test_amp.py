"""``amp.GradScaler`` and ``autocast``: PyTorch's loss-scaling algorithm and its behaviour on a
machine without a GPU."""

from __future__ import annotations

import numpy as np
import pytest

import sneppx_core as sx


class _SGD:
    """A minimal optimizer with ``param_groups`` and ``step``, so the test needs only core."""

    def __init__(self, params, lr):
        self.param_groups = [{"params": list(params)}]
        self.lr, self.steps = lr, 0

    def step(self):
        self.steps += 1
        with sx.no_grad():
            for p in self.param_groups[0]["params"]:
                p.sub_(p.grad * self.lr)


def _grads(step):
    g = np.array([0.5, -1.0, 2.0]) * (step + 1)
    if step in (2, 5):
        g[1] = np.inf if step == 2 else np.nan
    return g


def test_scaling_skips_bad_steps_and_adapts_the_scale():
    w = sx.ones(3, dtype=sx.float64, requires_grad=True)
    opt = _SGD([w], 0.1)
    scaler = sx.amp.GradScaler("cpu", init_scale=8.0, growth_interval=2)
    scales = []
    for step in range(7):
        loss = scaler.scale((w * sx.tensor(_grads(step))).sum())
        w.grad = None
        loss.backward()
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
    # growth every 2 clean steps, halving after the inf (step 2) and NaN (step 5) steps
    assert scales == [8.0, 16.0, 8.0, 8.0, 16.0, 8.0, 8.0]
    assert opt.steps == 5
    want = 1 - 0.1 * sum(_grads(s) for s in (0, 1, 3, 4, 6))
    np.testing.assert_allclose(w.detach().numpy(), want, rtol=1e-12)
    state = scaler.state_dict()
    assert state["scale"] == 8.0 and state["_growth_tracker"] == 1
    other = sx.amp.GradScaler("cpu")
    other.load_state_dict(state)
    assert other.get_scale() == 8.0


@pytest.mark.parity
def test_matches_torch_grad_scaler(torch):
    w, tw = sx.ones(3, requires_grad=True), torch.ones(3, requires_grad=True)
    opt, topt = _SGD([w], 0.1), torch.optim.SGD([tw], lr=0.1)
    ours, theirs = sx.amp.GradScaler("cpu", growth_interval=3), torch.amp.GradScaler("cpu", growth_interval=3)
    for step in range(8):
        g = _grads(step).astype(np.float32)
        (ours.scale((w * sx.tensor(g)).sum())).backward()
        (theirs.scale((tw * torch.tensor(g)).sum())).backward()
        ours.unscale_(opt)
        theirs.unscale_(topt)
        np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-6)
        ours.step(opt)
        theirs.step(topt)
        ours.update()
        theirs.update()
        w.grad, tw.grad = None, None
        assert ours.get_scale() == theirs.get_scale()
        np.testing.assert_allclose(w.detach().numpy(), tw.detach().numpy(), rtol=1e-6)
    assert set(ours.state_dict()) == set(theirs.state_dict())


def test_cuda_scaler_and_autocast_disable_themselves_without_a_gpu():
    with pytest.warns(UserWarning, match="CUDA is not available"):
        scaler = sx.amp.GradScaler("cuda")
    assert not scaler.is_enabled() and scaler.get_scale() == 1.0 and scaler.state_dict() == {}
    loss = sx.ones(2, requires_grad=True).sum()
    assert scaler.scale(loss) is loss
    opt = _SGD([sx.ones(1, requires_grad=True)], 0.1)
    opt.param_groups[0]["params"][0].grad = sx.ones(1)
    scaler.step(opt)
    scaler.update()
    assert opt.steps == 1
    assert not sx.cuda.amp.GradScaler(enabled=False).is_enabled()
    with pytest.warns(UserWarning, match="Disabling autocast"):
        with sx.autocast(device_type="cuda", dtype=sx.float16):
            assert not sx.is_autocast_enabled()
    with sx.autocast("cpu", enabled=False), sx.cuda.amp.autocast(enabled=False):
        pass
    with pytest.raises(NotImplementedError, match=r"\[autocast\] autocasting on 'xpu' is not implemented"):
        sx.autocast("xpu", dtype=sx.bfloat16)
    scaler = sx.amp.GradScaler("cpu")
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.unscale_(opt)


def test_device_amp_modules_import():
    """``from torch.cuda.amp import autocast, GradScaler`` and ``torch.cpu.amp`` import as modules."""
    import importlib
    import warnings

    cuda_amp = importlib.import_module("sneppx_core.cuda.amp")
    cpu_amp = importlib.import_module("sneppx_core.cpu.amp")
    assert cuda_amp is sx.cuda.amp and cpu_amp is sx.cpu.amp
    assert cpu_amp.GradScaler(enabled=False).is_enabled() is False
    with cpu_amp.autocast(enabled=False):
        assert not sx.is_autocast_enabled()
    if not sx.cuda.is_available():
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            assert cuda_amp.GradScaler().is_enabled() is False  # no GPU: disabled, as PyTorch's
    assert cuda_amp.custom_fwd(len) is len and cuda_amp.custom_bwd(len) is len
